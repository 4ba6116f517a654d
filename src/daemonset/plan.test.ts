// planDaemonSet: stages, and the Kruise strategies (docs/kruise-rules.md) as rows.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet, DaemonSetCondition } from '../api/types.ts';
import type { Node } from '../k8s/types.ts';
import { filterDaemonPodsNodeToUpdate } from './update.ts';
import { getNodesToDaemonPods } from './pods.ts';
import { planDaemonSet } from './plan.ts';
import {
  FakeCluster,
  T0,
  addNodes,
  expectSyncDaemonSets,
  newDaemonSet,
  newNode,
  newPod,
  plan,
  syncOnce,
} from './test-fixtures.ts';

describe('planDaemonSet stages', () => {
  test('a DaemonSet being deleted: nothing at all, not even status', () => {
    const ds = newDaemonSet();
    ds.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
    const p = plan(ds, addNodes(3));
    assert.equal(p.stage, 'Deleting');
    assert.deepEqual([p.creates.length, p.deletes.length, p.status], [0, 0, undefined]);
  });

  test('selector {} -> one SelectingAll warning, no action', () => {
    const ds = newDaemonSet();
    ds.spec.selector = {};
    const p = plan(ds, addNodes(3));
    assert.equal(p.stage, 'InvalidSelector');
    assert.deepEqual(p.events, [
      {
        type: 'Warning',
        reason: 'SelectingAll',
        message: 'This DaemonSet is selecting all pods. A non-empty selector is required.',
      },
    ]);
    assert.equal(p.creates.length + p.revisions.create.length, 0);
    assert.equal(p.status, undefined);
  });

  test('expectations pending: no pod work, revisions and status only', () => {
    const p = plan(newDaemonSet(), addNodes(3), [], { expectationsSatisfied: false });
    assert.equal(p.stage, 'ExpectationsPending');
    assert.equal(p.creates.length, 0);
    assert.equal(p.revisions.create.length, 1);
    assert.equal(p.status?.desiredNumberScheduled, 3);
  });

  test('manage work stops the sync before the rolling update', () => {
    const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: 5 } });
    const p = plan(ds, addNodes(3), [
      newPod(ds, 'node-0', { hash: 'old', ready: true }),
      newPod(ds, 'node-1', { hash: 'old', ready: true }),
    ]);
    assert.equal(p.stage, 'Managed');
    assert.deepEqual([p.creates.length, p.deletes.length], [1, 0]);
  });

  // Every pod gets the gate by default (--kruise-pod-ready-gate always, as Kruise); with when-needed only pods of
  // DaemonSets with markPodNotReady do, and the others need no status write at all.
  const hookedDs = () =>
    newDaemonSet({ lifecycle: { preDelete: { markPodNotReady: true, labelsHandler: { x: 'y' } } } });
  for (const row of [
    { name: 'plain DaemonSet, default', ds: newDaemonSet, options: undefined, patches: 2 },
    {
      name: 'plain DaemonSet, when-needed',
      ds: newDaemonSet,
      options: { kruisePodReadyGate: 'when-needed' },
      patches: 0,
    },
    { name: 'markPodNotReady, when-needed', ds: hookedDs, options: { kruisePodReadyGate: 'when-needed' }, patches: 2 },
  ] as const) {
    test(`KruisePodReady True planned for created pods lacking the condition: ${row.name}`, () => {
      const c = new FakeCluster(row.ds(), addNodes(2), row.options);
      c.sync();
      const p = c.sync();
      assert.deepEqual(
        p.podPatches.map((x) => [x.reason, x.subresource]),
        Array.from({ length: row.patches }, () => ['KruisePodReady', 'status']),
      );
      assert.equal(c.sync().podPatches.length, 0, 'once set, never again');
    });
  }

  // A pod whose cached copy does not show our write yet (the patch right after its create, in flight) gets no
  // KruisePodReady planned from that copy: it would be the same write again.
  for (const row of [
    { name: 'no pod awaiting a write: every pod', awaiting: (_: string[]) => [], want: (n: string[]) => n },
    {
      name: 'one pod awaiting: the others',
      awaiting: (n: string[]) => n.slice(0, 1),
      want: (n: string[]) => n.slice(1),
    },
    { name: 'every pod awaiting: none', awaiting: (n: string[]) => n, want: (_: string[]) => [] },
  ]) {
    test(`KruisePodReady and podsAwaitingWrites: ${row.name}`, () => {
      const c = new FakeCluster(newDaemonSet(), addNodes(3));
      c.sync();
      const names = c.pods.map((p) => p.metadata.name ?? '').sort();
      const p = planDaemonSet({
        ds: c.ds,
        nodes: c.nodes,
        pods: c.pods,
        revisions: c.revisions,
        now: c.now,
        podsAwaitingWrites: new Set(row.awaiting(names)),
      });
      assert.deepEqual(
        p.podPatches
          .filter((x) => x.reason === 'KruisePodReady')
          .map((x) => x.podName)
          .sort(),
        row.want(names),
      );
    });
  }

  test('requeue after the soonest availability', () => {
    const ds = newDaemonSet({ minReadySeconds: 30 });
    const pods = [
      newPod(ds, 'node-0', { ready: true, readySince: T0 }),
      newPod(ds, 'node-1', { ready: true, readySince: T0 + 10_000 }),
    ];
    assert.equal(plan(ds, addNodes(2), pods, { now: T0 + 20_000 }).requeueAfterMs, 10_001);
  });
});

