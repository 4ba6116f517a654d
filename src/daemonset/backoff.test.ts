// Failed-pod backoff (client-go flowcontrol.Backoff as the DaemonSet controller uses it) and the removal of the
// entries no later sync reads.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  backoffNext,
  FAILED_POD_BACKOFF_MAX_MS,
  failedPodsBackoffKey,
  gcFailedPodsBackoff,
  IN_PLACE_RETRY_MAX_MS,
  inPlaceFailureExpired,
  inPlaceRetryWaitMs,
  nextInPlaceFailure,
  type BackoffState,
  type InPlaceFailure,
} from './backoff.ts';
import { addNodes, FakeCluster, newDaemonSet, T0 } from './test-fixtures.ts';

describe('gcFailedPodsBackoff', () => {
  const key = (node: string, gen = 3, uid = 'ds-uid') => failedPodsBackoffKey(uid, gen, node);
  const entry = (lastUpdateMs: number, backoffMs = 4_000) => ({ backoffMs, lastUpdateMs });
  const nodes = new Set(['n1', 'n2']);
  const rows: { name: string; state: BackoffState; now?: number; keep: string[] }[] = [
    { name: 'empty', state: {}, keep: [] },
    {
      name: 'current generation, existing nodes: kept, also once out of backoff (the next failure doubles it)',
      state: { [key('n1')]: entry(T0), [key('n2')]: entry(T0 - 60_000) },
      keep: [key('n1'), key('n2')],
    },
    {
      name: 'earlier observedGeneration: dropped (its key is never read again)',
      state: { [key('n1', 1)]: entry(T0), [key('n1', 2)]: entry(T0), [key('n1')]: entry(T0) },
      keep: [key('n1')],
    },
    {
      name: 'another DaemonSet UID (recreated under the same name): dropped',
      state: { [key('n1', 3, 'old-uid')]: entry(T0), [key('n2')]: entry(T0) },
      keep: [key('n2')],
    },
    {
      name: 'node gone: dropped',
      state: { [key('n1')]: entry(T0), [key('gone')]: entry(T0) },
      keep: [key('n1')],
    },
    {
      name: 'not updated for more than 2 x max (upstream GC): dropped; exactly 2 x max: kept',
      state: {
        [key('n1')]: entry(T0 - 2 * FAILED_POD_BACKOFF_MAX_MS - 1),
        [key('n2')]: entry(T0 - 2 * FAILED_POD_BACKOFF_MAX_MS),
      },
      keep: [key('n2')],
    },
    {
      name: 'a node name that is a prefix of another does not keep the other',
      state: { [key('n1')]: entry(T0), [key('n10')]: entry(T0) },
      keep: [key('n1')],
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const out = gcFailedPodsBackoff(row.state, 'ds-uid', 3, (n) => nodes.has(n), row.now ?? T0);
      assert.deepEqual(Object.keys(out).sort(), [...row.keep].sort());
      for (const k of row.keep) assert.deepEqual(out[k], row.state[k], `${k} unchanged`);
      if (row.keep.length === Object.keys(row.state).length)
        assert.equal(out, row.state, 'same object when nothing drops');
    });
  }

  test('the delay still doubles across failures on a node whose failed pod is gone in between', () => {
    let s: BackoffState = {};
    const k = key('n1');
    s = backoffNext(s, k, T0);
    s = gcFailedPodsBackoff(s, 'ds-uid', 3, (n) => nodes.has(n), T0 + 5_000);
    s = backoffNext(s, k, T0 + 5_000);
    assert.equal(s[k]?.backoffMs, 2_000);
  });
});

