// The reflector: keeps a store in step with the apiserver by list-then-watch, as client-go's
// tools/cache.Reflector (https://github.com/kubernetes/client-go/blob/master/tools/cache/reflector.go).
// Hand-written because client-node's informer lacks what keeps a cache correct for days: watch
// bookmarks, a server-side watch timeout, an inactivity watchdog for silent connections (watches
// that stop without an error: https://github.com/kubernetes-client/javascript/issues/596), paged
// lists, rewatch from the last resourceVersion, and backoff with jitter when the apiserver is down.
//
// The loop:
//   list (paged) at relistResourceVersion() → store.replace(items, rv)
//     first list: resourceVersion "0" (served from the apiserver's watch cache, as client-go);
//     a relist: the last synced resourceVersion; after a list at either was refused as expired
//     (410) or "too large resource version", at once a consistent list (resourceVersion "")
//   watch from rv with allowWatchBookmarks and timeoutSeconds ∈ [300, 600) s
//     - stream ends cleanly (server timeout)        → watch again from the last rv
//     - connection drops mid-stream                 → watch again from the last rv
//     - no bytes for inactivityTimeoutMs (150 s)    → abort, watch again from the last rv
//     - 410 Gone (HTTP or ERROR event), other ERROR → relist (store.replace emits the diff)
//     - connection refused, 5xx, 429               → back off 800 ms → 30 s with jitter, retry
// A watch counts as healthy when it got a 200 and delivered an event or lasted a second; only
// unhealthy attempts grow the backoff, so a flapping apiserver is not hammered, while a watch
// that simply expired is renewed at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, apiErrorFromStatus, isGone, type Status } from './errors.ts';
import { apiVersionOf, resourcePath, type ResourceType } from './resources.ts';
import { type KubeList, type KubeClient, type WatchEvent } from './client.ts';
import type { KubeObject } from './types.ts';
import { defaultLogger, type Logger } from './log.ts';

/** Why a watch ended other than by its server-side timeout (the label of reflector_watch_restarts_total). */
export type WatchRestartReason = 'short' | 'gone' | 'error_event' | 'inactive' | 'error';

/**
 * What reflectors report, by informer name, as client-go's reflector MetricsProvider did
 * (tools/cache/reflector_metrics.go, SetReflectorMetricsProvider): the package records, the process exports.
 * controller/runtime/metrics.ts sets the Prometheus one; unset, nothing is recorded.
 */
export interface ReflectorMetricsProvider {
  list(name: string): void;
  watch(name: string): void;
  watchRestart(name: string, reason: WatchRestartReason): void;
  /** A watch event (a bookmark too) arrived; `unixSeconds` is the wall time. */
  event(name: string, unixSeconds: number): void;
}

const noMetrics: ReflectorMetricsProvider = { list() {}, watch() {}, watchRestart() {}, event() {} };
let metricsProvider = noMetrics;

/** Sets the provider of reflectors made from now on. */
export function setReflectorMetricsProvider(provider: ReflectorMetricsProvider): void {
  metricsProvider = provider;
}

/** What the reflector feeds. The informer implements it (store + event handlers). */
export interface ReflectorStore<T> {
  /** A full list: the store becomes exactly `items` (when the promise, if any, resolves). */
  replace(items: T[], resourceVersion: string): void | Promise<void>;
  /** ADDED or MODIFIED. */
  upsert(obj: T): void;
  /** DELETED. */
  remove(obj: T): void;
  /** The object stored under `obj`'s key (the one an upsert or replace of `obj` would replace), if any. */
  current(obj: T): T | undefined;
}

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  /** Each delay is multiplied by a random factor in [1, 1 + jitter], then capped at maxMs. */
  jitter?: number;
}

export interface ReflectorOptions<T> {
  /** For logs and metrics, e.g. "pods". */
  name: string;
  client: KubeClient;
  type: ResourceType;
  /** Restrict to one namespace; all namespaces when absent. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * Page size of lists. Set, it is used for every list (client-go's WatchListPageSize); unset,
   * lists are paged by 500 (the pager's default) except relists at a known resourceVersion,
   * which go unpaged so the watch cache can serve them, as client-go's reflector does.
   */
  pageSize?: number;
  /** Range of the random server-side watch timeout, in seconds. Default [300, 600] as client-go. */
  watchTimeoutSeconds?: [number, number];
  /**
   * Abort a watch that has received no bytes (no event, no bookmark) for this long, and watch
   * again. Default DEFAULT_INACTIVITY_TIMEOUT_MS (150 s).
   */
  inactivityTimeoutMs?: number;
  /** Backoff between failed attempts: 800 ms → 30 s with jitter 1.0, as client-go's reflector. */
  backoff?: BackoffOptions;
  /**
   * Applied to every object before it reaches the store (e.g. stripManagedFields), with the stored object it will
   * replace (undefined for a new key and for deletes): a transform may keep the unchanged parts of that one.
   */
  transform?: Transform<T>;
  logger?: Logger;
}

