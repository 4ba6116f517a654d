// Status (Kruise's updateDaemonSetStatus/storeDaemonSetStatus, as upstream's in
// https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/daemon_controller.go)
// plus conditions for `kubectl wait` (docs/differences.md#status-conditions).
import type { DaemonSetCondition, DaemonSetStatus } from '../api/types.ts';
import type { Pod } from '../k8s/types.ts';
import { formatTime, getPodCondition, hasReadinessGate, isPodAvailable, parseTime } from '../k8s/pod.ts';
import { canonicalJson } from '../k8s/hash.ts';
import { IN_PLACE_UPDATE_READY } from './constants.ts';
import { derivedOnce, minDelay, type SyncContext } from './context.ts';
import { factsDaemonAvailable, factsWaitingTimeMs, type NodeState } from './node-state.ts';
import { nodesWaitingFor, readinessTaintOf } from './node-readiness.ts';
import { busyNodesToUpdate, nodesToUpdateResult, setAside } from './update.ts';
import { waveMessage } from './waves.ts';
import { ignoresUnhealthyNodes, setAsideConditionReason, setAsideMessage } from './unhealthy.ts';
import { isDaemonSetPaused, isRolloutFrozen, isRollingUpdate } from './strategy.ts';
import { ROLLOUT_FROZEN_ANNOTATION } from '../api/constants.ts';
import { sameTarget, targetHash } from './targets.ts';
import { INVALID_ROLLING_UPDATE_REASON, ROLLOUT_FROZEN_REASON } from './events.ts';
import { labelSelectorErrors } from '../k8s/labels.ts';
import type { CanaryPlan, CountersResult, StatusCounters } from './plan-types.ts';

/**
 * Conditions written on status.conditions (Kruise and upstream never write any), usable with
 * `kubectl wait --for=condition=<Type>[=False] ads/<name>`:
 *
 * - `RolloutComplete`: True when the controller has observed the current generation
 *   (observedGeneration >= metadata.generation), every eligible node runs a pod of the current revision
 *   (updatedNumberScheduled >= desiredNumberScheduled) and every one of them is available
 *   (numberAvailable >= desiredNumberScheduled); the same test as `kubectl rollout status`. Reason
 *   `RolloutComplete` (True) or `RolloutInProgress` (False, message says what is awaited).
 * - `Progressing`, as a Deployment's (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#deployment-status):
 *   True while the rollout moves or once it is done, Unknown while it is paused, False when it failed. The reason
 *   says which: `Updating` (work the controller may do now: a generation not yet observed, an eligible node without
 *   an available pod, or an old pod on a node the strategy may update now) or `CanaryObserving`; done:
 *   `RolloutComplete`, `PartitionReached` (every node the partition/selector allows is updated and available; the rest
 *   stays old on purpose), `OnDelete` (old pods are replaced only when deleted); paused (Unknown): `Paused`
 *   (rollingUpdate.paused), `CanaryPaused`, `RolloutFrozen` (annotation rollout-frozen); failed (False): `CanaryFailed`, `InvalidRollingUpdate`,
 *   `ProgressDeadlineExceeded`. A step is waited for by its reason (`kubectl wait
 *   --for=jsonpath='{.status.conditions[?(@.type=="Progressing")].reason}'=PartitionReached`) or `kubectl ads status`.
 *   When rollingUpdate.selector is set and the partition (counted within the selected nodes) keeps every selected
 *   node still to update on the old revision, the message says so with the numbers (selectorPartitionHoldMessage),
 *   and the sync that first finds it records event PARTITION_HOLDS_SELECTED_NODES (events.ts).
 * - `Available`: True when every eligible node has an available pod (numberAvailable >= desiredNumberScheduled),
 *   of any revision. Reason `AllNodesAvailable` / `NodesUnavailable`.
 * - `NodesSetAside`, only with rollingUpdate.unhealthyNodes Ignore (unhealthy.ts): True while the rolling update
 *   sets nodes aside, its reason why (`NotReady`, `Unknown`, `Unreachable`, `Unschedulable`, or `Unhealthy` for
 *   several), its message how many and which; False (`NoNodesSetAside`) otherwise. Set-aside nodes are not pending
 *   work: once only they are left, Progressing says `NodesSetAside` (True, the rollout is done with what it can
 *   update) and RolloutComplete stays False.
 *
 * lastTransitionTime changes only when a condition's status flips; reason and message follow the counters.
 */
