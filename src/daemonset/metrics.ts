// What the per-DaemonSet rollout metrics (kruise_daemonset_*, controller/daemonset/metrics.ts) report, decided from
// the DaemonSet and the planner's view of it. Names and encodings follow kube-state-metrics' daemonset and
// deployment metrics (https://github.com/kubernetes/kube-state-metrics/blob/main/docs/metrics/workload/daemonset-metrics.md):
// status counters as they are, spec values resolved to numbers of nodes, conditions as one 0/1 series per status.
// README.md "Metrics and alerts" documents every series.
import type { DaemonSet, DaemonSetStatus } from '../api/types.ts';
import {
  isDaemonSetPaused,
  isRolloutFrozen,
  isRollingUpdate,
  partitionCount,
  rollingUpdateBudget,
} from './strategy.ts';

/** The value of kruise_daemonset_status_canary_phase's `phase` label while status.canary.phase is not set. */
export const NO_CANARY_PHASE = 'none';

/** kube-state-metrics' condition statuses (kube_deployment_status_condition): one series each, the current one 1. */
export const CONDITION_STATUSES = ['true', 'false', 'unknown'] as const;
export type ConditionStatusLabel = (typeof CONDITION_STATUSES)[number];

/** The gauge values of one DaemonSet. */
export interface DaemonSetGaugeValues {
  desiredNumberScheduled: number;
  currentNumberScheduled: number;
  numberReady: number;
  numberAvailable: number;
  numberUnavailable: number;
  updatedNumberScheduled: number;
  numberMisscheduled: number;
  generation: number;
  observedGeneration: number;
  /** rollingUpdate.partition as a number of nodes (a percent of desired, rounded down); 0 when absent or OnDelete. */
  partition: number;
  /** maxUnavailable as a number of nodes, as the rolling update applies it; undefined for OnDelete or a bad value. */
  maxUnavailable?: number;
  /** rollingUpdate.paused (RollingUpdate only), 1 or 0. */
  paused: number;
  /** The rollout frozen by annotation (isRolloutFrozen), 1 or 0. */
  frozen: number;
  /** Each status condition present, by type: which of CONDITION_STATUSES it has. */
  conditions: { type: string; status: ConditionStatusLabel }[];
  /** status.canary.phase when the object has one, else NO_CANARY_PHASE. */
  canaryPhase: string;
  /** 1 while the rollout of the update revision is not complete (rolloutComplete) nor held at its partition, else 0. */
  rolloutInProgress: number;
}

/** What the planner saw: the status it computed (or the stored one) and the update revision. */
export interface PlannerView {
  /** The status the sync computed; undefined when the sync stopped before computing one (the stored one is used). */
  status?: DaemonSetStatus;
  /** The update revision (controller-revision-hash) the sync computed; '' when it did not (the stored one is used). */
  hash: string;
}

/**
 * Complete: the controller observed the current generation and every node that should run the daemon runs an
 * available pod of the update revision. The test of `kubectl rollout status` and of the RolloutComplete condition
 * (status.ts), on the counters alone so a status without conditions reads the same.
 */
export function rolloutComplete(ds: DaemonSet, status: DaemonSetStatus | undefined): boolean {
  const desired = status?.desiredNumberScheduled ?? 0;
  return (
    (status?.observedGeneration ?? 0) >= (ds.metadata.generation ?? 0) &&
    (status?.updatedNumberScheduled ?? 0) >= desired &&
    (status?.numberAvailable ?? 0) >= desired
  );
}

/**
 * The step a partition or rollingUpdate.selector allows is done: the generation observed and Progressing's reason
 * PartitionReached (status.ts; True now, False as managers before the Deployment convention wrote it). `kubectl ads status` calls that complete, so the gauge does too; the
 * rollout's duration goes on (rolloutComplete), since the rollout as a whole is not over.
 */
export function partitionReached(ds: DaemonSet, status: DaemonSetStatus | undefined): boolean {
  const p = status?.conditions?.find((c) => c.type === 'Progressing');
  return (status?.observedGeneration ?? 0) >= (ds.metadata.generation ?? 0) && p?.reason === 'PartitionReached';
}

