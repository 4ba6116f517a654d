// What one admission server accepts, so that hostile or absurd input costs bounded memory and time (the
// webhook shares its process, and the chart's memory limit, with the controller). README "Admission webhook"
// states each limit and what the apiserver, hence kubectl, sees when it is hit.
import { totalmem } from 'node:os';
import { readUsableCores } from '../src/cli/cpu.ts';
import { readMemoryLimit } from '../src/cli/heap.ts';

const MiB = 1024 * 1024;

/**
 * Largest request body. An AdmissionReview carries at most two objects (object and oldObject) and etcd stores
 * none larger than 1.5 MiB (--max-request-bytes, https://etcd.io/docs/v3.5/dev-guide/limit/), so 2 x 1.5 MiB
 * plus the envelope (userInfo, options, names): 3.5 MiB. A larger object could not be stored anyway.
 */
export const BODY_LIMIT = 3.5 * MiB;

/**
 * Largest JSON patch the mutating webhook returns. Defaults add a few fields per container, port and volume;
 * a real DaemonSet's patch is a few KiB. An object built to multiply them (100k empty containers) would
 * otherwise get a patch of tens of MiB, which the apiserver then applies too.
 */
export const MAX_PATCH_BYTES = 1 * MiB;

/**
 * Admission work (parsing, shape checks, defaulting, validation, the patch) runs in worker threads (pool.ts), off
 * the event loop that renews the controller's lease and answers /healthz: one maximum-size review is 0.3-0.9 s of
 * CPU in one block. One thread per core beyond the first, so the controller keeps a core, and at least one; at
 * most this many, since each holds a heap of its own.
 */
export const MAX_ADMISSION_THREADS = 2;

/**
 * Share of the container's memory limit (cgroup, src/cli/heap.ts) given to the old generations of all admission
 * threads together. The main thread gets HEAP_FRACTION (0.6) of it, so 0.6 + 0.125 leaves about a quarter for
 * young generations, code and buffers. Under the chart's 512Mi limit: one thread of 64 MiB.
 */
export const WORKER_HEAP_FRACTION = 0.125;

/**
 * Old-generation limit of an admission thread, MiB, at least (and when no memory limit is known). A real DaemonSet
 * needs well under 1 MiB; a maximum-size review of 110k empty containers fits for validation (about 40 MiB) but
 * not for defaulting (about 110 MiB), which is then refused with this limit named (pool.ts).
 */
export const MIN_WORKER_HEAP_MIB = 64;

/** And at most: beyond this a review is far past anything real, and a larger heap only delays the refusal. */
export const MAX_WORKER_HEAP_MIB = 256;

/** Young-generation limit of an admission thread, MiB: its garbage is short-lived and per request. */
export const WORKER_YOUNG_GENERATION_MIB = 16;

export interface AdmissionPoolSettings {
  threads: number;
  /** resourceLimits.maxOldGenerationSizeMb of each thread. */
  heapMiB: number;
}

/** Threads and heap of the admission pool for `cores` and a memory limit in bytes (undefined: none known). */
export function admissionPoolSettings(cores: number, memoryLimitBytes: number | undefined): AdmissionPoolSettings {
  const threads = Math.max(1, Math.min(MAX_ADMISSION_THREADS, cores - 1));
  const share =
    memoryLimitBytes === undefined ? 0 : Math.floor((memoryLimitBytes * WORKER_HEAP_FRACTION) / threads / MiB);
  return { threads, heapMiB: Math.min(MAX_WORKER_HEAP_MIB, Math.max(MIN_WORKER_HEAP_MIB, share)) };
}

/**
 * Share of the container's memory limit that request bodies may hold at once (maxBytesInFlight). Each held byte
 * costs about two on the main thread (the received buffer, then the text sent to an admission thread or parsed
 * here), and the main thread's heap (HEAP_FRACTION, 0.6) and the admission threads' (WORKER_HEAP_FRACTION) come out
 * of the same limit. Under the chart's 512Mi: 64 MiB, 18 maximum-size reviews at once.
 */
export const REQUEST_BYTES_FRACTION = 0.125;

/** maxBytesInFlight with no memory limit known: an eighth of the machine's memory, at most this. */
export const MAX_REQUEST_BYTES_BUDGET = 256 * MiB;

