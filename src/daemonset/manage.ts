// manage / podsShouldBeOnNode / syncNodes (kruise daemonset_controller.go, upstream daemon_controller.go):
// one pod per eligible node, failed pods replaced with per-node backoff, excess pods trimmed, pods on nodes that no
// longer qualify removed, lifecycle preDelete hooks honoured, burstReplicas cap.
import type { Pod } from '../k8s/types.ts';
import { isPodAvailable, isPodReady, podAvailableWaitingTimeMs } from '../k8s/pod.ts';
import {
  backoffNext,
  backoffRemainingMs,
  failedPodsBackoffKey,
  isInBackOffSinceUpdate,
  type BackoffState,
} from './backoff.ts';
import { cmp, keptSubset, minDelay, type SubsetRule, type SyncContext } from './context.ts';
import { isSettledPod, updatedPodsOf, type NodeState } from './node-state.ts';
import {
  addNotReadyKeyPatch,
  isPodHooked,
  isPodPreDeleting,
  isPodUpdated,
  newPodForNode,
  PRE_DELETE_HOLDER,
  preparingDeletePatch,
} from './pods.ts';
import type { PlanEvent, PodCreate, PodDelete, PodPatch } from './plan-types.ts';
import { podTargetOf, targetHash } from './targets.ts';
import {
  allowSurge,
  burstReplicas,
  isDaemonSetCreationProgressively,
  isRollingUpdate,
  partitionCount,
} from './strategy.ts';
import { FAILED_DAEMON_POD_REASON, SUCCEEDED_DAEMON_POD_REASON } from './events.ts';

export interface NodeDecision {
  /** The node needs a new daemon pod. */
  needsPod: boolean;
  podsToDelete: PodDelete[];
  events: PlanEvent[];
  backoff: BackoffState;
  requeueAfterMs?: number;
}

function podDelete(pod: Pod, nodeName: string, reason: PodDelete['reason']): PodDelete {
  return { podName: pod.metadata.name ?? '', nodeName, uid: pod.metadata.uid, reason };
}

/**
 * podsShouldBeOnNode for one node (undefined: nothing to do):
 * - shouldRun and no pod mapped to the node (terminating ones count) -> create one;
 * - shouldContinueRunning: terminating pods are skipped; Failed pods deleted unless the node's backoff key is in
 *   backoff (then requeue after the remaining delay), each deletion advancing the backoff (1 s doubling to 15 min)
 *   with Warning FailedDaemonPod; Succeeded pods deleted (Normal SucceededDaemonPod); PreparingDelete pods queued
 *   for deletion (syncNodes keeps them while hooked); the rest are "running":
 *   - without surge: more than one running -> keep the first (scheduled, oldest, name), delete the others; never a
 *     create here, so a terminating or failed pod blocks its replacement until it is gone;
 *   - with surge: none running and shouldRun -> create; else keep the oldest new-hash and the oldest old-hash pod,
 *     delete the rest; with both: delete the old one if it is not Ready, or if the new one is available, else
 *     requeue for the new one's remaining minReadySeconds;
 * - not shouldContinueRunning -> delete every non-terminating pod.
 */
export function podsShouldBeOnNode(
  ctx: SyncContext,
  nodeName: string,
  backoff: BackoffState,
  surge: boolean,
): NodeDecision | undefined {
  const { shouldRun, shouldContinueRunning } = ctx.eligibility.get(nodeName) ?? {
    shouldRun: false,
    shouldContinueRunning: false,
  };
  const daemonPods = ctx.nodeToDaemonPods.get(nodeName);
  // The usual node of a settled DaemonSet: one running pod that may stay. Nothing to decide; returning early keeps
  // a sync over thousands of such nodes free of per-node allocations.
  if (shouldContinueRunning && daemonPods?.length === 1 && isSettledPod(daemonPods[0] as Pod)) return undefined;
  if (shouldRun && daemonPods === undefined) return { needsPod: true, podsToDelete: [], events: [], backoff };
  if (!shouldContinueRunning) {
    const podsToDelete: PodDelete[] = [];
    for (const pod of daemonPods ?? []) {
      if (!pod.metadata.deletionTimestamp) podsToDelete.push(podDelete(pod, nodeName, 'NodeNotEligible'));
    }
    return { needsPod: false, podsToDelete, events: [], backoff };
  }
  const sorted = sortPodsOnNode(ctx, nodeName, daemonPods ?? [], backoff);
  // daemonPods are sorted scheduled-first, oldest-first (getNodesToDaemonPods), and so is `running`.
  const kept = surge
    ? keepWithSurge(ctx, nodeName, sorted.running, shouldRun)
    : { needsPod: false, podsToDelete: sorted.running.slice(1).map((pod) => podDelete(pod, nodeName, 'ExcessPod')) };
  const requeueAfterMs = minDelay(sorted.requeueAfterMs, kept.requeueAfterMs);
  return {
    needsPod: kept.needsPod,
    podsToDelete: [...sorted.podsToDelete, ...kept.podsToDelete],
    events: sorted.events,
    backoff: sorted.backoff,
    ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
  };
}

