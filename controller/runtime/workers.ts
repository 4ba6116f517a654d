// The workers of a controller, as controller-runtime's
// (https://github.com/kubernetes-sigs/controller-runtime/blob/main/pkg/internal/controller/controller.go,
// processNextWorkItem and reconcileHandler): keys from a client-go work queue (src/k8s/workqueue.ts) go to the
// reconciler, and its result decides how the key goes back. Kept out of the client package: the queue is client-go's,
// the reconcile loop and its controller_runtime_* metrics are controller-runtime's.
import { setImmediate } from 'node:timers/promises';
import type { WorkQueue } from '../../src/k8s/workqueue.ts';
import { defaultLogger, type Logger } from '../../src/k8s/log.ts';
import { activeWorkers, maxConcurrentReconciles, reconcileErrors, reconcileTime, reconcileTotal } from './metrics.ts';

/** What a reconcile returns, as controller-runtime's reconcile.Result. */
export interface ReconcileResult {
  /** Requeue with the rate limiter's backoff (counts as a retry). */
  requeue?: boolean;
  /** Requeue after this long; resets the backoff (not a failure). Wins over `requeue`. */
  requeueAfterMs?: number;
}

export type Reconcile = (key: string, signal: AbortSignal) => Promise<ReconcileResult | void>;

export interface RunWorkersOptions {
  /** Metric label `controller` and log field. */
  controller: string;
  /** Stop taking new keys once aborted; the returned promise resolves when in-flight reconciles finish. */
  signal: AbortSignal;
  logger?: Logger;
}

/**
 * Runs `n` workers that take keys from the queue and reconcile them, with controller-runtime's
 * result handling: a thrown error → addRateLimited (and logged); requeueAfterMs → forget +
 * addAfter; requeue → addRateLimited; otherwise forget. On abort the queue is shut down and
 * in-flight reconciles are awaited (each sees the aborted signal); queued keys are dropped:
 * the next leader starts from a full resync of its caches anyway.
 */
export async function runWorkers(
  queue: WorkQueue,
  n: number,
  reconcile: Reconcile,
  opts: RunWorkersOptions,
): Promise<void> {
  const { controller, signal } = opts;
  const log = (opts.logger ?? defaultLogger()).child({ controller });
  maxConcurrentReconciles.set({ controller }, n);
  activeWorkers.set({ controller }, 0);
  const onAbort = () => queue.shutDown();
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });

  // The workers take their turns one at a time: each waits for the setImmediate of the worker before it to fire and
  // then schedules its own, which runs in the loop's next turn (immediates queued while immediates run wait for the
  // next one). Each worker awaiting a setImmediate of its own ran all of them in one turn, so a turn lasted a sync
  // per worker: with 3 workers and syncs of 1 s a Lease renewal (a timer, then its answer: two turns or three) waited
  // 6-9 s, and at 65,000 nodes the leader lost its Lease in its first syncs (bench/README.md section 8).
  let turns: Promise<void> = Promise.resolve();
  const nextTurn = (): Promise<void> => (turns = turns.then(() => setImmediate()));

  const worker = async () => {
    for (;;) {
      // One reconcile per turn of the event loop. A key whose reconcile needs no request (nothing to create, delete
      // or write yet) runs in promise callbacks alone, and so does taking the next queued key: without this, the
      // workers drained the whole queue (every DaemonSet, each reconcile then a pass over the namespace's pods) before
      // the loop served any socket. At 5,000 nodes, while the garbage collector orphaned 16,673 pods and every pod
      // event queued the DaemonSets again, the main thread stayed in reconciles for minutes: the apiserver's calls
      // to the conversion webhook timed out (deleting a DaemonSet got 500), and /metrics did not answer for 70 s
      // (bench/README.md, section 7). Goroutines are preempted; here a worker steps aside for I/O between keys.
      await nextTurn();
      const item = await queue.get();
      if (item.shutdown) return;
      const { key } = item;
      if (signal.aborted) {
        queue.done(key);
        return;
      }
      activeWorkers.inc({ controller });
      const started = performance.now();
      try {
        const result = await reconcile(key, signal);
        if (result?.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
          queue.forget(key);
          queue.addAfter(key, result.requeueAfterMs);
          reconcileTotal.inc({ controller, result: 'requeue_after' });
        } else if (result?.requeue) {
          queue.addRateLimited(key);
          reconcileTotal.inc({ controller, result: 'requeue' });
        } else {
          queue.forget(key);
          reconcileTotal.inc({ controller, result: 'success' });
        }
      } catch (err) {
        if (signal.aborted) {
          log.debug({ key, err }, 'reconcile interrupted by shutdown');
        } else {
          queue.addRateLimited(key);
          reconcileTotal.inc({ controller, result: 'error' });
          reconcileErrors.inc({ controller });
          log.error({ key, err, requeues: queue.numRequeues(key) }, 'reconcile failed; requeued with backoff');
        }
      } finally {
        reconcileTime.observe({ controller }, (performance.now() - started) / 1000);
        activeWorkers.dec({ controller });
        queue.done(key);
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: n }, () => worker()));
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
