// rollingUpdate (kruise daemonset_update.go, upstream pkg/controller/daemon/update.go): which old pods to delete
// (or update in place) and, when surging, on which nodes to start a new pod first; plus Kruise's partition and
// rollingUpdate.selector filter (filterDaemonPodsNodeToUpdate).
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod } from '../k8s/types.ts';
import { labelSelectorErrors } from '../k8s/labels.ts';
import { lowerBound } from '../k8s/sorted.ts';
import { cmp, derivedOnce, keptSubset, type SyncContext } from './context.ts';
import {
  factsAvailable,
  factsNilOrPreDeleting,
  newNodeState,
  updatedPodsOf,
  type NodeState,
  type PodFacts,
  type UpdatedPodFacts,
} from './node-state.ts';
import type { NodeToDaemonPods } from './pods.ts';
import type { BusyNodesToUpdate, NodesToUpdateStates, PodDelete } from './plan-types.ts';
import { hasUpdateSelector, nodeSelectedForUpdate, partitionCount, rollingUpdateBudget } from './strategy.ts';
import { sameTarget, targetHash } from './targets.ts';
import { gateWaves, ordersByLabels, updateOrder } from './waves.ts';
import { setAsideNodes } from './unhealthy.ts';
import type { SetAsideReason } from './plan-types.ts';

/**
 * updatedDesiredNodeCounts (map part): the existing nodes that take part in the rolling update, in name order:
 * those with daemon pods and every shouldRun node (one without a pod counts against the budget). Upstream copies
 * nodeToDaemonPods with an empty entry per such node; a missing entry reads the same as an empty one here.
 */
export function desiredNodeNames(ctx: SyncContext): string[] {
  return desiredNodes(ctx).map((s) => s.name);
}

function takesPart(s: NodeState): boolean {
  return s.first !== undefined || s.shouldRun;
}

/** desiredNodeNames, as node states. */
function desiredNodes(ctx: SyncContext): NodeState[] {
  return ctx.states.filter(takesPart);
}

/**
 * filterDaemonPodsNodeToUpdate for this sync, computed once: the rolling update, image pre-download and the
 * Progressing condition all need it. ctx.nodes is in name order already, so nothing is sorted again.
 */
export function nodesToUpdate(ctx: SyncContext): readonly string[] {
  return nodesToUpdateResult(ctx).nodes;
}

/**
 * nodesToUpdate with what the partition holds back within rollingUpdate.selector (see SelectorPartitionHold). While a
 * canary runs or has failed (targets.ts), only its rolling nodes take part, all toward the same target revision,
 * with neither partition nor selector (the selector already chose the canary nodes; the partition applies after
 * promotion).
 */
export function nodesToUpdateResult(ctx: SyncContext): NodesToUpdateStates {
  const canary = ctx.targets.canary;
  if (canary) {
    return derivedOnce(ctx, 'nodesToUpdate', () => {
      const nodes: NodeState[] = [];
      for (const n of canary.rollingNodes) {
        const s = ctx.stateByName.get(n);
        if (s?.node !== undefined && takesPart(s)) nodes.push(s);
      }
      const hash = nodes[0] === undefined ? ctx.hash : targetHash(ctx.targets, nodes[0].name);
      return nodesToUpdateInOrder(ctx.ds, hash, 0, nodes, false, false);
    });
  }
  // rollingUpdate.waves: only the current wave's nodes, after selector and partition (waves.ts).
  return derivedOnce(ctx, 'nodesToUpdate', () =>
    gateWaves(ctx, keptNodesToUpdate(ctx, partitionCount(ctx.ds, ctx.desired))),
  );
}

/** What keptNodesToUpdate keeps between syncs. */
interface KeptNodesToUpdate {
  /** The hash, the partition and the update strategy it was computed for. */
  key: string;
  /** ctx.states it was computed on: the memo makes another array when nodes come or go. */
  states: readonly NodeState[];
  /** The memo's position (StateChanges.seq) it is known to hold at. */
  seq: number;
  result: NodesToUpdateStates;
}

