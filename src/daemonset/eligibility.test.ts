import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { Node, Taint } from '../k8s/types.ts';
import { nodeShouldRunDaemonPod } from './eligibility.ts';
import { newDaemonSet, newNode } from './test-fixtures.ts';

const ds = (templateSpec: Record<string, unknown> = {}): DaemonSet => newDaemonSet({ templateSpec });
const tainted = (...taints: Taint[]): Node => newNode('node-1', { zone: 'a' }, taints);

describe('nodeShouldRunDaemonPod', () => {
  const rows: { name: string; d: DaemonSet; node: Node; shouldRun: boolean; shouldContinueRunning: boolean }[] = [
    { name: 'plain node', d: ds(), node: newNode('node-1'), shouldRun: true, shouldContinueRunning: true },
    {
      name: 'template nodeName targets this node',
      d: ds({ nodeName: 'node-1' }),
      node: newNode('node-1'),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'template nodeName targets another node',
      d: ds({ nodeName: 'node-2' }),
      node: newNode('node-1'),
      shouldRun: false,
      shouldContinueRunning: false,
    },
    {
      name: 'nodeSelector matches',
      d: ds({ nodeSelector: { zone: 'a' } }),
      node: newNode('node-1', { zone: 'a' }),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'nodeSelector does not match',
      d: ds({ nodeSelector: { zone: 'b' } }),
      node: newNode('node-1', { zone: 'a' }),
      shouldRun: false,
      shouldContinueRunning: false,
    },
    {
      name: 'inconsistent nodeName and nodeSelector',
      d: ds({ nodeName: 'node-1', nodeSelector: { zone: 'b' } }),
      node: newNode('node-1', { zone: 'a' }),
      shouldRun: false,
      shouldContinueRunning: false,
    },
    {
      name: 'required node affinity matchExpressions',
      d: ds(affinity([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }])),
      node: newNode('node-1', { zone: 'a' }),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'required node affinity excludes the node',
      d: ds(affinity([{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }])),
      node: newNode('node-1', { zone: 'a' }),
      shouldRun: false,
      shouldContinueRunning: false,
    },
    {
      name: 'required node affinity matchFields metadata.name',
      d: ds(affinity([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }])),
      node: newNode('node-1'),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'matchFields for another node',
      d: ds(affinity([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-2'] }] }])),
      node: newNode('node-1'),
      shouldRun: false,
      shouldContinueRunning: false,
    },
    {
      name: 'untolerated NoSchedule: keep running pods, no new ones',
      d: ds(),
      node: tainted({ key: 'k', effect: 'NoSchedule' }),
      shouldRun: false,
      shouldContinueRunning: true,
    },
    {
      name: 'untolerated NoExecute: evict',
      d: ds(),
      node: tainted({ key: 'k', effect: 'NoExecute' }),
      shouldRun: false,
      shouldContinueRunning: false,
    },
    {
      name: 'PreferNoSchedule is ignored',
      d: ds(),
      node: tainted({ key: 'k', effect: 'PreferNoSchedule' }),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'tolerated NoSchedule',
      d: ds({ tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoSchedule' }] }),
      node: tainted({ key: 'k', effect: 'NoSchedule' }),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'toleration with wrong value',
      d: ds({ tolerations: [{ key: 'k', operator: 'Equal', value: 'x' }] }),
      node: tainted({ key: 'k', value: 'y', effect: 'NoSchedule' }),
      shouldRun: false,
      shouldContinueRunning: true,
    },
    {
      name: 'cordoned node (unschedulable taint) tolerated automatically',
      d: ds(),
      node: unschedulable(),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'not-ready NoExecute tolerated automatically',
      d: ds(),
      node: tainted(t('node.kubernetes.io/not-ready', 'NoExecute')),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'unreachable NoExecute tolerated automatically',
      d: ds(),
      node: tainted(t('node.kubernetes.io/unreachable', 'NoExecute')),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'memory pressure tolerated',
      d: ds(),
      node: tainted(t('node.kubernetes.io/memory-pressure', 'NoSchedule')),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'disk pressure tolerated',
      d: ds(),
      node: tainted(t('node.kubernetes.io/disk-pressure', 'NoSchedule')),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'pid pressure tolerated',
      d: ds(),
      node: tainted(t('node.kubernetes.io/pid-pressure', 'NoSchedule')),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'network-unavailable not tolerated without hostNetwork',
      d: ds(),
      node: tainted(t('node.kubernetes.io/network-unavailable', 'NoSchedule')),
      shouldRun: false,
      shouldContinueRunning: true,
    },
    {
      name: 'network-unavailable tolerated with hostNetwork',
      d: ds({ hostNetwork: true }),
      node: tainted(t('node.kubernetes.io/network-unavailable', 'NoSchedule')),
      shouldRun: true,
      shouldContinueRunning: true,
    },
    {
      name: 'NotReady condition and spec.unschedulable alone do not matter',
      d: ds(),
      node: {
        ...newNode('node-1'),
        spec: { unschedulable: true },
        status: { conditions: [{ type: 'Ready', status: 'False' }] },
      },
      shouldRun: true,
      shouldContinueRunning: true,
    },
  ];
  for (const { name, d, node, shouldRun, shouldContinueRunning } of rows) {
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
