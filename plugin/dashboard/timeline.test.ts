// Table tests of the rollout's timeline (observeRollout: what changed between two sightings of the DaemonSet) and of
// its pace (rolloutPace: elapsed time, nodes per minute over a window, ETA to the allowed target).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ds, T0, type DsOptions } from '../test-fixtures.ts';
import {
  MAX_ENTRIES,
  observeRollout,
  rolloutPace,
  RATE_WINDOW_MS,
  type PaceInput,
  type RolloutHistory,
} from './timeline.ts';
import type { RolloutProgress } from './views.ts';

const status = (updated: number, extra: Record<string, unknown> = {}) => ({
  desiredNumberScheduled: 10,
  updatedNumberScheduled: updated,
  ...extra,
});
const cond = (s: 'True' | 'False' | 'Unknown', reason: string, message: string, at = T0) => ({
  conditions: [{ type: 'Progressing', status: s, reason, message, lastTransitionTime: new Date(at).toISOString() }],
});
const CANARY = { canary: { nodes: 1 } };
const canary = (phase: string) => ({
  canary: { revision: 'h2', stableRevision: 'h1', nodes: ['n1'], phase, reason: 'Why', message: 'what' },
});

/** Feeds the sightings one second apart (from T0 + 1 s) and shows the entries as "+<s>s kind: text". */
function run(steps: DsOptions[], gapMs = 1000): { h: RolloutHistory; shown: string[] } {
  let h: RolloutHistory | undefined;
  steps.forEach((o, i) => (h = observeRollout(h, ds(o), T0 + (i + 1) * gapMs)));
  return { h: h!, shown: h!.entries.map((e) => `+${(e.at - T0) / 1000}s ${e.kind}: ${e.text}`) };
}

describe('observeRollout', () => {
  const cases: { name: string; steps: DsOptions[]; gapMs?: number; want: string[] }[] = [
    {
      name: 'the first sighting: the Progressing condition at its lastTransitionTime, then where the dashboard starts',
      steps: [{ status: status(3, cond('True', 'Updating', '3 of 10 nodes updated')) }],
      want: [
        '+0s progressing: Progressing=True (Updating): 3 of 10 nodes updated',
        '+1s observed: dashboard started watching: update revision h2, 3 updated',
      ],
    },
    {
      name: 'a new update revision, then updated counts: one entry per burst of 30 s',
      steps: [
        { status: status(10, { daemonSetHash: 'h1' }) },
        { status: status(0, { daemonSetHash: 'h2' }) },
        { status: status(1, { daemonSetHash: 'h2' }) },
        { status: status(2, { daemonSetHash: 'h2' }) },
        { status: status(3, { daemonSetHash: 'h2' }) },
      ],
      want: [
        '+1s observed: dashboard started watching: update revision h1, 10 updated',
        '+2s revision: update revision h1 → h2',
        '+3s updated: updated 0 → 3',
      ],
    },
    {
      name: 'updated counts more than 30 s apart are separate entries',
      gapMs: 40_000,
      steps: [{ status: status(1) }, { status: status(2) }, { status: status(4) }],
      want: [
        '+40s observed: dashboard started watching: update revision h2, 1 updated',
        '+80s updated: updated 1 → 2',
        '+120s updated: updated 2 → 4',
      ],
    },
    {
      name: 'Progressing transitions with reason and message; a message change alone is no entry (counts move)',
      steps: [
        { status: status(1, cond('True', 'Updating', '1 of 10')) },
        { status: status(1, cond('True', 'Updating', 'message only changed')) },
        {
          rollingUpdate: { paused: true },
          status: status(1, cond('Unknown', 'Paused', '1 of 10; rolling update paused')),
        },
        { status: status(1, cond('True', 'Updating', '1 of 10')) },
      ],
      want: [
        '+0s progressing: Progressing=True (Updating): 1 of 10',
        '+1s observed: dashboard started watching: update revision h2, 1 updated',
        '+3s spec: rollingUpdate.paused set: rollout paused',
        '+3s progressing: Progressing=Unknown (Paused): 1 of 10; rolling update paused',
        '+4s spec: rollingUpdate.paused cleared: rollout resumed',
        '+4s progressing: Progressing=True (Updating): 1 of 10',
      ],
    },
    {
      name: 'partition changes (what the partition actions do)',
      steps: [
        { rollingUpdate: { partition: 5 }, status: status(5) },
        { rollingUpdate: { partition: 3 }, status: status(5) },
        { rollingUpdate: { partition: '10%' }, status: status(5) },
      ],
      want: [
        '+1s observed: dashboard started watching: update revision h2, 5 updated',
        '+2s spec: partition 5 → 3',
        '+3s spec: partition 3 → 10%',
      ],
    },
    {
      name: 'canary phases, with reason and message; the end of the canary too',
      steps: [
        { rollingUpdate: CANARY, status: status(0, canary('Observing')) },
        { rollingUpdate: CANARY, status: status(1, canary('Paused')) },
        { rollingUpdate: CANARY, status: status(1, canary('Failed')) },
        { status: status(1, canary('Failed')) },
      ],
      want: [
        '+1s canary: canary Observing (Why): what',
        '+1s observed: dashboard started watching: update revision h2, 0 updated',
        '+2s canary: canary Paused (Why): what',
        '+2s updated: updated 0 → 1',
        '+3s canary: canary Failed (Why): what',
        '+4s canary: canary over (no canary of the update revision)',
      ],
    },
  ];
  for (const c of cases) test(c.name, () => assert.deepEqual(run(c.steps, c.gapMs).shown, c.want));

  test('an unchanged object is the same history (nothing recorded, nothing copied)', () => {
    const d = ds({ status: status(3) });
    const h = observeRollout(undefined, d, T0);
    assert.equal(observeRollout(h, ds({ status: status(3) }), T0 + 1000), h);
  });

  test('a DaemonSet deleted and created again (another uid) starts over', () => {
    const h = observeRollout(undefined, ds({ status: status(3) }), T0);
    const again = ds({ status: status(0) });
    again.metadata.uid = 'other-uid';
    const h2 = observeRollout(h, again, T0 + 1000);
    assert.equal(h2.uid, 'other-uid');
    assert.deepEqual(
      h2.entries.map((e) => e.kind),
      ['observed'],
    );
  });

  test(`at most ${MAX_ENTRIES} entries, the oldest dropped`, () => {
    let h = observeRollout(undefined, ds({ rollingUpdate: { partition: 0 }, status: status(0) }), T0);
    for (let i = 1; i <= MAX_ENTRIES + 10; i++)
      h = observeRollout(h, ds({ rollingUpdate: { partition: i }, status: status(0) }), T0 + i * 1000);
    assert.equal(h.entries.length, MAX_ENTRIES);
    assert.equal(h.entries.at(-1)!.text, `partition ${MAX_ENTRIES + 9} → ${MAX_ENTRIES + 10}`);
  });

  test('the samples restart with a new update revision, and record when it was seen', () => {
    const { h } = run([
      { status: status(10, { daemonSetHash: 'h1' }) },
      { status: status(0, { daemonSetHash: 'h2' }) },
      { status: status(2, { daemonSetHash: 'h2' }) },
    ]);
    assert.equal(h.revisionSeenAt, T0 + 2000);
    assert.deepEqual(h.samples, [
      { at: T0 + 2000, updated: 0 },
      { at: T0 + 3000, updated: 2 },
    ]);
  });
});

