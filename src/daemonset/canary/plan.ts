// Canary with health gates (rollingUpdate.canary), pure. A new revision first goes to a few canary nodes only; their
// pods are judged as ExtendedDaemonSet judges its canary pods
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/canary.go,
// manageCanaryPodFailures); the canary is then promoted (the rolling update takes over, with partition, selector,
// paused and maxUnavailable as without a canary), paused, or failed: the canary nodes go back to the stable revision
// and the rollout is held until the template changes. The spec is never rewritten; people steer with annotations.
//
// planCanary(ctx, revisions) decides one sync: which nodes are canary nodes (nodes.ts), how healthy their pods are
// (health.ts), the phase (phase.ts), status.canary, events, canary labels and requeue. From its plan the next stage
// (targets.ts) tells the rest of the planner which revision each node runs.
import type { CanaryStatus, DaemonSet } from '../../api/types.ts';
import type { ControllerRevision, Pod } from '../../k8s/types.ts';
import { formatTime, isPodAvailable } from '../../k8s/pod.ts';
import { getTargetNodeName } from '../../k8s/scheduling.ts';
import { CANARY_POD_LABEL } from '../constants.ts';
import type { NodeIndex } from '../context.ts';
import {
  CANARY_FAILED_REASON,
  CANARY_PAUSED_REASON,
  CANARY_PROMOTED_REASON,
  CANARY_ROLLED_BACK_REASON,
  CANARY_STARTED_REASON,
} from '../events.ts';
import { revisionHashLabel } from '../history.ts';
import { templateOfRevision } from '../inplace.ts';
import { podRevisionHash } from '../pods.ts';
import type { CanaryPlan, PlanEvent, PodPatch } from '../plan-types.ts';
import { judgeCanaryPod } from './health.ts';
import { canaryCandidates, canaryNodeCount, selectCanaryNodes, stableRevisionHash } from './nodes.ts';
import {
  CANARY_REASON_REMOVED,
  CANARY_REASON_RESTARTED,
  CANARY_REASON_STABLE_REVISION,
  CANARY_REASON_STARTED,
  nextCanaryPhase,
  type CanaryVerdict,
} from './phase.ts';
import { canarySettings, canarySpecOf, storedCanaryStatus, type CanarySettings } from './settings.ts';

// ---- one sync ----

const ROLLED_BACK_NOTE = 'the canary nodes run the stable revision again';

function liveOn(ctx: NodeIndex, nodeName: string): Pod[] {
  return (ctx.nodeToDaemonPods.get(nodeName) ?? []).filter((p) => {
    const phase = p.status?.phase;
    return !p.metadata.deletionTimestamp && phase !== 'Failed' && phase !== 'Succeeded';
  });
}

/**
 * Canary label upkeep: "true" on `labelled` pods that lack it, removed from every other pod of the DaemonSet that
 * carries it (a strategic merge patch with null removes a label).
 */
function canaryLabelPatches(ctx: NodeIndex, labelled: ReadonlySet<string>): PodPatch[] {
  const out: PodPatch[] = [];
  // With a memo (memo.ts), a sync where no pod carries the label and none should skips the pass over every pod.
  if (labelled.size === 0 && ctx.upkeep?.canaryLabel === 0) return out;
  // In the snapshot's order; the pods of nodeToDaemonPods, i.e. those targeting a node (terminal pods being deleted
  // are left out there, and terminating ones here).
  for (const pod of ctx.pods) {
    if (pod.metadata.deletionTimestamp || !getTargetNodeName(pod.spec)) continue;
    const name = pod.metadata.name ?? '';
    const has = pod.metadata.labels?.[CANARY_POD_LABEL] !== undefined;
    const want = labelled.has(name);
    if (want && pod.metadata.labels?.[CANARY_POD_LABEL] !== 'true') {
      out.push({
        podName: name,
        patchType: 'strategic',
        patch: { metadata: { labels: { [CANARY_POD_LABEL]: 'true' } } },
        reason: 'CanaryLabel',
      });
    } else if (!want && has) {
      out.push({
        podName: name,
        patchType: 'strategic',
        patch: { metadata: { labels: { [CANARY_POD_LABEL]: null } } },
        reason: 'CanaryLabel',
      });
    }
  }
  return out;
}

function withTemplate(ds: DaemonSet, revision: ControllerRevision | undefined): DaemonSet | undefined {
  const template = revision && templateOfRevision(revision);
  return template ? { ...ds, spec: { ...ds.spec, template } } : undefined;
}

const list = (names: readonly string[]) => (names.length > 0 ? names.join(', ') : '(none)');

