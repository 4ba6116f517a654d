// Table tests of `status`: kubectl's DaemonSetStatusViewer rules and messages, plus partition/selector/paused/
// canary awareness; the progress bar and the node × revision map.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSetCondition } from '../src/api/types.ts';
import { PluginError } from './errors.ts';
import { nodeColumns, progressBar, revisionMap, rolloutStatus, statusFrame, type RolloutState } from './status.ts';
import { ds, pod } from './test-fixtures.ts';

const progressing = (status: 'True' | 'False' | 'Unknown', reason: string): DaemonSetCondition => ({
  type: 'Progressing',
  status,
  reason,
  message: '',
  lastTransitionTime: '2025-01-01T00:00:00Z',
});

const ASIDE = '2 nodes set aside by unhealthyNodes Ignore: n5 (NotReady), n2 (NotReady)';

describe('rolloutStatus', () => {
  const counts = (desired: number, updated: number, available: number) => ({
    desiredNumberScheduled: desired,
    updatedNumberScheduled: updated,
    numberAvailable: available,
  });
  const cases: { name: string; d: Parameters<typeof ds>[0]; state: RolloutState; message: string; target?: number }[] =
    [
      {
        name: 'spec change not observed yet',
        d: { generation: 3, status: { ...counts(5, 5, 5), observedGeneration: 2 } },
        state: 'progressing',
        message: 'Waiting for daemon set spec update to be observed...',
      },
      {
        name: 'no status at all: not observed',
        d: { generation: 1 },
        state: 'progressing',
        message: 'Waiting for daemon set spec update to be observed...',
      },
      {
        name: 'pods still to update (kubectl wording)',
        d: { status: counts(5, 2, 5) },
        state: 'progressing',
        message: 'Waiting for daemon set "agent" rollout to finish: 2 out of 5 new pods have been updated...',
        target: 5,
      },
      {
        name: 'updated pods not all available (kubectl wording)',
        d: { status: counts(5, 5, 3) },
        state: 'progressing',
        message: 'Waiting for daemon set "agent" rollout to finish: 3 of 5 updated pods are available...',
      },
      {
        name: 'updated pods not available on nodes that wait for them (spec.nodeReadiness): said why',
        d: {
          status: {
            ...counts(5, 5, 3),
            conditions: [
              {
                type: 'NodeReadiness',
                status: 'False',
                reason: 'NodesWaiting',
                message: "2 nodes carry k:NoSchedule and wait for this DaemonSet's pods: a, b",
              },
            ],
          },
        },
        state: 'progressing',
        message:
          'Waiting for daemon set "agent" rollout to finish: 3 of 5 updated pods are available (2 nodes carry k:NoSchedule and wait for this DaemonSet\'s pods: a, b)...',
      },
      {
        name: 'done (kubectl wording)',
        d: { status: counts(5, 5, 5) },
        state: 'complete',
        message: 'daemon set "agent" successfully rolled out',
      },
      {
        name: 'no nodes: done',
        d: { status: counts(0, 0, 0) },
        state: 'complete',
        message: 'daemon set "agent" successfully rolled out',
      },
      {
        name: 'an invalid rollingUpdate.selector (stored before the webhook refused it): failed, never complete',
        d: {
          rollingUpdate: { selector: { matchExpressions: [{ key: 'zone', operator: 'Foo' as 'In' }] } },
          status: { ...counts(12, 0, 12), conditions: [progressing('False', 'InvalidRollingUpdate')] },
        },
        state: 'failed',
        message:
          'daemon set "agent" cannot roll out: invalid rollingUpdate.selector: matchExpressions[0]: operator: unsupported "Foo"',
      },
      {
        name: 'partition reached (the controller says PartitionReached): complete',
        d: {
          rollingUpdate: { partition: 2 },
          status: { ...counts(5, 3, 5), conditions: [progressing('True', 'PartitionReached')] },
        },
        state: 'complete',
        message: 'partitioned roll out complete: 3 new pods have been updated...',
        target: 3,
      },
      {
        name: 'partition reached as a manager before the Deployment convention wrote it (False): complete',
        d: {
          rollingUpdate: { partition: 2 },
          status: { ...counts(5, 3, 5), conditions: [progressing('False', 'PartitionReached')] },
        },
        state: 'complete',
        message: 'partitioned roll out complete: 3 new pods have been updated...',
        target: 3,
      },
      {
        name: 'partition not reached yet (Progressing True Updating)',
        d: {
          rollingUpdate: { partition: 2 },
          status: { ...counts(5, 1, 4), conditions: [progressing('True', 'Updating')] },
        },
        state: 'progressing',
        message: 'Waiting for partitioned roll out to finish: 1 out of 3 new pods have been updated...',
        target: 3,
      },
      {
        name: 'selector reached: complete, the selector named',
        d: {
          rollingUpdate: { selector: { matchLabels: { canary: 'true' } } },
          status: { ...counts(6, 3, 6), conditions: [progressing('True', 'PartitionReached')] },
        },
        state: 'complete',
        message: 'partitioned roll out complete: 3 new pods have been updated...',
      },
      {
        name: 'no conditions (another controller): desired - partition updated is complete',
        d: { rollingUpdate: { partition: '40%' }, status: counts(5, 3, 5) },
        state: 'complete',
        message: 'partitioned roll out complete: 3 new pods have been updated...',
      },
      {
        name: 'no conditions, partition, not there yet',
        d: { rollingUpdate: { partition: 2 }, status: counts(5, 2, 5) },
        state: 'progressing',
        message: 'Waiting for partitioned roll out to finish: 2 out of 3 new pods have been updated...',
        target: 3,
      },
      {
        name: 'no conditions, selector: every node must be updated (nodes unknown)',
        d: { rollingUpdate: { selector: { matchLabels: { a: 'b' } } }, status: counts(5, 2, 5) },
        state: 'progressing',
        message: 'Waiting for daemon set "agent" rollout to finish: 2 out of 5 new pods have been updated...',
      },
      {
        name: 'frozen (even when paused): not complete, says how to unfreeze',
        d: {
          annotations: { 'advanced-daemonset.io/rollout-frozen': 'true' },
          rollingUpdate: { paused: true },
          status: { ...counts(5, 1, 5), conditions: [progressing('Unknown', 'RolloutFrozen')] },
        },
        state: 'progressing',
        message:
          'Waiting for daemon set "agent" rollout to finish: 1 out of 5 new pods have been updated (frozen: unfreeze with "kubectl ads unfreeze agent")...',
      },
      {
        name: 'paused: not complete, says how to resume',
        d: {
          rollingUpdate: { paused: true },
          status: { ...counts(5, 1, 5), conditions: [progressing('Unknown', 'Paused')] },
        },
        state: 'progressing',
        message:
          'Waiting for daemon set "agent" rollout to finish: 1 out of 5 new pods have been updated (paused: resume with "kubectl ads resume agent")...',
      },
      {
        name: 'progress deadline exceeded: failed',
        d: { status: { ...counts(5, 1, 4), conditions: [progressing('False', 'ProgressDeadlineExceeded')] } },
        state: 'failed',
        message: 'daemon set "agent" exceeded its progress deadline',
      },
      {
        name: 'canary failed: failed',
        d: {
          rollingUpdate: { canary: {} },
          status: { ...counts(5, 0, 5), canary: { revision: 'h2', phase: 'Failed', message: 'crash looping' } },
        },
        state: 'failed',
        message: 'daemon set "agent" canary failed: crash looping',
      },
      {
        name: 'canary of an older revision failed: not this rollout',
        d: {
          rollingUpdate: { canary: {} },
          status: { ...counts(5, 5, 5), canary: { revision: 'h1', phase: 'Failed' } },
        },
        state: 'complete',
        message: 'daemon set "agent" successfully rolled out',
      },
      {
        name: 'canary removed from the spec after it failed (the controller records Promoted, CanaryRemoved): complete',
        d: {
          status: {
            ...counts(5, 5, 5),
            canary: {
              revision: 'h2',
              phase: 'Promoted',
              reason: 'CanaryRemoved',
              message: 'rollingUpdate.canary was removed',
            },
          },
        },
        state: 'complete',
        message: 'daemon set "agent" successfully rolled out',
      },
      {
        name: 'a Failed canary left in status without rollingUpdate.canary in the spec: not failed, no canary to wait on',
        d: { status: { ...counts(5, 2, 5), canary: { revision: 'h2', phase: 'Failed', message: 'crash looping' } } },
        state: 'progressing',
        message: 'Waiting for daemon set "agent" rollout to finish: 2 out of 5 new pods have been updated...',
      },
      {
        name: 'waves: the current wave, from the Progressing message',
        d: {
          rollingUpdate: { waves: { topologyKey: 'zone' } },
          status: {
            ...counts(6, 2, 6),
            conditions: [
              {
                type: 'Progressing',
                status: 'True',
                reason: 'Updating',
                message:
                  '2 of 6 nodes updated, 6 of 6 available; wave 1 of 3 (zone=a), waiting for waves.availableSeconds before the next wave',
              },
            ],
          },
        },
        state: 'progressing',
        message:
          'Waiting for daemon set "agent" rollout to finish: 2 out of 6 new pods have been updated (wave 1 of 3: zone=a, waiting for availableSeconds)...',
      },
      {
        name: 'unhealthyNodes Ignore, only set-aside nodes left: complete, naming them',
        d: {
          status: {
            ...counts(6, 4, 4),
            conditions: [
              progressing('True', 'NodesSetAside'),
              { ...progressing('True', 'NotReady'), type: 'NodesSetAside', message: ASIDE },
            ],
          },
        },
        state: 'complete',
        message: `roll out complete but for the nodes set aside: 4 new pods have been updated; ${ASIDE}`,
        target: 4,
      },
      {
        name: 'unhealthyNodes Ignore, still updating: the set-aside nodes said briefly',
        d: {
          status: {
            ...counts(6, 2, 4),
            conditions: [
              progressing('True', 'Updating'),
              { ...progressing('True', 'NotReady'), type: 'NodesSetAside', message: ASIDE },
            ],
          },
        },
        state: 'progressing',
        message: `Waiting for daemon set "agent" rollout to finish: 2 out of 6 new pods have been updated; ${ASIDE}...`,
      },
      {
        name: "canary observing: waiting, with the controller's message and nodes",
        d: {
          rollingUpdate: { canary: {} },
          status: {
            ...counts(5, 1, 5),
            canary: { revision: 'h2', phase: 'Observing', nodes: ['n1'], message: '1/1 canary pods available for 2m' },
          },
        },
        state: 'progressing',
        message: 'Waiting for daemon set "agent" canary (Observing on n1): 1/1 canary pods available for 2m...',
      },
    ];
  for (const c of cases)
    test(c.name, () => {
      const s = rolloutStatus(ds(c.d));
      assert.equal(s.state, c.state);
      assert.equal(s.message, c.message);
      if (c.target !== undefined) assert.equal(s.target, c.target);
    });

  test("OnDelete: kubectl's error", () => {
    assert.throws(
      () => rolloutStatus(ds({ onDelete: true, status: {} })),
      (e: unknown) =>
        e instanceof PluginError && e.message === 'rollout status is only available for RollingUpdate strategy type',
    );
  });
});

