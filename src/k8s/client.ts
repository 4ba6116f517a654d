// A small raw-JSON REST client for the Kubernetes API.
//
// Why not client-node's generated APIs: they (de)serialize through class models (unknown fields
// of our CRD are dropped, timestamps become Dates), need per-call Content-Type overrides for
// patches, and have no client-side rate limiting. Why not client-node's fetch path either: its
// applySecurityAuthentication builds a fresh undici Agent on every call (no connection reuse) and
// reads the CA file each time. So kubeconfig.ts turns a kubeconfig into a RestConfig (leaving
// exec and auth-provider plugins to client-node's KubeConfig), and we speak HTTP
// ourselves over one keep-alive node:https agent. This mirrors client-go's rest.Client: generic
// over the resource path, a token-bucket rate limiter (flowcontrol), Retry-After on 429, typed
// errors with the reason the apiserver gives (k8s.io/apimachinery/pkg/api/errors).
//
// This module does not import client-node (it costs about a second and 80 MiB to load), so
// processes and tests that only talk HTTP to an apiserver start fast.
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import tls from 'node:tls';
import { Duplex, type Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pkg from '../../package.json' with { type: 'json' };
import { JsonLinesDecoder, ListItemDecoder } from './list-stream.ts';
import type { KubeObject, ObjectMeta } from './types.ts';
import { ApiError, TransportError, WriteRefusedError, isGone, isNotFound, type Status } from './errors.ts';
import { RequestThrottle, TokenBucket, type RequestPriority } from './rate-limit.ts';
import { resourcePath, type ObjectTarget, type ResourceType } from './resources.ts';

// ---------------------------------------------------------------------------------------------
// Options and shapes

export interface KubeList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T = KubeObject> {
  type: WatchEventType;
  /** For ERROR events this is a Status, not a T. */
  object: T;
}

interface RequestOptions {
  signal?: AbortSignal;
  /** Its lane in the client's rate limiter (RequestThrottle); default normal. */
  priority?: RequestPriority;
}

/** What every request of a scoped client view carries (KubeClient.withScope). */
export interface RequestScope {
  /** Aborts every request and watch of the view (combined with a call's own signal). */
  signal?: AbortSignal;
  /**
   * Runs right before a write (POST, PUT, PATCH, DELETE) is sent, after client-side throttling and in the same
   * tick as the send, on every attempt; a returned string refuses the write with WriteRefusedError. Over HTTP/2 it
   * runs again at every write of the connection until the request's last frame is written (WriteGate); one that
   * refuses then closes that connection, whose other writes fail or are sent again.
   */
  beforeWrite?: () => string | undefined;
  /**
   * Told of a write whose `beforeWrite` passed but refused right after the call that sent it returned: the process was
   * paused (SIGSTOP, a paused VM) while sending it, either before its bytes reached the kernel (they went out when it
   * resumed, after the fence closed) or just after (they went out in time); it cannot tell which. Nothing in a client
   * can exclude the first (docs/guarantees.md); it can say so, with how long the pause was.
   */
  onLateWrite?: (write: LateWrite) => void;
}

/** A write that may have gone out after its fence closed (RequestScope.onLateWrite). */
export interface LateWrite {
  verb: string;
  path: string;
  /** From the check that passed to the one after the send returned (the pause and the send), by the monotonic clock. */
  pausedMs: number;
}

export interface ListOptions extends RequestOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: 'NotOlderThan' | 'Exact';
}

/** A list whose items go through `decodeItem` as they are decoded (see KubeClient.list). */
export interface DecodedListOptions<T> extends ListOptions {
  /**
   * Applied to each item as soon as it is decoded from the response, before the next one is (an informer's
   * transform): the body and the items as sent are never all in memory at once (list-stream.ts).
   */
  decodeItem?: (item: unknown) => T;
}

export interface WatchOptions extends RequestOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  /** Server-side timeout: the apiserver ends the watch cleanly after this. */
  timeoutSeconds?: number;
  /** Called whenever bytes arrive (events and keep-alive newlines alike); feeds inactivity watchdogs. */
  onActivity?: () => void;
}

export interface WriteOptions extends RequestOptions {
  fieldManager?: string;
  dryRun?: boolean;
}

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

const patchContentTypes: Record<PatchType, string> = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  // JSON is YAML, so an apply body can be sent as JSON under the YAML media type (what kubectl does).
  apply: 'application/apply-patch+yaml',
};

export interface PatchOptions extends WriteOptions {
  type: PatchType;
  /** Server-side apply only: take ownership of conflicting fields. */
  force?: boolean;
  subresource?: string;
}

export interface DeleteOptions extends RequestOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  gracePeriodSeconds?: number;
  dryRun?: boolean;
}

/** What the client reports after each request; metrics.ts turns it into rest_client_* series. */
export interface RequestObservation {
  verb: string;
  method: string;
  host: string;
  /** HTTP status as a string, or "<error>" when there was no response (client-go's convention). */
  code: string;
  durationSeconds: number;
}

/**
 * Where the apiserver is and how to authenticate: client-go's rest.Config, reduced to what we
 * use. Build one from a kubeconfig with kubeconfig.ts's loadKubeConfig (its restConfig).
 */
export interface RestConfig {
  /** e.g. https://127.0.0.1:6443 (a path prefix is kept). */
  server: string;
  /** PEM CA bundle to trust; the system roots when absent. */
  ca?: string | Buffer;
  /** Client certificate and key (PEM). */
  cert?: string | Buffer;
  key?: string | Buffer;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  /** Credentials that do not change: a bearer token, basic auth, impersonation headers. */
  headers?: Record<string, string>;
  /**
   * Credentials that rotate (exec plugins, projected service-account tokens): called at most
   * every 10 s and after a 401; its headers override `headers`.
   */
  refreshHeaders?: () => Promise<Record<string, string>>;
}

export interface KubeClientOptions {
  /** Client-side sustained requests per second (client-go rest.Config.QPS). 0 or Infinity disables. */
  qps?: number;
  /** Client-side burst (rest.Config.Burst). */
  burst?: number;
  /** Defaults to advanced-daemonset/<package version>. Benchmarks count requests by it. */
  userAgent?: string;
  /** Per-request timeout for everything but watches. */
  requestTimeoutMs?: number;
  /** How many times a 429 (or a 5xx with Retry-After) is retried, as client-go's maxRetries (10). */
  maxRetries?: number;
  /** Upper bound on one Retry-After wait. */
  maxRetryAfterSeconds?: number;
  /**
   * Most requests in flight at once (watches not counted); more wait their turn in the rate limiter
   * (RequestThrottle). Each holds a connection of its own, kept alive afterwards. Default DEFAULT_MAX_IN_FLIGHT.
   */
  maxInFlight?: number;
  onRequest?: (o: RequestObservation) => void;
  /**
   * Send unary requests (get, create, update, patch, delete) to an https apiserver over one multiplexed HTTP/2
   * connection, as client-go does; lists and watches stay on HTTP/1.1, and the writes of a scope with a write fence
   * (RequestScope.beforeWrite) go over a second HTTP/2 connection whose every write passes their fence (WriteGate).
   * Default true; without effect for http:, and HTTP/1.1 is used when the server does not negotiate h2.
   */
  http2?: boolean;
}