/** The pods of a node where the daemon may keep running, sorted out by podsShouldBeOnNode's rules. */
interface PodsOnNode {
  /** Neither terminating, nor terminal, nor PreparingDelete: the pods the node runs, in the order given. */
  running: Pod[];
  podsToDelete: PodDelete[];
  events: PlanEvent[];
  backoff: BackoffState;
  requeueAfterMs?: number;
}

/**
 * Terminating pods are skipped; Failed pods deleted unless the node's backoff key is in backoff (then requeue after
 * the remaining delay), each deletion advancing the backoff, with Warning FailedDaemonPod; Succeeded pods deleted
 * (Normal SucceededDaemonPod); PreparingDelete pods queued for deletion (syncNodes keeps them while hooked).
 */
function sortPodsOnNode(ctx: SyncContext, nodeName: string, pods: readonly Pod[], backoff: BackoffState): PodsOnNode {
  const { ds, now } = ctx;
  const out: PodsOnNode = { running: [], podsToDelete: [], events: [], backoff };
  for (const pod of pods) {
    if (pod.metadata.deletionTimestamp) continue;
    const phase = pod.status?.phase;
    if (phase === 'Failed') {
      const key = failedPodsBackoffKey(ds.metadata.uid ?? '', ds.status?.observedGeneration ?? 0, nodeName);
      if (isInBackOffSinceUpdate(out.backoff, key, now)) {
        out.requeueAfterMs = minDelay(out.requeueAfterMs, backoffRemainingMs(out.backoff, key, now));
        continue;
      }
      out.backoff = backoffNext(out.backoff, key, now);
      out.events.push({
        type: 'Warning',
        reason: FAILED_DAEMON_POD_REASON,
        message: `Found failed daemon pod ${pod.metadata.namespace ?? ds.metadata.namespace}/${pod.metadata.name} on node ${nodeName}, will try to kill it`,
      });
      out.podsToDelete.push(podDelete(pod, nodeName, 'FailedPod'));
    } else if (phase === 'Succeeded') {
      out.events.push({
        type: 'Normal',
        reason: SUCCEEDED_DAEMON_POD_REASON,
        message: `Found succeeded daemon pod ${pod.metadata.namespace ?? ds.metadata.namespace}/${pod.metadata.name} on node ${nodeName}, will try to delete it`,
      });
      out.podsToDelete.push(podDelete(pod, nodeName, 'SucceededPod'));
    } else if (isPodPreDeleting(pod)) {
      out.podsToDelete.push(podDelete(pod, nodeName, 'PreparingDelete'));
    } else {
      out.running.push(pod);
    }
  }
  return out;
}

/**
 * With surge: none running and shouldRun -> create; else keep the oldest new-hash and the oldest old-hash pod, delete
 * the rest; with both: delete the old one if it is not Ready, or if the new one is available, else requeue for the new
 * one's remaining minReadySeconds.
 */
