// The admission thread's entry (pool.ts runs it in piscina workers; the production build bundles it beside
// dist/main.mjs as admission-worker.mjs): the raw body in, the serialized answer out. It tells the main thread, as
// the task begins, how many tasks this thread ran before it, and, once the review's envelope is read, whom the
// review is for: if this thread dies in the handler (its heap limit, a crash), the main thread can still answer
// that uid, and tell a review that alone exceeded the heap from one that found a heap earlier tasks had filled.
// Large ConversionReviews (conversion.ts) run here too.
import { parentPort } from 'node:worker_threads';
import {
  ADMISSION_HANDLERS,
  handleAdmissionText,
  type AdmissionWebhook,
  type ReviewIdentity,
  type SerializedOutcome,
} from './admission.ts';
import { handleConversionText, type ConversionOutcome } from './conversion.ts';

export interface AdmissionTask {
  /** Set by the pool, to match the TaskReport messages to their task. */
  id: number;
  webhook: AdmissionWebhook | 'convert';
  /** The raw request body: its bytes (UTF-8) when large, transferred from the main thread, else its text. */
  body: Uint8Array | string;
}

/** Posted on the worker's parentPort (the pool's 'message' event): as a task begins, and once its envelope is read. */
export interface TaskReport {
  admissionTask: number;
  /** Tasks this thread ran before this one (sent as the task begins). */
  earlierTasks?: number;
  /** Whom the review is for (sent once the envelope is read). */
  who?: ReviewIdentity;
}

let tasksRun = 0;

/** Reports the task's start; call first thing in a worker's task function (fixtures of the pool's tests too). */
export function reportTaskStart(id: number): void {
  const report: TaskReport = { admissionTask: id, earlierTasks: tasksRun++ };
  parentPort?.postMessage(report);
}

export default function admit(task: AdmissionTask): SerializedOutcome | ConversionOutcome {
  reportTaskStart(task.id);
  const b = task.body;
  const text = typeof b === 'string' ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
  if (task.webhook === 'convert') return handleConversionText(text);
  return handleAdmissionText(text, ADMISSION_HANDLERS[task.webhook], (who) => {
    const report: TaskReport = { admissionTask: task.id, who };
    parentPort?.postMessage(report);
  });
}
