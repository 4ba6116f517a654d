// A keyed, de-duplicating, rate-limited work queue with client-go's workqueue semantics
// (https://github.com/kubernetes/client-go/tree/master/util/workqueue: queue.go, delaying_queue.go,
// rate_limiting_queue.go, default_rate_limiters.go). Hand-written because nothing on npm has them:
// p-queue and fastq give concurrency, but not "a key is queued at most once", "a key is never
// processed by two workers at once", nor per-key exponential backoff.
import { setImmediate } from 'node:timers/promises';
import { TokenBucket } from '../../src/k8s/rate-limit.ts';
import { defaultLogger, type Logger } from '../../src/k8s/log.ts';
import {
  activeWorkers,
  maxConcurrentReconciles,
  reconcileErrors,
  reconcileTime,
  reconcileTotal,
  registerInProgressSource,
  workqueueAdds,
  workqueueDepth,
  workqueueQueueDuration,
  workqueueRetries,
  workqueueWorkDuration,
} from './metrics.ts';
import { monotonic, type Clock } from '../../src/k8s/clock.ts';

// ---------------------------------------------------------------------------------------------
// Rate limiters

export interface RateLimiter<K = string> {
  /** How long to wait before this item may be processed again; counts a failure. */
  when(item: K): number;
  /** Failures recorded for the item. */
  numRequeues(item: K): number;
  /** Stop tracking the item (it succeeded). */
  forget(item: K): void;
}

/** baseDelay * 2^failures, capped at maxDelay: client-go's ItemExponentialFailureRateLimiter. */
export class ItemExponentialFailureRateLimiter<K = string> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();
  constructor(
    readonly baseDelayMs: number,
    readonly maxDelayMs: number,
  ) {}
  when(item: K): number {
    const exp = this.failures.get(item) ?? 0;
    this.failures.set(item, exp + 1);
    const delay = this.baseDelayMs * 2 ** exp;
    return Number.isFinite(delay) ? Math.min(delay, this.maxDelayMs) : this.maxDelayMs;
  }
  numRequeues(item: K): number {
    return this.failures.get(item) ?? 0;
  }
  forget(item: K): void {
    this.failures.delete(item);
  }
}

/** An overall token bucket shared by all items: client-go's BucketRateLimiter. */
export class BucketRateLimiter<K = string> implements RateLimiter<K> {
  private readonly bucket: TokenBucket;
  constructor(qps: number, burst: number, clock: Clock = monotonic) {
    this.bucket = new TokenBucket(qps, burst, clock);
  }
  when(_item: K): number {
    return this.bucket.reserve();
  }
  numRequeues(_item: K): number {
    return 0;
  }
  forget(_item: K): void {}
}

/** The longest delay of several limiters: client-go's MaxOfRateLimiter. */
export class MaxOfRateLimiter<K = string> implements RateLimiter<K> {
  private readonly limiters: RateLimiter<K>[];
  constructor(...limiters: RateLimiter<K>[]) {
    this.limiters = limiters;
  }
  when(item: K): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.when(item));
    return max;
  }
  numRequeues(item: K): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.numRequeues(item));
    return max;
  }
  forget(item: K): void {
    for (const l of this.limiters) l.forget(item);
  }
}

/**
 * client-go's DefaultControllerRateLimiter, which Kruise also uses: per-item exponential
 * 5 ms → 1000 s, and an overall 10 qps / 100 burst bucket, whichever is slower.
 */
export function defaultControllerRateLimiter<K = string>(clock: Clock = monotonic): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialFailureRateLimiter<K>(5, 1000 * 1000),
    new BucketRateLimiter<K>(10, 100, clock),
  );
}

// ---------------------------------------------------------------------------------------------
// The queue

export interface WorkQueueOptions {
  /** Metric label and log field. Metrics are recorded only for named queues. */
  name?: string;
  rateLimiter?: RateLimiter<string>;
  clock?: Clock;
}

export interface GetResult {
  key: string;
  shutdown: false;
}

/**
 * Keys, not objects: the reconciler reads the current state from the informer caches, so a key
 * added ten times while waiting is processed once (level-based, as controller-runtime's doc
 * comment on Reconcile says).
 *
 * Invariants (as client-go's Type): `dirty` holds every key that needs processing; `queue`
 * holds the dirty keys that are not being processed, in FIFO order; `processing` holds the
 * keys handed to a worker and not yet done(). A key added while processing stays only in
 * dirty and goes back into the queue on done(), so no two workers ever hold the same key.
 */
export class WorkQueue {
  readonly name: string | undefined;
  private readonly rateLimiter: RateLimiter<string>;
  private readonly clock: Clock;
  private queue: string[] = [];
  private head = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly waiters: ((r: GetResult | { shutdown: true }) => void)[] = [];
  private shuttingDown = false;
  private drainWaiters: (() => void)[] = [];
  /** Delayed adds: one timer per key, keeping the earliest ready time (client-go's waitingForQueue). */
  private readonly waiting = new Map<string, { readyAt: number; timer: NodeJS.Timeout }>();
  /** When each queued key was added, and when each processing key was handed out (for metrics). */
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly unregisterMetrics: (() => void) | undefined;