/**
 * The canary of one sync, from the DaemonSet (spec, annotations, status.canary), nodes, pods, revisions (the
 * current one and the others) and now:
 * - no rollingUpdate.canary (or OnDelete): nothing, as without the feature; a canary that had not ended (Observing,
 *   Paused, or Failed: the hold ends with the canary) is recorded Promoted (CanaryRemoved) for the current revision,
 *   so nothing reports a failed canary for the rollout that now proceeds (removedCanary);
 * - a new revision: a canary starts when some pods run another revision (the stable one: stableRevisionHash), on
 *   nodes picked by selectCanaryNodes; a canary that was still running or had failed restarts on its nodes with its
 *   stable revision; a template back at the stable revision ends it (Promoted, StableRevision) (canaryRecord);
 * - Observing/Paused: nextCanaryPhase on the canary pods (runningPlan); Failed is held (the canary nodes go back to
 *   the stable revision, failedPlan) and Promoted hands over to the rolling update, until the template changes.
 */
export function planCanary(
  ctx: NodeIndex,
  current: ControllerRevision,
  old: readonly ControllerRevision[],
): CanaryPlan {
  const prev = storedRecord(ctx.ds, ctx.now);
  const spec = canarySpecOf(ctx.ds);
  if (!spec) {
    if (!prev || prev.phase === 'Promoted') return inactivePlan(ctx, prev, []);
    const removed = removedCanary(prev, ctx.hash, formatTime(ctx.now));
    return inactivePlan(ctx, removed.status, [removed.event]);
  }
  const revisions = new Map<string, ControllerRevision>();
  for (const r of [current, ...old]) revisions.set(revisionHashLabel(r), r);
  const step = canaryRecord(ctx, prev, revisions);
  if (!('record' in step)) return inactivePlan(ctx, step.ended, []);
  const { record, started } = step;
  if (record.phase === 'Promoted') return inactivePlan(ctx, record, []);
  // Without the stable revision's ControllerRevision (deleted by hand) its pods cannot be built: new pods then use
  // the current template, as without a canary.
  const stableDs = withTemplate(ctx.ds, revisions.get(record.stableRevision));
  const held: CanaryHeld = { active: true, stableHash: record.stableRevision, ...(stableDs ? { stableDs } : {}) };
  if (record.phase === 'Failed') return failedPlan(ctx, record, held, [], false);
  return runningPlan(ctx, { settings: canarySettings(spec), prev, record, started, held });
}

/** What a plan whose canary holds nodes carries whatever its phase. */
type CanaryHeld = Pick<CanaryPlan, 'active' | 'stableHash' | 'stableDs'>;

/**
 * status.canary as stored, with every field written whatever the stored object lacks (see CanaryStatus in
 * src/api/schema.ts: a merge patch keeps the fields it does not name).
 */
function storedRecord(ds: DaemonSet, now: number): CanaryStatus | undefined {
  const stored = storedCanaryStatus(ds);
  return (
    stored && {
      reason: '',
      message: '',
      since: formatTime(now),
      startTime: stored.since ?? formatTime(now),
      resumed: false,
      restartingSince: '',
      ...stored,
    }
  );
}

/** No canary holds a node: every node targets the current revision; `status` is recorded when there is one. */
function inactivePlan(ctx: NodeIndex, status: CanaryStatus | undefined, events: PlanEvent[]): CanaryPlan {
  return {
    ...(status ? { status, phase: status.phase } : {}),
    active: false,
    nodes: new Set(),
    stableHash: ctx.hash,
    rollingNodes: [],
    events,
    podPatches: canaryLabelPatches(ctx, new Set()),
    waiting: false,
  };
}

/**
 * rollingUpdate.canary removed while a canary had not ended: it ends with its spec. Recorded for the current revision
 * (status.canary is the latest revision's canary): a Failed record left would keep `kubectl ads status` failing and
 * the CanaryFailed alert firing while the rolling update takes the revision everywhere.
 */
function removedCanary(prev: CanaryStatus, hash: string, nowText: string): { status: CanaryStatus; event: PlanEvent } {
  const same = prev.revision === hash;
  const failed = prev.phase === 'Failed' ? `failed (${prev.reason ?? ''})` : '';
  const removed = 'rollingUpdate.canary was removed';
  const takesOver = 'the rolling update takes over';
  let message = `${removed}: ${takesOver}`;
  if (same && failed) message = `${removed} after the canary ${failed}: ${takesOver}`;
  else if (!same)
    message += ` (the canary of revision ${prev.revision} ${failed ? `had ${failed}` : `was ${prev.phase}`})`;
  const status: CanaryStatus = {
    ...prev,
    revision: hash,
    phase: 'Promoted',
    reason: CANARY_REASON_REMOVED,
    message,
    since: nowText,
    ...(same ? {} : { startTime: nowText, resumed: false, restartingSince: '' }),
  };
  const event: PlanEvent = {
    type: 'Normal',
    reason: CANARY_PROMOTED_REASON,
    message: same
      ? `Canary of revision ${hash} promoted: ${message}`
      : `Canary of revision ${prev.revision} ended, revision ${hash} rolls out: ${message}`,
  };
  return { status, event };
}

