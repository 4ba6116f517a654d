// Rolling-update tables after upstream's update_test.go
// (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/update_test.go) and Kruise's
// daemonset_update_test.go
// (https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_update_test.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { Pod } from '../k8s/types.ts';
import { isPodReady } from '../k8s/pod.ts';
import { newSyncContext } from './context.ts';
import { desiredNodeNames, rollingUpdate } from './update.ts';
import { rollingUpdateBudget } from './strategy.ts';
import { FakeCluster, T0, addNodes, expectSyncDaemonSets, newDaemonSet, newNode, newPod } from './test-fixtures.ts';

function rollingTo(c: FakeCluster, image: string, rollingUpdate: Record<string, unknown>, minReadySeconds?: number) {
  c.updateSpec((ds) => {
    const container = ds.spec.template.spec.containers[0];
    if (container) container.image = image;
    ds.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate } as DaemonSet['spec']['updateStrategy'];
    if (minReadySeconds !== undefined) ds.spec.minReadySeconds = minReadySeconds;
  });
}

function started(nodes = 5, ready = true): FakeCluster {
  const c = new FakeCluster(newDaemonSet(), addNodes(nodes));
  expectSyncDaemonSets(c, nodes, 0, 'initial creates');
  if (ready) c.markReady();
  return c;
}

const at = (s: number) => s * 1000;

