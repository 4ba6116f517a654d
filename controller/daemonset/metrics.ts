// Per-DaemonSet rollout metrics on the process registry (runtime/metrics.ts), labelled `namespace` and `daemonset`.
// Prefix kruise_daemonset_: kube-state-metrics names a workload's series kube_<kind>_* (kube_daemonset_status_*),
// and these describe the Kruise kind (apps.kruise.io DaemonSet) rather than this implementation, so they keep their
// meaning whichever controller reconciles it, and never collide with kube-state-metrics' native DaemonSet series.
// The values are decided by src/daemonset/metrics.ts; this file only sets, counts and removes series. Only the
// leader reconciles, so only the leader reports gauges (a follower reports none; a former leader drops them).
// README.md "Metrics and alerts" lists them.
import { Counter, Gauge, Histogram } from 'prom-client';
import type { DaemonSet } from '../../src/api/types.ts';
import {
  CONDITION_STATUSES,
  daemonSetGauges,
  nextRolloutClock,
  reportedStatus,
  rolloutComplete,
  rolloutDurationSeconds,
  type DaemonSetGaugeValues,
  type PlannerView,
  type RolloutClock,
} from '../../src/daemonset/metrics.ts';
import { objectKey } from '../../src/k8s/types.ts';
import { monotonic, type Clock } from '../../src/k8s/clock.ts';
import { registry } from '../runtime/metrics.ts';

export const METRIC_PREFIX = 'kruise_daemonset_';
const DS_LABELS = ['namespace', 'daemonset'] as const;
type DsLabels = Record<(typeof DS_LABELS)[number], string>;

const gauge = (name: string, help: string) =>
  new Gauge({ name: METRIC_PREFIX + name, help, labelNames: DS_LABELS, registers: [registry] });

/** One gauge per plain number of DaemonSetGaugeValues. */
const numberGauges: [Gauge<'namespace' | 'daemonset'>, (v: DaemonSetGaugeValues) => number | undefined][] = [
  [
    gauge('status_desired_number_scheduled', 'The number of nodes that should be running the daemon pod.'),
    (v) => v.desiredNumberScheduled,
  ],
  [
    gauge(
      'status_current_number_scheduled',
      'The number of nodes running at least one daemon pod and are supposed to.',
    ),
    (v) => v.currentNumberScheduled,
  ],
  [
    gauge(
      'status_number_ready',
      'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.',
    ),
    (v) => v.numberReady,
  ],
  [
    gauge(
      'status_number_available',
      'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.',
    ),
    (v) => v.numberAvailable,
  ],
  [
    gauge(
      'status_number_unavailable',
      'The number of nodes that should be running the daemon pod and have none of the daemon pod running and available.',
    ),
    (v) => v.numberUnavailable,
  ],
  [
    gauge('status_updated_number_scheduled', 'The total number of nodes that are running the updated daemon pod.'),
    (v) => v.updatedNumberScheduled,
  ],
  [
    gauge('status_number_misscheduled', 'The number of nodes running a daemon pod but are not supposed to.'),
    (v) => v.numberMisscheduled,
  ],
  [
    gauge('metadata_generation', 'Sequence number representing a specific generation of the desired state.'),
    (v) => v.generation,
  ],
  [
    gauge('status_observed_generation', 'The most recent generation observed by the daemon set controller.'),
    (v) => v.observedGeneration,
  ],
  [
    gauge(
      'spec_strategy_rollingupdate_partition',
      'rollingUpdate.partition resolved to a number of nodes kept on the old revision (0 when unset or OnDelete).',
    ),
    (v) => v.partition,
  ],
  [
    gauge(
      'spec_strategy_rollingupdate_max_unavailable',
      'rollingUpdate.maxUnavailable resolved to a number of nodes, as the rolling update applies it (RollingUpdate only).',
    ),
    (v) => v.maxUnavailable,
  ],
  [gauge('spec_strategy_rollingupdate_paused', 'Whether rollingUpdate.paused is set (1) or not (0).'), (v) => v.paused],
  [
    gauge(
      'rollout_frozen',
      'Whether the rollout is frozen by annotation advanced-daemonset.io/rollout-frozen (1: no pod is created, deleted or updated) or not (0).',
    ),
    (v) => v.frozen,
  ],
  [
    gauge(
      'rollout_in_progress',
      '1 while the rollout of the update revision is not complete (generation not observed, or nodes not updated or not available), else 0.',
    ),
    (v) => v.rolloutInProgress,
  ],
];

