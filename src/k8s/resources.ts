// Resource addressing: client-go's GroupVersionResource and the REST path of an object, for KubeClient and the
// code that names what it reads or writes.

/** One REST resource: what client-go calls a GroupVersionResource, plus scope. */
export interface ResourceType {
  /** '' for the core group. */
  group: string;
  version: string;
  /** Plural, lower case: "pods". */
  resource: string;
  namespaced: boolean;
  /** Kind of one object; informers use it to fill kind on list items, which the apiserver omits. */
  kind: string;
}

export const resources = {
  pods: { group: '', version: 'v1', resource: 'pods', namespaced: true, kind: 'Pod' },
  nodes: { group: '', version: 'v1', resource: 'nodes', namespaced: false, kind: 'Node' },
  namespaces: { group: '', version: 'v1', resource: 'namespaces', namespaced: false, kind: 'Namespace' },
  events: { group: '', version: 'v1', resource: 'events', namespaced: true, kind: 'Event' },
  secrets: { group: '', version: 'v1', resource: 'secrets', namespaced: true, kind: 'Secret' },
  leases: { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespaced: true, kind: 'Lease' },
  controllerRevisions: {
    group: 'apps',
    version: 'v1',
    resource: 'controllerrevisions',
    namespaced: true,
    kind: 'ControllerRevision',
  },
  /** The native apps/v1 DaemonSet. */
  nativeDaemonSets: { group: 'apps', version: 'v1', resource: 'daemonsets', namespaced: true, kind: 'DaemonSet' },
  /** OpenKruise's Advanced DaemonSet, the one this project serves. */
  daemonSets: {
    group: 'apps.kruise.io',
    version: 'v1alpha1',
    resource: 'daemonsets',
    namespaced: true,
    kind: 'DaemonSet',
  },
  /** The same DaemonSets in v1beta1, the storage version: what the controller reads and writes. */
  daemonSetsV1beta1: {
    group: 'apps.kruise.io',
    version: 'v1beta1',
    resource: 'daemonsets',
    namespaced: true,
    kind: 'DaemonSet',
  },
  /** Per-node container resources of an Advanced DaemonSet (src/api/setting.ts). */
  daemonSetSettings: {
    group: 'advanced-daemonset.io',
    version: 'v1alpha1',
    resource: 'daemonsetsettings',
    namespaced: true,
    kind: 'DaemonSetSetting',
  },
  customResourceDefinitions: {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    resource: 'customresourcedefinitions',
    namespaced: false,
    kind: 'CustomResourceDefinition',
  },
  mutatingWebhookConfigurations: {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    resource: 'mutatingwebhookconfigurations',
    namespaced: false,
    kind: 'MutatingWebhookConfiguration',
  },
  validatingWebhookConfigurations: {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    resource: 'validatingwebhookconfigurations',
    namespaced: false,
    kind: 'ValidatingWebhookConfiguration',
  },
  /** Who a bearer token is (the secure metrics server). */
  tokenReviews: {
    group: 'authentication.k8s.io',
    version: 'v1',
    resource: 'tokenreviews',
    namespaced: false,
    kind: 'TokenReview',
  },
  /** Whether a user may do something (the secure metrics server). */
  subjectAccessReviews: {
    group: 'authorization.k8s.io',
    version: 'v1',
    resource: 'subjectaccessreviews',
    namespaced: false,
    kind: 'SubjectAccessReview',
  },
} as const satisfies Record<string, ResourceType>;

/** "apps/v1", or "v1" for the core group. */
export function apiVersionOf(type: ResourceType): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** Where one object (or a collection, without name) lives. ObjectMeta fits, so `pod.metadata` can be passed. */
export interface ObjectTarget {
  namespace?: string;
  name?: string;
}

/** URL path of a collection or object: /api/v1/namespaces/ns/pods/name/status. */
export function resourcePath(type: ResourceType, target: ObjectTarget = {}, subresource?: string): string {
  let path = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  if (type.namespaced && target.namespace) path += `/namespaces/${encodeURIComponent(target.namespace)}`;
  path += `/${type.resource}`;
  if (target.name !== undefined) {
    if (!target.name) throw new Error(`empty name for ${type.resource}`);
    path += `/${encodeURIComponent(target.name)}`;
  }
  if (subresource) {
    if (target.name === undefined) throw new Error(`subresource ${subresource} needs an object name`);
    path += `/${subresource}`;
  }
  return path;
}
