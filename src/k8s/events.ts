// An EventRecorder writing core/v1 Events the way client-go's record package does, so
// `kubectl describe ds` reads as it does for kruise-manager: reason and message as upstream,
// source.component "daemonset-controller" (Kruise's recorder name for this controller), and
// client-go's correlation so a hot loop does not flood etcd:
//   - dedup: the same object + type + reason + message within 10 minutes patches the existing
//     Event's count and lastTimestamp instead of creating a new one (EventLogger);
//   - spam filter: at most a burst of 25 events per object, refilled at one per 5 minutes
//     (EventSourceObjectSpamFilter); a caller may put a kind of event in a bucket of its own (`spamGroup`, as
//     client-go's CorrelatorOptions.SpamKeyFunc), so a few milestones are not drowned by routine events.
// Writes are fire-and-forget, serialized on one background chain, and their errors are logged:
// an event must never fail or slow down a reconcile. Hand-written because client-node has no
// recorder, only the generated CoreV1Api.
import { hostname } from 'node:os';
import { isNotFound } from './errors.ts';
import { resources } from './resources.ts';
import { TokenBucket } from './rate-limit.ts';
import { type KubeClient } from './client.ts';
import type { KubeObject } from './types.ts';
import { defaultLogger, type Logger } from './log.ts';

export type EventType = 'Normal' | 'Warning';

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

/** core/v1 Event, as written. */
export interface CoreEvent extends KubeObject {
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  source: { component: string; host?: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  type: EventType;
  reportingComponent?: string;
  reportingInstance?: string;
}

export interface EventRecorderOptions {
  client: KubeClient;
  /** source.component and reportingComponent. Default "daemonset-controller". */
  component?: string;
  /** source.host and reportingInstance. Default the hostname. */
  host?: string;
  logger?: Logger;
  /** Wall-clock milliseconds. Injectable for tests. */
  clock?: () => number;
  /** Dedup window (client-go's aggregation interval): 10 minutes. */
  dedupWindowMs?: number;
  /** Per-object spam filter: burst 25, one more every 300 s, as client-go. */
  spamBurst?: number;
  spamQps?: number;
  /** Writes waiting beyond this many are dropped (with a warning), so a stuck apiserver cannot grow memory. */
  maxPending?: number;
}

interface DedupEntry {
  eventName: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  seenAt: number;
}

const MAX_CACHE = 4096;
const MAX_MESSAGE = 1024;

/** An RFC 3339 time with second precision, as metav1.Time serializes. */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export class EventRecorder {
  readonly component: string;
  readonly host: string;
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly clock: () => number;
  private readonly dedupWindowMs: number;
  private readonly spamBurst: number;
  private readonly spamQps: number;
  private readonly maxPending: number;
  /** Insertion-ordered, so the first entries are the least recently used. */
  private readonly dedup = new Map<string, DedupEntry>();
  private readonly spam = new Map<string, TokenBucket>();
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  private seq = 0;
  private closed = false;

  constructor(opts: EventRecorderOptions) {
    this.client = opts.client;
    this.component = opts.component ?? 'daemonset-controller';
    this.host = opts.host ?? hostname();
    this.log = (opts.logger ?? defaultLogger()).child({ component: 'event-recorder' });
    this.clock = opts.clock ?? Date.now;
    this.dedupWindowMs = opts.dedupWindowMs ?? 10 * 60 * 1000;
    this.spamBurst = opts.spamBurst ?? 25;
    this.spamQps = opts.spamQps ?? 1 / 300;
    this.maxPending = opts.maxPending ?? 1000;
  }

  /**
   * Records an event about `obj`. Returns at once; the write happens in the background. With `spamGroup`, the event
   * counts against a spam-filter bucket of that group for the object instead of the object's own bucket.
   */
  event(obj: KubeObject, type: EventType, reason: string, message: string, opts: { spamGroup?: string } = {}): void {
    if (this.closed) return;
    const ref = referenceOf(obj);
    const objectKey = [ref.apiVersion, ref.kind, ref.namespace, ref.name, ref.uid].join('/');
    const spamKey = opts.spamGroup ? `${objectKey}\u0000${opts.spamGroup}` : objectKey;
    this.log.debug(
      { object: `${ref.namespace ?? ''}/${ref.name ?? ''}`, kind: ref.kind, type, reason, message },
      'event',
    );

    let bucket = this.spam.get(spamKey);
    if (!bucket) {
      bucket = new TokenBucket(this.spamQps, this.spamBurst, this.clock);
      this.spam.set(spamKey, bucket);
      evictOldest(this.spam);
    }
    if (!bucket.tryAccept()) {
      this.log.debug({ object: ref.name, reason }, 'event dropped by spam filter');
      return;
    }
    if (this.pending >= this.maxPending) {
      this.log.warn({ object: ref.name, reason, pending: this.pending }, 'event dropped: too many pending writes');
      return;
    }
    this.pending++;
    const at = this.clock();
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
    this.chain = this.chain
      .then(() => this.write(ref, objectKey, type, reason, text, at))
      .catch((err: unknown) => {
        this.log.warn({ err, object: `${ref.namespace ?? ''}/${ref.name ?? ''}`, reason }, 'failed to write event');
      })
      .finally(() => {
        this.pending--;
      });
  }

  /** Resolves when every event recorded so far has been written (or failed). */
  flush(): Promise<void> {
    return this.chain;
  }

  /** Stops accepting events and waits for the pending ones. */
  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
  }

