// Canary with health gates (rollingUpdate.canary), pure. A new revision first goes to a few canary nodes only; their
// pods are judged as ExtendedDaemonSet judges its canary pods
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/canary.go,
// manageCanaryPodFailures); the canary is then promoted (the rolling update takes over, with partition, selector,
// paused and maxUnavailable as without a canary), paused, or failed: the canary nodes go back to the stable revision
// and the rollout is held until the template changes. The spec is never rewritten; people steer with annotations.
//
// planCanary(ctx, revisions) decides one sync: which nodes are canary nodes (nodes.ts), how healthy their pods are
// (health.ts), the phase (phase.ts), status.canary, events, canary labels and requeue. The rest of the planner asks
// targetHash(ctx, node) which revision a node should run (manage.ts newPodForNode builds its pod).
import type { CanaryStatus, DaemonSet } from '../../api/types.ts';
import type { ControllerRevision, Pod } from '../../k8s/types.ts';
import { formatTime, isPodAvailable } from '../../k8s/pod.ts';
import { getTargetNodeName } from '../../k8s/scheduling.ts';
import { CANARY_POD_LABEL } from '../constants.ts';
import type { SyncContext } from '../context.ts';
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
} from './phase.ts';
import { canarySettings, canarySpecOf, storedCanaryStatus } from './settings.ts';

// ---- one sync ----

/** The revision hash `nodeName` should run this sync. */
export function targetHash(ctx: SyncContext, nodeName: string): string {
  const c = ctx.canary;
  if (!c?.active) return ctx.hash;
  return c.phase !== 'Failed' && c.nodes.has(nodeName) ? ctx.hash : c.stableHash;
}

const ROLLED_BACK_NOTE = 'the canary nodes run the stable revision again';

function liveOn(ctx: SyncContext, nodeName: string): Pod[] {
  return (ctx.nodeToDaemonPods.get(nodeName) ?? []).filter((p) => {
    const phase = p.status?.phase;
    return !p.metadata.deletionTimestamp && phase !== 'Failed' && phase !== 'Succeeded';
  });
}

/**
 * Canary label upkeep: "true" on `labelled` pods that lack it, removed from every other pod of the DaemonSet that
 * carries it (a strategic merge patch with null removes a label).
 */
