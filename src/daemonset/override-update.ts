// Per-node resources that changed under running pods (a node annotation edited, a DaemonSetSetting created, changed
// or deleted, a node relabelled; overrides.ts): the pods concerned, and only those, get what their node asks for now,
// without a rollout. In place through pods/resize where the change allows it (cpu and memory, same QoS class: the
// rules of resize.ts), free of the maxUnavailable budget while no container restarts; otherwise the pod is recreated
// within maxUnavailable, and manage gives the new pod its node's resources. partition, paused and the canary hold
// template changes only: a pod they keep on an old revision is resized there, never recreated (that would move it to
// the new revision). Under OnDelete, running pods are left alone, as for a template change; new pods get the
// resources. A frozen rollout touches nothing (plan.ts stops before this stage).
import type { ControllerRevision, Pod, PodTemplateSpec } from '../k8s/types.ts';
import type { SyncContext } from './context.ts';
import { revisionHashLabel } from './history.ts';
import { INVALID_RESOURCES_OVERRIDE_REASON, RESIZE_INFEASIBLE_REASON, RESIZE_NOT_POSSIBLE_REASON } from './events.ts';
import { inPlaceSpec, inPlaceStep, resizeRecreateReasons, templateOfRevision } from './inplace.ts';
import { factsAvailable, type NodeState } from './node-state.ts';
import {
  hasResourcesOverrideRecord,
  overridesAnnotationValue,
  overridesCurrent,
  podResourceOverrides,
  withResourceOverrides,
  type ResourceOverrides,
} from './overrides.ts';
import type { InPlaceUpdate, PlanEvent, PodDelete, PodPatch } from './plan-types.ts';
import { RESOURCES_OVERRIDE_ANNOTATION } from './constants.ts';
import { podRevisionHash } from './pods.ts';
import { calculateCounters } from './status.ts';
import { burstReplicas, isRollingUpdate, rollingUpdateBudget } from './strategy.ts';
import { targetHash } from './targets.ts';

export interface OverrideUpdates {
  /** Resizes in place and their finishing writes. */
  inPlaceUpdates: InPlaceUpdate[];
  /** Pods recreated for their node's resources (reason ResourcesOverride). */
  deletes: PodDelete[];
  /** The record alone, when the resources need no change (an override removed that equalled the template). */
  podPatches: PodPatch[];
  events: PlanEvent[];
  /** Pods that do not hold their node's resources yet (in flight, waiting for budget, or held). */
  pending: number;
  requeueAfterMs?: number;
}

const NONE: OverrideUpdates = { inPlaceUpdates: [], deletes: [], podPatches: [], events: [], pending: 0 };

/**
 * The writes that bring each pod to its node's resources. `taken`: pods the rolling update of this sync deletes or
 * updates already (their update carries the node's resources), `skipNodes`: nodes manage acts on, `plannedDeletes`:
 * how many pods this sync deletes already (they use the maxUnavailable budget first).
 */
export function overrideUpdates(
  ctx: SyncContext,
  revisions: readonly ControllerRevision[],
  taken: ReadonlySet<string>,
  skipNodes: ReadonlySet<string>,
  plannedDeletes: number,
): OverrideUpdates {
  const { ds } = ctx;
  // With a memo, whether any pod holds a record is counted as pods change, not looked up in every pod.
  const anyRecord = ctx.upkeep ? ctx.upkeep.resourcesRecord > 0 : ctx.pods.some(hasResourcesOverrideRecord);
  if (!isRollingUpdate(ds) || (ctx.resources.none && !anyRecord)) return NONE;
  const templates = new Map(revisions.map((r) => [revisionHashLabel(r), r]));
  const out: OverrideUpdates = { inPlaceUpdates: [], deletes: [], podPatches: [], events: [], pending: 0 };
  const budgeted: Budgeted[] = [];
  const burst = burstReplicas(ds, ctx.desired);
  for (const s of ctx.states) {
    if (!s.shouldRun || skipNodes.has(s.name)) continue;
    const pod = onlyPod(s);
    if (!pod || taken.has(pod.metadata.name ?? '')) continue;
    const wanted = ctx.resources.of(s.name);
    if (overridesCurrent(pod, wanted)) continue;
    out.pending++;
    const hash = podRevisionHash(pod);
    const revision = templates.get(hash);
    const template = revision ? templateOfRevision(revision) : hash === ctx.hash ? ds.spec.template : undefined;
    if (!template) continue;
    out.events.push(...invalidAnnotationEvents(ctx, s.name));
    const step = podStep(ctx, pod, template, wanted, s.name);
    const available = factsAvailable(s.first!, ds.spec.minReadySeconds ?? 0, ctx.now);
    if (step.kind === 'patch') out.podPatches.push(step.patch);
    else if (step.kind === 'update' && out.inPlaceUpdates.length < burst) out.inPlaceUpdates.push(step.update);
    else if (step.kind === 'restart') budgeted.push({ available, update: step.update });
    // Recreating a pod the rollout holds on an old revision would move it to the new one.
    else if (step.kind === 'recreate' && hash === targetHash(ctx.targets, s.name)) {
      const d: PodDelete = {
        podName: pod.metadata.name ?? '',
        nodeName: s.name,
        uid: pod.metadata.uid,
        reason: 'ResourcesOverride',
      };
      budgeted.push({ available, delete: d, event: step.event });
    }
  }
  const chosen = withinBudget(ctx, budgeted, plannedDeletes);
  for (const b of chosen) {
    // Said when the pod is recreated, not at every sync it waits for the budget.
    if (b.event) out.events.push(b.event);
    if (b.delete) out.deletes.push(b.delete);
    else if (b.update && out.inPlaceUpdates.length < burst) out.inPlaceUpdates.push(b.update);
  }
  // A pod left waiting for the budget is woken by the event of the pod that frees it; this is the fallback.
  if (chosen.length < budgeted.length) out.requeueAfterMs = PENDING_RECHECK_MS;
  return out;
}

