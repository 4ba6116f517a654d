// Table tests of the dashboard's pure part: per-node cells (revision, state, partition, rollingUpdate.selector and
// canary holds), revision counts, DaemonSet rows, event rows, label selector strings, the per-zone breakdown, the
// revisions with their images, the canary pods' restarts and the Progressing condition.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../../src/api/types.ts';
import type { ControllerRevision, Node, Pod } from '../../src/k8s/types.ts';
import {
  T0,
  addNodes,
  newDaemonSet,
  newNode,
  newPod,
  type DaemonSetOptions,
} from '../../src/daemonset/test-fixtures.ts';
import {
  canaryPodRows,
  conditionView,
  daemonSetRow,
  daemonSetSelector,
  eventRows,
  holdCounts,
  labelSelectorString,
  MAX_GROUPS,
  nodeGroups,
  nodeLabelKeys,
  nodeMap,
  revisionRows,
  ZONE_LABEL,
  type CoreEvent,
  type NodeCell,
  type NodeMap,
} from './model.ts';

const NOW = T0 + 60_000;
const V1 = 'v1hash';
const V2 = 'v2hash';
const PREPARING_DELETE = { 'lifecycle.apps.kruise.io/state': 'PreparingDelete' };

/** A DaemonSet whose controller reports `hash` as the update revision (status.daemonSetHash). */
function ds(opts: DaemonSetOptions = {}, status: Record<string, unknown> = {}, hash = V2): DaemonSet {
  const d = newDaemonSet({ strategy: 'RollingUpdate', ...opts });
  Object.assign(d.status as object, { daemonSetHash: hash, ...status });
  return d;
}

function revision(d: DaemonSet, hash: string, number: number): ControllerRevision {
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name: `${d.metadata.name}-${hash}`,
      namespace: 'default',
      labels: { 'controller-revision-hash': hash },
      ownerReferences: [
        {
          apiVersion: 'apps.kruise.io/v1alpha1',
          kind: 'DaemonSet',
          name: 'foo',
          uid: d.metadata.uid!,
          controller: true,
        },
      ],
    },
    revision: number,
  };
}

/** One cell as a short string: "node-0 old available hold:partition canary". */
const show = (c: NodeCell) =>
  [
    c.node,
    c.revision,
    c.state,
    c.hold && `hold:${c.hold}`,
    c.canary && 'canary',
    c.misscheduled && 'misscheduled',
    c.waiting && 'waiting',
    c.setAside && `aside:${c.setAside}`,
  ]
    .filter(Boolean)
    .join(' ');

const ready = (d: DaemonSet, node: string, hash: string, extra: Parameters<typeof newPod>[2] = {}) =>
  newPod(d, node, { hash, ready: true, ...extra });

