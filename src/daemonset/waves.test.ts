// Tables for rollingUpdate.priorityStrategy and rollingUpdate.waves (waves.ts): the priority of a node from its labels,
// and whole rollouts on the in-memory cluster (test-fixtures.ts) that record when each node got the new revision.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { UpdatePriorityStrategy } from '../api/types.ts';
import type { Node } from '../k8s/types.ts';
import { expectSyncDaemonSets, FakeCluster, newDaemonSet, newNode } from './test-fixtures.ts';
import { comparePriority, parseWaveMessage, priorityOfLabels } from './waves.ts';
import { CONDITION_PROGRESSING } from './status.ts';

const ZONE = 'topology.kubernetes.io/zone';

/** Six nodes, two per zone (a, b, c); names interleave the zones so that name order is not zone order. */
function zonedNodes(extra: Record<string, Record<string, string>> = {}): Node[] {
  return ['n1:a', 'n2:b', 'n3:c', 'n4:a', 'n5:b', 'n6:c'].map((x) => {
    const [name, zone] = x.split(':') as [string, string];
    return newNode(name, { [ZONE]: zone, ...(extra[name] ?? {}) });
  });
}

function cluster(rollingUpdate: Record<string, unknown>, nodes: Node[]): FakeCluster {
  const c = new FakeCluster(newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate }), nodes);
  c.sync();
  c.markReady();
  return c;
}

interface Rollout {
  /** Nodes in the order they got a pod of the new revision. */
  order: string[];
  /** When each node got it (ms after the template change). */
  at: Map<string, number>;
  c: FakeCluster;
}

/** Change the image, then sync, mark new pods Ready and advance the clock by `stepMs`, `steps` times. */
function rollout(c: FakeCluster, steps = 40, stepMs = 1000, each?: (c: FakeCluster) => void): Rollout {
  c.setImage('v2');
  const start = c.now;
  const order: string[] = [];
  const at = new Map<string, number>();
  for (let i = 0; i < steps; i++) {
    c.sync();
    c.markReady();
    for (const p of c.live()) {
      const n = p.spec.nodeName ?? '';
      if (c.hashOf(p) === c.lastPlan?.hash && !at.has(n)) {
        at.set(n, c.now - start);
        order.push(n);
      }
    }
    each?.(c);
    c.now += stepMs;
  }
  return { order, at, c };
}

const progressing = (c: FakeCluster) => c.ds.status?.conditions?.find((x) => x.type === CONDITION_PROGRESSING);

describe('priorityOfLabels and comparePriority (Kruise priority_sort.go on node labels)', () => {
  const sorted = (ps: UpdatePriorityStrategy, nodes: Record<string, Record<string, string>>) =>
    Object.keys(nodes).sort(
      (a, b) => comparePriority(priorityOfLabels(ps, nodes[a]), priorityOfLabels(ps, nodes[b])) || (a < b ? 1 : -1),
    );
  const cases: { name: string; ps: UpdatePriorityStrategy; nodes: Record<string, Record<string, string>>; want: string[] }[] = [
    {
      name: 'weight: the sum of the matching terms, heavier first; ties in descending name order',
      ps: {
        weightPriority: [
          { weight: 50, matchSelector: { matchLabels: { pool: 'gpu' } } },
          { weight: 30, matchSelector: { matchExpressions: [{ key: ZONE, operator: 'In', values: ['b'] }] } },
        ],
      },
      nodes: { w: { pool: 'gpu', [ZONE]: 'b' }, x: { pool: 'gpu' }, y: { [ZONE]: 'b' }, z: {}, a: {} },
      want: ['w', 'x', 'y', 'z', 'a'],
    },
    {
      name: 'order, numeric: the trailing integer, higher first (10 > 9 > 2); no key last',
      ps: { orderPriority: [{ orderedKey: 'rack' }] },
      nodes: { a: { rack: 'r-2' }, b: { rack: '10' }, c: { rack: 'r9' }, d: {} },
      want: ['b', 'c', 'a', 'd'],
    },
    {
      name: 'order, text: without digits, the higher value first',
      ps: { orderPriority: [{ orderedKey: ZONE }] },
      nodes: { a: { [ZONE]: 'alpha' }, b: { [ZONE]: 'gamma' }, c: { [ZONE]: 'beta' } },
      want: ['b', 'c', 'a'],
    },
    {
      name: 'order: the first key a node has decides; nodes with the first key before those with the second',
      ps: { orderPriority: [{ orderedKey: 'tier' }, { orderedKey: 'rack' }] },
      nodes: { a: { rack: '9' }, b: { tier: '1', rack: '1' }, c: { tier: '2' }, d: {} },
      want: ['c', 'b', 'a', 'd'],
    },
  ]; // prettier-ignore
  for (const c of cases) test(c.name, () => assert.deepEqual(sorted(c.ps, c.nodes), c.want));
});

