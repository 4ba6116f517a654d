// The Fastify app of the admission webhook, built without listening so tests can use `app.inject`.
// Pitfalls handled here: any content type is parsed as JSON (the apiserver always sends JSON; a 415 would only
// confuse), `?timeout=` ignored, no stack trace ever sent.
// Limits (limits.ts): bodies beyond BODY_LIMIT get 413; beyond maxInFlight requests handled at once, 429 with
// Retry-After, counted from the moment a whole body has arrived (a slow sender holds a connection, never a slot),
// separately for admission and conversion; beyond maxBytesInFlight request bytes held (in all, and per client),
// 429 before the body is read; beyond maxPoolQueue large requests waiting for an admission thread, 429; the
// connection timeouts; TLS_POLICY (tls.ts) on HTTPS.
// The admission work itself (parse, checks, defaulting, validation, patch) runs on this thread for a small review
// (admitOnMainThread), and in the worker pool (pool.ts) for a larger one: then this thread only
// reads the body, hands it over, and sends the serialized answer back. The CRD conversion webhook (CONVERT_PATH,
// conversion.ts) has the same limits and a cap of its own; see CONVERT_ON_MAIN_THREAD_MAX_BYTES.
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { fastify, LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { CONVERT_PATH, MUTATE_PATH, VALIDATE_PATH } from '../src/api/constants.ts';
import { SETTING_MUTATE_PATH, SETTING_VALIDATE_PATH } from '../src/api/setting.ts';
import { ADMISSION_HANDLERS, handleAdmissionText, type AdmissionWebhook, type SerializedOutcome } from './admission.ts';
import { handleConversionText, type ConversionOutcome, type ConversionVerdict } from './conversion.ts';
import { BODY_LIMIT, formatBytes, webhookLimits, type AdmissionPoolSettings, type WebhookLimits } from './limits.ts';
import { webhookMetrics, type WebhookMetrics } from './metrics.ts';
import { startAdmissionPool, type AdmissionPool, type PoolAnswer } from './pool.ts';
import type { Verdict } from './response.ts';
import { TLS_POLICY } from './tls.ts';
import { leaveUnusedConnectionsIdle } from './unused-connections.ts';
import { limitConnections } from '../src/net/connection-limits.ts';

export { BODY_LIMIT };
/** Longer than the apiserver's idle-connection timeout (90 s), so the server never closes a connection the
 * apiserver is about to reuse. */
export const KEEP_ALIVE_TIMEOUT_MS = webhookLimits().keepAliveTimeoutMs;
/** Seconds a client is asked to wait after a 429; client-go (the apiserver's webhook client) honours it. */
export const RETRY_AFTER_SECONDS = 1;

export interface WebhookAppOptions {
  logger: Logger;
  metrics?: WebhookMetrics;
  /** TLS key/cert: an HTTPS server under TLS_POLICY. Omitted: plain HTTP (tests, inject). */
  https?: HttpsServerOptions;
  /** Overrides of the defaults of limits.ts. */
  limits?: Partial<WebhookLimits>;
  /** Overrides of the admission pool's threads and heap, derived from cores and the memory limit (tests). */
  pool?: Partial<AdmissionPoolSettings>;
  /** A pool to use instead of starting one (tests: one that records what reaches it); closed with the app. */
  admissionPool?: AdmissionPool;
}

/** The admission webhooks by path, each with its `webhook` label (the path without its slash). */
const WEBHOOKS: Record<string, { name: string; webhook: AdmissionWebhook }> = {
  [MUTATE_PATH]: { name: 'mutate-apps-kruise-io-daemonset', webhook: 'mutate' },
  [VALIDATE_PATH]: { name: 'validate-apps-kruise-io-daemonset', webhook: 'validate' },
  [SETTING_MUTATE_PATH]: { name: 'mutate-advanced-daemonset-io-daemonsetsetting', webhook: 'mutate-setting' },
  [SETTING_VALIDATE_PATH]: { name: 'validate-advanced-daemonset-io-daemonsetsetting', webhook: 'validate-setting' },
};

/** The conversion webhook's `webhook` label (the path without its slash, as for the admission webhooks). */
export const CONVERT_WEBHOOK = 'convert';

/**
 * ConversionReviews smaller than this are converted on this thread; larger ones in the admission pool. Measured
 * (2 cores, busy): a review of one real DaemonSet (the apiserver's usual request: a watch event or a GET, a few
 * KiB) takes 0.04 ms here (median), far less than the trip to a thread and back, and never waits there behind an
 * admission review; 64 KiB of empty containers, the costliest body per byte, about 3 ms and 1.5 MiB of heap. A
 * maximum-size review (BODY_LIMIT, a list of ~350 DaemonSets) takes 50-80 ms (up to 250 ms on a loaded machine;
 * mostly JSON.parse and JSON.stringify) and a hostile one (a million empty containers) 120 ms and 76 MiB of heap:
 * eight of those at once here would stall the lease renewal for a second or two and could exhaust the heap the
 * controller shares. In a pool thread a large one costs this thread nothing, and at worst the thread's bounded
 * heap (answered 413, naming the limit).
 */
export const CONVERT_ON_MAIN_THREAD_MAX_BYTES = 64 * 1024;

/**
 * AdmissionReviews smaller than this, with at most ADMISSION_ON_MAIN_THREAD_MAX_OBJECTS objects, are handled on
 * this thread; the others in the admission pool. A real DaemonSet's review (a few KiB; an UPDATE carries the object
 * twice, with managedFields) takes 0.02-0.05 ms here, less than the trip to a thread and back (a copy of the text,
 * a message each way, a thread's wake-up). The bytes alone do not bound the work: 32 KiB of empty containers
 * (10,000 of them) take 40 ms to validate, so the objects are counted too.
 */
export const ADMISSION_ON_MAIN_THREAD_MAX_BYTES = 32 * 1024;

/**
 * Objects (`{`, also counted inside strings: never fewer than the objects) a review handled on this thread may
 * hold. The costliest review within both bounds, 484 containers of a name and an image, takes 3 ms to default (7 ms
 * at p90 on a shared core); a real DaemonSet's UPDATE with managedFields has one to a few hundred.
 */
export const ADMISSION_ON_MAIN_THREAD_MAX_OBJECTS = 500;

/** Whether a review is small enough to handle on this thread (see ADMISSION_ON_MAIN_THREAD_MAX_BYTES). */
export function admitOnMainThread(body: Buffer): boolean {
  if (body.byteLength >= ADMISSION_ON_MAIN_THREAD_MAX_BYTES) return false;
  let objects = 0;
  for (let i = body.indexOf(0x7b); i !== -1; i = body.indexOf(0x7b, i + 1))
    if (++objects > ADMISSION_ON_MAIN_THREAD_MAX_OBJECTS) return false;
  return true;
}

/**
 * What the limits and the metrics keep of one webhook request, from its headers until its response is closed: one
 * record and one 'close' listener per request, where three async hooks, three listeners and a WeakMap entry were.
 */
interface WebhookRequest {
  /** The `webhook` label. */
  readonly webhook: string;
  readonly kind: 'admission' | 'conversion';
  readonly start: bigint;
  /** Request bytes reserved against maxBytesInFlight (0: none, refused before). */
  bytes: number;
  /** Counted against maxInFlight (its body arrived and it was let through). */
  handling: boolean;
  verdict?: Verdict | ConversionVerdict;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the limits' onRequest hook for a request to a webhook path; null for any other path. */
    webhookRequest: WebhookRequest | null;
  }
}