describe('nodeMap: one cell per node, with the boundaries the controller acts on', () => {
  const cases: {
    name: string;
    ds: DaemonSet;
    nodes: Node[];
    pods: (d: DaemonSet) => Pod[];
    want: string[];
    check?: (m: NodeMap) => void;
  }[] = [
    {
      name: 'a rollout without partition or selector: nothing is held, a new pod not Ready yet is unavailable',
      ds: ds(),
      nodes: addNodes(4),
      pods: (d) => [
        ready(d, 'node-0', V1),
        ready(d, 'node-1', V1),
        newPod(d, 'node-2', { hash: V2, ready: false }),
        ready(d, 'node-3', V2),
      ],
      want: ['node-0 old available', 'node-1 old available', 'node-2 new unavailable', 'node-3 new available'],
      check: (m) => {
        assert.equal(m.partition, 0);
        assert.equal(m.rolloutSelector, undefined);
        assert.equal(m.strategy, 'RollingUpdate/Standard');
        assert.deepEqual(
          { new: m.counts.new, old: m.counts.old, available: m.counts.available, unavailable: m.counts.unavailable },
          { new: 2, old: 2, available: 3, unavailable: 1 },
        );
      },
    },
    {
      name: 'partition 2 of 4 keeps the two lowest names not updated yet (Kruise updates from the highest name down)',
      ds: ds({ rollingUpdate: { partition: 2 } }),
      nodes: addNodes(4),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V1), ready(d, 'node-2', V1), ready(d, 'node-3', V2)],
      want: [
        'node-0 old available hold:partition',
        'node-1 old available hold:partition',
        'node-2 old available',
        'node-3 new available',
      ],
      check: (m) => {
        assert.equal(m.partition, 2);
        assert.equal(m.counts.heldByPartition, 2);
      },
    },
    {
      name: 'waves: each node shows its zone; the later zones wait (hold:wave); the current wave is on the map',
      ds: ds({ rollingUpdate: { maxUnavailable: 2, waves: { topologyKey: ZONE_LABEL, availableSeconds: 0 } } }),
      nodes: ['a', 'b', 'a', 'b'].map((z, i) => newNode(`node-${i}`, { [ZONE_LABEL]: z })),
      pods: (d) => [ready(d, 'node-0', V2), ready(d, 'node-1', V1), ready(d, 'node-2', V1), ready(d, 'node-3', V1)],
      want: [
        'node-0 new available',
        'node-1 old available hold:wave',
        'node-2 old available',
        'node-3 old available hold:wave',
      ],
      check: (m) => {
        assert.deepEqual(
          m.cells.map((c) => c.wave),
          ['a', 'b', 'a', 'b'],
        );
        assert.deepEqual(m.wave, { index: 1, count: 2, which: `${ZONE_LABEL}=a`, waiting: false });
        assert.equal(m.counts.heldByPartition, 0);
      },
    },
    {
      name: 'a percentage partition is resolved against the desired count (50% of 4 = 2)',
      ds: ds({ rollingUpdate: { partition: '50%' } }),
      nodes: addNodes(4),
      pods: (d) => ['node-0', 'node-1', 'node-2', 'node-3'].map((n) => ready(d, n, V1)),
      want: [
        'node-0 old available hold:partition',
        'node-1 old available hold:partition',
        'node-2 old available',
        'node-3 old available',
      ],
      check: (m) => assert.equal(m.partition, 2),
    },
    {
      name: 'rollingUpdate.selector: nodes it does not match keep the old revision (hold:selector)',
      ds: ds({ rollingUpdate: { selector: { matchLabels: { canary: 'true' } } } }),
      nodes: [
        newNode('node-0'),
        newNode('node-1'),
        newNode('node-2', { canary: 'true' }),
        newNode('node-3', { canary: 'true' }),
      ],
      pods: (d) => ['node-0', 'node-1', 'node-2', 'node-3'].map((n) => ready(d, n, V1)),
      want: [
        'node-0 old available hold:selector',
        'node-1 old available hold:selector',
        'node-2 old available',
        'node-3 old available',
      ],
      check: (m) => {
        assert.equal(m.rolloutSelector, 'canary=true');
        assert.equal(m.counts.heldBySelector, 2);
      },
    },
    {
      name: 'selector and partition: the partition counts within the selected nodes; the rest is held by the selector',
      ds: ds({
        rollingUpdate: {
          partition: 1,
          selector: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b', 'a'] }] },
        },
      }),
      nodes: [
        newNode('node-0'),
        newNode('node-1', { zone: 'a' }),
        newNode('node-2', { zone: 'a' }),
        newNode('node-3', { zone: 'b' }),
      ],
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V1), ready(d, 'node-2', V1), ready(d, 'node-3', V2)],
      want: [
        'node-0 old available hold:selector',
        'node-1 old available hold:partition',
        'node-2 old available',
        'node-3 new available',
      ],
      check: (m) => assert.equal(m.rolloutSelector, 'zone in (a,b)'),
    },
    {
      name: 'PreparingDelete (a preDelete hook holds the pod) wins over terminating; a node without a pod is missing',
      ds: ds(),
      nodes: addNodes(4),
      pods: (d) => [
        ready(d, 'node-0', V1, { labels: PREPARING_DELETE }),
        ready(d, 'node-1', V1, { deleting: true }),
        newPod(d, 'node-1', { hash: V2, ready: false }),
        ready(d, 'node-3', V2),
      ],
      want: ['node-0 old preparing-delete', 'node-1 new terminating', 'node-2 none missing', 'node-3 new available'],
      check: (m) => {
        assert.deepEqual(
          {
            preparingDelete: m.counts.preparingDelete,
            terminating: m.counts.terminating,
            missing: m.counts.missing,
            none: m.counts.none,
          },
          { preparingDelete: 1, terminating: 1, missing: 1, none: 1 },
        );
        const node1 = m.cells.find((c) => c.node === 'node-1')!;
        assert.equal(node1.pods.length, 2, 'both pods of node-1 listed');
        assert.equal(node1.hash, V2, 'the live pod gives the hash');
      },
    },
    {
      name: 'a node whose only pod is terminating shows that pod revision as none, its hash kept',
      ds: ds(),
      nodes: addNodes(1),
      pods: (d) => [ready(d, 'node-0', V1, { deleting: true })],
      want: ['node-0 none terminating'],
      check: (m) => assert.equal(m.cells[0]!.hash, V1),
    },
    {
      name: 'status.canary.nodes marks canary cells; status.canary.phase is reported',
      ds: ds({}, { canary: { phase: 'Paused', nodes: ['node-1', 'node-2'] } }),
      nodes: addNodes(3),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V2), ready(d, 'node-2', V2)],
      want: ['node-0 old available', 'node-1 new available canary', 'node-2 new available canary'],
      check: (m) => {
        assert.deepEqual(m.canary, { phase: 'Paused', nodes: 2 });
        assert.equal(m.counts.canary, 2);
      },
    },
    {
      name: 'without status.canary there is no canary',
      ds: ds(),
      nodes: addNodes(1),
      pods: (d) => [ready(d, 'node-0', V2)],
      want: ['node-0 new available'],
      check: (m) => assert.equal(m.canary, undefined),
    },
    {
      name: 'OnDelete: old pods are not held by anything (they change when deleted)',
      ds: ds({ strategy: 'OnDelete' }),
      nodes: addNodes(2),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V2)],
      want: ['node-0 old available', 'node-1 new available'],
      check: (m) => assert.equal(m.strategy, 'OnDelete'),
    },
    {
      name: 'paused: reported; the partition still draws its boundary',
      ds: ds({ rollingUpdate: { paused: true, partition: 1 } }),
      nodes: addNodes(2),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V1)],
      want: ['node-0 old available hold:partition', 'node-1 old available'],
      check: (m) => assert.equal(m.paused, true),
    },
    {
      name: 'nodes the template does not select are left off; a pod left on such a node is misscheduled',
      ds: ds({ templateSpec: { nodeSelector: { role: 'edge' } } }),
      nodes: [newNode('node-0', { role: 'edge' }), newNode('node-1'), newNode('node-2')],
      pods: (d) => [ready(d, 'node-0', V2), ready(d, 'node-1', V1)],
      want: ['node-0 new available', 'node-1 old available misscheduled'],
      check: (m) => assert.equal(m.untargeted, 1),
    },
    {
      name: 'a node carrying the readiness taint the DaemonSet clears is marked waiting',
      ds: (() => {
        const d = ds();
        d.spec.nodeReadiness = { taint: { key: 'example.com/agent-not-ready', effect: 'NoSchedule' } };
        d.spec.template.spec.tolerations = [{ key: 'example.com/agent-not-ready', operator: 'Exists' }];
        return d;
      })(),
      nodes: [newNode('node-0', {}, [{ key: 'example.com/agent-not-ready', effect: 'NoSchedule' }]), newNode('node-1')],
      pods: (d) => [newPod(d, 'node-0', { hash: V2, ready: false }), ready(d, 'node-1', V2)],
      want: ['node-0 new unavailable waiting', 'node-1 new available'],
    },
    {
      name: 'unhealthyNodes Ignore: a NotReady node still on the old revision is marked set aside',
      ds: ds({ rollingUpdate: { unhealthyNodes: 'Ignore' } }),
      nodes: [
        newNode('node-0'),
        { ...newNode('node-1'), status: { conditions: [{ type: 'Ready', status: 'False' }] } },
      ],
      pods: (d) => [ready(d, 'node-0', V2), ready(d, 'node-1', V1)],
      want: ['node-0 new available', 'node-1 old available aside:NotReady'],
    },
    {
      name: 'a pod on a node that no longer exists is shown, misscheduled',
      ds: ds(),
      nodes: addNodes(1),
      pods: (d) => [ready(d, 'node-0', V2), ready(d, 'gone', V1)],
      want: ['gone old available misscheduled', 'node-0 new available'],
    },
    {
      name: 'pods of another DaemonSet are ignored',
      ds: ds(),
      nodes: addNodes(1),
      pods: () => [ready(newDaemonSet({ name: 'other' }), 'node-0', V1)],
      want: ['node-0 none missing'],
    },
    {
      name: 'minReadySeconds: a pod Ready for less than that is unavailable',
      ds: ds({ minReadySeconds: 120 }),
      nodes: addNodes(2),
      pods: (d) => [ready(d, 'node-0', V2, { readySince: T0 - 300_000 }), ready(d, 'node-1', V2)],
      want: ['node-0 new available', 'node-1 new unavailable'],
    },
  ];

  for (const c of cases)
    test(c.name, () => {
      const m = nodeMap({ ds: c.ds, nodes: c.nodes, pods: c.pods(c.ds), revisions: [], now: NOW });
      assert.deepEqual(m.cells.map(show), c.want);
      assert.equal(m.counts.nodes, c.want.length);
      c.check?.(m);
    });
});

