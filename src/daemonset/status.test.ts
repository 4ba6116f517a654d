import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet, DaemonSetCondition, DaemonSetStatus } from '../api/types.ts';
import { newSyncContext } from './context.ts';
import {
  calculateCounters,
  isStatusMilestone,
  progressingStatus,
  STATUS_PROGRESS_INTERVAL_MS,
  statusWriteAction,
  type StatusWriteAction,
  type StatusWriteInput,
} from './status.ts';
import {
  FakeCluster,
  T0,
  addNodes,
  expectSyncDaemonSets,
  newDaemonSet,
  newNode,
  newPod,
  plan,
} from './test-fixtures.ts';

const conditions = (ds: DaemonSet) =>
  Object.fromEntries((ds.status?.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]));
const condition = (ds: DaemonSet, type: string): DaemonSetCondition | undefined =>
  ds.status?.conditions?.find((c) => c.type === type);

describe('status counters', () => {
  test('each counter from the first pod of each node of the node list', () => {
    const ds = newDaemonSet({ minReadySeconds: 10 });
    const h = 'cur';
    const nodes = [...addNodes(6), newNode('tainted', {}, [{ key: 'k', effect: 'NoSchedule' }])];
    const pods = [
      // node-0: no pod
      newPod(ds, 'node-1', { hash: h, ready: true }),
      newPod(ds, 'node-2', { hash: 'old', ready: true }),
      newPod(ds, 'node-3', { hash: h, ready: false }),
      newPod(ds, 'node-4', { hash: h, ready: true, readySince: T0 + 55_000 }),
      // node-5: surge, old pod is the oldest and counts
      newPod(ds, 'node-5', { hash: 'old', ready: true, created: T0 }),
      newPod(ds, 'node-5', { hash: h, ready: true, created: T0 + 1000 }),
      newPod(ds, 'tainted', { hash: h, ready: true }),
      newPod(ds, 'vanished-node', { hash: h, ready: true }),
    ];
    const { counters, requeueAfterMs } = calculateCounters(newSyncContext(ds, nodes, pods, h, T0 + 60_000));
    assert.deepEqual(counters, {
      desiredNumberScheduled: 6,
      currentNumberScheduled: 5,
      numberMisscheduled: 1,
      numberReady: 4,
      numberAvailable: 3,
      numberUnavailable: 3,
      updatedNumberScheduled: 3,
    });
    assert.equal(requeueAfterMs, 5_001, 'node-4 becomes available in 5 s');
  });

  test('a pod in the middle of an in-place update (InPlaceUpdateReady False) is not available', () => {
    const ds = newDaemonSet();
    const pod = newPod(ds, 'node-0', { hash: 'h', ready: true });
    pod.spec.readinessGates = [{ conditionType: 'InPlaceUpdateReady' }];
    pod.status?.conditions?.push({ type: 'InPlaceUpdateReady', status: 'False' });
    const { counters } = calculateCounters(newSyncContext(ds, addNodes(1), [pod], 'h', T0));
    assert.equal(counters.numberReady, 1);
    assert.equal(counters.numberAvailable, 0);
  });
});

describe('status writes', () => {
  test('observedGeneration only after a complete sync; status unchanged -> no write', () => {
    const c = new FakeCluster(newDaemonSet(), addNodes(2));
    const pending = c.plan(false);
    assert.equal(pending.stage, 'ExpectationsPending');
    assert.equal(pending.creates.length, 0);
    assert.equal(pending.status?.observedGeneration, 0);
    assert.equal(pending.revisions.create.length, 1, 'history is constructed even while waiting');
    const first = c.sync();
    assert.equal(first.stage, 'Managed');
    assert.equal(first.status?.observedGeneration, 0, 'manage had work: not a complete sync');
    assert.equal(first.status?.daemonSetHash, first.hash);
    const second = c.sync();
    assert.equal(second.stage, 'Complete');
    assert.equal(second.status?.observedGeneration, 1);
    assert.equal(second.status?.currentNumberScheduled, 2);
    assert.equal(second.statusChanged, true);
    c.now += 5000;
    const third = c.sync();
    assert.equal(third.statusChanged, false);
    c.markReady();
    assert.equal(c.sync().statusChanged, true);
  });
});

