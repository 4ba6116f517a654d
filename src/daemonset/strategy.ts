// Reading the update strategy: maxSurge/maxUnavailable (surgeCount, unavailableCount, allowSurge), partition,
// rollingUpdate.selector, paused, progressive creation and burstReplicas. Kruise names from
// pkg/controller/daemonset/daemonset_util.go; upstream from pkg/controller/daemon/util.
import type { DaemonSet } from '../api/types.ts';
import { ROLLOUT_FROZEN_ANNOTATION } from '../api/constants.ts';
import type { Node } from '../k8s/types.ts';
import { getScaledValueFromIntOrPercent, type IntOrStringValue } from '../k8s/intstr.ts';
import { isEmptyLabelSelector, labelSelectorMatches } from '../k8s/labels.ts';
import { DEFAULT_BURST_REPLICAS, PROGRESSIVE_CREATE_POD_ANNOTATION } from './constants.ts';

export function isRollingUpdate(ds: DaemonSet): boolean {
  return (ds.spec.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate';
}

export function rollingUpdateType(ds: DaemonSet): string {
  return ds.spec.updateStrategy?.rollingUpdate?.rollingUpdateType || 'Standard';
}

export function isInPlaceIfPossible(ds: DaemonSet): boolean {
  return isRollingUpdate(ds) && rollingUpdateType(ds) === 'InPlaceIfPossible';
}

/**
 * maxSurge as written, with the deprecated v1alpha1 type Surging defaulting it to 1 (as the mutating webhook does,
 * in case an object was stored without it).
 */
function rawMaxSurge(ds: DaemonSet): IntOrStringValue | undefined {
  const r = ds.spec.updateStrategy?.rollingUpdate;
  if (!r) return undefined;
  if (r.maxSurge === undefined || r.maxSurge === null) return rollingUpdateType(ds) === 'Surging' ? 1 : undefined;
  return r.maxSurge;
}

function rawMaxUnavailable(ds: DaemonSet): IntOrStringValue | undefined {
  const r = ds.spec.updateStrategy?.rollingUpdate;
  if (!r) return undefined;
  if (r.maxUnavailable === undefined || r.maxUnavailable === null) {
    // Webhook defaulting: Surging -> 0; both nil -> 1.
    if (rollingUpdateType(ds) === 'Surging') return 0;
    return rawMaxSurge(ds) === undefined ? 1 : undefined;
  }
  return r.maxUnavailable;
}

/** surgeCount: 0 unless RollingUpdate with maxSurge set; percent of numberToSchedule rounded up. Throws on bad percent. */
export function surgeCount(ds: DaemonSet, numberToSchedule: number): number {
  if (!isRollingUpdate(ds)) return 0;
  const v = rawMaxSurge(ds);
  if (v === undefined) return 0;
  return getScaledValueFromIntOrPercent(v, numberToSchedule, true);
}

/** unavailableCount: 0 unless RollingUpdate; percent of numberToSchedule rounded up. Throws on bad percent. */
export function unavailableCount(ds: DaemonSet, numberToSchedule: number): number {
  if (!isRollingUpdate(ds)) return 0;
  const v = rawMaxUnavailable(ds);
  if (v === undefined) return 0;
  return getScaledValueFromIntOrPercent(v, numberToSchedule, true);
}

/** allowSurge: more than one pod per node is allowed (maxSurge scaled against one node > 0). */
export function allowSurge(ds: DaemonSet): boolean {
  try {
    return surgeCount(ds, 1) > 0;
  } catch {
    return false;
  }
}

export interface UpdateBudget {
  maxSurge: number;
  maxUnavailable: number;
}

/**
 * updatedDesiredNodeCounts (budget part): both scaled on the desired node count, rounded up; when desired > 0 and
 * both come out 0, maxUnavailable is 1 (the apiserver should have prevented it).
 */
export function rollingUpdateBudget(ds: DaemonSet, desiredNumberScheduled: number): UpdateBudget {
  let maxUnavailable = unavailableCount(ds, desiredNumberScheduled);
  const maxSurge = surgeCount(ds, desiredNumberScheduled);
  if (desiredNumberScheduled > 0 && maxUnavailable === 0 && maxSurge === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable };
}

/** rollingUpdate.paused (only the rolling-update step pauses). */
export function isDaemonSetPaused(ds: DaemonSet): boolean {
  return isRollingUpdate(ds) && ds.spec.updateStrategy?.rollingUpdate?.paused === true;
}

/** The annotation ROLLOUT_FROZEN_ANNOTATION is "true": no pod is created, deleted or updated in place. */
export function isRolloutFrozen(ds: DaemonSet): boolean {
  return ds.metadata.annotations?.[ROLLOUT_FROZEN_ANNOTATION] === 'true';
}

/**
 * rollingUpdate.partition: number of nodes kept at the old revision; a percent is of `desired` rounded down.
 * `desired` is the live desired node count (not status.desiredNumberScheduled, which is 0 on the first sync;
 * docs/differences.md). 0 when absent, not RollingUpdate, or invalid.
 */
export function partitionCount(ds: DaemonSet, desired: number): number {
  if (!isRollingUpdate(ds)) return 0;
  const p = ds.spec.updateStrategy?.rollingUpdate?.partition;
  if (p === undefined || p === null) return 0;
  try {
    return Math.max(0, getScaledValueFromIntOrPercent(p, desired, false));
  } catch {
    return 0;
  }
}

/** isDaemonSetCreationProgressively: annotation progressive-create-pod "true". */
export function isDaemonSetCreationProgressively(ds: DaemonSet): boolean {
  return ds.metadata.annotations?.[PROGRESSIVE_CREATE_POD_ANNOTATION] === 'true';
}

/**
 * NodeShouldUpdateBySelector: RollingUpdate with a non-empty rollingUpdate.selector matching the node's labels.
 * (Does not check nodeShouldRunDaemonPod.) Kruise uses it only to tell whether a node's label change matters
 * (shouldIgnoreNodeUpdate); which nodes the rolling update may touch is nodeSelectedForUpdate.
 */
export function nodeShouldUpdateBySelector(node: Node, ds: DaemonSet): boolean {
  if (!isRollingUpdate(ds)) return false;
  const sel = ds.spec.updateStrategy?.rollingUpdate?.selector;
  if (!sel || isEmptyLabelSelector(sel)) return false;
  return labelSelectorMatches(sel, node.metadata.labels);
}

/**
 * Whether rollingUpdate.selector lets the rolling update touch `node`, as Kruise's filterDaemonPodsNodeToUpdate
 * reads it (https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_update.go): no
 * selector -> every node; else metav1.LabelSelectorAsSelector(selector).Matches(node labels), where an empty
 * selector `{}` is labels.Everything() and so selects every node.
 */
export function nodeSelectedForUpdate(node: Node, ds: DaemonSet): boolean {
  const sel = ds.spec.updateStrategy?.rollingUpdate?.selector;
  if (!hasUpdateSelector(ds) || !sel || isEmptyLabelSelector(sel)) return true;
  return labelSelectorMatches(sel, node.metadata.labels);
}

/** True when RollingUpdate has a rollingUpdate.selector (even an empty one, as Kruise). */
export function hasUpdateSelector(ds: DaemonSet): boolean {
  return isRollingUpdate(ds) && !!ds.spec.updateStrategy?.rollingUpdate?.selector;
}

/**
 * getBurstReplicas: cap on creates, deletes and in-place updates per sync (default 250). A percent is of the live
 * desired count, rounded down, but never below 1 so a small DaemonSet always makes progress (docs/differences.md).
 */
export function burstReplicas(ds: DaemonSet, desired: number): number {
  const v = ds.spec.burstReplicas;
  if (v === undefined || v === null) return DEFAULT_BURST_REPLICAS;
  try {
    const n = getScaledValueFromIntOrPercent(v, desired, false);
    return Math.max(1, n);
  } catch {
    return DEFAULT_BURST_REPLICAS;
  }
}