describe('nodeMap: revisions', () => {
  test('live pods are counted per revision, the update revision first, then by revision number', () => {
    const d = ds({}, {}, 'c3');
    const pods = [
      ready(d, 'node-0', 'a1'),
      ready(d, 'node-1', 'b2'),
      ready(d, 'node-2', 'b2'),
      ready(d, 'node-3', 'b2', { deleting: true }),
      ready(newDaemonSet({ name: 'other' }), 'node-3', 'zz'),
    ];
    const revisions = [
      revision(d, 'a1', 1),
      revision(d, 'b2', 2),
      revision(d, 'c3', 3),
      revision(newDaemonSet({ name: 'other' }), 'zz', 9),
    ];
    const m = nodeMap({ ds: d, nodes: addNodes(4), pods, revisions, now: NOW });
    assert.equal(m.updateRevision, 'c3');
    assert.deepEqual(m.revisions, [
      { hash: 'c3', number: 3, pods: 0, current: true },
      { hash: 'b2', number: 2, pods: 2, current: false },
      { hash: 'a1', number: 1, pods: 1, current: false },
    ]);
  });

  test('v1beta1 status.updateRevision is read when daemonSetHash is absent', () => {
    const d = ds({}, {}, '');
    (d.status as Record<string, unknown>).updateRevision = V2;
    const m = nodeMap({ ds: d, nodes: addNodes(1), pods: [ready(d, 'node-0', V2)], revisions: [], now: NOW });
    assert.equal(m.updateRevision, V2);
    assert.equal(m.cells[0]!.revision, 'new');
  });

  test('before the controller reported a revision, every pod is old and nothing is held', () => {
    const d = ds({ rollingUpdate: { partition: 1 } }, {}, '');
    const m = nodeMap({ ds: d, nodes: addNodes(2), pods: [ready(d, 'node-0', V1)], revisions: [], now: NOW });
    assert.deepEqual(m.cells.map(show), ['node-0 old available', 'node-1 none missing']);
  });
});

