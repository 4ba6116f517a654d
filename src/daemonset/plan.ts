// planDaemonSet: one sync of an Advanced DaemonSet as a pure function, in the order of Kruise's syncDaemonSet
// (https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_controller.go):
// history, expectations gate, manage, (in-place refresh), rollingUpdate, cleanupHistory, status
// (docs/architecture.md#one-sync). The shell (controller/) executes the plan; see plan-types.ts for what each part means.
import type { ControllerRevision, LabelSelector, Pod } from '../k8s/types.ts';
import { isEmptyLabelSelector, labelSelectorErrors } from '../k8s/labels.ts';
import { CONTROLLER_REVISION_HASH_LABEL } from './constants.ts';
import { gcFailedPodsBackoff, type BackoffState } from './backoff.ts';
import { minDelay, newSyncContext, withTargets, type NodeIndex, type SyncContext } from './context.ts';
import { cleanupHistory, constructHistory, revisionHashLabel, type HistoryResult } from './history.ts';
import { planCanary } from './canary/plan.ts';
import { manage, syncNodes } from './manage.ts';
import type { PlanMemo } from './memo.ts';
import {
  canPodInPlaceUpdate,
  inPlaceRefreshPatch,
  inPlaceSpec,
  inPlaceStep,
  podRevision,
  resizeRecreateReasons,
  templateOfRevision,
  type InPlaceStep,
} from './inplace.ts';
import { kruisePodReadyPatch } from './pods.ts';
import { planImagePreDownload, planImagePullJobs } from './predownload.ts';
import type {
  AfterManage,
  CanaryPlan,
  DaemonSetSnapshot,
  InPlaceUpdate,
  Plan,
  PlanEvent,
  PodCreate,
  PodDelete,
  PodPatch,
  RevisionPlan,
} from './plan-types.ts';
import {
  calculateStatus,
  CONDITION_PROGRESSING,
  frozenMessage,
  selectorPartitionHoldMessage,
  type StatusInput,
} from './status.ts';
import { burstReplicas, isDaemonSetPaused, isInPlaceIfPossible, isRolloutFrozen, isRollingUpdate } from './strategy.ts';
import { nodeTargets, targetHash } from './targets.ts';
import { rollingUpdate, type FreeUpdate } from './update.ts';
import { overrideUpdates, type OverrideUpdates } from './override-update.ts';
import { podResourceOverrides, settingsOf, withResourceOverrides } from './overrides.ts';
import { settingStatuses } from './setting-status.ts';
import {
  HASH_COLLISION_REASON,
  INVALID_ROLLING_UPDATE_REASON,
  RESIZE_INFEASIBLE_REASON,
  RESIZE_NOT_POSSIBLE_REASON,
  INVALID_SELECTOR_REASON,
  PARTITION_HOLDS_SELECTED_NODES,
  ROLLOUT_FROZEN_REASON,
  SELECTING_ALL_REASON,
} from './events.ts';

/**
 * planDaemonSet(snapshot) -> plan. Order:
 * 1. DaemonSet being deleted -> nothing (stage Deleting).
 * 2. Selector `{}` (or invalid) -> Warning SelectingAll, nothing else (stage InvalidSelector).
 * 3. constructHistory -> current hash; revision creates/updates/deletes; pods of merged duplicates relabelled.
 * 4. Expectations unsatisfied -> status only, observedGeneration kept (stage ExpectationsPending).
 * 5. manage + syncNodes; if that creates, deletes or marks PreparingDelete -> status without observedGeneration,
 *    stop (stage Managed): the rolling update runs on the next sync, when the cache has caught up. Steps 6-8 are
 *    still computed on the same state into `afterManage`, for the shell to run if every create and delete of
 *    the plan failed (expectations satisfied again at once, as upstream's re-check finds after a quota error),
 *    leaving out the nodes manage acts on.
 * 6. rollingUpdate unless OnDelete or paused (surge creates, deletes within maxUnavailable), through syncNodes;
 *    under InPlaceIfPossible the pods to replace are updated in place where the change allows it.
 * 7. cleanupHistory; 8. status with observedGeneration = generation (stage Complete).
 * Readiness-gate upkeep (KruisePodReady, InPlaceUpdateReady) is planned at every stage from 4 on; image
 * pre-download (options.imagePreDownload 'pods', predownload.ts) between 4 and 5. The canary (canary/plan.ts: phase,
 * events, canary labels) is decided right after 3, on the node index; each node's target revision (targets.ts)
 * follows from it and applies from 4 on.
 *
 * Each stage returns what it adds to the plan (a PlanPart, or the plan's other fields), and this function joins them
 * in the order of the stages; no stage writes into another's result or into the context.
 *
 * `memo`: the PlanMemo of this DaemonSet (memo.ts), kept by the shell between its syncs: the per-node part of the sync
 * is then brought up to date rather than rebuilt, re-evaluating only the nodes whose object or pods changed. The plan
 * is the same with or without it.
 */