const KEPT_NODES_TO_UPDATE = 'nodesToUpdate';

/**
 * nodesToUpdateInOrder over every node, kept between syncs of the same memo (StateChanges): a node's part in it is
 * whether it takes part, its bucket (updated, updating, to update) and whether rollingUpdate.selector selects it;
 * nothing else is read, and within a bucket the order is by name. While no changed node changed its part, the same
 * result; when some did and the result holds every node of the buckets (NodesToUpdateStates.complete: no partition
 * holds any back) and there is no selector, those nodes are moved from one bucket to the other in place (a node
 * that joined, or whose pod was replaced). At 65,000 nodes computing it was 44% of a steady sync's planning, mostly
 * pushing every node into its bucket (V8 profile of a sync after one pod changed, one DaemonSet), and most of a sync
 * after a node joined. Not kept under priorityStrategy or waves, whose order reads the nodes' labels.
 */
function keptNodesToUpdate(ctx: SyncContext, partition: number): NodesToUpdateStates {
  const { ds, hash, states, changes } = ctx;
  if (!changes || ordersByLabels(ds)) return nodesToUpdateInOrder(ds, hash, partition, states, true);
  const key = `${hash}\n${partition}\n${JSON.stringify(ds.spec.updateStrategy ?? null)}`;
  const kept = changes.kept.get(KEPT_NODES_TO_UPDATE) as KeptNodesToUpdate | undefined;
  const changed = kept?.key === key && kept.states === states ? changes.since(kept.seq) : undefined;
  if (kept && changed) {
    const hasSelector = hasUpdateSelector(ds);
    // A ghost (no node) is never in ctx.states.
    const moved = changed.filter(
      (s) => s.node !== undefined && s.updatePart !== updatePart(ds, hash, s, true, hasSelector),
    );
    if (moved.length === 0 || (kept.result.complete && !hasSelector)) {
      if (moved.length > 0) kept.result = moveBetweenBuckets(kept.result.states as NodeState[], moved, ds, hash);
      kept.seq = changes.seq;
      changes.reused(KEPT_NODES_TO_UPDATE);
      return kept.result;
    }
  }
  const result = nodesToUpdateInOrder(ds, hash, partition, states, true, true, true);
  changes.kept.set(KEPT_NODES_TO_UPDATE, { key, states, seq: changes.seq, result });
  return result;
}

/** The order of a complete nodesToUpdate (NodesToUpdateStates.complete): by bucket, then by descending name. */
function inBucketOrder(a: NodeState, b: NodeState): number {
  return a.updatePart - b.updatePart || cmp(b.name, a.name);
}

function inBuckets(part: number): boolean {
  return part >= UPDATED && part <= TO_UPDATE;
}

/** Where `s` goes in `list` (inBucketOrder): the first place whose state does not come before it. */
function placeOf(list: readonly NodeState[], s: NodeState): number {
  return lowerBound(list, (x) => inBucketOrder(x, s) < 0);
}

/**
 * A complete nodesToUpdate (without a selector) with `moved` in their new buckets: each taken out at its old place
 * and put in at its new one, in the same array, so values kept on it (busyNodesToUpdate) hear of them as changes.
 */
function moveBetweenBuckets(
  list: NodeState[],
  moved: readonly NodeState[],
  ds: DaemonSet,
  hash: string,
): NodesToUpdateStates {
  for (const s of moved) {
    if (inBuckets(s.updatePart)) {
      const at = placeOf(list, s);
      if (list[at] === s) list.splice(at, 1);
    }
    s.updatePart = updatePart(ds, hash, s, true, false);
    if (inBuckets(s.updatePart)) list.splice(placeOf(list, s), 0, s);
  }
  return statesToUpdate(list, true);
}