describe('rollingUpdate.priorityStrategy: the update order', () => {
  test('weightPriority: heavier nodes first, then descending name', () => {
    const nodes = [newNode('n1', { pool: 'gpu' }), newNode('n2'), newNode('n3'), newNode('n4', { pool: 'edge' })];
    const c = cluster(
      {
        priorityStrategy: {
          weightPriority: [
            { weight: 80, matchSelector: { matchLabels: { pool: 'gpu' } } },
            { weight: 20, matchSelector: { matchLabels: { pool: 'edge' } } },
          ],
        },
      },
      nodes,
    );
    assert.deepEqual(rollout(c).order, ['n1', 'n4', 'n3', 'n2']);
  });
  test('orderPriority: by the rack number, higher first', () => {
    const nodes = ['3', '12', '1', '2'].map((r, i) => newNode(`n${i}`, { rack: `rack-${r}` }));
    const c = cluster({ priorityStrategy: { orderPriority: [{ orderedKey: 'rack' }] } }, nodes);
    assert.deepEqual(rollout(c).order, ['n1', 'n0', 'n3', 'n2']);
  });
  test('partition keeps the lowest-priority nodes old', () => {
    const nodes = ['3', '12', '1', '2'].map((r, i) => newNode(`n${i}`, { rack: `rack-${r}` }));
    const c = cluster({ partition: 2, priorityStrategy: { orderPriority: [{ orderedKey: 'rack' }] } }, nodes);
    const r = rollout(c);
    assert.deepEqual(r.order, ['n1', 'n0']);
    assert.equal(progressing(r.c)?.reason, 'PartitionReached');
  });
});