function keepWithSurge(
  ctx: SyncContext,
  nodeName: string,
  running: readonly Pod[],
  shouldRun: boolean,
): Pick<NodeDecision, 'needsPod' | 'podsToDelete' | 'requeueAfterMs'> {
  if (running.length <= 1) return { needsPod: running.length === 0 && shouldRun, podsToDelete: [] };
  const podsToDelete: PodDelete[] = [];
  let oldestNew: Pod | undefined;
  let oldestOld: Pod | undefined;
  // "New" is the node's target revision: the current one, or the stable one beside a canary (targets.ts).
  const hash = targetHash(ctx.targets, nodeName);
  for (const pod of running) {
    const isNew = isPodUpdated(pod, hash);
    if (isNew && !oldestNew) oldestNew = pod;
    else if (!isNew && !oldestOld) oldestOld = pod;
    else podsToDelete.push(podDelete(pod, nodeName, 'ExcessPod'));
  }
  if (!oldestNew || !oldestOld) return { needsPod: false, podsToDelete };
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  if (!isPodReady(oldestOld)) podsToDelete.push(podDelete(oldestOld, nodeName, 'OldPodUnavailable'));
  else if (isPodAvailable(oldestNew, minReady, ctx.now))
    podsToDelete.push(podDelete(oldestOld, nodeName, 'SurgeReplaced'));
  else if (isPodReady(oldestNew) && minReady > 0) {
    return {
      needsPod: false,
      podsToDelete,
      requeueAfterMs: podAvailableWaitingTimeMs(oldestNew, minReady, ctx.now),
    };
  }
  return { needsPod: false, podsToDelete };
}

/**
 * getUnscheduledPodsWithoutNode: unbound pods (empty spec.nodeName) pinned to nodes that do not exist; PodGC cannot
 * clean them. Pods bound to a vanished node are left to PodGC, as upstream.
 */
export function getUnscheduledPodsWithoutNode(ctx: SyncContext): PodDelete[] {
  const out: PodDelete[] = [];
  for (const gone of ctx.ghosts) {
    for (const { pod } of gone.facts) {
      if (!pod.spec.nodeName && !pod.metadata.deletionTimestamp) out.push(podDelete(pod, gone.name, 'NodeGone'));
    }
  }
  return out;
}

/**
 * GetNodesNeedingPods: node names sorted (lexicographically); with progressive creation the partition also limits
 * creation: at most desired - newPods - partition (partition clamped to [0, desired]) nodes get a pod.
 */
export function getNodesNeedingPods(
  newPodsNum: number,
  desired: number,
  partition: number,
  progressive: boolean,
  nodesNeedingPods: readonly string[],
): string[] {
  const sorted = [...nodesNeedingPods].sort(cmp);
  if (!progressive) return sorted;
  const p = Math.max(Math.min(partition, desired), 0);
  const maxCreate = Math.min(Math.max(desired - newPodsNum - p, 0), sorted.length);
  return sorted.slice(0, maxCreate);
}

/** Nodes with exactly one non-terminating pod of the current revision (progressive creation counts them). */
function newPodCount(ctx: SyncContext): number {
  let n = 0;
  for (const s of ctx.states) {
    const { newFacts, ok } = updatedPodsOf(s, ctx.hash);
    if (ok && newFacts) n++;
  }
  return n;
}

export interface ManageResult {
  nodesNeedingDaemonPods: string[];
  podsToDelete: PodDelete[];
  events: PlanEvent[];
  backoff: BackoffState;
  requeueAfterMs?: number;
}

/** manage: podsShouldBeOnNode over every node, plus unbound pods on missing nodes, plus progressive creation. */
export function manage(ctx: SyncContext, backoff: BackoffState): ManageResult {
  const surge = allowSurge(ctx.ds);
  const result: ManageResult = { nodesNeedingDaemonPods: [], podsToDelete: [], events: [], backoff };
  for (const s of unsettledStates(ctx)) {
    // A settled node decides nothing (podsShouldBeOnNode's first check), whatever the clock says.
    if (s.settled) continue;
    const name = s.name;
    const d = podsShouldBeOnNode(ctx, name, result.backoff, surge);
    if (!d) continue;
    if (d.needsPod) result.nodesNeedingDaemonPods.push(name);
    result.podsToDelete.push(...d.podsToDelete);
    result.events.push(...d.events);
    result.backoff = d.backoff;
    result.requeueAfterMs = minDelay(result.requeueAfterMs, d.requeueAfterMs);
  }
  result.podsToDelete.push(...getUnscheduledPodsWithoutNode(ctx));

  const partition = isRollingUpdate(ctx.ds) ? partitionCount(ctx.ds, ctx.desired) : 0;
  const progressive = partition !== 0 && isDaemonSetCreationProgressively(ctx.ds);
  result.nodesNeedingDaemonPods = getNodesNeedingPods(
    progressive ? newPodCount(ctx) : 0,
    ctx.desired,
    partition,
    progressive,
    result.nodesNeedingDaemonPods,
  );
  return result;
}