describe('conditions', () => {
  test('RolloutComplete / Progressing / Available through a rollout, lastTransitionTime kept while unchanged', () => {
    const c = new FakeCluster(newDaemonSet({ strategy: 'RollingUpdate' }), addNodes(3));
    /** The three conditions as status/reason, in the order RolloutComplete, Progressing, Available. */
    const expectConditions = (RolloutComplete: string, Progressing: string, Available: string) =>
      assert.deepEqual(conditions(c.ds), { RolloutComplete, Progressing, Available });
    c.sync();
    c.sync();
    expectConditions('False/RolloutInProgress', 'True/Updating', 'False/NodesUnavailable');
    c.markReady();
    c.now = T0 + 7_000;
    c.sync();
    expectConditions('True/RolloutComplete', 'True/RolloutComplete', 'True/AllNodesAvailable');
    const complete = condition(c.ds, 'RolloutComplete');
    assert.equal(complete?.lastTransitionTime, '2024-01-01T00:00:07Z');
    c.setImage('v2');
    c.now = T0 + 9_000;
    c.sync();
    expectConditions('False/RolloutInProgress', 'True/Updating', 'True/AllNodesAvailable');
    const available = condition(c.ds, 'Available');
    assert.equal(available?.lastTransitionTime, '2024-01-01T00:00:07Z', 'Available did not flip');
    for (let i = 0; i < 8; i++) {
      c.sync();
      c.markReady();
    }
    c.sync();
    assert.equal(conditions(c.ds).RolloutComplete, 'True/RolloutComplete');
  });

  test('Progressing False with reason Paused, PartitionReached, OnDelete', () => {
    const run = (ds: DaemonSet, image = 'v2') => {
      const c = new FakeCluster(ds, addNodes(3));
      c.sync();
      c.markReady();
      c.sync();
      c.setImage(image);
      for (let i = 0; i < 8; i++) {
        c.sync();
        c.markReady();
      }
      return conditions(c.ds);
    };
    assert.equal(
      run(newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { paused: true } })).Progressing,
      'Unknown/Paused',
    );
    assert.equal(
      run(newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { partition: 1 } })).Progressing,
      'True/PartitionReached',
    );
    assert.equal(run(newDaemonSet({ strategy: 'OnDelete' })).Progressing, 'True/OnDelete');
    // A rollingUpdate.selector that does not parse (stored before the webhook refused it) holds every node back:
    // stopped, not held at a partition.
    const invalid = newDaemonSet({ strategy: 'RollingUpdate' });
    invalid.spec.updateStrategy!.rollingUpdate!.selector = {
      matchExpressions: [{ key: 'zone', operator: 'Foo' as 'In' }],
    };
    assert.equal(run(invalid).Progressing, 'False/InvalidRollingUpdate');
    assert.equal(
      run(newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { partition: 1 } })).RolloutComplete,
      'False/RolloutInProgress',
    );
  });

  test('a sync that changes no counter keeps the status unchanged (no write)', () => {
    const ds = newDaemonSet();
    const p1 = plan(ds, addNodes(1), [newPod(ds, 'node-0', { hash: plan(ds, []).hash, ready: true })]);
    const again = plan(
      { ...ds, status: p1.status } as DaemonSet,
      addNodes(1),
      [newPod(ds, 'node-0', { hash: p1.hash, ready: true })],
      {
        now: T0 + 60_000,
      },
    );
    assert.equal(again.statusChanged, false);
    expectSyncDaemonSets(new FakeCluster(ds, []), 0, 0);
  });
});

/** A status halfway through a rollout of 10 nodes. */
const MID_ROLLOUT: DaemonSetStatus = {
  desiredNumberScheduled: 10,
  currentNumberScheduled: 10,
  numberMisscheduled: 0,
  numberReady: 5,
  numberAvailable: 5,
  numberUnavailable: 5,
  updatedNumberScheduled: 5,
  observedGeneration: 2,
  daemonSetHash: 'h2',
};

test("progressingStatus: a Deployment's convention (True moving or done, Unknown paused, False failed)", () => {
  const rows: [string, string][] = [
    ['Updating', 'True'],
    ['CanaryObserving', 'True'],
    ['RolloutComplete', 'True'],
    ['PartitionReached', 'True'],
    ['OnDelete', 'True'],
    ['Paused', 'Unknown'],
    ['CanaryPaused', 'Unknown'],
    ['CanaryFailed', 'False'],
    ['InvalidRollingUpdate', 'False'],
    ['ProgressDeadlineExceeded', 'False'],
  ];
  assert.deepEqual(
    rows.map(([reason]) => [reason, progressingStatus(reason)]),
    rows,
  );
});