export const CONDITION_ROLLOUT_COMPLETE = 'RolloutComplete';
export const CONDITION_PROGRESSING = 'Progressing';
export const CONDITION_AVAILABLE = 'Available';
/** spec.nodeReadiness only: whether nodes carry the DaemonSet's taint waiting for its pods (node-readiness.ts). */
export const CONDITION_NODE_READINESS = 'NodeReadiness';
export const CONDITION_NODES_SET_ASIDE = 'NodesSetAside';
/** Progressing True: the rollout is done but for the nodes unhealthyNodes Ignore sets aside. */
export const NODES_SET_ASIDE_REASON = 'NodesSetAside';

const nodeCount = (n: number) => `${n} node${n === 1 ? '' : 's'}`;

/**
 * E.g. "partition 5 keeps all 3 nodes selected by rollingUpdate.selector on the old revision; Kruise counts the
 * partition across all 10 nodes". Undefined unless the rolling update runs (RollingUpdate, not paused) and the
 * partition holds every selected node still to update (SelectorPartitionHold, update.ts).
 */
export function selectorPartitionHoldMessage(ctx: SyncContext): string | undefined {
  if (!isRollingUpdate(ctx.ds) || isDaemonSetPaused(ctx.ds)) return undefined;
  const hold = nodesToUpdateResult(ctx).hold;
  if (!hold) return undefined;
  const which =
    hold.held === hold.selected
      ? `${hold.held === 1 ? 'the 1 node' : `all ${hold.held} nodes`} selected by rollingUpdate.selector`
      : `the ${hold.held} of ${nodeCount(hold.selected)} selected by rollingUpdate.selector that are not updated yet`;
  return `partition ${hold.partition} keeps ${which} on the old revision; Kruise counts the partition across all ${nodeCount(hold.all)}`;
}

/**
 * isDaemonPodAvailable (Kruise): available as podutil, and not in the middle of an in-place update
 * (InPlaceUpdateReady condition, when the pod has that gate, absent or True).
 */
export function isDaemonPodAvailable(pod: Pod, minReadySeconds: number, now: number): boolean {
  if (!isPodAvailable(pod, minReadySeconds, now)) return false;
  if (hasReadinessGate(pod, IN_PLACE_UPDATE_READY)) {
    const c = getPodCondition(pod, IN_PLACE_UPDATE_READY);
    if (c && c.status !== 'True') return false;
  }
  return true;
}

export interface StatusResult {
  status: DaemonSetStatus;
  changed: boolean;
  /** Soonest time a Ready pod on an eligible node becomes available (minReadySeconds), if any. */
  requeueAfterMs?: number;
}

/** Every counter at 0, to count up from. */
export function zeroCounters(): StatusCounters {
  return {
    desiredNumberScheduled: 0,
    currentNumberScheduled: 0,
    numberMisscheduled: 0,
    numberReady: 0,
    numberAvailable: 0,
    numberUnavailable: 0,
    updatedNumberScheduled: 0,
  };
}

/**
 * Counters, per node of the node list (pods on nodes absent from the list are not counted): shouldRun -> desired++;
 * with at least one pod (terminating included) -> current++, and the first pod (scheduled, oldest, name) decides:
 * Ready -> numberReady++, also available -> numberAvailable++, hash == current -> updatedNumberScheduled++ (so during
 * a surge the old pod is what counts). Not shouldRun but has pods -> numberMisscheduled++ (including a node with a
 * new untolerated NoSchedule taint whose pod keeps running). numberUnavailable = desired - available.
 */
export function calculateCounters(ctx: SyncContext): CountersResult {
  return derivedOnce(ctx, 'counters', () => keptCounters(ctx));
}

/** What keptCounters keeps between syncs. */
interface KeptCounters {
  /** The hash it was counted for. */
  hash: string;
  /** ctx.states it was counted on: the memo makes another array when nodes come or go. */
  states: readonly NodeState[];
  /** The memo's position (StateChanges.seq) it is known to hold at. */
  seq: number;
  counters: StatusCounters;
}

const KEPT_COUNTERS = 'counters';

/** A node's part in the counters, as bits (countsPart). */
const DESIRED = 1;
const CURRENT = 2;
const READY = 4;
const AVAILABLE = 8;
const UPDATED = 16;
const MISSCHEDULED = 32;

/** What the node adds to the counters (calculateCounters' rules). */
function countsPart(s: NodeState, hash: string, minReady: number, now: number): number {
  const first = s.first;
  if (!s.shouldRun) return first ? MISSCHEDULED : 0;
  if (!first) return DESIRED;
  let part = DESIRED | CURRENT;
  if (first.ready) part |= READY | (factsDaemonAvailable(first, minReady, now) ? AVAILABLE : 0);
  if (first.hash === hash) part |= UPDATED;
  return part;
}

