// rollingUpdate.unhealthyNodes (unhealthy.ts): tables of syncs in the style of update.test.ts. Count is upstream's
// rule, where NotReady nodes stall a rollout (https://github.com/kubernetes/kubernetes/issues/73011); Ignore sets
// them aside, and nodes whose pod cannot be scheduled.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod } from '../k8s/types.ts';
import { isPodReady } from '../k8s/pod.ts';
import { canaryCandidates } from './canary/nodes.ts';
import { canarySettings, canarySpecOf } from './canary/settings.ts';
import { newSyncContext } from './context.ts';
import { newNodeState } from './node-state.ts';
import {
  setAsideMessage,
  setAsideReason,
  nodeNotReadyReason,
  isPodUnschedulable,
  UNREACHABLE_TAINT,
} from './unhealthy.ts';
import { FakeCluster, addNodes, expectSyncDaemonSets, newDaemonSet, newNode, newPod } from './test-fixtures.ts';

const ELIGIBLE = Object.freeze({ shouldRun: true, shouldContinueRunning: true });

function withReady(node: Node, status: 'True' | 'False' | 'Unknown'): Node {
  const conditions = [{ type: 'Ready', status, ...(status === 'False' ? { reason: 'KubeletNotReady' } : {}) }];
  return { ...node, status: { ...node.status, conditions } };
}

function readyNodes(count: number): Node[] {
  return addNodes(count).map((n) => withReady(n, 'True'));
}

function setNodes(c: FakeCluster, names: readonly string[], status: 'True' | 'False' | 'Unknown'): void {
  c.nodes = c.nodes.map((n) => (names.includes(n.metadata.name ?? '') ? withReady(n, status) : n));
}

const onNodes = (names: readonly string[]) => (p: Pod) => names.includes(p.spec.nodeName ?? '');

function unschedulable(c: FakeCluster, filter: (p: Pod) => boolean): void {
  c.pods = c.pods.map((p) => {
    if (!filter(p)) return p;
    const conditions = [
      ...(p.status?.conditions ?? []).filter((x) => x.type !== 'PodScheduled'),
      {
        type: 'PodScheduled',
        status: 'False' as const,
        reason: 'Unschedulable',
        message: '0/10 nodes are available: 1 Insufficient cpu.',
      },
    ];
    return { ...p, status: { ...p.status, phase: 'Pending' as const, conditions } };
  });
}

function rollingTo(c: FakeCluster, image: string, rollingUpdate: Record<string, unknown>): void {
  c.updateSpec((ds) => {
    const container = ds.spec.template.spec.containers[0];
    if (container) container.image = image;
    ds.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate } as DaemonSet['spec']['updateStrategy'];
  });
}

function started(nodes: number): FakeCluster {
  const c = new FakeCluster(newDaemonSet(), readyNodes(nodes));
  expectSyncDaemonSets(c, nodes, 0, 'initial creates');
  c.markReady();
  return c;
}

const condition = (c: FakeCluster, type: string) => c.ds.status?.conditions?.find((x) => x.type === type);
const updatedNodes = (c: FakeCluster) =>
  c
    .live()
    .filter((p) => c.hashOf(p) === c.lastPlan?.hash)
    .map((p) => p.spec.nodeName ?? '')
    .sort();

/** `syncs` syncs, marking Ready the new pods on nodes not in `broken` after each; asserts the budget among the rest. */
function run(c: FakeCluster, syncs: number, broken: readonly string[], maxUnavailable: number): void {
  for (let i = 0; i < syncs; i++) {
    c.sync();
    const healthy = c.nodes.map((n) => n.metadata.name ?? '').filter((n) => !broken.includes(n));
    const available = new Set(
      c
        .live()
        .filter(isPodReady)
        .map((p) => p.spec.nodeName),
    );
    const down = healthy.filter((n) => !available.has(n)).length;
    assert.ok(down <= maxUnavailable, `sync ${i}: ${down} healthy nodes without an available pod`);
    c.markReady((p) => !broken.includes(p.spec.nodeName ?? ''));
  }
}