/**
 * The canary of the current revision: the stored one; else a new one (`started`) when pods run another revision to
 * protect; else none, or the stored one ended (`ended`): the template is back at the stable revision.
 */
function canaryRecord(
  ctx: NodeIndex,
  prev: CanaryStatus | undefined,
  revisions: ReadonlyMap<string, ControllerRevision>,
): { record: CanaryStatus; started: boolean } | { ended: CanaryStatus | undefined } {
  const { hash } = ctx;
  if (prev && prev.revision === hash) return { record: prev, started: false };
  const nowText = formatTime(ctx.now);
  // A newer template while a canary runs or after it failed: the same nodes, the same stable revision.
  const restart = !!prev && prev.phase !== 'Promoted' && revisions.has(prev.stableRevision);
  const stable = restart ? prev.stableRevision : stableRevisionHash(allPods(ctx), hash, revisions);
  if (stable === undefined || stable === hash) {
    if (!prev || prev.phase === 'Promoted') return { ended: prev };
    const ended: CanaryStatus = {
      revision: hash,
      stableRevision: hash,
      nodes: prev.nodes,
      phase: 'Promoted',
      reason: CANARY_REASON_STABLE_REVISION,
      message: `the template is the stable revision ${hash} again: the rolling update takes over`,
      since: nowText,
      startTime: nowText,
      resumed: false,
      restartingSince: '',
    };
    return { ended };
  }
  const record: CanaryStatus = {
    revision: hash,
    stableRevision: stable,
    nodes: restart ? [...prev.nodes] : [],
    phase: 'Observing',
    reason: restart ? CANARY_REASON_RESTARTED : CANARY_REASON_STARTED,
    message: '',
    since: nowText,
    startTime: nowText,
    resumed: false,
    restartingSince: '',
  };
  return { record, started: true };
}

interface RunningCanary {
  settings: CanarySettings;
  /** status.canary as stored (of an earlier revision when `started`). */
  prev: CanaryStatus | undefined;
  /** The canary of the current revision, Observing or Paused, before this sync's verdict. */
  record: CanaryStatus;
  /** Started (or restarted) by this sync. */
  started: boolean;
  held: CanaryHeld;
}

/** An Observing or Paused canary: its nodes, its pods' health, the verdict of the phase machine and its event. */
function runningPlan(ctx: NodeIndex, c: RunningCanary): CanaryPlan {
  const { ds, hash, now } = ctx;
  const { settings, record, started } = c;
  const nodes = selectCanaryNodes(
    canaryCandidates(ctx, settings),
    canaryNodeCount(settings.nodes, ctx.desired),
    record.nodes,
  );
  const events: PlanEvent[] = started ? [startedEvent(hash, c.prev, record, nodes)] : [];
  const { pods, complete } = canaryPodsOn(ctx, nodes);
  const minReady = ds.spec.minReadySeconds ?? 0;
  const verdict = nextCanaryPhase({
    settings,
    prev: record,
    annotations: ds.metadata.annotations ?? {},
    pods: pods.map((p) => judgeCanaryPod(p, minReady, now)),
    nodes,
    complete,
    now,
  });
  const next = recordVerdict(record, verdict, nodes, started, formatTime(now));
  const event = verdictEvent(hash, record, verdict, nodes, started);
  if (event) events.push(event);
  if (verdict.phase === 'Promoted') return inactivePlan(ctx, next, events);
  if (verdict.phase === 'Failed') return failedPlan(ctx, next, c.held, events, true);
  return {
    ...c.held,
    events,
    status: next,
    phase: next.phase,
    nodes: new Set(nodes),
    rollingNodes: next.phase === 'Observing' ? nodes : [],
    podPatches: canaryLabelPatches(ctx, new Set(pods.map((p) => p.metadata.name ?? ''))),
    ...(verdict.requeueAfterMs !== undefined ? { requeueAfterMs: verdict.requeueAfterMs } : {}),
    waiting: verdict.waiting,
  };
}

function startedEvent(
  hash: string,
  prev: CanaryStatus | undefined,
  record: CanaryStatus,
  nodes: readonly string[],
): PlanEvent {
  return {
    type: 'Normal',
    reason: CANARY_STARTED_REASON,
    message:
      record.reason === CANARY_REASON_RESTARTED
        ? `Canary restarted for revision ${hash} on the same nodes ${list(nodes)} (previous canary revision ${prev?.revision ?? ''}, stable revision ${record.stableRevision})`
        : `Canary of revision ${hash} started on nodes ${list(nodes)} (stable revision ${record.stableRevision})`,
  };
}