describe('rollingUpdate.partition', () => {
  const ru = (partition: number | string, extra: Record<string, unknown> = {}) =>
    newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%', partition, ...extra } });
  const rollout = (ds: DaemonSet, nodes: Node[]) => {
    const c = new FakeCluster(ds, nodes);
    c.sync();
    c.markReady();
    c.setImage('v2');
    for (let i = 0; i < 6; i++) {
      c.sync();
      c.markReady();
    }
    return c;
  };
  const oldNodes = (c: FakeCluster) =>
    c.pods
      .filter((p) => c.hashOf(p) !== c.lastPlan?.hash)
      .map((p) => p.spec.nodeName)
      .sort();

  test('partition 3 of 8: exactly the 3 lowest node names keep the old revision', () => {
    const c = rollout(ru(3), addNodes(8));
    assert.deepEqual(oldNodes(c), ['node-0', 'node-1', 'node-2']);
  });
  test('percent partition is of the live desired count, rounded down (50% of 5 = 2)', () => {
    assert.deepEqual(oldNodes(rollout(ru('50%'), addNodes(5))), ['node-0', 'node-1']);
  });
  test('raising the partition never rolls back; lowering continues', () => {
    const c = rollout(ru(3), addNodes(8));
    c.updateSpec((ds) => {
      (ds.spec.updateStrategy?.rollingUpdate as { partition: number }).partition = 6;
    });
    expectSyncDaemonSets(c, 0, 0);
    assert.equal(oldNodes(c).length, 3);
    c.updateSpec((ds) => {
      (ds.spec.updateStrategy?.rollingUpdate as { partition: number }).partition = 1;
    });
    for (let i = 0; i < 4; i++) {
      c.sync();
      c.markReady();
    }
    assert.deepEqual(oldNodes(c), ['node-0']);
  });
  test('FilterDaemonPodsNodeToUpdate table', () => {
    const ds = (partition: number, selector?: Record<string, string>) =>
      newDaemonSet({
        strategy: 'RollingUpdate',
        rollingUpdate: { partition, ...(selector ? { selector: { matchLabels: selector } } : {}) },
      });
    const nodes = (canary: string[]) =>
      new Map(['n1', 'n2', 'n3', 'n4'].map((n) => [n, newNode(n, canary.includes(n) ? { canary: 'true' } : {})]));
    const pods = (d: DaemonSet, spec: Record<string, string | undefined>) =>
      getNodesToDaemonPods(
        Object.entries(spec).flatMap(([n, h]) =>
          h ? [newPod(d, n, { hash: h.replace('!', ''), deleting: h.endsWith('!') })] : [],
        ),
      );
    const rows: {
      name: string;
      d: DaemonSet;
      spec: Record<string, string | undefined>;
      canary: string[];
      want: string[];
    }[] = [
      { name: 'partition 0', d: ds(0), spec: { n1: 'v1', n2: 'v2', n3: 'v1' }, canary: [], want: ['n2', 'n3', 'n1'] },
      {
        name: 'partition 1 with n1 updated',
        d: ds(1),
        spec: { n1: 'v2', n2: 'v1', n3: 'v1' },
        canary: [],
        want: ['n1', 'n3'],
      },
      // Kruise's table says [n2, n3]: it counts the partition over all nodes. Ours counts it within the selected
      // nodes (docs/differences.md), so the one canary n3 is the one kept old; n2 is listed as already updated.
      {
        name: 'partition 1 + selector (n3 canary): the partition holds the only canary',
        d: ds(1, { canary: 'true' }),
        spec: { n1: 'v1', n2: 'v2', n3: 'v1' },
        canary: ['n3'],
        want: ['n2'],
      },
      {
        name: 'partition 1 + selector (n1, n3 canary): one of the two canaries is updated, the highest name',
        d: ds(1, { canary: 'true' }),
        spec: { n1: 'v1', n2: 'v1', n3: 'v1' },
        canary: ['n1', 'n3'],
        want: ['n3'],
      },
      {
        name: 'partition 2 + selector (n1, n3, n4 canary)',
        d: ds(2, { canary: 'true' }),
        spec: { n1: 'v1', n2: 'v2', n3: 'v1', n4: 'v1' },
        canary: ['n1', 'n3', 'n4'],
        want: ['n2', 'n4'],
      },
      {
        name: 'partition 0, terminating pod on n3 is "updating"',
        d: ds(0),
        spec: { n1: 'v1', n2: 'v2', n3: 'v1!' },
        canary: [],
        want: ['n2', 'n3', 'n1'],
      },
    ];
    const emptySelector = (partition: number) =>
      newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { partition, selector: {} } });
    rows.push(
      // An empty selector selects every node (Kruise: labels.Everything()), so it reads as no selector at all.
      {
        name: 'partition 0 + selector {}: every node',
        d: emptySelector(0),
        spec: { n1: 'v1', n2: 'v2', n3: 'v1' },
        canary: [],
        want: ['n2', 'n3', 'n1'],
      },
      {
        name: 'partition 1 + selector {}: as partition 1 alone',
        d: emptySelector(1),
        spec: { n1: 'v2', n2: 'v1', n3: 'v1' },
        canary: [],
        want: ['n1', 'n3'],
      },
    );
    for (const { name, d, spec, canary, want } of rows) {
      const map = pods(d, spec);
      for (const n of Object.keys(spec)) if (!map.has(n)) map.set(n, []);
      const partition = (d.spec.updateStrategy?.rollingUpdate as { partition: number }).partition;
      assert.deepEqual(filterDaemonPodsNodeToUpdate(d, 'v2', map, nodes(canary), partition), want, name);
    }
  });
});