export function buildWebhookApp(opts: WebhookAppOptions): FastifyInstance {
  const log = opts.logger;
  const metrics = opts.metrics ?? webhookMetrics();
  const limits = webhookLimits(opts.limits);
  const app = newServer(opts, limits);
  const pool =
    opts.admissionPool ??
    startAdmissionPool({
      logger: log,
      maxQueue: limits.maxPoolQueue,
      ...(opts.pool ? { settings: opts.pool } : {}),
    });
  app.addHook('onClose', () => pool.close());
  acceptRawBodies(app, limits.bodyLimit);
  const { tooMany, startHandling } = limitRequests(app, limits, metrics);
  answerErrors(app, limits.bodyLimit);
  addAdmissionRoutes(app, pool, tooMany, startHandling);
  addConversionRoute(app, pool, tooMany, startHandling, metrics);
  return app;
}

/**
 * The Fastify server with the limits that hold before any request is read: TLS policy and handshake timeout, idle,
 * header and request timeouts, the connection caps.
 */
function newServer(opts: WebhookAppOptions, limits: WebhookLimits): FastifyInstance {
  const { bodyLimit } = limits;
  const app = fastify({
    loggerInstance: opts.logger,
    // One log line per admission (with key and uid) comes from the handler; Fastify's own would double it.
    logController: new LogController({ disableRequestLogging: true }),
    // req.log is the server's logger itself, not a pino child made for each request (0.9 µs of CPU a request at
    // saturation, in a CPU profile) for a request id no log line needs: each line names its webhook, object and uid.
    childLoggerFactory: (logger) => logger,
    bodyLimit,
    // server.timeout: a socket idle this long is closed, including one that completed the TLS handshake and
    // never sent a byte (headersTimeout and requestTimeout start with the first byte of a request: see
    // leaveUnusedConnectionsIdle below).
    connectionTimeout: limits.connectionTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Slowloris guard, as cert-manager's ReadHeaderTimeout (headersTimeout below).
    requestTimeout: limits.requestTimeoutMs,
    return503OnClosing: true,
    ...(opts.https
      ? {
          https: {
            ...opts.https,
            ...TLS_POLICY,
            handshakeTimeout: limits.handshakeTimeoutMs,
            headersTimeout: limits.headersTimeoutMs,
            // How often Node checks the header and request timeouts (default 30 s): a slow body is cut off at most
            // a second late.
            connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
          },
        }
      : {}),
  }) as unknown as FastifyInstance;
  // Beyond this many open connections, in all or from one client address, new ones are closed at once: idle
  // connections cannot pile up memory, and one client cannot lock the others out.
  limitConnections(app.server, limits);
  // TLS 1.2 renegotiation started by the client: each one is a full handshake the server pays for (Node allows 3
  // per 10 minutes by default); no client of a webhook needs it (TLS 1.3 has none), so it ends the connection.
  app.server.on('secureConnection', (socket: TLSSocket) => socket.disableRenegotiation());
  leaveUnusedConnectionsIdle(app.server);
  return app;
}

