// Table tests of what the plugin reads off a DaemonSet and decides for it: get rows, strategy summary, label
// selectors, partition set/step arithmetic, pause/resume no-ops, restart stamp, canary actions.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LabelSelector } from '../src/k8s/types.ts';
import {
  canaryChange,
  canaryPhase,
  formatLabelSelector,
  getHeaders,
  getRow,
  labelSelectorQuery,
  parsePartition,
  freezePatch,
  pausePatch,
  rfc3339Local,
  setPartition,
  stepPartition,
  strategySummary,
  updateRevision,
  type CanaryAction,
} from './daemonset.ts';
import { PluginError } from './errors.ts';
import { ds, T0 } from './test-fixtures.ts';

describe('label selectors (metav1.FormatLabelSelector)', () => {
  const cases: { name: string; sel: LabelSelector | undefined; want: string }[] = [
    { name: 'none', sel: undefined, want: '<none>' },
    { name: 'empty', sel: {}, want: '<none>' },
    { name: 'labels sorted', sel: { matchLabels: { b: '2', a: '1' } }, want: 'a=1,b=2' },
    {
      name: 'expressions',
      sel: {
        matchExpressions: [
          { key: 'zone', operator: 'In', values: ['b', 'a'] },
          { key: 'tier', operator: 'NotIn', values: ['x'] },
          { key: 'canary', operator: 'Exists' },
          { key: 'gone', operator: 'DoesNotExist' },
        ],
      },
      want: 'zone in (a,b),tier notin (x),canary,!gone',
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      assert.equal(formatLabelSelector(c.sel), c.want);
      assert.equal(labelSelectorQuery(c.sel), c.want === '<none>' ? '' : c.want);
    });
});