function addPart(c: StatusCounters, part: number, n: 1 | -1): void {
  if (part & DESIRED) c.desiredNumberScheduled += n;
  if (part & CURRENT) c.currentNumberScheduled += n;
  if (part & READY) c.numberReady += n;
  if (part & AVAILABLE) c.numberAvailable += n;
  if (part & UPDATED) c.updatedNumberScheduled += n;
  if (part & MISSCHEDULED) c.numberMisscheduled += n;
}

/**
 * The counters without minReadySeconds (then nothing in them depends on the clock), kept between syncs of the same
 * memo (StateChanges) and brought up to date from the nodes changed since: a node's part in them is kept on its
 * state (countsPart), so a change adds the difference. Otherwise, and without a memo, they are counted over every
 * node (countersOf).
 */
function keptCounters(ctx: SyncContext): CountersResult {
  const { hash, states, changes, now } = ctx;
  if (!changes || (ctx.ds.spec.minReadySeconds ?? 0) > 0) return countersOf(ctx);
  let kept = changes.kept.get(KEPT_COUNTERS) as KeptCounters | undefined;
  const changed = kept?.hash === hash && kept.states === states ? changes.since(kept.seq) : undefined;
  if (kept && changed) {
    changes.reused(KEPT_COUNTERS);
    for (const s of changed) {
      if (s.node === undefined) continue; // a ghost is never in ctx.states
      const part = countsPart(s, hash, 0, now);
      if (part === s.countsPart) continue;
      addPart(kept.counters, s.countsPart, -1);
      addPart(kept.counters, part, 1);
      s.countsPart = part;
    }
  } else {
    const counters = zeroCounters();
    for (const s of states) {
      s.countsPart = countsPart(s, hash, 0, now);
      addPart(counters, s.countsPart, 1);
    }
    kept = { hash, states, seq: 0, counters };
    changes.kept.set(KEPT_COUNTERS, kept);
  }
  kept.seq = changes.seq;
  const c = { ...kept.counters };
  c.numberUnavailable = c.desiredNumberScheduled - c.numberAvailable;
  return { counters: c, requeueAfterMs: undefined };
}

function countersOf(ctx: SyncContext): CountersResult {
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  const { hash, now } = ctx;
  const c = zeroCounters();
  let requeueAfterMs: number | undefined;
  for (const s of ctx.states) {
    addPart(c, countsPart(s, hash, minReady, now), 1);
    // Without minReadySeconds no pod waits to become available (podAvailableWaitingTimeMs is 0).
    if (!s.shouldRun || minReady <= 0) continue;
    for (const f of s.facts) {
      if (!f.terminating) requeueAfterMs = minDelay(requeueAfterMs, factsWaitingTimeMs(f, minReady, now));
    }
  }
  c.numberUnavailable = c.desiredNumberScheduled - c.numberAvailable;
  return { counters: c, requeueAfterMs };
}

/** Nodes (eligible) that still need work the strategy allows now; see the conditions doc above. */
function pendingNodes(ctx: SyncContext): number {
  return derivedOnce(ctx, 'pendingNodes', () => countPendingNodes(ctx));
}

function countPendingNodes(ctx: SyncContext): number {
  // Eligible nodes without an available pod (numberUnavailable), plus, among the nodes the strategy may update now,
  // eligible ones whose available pod is old or has a second pod beside it (a surge not yet finished).
  let pending = calculateCounters(ctx).counters.numberUnavailable;
  if (!isRollingUpdate(ctx.ds) || isDaemonSetPaused(ctx.ds)) return pending;
  // Nodes of later waves (rollingUpdate.waves) wait on the current one: work still to do.
  pending += nodesToUpdateResult(ctx).wave?.held ?? 0;
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  const same = sameTarget(ctx.targets);
  const aside = setAside(ctx);
  // A quiet node (busyNodesToUpdate) is available and updated: nothing to count.
  for (const s of busyNodesToUpdate(ctx).states) {
    if (!s.shouldRun) continue;
    const first = s.first;
    const unavailable = !first || !factsDaemonAvailable(first, minReady, ctx.now);
    // Set aside (unhealthyNodes Ignore): no work the strategy may do now.
    if (aside.has(s.name)) {
      if (unavailable) pending--;
      continue;
    }
    if (unavailable) continue; // counted as unavailable
    if (first.hash !== (same ?? targetHash(ctx.targets, s.name)) || s.facts.length > 1) pending++;
  }
  return pending;
}

