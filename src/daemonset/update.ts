// rollingUpdate (kruise daemonset_update.go, upstream pkg/controller/daemon/update.go): which old pods to delete
// (or update in place) and, when surging, on which nodes to start a new pod first; plus Kruise's partition and
// rollingUpdate.selector filter (filterDaemonPodsNodeToUpdate).
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod } from '../k8s/types.ts';
import { isPodAvailable } from '../k8s/pod.ts';
import { labelSelectorErrors } from '../k8s/labels.ts';
import { cmp, memo, type SyncContext } from './context.ts';
import { findUpdatedPodsOnNode, isPodNilOrPreDeleting, isPodPreDeleting, type NodeToDaemonPods } from './pods.ts';
import type { PodDelete } from './plan-types.ts';
import { hasUpdateSelector, nodeSelectedForUpdate, partitionCount, rollingUpdateBudget } from './strategy.ts';
import { targetHash } from './canary.ts';

/**
 * updatedDesiredNodeCounts (map part): the existing nodes that take part in the rolling update, in name order:
 * those with daemon pods and every shouldRun node (one without a pod counts against the budget). Upstream copies
 * nodeToDaemonPods with an empty entry per such node; a missing entry reads the same as an empty one here.
 */
export function desiredNodeNames(ctx: SyncContext): string[] {
  const names: string[] = [];
  for (const node of ctx.nodes) {
    const name = node.metadata.name ?? '';
    if (ctx.nodeToDaemonPods.has(name) || ctx.eligibility.get(name)?.shouldRun) names.push(name);
  }
  return names;
}

/**
 * The partition is at least the number of nodes selected by rollingUpdate.selector, so it keeps every selected node
 * not updated yet on the old revision (it counts within the selected nodes, see filterDaemonPodsNodeToUpdate).
 * Reported in the Progressing condition and an event, since Kruise, counting the partition over all nodes, may
 * update some of them.
 */
export interface SelectorPartitionHold {
  partition: number;
  /** Selected nodes not updated yet, all kept on the old revision by the partition. */
  held: number;
  /** Nodes selected by rollingUpdate.selector. */
  selected: number;
  /** Nodes taking part in the rolling update: what Kruise counts the partition over. */
  all: number;
}

export interface NodesToUpdate {
  /** filterDaemonPodsNodeToUpdate: the nodes the rolling update may touch, in processing order. */
  nodes: string[];
  /** Set when a rollingUpdate.selector is given and the partition, at least the selected count, holds them all. */
  hold?: SelectorPartitionHold;
}

/**
 * filterDaemonPodsNodeToUpdate for this sync, computed once: the rolling update, image pre-download and the
 * Progressing condition all need it. ctx.nodes is in name order already, so nothing is sorted again.
 */
export function nodesToUpdate(ctx: SyncContext): string[] {
  return nodesToUpdateResult(ctx).nodes;
}

/**
 * nodesToUpdate with what the partition holds back within rollingUpdate.selector (see SelectorPartitionHold). While a
 * canary runs or has failed (canary.ts), only its rolling nodes take part, all toward the same target revision, with
 * neither partition nor selector (the selector already chose the canary nodes; the partition applies after
 * promotion).
 */
export function nodesToUpdateResult(ctx: SyncContext): NodesToUpdate {
  const canary = ctx.canary;
  if (canary?.active) {
    return memo(ctx, 'nodesToUpdate', () => {
      const desired = new Set(desiredNodeNames(ctx));
      const nodes = canary.rollingNodes.filter((n) => desired.has(n));
      const hash = nodes[0] === undefined ? ctx.hash : targetHash(ctx, nodes[0]);
      return nodesToUpdateInOrder(ctx.ds, hash, ctx.nodeToDaemonPods, ctx.nodeByName, 0, nodes, false);
    });
  }
  return memo(ctx, 'nodesToUpdate', () =>
    nodesToUpdateInOrder(
      ctx.ds,
      ctx.hash,
      ctx.nodeToDaemonPods,
      ctx.nodeByName,
      partitionCount(ctx.ds, ctx.desired),
      desiredNodeNames(ctx),
    ),
  );
}

/**
 * filterDaemonPodsNodeToUpdate: the nodes the rolling update may touch, in processing order.
 * Node names (existing nodes only) are walked in descending order and bucketed: "updated" (has a new pod, or more
 * than one new/old pod), "updating" (no old pod, or it is PreparingDelete), and the nodes still to update.
 * Order = updated, updating, then the nodes still to update, and `partition` nodes of the list stay old: the lowest
 * names among those not yet updated, and raising the partition never rolls pods back.
 *
 * Without rollingUpdate.selector this is Kruise's rule (the first #nodes - partition are kept). With a selector,
 * nodes outside it are never updated, and the partition counts within the selected nodes (the "multi-dimensional
 * gray-scale" that articles on Advanced DaemonSet describe: filter by selector, then partition within that subset,
 * then maxUnavailable caps concurrency; docs/differences.md). Kruise counts the partition over all nodes, so there a
 * partition at least the number of unselected nodes updates nothing; here `partition: 1` with three canaries updates
 * two of them.
 * An empty selector `{}` selects every node, as Kruise (labels.Everything()).
 */
