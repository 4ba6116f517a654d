// The admission thread's entry (pool.ts runs it in piscina workers; the production build bundles it beside
// dist/main.mjs as admission-worker.mjs): the raw body in, the serialized answer out. Before the handler runs it
// tells the main thread whom the review is for, so that if this thread dies in the handler (its heap limit, a
// crash) the main thread can still answer that uid. Large ConversionReviews (conversion.ts) run here too.
import { parentPort } from 'node:worker_threads';
import { ADMISSION_HANDLERS, handleAdmissionText, type ReviewIdentity, type SerializedOutcome } from './admission.ts';
import { handleConversionText, type ConversionOutcome } from './conversion.ts';

export interface AdmissionTask {
  /** Set by the pool, to match the ReviewStarted message to its task. */
  id: number;
  webhook: 'mutate' | 'validate' | 'convert';
  /** The raw request body: its bytes (UTF-8) when large, transferred from the main thread, else its text. */
  body: Uint8Array | string;
}

/** Posted on the worker's parentPort (the pool's 'message' event) once the review's envelope is read. */
export interface ReviewStarted extends ReviewIdentity {
  admissionTask: number;
}

export default function admit(task: AdmissionTask): SerializedOutcome | ConversionOutcome {
  const b = task.body;
  const text = typeof b === 'string' ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
  if (task.webhook === 'convert') return handleConversionText(text);
  return handleAdmissionText(text, ADMISSION_HANDLERS[task.webhook], (who) => {
    const started: ReviewStarted = { admissionTask: task.id, ...who };
    parentPort?.postMessage(started);
  });
}