function canaryLabelPatches(ctx: SyncContext, labelled: ReadonlySet<string>): PodPatch[] {
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
 *   so nothing reports a failed canary for the rollout that now proceeds;
 * - a new revision: a canary starts when some pods run another revision (the stable one: stableRevisionHash), on
 *   nodes picked by selectCanaryNodes; a canary that was still running or had failed restarts on its nodes with its
 *   stable revision; a template back at the stable revision ends it (Promoted, StableRevision);
 * - Observing/Paused: nextCanaryPhase on the canary pods; Failed is held (the canary nodes go back to the stable
 *   revision) and Promoted hands over to the rolling update, until the template changes.
 */
export function planCanary(
  ctx: SyncContext,
  current: ControllerRevision,
  old: readonly ControllerRevision[],
): CanaryPlan {
  const { ds, hash, now } = ctx;
  const stored = storedCanaryStatus(ds);
  // Every field written, whatever the stored object lacks (see CanaryStatus in src/api/schema.ts: a merge patch
  // keeps the fields it does not name).
  const prev: CanaryStatus | undefined = stored && {
    reason: '',
    message: '',
    since: formatTime(now),
    startTime: stored.since ?? formatTime(now),
    resumed: false,
    restartingSince: '',
    ...stored,
  };
  const events: PlanEvent[] = [];
  const inactive = (status: CanaryStatus | undefined): CanaryPlan => ({
    ...(status ? { status, phase: status.phase } : {}),
    active: false,
    nodes: new Set(),
    stableHash: hash,
    rollingNodes: [],
    events,
    podPatches: canaryLabelPatches(ctx, new Set()),
    waiting: false,
  });
  const nowText = formatTime(now);
  const spec = canarySpecOf(ds);
  if (!spec) {
    if (!prev || prev.phase === 'Promoted') return inactive(prev);
    // The canary ends with its spec. Recorded for the current revision (status.canary is the latest revision's
    // canary): a Failed record left would keep `kubectl ads status` failing and the CanaryFailed alert firing while
    // the rolling update takes the revision everywhere.
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
    events.push({
      type: 'Normal',
      reason: CANARY_PROMOTED_REASON,
      message: same
        ? `Canary of revision ${hash} promoted: ${message}`
        : `Canary of revision ${prev.revision} ended, revision ${hash} rolls out: ${message}`,
    });
    return inactive(status);
  }
  const settings = canarySettings(spec);
  const revisions = new Map<string, ControllerRevision>();
  for (const r of [current, ...old]) revisions.set(revisionHashLabel(r), r);

  let record: CanaryStatus;
  let started = false;
  if (prev && prev.revision === hash) {
    record = prev;
  } else {
    // A newer template while a canary runs or after it failed: the same nodes, the same stable revision.
    const restart = !!prev && prev.phase !== 'Promoted' && revisions.has(prev.stableRevision);
    const stable = restart ? prev.stableRevision : stableRevisionHash(allPods(ctx), hash, revisions);
    if (stable === undefined || stable === hash) {
      if (!prev || prev.phase === 'Promoted') return inactive(prev);
      const status: CanaryStatus = {
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
      return inactive(status);
    }
    record = {
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
    started = true;
  }
  if (record.phase === 'Promoted') return inactive(record);

  // Without the stable revision's ControllerRevision (deleted by hand) its pods cannot be built: new pods then use
  // the current template, as without a canary.
  const stableDs = withTemplate(ds, revisions.get(record.stableRevision));
  const base = { active: true, stableHash: record.stableRevision, ...(stableDs ? { stableDs } : {}), events };

  if (record.phase === 'Failed') return failedPlan(ctx, record, base, false);

  const candidates = canaryCandidates(ctx, settings);
  const nodes = selectCanaryNodes(candidates, canaryNodeCount(settings.nodes, ctx.desired), record.nodes);
  if (started) {
    events.push({
      type: 'Normal',
      reason: CANARY_STARTED_REASON,
      message:
        record.reason === CANARY_REASON_RESTARTED
          ? `Canary restarted for revision ${hash} on the same nodes ${list(nodes)} (previous canary revision ${prev?.revision ?? ''}, stable revision ${record.stableRevision})`
          : `Canary of revision ${hash} started on nodes ${list(nodes)} (stable revision ${record.stableRevision})`,
    });
  }
  const minReady = ds.spec.minReadySeconds ?? 0;
  const canaryPods: Pod[] = [];
  let complete = nodes.length > 0;
  for (const n of nodes) {
    const mine = liveOn(ctx, n).filter((p) => podRevisionHash(p) === hash);
    if (mine.length === 0) complete = false;
    canaryPods.push(...mine);
  }
  const health = canaryPods.map((p) => judgeCanaryPod(p, minReady, now));
  const verdict = nextCanaryPhase({
    settings,
    prev: record,
    annotations: ds.metadata.annotations ?? {},
    pods: health,
    nodes,
    complete,
    now,
  });
  const next: CanaryStatus = {
    ...record,
    nodes,
    phase: verdict.phase,
    reason: verdict.reason,
    message: verdict.message,
    since: verdict.phase === record.phase && !started ? record.since : nowText,
    resumed: verdict.resumed,
    restartingSince: verdict.restartingSince !== undefined ? formatTime(verdict.restartingSince) : '',
  };
  const was = started ? undefined : record.phase;
  if (verdict.phase === 'Paused' && was !== 'Paused') {
    events.push({
      type: verdict.manual ? 'Normal' : 'Warning',
      reason: CANARY_PAUSED_REASON,
      message: `Canary of revision ${hash} paused (${verdict.reason}): ${verdict.message}`,
    });
  } else if (verdict.phase === 'Promoted') {
    events.push({
      type: 'Normal',
      reason: CANARY_PROMOTED_REASON,
      message: `Canary of revision ${hash} promoted (${verdict.reason}): ${verdict.message}`,
    });
    return inactive(next);
  } else if (verdict.phase === 'Failed') {
    events.push({
      type: 'Warning',
      reason: CANARY_FAILED_REASON,
      message: `Canary of revision ${hash} failed (${verdict.reason}): ${verdict.message}; rolling back nodes ${list(nodes)} to revision ${record.stableRevision}`,
    });
    return failedPlan(ctx, next, base, true);
  }
  const labelled = new Set(
    verdict.phase === 'Observing' || verdict.phase === 'Paused' ? canaryPods.map((p) => p.metadata.name ?? '') : [],
  );
  return {
    ...base,
    status: next,
    phase: next.phase,
    nodes: new Set(nodes),
    rollingNodes: next.phase === 'Observing' ? nodes : [],
    podPatches: canaryLabelPatches(ctx, labelled),
    ...(verdict.requeueAfterMs !== undefined ? { requeueAfterMs: verdict.requeueAfterMs } : {}),
    waiting: verdict.waiting,
  };
}

/** Failed: the canary nodes go back to the stable revision; CanaryRolledBack once they all run it, available. */
function failedPlan(
  ctx: SyncContext,
  record: CanaryStatus,
  base: Pick<CanaryPlan, 'active' | 'stableHash' | 'stableDs' | 'events'>,
  justFailed: boolean,
): CanaryPlan {
  const nodes = record.nodes.filter((n) => ctx.nodeByName.has(n));
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  const back: string[] = [];
  let rolledBack = true;
  for (const n of nodes) {
    const pods = liveOn(ctx, n);
    const shouldRun = ctx.eligibility.get(n)?.shouldRun ?? false;
    if (!shouldRun && pods.length === 0) continue;
    const pod = pods[0];
    if (
      pods.length !== 1 ||
      !pod ||
      podRevisionHash(pod) !== record.stableRevision ||
      !isPodAvailable(pod, minReady, ctx.now)
    ) {
      rolledBack = false;
      break;
    }
    back.push(pod.metadata.name ?? '');
  }
  let status = record;
  if (rolledBack && !justFailed && !(record.message ?? '').endsWith(ROLLED_BACK_NOTE)) {
    status = { ...record, message: `${record.message ?? ''}; ${ROLLED_BACK_NOTE}` };
    base.events.push({
      type: 'Normal',
      reason: CANARY_ROLLED_BACK_REASON,
      message: `Canary nodes ${list(nodes)} run available pods of the stable revision ${record.stableRevision} again (pods ${list(back)}); the canary of revision ${record.revision} failed (${record.reason ?? ''}): ${record.message ?? ''}`,
    });
  }
  return {
    ...base,
    status,
    phase: 'Failed',
    nodes: new Set(nodes),
    rollingNodes: nodes,
    podPatches: canaryLabelPatches(ctx, new Set()),
    waiting: false,
    rolledBack,
  };
}

function* allPods(ctx: SyncContext): Generator<Pod> {
  for (const pods of ctx.nodeToDaemonPods.values()) yield* pods;
}
