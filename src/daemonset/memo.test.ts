// PlanMemo (memo.ts): random sequences of snapshot changes, as the informers deliver them (new objects, never
// modified ones), with the plan of each sync planned with the memo compared to the full computation. FakeCluster.plan
// (test-fixtures.ts) makes that comparison at every sync, for these sequences and for every planner table.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod, Taint } from '../k8s/types.ts';
import { formatTime } from '../k8s/pod.ts';
import {
  CANARY_FAILED_ANNOTATION,
  CANARY_PAUSED_ANNOTATION,
  CANARY_POD_LABEL,
  CANARY_VALIDATED_ANNOTATION,
  CONTROLLER_REVISION_HASH_LABEL,
  KRUISE_POD_READY,
  LIFECYCLE_STATE_LABEL,
  LIFECYCLE_STATE_PREPARING_DELETE,
  NODE_RESOURCES_ANNOTATION_PREFIX,
} from './constants.ts';
import { PlanMemo } from './memo.ts';
import { seededRandom } from '../testing/random.ts';
import { cmp, newSyncContext } from './context.ts';
import { nodeAnnotationKey } from './overrides.ts';
import { planDaemonSet } from './plan.ts';
import type { PlanOptions } from './plan-types.ts';
import {
  FakeCluster,
  T0,
  newDaemonSet,
  newNode,
  newPod,
  nodeChangesBetween,
  type DaemonSetOptions,
} from './test-fixtures.ts';

const random = seededRandom;

interface Config {
  name: string;
  ds: DaemonSetOptions;
  options?: PlanOptions;
}

const CONFIGS: Config[] = [
  { name: 'maxUnavailable 2', ds: { strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } } },
  {
    name: 'maxSurge 1, minReadySeconds 10',
    ds: { strategy: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 }, minReadySeconds: 10 },
  },
  {
    name: 'partition and rollingUpdate.selector',
    ds: { strategy: 'RollingUpdate', rollingUpdate: { partition: 2, selector: { matchLabels: { zone: 'a' } } } },
  },
  { name: 'OnDelete', ds: { strategy: 'OnDelete' } },
  {
    name: 'InPlaceIfPossible, minReadySeconds 5',
    ds: { strategy: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible' }, minReadySeconds: 5 },
  },
  {
    name: 'canary',
    ds: { strategy: 'RollingUpdate', rollingUpdate: { canary: { nodes: 2, duration: '30s' } } },
  },
  {
    name: 'preDelete hook, pull pods, progressive creation',
    ds: {
      strategy: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 3, partition: 1 },
      lifecycle: { preDelete: { labelsHandler: { hold: 'true' }, markPodNotReady: true } },
      annotations: { 'apps.kruise.io/progressive-create-pod': 'true' },
    },
    options: { imagePreDownload: 'pods', kruisePodReadyGate: 'always' },
  },
];

/** One random change of the cluster's objects, each a new object; returns what it did (for the failure message). */
type Change = (c: FakeCluster, r: () => number) => string;

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;

/** `nodes` sorted in place by name, as the informer lists them. */
const inNameOrder = (nodes: Node[]): Node[] => nodes.sort((a, b) => cmp(a.metadata.name ?? '', b.metadata.name ?? ''));

function replaceNode(c: FakeCluster, i: number, f: (n: Node) => Node): void {
  c.nodes = c.nodes.map((n, j) => (j === i ? f(n) : n));
}

function replacePod(c: FakeCluster, name: string, f: (p: Pod) => Pod): void {
  c.pods = c.pods.map((p) => (p.metadata.name === name ? f(p) : p));
}

function withLabels(p: Pod, labels: Record<string, string | undefined>): Pod {
  const next: Record<string, string> = { ...(p.metadata.labels ?? {}) };
  for (const [k, v] of Object.entries(labels)) {
    if (v === undefined) delete next[k];
    else next[k] = v;
  }
  return { ...p, metadata: { ...p.metadata, labels: next } };
}

let extraNodes = 0;

const NODE_CHANGES: Change[] = [
  (c, r) => {
    const i = Math.floor(r() * c.nodes.length);
    const zone = pick(r, ['a', 'b', undefined]);
    replaceNode(c, i, (n) => {
      const labels = { ...(n.metadata.labels ?? {}) };
      if (zone) labels.zone = zone;
      else delete labels.zone;
      return { ...n, metadata: { ...n.metadata, labels } };
    });
    return `node ${i} zone ${zone}`;
  },
  (c, r) => {
    const i = Math.floor(r() * c.nodes.length);
    const effect = pick(r, ['NoSchedule', 'NoExecute', 'PreferNoSchedule', undefined] as const);
    replaceNode(c, i, (n) => {
      const taints: Taint[] = effect ? [{ key: 'dedicated', value: 'infra', effect }] : [];
      return { ...n, spec: { ...(n.spec ?? {}), taints } };
    });
    return `node ${i} taint ${effect}`;
  },
  (c, r) => {
    const i = Math.floor(r() * c.nodes.length);
    replaceNode(c, i, (n) => ({ ...n, spec: { ...(n.spec ?? {}), unschedulable: !n.spec?.unschedulable } }));
    return `node ${i} cordon toggled`;
  },
  (c, r) => {
    // A heartbeat: a new object, nothing the planner reads changed.
    const i = Math.floor(r() * c.nodes.length);
    replaceNode(c, i, (n) => ({ ...n, metadata: { ...n.metadata, resourceVersion: String(r()) } }));
    return `node ${i} heartbeat`;
  },
  (c, r) => {
    const name = `extra-${++extraNodes}`;
    const node = newNode(name, r() < 0.5 ? { zone: 'a' } : {});
    c.nodes = inNameOrder([...c.nodes, node]);
    return `node ${name} added`;
  },
  (c, r) => {
    if (c.nodes.length <= 2) return 'no node removed';
    const i = Math.floor(r() * c.nodes.length);
    const name = c.nodes[i]?.metadata.name;
    c.nodes = c.nodes.filter((_, j) => j !== i);
    return `node ${name} removed`;
  },
  (c, r) => {
    // Handed over out of name order (the planner sorts them).
    c.nodes = [...c.nodes].sort(() => r() - 0.5);
    return 'nodes shuffled';
  },
];