export const defaultUserAgent = `advanced-daemonset/${pkg.version}`;

// Kruise's kruise-manager defaults (--rest-config-qps 30, --rest-config-burst 50): the same
// client budget as the controller we replace, so the apiserver sees a familiar load.
const DEFAULT_QPS = 30;
const DEFAULT_BURST = 50;
/**
 * Requests in flight at most, by default. At 100 QPS a request that takes 20-50 ms keeps 2-5 in flight; only a
 * burst of tokens (the burst, 200 in the benchmark) fills them all. A slow apiserver needs more: by Little's law,
 * 100 requests a second answered in 200 ms on average keep 20 in flight, and with 16 the controller's writes fell
 * behind its rate (its last pod write at 1.23x of the floor where native's, as slow per write, came at 0.84x;
 * bench/README.md, section 1b). 32 sustain the rate up to 320 ms per request. Each request holds a connection of
 * its own (about 50 KiB of TLS state and buffers in the manager); it was 64 connections, all kept alive, and
 * capping them took 4-6 MiB off the manager's peak with 1,000 nodes and pods (section 6). Connections idle beyond
 * MAX_IDLE_CONNECTIONS are closed (`maxFreeSockets`), so what a burst opens does not stay. client-go multiplexes
 * its requests over one HTTP/2 connection instead; over HTTP/1.1 it keeps at most 25 idle connections per host
 * (https://github.com/kubernetes/apimachinery/blob/master/pkg/util/net/http.go, SetTransportDefaults).
 */
export const DEFAULT_MAX_IN_FLIGHT = 32;
/**
 * The default for a client of `qps`: DEFAULT_MAX_IN_FLIGHT (also with no rate limit, qps 0), or, for a client allowed
 * more than 320 requests a second, enough to keep its rate up at 100 ms per request (Little's law), at most MAX_IN_FLIGHT_FOR_QPS. At QPS
 * 2000 the manager's creates and KruisePodReady patches went out at about 200 a second, answered in 166 ms (p50)
 * by a loaded apiserver: 33 in flight, the cap; native's client-go, on HTTP/2, has no such cap (bench/README.md,
 * section 9, the race at the apiserver's ceiling).
 */
export function defaultMaxInFlight(qps: number): number {
  if (!(qps > 0) || !Number.isFinite(qps)) return DEFAULT_MAX_IN_FLIGHT;
  return Math.min(MAX_IN_FLIGHT_FOR_QPS, Math.max(DEFAULT_MAX_IN_FLIGHT, Math.ceil(qps / 10)));
}
/** The most defaultMaxInFlight gives: the apiserver's --max-mutating-requests-inflight is 200 for all clients. */
export const MAX_IN_FLIGHT_FOR_QPS = 128;
/** Idle connections to the apiserver kept alive at most (the agent's `maxFreeSockets`). */
export const MAX_IDLE_CONNECTIONS = 16;

/**
 * Idle connections kept for a cap of `maxInFlight`: MAX_IDLE_CONNECTIONS, or half the cap when it is raised for a
 * high QPS (defaultMaxInFlight), so that each burst of creates does not open most of its connections again: in the
 * race at QPS 2000 the creates of one slow-start batch reached the apiserver spread over 100-200 ms, a new TLS
 * handshake on both sides for each connection beyond the idle ones.
 */
export function idleConnections(maxInFlight: number): number {
  return Math.max(MAX_IDLE_CONNECTIONS, Math.floor(maxInFlight / 2));
}

interface Transport {
  agent: http.Agent;
  base: URL;
  headers: Record<string, string>;
  headersAt: number;
  /** The HTTP/2 connection of unary requests; undefined for http: or with the http2 option off. */
  h2: H2Connection | undefined;
  /** The HTTP/2 connection of fenced writes (RequestScope.beforeWrite): each write it makes is fenced (WriteGate). */
  h2Fenced: H2Connection | undefined;
}

const AUTH_REFRESH_MS = 10_000;

/**
 * The REST client. Objects go in and come out as plain JSON (unknown fields survive); `T`
 * is only a type assertion. Construct with `createKubeClient({ kubeconfig, qps, burst })`
 * (kubeconfig.ts), `KubeClient.fromKubeConfig(kc, options)` or `new KubeClient(restConfig, options)`.
 */
export class KubeClient {
  readonly userAgent: string;
  private readonly limiter: RequestThrottle;
  private readonly requestTimeoutMs: number;
  private readonly maxRetries: number;
  private readonly maxRetryAfterSeconds: number;
  private readonly onRequest: ((o: RequestObservation) => void) | undefined;
  private transport: Transport | undefined;
  private readonly pending: Promise<Transport>;
  private config: RestConfig | undefined;
  private readonly serverUrl: string;
  private scope: RequestScope = {};

  /**
   * `config` may be a promise (credentials are resolved asynchronously from a kubeconfig), so
   * construction stays synchronous; requests wait for it.
   */
  constructor(config: RestConfig | Promise<RestConfig>, opts: KubeClientOptions = {}, server?: string) {
    this.userAgent = opts.userAgent ?? defaultUserAgent;
    const maxInFlight = opts.maxInFlight ?? defaultMaxInFlight(opts.qps ?? DEFAULT_QPS);
    this.limiter = new RequestThrottle(
      new TokenBucket(opts.qps ?? DEFAULT_QPS, opts.burst ?? DEFAULT_BURST),
      maxInFlight,
    );
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 60_000;
    this.maxRetries = opts.maxRetries ?? 10;
    this.maxRetryAfterSeconds = opts.maxRetryAfterSeconds ?? 60;
    this.onRequest = opts.onRequest;
    this.serverUrl = server ?? (config instanceof Promise ? '' : config.server);
    this.pending = Promise.resolve(config).then((c) => {
      this.config = c;
      this.transport = buildTransport(c, idleConnections(maxInFlight), opts.http2 ?? true);
      return this.transport;
    });
    // A failure surfaces on the first request; do not let it become an unhandled rejection.
    this.pending.catch(() => {});
  }

  /**
   * A client for a loaded kubeconfig (credentials resolved in the background). Usually reached
   * through kubeconfig.ts's createKubeClient.
   */
  static fromKubeConfig(
    kc: { server: string; restConfig: Promise<RestConfig> },
    opts: KubeClientOptions = {},
  ): KubeClient {
    return new KubeClient(kc.restConfig, opts, kc.server);
  }

  /** The apiserver URL, e.g. https://127.0.0.1:6443. */
  get server(): string {
    return this.config?.server ?? this.serverUrl;
  }