describe('rolling update (sequences of syncs)', () => {
  test('UpdatesPods: maxUnavailable 2 -> delete 2 / create 2 twice, then 1 / 1, then nothing', () => {
    const c = started();
    rollingTo(c, 'foo2/bar2', { maxUnavailable: 2 });
    const steps: [number, number][] = [
      [0, 2],
      [2, 0],
      [0, 2],
      [2, 0],
      [0, 1],
      [1, 0],
      [0, 0],
    ];
    for (const [i, [cr, del]] of steps.entries()) {
      expectSyncDaemonSets(c, cr, del, `step ${i}`);
      c.markReady();
    }
    const hash = c.lastPlan?.hash ?? '';
    assert.ok(
      c.pods.every((p) => c.hashOf(p) === hash),
      'every pod on the new revision',
    );
    assert.equal(c.pods.length, 5);
  });

  test('maxUnavailable percent: 40% of 5 rounds up to 2', () => {
    const c = started();
    rollingTo(c, 'foo2/bar2', { maxUnavailable: '40%' });
    expectSyncDaemonSets(c, 0, 2);
  });

  test('maxUnavailable 1 never has more than one node without an available pod', () => {
    const c = started(6);
    rollingTo(c, 'v2', { maxUnavailable: 1 });
    for (let i = 0; i < 30; i++) {
      c.sync();
      const availableNodes = new Set(c.pods.filter((p) => isPodReady(p)).map((p) => p.spec.nodeName));
      assert.ok(availableNodes.size >= 5, `at most 1 unavailable node (sync ${i})`);
      c.markReady();
    }
    assert.ok(c.pods.every((p) => c.hashOf(p) === c.lastPlan?.hash));
  });

  test('UpdatesPodsWithMaxSurge: create 2; wait; create 2 + delete 2; create 1 + delete 2; delete 1', () => {
    const c = started();
    rollingTo(c, 'foo2/bar2', { maxSurge: 2, maxUnavailable: 0 });
    expectSyncDaemonSets(c, 2, 0);
    expectSyncDaemonSets(c, 0, 0, 'new pods not ready yet');
    assert.ok(c.pods.length === 7, 'new pods start next to the old ones');
    c.markReady();
    expectSyncDaemonSets(c, 2, 2);
    c.markReady();
    expectSyncDaemonSets(c, 1, 2);
    c.markReady();
    expectSyncDaemonSets(c, 0, 1);
    expectSyncDaemonSets(c, 0, 0);
    assert.equal(c.pods.length, 5);
  });

  test('surge keeps at most one new and one old pod per node', () => {
    const c = started();
    rollingTo(c, 'v2', { maxSurge: '100%', maxUnavailable: 0 });
    for (let i = 0; i < 6; i++) {
      c.sync();
      const perNode = new Map<string, number>();
      for (const p of c.pods) perNode.set(p.spec.nodeName ?? '', (perNode.get(p.spec.nodeName ?? '') ?? 0) + 1);
      assert.ok([...perNode.values()].every((n) => n <= 2));
      c.markReady();
    }
  });

  test('UpdatesWhenNewPodIsNotReady: unready new pods use the budget (maxUnavailable 3)', () => {
    const c = started();
    rollingTo(c, 'foo2/bar2', { maxUnavailable: 3 });
    expectSyncDaemonSets(c, 0, 3);
    expectSyncDaemonSets(c, 3, 0);
    expectSyncDaemonSets(c, 0, 0, 'three new pods unready: stalled');
  });

  test('UpdatesAllOldPodsNotReady: unready old pods are all replaced at once (maxUnavailable 3)', () => {
    const c = started(5, false);
    rollingTo(c, 'foo2/bar2', { maxUnavailable: 3 });
    expectSyncDaemonSets(c, 0, 5);
    expectSyncDaemonSets(c, 5, 0);
    expectSyncDaemonSets(c, 0, 0);
  });

  test('UpdatesSomeOldPodsNotReady: the three available pods are kept when the budget is used', () => {
    const c = started();
    rollingTo(c, 'v2', { maxUnavailable: 2 });
    expectSyncDaemonSets(c, 0, 2);
    expectSyncDaemonSets(c, 2, 0);
    expectSyncDaemonSets(c, 0, 0);
    const readyBefore = c.pods.filter(isPodReady).map((p) => p.metadata.name);
    rollingTo(c, 'v3', { maxUnavailable: 2 });
    expectSyncDaemonSets(c, 0, 2, 'the two unready v2 pods');
    expectSyncDaemonSets(c, 2, 0);
    expectSyncDaemonSets(c, 0, 0);
    assert.deepEqual(
      c.pods.filter(isPodReady).map((p) => p.metadata.name),
      readyBefore,
    );
  });

  test('unready old pods are replaced even beyond the budget, and count against it', () => {
    // 12 nodes, maxUnavailable 2: 2 old unready pods + 10 old ready ones -> exactly the 2 unready are replaced.
    const c = started(12);
    c.markNotReady((p) => ['node-0', 'node-1'].includes(p.spec.nodeName ?? ''));
    rollingTo(c, 'v2', { maxUnavailable: 2 });
    const [p] = expectSyncDaemonSets(c, 0, 2);
    assert.deepEqual(
      p?.deletes.map((d) => [d.nodeName, d.reason]),
      [
        ['node-1', 'OldPodUnavailable'],
        ['node-0', 'OldPodUnavailable'],
      ],
    );
  });

  test('UpdatesAllOldPodsNotReadyMaxSurge with minReadySeconds and a clock', () => {
    const c = started(5, false);
    rollingTo(c, 'foo2/bar2', { maxSurge: 3, maxUnavailable: 0 });
    c.now = T0 + at(100);
    expectSyncDaemonSets(c, 5, 0, 'all old unavailable: surge everywhere regardless of maxSurge');
    c.now = T0 + at(200);
    expectSyncDaemonSets(c, 0, 5, 'old pods not ready: deleted');
    c.markReady(() => true, T0 + at(200));
    rollingTo(c, 'foo3/bar3', { maxSurge: 3, maxUnavailable: 0 }, 15);
    c.now = T0 + at(300);
    expectSyncDaemonSets(c, 3, 0);
    const hash = c.lastPlan?.hash ?? '';
    const updatedNodes = new Set(c.pods.filter((p) => c.hashOf(p) === hash).map((p) => p.spec.nodeName));
    let readied = 0;
    c.markReady((p) => c.hashOf(p) === hash && readied++ < 2, T0 + at(300));
    let unreadied = 0;
    c.markNotReady((p) => c.hashOf(p) !== hash && !updatedNodes.has(p.spec.nodeName) && unreadied++ < 1);
    c.now = T0 + at(310);
    const [p310] = expectSyncDaemonSets(c, 1, 0, 'new pods not yet available; the unready old pod is replaced');
    assert.equal(p310?.requeueAfterMs, at(5) + 1, 'requeue when the two ready pods become available');
    c.now = T0 + at(320);
    expectSyncDaemonSets(c, 1, 3);
    c.markReady((p) => c.hashOf(p) === hash, T0 + at(320));
    c.now = T0 + at(340);
    expectSyncDaemonSets(c, 0, 2);
    c.now = T0 + at(350);
    expectSyncDaemonSets(c, 0, 0);
    assert.ok(c.pods.every((pod) => c.hashOf(pod) === hash));
  });

  test('NoTemplateChanged: switching to RollingUpdate alone changes nothing', () => {
    const c = started();
    c.updateSpec((ds) => {
      ds.spec.updateStrategy = {
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: 3 },
      } as DaemonSet['spec']['updateStrategy'];
    });
    expectSyncDaemonSets(c, 0, 0);
  });

  test('OnDelete: a template change replaces nothing; a deleted pod comes back on the new revision', () => {
    const c = started();
    c.setImage('v2');
    expectSyncDaemonSets(c, 0, 0);
    const hash = c.lastPlan?.hash ?? '';
    assert.ok(c.pods.every((p) => c.hashOf(p) !== hash));
    c.pods = c.pods.filter((p) => p.spec.nodeName !== 'node-2');
    const [p] = expectSyncDaemonSets(c, 1, 0);
    assert.equal(p?.creates[0]?.revisionHash, hash);
    assert.equal(p?.creates[0]?.pod.metadata.labels?.['controller-revision-hash'], hash);
  });

  test('minReadySeconds: a ready new pod holds the budget until available; requeue at that moment', () => {
    const c = started(3);
    c.now += at(60);
    rollingTo(c, 'v2', { maxUnavailable: 1 }, 30);
    expectSyncDaemonSets(c, 0, 1);
    expectSyncDaemonSets(c, 1, 0);
    c.markReady(() => true, c.now);
    c.now += at(10);
    const [p] = expectSyncDaemonSets(c, 0, 0, 'ready for 10 s of 30');
    assert.equal(p?.requeueAfterMs, at(20) + 1);
    c.now += at(21);
    expectSyncDaemonSets(c, 0, 1, 'available: next node');
  });

  test('old pods not yet available under a new minReadySeconds count as unavailable and go at once', () => {
    const c = started(3);
    rollingTo(c, 'v2', { maxUnavailable: 1 }, 30);
    expectSyncDaemonSets(c, 0, 3);
  });

  test('surge: a node that no longer should run the daemon loses its old pod only once the others are available', () => {
    // TestDaemonSetUpdatesPodsNotMatchTainstWithMaxSurge
    const ds = newDaemonSet({
      strategy: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
      templateSpec: { tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] },
    });
    const nodes = addNodes(5);
    nodes[0] = newNode('node-0', {}, [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]);
    const c = new FakeCluster(ds, nodes);
    expectSyncDaemonSets(c, 5, 0);
    c.markReady();
    c.updateSpec((d) => {
      delete d.spec.template.spec.tolerations;
    });
    expectSyncDaemonSets(c, 1, 1, 'surge one node, sunset node-0 (5 available > 4 desired)');
    assert.ok(!c.pods.some((p) => p.spec.nodeName === 'node-0'));
    expectSyncDaemonSets(c, 0, 0);
    c.markReady();
    for (let i = 0; i < 3; i++) {
      expectSyncDaemonSets(c, 1, 1);
      expectSyncDaemonSets(c, 0, 0);
      c.markReady();
    }
    expectSyncDaemonSets(c, 0, 1);
    expectSyncDaemonSets(c, 0, 0);
  });
});