const POD_CHANGES: Change[] = [
  (c, r) => {
    c.markReady((p) => p.metadata.name !== undefined && r() < 0.5);
    return 'some pods Ready';
  },
  (c, r) => {
    c.markNotReady(() => r() < 0.2);
    return 'some pods not Ready';
  },
  (c, r) => {
    const p = pick(r, c.pods);
    if (!p) return 'no pod';
    const phase = pick(r, ['Failed', 'Succeeded', 'Running'] as const);
    replacePod(c, p.metadata.name ?? '', (x) => ({ ...x, status: { ...x.status, phase } }));
    return `pod ${p.metadata.name} ${phase}`;
  },
  (c, r) => {
    const p = pick(r, c.pods);
    if (!p) return 'no pod';
    replacePod(c, p.metadata.name ?? '', (x) => ({
      ...x,
      metadata: { ...x.metadata, deletionTimestamp: formatTime(c.now) },
    }));
    return `pod ${p.metadata.name} terminating`;
  },
  (c) => {
    c.reapTerminating();
    return 'terminating pods gone';
  },
  (c, r) => {
    const p = pick(r, c.pods);
    if (!p) return 'no pod';
    c.pods = c.pods.filter((x) => x !== p);
    return `pod ${p.metadata.name} deleted`;
  },
  (c, r) => {
    // An excess pod on a node, or an unbound one pinned to a node that does not exist.
    const ghost = r() < 0.3;
    const nodeName = ghost ? 'no-such-node' : (pick(r, c.nodes)?.metadata.name ?? 'no-such-node');
    const hash = pick(r, [c.lastPlan?.hash ?? '', 'old-hash']);
    const pod = newPod(c.ds, nodeName, { hash, ready: r() < 0.5, created: c.now, bound: !ghost });
    c.pods = [...c.pods, pod];
    return `pod ${pod.metadata.name} added on ${nodeName}`;
  },
  (c, r) => {
    const p = pick(r, c.pods);
    if (!p) return 'no pod';
    const hash = pick(r, ['old-hash', c.lastPlan?.hash ?? '']);
    replacePod(c, p.metadata.name ?? '', (x) => withLabels(x, { [CONTROLLER_REVISION_HASH_LABEL]: hash }));
    return `pod ${p.metadata.name} hash ${hash}`;
  },
  (c, r) => {
    const p = pick(r, c.pods);
    if (!p) return 'no pod';
    const label = pick(r, [
      { [CANARY_POD_LABEL]: 'true' },
      { [CANARY_POD_LABEL]: undefined },
      { [LIFECYCLE_STATE_LABEL]: LIFECYCLE_STATE_PREPARING_DELETE },
      { hold: 'true' },
      { hold: undefined },
    ]);
    replacePod(c, p.metadata.name ?? '', (x) => withLabels(x, label));
    return `pod ${p.metadata.name} labels ${JSON.stringify(label)}`;
  },
  (c, r) => {
    // The KruisePodReady gate without its condition (the readiness upkeep sets it).
    const p = pick(r, c.pods);
    if (!p) return 'no pod';
    replacePod(c, p.metadata.name ?? '', (x) => ({
      ...x,
      spec: { ...x.spec, readinessGates: [{ conditionType: KRUISE_POD_READY }] },
      status: { ...x.status, conditions: (x.status?.conditions ?? []).filter((k) => k.type !== KRUISE_POD_READY) },
    }));
    return `pod ${p.metadata.name} gate without condition`;
  },
  (c, r) => {
    // The pod index lists an updated pod last: pods come in another order.
    c.pods = [...c.pods].sort(() => r() - 0.5);
    return 'pods shuffled';
  },
  (c) => {
    c.kubeletRestartChangedContainers();
    return 'kubelet restarted changed containers';
  },
];

