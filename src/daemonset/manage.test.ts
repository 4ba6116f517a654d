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

  const rows: {
    name: string;
    opts: DaemonSetOptions;
    nodes: Node[];
    pods: Pod[] | ((ds: ReturnType<typeof newDaemonSet>) => Pod[]);
    creates: number;
    deletes: number;
  }[] = [
    {
      name: 'nodeSelector: only labelled nodes',
      opts: { templateSpec: { nodeSelector: { color: 'blue' } } },
      nodes: [...addNodes(2), ...addNodes(3, { color: 'blue' }, 2)],
      pods: [],
      creates: 3,
      deletes: 0,
    },
    {
      name: 'node affinity',
      opts: {
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
      nodes: [...addNodes(4), newNode('node-9', { color: 'blue' })],
      pods: [],
      creates: 1,
      deletes: 0,
    },
    {
      name: 'template nodeName',
      opts: { templateSpec: { nodeName: 'node-1' } },
      nodes: addNodes(3),
      pods: [],
      creates: 1,
      deletes: 0,
    },
    {
      name: 'NoSchedule taint blocks new pods',
      opts: {},
      nodes: [newNode('node-0', {}, [{ key: 'k', effect: 'NoSchedule' }]), newNode('node-1')],
      pods: [],
      creates: 1,
      deletes: 0,
    },
    {
      name: 'NoSchedule taint keeps running pods',
      opts: {},
      nodes: [newNode('node-0', {}, [{ key: 'k', effect: 'NoSchedule' }])],
      pods: (ds) => [newPod(ds, 'node-0')],
      creates: 0,
      deletes: 0,
    },
    {
      name: 'NoExecute taint deletes',
      opts: {},
      nodes: [newNode('node-0', {}, [{ key: 'k', effect: 'NoExecute' }])],
      pods: (ds) => [newPod(ds, 'node-0')],
      creates: 0,
      deletes: 1,
    },
    {
      name: 'tolerated taint',
      opts: { templateSpec: { tolerations: [{ key: 'k', operator: 'Exists' }] } },
      nodes: [newNode('node-0', {}, [{ key: 'k', effect: 'NoExecute' }])],
      pods: [],
      creates: 1,
      deletes: 0,
    },
    {
      name: 'cordoned and not-ready nodes still get pods',
      opts: {},
      nodes: [
        {
          ...newNode('node-0', {}, [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }]),
          spec: { unschedulable: true, taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }] },
        },
        newNode('node-1', {}, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }]),
      ],
      pods: [],
      creates: 2,
      deletes: 0,
    },
    {
      name: 'pods on nodes that stopped matching nodeSelector are deleted',
      opts: { templateSpec: { nodeSelector: { color: 'blue' } } },
      nodes: addNodes(2),
      pods: (ds) => [newPod(ds, 'node-0'), newPod(ds, 'node-1')],
      creates: 0,
      deletes: 2,
    },
    {
      name: 'extra pods: keep the oldest, delete the rest',
      opts: {},
      nodes: addNodes(1),
      pods: (ds) => [
        newPod(ds, 'node-0', { created: T0 + 2000 }),
        newPod(ds, 'node-0', { created: T0 }),
        newPod(ds, 'node-0', { created: T0 + 1000 }),
      ],
      creates: 0,
      deletes: 2,
    },
    {
      name: 'a node whose only pod is terminating gets no new pod',
      opts: {},
      nodes: addNodes(1),
      pods: (ds) => [newPod(ds, 'node-0', { deleting: true })],
      creates: 0,
      deletes: 0,
    },
    {
      name: 'with surge a terminating pod does not block',
      opts: { strategy: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      nodes: addNodes(1),
      pods: (ds) => [newPod(ds, 'node-0', { deleting: true })],
      creates: 1,
      deletes: 0,
    },
    {
      name: 'terminal pods being deleted do not block',
      opts: {},
      nodes: addNodes(1),
      pods: (ds) => [newPod(ds, 'node-0', { deleting: true, phase: 'Failed' })],
      creates: 1,
      deletes: 0,
    },
    {
      name: 'unbound pod pinned to a missing node is deleted',
      opts: {},
      nodes: addNodes(1),
      pods: (ds) => [newPod(ds, 'node-0'), newPod(ds, 'gone', { bound: false })],
      creates: 0,
      deletes: 1,
    },
    {
      name: 'bound pod on a missing node is left to PodGC',
      opts: {},
      nodes: addNodes(1),
      pods: (ds) => [newPod(ds, 'node-0'), newPod(ds, 'gone')],
      creates: 0,
      deletes: 0,
    },
    {
      name: 'succeeded pod deleted',
      opts: {},
      nodes: addNodes(1),
      pods: (ds) => [newPod(ds, 'node-0', { phase: 'Succeeded' })],
      creates: 0,
      deletes: 1,
    },
    {
      name: 'burstReplicas caps creates',
      opts: { burstReplicas: 3 },
      nodes: addNodes(10),
      pods: [],
      creates: 3,
      deletes: 0,
    },
    {
      name: 'burstReplicas percent of live desired (40% of 10)',
      opts: { burstReplicas: '40%' },
      nodes: addNodes(10),
      pods: [],
      creates: 4,
      deletes: 0,
    },
    {
      name: 'burstReplicas percent never rounds a small DaemonSet to zero',
      opts: { burstReplicas: '10%' },
      nodes: addNodes(5),
      pods: [],
      creates: 1,
      deletes: 0,
    },
  ];
  for (const { name, opts, nodes, pods, creates, deletes } of rows) {
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