  /** Closes pooled connections. In-flight requests and watches fail with a TransportError. */
  close(): void {
    this.transport?.agent.destroy();
    this.transport?.h2?.close();
    this.transport?.h2Fenced?.close();
  }

  /**
   * A view of this client that shares its connections, credentials and rate limiter, and whose requests all carry
   * `scope` (nested scopes combine). The controller's writes go through one scoped to its leadership: aborted when
   * leadership ends, and fenced by the Lease before each write. The view delegates to this client through its
   * prototype, so state that arrives later (the transport, refreshed credentials) is seen by both.
   */
  withScope(scope: RequestScope): KubeClient {
    const outer = this.scope;
    const view = Object.create(this) as KubeClient;
    view.scope = {
      signal: anySignal(outer.signal, scope.signal),
      beforeWrite:
        outer.beforeWrite && scope.beforeWrite
          ? () => outer.beforeWrite!() ?? scope.beforeWrite!()
          : (outer.beforeWrite ?? scope.beforeWrite),
      onLateWrite:
        outer.onLateWrite && scope.onLateWrite
          ? (write) => (outer.onLateWrite!(write), scope.onLateWrite!(write))
          : (outer.onLateWrite ?? scope.onLateWrite),
    };
    return view;
  }

  // --- verbs -----------------------------------------------------------------------------------

  async get<T = KubeObject>(
    type: ResourceType,
    target: ObjectTarget,
    opts: RequestOptions & { subresource?: string } = {},
  ) {
    const path = resourcePath(type, requireName(type, target), opts.subresource);
    return this.request<T>('get', 'GET', path, {}, undefined, undefined, opts);
  }

  /**
   * The resources a group version serves, subresources included (`pods/resize`): discovery's APIResourceList, as
   * client-go's DiscoveryClient.ServerResourcesForGroupVersion (https://github.com/kubernetes/client-go/blob/master/discovery/discovery_client.go).
   */
  async serverResources(type: Pick<ResourceType, 'group' | 'version'>, opts: RequestOptions = {}): Promise<string[]> {
    const path = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
    const list = await this.request<{ resources?: { name: string }[] }>(
      'get',
      'GET',
      path,
      {},
      undefined,
      undefined,
      opts,
    );
    return (list.resources ?? []).map((r) => r.name);
  }