/** Every body is taken as raw bytes, whatever its content type (see below). */
function acceptRawBodies(app: FastifyInstance, bodyLimit: number): void {
  // Every body is JSON, whatever the content type says: kept as the raw bytes here, decoded and parsed in the
  // admission thread (a 3.5 MiB body takes about 90 ms to parse), to which the bytes are moved, not copied.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_req, body, done) => {
    done(null, body);
  });
}

/**
 * The answer to a request beyond a limit (429): `over` is the request bytes it would have held beyond
 * maxBytesInFlight, or 'queue' when the pool's queue is full (the routes); absent, beyond maxInFlight.
 */
type TooMany = (req: FastifyRequest, reply: FastifyReply, webhook: string, over?: number | 'queue') => FastifyReply;

/** Called by a route before it handles its request: false when the request was refused (answered 429). */
type StartHandling = (req: FastifyRequest, reply: FastifyReply) => boolean;

/**
 * The limits on requests being handled and on request bytes held (both answered 429 with Retry-After), the
 * in-flight gauge, and the requests and latency by webhook, code and verdict; returns the 429 answer and the
 * maxInFlight check for the routes.
 */
function limitRequests(
  app: FastifyInstance,
  limits: WebhookLimits,
  metrics: WebhookMetrics,
): { tooMany: TooMany; startHandling: StartHandling } {
  const { bodyLimit } = limits;
  /**
   * Requests being handled, by kind: from the moment their whole body has arrived until their response is closed
   * (sent, or the client went away). Not from their headers: a body sent slowly would hold a slot until the request
   * timeout, and a few slow senders would starve everyone (kube-apiserver's --max-requests-inflight, too, counts
   * requests being served, not bodies being received). A body still arriving is bounded by requestTimeoutMs and by
   * the connection limits instead. Conversions have a cap of their own, so a flood of admission reviews cannot
   * block reads in the version an object is not stored in.
   */
  const handling = { admission: 0, conversion: 0 };
  let refused = 0;
  let lastRefusalLog = -Infinity;
  /**
   * 429 with Retry-After: beyond maxInFlight requests of one kind, beyond maxBytesInFlight, or a full pool queue
   * (maxPoolQueue). The apiserver's client (client-go) retries a 429 that has a Retry-After, within the webhook's
   * timeoutSeconds.
   */
  const tooMany = (req: FastifyRequest, reply: FastifyReply, webhook: string, over?: number | 'queue') => {
    const kind = webhook === CONVERT_WEBHOOK ? 'conversion' : 'admission';
    const message =
      over === undefined
        ? `too many requests: ${limits.maxInFlight} ${kind} requests are in progress; retry later`
        : over === 'queue'
          ? `too many requests: ${limits.maxPoolQueue} large admission or conversion requests are waiting for an admission thread; retry later`
          : `too many request bytes: ${formatBytes(over)} more would exceed the ${formatBytes(limits.maxBytesInFlight)} the webhook holds at once (${formatBytes(limits.maxBytesInFlightPerClient)} per client); retry later`;
    // One line per 10 s at most: an overload must not also flood the log (the metric counts each 429).
    refused++;
    if (Date.now() - lastRefusalLog >= 10_000) {
      req.log.warn(
        {
          webhook,
          refused,
          maxInFlight: limits.maxInFlight,
          maxPoolQueue: limits.maxPoolQueue,
          maxBytesInFlight: limits.maxBytesInFlight,
        },
        'admission requests refused: too many',
      );
      lastRefusalLog = Date.now();
      refused = 0;
    }
    // Refused before its body was read: the connection is closed after the answer rather than the body read and
    // thrown away (decrypting 3.5 MiB per refusal kept both cores busy under 64 clients sending maximum-size
    // reviews; bench/README.md 4b).
    if (typeof over === 'number') reply.header('connection', 'close');
    return reply
      .code(429)
      .header('retry-after', String(RETRY_AFTER_SECONDS))
      .send(failureStatus(429, 'TooManyRequests', message, { retryAfterSeconds: RETRY_AFTER_SECONDS }));
  };
  /**
   * Request bytes held, in all and by client address: reserved from the headers (Content-Length, else the body
   * limit) until the response is closed, so that the bodies held at once, arriving or handled, fit the container's
   * memory (limits.ts, requestBytesBudget). Per client a quarter of it: slow senders from one address cannot hold
   * every byte, as they cannot hold a slot of maxInFlight.
   */
  let bytesHeld = 0;
  const bytesHeldBy = new Map<string, number>();
  /** Whatever the request held, given back; the answered ones counted and timed (by webhook, code and verdict). */
  const closed = (t: WebhookRequest, client: string, res: FastifyReply['raw']) => {
    metrics.inFlight.dec({ webhook: t.webhook });
    if (t.handling) handling[t.kind]--;
    if (t.bytes > 0) {
      bytesHeld -= t.bytes;
      const left = (bytesHeldBy.get(client) ?? t.bytes) - t.bytes;
      if (left > 0) bytesHeldBy.set(client, left);
      else bytesHeldBy.delete(client);
    }
    // Only a request answered (its response ended), as Fastify's onResponse: not one whose client went away first.
    if (!res.writableEnded) return;
    const verdict = t.verdict ?? 'errored';
    metrics.requests.inc({ webhook: t.webhook, code: String(res.statusCode), verdict });
    metrics.latency.observe({ webhook: t.webhook, verdict }, Number(process.hrtime.bigint() - t.start) / 1e9);
  };
  app.decorateRequest('webhookRequest', null);
  // A callback hook, not an async one: no promise per request.
  app.addHook('onRequest', (req, reply, done) => {
    const path = req.url.split('?')[0] ?? '';
    const webhook = path === CONVERT_PATH ? CONVERT_WEBHOOK : WEBHOOKS[path]?.name;
    if (!webhook) return done();
    const kind = webhook === CONVERT_WEBHOOK ? 'conversion' : 'admission';
    const t: WebhookRequest = { webhook, kind, start: process.hrtime.bigint(), bytes: 0, handling: false };
    req.webhookRequest = t;
    metrics.inFlight.inc({ webhook });
    const client = req.socket.remoteAddress ?? '';
    // 'close' ends every request: its response sent, the client gone, a timeout, an error.
    reply.raw.once('close', () => closed(t, client, reply.raw));
    const declared = Number(req.headers['content-length']);
    // Beyond the body limit Fastify answers 413 without reading the body: it holds nothing.
    const bytes = Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, bodyLimit) : bodyLimit;
    const fromClient = bytesHeldBy.get(client) ?? 0;
    // Answered here, the request goes no further: done() is not called.
    if (bytesHeld + bytes > limits.maxBytesInFlight || fromClient + bytes > limits.maxBytesInFlightPerClient)
      return void tooMany(req, reply, webhook, bytes);
    t.bytes = bytes;
    bytesHeld += bytes;
    bytesHeldBy.set(client, fromClient + bytes);
    done();
  });

  /**
   * Called by a route once the body has arrived (the content-type parser ran), before it handles the request:
   * false when maxInFlight requests of its kind are being handled, the 429 sent.
   */
  const startHandling = (req: FastifyRequest, reply: FastifyReply): boolean => {
    const t = req.webhookRequest;
    if (!t) return true;
    if (handling[t.kind] >= limits.maxInFlight) {
      tooMany(req, reply, t.webhook);
      return false;
    }
    handling[t.kind]++;
    t.handling = true;
    return true;
  };

  return { tooMany, startHandling };
}