/** A NodesToUpdateStates of `states`; the names are made when read (few syncs do: image pre-download). */
function statesToUpdate(states: readonly NodeState[], complete: boolean): NodesToUpdateStates {
  let names: readonly string[] | undefined;
  return {
    get nodes() {
      return (names ??= states.map((s) => s.name));
    },
    states,
    complete,
  };
}

/**
 * A node's part in nodesToUpdateInOrder, as a number: NOT_TAKING_PART, or its bucket, plus NOT_SELECTED when
 * rollingUpdate.selector leaves the node out.
 */
const NOT_TAKING_PART = 0;
const UPDATED = 1;
const UPDATING = 2;
const TO_UPDATE = 3;
const NOT_SELECTED = 4;

function updatePart(ds: DaemonSet, hash: string, s: NodeState, filter: boolean, hasSelector: boolean): number {
  if (filter && !takesPart(s)) return NOT_TAKING_PART;
  const { newFacts, oldFacts, ok } = updatedPodsOf(s, hash);
  const bucket = !ok || newFacts ? UPDATED : factsNilOrPreDeleting(oldFacts) ? UPDATING : TO_UPDATE;
  return !hasSelector || nodeSelectedForUpdate(s.node as Node, ds) ? bucket : bucket + NOT_SELECTED;
}

/**
 * filterDaemonPodsNodeToUpdate: the nodes the rolling update may touch, in processing order.
 * Node names (existing nodes only) are walked in descending order and bucketed: "updated" (has a new pod, or more
 * than one new/old pod), "updating" (no old pod, or it is PreparingDelete), and the nodes still to update.
 * Order = updated, updating, then the nodes still to update, and `partition` nodes of the list stay old: the lowest
 * names among those not yet updated, and raising the partition never rolls pods back.
 * With rollingUpdate.priorityStrategy or waves, the nodes still to update are sorted by wave and priority first
 * (waves.ts): the partition then keeps the lowest-priority ones old.
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
): readonly string[] {
  const all = [...nodeToDaemonPods.keys()]
    .filter((n) => nodeByName.has(n))
    .sort(cmp)
    .map((n) => newNodeState(n, nodeByName.get(n), NOT_EVALUATED, nodeToDaemonPods.get(n)));
  return nodesToUpdateInOrder(ds, hash, partition, all).nodes;
}

/**
 * The nodes rollingUpdate.unhealthyNodes Ignore sets aside in this sync (unhealthy.ts), among nodesToUpdate; empty
 * under Count.
 */
export function setAside(ctx: SyncContext): ReadonlyMap<string, SetAsideReason> {
  return setAsideNodes(ctx, nodesToUpdateResult(ctx).states);
}

/**
 * A node of nodesToUpdate that the rolling update and the Progressing condition count as available and updated, with
 * nothing else to do: it should run the daemon and has one pod, of `hash`, Ready, neither terminating, PreparingDelete
 * nor held by an in-place update. Availability is Ready alone: only asked when minReadySeconds is 0.
 */
function isQuiet(s: NodeState, hash: string): boolean {
  const f = s.first;
  return (
    s.shouldRun &&
    s.facts.length === 1 &&
    f !== undefined &&
    f.hash === hash &&
    f.ready &&
    !f.terminating &&
    !f.preDeleting &&
    !f.inPlaceHeld
  );
}

/**
 * nodesToUpdateResult's states less the quiet ones (isQuiet), in the same order, and how many it left out. Kept
 * between syncs (keptSubset) when the memo keeps nodesToUpdate whole (NodesToUpdateStates.complete), every
 * node targets the current revision (no canary) and minReadySeconds is 0; otherwise every state. A settled
 * DaemonSet has none: the rolling update's pass and the Progressing condition's over every node were 49% of the
 * syncs at 65,000 nodes (V8 profile, bench/README.md section 8).
 */