  /** get, or undefined when the object does not exist (controller-runtime's client.IgnoreNotFound on a read). */
  async getIfExists<T = KubeObject>(
    type: ResourceType,
    target: ObjectTarget,
    opts: RequestOptions & { subresource?: string } = {},
  ): Promise<T | undefined> {
    try {
      return await this.get<T>(type, target, opts);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** One page (or everything, without `limit`). With `decodeItem`, items are decoded one by one as they arrive. */
  async list<T = KubeObject>(type: ResourceType, opts: DecodedListOptions<T> = {}): Promise<KubeList<T>> {
    const path = resourcePath(type, { namespace: opts.namespace });
    const query = {
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      limit: opts.limit,
      continue: opts.continue,
      resourceVersion: opts.resourceVersion,
      resourceVersionMatch: opts.resourceVersionMatch,
    };
    const { decodeItem } = opts;
    const decode = decodeItem ? (res: http.IncomingMessage) => decodeList(res, decodeItem) : undefined;
    return this.request<KubeList<T>>('list', 'GET', path, query, undefined, undefined, opts, decode);
  }

  /**
   * All pages of a list, as client-go's pager (k8s.io/client-go/tools/pager): `pageSize` items at
   * a time (0: one unpaged request), one consistent snapshot. The continue pages carry no
   * resourceVersion (the apiserver refuses both together: "specifying resource version is not
   * allowed when using continue"). If the continue token expires mid-way (410), it falls back to
   * one unpaged list at the requested resourceVersion, as the pager's FullListIfExpired.
   * `paginated` says whether the server split the answer into pages (client-go's paginatedResult).
   */
  async listAll<T = KubeObject>(
    type: ResourceType,
    opts: Omit<DecodedListOptions<T>, 'limit' | 'continue'> & { pageSize?: number } = {},
  ): Promise<KubeList<T> & { paginated: boolean }> {
    const { pageSize = 500, ...rest } = opts;
    const items: T[] = [];
    let cont: string | undefined;
    let first: KubeList<T> | undefined;
    for (;;) {
      let page: KubeList<T>;
      try {
        page = await this.list<T>(
          type,
          cont
            ? { ...rest, resourceVersion: undefined, resourceVersionMatch: undefined, limit: pageSize, continue: cont }
            : { ...rest, limit: pageSize > 0 ? pageSize : undefined },
        );
      } catch (err) {
        if (cont && isGone(err)) return { ...(await this.list<T>(type, rest)), paginated: true };
        throw err;
      }
      first ??= page;
      for (const item of page.items ?? []) items.push(item);
      cont = page.metadata?.continue;
      if (!cont) {
        return {
          apiVersion: page.apiVersion,
          kind: page.kind,
          metadata: { resourceVersion: page.metadata?.resourceVersion ?? first.metadata?.resourceVersion },
          items,
          paginated: page !== first,
        };
      }
    }
  }

  async create<T extends KubeObject = KubeObject>(
    type: ResourceType,
    obj: T,
    opts: WriteOptions & { namespace?: string; subresource?: string; name?: string } = {},
  ): Promise<T> {
    const namespace = opts.namespace ?? obj.metadata?.namespace;
    const path = resourcePath(type, { namespace, name: opts.subresource ? opts.name : undefined }, opts.subresource);
    return this.request<T>('create', 'POST', path, writeQuery(opts), obj, 'application/json', opts);
  }

  /** PUT: full replacement. Carries metadata.resourceVersion, so it fails with Conflict on a stale copy. */
  async update<T extends KubeObject = KubeObject>(
    type: ResourceType,
    obj: T,
    opts: WriteOptions & { subresource?: string } = {},
  ): Promise<T> {
    const path = resourcePath(type, requireName(type, obj.metadata), opts.subresource);
    return this.request<T>('update', 'PUT', path, writeQuery(opts), obj, 'application/json', opts);
  }

  /** PUT to the status subresource. */
  async updateStatus<T extends KubeObject = KubeObject>(type: ResourceType, obj: T, opts: WriteOptions = {}) {
    return this.update<T>(type, obj, { ...opts, subresource: 'status' });
  }

  /**
   * PATCH with the right Content-Type for `type` (a recurring client-node pitfall, javascript#862).
   * `patch` is a JSON Patch array for 'json', an object otherwise. 'apply' needs fieldManager.
   */
  async patch<T = KubeObject>(
    type: ResourceType,
    target: ObjectTarget,
    patch: unknown,
    opts: PatchOptions,
  ): Promise<T> {
    if (opts.type === 'apply' && !opts.fieldManager) throw new Error('server-side apply needs a fieldManager');
    if (opts.type === 'json' && !Array.isArray(patch)) throw new Error('a JSON patch must be an array of operations');
    const path = resourcePath(type, requireName(type, target), opts.subresource);
    const query = { ...writeQuery(opts), force: opts.type === 'apply' && opts.force ? 'true' : undefined };
    return this.request<T>('patch', 'PATCH', path, query, patch, patchContentTypes[opts.type], opts);
  }

  /** PATCH the status subresource. */
  async patchStatus<T = KubeObject>(type: ResourceType, target: ObjectTarget, patch: unknown, opts: PatchOptions) {
    return this.patch<T>(type, target, patch, { ...opts, subresource: 'status' });
  }

  /**
   * DELETE with DeleteOptions. Preconditions (uid, resourceVersion) make it fail with Conflict
   * rather than delete a different incarnation of the name. Returns the object (when deletion is
   * deferred by finalizers or grace) or a Status.
   */
  async delete<T = KubeObject | Status>(
    type: ResourceType,
    target: ObjectTarget,
    opts: DeleteOptions = {},
  ): Promise<T> {
    const path = resourcePath(type, requireName(type, target));
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.dryRun) body.dryRun = ['All'];
    return this.request<T>('delete', 'DELETE', path, {}, body, 'application/json', opts);
  }

  /**
   * Streams a watch: newline-delimited JSON events, each handed to `onEvent` as it arrives.
   * Resolves when the server ends the stream (timeoutSeconds elapsed, apiserver shutdown),
   * rejects with ApiError for a non-200 answer (e.g. 410 Gone), TransportError when the
   * connection breaks, or the signal's reason when aborted. An exception from `onEvent` ends
   * the watch and rejects with it. ERROR events are passed on, not thrown: the caller decides.
   */
  async watch<T = KubeObject>(
    type: ResourceType,
    opts: WatchOptions,
    onEvent: (event: WatchEvent<T>) => void,
  ): Promise<void> {
    const path = resourcePath(type, { namespace: opts.namespace });
    const query = {
      watch: 'true',
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: opts.allowWatchBookmarks ? 'true' : undefined,
      timeoutSeconds: opts.timeoutSeconds,
    };
    const signal = anySignal(this.scope.signal, opts.signal);
    // A watch takes a token but no slot of maxInFlight: it holds its connection for as long as it runs.
    await this.limiter.wait(opts.priority, signal, false);
    const t = await this.getTransport();
    const url = buildUrl(t.base, path, query);
    const started = performance.now();
    signal?.throwIfAborted();

    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let req: http.ClientRequest | undefined = undefined;
      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        if (err !== undefined) {
          req?.destroy();
          reject(err);
        } else resolve();
      };
      const onAbort = () => finish(signal?.reason ?? new DOMException('aborted', 'AbortError'));
      signal?.addEventListener('abort', onAbort, { once: true });

      req = this.send(t, 'GET', url, undefined, undefined);
      req.on('error', (err) => finish(signal?.aborted ? signal.reason : new TransportError('watch', path, err)));
      req.on('response', (res) => {
        const code = res.statusCode ?? 0;
        this.observe('watch', 'GET', t.base.host, String(code), started);
        if (code !== 200) {
          readBody(res)
            .then((text) => finish(apiErrorFrom('watch', path, code, text, res.headers['retry-after'])))
            .catch((err: unknown) => finish(new TransportError('watch', path, err)));
          return;
        }
        const lines = new JsonLinesDecoder();
        let ended = false;
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          opts.onActivity?.();
          try {
            lines.write(chunk, (event) => {
              try {
                onEvent(event as WatchEvent<T>);
              } catch (err) {
                finish(err);
              }
              return !settled;
            });
          } catch (err) {
            // A torn or corrupt stream: client-go ends the watch on a decode error too.
            finish(new TransportError('watch', path, err));
          }
        });
        res.on('end', () => {
          ended = true;
          finish();
        });
        res.on('error', (err) => finish(signal?.aborted ? signal.reason : new TransportError('watch', path, err)));
        res.on('close', () => {
          if (!ended) finish(new TransportError('watch', path, new Error('watch stream closed before its end')));
        });
      });
      req.end();
    });
  }

  // --- plumbing --------------------------------------------------------------------------------

  private async request<T>(
    verb: string,
    method: string,
    path: string,
    query: Record<string, string | number | undefined>,
    body: unknown,
    contentType: string | undefined,
    call: RequestOptions,
    /** Decodes a 2xx answer's body from the stream (default: read whole, then JSON.parse). */
    decode?: (res: http.IncomingMessage) => Promise<unknown>,
  ): Promise<T> {
    const payload = body === undefined ? undefined : goJson(body);
    // The scope's signal (the leadership) and the call's live as long as the process may: they are followed by
    // listeners taken off when the request ends, not combined into a signal they would hold (followSignals).
    const cancel = this.scope.signal && call.signal ? followSignals([this.scope.signal, call.signal]) : undefined;
    const signal = cancel?.signal ?? this.scope.signal ?? call.signal;
    try {
      let authRetried = false;
      let resetRetried = false;
      let refusedRetried = false;
      const beforeWrite = method === 'GET' ? undefined : this.scope.beforeWrite;
      const onLateWrite = this.scope.onLateWrite;
      const fence: Fence | undefined = beforeWrite && {
        refused: () => {
          const reason = beforeWrite();
          return reason === undefined ? undefined : new WriteRefusedError(verb, path, reason);
        },
        late: onLateWrite && ((pausedMs) => onLateWrite({ verb, path, pausedMs })),
      };
      for (let attempt = 0; ; attempt++) {
        const release = await this.limiter.wait(call.priority, signal);
        let t: Transport;
        let started: number;
        let code: number;
        let text: string;
        let decoded: unknown;
        let retryAfter: string | string[] | undefined;
        try {
          t = await this.getTransport();
          signal?.throwIfAborted();
          // Checked here, after any wait: a write that waited in the rate limiter or for a Retry-After must not go out
          // on a belief that has since expired (nor open a connection for it); and again as its bytes go out: by
          // roundTrip in that tick over HTTP/1.1, by the session's WriteGate at each of its writes over HTTP/2.
          const refused = fence?.refused();
          if (refused) throw refused;
          const url = buildUrl(t.base, path, query);
          started = performance.now();
          const deadline = followSignals(signal ? [signal] : [], this.requestTimeoutMs);
          try {
            // Lists (large, streamed bodies) and watches stay on HTTP/1.1; see H2Connection. Fenced writes go over a
            // session of their own, whose socket checks their fence again as it writes their frames (WriteGate): Node's
            // HTTP/2 session writes a new stream's frames only from an immediate it schedules (node_http2.cc,
            // MaybeScheduleWrite), after this tick, so a check here alone would let a leader frozen (SIGSTOP) in
            // between send, on resuming, a write after another had taken over (e2e/controller/leader-fencing.e2e.ts).
            const h2 = fence ? t.h2Fenced : t.h2;
            const session = h2 && verb !== 'list' && !decode ? await h2.session(deadline.signal) : undefined;
            ({ code, text, decoded, retryAfter } = session
              ? await this.roundTripH2(h2!, session, t, method, url, payload, contentType, deadline.signal, fence)
              : await this.roundTrip(t, method, url, payload, contentType, deadline.signal, decode, fence));
          } catch (err) {
            this.observe(verb, method, t.base.host, '<error>', started);
            if (signal?.aborted) throw signal.reason;
            if (err instanceof WriteRefusedError) throw err;
            // A stream the server refused unprocessed (REFUSED_STREAM, past a GOAWAY's last stream) or one that could
            // not be opened on a closing session never reached the apiserver: any method is safe to send again
            // (https://www.rfc-editor.org/rfc/rfc9113#section-8.7).
            if (err instanceof UnprocessedError && !refusedRetried) {
              refusedRetried = true;
              continue;
            }
            // A pooled keep-alive socket the server already closed surfaces as ECONNRESET on reuse (an HTTP/2 session
            // lost mid-request as well). Reads are safe to repeat once; writes are not (the server may have applied them).
            const errno = (err as { code?: string }).code;
            if (method === 'GET' && !resetRetried && (errno === 'ECONNRESET' || errno === 'EPIPE')) {
              resetRetried = true;
              continue;
            }
            throw new TransportError(verb, path, err);
          } finally {
            deadline.release();
          }
        } finally {
          // The answer is read (or the request failed): its slot goes to the next request waiting.
          release();
        }
        this.observe(verb, method, t.base.host, String(code), started);
        if (code >= 200 && code < 300) return (decode ? decoded : text ? JSON.parse(text) : {}) as T;

        const error = apiErrorFrom(verb, path, code, text, retryAfter);
        if (code === 401 && this.config?.refreshHeaders && !authRetried) {
          // Rotated token (exec plugin, projected service account token): refresh and try once more.
          authRetried = true;
          t.headersAt = -Infinity;
          continue;
        }
        // client-go (rest.Request.retry / checkWait): retry 429, and 5xx that carry Retry-After.
        if ((code === 429 || (code >= 500 && error.retryAfterSeconds !== undefined)) && attempt < this.maxRetries) {
          const seconds = Math.min(error.retryAfterSeconds ?? 1, this.maxRetryAfterSeconds);
          await sleep(seconds * 1000, undefined, { signal });
          continue;
        }
        throw error;
      }
    } finally {
      cancel?.release();
    }
  }

  private roundTrip(
    t: Transport,
    method: string,
    url: URL,
    payload: string | undefined,
    contentType: string | undefined,
    signal: AbortSignal,
    decode?: (res: http.IncomingMessage) => Promise<unknown>,
    fence?: Fence,
  ): Promise<{ code: number; text: string; decoded?: unknown; retryAfter: string | string[] | undefined }> {
    return new Promise((resolve, reject) => {
      const req = this.send(t, method, url, payload, contentType, signal);
      req.on('error', reject);
      req.on('response', (res) => {
        const code = res.statusCode ?? 0;
        const retryAfter = res.headers['retry-after'];
        if (decode && code >= 200 && code < 300) {
          decode(res).then((decoded) => resolve({ code, text: '', decoded, retryAfter }), reject);
          return;
        }
        readBody(res).then((text) => resolve({ code, text, retryAfter }), reject);
      });
      if (!fence) {
        req.end(payload);
        return;
      }
      // A write is fenced again once its socket can take it, and sent in that same tick: nothing of the request is
      // on the wire before req.end, and the agent hands over a socket a tick later (a kept-alive one) or after a
      // TCP connect and TLS handshake (a new one). A process stopped (SIGSTOP, a long pause) after the first check
      // would otherwise send, when it resumes, writes that passed a fence which has since closed.
      req.once('socket', (socket) => {
        const write = () => {
          const checked = performance.now();
          const error = fence.refused();
          if (error) req.destroy(error);
          else {
            // req.end hands the request to the kernel before it returns (a socket that can take it).
            req.end(payload);
            if (fence.late && fence.refused()) fence.late(performance.now() - checked);
          }
        };
        // A kept-alive socket is ready now; a new one once connected (and, over TLS, its handshake done).
        if (req.reusedSocket) write();
        else socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', write);
      });
    });
  }

  /**
   * roundTrip over HTTP/2: one stream of `session`, the answer read whole (no `decode`: lists go over HTTP/1.1). A
   * `refused` fence is checked again by the session's WriteGate each time it writes before this request's last frame.
   */
  private roundTripH2(
    h2: H2Connection,
    session: http2.ClientHttp2Session,
    t: Transport,
    method: string,
    url: URL,
    payload: string | undefined,
    contentType: string | undefined,
    signal: AbortSignal,
    fence?: Fence,
  ): Promise<{ code: number; text: string; decoded?: unknown; retryAfter: string | string[] | undefined }> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      // HTTP/2 header names are lower case (RFC 9113 section 8.2.1).
      const headers: http2.OutgoingHttpHeaders = { ':method': method, ':path': url.pathname + url.search };
      for (const [k, v] of Object.entries(this.requestHeaders(t, payload, contentType))) headers[k.toLowerCase()] = v;
      let stream: http2.ClientHttp2Stream;
      try {
        stream = h2.request(session, headers, payload === undefined, fence);
      } catch (err) {
        // The session closed (GOAWAY) or broke since it was handed out: nothing was sent.
        return reject(new UnprocessedError(err));
      }
      let settled = false;
      const finish = (
        err: unknown,
        answer?: { code: number; text: string; retryAfter: string | string[] | undefined },
      ) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        if (answer) resolve(answer);
        else reject(err);
      };
      const onAbort = () => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        // A request that timed out may sit on a connection that died silently: check that the session still answers.
        if ((signal.reason as Error | undefined)?.name === 'TimeoutError') h2.probe(session);
        finish(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      stream.on('response', (h) => {
        const code = Number(h[':status']);
        readBody(stream).then((text) => finish(undefined, { code, text, retryAfter: h['retry-after'] }), finish);
      });
      stream.on('error', (err) => finish(h2.streamError(stream, err)));
      // 'close' may come in the same tick as 'end', before readBody's promise settles: a stream that ended is answered.
      let ended = false;
      stream.once('end', () => (ended = true));
      stream.on('close', () => {
        if (!ended) finish(h2.streamError(stream, undefined));
      });
      // Its last frame (END_STREAM) was handed to the socket once the write's callback runs (node_http2.cc calls it
      // after the session's socket write completed): from then on the gate need not fence this stream.
      if (payload !== undefined) stream.end(payload, () => h2.sent(stream));
    });
  }

  private send(
    t: Transport,
    method: string,
    url: URL,
    payload: string | undefined,
    contentType: string | undefined,
    signal?: AbortSignal,
  ): http.ClientRequest {
    const mod = url.protocol === 'https:' ? https : http;
    return mod.request(url, { method, headers: this.requestHeaders(t, payload, contentType), agent: t.agent, signal });
  }

  /**
   * A request's headers, over HTTP/1.1 and HTTP/2 alike: the transport's (authorization), what we accept, who we are,
   * and the body's type and length.
   */
  private requestHeaders(
    t: Transport,
    payload: string | undefined,
    contentType: string | undefined,
  ): Record<string, string | number> {
    const headers: Record<string, string | number> = {
      ...t.headers,
      Accept: 'application/json',
      'User-Agent': this.userAgent,
    };
    if (payload !== undefined) {
      headers['Content-Type'] = contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    return headers;
  }

  private observe(verb: string, method: string, host: string, code: string, started: number): void {
    if (!this.onRequest) return;
    try {
      this.onRequest({ verb, method, host, code, durationSeconds: (performance.now() - started) / 1000 });
    } catch {
      // Metrics must never break a request.
    }
  }

  private async getTransport(): Promise<Transport> {
    const t = this.transport ?? (await this.pending);
    const config = this.config as RestConfig;
    if (config.refreshHeaders && performance.now() - t.headersAt > AUTH_REFRESH_MS) {
      t.headers = { ...config.headers, ...(await config.refreshHeaders()) };
      t.headersAt = performance.now();
    }
    return t;
  }
}

function anySignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  return a && b ? AbortSignal.any([a, b]) : (a ?? b);
}

/**
 * A signal that aborts when one of `sources` does (with its reason) or, with `timeoutMs`, after that long (with a
 * TimeoutError, as AbortSignal.timeout's); `release` stops following them once the request is answered. For every
 * request, in place of `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: that pair outlives the request. The
 * timeout's timer stays in Node's timer list until it fires or its signal is collected by a full collection (a
 * FinalizationRegistry clears it), and the combined signal is held, by weak references and a registry of its own, by
 * the long-lived source (https://github.com/nodejs/node/issues/55351,
 * https://github.com/nodejs/node/issues/64476). Through a rollout of 5,000 pods a heap snapshot of the manager held
 * about 3,000 such timers, with their signals, weak references and registry cells: one per request of the last
 * 60 s, each kept past the young generation's collections into the old generation's (bench/README.md, section 6).
 * Here the timer is cleared and the listeners are removed when the request ends, so all of it can die young.
 */
export function followSignals(
  sources: readonly AbortSignal[],
  timeoutMs?: number,
): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const followed: AbortSignal[] = [];
  const onAbort = function (this: AbortSignal) {
    release();
    controller.abort(this.reason);
  };
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          release();
          controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
        }, timeoutMs).unref();
  function release(): void {
    if (timer !== undefined) clearTimeout(timer);
    for (const s of followed) s.removeEventListener('abort', onAbort);
    followed.length = 0;
  }
  for (const s of sources) {
    if (s.aborted) {
      release();
      controller.abort(s.reason);
      break;
    }
    s.addEventListener('abort', onAbort, { once: true });
    followed.push(s);
  }
  return { signal: controller.signal, release };
}

