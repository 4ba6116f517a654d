// Prometheus metrics with the names client-go and controller-runtime export, so dashboards and
// alerts written for kruise-manager (or any controller-runtime manager) work unchanged.
// Histograms, not summaries, so they aggregate across replicas.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestObservation } from '../../src/k8s/client.ts';
import { setWorkQueueMetricsProvider, type InProgressSource } from '../../src/k8s/workqueue.ts';
import { setReflectorMetricsProvider } from '../../src/k8s/reflector.ts';
import { setLeaderElectionMetricsProvider } from '../../src/k8s/leaderelection.ts';

/** The one registry the process serves on /metrics. */
export const registry = new Registry();

let processMetrics = false;
/** Adds process_* and nodejs_* metrics (idempotent). */
export function enableProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: registry });
}

// client-go workqueue buckets: ExponentialBuckets(10e-9, 10, 12).
const workqueueBuckets = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

export const workqueueDepth = new Gauge({
  name: 'workqueue_depth',
  help: 'Current depth of workqueue',
  labelNames: ['name'],
  registers: [registry],
});
export const workqueueAdds = new Counter({
  name: 'workqueue_adds_total',
  help: 'Total number of adds handled by workqueue',
  labelNames: ['name'],
  registers: [registry],
});
export const workqueueQueueDuration = new Histogram({
  name: 'workqueue_queue_duration_seconds',
  help: 'How long in seconds an item stays in workqueue before being requested',
  labelNames: ['name'],
  buckets: workqueueBuckets,
  registers: [registry],
});
export const workqueueWorkDuration = new Histogram({
  name: 'workqueue_work_duration_seconds',
  help: 'How long in seconds processing an item from workqueue takes',
  labelNames: ['name'],
  buckets: workqueueBuckets,
  registers: [registry],
});
export const workqueueRetries = new Counter({
  name: 'workqueue_retries_total',
  help: 'Total number of retries handled by workqueue',
  labelNames: ['name'],
  registers: [registry],
});

/** Named queues, so the two gauges below can be computed when Prometheus scrapes. */
const inProgressSources = new Set<InProgressSource>();

export const workqueueUnfinishedWork = new Gauge({
  name: 'workqueue_unfinished_work_seconds',
  help:
    "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
    'Large values indicate stuck threads.',
  labelNames: ['name'],
  registers: [registry],
  collect() {
    this.reset(); // queues that shut down disappear instead of reporting their last value
    for (const s of inProgressSources) this.set({ name: s.name }, s.inProgress().unfinishedSeconds);
  },
});
export const workqueueLongestRunning = new Gauge({
  name: 'workqueue_longest_running_processor_seconds',
  help: 'How many seconds has the longest running processor for workqueue been running.',
  labelNames: ['name'],
  registers: [registry],
  collect() {
    this.reset();
    for (const s of inProgressSources) this.set({ name: s.name }, s.inProgress().longestSeconds);
  },
});

// The queues of src/k8s/workqueue.ts report here, as controller-runtime's pkg/metrics/workqueue.go sets client-go's
// workqueue provider in its init(): every process that serves this registry imports this module.
setWorkQueueMetricsProvider({
  add: (name) => workqueueAdds.inc({ name }),
  depth: (name, depth) => workqueueDepth.set({ name }, depth),
  queueDuration: (name, seconds) => workqueueQueueDuration.observe({ name }, seconds),
  workDuration: (name, seconds) => workqueueWorkDuration.observe({ name }, seconds),
  retry: (name) => workqueueRetries.inc({ name }),
  inProgress(source) {
    inProgressSources.add(source);
    return () => inProgressSources.delete(source);
  },
});