/** maxBytesInFlightPerClient for a maxBytesInFlight: a quarter of it, room for one maximum-size review at least. */
const perClientBytes = (total: number) => Math.max(BODY_LIMIT, Math.floor(total / 4));

/** maxBytesInFlight for a memory limit in bytes (undefined: none known); room for 4 maximum-size reviews at least. */
export function requestBytesBudget(memoryLimitBytes: number | undefined, machineBytes = totalmem()): number {
  const base = memoryLimitBytes ?? Math.min(machineBytes, MAX_REQUEST_BYTES_BUDGET / REQUEST_BYTES_FRACTION);
  return Math.max(4 * BODY_LIMIT, Math.floor(base * REQUEST_BYTES_FRACTION));
}

export interface WebhookLimits {
  /** Largest request body, bytes (413 beyond). */
  bodyLimit: number;
  /**
   * Requests handled at once, counted from the moment their whole body has arrived, for admission and for
   * conversion each; more are refused at once with 429 and Retry-After.
   */
  maxInFlight: number;
  /**
   * Requests waiting for an admission thread at most (the pool's queue, piscina's maxQueue): the large reviews and
   * conversions, tens to hundreds of ms of CPU each; more are refused with 429 and Retry-After.
   */
  maxPoolQueue: number;
  /**
   * Request bytes held at once (declared by Content-Length, the body limit when undeclared), from the headers until
   * the response: bodies arriving, waiting and being handled. A request beyond it gets 429 before its body is read.
   * From the container's memory limit (requestBytesBudget), not from its cores.
   */
  maxBytesInFlight: number;
  /** The same, from one client address: a quarter of maxBytesInFlight, so one client cannot hold all of it. */
  maxBytesInFlightPerClient: number;
  /** Open connections at most; more are closed as they arrive (Node's server.maxConnections). */
  maxConnections: number;
  /** Open connections from one client address at most; more from it are closed as they arrive. */
  maxConnectionsPerClient: number;
  /** A connection with no traffic for this long is closed, whether or not it ever sent a request. */
  connectionTimeoutMs: number;
  /** The TLS handshake must finish within this, from the connection (Node's default is 120 s). */
  handshakeTimeoutMs: number;
  /** All request headers must arrive within this. */
  headersTimeoutMs: number;
  /**
   * The whole request, body included, must arrive within this (408 and the connection closed, by Node's HTTP
   * server). The apiserver sends a review at once: even the largest body is on the wire in well under a second.
   */
  requestTimeoutMs: number;
  /** Idle time between two requests of a kept-alive connection before it is closed. */
  keepAliveTimeoutMs: number;
}

/**
 * Admission (and conversion) requests handled at once by default: as many as one apiserver replica may have
 * connections open (maxConnectionsPerClient; an HTTP/1.1 connection carries one request at a time), so an idle
 * core is never what refuses a burst of small reviews. Not by cores: a small review (a real DaemonSet's) is
 * handled on the event loop, one at a time whatever the cores, in 0.05-0.15 ms (the review of bench/README.md
 * section 4, in process and in the server), so 128 waiting cost about 20 ms of latency; the bytes they hold are
 * bounded by maxBytesInFlight, and the large ones, which cost CPU, wait for an admission thread under maxPoolQueue.
 * Measured (bench/history.md, section 4, the server on one core): the cap of 4 per core it replaces let a closed
 * loop of 4 connections use 64% of the core (3.1k reviews/s against the bare server's 15.8k), and refused 28k of
 * 32k requests from 50 connections.
 */
export const MAX_IN_FLIGHT = 128;

/**
 * The defaults, by the cores the container may use (src/cli/cpu.ts: its CPU limit, else its request, not the
 * node's). A large review or conversion is synchronous JavaScript on a few admission threads, so more of them
 * waiting than a few per core only buffers bodies and lengthens the wait past the apiserver's timeout (a
 * maximum-size review is 0.5 s of CPU): 4 per core (at least 4) wait for a thread, the bound the in-flight cap
 * set before it was MAX_IN_FLIGHT. Keep-alive is longer than the apiserver client's 90 s idle timeout (net/http's
 * DefaultTransport IdleConnTimeout, applied by SetTransportDefaults in k8s.io/apimachinery/pkg/util/net/http.go),
 * so we never close a connection it is about to reuse; the connection timeout is longer still, as it also covers a
 * connection between requests.
 */