describe('rolloutPace', () => {
  const progress = (updated: number, target: number): RolloutProgress => ({
    updated,
    target,
    desired: 500,
    available: updated,
    exact: true,
    percent: 0,
    text: '',
  });
  const MIN = 60_000;
  /** A history seen since T0 whose updated count was `v` at T0 + m minutes for each [m, v]. */
  const history = (points: [number, number][], revisionSeenAt?: number): RolloutHistory => ({
    uid: 'x',
    firstSeen: T0,
    ...(revisionSeenAt !== undefined ? { revisionSeenAt } : {}),
    last: {
      hash: 'h2',
      progressing: '',
      progressingReason: '',
      canaryPhase: '',
      updated: 0,
      partition: '0',
      paused: false,
    },
    entries: [],
    samples: points.map(([m, updated]) => ({ at: T0 + m * MIN, updated })),
  });
  const cases: { name: string; input: PaceInput; want: Record<string, unknown> }[] = [
    {
      name: 'rate over the last 5 minutes: 141 - 91 nodes in 5 min = 10/min; ETA (226 - 141) / 10 = 8.5 min',
      input: {
        history: history(
          [
            [0, 0],
            [3, 60],
            [5, 91],
            [9, 130],
            [10, 141],
          ],
          T0,
        ),
        progress: progress(141, 226),
        state: 'progressing',
        now: T0 + 10 * MIN,
      },
      want: { startedFrom: 'observed', elapsedMs: 10 * MIN, perMinute: 10, etaMs: 8.5 * MIN },
    },
    {
      name: 'seen for less than the window: the rate since first seen',
      input: {
        history: history([
          [0, 10],
          [2, 30],
        ]),
        progress: progress(30, 100),
        state: 'progressing',
        revisionCreated: T0 - 10 * MIN,
        now: T0 + 2 * MIN,
      },
      want: { startedFrom: 'revision', elapsedMs: 12 * MIN, perMinute: 10, etaMs: 7 * MIN },
    },
    {
      name: 'seen for less than 15 s: no rate yet, no ETA',
      input: { history: history([[0, 10]]), progress: progress(10, 100), state: 'progressing', now: T0 + 10_000 },
      want: { perMinute: undefined, etaMs: undefined, etaNote: 'measuring the rate' },
    },
    {
      name: 'nothing moved in the window: rate 0, no ETA',
      input: { history: history([[0, 10]]), progress: progress(10, 100), state: 'progressing', now: T0 + 20 * MIN },
      want: { perMinute: 0, etaMs: undefined, etaNote: 'no progress in the window' },
    },
    {
      name: 'paused: no ETA, said so',
      input: {
        history: history([
          [0, 0],
          [1, 5],
        ]),
        progress: progress(5, 100),
        state: 'paused',
        now: T0 + 2 * MIN,
      },
      want: { etaMs: undefined, etaNote: 'paused' },
    },
    {
      name: 'held at the partition: ETA reached (0)',
      input: { history: history([[0, 0]]), progress: progress(60, 60), state: 'held', now: T0 + MIN },
      want: { etaMs: 0 },
    },
    {
      name: 'a failed canary: no ETA',
      input: { history: history([[0, 0]]), progress: progress(0, 0), state: 'failed', now: T0 + MIN },
      want: { etaMs: undefined, etaNote: 'failed: no progress until fixed' },
    },
    {
      name: 'neither seen changing revision nor a ControllerRevision: no start, no elapsed time',
      input: { history: undefined, progress: progress(1, 10), state: 'progressing', now: T0 + 3 * MIN },
      want: { startedFrom: undefined, elapsedMs: undefined, perMinute: undefined },
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const got = rolloutPace(c.input) as unknown as Record<string, unknown>;
      assert.equal(got.windowMs, RATE_WINDOW_MS);
      for (const [k, v] of Object.entries(c.want)) assert.equal(got[k], v, k);
    });
});
