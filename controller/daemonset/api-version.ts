// The version the controller lists, watches and writes DaemonSets in. v1beta1 by default: the storage version, so
// objects stored in it need no conversion webhook call on the way. v1alpha1 when the CRD serves only v1alpha1 (chart
// value crd.servedVersions, for tools that know only v1alpha1). Either way the cache holds the internal model
// (v1alpha1), converted in-process by the pure function the /convert webhook runs (src/api/conversion.ts).
import type { DaemonSet, DaemonSetStatus } from '../../src/api/types.ts';
import { statusToV1beta1, toInternal } from '../../src/api/conversion.ts';
import { resources, type ResourceType } from '../../src/k8s/resources.ts';
import type { ServedVersion } from '../../src/api/constants.ts';

export interface DaemonSetAccess {
  version: ServedVersion;
  type: ResourceType;
  /** An object as read, in the internal model. */
  toInternal(obj: unknown): DaemonSet;
  /** The planner's status as the version writes it (v1beta1 calls daemonSetHash updateRevision). */
  statusOut(status: DaemonSetStatus): unknown;
}

export function daemonSetAccess(version: ServedVersion = 'v1beta1'): DaemonSetAccess {
  return version === 'v1beta1'
    ? { version, type: resources.daemonSetsV1beta1, toInternal, statusOut: statusToV1beta1 }
    : { version, type: resources.daemonSets, toInternal: (obj) => obj as DaemonSet, statusOut: (s) => s };
}