describe('progress bar', () => {
  const cases: { done: number; total: number; width: number; want: string }[] = [
    { done: 0, total: 4, width: 8, want: '[░░░░░░░░]   0%' },
    { done: 1, total: 4, width: 8, want: '[██░░░░░░]  25%' },
    { done: 4, total: 4, width: 8, want: '[████████] 100%' },
    { done: 5, total: 4, width: 8, want: '[████████] 100%' },
    { done: 0, total: 0, width: 4, want: '[████] 100%' },
  ];
  for (const c of cases)
    test(`${c.done}/${c.total}`, () => assert.equal(progressBar(c.done, c.total, c.width), c.want));
});

describe('node × revision map', () => {
  const pods = [
    pod('n3', 'h2'),
    pod('n1', 'h1'),
    pod('n2', 'h1', { ready: false }),
    pod('n4', 'h2', { ready: false }),
    pod('n4', 'h1', { terminating: true, name: 'old-n4' }),
    { ...pod('n9', 'h2'), spec: { containers: [] } },
  ];
  test('nodes by name, pods not scheduled left out', () => {
    assert.deepEqual(
      nodeColumns(pods).map((c) => c.node),
      ['n1', 'n2', 'n3', 'n4'],
    );
  });
  test('one row per revision (the update revision first), one column per node', () => {
    assert.deepEqual(revisionMap(nodeColumns(pods), 'h2', 80), ['h2 (update)  2  ··●○', 'h1           3  ●○·◌']);
  });
  test('the update revision shows even before any pod runs it', () => {
    assert.deepEqual(revisionMap(nodeColumns([pod('n1', 'h1')]), 'h2', 80), ['h2 (update)  0  ·', 'h1           1  ●']);
  });
  test('wraps to the terminal width', () => {
    const many = Array.from({ length: 25 }, (_, i) => pod(`n${String(i).padStart(2, '0')}`, 'h2'));
    const lines = revisionMap(nodeColumns(many), 'h2', 26);
    assert.deepEqual(lines, ['h2 (update)  25  ●●●●●●●●●●', '                 ●●●●●●●●●●', '                 ●●●●●']);
  });
  test('the frame: message, bar with counts, map, legend', () => {
    const d = ds({ status: { desiredNumberScheduled: 4, updatedNumberScheduled: 2, numberAvailable: 3 } });
    const frame = statusFrame(d, pods, rolloutStatus(d), 80);
    assert.equal(
      frame[0],
      'Waiting for daemon set "agent" rollout to finish: 2 out of 4 new pods have been updated...',
    );
    assert.match(frame[1] as string, /^\[█+░+\] {2}50% {2}2\/4 updated, 3\/4 available$/);
    assert.equal(frame.length, 5);
    assert.match(frame[4] as string, /● ready/);
  });
  test('the frame without the pods (not allowed to list them): a note instead of the map', () => {
    const d = ds({ status: { desiredNumberScheduled: 4, updatedNumberScheduled: 4, numberAvailable: 4 } });
    const frame = statusFrame(d, [], rolloutStatus(d), 80, '(no node × revision map: forbidden)');
    assert.deepEqual(frame.slice(2), ['(no node × revision map: forbidden)']);
  });
});
