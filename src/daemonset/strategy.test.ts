// Tables after Kruise's daemonset_util_test.go (GetNodesNeedingPods, isDaemonSetCreationProgressively,
// NodeShouldUpdateBySelector:
// https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_util_test.go)
// and the strategy numbers (partition, burstReplicas) computed from the live desired node count (docs/differences.md:
// never from a stale status, never rounding a small DaemonSet down to zero work).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import { getNodesNeedingPods } from './manage.ts';
import {
  burstReplicas,
  isDaemonSetCreationProgressively,
  nodeSelectedForUpdate,
  nodeShouldUpdateBySelector,
  partitionCount,
} from './strategy.ts';
import { addNodes, newDaemonSet, newNode, plan } from './test-fixtures.ts';

const names = (n: number, start = 0) => Array.from({ length: n }, (_, i) => `node-${start + i}`);

describe('GetNodesNeedingPods', () => {
  // [name, newPods, desired, partition, progressive, nodesNeedingPods, want]
  const rows: [string, number, number, number, boolean, string[], string[]][] = [
    ['not progressive, partition 0: all, sorted', 0, 10, 0, false, names(10), names(10)],
    ['not progressive, partition 5: all (partition ignored)', 0, 10, 5, false, names(10), names(10)],
    ['not progressive, unsorted input: sorted', 0, 3, 1, false, ['node-2', 'node-0', 'node-1'], names(3)],
    ['progressive, partition 10 of 10: none', 0, 10, 10, true, names(10), []],
    ['progressive, partition 9 of 10: one', 0, 10, 9, true, names(10), ['node-0']],
    ['progressive, partition 5 of 10: the five lowest names', 0, 10, 5, true, names(10), names(5)],
    ['progressive, partition 0: all', 0, 10, 0, true, names(10), names(10)],
    ['progressive, partition above desired: none', 0, 10, 20, true, names(10), []],
    ['progressive, negative partition: treated as 0', 0, 4, -1, true, names(4), names(4)],
    ['progressive, 3 new pods exist, partition 5: two more', 3, 10, 5, true, names(7, 3), ['node-3', 'node-4']],
    ['progressive, 5 new pods exist, partition 5: none', 5, 10, 5, true, names(5, 5), []],
    ['progressive, more new pods than allowed: none', 8, 10, 5, true, names(2, 8), []],
    ['joining nodes: 10 running new, 2 joined, partition 2: none', 10, 12, 2, true, names(2, 10), []],
    ['joining nodes: 10 running new, 2 joined, partition 1: one', 10, 12, 1, true, names(2, 10), ['node-10']],
    ['joining nodes: 10 running new, 2 joined, partition 0: both', 10, 12, 0, true, names(2, 10), names(2, 10)],
    ['offline nodes: desired 8 of 10 names, partition 3: five', 0, 8, 3, true, names(10), names(5)],
    ['offline nodes: desired 2 of 3 needing, partition 0: capped by desired', 0, 2, 0, true, names(3), names(2)],
    ['no node needs a pod', 0, 10, 0, true, [], []],
    ['desired 0', 0, 0, 0, true, [], []],
    ['partition equal to desired minus new pods: none', 4, 6, 2, true, names(2, 4), []],
    [
      'lexicographic order: node-10 before node-5',
      0,
      3,
      1,
      true,
      ['node-5', 'node-10', 'node-1'],
      ['node-1', 'node-10'],
    ],
    [
      'lexicographic order, not progressive',
      0,
      3,
      0,
      false,
      ['node-5', 'node-10', 'node-1'],
      ['node-1', 'node-10', 'node-5'],
    ],
  ];
  for (const [name, newPods, desired, partition, progressive, needing, want] of rows) {
    test(name, () => assert.deepEqual(getNodesNeedingPods(newPods, desired, partition, progressive, needing), want));
  }
});

describe('isDaemonSetCreationProgressively', () => {
  const rows: [string, Record<string, string> | undefined, boolean][] = [
    ['no annotations', undefined, false],
    ['annotation "true"', { 'daemonset.kruise.io/progressive-create-pod': 'true' }, true],
    ['annotation "false"', { 'daemonset.kruise.io/progressive-create-pod': 'false' }, false],
    ['annotation "True" (exact value only)', { 'daemonset.kruise.io/progressive-create-pod': 'True' }, false],
    ['other annotation', { 'example.io/x': 'true' }, false],
  ];
  for (const [name, annotations, want] of rows) {
    test(name, () =>
      assert.equal(isDaemonSetCreationProgressively(newDaemonSet(annotations ? { annotations } : {})), want),
    );
  }
});