export function busyNodesToUpdate(ctx: SyncContext): BusyNodesToUpdate {
  return derivedOnce(ctx, 'busyNodesToUpdate', () => {
    const { complete, states } = nodesToUpdateResult(ctx);
    const { hash, changes } = ctx;
    const keep = complete && sameTarget(ctx.targets) === hash && (ctx.ds.spec.minReadySeconds ?? 0) <= 0;
    if (!keep || !changes) return { states, quiet: 0 };
    const busy = keptSubset(changes, 'busyNodesToUpdate', states, hash, {
      member: (s) => !isQuiet(s, hash),
      inAll: (s) => s.node !== undefined && inBuckets(s.updatePart),
      compare: inBucketOrder,
    });
    return { states: busy, quiet: states.length - busy.length };
  });
}

/** Eligibility is not read by nodesToUpdateInOrder. */
const NOT_EVALUATED = Object.freeze({ shouldRun: false, shouldContinueRunning: false });

/**
 * filterDaemonPodsNodeToUpdate on `all`: existing nodes in ascending name order, those taking part in the rolling
 * update (desiredNodeNames) only, or, with `filter`, the ones of them that do.
 */
function nodesToUpdateInOrder(
  ds: DaemonSet,
  hash: string,
  partition: number,
  all: readonly NodeState[],
  filter = false,
  useSelector = true,
  stamp = false,
): NodesToUpdateStates {
  const hasSelector = useSelector && hasUpdateSelector(ds);
  let taking = 0;
  // Nodes outside the selector that are updated or updating already: in the list (they hold new pods, or get one
  // from manage whatever we do), but not counted by the partition.
  const outside: NodeState[] = [];
  const updated: NodeState[] = [];
  const updating: NodeState[] = [];
  const toUpdate: NodeState[] = [];
  const buckets = [updated, updating, toUpdate];
  for (let i = all.length - 1; i >= 0; i--) {
    const s = all[i] as NodeState;
    const part = updatePart(ds, hash, s, filter, hasSelector);
    // What keptNodesToUpdate compares a changed node with.
    if (stamp) s.updatePart = part;
    if (part === NOT_TAKING_PART) continue;
    taking++;
    const bucket = buckets[(part > NOT_SELECTED ? part - NOT_SELECTED : part) - 1] as NodeState[];
    if (part < NOT_SELECTED) bucket.push(s);
    else if (bucket !== toUpdate) outside.push(s);
  }
  // rollingUpdate.priorityStrategy and waves: the nodes still to update by wave and priority (waves.ts).
  updateOrder(ds, all)?.(toUpdate);
  const subsetLength = updated.length + updating.length + toUpdate.length;
  const maxUpdate = Math.max(0, subsetLength - partition);
  // outside, then the first maxUpdate of updated, updating, toUpdate. A settled or fully old DaemonSet has all its
  // nodes in one bucket: that list is the result.
  const only = [updated, updating, toUpdate].filter((b) => b.length > 0);
  let states: NodeState[];
  if (outside.length === 0 && only.length === 1 && maxUpdate >= subsetLength) {
    states = only[0] as NodeState[];
  } else {
    states = outside;
    let taken = 0;
    for (const bucket of [updated, updating, toUpdate]) {
      for (let i = 0; i < bucket.length && taken < maxUpdate; i++, taken++) states.push(bucket[i] as NodeState);
    }
  }
  // Every node of the buckets, in their order: the stamped parts then tell which nodes `states` holds.
  const out = statesToUpdate(states, stamp && outside.length === 0 && maxUpdate >= subsetLength);
  if (hasSelector && toUpdate.length > 0 && maxUpdate === 0) {
    out.hold = { partition, held: toUpdate.length, selected: subsetLength, all: taking };
  }
  return out;
}

export interface RollingUpdateResult {
  /** Old pods to replace (deleted, or updated in place under InPlaceIfPossible where possible). */
  podsToDelete: PodDelete[];
  /**
   * Old available pods whose update keeps them Ready (`freeUpdate`: a resize), updated in place outside the
   * maxUnavailable budget. Empty without `freeUpdate` and with surge.
   */
  freeUpdates: PodDelete[];
  /** Surge: nodes to start a new pod on, next to the old one. */
  nodesToCreate: string[];
  maxSurge: number;
  maxUnavailable: number;
  error?: string;
}

