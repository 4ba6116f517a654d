// Canary tables: node selection, health judgement, the phase machine, and whole canaries through the planner
// (FakeCluster), after ExtendedDaemonSet's canary tests
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/canary_test.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet, DaemonSetCondition } from '../api/types.ts';
import type { ControllerRevision, Node, Pod } from '../k8s/types.ts';
import { formatTime } from '../k8s/pod.ts';
import {
  canaryNodeCount,
  canarySettings,
  judgeCanaryPod,
  nextCanaryPhase,
  selectCanaryNodes,
  stableRevisionHash,
  storedCanaryStatus,
  type CanaryCandidate,
  type CanaryPhaseInput,
  type CanaryPodHealth,
  type CanarySpec,
  type CanaryStatus,
} from './canary.ts';
import { CANARY_POD_LABEL, CONTROLLER_REVISION_HASH_LABEL, INPLACE_UPDATE_STATE_ANNOTATION } from './constants.ts';
import { daemonSetGauges } from './metrics.ts';
import type { Plan } from './plan-types.ts';
import { FakeCluster, T0, addNodes, newDaemonSet, newNode, newPod } from './test-fixtures.ts';

const MIN = 60_000;

describe('canaryNodeCount: int or "N%" of desired, rounded up, at least 1', () => {
  const rows: { nodes: number | string; desired: number; want: number }[] = [
    { nodes: 3, desired: 10, want: 3 },
    { nodes: '10%', desired: 10, want: 1 },
    { nodes: '10%', desired: 11, want: 2 },
    { nodes: '25%', desired: 10, want: 3 },
    { nodes: '1%', desired: 0, want: 1 },
    { nodes: 0, desired: 5, want: 1 },
    { nodes: 'x', desired: 5, want: 1 },
  ];
  for (const r of rows) {
    test(`${r.nodes} of ${r.desired} -> ${r.want}`, () => assert.equal(canaryNodeCount(r.nodes, r.desired), r.want));
  }
});

describe('selectCanaryNodes', () => {
  const cand = (name: string, restarts = 0, zone = ''): CanaryCandidate => ({
    name,
    restarts,
    spreadKey: JSON.stringify(zone ? [zone] : []),
  });
  const rows: { name: string; candidates: CanaryCandidate[]; count: number; previous?: string[]; want: string[] }[] = [
    {
      name: 'fewest restarts first, then by name',
      candidates: [cand('a', 3), cand('b', 0), cand('c', 1), cand('d', 0)],
      count: 2,
      want: ['b', 'd'],
    },
    {
      name: 'round-robin over zones: one per zone before a second in any',
      candidates: [cand('a1', 0, 'a'), cand('a2', 0, 'a'), cand('a3', 0, 'a'), cand('b1', 5, 'b'), cand('c1', 1, 'c')],
      count: 3,
      want: ['a1', 'b1', 'c1'],
    },
    {
      name: 'the second round goes to the groups with the better candidates',
      candidates: [cand('a1', 0, 'a'), cand('a2', 0, 'a'), cand('b1', 2, 'b'), cand('b2', 9, 'b')],
      count: 3,
      want: ['a1', 'a2', 'b1'],
    },
    {
      name: 'previous nodes are kept (stable across syncs), even with more restarts',
      candidates: [cand('a', 7), cand('b', 0), cand('c', 0)],
      count: 2,
      previous: ['a', 'c'],
      want: ['a', 'c'],
    },
    {
      name: 'a previous node gone (or no longer a candidate) is replaced, spreading against the kept ones',
      candidates: [cand('a1', 0, 'a'), cand('a2', 0, 'a'), cand('b1', 0, 'b'), cand('b2', 0, 'b')],
      count: 2,
      previous: ['a1', 'gone'],
      want: ['a1', 'b1'],
    },
    {
      name: 'never shrinks: more previous nodes than count are kept',
      candidates: [cand('a'), cand('b'), cand('c')],
      count: 1,
      previous: ['b', 'c'],
      want: ['b', 'c'],
    },
    { name: 'fewer candidates than count', candidates: [cand('a')], count: 3, want: ['a'] },
    { name: 'no candidate', candidates: [], count: 3, want: [] },
  ];
  for (const r of rows) {
    test(r.name, () => assert.deepEqual(selectCanaryNodes(r.candidates, r.count, r.previous), r.want));
  }
});