/** A DaemonSetCondition; lastUpdateTime (Deployment's) is kept on Progressing when a progress deadline is set. */
type Condition = DaemonSetCondition;

function condition(
  prev: readonly DaemonSetCondition[] | undefined,
  type: string,
  status: boolean | ConditionStatus,
  reason: string,
  message: string,
  now: number,
): Condition {
  const s = typeof status === 'string' ? status : status ? 'True' : 'False';
  const old = prev?.find((c) => c.type === type);
  const lastTransitionTime =
    old && old.status === s && old.lastTransitionTime ? old.lastTransitionTime : formatTime(now);
  return { type, status: s, lastTransitionTime, reason, message };
}

type ConditionStatus = 'True' | 'False' | 'Unknown';

/**
 * Progressing's status for its reason, in Deployment's convention: Unknown while paused (DeploymentPaused), False
 * only for a failure (TimedOutReason), True otherwise, a finished rollout too (NewReplicaSetAvailable).
 */
export function progressingStatus(reason: string): ConditionStatus {
  if (reason === 'Paused' || reason === CANARY_PAUSED_CONDITION_REASON || reason === ROLLOUT_FROZEN_REASON)
    return 'Unknown';
  if (
    reason === PROGRESS_DEADLINE_EXCEEDED_REASON ||
    reason === CANARY_FAILED_CONDITION_REASON ||
    reason === INVALID_ROLLING_UPDATE_REASON
  )
    return 'False';
  return 'True';
}

/** What a frozen rollout says, in its event and its Progressing message. */
export function frozenMessage(): string {
  return `rollout frozen by annotation ${ROLLOUT_FROZEN_ANNOTATION}=true: no pod is created, deleted or updated until it is removed`;
}

/** Progressing False: no progress for spec.progressDeadlineSeconds (Deployment's TimedOutReason). */
export const PROGRESS_DEADLINE_EXCEEDED_REASON = 'ProgressDeadlineExceeded';
/** Progressing True: a canary is observed (canary/plan.ts); False: it is paused, or it failed. */
export const CANARY_OBSERVING_REASON = 'CanaryObserving';
export const CANARY_PAUSED_CONDITION_REASON = 'CanaryPaused';
export const CANARY_FAILED_CONDITION_REASON = 'CanaryFailed';

/** Progressing reasons while the rollout moves: the progress deadline runs then. */
const MOVING_REASONS = new Set(['Updating', CANARY_OBSERVING_REASON]);

/** spec.progressDeadlineSeconds; undefined (no deadline) when absent, as Deployment's HasProgressDeadline. */
export function progressDeadlineSeconds(ds: SyncContext['ds']): number | undefined {
  const v = ds.spec.progressDeadlineSeconds;
  return typeof v === 'number' && v > 0 && v < 2147483647 ? v : undefined;
}

/**
 * Deployment's DeploymentProgressing for a DaemonSet
 * (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/deployment/util/deployment_util.go): against
 * the stored status, more nodes run the current revision, fewer run an old one, or more are ready or available. A
 * new generation observed, a new revision and a canary changing phase count as progress too: the deadline starts
 * again, as it does for a Deployment's new ReplicaSet.
 */
export function madeProgress(prev: DaemonSetStatus | undefined, next: DaemonSetStatus): boolean {
  if (!prev) return true;
  const oldPods = (st: DaemonSetStatus) => (st.currentNumberScheduled ?? 0) - (st.updatedNumberScheduled ?? 0);
  const canary = (st: DaemonSetStatus) => (st.canary ? `${st.canary.revision}/${st.canary.phase}` : '');
  return (
    (next.updatedNumberScheduled ?? 0) > (prev.updatedNumberScheduled ?? 0) ||
    oldPods(next) < oldPods(prev) ||
    (next.numberReady ?? 0) > (prev.numberReady ?? 0) ||
    (next.numberAvailable ?? 0) > (prev.numberAvailable ?? 0) ||
    (next.observedGeneration ?? 0) > (prev.observedGeneration ?? 0) ||
    (next.daemonSetHash ?? '') !== (prev.daemonSetHash ?? '') ||
    canary(next) !== canary(prev)
  );
}

interface ConditionsResult {
  conditions: DaemonSetCondition[];
  /** When the progress deadline passes, if the rollout makes no progress until then. */
  requeueAfterMs?: number;
}

/**
 * The conditions for the status `next` (counters, observedGeneration, daemonSetHash and canary already computed):
 * RolloutComplete and Available from the counters, Progressing from what the rollout waits for (progressingOf) and
 * the progress deadline (withProgressDeadline).
 */
