// The phase machine, one row per way a running canary moves, after ExtendedDaemonSet's canary tests
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/canary_test.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatTime } from '../../k8s/pod.ts';
import { T0 } from '../test-fixtures.ts';
import type { CanaryPodHealth } from './health.ts';
import {
  AS_BEFORE,
  AS_SEEN,
  CANARY_TRANSITIONS,
  canarySituation,
  firstTransition,
  nextCanaryPhase,
  type CanaryPhaseInput,
} from './phase.ts';
import { canarySettings, type CanarySpec, type CanaryStatus } from './settings.ts';

const MIN = 60_000;

const spec: CanarySpec = {
  duration: '10m',
  noRestartsDuration: '5m',
  autoPause: { maxRestarts: 2, maxStartupDuration: '5m' },
  autoFail: { maxRestarts: 5, maxRestartsDuration: '10m', timeout: '1h' },
};
const prev = (over: Partial<CanaryStatus> = {}): CanaryStatus => ({
  revision: 'h2',
  stableRevision: 'h1',
  nodes: ['n1'],
  phase: 'Observing',
  reason: 'Started',
  message: '',
  since: formatTime(T0),
  startTime: formatTime(T0),
  resumed: false,
  restartingSince: '',
  ...over,
});
const health = (over: Partial<CanaryPodHealth> = {}): CanaryPodHealth => ({
  pod: 'default/p1',
  node: 'n1',
  restarts: 0,
  ready: true,
  available: true,
  availableSince: T0,
  startedAt: T0,
  ...over,
});
const input = (over: Partial<CanaryPhaseInput> & { spec?: CanarySpec } = {}): CanaryPhaseInput => ({
  settings: canarySettings(over.spec ?? spec),
  prev: prev(),
  annotations: {},
  pods: [health()],
  nodes: ['n1'],
  complete: true,
  now: T0 + 3 * MIN,
  ...over,
});
const crashing = (restarts: number, at = T0 + 2 * MIN) =>
  health({
    restarts,
    restartContainer: 'foo',
    restartReason: 'CrashLoopBackOff',
    exitCode: 1,
    lastRestart: at,
    ready: false,
    available: false,
  });
