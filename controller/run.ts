// Runs the DaemonSet controller: informers on every replica (a new leader starts warm), workers
// only on the Lease holder. Shared by the `controller` and `manager` commands.
import type { ServedVersion } from '../src/api/constants.ts';
import { KubeClient, type RequestScope } from '../src/k8s/client.ts';
import { currentNamespace, loadKubeConfig } from '../src/k8s/kubeconfig.ts';
import { DaemonSetController } from './daemonset/controller.ts';
import type { ImagePreDownloadMode } from '../src/daemonset/plan-types.ts';
import type { KruisePodReadyGateMode } from '../src/daemonset/pods.ts';
import { EventRecorder } from '../src/k8s/events.ts';
import { LeaderElector } from '../src/k8s/leaderelection.ts';
import type { Logger } from '../src/k8s/log.ts';
import { observeRestClientRequest } from './runtime/metrics.ts';
import { runStorageMigration } from './storage-migration.ts';

export interface ControllerRunOptions {
  kubeconfig?: string;
  workers: number;
  qps: number;
  burst: number;
  leaderElect: boolean;
  leaderElectionNamespace?: string;
  leaderElectionId: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** --image-predownload (default pods). */
  imagePreDownload?: ImagePreDownloadMode;
  /** --kruise-pod-ready-gate (default always). */
  kruisePodReadyGate?: KruisePodReadyGateMode;
  /** The version DaemonSets are read and written in (controller/daemonset/api-version.ts). */
  daemonSetApiVersion?: ServedVersion;
  /** InPlaceWorkloadVerticalScaling: resize pods in place where the cluster serves pods/resize. */
  inPlaceResize?: boolean;
  logger: Logger;
}

export interface RunningController {
  /** Caches synced (readiness of a follower too). */
  synced(): boolean;
  /**
   * Resolves when the controller has stopped: after `signal` aborts and work has ended, or, at once, when leadership
   * is lost (in-flight work is not waited for: its requests are aborted and its writes refused; exit then).
   */
  done: Promise<{ lostLeadership: boolean }>;
  client: KubeClient;
}

export function startController(opts: ControllerRunOptions, signal: AbortSignal): RunningController {
  const kc = loadKubeConfig(opts.kubeconfig);
  const client = KubeClient.fromKubeConfig(kc, {
    qps: opts.qps,
    burst: opts.burst,
    onRequest: observeRestClientRequest,
  });
  const log = opts.logger;
  // Leader election gets a client of its own, as controller-runtime's manager builds one for its resource lock: a
  // renewal must never wait behind a burst of pod writes in the shared client-side rate limiter, or the leader
  // loses its Lease in the middle of the rollout it is driving. It makes one request every retryPeriod.
  const leaseClient = opts.leaderElect
    ? KubeClient.fromKubeConfig(kc, { qps: 5, burst: 10, onRequest: observeRestClientRequest })
    : undefined;
  const elector = leaseClient
    ? new LeaderElector({
        client: leaseClient,
        namespace: opts.leaderElectionNamespace ?? currentNamespace(kc),
        name: opts.leaderElectionId,
        leaseDurationMs: opts.leaseDurationMs,
        renewDeadlineMs: opts.renewDeadlineMs,
        retryPeriodMs: opts.retryPeriodMs,
        logger: log,
        callbacks: {
          onStartedLeading: (leaderSignal) => lead(leaderSignal),
          onNewLeader: (identity) => log.info({ leader: identity }, 'new leader observed'),
        },
      })
    : undefined;
  /** Every write of the controller (events included) passes this fence right before it is sent. */
  const writeFence: RequestScope = elector
    ? {
        beforeWrite: () => elector.fence(),
        // What no client can exclude (docs/guarantees.md), said where an operator looks for it.
        onLateWrite: ({ verb, path, pausedMs }) =>
          log.error(
            { write: `${verb} ${path}`, pausedMs: Math.round(pausedMs) },
            'a write may have reached the apiserver after the lease fence closed: the process was paused while sending it',
          ),
      }
    : {};
  const recorder = new EventRecorder({ client: client.withScope(writeFence), logger: log });
  const controller = new DaemonSetController({
    client,
    recorder,
    logger: log,
    workers: opts.workers,
    imagePreDownload: opts.imagePreDownload,
    kruisePodReadyGate: opts.kruisePodReadyGate,
    apiVersion: opts.daemonSetApiVersion,
    inPlaceResize: opts.inPlaceResize ?? false,
    // Untrimmed caches only for the benchmark's before/after (bench/memory.ts); not a product setting.
    trimCache: process.env.ADS_BENCH_UNTRIMMED_CACHE !== '1',
  });
  let synced = false;

  const informers = controller.startInformers(signal);
  const cacheSync = controller.waitForCacheSync(signal).then((ok) => {
    synced = ok;
    if (ok) log.info('caches synced');
    return ok;
  });

  const lead = async (leaderSignal: AbortSignal) => {
    // While leading, beside the workers (it needs no cache): DaemonSets stored in another version are rewritten in
    // the storage version, then the CRD's status.storedVersions says only that one (storage-migration.ts).
    runStorageMigration({
      client: client.withScope({ ...writeFence, signal: leaderSignal }),
      logger: log,
      signal: leaderSignal,
      recorder,
    }).catch((err: unknown) => {
      if (!leaderSignal.aborted) log.error({ err }, 'storage migration stopped');
    });
    if (!(await cacheSync)) return;
    await controller.resolveInPlaceResize(leaderSignal);
    log.info({ workers: opts.workers }, 'starting workers');
    await controller.runWorkers(leaderSignal, writeFence);
  };

  const done = (async () => {
    if (elector) {
      await elector.run(signal);
      // As controller-runtime: a replica that loses its lease exits at once, so it can never act on a stale
      // belief that it still leads; the Deployment restarts it as a follower.
      if (!signal.aborted) return { lostLeadership: true };
    } else {
      await lead(signal);
    }
    await recorder.flush();
    await Promise.allSettled(informers);
    client.close();
    leaseClient?.close();
    return { lostLeadership: false };
  })();

  return { synced: () => synced, done, client };
}