describe('stableRevisionHash', () => {
  const ds = newDaemonSet();
  const rev = (hash: string, revision: number) =>
    ({
      metadata: { name: `foo-${hash}`, labels: { [CONTROLLER_REVISION_HASH_LABEL]: hash } },
      revision,
    }) as ControllerRevision;
  const revisions = new Map([
    ['r1', rev('r1', 1)],
    ['r2', rev('r2', 2)],
    ['r3', rev('r3', 3)],
  ]);
  const pods = (hashes: string[], extra: Partial<Parameters<typeof newPod>[2]> = {}) =>
    hashes.map((h, i) => newPod(ds, `n${i}`, { hash: h, ...extra }));
  const rows: { name: string; pods: Pod[]; want: string | undefined }[] = [
    { name: 'the revision most pods run', pods: pods(['r1', 'r2', 'r2', 'r3']), want: 'r2' },
    { name: 'ties go to the newer revision', pods: pods(['r1', 'r2']), want: 'r2' },
    { name: 'the current revision does not count', pods: pods(['r3', 'r3', 'r1']), want: 'r1' },
    { name: 'every pod on the current revision: none', pods: pods(['r3']), want: undefined },
    { name: 'no pods: none (a new DaemonSet)', pods: [], want: undefined },
    { name: 'a revision without ControllerRevision does not count', pods: pods(['gone', 'gone', 'r1']), want: 'r1' },
    { name: 'terminating pods do not count', pods: pods(['r1', 'r1'], { deleting: true }), want: undefined },
  ];
  for (const r of rows) test(r.name, () => assert.equal(stableRevisionHash(r.pods, 'r3', revisions), r.want));
});

/** A canary pod of `ds` on `node` with the given container status (Ready unless told). */
function podWith(
  status: {
    restartCount?: number;
    waiting?: string;
    lastTerminated?: { reason?: string; exitCode?: number; finishedAt: number };
    ready?: boolean;
    readySince?: number;
    created?: number;
  },
  annotations?: Record<string, string>,
): Pod {
  const ds = newDaemonSet();
  const pod = newPod(ds, 'n1', {
    name: 'p1',
    hash: 'h2',
    ready: status.ready ?? true,
    readySince: status.readySince ?? T0,
    created: status.created ?? T0,
  });
  if (annotations) pod.metadata.annotations = annotations;
  pod.status = {
    ...pod.status,
    containerStatuses: [
      {
        name: 'foo',
        image: 'foo/bar:v2',
        imageID: 'v2-id',
        ready: status.ready ?? true,
        restartCount: status.restartCount ?? 0,
        state: status.waiting ? { waiting: { reason: status.waiting, message: 'details' } } : { running: {} },
        ...(status.lastTerminated
          ? {
              lastState: {
                terminated: {
                  exitCode: status.lastTerminated.exitCode ?? 1,
                  reason: status.lastTerminated.reason ?? 'Error',
                  finishedAt: formatTime(status.lastTerminated.finishedAt),
                },
              },
            }
          : {}),
      },
    ],
  };
  return pod;
}

