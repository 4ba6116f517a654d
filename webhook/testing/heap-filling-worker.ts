// A stand-in for admission-worker.ts in the pool's tests: the task "fill" leaves the thread's heap nearly full (as
// earlier tasks might, through a leak or fragmentation), and any other task needs a few MiB of heap: on a filled
// thread it runs out of memory, on a fresh one it succeeds.
import { resourceLimits } from 'node:worker_threads';
import { reportTaskStart, type AdmissionTask } from '../admission-worker.ts';
import type { SerializedOutcome } from '../admission.ts';

const kept: number[][] = [];
/** The heap this thread used once its modules were loaded (about 19 MiB under tsx). */
const baselineMiB = Math.ceil(process.memoryUsage().heapUsed / 1024 / 1024);

export default function run(task: AdmissionTask): SerializedOutcome {
  reportTaskStart(task.id);
  if (task.body === 'fill') {
    // Keeps all but 6 MiB of what the old generation had left when the thread started, in arrays of 8k small
    // integers (64 KiB each): the small task's 400k live objects (about 10 MiB) then no longer fit.
    const arrays = ((resourceLimits.maxOldGenerationSizeMb ?? 32) - baselineMiB - 6) * 16;
    while (kept.length < arrays) kept.push(new Array<number>(8 * 1024).fill(kept.length));
    return { httpStatus: 200, verdict: 'allowed', body: { message: 'test' }, text: `{"kept":${kept.length}}` };
  }
  const work = Array.from({ length: 400_000 }, (_, i) => ({ i }));
  return { httpStatus: 200, verdict: 'allowed', body: { message: 'test' }, text: `{"served":${work.length}}` };
}