describe('rollingUpdate.selector', () => {
  test('canary: only labelled nodes are updated; then selector + partition + maxUnavailable combined', () => {
    const nodes = [...addNodes(2, { canary: 'true' }), ...addNodes(4, {}, 2)];
    const ds = newDaemonSet({
      strategy: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: '100%', selector: { matchLabels: { canary: 'true' } } },
    });
    const c = new FakeCluster(ds, nodes);
    c.sync();
    c.markReady();
    c.setImage('v2');
    for (let i = 0; i < 5; i++) {
      c.sync();
      c.markReady();
    }
    const hash = c.lastPlan?.hash;
    assert.deepEqual(
      c.pods
        .filter((p) => c.hashOf(p) === hash)
        .map((p) => p.spec.nodeName)
        .sort(),
      ['node-0', 'node-1'],
    );
    // Everyone now, with partition 2 and maxUnavailable 1.
    c.updateSpec((d) => {
      d.spec.updateStrategy = {
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: 1, partition: 2 },
      } as DaemonSet['spec']['updateStrategy'];
    });
    const r = syncOnce(c);
    assert.deepEqual([r.creates, r.deletes], [0, 1], 'one at a time');
    for (let i = 0; i < 12; i++) {
      c.sync();
      c.markReady();
    }
    assert.equal(c.pods.filter((p) => c.hashOf(p) !== hash).length, 2, 'partition keeps 2 old');
  });
});

/**
 * After a rollout: `wantNew` live pods run the last plan's revision and Progressing is `progressing` (status/reason).
 * Returns the Progressing condition.
 */
