import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BucketRateLimiter,
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  NO_WORKQUEUE_METRICS,
  setWorkQueueMetricsProvider,
  WorkQueue,
  type InProgressSource,
  type RateLimiter,
} from './workqueue.ts';
import { sleep, until } from '../testing/wait.ts';

async function key(q: WorkQueue): Promise<string> {
  const item = await q.get();
  assert.equal(item.shutdown, false);
  return (item as { key: string }).key;
}

/** No delay at all: requeue tests must not wait for real backoff. */
const immediate: RateLimiter = { when: () => 0, numRequeues: () => 0, forget: () => {} };

describe('WorkQueue', () => {
  test('de-duplicates keys that are waiting, keeps FIFO order', async () => {
    const q = new WorkQueue({ rateLimiter: immediate });
    q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.len(), 2);
    assert.equal(await key(q), 'a');
    assert.equal(await key(q), 'b');
    assert.equal(q.len(), 0);
  });

  test('a key added while processing is handed out again only after done()', async () => {
    const q = new WorkQueue({ rateLimiter: immediate });
    q.add('a');
    assert.equal(await key(q), 'a');
    q.add('a');
    q.add('a');
    assert.equal(q.len(), 0, 'not queued while a worker holds it');
    let second: string | undefined;
    void q.get().then((r) => (second = r.shutdown ? 'shutdown' : r.key));
    await sleep(5);
    assert.equal(second, undefined);
    q.done('a');
    await sleep(0);
    assert.equal(second, 'a');
    q.done('a');
    assert.equal(q.len(), 0);
  });

  test('get() waits for an add; shutDown releases waiters; queued keys still drain', async () => {
    const q = new WorkQueue({ rateLimiter: immediate });
    const waiting = q.get();
    q.add('x');
    assert.deepEqual(await waiting, { key: 'x', shutdown: false });
    q.add('y');
    q.shutDown();
    q.add('z'); // ignored after shutdown
    assert.equal(await key(q), 'y');
    assert.deepEqual(await q.get(), { shutdown: true });
  });

  test('shutDownWithDrain waits for keys being processed', async () => {
    const q = new WorkQueue({ rateLimiter: immediate });
    q.add('a');
    await key(q);
    let drained = false;
    const p = q.shutDownWithDrain().then(() => (drained = true));
    await sleep(5);
    assert.equal(drained, false);
    q.done('a');
    await p;
    assert.equal(drained, true);
  });

  test('addAfter keeps the earliest pending time per key', async () => {
    const q = new WorkQueue({ rateLimiter: immediate });
    q.addAfter('a', 1000);
    q.addAfter('a', 10);
    q.addAfter('a', 500);
    const start = performance.now();
    assert.equal(await key(q), 'a');
    assert.ok(performance.now() - start < 400);
    q.done('a');
    q.shutDown();
  });

  test('addRateLimited backs off per key; forget resets', async () => {
    const q = new WorkQueue({ rateLimiter: new ItemExponentialFailureRateLimiter(5, 1000) });
    q.addRateLimited('a');
    q.addRateLimited('a');
    assert.equal(q.numRequeues('a'), 2);
    assert.equal(await key(q), 'a');
    q.forget('a');
    assert.equal(q.numRequeues('a'), 0);
    q.done('a');
    q.shutDown();
  });

  test('a named queue reports to the metrics provider; an unnamed one does not', async () => {
    const seen: string[] = [];
    const registered = new Set<InProgressSource>();
    setWorkQueueMetricsProvider({
      add: (name) => seen.push(`add ${name}`),
      depth: (name, depth) => seen.push(`depth ${name} ${depth}`),
      queueDuration: (name) => seen.push(`queued ${name}`),
      workDuration: (name) => seen.push(`worked ${name}`),
      retry: (name) => seen.push(`retry ${name}`),
      inProgress(source) {
        registered.add(source);
        return () => registered.delete(source);
      },
    });
    try {
      const unnamed = new WorkQueue({ rateLimiter: immediate });
      unnamed.add('x');
      await key(unnamed);
      unnamed.done('x');
      unnamed.shutDown();
      assert.deepEqual(seen, []);
      assert.equal(registered.size, 0);

      const q = new WorkQueue({ name: 'm', rateLimiter: immediate });
      q.add('a');
      await key(q);
      const [source] = registered;
      assert.equal(source?.name, 'm');
      assert.ok((source?.inProgress().longestSeconds ?? -1) >= 0);
      q.done('a');
      q.addRateLimited('a');
      await until('the retry queued', () => q.len() === 1);
      q.shutDown();
      assert.equal(registered.size, 0, 'unregistered at shutdown');
      assert.deepEqual(seen, [
        'add m',
        'depth m 1',
        'depth m 0',
        'queued m',
        'worked m',
        'retry m',
        'add m',
        'depth m 1',
      ]);
    } finally {
      setWorkQueueMetricsProvider(NO_WORKQUEUE_METRICS);
    }
  });
});

describe('rate limiters', () => {
  test('per-item exponential: 5 ms doubling, capped, independent per key', () => {
    const l = new ItemExponentialFailureRateLimiter(5, 1000 * 1000);
    assert.deepEqual(
      [1, 2, 3, 4, 5].map(() => l.when('a')),
      [5, 10, 20, 40, 80],
    );
    assert.equal(l.when('b'), 5);
    for (let i = 0; i < 40; i++) l.when('a');
    assert.equal(l.when('a'), 1000 * 1000);
    l.forget('a');
    assert.equal(l.when('a'), 5);
  });

  test('overall bucket: 100 burst free, then 100 ms apart at 10 qps', () => {
    let now = 0;
    const l = new BucketRateLimiter(10, 100, () => now);
    for (let i = 0; i < 100; i++) assert.equal(l.when(`k${i}`), 0);
    assert.equal(Math.round(l.when('x')), 100);
    assert.equal(Math.round(l.when('y')), 200);
    now = 10_000;
    assert.equal(l.when('z'), 0);
  });

  test('DefaultControllerRateLimiter is the max of both', () => {
    const now = 0;
    const l = defaultControllerRateLimiter(() => now);
    assert.equal(l.when('a'), 5);
    assert.equal(l.when('a'), 10);
    assert.equal(l.numRequeues('a'), 2);
    const m = new MaxOfRateLimiter(
      new ItemExponentialFailureRateLimiter(1, 10),
      new BucketRateLimiter(1, 1, () => now),
    );
    assert.equal(m.when('k'), 1);
    assert.equal(Math.round(m.when('k')), 1000);
  });
});
