import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ItemExponentialFailureRateLimiter, WorkQueue, type RateLimiter } from '../../src/k8s/workqueue.ts';
import { runWorkers } from './workers.ts';
import { sleep, until } from '../../src/testing/wait.ts';

const silent = pino({ level: 'silent' });

/** No delay at all: requeue tests must not wait for real backoff. */
const immediate: RateLimiter = { when: () => 0, numRequeues: () => 0, forget: () => {} };

describe('runWorkers', () => {
  test('never runs one key on two workers, and retries errors with backoff', async () => {
    const q = new WorkQueue({ rateLimiter: new ItemExponentialFailureRateLimiter(1, 5) });
    const inFlight = new Set<string>();
    const runs = new Map<string, number>();
    let overlap = false;
    let maxConcurrent = 0;
    const ac = new AbortController();
    const done = runWorkers(
      q,
      4,
      async (k) => {
        if (inFlight.has(k)) overlap = true;
        inFlight.add(k);
        maxConcurrent = Math.max(maxConcurrent, inFlight.size);
        runs.set(k, (runs.get(k) ?? 0) + 1);
        await sleep(2);
        // Events keep arriving for the key being reconciled.
        q.add(k);
        inFlight.delete(k);
        if (k === 'flaky' && (runs.get(k) ?? 0) < 3) throw new Error('transient');
        if ((runs.get(k) ?? 0) >= 3) return {};
        return { requeueAfterMs: 1 };
      },
      { controller: 'test', signal: ac.signal, logger: silent },
    );
    for (const k of ['a', 'b', 'flaky', 'a', 'b']) q.add(k);
    while ([...runs.values()].filter((n) => n >= 3).length < 3) await sleep(2);
    ac.abort();
    await done;
    assert.equal(overlap, false);
    assert.ok(maxConcurrent >= 2, 'different keys run in parallel');
    assert.equal(q.isShuttingDown(), true);
  });

  test('the event loop gets a turn between reconciles that never wait for I/O', async () => {
    const q = new WorkQueue({ rateLimiter: immediate });
    const ac = new AbortController();
    let reconciled = 0;
    const done = runWorkers(
      q,
      3,
      // Synchronous work only: the promise it returns is settled at once, as a sync that sends no request.
      async () => {
        reconciled++;
      },
      { controller: 'test-yield', signal: ac.signal, logger: silent },
    );
    for (let i = 0; i < 300; i++) q.add(`k${i}`);
    // A socket's callback, a timer or a setImmediate queued now runs only when the loop gets a turn.
    const atFirstTurn = await new Promise<number>((resolve) => setImmediate(() => resolve(reconciled)));
    while (reconciled < 300) await new Promise((r) => setImmediate(r));
    ac.abort();
    await done;
    assert.ok(atFirstTurn <= 3, `one reconcile per worker before the loop's next turn, not ${atFirstTurn}`);
    assert.equal(reconciled, 300, 'every key still reconciled');
  });

  test('one reconcile per turn of the event loop, whatever the number of workers: a timer waits for one at most', async () => {
    const q = new WorkQueue({ rateLimiter: immediate });
    const ac = new AbortController();
    let reconciled = 0;
    const busy = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    const done = runWorkers(
      q,
      3,
      // A sync holding the event loop for 20 ms and sending no request.
      async () => {
        busy(20);
        reconciled++;
      },
      { controller: 'test-turns', signal: ac.signal, logger: silent },
    );
    for (let i = 0; i < 30; i++) q.add(`k${i}`);
    // As the Lease renewal's timer: each time it fires, how many reconciles ran since it was set.
    const between: number[] = [];
    await new Promise<void>((resolve) => {
      const tick = (since: number) => {
        between.push(reconciled - since);
        if (reconciled >= 30) return resolve();
        const now = reconciled;
        setTimeout(() => tick(now), 0);
      };
      setTimeout(() => tick(0), 0);
    });
    ac.abort();
    await done;
    assert.ok(Math.max(...between) <= 1, `reconciles between two turns of a timer: ${between.join(' ')}`);
  });

  test('abort lets the in-flight reconcile finish, then resolves', async () => {
    const q = new WorkQueue({ rateLimiter: immediate });
    const ac = new AbortController();
    let started = false;
    let finished = false;
    let sawAbort = false;
    const done = runWorkers(
      q,
      1,
      async (_k, signal) => {
        started = true;
        await sleep(20);
        sawAbort = signal.aborted;
        finished = true;
      },
      { controller: 'test-abort', signal: ac.signal, logger: silent },
    );
    q.add('a');
    q.add('b');
    // Aborted while a reconcile runs (a fixed 5 ms sleep here missed it on a loaded machine).
    await until('a reconcile in progress', () => started, 5_000);
    ac.abort();
    await done;
    assert.equal(finished, true);
    assert.equal(sawAbort, true);
  });
});
