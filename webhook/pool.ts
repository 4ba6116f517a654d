// The admission worker pool: piscina (https://github.com/piscinajs/piscina) threads that run admission-worker.ts,
// so that parsing, defaulting and validating a review, up to 0.9 s of CPU for a maximum-size one, never blocks the
// event loop that renews the controller's lease and answers /healthz. Each thread has a bounded heap
// (limits.ts, admissionPoolSettings); a thread that dies (out of memory, a crash) fails only its own request, which
// is refused with a message naming the limit, and piscina starts another in its place. A thread that runs out of
// heap in a review after it ran others may have been filled by them rather than by this one: that review runs
// again, once, on a fresh thread, and is refused only if it exceeds the heap there too.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import { readUsableCores } from '../src/cli/cpu.ts';
import { readMemoryLimit } from '../src/cli/heap.ts';
import type { AdmissionWebhook, ReviewIdentity, SerializedOutcome } from './admission.ts';
import type { AdmissionTask, TaskReport } from './admission-worker.ts';
import type { ConversionOutcome } from './conversion.ts';
import { admissionPoolSettings, WORKER_YOUNG_GENERATION_MIB, type AdmissionPoolSettings } from './limits.ts';
import { complete, errored } from './response.ts';

/**
 * The worker's entry beside this module: webhook/admission-worker.ts when run from source (tsx, which worker
 * threads inherit through execArgv), dist/admission-worker.mjs beside the bundle (hack/bundle.ts builds it
 * next to every bundle).
 */
const here = fileURLToPath(import.meta.url);
export const ADMISSION_WORKER_FILE = join(
  dirname(here),
  here.endsWith('.ts') ? 'admission-worker.ts' : 'admission-worker.mjs',
);

/**
 * Bodies from this size on are transferred to the thread rather than copied, and so cannot run again on a fresh
 * thread (run() below). Far above any real DaemonSet's review: a legitimate review is never the one that cannot be
 * retried.
 */
const TRANSFER_MIN_BYTES = 1024 * 1024;

/** The pool's answer: an outcome to send, or "full" (the caller answers 429 as for too many in flight). */
export type PoolAnswer = SerializedOutcome | 'full';
export type ConversionAnswer = ConversionOutcome | 'full';

export interface AdmissionPool {
  readonly settings: AdmissionPoolSettings;
  /**
   * Runs one review. Not cancellable: piscina serves a task that has an AbortSignal from a queue of its own that
   * later tasks can overtake (tasks starved for 18 s under load), and a client that went away has stopped
   * counting against the in-flight cap anyway (a full queue is answered 'full').
   */
  review(webhook: AdmissionWebhook, body: Buffer): Promise<PoolAnswer>;
  /**
   * Runs one ConversionReview (conversion.ts). A thread that dies answers it as a request whose uid is unknown:
   * an HTTP error with a metav1.Status that names the cause.
   */
  convert(body: Buffer): Promise<ConversionAnswer>;
  /** Threads running now (none while the pool is idle). */
  threads(): number;
  /** Terminates the threads. */
  close(): Promise<void>;
}

export interface AdmissionPoolOptions {
  logger: Logger;
  /** Tasks waiting for a thread at most (the in-flight cap); more are answered 'full'. */
  maxQueue: number;
  /** Overrides of the derived settings (tests). */
  settings?: Partial<AdmissionPoolSettings>;
  /** POOL_IDLE_CLOSE_MS unless set (tests). */
  idleCloseMs?: number;
  /** ADMISSION_WORKER_FILE unless set (tests: a worker that leaves its heap full). */
  workerFile?: string;
}

/**
 * The pool's threads end after this long with no task, and start again with the next one. Reviews of
 * real DaemonSets are handled on the main thread (app.ts), so the pool serves only large reviews and conversions
 * of lists, which are rare; an idle thread, its heap and its copy of the admission code, cost 31 MiB of RSS
 * (measured beside the bundle), a fifth of the manager's at 1,000 nodes.
 */
export const POOL_IDLE_CLOSE_MS = 60_000;

