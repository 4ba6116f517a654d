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
  const rows: {
    name: string;
    newPods: number;
    desired: number;
    partition: number;
    progressive: boolean;
    needing: string[];
    want: string[];
  }[] = [
    {
      name: 'not progressive, partition 0: all, sorted',
      newPods: 0,
      desired: 10,
      partition: 0,
      progressive: false,
      needing: names(10),
      want: names(10),
    },
    {
      name: 'not progressive, partition 5: all (partition ignored)',
      newPods: 0,
      desired: 10,
      partition: 5,
      progressive: false,
      needing: names(10),
      want: names(10),
    },
    {
      name: 'not progressive, unsorted input: sorted',
      newPods: 0,
      desired: 3,
      partition: 1,
      progressive: false,
      needing: ['node-2', 'node-0', 'node-1'],
      want: names(3),
    },
    {
      name: 'progressive, partition 10 of 10: none',
      newPods: 0,
      desired: 10,
      partition: 10,
      progressive: true,
      needing: names(10),
      want: [],
    },
    {
      name: 'progressive, partition 9 of 10: one',
      newPods: 0,
      desired: 10,
      partition: 9,
      progressive: true,
      needing: names(10),
      want: ['node-0'],
    },
    {
      name: 'progressive, partition 5 of 10: the five lowest names',
      newPods: 0,
      desired: 10,
      partition: 5,
      progressive: true,
      needing: names(10),
      want: names(5),
    },
    {
      name: 'progressive, partition 0: all',
      newPods: 0,
      desired: 10,
      partition: 0,
      progressive: true,
      needing: names(10),
      want: names(10),
    },
    {
      name: 'progressive, partition above desired: none',
      newPods: 0,
      desired: 10,
      partition: 20,
      progressive: true,
      needing: names(10),
      want: [],
    },
    {
      name: 'progressive, negative partition: treated as 0',
      newPods: 0,
      desired: 4,
      partition: -1,
      progressive: true,
      needing: names(4),
      want: names(4),
    },
    {
      name: 'progressive, 3 new pods exist, partition 5: two more',
      newPods: 3,
      desired: 10,
      partition: 5,
      progressive: true,
      needing: names(7, 3),
      want: ['node-3', 'node-4'],
    },
    {
      name: 'progressive, 5 new pods exist, partition 5: none',
      newPods: 5,
      desired: 10,
      partition: 5,
      progressive: true,
      needing: names(5, 5),
      want: [],
    },
    {
      name: 'progressive, more new pods than allowed: none',
      newPods: 8,
      desired: 10,
      partition: 5,
      progressive: true,
      needing: names(2, 8),
      want: [],
    },
    {
      name: 'joining nodes: 10 running new, 2 joined, partition 2: none',
      newPods: 10,
      desired: 12,
      partition: 2,
      progressive: true,
      needing: names(2, 10),
      want: [],
    },
    {
      name: 'joining nodes: 10 running new, 2 joined, partition 1: one',
      newPods: 10,
      desired: 12,
      partition: 1,
      progressive: true,
      needing: names(2, 10),
      want: ['node-10'],
    },
    {
      name: 'joining nodes: 10 running new, 2 joined, partition 0: both',
      newPods: 10,
      desired: 12,
      partition: 0,
      progressive: true,
      needing: names(2, 10),
      want: names(2, 10),
    },
    {
      name: 'offline nodes: desired 8 of 10 names, partition 3: five',
      newPods: 0,
      desired: 8,
      partition: 3,
      progressive: true,
      needing: names(10),
      want: names(5),
    },
    {
      name: 'offline nodes: desired 2 of 3 needing, partition 0: capped by desired',
      newPods: 0,
      desired: 2,
      partition: 0,
      progressive: true,
      needing: names(3),
      want: names(2),
    },
    { name: 'no node needs a pod', newPods: 0, desired: 10, partition: 0, progressive: true, needing: [], want: [] },
    { name: 'desired 0', newPods: 0, desired: 0, partition: 0, progressive: true, needing: [], want: [] },
    {
      name: 'partition equal to desired minus new pods: none',
      newPods: 4,
      desired: 6,
      partition: 2,
      progressive: true,
      needing: names(2, 4),
      want: [],
    },
    {
      name: 'lexicographic order: node-10 before node-5',
      newPods: 0,
      desired: 3,
      partition: 1,
      progressive: true,
      needing: ['node-5', 'node-10', 'node-1'],
      want: ['node-1', 'node-10'],
    },
    {
      name: 'lexicographic order, not progressive',
      newPods: 0,
      desired: 3,
      partition: 0,
      progressive: false,
      needing: ['node-5', 'node-10', 'node-1'],
      want: ['node-1', 'node-10', 'node-5'],
    },
    {
      // The planner passes every node name; only newPods says how many already run the new revision.
      name: 'partition 5 with 2 new pods already: three',
      newPods: 2,
      desired: 10,
      partition: 5,
      progressive: true,
      needing: names(10),
      want: names(3),
    },
  ];
  for (const { name, newPods, desired, partition, progressive, needing, want } of rows) {
    test(name, () => assert.deepEqual(getNodesNeedingPods(newPods, desired, partition, progressive, needing), want));
  }
});