describe('unhealthyNodes: node and pod predicates', () => {
  const rows: { name: string; node: Node; want: string | undefined }[] = [
    { name: 'Ready True', node: withReady(newNode('n'), 'True'), want: undefined },
    { name: 'no Ready condition yet', node: newNode('n'), want: undefined },
    { name: 'Ready False', node: withReady(newNode('n'), 'False'), want: 'NotReady' },
    { name: 'Ready Unknown', node: withReady(newNode('n'), 'Unknown'), want: 'Unknown' },
    {
      name: 'unreachable taint (wins over Unknown)',
      node: withReady(newNode('n', {}, [{ key: UNREACHABLE_TAINT, effect: 'NoExecute' }]), 'Unknown'),
      want: 'Unreachable',
    },
  ];
  for (const r of rows) test(`nodeNotReadyReason: ${r.name}`, () => assert.equal(nodeNotReadyReason(r.node), r.want));

  test('isPodUnschedulable: Pending with PodScheduled False Unschedulable only', () => {
    const ds = newDaemonSet();
    const pod = (phase: 'Pending' | 'Running', status: 'True' | 'False', reason: string): Pod => ({
      ...newPod(ds, 'n'),
      status: { phase, conditions: [{ type: 'PodScheduled', status, reason }] },
    });
    assert.equal(isPodUnschedulable(pod('Pending', 'False', 'Unschedulable')), true);
    assert.equal(isPodUnschedulable(pod('Pending', 'False', 'SchedulingGated')), false);
    assert.equal(isPodUnschedulable(pod('Running', 'True', '')), false);
    assert.equal(isPodUnschedulable(newPod(ds, 'n')), false);
  });

  test('setAsideReason: a NotReady node counts once it holds a pod of the target revision', () => {
    const ds = newDaemonSet();
    const node = withReady(newNode('n'), 'False');
    const oldPod = newPod(ds, 'n', { hash: 'old' });
    const newP = newPod(ds, 'n', { hash: 'new' });
    assert.equal(setAsideReason(newNodeState('n', node, ELIGIBLE, [oldPod]), 'new'), 'NotReady');
    assert.equal(setAsideReason(newNodeState('n', node, ELIGIBLE, undefined), 'new'), 'NotReady', 'no pod');
    assert.equal(setAsideReason(newNodeState('n', node, ELIGIBLE, [newP]), 'new'), undefined, 'got the new revision');
  });

  test('setAsideMessage: first five names, then how many more', () => {
    const aside = new Map(Array.from({ length: 7 }, (_, i) => [`node-${i}`, 'NotReady' as const]));
    assert.equal(
      setAsideMessage(aside),
      '7 nodes set aside by unhealthyNodes Ignore: node-0 (NotReady), node-1 (NotReady), node-2 (NotReady), node-3 (NotReady), node-4 (NotReady), and 2 more',
    );
    assert.equal(setAsideMessage(new Map()), undefined);
  });
});