describe('nextCanaryPhase', () => {
  const rows: {
    name: string;
    in: CanaryPhaseInput;
    phase: CanaryStatus['phase'];
    reason: string;
    message?: RegExp;
    requeueAfterMs?: number;
    resumed?: boolean;
  }[] = [
    {
      name: 'Auto: observing until every pod has been available for duration',
      in: input(),
      phase: 'Observing',
      reason: 'Started',
      message: /1 of 1 canary pod available; promotion at 2024-01-01T00:10:00Z/,
      requeueAfterMs: 7 * MIN,
    },
    {
      name: 'Auto: promoted after duration',
      in: input({ now: T0 + 10 * MIN }),
      phase: 'Promoted',
      reason: 'Validated',
    },
    {
      name: 'Auto: noRestartsDuration after the last restart delays promotion',
      in: input({ now: T0 + 10 * MIN, pods: [health({ restarts: 1, lastRestart: T0 + 8 * MIN })] }),
      phase: 'Observing',
      reason: 'Started',
      requeueAfterMs: 3 * MIN,
    },
    {
      name: 'Auto: a canary node without its canary pod is not promoted',
      in: input({ now: T0 + 30 * MIN, complete: false, nodes: ['n1', 'n2'] }),
      phase: 'Observing',
      reason: 'Started',
      message: /1 of 2 canary pods available/,
    },
    {
      name: 'no canary node: never promoted',
      in: input({ now: T0 + 30 * MIN, complete: false, nodes: [], pods: [] }),
      phase: 'Observing',
      reason: 'Started',
      message: /no node can be a canary node/,
    },
    {
      name: 'Manual: waits for the annotation',
      in: input({ spec: { validation: 'Manual' }, now: T0 + 300 * MIN }),
      phase: 'Observing',
      reason: 'Started',
      message: /waiting for annotation advanced-daemonset.io\/canary-validated=h2/,
    },
    {
      name: 'Manual: promoted by the annotation naming the revision',
      in: input({ spec: { validation: 'Manual' }, annotations: { 'advanced-daemonset.io/canary-validated': 'h2' } }),
      phase: 'Promoted',
      reason: 'ManualValidation',
    },
    {
      name: 'an annotation naming another revision does nothing',
      in: input({ spec: { validation: 'Manual' }, annotations: { 'advanced-daemonset.io/canary-validated': 'h1' } }),
      phase: 'Observing',
      reason: 'Started',
    },
    {
      name: 'cannot start: paused at once',
      in: input({ pods: [health({ cannotStart: { container: 'foo', reason: 'ImagePullBackOff' }, ready: false })] }),
      phase: 'Paused',
      reason: 'ImagePullBackOff',
      message: /pod default\/p1 on node n1: container foo cannot start: ImagePullBackOff/,
    },
    {
      name: 'restarts above autoPause.maxRestarts: paused',
      in: input({ pods: [crashing(3)] }),
      phase: 'Paused',
      reason: 'CrashLoopBackOff',
      message:
        /container foo restarted 3 times \(CrashLoopBackOff, last exit code 1\), more than autoPause.maxRestarts 2/,
    },
    {
      name: 'restarts at autoPause.maxRestarts: not yet',
      in: input({ pods: [crashing(2)] }),
      phase: 'Observing',
      reason: 'Started',
    },
    {
      name: 'autoPause holds once paused, even when the pod recovered',
      in: input({ prev: prev({ phase: 'Paused', reason: 'ErrImagePull', message: 'm' }) }),
      phase: 'Paused',
      reason: 'ErrImagePull',
    },
    {
      name: 'autoPause disabled: not paused',
      in: input({ spec: { ...spec, autoPause: { enabled: false } }, pods: [crashing(3)] }),
      phase: 'Observing',
      reason: 'Started',
    },
    {
      name: 'not ready maxStartupDuration after it started: paused',
      in: input({ pods: [health({ ready: false, available: false, startedAt: T0 - 3 * MIN })] }),
      phase: 'Paused',
      reason: 'SlowStartTimeoutExceeded',
    },
    {
      name: 'not ready, within maxStartupDuration: requeued for it',
      in: input({ pods: [health({ ready: false, available: false, startedAt: T0 })] }),
      phase: 'Observing',
      reason: 'Started',
      requeueAfterMs: 2 * MIN + 1,
    },
    {
      name: 'restarts above autoFail.maxRestarts: failed (even while paused)',
      in: input({ prev: prev({ phase: 'Paused', reason: 'CrashLoopBackOff' }), pods: [crashing(6)] }),
      phase: 'Failed',
      reason: 'CrashLoopBackOff',
      message: /more than autoFail.maxRestarts 5/,
    },
    {
      name: 'restarting longer than maxRestartsDuration: failed',
      in: input({
        prev: prev({ restartingSince: formatTime(T0) }),
        pods: [crashing(1, T0 + 11 * MIN)],
        now: T0 + 11 * MIN,
        spec: { ...spec, autoPause: { enabled: false } },
      }),
      phase: 'Failed',
      reason: 'RestartsTimeoutExceeded',
    },
    {
      name: 'older than timeout: failed',
      in: input({
        spec: { ...spec, validation: 'Manual', duration: undefined, noRestartsDuration: undefined },
        now: T0 + 61 * MIN,
      }),
      phase: 'Failed',
      reason: 'TimeoutExceeded',
    },
    {
      name: 'timeout not above duration is ignored (as EDS)',
      in: input({ spec: { ...spec, duration: '2h', autoFail: { timeout: '1h' } }, now: T0 + 61 * MIN }),
      phase: 'Observing',
      reason: 'Started',
    },
    {
      name: 'annotation canary-failed: failed, before anything else',
      in: input({
        annotations: { 'advanced-daemonset.io/canary-failed': 'true', 'advanced-daemonset.io/canary-validated': 'h2' },
      }),
      phase: 'Failed',
      reason: 'ManualFail',
    },
    {
      name: 'annotation canary-paused: paused',
      in: input({ annotations: { 'advanced-daemonset.io/canary-paused': 'true' }, now: T0 + 30 * MIN }),
      phase: 'Paused',
      reason: 'ManualPause',
    },
    {
      name: 'manual pause removed: resumed, and autoPause no longer applies',
      in: input({ prev: prev({ phase: 'Paused', reason: 'ManualPause' }), pods: [crashing(3)] }),
      phase: 'Observing',
      reason: 'Resumed',
      resumed: true,
    },
    {
      name: 'an autoPaused canary: the annotation "true" turns it into a manual pause...',
      in: input({
        prev: prev({ phase: 'Paused', reason: 'ErrImagePull' }),
        annotations: { 'advanced-daemonset.io/canary-paused': 'true' },
        pods: [health({ cannotStart: { container: 'foo', reason: 'ErrImagePull' }, ready: false })],
      }),
      phase: 'Paused',
      reason: 'ManualPause',
      resumed: false,
    },
    {
      name: '...and removing it resumes, autoPause no longer applies',
      in: input({
        prev: prev({ phase: 'Paused', reason: 'ManualPause' }),
        pods: [health({ cannotStart: { container: 'foo', reason: 'ErrImagePull' }, ready: false })],
      }),
      phase: 'Observing',
      reason: 'Resumed',
      resumed: true,
    },
    {
      name: 'a "false" left on the object resumes nothing: autoPause still applies to a later canary',
      in: input({
        annotations: { 'advanced-daemonset.io/canary-paused': 'false' },
        pods: [health({ cannotStart: { container: 'foo', reason: 'ErrImagePull' }, ready: false })],
      }),
      phase: 'Paused',
      reason: 'ErrImagePull',
      resumed: false,
    },
    {
      name: 'resumed: autoPause skipped until the canary ends, autoFail still applies',
      in: input({ prev: prev({ resumed: true }), pods: [crashing(6)] }),
      phase: 'Failed',
      reason: 'CrashLoopBackOff',
      resumed: true,
    },
    {
      name: 'autoPause says how to go on: promote, fail or resume, each naming the revision',
      in: input({ pods: [crashing(3)] }),
      phase: 'Paused',
      reason: 'CrashLoopBackOff',
      message:
        /annotate advanced-daemonset.io\/canary-validated=h2 to promote, advanced-daemonset.io\/canary-failed=h2 to fail, or advanced-daemonset.io\/canary-resumed=h2 to resume without autoPause$/,
    },
    {
      name: 'canary-resumed naming the revision resumes a canary autoPause paused, autoPause off',
      in: input({
        prev: prev({ phase: 'Paused', reason: 'ErrImagePull', message: 'm' }),
        annotations: { 'advanced-daemonset.io/canary-resumed': 'h2' },
        pods: [health({ cannotStart: { container: 'foo', reason: 'ErrImagePull' }, ready: false })],
      }),
      phase: 'Observing',
      reason: 'Resumed',
      resumed: true,
    },
    {
      name: 'canary-resumed naming the revision resumes a canary paused by hand (the pause annotation removed)',
      in: input({
        prev: prev({ phase: 'Paused', reason: 'ManualPause', message: 'm' }),
        annotations: { 'advanced-daemonset.io/canary-resumed': 'h2' },
        pods: [crashing(3)],
      }),
      phase: 'Observing',
      reason: 'Resumed',
      resumed: true,
    },
    {
      name: 'canary-resumed while canary-paused is still "true": the pause holds (autoPause is off once it goes)',
      in: input({
        prev: prev({ phase: 'Paused', reason: 'ManualPause', message: 'm' }),
        annotations: {
          'advanced-daemonset.io/canary-paused': 'true',
          'advanced-daemonset.io/canary-resumed': 'h2',
        },
      }),
      phase: 'Paused',
      reason: 'ManualPause',
      resumed: true,
    },
    {
      name: 'canary-resumed naming another revision (left from an earlier canary): ignored, autoPause holds',
      in: input({
        prev: prev({ phase: 'Paused', reason: 'ErrImagePull', message: 'm' }),
        annotations: { 'advanced-daemonset.io/canary-resumed': 'h1' },
      }),
      phase: 'Paused',
      reason: 'ErrImagePull',
      resumed: false,
    },
    {
      name: 'canary-resumed naming another revision: a new canary is still autoPaused',
      in: input({ annotations: { 'advanced-daemonset.io/canary-resumed': 'h1' }, pods: [crashing(3)] }),
      phase: 'Paused',
      reason: 'CrashLoopBackOff',
      resumed: false,
    },
    {
      name: 'canary-resumed before any pause: autoPause off for this canary, autoFail still applies',
      in: input({ annotations: { 'advanced-daemonset.io/canary-resumed': 'h2' }, pods: [crashing(3)] }),
      phase: 'Observing',
      reason: 'Started',
      resumed: true,
    },
    {
      name: 'canary-resumed: autoFail still fails it',
      in: input({
        prev: prev({ phase: 'Paused', reason: 'CrashLoopBackOff' }),
        annotations: { 'advanced-daemonset.io/canary-resumed': 'h2' },
        pods: [crashing(6)],
      }),
      phase: 'Failed',
      reason: 'CrashLoopBackOff',
      resumed: true,
    },
    {
      name: 'canary-failed naming the revision: failed',
      in: input({ annotations: { 'advanced-daemonset.io/canary-failed': 'h2' } }),
      phase: 'Failed',
      reason: 'ManualFail',
      message: /^failed by annotation advanced-daemonset.io\/canary-failed=h2$/,
    },
    {
      name: 'canary-failed naming another revision (left from an earlier canary): ignored',
      in: input({ annotations: { 'advanced-daemonset.io/canary-failed': 'h1' } }),
      phase: 'Observing',
      reason: 'Started',
    },
    {
      name: 'canary-failed "true" fails whichever canary runs (it stays in force until removed)',
      in: input({ annotations: { 'advanced-daemonset.io/canary-failed': 'true' } }),
      phase: 'Failed',
      reason: 'ManualFail',
      message: /^failed by annotation advanced-daemonset.io\/canary-failed=true$/,
    },
  ];
  for (const r of rows) {
    test(r.name, () => {
      const v = nextCanaryPhase(r.in);
      assert.deepEqual([v.phase, v.reason], [r.phase, r.reason], v.message);
      if (r.message) assert.match(v.message, r.message);
      if ('requeueAfterMs' in r) assert.equal(v.requeueAfterMs, r.requeueAfterMs);
      if (r.resumed !== undefined) assert.equal(v.resumed, r.resumed);
    });
  }

  test('restartingSince: the first restart seen, then kept', () => {
    const v = nextCanaryPhase(input({ pods: [crashing(1, T0 + 2 * MIN)] }));
    assert.equal(v.restartingSince, T0 + 2 * MIN);
    const w = nextCanaryPhase(
      input({ prev: prev({ restartingSince: formatTime(T0) }), pods: [crashing(1, T0 + 2 * MIN)] }),
    );
    assert.equal(w.restartingSince, T0);
  });
});