/** A reflector's transform (see ReflectorOptions.transform). */
export type Transform<T> = (obj: T, previous: T | undefined) => T;

/**
 * client-go's reflector: minWatchTimeout 5 min, each watch asks for a random timeoutSeconds in
 * [1x, 2x) of it, so watches of many clients do not expire together
 * (https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/client-go/tools/cache/reflector.go).
 */
export const DEFAULT_WATCH_TIMEOUT_SECONDS: [number, number] = [300, 600];

/**
 * How long a watch may stay silent before the watchdog aborts it. With allowWatchBookmarks the
 * apiserver's watch cache sends a bookmark roughly every minute on an idle watch, besides one
 * right before the watch's deadline (defaultBookmarkFrequency in
 * https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go),
 * so 150 s without a byte is two missed bookmarks and then some: a dead connection that TCP has
 * not noticed (a NAT or load balancer dropped it silently), found within 2-3 minutes instead of
 * at the watch's 5-10 minute timeout.
 */
export const DEFAULT_INACTIVITY_TIMEOUT_MS = 150_000;

/** The watch was aborted by our own inactivity watchdog. */
export class WatchInactiveError extends Error {
  constructor(ms: number) {
    super(`no data on the watch for ${ms} ms`);
    this.name = 'WatchInactiveError';
  }
}

/** Exponential backoff with jitter: attempt n waits min(max, initial·2ⁿ·(1 + rand·jitter)). */
export class Backoff {
  private failures = 0;
  readonly initialMs: number;
  readonly maxMs: number;
  readonly jitter: number;
  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? 800;
    this.maxMs = opts.maxMs ?? 30_000;
    this.jitter = opts.jitter ?? 1.0;
  }
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** this.failures);
    this.failures++;
    return Math.min(this.maxMs, base * (1 + Math.random() * this.jitter));
  }
  reset(): void {
    this.failures = 0;
  }
  get attempts(): number {
    return this.failures;
  }
}

/** What to do after a watch ends: watch again or relist, after `delayMs`. */
interface WatchOutcome {
  next: 'watch' | 'list';
  delayMs: number;
}

/**
 * client-go's isExpiredError: the resourceVersion asked for is compacted (410 Gone, or reason
 * Expired).
 */
export function isExpiredError(err: unknown): boolean {
  return isGone(err);
}

/**
 * client-go's isTooLargeResourceVersionError: the watch cache has not caught up with the
 * resourceVersion asked for (504 with cause ResourceVersionTooLarge; older apiservers say it
 * only in the message).
 */
export function isTooLargeResourceVersionError(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  const causes = (err.status?.details?.causes ?? []) as { reason?: string; message?: string }[];
  if (causes.some((c) => c.reason === 'ResourceVersionTooLarge')) return true;
  if (err.code !== 504 && err.reason !== 'Timeout') return false;
  return (
    causes.some((c) => c.message === 'Too large resource version') ||
    (err.status?.message ?? '').includes('Too large resource version')
  );
}

/**
 * The resourceVersion of the next list, as client-go's Reflector.relistResourceVersion: "" (a
 * consistent read from etcd) after a list at the last one was refused as expired or too large;
 * "0" (whatever the watch cache holds, cheap for the apiserver) before anything was synced; the
 * last synced one otherwise (data at least that fresh, again from the watch cache).
 */
export function relistResourceVersion(lastSyncResourceVersion: string, lastSyncUnavailable: boolean): string {
  if (lastSyncUnavailable) return '';
  if (lastSyncResourceVersion === '') return '0';
  return lastSyncResourceVersion;
}

/**
 * The page size of a list at `resourceVersion`, as client-go's reflector chooses it: the
 * configured one if any; the default if an earlier list at "0" came back in pages (the watch
 * cache ignores limit there, so pages mean the resource is served from etcd); none for a list at
 * a specific resourceVersion, so the watch cache serves it (with a limit it would go to etcd).
 */