export function planDaemonSet(snapshot: DaemonSetSnapshot, memo?: PlanMemo): Plan {
  const { ds, now } = snapshot;
  if (ds.metadata.deletionTimestamp) return emptyPlan(snapshot, 'Deleting');
  const invalid = invalidSelectorEvent(ds.spec.selector);
  if (invalid) return { ...emptyPlan(snapshot, 'InvalidSelector'), events: [invalid] };

  // 3. History; then the node index, the canary, and each node's target revision, which the later stages read.
  const { history, pods, revisions, part: historyPart } = historyStage(snapshot);
  const settings = settingsOf(ds, snapshot.settings ?? []);
  // The pods' changes and version are of the snapshot's pods, not of relabelled copies.
  const { podChanges, podsVersion, nodeChanges } = snapshot;
  const changes = pods === snapshot.pods ? { podChanges, podsVersion, nodeChanges } : { nodeChanges };
  const index = newSyncContext(ds, snapshot.nodes, pods, history.hash, now, snapshot.options, memo, settings, changes);
  const settingStatus = settingStatuses(index);
  const expectationsSatisfied = snapshot.expectationsSatisfied !== false;
  const readiness = readinessPatches(index, pods, now, expectationsSatisfied, snapshot.podsAwaitingWrites);
  const canary = planCanary(index, history.current, history.old);
  const ctx = withTargets(index, nodeTargets(history.hash, canary));
  const head = withParts(
    {
      ...emptyPlan(snapshot, 'ExpectationsPending'),
      hash: history.hash,
      revisions,
      ...(settingStatus.writes.length > 0 ? { settingStatuses: settingStatus.writes } : {}),
    },
    historyPart,
    { events: settingStatus.events },
    { podPatches: readiness },
    { events: canary.events, podPatches: canary.podPatches, requeueAfterMs: canary.requeueAfterMs },
  );
  const status = (updateObservedGen: boolean): StatusInput => ({
    canary,
    updateObservedGen,
    collisionCount: history.collisionCount,
  });

  // 4. Expectations gate.
  if (!expectationsSatisfied) return withStatus(head, ctx, status(false));
  if (isRolloutFrozen(ds)) {
    const frozen = withParts(head, frozenPart(ctx, history, pods));
    return withStatus({ ...frozen, stage: 'Frozen' }, ctx, status(true));
  }
  // Pre-download images ahead of the rollout (Kruise runs it here too, before manage).
  const pre = preDownloadStage(ctx, snapshot, history);
  // 5. manage.
  const managed = manageStage(ctx, snapshot);
  const upToManage = { ...withParts(head, pre.part, managed.part), ...pre.fields, failedPodsBackoff: managed.backoff };
  if (managed.actsOn) {
    // afterManage is planned on the state before manage: a node manage acts on is left to the next sync, which
    // sees manage's result (else a node whose failed old pod manage replaces would also get a surge pod).
    const afterManage = finishSync(ctx, canary, history, pods, managed.actsOn);
    return withStatus({ ...upToManage, stage: 'Managed', afterManage }, ctx, status(false));
  }
  // 6-8.
  const rest = finishSync(ctx, canary, history, pods);
  return {
    ...withParts(upToManage, rest),
    stage: 'Complete',
    status: rest.status,
    statusChanged: rest.statusChanged,
  };
}