describe('nodeMap at 1,000 nodes', () => {
  test('one cell per node, computed well within a frame budget of the page refresh', () => {
    const d = ds({ rollingUpdate: { partition: 100, selector: { matchLabels: { pool: 'a' } } } });
    const nodes = Array.from({ length: 1000 }, (_, i) =>
      newNode(`node-${String(i).padStart(4, '0')}`, i % 4 ? { pool: 'a' } : {}),
    );
    const pods = nodes.map((n, i) => ready(d, n.metadata.name!, i % 3 ? V1 : V2));
    const t0 = performance.now();
    const m = nodeMap({ ds: d, nodes, pods, revisions: [], now: NOW });
    const ms = performance.now() - t0;
    assert.equal(m.cells.length, 1000);
    assert.equal(m.counts.new + m.counts.old, 1000);
    assert.equal(m.counts.heldByPartition, 100);
    assert.ok(m.counts.heldBySelector > 0);
    // Generous bound (a loaded 2-core machine); measured at a few ms.
    assert.ok(ms < 1000, `nodeMap of 1,000 nodes took ${ms.toFixed(0)} ms`);
    // What goes down the wire: compact enough to send on every change.
    assert.ok(JSON.stringify(m).length < 200_000, `snapshot of ${JSON.stringify(m).length} bytes`);
  });
});

