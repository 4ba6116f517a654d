// The admission worker pool: piscina (https://github.com/piscinajs/piscina) threads that run admission-worker.ts.
//
// Why it exists, measured on 2 cores (the one place these reasons are kept; app.ts has the thresholds): every
// review of a real DaemonSet is small (a few KiB) and is handled on the main thread in 0.02-0.05 ms
// (admitOnMainThread), less than the trip to a thread and back, so the pool is idle in a healthy cluster and its
// threads end after POOL_IDLE_CLOSE_MS. It earns its lines against large and hostile reviews, which any client that
// may write DaemonSets can send: a maximum-size AdmissionReview costs 0.5 s of CPU (webhook/pool.test.ts measures
// 507-533 ms in process), a hostile ConversionReview 120 ms and 76 MiB of heap. On the main thread, the in-flight
// cap's worth of those back to back would stall the event loop that renews the controller's Lease (renewDeadline
// 10 s, retried every 2 s) and answers /healthz for seconds, and could exhaust the heap the controller's caches
// share; in the pool they cost the main thread a hand-over, and at worst a thread's bounded heap. Running admission
// as a Deployment of its own would isolate it too, at the price of a second image entrypoint, Service and RBAC
// to keep in step; the pool gives the same isolation inside the one process the chart runs.
//
// Each thread has a bounded heap (limits.ts, admissionPoolSettings); a thread that dies (out of memory, a crash)
// fails only its own request, which is refused with a message naming the limit, and piscina starts another in its
// place. A thread that runs out of heap in a review after it ran others may have been filled by them rather than by
// this one: that review runs again, once, on a fresh thread, and is refused only if it exceeds the heap there too.
import { existsSync } from 'node:fs';
import type { Piscina } from 'piscina';
import type { Logger } from 'pino';
import { readUsableCores } from '../src/cli/cpu.ts';
import { besideModule } from '../src/cli/main-module.ts';
import { readMemoryLimit } from '../src/cli/heap.ts';
import type { AdmissionWebhook, ReviewIdentity, SerializedOutcome } from './admission.ts';
import type { AdmissionTask, TaskReport } from './admission-worker.ts';
import type { ConversionOutcome } from './conversion.ts';
import { admissionPoolSettings, WORKER_YOUNG_GENERATION_MIB, type AdmissionPoolSettings } from './limits.ts';
import { complete, errored } from './response.ts';

/** The worker's entry beside this module (besideModule): admission-worker.ts from source, .mjs beside the bundle. */
export const ADMISSION_WORKER_FILE = besideModule(import.meta.url, 'admission-worker.ts', 'admission-worker.mjs');

/**
 * Bodies from this size on are transferred to the thread rather than copied, and so cannot run again on a fresh
 * thread (run() below). Far above any real DaemonSet's review: a legitimate review is never the one that cannot be
 * retried.
 */
const TRANSFER_MIN_BYTES = 1024 * 1024;

/** The pool's answer: an outcome to send, or "full" (the caller answers 429, as beyond the in-flight cap). */
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
  /** Tasks waiting for a thread at most (limits.ts, maxPoolQueue); more are answered 'full'. */
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
  const threads = new IdleClosingThreads(log, settings, {
    workerFile,
    maxQueue: opts.maxQueue,
    idleCloseMs: opts.idleCloseMs ?? POOL_IDLE_CLOSE_MS,
  });
  let nextId = 0;

  const run = async (webhook: AdmissionTask['webhook'], raw: Buffer) => {
    // A large body is moved, not copied: its memory is transferred to the thread, so this thread neither serializes
    // nor keeps it (measured: 20-30 MiB less peak RSS than passing the text, under 8 maximum-size reviews at once).
    // A smaller one goes as text, which is cheaper per request than a transfer (and may share Node's buffer pool),
    // and which a retry can send again.
    const moved =
      raw.byteLength >= TRANSFER_MIN_BYTES && raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength;
    const body = moved ? raw : raw.toString('utf8');
    for (let attempt = 1; ; attempt++) {
      const id = nextId++;
      const result = await threads.run({ id, webhook, body }, moved ? [raw.buffer as ArrayBuffer] : undefined);
      if (!('err' in result)) return result.answer;
      const { err, report } = result;
      if (err instanceof Error && err.message === 'Task queue is at limit') return 'full';
      // Out of memory on a thread that had run other tasks: they may have filled its heap, so this review is not
      // yet known to exceed it. It runs again on a fresh thread (piscina replaces the one that died).
      if (attempt === 1 && !moved && isOutOfMemory(err) && (report.earlierTasks ?? 0) > 0) {
        log.info(
          { uid: report.who?.uid, key: report.who?.key, earlierTasks: report.earlierTasks, heapMiB: settings.heapMiB },
          'admission thread ran out of memory after earlier tasks; running the review again on a fresh thread',
        );
        continue;
      }
      return failedAnswer(err, report.who, settings.heapMiB, log);
    }
  };

  return {
    settings,
    review: (webhook, raw) => run(webhook, raw) as Promise<PoolAnswer>,
    convert: async (raw) => {
      const answer = await run('convert', raw);
      if (answer === 'full' || 'counts' in answer) return answer;
      // The thread died (failedAnswer): its Status, counted as errored.
      const { httpStatus, text, message } = answer;
      return { httpStatus, text, verdict: 'errored', counts: [], ...(message ? { message } : {}) };
    },
    threads: () => threads.size(),
    close: () => threads.close(),
  };
}

