// planDaemonSet: one sync of an Advanced DaemonSet as a pure function, in the order of Kruise's syncDaemonSet
// (https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_controller.go):
// history, expectations gate, manage, (in-place refresh), rollingUpdate, cleanupHistory, status
// (docs/architecture.md#one-sync). The shell (controller/) executes the plan; see plan-types.ts for what each part means.
import type { Pod } from '../k8s/types.ts';
import { isEmptyLabelSelector, labelSelectorErrors } from '../k8s/labels.ts';
import { CONTROLLER_REVISION_HASH_LABEL } from './constants.ts';
import { gcFailedPodsBackoff } from './backoff.ts';
import { minDelay, newSyncContext, withTargets, type NodeIndex, type SyncContext } from './context.ts';
import { cleanupHistory, constructHistory, revisionHashLabel, type HistoryResult } from './history.ts';
import { planCanary } from './canary/plan.ts';
import { manage, syncNodes } from './manage.ts';
import type { PlanMemo } from './memo.ts';
import { canPodInPlaceUpdate, inPlaceRefreshPatch, planInPlaceUpdate } from './inplace.ts';
import { kruisePodReadyPatch } from './pods.ts';
import { planImagePreDownload, planImagePullJobs } from './predownload.ts';
import type { AfterManage, CanaryPlan, DaemonSetSnapshot, Plan, PodDelete, PodPatch } from './plan-types.ts';
import { calculateStatus, CONDITION_PROGRESSING, frozenMessage, selectorPartitionHoldMessage } from './status.ts';
import { burstReplicas, isDaemonSetPaused, isInPlaceIfPossible, isRolloutFrozen, isRollingUpdate } from './strategy.ts';
import { nodeTargets, targetHash } from './targets.ts';
import { rollingUpdate } from './update.ts';
import {
  HASH_COLLISION_REASON,
  INVALID_ROLLING_UPDATE_REASON,
  INVALID_SELECTOR_REASON,
  PARTITION_HOLDS_SELECTED_NODES,
  ROLLOUT_FROZEN_REASON,
  SELECTING_ALL_REASON,
} from './events.ts';

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

function finishWithStatus(
  plan: Plan,
  ctx: SyncContext,
  canary: CanaryPlan,
  updateObservedGen: boolean,
  collisionCount: number | undefined,
): Plan {
  const s = calculateStatus(ctx, { canary, updateObservedGen, collisionCount });
  plan.status = s.status;
  plan.statusChanged = s.changed;
  plan.requeueAfterMs = minDelay(plan.requeueAfterMs, s.requeueAfterMs);
  return plan;
}

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
 * events, canary labels, each node's target revision) is decided right after 3 and applies from 4 on.
 *
 * `memo`: the PlanMemo of this DaemonSet (memo.ts), kept by the shell between its syncs: the per-node part of the sync
 * is then brought up to date rather than rebuilt, re-evaluating only the nodes whose object or pods changed. The plan
 * is the same with or without it.
 */