const DS_CHANGES: Change[] = [
  (c, r) => {
    const image = pick(r, ['img:v1', 'img:v2', 'img:v3']);
    c.setImage(image);
    return `image ${image}`;
  },
  (c, r) => {
    const zone = pick(r, ['a', undefined]);
    c.updateSpec((ds) => {
      if (zone) ds.spec.template.spec.nodeSelector = { zone };
      else delete ds.spec.template.spec.nodeSelector;
    });
    return `nodeSelector zone ${zone}`;
  },
  (c, r) => {
    const tolerate = r() < 0.5;
    c.updateSpec((ds) => {
      ds.spec.template.spec.tolerations = tolerate ? [{ key: 'dedicated', operator: 'Exists' }] : [];
    });
    return `tolerate dedicated ${tolerate}`;
  },
  (c, r) => {
    const partition = pick(r, [undefined, 0, 1, 3, '50%']);
    const paused = r() < 0.2;
    c.updateSpec((ds) => {
      const ru = ds.spec.updateStrategy?.rollingUpdate;
      if (!ru) return;
      if (partition === undefined) delete ru.partition;
      else ru.partition = partition;
      ru.paused = paused;
    });
    return `partition ${partition} paused ${paused}`;
  },
  (c, r) => {
    const minReadySeconds = pick(r, [0, 5, 30]);
    c.updateSpec((ds) => {
      ds.spec.minReadySeconds = minReadySeconds;
    });
    return `minReadySeconds ${minReadySeconds}`;
  },
  (c, r) => {
    // Annotations do not bump the generation.
    const a = pick(r, [CANARY_VALIDATED_ANNOTATION, CANARY_PAUSED_ANNOTATION, CANARY_FAILED_ANNOTATION]);
    const value = a === CANARY_PAUSED_ANNOTATION ? 'true' : (c.lastPlan?.hash ?? '');
    const ds: DaemonSet = structuredClone(c.ds);
    ds.metadata.annotations = { ...(ds.metadata.annotations ?? {}), [a]: value };
    c.ds = ds;
    return `annotation ${a}=${value}`;
  },
  (c) => {
    // Another DaemonSet of the same name (deleted and created again): the memo starts over.
    const ds: DaemonSet = structuredClone(c.ds);
    ds.metadata.uid = `${ds.metadata.uid ?? ''}-again`;
    c.ds = ds;
    return 'uid changed';
  },
];

const TIME_STEPS = [0, 0, 500, 1_000, 4_000, 6_000, 11_000, 31_000, 120_000];

/**
 * Runs `steps` syncs of a cluster of `nodes` nodes; before each, 0-3 random changes of nodes, pods, the DaemonSet or
 * the clock. Every plan is checked against the full computation (FakeCluster.plan). Returns how many plans it made.
 */
function runSequence(config: Config, seed: number, steps: number, tellNodeChanges: boolean, nodes = 12): number {
  const r = random(seed);
  const nodeList = Array.from({ length: nodes }, (_, i) =>
    newNode(`node-${String(i).padStart(2, '0')}`, i % 3 === 0 ? { zone: 'a' } : { zone: 'b' }),
  );
  const c = new FakeCluster(newDaemonSet({ image: 'img:v1', ...config.ds }), nodeList, config.options);
  c.tellNodeChanges = tellNodeChanges;
  const done: string[] = [];
  let plans = 0;
  for (let step = 0; step < steps; step++) {
    const n = Math.floor(r() * 4);
    for (let k = 0; k < n; k++) {
      const kind = r();
      const change = kind < 0.3 ? pick(r, NODE_CHANGES) : kind < 0.8 ? pick(r, POD_CHANGES) : pick(r, DS_CHANGES);
      done.push(change(c, r));
    }
    c.now += pick(r, TIME_STEPS);
    const where = `${config.name}, seed ${seed}, step ${step}: after ${done.slice(-4).join('; ')}`;
    try {
      if (r() < 0.15) {
        // Expectations pending: planned (and compared), not applied.
        c.plan(false);
      } else {
        c.sync();
      }
      plans++;
    } catch (err) {
      throw new Error(`${where}: ${(err as Error).message}`, { cause: err });
    }
    // Pods the plan created start and turn Ready now and then, as the kubelet would.
    if (r() < 0.6) c.markReady(() => r() < 0.7);
  }
  return plans;
}

describe('PlanMemo: random sequences of changes, planned with the memo and in full', () => {
  for (const config of CONFIGS) {
    test(config.name, () => {
      let plans = 0;
      // Half the sequences tell the memo which nodes changed, as the controller does; half leave it to compare.
      for (const seed of [1, 2, 3, 4])
        plans += runSequence(config, seed * 7919 + config.name.length, 80, seed % 2 === 0);
      assert.ok(plans >= 4 * 80, `planned ${plans} syncs`);
    });
  }
});

/** One sync of planSequence: its nodes and pods, and whether the kept values named reuse what they kept. */
interface SequenceStep {
  name: string;
  nodes: Node[];
  pods: Pod[];
  kept: boolean;
}