describe('daemonSetRow', () => {
  const cases: { name: string; ds: DaemonSet; want: Partial<ReturnType<typeof daemonSetRow>> }[] = [
    {
      name: 'a rollout in progress: counters from the status, not complete',
      ds: ds(
        { rollingUpdate: { partition: 2 } },
        {
          desiredNumberScheduled: 5,
          currentNumberScheduled: 5,
          updatedNumberScheduled: 2,
          numberReady: 4,
          numberAvailable: 4,
          numberUnavailable: 1,
          observedGeneration: 1,
        },
      ),
      want: {
        desired: 5,
        updated: 2,
        ready: 4,
        available: 4,
        unavailable: 1,
        partition: '2',
        observed: true,
        complete: false,
        canary: '-',
        updateRevision: V2,
      },
    },
    {
      name: 'complete: observed, every desired node updated and available',
      ds: ds({}, { desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3, observedGeneration: 1 }),
      want: { partition: '-', complete: true, paused: false },
    },
    {
      name: 'not observed yet: not complete whatever the counters say',
      ds: ds({}, { desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3, observedGeneration: 0 }),
      want: { observed: false, complete: false },
    },
    {
      name: 'canary phase and paused are shown',
      ds: ds({ rollingUpdate: { paused: true, partition: '10%' } }, { canary: { phase: 'Promoting', nodes: [] } }),
      want: { canary: 'Promoting', paused: true, partition: '10%' },
    },
    {
      name: 'OnDelete has no partition',
      ds: ds({ strategy: 'OnDelete' }),
      want: { strategy: 'OnDelete', partition: '-' },
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const row = daemonSetRow(c.ds);
      assert.deepEqual(Object.fromEntries(Object.keys(c.want).map((k) => [k, row[k as keyof typeof row]])), c.want);
      assert.equal(row.name, 'foo');
      assert.equal(row.namespace, 'default');
    });
});

describe('eventRows', () => {
  const d = ds();
  const ev = (reason: string, fields: Partial<CoreEvent>, uid = d.metadata.uid): CoreEvent => ({
    metadata: { name: reason, namespace: 'default' },
    involvedObject: { kind: 'DaemonSet', name: 'foo', uid },
    type: 'Normal',
    reason,
    message: `${reason} message`,
    ...fields,
  });
  const cases: { name: string; events: CoreEvent[]; want: string[] }[] = [
    {
      name: 'newest first, by series, lastTimestamp, eventTime or creation time',
      events: [
        ev('A', { lastTimestamp: '2024-01-01T00:00:10Z', count: 3 }),
        ev('B', { eventTime: '2024-01-01T00:00:20Z', series: { count: 7, lastObservedTime: '2024-01-01T00:00:30Z' } }),
        ev('C', { metadata: { name: 'c', creationTimestamp: '2024-01-01T00:00:20Z' } }),
      ],
      want: ['B x7 @30', 'C x1 @20', 'A x3 @10'],
    },
    {
      name: 'events of other objects (another uid) are left out',
      events: [
        ev('A', { lastTimestamp: '2024-01-01T00:00:10Z' }),
        ev('B', { lastTimestamp: '2024-01-01T00:00:11Z' }, 'other-uid'),
      ],
      want: ['A x1 @10'],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      assert.deepEqual(
        eventRows(c.events, d).map((e) => `${e.reason} x${e.count} @${(e.last - T0) / 1000}`),
        c.want,
      );
    });

  test('at most `limit` rows', () => {
    const many = Array.from({ length: 20 }, (_, i) =>
      ev(`R${i}`, { lastTimestamp: new Date(T0 + i * 1000).toISOString() }),
    );
    assert.deepEqual(
      eventRows(many, d, 3).map((e) => e.reason),
      ['R19', 'R18', 'R17'],
    );
  });
});