function conditionsOf(ctx: SyncContext, next: DaemonSetStatus, canary: CanaryPlan | undefined): ConditionsResult {
  const { ds, now } = ctx;
  const v = rolloutOf(ds, next);
  const { desired: d, counters } = v;
  const prev = ds.status?.conditions;
  const p = withProgressDeadline(ctx, next, canary, progressingOf(ctx, v, canary));
  const progressingCondition: Condition = condition(
    prev,
    CONDITION_PROGRESSING,
    progressingStatus(p.reason),
    p.reason,
    p.message,
    now,
  );
  if (p.lastUpdateTime !== undefined) progressingCondition.lastUpdateTime = p.lastUpdateTime;

  return {
    conditions: [
      condition(
        prev,
        CONDITION_ROLLOUT_COMPLETE,
        v.complete,
        v.complete ? 'RolloutComplete' : 'RolloutInProgress',
        v.complete ? `All ${d} nodes run an available pod of the current revision` : awaited(v),
        now,
      ),
      progressingCondition,
      condition(
        prev,
        CONDITION_AVAILABLE,
        counters.numberAvailable >= d,
        counters.numberAvailable >= d ? 'AllNodesAvailable' : 'NodesUnavailable',
        `${counters.numberAvailable} of ${d} eligible nodes have an available pod`,
        now,
      ),
      ...nodeReadinessCondition(ctx, prev),
      ...nodesSetAsideConditions(ctx),
    ],
    ...(p.requeueAfterMs !== undefined ? { requeueAfterMs: p.requeueAfterMs } : {}),
  };
}

/**
 * spec.nodeReadiness: NodeReadiness False while nodes carry the taint waiting for this DaemonSet's pods (reason
 * NodesWaiting, naming the first few), or while the manager may not patch nodes (NodeWritesForbidden, so the taint is
 * never removed); True otherwise. None without spec.nodeReadiness.
 */
function nodeReadinessCondition(ctx: SyncContext, prev: readonly DaemonSetCondition[] | undefined): Condition[] {
  const t = readinessTaintOf(ctx.ds);
  if (!t) return [];
  const taint = `${t.key}:${t.effect}`;
  if (ctx.opts.nodeTaintsForbidden) {
    const message = `the manager may not patch nodes, so taint ${taint} is never removed: grant it (chart value nodeReadiness.manageTaints=true)`;
    return [condition(prev, CONDITION_NODE_READINESS, false, 'NodeWritesForbidden', message, ctx.now)];
  }
  const waiting = nodesWaitingFor(ctx);
  if (waiting.length === 0)
    return [
      condition(
        prev,
        CONDITION_NODE_READINESS,
        true,
        'NoNodeWaiting',
        `no node carries ${taint} waiting for this DaemonSet`,
        ctx.now,
      ),
    ];
  const shown = waiting.slice(0, 5).join(', ') + (waiting.length > 5 ? ` and ${waiting.length - 5} more` : '');
  const message = `${nodeCount(waiting.length)} carry ${taint} and wait for this DaemonSet's pods: ${shown}`;
  return [condition(prev, CONDITION_NODE_READINESS, false, 'NodesWaiting', message, ctx.now)];
}

/** NodesSetAside, with rollingUpdate.unhealthyNodes Ignore under RollingUpdate (see the conditions doc above). */
function nodesSetAsideConditions(ctx: SyncContext): Condition[] {
  const { ds } = ctx;
  if (!ignoresUnhealthyNodes(ds) || !isRollingUpdate(ds)) return [];
  const aside = setAside(ctx);
  const message = setAsideMessage(aside);
  const prev = ds.status?.conditions;
  return [
    message === undefined
      ? condition(prev, CONDITION_NODES_SET_ASIDE, false, 'NoNodesSetAside', 'no node is set aside', ctx.now)
      : condition(prev, CONDITION_NODES_SET_ASIDE, true, setAsideConditionReason(aside), message, ctx.now),
  ];
}

/** Where the rollout stands, from the status being computed. */
interface Rollout {
  counters: StatusCounters;
  /** desiredNumberScheduled. */
  desired: number;
  /** The current generation is observed. */
  observed: boolean;
  /** Observed, every eligible node runs a pod of the current revision, and every one is available. */
  complete: boolean;
}

function rolloutOf(ds: SyncContext['ds'], next: DaemonSetStatus): Rollout {
  const counters = next as DaemonSetStatus & StatusCounters;
  const desired = counters.desiredNumberScheduled;
  const observed = (next.observedGeneration ?? 0) >= (ds.metadata.generation ?? 0);
  const complete = observed && counters.updatedNumberScheduled >= desired && counters.numberAvailable >= desired;
  return { counters, desired, observed, complete };
}