/** The pods of the current revision on the canary nodes; `complete` when every canary node runs one. */
function canaryPodsOn(ctx: NodeIndex, nodes: readonly string[]): { pods: Pod[]; complete: boolean } {
  const pods: Pod[] = [];
  let complete = nodes.length > 0;
  for (const n of nodes) {
    const mine = liveOn(ctx, n).filter((p) => podRevisionHash(p) === ctx.hash);
    if (mine.length === 0) complete = false;
    pods.push(...mine);
  }
  return { pods, complete };
}

/** status.canary after the verdict; `since` moves with the phase. */
function recordVerdict(
  record: CanaryStatus,
  verdict: CanaryVerdict,
  nodes: string[],
  started: boolean,
  nowText: string,
): CanaryStatus {
  return {
    ...record,
    nodes,
    phase: verdict.phase,
    reason: verdict.reason,
    message: verdict.message,
    since: verdict.phase === record.phase && !started ? record.since : nowText,
    resumed: verdict.resumed,
    restartingSince: verdict.restartingSince !== undefined ? formatTime(verdict.restartingSince) : '',
  };
}

/** The event of a verdict that moves the canary: paused (once), promoted or failed. */
function verdictEvent(
  hash: string,
  record: CanaryStatus,
  verdict: CanaryVerdict,
  nodes: readonly string[],
  started: boolean,
): PlanEvent | undefined {
  const was = started ? undefined : record.phase;
  if (verdict.phase === 'Paused' && was !== 'Paused') {
    return {
      type: verdict.manual ? 'Normal' : 'Warning',
      reason: CANARY_PAUSED_REASON,
      message: `Canary of revision ${hash} paused (${verdict.reason}): ${verdict.message}`,
    };
  }
  if (verdict.phase === 'Promoted') {
    return {
      type: 'Normal',
      reason: CANARY_PROMOTED_REASON,
      message: `Canary of revision ${hash} promoted (${verdict.reason}): ${verdict.message}`,
    };
  }
  if (verdict.phase === 'Failed') {
    return {
      type: 'Warning',
      reason: CANARY_FAILED_REASON,
      message: `Canary of revision ${hash} failed (${verdict.reason}): ${verdict.message}; rolling back nodes ${list(nodes)} to revision ${record.stableRevision}`,
    };
  }
  return undefined;
}

/** Failed: the canary nodes go back to the stable revision; CanaryRolledBack once they all run it, available. */
function failedPlan(
  ctx: NodeIndex,
  record: CanaryStatus,
  held: CanaryHeld,
  events: readonly PlanEvent[],
  justFailed: boolean,
): CanaryPlan {
  const nodes = record.nodes.filter((n) => ctx.nodeByName.has(n));
  const back = stablePodsOn(ctx, nodes, record.stableRevision);
  let status = record;
  const out = [...events];
  if (back && !justFailed && !(record.message ?? '').endsWith(ROLLED_BACK_NOTE)) {
    status = { ...record, message: `${record.message ?? ''}; ${ROLLED_BACK_NOTE}` };
    out.push({
      type: 'Normal',
      reason: CANARY_ROLLED_BACK_REASON,
      message: `Canary nodes ${list(nodes)} run available pods of the stable revision ${record.stableRevision} again (pods ${list(back)}); the canary of revision ${record.revision} failed (${record.reason ?? ''}): ${record.message ?? ''}`,
    });
  }
  return {
    ...held,
    events: out,
    status,
    phase: 'Failed',
    nodes: new Set(nodes),
    rollingNodes: nodes,
    podPatches: canaryLabelPatches(ctx, new Set()),
    waiting: false,
    rolledBack: back !== undefined,
  };
}

/**
 * The names of the pods of the stable revision on `nodes` when each node that should run the daemon (or still runs a
 * pod) runs exactly one such pod, available; undefined while one does not.
 */
function stablePodsOn(ctx: NodeIndex, nodes: readonly string[], stableHash: string): string[] | undefined {
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  const back: string[] = [];
  for (const n of nodes) {
    const pods = liveOn(ctx, n);
    const shouldRun = ctx.eligibility.get(n)?.shouldRun ?? false;
    if (!shouldRun && pods.length === 0) continue;
    const pod = pods[0];
    if (pods.length !== 1 || !pod || podRevisionHash(pod) !== stableHash || !isPodAvailable(pod, minReady, ctx.now))
      return undefined;
    back.push(pod.metadata.name ?? '');
  }
  return back;
}

function* allPods(ctx: NodeIndex): Generator<Pod> {
  for (const pods of ctx.nodeToDaemonPods.values()) yield* pods;
}