describe('labelSelectorString', () => {
  const cases: { name: string; selector: Parameters<typeof labelSelectorString>[0]; want: string }[] = [
    { name: 'empty', selector: {}, want: '<none>' },
    { name: 'matchLabels', selector: { matchLabels: { a: 'b', c: 'd' } }, want: 'a=b,c=d' },
    {
      name: 'every operator (values sorted)',
      selector: {
        matchExpressions: [
          { key: 'x', operator: 'In', values: ['2', '1'] },
          { key: 'y', operator: 'NotIn', values: ['z'] },
          { key: 'e', operator: 'Exists' },
          { key: 'n', operator: 'DoesNotExist' },
        ],
      },
      want: 'x in (1,2),y notin (z),e,!n',
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(labelSelectorString(c.selector), c.want));

  test("daemonSetSelector is the DaemonSet's spec.selector", () => {
    assert.equal(daemonSetSelector(ds()), 'name=simple-daemon,type=production');
  });
});

describe('nodeMap: a canary of the update revision holds the other nodes', () => {
  const CANARY_SPEC = { canary: { nodes: 1 } };
  const status = (phase: string) => ({
    canary: { revision: V2, stableRevision: V1, nodes: ['node-2'], phase },
  });
  const cases: { name: string; ds: DaemonSet; pods: (d: DaemonSet) => Pod[]; want: string[] }[] = [
    {
      name: 'Observing: the canary node may update, the others keep the stable revision (hold:canary)',
      ds: ds({ rollingUpdate: CANARY_SPEC }, status('Observing')),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V1), ready(d, 'node-2', V1)],
      want: ['node-0 old available hold:canary', 'node-1 old available hold:canary', 'node-2 old available canary'],
    },
    {
      name: 'Paused: the canary node too, while it has not been updated',
      ds: ds({ rollingUpdate: CANARY_SPEC }, status('Paused')),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-2', V1)],
      want: ['node-0 old available hold:canary', 'node-1 none missing', 'node-2 old available hold:canary canary'],
    },
    {
      name: 'Failed: every old node is held; the canary node on the new revision goes back, not held',
      ds: ds({ rollingUpdate: { ...CANARY_SPEC, partition: 1 } }, status('Failed')),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V1), ready(d, 'node-2', V2)],
      want: ['node-0 old available hold:canary', 'node-1 old available hold:canary', 'node-2 new available canary'],
    },
    {
      name: 'Promoted: partition and selector again',
      ds: ds({ rollingUpdate: { ...CANARY_SPEC, partition: 1 } }, status('Promoted')),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V1), ready(d, 'node-2', V2)],
      want: ['node-0 old available hold:partition', 'node-1 old available', 'node-2 new available canary'],
    },
    {
      name: 'a canary of an earlier revision holds nothing',
      ds: ds({ rollingUpdate: CANARY_SPEC }, { canary: { revision: 'old', nodes: ['node-2'], phase: 'Failed' } }),
      pods: (d) => [ready(d, 'node-0', V1), ready(d, 'node-1', V1), ready(d, 'node-2', V1)],
      want: ['node-0 old available', 'node-1 old available', 'node-2 old available canary'],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const m = nodeMap({ ds: c.ds, nodes: addNodes(3), pods: c.pods(c.ds), revisions: [], now: NOW });
      assert.deepEqual(m.cells.map(show), c.want);
      assert.equal(m.counts.heldByCanary, c.want.filter((w) => w.includes('hold:canary')).length);
    });

  test('holdCounts feeds the row: the allowed target of an Observing canary is its node', () => {
    const d = ds(
      { rollingUpdate: CANARY_SPEC },
      { ...status('Observing'), desiredNumberScheduled: 3, updatedNumberScheduled: 0, observedGeneration: 1 },
    );
    const m = nodeMap({
      ds: d,
      nodes: addNodes(3),
      pods: ['node-0', 'node-1', 'node-2'].map((n) => ready(d, n, V1)),
      revisions: [],
      now: NOW,
    });
    assert.deepEqual(holdCounts(m), { heldByPartition: 0, heldBySelector: 0, heldByCanary: 2 });
    assert.equal(daemonSetRow(d, holdCounts(m)).rollout.progress.text, '0 / 1 allowed (of 3)');
  });
});