function emptyPlan(snapshot: DaemonSetSnapshot, stage: Plan['stage']): Plan {
  return {
    stage,
    hash: '',
    revisions: { create: [], update: [], delete: [] },
    creates: [],
    deletes: [],
    podPatches: [],
    inPlaceUpdates: [],
    statusChanged: false,
    events: [],
    failedPodsBackoff: snapshot.failedPodsBackoff ?? {},
  };
}

/** What a stage adds to the plan: its lists go after those of the stages before it; the soonest requeue wins. */
interface PlanPart {
  creates?: readonly PodCreate[];
  deletes?: readonly PodDelete[];
  podPatches?: readonly PodPatch[];
  inPlaceUpdates?: readonly InPlaceUpdate[];
  events?: readonly PlanEvent[];
  /** ControllerRevisions to delete, after those of the history. */
  revisionDeletes?: readonly string[];
  requeueAfterMs?: number;
}

/** `plan` with `parts` added, in order (a new plan: `plan` is left as it is). */
function withParts(plan: Plan, ...parts: PlanPart[]): Plan {
  const out: Plan = {
    ...plan,
    revisions: { ...plan.revisions, delete: [...plan.revisions.delete] },
    creates: [...plan.creates],
    deletes: [...plan.deletes],
    podPatches: [...plan.podPatches],
    inPlaceUpdates: [...plan.inPlaceUpdates],
    events: [...plan.events],
  };
  for (const p of parts) {
    out.creates.push(...(p.creates ?? []));
    out.deletes.push(...(p.deletes ?? []));
    out.podPatches.push(...(p.podPatches ?? []));
    out.inPlaceUpdates.push(...(p.inPlaceUpdates ?? []));
    out.events.push(...(p.events ?? []));
    out.revisions.delete.push(...(p.revisionDeletes ?? []));
    out.requeueAfterMs = minDelay(out.requeueAfterMs, p.requeueAfterMs);
  }
  return out;
}

/** `plan` with the status of this sync (8.), and its requeue. */
function withStatus(plan: Plan, ctx: SyncContext, input: StatusInput): Plan {
  const s = calculateStatus(ctx, input);
  return {
    ...plan,
    status: s.status,
    statusChanged: s.changed,
    requeueAfterMs: minDelay(plan.requeueAfterMs, s.requeueAfterMs),
  };
}

/** 2. Selector `{}`: SelectingAll; missing or invalid: InvalidSelector; undefined for a selector that parses. */
function invalidSelectorEvent(selector: LabelSelector | undefined): PlanEvent | undefined {
  if (selector && !isEmptyLabelSelector(selector) && labelSelectorErrors(selector).length === 0) return undefined;
  return isEmptyLabelSelector(selector)
    ? {
        type: 'Warning',
        reason: SELECTING_ALL_REASON,
        message: 'This DaemonSet is selecting all pods. A non-empty selector is required.',
      }
    : {
        type: 'Warning',
        reason: INVALID_SELECTOR_REASON,
        message: `Invalid spec.selector: ${labelSelectorErrors(selector).join('; ') || 'missing'}`,
      };
}

interface HistoryStage {
  history: HistoryResult;
  /** The snapshot's pods, those of merged duplicate revisions with their new hash label. */
  pods: readonly Pod[];
  revisions: RevisionPlan;
  part: PlanPart;
}

/**
 * 3. constructHistory: the revisions to create, update and delete, its collision notes as events, and the pods of
 * merged duplicate revisions relabelled: patched, and read by the rest of the sync with their new label.
 */
