// Client-side rate limiting as client-go's flowcontrol: a token bucket (QPS/burst, also the work queue's
// BucketRateLimiter) and the throttle of requests in flight with their priority lanes.
import { monotonic, type Clock } from './clock.ts';

/**
 * A token bucket with golang.org/x/time/rate's reservation semantics: `qps` tokens a second,
 * at most `burst` saved up; `reserve()` always takes a token and says how long to wait for it.
 * Used by the client (client-go flowcontrol's QPS/Burst) and by the work queue (client-go's
 * BucketRateLimiter). Hand-written because no npm package offers reservations with a
 * pluggable clock; it is twenty lines.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly now: Clock = monotonic,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Takes one token; returns milliseconds until it is actually available (0 = now). */
  reserve(): number {
    if (this.unlimited) return 0;
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  /** Milliseconds until a token is available (0 = one is available now). */
  untilAvailable(): number {
    if (this.unlimited) return 0;
    this.refill();
    return this.tokens >= 1 ? 0 : ((1 - this.tokens) / this.qps) * 1000;
  }

  /** Takes a token only if one is available now. */
  tryAccept(): boolean {
    if (this.unlimited) return true;
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private get unlimited(): boolean {
    return !(this.qps > 0) || this.qps === Infinity;
  }

  /** Adds the tokens earned since the last call, never beyond burst. */
  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }
}

/** The lane a request waits in for the client's rate limiter (RequestThrottle). */
export type RequestPriority = 'high' | 'normal';

/**
 * The client's rate limiter as a queue with two lanes: requests wait for a token of the bucket (client-go's
 * flowcontrol QPS/Burst, the same rate and burst) in order, except that a `high` request is let through before
 * every `normal` one waiting. A reservation (TokenBucket.reserve) fixes each request's turn when it is made; here a
 * request made later can still go first. The controller uses it for the KruisePodReady patch that follows each pod
 * create: behind the rest of a create batch (up to burstReplicas, 250 creates: 2.5 s at 100 QPS) it reached the pod
 * after the kubelet had started it, which then had to write the pod's status a second time to turn it Ready. A
 * request whose signal aborts while it waits leaves the queue without taking a token.
 *
 * It also bounds the requests in flight (`maxInFlight`; watches, which hold their connection for minutes, take no
 * slot): a request past the bound waits here, in its lane, rather than in the HTTP agent's queue, which knows no
 * lanes. Each request in flight holds a TLS connection of its own (HTTP/1.1; about 50 KiB of memory each, kept
 * alive afterwards), so the bound is what the connection pool grows to after a burst.
 */
export class RequestThrottle {
  private readonly lanes: Record<RequestPriority, Array<Waiter>> = { high: [], normal: [] };
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;

  constructor(
    private readonly bucket: TokenBucket,
    private readonly maxInFlight = Infinity,
  ) {}

  /**
   * Resolves when the request may be sent, with the function to call once its answer has been read (it frees the
   * slot; a no-op for a request that takes none); rejects with the signal's reason if it aborts first.
   * `takesSlot` false: a watch, not counted against maxInFlight.
   */
  wait(priority: RequestPriority = 'normal', signal?: AbortSignal, takesSlot = true): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.waiting() === 0 && this.hasSlot(takesSlot) && this.bucket.tryAccept())
      return Promise.resolve(this.take(takesSlot));
    return new Promise<() => void>((resolve, reject) => {
      const lane = this.lanes[priority];
      const onAbort = () => {
        const i = lane.indexOf(waiter);
        if (i >= 0) lane.splice(i, 1);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        takesSlot,
        go: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      lane.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pump();
    });
  }

  /** Requests waiting now. */
  waiting(): number {
    return this.lanes.high.length + this.lanes.normal.length;
  }

  /** Requests holding a slot now. */
  running(): number {
    return this.inFlight;
  }

  private hasSlot(takesSlot: boolean): boolean {
    return !takesSlot || this.inFlight < this.maxInFlight;
  }

  private take(takesSlot: boolean): () => void {
    if (!takesSlot) return () => {};
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      this.pump();
    };
  }

  /** The lane whose first request goes next: high while it holds any. */
  private nextLane(): Waiter[] {
    return this.lanes.high.length > 0 ? this.lanes.high : this.lanes.normal;
  }

  private pump(): void {
    if (this.timer) return;
    // The next in turn waits for a slot (a release pumps again) or for a token (the timer below).
    let next: Waiter | undefined;
    while ((next = this.nextLane()[0]) && this.hasSlot(next.takesSlot) && this.bucket.tryAccept()) {
      this.nextLane().shift();
      next.go(this.take(next.takesSlot));
    }
    if (!next || !this.hasSlot(next.takesSlot)) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.pump();
      },
      Math.max(1, Math.ceil(this.bucket.untilAvailable())),
    );
  }
}

interface Waiter {
  takesSlot: boolean;
  go(release: () => void): void;
}