/**
 * rollingUpdate. Budget: maxUnavailable and maxSurge scaled on the desired node count, rounded up (both 0 ->
 * maxUnavailable 1). Only nodes kept by filterDaemonPodsNodeToUpdate take part (processed in its order). "New" and
 * "old" are relative to each node's target revision (targetHash, targets.ts: the current one unless a canary holds
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
export function rollingUpdate(ctx: SyncContext, freeUpdate?: FreeUpdate): RollingUpdateResult {
  const { ds } = ctx;
  const result: RollingUpdateResult = {
    podsToDelete: [],
    freeUpdates: [],
    nodesToCreate: [],
    maxSurge: 0,
    maxUnavailable: 0,
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
  // The quiet nodes change nothing in either pass but surgeFirst's count of available ones.
  const busy = busyNodesToUpdate(ctx);
  if (result.maxSurge === 0) return { ...result, ...deleteFirst(ctx, busy.states, result.maxUnavailable, freeUpdate) };
  return { ...result, ...surgeFirst(ctx, busy, result.maxSurge) };
}

/** How both passes read a node: its new and old pod relative to its target revision (targetHash), availability. */
interface NodeReader {
  podsOf(s: NodeState): UpdatedPodFacts;
  available(f: PodFacts): boolean;
}

function nodeReader(ctx: SyncContext): NodeReader {
  // Every node's target is the current revision unless a canary runs (targetHash).
  const same = sameTarget(ctx.targets);
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  return {
    podsOf: (s) => updatedPodsOf(s, same ?? targetHash(ctx.targets, s.name)),
    available: (f) => factsAvailable(f, minReady, ctx.now),
  };
}

function podDelete(f: PodFacts, nodeName: string, reason: PodDelete['reason']): PodDelete {
  return { podName: f.pod.metadata.name ?? '', nodeName, uid: f.pod.metadata.uid, reason };
}

/**
 * Whether updating this old, available pod keeps it available, so that it needs none of the maxUnavailable budget:
 * a resize the kubelet makes without restarting a container (inplace.ts, inPlaceStep). Availability is Ready for
 * minReadySeconds (upstream's IsPodAvailable, https://github.com/kubernetes/kubernetes/blob/master/pkg/api/v1/pod/util.go),
 * and the kubelet leaves Ready alone through such a resize.
 */
export type FreeUpdate = (pod: Pod, nodeName: string) => boolean;

/**
 * maxSurge 0 (upstream's rollingUpdate without surge): the old pods to delete within maxUnavailable, and those
 * whose update `freeUpdate` says needs no budget.
 */
