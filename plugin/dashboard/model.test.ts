// Table tests of the dashboard's pure part: per-node cells (revision, state, partition and rollingUpdate.selector
// holds, canary), revision counts, DaemonSet rows, event rows, label selector strings.
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
  daemonSetRow,
  daemonSetSelector,
  eventRows,
  labelSelectorString,
  nodeMap,
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
  [c.node, c.revision, c.state, c.hold && `hold:${c.hold}`, c.canary && 'canary', c.misscheduled && 'misscheduled']
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
