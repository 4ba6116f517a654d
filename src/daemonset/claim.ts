// Adoption and release (k8s.io/kubernetes/pkg/controller ControllerRefManager.ClaimObject), pure: which pods and
// ControllerRevisions this DaemonSet controls, which orphans to adopt and which owned objects to release, and the
// patches that do it. The shell re-reads the DaemonSet uncached before adopting (RecheckDeletionTimestamp: abort
// when it is gone, has another UID, or is being deleted) and treats NotFound as done.
import type { DaemonSet } from '../api/types.ts';
import type { KubeObject } from '../k8s/types.ts';
import { isEmptyLabelSelector, labelSelectorMatches } from '../k8s/labels.ts';
import { controllerRef, getControllerOf } from './pods.ts';

export interface ClaimResult<T> {
  /** Owned by this DaemonSet and matching its selector. */
  owned: T[];
  /** Orphans to adopt (they become owned once patched). */
  adopt: T[];
  /** Owned objects that stopped matching: to release. */
  release: T[];
}

/**
 * ClaimObject over a namespace's objects: owned by another controller -> ignored; owned by us and matching -> owned;
 * owned by us and not matching -> release (unless the DaemonSet is being deleted); orphan, matching, not being
 * deleted, same namespace, DaemonSet not being deleted -> adopt. A nil or empty selector matches nothing.
 */
export function claimObjects<T extends KubeObject>(ds: DaemonSet, objects: readonly T[]): ClaimResult<T> {
  const uid = ds.metadata.uid ?? '';
  const selector = ds.spec.selector;
  // Whether the selector selects anything, once: claimObjects walks every pod of the DaemonSet on each sync.
  const selects = !!selector && !isEmptyLabelSelector(selector);
  const match = (o: T) => selects && labelSelectorMatches(selector, o.metadata.labels);
  const dsDeleting = !!ds.metadata.deletionTimestamp;
  const out: ClaimResult<T> = { owned: [], adopt: [], release: [] };
  for (const o of objects) {
    const ref = getControllerOf(o);
    if (ref) {
      if (ref.uid !== uid) continue;
      if (match(o)) out.owned.push(o);
      else if (!dsDeleting) out.release.push(o);
      continue;
    }
    if (dsDeleting || !match(o) || o.metadata.deletionTimestamp) continue;
    if (ds.metadata.namespace && o.metadata.namespace && ds.metadata.namespace !== o.metadata.namespace) continue;
    out.adopt.push(o);
  }
  return out;
}

/** Strategic merge patch adopting `o`: our controllerRef added; the uid makes it fail if `o` was replaced. */
export function adoptPatch(ds: DaemonSet, o: KubeObject): unknown {
  return { metadata: { ownerReferences: [controllerRef(ds)], uid: o.metadata.uid } };
}

/** Strategic merge patch releasing `o`: our ownerReference deleted (by uid). */
export function releasePatch(ds: DaemonSet, o: KubeObject): unknown {
  return { metadata: { ownerReferences: [{ $patch: 'delete', uid: ds.metadata.uid }], uid: o.metadata.uid } };
}