function historyStage(snapshot: DaemonSetSnapshot): HistoryStage {
  const history = constructHistory(snapshot.ds, snapshot.revisions, snapshot.pods, snapshot.foreignRevisions);
  const revisions: RevisionPlan = {
    create: history.create ? [history.create] : [],
    update: history.update,
    delete: [...history.delete],
  };
  const events = history.notes.map((note): PlanEvent => ({
    type: 'Normal',
    reason: HASH_COLLISION_REASON,
    message: note,
  }));
  if (history.podRelabels.length === 0) return { history, pods: snapshot.pods, revisions, part: { events } };
  const podPatches = history.podRelabels.map((r): PodPatch => ({
    podName: r.podName,
    patchType: 'strategic',
    patch: { metadata: { labels: { [CONTROLLER_REVISION_HASH_LABEL]: r.hash } } },
    reason: 'RevisionRelabel',
  }));
  const relabel = new Map(history.podRelabels.map((r) => [r.podName, r.hash]));
  const pods = snapshot.pods.map((p) => {
    const h = relabel.get(p.metadata.name ?? '');
    return h === undefined
      ? p
      : {
          ...p,
          metadata: { ...p.metadata, labels: { ...(p.metadata.labels ?? {}), [CONTROLLER_REVISION_HASH_LABEL]: h } },
        };
  });
  return { history, pods, revisions, part: { events, podPatches } };
}

/**
 * Readiness-gate upkeep for every pod: KruisePodReady True when the gate has no condition yet (pod-readiness
 * controller); InPlaceUpdateReady True unless an in-place update is in flight (refreshUpdateStates), only when
 * `refreshInPlace`: on a cache older than our own writes (expectations pending) a pod between its InPlaceUpdateReady
 * False and its image patch looks like a refused update, so, as in Kruise, the refresh waits for the cache.
 */
function readinessPatches(
  ctx: NodeIndex,
  pods: readonly Pod[],
  now: number,
  refreshInPlace: boolean,
  awaitingWrites: ReadonlySet<string> | undefined,
): PodPatch[] {
  const out: PodPatch[] = [];
  // With a memo (memo.ts) a sync where no pod needs either skips the pass over every pod.
  const upkeep = ctx.upkeep;
  if (upkeep && upkeep.kruiseReady === 0 && (!refreshInPlace || upkeep.inPlaceRefresh === 0)) return out;
  for (const pod of pods) {
    const podName = pod.metadata.name ?? '';
    // Our own write to it is not in this copy yet (podsAwaitingWrites): planning from it would repeat or undo it.
    if (awaitingWrites?.has(podName)) continue;
    const ready = kruisePodReadyPatch(pod, now);
    if (ready)
      out.push({ podName, subresource: 'status', patchType: 'strategic', patch: ready, reason: 'KruisePodReady' });
    const inPlace = refreshInPlace ? inPlaceRefreshPatch(pod, now) : undefined;
    if (inPlace) {
      out.push({
        podName,
        subresource: 'status',
        patchType: 'strategic',
        patch: inPlace,
        reason: 'InPlaceUpdateReady',
      });
    }
  }
  return out;
}

/**
 * A frozen rollout (ExtendedDaemonSet's rollout-frozen): nothing is created, deleted or updated in place, pull pods
 * included; history, readiness upkeep and status go on. Said once, when the stored Progressing does not say it.
 */
function frozenPart(ctx: SyncContext, history: HistoryResult, pods: readonly Pod[]): PlanPart {
  const stored = ctx.ds.status?.conditions?.find((c) => c.type === CONDITION_PROGRESSING);
  return {
    events:
      stored?.reason !== ROLLOUT_FROZEN_REASON
        ? [{ type: 'Normal', reason: ROLLOUT_FROZEN_REASON, message: frozenMessage() }]
        : [],
    revisionDeletes: cleanupHistory(ctx.ds, history.old, pods, keptRevisions(ctx)),
  };
}

/** Image pre-download (options.imagePreDownload): pull pods, or ImagePullJobs; nothing when off. */
function preDownloadStage(
  ctx: SyncContext,
  snapshot: DaemonSetSnapshot,
  history: HistoryResult,
): { part: PlanPart; fields: Pick<Plan, 'imagePreDownload' | 'imagePullJobs'> } {
  const mode = snapshot.options?.imagePreDownload;
  if (mode === 'pods') {
    const pre = planImagePreDownload(ctx, snapshot.imagePullPods ?? []);
    return {
      part: { podPatches: pre.podPatches, events: pre.events },
      fields: { imagePreDownload: { creates: pre.creates, deletes: pre.deletes } },
    };
  }
  if (mode === 'imagepulljob') {
    return { part: {}, fields: { imagePullJobs: planImagePullJobs(ctx, history.current, history.old) } };
  }
  return { part: {}, fields: {} };
}