/** What RolloutComplete False waits for. */
function awaited({ counters, desired: d, observed }: Rollout): string {
  if (!observed) return 'Waiting for the spec update to be observed';
  if (counters.updatedNumberScheduled < d)
    return `${counters.updatedNumberScheduled} of ${d} nodes run the current revision`;
  return `${counters.numberAvailable} of ${d} updated pods are available`;
}

interface Progressing {
  /** True while the rollout moves (the progress deadline runs), or once it is done. */
  progressing: boolean;
  reason: string;
  message: string;
}

/**
 * Progressing's reason and message, before the progress deadline. A canary of the current revision sets the reason:
 * CanaryObserving (True), CanaryPaused or CanaryFailed (False), unless the spec update is not observed yet, or
 * rollingUpdate.paused halts an observed canary.
 */
function progressingOf(ctx: SyncContext, v: Rollout, canary: CanaryPlan | undefined): Progressing {
  const { ds } = ctx;
  const { counters, desired: d, observed, complete } = v;
  const pending = observed ? pendingNodes(ctx) : 1;
  const hold = observed ? selectorPartitionHoldMessage(ctx) : undefined;
  const wave = observed && isRollingUpdate(ds) ? nodesToUpdateResult(ctx).wave : undefined;
  const counts =
    `${counters.updatedNumberScheduled} of ${d} nodes updated, ${counters.numberAvailable} of ${d} available` +
    (hold ? `; ${hold}` : '') +
    (wave ? `; ${waveMessage(wave)}` : '');
  const moving = (reason: string, message: string): Progressing => ({ progressing: pending > 0, reason, message });
  const stopped = (reason: string, message: string): Progressing => ({ progressing: false, reason, message });
  const c = canary?.active ? canary.status : undefined;
  if (observed && isRolloutFrozen(ds)) return stopped(ROLLOUT_FROZEN_REASON, `${counts}; ${frozenMessage()}`);
  if (observed && c && (c.phase === 'Failed' || !isDaemonSetPaused(ds))) {
    const about = `canary of revision ${c.revision} on ${nodeCount(c.nodes.length)} (${c.nodes.join(', ')})`;
    if (c.phase === 'Failed') {
      return stopped(
        CANARY_FAILED_CONDITION_REASON,
        `${counts}; ${about} failed (${c.reason}): ${c.message}; the rollout is held on revision ${c.stableRevision} until the template changes`,
      );
    }
    if (c.phase === 'Paused')
      return stopped(CANARY_PAUSED_CONDITION_REASON, `${counts}; ${about} paused (${c.reason}): ${c.message}`);
    return { progressing: true, reason: CANARY_OBSERVING_REASON, message: `${counts}; ${about}: ${c.message}` };
  }
  const selectorErrors = observed && !complete && isRollingUpdate(ds) ? updateSelectorErrors(ds) : [];
  if (selectorErrors.length > 0) {
    // The webhook refuses such a selector; one stored before it did matches no node, so nothing is pending, and
    // the rollout must not read as held at its partition (complete): it is stopped until the selector is fixed.
    return stopped(
      INVALID_ROLLING_UPDATE_REASON,
      `${counts}; invalid rollingUpdate.selector (${selectorErrors.join('; ')}): no node is updated until it is fixed`,
    );
  }
  if (pending > 0) return moving('Updating', observed ? counts : 'Waiting for the spec update to be observed');
  if (complete) return moving('RolloutComplete', counts);
  const aside = setAsideMessage(setAside(ctx));
  if (aside) return moving(NODES_SET_ASIDE_REASON, `${counts}; ${aside}`);
  if (!isRollingUpdate(ds))
    return moving('OnDelete', `${counts}; old pods are replaced when deleted (updateStrategy OnDelete)`);
  if (isDaemonSetPaused(ds)) return moving('Paused', `${counts}; rolling update paused`);
  return moving(
    'PartitionReached',
    hold ? counts : `${counts}; the remaining nodes are kept at their revision by partition/selector`,
  );
}

/**
 * With spec.progressDeadlineSeconds, Progressing True that makes no progress (madeProgress) for that long turns False
 * with reason ProgressDeadlineExceeded until progress resumes, as Deployment's syncRolloutStatus and
 * requeueStuckDeployment (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/deployment/progress.go):
 * lastUpdateTime records the last progress, and the sync is requeued for when the deadline passes. A canary waiting
 * for its duration or for a person, with every canary pod available, is not stuck (lastUpdateTime refreshed every
 * half deadline).
 */