/** The status and update revision the metrics report: the planner's when it computed them, else the stored ones. */
export function reportedStatus(ds: DaemonSet, view: PlannerView): { status?: DaemonSetStatus; revision: string } {
  const status = view.status ?? ds.status;
  return { status, revision: view.hash || status?.daemonSetHash || '' };
}

/** status.canary.phase (the canary, src/daemonset/canary/); NO_CANARY_PHASE without one (or an empty phase). */
function canaryPhase(status: DaemonSetStatus | undefined): string {
  const phase: unknown = status?.canary?.phase;
  return typeof phase === 'string' && phase !== '' ? phase : NO_CANARY_PHASE;
}

function conditionStatus(s: string): ConditionStatusLabel {
  if (s === 'True') return 'true';
  if (s === 'False') return 'false';
  return 'unknown';
}

export function daemonSetGauges(ds: DaemonSet, view: PlannerView): DaemonSetGaugeValues {
  const { status } = reportedStatus(ds, view);
  const desired = status?.desiredNumberScheduled ?? 0;
  let maxUnavailable: number | undefined;
  if (isRollingUpdate(ds)) {
    try {
      maxUnavailable = rollingUpdateBudget(ds, desired).maxUnavailable;
    } catch {
      maxUnavailable = undefined; // a bad percent: the sync reports it; no number to show
    }
  }
  return {
    desiredNumberScheduled: desired,
    currentNumberScheduled: status?.currentNumberScheduled ?? 0,
    numberReady: status?.numberReady ?? 0,
    numberAvailable: status?.numberAvailable ?? 0,
    numberUnavailable: status?.numberUnavailable ?? 0,
    updatedNumberScheduled: status?.updatedNumberScheduled ?? 0,
    numberMisscheduled: status?.numberMisscheduled ?? 0,
    generation: ds.metadata.generation ?? 0,
    observedGeneration: status?.observedGeneration ?? 0,
    partition: partitionCount(ds, desired),
    ...(maxUnavailable !== undefined ? { maxUnavailable } : {}),
    paused: isDaemonSetPaused(ds) ? 1 : 0,
    frozen: isRolloutFrozen(ds) ? 1 : 0,
    conditions: (status?.conditions ?? []).map((c) => ({ type: c.type, status: conditionStatus(c.status) })),
    canaryPhase: canaryPhase(status),
    rolloutInProgress: rolloutComplete(ds, status) || partitionReached(ds, status) ? 0 : 1,
  };
}

/**
 * When the current rollout started, as this process saw it (kept in controller memory, per DaemonSet). `startedAt`
 * is on the caller's clock (the shell passes the monotonic clock); undefined while no rollout runs.
 */
export interface RolloutClock {
  /** The update revision last seen. */
  revision: string;
  startedAt?: number;
}

/**
 * The rollout clock after one more observation. A rollout starts when the update revision changes (a new template,
 * or a rollback), or, for a DaemonSet this process has not seen before (it just started or just became the
 * leader), when it first sees it with the rollout not complete: then the true start is unknown and the first
 * observation stands for it, so after a restart or a leader change the duration counts from then. It ends when
 * the rollout is complete (rolloutComplete). Nodes added after a completed rollout start no rollout: their pods
 * count in rolloutInProgress, not in the duration. A revision change before completion starts over. An observation
 * without a revision (the sync stopped before computing it) changes nothing.
 */
export function nextRolloutClock(
  prev: RolloutClock | undefined,
  observed: { revision: string; complete: boolean },
  now: number,
): RolloutClock | undefined {
  if (observed.revision === '') return prev;
  if (observed.complete) return { revision: observed.revision };
  if (!prev || prev.revision !== observed.revision) return { revision: observed.revision, startedAt: now };
  return prev;
}

/** Seconds since the rollout started; 0 while none runs. */
export function rolloutDurationSeconds(clock: RolloutClock | undefined, now: number): number {
  return clock?.startedAt === undefined ? 0 : Math.max(0, now - clock.startedAt) / 1000;
}