interface ManageStage {
  part: PlanPart;
  /** The failed-pod backoff to keep. */
  backoff: BackoffState;
  /** The nodes manage creates, deletes or patches pods on; undefined when it acts on none. */
  actsOn?: ReadonlySet<string>;
}

/** 5. manage and syncNodes, on the backoff without the entries no sync reads again (old generations, gone nodes, expired). */
function manageStage(ctx: SyncContext, snapshot: DaemonSetSnapshot): ManageStage {
  const { ds } = ctx;
  const backoff = gcFailedPodsBackoff(
    snapshot.failedPodsBackoff ?? {},
    ds.metadata.uid ?? '',
    ds.status?.observedGeneration ?? 0,
    (name) => ctx.nodeByName.has(name),
    snapshot.now,
  );
  const m = manage(ctx, backoff);
  const synced = syncNodes(ctx, m.podsToDelete, m.nodesNeedingDaemonPods);
  const part: PlanPart = {
    events: m.events,
    requeueAfterMs: m.requeueAfterMs,
    creates: synced.creates,
    deletes: synced.deletes,
    podPatches: synced.podPatches,
  };
  if (synced.creates.length === 0 && synced.deletes.length === 0 && synced.podPatches.length === 0) {
    return { part, backoff: m.backoff };
  }
  const actsOn = new Set(m.nodesNeedingDaemonPods);
  for (const d of m.podsToDelete) if (d.nodeName !== undefined) actsOn.add(d.nodeName);
  return { part, backoff: m.backoff, actsOn };
}

/**
 * Steps 6-8 of a sync: rolling update (with in-place), cleanupHistory, status with observedGeneration. The rolling
 * update leaves out `skipNodes` (the nodes manage creates, deletes or patches pods on, for afterManage).
 */
function finishSync(
  ctx: SyncContext,
  canary: CanaryPlan,
  history: HistoryResult,
  pods: readonly Pod[],
  skipNodes: ReadonlySet<string> = new Set(),
): AfterManage {
  // 8. Status (computed from the state before this plan, as upstream's status pass reads the cache).
  const s = calculateStatus(ctx, { canary, updateObservedGen: true, collisionCount: history.collisionCount });
  // 6. Rolling update, then the pods whose node asks for other resources (override-update.ts).
  const ru = rollingUpdateStage(ctx, history, skipNodes);
  const ov = overrideStage(ctx, history, ru, skipNodes);
  const requeueAfterMs = minDelay(s.requeueAfterMs, ov.requeueAfterMs);
  return {
    creates: ru.creates,
    deletes: [...ru.deletes, ...ov.deletes],
    podPatches: [...ru.podPatches, ...ov.podPatches],
    inPlaceUpdates: [...ru.inPlaceUpdates, ...ov.inPlaceUpdates],
    // 7. cleanupHistory (sees every owned pod, terminating and terminal ones included).
    revisionDeletes: cleanupHistory(ctx.ds, history.old, pods, keptRevisions(ctx)),
    events: [...partitionHoldEvents(ctx), ...ru.events, ...ov.events],
    status: s.status,
    statusChanged: s.changed,
    ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
  };
}

/**
 * The partition holds every node rollingUpdate.selector picks: say so once, when the Progressing message stored
 * does not say it yet (the status written by this sync will), rather than at every sync.
 */
function partitionHoldEvents(ctx: SyncContext): PlanEvent[] {
  const hold = selectorPartitionHoldMessage(ctx);
  const progressing = ctx.ds.status?.conditions?.find((c) => c.type === CONDITION_PROGRESSING);
  if (!hold || progressing?.message?.includes(hold)) return [];
  return [{ type: 'Normal', reason: PARTITION_HOLDS_SELECTED_NODES, message: hold }];
}