export function listPageSize(
  resourceVersion: string,
  opts: { configured: number | undefined; paginatedResult: boolean; defaultPageSize?: number },
): number {
  if (opts.configured !== undefined) return opts.configured;
  if (opts.paginatedResult) return opts.defaultPageSize ?? 500;
  if (resourceVersion !== '' && resourceVersion !== '0') return 0;
  return opts.defaultPageSize ?? 500;
}

export class Reflector<T extends KubeObject> {
  private readonly log: Logger;
  private readonly metrics = metricsProvider;
  private readonly backoff: Backoff;
  private readonly path: string;
  private resourceVersion = '';
  /** A list at the last synced resourceVersion was refused (expired / too large): list at "". */
  private lastSyncUnavailable = false;
  /** A list at "0" came back in pages: the resource is not served from the watch cache. */
  private paginatedResult = false;

  constructor(
    private readonly opts: ReflectorOptions<T>,
    private readonly store: ReflectorStore<T>,
  ) {
    this.log = (opts.logger ?? defaultLogger()).child({ informer: opts.name });
    this.backoff = new Backoff(opts.backoff);
    this.path = resourcePath(opts.type, { namespace: opts.namespace });
  }

  /** The resourceVersion of the last list, event or bookmark seen. */
  lastSyncResourceVersion(): string {
    return this.resourceVersion;
  }

  /** Runs until `signal` aborts; then resolves (stopping is not an error). */
  async run(signal: AbortSignal): Promise<void> {
    let needList = true;
    while (!signal.aborted) {
      if (needList) {
        try {
          await this.list(signal);
          // No backoff reset here: only a healthy watch proves the apiserver is fine, so a
          // list that is always followed by an instant 410 still backs off.
        } catch (err) {
          if (signal.aborted) break;
          const delay = retryDelay(err, this.backoff);
          this.log.warn({ err, resource: this.path, retryInMs: Math.round(delay) }, 'list failed; retrying');
          if (!(await pause(delay, signal))) break;
          continue;
        }
      }
      const outcome = await this.watch(signal);
      if (signal.aborted) break;
      needList = outcome.next === 'list';
      if (!(await pause(outcome.delayMs, signal))) break;
    }
  }

  private async list(signal: AbortSignal): Promise<void> {
    const { client, type, namespace, labelSelector, fieldSelector, transform } = this.opts;
    this.metrics.list(this.opts.name);
    const started = performance.now();
    const requested = relistResourceVersion(this.resourceVersion, this.lastSyncUnavailable);
    const pageSize = listPageSize(requested, {
      configured: this.opts.pageSize,
      paginatedResult: this.paginatedResult,
    });
    const apiVersion = apiVersionOf(type);
    // List items come without apiVersion/kind; events and owner references need them.
    const complete = (item: T): T => {
      item.apiVersion ??= apiVersion;
      item.kind ??= type.kind;
      return item;
    };
    // With a transform, each item goes through it as it is decoded (client-go's TransformFunc runs before the
    // store too): the list's full objects are never all in memory (list-stream.ts).
    const decodeItem = transform
      ? (item: unknown) => {
          const obj = complete(item as T);
          return transform(obj, this.store.current(obj));
        }
      : undefined;
    const listAt = (resourceVersion: string) =>
      client.listAll<T>(type, {
        namespace,
        labelSelector,
        fieldSelector,
        pageSize,
        resourceVersion,
        signal,
        decodeItem,
      });
    let list: KubeList<T> & { paginated: boolean };
    let listedAt = requested;
    try {
      list = await listAt(requested);
    } catch (err) {
      if (!isExpiredError(err) && !isTooLargeResourceVersionError(err)) throw err;
      // As client-go: the resourceVersion is unavailable (compacted, or the watch cache is
      // behind it); list again at once with a consistent read so the reflector makes progress.
      this.lastSyncUnavailable = true;
      listedAt = relistResourceVersion(this.resourceVersion, true);
      this.log.info(
        { resource: this.path, resourceVersion: requested, reason: (err as Error).message },
        'list at resourceVersion refused; listing with a consistent read',
      );
      list = await listAt(listedAt);
    }
    this.lastSyncUnavailable = false;
    if (listedAt === '0' && list.paginated) this.paginatedResult = true;
    const items = decodeItem ? list.items : list.items.map(complete);
    const rv = list.metadata.resourceVersion ?? '';
    await this.store.replace(items, rv);
    this.resourceVersion = rv;
    this.log.debug(
      {
        resource: this.path,
        items: items.length,
        listedAt,
        resourceVersion: rv,
        ms: Math.round(performance.now() - started),
      },
      'listed',
    );
  }