describe('unhealthyNodes: rollouts of 10 nodes, 3 NotReady, maxUnavailable 1', () => {
  const broken = ['node-2', 'node-5', 'node-8'];
  const healthy = ['node-0', 'node-1', 'node-3', 'node-4', 'node-6', 'node-7', 'node-9'];
  function brokenCluster(): FakeCluster {
    const c = started(10);
    setNodes(c, broken, 'False');
    // The node lifecycle controller marks the pods of a NotReady node not Ready.
    c.markNotReady(onNodes(broken));
    return c;
  }

  test('Count (upstream): the three NotReady nodes use the budget and no healthy node is updated', () => {
    const c = brokenCluster();
    rollingTo(c, 'v2', { maxUnavailable: 1, unhealthyNodes: 'Count' });
    run(c, 20, broken, 1);
    assert.deepEqual(updatedNodes(c), broken, 'only the broken nodes (their unavailable old pods replaced)');
    assert.equal(condition(c, 'Progressing')?.reason, 'Updating');
    assert.equal(condition(c, 'NodesSetAside'), undefined, 'no such condition under Count');
  });

  test('Ignore: the 7 healthy nodes are updated one at a time, the 3 set aside keep their old pods', () => {
    const c = brokenCluster();
    rollingTo(c, 'v2', { maxUnavailable: 1, unhealthyNodes: 'Ignore' });
    const oldOnBroken = c.pods.filter(onNodes(broken)).map((p) => p.metadata.name);
    run(c, 20, broken, 1);
    assert.deepEqual(updatedNodes(c), healthy);
    assert.deepEqual(
      c.pods.filter(onNodes(broken)).map((p) => p.metadata.name),
      oldOnBroken,
      'not deleted',
    );
    const aside = condition(c, 'NodesSetAside');
    assert.equal(aside?.status, 'True');
    assert.equal(aside?.reason, 'NotReady');
    assert.equal(
      aside?.message,
      '3 nodes set aside by unhealthyNodes Ignore: node-8 (NotReady), node-5 (NotReady), node-2 (NotReady)',
    );
    const progressing = condition(c, 'Progressing');
    assert.deepEqual([progressing?.status, progressing?.reason], ['True', 'NodesSetAside']);
    assert.match(progressing?.message ?? '', /^7 of 10 nodes updated, 7 of 10 available; 3 nodes set aside/);
    assert.equal(condition(c, 'RolloutComplete')?.status, 'False');

    // Ready again: they take the new revision within the budget, and the rollout completes.
    setNodes(c, broken, 'True');
    c.markReady(onNodes(broken));
    run(c, 10, [], 1);
    assert.equal(updatedNodes(c).length, 10);
    assert.deepEqual(
      [condition(c, 'NodesSetAside')?.status, condition(c, 'NodesSetAside')?.reason],
      ['False', 'NoNodesSetAside'],
    );
    assert.equal(condition(c, 'RolloutComplete')?.status, 'True');
  });

  test('Ignore, Unknown and unreachable nodes alike (reason Unhealthy when mixed)', () => {
    const c = started(4);
    setNodes(c, ['node-1'], 'Unknown');
    c.nodes = c.nodes.map((n) =>
      n.metadata.name === 'node-2' ? { ...n, spec: { taints: [{ key: UNREACHABLE_TAINT, effect: 'NoExecute' }] } } : n,
    );
    rollingTo(c, 'v2', { maxUnavailable: 1, unhealthyNodes: 'Ignore' });
    run(c, 10, ['node-1', 'node-2'], 1);
    assert.deepEqual(updatedNodes(c), ['node-0', 'node-3']);
    assert.equal(condition(c, 'NodesSetAside')?.reason, 'Unhealthy');
    assert.match(condition(c, 'NodesSetAside')?.message ?? '', /node-2 \(Unreachable\), node-1 \(Unknown\)/);
  });

  test('Ignore: a node that turns NotReady after it got the new revision counts, and stalls the rollout', () => {
    const c = started(5);
    rollingTo(c, 'v2', { maxUnavailable: 1, unhealthyNodes: 'Ignore' });
    expectSyncDaemonSets(c, 0, 1, 'node-4 first');
    expectSyncDaemonSets(c, 1, 0);
    c.markReady();
    assert.deepEqual(updatedNodes(c), ['node-4']);
    setNodes(c, ['node-4'], 'False');
    c.markNotReady(onNodes(['node-4']));
    for (let i = 0; i < 5; i++) expectSyncDaemonSets(c, 0, 0, `stalled, sync ${i}`);
    assert.deepEqual(updatedNodes(c), ['node-4']);
    assert.equal(condition(c, 'NodesSetAside')?.status, 'False');
    assert.equal(condition(c, 'Progressing')?.reason, 'Updating');
  });

  test('paused: nothing is set aside and the condition says so', () => {
    const c = brokenCluster();
    rollingTo(c, 'v2', { maxUnavailable: 1, unhealthyNodes: 'Ignore', paused: true });
    run(c, 3, broken, 1);
    assert.equal(condition(c, 'NodesSetAside')?.status, 'False');
  });
});