describe('isDaemonSetCreationProgressively', () => {
  const rows: { name: string; annotations: Record<string, string> | undefined; want: boolean }[] = [
    { name: 'no annotations', annotations: undefined, want: false },
    { name: 'annotation "true"', annotations: { 'daemonset.kruise.io/progressive-create-pod': 'true' }, want: true },
    { name: 'annotation "false"', annotations: { 'daemonset.kruise.io/progressive-create-pod': 'false' }, want: false },
    {
      name: 'annotation "True" (exact value only)',
      annotations: { 'daemonset.kruise.io/progressive-create-pod': 'True' },
      want: false,
    },
    { name: 'other annotation', annotations: { 'example.io/x': 'true' }, want: false },
  ];
  for (const { name, annotations, want } of rows) {
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
  const rows: { name: string; d: DaemonSet; onCanary: boolean; onPlain: boolean }[] = [
    { name: 'no selector', d: ds(), onCanary: false, onPlain: false },
    { name: 'empty selector', d: ds({}), onCanary: false, onPlain: false },
    { name: 'matchLabels', d: ds({ matchLabels: { nodeType: 'canary' } }), onCanary: true, onPlain: false },
    {
      name: 'matchExpressions In',
      d: ds({ matchExpressions: [{ key: 'nodeType', operator: 'In', values: ['canary'] }] }),
      onCanary: true,
      onPlain: false,
    },
    {
      name: 'matchExpressions NotIn',
      d: ds({ matchExpressions: [{ key: 'nodeType', operator: 'NotIn', values: ['canary'] }] }),
      onCanary: false,
      onPlain: true,
    },
    {
      name: 'OnDelete ignores the selector',
      d: ds({ matchLabels: { nodeType: 'canary' } }, 'OnDelete'),
      onCanary: false,
      onPlain: false,
    },
  ];
  for (const { name, d, onCanary, onPlain } of rows) {
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
  const partitions: { name: string; d: DaemonSet; desired: number; want: number }[] = [
    { name: 'absent', d: ru(undefined), desired: 8, want: 0 },
    { name: 'int', d: ru(3), desired: 8, want: 3 },
    { name: '13% of 8 rounds down to 1', d: ru('13%'), desired: 8, want: 1 },
    { name: '100% of 5', d: ru('100%'), desired: 5, want: 5 },
    { name: '60% of 5 = 3', d: ru('60%'), desired: 5, want: 3 },
    { name: 'OnDelete: 0', d: ru(3, 'OnDelete'), desired: 8, want: 0 },
  ];
  for (const { name, d, desired, want } of partitions)
    test(`partition ${name}`, () => assert.equal(partitionCount(d, desired), want));

  const bursts: { name: string; value: number | string | undefined; desired: number; want: number }[] = [
    { name: 'default 250', value: undefined, desired: 10, want: 250 },
    { name: 'int', value: 5, desired: 10, want: 5 },
    { name: '50% of 10', value: '50%', desired: 10, want: 5 },
    { name: '10% of 4 is 0.4: at least 1, never zero work', value: '10%', desired: 4, want: 1 },
    { name: '10% of 0 desired (first sync of a stale status): 1', value: '10%', desired: 0, want: 1 },
    { name: '33% of 10 rounds down to 3', value: '33%', desired: 10, want: 3 },
  ];
  for (const { name, value, desired, want } of bursts) {
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