describe('isStatusMilestone (written at once; counter moves alone wait for the next progress write)', () => {
  const cond = (type: string, status: 'True' | 'False'): DaemonSetCondition => ({
    type,
    status,
    lastTransitionTime: '2026-01-01T00:00:00Z',
    reason: 'r',
    message: 'm',
  });
  const base: DaemonSetStatus = {
    ...MID_ROLLOUT,
    conditions: [cond('RolloutComplete', 'False'), cond('Progressing', 'True'), cond('Available', 'False')],
  };
  const rows: { name: string; prev: DaemonSetStatus | undefined; change: Partial<DaemonSetStatus>; want: boolean }[] = [
    { name: 'first status of a new DaemonSet', prev: undefined, change: {}, want: true },
    {
      name: 'pods turned Ready and available',
      prev: base,
      change: { numberReady: 7, numberAvailable: 7, numberUnavailable: 3 },
      want: false,
    },
    { name: 'more pods updated', prev: base, change: { updatedNumberScheduled: 8 }, want: false },
    {
      name: 'condition message only (counts in it)',
      prev: base,
      change: { conditions: base.conditions!.map((c) => ({ ...c, message: 'x' })) },
      want: false,
    },
    { name: 'a new generation observed', prev: base, change: { observedGeneration: 3 }, want: true },
    { name: 'a new revision hash', prev: base, change: { daemonSetHash: 'h3' }, want: true },
    { name: 'collisionCount raised', prev: base, change: { collisionCount: 1 }, want: true },
    { name: 'a node more to run on', prev: base, change: { desiredNumberScheduled: 11 }, want: true },
    {
      name: 'rollout complete (conditions flip)',
      prev: base,
      change: {
        conditions: [cond('RolloutComplete', 'True'), cond('Progressing', 'True'), cond('Available', 'True')],
      },
      want: true,
    },
    {
      name: 'a partition step done: Progressing stays True, its reason becomes PartitionReached',
      prev: base,
      change: {
        conditions: base.conditions!.map((c) => (c.type === 'Progressing' ? { ...c, reason: 'PartitionReached' } : c)),
      },
      want: true,
    },
    {
      name: 'another condition reason alone (message-like)',
      prev: base,
      change: {
        conditions: base.conditions!.map((c) => (c.type === 'Available' ? { ...c, reason: 'x' } : c)),
      },
      want: false,
    },
  ];
  for (const { name, prev, change, want } of rows) {
    test(name, () => assert.equal(isStatusMilestone(prev, { ...base, ...change }), want));
  }
});

describe('statusWriteAction (progress at most once per STATUS_PROGRESS_INTERVAL_MS; pod writes and milestones at once)', () => {
  const stored = MID_ROLLOUT;
  const progress: DaemonSetStatus = { ...stored, numberReady: 6, numberAvailable: 6, numberUnavailable: 4 };
  const milestone: DaemonSetStatus = { ...stored, observedGeneration: 3 };
  const interval = STATUS_PROGRESS_INTERVAL_MS;
  // Each row changes these: a progress-only change, never written before by this process.
  const input: StatusWriteInput = {
    stored,
    status: progress,
    statusChanged: true,
    actedOnPods: false,
    sinceLastWriteMs: undefined,
  };
  const rows: { name: string; change: Partial<StatusWriteInput>; want: StatusWriteAction }[] = [
    {
      name: 'unchanged status: nothing to write',
      change: { statusChanged: false, actedOnPods: true },
      want: { action: 'none' },
    },
    {
      name: 'no status planned (e.g. DaemonSet being deleted): nothing to write',
      change: { status: undefined },
      want: { action: 'none' },
    },
    { name: 'progress, never written by this process: written', change: {}, want: { action: 'write' } },
    {
      name: 'progress, last write an interval ago: written',
      change: { sinceLastWriteMs: interval },
      want: { action: 'write' },
    },
    {
      name: 'progress, last write 300 ms ago: deferred for the rest of the interval',
      change: { sinceLastWriteMs: 300 },
      want: { action: 'defer', afterMs: interval - 300 },
    },
    {
      name: 'progress of a sync that acted on pods: written at once',
      change: { actedOnPods: true, sinceLastWriteMs: 0 },
      want: { action: 'write' },
    },
    {
      name: 'a milestone (new generation observed): written at once',
      change: { status: milestone, sinceLastWriteMs: 0 },
      want: { action: 'write' },
    },
  ];
  for (const { name, change, want } of rows) {
    test(name, () => assert.deepEqual(statusWriteAction({ ...input, ...change }), want));
  }
});