export function startAdmissionPool(opts: AdmissionPoolOptions): AdmissionPool {
  const log = opts.logger;
  // Checked here, at start: piscina stops starting threads after one fails to load its file, and the requests
  // queued for it would then wait until the apiserver's timeout.
  const workerFile = opts.workerFile ?? ADMISSION_WORKER_FILE;
  if (!existsSync(workerFile))
    throw new Error(`the admission worker ${workerFile} is missing (the build puts it beside the bundle)`);
  const settings = { ...admissionPoolSettings(readUsableCores(), readMemoryLimit()), ...opts.settings };
  // What each running task's thread reported (TaskReport): its earlier tasks, and whom the review is for.
  const started = new Map<number, { earlierTasks?: number; who?: ReviewIdentity }>();
  const idleCloseMs = opts.idleCloseMs ?? POOL_IDLE_CLOSE_MS;
  let pool: Piscina<AdmissionTask, SerializedOutcome | ConversionOutcome> | undefined;
  let running = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  let closed = false;

  // The threads start with the first task and end POOL_IDLE_CLOSE_MS after the last one: see there.
  const open = () => {
    // The message failed() answers as "the webhook is stopping".
    if (closed) throw new Error('Terminating worker thread');
    clearTimeout(idleTimer);
    idleTimer = undefined;
    if (pool) return pool;
    const p = new Piscina<AdmissionTask, SerializedOutcome | ConversionOutcome>({
      filename: workerFile,
      // All threads at once, as the pool opens, not one by one as tasks come: piscina starts a thread on demand
      // (minThreads below maxThreads) and a thread that then dies before it is ready leaves the queued task waiting
      // for good.
      minThreads: settings.threads,
      maxThreads: settings.threads,
      maxQueue: opts.maxQueue,
      // First come, first served: by default a task that finds no free thread goes back to the queue's tail, and
      // under a stream of slow reviews the first ones waited 18 s while later ones were served in 2 s.
      stricterFIFO: true,
      resourceLimits: {
        maxOldGenerationSizeMb: settings.heapMiB,
        maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MIB,
      },
    });
    // A thread's error with no task of its own would otherwise be an unhandled 'error' event: the process would exit.
    p.on('error', (err: unknown) => log.error({ err }, 'admission worker failed'));
    p.on('message', (m: unknown) => {
      const r = m as Partial<TaskReport>;
      const known = typeof r.admissionTask === 'number' ? started.get(r.admissionTask) : undefined;
      if (!known) return;
      if (r.earlierTasks !== undefined) known.earlierTasks = r.earlierTasks;
      if (r.who) known.who = r.who;
    });
    log.debug({ threads: settings.threads, heapMiB: settings.heapMiB }, 'admission threads started');
    pool = p;
    return p;
  };
  const done = () => {
    if (--running > 0 || closed) return;
    idleTimer = setTimeout(() => {
      const p = pool;
      pool = undefined;
      idleTimer = undefined;
      log.debug('admission threads ended: idle');
      void p?.destroy();
    }, idleCloseMs);
    idleTimer.unref();
  };
  let nextId = 0;

  const run = async (webhook: AdmissionTask['webhook'], raw: Buffer) => {
    // A large body is moved, not copied: its memory is transferred to the thread, so this thread neither serializes
    // nor keeps it (measured: 20-30 MiB less peak RSS than passing the text, under 8 maximum-size reviews at once).
    // A smaller one goes as text, which is cheaper per request than a transfer (and may share Node's buffer pool),
    // and which a retry can send again.
    const moved =
      raw.byteLength >= TRANSFER_MIN_BYTES && raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength;
    const body = moved ? raw : raw.toString('utf8');
    running++;
    try {
      for (let attempt = 1; ; attempt++) {
        const id = nextId++;
        const report: { earlierTasks?: number; who?: ReviewIdentity } = {};
        started.set(id, report);
        try {
          return await open().run({ id, webhook, body }, moved ? { transferList: [raw.buffer as ArrayBuffer] } : {});
        } catch (err) {
          if (err instanceof Error && err.message === 'Task queue is at limit') return 'full';
          // Out of memory on a thread that had run other tasks: they may have filled its heap, so this review is not
          // yet known to exceed it. It runs again on a fresh thread (piscina replaces the one that died).
          if (attempt === 1 && !moved && isOutOfMemory(err) && (report.earlierTasks ?? 0) > 0) {
            log.info(
              {
                uid: report.who?.uid,
                key: report.who?.key,
                earlierTasks: report.earlierTasks,
                heapMiB: settings.heapMiB,
              },
              'admission thread ran out of memory after earlier tasks; running the review again on a fresh thread',
            );
            continue;
          }
          return failed(err, report.who);
        } finally {
          started.delete(id);
        }
      }
    } finally {
      done();
    }
  };

  /** The answer for a request whose thread died or was stopped: never a 5xx without a message. */
  const failed = (err: unknown, who: ReviewIdentity | undefined): SerializedOutcome => {
    const code = (err as { code?: string } | undefined)?.code;
    const outOfMemory = isOutOfMemory(err);
    // Terminated: the pool is being closed (the server is stopping).
    const terminated = err instanceof Error && err.message === 'Terminating worker thread';
    const status = outOfMemory ? 413 : terminated ? 503 : 500;
    const message = outOfMemory
      ? `handling this admission request took more memory than the webhook's limit of ${settings.heapMiB} MiB per admission thread; the object is far larger than any DaemonSet needs: use fewer containers, ports or volumes`
      : terminated
        ? 'the webhook is stopping; retry'
        : 'internal error: the admission thread handling this request exited';
    const fields = { uid: who?.uid, key: who?.key, heapMiB: settings.heapMiB, code };
    if (outOfMemory) log.warn({ ...fields, err }, 'admission request refused: out of memory in the admission thread');
    else if (!terminated) log.error({ ...fields, err }, 'admission thread failed');
    const base = {
      verdict: 'errored' as const,
      message,
      ...(who ? { uid: who.uid, key: who.key, operation: who.operation } : {}),
    };
    if (who) {
      // The uid is known: an errored review, which the apiserver shows as this request's error.
      const body = {
        apiVersion: who.apiVersion,
        kind: 'AdmissionReview' as const,
        response: complete(errored(status, message), who.uid),
      };
      return { ...base, httpStatus: 200, body, text: JSON.stringify(body) };
    }
    // Not even the envelope was read: an HTTP error whose metav1.Status body carries the message.
    const reason = status === 413 ? 'RequestEntityTooLarge' : status === 503 ? 'ServiceUnavailable' : 'InternalError';
    const body = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code: status };
    return { ...base, httpStatus: status, body: { message }, text: JSON.stringify(body) };
  };

  return {
    settings,
    review: (webhook, raw) => run(webhook, raw) as Promise<PoolAnswer>,
    convert: async (raw) => {
      const answer = await run('convert', raw);
      if (answer === 'full' || 'counts' in answer) return answer;
      // The thread died (failed() above): its Status, counted as errored.
      const { httpStatus, text, message } = answer;
      return { httpStatus, text, verdict: 'errored', counts: [], ...(message ? { message } : {}) };
    },
    threads: () => pool?.threads.length ?? 0,
    close: async () => {
      closed = true;
      clearTimeout(idleTimer);
      await pool?.destroy();
      pool = undefined;
    },
  };
}

function isOutOfMemory(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
}