type RollingUpdatePart = Pick<AfterManage, 'creates' | 'deletes' | 'podPatches' | 'inPlaceUpdates' | 'events'>;

/**
 * 6b. Per-node resources (override-update.ts), on the pods the rolling update leaves alone in this sync: not on the
 * nodes it creates a pod on, nor the pods it deletes or updates.
 */
function overrideStage(
  ctx: SyncContext,
  history: HistoryResult,
  ru: RollingUpdatePart,
  skipNodes: ReadonlySet<string>,
): OverrideUpdates {
  const taken = new Set<string>([...ru.deletes, ...ru.inPlaceUpdates].map((d) => d.podName));
  const skip = ru.creates.length === 0 ? skipNodes : new Set([...skipNodes, ...ru.creates.map((c) => c.nodeName)]);
  const ov = overrideUpdates(ctx, [history.current, ...history.old], taken, skip, ru.deletes.length);
  if (ov.deletes.length === 0) return ov;
  // Through syncNodes, as every delete: a preDelete hook holds the pod first.
  const synced = syncNodes(ctx, ov.deletes, []);
  return { ...ov, deletes: synced.deletes, podPatches: [...ov.podPatches, ...synced.podPatches] };
}

/**
 * 6. rollingUpdate unless OnDelete or paused, through syncNodes, leaving out `skipNodes`; under InPlaceIfPossible the
 * pods to replace are updated in place where the change allows it, and pods whose update keeps them Ready (a resize)
 * outside the budget.
 */
function rollingUpdateStage(
  ctx: SyncContext,
  history: HistoryResult,
  skipNodes: ReadonlySet<string>,
): RollingUpdatePart {
  const { ds } = ctx;
  const none: RollingUpdatePart = { creates: [], deletes: [], podPatches: [], inPlaceUpdates: [], events: [] };
  if (!isRollingUpdate(ds) || isDaemonSetPaused(ds)) return none;
  const inPlace = isInPlaceIfPossible(ds) ? inPlaceSteps(ctx, history) : undefined;
  // Without resize no update is free: the rolling update then asks nothing of the in-place steps.
  const ru = rollingUpdate(ctx, ctx.opts.inPlaceResize === true ? inPlace?.free : undefined);
  if (ru.error)
    return { ...none, events: [{ type: 'Warning', reason: INVALID_ROLLING_UPDATE_REASON, message: ru.error }] };
  const skip = (nodeName: string | undefined) => nodeName !== undefined && skipNodes.has(nodeName);
  const kept = <T extends { nodeName?: string | undefined }>(list: T[]) =>
    skipNodes.size === 0 ? list : list.filter((d) => !skip(d.nodeName));
  const toDelete = kept(ru.podsToDelete);
  const nodesToCreate = skipNodes.size === 0 ? ru.nodesToCreate : ru.nodesToCreate.filter((n) => !skip(n));
  const toUpdate = [...kept(ru.freeUpdates), ...toDelete];
  const planned =
    inPlace && toUpdate.length > 0
      ? inPlaceUpdates(ctx, inPlace, toUpdate)
      : { updates: [], rest: toDelete, events: [] };
  const synced = syncNodes(ctx, planned.rest, nodesToCreate);
  return { ...synced, inPlaceUpdates: planned.updates, events: planned.events };
}

/** Each pod's next in-place step (inplace.ts, inPlaceStep), computed once per sync, and the budget-free ones. */
interface InPlaceSteps {
  stepOf(pod: Pod, nodeName: string): { step?: InPlaceStep; recreateReasons: () => string[] };
  free: FreeUpdate;
}

/**
 * The in-place steps of this sync. Each pod goes to its node's target revision: the current one, or the stable one
 * (a failed canary's nodes going back).
 */