export function defaultWebhookLimits(
  cores = readUsableCores(),
  memoryLimitBytes: number | undefined = readMemoryLimit(),
): WebhookLimits {
  const bytes = requestBytesBudget(memoryLimitBytes);
  return {
    bodyLimit: BODY_LIMIT,
    maxInFlight: MAX_IN_FLIGHT,
    maxPoolQueue: Math.max(4, 4 * cores),
    maxBytesInFlight: bytes,
    maxBytesInFlightPerClient: perClientBytes(bytes),
    maxConnections: 512,
    // An apiserver replica opens a connection per concurrent call; beyond a few per slot they only wait for 429s.
    maxConnectionsPerClient: 128,
    connectionTimeoutMs: 125_000,
    handshakeTimeoutMs: 5_000,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 10_000,
    keepAliveTimeoutMs: 120_000,
  };
}

/**
 * The defaults with `overrides` applied. A connection timeout shorter than a default also shortens the
 * handshake, header and keep-alive timeouts to it: a short idle limit applies to every kind of idleness.
 */
export function webhookLimits(overrides: Partial<WebhookLimits> = {}): WebhookLimits {
  const d = { ...defaultWebhookLimits(), ...overrides };
  const c = d.connectionTimeoutMs;
  if (c > 0) {
    if (overrides.handshakeTimeoutMs === undefined) d.handshakeTimeoutMs = Math.min(d.handshakeTimeoutMs, c);
    if (overrides.headersTimeoutMs === undefined) d.headersTimeoutMs = Math.min(d.headersTimeoutMs, c);
    if (overrides.keepAliveTimeoutMs === undefined) d.keepAliveTimeoutMs = Math.min(d.keepAliveTimeoutMs, c);
  }
  if (overrides.maxBytesInFlight !== undefined && overrides.maxBytesInFlightPerClient === undefined)
    d.maxBytesInFlightPerClient = perClientBytes(d.maxBytesInFlight);
  d.maxBytesInFlightPerClient = Math.min(d.maxBytesInFlightPerClient, d.maxBytesInFlight);
  // Node refuses a headers timeout longer than the request timeout.
  if (d.requestTimeoutMs > 0) d.headersTimeoutMs = Math.min(d.headersTimeoutMs, d.requestTimeoutMs);
  return d;
}

/**
 * Operations serialised at once by jsonTextWithin: one JSON.stringify of a real DaemonSet's patch (about 30
 * operations) cost 0.6x the one call per operation it replaces, and the text is then sent as it is.
 */
const PATCH_CHUNK = 32;

/**
 * `JSON.stringify(ops)` if its UTF-8 size is at most `limit` bytes, else undefined. Serialises PATCH_CHUNK
 * operations at a time and stops once past the limit, so a huge patch costs about `limit` bytes of work (plus one
 * chunk) and no big string.
 */
export function jsonTextWithin(ops: readonly unknown[], limit: number): string | undefined {
  if (ops.length <= PATCH_CHUNK) {
    const text = JSON.stringify(ops);
    return utf8Within(text, limit) ? text : undefined;
  }
  const parts: string[] = [];
  let units = 2; // [ and ]
  for (let i = 0; i < ops.length; i += PATCH_CHUNK) {
    const chunk = JSON.stringify(ops.slice(i, i + PATCH_CHUNK));
    parts.push(chunk.slice(1, -1));
    units += chunk.length - 2 + (i > 0 ? 1 : 0);
    // A UTF-16 code unit is at least one byte of UTF-8.
    if (units > limit) return undefined;
  }
  const text = `[${parts.join(',')}]`;
  return utf8Within(text, limit) ? text : undefined;
}

/** Whether `text` is at most `limit` bytes of UTF-8; counted only when its length leaves a doubt (3 bytes a unit). */
const utf8Within = (text: string, limit: number): boolean =>
  text.length <= limit && (text.length * 3 <= limit || Buffer.byteLength(text) <= limit);

/** Formats a byte count as the README states limits: "3.5 MiB", "1 MiB", "512 KiB". */
export function formatBytes(n: number): string {
  if (n >= MiB) return `${+(n / MiB).toFixed(2)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(2)} KiB`;
  return `${n} B`;
}