  constructor(opts: WorkQueueOptions = {}) {
    this.name = opts.name;
    this.clock = opts.clock ?? monotonic;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter(this.clock);
    if (this.name) {
      const name = this.name;
      this.unregisterMetrics = registerInProgressSource({
        name,
        inProgress: () => {
          const now = this.clock();
          let unfinished = 0;
          let longest = 0;
          for (const t of this.startedAt.values()) {
            const s = (now - t) / 1000;
            unfinished += s;
            longest = Math.max(longest, s);
          }
          return { unfinishedSeconds: unfinished, longestSeconds: longest };
        },
      });
    }
  }

  /** Marks the key as needing processing. A no-op if it already waits, or after shutDown. */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    if (this.name) workqueueAdds.inc({ name: this.name });
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Number of keys waiting to be handed out (not counting delayed or processing ones). */
  len(): number {
    return this.queue.length - this.head;
  }

  /**
   * The next key to process, waiting for one if needed. Resolves `{shutdown: true}` once the
   * queue is shut down and empty; keys queued before shutDown are still handed out.
   * Every key returned must be given back with done().
   */
  get(): Promise<GetResult | { shutdown: true }> {
    if (this.len() > 0) return Promise.resolve(this.pop());
    if (this.shuttingDown) return Promise.resolve({ shutdown: true });
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The worker finished with `key`. If it was added again meanwhile, it is queued again now. */
  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (this.name && started !== undefined) {
      workqueueWorkDuration.observe({ name: this.name }, (this.clock() - started) / 1000);
    }
    if (this.dirty.has(key)) this.push(key);
    else if (this.processing.size === 0 && this.drainWaiters.length > 0) this.resolveDrain();
  }

  /** Adds the key after `delayMs` (immediately if ≤ 0). A pending earlier add of the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const readyAt = this.clock() + delayMs;
    const pending = this.waiting.get(key);
    if (pending) {
      if (pending.readyAt <= readyAt) return;
      clearTimeout(pending.timer);
    }
    const timer = setTimeout(() => {
      this.waiting.delete(key);
      this.add(key);
    }, delayMs);
    // The queue alone must not keep the process alive: servers and watches do that.
    timer.unref();
    this.waiting.set(key, { readyAt, timer });
  }

  /** Adds the key after the rate limiter's delay for it (a failure: backoff grows). */
  addRateLimited(key: string): void {
    if (this.shuttingDown) return;
    if (this.name) workqueueRetries.inc({ name: this.name });
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /** Resets the key's backoff (it succeeded). Does not remove it from the queue. */
  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.numRequeues(key);
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Stops accepting keys; waiting get() calls resolve once the queue is empty. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const { timer } of this.waiting.values()) clearTimeout(timer);
    this.waiting.clear();
    if (this.len() === 0) this.wakeAllForShutdown();
    this.unregisterMetrics?.();
  }

  /** shutDown, then wait until every key handed out has been given back with done(). */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  // --- internals -------------------------------------------------------------------------------

  private push(key: string): void {
    this.addedAt.set(key, this.clock());
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter(this.handOut(key));
      return;
    }
    this.queue.push(key);
    this.updateDepth();
  }

  private pop(): GetResult {
    const key = this.queue[this.head] as string;
    this.head++;
    // Compact now and then instead of shift(), which is O(n) per call on a long queue.
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.updateDepth();
    const r = this.handOut(key);
    if (this.shuttingDown && this.len() === 0) this.wakeAllForShutdown();
    return r;
  }

  private handOut(key: string): GetResult {
    this.dirty.delete(key);
    this.processing.add(key);
    const now = this.clock();
    this.startedAt.set(key, now);
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (this.name && added !== undefined) {
      workqueueQueueDuration.observe({ name: this.name }, (now - added) / 1000);
    }
    return { key, shutdown: false };
  }

  private wakeAllForShutdown(): void {
    for (const w of this.waiters.splice(0)) w({ shutdown: true });
  }

  private resolveDrain(): void {
    for (const r of this.drainWaiters.splice(0)) r();
  }

  private updateDepth(): void {
    if (this.name) workqueueDepth.set({ name: this.name }, this.len());
  }
}

// ---------------------------------------------------------------------------------------------
// Workers

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

  const worker = async () => {
    for (;;) {
      // One reconcile per turn of the event loop. A key whose reconcile needs no request (nothing to create, delete
      // or write yet) runs in promise callbacks alone, and so does taking the next queued key: without this, the
      // workers drained the whole queue (every DaemonSet, each reconcile then a pass over the namespace's pods) before
      // the loop served any socket. At 5,000 nodes, while the garbage collector orphaned 16,673 pods and every pod
      // event queued the DaemonSets again, the main thread stayed in reconciles for minutes: the apiserver's calls
      // to the conversion webhook timed out (deleting a DaemonSet got 500), and /metrics did not answer for 70 s
      // (bench/README.md, section 7). Goroutines are preempted; here a worker steps aside for I/O between keys.
      await setImmediate();
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