function inPlaceSteps(ctx: SyncContext, history: HistoryResult): InPlaceSteps {
  const resize = ctx.opts.inPlaceResize === true;
  const all = [history.current, ...history.old];
  const byHash = new Map(all.map((r) => [revisionHashLabel(r), r]));
  const steps = new Map<string, InPlaceStep | undefined>();
  // The templates of a pod's update, each with its per-node resources (overrides.ts): those the pod was given, and
  // those its node asks for now. Undefined when the pod's revision or the target is unknown.
  const templates = (pod: Pod, target: ControllerRevision | undefined, nodeName: string) => {
    const from = podRevision(pod, all);
    const fromTemplate = from && templateOfRevision(from);
    const toTemplate = target && templateOfRevision(target);
    if (!fromTemplate || !toTemplate) return undefined;
    const recorded = podResourceOverrides(pod);
    const wanted = ctx.resources.of(nodeName);
    return {
      from: withResourceOverrides(fromTemplate, recorded === 'invalid' ? undefined : recorded),
      to: withResourceOverrides(toTemplate, wanted),
    };
  };
  const stepOf = (pod: Pod, nodeName: string) => {
    const toHash = targetHash(ctx.targets, nodeName);
    const target = byHash.get(toHash);
    const key = pod.metadata.name ?? '';
    if (!steps.has(key)) {
      // Without per-node resources on either side, the spec between the two revisions is cached (inplace.ts).
      const plain = ctx.resources.none && podResourceOverrides(pod) === undefined;
      const t = plain ? undefined : templates(pod, target, nodeName);
      const spec = plain
        ? target && canPodInPlaceUpdate(pod, target, all, resize)
        : t && inPlaceSpec(t.from, t.to, resize);
      steps.set(key, spec ? inPlaceStep(pod, spec, toHash, ctx.now) : undefined);
    }
    const recreateReasons = () => {
      const t = resize ? templates(pod, target, nodeName) : undefined;
      return t ? resizeRecreateReasons(t.from, t.to) : [];
    };
    return { step: steps.get(key), recreateReasons };
  };
  return { stepOf, free: (pod, nodeName) => stepOf(pod, nodeName).step?.free === true };
}

/**
 * inPlaceUpdatePods: update in place what can be, up to burstReplicas; delete the rest, saying why a resize could not
 * be made where that is the cause. A resize the kubelet is still making waits; one its node can never fit is
 * recreated (it is in `toUpdate` only within the budget).
 */
function inPlaceUpdates(
  ctx: SyncContext,
  steps: InPlaceSteps,
  toUpdate: readonly PodDelete[],
): { updates: InPlaceUpdate[]; rest: PodDelete[]; events: PlanEvent[] } {
  const burst = burstReplicas(ctx.ds, ctx.desired);
  const updates: InPlaceUpdate[] = [];
  const rest: PodDelete[] = [];
  const events: PlanEvent[] = [];
  for (const d of toUpdate) {
    const pod = ctx.podsByName.get(d.podName);
    const { step, recreateReasons } = pod ? steps.stepOf(pod, d.nodeName ?? pod.spec.nodeName ?? '') : {};
    if (!step || step.kind === 'infeasible') {
      rest.push(d);
      const why = step?.kind === 'infeasible' ? undefined : recreateReasons?.();
      if (step?.kind === 'infeasible')
        events.push({
          type: 'Warning',
          reason: RESIZE_INFEASIBLE_REASON,
          message: `pod ${d.podName} on node ${d.nodeName ?? ''} is recreated: its resize cannot be made: ${step.message}`,
        });
      else if (why && why.length > 0)
        events.push({
          type: 'Warning',
          reason: RESIZE_NOT_POSSIBLE_REASON,
          message: `pod ${d.podName} on node ${d.nodeName ?? ''} is recreated: ${why.join('; ')}`,
        });
    } else if (step.kind !== 'wait' && updates.length < burst) updates.push(step.update());
  }
  return { updates, rest, events };
}

/** The stable revision of a canary is kept even when no pod runs it (its pods are built from it). */
function keptRevisions(ctx: SyncContext): ReadonlySet<string> | undefined {
  const c = ctx.targets.canary;
  return c ? new Set([c.stableHash]) : undefined;
}