describe('judgeCanaryPod', () => {
  const inPlace = (restartCounts: Record<string, number> | undefined) => ({
    [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify({
      revision: 'h2',
      updateTimestamp: formatTime(T0 + 10 * MIN),
      lastContainerStatuses: { foo: { imageID: 'v1-id' } },
      ...(restartCounts ? { restartCounts } : {}),
    }),
  });
  const rows: {
    name: string;
    pod: Pod;
    want: Partial<CanaryPodHealth>;
  }[] = [
    {
      name: 'healthy, available since Ready',
      pod: podWith({ readySince: T0 + MIN }),
      want: { restarts: 0, ready: true, available: true, availableSince: T0 + MIN, startedAt: T0 },
    },
    {
      name: 'ErrImagePull cannot start',
      pod: podWith({ waiting: 'ErrImagePull', ready: false }),
      want: { cannotStart: { container: 'foo', reason: 'ErrImagePull', message: 'details' }, available: false },
    },
    { name: 'CrashLoopBackOff is not "cannot start"', pod: podWith({ waiting: 'CrashLoopBackOff' }), want: {} },
    {
      name: 'restarts with the waiting reason and exit code',
      pod: podWith({
        restartCount: 3,
        waiting: 'CrashLoopBackOff',
        ready: false,
        lastTerminated: { finishedAt: T0 + 2 * MIN, exitCode: 1 },
      }),
      want: {
        restarts: 3,
        restartReason: 'CrashLoopBackOff',
        exitCode: 1,
        terminationReason: 'Error',
        lastRestart: T0 + 2 * MIN,
      },
    },
    {
      name: 'restarts, running again between two: still CrashLoopBackOff (not the instant the sync reads)',
      pod: podWith({ restartCount: 2, lastTerminated: { reason: 'Error', exitCode: 1, finishedAt: T0 } }),
      want: { restarts: 2, restartReason: 'CrashLoopBackOff', exitCode: 1, terminationReason: 'Error' },
    },
    {
      name: 'restarts killed for memory: OOMKilled',
      pod: podWith({ restartCount: 1, lastTerminated: { reason: 'OOMKilled', exitCode: 137, finishedAt: T0 } }),
      want: { restarts: 1, restartReason: 'OOMKilled', exitCode: 137 },
    },
    {
      name: 'updated in place: its history and the restart of the update do not count',
      pod: podWith({ restartCount: 8, lastTerminated: { finishedAt: T0 + 10 * MIN } }, inPlace({ foo: 7 })),
      want: { restarts: 0, startedAt: T0 + 10 * MIN },
    },
    {
      name: 'updated in place: restarts after the update count',
      pod: podWith({ restartCount: 11, lastTerminated: { finishedAt: T0 + 12 * MIN } }, inPlace({ foo: 7 })),
      want: { restarts: 3, lastRestart: T0 + 12 * MIN },
    },
    {
      name: 'updated in place by Kruise (no restartCounts): only the update restart is subtracted',
      pod: podWith({ restartCount: 2, lastTerminated: { finishedAt: T0 + 11 * MIN } }, inPlace(undefined)),
      want: { restarts: 1 },
    },
  ];
  for (const r of rows) {
    test(r.name, () => {
      const h = judgeCanaryPod(r.pod, 0, T0 + 20 * MIN);
      for (const [k, v] of Object.entries(r.want)) assert.deepEqual(h[k as keyof CanaryPodHealth], v, k);
      if (!('cannotStart' in r.want)) assert.equal(h.cannotStart, undefined);
    });
  }
});

describe('nextCanaryPhase', () => {
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

const ZONES = ['zone-a', 'zone-b', 'zone-c'];

function canaryCluster(canary: CanarySpec, opts: { nodes?: Node[]; rollingUpdate?: Record<string, unknown> } = {}) {
  const ds = newDaemonSet({
    image: 'img:v1',
    strategy: 'RollingUpdate',
    rollingUpdate: { maxUnavailable: 1, ...(opts.rollingUpdate ?? {}), canary },
  });
  const c = new FakeCluster(ds, opts.nodes ?? addNodes(5));
  settle(c);
  return c;
}

/** Sync (pods turning Ready at once) until a sync changes nothing; every plan is returned. */
function settle(c: FakeCluster, max = 40, ready = (_p: Pod) => true): Plan[] {
  const plans: Plan[] = [];
  for (let i = 0; i < max; i++) {
    const p = c.sync();
    plans.push(p);
    c.markReady(ready);
    if (p.creates.length + p.deletes.length + p.inPlaceUpdates.length === 0 && p.stage === 'Complete') {
      const again = c.plan();
      if (again.creates.length + again.deletes.length + again.inPlaceUpdates.length === 0) {
        if (again.statusChanged || again.podPatches.length > 0) {
          c.apply(again);
          plans.push(again);
        }
        return plans;
      }
    }
  }
  return plans;
}

const imageOf = (p: Pod) => p.spec.containers[0]?.image ?? '';
const imagesByNode = (c: FakeCluster) =>
  Object.fromEntries(
    c
      .live()
      .map((p) => [p.spec.nodeName ?? '', imageOf(p)] as const)
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
const canaryOf = (c: FakeCluster) => storedCanaryStatus(c.ds);
const progressing = (ds: DaemonSet) =>
  (ds.status?.conditions ?? []).find((x: DaemonSetCondition) => x.type === 'Progressing');
const eventsOf = (plans: Plan[], reason: string) => plans.flatMap((p) => p.events.filter((e) => e.reason === reason));

/** Pods of `image` on `nodes` crash: restartCount and CrashLoopBackOff as the kubelet reports it, not Ready. */
function crash(c: FakeCluster, nodes: readonly string[], restartCount: number, image = 'img:v2'): void {
  c.pods = c.pods.map((p) => {
    if (!nodes.includes(p.spec.nodeName ?? '') || imageOf(p) !== image || p.metadata.deletionTimestamp) return p;
    const cs = (p.status?.containerStatuses ?? []).map((s) => ({
      ...s,
      restartCount,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: formatTime(c.now) } },
    }));
    const conditions = [{ type: 'Ready', status: 'False' as const, lastTransitionTime: formatTime(c.now) }];
    return { ...p, status: { ...p.status, containerStatuses: cs, conditions } };
  });
}

describe('canary through the planner', () => {
  test('Auto: only the canary nodes get the new revision, new nodes the stable one; promoted after duration', () => {
    const c = canaryCluster({ nodes: 2, duration: '10m', noRestartsDuration: '5m' });
    assert.equal(canaryOf(c), undefined, 'no canary for the first rollout');
    c.setImage('img:v2');
    c.nodes = [...c.nodes, newNode('node-9')];
    const plans = settle(c);
    const canary = canaryOf(c);
    assert.deepEqual([canary?.phase, canary?.reason, canary?.nodes], ['Observing', 'Started', ['node-0', 'node-1']]);
    assert.equal(
      canary?.stableRevision,
      c.revisions.find((r) => r.revision === 1)?.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL],
    );
    assert.deepEqual(imagesByNode(c), {
      'node-0': 'img:v2',
      'node-1': 'img:v2',
      'node-2': 'img:v1',
      'node-3': 'img:v1',
      'node-4': 'img:v1',
      'node-9': 'img:v1',
    });
    assert.deepEqual(
      c
        .live()
        .filter((p) => p.metadata.labels?.[CANARY_POD_LABEL] === 'true')
        .map((p) => p.spec.nodeName)
        .sort(),
      ['node-0', 'node-1'],
    );
    assert.equal(eventsOf(plans, 'CanaryStarted').length, 1);
    assert.match(eventsOf(plans, 'CanaryStarted')[0]?.message ?? '', /started on nodes node-0, node-1/);
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'CanaryObserving']);
    const last = c.plan();
    assert.equal(last.requeueAfterMs, 10 * MIN, 'requeued for the duration, no event needed');

    c.now += 10 * MIN;
    const after = settle(c);
    assert.equal(canaryOf(c)?.phase, 'Promoted');
    assert.equal(eventsOf(after, 'CanaryPromoted').length, 1);
    assert.ok(
      c.live().every((p) => imageOf(p) === 'img:v2'),
      JSON.stringify(imagesByNode(c)),
    );
    assert.ok(
      c.live().every((p) => p.metadata.labels?.[CANARY_POD_LABEL] === undefined),
      'labels removed',
    );
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'RolloutComplete']);
  });

  test('crashloop: paused, then failed; canary nodes back to stable, no other node ever ran the bad image', () => {
    const c = canaryCluster({ nodes: 2, autoPause: { maxRestarts: 1 }, autoFail: { maxRestarts: 3 } });
    c.setImage('img:v2');
    const plans: Plan[] = [];
    const badOutsideCanary = () =>
      c.pods.some((p) => imageOf(p) === 'img:v2' && !['node-0', 'node-1'].includes(p.spec.nodeName ?? ''));
    const step = (restarts: number) => {
      for (let i = 0; i < 6; i++) {
        plans.push(c.sync());
        c.markReady((p) => imageOf(p) === 'img:v1');
        crash(c, ['node-0', 'node-1'], restarts);
        assert.ok(!badOutsideCanary(), 'a non-canary node ran the canary revision');
        c.now += 1000;
      }
    };
    step(2);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Paused', 'CrashLoopBackOff']);
    const paused = eventsOf(plans, 'CanaryPaused');
    assert.equal(paused.length, 1);
    assert.equal(paused[0]?.type, 'Warning');
    assert.match(paused[0]?.message ?? '', /pod default\/foo-\d+ on node node-[01]: container foo restarted 2 times/);
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['Unknown', 'CanaryPaused']);
    // Paused: the rolling update stops, so at most maxUnavailable canary nodes took the bad revision.
    assert.equal(c.live().filter((p) => imageOf(p) === 'img:v2').length, 1);

    step(4);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Failed', 'CrashLoopBackOff']);
    assert.equal(eventsOf(plans, 'CanaryFailed').length, 1);
    assert.match(
      eventsOf(plans, 'CanaryFailed')[0]?.message ?? '',
      /more than autoFail.maxRestarts 3; rolling back nodes node-0, node-1/,
    );
    for (let i = 0; i < 10; i++) {
      plans.push(c.sync());
      c.markReady((p) => imageOf(p) === 'img:v1');
      assert.ok(!badOutsideCanary());
    }
    assert.ok(
      c.live().every((p) => imageOf(p) === 'img:v1'),
      JSON.stringify(imagesByNode(c)),
    );
    assert.equal(eventsOf(plans, 'CanaryRolledBack').length, 1);
    assert.match(canaryOf(c)?.message ?? '', /the canary nodes run the stable revision again$/);
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['False', 'CanaryFailed']);
    assert.ok(c.live().every((p) => p.metadata.labels?.[CANARY_POD_LABEL] === undefined));

    // Held until the template changes: a new node gets the stable revision, nothing moves.
    c.nodes = [...c.nodes, newNode('node-7')];
    settle(c);
    assert.equal(imagesByNode(c)['node-7'], 'img:v1');
    assert.equal(canaryOf(c)?.phase, 'Failed');

    // A fixed version: a new canary, on the same nodes, with the same stable revision.
    const stable = canaryOf(c)?.stableRevision;
    c.setImage('img:v3');
    const restarted = settle(c);
    assert.deepEqual(
      [canaryOf(c)?.phase, canaryOf(c)?.reason, canaryOf(c)?.nodes],
      ['Observing', 'Restarted', ['node-0', 'node-1']],
    );
    assert.equal(canaryOf(c)?.stableRevision, stable);
    assert.equal(eventsOf(restarted, 'CanaryStarted').length, 1);
  });

  test('badimage: paused at once', () => {
    const c = canaryCluster({ nodes: 1 });
    c.setImage('img:v2');
    c.sync();
    c.sync();
    c.pods = c.pods.map((p) =>
      imageOf(p) === 'img:v2'
        ? {
            ...p,
            status: {
              ...p.status,
              containerStatuses: (p.status?.containerStatuses ?? []).map((s) => ({
                ...s,
                state: { waiting: { reason: 'ErrImagePull', message: 'pull failed' } },
              })),
            },
          }
        : p,
    );
    const p = c.sync();
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Paused', 'ErrImagePull']);
    assert.match(
      p.events.find((e) => e.reason === 'CanaryPaused')?.message ?? '',
      /cannot start: ErrImagePull \(pull failed\)/,
    );
  });

  test('Manual: waits for canary-validated naming the revision', () => {
    const c = canaryCluster({ nodes: 1, validation: 'Manual' });
    c.setImage('img:v2');
    settle(c);
    c.now += 600 * MIN;
    settle(c);
    assert.equal(canaryOf(c)?.phase, 'Observing');
    assert.equal(c.live().filter((p) => imageOf(p) === 'img:v2').length, 1);
    const hash = canaryOf(c)?.revision ?? '';
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-validated': hash } } };
    const plans = settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Promoted', 'ManualValidation']);
    assert.equal(eventsOf(plans, 'CanaryPromoted').length, 1);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v2'));
  });

  test('spreadByNodeLabels: 3 canary nodes over 3 zones', () => {
    const nodes = Array.from({ length: 9 }, (_, i) =>
      newNode(`node-${i}`, { 'topology.kubernetes.io/zone': ZONES[Math.floor(i / 3)] as string }),
    );
    const c = canaryCluster({ nodes: 3, spreadByNodeLabels: ['topology.kubernetes.io/zone'] }, { nodes });
    c.setImage('img:v2');
    settle(c);
    const picked = canaryOf(c)?.nodes ?? [];
    assert.equal(picked.length, 3);
    const zones = picked.map(
      (n) => c.nodes.find((x) => x.metadata.name === n)?.metadata.labels?.['topology.kubernetes.io/zone'],
    );
    assert.deepEqual([...new Set(zones)].sort(), ZONES);
  });

  test('nodeSelector and rollingUpdate.selector restrict the candidates', () => {
    const nodes = [
      newNode('node-0'),
      newNode('node-1', { pool: 'general' }),
      newNode('node-2', { pool: 'general', gpu: 'y' }),
    ];
    const c = canaryCluster(
      { nodes: 3, nodeSelector: { matchLabels: { pool: 'general' } } },
      { nodes, rollingUpdate: { selector: { matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] } } },
    );
    c.setImage('img:v2');
    settle(c);
    assert.deepEqual(canaryOf(c)?.nodes, ['node-1']);
  });

  test('a newer template during the canary restarts it on the same nodes', () => {
    const c = canaryCluster({ nodes: 2 });
    c.setImage('img:v2');
    settle(c);
    const first = canaryOf(c);
    c.setImage('img:v3');
    settle(c);
    const second = canaryOf(c);
    assert.deepEqual([second?.phase, second?.reason, second?.nodes], ['Observing', 'Restarted', first?.nodes]);
    assert.equal(second?.stableRevision, first?.stableRevision);
    assert.notEqual(second?.revision, first?.revision);
    assert.deepEqual(
      c
        .live()
        .filter((p) => imageOf(p) !== 'img:v1')
        .map((p) => [p.spec.nodeName, imageOf(p)])
        .sort(),
      [
        ['node-0', 'img:v3'],
        ['node-1', 'img:v3'],
      ],
    );
  });

  test('back to the stable template during the canary: it ends, canary nodes return', () => {
    const c = canaryCluster({ nodes: 2 });
    c.setImage('img:v2');
    settle(c);
    c.setImage('img:v1');
    settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Promoted', 'StableRevision']);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));
  });

  test('InPlaceIfPossible: canary pods keep their UIDs, forward and back', () => {
    const c = canaryCluster(
      { nodes: 2 },
      { rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 2 } },
    );
    const uids = new Map(c.live().map((p) => [p.spec.nodeName, p.metadata.uid]));
    c.setImage('img:v2');
    const plans = settle(c);
    c.kubeletRestartChangedContainers();
    settle(c);
    assert.ok(plans.some((p) => p.inPlaceUpdates.length > 0));
    assert.equal(canaryOf(c)?.phase, 'Observing', canaryOf(c)?.message);
    assert.equal(c.live().filter((p) => imageOf(p) === 'img:v2').length, 2);
    assert.deepEqual(new Map(c.live().map((p) => [p.spec.nodeName, p.metadata.uid])), uids);
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-failed': 'true' } } };
    settle(c);
    c.kubeletRestartChangedContainers();
    settle(c);
    assert.equal(canaryOf(c)?.phase, 'Failed');
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));
    assert.deepEqual(new Map(c.live().map((p) => [p.spec.nodeName, p.metadata.uid])), uids);
  });

  test('surge on canary nodes: the new pod first, within maxSurge', () => {
    const c = canaryCluster({ nodes: 2 }, { rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    c.setImage('img:v2');
    const p = c.sync();
    assert.deepEqual([p.creates.length, p.deletes.length], [1, 0]);
    assert.ok(['node-0', 'node-1'].includes(p.creates[0]?.nodeName ?? ''));
    settle(c);
    assert.equal(c.live().filter((x) => imageOf(x) === 'img:v2').length, 2);
    assert.equal(c.live().length, 5);
  });

  test('canary removed from the spec during the canary: promoted (CanaryRemoved), rolled out everywhere', () => {
    const c = canaryCluster({ nodes: 1 });
    c.setImage('img:v2');
    settle(c);
    c.updateSpec((ds) => {
      delete (ds.spec.updateStrategy?.rollingUpdate as { canary?: unknown }).canary;
    });
    settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Promoted', 'CanaryRemoved']);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v2'));
  });

  test('canary-resumed resumes a canary autoPause paused, for that canary only; autoFail still applies', () => {
    const c = canaryCluster({ nodes: 2, autoPause: { maxRestarts: 1 }, autoFail: { maxRestarts: 6 } });
    c.setImage('img:v2');
    const plans: Plan[] = [];
    const step = (restarts: number, image = 'img:v2', nodes = ['node-0', 'node-1']) => {
      for (let i = 0; i < 6; i++) {
        plans.push(c.sync());
        c.markReady((p) => imageOf(p) === 'img:v1');
        crash(c, nodes, restarts, image);
        c.now += 1000;
      }
    };
    const annotate = (annotations: Record<string, string>) => {
      c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations } };
    };
    step(2);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Paused', 'CrashLoopBackOff']);
    const v2 = canaryOf(c)?.revision ?? '';

    // A hash of another revision does nothing.
    annotate({ 'advanced-daemonset.io/canary-resumed': canaryOf(c)?.stableRevision ?? '' });
    step(2);
    assert.deepEqual(
      [canaryOf(c)?.phase, canaryOf(c)?.reason, canaryOf(c)?.resumed],
      ['Paused', 'CrashLoopBackOff', false],
    );

    annotate({ 'advanced-daemonset.io/canary-resumed': v2 });
    step(3);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason, canaryOf(c)?.resumed], ['Observing', 'Resumed', true]);
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'CanaryObserving']);
    assert.equal(eventsOf(plans, 'CanaryPaused').length, 1, 'not paused again: autoPause is off for this canary');

    step(7);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Failed', 'CrashLoopBackOff']);

    // The next canary (the annotation still names v2): autoPause applies again.
    c.setImage('img:v3');
    plans.length = 0;
    step(2, 'img:v3');
    assert.notEqual(canaryOf(c)?.revision, v2);
    assert.deepEqual(
      [canaryOf(c)?.phase, canaryOf(c)?.reason, canaryOf(c)?.resumed],
      ['Paused', 'CrashLoopBackOff', false],
    );
    assert.equal(eventsOf(plans, 'CanaryPaused').length, 1);
  });

  test('canary-failed naming the revision fails that canary only: the next template runs its canary', () => {
    const c = canaryCluster({ nodes: 1, duration: '10m', noRestartsDuration: '5m' });
    c.setImage('img:v2');
    settle(c);
    const v2 = canaryOf(c)?.revision ?? '';
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-failed': v2 } } };
    settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Failed', 'ManualFail']);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));

    c.setImage('img:v3');
    settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Observing', 'Restarted']);
    c.now += 10 * MIN;
    settle(c);
    assert.equal(canaryOf(c)?.phase, 'Promoted');
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v3'));
  });

  test('canary-failed "true" stays in force: the next canary fails at its first sync', () => {
    const c = canaryCluster({ nodes: 1 });
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-failed': 'true' } } };
    c.setImage('img:v2');
    const plans = settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Failed', 'ManualFail']);
    assert.equal(eventsOf(plans, 'CanaryFailed').length, 1);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));
  });

  /** A canary of img:v2 failed by hand and rolled back. */
  const failedCanary = () => {
    const c = canaryCluster({ nodes: 1 });
    c.setImage('img:v2');
    settle(c);
    const hash = canaryOf(c)?.revision ?? '';
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-failed': hash } } };
    settle(c);
    assert.equal(canaryOf(c)?.phase, 'Failed');
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));
    return { c, hash };
  };
  const removeCanary = (c: FakeCluster) =>
    c.updateSpec((ds) => {
      delete (ds.spec.updateStrategy?.rollingUpdate as { canary?: unknown }).canary;
    });
  const notFailed = (c: FakeCluster) => {
    assert.notEqual(canaryOf(c)?.phase, 'Failed');
    assert.notEqual(progressing(c.ds)?.reason, 'CanaryFailed');
    // The CanaryFailed alert matches this series (charts/advanced-daemonset/templates/prometheusrule.yaml).
    assert.notEqual(daemonSetGauges(c.ds, { hash: '' }).canaryPhase, 'Failed');
  };

  test('canary removed from the spec after it failed: no longer Failed (Promoted, CanaryRemoved), rolled out', () => {
    const { c, hash } = failedCanary();
    removeCanary(c);
    const plans = settle(c);
    assert.deepEqual(
      [canaryOf(c)?.revision, canaryOf(c)?.phase, canaryOf(c)?.reason],
      [hash, 'Promoted', 'CanaryRemoved'],
    );
    assert.match(canaryOf(c)?.message ?? '', /rollingUpdate.canary was removed after the canary failed \(ManualFail\)/);
    assert.equal(eventsOf(plans, 'CanaryPromoted').length, 1);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v2'));
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'RolloutComplete']);
    notFailed(c);
  });

  test('canary removed together with a new template after it failed: the new revision rolls out, not Failed', () => {
    const { c, hash } = failedCanary();
    removeCanary(c);
    c.setImage('img:v3');
    settle(c);
    const now = canaryOf(c);
    assert.notEqual(now?.revision, hash);
    assert.deepEqual(
      [now?.revision, now?.phase, now?.reason],
      [c.ds.status?.daemonSetHash, 'Promoted', 'CanaryRemoved'],
    );
    assert.match(now?.message ?? '', new RegExp(`the canary of revision ${hash} had failed`));
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v3'));
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'RolloutComplete']);
    notFailed(c);
  });

  test('OnDelete: no canary', () => {
    const c = canaryCluster({ nodes: 1 });
    c.updateSpec((ds) => {
      ds.spec.updateStrategy = {
        type: 'OnDelete',
        rollingUpdate: { canary: { nodes: 1 } },
      } as DaemonSet['spec']['updateStrategy'];
    });
    c.setImage('img:v2');
    settle(c);
    assert.equal(canaryOf(c), undefined);
  });

  test('the stable revision is kept by cleanupHistory while the canary runs', () => {
    const ds = newDaemonSet({
      image: 'img:v1',
      strategy: 'RollingUpdate',
      revisionHistoryLimit: 0,
      rollingUpdate: { canary: { nodes: 1 } },
    });
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c);
    const stable = canaryOf(c)?.stableRevision;
    assert.ok(c.revisions.some((r) => r.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] === stable));
  });
});