function withProgressDeadline(
  ctx: SyncContext,
  next: DaemonSetStatus,
  canary: CanaryPlan | undefined,
  p: Progressing,
): Progressing & { lastUpdateTime?: string; requeueAfterMs?: number } {
  const { ds, now } = ctx;
  const deadline = progressDeadlineSeconds(ds);
  if (deadline === undefined) return p;
  const before = ds.status?.conditions?.find((x) => x.type === CONDITION_PROGRESSING) as Condition | undefined;
  const timedOut = before?.reason === PROGRESS_DEADLINE_EXCEEDED_REASON;
  const since = parseTime(before?.lastUpdateTime ?? before?.lastTransitionTime);
  const kept = before?.lastUpdateTime ?? before?.lastTransitionTime;
  const at = (lastUpdateTime: string | undefined) => ({
    ...p,
    ...(lastUpdateTime !== undefined ? { lastUpdateTime } : {}),
  });
  if (!p.progressing) return at(MOVING_REASONS.has(before?.reason ?? '') !== p.progressing ? formatTime(now) : kept);
  const starting = !MOVING_REASONS.has(before?.reason ?? '') && !timedOut;
  if (starting || since === undefined || madeProgress(ds.status, next)) return at(formatTime(now));
  if (canary?.waiting) {
    // Not stuck. Refreshed every half deadline only: each refresh is a status write, and the write's own event
    // syncs again; should the canary then get stuck, the deadline counts from at most half a deadline earlier.
    return at(since + deadline * 500 < now ? formatTime(now) : kept);
  }
  if (timedOut || since + deadline * 1000 < now) {
    return {
      ...at(kept),
      progressing: false,
      reason: PROGRESS_DEADLINE_EXCEEDED_REASON,
      message: `${p.message}; no progress for more than progressDeadlineSeconds ${deadline}`,
    };
  }
  return { ...at(kept), requeueAfterMs: since + deadline * 1000 - now + 1000 };
}

function statusKey(s: DaemonSetStatus | undefined): string {
  // lastUpdateTime (Progressing, with a progress deadline) counts: the deadline is measured from the stored one.
  const conditions = (s?.conditions ?? []).map((c) => ({
    type: c.type,
    status: c.status,
    reason: c.reason ?? '',
    message: c.message ?? '',
    lastUpdateTime: c.lastUpdateTime ?? '',
  }));
  return canonicalJson({
    desiredNumberScheduled: s?.desiredNumberScheduled ?? 0,
    currentNumberScheduled: s?.currentNumberScheduled ?? 0,
    numberMisscheduled: s?.numberMisscheduled ?? 0,
    numberReady: s?.numberReady ?? 0,
    numberAvailable: s?.numberAvailable ?? 0,
    numberUnavailable: s?.numberUnavailable ?? 0,
    updatedNumberScheduled: s?.updatedNumberScheduled ?? 0,
    observedGeneration: s?.observedGeneration ?? 0,
    daemonSetHash: s?.daemonSetHash ?? '',
    collisionCount: s?.collisionCount ?? null,
    conditions,
    canary: s?.canary ?? null,
  });
}

/** What the status stage reads besides the context. */
export interface StatusInput {
  /** The canary of this sync (planCanary): status.canary, and the Progressing condition while it is active. */
  canary: CanaryPlan | undefined;
  /** observedGeneration = metadata.generation (a complete sync); else it is kept. */
  updateObservedGen: boolean;
  /** status.collisionCount after constructHistory. */
  collisionCount: number | undefined;
}

/**
 * The full status to store: counters, daemonSetHash = current hash, collisionCount, canary, conditions, and
 * observedGeneration = metadata.generation only when `updateObservedGen` (a complete sync), else unchanged.
 * `changed` is false when nothing but lastTransitionTime would differ (then the shell writes nothing).
 */
export function calculateStatus(ctx: SyncContext, input: StatusInput): StatusResult {
  const { ds } = ctx;
  const { canary, updateObservedGen, collisionCount } = input;
  const { counters, requeueAfterMs } = calculateCounters(ctx);
  const observedGeneration = updateObservedGen ? (ds.metadata.generation ?? 0) : (ds.status?.observedGeneration ?? 0);
  const status: DaemonSetStatus = {
    ...(ds.status ?? {}),
    ...counters,
    observedGeneration,
    daemonSetHash: ctx.hash,
  };
  if (canary?.status) status.canary = canary.status;
  const conditions = conditionsOf(ctx, status, canary);
  status.conditions = conditions.conditions;
  if (collisionCount !== undefined) status.collisionCount = collisionCount;
  // rollingUpdate.waves: look again when the current wave has been available for waves.availableSeconds.
  const wave = isRollingUpdate(ds) && !isDaemonSetPaused(ds) ? nodesToUpdateResult(ctx).wave : undefined;
  return {
    status,
    changed: statusKey(status) !== statusKey(ds.status),
    requeueAfterMs: minDelay(minDelay(requeueAfterMs, conditions.requeueAfterMs), wave?.requeueAfterMs),
  };
}