/** 413 with the limit named for a body too large; 4xx and 500 as messages, never a stack trace; 404 by path. */
function answerErrors(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    if (status === 413) {
      const length = req.headers['content-length'];
      const message = `request body${length ? ` of ${length} bytes` : ''} is larger than the webhook's limit of ${formatBytes(bodyLimit)}`;
      req.log.warn(
        { url: req.url, status, contentLength: length, bodyLimit },
        'admission request refused: body too large',
      );
      // The rest of the body is not read; closing the connection spares the reading and frees it.
      return void reply
        .code(413)
        .header('connection', 'close')
        .send(failureStatus(413, 'RequestEntityTooLarge', message));
    }
    if (status >= 500) req.log.error({ err, url: req.url }, 'webhook request failed');
    else req.log.warn({ url: req.url, status, reason: err.message }, 'bad webhook request');
    const message = status >= 500 ? 'internal error' : err.message;
    void reply.code(status).send({ message });
  });

  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ message: `no webhook at ${req.url.split('?')[0] ?? ''}` });
  });
}

/** The mutating and validating webhooks: small reviews on this thread, the others in the admission pool. */
function addAdmissionRoutes(
  app: FastifyInstance,
  pool: AdmissionPool,
  tooMany: TooMany,
  startHandling: StartHandling,
): void {
  for (const [path, { name, webhook }] of Object.entries(WEBHOOKS)) {
    app.post(path, async (req, reply) => {
      if (!startHandling(req, reply)) return reply;
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const outcome: SerializedOutcome | PoolAnswer = admitOnMainThread(raw)
        ? handleAdmissionText(raw.toString('utf8'), ADMISSION_HANDLERS[webhook])
        : await pool.review(webhook, raw);
      if (outcome === 'full') return tooMany(req, reply, name, 'queue');
      if (req.webhookRequest) req.webhookRequest.verdict = outcome.verdict;
      const fields = {
        webhook: name,
        key: outcome.key,
        uid: outcome.uid,
        operation: outcome.operation,
        verdict: outcome.verdict,
        ...(outcome.message ? { message: outcome.message } : {}),
      };
      if (outcome.cause) req.log.error({ ...fields, err: outcome.cause }, 'admission handler failed');
      else if (outcome.verdict === 'denied' || outcome.verdict === 'errored') req.log.info(fields, 'admission');
      else req.log.debug(fields, 'admission');
      // Serialized in the admission thread: sent as it is.
      return reply
        .code(outcome.httpStatus)
        .header('content-type', 'application/json; charset=utf-8')
        .send(outcome.text);
    });
  }
}