describe('failed-pod backoff in planDaemonSet', () => {
  const failNode = (c: FakeCluster, node: string) => {
    c.pods = c.pods.map((p) => (p.spec.nodeName === node ? { ...p, status: { ...p.status, phase: 'Failed' } } : p));
  };
  const run = (c: FakeCluster, n: number) => {
    for (let i = 0; i < n; i++) {
      c.sync();
      c.markReady();
      c.now += 1_000;
    }
  };

  test('entries of earlier generations and of removed nodes are gone after the next sync', () => {
    const c = new FakeCluster(newDaemonSet({ strategy: 'RollingUpdate' }), addNodes(3));
    run(c, 3);
    failNode(c, 'node-0');
    failNode(c, 'node-2');
    run(c, 3);
    const gen = c.ds.status?.observedGeneration ?? 0;
    assert.deepEqual(
      Object.keys(c.backoff).sort(),
      [failedPodsBackoffKey('foo-uid', gen, 'node-0'), failedPodsBackoffKey('foo-uid', gen, 'node-2')],
      'one entry per node whose pod failed',
    );
    // A rollout: observedGeneration moves on, so those keys are never read again.
    c.setImage('v2');
    run(c, 6);
    assert.ok((c.ds.status?.observedGeneration ?? 0) > gen, 'generation observed');
    assert.deepEqual(c.backoff, {}, 'entries of the earlier generation dropped');
    // A failure in this generation, then its node removed.
    failNode(c, 'node-1');
    run(c, 2);
    assert.equal(Object.keys(c.backoff).length, 1, 'the new failure has its entry');
    c.nodes = c.nodes.filter((n) => n.metadata.name !== 'node-1');
    run(c, 2);
    assert.deepEqual(c.backoff, {}, 'entry of the removed node dropped');
  });

  test('a node whose pods keep failing backs off 1 s, 2 s, 4 s: the entry survives the replacement pods', () => {
    const c = new FakeCluster(newDaemonSet({ strategy: 'RollingUpdate' }), addNodes(2));
    run(c, 3);
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      failNode(c, 'node-0');
      // Sync until the failed pod is deleted (after the current delay), then until it is replaced.
      for (let j = 0; j < 20 && c.pods.some((p) => p.status?.phase === 'Failed'); j++) run(c, 1);
      delays.push(Object.values(c.backoff)[0]?.backoffMs ?? 0);
      run(c, 2);
    }
    assert.deepEqual(delays, [1_000, 2_000, 4_000]);
  });
});

describe('in-place update retry backoff', () => {
  const now = 1_000_000;
  const failed = (toHash: string, failures: number, retryAt: number): InPlaceFailure => ({ toHash, failures, retryAt });
  const waits: { name: string; failure?: InPlaceFailure; toHash: string; want: number }[] = [
    { name: 'never failed: go', toHash: 'h2', want: 0 },
    { name: 'failed towards this revision, 800 ms left', failure: failed('h2', 1, now + 800), toHash: 'h2', want: 800 },
    { name: 'failed towards this revision, delay over', failure: failed('h2', 3, now - 1), toHash: 'h2', want: 0 },
    { name: 'failed towards another revision: go', failure: failed('h1', 4, now + 8_000), toHash: 'h2', want: 0 },
  ];
  for (const { name, failure, toHash, want } of waits) {
    test(`wait: ${name}`, () => assert.equal(inPlaceRetryWaitMs(failure, toHash, now), want));
  }
  const next: { name: string; prev?: InPlaceFailure; toHash: string; want: InPlaceFailure }[] = [
    { name: 'first failure: 1 s', toHash: 'h2', want: failed('h2', 1, now + 1_000) },
    {
      name: 'third failure in a row: 4 s',
      prev: failed('h2', 2, now),
      toHash: 'h2',
      want: failed('h2', 3, now + 4_000),
    },
    {
      name: 'capped at 5 min',
      prev: failed('h2', 20, now),
      toHash: 'h2',
      want: failed('h2', 21, now + IN_PLACE_RETRY_MAX_MS),
    },
    {
      name: 'a new revision starts over',
      prev: failed('h1', 6, now),
      toHash: 'h2',
      want: failed('h2', 1, now + 1_000),
    },
  ];
  for (const { name, prev, toHash, want } of next) {
    test(`next: ${name}`, () => assert.deepEqual(nextInPlaceFailure(prev, toHash, now), want));
  }
  test('a record is dropped once the longest delay has passed beyond its retryAt', () => {
    assert.equal(inPlaceFailureExpired(failed('h2', 1, now - IN_PLACE_RETRY_MAX_MS), now), false);
    assert.equal(inPlaceFailureExpired(failed('h2', 1, now - IN_PLACE_RETRY_MAX_MS - 1), now), true);
  });
});