export function filterDaemonPodsNodeToUpdate(
  ds: DaemonSet,
  hash: string,
  nodeToDaemonPods: NodeToDaemonPods,
  nodeByName: ReadonlyMap<string, Node>,
  partition: number,
): string[] {
  const all = [...nodeToDaemonPods.keys()].filter((n) => nodeByName.has(n)).sort(cmp);
  return nodesToUpdateInOrder(ds, hash, nodeToDaemonPods, nodeByName, partition, all).nodes;
}

/** filterDaemonPodsNodeToUpdate on `all`: the names of existing nodes in nodeToDaemonPods, in ascending order. */
function nodesToUpdateInOrder(
  ds: DaemonSet,
  hash: string,
  nodeToDaemonPods: NodeToDaemonPods,
  nodeByName: ReadonlyMap<string, Node>,
  partition: number,
  all: readonly string[],
  useSelector = true,
): NodesToUpdate {
  const hasSelector = useSelector && hasUpdateSelector(ds);
  const inSubset = (name: string) => !hasSelector || nodeSelectedForUpdate(nodeByName.get(name) as Node, ds);
  // Nodes outside the selector that are updated or updating already: in the list (they hold new pods, or get one
  // from manage whatever we do), but not counted by the partition.
  const outside: string[] = [];
  const updated: string[] = [];
  const updating: string[] = [];
  const toUpdate: string[] = [];
  for (let i = all.length - 1; i >= 0; i--) {
    const name = all[i] as string;
    const { newPod, oldPod, ok } = findUpdatedPodsOnNode(nodeToDaemonPods.get(name), hash);
    const bucket = !ok || newPod ? updated : isPodNilOrPreDeleting(oldPod) ? updating : toUpdate;
    if (inSubset(name)) bucket.push(name);
    else if (bucket !== toUpdate) outside.push(name);
  }
  const subset = [...updated, ...updating, ...toUpdate];
  const maxUpdate = Math.max(0, subset.length - partition);
  const out: NodesToUpdate = { nodes: [...outside, ...subset.slice(0, maxUpdate)] };
  if (hasSelector && toUpdate.length > 0 && maxUpdate === 0) {
    out.hold = { partition, held: toUpdate.length, selected: subset.length, all: all.length };
  }
  return out;
}

export interface RollingUpdateResult {
  /** Old pods to replace (deleted, or updated in place under InPlaceIfPossible where possible). */
  podsToDelete: PodDelete[];
  /** Surge: nodes to start a new pod on, next to the old one. */
  nodesToCreate: string[];
  maxSurge: number;
  maxUnavailable: number;
  /** Nodes the strategy may update (after partition and selector), in processing order. */
  nodesToUpdate: string[];
  error?: string;
}

/**
 * rollingUpdate. Budget: maxUnavailable and maxSurge scaled on the desired node count, rounded up (both 0 ->
 * maxUnavailable 1). Only nodes kept by filterDaemonPodsNodeToUpdate take part (processed in its order). "New" and
 * "old" are relative to each node's target revision (targetHash, canary.ts: the current one unless a canary holds
 * the node on the stable one).
 *
 * maxSurge == 0 (delete first, manage creates the replacement on a later sync): per node, with at most one new and
 * one old non-terminating pod (else the node counts as unavailable):
 * - neither or both present (PreparingDelete counting as absent) -> unavailable;
 * - only new -> unavailable unless available; PreparingDelete counts once more;
 * - only old, not available -> replaced regardless of the budget, and counted unavailable (upstream PR #123233),
 *   so unavailable old pods go first and available ones only while unavailability < maxUnavailable;
 * - only old, available -> candidate while numUnavailable < maxUnavailable.
 * Deleted: the unavailable old pods + the first (maxUnavailable - numUnavailable) candidates. New pods that are not
 * available use the budget, so a broken revision stalls the rollout instead of taking every node down.
 *
 * maxSurge > 0 (create first): per node: no old pod (or PreparingDelete) -> nothing; only old, not available ->
 * new pod now regardless of the budget (or, if the node no longer should run the daemon, delete the old pod); only
 * old, available -> surge candidate while numSurge < maxSurge (nodes that no longer should run are "sunset":
 * their old pod is deleted only while more pods are available than desired, upstream PR #119317); new and old ->
 * new not available (or PreparingDelete) counts against maxSurge, else the old pod is deleted.
 * Created: the budget-free nodes + the first (maxSurge - numSurge) candidates.
 */