  private async write(
    ref: ObjectReference,
    objectKey: string,
    type: EventType,
    reason: string,
    message: string,
    at: number,
  ): Promise<void> {
    const namespace = ref.namespace || 'default';
    const key = `${objectKey}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = rfc3339(at);
    const prior = this.dedup.get(key);
    if (prior && at - prior.seenAt <= this.dedupWindowMs) {
      const count = prior.count + 1;
      try {
        await this.client.patch(
          resources.events,
          { namespace: prior.namespace, name: prior.eventName },
          { count, lastTimestamp: now, message },
          { type: 'strategic' },
        );
        this.remember(key, { ...prior, count, seenAt: at });
        return;
      } catch (err) {
        // The Event expired (the apiserver's --event-ttl, 1 h) or was deleted: start a new one.
        if (!isNotFound(err)) throw err;
      }
    }
    const event: CoreEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: this.eventName(ref), namespace },
      involvedObject: ref,
      reason,
      message,
      source: { component: this.component, host: this.host },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type,
      reportingComponent: this.component,
      reportingInstance: this.host,
    };
    const created = await this.client.create<CoreEvent>(resources.events, event);
    this.remember(key, {
      eventName: created.metadata.name ?? event.metadata.name ?? '',
      namespace,
      count: 1,
      firstTimestamp: now,
      seenAt: at,
    });
  }

  private remember(key: string, entry: DedupEntry): void {
    this.dedup.delete(key);
    this.dedup.set(key, entry);
    evictOldest(this.dedup);
  }

  /** `<name>.<hex nanoseconds>`, as client-go; a sequence keeps names unique within a millisecond. */
  private eventName(ref: ObjectReference): string {
    const nanos = BigInt(this.clock()) * 1_000_000n + BigInt(this.seq++ % 1_000_000);
    return `${ref.name ?? 'unknown'}.${nanos.toString(16)}`;
  }
}

function evictOldest(map: Map<string, unknown>): void {
  while (map.size > MAX_CACHE) {
    const first = map.keys().next();
    if (first.done) return;
    map.delete(first.value);
  }
}

/** client-go's reference.GetReference for a plain object. */
export function referenceOf(obj: KubeObject): ObjectReference {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    namespace: obj.metadata.namespace,
    name: obj.metadata.name,
    uid: obj.metadata.uid,
    resourceVersion: obj.metadata.resourceVersion,
  };
}