  private async watch(stop: AbortSignal): Promise<WatchOutcome> {
    const { client, type, namespace, labelSelector, fieldSelector, transform, name } = this.opts;
    const timeoutSeconds = watchTimeoutSeconds(this.opts.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT_SECONDS);
    const inactivityMs = this.opts.inactivityTimeoutMs ?? DEFAULT_INACTIVITY_TIMEOUT_MS;

    const abort = new AbortController();
    const signal = AbortSignal.any([stop, abort.signal]);
    const watchdog = setTimeout(() => abort.abort(new WatchInactiveError(inactivityMs)), inactivityMs);
    watchdog.unref();
    const started = performance.now();
    let events = 0;
    this.metrics.watch(name);
    // Healthy: the apiserver answered and the stream carried an event or lasted a second.
    const healthy = () => events > 0 || performance.now() - started >= 1000;

    try {
      await client.watch<T>(
        type,
        {
          namespace,
          labelSelector,
          fieldSelector,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
          signal,
          onActivity: () => watchdog.refresh(),
        },
        (event) => {
          events++;
          this.handleEvent(event, transform);
        },
      );
      // The server ended the stream: its timeoutSeconds elapsed, or it is shutting down.
      if (healthy()) {
        this.backoff.reset();
        return { next: 'watch', delayMs: 0 };
      }
      // client-go's "very short watch": something is off; do not spin.
      this.metrics.watchRestart(name, 'short');
      this.log.warn({ resource: this.path, resourceVersion: this.resourceVersion }, 'very short watch; backing off');
      return { next: 'watch', delayMs: this.backoff.next() };
    } catch (err) {
      if (stop.aborted) return { next: 'watch', delayMs: 0 };
      const ok = healthy();
      if (ok) this.backoff.reset();
      if (isGone(err) || err instanceof WatchErrorEvent) {
        this.metrics.watchRestart(name, isGone(err) ? 'gone' : 'error_event');
        this.log.info(
          { resource: this.path, resourceVersion: this.resourceVersion, reason: (err as Error).message },
          'watch expired; relisting',
        );
        return { next: 'list', delayMs: ok ? 0 : this.backoff.next() };
      }
      const inactive = abort.signal.aborted && abort.signal.reason instanceof WatchInactiveError;
      this.metrics.watchRestart(name, inactive ? 'inactive' : 'error');
      const delayMs = ok ? 0 : retryDelay(err, this.backoff);
      this.log.warn(
        {
          err: inactive ? abort.signal.reason : err,
          resource: this.path,
          resourceVersion: this.resourceVersion,
          events,
          retryInMs: Math.round(delayMs),
        },
        inactive ? 'watch silent; rewatching' : 'watch failed; rewatching',
      );
      return { next: 'watch', delayMs };
    } finally {
      clearTimeout(watchdog);
    }
  }

  private handleEvent(event: WatchEvent<T>, transform: Transform<T> | undefined): void {
    const obj = event.object;
    this.metrics.event(this.opts.name, Date.now() / 1000);
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.store.upsert(transform ? transform(obj, this.store.current(obj)) : obj);
        break;
      case 'DELETED':
        this.store.remove(transform ? transform(obj, undefined) : obj);
        break;
      case 'BOOKMARK':
        break;
      case 'ERROR':
        throw new WatchErrorEvent(apiErrorFromStatus('watch', this.path, obj as unknown as Status));
      default:
        this.log.warn({ type: (event as { type: string }).type }, 'unknown watch event type');
        return;
    }
    const rv = obj?.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
  }
}

/** An ERROR event in the watch stream; 410 inside it means the resourceVersion is compacted. */
class WatchErrorEvent extends ApiError {
  constructor(err: ApiError) {
    super('watch', err.path, err.code, err.status, err.retryAfterSeconds);
  }
}

/** A random timeoutSeconds in [min, max): client-go's minWatchTimeout · (1 + rand). */
export function watchTimeoutSeconds([min, max]: [number, number], random = Math.random): number {
  return Math.floor(min + random() * Math.max(0, max - min));
}

function retryDelay(err: unknown, backoff: Backoff): number {
  const next = backoff.next();
  if (err instanceof ApiError && err.retryAfterSeconds) return Math.max(next, err.retryAfterSeconds * 1000);
  return next;
}

/** Sleeps unless aborted first; returns false when aborted. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (ms <= 0) return !signal.aborted;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