/** The CRD's conversion webhook: small requests on this thread, the others in the pool. */
function addConversionRoute(
  app: FastifyInstance,
  pool: AdmissionPool,
  tooMany: TooMany,
  startHandling: StartHandling,
  metrics: WebhookMetrics,
): void {
  app.post(CONVERT_PATH, async (req, reply) => {
    if (!startHandling(req, reply)) return reply;
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const outcome: ConversionOutcome | 'full' =
      raw.byteLength < CONVERT_ON_MAIN_THREAD_MAX_BYTES
        ? handleConversionText(raw.toString('utf8'))
        : await pool.convert(raw);
    if (outcome === 'full') return tooMany(req, reply, CONVERT_WEBHOOK, 'queue');
    if (req.webhookRequest) req.webhookRequest.verdict = outcome.verdict;
    for (const c of outcome.counts)
      metrics.conversions.inc({ from_version: c.from, to_version: c.to, result: c.result }, c.count);
    const fields = {
      webhook: CONVERT_WEBHOOK,
      uid: outcome.uid,
      desiredAPIVersion: outcome.desiredAPIVersion,
      objects: outcome.objects,
      verdict: outcome.verdict,
      ...(outcome.message ? { message: outcome.message } : {}),
    };
    // A stash written by hand (or stored past admission) with values the target version cannot hold: left out.
    for (const w of outcome.stashWarnings ?? [])
      req.log.warn({ ...fields, ...w }, 'conversion left out a stashed value the target version cannot hold');
    if (outcome.cause) {
      metrics.conversionPanics.inc();
      req.log.error({ ...fields, err: outcome.cause }, 'conversion failed unexpectedly');
    } else if (outcome.verdict === 'converted') req.log.debug(fields, 'conversion');
    else req.log.info(fields, 'conversion');
    return reply.code(outcome.httpStatus).header('content-type', 'application/json; charset=utf-8').send(outcome.text);
  });
}

/**
 * A metav1.Status body: client-go, the apiserver's webhook client, shows its message (for a body that is not a
 * Status it shows only a generic text for the code), so the user reads which limit was hit.
 */
function failureStatus(code: number, reason: string, message: string, details?: { retryAfterSeconds: number }) {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
    ...(details ? { details } : {}),
  };
}