function assertRolledOut(c: FakeCluster, wantNew: number, progressing: string): DaemonSetCondition | undefined {
  const hash = c.lastPlan?.hash;
  assert.equal(c.live().filter((p) => c.hashOf(p) === hash).length, wantNew, 'pods of the new revision');
  const p = c.ds.status?.conditions?.find((x) => x.type === 'Progressing');
  assert.equal(`${p?.status}/${p?.reason}`, progressing);
  return p;
}

describe('rollingUpdate.selector {} selects every node', () => {
  // Kruise reads an empty LabelSelector as "everything" (metav1.LabelSelectorAsSelector -> labels.Everything()).
  const rows: { name: string; rollingUpdate: Record<string, unknown>; wantNew: number; progressing: string }[] = [
    {
      name: 'selector {} alone',
      rollingUpdate: { maxUnavailable: 2, selector: {} },
      wantNew: 5,
      progressing: 'True/RolloutComplete',
    },
    {
      name: 'selector {} + partition 2',
      rollingUpdate: { maxUnavailable: 2, selector: {}, partition: 2 },
      wantNew: 3,
      progressing: 'True/PartitionReached',
    },
    {
      name: 'selector {} + surge',
      rollingUpdate: { maxUnavailable: 0, maxSurge: 1, selector: {} },
      wantNew: 5,
      progressing: 'True/RolloutComplete',
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: row.rollingUpdate });
      const c = new FakeCluster(ds, addNodes(5));
      c.sync();
      c.markReady();
      c.sync();
      c.setImage('v2');
      for (let i = 0; i < 12; i++) {
        c.sync();
        c.markReady();
      }
      assertRolledOut(c, row.wantNew, row.progressing);
      assert.equal(c.live().length, 5, 'one pod per node');
    });
  }
});

describe('selector + partition: the Progressing message and an event say when the partition holds every selected node', () => {
  const reason = 'PartitionHoldsSelectedNodes';
  const rows: {
    name: string;
    nodes: number;
    /** Node indices labelled canary. */
    canary: number[];
    rollingUpdate: Record<string, unknown>;
    /** Raise the partition to this after the rollout settled (same template). */
    thenPartition?: number;
    /** Nodes on the new revision at the end. */
    wantNew: number;
    /** Expected hold text in the Progressing message and the one event; undefined: neither. */
    hold?: string;
    progressing: string;
  }[] = [
    {
      name: 'partition 5 >= 3 selected of 10: nothing moves, said with the numbers',
      nodes: 10,
      canary: [2, 5, 7],
      rollingUpdate: { partition: 5 },
      wantNew: 0,
      hold: 'partition 5 keeps all 3 nodes selected by rollingUpdate.selector on the old revision; Kruise counts the partition across all 10 nodes',
      progressing: 'True/PartitionReached',
    },
    {
      name: 'partition 3 = 3 selected',
      nodes: 6,
      canary: [1, 3, 4],
      rollingUpdate: { partition: 3 },
      wantNew: 0,
      hold: 'partition 3 keeps all 3 nodes selected by rollingUpdate.selector on the old revision; Kruise counts the partition across all 6 nodes',
      progressing: 'True/PartitionReached',
    },
    {
      name: 'one selected node held',
      nodes: 4,
      canary: [0],
      rollingUpdate: { partition: 1 },
      wantNew: 0,
      hold: 'partition 1 keeps the 1 node selected by rollingUpdate.selector on the old revision; Kruise counts the partition across all 4 nodes',
      progressing: 'True/PartitionReached',
    },
    {
      name: 'partition 2 < 3 selected: one node updated, no hold',
      nodes: 10,
      canary: [2, 5, 7],
      rollingUpdate: { partition: 2 },
      wantNew: 1,
      progressing: 'True/PartitionReached',
    },
    {
      name: 'partition raised over the selected nodes after 2 of 3 were updated: the one left is held',
      nodes: 6,
      canary: [1, 3, 4],
      rollingUpdate: { partition: 1 },
      thenPartition: 3,
      wantNew: 2,
      hold: 'partition 3 keeps the 1 of 3 nodes selected by rollingUpdate.selector that are not updated yet on the old revision; Kruise counts the partition across all 6 nodes',
      progressing: 'True/PartitionReached',
    },
    {
      name: 'no selector: a plain partition is not reported',
      nodes: 4,
      canary: [],
      rollingUpdate: { partition: 4, noSelector: true },
      wantNew: 0,
      progressing: 'True/PartitionReached',
    },
    {
      name: 'paused: the pause is the reason, not the partition',
      nodes: 4,
      canary: [0],
      rollingUpdate: { partition: 2, paused: true },
      wantNew: 0,
      progressing: 'Unknown/Paused',
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const nodes = Array.from({ length: row.nodes }, (_, i) =>
        newNode(`node-${i}`, row.canary.includes(i) ? { canary: 'true' } : {}),
      );
      const { noSelector, ...ru } = row.rollingUpdate;
      const ds = newDaemonSet({
        strategy: 'RollingUpdate',
        rollingUpdate: {
          maxUnavailable: 1,
          ...ru,
          ...(noSelector ? {} : { selector: { matchLabels: { canary: 'true' } } }),
        },
      });
      const c = new FakeCluster(ds, nodes);
      const events: string[] = [];
      const run = (n: number) => {
        for (let i = 0; i < n; i++) {
          const plans = syncOnce(c).plans;
          for (const p of plans)
            for (const e of p.events) if (e.reason === reason) events.push(`${e.type}: ${e.message}`);
          c.markReady();
        }
      };
      run(2);
      c.setImage('v2');
      run(10);
      if (row.thenPartition !== undefined) {
        const to = row.thenPartition;
        c.updateSpec((d) => {
          d.spec.updateStrategy!.rollingUpdate!.partition = to;
        });
        run(5);
      }
      const p = assertRolledOut(c, row.wantNew, row.progressing);
      if (row.hold) {
        assert.ok(p?.message?.endsWith(`; ${row.hold}`), `Progressing message says it: ${p?.message}`);
        assert.deepEqual(events, [`Normal: ${row.hold}`], 'one Normal event, not one per sync');
      } else {
        assert.ok(!p?.message?.includes('keeps'), `no hold in the message: ${p?.message}`);
        assert.deepEqual(events, [], 'no event');
      }
    });
  }
});