describe('nodeGroups: the per-zone breakdown', () => {
  const zone = (z: string, extra: Record<string, string> = {}) => ({ [ZONE_LABEL]: z, ...extra });
  const nodes = [
    newNode('node-0', zone('a', { pool: 'x' })),
    newNode('node-1', zone('a')),
    newNode('node-2', zone('b', { pool: 'x' })),
    newNode('node-3', zone('b')),
    newNode('node-4'),
  ];
  const d = ds({ rollingUpdate: { partition: 1 } });
  const pods = [
    ready(d, 'node-0', V1),
    ready(d, 'node-1', V1),
    ready(d, 'node-2', V2),
    newPod(d, 'node-3', { hash: V2, ready: false }),
  ];
  const map = nodeMap({ ds: d, nodes, pods, revisions: [], now: NOW });
  const rows = (key?: string) =>
    nodeGroups(map, nodes, key).rows.map(
      (r) =>
        `${r.value || '(none)'}: ${r.nodes} nodes, ${r.new} new, ${r.old} old, ${r.none} none, ${r.unavailable} unavailable, ${r.held} held`,
    );

  test('by zone (the default): updated, old, without a pod, unavailable and held per zone; no label last', () => {
    assert.deepEqual(rows(), [
      'a: 2 nodes, 0 new, 2 old, 0 none, 0 unavailable, 1 held',
      'b: 2 nodes, 2 new, 0 old, 0 none, 1 unavailable, 0 held',
      '(none): 1 nodes, 0 new, 0 old, 1 none, 1 unavailable, 0 held',
    ]);
  });

  test('by any other node label', () => {
    assert.deepEqual(rows('pool'), [
      'x: 2 nodes, 1 new, 1 old, 0 none, 0 unavailable, 1 held',
      '(none): 3 nodes, 1 new, 1 old, 1 none, 2 unavailable, 0 held',
    ]);
  });

  test('the keys to pick from: the zone first, then every label of the nodes, sorted', () => {
    assert.deepEqual(nodeLabelKeys(nodes), [ZONE_LABEL, 'pool']);
    assert.deepEqual(nodeLabelKeys([newNode('n', { b: '1', a: '2' })]), [ZONE_LABEL, 'a', 'b']);
  });

  test(`a label with a value per node: ${MAX_GROUPS - 1} groups listed, the rest folded into one`, () => {
    const many = Array.from({ length: 120 }, (_, i) =>
      newNode(`node-${String(i).padStart(3, '0')}`, { host: `h${i}` }),
    );
    const dd = ds();
    const m = nodeMap({
      ds: dd,
      nodes: many,
      pods: many.map((n) => ready(dd, n.metadata.name!, V2)),
      revisions: [],
      now: NOW,
    });
    const g = nodeGroups(m, many, 'host');
    assert.equal(g.rows.length, MAX_GROUPS - 1);
    assert.equal(g.folded, 120 - (MAX_GROUPS - 1));
    assert.equal(g.other!.nodes, g.folded);
    assert.equal(g.rows.reduce((n, r) => n + r.nodes, 0) + g.other!.nodes, 120);
  });
});

