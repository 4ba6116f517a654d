// manage tables after upstream's daemon_controller_test.go
// (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/daemon_controller_test.go) and Kruise's
// daemonset_controller_test.go
// (https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_controller_test.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Node, Pod } from '../k8s/types.ts';
import { getNodesNeedingPods } from './manage.ts';
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
import type { DaemonSetOptions } from './test-fixtures.ts';

const both: DaemonSetOptions[] = [{ strategy: 'OnDelete' }, { strategy: 'RollingUpdate' }];

describe('manage: placement', () => {
  for (const opts of both) {
    const s = opts.strategy;
    test(`[${s}] simple: 5 nodes -> 5 creates, each pinned by one matchFields term, nodeName empty`, () => {
      const p = plan(newDaemonSet(opts), addNodes(5));
      assert.equal(p.creates.length, 5);
      assert.equal(p.deletes.length, 0);
      assert.deepEqual(
        p.creates.map((c) => c.nodeName),
        ['node-0', 'node-1', 'node-2', 'node-3', 'node-4'],
      );
      for (const c of p.creates) {
        assert.equal(c.pod.spec.nodeName, undefined);
        assert.deepEqual(
          c.pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms,
          [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [c.nodeName] }] }],
        );
        assert.equal(c.pod.metadata.ownerReferences?.[0]?.kind, 'DaemonSet');
        assert.equal(c.pod.metadata.labels?.['controller-revision-hash'], p.hash);
      }
    });
    test(`[${s}] no nodes -> nothing`, () => {
      const p = plan(newDaemonSet(opts), []);
      assert.deepEqual([p.creates.length, p.deletes.length], [0, 0]);
    });
  }

  const rows: [
    string,
    DaemonSetOptions,
    Node[],
    Pod[] | ((ds: ReturnType<typeof newDaemonSet>) => Pod[]),
    number,
    number,
  ][] = [
    [
      'nodeSelector: only labelled nodes',
      { templateSpec: { nodeSelector: { color: 'blue' } } },
      [...addNodes(2), ...addNodes(3, { color: 'blue' }, 2)],
      [],
      3,
      0,
    ],
    [
      'node affinity',
      {
        templateSpec: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: 'color', operator: 'In', values: ['blue'] }] }],
              },
            },
          },
        },
      },
      [...addNodes(4), newNode('node-9', { color: 'blue' })],
      [],
      1,
      0,
    ],
    ['template nodeName', { templateSpec: { nodeName: 'node-1' } }, addNodes(3), [], 1, 0],
    [
      'NoSchedule taint blocks new pods',
      {},
      [newNode('node-0', {}, [{ key: 'k', effect: 'NoSchedule' }]), newNode('node-1')],
      [],
      1,
      0,
    ],
    [
      'NoSchedule taint keeps running pods',
      {},
      [newNode('node-0', {}, [{ key: 'k', effect: 'NoSchedule' }])],
      (ds) => [newPod(ds, 'node-0')],
      0,
      0,
    ],
    [
      'NoExecute taint deletes',
      {},
      [newNode('node-0', {}, [{ key: 'k', effect: 'NoExecute' }])],
      (ds) => [newPod(ds, 'node-0')],
      0,
      1,
    ],
    [
      'tolerated taint',
      { templateSpec: { tolerations: [{ key: 'k', operator: 'Exists' }] } },
      [newNode('node-0', {}, [{ key: 'k', effect: 'NoExecute' }])],
      [],
      1,
      0,
    ],
    [
      'cordoned and not-ready nodes still get pods',
      {},
      [
        {
          ...newNode('node-0', {}, [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }]),
          spec: { unschedulable: true, taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }] },
        },
        newNode('node-1', {}, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }]),
      ],
      [],
      2,
      0,
    ],
    [
      'pods on nodes that stopped matching nodeSelector are deleted',
      { templateSpec: { nodeSelector: { color: 'blue' } } },
      addNodes(2),
      (ds) => [newPod(ds, 'node-0'), newPod(ds, 'node-1')],
      0,
      2,
    ],
    [
      'extra pods: keep the oldest, delete the rest',
      {},
      addNodes(1),
      (ds) => [
        newPod(ds, 'node-0', { created: T0 + 2000 }),
        newPod(ds, 'node-0', { created: T0 }),
        newPod(ds, 'node-0', { created: T0 + 1000 }),
      ],
      0,
      2,
    ],
    [
      'a node whose only pod is terminating gets no new pod',
      {},
      addNodes(1),
      (ds) => [newPod(ds, 'node-0', { deleting: true })],
      0,
      0,
    ],
    [
      'with surge a terminating pod does not block',
      { strategy: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      addNodes(1),
      (ds) => [newPod(ds, 'node-0', { deleting: true })],
      1,
      0,
    ],
    [
      'terminal pods being deleted do not block',
      {},
      addNodes(1),
      (ds) => [newPod(ds, 'node-0', { deleting: true, phase: 'Failed' })],
      1,
      0,
    ],
    [
      'unbound pod pinned to a missing node is deleted',
      {},
      addNodes(1),
      (ds) => [newPod(ds, 'node-0'), newPod(ds, 'gone', { bound: false })],
      0,
      1,
    ],
    [
      'bound pod on a missing node is left to PodGC',
      {},
      addNodes(1),
      (ds) => [newPod(ds, 'node-0'), newPod(ds, 'gone')],
      0,
      0,
    ],
    ['succeeded pod deleted', {}, addNodes(1), (ds) => [newPod(ds, 'node-0', { phase: 'Succeeded' })], 0, 1],
    ['burstReplicas caps creates', { burstReplicas: 3 }, addNodes(10), [], 3, 0],
    ['burstReplicas percent of live desired (40% of 10)', { burstReplicas: '40%' }, addNodes(10), [], 4, 0],
    ['burstReplicas percent never rounds a small DaemonSet to zero', { burstReplicas: '10%' }, addNodes(5), [], 1, 0],
  ];
  for (const [name, opts, nodes, pods, creates, deletes] of rows) {
    test(name, () => {
      const ds = newDaemonSet(opts);
      const p = plan(ds, nodes, typeof pods === 'function' ? pods(ds) : pods);
      assert.deepEqual([p.creates.length, p.deletes.length], [creates, deletes]);
    });
  }

  test('extra pods: the oldest survives', () => {
    const ds = newDaemonSet();
    const pods = [
      newPod(ds, 'node-0', { name: 'b', created: T0 }),
      newPod(ds, 'node-0', { name: 'a', created: T0 + 5000 }),
      newPod(ds, 'node-0', { name: 'c', created: T0 }),
    ];
    assert.deepEqual(
      plan(ds, addNodes(1), pods).deletes.map((d) => [d.podName, d.reason]),
      [
        ['c', 'ExcessPod'],
        ['a', 'ExcessPod'],
      ],
    );
  });

  test('NoSchedule-tainted node with a running pod counts as misscheduled, not desired', () => {
    const ds = newDaemonSet();
    const p = plan(
      ds,
      [newNode('node-0', {}, [{ key: 'k', effect: 'NoSchedule' }]), newNode('node-1')],
      [newPod(ds, 'node-0'), newPod(ds, 'node-1')],
    );
    assert.equal(p.status?.desiredNumberScheduled, 1);
    assert.equal(p.status?.numberMisscheduled, 1);
  });
});

