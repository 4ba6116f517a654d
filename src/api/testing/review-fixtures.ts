// AdmissionReview bodies for the webhook tests, as kube-apiserver sends them.
import type { JsonObject } from '../defaults.ts';

/** A minimal apps.kruise.io/v1alpha1 DaemonSet as a user writes it. */
export function daemonSetManifest(name = 'x'): JsonObject {
  return manifestOf('apps.kruise.io/v1alpha1', name);
}

/** The same minimal DaemonSet as apps.kruise.io/v1beta1. */
export function daemonSetManifestV1beta1(name = 'x'): JsonObject {
  return manifestOf('apps.kruise.io/v1beta1', name);
}

function manifestOf(apiVersion: string, name: string): JsonObject {
  return {
    apiVersion,
    kind: 'DaemonSet',
    metadata: { name, namespace: 'ns' },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } },
    },
  };
}

/** A minimal advanced-daemonset.io/v1alpha1 DaemonSetSetting as a user writes it (no reference kind or apiVersion). */
export function settingManifest(name = 'x'): JsonObject {
  return {
    apiVersion: 'advanced-daemonset.io/v1alpha1',
    kind: 'DaemonSetSetting',
    metadata: { name, namespace: 'ns' },
    spec: {
      reference: { name: 'agent' },
      nodeSelector: { matchLabels: { 'node.example.com/group': 'large' } },
      containers: [{ name: 'c', resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { memory: '2Gi' } } }],
    },
  };
}

/** admissionReview of a DaemonSetSetting: request.kind and resource are advanced-daemonset.io's. */
export function settingReview(object: unknown, o: ReviewOptions = {}): JsonObject {
  return admissionReview(object, {
    group: 'advanced-daemonset.io',
    kind: 'DaemonSetSetting',
    resource: 'daemonsetsettings',
    ...o,
  });
}

export interface ReviewOptions {
  apiVersion?: string;
  uid?: string;
  operation?: string;
  /** request.kind.version; default: the version of the object's apiVersion (apps.kruise.io/...), else v1alpha1. */
  version?: string;
  kind?: string;
  group?: string;
  /** request.resource.resource (default daemonsets). */
  resource?: string;
  oldObject?: unknown;
  subResource?: string;
  /** request.name and request.namespace (default x and ns). */
  name?: string;
  namespace?: string;
}

export function admissionReview(object: unknown, o: ReviewOptions = {}): JsonObject {
  const group = o.group ?? 'apps.kruise.io';
  const objectApiVersion =
    typeof object === 'object' && object !== null ? (object as JsonObject).apiVersion : undefined;
  const version =
    o.version ??
    (typeof objectApiVersion === 'string' && objectApiVersion.startsWith(`${group}/`)
      ? objectApiVersion.slice(group.length + 1)
      : 'v1alpha1');
  return {
    apiVersion: o.apiVersion ?? 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: o.uid ?? '705ab4f5-6393-11e8-b7cc-42010a800002',
      kind: { group, version, kind: o.kind ?? 'DaemonSet' },
      resource: { group, version, resource: o.resource ?? 'daemonsets' },
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

/** A review of exactly `bytes` bytes: a real DaemonSet padded with an annotation. */
export function reviewOfSize(bytes: number, uid: string): string {
  const ds = daemonSetManifest('sized') as { metadata: { annotations?: Record<string, string> } };
  ds.metadata.annotations = { padding: '' };
  const base = JSON.stringify(admissionReview(ds, { uid })).length;
  ds.metadata.annotations.padding = 'x'.repeat(bytes - base);
  const text = JSON.stringify(admissionReview(ds, { uid }));
  if (Buffer.byteLength(text) !== bytes)
    throw new Error(`reviewOfSize: ${Buffer.byteLength(text)} bytes, not ${bytes}`);
  return text;
}