describe('unhealthyNodes: pods the scheduler cannot place', () => {
  test('delete first: Ignore goes on past a new pod that is Unschedulable; Count stalls on it', () => {
    for (const policy of ['Ignore', 'Count'] as const) {
      const c = started(5);
      rollingTo(c, 'v2', { maxUnavailable: 1, unhealthyNodes: policy });
      expectSyncDaemonSets(c, 0, 1, `${policy}: node-4 first`);
      expectSyncDaemonSets(c, 1, 0, policy);
      unschedulable(c, onNodes(['node-4']));
      run(c, 12, ['node-4'], 1);
      if (policy === 'Count') {
        assert.deepEqual(updatedNodes(c), ['node-4'], 'Count: stalled behind the pending pod');
      } else {
        assert.deepEqual(updatedNodes(c), ['node-0', 'node-1', 'node-2', 'node-3', 'node-4']);
        assert.deepEqual(
          [condition(c, 'NodesSetAside')?.reason, condition(c, 'NodesSetAside')?.message],
          ['Unschedulable', '1 node set aside by unhealthyNodes Ignore: node-4 (Unschedulable)'],
        );
      }
    }
  });

  test('surge: Ignore goes on past a surge pod that is Unschedulable (the old one stays)', () => {
    const c = started(4);
    rollingTo(c, 'v2', { maxSurge: 1, maxUnavailable: 0, unhealthyNodes: 'Ignore' });
    expectSyncDaemonSets(c, 1, 0, 'surge on node-3');
    unschedulable(c, (p) => p.spec.nodeName === 'node-3' && c.hashOf(p) === c.lastPlan?.hash);
    run(c, 12, ['node-3'], 1);
    const onNode3 = c.live().filter(onNodes(['node-3']));
    assert.equal(onNode3.length, 2, 'old pod kept beside the pending one');
    assert.deepEqual(
      c
        .live()
        .filter((p) => c.hashOf(p) === c.lastPlan?.hash && isPodReady(p))
        .map((p) => p.spec.nodeName)
        .sort(),
      ['node-0', 'node-1', 'node-2'],
    );
  });

  test('an old pod never scheduled is still replaced under Ignore, without budget', () => {
    const c = started(5);
    c.markNotReady(onNodes(['node-0', 'node-1']));
    unschedulable(c, onNodes(['node-0', 'node-1']));
    rollingTo(c, 'v2', { maxUnavailable: 1, unhealthyNodes: 'Ignore' });
    const [p] = expectSyncDaemonSets(c, 0, 3);
    assert.deepEqual(
      p?.deletes.map((d) => [d.nodeName, d.reason]),
      [
        ['node-1', 'OldPodUnavailable'],
        ['node-0', 'OldPodUnavailable'],
        ['node-4', 'RollingUpdate'],
      ],
    );
  });
});

describe('unhealthyNodes and the canary', () => {
  test('Ignore: a NotReady node without the new revision is no canary candidate; Count keeps it', () => {
    for (const policy of ['Ignore', 'Count'] as const) {
      const ds = newDaemonSet();
      ds.spec.updateStrategy = {
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: 1, unhealthyNodes: policy, canary: { nodes: 1 } },
      } as DaemonSet['spec']['updateStrategy'];
      const nodes = [withReady(newNode('node-0'), 'False'), withReady(newNode('node-1'), 'True')];
      const ctx = newSyncContext(ds, nodes, [], 'h', 0);
      const names = canaryCandidates(ctx, canarySettings(canarySpecOf(ds)!)).map((x) => x.name);
      assert.deepEqual(names, policy === 'Ignore' ? ['node-1'] : ['node-0', 'node-1'], policy);
    }
  });

  test('Ignore: a canary node that turns NotReady after it got the canary pod stays a canary node', () => {
    const ds = newDaemonSet();
    ds.spec.updateStrategy = {
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1, unhealthyNodes: 'Ignore', canary: { nodes: 1 } },
    } as DaemonSet['spec']['updateStrategy'];
    const canaryPod = newPod(ds, 'node-0', { hash: 'h' });
    const nodes = [withReady(newNode('node-0'), 'False'), withReady(newNode('node-1'), 'True')];
    const ctx = newSyncContext(ds, nodes, [canaryPod], 'h', 0);
    assert.deepEqual(
      canaryCandidates(ctx, canarySettings(canarySpecOf(ds)!)).map((x) => x.name),
      ['node-0', 'node-1'],
    );
  });
});