function deleteFirst(
  ctx: SyncContext,
  states: readonly NodeState[],
  maxUnavailable: number,
  freeUpdate: FreeUpdate | undefined,
): Pick<RollingUpdateResult, 'podsToDelete' | 'freeUpdates'> {
  const { podsOf, available } = nodeReader(ctx);
  const aside = setAside(ctx);
  let numUnavailable = 0;
  const allowed: PodDelete[] = [];
  const candidates: PodDelete[] = [];
  const freeUpdates: PodDelete[] = [];
  for (const s of states) {
    const nodeName = s.name;
    const { newFacts, oldFacts, ok } = podsOf(s);
    if (!ok) {
      numUnavailable++;
      continue;
    }
    const noOld = factsNilOrPreDeleting(oldFacts);
    const noNew = factsNilOrPreDeleting(newFacts);
    if (aside.has(nodeName)) {
      // Set aside (unhealthyNodes Ignore): no budget. An old pod that was never scheduled is still replaced, as
      // upstream replaces any unavailable old pod: the new revision may fit where the old one did not.
      if (aside.get(nodeName) === 'Unschedulable' && noNew && oldFacts && !noOld && !available(oldFacts))
        allowed.push(podDelete(oldFacts, nodeName, 'OldPodUnavailable'));
      continue;
    }
    if (noOld === noNew) {
      numUnavailable++;
    } else if (newFacts) {
      if (!available(newFacts)) numUnavailable++;
      if (newFacts.preDeleting) numUnavailable++;
    } else if (oldFacts && !available(oldFacts)) {
      allowed.push(podDelete(oldFacts, nodeName, 'OldPodUnavailable'));
      numUnavailable++;
    } else if (oldFacts && freeUpdate?.(oldFacts.pod, nodeName)) {
      freeUpdates.push(podDelete(oldFacts, nodeName, 'InPlaceResize'));
    } else if (oldFacts && numUnavailable < maxUnavailable && candidates.length < maxUnavailable) {
      // At most maxUnavailable candidates are ever taken (the first ones): more would be built for nothing.
      candidates.push(podDelete(oldFacts, nodeName, 'RollingUpdate'));
    }
  }
  const remaining = Math.min(Math.max(maxUnavailable - numUnavailable, 0), candidates.length);
  return { podsToDelete: [...allowed, ...candidates.slice(0, remaining)], freeUpdates };
}

/** maxSurge > 0 (upstream's rollingUpdate with surge): the nodes to start a new pod on, and the old pods to delete. */
function surgeFirst(
  ctx: SyncContext,
  { states, quiet }: BusyNodesToUpdate,
  maxSurge: number,
): Pick<RollingUpdateResult, 'podsToDelete' | 'nodesToCreate'> {
  const { podsOf, available } = nodeReader(ctx);
  const aside = setAside(ctx);
  const podsToDelete: PodDelete[] = [];
  let numSurge = 0;
  let numAvailable = quiet;
  const allowedNew: string[] = [];
  const candidateNew: string[] = [];
  const shouldNotRun: PodDelete[] = [];
  for (const s of states) {
    const nodeName = s.name;
    const { newFacts, oldFacts, ok } = podsOf(s);
    if (!ok) {
      numSurge++;
      continue;
    }
    if (oldFacts ? available(oldFacts) : newFacts && available(newFacts)) numAvailable++;
    const shouldRun = s.shouldRun;
    if (factsNilOrPreDeleting(oldFacts)) continue;
    const old = oldFacts as PodFacts;
    if (aside.has(nodeName)) {
      // Set aside (unhealthyNodes Ignore): no surge. An old pod never scheduled gets its new pod, as upstream's.
      if (aside.get(nodeName) === 'Unschedulable' && !newFacts && !available(old) && shouldRun)
        allowedNew.push(nodeName);
      continue;
    }
    if (!newFacts) {
      if (!available(old)) {
        if (!shouldRun) podsToDelete.push(podDelete(old, nodeName, 'NodeSunset'));
        else allowedNew.push(nodeName);
      } else if (numSurge >= maxSurge) {
        continue;
      } else if (!shouldRun) {
        shouldNotRun.push(podDelete(old, nodeName, 'NodeSunset'));
      } else if (candidateNew.length < maxSurge) {
        // At most maxSurge are ever taken (the first ones).
        candidateNew.push(nodeName);
      }
      continue;
    }
    if (!available(newFacts) || newFacts.preDeleting) {
      numSurge++;
      continue;
    }
    podsToDelete.push(podDelete(old, nodeName, 'SurgeReplaced'));
  }
  const deletable = Math.min(Math.max(numAvailable - ctx.desired, 0), shouldNotRun.length);
  podsToDelete.push(...shouldNotRun.slice(0, deletable));
  const remaining = Math.min(Math.max(maxSurge - numSurge, 0), candidateNew.length);
  return { podsToDelete, nodesToCreate: [...allowedNew, ...candidateNew.slice(0, remaining)] };
}