/** An HTTP/2 stream that the server did not process (or that was never opened): safe to send again. */
class UnprocessedError extends Error {
  constructor(cause: unknown) {
    super(`not processed by the server: ${(cause as Error | undefined)?.message ?? String(cause)}`, { cause });
    this.name = 'UnprocessedError';
  }
}

/** Why a stream ended without its whole answer, classified as roundTrip's errors are. */
function streamError(stream: http2.ClientHttp2Stream, err: Error | undefined): Error {
  if (stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM) return new UnprocessedError(err ?? 'REFUSED_STREAM');
  // The session was lost under it: what a reset HTTP/1.1 connection is.
  const reset = new Error(`HTTP/2 stream closed before its answer${err ? `: ${err.message}` : ''}`, { cause: err });
  return Object.assign(reset, { code: 'ECONNRESET' });
}

/** A write's fence (RequestScope): why it must not go out now, and who hears that it went out after it closed. */
interface Fence {
  refused: () => WriteRefusedError | undefined;
  late: ((pausedMs: number) => void) | undefined;
}

/** A fenced stream the WriteGate checks before each write, until its last frame was handed to the socket. */
interface GatedStream extends Fence {
  /** The gate's writes when the stream was opened: none of its frames went out while the count stays there. */
  since: number;
}

/**
 * The socket of the HTTP/2 session that carries fenced writes (RequestScope.beforeWrite). Every byte the session
 * writes passes through here, and while any of its streams has not yet handed its last frame (END_STREAM) to the
 * socket, each write first checks their fences, in the call that hands the bytes to the TLS socket, which encrypts
 * them and writes them to the kernel before returning (as req.end does for HTTP/1.1 in KubeClient.roundTrip). A fence
 * that refuses closes the session without writing: the frames of one stream cannot be dropped alone, since other
 * streams' frames share the write and HPACK's header table is the connection's. A stream cut off before its
 * END_STREAM is not acted on: the apiserver decodes a request only from its whole body, which ends with END_STREAM
 * (https://www.rfc-editor.org/rfc/rfc9113#section-8.1).
 * Node's HTTP/2 session writes to a socket that is not a native stream through JavaScript (JSStreamSocket,
 * https://github.com/nodejs/node/blob/main/lib/internal/js_stream_socket.js), in the immediate that flushes the
 * session's frames (node_http2.cc, SendPendingData): that is the moment the frames actually leave, and where the
 * fence must be checked.
 */
class WriteGate extends Duplex {
  private readonly streams = new Map<http2.ClientHttp2Stream, GatedStream>();
  /** Writes handed to the socket so far. */
  private writes = 0;
  /** Set when a fence closed the session: the streams nothing of which was written, each with its own refusal. */
  private unsent: Map<http2.ClientHttp2Stream, WriteRefusedError | undefined> | undefined;