const conditionGauge = new Gauge({
  name: METRIC_PREFIX + 'status_condition',
  help: 'The current status conditions of a DaemonSet: 1 for the status the condition has, 0 for the others.',
  labelNames: [...DS_LABELS, 'condition', 'status'],
  registers: [registry],
});

const canaryPhaseGauge = new Gauge({
  name: METRIC_PREFIX + 'status_canary_phase',
  help: 'The canary phase (status.canary.phase), one series with value 1; phase "none" when the DaemonSet has no canary.',
  labelNames: [...DS_LABELS, 'phase'],
  registers: [registry],
});

/** The controllers whose rollout clocks the duration gauge reads at scrape time, so a stalled rollout still ages. */
const reporters = new Set<DaemonSetMetrics>();

const durationGauge = new Gauge({
  name: METRIC_PREFIX + 'rollout_duration_seconds',
  help:
    'Seconds since the rollout of the update revision started (the revision changed, or this process first saw it ' +
    'incomplete); 0 when no rollout runs. Kept in the leader memory: restarts from 0 after a restart or leader change.',
  labelNames: DS_LABELS,
  registers: [registry],
  collect() {
    this.reset();
    for (const r of reporters) for (const [labels, seconds] of r.rolloutDurations()) this.set(labels, seconds);
  },
});

export type PodOperation = 'create' | 'delete' | 'inplace_update' | 'resize';
export type PodOperationResult = 'success' | 'error';
const RESULTS: readonly PodOperationResult[] = ['success', 'error'];

const counter = (name: string, help: string) =>
  new Counter({ name: METRIC_PREFIX + name, help, labelNames: [...DS_LABELS, 'result'], registers: [registry] });
const podOperationCounters: Record<PodOperation, Counter<'namespace' | 'daemonset' | 'result'>> = {
  create: counter('pod_creates_total', 'Daemon pods the controller created, by result (success or error).'),
  delete: counter(
    'pod_deletes_total',
    'Daemon pods the controller deleted, by result (success, including a pod already gone, or error).',
  ),
  inplace_update: counter(
    'pod_inplace_updates_total',
    'Daemon pods the controller updated in place, by result (success or error: the update was refused).',
  ),
  resize: counter(
    'pod_resizes_total',
    'Daemon pods the controller resized in place through pods/resize, by result (success or error: refused).',
  ),
};

// spec.nodeReadiness (node-readiness.ts): labelled by the taint key, shared by every DaemonSet that names it.
/** Where the tainted-nodes gauge reads its counts at scrape time (the node-readiness controller of this process). */
let taintedNodesSource: (() => Map<string, number>) | undefined;
new Gauge({
  name: METRIC_PREFIX + 'node_readiness_tainted_nodes',
  help: 'Nodes that carry a readiness taint some DaemonSet names (spec.nodeReadiness), by taint key: they wait for their agents.',
  labelNames: ['taint'],
  registers: [registry],
  collect() {
    this.reset();
    for (const [taint, n] of taintedNodesSource?.() ?? []) this.set({ taint }, n);
  },
});
const taintRemovedSeconds = new Histogram({
  name: METRIC_PREFIX + 'node_readiness_seconds',
  help: "Seconds from a node's creation to the removal of its readiness taint (spec.nodeReadiness), by taint key.",
  labelNames: ['taint'],
  buckets: [5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600],
  registers: [registry],
});

/** What was exported for one DaemonSet, so each of its series can be removed again. */
interface Exported {
  labels: DsLabels;
  conditions: Set<string>;
  canaryPhase?: string;
  clock?: RolloutClock;
}

const labelsOf = (ds: DaemonSet): DsLabels => ({
  namespace: ds.metadata.namespace ?? '',
  daemonset: ds.metadata.name ?? '',
});

/** The controller's view of the per-DaemonSet metrics (one per controller; the series live on the registry). */
export class DaemonSetMetrics {
  private readonly exported = new Map<string, Exported>();
  private readonly counted = new Set<string>();

  constructor(private readonly now: Clock = monotonic) {}