/**
 * Whether a status change must be written at once (true) or may wait for the next progress write (false). Counter
 * moves alone (pods turning Ready, updated, available) are progress: during a rollout they change at every sync, and
 * writing each would spend the client's request budget on status instead of pods. Everything a reader acts on is a
 * milestone: a new generation observed, a new revision hash, collisionCount, the desired node count, a canary
 * changing revision, phase, reason or nodes, and any condition flipping (so RolloutComplete, Available and
 * a Progressing reason are never late).
 */
export function isStatusMilestone(prev: DaemonSetStatus | undefined, next: DaemonSetStatus): boolean {
  if ((prev?.observedGeneration ?? 0) !== (next.observedGeneration ?? 0)) return true;
  if ((prev?.daemonSetHash ?? '') !== (next.daemonSetHash ?? '')) return true;
  if ((prev?.collisionCount ?? 0) !== (next.collisionCount ?? 0)) return true;
  if ((prev?.desiredNumberScheduled ?? 0) !== (next.desiredNumberScheduled ?? 0)) return true;
  const canary = (st: DaemonSetStatus | undefined) => {
    const c = st?.canary;
    return c ? canonicalJson([c.revision, c.phase, c.reason ?? '', c.nodes]) : '';
  };
  if (canary(prev) !== canary(next)) return true;
  for (const c of next.conditions ?? []) {
    const before = prev?.conditions?.find((p) => p.type === c.type);
    if (before?.status !== c.status) return true;
    // Progressing stays True from Updating to RolloutComplete or PartitionReached: its reason is the milestone.
    if (c.type === CONDITION_PROGRESSING && before.reason !== c.reason) return true;
  }
  return false;
}

/**
 * A sync whose status change is progress only (isStatusMilestone false) writes it at most once per DaemonSet in
 * this interval. A rollout of 1,000 pods otherwise writes status after nearly every pod event, and those writes
 * share the client's QPS with pod creates.
 */
export const STATUS_PROGRESS_INTERVAL_MS = 1000;

/** What one sync knows when it is about to write status (statusWriteAction). */
export interface StatusWriteInput {
  /** The stored status this sync planned on. */
  stored: DaemonSetStatus | undefined;
  /** The computed status; undefined = the plan writes none. */
  status: DaemonSetStatus | undefined;
  /** status differs from stored. */
  statusChanged: boolean;
  /** This sync created, deleted or updated (in place) pods: its status is written at once, as upstream. */
  actedOnPods: boolean;
  /** Since this DaemonSet's status was last written by this process; undefined when never. */
  sinceLastWriteMs: number | undefined;
}

export type StatusWriteAction =
  | { action: 'none' }
  | { action: 'write' }
  /** Progress only, and the last write was less than STATUS_PROGRESS_INTERVAL_MS ago: requeue after `afterMs`. */
  | { action: 'defer'; afterMs: number };

/**
 * The status-write rule: unchanged status is not written; a sync that acted on pods and any milestone write at once;
 * progress alone waits until STATUS_PROGRESS_INTERVAL_MS has passed since the last write.
 */
export function statusWriteAction(input: StatusWriteInput): StatusWriteAction {
  const { stored, status, statusChanged, actedOnPods, sinceLastWriteMs } = input;
  if (!statusChanged || !status) return { action: 'none' };
  if (actedOnPods || isStatusMilestone(stored, status)) return { action: 'write' };
  if (sinceLastWriteMs === undefined || sinceLastWriteMs >= STATUS_PROGRESS_INTERVAL_MS) return { action: 'write' };
  return { action: 'defer', afterMs: STATUS_PROGRESS_INTERVAL_MS - sinceLastWriteMs };
}

/** What is wrong with rollingUpdate.selector ([] when it parses or is unset). */
function updateSelectorErrors(ds: SyncContext['ds']): string[] {
  const selector = ds.spec.updateStrategy?.rollingUpdate?.selector;
  return selector ? labelSelectorErrors(selector) : [];
}