describe('strategySummary', () => {
  const cases: { name: string; d: Parameters<typeof ds>[0]; want: string }[] = [
    { name: 'defaults', d: {}, want: 'Standard' },
    { name: 'OnDelete', d: { onDelete: true }, want: 'OnDelete' },
    { name: 'surge', d: { rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } }, want: 'Surge(25%)' },
    { name: 'in place', d: { rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible' } }, want: 'InPlaceIfPossible' },
    {
      name: 'partition, selector, paused',
      d: { rollingUpdate: { partition: '50%', paused: true, selector: { matchLabels: { canary: 'true' } } } },
      want: 'Standard partition=50% selector=canary=true paused',
    },
    { name: 'partition 0% is no partition', d: { rollingUpdate: { partition: '0%' } }, want: 'Standard' },
    {
      name: 'waves, no wave under way',
      d: { rollingUpdate: { waves: { topologyKey: 'topology.kubernetes.io/zone' } }, status: {} },
      want: 'Standard waves=topology.kubernetes.io/zone',
    },
    {
      name: 'waves: the current wave from the Progressing message',
      d: {
        rollingUpdate: { waves: { topologyKey: 'zone' } },
        status: {
          conditions: [
            { type: 'Progressing', status: 'True', reason: 'Updating', message: '2 of 6 nodes updated, 6 of 6 available; wave 2 of 3 (zone=b)' },
          ],
        },
      },
      want: 'Standard waves=zone(2/3)',
    },
  ]; // prettier-ignore
  for (const c of cases)
    test(c.name, () => {
      assert.equal(strategySummary(ds(c.d)), c.want);
    });
});

describe('get rows', () => {
  const d = ds({
    rollingUpdate: { partition: 2 },
    status: {
      desiredNumberScheduled: 5,
      updatedNumberScheduled: 3,
      numberReady: 4,
      numberAvailable: 4,
      currentNumberScheduled: 5,
      daemonSetHash: 'abc12',
    },
  });
  const now = T0 + 3_723_000; // 1h2m3s
  test('NAME DESIRED UPDATED READY AVAILABLE REVISION STRATEGY CANARY AGE', () => {
    assert.deepEqual(getHeaders(), [
      'NAME',
      'DESIRED',
      'UPDATED',
      'READY',
      'AVAILABLE',
      'REVISION',
      'STRATEGY',
      'CANARY',
      'AGE',
    ]);
    assert.deepEqual(getRow(d, now), ['agent', '5', '3', '4', '4', 'abc12', 'Standard partition=2', '-', '62m']);
  });
  test('-A puts NAMESPACE first; -o wide adds CURRENT, CONTAINERS, IMAGES, SELECTOR', () => {
    const opts = { wide: true, allNamespaces: true };
    assert.deepEqual(getHeaders(opts).slice(0, 2), ['NAMESPACE', 'NAME']);
    assert.deepEqual(getRow(d, now, opts), [
      'ns',
      'agent',
      '5',
      '3',
      '4',
      '4',
      'abc12',
      'Standard partition=2',
      '-',
      '62m',
      '5',
      'c',
      'busybox:1.36',
      'app=agent',
    ]);
  });
  test('no status yet: zeros and <none>', () => {
    assert.deepEqual(getRow(ds(), T0).slice(1, 6), ['0', '0', '0', '0', '<none>']);
  });
  test('v1beta1 updateRevision wins over daemonSetHash', () => {
    assert.equal(updateRevision(ds({ status: { daemonSetHash: 'old', updateRevision: 'new' } })), 'new');
  });
});

describe('canary phase cell', () => {
  const cases: { name: string; d: Parameters<typeof ds>[0]; want: string }[] = [
    { name: 'no canary', d: { status: {} }, want: '-' },
    { name: 'canary, no status yet', d: { rollingUpdate: { canary: { nodes: 1 } }, status: {} }, want: 'Pending' },
    {
      name: 'canary of the update revision',
      d: { rollingUpdate: { canary: {} }, status: { canary: { revision: 'h2', phase: 'Observing' } } },
      want: 'Observing',
    },
    {
      name: 'canary status of an older revision',
      d: { rollingUpdate: { canary: {} }, status: { canary: { revision: 'h1', phase: 'Promoted' } } },
      want: 'Pending',
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(canaryPhase(ds(c.d)), c.want));
});

describe('partition', () => {
  test('parsePartition', () => {
    assert.equal(parsePartition('3'), 3);
    assert.equal(parsePartition('25%'), '25%');
    assert.equal(parsePartition('007%'), '7%');
    for (const bad of ['-1', '101%', 'x', '1.5', '%'])
      assert.throws(
        () => parsePartition(bad),
        (e: unknown) => e instanceof PluginError && e.message.includes(`"${bad}"`),
      );
  });

  const sets: {
    name: string;
    current: number | string | undefined;
    value: number | string;
    noop?: string;
    message: string;
  }[] = [
    { name: 'new number', current: 5, value: 3, message: 'partition set to 3 (was 5)' },
    { name: 'same number: no-op', current: 3, value: 3, noop: 'partition already 3', message: 'partition already 3' },
    {
      name: 'same percentage: no-op',
      current: '20%',
      value: '20%',
      noop: 'partition already 20%',
      message: 'partition already 20%',
    },
    {
      name: 'absent counts as 0',
      current: undefined,
      value: 0,
      noop: 'partition already 0',
      message: 'partition already 0',
    },
    { name: 'number to percentage', current: 2, value: '50%', message: 'partition set to 50% (was 2)' },
  ];
  for (const c of sets)
    test(`set: ${c.name}`, () => {
      const r = setPartition(ds({ rollingUpdate: { partition: c.current } }), c.value);
      assert.equal(r.noop, c.noop);
      assert.equal(r.message, c.message);
      assert.equal(r.value, c.value);
    });

  const steps: {
    name: string;
    current: number | string | undefined;
    desired?: number;
    step: number;
    value?: number | string;
    noop?: boolean;
    message: string;
  }[] = [
    { name: 'lower by 1', current: 5, desired: 8, step: 1, value: 4, message: 'partition set to 4 (was 5)' },
    { name: 'floor 0', current: 2, desired: 8, step: 5, value: 0, message: 'partition set to 0 (was 2)' },
    { name: 'already 0: no-op', current: 0, desired: 8, step: 1, noop: true, message: 'partition already 0' },
    {
      name: 'percentage resolved against desired (rounded down), written as a count',
      current: '50%',
      desired: 7,
      step: 1,
      value: 2,
      message: 'partition set to 2 (was 50% = 3 of 7 nodes)',
    },
    {
      name: 'percentage that resolves to 0: no-op',
      current: '10%',
      desired: 5,
      step: 1,
      noop: true,
      message: 'partition already 10% (0 of 5 nodes)',
    },
    {
      name: 'above desired: steps from desired',
      current: 10,
      desired: 4,
      step: 1,
      value: 3,
      message: 'partition set to 3 (was 10)',
    },
    { name: 'no status: steps a number as is', current: 10, step: 2, value: 8, message: 'partition set to 8 (was 10)' },
  ];
  for (const c of steps)
    test(`step: ${c.name}`, () => {
      const d = ds({
        rollingUpdate: { partition: c.current },
        ...(c.desired !== undefined ? { status: { desiredNumberScheduled: c.desired } } : {}),
      });
      const r = stepPartition(d, c.step);
      assert.equal(r.message, c.message);
      assert.equal(!!r.noop, !!c.noop);
      if (!c.noop) assert.equal(r.value, c.value);
    });
  test('step: a percentage without status is an error; the step must be positive', () => {
    assert.throws(() => stepPartition(ds({ rollingUpdate: { partition: '50%' } }), 1), /cannot resolve the percentage/);
    assert.throws(
      () => stepPartition(ds({ status: { desiredNumberScheduled: 3 } }), 0),
      /--step must be a positive integer/,
    );
  });
});

describe('pause / resume', () => {
  const cases: { name: string; paused: boolean | undefined; want: boolean; patch: boolean }[] = [
    { name: 'pause a running rollout', paused: undefined, want: true, patch: true },
    { name: 'pause a paused one: no-op', paused: true, want: true, patch: false },
    { name: 'resume a paused one', paused: true, want: false, patch: true },
    { name: 'resume a running one: no-op', paused: false, want: false, patch: false },
  ];
  for (const c of cases)
    test(c.name, () => {
      const p = pausePatch(ds({ rollingUpdate: { paused: c.paused } }), c.want);
      assert.deepEqual(p, c.patch ? { spec: { updateStrategy: { rollingUpdate: { paused: c.want } } } } : undefined);
    });
});

describe('freeze / unfreeze (annotation advanced-daemonset.io/rollout-frozen)', () => {
  const FROZEN = 'advanced-daemonset.io/rollout-frozen';
  const cases: { name: string; value: string | undefined; want: boolean; patch: unknown }[] = [
    { name: 'freeze', value: undefined, want: true, patch: { metadata: { annotations: { [FROZEN]: 'true' } } } },
    { name: 'freeze a frozen one: no-op', value: 'true', want: true, patch: undefined },
    {
      name: 'freeze over "false": set to true',
      value: 'false',
      want: true,
      patch: { metadata: { annotations: { [FROZEN]: 'true' } } },
    },
    {
      name: 'unfreeze: the annotation removed',
      value: 'true',
      want: false,
      patch: { metadata: { annotations: { [FROZEN]: null } } },
    },
    { name: 'unfreeze one not frozen: no-op', value: undefined, want: false, patch: undefined },
  ];
  for (const c of cases)
    test(c.name, () => {
      const d = ds(c.value === undefined ? {} : { annotations: { [FROZEN]: c.value } });
      assert.deepEqual(freezePatch(d, c.want), c.patch);
    });
});

test('restartedAt: RFC 3339 in the local zone without fractions (Go time.RFC3339)', () => {
  const s = rfc3339Local(new Date(T0 + 1234));
  assert.match(s, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/);
  assert.equal(Date.parse(s), T0 + 1000);
});

describe('canary actions', () => {
  const withCanary = (status?: Record<string, unknown>, annotations?: Record<string, string>) =>
    ds({
      rollingUpdate: { canary: { nodes: 1 } },
      status: { daemonSetHash: 'h2', ...(status ? { canary: status } : {}) },
      ...(annotations ? { annotations } : {}),
    });
  const cases: {
    name: string;
    d: ReturnType<typeof ds>;
    action: CanaryAction;
    annotations?: Record<string, string | null>;
    message?: string;
    noop?: string;
    error?: RegExp;
  }[] = [
    {
      name: "no canary: the design's error",
      d: ds({ status: {} }),
      action: 'promote',
      error: /^ns\/agent has no canary: spec\.updateStrategy\.rollingUpdate\.canary is not set$/,
    },
    {
      name: 'promote names the canary revision',
      d: withCanary({ revision: 'h2', phase: 'Observing' }),
      action: 'promote',
      annotations: { 'advanced-daemonset.io/canary-validated': 'h2' },
    },
    {
      name: 'promote before the controller reports: the update revision',
      d: withCanary(),
      action: 'promote',
      annotations: { 'advanced-daemonset.io/canary-validated': 'h2' },
    },
    {
      name: 'promote a promoted canary: no-op',
      d: withCanary({ revision: 'h2', phase: 'Promoted' }),
      action: 'promote',
      noop: 'canary already promoted (revision h2)',
    },
    {
      name: 'pause',
      d: withCanary({ revision: 'h2', phase: 'Observing' }),
      action: 'pause',
      annotations: { 'advanced-daemonset.io/canary-paused': 'true' },
    },
    {
      name: 'pause when paused by annotation: no-op',
      d: withCanary({ revision: 'h2', phase: 'Paused' }, { 'advanced-daemonset.io/canary-paused': 'true' }),
      action: 'pause',
      noop: 'canary already paused',
    },
    {
      name: 'pause a promoted canary: error',
      d: withCanary({ revision: 'h2', phase: 'Promoted' }),
      action: 'pause',
      error: /already promoted: nothing to pause/,
    },
    {
      name: 'resume one autoPause paused: canary-resumed names the canary revision',
      d: withCanary({ revision: 'h2', phase: 'Paused' }),
      action: 'resume',
      annotations: { 'advanced-daemonset.io/canary-resumed': 'h2' },
      message: 'canary resumed (revision h2)',
    },
    {
      name: 'resume one paused by hand: canary-resumed, and canary-paused removed',
      d: withCanary({ revision: 'h2', phase: 'Paused' }, { 'advanced-daemonset.io/canary-paused': 'true' }),
      action: 'resume',
      annotations: { 'advanced-daemonset.io/canary-resumed': 'h2', 'advanced-daemonset.io/canary-paused': null },
    },
    {
      name: 'resume: a leftover canary-paused "false" is removed too, an older canary-resumed replaced',
      d: withCanary(
        { revision: 'h2', phase: 'Paused' },
        { 'advanced-daemonset.io/canary-paused': 'false', 'advanced-daemonset.io/canary-resumed': 'h1' },
      ),
      action: 'resume',
      annotations: { 'advanced-daemonset.io/canary-resumed': 'h2', 'advanced-daemonset.io/canary-paused': null },
    },
    {
      name: 'resume before the controller reports a revision: only the pause goes',
      d: ds({
        rollingUpdate: { canary: { nodes: 1 } },
        annotations: { 'advanced-daemonset.io/canary-paused': 'true' },
      }),
      action: 'resume',
      annotations: { 'advanced-daemonset.io/canary-paused': null },
      message: 'canary resumed',
    },
    {
      name: 'resume a running canary: no-op',
      d: withCanary({ revision: 'h2', phase: 'Observing' }),
      action: 'resume',
      noop: 'canary already resumed',
    },
    {
      name: 'resume again before the controller saw the first: no-op',
      d: withCanary({ revision: 'h2', phase: 'Paused' }, { 'advanced-daemonset.io/canary-resumed': 'h2' }),
      action: 'resume',
      noop: 'canary already resumed',
    },
    {
      name: 'fail names the canary revision (a leftover fails no later canary)',
      d: withCanary({ revision: 'h2', phase: 'Observing' }),
      action: 'fail',
      annotations: { 'advanced-daemonset.io/canary-failed': 'h2' },
      message: 'canary failed (revision h2)',
    },
    {
      name: 'fail before the controller reports the canary: the update revision',
      d: withCanary(undefined, { 'advanced-daemonset.io/canary-failed': 'h1' }),
      action: 'fail',
      annotations: { 'advanced-daemonset.io/canary-failed': 'h2' },
    },
    {
      name: 'fail when canary-failed already names the revision: no-op',
      d: withCanary({ revision: 'h2', phase: 'Observing' }, { 'advanced-daemonset.io/canary-failed': 'h2' }),
      action: 'fail',
      noop: 'canary already failed',
    },
    {
      name: 'fail a failed canary: no-op',
      d: withCanary({ revision: 'h2', phase: 'Failed' }),
      action: 'fail',
      noop: 'canary already failed',
    },
    ...(['promote', 'pause', 'resume'] as const).map((action) => ({
      name: `${action} a failed canary: refused, saying what to do instead`,
      d: withCanary({ revision: 'h2', phase: 'Failed', message: 'pod agent-x restarted 4 times' }),
      action,
      error: new RegExp(
        `^the canary of revision h2 failed \\(pod agent-x restarted 4 times\\): it cannot be ${action === 'promote' ? 'promoted' : `${action}d`}\\. Change the template to start a new canary, or roll back with "kubectl ads undo agent"$`,
      ),
    })),
  ];
  for (const c of cases)
    test(c.name, () => {
      if (c.error) {
        assert.throws(
          () => canaryChange(c.d, c.action),
          (e: unknown) => e instanceof PluginError && c.error!.test(e.message),
        );
        return;
      }
      const r = canaryChange(c.d, c.action);
      assert.equal(r.noop, c.noop);
      assert.deepEqual(r.annotations, c.annotations);
      if (c.message) assert.equal(r.message, c.message);
    });
});