describe('manage: failed pods and backoff', () => {
  test('1 failed + 3 running on a node -> 3 deletes and a FailedDaemonPod warning; replacement next sync', () => {
    const ds = newDaemonSet();
    const pods = [
      newPod(ds, 'node-0', { name: 'failed', phase: 'Failed' }),
      newPod(ds, 'node-0', { name: 'r1', created: T0 }),
      newPod(ds, 'node-0', { name: 'r2', created: T0 + 1000 }),
      newPod(ds, 'node-0', { name: 'r3', created: T0 + 2000 }),
    ];
    const p = plan(ds, addNodes(1), pods);
    assert.deepEqual(p.deletes.map((d) => d.podName).sort(), ['failed', 'r2', 'r3']);
    assert.equal(p.creates.length, 0);
    assert.deepEqual(p.events, [
      {
        type: 'Warning',
        reason: 'FailedDaemonPod',
        message: 'Found failed daemon pod default/failed on node node-0, will try to kill it',
      },
    ]);
  });

  test('backoff: 1 s, then doubling; a failed pod within the delay is kept and the sync requeued', () => {
    const c = new FakeCluster(newDaemonSet(), addNodes(1));
    expectSyncDaemonSets(c, 1, 0);
    const fail = () => {
      c.pods = c.pods.map((p) => ({ ...p, status: { ...p.status, phase: 'Failed' } }));
    };
    fail();
    expectSyncDaemonSets(c, 0, 1, 'first failure deleted at once');
    assert.deepEqual(c.backoff, { 'foo-uid/1/node-0': { backoffMs: 1000, lastUpdateMs: T0 } });
    expectSyncDaemonSets(c, 1, 0, 'replacement');
    fail();
    c.now = T0 + 500;
    const [held] = expectSyncDaemonSets(c, 0, 0, 'in backoff');
    assert.equal(held?.requeueAfterMs, 500);
    c.now = T0 + 1000;
    expectSyncDaemonSets(c, 0, 1, 'delay elapsed');
    assert.equal(c.backoff['foo-uid/1/node-0']?.backoffMs, 2000);
    expectSyncDaemonSets(c, 1, 0);
    fail();
    c.now = T0 + 2999;
    expectSyncDaemonSets(c, 0, 0);
    c.now = T0 + 3000;
    expectSyncDaemonSets(c, 0, 1);
    assert.equal(c.backoff['foo-uid/1/node-0']?.backoffMs, 4000);
  });

  test('backoff is capped at 15 minutes', () => {
    const ds = newDaemonSet();
    let backoff = {};
    let now = T0;
    for (let i = 0; i < 15; i++) {
      const p = plan(ds, addNodes(1), [newPod(ds, 'node-0', { phase: 'Failed' })], { failedPodsBackoff: backoff, now });
      assert.equal(p.deletes.length, 1);
      backoff = p.failedPodsBackoff;
      now += 15 * 60_000;
    }
    assert.equal(Object.values(backoff as Record<string, { backoffMs: number }>)[0]?.backoffMs, 15 * 60_000);
  });
});

