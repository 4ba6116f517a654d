// A keyed, de-duplicating, rate-limited work queue with client-go's workqueue semantics
// (https://github.com/kubernetes/client-go/tree/master/util/workqueue: queue.go, delaying_queue.go,
// rate_limiting_queue.go, default_rate_limiters.go). Hand-written because nothing on npm has them:
// p-queue and fastq give concurrency, but not "a key is queued at most once", "a key is never
// processed by two workers at once", nor per-key exponential backoff.
//
// The workers that take keys from a queue and reconcile them are controller-runtime's, not client-go's:
// controller/runtime/workers.ts.
import { TokenBucket } from './rate-limit.ts';
import { monotonic, type Clock } from './clock.ts';

// ---------------------------------------------------------------------------------------------
// Metrics

/** What a named queue reports at scrape time for the two "in progress" gauges. */
export interface InProgressSource {
  readonly name: string;
  /** Seconds of work in progress not yet observed by work_duration, and the longest single one. */
  inProgress(): { unfinishedSeconds: number; longestSeconds: number };
}

/**
 * What named queues report, as client-go's workqueue.MetricsProvider (util/workqueue/metrics.go): the package
 * records, a provider set by the process exports. controller/runtime/metrics.ts sets the Prometheus one, as
 * controller-runtime's pkg/metrics/workqueue.go does in its init(); unset, nothing is recorded.
 */
export interface WorkQueueMetricsProvider {
  add(name: string): void;
  depth(name: string, depth: number): void;
  queueDuration(name: string, seconds: number): void;
  workDuration(name: string, seconds: number): void;
  retry(name: string): void;
  /** Registers a queue whose work in progress is read when the metrics are scraped; returns the unregistration. */
  inProgress(source: InProgressSource): () => void;
}

/** Reports nothing: the provider until one is set (setWorkQueueMetricsProvider). */
export const NO_WORKQUEUE_METRICS: WorkQueueMetricsProvider = {
  add() {},
  depth() {},
  queueDuration() {},
  workDuration() {},
  retry() {},
  inProgress: () => () => {},
};
let metricsProvider = NO_WORKQUEUE_METRICS;

/** Sets the provider of queues made from now on (client-go's workqueue.SetProvider). */
export function setWorkQueueMetricsProvider(provider: WorkQueueMetricsProvider): void {
  metricsProvider = provider;
}

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
  private readonly metrics: WorkQueueMetricsProvider;
  private readonly unregisterMetrics: (() => void) | undefined;

  constructor(opts: WorkQueueOptions = {}) {
    this.name = opts.name;
    this.clock = opts.clock ?? monotonic;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter(this.clock);
    this.metrics = metricsProvider;
    if (this.name) {
      const name = this.name;
      this.unregisterMetrics = this.metrics.inProgress({
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
    if (this.name) this.metrics.add(this.name);
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
      this.metrics.workDuration(this.name, (this.clock() - started) / 1000);
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
    if (this.name) this.metrics.retry(this.name);
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
      this.metrics.queueDuration(this.name, (now - added) / 1000);
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
    if (this.name) this.metrics.depth(this.name, this.len());
  }
}