export const reconcileTotal = new Counter({
  name: 'controller_runtime_reconcile_total',
  help: 'Total number of reconciliations per controller',
  labelNames: ['controller', 'result'],
  registers: [registry],
});
export const reconcileErrors = new Counter({
  name: 'controller_runtime_reconcile_errors_total',
  help: 'Total number of reconciliation errors per controller',
  labelNames: ['controller'],
  registers: [registry],
});
export const reconcileTime = new Histogram({
  name: 'controller_runtime_reconcile_time_seconds',
  help: 'Length of time per reconciliation per controller',
  labelNames: ['controller'],
  // controller-runtime's buckets.
  buckets: [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75,
    2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
  ],
  registers: [registry],
});
export const activeWorkers = new Gauge({
  name: 'controller_runtime_active_workers',
  help: 'Number of currently used workers per controller',
  labelNames: ['controller'],
  registers: [registry],
});
export const maxConcurrentReconciles = new Gauge({
  name: 'controller_runtime_max_concurrent_reconciles',
  help: 'Maximum number of concurrent reconciles per controller',
  labelNames: ['controller'],
  registers: [registry],
});

/** Objects the storage migration (controller/storage-migration.ts) could not rewrite, by the last run's count. */
export const storageMigrationSkipped = new Counter({
  name: 'advanced_daemonset_storage_migration_skipped_total',
  help: 'DaemonSets the storage migration could not rewrite in the storage version (each attempt counted)',
  registers: [registry],
});

export const leaderElectionMasterStatus = new Gauge({
  name: 'leader_election_master_status',
  help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.',
  labelNames: ['name'],
  registers: [registry],
});
// The electors of src/k8s/leaderelection.ts report here, as controller-runtime's pkg/metrics/leaderelection.go sets
// client-go's leaderelection provider in its init().
setLeaderElectionMetricsProvider({
  on: (name) => leaderElectionMasterStatus.set({ name }, 1),
  off: (name) => leaderElectionMasterStatus.set({ name }, 0),
});

export const restClientRequests = new Counter({
  name: 'rest_client_requests_total',
  help: 'Number of HTTP requests, partitioned by status code, method, and host.',
  labelNames: ['code', 'method', 'host'],
  registers: [registry],
});
export const restClientRequestDuration = new Histogram({
  name: 'rest_client_request_duration_seconds',
  help: 'Request latency in seconds. Broken down by verb, and host.',
  labelNames: ['verb', 'host'],
  buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0],
  registers: [registry],
});

/** Pass as KubeClientOptions.onRequest. Watches count as requests but not in the latency histogram. */
export function observeRestClientRequest(o: RequestObservation): void {
  restClientRequests.inc({ code: o.code, method: o.method, host: o.host });
  if (o.verb !== 'watch') restClientRequestDuration.observe({ verb: o.verb, host: o.host }, o.durationSeconds);
}

// Reflector health: client-go dropped its reflector metrics, but the ecosystem notes (silent
// watches, relist storms) make these the first thing to look at when a cache goes stale.
export const reflectorLists = new Counter({
  name: 'reflector_lists_total',
  help: 'Total number of list operations (initial and relists) per informer',
  labelNames: ['name'],
  registers: [registry],
});
export const reflectorWatches = new Counter({
  name: 'reflector_watches_total',
  help: 'Total number of watch requests per informer',
  labelNames: ['name'],
  registers: [registry],
});
export const reflectorWatchRestarts = new Counter({
  name: 'reflector_watch_restarts_total',
  help: 'Watches that ended other than by the server-side timeout, by reason',
  labelNames: ['name', 'reason'],
  registers: [registry],
});
export const reflectorLastEventTimestamp = new Gauge({
  name: 'reflector_last_event_timestamp_seconds',
  help: 'Unix time of the last watch event (including bookmarks) per informer',
  labelNames: ['name'],
  registers: [registry],
});

// The reflectors of src/k8s/reflector.ts report here (as the work queues above).
setReflectorMetricsProvider({
  list: (name) => reflectorLists.inc({ name }),
  watch: (name) => reflectorWatches.inc({ name }),
  watchRestart: (name, reason) => reflectorWatchRestarts.inc({ name, reason }),
  event: (name, unixSeconds) => reflectorLastEventTimestamp.set({ name }, unixSeconds),
});