// ---- whole canaries through the planner ----

describe('CANARY_TRANSITIONS: each row, from its phases, on its event, to its phase and reason', () => {
  // One situation per row, in the table's order; each takes its row and no other (the rows above it do not apply).
  const rows: { on: RegExp; in: CanaryPhaseInput; reason: string; requeueAfterMs?: number }[] = [
    {
      on: /canary-failed "true" or naming the revision/,
      in: input({ annotations: { 'advanced-daemonset.io/canary-failed': 'h2' } }),
      reason: 'ManualFail',
    },
    {
      on: /canary-validated naming the revision/,
      in: input({ annotations: { 'advanced-daemonset.io/canary-validated': 'h2' } }),
      reason: 'ManualValidation',
    },
    { on: /more than autoFail.maxRestarts/, in: input({ pods: [crashing(6)] }), reason: 'CrashLoopBackOff' },
    {
      on: /longer than autoFail.maxRestartsDuration/,
      in: input({
        prev: prev({ restartingSince: formatTime(T0) }),
        pods: [crashing(1, T0 + 11 * MIN)],
        now: T0 + 11 * MIN,
        spec: { ...spec, autoPause: { enabled: false } },
      }),
      reason: 'RestartsTimeoutExceeded',
    },
    {
      on: /longer than autoFail.timeout ago/,
      in: input({ spec: { ...spec, validation: 'Manual' }, now: T0 + 61 * MIN }),
      reason: 'TimeoutExceeded',
    },
    {
      on: /canary-paused "true"/,
      in: input({ annotations: { 'advanced-daemonset.io/canary-paused': 'true' } }),
      reason: 'ManualPause',
      requeueAfterMs: 57 * MIN + 1,
    },
    {
      on: /autoPause paused it/,
      in: input({ prev: prev({ phase: 'Paused', reason: 'OOMKilled', message: 'm' }) }),
      reason: 'OOMKilled',
      requeueAfterMs: 57 * MIN + 1,
    },
    {
      on: /cannot start/,
      in: input({ pods: [health({ cannotStart: { container: 'foo', reason: 'CreateContainerError' } })] }),
      reason: 'CreateContainerError',
      requeueAfterMs: 57 * MIN + 1,
    },
    {
      on: /more than autoPause.maxRestarts/,
      in: input({ pods: [crashing(3)] }),
      reason: 'CrashLoopBackOff',
      requeueAfterMs: 57 * MIN + 1,
    },
    {
      on: /not ready autoPause.maxStartupDuration/,
      // The first pod would pause in 2 minutes; the second one is too slow now.
      in: input({
        pods: [
          health({ pod: 'default/p1', ready: false, available: false, startedAt: T0 }),
          health({ pod: 'default/p2', ready: false, available: false, startedAt: T0 - 3 * MIN }),
        ],
        nodes: ['n1', 'n2'],
      }),
      reason: 'SlowStartTimeoutExceeded',
      requeueAfterMs: 2 * MIN + 1,
    },
    { on: /Auto validation/, in: input({ now: T0 + 10 * MIN }), reason: 'Validated' },
    {
      on: /it goes on/,
      in: input({ prev: prev({ reason: 'Restarted' }) }),
      reason: 'Restarted',
      requeueAfterMs: 7 * MIN,
    },
    {
      on: /a person resumed it/,
      in: input({ prev: prev({ phase: 'Paused', reason: 'ManualPause' }) }),
      reason: 'Resumed',
      requeueAfterMs: 7 * MIN,
    },
  ];

  test('one situation per row, in the order of the table', () => {
    assert.equal(rows.length, CANARY_TRANSITIONS.length);
    CANARY_TRANSITIONS.forEach((t, i) => assert.match(t.on, rows[i]?.on ?? /^$/));
  });

  for (const [i, r] of rows.entries()) {
    const t = CANARY_TRANSITIONS[i];
    test(`${t?.from.join('|')} -> ${t?.to} (${t?.reason}): ${t?.on}`, () => {
      const s = canarySituation(r.in);
      assert.ok(t?.from.includes(r.in.prev.phase as 'Observing' | 'Paused'), 'the situation starts from the row');
      const taken = firstTransition(s);
      assert.equal(taken.row, t, `taken: ${taken.row.on}`);
      const v = nextCanaryPhase(r.in);
      assert.deepEqual([v.phase, v.reason, v.manual], [t?.to, r.reason, t?.manual]);
      if (t?.reason !== AS_SEEN && t?.reason !== AS_BEFORE) assert.equal(v.reason, t?.reason);
      assert.equal(v.requeueAfterMs, r.requeueAfterMs);
    });
  }

  test('the rows are well formed: a verdict that ends the canary is never requeued; AS_SEEN rows see a reason', () => {
    for (const t of CANARY_TRANSITIONS) {
      assert.ok(t.from.length > 0, t.on);
      assert.ok(t.to !== 'Observing' || !t.manual, t.on);
      if (t.reason === AS_BEFORE) assert.deepEqual(t.from, ['Observing'], t.on);
    }
    for (const [i, r] of rows.entries()) {
      const t = CANARY_TRANSITIONS[i];
      const taken = firstTransition(canarySituation(r.in));
      if (t?.reason === AS_SEEN) assert.ok(taken.finding.reason, t.on);
      else assert.equal(taken.finding.reason, undefined, t?.on);
      if (t?.to === 'Promoted' || t?.to === 'Failed') assert.equal(nextCanaryPhase(r.in).requeueAfterMs, undefined);
    }
  });

  test('from Observing and from Paused some row always applies: the last row of each phase has no condition', () => {
    for (const phase of ['Observing', 'Paused'] as const) {
      const last = CANARY_TRANSITIONS.findLast((t) => t.from.includes(phase));
      const bare = input({ prev: prev({ phase, reason: 'ManualPause' }), pods: [], nodes: [], complete: false });
      assert.ok(last?.check(canarySituation(bare)).finding, phase);
    }
  });
});