describe('rollingUpdate.paused', () => {
  test('no pod replaced for the update, but new nodes and failed pods still handled, status current', () => {
    const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%', paused: true } });
    const c = new FakeCluster(ds, addNodes(3));
    c.sync();
    c.markReady();
    c.setImage('v2');
    expectSyncDaemonSets(c, 0, 0, 'paused');
    c.nodes = [...c.nodes, newNode('node-9')];
    const [p] = expectSyncDaemonSets(c, 1, 0, 'new node filled');
    assert.equal(p?.creates[0]?.revisionHash, p?.hash, 'with the new revision');
    c.pods = c.pods.map((x) => (x.spec.nodeName === 'node-0' ? { ...x, status: { ...x.status, phase: 'Failed' } } : x));
    expectSyncDaemonSets(c, 0, 1, 'failed pod deleted');
    expectSyncDaemonSets(c, 1, 0, 'and replaced');
    assert.equal(c.ds.status?.desiredNumberScheduled, 4);
    assert.equal(c.ds.status?.updatedNumberScheduled, 2);
  });
});

describe('rollout frozen (annotation advanced-daemonset.io/rollout-frozen, as ExtendedDaemonSet)', () => {
  test('no pod created (new node), deleted (failed pod, template change) or updated in place; status current; one event', () => {
    const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } });
    const c = new FakeCluster(ds, addNodes(3));
    c.sync();
    c.markReady();
    c.ds.metadata.annotations = { ...c.ds.metadata.annotations, 'advanced-daemonset.io/rollout-frozen': 'true' };
    const [first] = expectSyncDaemonSets(c, 0, 0, 'frozen');
    assert.equal(first?.stage, 'Frozen');
    assert.deepEqual(
      first?.events.map((e) => [e.type, e.reason]),
      [['Normal', 'RolloutFrozen']],
    );
    const progressing = (d: DaemonSet) => d.status?.conditions?.find((x) => x.type === 'Progressing');
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['Unknown', 'RolloutFrozen']);
    assert.match(
      progressing(c.ds)?.message ?? '',
      /rollout frozen by annotation advanced-daemonset.io\/rollout-frozen=true/,
    );
    c.setImage('v2');
    c.nodes = [...c.nodes, newNode('node-9')];
    c.pods = c.pods.map((x) => (x.spec.nodeName === 'node-0' ? { ...x, status: { ...x.status, phase: 'Failed' } } : x));
    const [p] = expectSyncDaemonSets(c, 0, 0, 'still frozen: new image, new node, failed pod');
    assert.deepEqual(p?.inPlaceUpdates, []);
    assert.deepEqual(p?.events, [], 'said once');
    assert.equal(c.ds.status?.observedGeneration, c.ds.metadata.generation, 'the new generation is observed');
    assert.equal(c.ds.status?.desiredNumberScheduled, 4, 'status follows the nodes');
    // Unfrozen: everything waiting happens.
    delete c.ds.metadata.annotations!['advanced-daemonset.io/rollout-frozen'];
    expectSyncDaemonSets(c, 1, 1, 'the failed pod deleted, the new node filled');
    assert.notEqual(progressing(c.ds)?.reason, 'RolloutFrozen');
  });

  test('frozen beats paused; "false" or another value does not freeze', () => {
    for (const [value, frozen] of [
      ['true', true],
      ['false', false],
      ['yes', false],
    ] as const) {
      const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { paused: true } });
      ds.metadata.annotations = { 'advanced-daemonset.io/rollout-frozen': value };
      const p = plan(ds, addNodes(2));
      assert.equal(
        p.creates.length,
        frozen ? 0 : 2,
        `${value}: a paused DaemonSet still fills new nodes unless frozen`,
      );
      assert.equal(p.stage === 'Frozen', frozen, value);
    }
  });
});

