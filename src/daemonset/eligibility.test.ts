import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { Node, Taint } from '../k8s/types.ts';
import { nodeShouldRunDaemonPod } from './eligibility.ts';
import { newDaemonSet, newNode } from './test-fixtures.ts';

const ds = (templateSpec: Record<string, unknown> = {}): DaemonSet => newDaemonSet({ templateSpec });
const tainted = (...taints: Taint[]): Node => newNode('node-1', { zone: 'a' }, taints);

describe('nodeShouldRunDaemonPod', () => {
  const rows: [string, DaemonSet, Node, boolean, boolean][] = [
    ['plain node', ds(), newNode('node-1'), true, true],
    ['template nodeName targets this node', ds({ nodeName: 'node-1' }), newNode('node-1'), true, true],
    ['template nodeName targets another node', ds({ nodeName: 'node-2' }), newNode('node-1'), false, false],
    ['nodeSelector matches', ds({ nodeSelector: { zone: 'a' } }), newNode('node-1', { zone: 'a' }), true, true],
    [
      'nodeSelector does not match',
      ds({ nodeSelector: { zone: 'b' } }),
      newNode('node-1', { zone: 'a' }),
      false,
      false,
    ],
    [
      'inconsistent nodeName and nodeSelector',
      ds({ nodeName: 'node-1', nodeSelector: { zone: 'b' } }),
      newNode('node-1', { zone: 'a' }),
      false,
      false,
    ],
    [
      'required node affinity matchExpressions',
      ds(affinity([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }])),
      newNode('node-1', { zone: 'a' }),
      true,
      true,
    ],
    [
      'required node affinity excludes the node',
      ds(affinity([{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }])),
      newNode('node-1', { zone: 'a' }),
      false,
      false,
    ],
    [
      'required node affinity matchFields metadata.name',
      ds(affinity([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }])),
      newNode('node-1'),
      true,
      true,
    ],
    [
      'matchFields for another node',
      ds(affinity([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-2'] }] }])),
      newNode('node-1'),
      false,
      false,
    ],
    [
      'untolerated NoSchedule: keep running pods, no new ones',
      ds(),
      tainted({ key: 'k', effect: 'NoSchedule' }),
      false,
      true,
    ],
    ['untolerated NoExecute: evict', ds(), tainted({ key: 'k', effect: 'NoExecute' }), false, false],
    ['PreferNoSchedule is ignored', ds(), tainted({ key: 'k', effect: 'PreferNoSchedule' }), true, true],
    [
      'tolerated NoSchedule',
      ds({ tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule' }] }),
      tainted({ key: 'k', effect: 'NoSchedule' }),
      true,
      true,
    ],
    [
      'toleration with wrong value',
      ds({ tolerations: [{ key: 'k', operator: 'Equal', value: 'x' }] }),
      tainted({ key: 'k', value: 'y', effect: 'NoSchedule' }),
      false,
      true,
    ],
    ['cordoned node (unschedulable taint) tolerated automatically', ds(), unschedulable(), true, true],
    [
      'not-ready NoExecute tolerated automatically',
      ds(),
      tainted(t('node.kubernetes.io/not-ready', 'NoExecute')),
      true,
      true,
    ],
    [
      'unreachable NoExecute tolerated automatically',
      ds(),
      tainted(t('node.kubernetes.io/unreachable', 'NoExecute')),
      true,
      true,
    ],
    ['memory pressure tolerated', ds(), tainted(t('node.kubernetes.io/memory-pressure', 'NoSchedule')), true, true],
    ['disk pressure tolerated', ds(), tainted(t('node.kubernetes.io/disk-pressure', 'NoSchedule')), true, true],
    ['pid pressure tolerated', ds(), tainted(t('node.kubernetes.io/pid-pressure', 'NoSchedule')), true, true],
    [
      'network-unavailable not tolerated without hostNetwork',
      ds(),
      tainted(t('node.kubernetes.io/network-unavailable', 'NoSchedule')),
      false,
      true,
    ],
    [
      'network-unavailable tolerated with hostNetwork',
      ds({ hostNetwork: true }),
      tainted(t('node.kubernetes.io/network-unavailable', 'NoSchedule')),
      true,
      true,
    ],
    [
      'NotReady condition and spec.unschedulable alone do not matter',
      ds(),
      {
        ...newNode('node-1'),
        spec: { unschedulable: true },
        status: { conditions: [{ type: 'Ready', status: 'False' }] },
      },
      true,
      true,
    ],
  ];
  for (const [name, d, node, shouldRun, shouldContinueRunning] of rows) {
    test(name, () => assert.deepEqual(nodeShouldRunDaemonPod(node, d), { shouldRun, shouldContinueRunning }));
  }
});

function t(key: string, effect: Taint['effect']): Taint {
  return { key, effect };
}
function unschedulable(): Node {
  return {
    ...tainted(t('node.kubernetes.io/unschedulable', 'NoSchedule')),
    spec: { unschedulable: true, taints: [t('node.kubernetes.io/unschedulable', 'NoSchedule')] },
  };
}
function affinity(nodeSelectorTerms: unknown[]): Record<string, unknown> {
  return { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms } } } };
}
