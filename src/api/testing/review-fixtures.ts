// AdmissionReview bodies for the webhook tests, as kube-apiserver sends them.
import type { JsonObject } from '../defaults.ts';

/** A minimal apps.kruise.io/v1alpha1 DaemonSet as a user writes it. */
export function daemonSetManifest(name = 'x'): JsonObject {
  return {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: { name, namespace: 'ns' },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } },
    },
  };
}

export interface ReviewOptions {
  apiVersion?: string;
  uid?: string;
  operation?: string;
  version?: string;
  kind?: string;
  group?: string;
  oldObject?: unknown;
  subResource?: string;
  /** request.name and request.namespace (default x and ns). */
  name?: string;
  namespace?: string;
}

export function admissionReview(object: unknown, o: ReviewOptions = {}): JsonObject {
  const group = o.group ?? 'apps.kruise.io';
  const version = o.version ?? 'v1alpha1';
  return {
    apiVersion: o.apiVersion ?? 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: o.uid ?? '705ab4f5-6393-11e8-b7cc-42010a800002',
      kind: { group, version, kind: o.kind ?? 'DaemonSet' },
      resource: { group, version, resource: 'daemonsets' },
      requestKind: { group, version, kind: o.kind ?? 'DaemonSet' },
      name: o.name ?? 'x',
      namespace: o.namespace ?? 'ns',
      operation: o.operation ?? 'CREATE',
      userInfo: { username: 'admin' },
      object,
      oldObject: o.oldObject ?? null,
      dryRun: false,
      options: {},
      ...(o.subResource ? { subResource: o.subResource } : {}),
    },
  };
}