describe('NodeShouldUpdateBySelector', () => {
  const ds = (selector?: Record<string, unknown>, strategy: 'RollingUpdate' | 'OnDelete' = 'RollingUpdate') =>
    newDaemonSet({ strategy, rollingUpdate: selector ? { selector } : {} });
  const canary = newNode('n1', { nodeType: 'canary' });
  const plain = newNode('n2', { nodeType: 'stable' });
  const rows: [string, DaemonSet, boolean, boolean][] = [
    ['no selector', ds(), false, false],
    ['empty selector', ds({}), false, false],
    ['matchLabels', ds({ matchLabels: { nodeType: 'canary' } }), true, false],
    [
      'matchExpressions In',
      ds({ matchExpressions: [{ key: 'nodeType', operator: 'In', values: ['canary'] }] }),
      true,
      false,
    ],
    [
      'matchExpressions NotIn',
      ds({ matchExpressions: [{ key: 'nodeType', operator: 'NotIn', values: ['canary'] }] }),
      false,
      true,
    ],
    ['OnDelete ignores the selector', ds({ matchLabels: { nodeType: 'canary' } }, 'OnDelete'), false, false],
  ];
  for (const [name, d, onCanary, onPlain] of rows) {
    test(name, () => {
      assert.equal(nodeShouldUpdateBySelector(canary, d), onCanary, 'canary node');
      assert.equal(nodeShouldUpdateBySelector(plain, d), onPlain, 'stable node');
    });
  }
});

describe('nodeSelectedForUpdate: which nodes rollingUpdate.selector lets the rolling update touch', () => {
  // As Kruise's filterDaemonPodsNodeToUpdate: metav1.LabelSelectorAsSelector of `{}` is labels.Everything().
  const ds = (selector?: Record<string, unknown>) =>
    newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: selector ? { selector } : {} });
  const canary = newNode('n1', { nodeType: 'canary' });
  const plain = newNode('n2', { nodeType: 'stable' });
  const rows: { name: string; ds: DaemonSet; onCanary: boolean; onPlain: boolean }[] = [
    { name: 'no selector: every node', ds: ds(), onCanary: true, onPlain: true },
    { name: 'empty selector {}: every node', ds: ds({}), onCanary: true, onPlain: true },
    {
      name: 'matchLabels {} and matchExpressions []: every node',
      ds: ds({ matchLabels: {}, matchExpressions: [] }),
      onCanary: true,
      onPlain: true,
    },
    {
      name: 'matchLabels: the matching nodes',
      ds: ds({ matchLabels: { nodeType: 'canary' } }),
      onCanary: true,
      onPlain: false,
    },
    {
      name: 'matchExpressions NotIn',
      ds: ds({ matchExpressions: [{ key: 'nodeType', operator: 'NotIn', values: ['canary'] }] }),
      onCanary: false,
      onPlain: true,
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      assert.equal(nodeSelectedForUpdate(canary, row.ds), row.onCanary, 'canary node');
      assert.equal(nodeSelectedForUpdate(plain, row.ds), row.onPlain, 'stable node');
    });
  }
});

describe('partition and burstReplicas from the live desired count', () => {
  const ru = (partition: number | string | undefined, strategy: 'RollingUpdate' | 'OnDelete' = 'RollingUpdate') =>
    newDaemonSet({ strategy, rollingUpdate: partition === undefined ? {} : { partition } });
  const partitions: [string, DaemonSet, number, number][] = [
    ['absent', ru(undefined), 8, 0],
    ['int', ru(3), 8, 3],
    ['13% of 8 rounds down to 1', ru('13%'), 8, 1],
    ['100% of 5', ru('100%'), 5, 5],
    ['60% of 5 = 3', ru('60%'), 5, 3],
    ['OnDelete: 0', ru(3, 'OnDelete'), 8, 0],
  ];
  for (const [name, d, desired, want] of partitions)
    test(`partition ${name}`, () => assert.equal(partitionCount(d, desired), want));

  const bursts: [string, number | string | undefined, number, number][] = [
    ['default 250', undefined, 10, 250],
    ['int', 5, 10, 5],
    ['50% of 10', '50%', 10, 5],
    ['10% of 4 is 0.4: at least 1, never zero work', '10%', 4, 1],
    ['10% of 0 desired (first sync of a stale status): 1', '10%', 0, 1],
    ['33% of 10 rounds down to 3', '33%', 10, 3],
  ];
  for (const [name, value, desired, want] of bursts) {
    test(`burstReplicas ${name}`, () =>
      assert.equal(burstReplicas(newDaemonSet(value === undefined ? {} : { burstReplicas: value }), desired), want));
  }

  test('through the planner: burstReplicas 10% on 5 nodes creates one pod on the first sync (Kruise: none)', () => {
    const p = plan(newDaemonSet({ burstReplicas: '10%' }), addNodes(5));
    assert.equal(p.creates.length, 1);
  });
  test('through the planner: burstReplicas 2 caps creates and in-place updates', () => {
    const p = plan(newDaemonSet({ burstReplicas: 2 }), addNodes(5));
    assert.equal(p.creates.length, 2);
  });
});