describe('lifecycle.preDelete', () => {
  test('a hooked pod is labelled PreparingDelete (KruisePodReady False with markPodNotReady) and deleted once released', () => {
    const ds = newDaemonSet({
      strategy: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1 },
      lifecycle: { preDelete: { labelsHandler: { 'my-pre-delete': 'true' }, markPodNotReady: true } },
    });
    ds.spec.template.metadata = { labels: { ...ds.spec.template.metadata?.labels, 'my-pre-delete': 'true' } };
    const c = new FakeCluster(ds, addNodes(3));
    c.sync();
    c.sync();
    c.markReady();
    c.setImage('v2');
    const p = c.sync();
    assert.equal(p.deletes.length, 0);
    assert.deepEqual(p.podPatches.map((x) => x.reason).sort(), ['MarkPodNotReady', 'PreparingDelete']);
    const held = c.pods.filter((x) => x.metadata.labels?.['lifecycle.apps.kruise.io/state'] === 'PreparingDelete');
    assert.equal(held.length, 1);
    assert.equal(held[0]?.status?.conditions?.find((x) => x.type === 'KruisePodReady')?.status, 'False');
    for (let i = 0; i < 3; i++) expectSyncDaemonSets(c, 0, 0, 'still hooked: nothing else moves');
    c.pods = c.pods.map((x) =>
      x === held[0]
        ? { ...x, metadata: { ...x.metadata, labels: { ...x.metadata.labels, 'my-pre-delete': 'false' } } }
        : x,
    );
    const [released] = expectSyncDaemonSets(c, 0, 1);
    assert.equal(released?.deletes[0]?.podName, held[0]?.metadata.name);
  });

  test('finalizer hook holds a pod on a node that no longer qualifies', () => {
    const ds = newDaemonSet({
      lifecycle: { preDelete: { finalizersHandler: ['example.com/hook'] } },
      templateSpec: { nodeSelector: { a: 'b' } },
    });
    const pod = newPod(ds, 'node-0');
    pod.metadata.finalizers = ['example.com/hook'];
    const p = plan(ds, addNodes(1), [pod]);
    assert.deepEqual([p.deletes.length, p.podPatches.map((x) => x.reason)], [0, ['PreparingDelete']]);
  });
});

