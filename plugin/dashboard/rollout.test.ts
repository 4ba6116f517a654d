// Table tests of rolloutView, the one state the DaemonSet table and the detail panel share: the state word, the
// badges (held by partition / selector / canary, paused, canary phases, failed in red), progress against the allowed
// target ("141 / 226 allowed (of 500)", not updated/desired), and kubectl ads status's message word for word.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../../src/api/types.ts';
import { ds, type DsOptions } from '../test-fixtures.ts';
import { rolloutStatus } from '../status.ts';
import { daemonSetRow } from './model.ts';
import { progressText, rolloutView, type HoldCounts } from './rollout.ts';
import type { RolloutState } from './views.ts';

const counts = (desired: number, updated: number, available = desired) => ({
  desiredNumberScheduled: desired,
  currentNumberScheduled: desired,
  updatedNumberScheduled: updated,
  numberReady: available,
  numberAvailable: available,
});

const progressing = (status: 'True' | 'False' | 'Unknown', reason: string, message = '') => ({
  conditions: [{ type: 'Progressing', status, reason, message, lastTransitionTime: '2025-01-01T00:00:00Z' }],
});

const CANARY = { canary: { nodes: 1 } };
const canaryStatus = (phase: string, extra: Record<string, unknown> = {}) => ({
  daemonSetHash: 'h2',
  canary: { revision: 'h2', stableRevision: 'h1', nodes: ['node-9'], phase, reason: 'R', message: 'm', ...extra },
});

const holds = (partition: number, selector = 0, canary = 0): HoldCounts => ({
  heldByPartition: partition,
  heldBySelector: selector,
  heldByCanary: canary,
});