describe('progressDeadlineSeconds', () => {
  const stuck = () => {
    const ds = newDaemonSet({ image: 'img:v1', strategy: 'RollingUpdate' });
    ds.spec.progressDeadlineSeconds = 60;
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    // New pods never become Ready: one node is down, maxUnavailable 1 keeps the rest.
    settle(c, 10, (p) => imageOf(p) === 'img:v1');
    return c;
  };

  test('a stuck rollout turns Progressing False after the deadline, and True again on progress', () => {
    const c = stuck();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'Updating']);
    const p = c.plan();
    assert.ok(p.requeueAfterMs !== undefined && p.requeueAfterMs <= 61_000, `requeue ${p.requeueAfterMs}`);
    c.now += 30_000;
    c.sync();
    assert.equal(progressing(c.ds)?.status, 'True');
    c.now += 31_000;
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['False', 'ProgressDeadlineExceeded']);
    assert.match(progressing(c.ds)?.message ?? '', /no progress for more than progressDeadlineSeconds 60/);
    c.now += 60_000;
    c.sync();
    assert.equal(progressing(c.ds)?.reason, 'ProgressDeadlineExceeded', 'stays until progress');
    c.markReady();
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'Updating']);
  });

  test('without progressDeadlineSeconds: no deadline, no lastUpdateTime', () => {
    const ds = newDaemonSet({ image: 'img:v1', strategy: 'RollingUpdate' });
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c, 10, (p) => imageOf(p) === 'img:v1');
    c.now += 3600_000;
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'Updating']);
    assert.equal((progressing(c.ds) as { lastUpdateTime?: string }).lastUpdateTime, undefined);
  });

  test('a canary stuck after waiting: the deadline counts from the last wait, not from the canary start', () => {
    const ds = newDaemonSet({
      image: 'img:v1',
      strategy: 'RollingUpdate',
      rollingUpdate: {
        canary: { nodes: 1, duration: '30m', autoPause: { enabled: false }, autoFail: { enabled: false } },
      },
    });
    ds.spec.progressDeadlineSeconds = 60;
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c);
    c.now += 10 * MIN;
    c.sync();
    crash(c, canaryOf(c)?.nodes ?? [], 1);
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'CanaryObserving']);
    c.now += 61_000;
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['False', 'ProgressDeadlineExceeded']);
  });

  test('a waiting canary does not write status at every sync (each write syncs again)', () => {
    const ds = newDaemonSet({ image: 'img:v1', strategy: 'RollingUpdate', rollingUpdate: { canary: { nodes: 1 } } });
    ds.spec.progressDeadlineSeconds = 600;
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c);
    const changed: boolean[] = [];
    for (let i = 0; i < 30; i++) {
      c.now += 1000;
      changed.push(c.sync().statusChanged);
    }
    assert.ok(!changed.includes(true), JSON.stringify(changed));
  });

  test('a canary waiting for its duration is not stuck', () => {
    const ds = newDaemonSet({
      image: 'img:v1',
      strategy: 'RollingUpdate',
      rollingUpdate: { canary: { nodes: 1, duration: '30m' } },
    });
    ds.spec.progressDeadlineSeconds = 60;
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c);
    for (let i = 0; i < 20; i++) {
      c.now += 60_000;
      c.sync();
      assert.equal(progressing(c.ds)?.reason, 'CanaryObserving');
    }
  });
});