  constructor(private readonly socket: tls.TLSSocket) {
    super();
    socket.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) socket.pause();
    });
    socket.on('end', () => this.push(null));
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
  }

  track(stream: http2.ClientHttp2Stream, fence: Fence): void {
    this.streams.set(stream, { refused: fence.refused, late: fence.late, since: this.writes });
    stream.once('close', () => this.streams.delete(stream));
  }

  /** `stream`'s last frame was handed to the socket: its fence no longer holds the session's writes. */
  sent(stream: http2.ClientHttp2Stream): void {
    this.streams.delete(stream);
  }

  /**
   * For a stream of a session a fence closed, when none of its frames was written: the refusal of its own fence, or
   * undefined when another stream's fence closed the session (it is safe to send again). Otherwise (some of it may
   * have gone out) not known.
   */
  unsentOutcome(stream: http2.ClientHttp2Stream): { refused: WriteRefusedError | undefined } | undefined {
    return this.unsent?.has(stream) ? { refused: this.unsent.get(stream) } : undefined;
  }

  ref(): this {
    this.socket.ref();
    return this;
  }

  unref(): this {
    this.socket.unref();
    return this;
  }

  override _read(): void {
    this.socket.resume();
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (err?: Error | null) => void): void {
    const checked = performance.now();
    let refusal: WriteRefusedError | undefined;
    for (const { refused } of this.streams.values()) if ((refusal = refused())) break;
    if (refusal) {
      this.unsent = new Map();
      for (const [stream, { refused, since }] of this.streams)
        if (since === this.writes) this.unsent.set(stream, refused());
      // Fails the gate, which destroys it with the socket and the session: nothing of this write is sent.
      callback(refusal);
      return;
    }
    this.writes++;
    // The callback runs once the socket took the bytes: the session hands over its next write only then (one write
    // at a time, JSStreamSocket), so each one is checked as it is written, never buffered here after a check.
    this.socket.write(chunks.length === 1 ? chunks[0]!.chunk : Buffer.concat(chunks.map((c) => c.chunk)), callback);
    // The socket handed these bytes to the kernel before returning. A fence that refuses now closed after the check
    // above: the process was paused while sending (SIGSTOP, a paused VM), and they may have gone out only as it
    // resumed. Reported for each stream not yet sent, whose frames may have been among them (RequestScope.onLateWrite).
    for (const { refused, late } of this.streams.values()) if (late && refused()) late(performance.now() - checked);
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.socket.end(callback);
  }

  override _destroy(err: Error | null, callback: (err: Error | null) => void): void {
    this.socket.destroy();
    callback(err);
  }
}

/**
 * The HTTP/2 connection that carries the client's unary requests, as client-go multiplexes all of its requests over
 * one (https://github.com/kubernetes/apimachinery/blob/master/pkg/util/net/http.go, SetTransportDefaults, configures
 * http2 on the transport; https://github.com/kubernetes/client-go/blob/master/transport/cache.go). Over HTTP/1.1 each
 * request in flight needs a connection of its own: at client QPS 2000 against a loaded apiserver the creates of one
 * slow-start batch from the manager reached the apiserver spread over 100-200 ms (30-60 ms apart), each extra
 * concurrent request opening a new TLS connection (a handshake on both sides, about 50 KiB in the manager), where
 * kube-controller-manager's, over HTTP/2, arrived within 1 ms.
 * Lists stay on HTTP/1.1 (their large bodies are decoded as they stream, and HTTP/2 flow control would pace them by
 * its 64 KiB window), and so do watches (each holds its stream for minutes). The writes of a scope with a write fence
 * (RequestScope.beforeWrite) go over a connection of their own (`fenced`), whose socket is a WriteGate.
 * One session, connected when first needed, replaced once it closes, receives a GOAWAY or fails. It is unref'd while
 * idle, so an idle client never keeps the process alive. A server that does not negotiate h2 by ALPN is spoken to over
 * HTTP/1.1 from then on.
 */
class H2Connection {
  private current: http2.ClientHttp2Session | undefined;
  private connecting: Promise<http2.ClientHttp2Session | undefined> | undefined;
  private off = false;
  private readonly active = new WeakMap<http2.ClientHttp2Session, { streams: number }>();
  private readonly gates = new WeakMap<http2.ClientHttp2Session | http2.ClientHttp2Stream, WriteGate>();

  constructor(
    private readonly base: URL,
    private readonly tlsOptions: tls.ConnectionOptions,
    /** Its sessions write through a WriteGate, which checks the fence of each stream until the stream is sent. */
    private readonly fenced = false,
  ) {}

  /** The connected session, or undefined when the server does not speak HTTP/2 (use HTTP/1.1). */
  async session(signal: AbortSignal): Promise<http2.ClientHttp2Session | undefined> {
    if (this.off) return undefined;
    const s = this.current;
    if (s && !s.closed && !s.destroyed) return s;
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    signal.throwIfAborted();
    const connecting = this.connecting;
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      connecting.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /** Opens a stream of `session`, which holds the process alive while any stream of it is open. */
  request(
    session: http2.ClientHttp2Session,
    headers: http2.OutgoingHttpHeaders,
    endStream: boolean,
    fence?: Fence,
  ): http2.ClientHttp2Stream {
    const gate = this.gates.get(session);
    if (this.fenced && !(gate && fence)) throw new Error('a fenced HTTP/2 session carries fenced writes only');
    const stream = session.request(headers, { endStream });
    // Tracked in the tick it was opened: its frames are written from a later immediate, through the gate.
    if (gate && fence) {
      gate.track(stream, fence);
      this.gates.set(stream, gate);
    }
    const live = this.active.get(session)!;
    // The session's unref does not reach the socket under a gate (JSStreamSocket's handle is no libuv handle).
    if (live.streams++ === 0) {
      session.ref();
      gate?.ref();
    }
    stream.once('close', () => {
      if (--live.streams === 0 && !session.destroyed) {
        session.unref();
        gate?.unref();
      }
    });
    return stream;
  }

  /** `stream`'s last frame was handed to the socket. */
  sent(stream: http2.ClientHttp2Stream): void {
    this.gates.get(stream)?.sent(stream);
  }

  /** Why a stream ended without its whole answer, classified as roundTrip's errors are. */
  streamError(stream: http2.ClientHttp2Stream, err: Error | undefined): Error {
    // Its session closed by a fence before any of its frames was written: refused, or (another stream's fence) safe to
    // send again.
    const unsent = this.gates.get(stream)?.unsentOutcome(stream);
    if (unsent) return unsent.refused ?? new UnprocessedError(err ?? 'the session was closed by a write fence');
    return streamError(stream, err);
  }

  /** Destroys `session` unless it answers a PING within 15 s (client-go's http2 PingTimeout). */
  probe(session: http2.ClientHttp2Session): void {
    if (session.destroyed) return;
    const timer = setTimeout(() => session.destroy(new Error('HTTP/2 PING unanswered')), 15_000).unref();
    try {
      const sent = session.ping((err) => {
        clearTimeout(timer);
        if (err && !session.destroyed) session.destroy(err);
      });
      if (!sent) clearTimeout(timer);
    } catch {
      clearTimeout(timer); // too many PINGs outstanding already: one of them decides
    }
  }

  close(): void {
    this.current?.destroy();
    this.current = undefined;
  }

  private dial(): tls.TLSSocket {
    const host = this.base.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(this.base.port || 443);
    // h2 and HTTP/1.1 both offered by ALPN: a Go server without h2 refuses a handshake with no protocol in common.
    const socket = tls.connect({ ...this.tlsOptions, host, port, ALPNProtocols: ['h2', 'http/1.1'] });
    // TCP keep-alive probes, as the HTTP/1.1 agent's (30 s, as client-go's dialer).
    socket.setKeepAlive(true, 30_000);
    // No Nagle, as Go's dialer (TCP_NODELAY on every TCP connection) and the HTTP/1.1 agent: the session's small
    // frames (a patch, a WINDOW_UPDATE) go out at once instead of waiting for the apiserver's ACK of the previous
    // segment. Node's session turns it off only on a socket it holds itself (Http2Session's constructor calls
    // socket.setNoDelay(), https://github.com/nodejs/node/blob/main/lib/internal/http2/core.js), not through the
    // write gate.
    socket.setNoDelay(true);
    return socket;
  }

  private async connect(): Promise<http2.ClientHttp2Session | undefined> {
    if (!this.fenced) return this.open(this.dial());
    // The gate's socket is handed over connected: it then writes what the gate passes in that call, never from a
    // buffer it holds until the handshake is done.
    const socket = this.dial();
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      const onClose = () =>
        reject(Object.assign(new Error('TLS connection closed while connecting'), { code: 'ECONNRESET' }));
      socket.once('error', onError).once('close', onClose);
      socket.once('secureConnect', () => {
        socket.off('error', onError).off('close', onClose);
        resolve();
      });
    });
    if (socket.alpnProtocol !== 'h2') {
      this.off = true;
      socket.destroy();
      return undefined;
    }
    return this.open(new WriteGate(socket));
  }

  private open(socket: tls.TLSSocket | WriteGate): Promise<http2.ClientHttp2Session | undefined> {
    return new Promise((resolve, reject) => {
      const gate = socket instanceof WriteGate ? socket : undefined;
      // Given a socket that is not a native stream (the gate), the session wraps it in a JSStreamSocket.
      const session = http2.connect(this.base.origin, { createConnection: () => socket as unknown as tls.TLSSocket });
      let connected = false;
      const drop = () => {
        if (this.current === session) this.current = undefined;
      };
      session.on('error', (err) => {
        drop();
        if (!connected) reject(err);
      });
      session.on('goaway', drop);
      session.on('close', () => {
        drop();
        if (!connected)
          reject(Object.assign(new Error('HTTP/2 session closed while connecting'), { code: 'ECONNRESET' }));
      });
      session.once('connect', () => {
        connected = true;
        // Under a gate, ALPN was checked on its TLS socket (the session sees a plain stream).
        if (!gate && session.alpnProtocol !== 'h2') {
          this.off = true;
          session.destroy();
          resolve(undefined);
          return;
        }
        this.active.set(session, { streams: 0 });
        if (gate) this.gates.set(session, gate);
        session.unref();
        gate?.unref();
        this.current = session;
        resolve(session);
      });
    });
  }
}