describe('rolloutView', () => {
  const cases: {
    name: string;
    ds: DsOptions;
    holds?: HoldCounts;
    state: RolloutState;
    text: string;
    percent?: number;
    badges: string[];
    exact?: boolean;
    /** The line when it is not kubectl ads status's as is. */
    message?: string;
  }[] = [
    {
      name: 'a rollout without boundaries: updated of desired',
      ds: { status: counts(4, 1) },
      state: 'progressing',
      text: '1 / 4',
      percent: 25,
      badges: ['progressing'],
    },
    {
      name: "the user's case: partition and selector allow 226 of 500 nodes, 141 done is 62%, not 28%",
      ds: { rollingUpdate: { partition: 200, selector: { matchLabels: { pool: 'a' } } }, status: counts(500, 141) },
      holds: holds(200, 74),
      state: 'progressing',
      text: '141 / 226 allowed (of 500)',
      percent: 62,
      badges: ['progressing', 'held-partition:held by partition: 200', 'held-selector:held by selector: 74'],
      // kubectl ads status, without the nodes, says "141 out of 500"; with them, its partitioned line out of 226.
      message: 'Waiting for partitioned roll out to finish: 141 out of 226 new pods have been updated...',
    },
    {
      name: 'the same, paused: the line keeps how to resume',
      ds: {
        rollingUpdate: { partition: 200, paused: true, selector: { matchLabels: { pool: 'a' } } },
        status: counts(500, 141),
      },
      holds: holds(200, 74),
      state: 'paused',
      text: '141 / 226 allowed (of 500)',
      badges: ['paused', 'held-partition:held by partition: 200', 'held-selector:held by selector: 74'],
      message:
        'Waiting for partitioned roll out to finish: 141 out of 226 new pods have been updated (paused: resume with "kubectl ads resume agent")...',
    },
    {
      name: 'partition without the node map: desired - partition (exact without a selector)',
      ds: { rollingUpdate: { partition: 2 }, status: counts(4, 1) },
      state: 'progressing',
      text: '1 / 2 allowed (of 4)',
      percent: 50,
      badges: ['progressing', 'held-partition:held by partition: 2'],
      exact: true,
    },
    {
      name: 'a percentage partition resolves against desired (25% of 8 = 2)',
      ds: { rollingUpdate: { partition: '25%' }, status: counts(8, 3) },
      state: 'progressing',
      text: '3 / 6 allowed (of 8)',
      badges: ['progressing', 'held-partition:held by partition: 2'],
    },
    {
      name: 'a selector without the node map: an estimate (the table row of a DaemonSet the page does not show)',
      ds: { rollingUpdate: { selector: { matchLabels: { pool: 'a' } } }, status: counts(10, 3) },
      state: 'progressing',
      text: '3 / 10',
      badges: ['progressing', 'held-selector:held by selector'],
      exact: false,
    },
    {
      name: 'Progressing reason PartitionReached: held, the target is what is updated',
      ds: {
        rollingUpdate: { partition: 2 },
        status: { ...counts(4, 2), ...progressing('True', 'PartitionReached') },
      },
      holds: holds(2),
      state: 'held',
      text: '2 / 2 allowed (of 4)',
      percent: 100,
      badges: ['held', 'held-partition:held by partition: 2'],
    },
    {
      name: 'PartitionReached as older managers wrote it (Progressing=False): held as well',
      ds: {
        rollingUpdate: { partition: 2 },
        status: { ...counts(4, 2), ...progressing('False', 'PartitionReached') },
      },
      state: 'held',
      text: '2 / 2 allowed (of 4)',
      badges: ['held', 'held-partition:held by partition: 2'],
    },
    {
      name: 'paused, with the Progressing=Unknown Paused the controller writes',
      ds: {
        rollingUpdate: { paused: true, partition: 1 },
        status: { ...counts(4, 1), ...progressing('Unknown', 'Paused') },
      },
      state: 'paused',
      text: '1 / 3 allowed (of 4)',
      badges: ['paused', 'held-partition:held by partition: 1'],
    },
    {
      name: 'frozen: its own state, before paused and the canary',
      ds: {
        annotations: { 'advanced-daemonset.io/rollout-frozen': 'true' },
        rollingUpdate: { paused: true },
        status: { ...counts(4, 1), ...progressing('Unknown', 'RolloutFrozen') },
      },
      state: 'frozen',
      text: '1 / 4',
      badges: ['frozen', 'paused'],
    },
    {
      name: 'paused: its own state; the partition still shows',
      ds: { rollingUpdate: { paused: true, partition: 1 }, status: counts(4, 1) },
      state: 'paused',
      text: '1 / 3 allowed (of 4)',
      badges: ['paused', 'held-partition:held by partition: 1'],
    },
    {
      name: 'paused and complete: complete, with a paused badge',
      ds: { rollingUpdate: { paused: true }, status: counts(3, 3) },
      state: 'complete',
      text: '3 / 3',
      percent: 100,
      badges: ['complete', 'paused'],
    },
    {
      name: 'a Failed canary is failed (red), and the canary badge is red too, paused or not',
      ds: { rollingUpdate: { ...CANARY, paused: true }, status: { ...counts(4, 0), ...canaryStatus('Failed') } },
      holds: holds(0, 0, 4),
      state: 'failed',
      text: '0 / 0 allowed (of 4)',
      badges: ['failed', 'held-canary:held by canary: 4', 'paused', 'canary:canary Failed'],
    },
    {
      name: 'a Paused canary',
      ds: { rollingUpdate: CANARY, status: { ...counts(4, 1), ...canaryStatus('Paused') } },
      holds: holds(0, 0, 3),
      state: 'canary-paused',
      text: '1 / 1 allowed (of 4)',
      badges: ['canary-paused', 'held-canary:held by canary: 3'],
    },
    {
      name: 'an Observing canary: the target is the canary nodes',
      ds: { rollingUpdate: CANARY, status: { ...counts(4, 0), ...canaryStatus('Observing') } },
      holds: holds(0, 0, 3),
      state: 'canary',
      text: '0 / 1 allowed (of 4)',
      percent: 0,
      badges: ['canary', 'held-canary:held by canary: 3'],
    },
    {
      name: 'an Observing canary without the node map: the canary nodes of status.canary',
      ds: { rollingUpdate: CANARY, status: { ...counts(4, 0), ...canaryStatus('Observing') } },
      state: 'canary',
      text: '0 / ≈1 allowed (of 4)',
      badges: ['canary'],
    },
    {
      name: 'a Promoted canary: the rollout goes on, the badge says Promoted',
      ds: { rollingUpdate: CANARY, status: { ...counts(4, 2), ...canaryStatus('Promoted') } },
      state: 'progressing',
      text: '2 / 4',
      badges: ['progressing', 'canary:canary Promoted'],
    },
    {
      name: 'status.canary without rollingUpdate.canary: no canary (as kubectl ads status reads it)',
      ds: { status: { ...counts(4, 2), ...canaryStatus('Failed') } },
      state: 'progressing',
      text: '2 / 4',
      badges: ['progressing'],
    },
    {
      name: 'ProgressDeadlineExceeded is failed',
      ds: { status: { ...counts(4, 1), ...progressing('False', 'ProgressDeadlineExceeded') } },
      state: 'failed',
      text: '1 / 4',
      badges: ['failed'],
    },
    {
      name: 'a spec change not observed yet',
      ds: { generation: 2, status: { ...counts(4, 4), observedGeneration: 1 } },
      state: 'pending',
      text: '4 / 4',
      badges: ['pending'],
    },
    {
      name: 'a spec change not observed yet comes first (as kubectl ads status), a Failed canary still red',
      ds: {
        generation: 2,
        rollingUpdate: CANARY,
        status: { ...counts(4, 0), observedGeneration: 1, ...canaryStatus('Failed') },
      },
      state: 'pending',
      text: '0 / 4',
      badges: ['pending', 'canary:canary Failed'],
    },
    {
      name: 'complete',
      ds: { status: counts(4, 4) },
      state: 'complete',
      text: '4 / 4',
      percent: 100,
      badges: ['complete'],
    },
    {
      name: 'updated but not all available: still progressing',
      ds: { status: counts(4, 4, 3) },
      state: 'progressing',
      text: '4 / 4',
      badges: ['progressing'],
    },
    {
      name: 'OnDelete: no rollout status, updated of desired',
      ds: { onDelete: true, status: counts(4, 1) },
      state: 'ondelete',
      text: '1 / 4',
      badges: ['ondelete'],
    },
  ];

  for (const c of cases)
    test(c.name, () => {
      const d = ds(c.ds);
      const v = rolloutView(d, c.holds);
      assert.equal(v.state, c.state);
      assert.equal(v.progress.text, c.text);
      if (c.percent !== undefined) assert.equal(v.progress.percent, c.percent);
      if (c.exact !== undefined) assert.equal(v.progress.exact, c.exact);
      // The state's badge (by kind) first, then the others as "kind:text".
      assert.deepEqual(
        v.badges.map((b, i) => (i === 0 || b.kind === 'paused' ? b.kind : `${b.kind}:${b.text}`)),
        c.badges,
      );
      // A failed rollout's badge is red.
      assert.equal(v.badges[0]!.tone === 'bad', c.state === 'failed');
      // The CLI's words: kubectl ads status prints the same line (out of the allowed target once the nodes tell it).
      if (!c.ds.onDelete) assert.equal(v.message, c.message ?? rolloutStatus(d).message);
      // The table's row and the detail (which shows the row it is sent) carry this very view.
      assert.deepEqual(daemonSetRow(d, c.holds).rollout, v);
    });

  test('the held state badge reads "partition reached"', () => {
    const v = rolloutView(
      ds({ rollingUpdate: { partition: 2 }, status: { ...counts(4, 2), ...progressing('True', 'PartitionReached') } }),
    );
    assert.deepEqual(v.badges[0], {
      kind: 'held',
      text: 'partition reached',
      title: 'partitioned roll out complete: 2 new pods have been updated...',
      tone: 'ok',
    });
  });

  test("the message is kubectl's partitioned StatefulSet wording while the partition holds nodes", () => {
    const v = rolloutView(ds({ rollingUpdate: { partition: 2 }, status: counts(4, 1) }));
    assert.equal(v.message, 'Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...');
  });

  test('failed wins over paused and a paused canary: one word for the table and the detail', () => {
    const d: DaemonSet = ds({
      rollingUpdate: { ...CANARY, paused: true },
      status: { ...counts(4, 1), ...canaryStatus('Failed'), ...progressing('False', 'CanaryFailed') },
    });
    for (const h of [undefined, holds(0, 0, 3)]) {
      assert.equal(rolloutView(d, h).state, 'failed');
      assert.equal(daemonSetRow(d, h).rollout.state, 'failed');
    }
  });
});

describe('progressText', () => {
  const cases: { p: Parameters<typeof progressText>[0]; want: string }[] = [
    { p: { updated: 141, target: 226, desired: 500, exact: true }, want: '141 / 226 allowed (of 500)' },
    { p: { updated: 3, target: 5, desired: 5, exact: true }, want: '3 / 5' },
    { p: { updated: 3, target: 4, desired: 5, exact: false }, want: '3 / ≈4 allowed (of 5)' },
    { p: { updated: 0, target: 0, desired: 0, exact: true }, want: '0 / 0' },
  ];
  for (const c of cases) test(c.want, () => assert.equal(progressText(c.p), c.want));
});