/** Manage looks at the nodes not settled (settled reads nothing but the state), in name order. */
const UNSETTLED: SubsetRule = {
  member: (s) => !s.settled,
  inAll: (s) => s.node !== undefined,
  compare: (a, b) => cmp(a.name, b.name),
};

/**
 * The states manage looks at, in name order: those not settled, kept between syncs with a memo (keptSubset). A
 * settled DaemonSet has none, where the pass over every node was a fifth of a steady sync's planning at 65,000 nodes.
 */
function unsettledStates(ctx: SyncContext): readonly NodeState[] {
  return keptSubset(ctx.changes, 'unsettled', ctx.states, '', UNSETTLED);
}

export interface SyncNodesResult {
  creates: PodCreate[];
  deletes: PodDelete[];
  podPatches: PodPatch[];
}

/**
 * syncNodes (pure part): lifecycle preDelete first (a hooked pod is not deleted but labelled PreparingDelete with a
 * timestamp, and with markPodNotReady its KruisePodReady condition is set False held by the hook), then creates and
 * deletes each capped at burstReplicas. New pods are built from the current template and hash, or, beside a canary,
 * from the node's target revision (podTargetOf, targets.ts; newPodForNode, pods.ts), with the node's per-node resources
 * (overrides.ts).
 */
export function syncNodes(
  ctx: SyncContext,
  podsToDelete: readonly PodDelete[],
  nodesNeedingDaemonPods: readonly string[],
): SyncNodesResult {
  const { ds, now } = ctx;
  const hook = ds.spec.lifecycle?.preDelete;
  const podPatches: PodPatch[] = [];
  const deletable: PodDelete[] = [];
  const seen = new Set<string>();
  for (const d of podsToDelete) {
    if (seen.has(d.podName)) continue;
    seen.add(d.podName);
    const pod = ctx.podsByName.get(d.podName);
    if (hook && pod && isPodHooked(hook, pod)) {
      if (hook.markPodNotReady) {
        const patch = addNotReadyKeyPatch(pod, PRE_DELETE_HOLDER, now);
        if (patch)
          podPatches.push({
            podName: d.podName,
            subresource: 'status',
            patchType: 'strategic',
            patch,
            reason: 'MarkPodNotReady',
          });
      }
      if (!isPodPreDeleting(pod)) {
        podPatches.push({
          podName: d.podName,
          patchType: 'strategic',
          patch: preparingDeletePatch(now),
          reason: 'PreparingDelete',
        });
      }
      continue;
    }
    deletable.push(d);
  }
  const burst = burstReplicas(ds, ctx.desired);
  const creates = nodesNeedingDaemonPods.slice(0, burst).map((nodeName): PodCreate => {
    const target = podTargetOf(ds, ctx.targets, nodeName);
    const pod = newPodForNode(target, nodeName, ctx.opts, ctx.resources.of(nodeName));
    return { nodeName, revisionHash: target.hash, pod };
  });
  return { creates, deletes: deletable.slice(0, burst), podPatches };
}

/**
 * Slow-start batch sizes for `count` creates (syncNodes, SlowStartInitialBatchSize 1): 1, 2, 4, ... each batch
 * run in parallel; after a batch with a failure the shell skips the rest and lowers its add expectations by the
 * skipped count. E.g. 10 -> [1, 2, 4, 3].
 */
export function slowStartBatches(count: number, initial = 1): number[] {
  const out: number[] = [];
  let batch = Math.min(count, initial);
  for (let pos = 0; pos < count;) {
    out.push(batch);
    pos += batch;
    batch = Math.min(2 * batch, count - pos);
  }
  return out;
}