describe('GetUnavailableNumbers (updatedDesiredNodeCounts)', () => {
  const ready = (ds: DaemonSet, node: string, extra: Partial<Parameters<typeof newPod>[2]> = {}): Pod =>
    newPod(ds, node, { ready: true, ...extra });
  const bothReady = (ds: DaemonSet): Pod[] => [ready(ds, 'node-0'), ready(ds, 'node-1')];
  const rows: {
    name: string;
    ru: Record<string, unknown>;
    nodes: number;
    pods: (ds: DaemonSet) => Pod[];
    surge: number;
    unavailable: number;
    empty: number;
  }[] = [
    { name: 'no nodes', ru: { maxUnavailable: 0 }, nodes: 0, pods: () => [], surge: 0, unavailable: 0, empty: 0 },
    {
      name: 'two ready nodes, maxUnavailable 1',
      ru: { maxUnavailable: 1 },
      nodes: 2,
      pods: bothReady,
      surge: 0,
      unavailable: 1,
      empty: 0,
    },
    {
      name: 'maxUnavailable 0 with one empty node defaults to 1',
      ru: { maxUnavailable: 0 },
      nodes: 2,
      pods: (d) => [ready(d, 'node-0')],
      surge: 0,
      unavailable: 1,
      empty: 1,
    },
    {
      name: 'maxSurge 0 defaults to unavailable 1',
      ru: { maxSurge: 0, maxUnavailable: 0 },
      nodes: 2,
      pods: (d) => [ready(d, 'node-0')],
      surge: 0,
      unavailable: 1,
      empty: 1,
    },
    { name: '50% of 2', ru: { maxUnavailable: '50%' }, nodes: 2, pods: bothReady, surge: 0, unavailable: 1, empty: 0 },
    {
      name: 'surge 50% of 2',
      ru: { maxSurge: '50%', maxUnavailable: 0 },
      nodes: 2,
      pods: bothReady,
      surge: 1,
      unavailable: 0,
      empty: 0,
    },
    {
      name: 'surge 100% of 2',
      ru: { maxSurge: '100%', maxUnavailable: 0 },
      nodes: 2,
      pods: bothReady,
      surge: 2,
      unavailable: 0,
      empty: 0,
    },
    {
      name: '50% of 3 with a terminating pod and an empty node',
      ru: { maxUnavailable: '50%' },
      nodes: 3,
      pods: (d) => [ready(d, 'node-0'), ready(d, 'node-1', { deleting: true })],
      surge: 0,
      unavailable: 2,
      empty: 1,
    },
  ];
  for (const { name, ru, nodes, pods, surge, unavailable, empty } of rows) {
    test(name, () => {
      const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: ru });
      if (!('maxUnavailable' in ru))
        delete (ds.spec.updateStrategy?.rollingUpdate as Record<string, unknown>).maxUnavailable;
      const ctx = newSyncContext(ds, addNodes(nodes), pods(ds), 'h', T0);
      assert.deepEqual(rollingUpdateBudget(ds, ctx.desired), { maxSurge: surge, maxUnavailable: unavailable });
      const withoutPods = desiredNodeNames(ctx).filter((name) => !ctx.nodeToDaemonPods.has(name));
      assert.equal(withoutPods.length, empty);
      assert.equal(rollingUpdate(ctx).maxUnavailable, unavailable);
    });
  }
});