export function planDaemonSet(snapshot: DaemonSetSnapshot, memo?: PlanMemo): Plan {
  const { ds, now } = snapshot;
  if (ds.metadata.deletionTimestamp) return emptyPlan(snapshot, 'Deleting');
  const selector = ds.spec.selector;
  if (!selector || isEmptyLabelSelector(selector) || labelSelectorErrors(selector).length > 0) {
    const plan = emptyPlan(snapshot, 'InvalidSelector');
    plan.events.push(
      isEmptyLabelSelector(selector)
        ? {
            type: 'Warning',
            reason: SELECTING_ALL_REASON,
            message: 'This DaemonSet is selecting all pods. A non-empty selector is required.',
          }
        : {
            type: 'Warning',
            reason: INVALID_SELECTOR_REASON,
            message: `Invalid spec.selector: ${labelSelectorErrors(selector).join('; ') || 'missing'}`,
          },
    );
    return plan;
  }

  // 3. History.
  const history = constructHistory(ds, snapshot.revisions, snapshot.pods, snapshot.foreignRevisions);
  const plan = emptyPlan(snapshot, 'ExpectationsPending');
  plan.hash = history.hash;
  plan.revisions = {
    create: history.create ? [history.create] : [],
    update: history.update,
    delete: [...history.delete],
  };
  for (const note of history.notes) plan.events.push({ type: 'Normal', reason: HASH_COLLISION_REASON, message: note });
  let pods = snapshot.pods;
  if (history.podRelabels.length > 0) {
    const relabel = new Map(history.podRelabels.map((r) => [r.podName, r.hash]));
    for (const r of history.podRelabels) {
      plan.podPatches.push({
        podName: r.podName,
        patchType: 'strategic',
        patch: { metadata: { labels: { [CONTROLLER_REVISION_HASH_LABEL]: r.hash } } },
        reason: 'RevisionRelabel',
      });
    }
    pods = pods.map((p) => {
      const h = relabel.get(p.metadata.name ?? '');
      return h === undefined
        ? p
        : {
            ...p,
            metadata: { ...p.metadata, labels: { ...(p.metadata.labels ?? {}), [CONTROLLER_REVISION_HASH_LABEL]: h } },
          };
    });
  }
  const index = newSyncContext(ds, snapshot.nodes, pods, history.hash, now, snapshot.options, memo);
  plan.podPatches.push(
    ...readinessPatches(index, pods, now, snapshot.expectationsSatisfied !== false, snapshot.podsAwaitingWrites),
  );
  // The canary (canary/plan.ts), then each node's target revision (targets.ts), which the later stages read.
  const canary = planCanary(index, history.current, history.old);
  const ctx = withTargets(index, nodeTargets(history.hash, canary));
  plan.events.push(...canary.events);
  plan.podPatches.push(...canary.podPatches);
  plan.requeueAfterMs = minDelay(plan.requeueAfterMs, canary.requeueAfterMs);

  // 4. Expectations gate.
  if (snapshot.expectationsSatisfied === false)
    return finishWithStatus(plan, ctx, canary, false, history.collisionCount);

  // A frozen rollout (ExtendedDaemonSet's rollout-frozen): nothing is created, deleted or updated in place, pull pods
  // included; history, readiness upkeep and status go on. Said once, when the stored Progressing does not say it.
  if (isRolloutFrozen(ds)) {
    plan.stage = 'Frozen';
    const stored = ds.status?.conditions?.find((c) => c.type === CONDITION_PROGRESSING);
    if (stored?.reason !== ROLLOUT_FROZEN_REASON)
      plan.events.push({ type: 'Normal', reason: ROLLOUT_FROZEN_REASON, message: frozenMessage() });
    plan.revisions.delete.push(...cleanupHistory(ds, history.old, pods, keptRevisions(ctx)));
    return finishWithStatus(plan, ctx, canary, true, history.collisionCount);
  }

  // Pre-download images ahead of the rollout (Kruise runs it here too, before manage).
  if (snapshot.options?.imagePreDownload === 'pods') {
    const pre = planImagePreDownload(ctx, snapshot.imagePullPods ?? []);
    plan.imagePreDownload = { creates: pre.creates, deletes: pre.deletes };
    plan.podPatches.push(...pre.podPatches);
    plan.events.push(...pre.events);
  } else if (snapshot.options?.imagePreDownload === 'imagepulljob') {
    plan.imagePullJobs = planImagePullJobs(ctx, history.current, history.old);
  }

  // 5. manage, on the backoff without the entries no sync reads again (old generations, gone nodes, expired).
  const backoff = gcFailedPodsBackoff(
    plan.failedPodsBackoff,
    ds.metadata.uid ?? '',
    ds.status?.observedGeneration ?? 0,
    (name) => ctx.nodeByName.has(name),
    now,
  );
  const m = manage(ctx, backoff);
  plan.failedPodsBackoff = m.backoff;
  plan.events.push(...m.events);
  plan.requeueAfterMs = minDelay(plan.requeueAfterMs, m.requeueAfterMs);
  const managed = syncNodes(ctx, m.podsToDelete, m.nodesNeedingDaemonPods);
  plan.creates.push(...managed.creates);
  plan.deletes.push(...managed.deletes);
  plan.podPatches.push(...managed.podPatches);
  if (managed.creates.length > 0 || managed.deletes.length > 0 || managed.podPatches.length > 0) {
    plan.stage = 'Managed';
    // afterManage is planned on the state before manage: a node manage acts on is left to the next sync, which
    // sees manage's result (else a node whose failed old pod manage replaces would also get a surge pod).
    const managedNodes = new Set(m.nodesNeedingDaemonPods);
    for (const d of m.podsToDelete) if (d.nodeName !== undefined) managedNodes.add(d.nodeName);
    plan.afterManage = finishSync(ctx, canary, history, pods, managedNodes);
    return finishWithStatus(plan, ctx, canary, false, history.collisionCount);
  }

  // 6-8.
  const rest = finishSync(ctx, canary, history, pods);
  plan.stage = 'Complete';
  plan.creates.push(...rest.creates);
  plan.deletes.push(...rest.deletes);
  plan.podPatches.push(...rest.podPatches);
  plan.inPlaceUpdates.push(...rest.inPlaceUpdates);
  plan.events.push(...rest.events);
  plan.revisions.delete.push(...rest.revisionDeletes);
  plan.status = rest.status;
  plan.statusChanged = rest.statusChanged;
  plan.requeueAfterMs = minDelay(plan.requeueAfterMs, rest.requeueAfterMs);
  return plan;
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
  const { ds, now } = ctx;
  // 8. Status (computed from the state before this plan, as upstream's status pass reads the cache).
  const s = calculateStatus(ctx, { canary, updateObservedGen: true, collisionCount: history.collisionCount });
  const out: AfterManage = {
    creates: [],
    deletes: [],
    podPatches: [],
    inPlaceUpdates: [],
    revisionDeletes: [],
    events: [],
    status: s.status,
    statusChanged: s.changed,
    ...(s.requeueAfterMs !== undefined ? { requeueAfterMs: s.requeueAfterMs } : {}),
  };
  // The partition holds every node rollingUpdate.selector picks: say so once, when the Progressing message stored
  // does not say it yet (the status written by this sync will), rather than at every sync.
  const hold = selectorPartitionHoldMessage(ctx);
  const progressing = ds.status?.conditions?.find((c) => c.type === CONDITION_PROGRESSING);
  if (hold && !progressing?.message?.includes(hold)) {
    out.events.push({ type: 'Normal', reason: PARTITION_HOLDS_SELECTED_NODES, message: hold });
  }
  // 6. Rolling update.
  if (isRollingUpdate(ds) && !isDaemonSetPaused(ds)) {
    const ru = rollingUpdate(ctx);
    if (ru.error) {
      out.events.push({ type: 'Warning', reason: INVALID_ROLLING_UPDATE_REASON, message: ru.error });
    } else {
      const skip = (nodeName: string | undefined) => nodeName !== undefined && skipNodes.has(nodeName);
      let toDelete = skipNodes.size === 0 ? ru.podsToDelete : ru.podsToDelete.filter((d) => !skip(d.nodeName));
      const nodesToCreate = skipNodes.size === 0 ? ru.nodesToCreate : ru.nodesToCreate.filter((n) => !skip(n));
      if (isInPlaceIfPossible(ds) && toDelete.length > 0) {
        // inPlaceUpdatePods: update in place what can be, up to burstReplicas; delete the rest. Each pod goes to its
        // node's target revision: the current one, or the stable one (a failed canary's nodes going back).
        const burst = burstReplicas(ds, ctx.desired);
        const all = [history.current, ...history.old];
        const byHash = new Map(all.map((r) => [revisionHashLabel(r), r]));
        const rest: PodDelete[] = [];
        for (const d of toDelete) {
          const pod = ctx.podsByName.get(d.podName);
          const toHash = targetHash(ctx.targets, d.nodeName ?? pod?.spec.nodeName ?? '');
          const target = byHash.get(toHash);
          const spec = pod && target && canPodInPlaceUpdate(pod, target, all);
          if (!pod || !spec) rest.push(d);
          else if (out.inPlaceUpdates.length < burst)
            out.inPlaceUpdates.push(planInPlaceUpdate(pod, spec, toHash, now));
        }
        toDelete = rest;
      }
      const synced = syncNodes(ctx, toDelete, nodesToCreate);
      out.creates.push(...synced.creates);
      out.deletes.push(...synced.deletes);
      out.podPatches.push(...synced.podPatches);
    }
  }

  // 7. cleanupHistory (sees every owned pod, terminating and terminal ones included).
  out.revisionDeletes.push(...cleanupHistory(ds, history.old, pods, keptRevisions(ctx)));
  return out;
}

/** The stable revision of a canary is kept even when no pod runs it (its pods are built from it). */
function keptRevisions(ctx: SyncContext): ReadonlySet<string> | undefined {
  const c = ctx.targets.canary;
  return c ? new Set([c.stableHash]) : undefined;
}