/** What a running task's thread reported (TaskReport): its earlier tasks, and whom the review is for. */
interface RunningTask {
  earlierTasks?: number;
  who?: ReviewIdentity;
}

type TaskResult = SerializedOutcome | ConversionOutcome;

/**
 * piscina, loaded when the pool first opens: the pool serves only large reviews and conversions of lists, and a
 * manager that never gets one does not hold the module (0.3 MiB of live V8 heap for the manager idle, in a heap
 * snapshot).
 */
let piscinaClass: Promise<typeof Piscina> | undefined;
const loadPiscina = () => (piscinaClass ??= import('piscina').then((m) => m.Piscina));

/**
 * The piscina threads: started, all at once, with the first task, and ended `idleCloseMs` after the last one
 * (POOL_IDLE_CLOSE_MS says why). run() never throws: it returns the answer, or the error with what the task's
 * thread reported before it failed.
 */
class IdleClosingThreads {
  private pool: Piscina<AdmissionTask, TaskResult> | undefined;
  private readonly running = new Map<number, RunningTask>();
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly log: Logger,
    private readonly settings: AdmissionPoolSettings,
    private readonly opts: { workerFile: string; maxQueue: number; idleCloseMs: number },
  ) {}

  async run(
    task: AdmissionTask,
    transferList: ArrayBuffer[] | undefined,
  ): Promise<{ answer: TaskResult } | { err: unknown; report: RunningTask }> {
    const report: RunningTask = {};
    this.running.set(task.id, report);
    try {
      const pool = await this.open();
      return { answer: await pool.run(task, transferList ? { transferList } : {}) };
    } catch (err) {
      return { err, report };
    } finally {
      this.running.delete(task.id);
      this.scheduleIdleClose();
    }
  }

  size(): number {
    return this.pool?.threads.length ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    await this.pool?.destroy();
    this.pool = undefined;
  }

  private async open(): Promise<Piscina<AdmissionTask, TaskResult>> {
    const stopping = () => new Error('Terminating worker thread');
    // The message failedAnswer() answers as "the webhook is stopping".
    if (this.closed) throw stopping();
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (this.pool) return this.pool;
    const Pool = await loadPiscina();
    // Another task may have opened the pool, or close() run, while the module loaded.
    if (this.closed) throw stopping();
    if (this.pool) return this.pool;
    const { threads, heapMiB } = this.settings;
    const p = new Pool<AdmissionTask, TaskResult>({
      filename: this.opts.workerFile,
      // All threads at once, as the pool opens, not one by one as tasks come: piscina starts a thread on demand
      // (minThreads below maxThreads) and a thread that then dies before it is ready leaves the queued task waiting
      // for good.
      minThreads: threads,
      maxThreads: threads,
      maxQueue: this.opts.maxQueue,
      // First come, first served: by default a task that finds no free thread goes back to the queue's tail, and
      // under a stream of slow reviews the first ones waited 18 s while later ones were served in 2 s.
      stricterFIFO: true,
      resourceLimits: { maxOldGenerationSizeMb: heapMiB, maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MIB },
    });
    // A thread's error with no task of its own would otherwise be an unhandled 'error' event: the process would exit.
    p.on('error', (err: unknown) => this.log.error({ err }, 'admission worker failed'));
    p.on('message', (m: unknown) => {
      const r = m as Partial<TaskReport>;
      const known = typeof r.admissionTask === 'number' ? this.running.get(r.admissionTask) : undefined;
      if (!known) return;
      if (r.earlierTasks !== undefined) known.earlierTasks = r.earlierTasks;
      if (r.who) known.who = r.who;
    });
    this.log.debug({ threads, heapMiB }, 'admission threads started');
    this.pool = p;
    return p;
  }

  private scheduleIdleClose(): void {
    if (this.running.size > 0 || this.closed) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      const p = this.pool;
      this.pool = undefined;
      this.idleTimer = undefined;
      this.log.debug('admission threads ended: idle');
      void p?.destroy();
    }, this.opts.idleCloseMs);
    this.idleTimer.unref();
  }
}

/** The answer for a request whose thread died or was stopped: never a 5xx without a message. */
function failedAnswer(err: unknown, who: ReviewIdentity | undefined, heapMiB: number, log: Logger): SerializedOutcome {
  const code = (err as { code?: string } | undefined)?.code;
  const outOfMemory = isOutOfMemory(err);
  // Terminated: the pool is being closed (the server is stopping).
  const terminated = err instanceof Error && err.message === 'Terminating worker thread';
  const status = outOfMemory ? 413 : terminated ? 503 : 500;
  const message = outOfMemory
    ? `handling this admission request took more memory than the webhook's limit of ${heapMiB} MiB per admission thread; the object is far larger than any DaemonSet needs: use fewer containers, ports or volumes`
    : terminated
      ? 'the webhook is stopping; retry'
      : 'internal error: the admission thread handling this request exited';
  const fields = { uid: who?.uid, key: who?.key, heapMiB, code };
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
}

function isOutOfMemory(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
}