/** Plans each step with `memo` and in full, the same, and checks that each value named in `kept` was kept or not. */
function planSequence(
  memo: PlanMemo,
  snap: Omit<Parameters<typeof planDaemonSet>[0], 'nodes' | 'pods'>,
  sequence: readonly SequenceStep[],
  kept: readonly string[],
): void {
  for (const s of sequence) {
    const before = kept.map((k) => memo.keptReused(k));
    const withMemo = planDaemonSet({ ...snap, nodes: s.nodes, pods: s.pods }, memo);
    assert.deepEqual(withMemo, planDaemonSet({ ...snap, nodes: s.nodes, pods: s.pods }), s.name);
    assert.deepEqual(
      kept.map((k, i) => memo.keptReused(k) - (before[i] as number)),
      kept.map(() => (s.kept ? 1 : 0)),
      `${s.name}: kept`,
    );
  }
}

describe('PlanMemo: what a sync re-evaluates', () => {
  const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } });
  const nodes = Array.from({ length: 50 }, (_, i) => newNode(`node-${String(i).padStart(2, '0')}`));
  const first = planDaemonSet({ ds, nodes, pods: [], revisions: [], now: T0 });
  const revisions = first.revisions.create;
  const pods = nodes.map((n) => newPod(ds, n.metadata.name ?? '', { hash: first.hash, ready: true }));
  // Nodes in two pools, for rollingUpdate.selector: pool a (two in three) and pool b.
  const pooled = nodes.map((n, i) => ({ ...n, metadata: { ...n.metadata, labels: { pool: i % 3 ? 'a' : 'b' } } }));

  const rows: {
    name: string;
    change: (nodes: Node[], pods: Pod[]) => { nodes: Node[]; pods: Pod[] };
    evaluated: number;
  }[] = [
    { name: 'nothing changed: no node', change: (n, p) => ({ nodes: n, pods: p }), evaluated: 0 },
    {
      name: 'new arrays of the same objects: no node',
      change: (n, p) => ({ nodes: [...n], pods: [...p] }),
      evaluated: 0,
    },
    {
      name: "one pod's new object (listed last): its node",
      change: (n, p) => {
        const [pod, ...rest] = p as [Pod, ...Pod[]];
        return { nodes: n, pods: [...rest, { ...pod, metadata: { ...pod.metadata, resourceVersion: '2' } }] };
      },
      evaluated: 1,
    },
    {
      name: 'one pod gone: its node',
      change: (n, p) => ({ nodes: n, pods: p.filter((_, i) => i !== 7) }),
      evaluated: 1,
    },
    {
      name: "one node's new object (a label): that node",
      change: (n, p) => ({
        nodes: n.map((x, i) => (i === 3 ? { ...x, metadata: { ...x.metadata, labels: { zone: 'a' } } } : x)),
        pods: p,
      }),
      evaluated: 1,
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const memo = new PlanMemo();
      const snap = { ds, revisions, now: T0 + 60_000 };
      planDaemonSet({ ...snap, nodes, pods }, memo);
      const before = memo.stats.nodesEvaluated;
      const next = row.change(nodes, pods);
      const withMemo = planDaemonSet({ ...snap, ...next }, memo);
      assert.equal(memo.stats.nodesEvaluated - before, row.evaluated);
      assert.deepEqual(withMemo, planDaemonSet({ ...snap, ...next }));
    });
  }

  test('nodesToUpdate is kept while the changed nodes keep their part in it, and computed again when one does not', () => {
    // A rollout half done: nodes 0-9 run the new revision, the rest the old one (selector and partition too).
    const rolling = newDaemonSet({
      strategy: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 2, partition: 3, selector: { matchLabels: { pool: 'a' } } },
    });
    const labelled = pooled;
    const first = planDaemonSet({ ds: rolling, nodes: labelled, pods: [], revisions: [], now: T0 });
    const revisions = first.revisions.create;
    const mixed = labelled.map((n, i) =>
      newPod(rolling, n.metadata.name ?? '', { hash: i < 10 ? first.hash : 'old', ready: true }),
    );
    const memo = new PlanMemo();
    const at = (p: Pod[], n: Node[] = labelled) => ({ ds: rolling, nodes: n, pods: p, revisions, now: T0 + 60_000 });
    const check = (p: Pod[], n: Node[] | undefined, reused: boolean, msg: string) => {
      const before = memo.keptReused('nodesToUpdate');
      assert.deepEqual(planDaemonSet(at(p, n), memo), planDaemonSet(at(p, n)), msg);
      assert.equal(memo.keptReused('nodesToUpdate') - before, reused ? 1 : 0, `${msg}: kept`);
    };
    check(mixed, undefined, false, 'first sync');
    const rv = (p: Pod, v: string) => ({ ...p, metadata: { ...p.metadata, resourceVersion: v } });
    // A pod's new object that leaves its node in the same bucket (a status write, here a new resourceVersion).
    const touched = mixed.map((p, i) => (i === 4 || i === 20 ? rv(p, '2') : p));
    check(touched, undefined, true, 'two pods updated in place');
    // An old pod replaced by a new one: its node moves from "to update" to "updated".
    const moved = touched.map((p, i) =>
      i === 20 ? newPod(rolling, p.spec.nodeName ?? '', { name: p.metadata.name, hash: first.hash, ready: true }) : p,
    );
    check(moved, undefined, false, 'a node updated');
    check(moved, undefined, true, 'nothing changed');
    // A node relabelled out of the update selector: computed again; a node's new object with the same part: kept.
    const relabel = (i: number, pool: string) =>
      labelled.map((n, j) => (j === i ? { ...n, metadata: { ...n.metadata, labels: { pool, x: 'y' } } } : n));
    check(moved, relabel(5, 'b'), false, 'a node leaves the selector');
    check(
      moved,
      relabel(5, 'b').map((n, j) => (j === 6 ? { ...n } : n)),
      true,
      "a node's new object, same part",
    );
    // A pod gone: its node no longer takes part in the same way.
    check(
      moved.filter((_, i) => i !== 30),
      relabel(5, 'b'),
      false,
      'a pod gone',
    );
  });

  test('the counters and the unsettled nodes are brought up to date from the changed nodes, and found again when nodes come or go', () => {
    const memo = new PlanMemo();
    const snap = { ds, revisions, now: T0 + 60_000 };
    const notReady = (p: Pod) =>
      newPod(ds, p.spec.nodeName ?? '', { name: p.metadata.name, hash: 'old', ready: false });
    const tainted = (n: Node): Node => ({
      ...n,
      spec: { taints: [{ key: 'k', effect: 'NoExecute' }] },
    });
    const sequence: SequenceStep[] = [
      { name: 'first', nodes, pods, kept: false },
      { name: 'a pod old and not ready', nodes, pods: pods.map((p, i) => (i === 3 ? notReady(p) : p)), kept: true },
      { name: 'and back', nodes, pods, kept: true },
      { name: 'a pod gone', nodes, pods: pods.slice(1), kept: true },
      {
        name: 'a pod failed: manage replaces it',
        nodes,
        pods: pods.map((p, i) => (i === 5 ? { ...p, status: { ...p.status, phase: 'Failed' as const } } : p)),
        kept: true,
      },
      {
        name: 'a node tainted: misscheduled',
        nodes: nodes.map((n, i) => (i === 9 ? tainted(n) : n)),
        pods,
        kept: true,
      },
      { name: 'a node gone', nodes: nodes.slice(1), pods, kept: false },
    ];
    planSequence(memo, snap, sequence, ['counters', 'unsettled']);
  });

  test('the rolling update and Progressing go over the busy nodes only, kept while nodesToUpdate is', () => {
    // Surge within rollingUpdate.selector: the selected nodes (pool a) run the new revision, the others the old one,
    // outside nodesToUpdate. Every plan is compared with the full computation.
    const surging = newDaemonSet({
      strategy: 'RollingUpdate',
      rollingUpdate: { maxSurge: 2, maxUnavailable: 0, selector: { matchLabels: { pool: 'a' } } },
    });
    const firstPlan = planDaemonSet({ ds: surging, nodes: pooled, pods: [], revisions: [], now: T0 });
    const snap = { ds: surging, nodes: pooled, revisions: firstPlan.revisions.create, now: T0 + 60_000 };
    const settled = pooled.map((n, i) =>
      newPod(surging, n.metadata.name ?? '', { hash: i % 3 ? firstPlan.hash : 'old', ready: true }),
    );
    const memo = new PlanMemo();
    const rv = (p: Pod, v: string) => ({ ...p, metadata: { ...p.metadata, resourceVersion: v } });
    // An old pod beside the new one on nodes 1, 2 and 4: each is deleted.
    const beside = [1, 2, 4].map((i) => newPod(surging, `node-0${i}`, { name: `old-${i}`, hash: 'old', ready: true }));
    const sequence: { name: string; pods: Pod[]; kept: boolean; deletes?: string[] }[] = [
      { name: 'first', pods: settled, kept: false },
      {
        name: 'an old pod outside the selector changed',
        pods: settled.map((p, i) => (i === 3 ? rv(p, '2') : p)),
        kept: true,
      },
      {
        name: 'old pods beside new ones',
        pods: [...settled, ...beside],
        kept: true,
        deletes: ['old-1', 'old-2', 'old-4'],
      },
      {
        name: 'a new pod not Ready',
        pods: settled.map((p, i) =>
          i === 7
            ? newPod(surging, p.spec.nodeName ?? '', { name: p.metadata.name, hash: firstPlan.hash, ready: false })
            : p,
        ),
        kept: true,
      },
      { name: 'back to settled', pods: settled, kept: true, deletes: [] },
    ];
    for (const s of sequence) {
      const before = memo.keptReused('busyNodesToUpdate');
      const withMemo = planDaemonSet({ ...snap, pods: s.pods }, memo);
      assert.deepEqual(withMemo, planDaemonSet({ ...snap, pods: s.pods }), s.name);
      assert.equal(memo.keptReused('busyNodesToUpdate') - before, s.kept ? 1 : 0, `${s.name}: kept`);
      if (s.deletes) {
        assert.deepEqual(
          withMemo.deletes.map((d) => d.podName),
          s.deletes,
          `${s.name}: the old pods deleted`,
        );
      }
    }
  });

  test('a node that joins, and pods replaced, move between the buckets of the kept nodesToUpdate in place', () => {
    const memo = new PlanMemo();
    const snap = { ds, revisions, now: T0 + 60_000 };
    const joined = inNameOrder([...nodes, newNode('node-25a')]);
    const old = (p: Pod, ready: boolean) =>
      newPod(ds, p.spec.nodeName ?? '', { name: p.metadata.name, hash: 'old', ready });
    const itsPod = (ready: boolean) => newPod(ds, 'node-25a', { hash: first.hash, ready });
    const sequence: SequenceStep[] = [
      { name: 'first', nodes, pods, kept: false },
      { name: 'a node joined', nodes: joined, pods, kept: true },
      { name: 'its pod, not Ready', nodes: joined, pods: [...pods, itsPod(false)], kept: true },
      { name: 'its pod Ready', nodes: joined, pods: [...pods, itsPod(true)], kept: true },
      {
        // maxUnavailable 2: the two unavailable ones, and the first two others in nodesToUpdate's order.
        name: 'six pods of the old revision: to update',
        nodes: joined,
        pods: [
          ...pods.map((p, i) => ([4, 12, 30, 41].includes(i) ? old(p, true) : [7, 20].includes(i) ? old(p, false) : p)),
          itsPod(true),
        ],
        kept: true,
      },
      { name: 'and back', nodes: joined, pods: [...pods, itsPod(true)], kept: true },
      { name: 'the node gone', nodes, pods, kept: false },
    ];
    planSequence(memo, snap, sequence, ['nodesToUpdate', 'busyNodesToUpdate']);
  });

  test('nodes moved in place keep nodesToUpdate in its order: the nodes set aside are listed in it', () => {
    // unhealthyNodes Ignore lists the nodes it sets aside in nodesToUpdate's order (descending names within a bucket).
    const ignoring = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { unhealthyNodes: 'Ignore' } });
    const notReady = [10, 20, 30, 40];
    const sick = nodes.map((n, i) =>
      notReady.includes(i) ? { ...n, status: { conditions: [{ type: 'Ready', status: 'False' as const }] } } : n,
    );
    const plan0 = planDaemonSet({ ds: ignoring, nodes: sick, pods: [], revisions: [], now: T0 });
    const snap = { ds: ignoring, nodes: sick, revisions: plan0.revisions.create, now: T0 + 60_000 };
    const current = sick.map((n) => newPod(ignoring, n.metadata.name ?? '', { hash: plan0.hash, ready: true }));
    const stale = current.map((p, i) =>
      notReady.includes(i)
        ? newPod(ignoring, p.spec.nodeName ?? '', { name: p.metadata.name, hash: 'old', ready: true })
        : p,
    );
    const memo = new PlanMemo();
    for (const [name, pods] of [
      ['settled', current],
      ['old pods on the NotReady nodes', stale],
    ] as const) {
      const before = memo.keptReused('nodesToUpdate');
      const withMemo = planDaemonSet({ ...snap, pods }, memo);
      assert.deepEqual(withMemo, planDaemonSet({ ...snap, pods }), name);
      assert.equal(memo.keptReused('nodesToUpdate') - before, name === 'settled' ? 0 : 1, `${name}: kept`);
    }
    const progressing = planDaemonSet({ ...snap, pods: stale }, memo).status?.conditions?.find(
      (c) => c.type === 'Progressing',
    );
    assert.match(
      progressing?.message ?? '',
      /node-40 \(NotReady\), node-30 \(NotReady\), node-20 \(NotReady\), node-10/,
    );
  });

  test('pods told as changes from the last snapshot plan as the whole list does; changes from another are ignored', () => {
    const rand = seededRandom(11);
    const memo = new PlanMemo();
    const snap = { ds, revisions, nodes, now: T0 + 60_000 };
    let current = pods;
    planDaemonSet({ ...snap, pods: current }, memo);
    const stale = current;
    for (let step = 0; step < 60; step++) {
      const byName = new Map(current.map((p) => [p.metadata.name ?? '', p]));
      const changed = new Map<string, Pod | undefined>();
      for (let k = 0; k < 1 + Math.floor(rand() * 3); k++) {
        // A pod of the list (most nodes' only pod), or one of two more per node.
        const names = [...byName.keys()];
        const existing = rand() < 0.6 ? byName.get(names[Math.floor(rand() * names.length)] as string) : undefined;
        const node = existing
          ? (nodes.find((n) => n.metadata.name === existing.spec.nodeName) as Node)
          : (nodes[Math.floor(rand() * nodes.length)] as Node);
        const name = existing?.metadata.name ?? `p-${node.metadata.name}-${Math.floor(rand() * 2)}`;
        const r = rand();
        const pod =
          r < 0.3
            ? undefined
            : newPod(ds, node.metadata.name ?? '', { name, hash: r < 0.6 ? first.hash : 'old', ready: r < 0.8 });
        if (pod === undefined && !byName.has(name)) continue;
        changed.set(name, pod);
        if (pod) byName.set(name, pod);
        else byName.delete(name);
      }
      const next = [...byName.values()];
      // Now and then the changes are told from an older list than the memo last saw: they must not be used.
      const since = step % 10 === 9 ? stale : current;
      const withMemo = planDaemonSet({ ...snap, pods: next, podChanges: { since, pods: changed } }, memo);
      assert.deepEqual(withMemo, planDaemonSet({ ...snap, pods: next }), `step ${step}`);
      current = next;
    }
    // A pod told gone, then the list before that again, as a whole: the very pod object comes back.
    const gone = current[0] as Pod;
    const without = current.slice(1);
    const told = { since: current, pods: new Map([[gone.metadata.name ?? '', undefined]]) };
    assert.deepEqual(
      planDaemonSet({ ...snap, pods: without, podChanges: told }, memo),
      planDaemonSet({ ...snap, pods: without }),
    );
    assert.deepEqual(
      planDaemonSet({ ...snap, pods: current }, memo),
      planDaemonSet({ ...snap, pods: current }),
      'back',
    );
  });

  test('nodes joining and leaving, some where pods already point (ghosts): the same plans as without the memo', () => {
    const rand = seededRandom(5);
    const memo = new PlanMemo();
    const all = Array.from({ length: 80 }, (_, i) => newNode(`node-${String(i).padStart(2, '0')}`));
    // Pods on every node of `all`, also on those not in the list yet.
    // Some pinned by affinity only, not bound: on a node that is gone they are deleted (NodeGone).
    const everywhere = all.map((n, i) =>
      newPod(ds, n.metadata.name ?? '', { hash: first.hash, ready: true, bound: i % 4 !== 0 }),
    );
    let present = all.filter(() => rand() < 0.5);
    for (let step = 0; step < 80; step++) {
      const r = rand();
      if (r < 0.7) {
        // One to three nodes join (the usual case), in name order as the informer lists them.
        const joining = all.filter((n) => !present.includes(n) && rand() < 0.05).slice(0, 3);
        present = all.filter((n) => present.includes(n) || joining.includes(n));
      } else if (r < 0.85) {
        present = present.filter(() => rand() < 0.95);
      } else {
        present = present.map((n) =>
          rand() < 0.1 ? { ...n, metadata: { ...n.metadata, labels: { step: `${step}` } } } : n,
        );
      }
      const podsNow = everywhere.filter(() => rand() < 0.97);
      const snap = { ds, revisions, nodes: present, pods: podsNow, now: T0 + 60_000 };
      assert.deepEqual(planDaemonSet(snap, memo), planDaemonSet(snap), `step ${step}`);
    }
    assert.ok(memo.stats.nodesInserted > 10, `nodes put in at their places: ${memo.stats.nodesInserted}`);
  });

  test('nodes told as changes from the last snapshot plan as the whole list does, with no list compared', () => {
    const rand = seededRandom(23);
    const memo = new PlanMemo();
    const all = Array.from({ length: 60 }, (_, i) => newNode(`node-${String(i).padStart(2, '0')}`));
    const snap = { ds, revisions, pods, now: T0 + 60_000 };
    /** The nodes of `all` not in `list`. */
    const missing = (list: readonly Node[]) => {
      const names = new Set(list.map((n) => n.metadata.name));
      return all.filter((n) => !names.has(n.metadata.name));
    };
    let current = all.filter((_, i) => i % 2 === 0);
    planDaemonSet({ ...snap, nodes: current }, memo);
    let stale = current;
    let compared = 0;
    for (let step = 0; step < 80; step++) {
      const r = rand();
      let next: Node[];
      if (r < 0.45) {
        // Nodes join (some where pods already point), in name order as the informer lists them.
        next = inNameOrder([...current, ...missing(current).filter(() => rand() < 0.04)]);
      } else if (r < 0.9) {
        // New objects: a label the planner reads, or a heartbeat.
        next = current.map((n) =>
          rand() < 0.1 ? { ...n, metadata: { ...n.metadata, labels: rand() < 0.5 ? { zone: 'a' } : {} } } : n,
        );
      } else {
        // A node leaves, another may join: the lists are made again.
        const leaving = Math.floor(rand() * current.length);
        const joining = missing(current)
          .filter(() => rand() < 0.04)
          .slice(0, 1);
        next = inNameOrder([...current.filter((_, i) => i !== leaving), ...joining]);
        compared++;
      }
      const told = nodeChangesBetween(step % 10 === 9 ? stale : current, next);
      // Now and then the changes are told from an older list than the memo last saw: they must not be used.
      if (step % 10 === 9 && r < 0.9 && stale !== current) compared++;
      const withMemo = planDaemonSet({ ...snap, nodes: next, ...(told ? { nodeChanges: told } : {}) }, memo);
      assert.deepEqual(withMemo, planDaemonSet({ ...snap, nodes: next }), `step ${step}`);
      if (step % 10 === 0) stale = current;
      current = next;
    }
    assert.equal(memo.stats.nodeListsCompared - 1, compared, 'lists compared: the first, and those of the rows above');
    assert.ok(memo.stats.nodesInserted > 10, `nodes put in at their places: ${memo.stats.nodesInserted}`);
    // Changes that leave a node out: the lists do not agree in length, and are compared.
    const joined = inNameOrder([...current, missing(current)[0] as Node]);
    const unnamed = { since: current, names: [] };
    assert.deepEqual(
      planDaemonSet({ ...snap, nodes: joined, nodeChanges: unnamed }, memo),
      planDaemonSet({ ...snap, nodes: joined }),
      'a node added, not told',
    );
    assert.equal(memo.stats.nodeListsCompared - 1, compared + 1);
  });

  test('any snapshot, in any order: back to earlier ones, pods and nodes gone and back', () => {
    const memo = new PlanMemo();
    const snap = { ds, revisions, now: T0 + 60_000 };
    const fewer = pods.slice(0, -3);
    const sequence: { nodes: Node[]; pods: Pod[] }[] = [
      { nodes, pods },
      { nodes, pods: fewer },
      { nodes, pods },
      { nodes: nodes.slice(5), pods: [...pods].reverse() },
      { nodes, pods: fewer },
      { nodes: [], pods },
      { nodes, pods },
    ];
    for (const [i, s] of sequence.entries()) {
      assert.deepEqual(planDaemonSet({ ...snap, ...s }, memo), planDaemonSet({ ...snap, ...s }), `snapshot ${i}`);
    }
  });

  test('the clock alone: available pods become available without any node being re-evaluated', () => {
    const slow = newDaemonSet({ strategy: 'RollingUpdate', minReadySeconds: 30 });
    const p0 = planDaemonSet({ ds: slow, nodes, pods: [], revisions: [], now: T0 });
    const ready = nodes.map((n) => newPod(slow, n.metadata.name ?? '', { hash: p0.hash, ready: true, readySince: T0 }));
    const memo = new PlanMemo();
    const at = (now: number) => ({ ds: slow, nodes, pods: ready, revisions: p0.revisions.create, now });
    const early = planDaemonSet(at(T0 + 10_000), memo);
    const before = memo.stats.nodesEvaluated;
    const late = planDaemonSet(at(T0 + 31_000), memo);
    assert.equal(memo.stats.nodesEvaluated, before);
    assert.deepEqual(
      [early.status?.numberAvailable, late.status?.numberAvailable],
      [0, nodes.length],
      'numberAvailable before and after minReadySeconds',
    );
    assert.deepEqual(late, planDaemonSet(at(T0 + 31_000)));
  });

  test('a node the DaemonSet takes no part on has no state, until it should run the daemon pod or a pod points to it', () => {
    const zoned: DaemonSet = newDaemonSet({ strategy: 'RollingUpdate' });
    zoned.spec.template.spec.nodeSelector = { zone: 'a' };
    const zone = (n: Node, z: string, annotations?: Record<string, string>): Node => ({
      ...n,
      metadata: { ...n.metadata, labels: { zone: z }, ...(annotations ? { annotations } : {}) },
    });
    let nodes = Array.from({ length: 10 }, (_, i) => newNode(`n-${i}`, { zone: i < 2 ? 'a' : 'b' }));
    let pods: Pod[] = [];
    const memo = new PlanMemo();
    /** The context with the memo, checked against the one made in full where they must agree. */
    const sync = (what: string) => {
      const ctx = newSyncContext(zoned, nodes, pods, 'h1', T0, {}, memo);
      const full = newSyncContext(zoned, nodes, pods, 'h1', T0);
      for (const n of nodes) {
        const name = n.metadata.name ?? '';
        assert.equal(ctx.nodeByName.get(name), n, `${what}: node ${name}`);
        assert.equal(ctx.eligibility.get(name)?.shouldRun, full.eligibility.get(name)?.shouldRun, `${what}: ${name}`);
      }
      assert.equal(ctx.nodeByName.size, nodes.length, what);
      assert.equal(ctx.resources.none, full.resources.none, `${what}: per-node resources annotations`);
      assert.equal(full.states.length, nodes.length, `${what}: the full context has a state for every node`);
      return ctx.states.map((s) => s.name);
    };
    assert.deepEqual(sync('first sync'), ['n-0', 'n-1']);
    nodes = nodes.map((n, i) => (i === 5 ? zone(n, 'a') : n));
    assert.deepEqual(sync('n-5 into zone a'), ['n-0', 'n-1', 'n-5']);
    pods = [newPod(zoned, 'n-7', { hash: 'h1' })];
    assert.deepEqual(sync('a pod on n-7, outside the zone'), ['n-0', 'n-1', 'n-5', 'n-7']);
    const key = nodeAnnotationKey(NODE_RESOURCES_ANNOTATION_PREFIX, zoned, 'c');
    nodes = nodes.map((n, i) => (i === 8 ? zone(n, 'b', { [key]: '{"requests":{"cpu":"1"}}' }) : n));
    assert.deepEqual(sync('n-8 annotated'), ['n-0', 'n-1', 'n-5', 'n-7']);
    nodes = nodes.map((n, i) => (i === 8 ? zone(n, 'b', {}) : n));
    sync('the annotation removed from n-8');
    // n-5 leaves the zone as n-9 goes: the list is made again, without the states of nodes that take no part.
    nodes = nodes.filter((_, i) => i !== 9).map((n, i) => (i === 5 ? zone(n, 'b') : n));
    assert.deepEqual(sync('n-5 out of the zone, n-9 gone'), ['n-0', 'n-1', 'n-7']);
  });
});