describe('rollingUpdate.waves', () => {
  const waves = (availableSeconds: number, extra: Record<string, unknown> = {}) => ({
    maxUnavailable: 2,
    waves: { topologyKey: ZONE, availableSeconds },
    ...extra,
  });
  const zoneOf = (n: string) => ({ n1: 'a', n4: 'a', n2: 'b', n5: 'b', n3: 'c', n6: 'c' })[n];

  test('3 zones, availableSeconds 60: a, then b once a has been available 60 s, then c', () => {
    const seen: string[] = [];
    const r = rollout(cluster(waves(60), zonedNodes()), 200, 1000, (c) => {
      const m = parseWaveMessage(progressing(c)?.message);
      const s = m ? `${m.index}/${m.count} ${m.which}` : '';
      if (seen.at(-1) !== s) seen.push(s);
    });
    assert.deepEqual(r.order.map(zoneOf), ['a', 'a', 'b', 'b', 'c', 'c']);
    const last = (z: string) => Math.max(...[...r.at].filter(([n]) => zoneOf(n) === z).map(([, t]) => t));
    const first = (z: string) => Math.min(...[...r.at].filter(([n]) => zoneOf(n) === z).map(([, t]) => t));
    // New pods are marked Ready in the sync that sees them created: a zone is done 60 s after its last one.
    for (const [prev, next] of [
      ['a', 'b'],
      ['b', 'c'],
    ] as const) {
      const wait = first(next) - last(prev);
      assert.ok(wait >= 60_000 && wait <= 63_000, `${next} started ${wait} ms after ${prev} was updated`);
    }
    assert.deepEqual(seen, [`1/3 ${ZONE}=a`, `2/3 ${ZONE}=b`, `3/3 ${ZONE}=c`, '']);
    assert.equal(progressing(r.c)?.reason, 'RolloutComplete');
  });

  test('the planner asks to be requeued when the wave has been available for availableSeconds', () => {
    const c = cluster(waves(60), zonedNodes());
    rollout(c, 4);
    const p = c.plan();
    assert.equal(p.creates.length + p.deletes.length, 0, 'zone a done, b waits');
    assert.ok(p.requeueAfterMs !== undefined && p.requeueAfterMs > 55_000 && p.requeueAfterMs <= 60_001);
    assert.equal(progressing(c)?.reason, 'Updating');
    assert.match(progressing(c)?.message ?? '', /wave 1 of 3 \(topology.kubernetes.io\/zone=a\), waiting/);
  });

  test('availableSeconds 0 and maxUnavailable 1: one node at a time, zone by zone', () => {
    const r = rollout(cluster(waves(0, { maxUnavailable: 1 }), zonedNodes()), 30);
    assert.deepEqual(r.order, ['n4', 'n1', 'n5', 'n2', 'n6', 'n3']);
  });

  test('a new pod that is not Ready holds the next wave', () => {
    const c = cluster(waves(0), zonedNodes());
    c.setImage('v2');
    for (let i = 0; i < 20; i++) {
      c.sync();
      c.markReady((p) => p.spec.nodeName !== 'n1');
      c.now += 1000;
    }
    const updated = c.live().filter((p) => c.hashOf(p) === c.lastPlan?.hash);
    assert.deepEqual(updated.map((p) => p.spec.nodeName).sort(), ['n1', 'n4']);
  });

  test('nodes without the topology label are the last wave', () => {
    const nodes = [...zonedNodes().slice(0, 2), newNode('n0')];
    const r = rollout(cluster(waves(0, { maxUnavailable: 1 }), nodes), 30);
    assert.deepEqual(r.order, ['n1', 'n2', 'n0']);
  });

  test('priorityStrategy orders the waves: zone c (weight 10) first, then a and b by name', () => {
    const ps = { weightPriority: [{ weight: 10, matchSelector: { matchLabels: { [ZONE]: 'c' } } }] };
    const r = rollout(cluster(waves(0, { priorityStrategy: ps }), zonedNodes()), 40);
    assert.deepEqual(r.order.map(zoneOf), ['c', 'c', 'a', 'a', 'b', 'b']);
  });

  test('priorityStrategy orders nodes within a wave', () => {
    const ps = { weightPriority: [{ weight: 10, matchSelector: { matchLabels: { first: 'yes' } } }] };
    const r = rollout(
      cluster(waves(0, { maxUnavailable: 1, priorityStrategy: ps }), zonedNodes({ n2: { first: 'yes' } })),
      30,
    );
    // n2's weight makes zone b the first wave too (a wave goes by its highest-priority node).
    assert.deepEqual(r.order, ['n2', 'n5', 'n4', 'n1', 'n6', 'n3']);
  });

  test('partition counts over all nodes: 3 keeps zone c and one node of b old', () => {
    const r = rollout(cluster(waves(0, { partition: 3 }), zonedNodes()), 40);
    assert.deepEqual(r.order, ['n1', 'n4', 'n5']);
    assert.equal(progressing(r.c)?.reason, 'PartitionReached');
  });

  test('paused stops the waves; resuming goes on with the current wave', () => {
    const c = cluster(waves(0, { maxUnavailable: 1 }), zonedNodes());
    c.setImage('v2');
    c.sync();
    c.sync();
    c.markReady();
    c.updateSpec((ds) => {
      (ds.spec.updateStrategy?.rollingUpdate as { paused: boolean }).paused = true;
    });
    for (let i = 0; i < 5; i++) expectSyncDaemonSets(c, 0, 0, 'paused');
    assert.equal(progressing(c)?.reason, 'Paused');
    assert.match(progressing(c)?.message ?? '', /wave 1 of 3/);
    c.updateSpec((ds) => {
      (ds.spec.updateStrategy?.rollingUpdate as { paused: boolean }).paused = false;
    });
    const r = rollout(c, 30);
    assert.deepEqual(r.order.slice(0, 3), ['n4', 'n1', 'n5']);
  });

  test('rollingUpdate.selector filters first: unselected zone b is skipped, c follows a', () => {
    const sel = { matchExpressions: [{ key: ZONE, operator: 'NotIn', values: ['b'] }] };
    const r = rollout(cluster(waves(0, { selector: sel }), zonedNodes()), 30);
    assert.deepEqual(r.order.map(zoneOf), ['a', 'a', 'c', 'c']);
  });

  test('without waves nor priorityStrategy the order is unchanged (descending name)', () => {
    const r = rollout(cluster({ maxUnavailable: 1 }, zonedNodes()), 30);
    assert.deepEqual(r.order, ['n6', 'n5', 'n4', 'n3', 'n2', 'n1']);
  });
});