describe('revisionRows: what `kubectl ads history` reads, with images', () => {
  test('newest first; the update revision, the undo target (previous), the canary stable one; pods per revision', () => {
    const d = ds(
      { rollingUpdate: { canary: { nodes: 1 } } },
      { canary: { revision: 'c3', stableRevision: 'b2', nodes: ['node-0'], phase: 'Observing' } },
      'c3',
    );
    const withImage = (r: ControllerRevision, images: Record<string, string>, init?: Record<string, string>) => {
      const entries = (m: Record<string, string>) => Object.entries(m).map(([name, image]) => ({ name, image }));
      r.data = {
        spec: {
          template: {
            $patch: 'replace',
            spec: { containers: entries(images), ...(init ? { initContainers: entries(init) } : {}) },
          },
        },
      };
      return r;
    };
    const revisions = [
      withImage(revision(d, 'a1', 1), { app: 'app:1' }),
      withImage(revision(d, 'b2', 2), { app: 'app:2', sidecar: 'side:1' }),
      withImage(revision(d, 'c3', 3), { app: 'app:3' }, { init: 'init:1' }),
      withImage(revision(newDaemonSet({ name: 'other' }), 'zz', 9), { x: 'x' }),
    ];
    revisions[1]!.metadata.annotations = { 'kubernetes.io/change-cause': 'kubectl set image' };
    const pods = [ready(d, 'node-0', 'c3'), ready(d, 'node-1', 'b2'), ready(d, 'node-2', 'b2')];
    const m = nodeMap({ ds: d, nodes: addNodes(3), pods, revisions, now: NOW });
    assert.deepEqual(revisionRows(d, revisions, m), [
      {
        number: 3,
        hash: 'c3',
        images: ['init=init:1', 'app=app:3'],
        changeCause: '',
        update: true,
        undoTarget: false,
        stable: false,
        pods: 1,
      },
      {
        number: 2,
        hash: 'b2',
        images: ['app=app:2', 'sidecar=side:1'],
        changeCause: 'kubectl set image',
        update: false,
        undoTarget: true,
        stable: true,
        pods: 2,
      },
      {
        number: 1,
        hash: 'a1',
        images: ['app=app:1'],
        changeCause: '',
        update: false,
        undoTarget: false,
        stable: false,
        pods: 0,
      },
    ]);
  });

  test('one revision: nothing to undo to', () => {
    const d = ds();
    assert.deepEqual(
      revisionRows(d, [revision(d, V2, 1)]).map((r) => r.undoTarget),
      [false],
    );
  });
});

describe('canaryPodRows: the canary pods and their restarts', () => {
  const restarting = (p: Pod, counts: number[], reason?: string) => {
    p.status!.containerStatuses = counts.map((n, i) => ({
      name: `c${i}`,
      image: 'x',
      imageID: '',
      ready: false,
      restartCount: n,
      ...(reason && i === 0 ? { state: { waiting: { reason } } } : {}),
    })) as never;
    return p;
  };
  const CANARY_SPEC = { rollingUpdate: { canary: { nodes: 2 } } };
  const status = { canary: { revision: V2, stableRevision: V1, nodes: ['node-1', 'node-2'], phase: 'Observing' } };

  test('pods on status.canary.nodes, by node: restarts summed over containers, the waiting reason', () => {
    const d = ds(CANARY_SPEC, status);
    const pods = [
      ready(d, 'node-0', V1),
      restarting(newPod(d, 'node-2', { hash: V2, ready: false, name: 'p2' }), [3, 2], 'CrashLoopBackOff'),
      restarting(ready(d, 'node-1', V2, { name: 'p1' }), [0]),
      ready(d, 'node-1', V1, { name: 'p1-old', deleting: true }),
      ready(newDaemonSet({ name: 'other' }), 'node-1', V2, { name: 'not-ours' }),
    ];
    assert.deepEqual(canaryPodRows(d, pods), [
      { pod: 'p1', node: 'node-1', revision: 'new', ready: true, restarts: 0, reason: '' },
      { pod: 'p2', node: 'node-2', revision: 'new', ready: false, restarts: 5, reason: 'CrashLoopBackOff' },
    ]);
  });

  test('no canary in the spec, or a canary of an older revision: none', () => {
    assert.deepEqual(canaryPodRows(ds({}, status), [ready(ds(), 'node-1', V2)]), []);
    const older = ds(CANARY_SPEC, { canary: { ...status.canary, revision: 'v0' } });
    assert.deepEqual(canaryPodRows(older, [ready(older, 'node-1', V2)]), []);
  });
});

describe('conditionView', () => {
  test('the Progressing condition as shown; undefined without one', () => {
    const d = ds(
      {},
      {
        conditions: [
          { type: 'Available', status: 'True', reason: 'AllNodesAvailable', message: '' },
          {
            type: 'Progressing',
            status: 'True',
            reason: 'PartitionReached',
            message: '2 of 4 nodes updated',
            lastTransitionTime: '2024-01-01T00:00:30Z',
          },
        ],
      },
    );
    assert.deepEqual(conditionView(d), {
      type: 'Progressing',
      status: 'True',
      reason: 'PartitionReached',
      message: '2 of 4 nodes updated',
      lastTransitionTime: T0 + 30_000,
    });
    assert.equal(conditionView(ds()), undefined);
  });
});