describe('afterManage (creates rejected, e.g. by a quota)', () => {
  test('the rolling update is still planned for when every manage request fails', () => {
    const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } });
    // node-0 never gets its pod (quota); node-1..3 run old ready pods.
    const pods = ['node-1', 'node-2', 'node-3'].map((n) => newPod(ds, n, { hash: 'old', ready: true }));
    const p = plan(ds, addNodes(4), pods);
    assert.equal(p.stage, 'Managed');
    assert.deepEqual(
      p.creates.map((c) => c.nodeName),
      ['node-0'],
    );
    assert.equal(p.status?.observedGeneration, 0);
    assert.equal(p.afterManage?.deletes.length, 1, 'maxUnavailable 2 minus the empty node');
    assert.equal(p.afterManage?.status.observedGeneration, 1);
  });
});

describe('afterManage leaves out the nodes manage acts on', () => {
  // afterManage is planned on the snapshot before manage; the executor runs it after manage's requests once the
  // expectations are satisfied. Rows: what each node holds, the strategy, and the creates and deletes per node of
  // manage and afterManage together (what the executor would send).
  type Row = {
    name: string;
    rollingUpdate: Record<string, unknown>;
    pods: { node: string; hash: 'cur' | 'old'; ready?: boolean; phase?: 'Failed' }[];
    wantManage: { creates: string[]; deletes: string[] };
    wantAfter: { creates: string[]; deletes: string[] };
  };
  const rows: Row[] = [
    {
      name: 'surge: the failed old pod is replaced by manage alone, no second (surge) pod on its node',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
      pods: [
        { node: 'node-0', hash: 'old', ready: false, phase: 'Failed' },
        { node: 'node-1', hash: 'old', ready: true },
        { node: 'node-2', hash: 'old', ready: true },
        { node: 'node-3', hash: 'cur', ready: true },
      ],
      wantManage: { creates: ['node-0'], deletes: ['node-0'] },
      wantAfter: { creates: ['node-2'], deletes: [] },
    },
    {
      name: 'no surge: the failed old pod is deleted once, not again as an unavailable old pod',
      rollingUpdate: { maxUnavailable: 1 },
      pods: [
        { node: 'node-0', hash: 'old', ready: false, phase: 'Failed' },
        { node: 'node-1', hash: 'old', ready: true },
        { node: 'node-2', hash: 'old', ready: true },
      ],
      wantManage: { creates: ['node-3'], deletes: ['node-0'] },
      wantAfter: { creates: [], deletes: [] },
    },
    {
      name: 'an excess pod deleted by manage: the rolling update leaves that node alone',
      rollingUpdate: { maxUnavailable: 2 },
      pods: [
        { node: 'node-0', hash: 'old', ready: true },
        { node: 'node-0', hash: 'old', ready: true },
        { node: 'node-1', hash: 'old', ready: true },
        { node: 'node-2', hash: 'cur', ready: true },
        { node: 'node-3', hash: 'cur', ready: true },
      ],
      wantManage: { creates: [], deletes: ['node-0'] },
      wantAfter: { creates: [], deletes: ['node-1'] },
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: row.rollingUpdate });
      const cur = plan(ds, []).hash;
      const pods = row.pods.map((p, i) =>
        newPod(ds, p.node, {
          name: `p${i}-${p.node}`,
          hash: p.hash === 'cur' ? cur : 'old',
          ...(p.ready !== undefined ? { ready: p.ready } : {}),
          ...(p.phase ? { phase: p.phase } : {}),
          created: T0 + i,
        }),
      );
      const p = plan(ds, addNodes(4), pods);
      assert.equal(p.stage, 'Managed');
      const nodesOf = (s: { creates: { nodeName: string }[]; deletes: { nodeName?: string }[] }) => ({
        creates: s.creates.map((c) => c.nodeName).sort(),
        deletes: s.deletes.map((d) => d.nodeName ?? '').sort(),
      });
      assert.deepEqual(nodesOf(p), row.wantManage, 'manage');
      assert.ok(p.afterManage, 'afterManage planned');
      assert.deepEqual(nodesOf(p.afterManage), row.wantAfter, 'afterManage');
      const creates = [...p.creates, ...p.afterManage.creates].map((c) => c.nodeName);
      assert.equal(new Set(creates).size, creates.length, `at most one create per node: ${creates}`);
      const deletes = [...p.deletes, ...p.afterManage.deletes].map((d) => d.podName);
      assert.equal(new Set(deletes).size, deletes.length, `each pod deleted once: ${deletes}`);
    });
  }
});