export function rollingUpdate(ctx: SyncContext): RollingUpdateResult {
  const { ds, now } = ctx;
  const nodeToDaemonPods = ctx.nodeToDaemonPods;
  const result: RollingUpdateResult = {
    podsToDelete: [],
    nodesToCreate: [],
    maxSurge: 0,
    maxUnavailable: 0,
    nodesToUpdate: [],
  };
  try {
    Object.assign(result, rollingUpdateBudget(ds, ctx.desired));
  } catch (e) {
    result.error = `couldn't get unavailable numbers: ${(e as Error).message}`;
    return result;
  }
  const selector = ds.spec.updateStrategy?.rollingUpdate?.selector;
  if (selector && labelSelectorErrors(selector).length > 0) {
    result.error = `invalid rollingUpdate.selector: ${labelSelectorErrors(selector).join('; ')}`;
    return result;
  }
  const nodes = nodesToUpdate(ctx);
  result.nodesToUpdate = nodes;
  const minReady = ds.spec.minReadySeconds ?? 0;
  const available = (p: Pod) => isPodAvailable(p, minReady, now);
  const del = (pod: Pod, nodeName: string, reason: PodDelete['reason']): PodDelete => ({
    podName: pod.metadata.name ?? '',
    nodeName,
    uid: pod.metadata.uid,
    reason,
  });

  if (result.maxSurge === 0) {
    let numUnavailable = 0;
    const allowed: PodDelete[] = [];
    const candidates: PodDelete[] = [];
    for (const nodeName of nodes) {
      const { newPod, oldPod, ok } = findUpdatedPodsOnNode(nodeToDaemonPods.get(nodeName), targetHash(ctx, nodeName));
      if (!ok) {
        numUnavailable++;
        continue;
      }
      const noOld = isPodNilOrPreDeleting(oldPod);
      const noNew = isPodNilOrPreDeleting(newPod);
      if (noOld === noNew) {
        numUnavailable++;
      } else if (newPod) {
        if (!available(newPod)) numUnavailable++;
        if (isPodPreDeleting(newPod)) numUnavailable++;
      } else if (oldPod && !available(oldPod)) {
        allowed.push(del(oldPod, nodeName, 'OldPodUnavailable'));
        numUnavailable++;
      } else if (oldPod && numUnavailable < result.maxUnavailable) {
        candidates.push(del(oldPod, nodeName, 'RollingUpdate'));
      }
    }
    const remaining = Math.min(Math.max(result.maxUnavailable - numUnavailable, 0), candidates.length);
    result.podsToDelete = [...allowed, ...candidates.slice(0, remaining)];
    return result;
  }

  let numSurge = 0;
  let numAvailable = 0;
  const allowedNew: string[] = [];
  const candidateNew: string[] = [];
  const shouldNotRun: PodDelete[] = [];
  for (const nodeName of nodes) {
    const { newPod, oldPod, ok } = findUpdatedPodsOnNode(nodeToDaemonPods.get(nodeName), targetHash(ctx, nodeName));
    if (!ok) {
      numSurge++;
      continue;
    }
    if (oldPod ? available(oldPod) : newPod && available(newPod)) numAvailable++;
    const shouldRun = ctx.eligibility.get(nodeName)?.shouldRun ?? false;
    if (isPodNilOrPreDeleting(oldPod)) continue;
    const old = oldPod as Pod;
    if (!newPod) {
      if (!available(old)) {
        if (!shouldRun) result.podsToDelete.push(del(old, nodeName, 'NodeSunset'));
        else allowedNew.push(nodeName);
      } else if (numSurge >= result.maxSurge) {
        continue;
      } else if (!shouldRun) {
        shouldNotRun.push(del(old, nodeName, 'NodeSunset'));
      } else {
        candidateNew.push(nodeName);
      }
      continue;
    }
    if (!available(newPod) || isPodPreDeleting(newPod)) {
      numSurge++;
      continue;
    }
    result.podsToDelete.push(del(old, nodeName, 'SurgeReplaced'));
  }
  const deletable = Math.min(Math.max(numAvailable - ctx.desired, 0), shouldNotRun.length);
  result.podsToDelete.push(...shouldNotRun.slice(0, deletable));
  const remaining = Math.min(Math.max(result.maxSurge - numSurge, 0), candidateNew.length);
  result.nodesToCreate = [...allowedNew, ...candidateNew.slice(0, remaining)];
  return result;
}