function buildTransport(config: RestConfig, maxIdle: number, useHttp2: boolean): Transport {
  const base = new URL(config.server);
  // keepAlive also turns on TCP keep-alive probes (30 s, as client-go), which is what notices
  // a dead peer under an idle watch; 'lifo' keeps the pool small under bursty load. No maxSockets: the requests
  // in flight are bounded by the rate limiter (RequestThrottle, maxInFlight), which queues them by priority, and
  // the watches by the informers that start them.
  const common = {
    keepAlive: true,
    keepAliveMsecs: 30_000,
    scheduling: 'lifo' as const,
    maxFreeSockets: maxIdle,
  };
  const secure = base.protocol === 'https:';
  const tlsOptions: tls.ConnectionOptions = {
    // One TLS context for every connection: given ca, cert and key, tls.connect parses them and builds a
    // context of its own for each new connection (https://nodejs.org/api/tls.html#tlsconnectoptions-callback:
    // "secureContext: ... If not given, one is created by passing the entire options object to
    // tls.createSecureContext()").
    secureContext: secure ? tls.createSecureContext({ ca: config.ca, cert: config.cert, key: config.key }) : undefined,
    rejectUnauthorized: !config.insecureSkipTLSVerify,
  };
  if (config.tlsServerName) tlsOptions.servername = config.tlsServerName;
  const agent = secure
    ? new https.Agent({ ...common, ...tlsOptions, servername: config.tlsServerName })
    : new http.Agent(common);
  return {
    agent,
    base,
    headers: { ...config.headers },
    headersAt: config.refreshHeaders ? -Infinity : 0,
    h2: secure && useHttp2 ? new H2Connection(base, tlsOptions) : undefined,
    h2Fenced: secure && useHttp2 ? new H2Connection(base, tlsOptions, true) : undefined,
  };
}

function requireName(type: ResourceType, target: ObjectTarget | ObjectMeta): ObjectTarget {
  if (!target.name) throw new Error(`${type.resource}: an object name is required`);
  if (type.namespaced && !target.namespace) throw new Error(`${type.resource}/${target.name}: a namespace is required`);
  return { namespace: target.namespace, name: target.name };
}

function writeQuery(opts: WriteOptions): Record<string, string | undefined> {
  return { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined };
}

function buildUrl(base: URL, path: string, query: Record<string, string | number | undefined>): URL {
  const url = new URL(base.pathname.replace(/\/$/, '') + path, base);
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  return url;
}

function readBody(res: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

/** A list body decoded item by item (list-stream.ts), each item through `decodeItem` before the next is read. */
function decodeList<T>(res: http.IncomingMessage, decodeItem: (item: unknown) => T): Promise<KubeList<T>> {
  return new Promise((resolve, reject) => {
    const items: T[] = [];
    const decoder = new ListItemDecoder((item) => items.push(decodeItem(item)));
    const fail = (err: unknown) => {
      res.destroy();
      reject(err);
    };
    res.on('data', (chunk: Buffer) => {
      try {
        decoder.write(chunk);
      } catch (err) {
        fail(err);
      }
    });
    res.on('end', () => {
      try {
        const rest = decoder.end() as Omit<KubeList<T>, 'items'>;
        resolve({ ...rest, metadata: rest.metadata ?? {}, items });
      } catch (err) {
        fail(err);
      }
    });
    res.on('error', reject);
  });
}

function apiErrorFrom(
  verb: string,
  path: string,
  code: number,
  text: string,
  retryAfterHeader: string | string[] | undefined,
): ApiError {
  let status: Status | undefined;
  try {
    const parsed = JSON.parse(text) as Status;
    if (parsed && typeof parsed === 'object') status = parsed;
  } catch {
    status = text ? { message: text.slice(0, 500) } : undefined;
  }
  const header = Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader;
  const retryAfter = header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;
  return new ApiError(verb, path, code, status, retryAfter);
}

/**
 * JSON as Go's encoding/json writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped (they can only occur inside
 * strings). Bytes the apiserver keeps verbatim, such as ControllerRevision.data, then survive a Go client's
 * re-marshal unchanged; otherwise its next patch of the object fails with "field is immutable".
 */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