/** A write that uses the maxUnavailable budget: a recreate, or a resize that restarts a container. */
interface Budgeted {
  available: boolean;
  delete?: PodDelete;
  update?: InPlaceUpdate;
  /** Why the pod is recreated rather than resized (ResizeNotPossible, ResizeInfeasible). */
  event?: PlanEvent;
}

/** How soon a sync with pods still waiting for their resources looks again, when no event wakes it first. */
const PENDING_RECHECK_MS = 10_000;

/** The node's one pod, when it has exactly one that is not terminating nor PreparingDelete (else the rollout acts). */
function onlyPod(s: NodeState): Pod | undefined {
  const live = s.facts.filter((f) => !f.terminating);
  return live.length === 1 && !live[0]!.preDeleting ? live[0]!.pod : undefined;
}

type PodStep =
  | { kind: 'patch'; patch: PodPatch }
  /** A resize (or its finish) that keeps the pod Ready: free of the budget. */
  | { kind: 'update'; update: InPlaceUpdate }
  /** A resize that restarts a container: within the budget. */
  | { kind: 'restart'; update: InPlaceUpdate }
  | { kind: 'recreate'; event: PlanEvent }
  | { kind: 'wait' };

/**
 * The next write for one pod: its revision's template with the resources it was given (its record) against the same
 * template with what its node asks for now, through the in-place steps of inplace.ts (resize, wait, finish).
 */
function podStep(
  ctx: SyncContext,
  pod: Pod,
  template: PodTemplateSpec,
  wanted: ResourceOverrides | undefined,
  nodeName: string,
): PodStep {
  const recorded = podResourceOverrides(pod);
  const from = withResourceOverrides(template, recorded === 'invalid' ? undefined : recorded);
  const to = withResourceOverrides(template, wanted);
  const resize = ctx.opts.inPlaceResize === true;
  const spec = inPlaceSpec(from, to, resize);
  const podName = pod.metadata.name ?? '';
  if (!spec) {
    const reasons = resize ? resizeRecreateReasons(from, to) : [];
    const why = reasons.length > 0 ? reasons.join('; ') : 'in-place resize is off';
    return {
      kind: 'recreate',
      event: {
        type: 'Warning',
        reason: RESIZE_NOT_POSSIBLE_REASON,
        message: `pod ${podName} on node ${nodeName} is recreated for its node's resources: ${why}`,
      },
    };
  }
  if (spec.resize.length === 0) {
    const value = wanted ? overridesAnnotationValue(wanted) : null;
    return {
      kind: 'patch',
      patch: {
        podName,
        patchType: 'strategic',
        patch: { metadata: { annotations: { [RESOURCES_OVERRIDE_ANNOTATION]: value } } },
        reason: 'ResourcesOverride',
      },
    };
  }
  const step = inPlaceStep(pod, spec, podRevisionHash(pod), ctx.now);
  if (step.kind === 'wait') return { kind: 'wait' };
  if (step.kind === 'infeasible') {
    return {
      kind: 'recreate',
      event: {
        type: 'Warning',
        reason: RESIZE_INFEASIBLE_REASON,
        message: `pod ${podName} on node ${nodeName} is recreated for its node's resources: ${step.message}`,
      },
    };
  }
  // A resize that restarts a container turns the pod unready: it goes by the budget, as a recreate does.
  return { kind: step.free ? 'update' : 'restart', update: step.update() };
}

/**
 * The recreates maxUnavailable allows: pods that are not available go regardless (as upstream replaces an unavailable
 * old pod, PR #123233), available ones while the DaemonSet's unavailable pods, with this sync's deletes, stay under it.
 */
function withinBudget(ctx: SyncContext, budgeted: readonly Budgeted[], plannedDeletes: number): Budgeted[] {
  if (budgeted.length === 0) return [];
  let maxUnavailable: number;
  try {
    maxUnavailable = rollingUpdateBudget(ctx.ds, ctx.desired).maxUnavailable;
  } catch {
    return [];
  }
  const unavailable = calculateCounters(ctx).counters.numberUnavailable + plannedDeletes;
  let room = Math.max(0, maxUnavailable - unavailable);
  const out: Budgeted[] = [];
  for (const b of budgeted) {
    if (!b.available) out.push(b);
    else if (room > 0) {
      out.push(b);
      room--;
    }
  }
  return out;
}

/** The node's resources annotations for the DaemonSet that are ignored, as Warnings (when a pod there changes). */
export function invalidAnnotationEvents(ctx: SyncContext, nodeName: string): PlanEvent[] {
  return ctx.resources.errorsOf(nodeName).map((e) => ({
    type: 'Warning',
    reason: INVALID_RESOURCES_OVERRIDE_REASON,
    message: `node ${e.node}: annotation ${e.key} is ignored: ${e.message} (want a JSON ResourceRequirements)`,
  }));
}