  /** The counts of nodes per readiness taint, read when /metrics is scraped. */
  nodeReadinessTaintedNodes(source: () => Map<string, number>): void {
    taintedNodesSource = source;
  }

  /** A readiness taint removed from a node `seconds` after the node was created. */
  nodeReadinessTaintRemoved(taint: string, seconds: number): void {
    taintRemovedSeconds.observe({ taint }, seconds);
  }

  /** Sets the gauges of `ds` from one sync's plan, and advances its rollout clock. */
  observe(ds: DaemonSet, view: PlannerView): void {
    const key = objectKey(ds);
    const labels = labelsOf(ds);
    const v = daemonSetGauges(ds, view);
    for (const [g, value] of numberGauges) {
      const n = value(v);
      if (n === undefined) g.remove(labels);
      else g.set(labels, n);
    }
    const prev = this.exported.get(key);
    const conditions = new Set<string>();
    for (const c of v.conditions) {
      for (const s of CONDITION_STATUSES)
        conditionGauge.set({ ...labels, condition: c.type, status: s }, +(s === c.status));
      conditions.add(c.type);
    }
    for (const type of prev?.conditions ?? []) if (!conditions.has(type)) this.removeCondition(labels, type);
    if (prev?.canaryPhase !== undefined && prev.canaryPhase !== v.canaryPhase) {
      canaryPhaseGauge.remove({ ...labels, phase: prev.canaryPhase });
    }
    canaryPhaseGauge.set({ ...labels, phase: v.canaryPhase }, 1);
    const { status, revision } = reportedStatus(ds, view);
    const clock = nextRolloutClock(prev?.clock, { revision, complete: rolloutComplete(ds, status) }, this.now());
    this.exported.set(key, { labels, conditions, canaryPhase: v.canaryPhase, ...(clock ? { clock } : {}) });
    reporters.add(this);
    this.ensureCounters(key, labels);
  }

  /** Each reported DaemonSet's labels and seconds since its rollout started (0 when none runs). */
  rolloutDurations(): [DsLabels, number][] {
    const now = this.now();
    return [...this.exported.values()].map((e) => [e.labels, rolloutDurationSeconds(e.clock, now)]);
  }

  /** Counts one pod create, delete or in-place update the executor made. */
  podOperation(ds: DaemonSet, operation: PodOperation, result: PodOperationResult): void {
    const labels = labelsOf(ds);
    this.ensureCounters(objectKey(ds), labels);
    podOperationCounters[operation].inc({ ...labels, result });
  }

  /** Removes every series of a DaemonSet that is gone (counters too) and forgets its rollout clock. */
  forget(key: string): void {
    const [namespace = '', daemonset = ''] = key.split('/');
    const labels = this.exported.get(key)?.labels ?? { namespace, daemonset };
    this.removeGauges(key);
    for (const c of Object.values(podOperationCounters)) for (const result of RESULTS) c.remove({ ...labels, result });
    this.counted.delete(key);
  }

  /**
   * Drops every gauge (and the rollout clocks) when this process stops leading: a follower reports no DaemonSet,
   * and a new leadership starts its clocks afresh. Counters stay (they only grow; removed with the DaemonSet).
   */
  resetGauges(): void {
    for (const key of [...this.exported.keys()]) this.removeGauges(key);
  }

  private removeGauges(key: string): void {
    const e = this.exported.get(key);
    if (!e) return;
    for (const [g] of numberGauges) g.remove(e.labels);
    for (const type of e.conditions) this.removeCondition(e.labels, type);
    if (e.canaryPhase !== undefined) canaryPhaseGauge.remove({ ...e.labels, phase: e.canaryPhase });
    durationGauge.remove(e.labels);
    this.exported.delete(key);
    if (this.exported.size === 0) reporters.delete(this);
  }

  private removeCondition(labels: DsLabels, type: string): void {
    for (const s of CONDITION_STATUSES) conditionGauge.remove({ ...labels, condition: type, status: s });
  }

  /** Both results start at 0, so rate() and `== 0` work before the first error. */
  private ensureCounters(key: string, labels: DsLabels): void {
    if (this.counted.has(key)) return;
    this.counted.add(key);
    for (const c of Object.values(podOperationCounters)) for (const result of RESULTS) c.inc({ ...labels, result }, 0);
  }
}