describe('manage: surge (upstream daemon_controller_test.go)', () => {
  const surge = { strategy: 'RollingUpdate' as const, rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };

  test('keeps the oldest new-hash pod and the oldest ready old pod, deletes the others', () => {
    const ds = newDaemonSet(surge);
    const hash = plan(ds, []).hash;
    const pods = [
      newPod(ds, 'node-0', { name: 'old2', hash: 'old', ready: true, created: T0 + 1000 }),
      newPod(ds, 'node-0', { name: 'old1', hash: 'old', ready: true, created: T0 }),
      newPod(ds, 'node-0', { name: 'new2', hash, created: T0 + 3000 }),
      newPod(ds, 'node-0', { name: 'new1', hash, created: T0 + 2000 }),
    ];
    assert.deepEqual(
      plan(ds, addNodes(1), pods, { now: T0 + 10 })
        .deletes.map((d) => d.podName)
        .sort(),
      ['new2', 'old2'],
    );
  });

  test('an unready old pod next to a new one is deleted', () => {
    const ds = newDaemonSet(surge);
    const hash = plan(ds, []).hash;
    const pods = [
      newPod(ds, 'node-0', { name: 'old', hash: 'old', ready: false }),
      newPod(ds, 'node-0', { name: 'new', hash }),
    ];
    assert.deepEqual(
      plan(ds, addNodes(1), pods).deletes.map((d) => [d.podName, d.reason]),
      [['old', 'OldPodUnavailable']],
    );
  });

  test('minReadySeconds 15: new pod ready 10 s keeps the old one (requeue 5 s), 20 s deletes it', () => {
    const ds = newDaemonSet({ ...surge, minReadySeconds: 15 });
    const hash = plan(ds, []).hash;
    const pods = [
      newPod(ds, 'node-0', { name: 'old', hash: 'old', ready: true }),
      newPod(ds, 'node-0', { name: 'new', hash, ready: true, readySince: T0 }),
    ];
    const p10 = plan(ds, addNodes(1), pods, { now: T0 + 10_000 });
    assert.equal(p10.deletes.length, 0);
    assert.equal(p10.requeueAfterMs, 5_001);
    assert.deepEqual(
      plan(ds, addNodes(1), pods, { now: T0 + 20_000 }).deletes.map((d) => d.podName),
      ['old'],
    );
  });
});

describe('manage: progressive creation (GetNodesNeedingPods)', () => {
  const names = Array.from({ length: 10 }, (_, i) => `node-${i}`);
  const rows: [string, number, number, number, boolean, number][] = [
    ['not progressive: all', 0, 10, 5, false, 10],
    ['partition 10 of 10: none', 0, 10, 10, true, 0],
    ['partition 9: one', 0, 10, 9, true, 1],
    ['partition 5: five', 0, 10, 5, true, 5],
    ['partition 5 with 2 new pods already: three', 2, 10, 5, true, 3],
    ['partition 0: all', 0, 10, 0, true, 10],
    ['partition above desired: none', 0, 10, 20, true, 0],
  ];
  for (const [name, newPods, desired, partition, progressive, want] of rows) {
    test(name, () => assert.equal(getNodesNeedingPods(newPods, desired, partition, progressive, names).length, want));
  }
  test('lexicographic order: node-10 before node-5', () => {
    assert.deepEqual(getNodesNeedingPods(0, 3, 1, true, ['node-5', 'node-10', 'node-1']), ['node-1', 'node-10']);
  });
  test('through the planner: annotation + partition 3 of 5 creates 2; without the annotation 5', () => {
    const opts = { strategy: 'RollingUpdate' as const, rollingUpdate: { partition: 3 } };
    const progressive = newDaemonSet({
      ...opts,
      annotations: { 'daemonset.kruise.io/progressive-create-pod': 'true' },
    });
    assert.deepEqual(
      plan(progressive, addNodes(5)).creates.map((c) => c.nodeName),
      ['node-0', 'node-1'],
    );
    assert.equal(plan(newDaemonSet(opts), addNodes(5)).creates.length, 5);
    const pct = newDaemonSet({
      strategy: 'RollingUpdate',
      rollingUpdate: { partition: '60%' },
      annotations: { 'daemonset.kruise.io/progressive-create-pod': 'true' },
    });
    assert.equal(
      plan(pct, addNodes(5)).creates.length,
      2,
      'percent partition uses the live desired count on the first sync',
    );
  });
});
