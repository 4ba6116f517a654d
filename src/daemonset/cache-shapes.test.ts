// The cached shapes (cache-shapes.ts) carry every field the controller reads: the same snapshots planned with
// objects as the apiserver returns them and as the informers cache them give the same plans, sync after sync,
// across the planner's paths; and every field the planner reads on the full objects has the same value on the
// trimmed ones (a recording proxy notes each read).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { ContainerStatus, ControllerRevision, KubeObject, Node, Pod, PodCondition } from '../k8s/types.ts';
import { formatTime } from '../k8s/pod.ts';
import {
  cachedNode,
  cachedPod,
  hashConsed,
  hashConsedCount,
  intern,
  internedCount,
  MAX_CONSED_TEXT,
  MAX_INTERNED,
  shareUnchanged,
  withoutManagedFields,
} from './cache-shapes.ts';
import { nodeAddAffects, nodeUpdateAffects } from './eligibility.ts';
import { planDaemonSet } from './plan.ts';
import { addNotReadyKeyPatch, PRE_DELETE_HOLDER } from './pods.ts';
import type { DaemonSetSnapshot, Plan, PlanOptions } from './plan-types.ts';
import { FakeCluster, T0, addNodes, newDaemonSet, newNode, newPod } from './test-fixtures.ts';
import { fullNode, fullPod } from './test-full-objects.ts';

// ---- the shapes themselves ----

describe('cachedNode and cachedPod', () => {
  test('a node keeps name, labels, per-node resources annotations, taints, unschedulable and conditions; nothing else', () => {
    const full = fullNode(
      newNode('n1', { zone: 'a' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule', timeAdded: 'x' }]),
    );
    full.spec = { ...full.spec, unschedulable: true };
    const before = structuredClone(full);
    assert.deepEqual(cachedNode(full), {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'n1',
        uid: 'n1-uid',
        resourceVersion: '367',
        creationTimestamp: '2026-11-24T01:09:04Z',
        labels: full.metadata.labels,
        // The node has other annotations, none of them per-node resources.
        annotations: {},
      },
      spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule', timeAdded: 'x' }], unschedulable: true },
      status: {
        conditions: [
          { type: 'MemoryPressure', status: 'False' },
          { type: 'DiskPressure', status: 'False' },
          { type: 'PIDPressure', status: 'False' },
          { type: 'Ready', status: 'True' },
        ],
      },
    });
    assert.deepEqual(full, before, 'the input is not changed');
    const resources = {
      'resources.advanced-daemonset.io/ns.agent.main': '{"requests":{"cpu":"1"}}',
      'resources.extendeddaemonset.datadoghq.com/ns.agent.side': '{"limits":{"memory":"1Gi"}}',
    };
    const annotated = {
      ...full,
      metadata: { ...full.metadata, annotations: { ...full.metadata.annotations, ...resources } },
    };
    assert.deepEqual(cachedNode(annotated).metadata.annotations, resources, 'only per-node resources annotations');
    assert.deepEqual(cachedNode(newNode('bare')), {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'bare', labels: {} },
    });
    assert.deepEqual(cachedNode({ metadata: { name: 'x' }, spec: {}, status: {} }).spec, {}, 'an empty spec stays');
  });

  test('a pod keeps identity, ownership, node, images, resources, gates, conditions and container states', () => {
    const ds = newDaemonSet();
    const lean = newPod(ds, 'n1', { name: 'p1', hash: 'h1', ready: true });
    lean.metadata.finalizers = ['example.com/hold'];
    lean.spec.readinessGates = [{ conditionType: 'KruisePodReady' }];
    lean.status = {
      ...lean.status,
      containerStatuses: [
        {
          name: 'foo',
          image: 'foo/bar',
          imageID: 'foo/bar@sha256:1',
          ready: true,
          restartCount: 2,
          state: { running: { startedAt: 'x' } },
          lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: 'y' } },
        },
      ],
      initContainerStatuses: [{ name: 'init', image: 'i', imageID: 'i@1', ready: true, restartCount: 0 }],
    };
    const full = fullPod(lean);
    const before = structuredClone(full);
    const trimmed = cachedPod(full);
    assert.deepEqual(trimmed, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'p1',
        namespace: 'default',
        uid: 'p1-uid',
        resourceVersion: '364',
        generation: 1,
        creationTimestamp: formatTime(T0),
        labels: lean.metadata.labels,
        annotations: full.metadata.annotations,
        ownerReferences: lean.metadata.ownerReferences,
        finalizers: ['example.com/hold'],
      },
      spec: {
        nodeName: 'n1',
        containers: [{ name: 'foo', image: 'foo/bar', resources: full.spec.containers[0]!.resources }],
        affinity: { nodeAffinity: lean.spec.affinity?.nodeAffinity },
        readinessGates: [{ conditionType: 'KruisePodReady' }],
      },
      status: {
        phase: 'Running',
        // All but lastProbeTime where a field past type and status is read (Ready, KruisePodReady while not True,
        // the resize conditions), InPlaceUpdateReady whole; KruisePodReady True and PodScheduled without times; the
        // others type and status only.
        conditions: full.status?.conditions?.map(({ lastProbeTime, lastTransitionTime, ...c }) =>
          c.type === 'InPlaceUpdateReady'
            ? { ...c, lastProbeTime, lastTransitionTime }
            : c.type === 'Ready' || (c.type === 'KruisePodReady' && c.status !== 'True')
              ? { ...c, lastTransitionTime }
              : c.type === 'KruisePodReady' || c.type === 'PodScheduled'
                ? c
                : { type: c.type, status: c.status },
        ),
        containerStatuses: [
          {
            name: 'foo',
            image: 'foo/bar',
            imageID: 'foo/bar@sha256:1',
            ready: true,
            started: true,
            restartCount: 2,
            // A running container's startedAt is never read: the statuses of running pods are shared.
            state: { running: {} },
            lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: 'y' } },
            resources: full.status?.containerStatuses?.[0]?.resources,
          },
        ],
        initContainerStatuses: [{ name: 'init', image: 'i', imageID: 'i@1', ready: true, restartCount: 0 }],
      },
    });
    assert.ok(trimmed.spec.containers[0]!.resources, 'the full pod had resources');
    assert.deepEqual(full, before, 'the input is not changed');
    assert.ok(full.metadata.managedFields && full.spec.volumes && full.status?.podIP, 'the full pod had them');
  });

  test('KruisePodReady True is one object for every pod; False keeps its time, which adding a holder reads', () => {
    const ds = newDaemonSet();
    const gated = (name: string, condition: PodCondition) => {
      const pod = newPod(ds, name, { name, hash: 'h1', ready: true });
      pod.spec.readinessGates = [{ conditionType: 'KruisePodReady' }];
      pod.status = { ...pod.status, conditions: [...(pod.status?.conditions ?? []), condition] };
      return fullPod(pod);
    };
    const kruiseReady = (pod: Pod) => pod.status?.conditions?.find((c) => c.type === 'KruisePodReady');
    const a = cachedPod(
      gated('a', { type: 'KruisePodReady', status: 'True', lastTransitionTime: '2026-11-29T01:00:00Z' }),
    );
    const b = cachedPod(
      gated('b', { type: 'KruisePodReady', status: 'True', lastTransitionTime: '2026-11-29T02:00:00Z' }),
    );
    assert.deepEqual(kruiseReady(a), { type: 'KruisePodReady', status: 'True' });
    assert.equal(kruiseReady(a), kruiseReady(b), 'one shared object');
    const held = {
      type: 'KruisePodReady',
      status: 'False',
      message: JSON.stringify([PRE_DELETE_HOLDER]),
      lastTransitionTime: '2026-11-29T03:00:00Z',
    } as const;
    const full = gated('c', { ...held, lastProbeTime: null });
    const c = cachedPod(full);
    assert.deepEqual(kruiseReady(c), held);
    // The cached pod answers as the full one: a second holder keeps the time the first one set.
    const other = { userAgent: 'Other', key: 'k' };
    const patch = addNotReadyKeyPatch(c, other, T0 + 60_000);
    assert.deepEqual(patch, addNotReadyKeyPatch(full, other, T0 + 60_000));
    assert.match(JSON.stringify(patch), /"lastTransitionTime":"2026-11-29T03:00:00Z"/);
  });

  test('what is left is a small part of the bytes', () => {
    const ds = newDaemonSet();
    const pod = fullPod(newPod(ds, 'n1', { hash: 'h1', ready: true }));
    const node = fullNode(newNode('n1'));
    const size = (o: unknown) => JSON.stringify(o).length;
    // Measured on these objects: pod 9.6 KB -> 1.2 KB, node 5.5 KB -> 0.6 KB.
    assert.ok(size(cachedPod(pod)) < size(pod) / 4, `pod ${size(pod)} -> ${size(cachedPod(pod))} bytes`);
    assert.ok(size(cachedNode(node)) < size(node) / 4, `node ${size(node)} -> ${size(cachedNode(node))} bytes`);
  });

  test('an update keeps the unchanged parts of the cached object it replaces, with the same content', () => {
    const full = fullNode(newNode('n1', { zone: 'a' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]));
    const node = cachedNode(full);
    // A heartbeat: a new resourceVersion and heartbeat times, nothing the cache keeps besides.
    const beat = structuredClone(full);
    beat.metadata.resourceVersion = '368';
    for (const c of beat.status?.conditions ?? []) c.lastHeartbeatTime = '2026-11-24T02:00:00Z';
    const afterBeat = cachedNode(beat, node);
    assert.deepEqual(afterBeat, cachedNode(beat), 'the same content as without the cached node');
    assert.equal(afterBeat, node, 'a heartbeat: the cached node itself');
    assert.equal(afterBeat.metadata.resourceVersion, '368', 'with the new resourceVersion');
    const relabelled = structuredClone(beat);
    relabelled.metadata.resourceVersion = '369';
    relabelled.metadata.labels = { ...relabelled.metadata.labels, zone: 'b' };
    const afterLabel = cachedNode(relabelled, afterBeat);
    assert.deepEqual(afterLabel, cachedNode(relabelled));
    assert.notEqual(afterLabel, afterBeat, 'a label changed: a new node');
    assert.equal(afterBeat.metadata.resourceVersion, '368', 'the node it replaces is left as it was');
    assert.notEqual(afterLabel.metadata.labels, afterBeat.metadata.labels);
    assert.equal(afterLabel.metadata.labels?.zone, 'b');
    assert.equal(afterLabel.spec, afterBeat.spec);
    assert.equal(afterLabel.status, afterBeat.status);
    // Anything else kept that changes makes a new node too: a taint, a condition's status.
    const tainted = structuredClone(relabelled);
    tainted.metadata.resourceVersion = '370';
    tainted.spec = { ...tainted.spec, taints: [] };
    assert.notEqual(cachedNode(tainted, afterLabel), afterLabel, 'taints changed');
    const notReady = structuredClone(relabelled);
    notReady.metadata.resourceVersion = '371';
    for (const c of notReady.status?.conditions ?? []) if (c.type === 'Ready') c.status = 'False';
    const afterNotReady = cachedNode(notReady, afterLabel);
    assert.notEqual(afterNotReady, afterLabel, 'a condition turned');
    assert.equal(afterNotReady.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
    assert.equal(afterLabel.metadata.resourceVersion, '369');

    const ds = newDaemonSet();
    const pod = fullPod(newPod(ds, 'n1', { name: 'p1', hash: 'h1', ready: true }));
    const cached = cachedPod(pod);
    assert.equal(cachedPod(structuredClone(pod), cached), cached, 'nothing changed: the cached pod itself');
    // A status update: Ready turns False.
    const update = structuredClone(pod);
    update.metadata.resourceVersion = '999';
    const ready = update.status?.conditions?.find((c) => c.type === 'Ready');
    assert.ok(ready);
    ready.status = 'False';
    ready.lastTransitionTime = '2026-11-24T03:00:00Z';
    const updated = cachedPod(update, cached);
    assert.deepEqual(updated, cachedPod(update));
    assert.equal(updated.spec, cached.spec);
    assert.equal(updated.metadata.labels, cached.metadata.labels);
    assert.equal(updated.metadata.ownerReferences, cached.metadata.ownerReferences);
    assert.equal(updated.status?.containerStatuses, cached.status?.containerStatuses);
    assert.notEqual(updated.status?.conditions, cached.status?.conditions);
    for (const c of updated.status?.conditions ?? []) {
      const was = cached.status?.conditions?.find((o) => o.type === c.type);
      if (c.type === 'Ready') assert.notEqual(c, was);
      else assert.equal(c, was, `${c.type} shared`);
    }
  });

  test('shareUnchanged: equal parts from the previous object, different ones kept, never a prototype set', () => {
    const prev = { a: { x: 1 }, b: [1, { y: 2 }], c: 'same' };
    const next = { a: { x: 1 }, b: [1, { y: 3 }], c: 'same' };
    const out = shareUnchanged(next, prev);
    assert.equal(out, next);
    assert.equal(out.a, prev.a);
    assert.notEqual(out.b, prev.b);
    assert.deepEqual(out, { a: { x: 1 }, b: [1, { y: 3 }], c: 'same' });
    assert.equal(shareUnchanged({ a: { x: 1 } }, { a: { x: 1 } }).a.x, 1);
    const whole = { a: [1, 2] };
    assert.equal(shareUnchanged({ a: [1, 2] }, whole), whole, 'all equal: the previous object');
    assert.deepEqual(shareUnchanged({ a: [1, 2] }, { a: [1, 2], b: 1 }), { a: [1, 2] }, 'a key gone is not shared');
    assert.deepEqual(shareUnchanged({ a: [1, 2] }, { a: [1, 2, 3] }), { a: [1, 2] }, 'an element gone');
    assert.deepEqual(shareUnchanged({ a: [1] }, { a: { 0: 1 } }), { a: [1] }, 'an array is not an object');
    assert.deepEqual(shareUnchanged({ a: { 0: 1 } }, { a: [1] }), { a: { 0: 1 } });
    const hostile = JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}');
    const shared = shareUnchanged(hostile, JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}'));
    assert.equal(Object.getPrototypeOf(shared), Object.prototype);
    assert.equal((shared as { polluted?: number }).polluted, undefined);
    assert.deepEqual(Object.keys(shared), ['__proto__', 'a']);
  });

  test('intern: the same value back; the pool never holds more than MAX_INTERNED values', () => {
    assert.equal(intern(undefined), undefined);
    assert.equal(intern('Ready'), 'Ready');
    const base = internedCount();
    assert.equal(intern('Ready'), 'Ready');
    assert.equal(internedCount(), base, 'a value seen before is not added again');
    for (let i = 0; i <= MAX_INTERNED; i++) assert.equal(intern(`unique-${i}`), `unique-${i}`);
    assert.ok(internedCount() <= MAX_INTERNED, `${internedCount()} values held`);
    assert.equal(cachedNode(fullNode(newNode('after-reset', { zone: 'a' }))).metadata.labels?.zone, 'a');
  });

  test('hashConsed: one copy of each part many cached objects hold alike, whatever their order of arrival', () => {
    const ds = newDaemonSet();
    const pods = ['n1', 'n2'].map((n) => cachedPod(fullPod(newPod(ds, n, { hash: 'h1', ready: true }))));
    const [a, b] = pods as [Pod, Pod];
    assert.equal(a.metadata.labels, b.metadata.labels);
    assert.equal(a.metadata.ownerReferences, b.metadata.ownerReferences);
    assert.equal(a.spec.containers, b.spec.containers);
    assert.notEqual(a.spec, b.spec, 'the node differs');
    for (const c of a.status?.conditions ?? []) {
      assert.equal(
        b.status?.conditions?.find((o) => o.type === c.type),
        c,
        `${c.type}: same status and times, one copy`,
      );
    }
    const nodes = ['n1', 'n2'].map((n) => cachedNode(fullNode(newNode(n, { zone: 'a' }))));
    assert.equal(nodes[0]?.status, nodes[1]?.status, 'healthy nodes: one copy of their conditions');
    assert.notEqual(nodes[0]?.metadata.labels, nodes[1]?.metadata.labels, 'the hostname label differs');

    // A string pool and a part pool: a string that reads as JSON is never taken for a part, nor a part for it.
    assert.equal(intern('{"a":1}'), '{"a":1}');
    assert.deepEqual(hashConsed({ a: 1 }), { a: 1 });
    assert.equal(typeof hashConsed({ a: 1 }), 'object');
    const first = hashConsed({ x: 1, y: 2 });
    assert.equal(hashConsed({ x: 1, y: 2 }), first);
    const reordered = hashConsed({ y: 2, x: 1 });
    assert.deepEqual(reordered, { y: 2, x: 1 }, 'another key order: another part, the same content');
    assert.equal(hashConsed(undefined), undefined);
    const long = { message: 'x'.repeat(MAX_CONSED_TEXT) };
    assert.notEqual(hashConsed(structuredClone(long)), hashConsed(long), 'a long part is not pooled');
    assert.deepEqual(hashConsed(long), long);
    for (let i = 0; i <= MAX_INTERNED; i++) assert.deepEqual(hashConsed({ unique: i }), { unique: i });
    assert.ok(hashConsedCount() <= MAX_INTERNED, `${hashConsedCount()} parts held`);
  });

  test('container statuses: one list for the pods whose statuses are equal, of any length', () => {
    const ds = newDaemonSet();
    const status = (name: string, restartCount = 0, message?: string): ContainerStatus => ({
      name,
      image: `registry.example/${name}:1.0.0`,
      imageID: `registry.example/${name}@sha256:${'0'.repeat(64)}`,
      ready: true,
      started: true,
      restartCount,
      state: { running: { startedAt: `2026-11-29T0${restartCount}:00:00Z` } },
      lastState: message ? { terminated: { exitCode: 1, message } } : {},
    });
    const podWith = (node: string, statuses: ContainerStatus[]) => {
      const pod = newPod(ds, node, { hash: 'h1', ready: true });
      pod.status = { ...pod.status, containerStatuses: statuses };
      return cachedPod(fullPod(pod)).status?.containerStatuses;
    };
    const three = (restarts = 0) => ['agent', 'log-shipper', 'metrics-proxy'].map((n) => status(n, restarts));
    const a = podWith('n1', three());
    assert.ok(JSON.stringify(a).length > MAX_CONSED_TEXT, 'longer than a pooled part');
    assert.equal(podWith('n2', three()), a, 'three equal statuses: one list');
    const restarted = podWith('n3', three(1));
    assert.notEqual(restarted, a);
    assert.equal(restarted?.[0]?.restartCount, 1);
    // A part too long to pool is the pod's own, and so is its list.
    const long = () => [status('agent', 0, 'x'.repeat(MAX_CONSED_TEXT))];
    const b = podWith('n4', long());
    assert.notEqual(podWith('n5', long()), b);
    assert.deepEqual(podWith('n5', long()), b);
  });

  test('withoutManagedFields drops only metadata.managedFields, and returns objects without it as they are', () => {
    const rev: ControllerRevision = {
      metadata: { name: 'r', labels: { a: 'b' }, managedFields: [{ manager: 'm' }] },
      data: { spec: {} },
      revision: 2,
    };
    assert.deepEqual(withoutManagedFields(rev), {
      metadata: { name: 'r', labels: { a: 'b' } },
      data: { spec: {} },
      revision: 2,
    });
    assert.equal(rev.metadata.managedFields !== undefined, true, 'the input is not changed');
    const bare: KubeObject = { metadata: { name: 'x' } };
    assert.equal(withoutManagedFields(bare), bare);
  });
});

// ---- the same plans, full and trimmed ----

/** A field read on a full object during planning: the object and the property path from it. */
interface Read {
  root: object;
  path: string[];
}

/** A view of `root` that notes every property read (functions, such as array methods, excepted). */
function recording<T extends object>(root: T, reads: Read[]): T {
  const proxies = new WeakMap<object, object>();
  const wrap = (target: object, path: string[]): object => {
    const known = proxies.get(target);
    if (known) return known;
    const proxy = new Proxy(target, {
      get(t, key, receiver) {
        const v: unknown = Reflect.get(t, key, receiver);
        if (typeof key !== 'string' || typeof v === 'function') return v;
        reads.push({ root, path: [...path, key] });
        return v !== null && typeof v === 'object' ? wrap(v, [...path, key]) : v;
      },
    });
    proxies.set(target, proxy);
    return proxy;
  };
  return wrap(root, []) as T;
}

function at(obj: unknown, path: readonly string[]): unknown {
  let v = obj;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

const kindOf = (v: unknown) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);

/** Every read has the same result on the trimmed object (for objects and arrays: the same kind; their reads follow). */
function checkReads(reads: Read[], trimmedOf: Map<object, object>, seen: Set<string>): void {
  const missing = new Set<string>();
  for (const { root, path } of reads) {
    const trimmed = trimmedOf.get(root);
    if (!trimmed) continue;
    const pattern = `${(root as KubeObject).kind ?? '?'}.${path.map((k) => (/^\d+$/.test(k) ? '[]' : k)).join('.')}`;
    seen.add(pattern);
    const a = at(root, path);
    const b = at(trimmed, path);
    const same = a !== null && typeof a === 'object' ? kindOf(a) === kindOf(b) : Object.is(a, b);
    if (!same) missing.add(`${pattern} (full: ${JSON.stringify(a)?.slice(0, 60)}, trimmed: ${JSON.stringify(b)})`);
  }
  assert.deepEqual([...missing], [], 'fields read by the planner but not kept in the cache');
}

const withManagedFields = <T extends KubeObject>(o: T): T => ({
  ...o,
  metadata: { ...o.metadata, managedFields: [{ manager: 'kube-controller-manager', operation: 'Update' }] },
});

/** Fields the planner read on full objects, over every plan of this file (printed once at the end). */
const readPatterns = new Set<string>();

/**
 * FakeCluster whose every plan is made three times from the same state: with full objects (the plan applied),
 * with them trimmed as the informers cache them (the same plan, or the test fails), and with recording views of
 * the full ones (each field read must have the same value trimmed). Pull pods of the image pre-download live in
 * `pullPods`.
 */
class FullAndTrimmedCluster extends FakeCluster {
  pullPods: Pod[] = [];
  plans = 0;
  /** What the plans did, by kind: creates, deletes by reason, in-place updates, patches by reason, events by reason. */
  readonly did = new Map<string, number>();
  private pullSeq = 0;

  constructor(ds: DaemonSet, nodes: Node[], options?: PlanOptions) {
    super(ds, nodes, options);
  }

  override plan(expectationsSatisfied = true): Plan {
    const base: Omit<DaemonSetSnapshot, 'nodes' | 'pods' | 'revisions' | 'ds'> = {
      now: this.now,
      failedPodsBackoff: this.backoff,
      expectationsSatisfied,
      ...(this.options ? { options: this.options } : {}),
    };
    const full = {
      ds: withManagedFields(this.ds),
      nodes: this.nodes.map(fullNode),
      pods: this.pods.map(fullPod),
      imagePullPods: this.pullPods.map(fullPod),
      revisions: this.revisions.map(withManagedFields),
    };
    const trimmedOf = new Map<object, object>();
    const trim = <T extends object>(list: T[], f: (x: T) => T): T[] =>
      list.map((x) => {
        const t = f(x);
        trimmedOf.set(x, t);
        return t;
      });
    const fullPlan = planDaemonSet({ ...base, ...full });
    const trimmedPlan = planDaemonSet({
      ...base,
      ds: withoutManagedFields(full.ds),
      nodes: trim(full.nodes, cachedNode),
      pods: trim(full.pods, cachedPod),
      imagePullPods: trim(full.imagePullPods, cachedPod),
      revisions: full.revisions.map(withoutManagedFields),
    });
    this.plans++;
    assert.deepEqual(trimmedPlan, fullPlan, `plan ${this.plans}: trimmed objects planned differently`);

    const reads: Read[] = [];
    planDaemonSet({
      ...base,
      ...full,
      nodes: full.nodes.map((n) => recording(n, reads)),
      pods: full.pods.map((p) => recording(p, reads)),
      imagePullPods: full.imagePullPods.map((p) => recording(p, reads)),
    });
    checkReads(reads, trimmedOf, readPatterns);
    const count = (what: string, n = 1) => this.did.set(what, (this.did.get(what) ?? 0) + n);
    count('create', fullPlan.creates.length);
    for (const d of fullPlan.deletes) count(`delete:${d.reason}`);
    count('inPlaceUpdate', fullPlan.inPlaceUpdates.length);
    for (const x of fullPlan.podPatches) count(`patch:${x.reason}`);
    for (const e of fullPlan.events) count(`event:${e.reason}`);
    count('pullPodCreate', fullPlan.imagePreDownload?.creates.length ?? 0);
    count('pullPodDelete', fullPlan.imagePreDownload?.deletes.length ?? 0);
    return fullPlan;
  }

  override apply(p: Plan): void {
    super.apply(p);
    const pre = p.imagePreDownload;
    if (!pre) return;
    const gone = new Set(pre.deletes.map((d) => d.podName));
    this.pullPods = this.pullPods.filter((x) => !gone.has(x.metadata.name ?? ''));
    for (const c of pre.creates) {
      const pod = structuredClone(c.pod);
      const name = `pull-${c.nodeName}-${++this.pullSeq}`;
      pod.metadata = { ...pod.metadata, name, uid: `${name}-uid`, creationTimestamp: formatTime(this.now) };
      pod.spec.nodeName = c.nodeName;
      pod.status = { phase: 'Pending' };
      this.pullPods.push(pod);
    }
  }

  /** The kubelet pulled every pull pod's images; `failed` pulls fail instead. */
  finishPulls(failed: (p: Pod) => boolean = () => false): void {
    this.pullPods = this.pullPods.map((p) =>
      failed(p)
        ? { ...p, status: { phase: 'Failed' } }
        : {
            ...p,
            status: {
              phase: 'Succeeded',
              containerStatuses: p.spec.containers.map((c) => ({
                name: c.name,
                image: c.image ?? '',
                imageID: `${c.image ?? ''}@sha256:2`,
                ready: false,
                restartCount: 0,
                state: { terminated: { exitCode: 0, reason: 'Completed' } },
              })),
            },
          },
    );
  }
}

/** Syncs until nothing is left to do (pods turning Ready, in-place updates restarting containers, pulls done). */
function settle(c: FullAndTrimmedCluster, opts: { max?: number; stepMs?: number; ready?: (p: Pod) => boolean } = {}) {
  for (let i = 0; i < (opts.max ?? 40); i++) {
    const p = c.sync();
    c.kubeletRestartChangedContainers();
    c.finishPulls();
    c.reapTerminating();
    c.markReady(opts.ready);
    c.now += opts.stepMs ?? 1_000;
    if (p.stage === 'Complete' && p.creates.length + p.deletes.length + p.inPlaceUpdates.length === 0) {
      const again = c.plan();
      if (again.creates.length + again.deletes.length + again.inPlaceUpdates.length === 0) return;
    }
  }
}

const rollingUpdate = (rollingUpdate: Record<string, unknown>, extra: Parameters<typeof newDaemonSet>[0] = {}) =>
  newDaemonSet({ strategy: 'RollingUpdate', image: 'foo/bar:v1', rollingUpdate, ...extra });

interface Scenario {
  name: string;
  /** What its plans must have done (FullAndTrimmedCluster.did), so that the comparison covers that path. */
  did: string[];
  run(): FullAndTrimmedCluster;
}

const scenarios: Scenario[] = [
  {
    name: 'steady: creation, then nothing to do (KruisePodReady gate, status only)',
    did: ['create', 'patch:KruisePodReady'],
    run() {
      const c = new FullAndTrimmedCluster(rollingUpdate({ maxUnavailable: 1 }), addNodes(5));
      settle(c);
      for (let i = 0; i < 3; i++) settle(c, { max: 1, stepMs: 60_000 });
      return c;
    },
  },
  {
    name: 'rollout: maxUnavailable 2, minReadySeconds 10',
    did: ['create', 'delete:RollingUpdate'],
    run() {
      const c = new FullAndTrimmedCluster(rollingUpdate({ maxUnavailable: 2 }, { minReadySeconds: 10 }), addNodes(6), {
        kruisePodReadyGate: 'when-needed',
      });
      settle(c, { stepMs: 11_000 });
      c.setImage('foo/bar:v2');
      settle(c, { stepMs: 11_000 });
      return c;
    },
  },
  {
    name: 'surge: maxSurge 1, maxUnavailable 0, a pod slow to turn Ready',
    did: ['delete:SurgeReplaced'],
    run() {
      const c = new FullAndTrimmedCluster(rollingUpdate({ maxSurge: 1, maxUnavailable: 0 }), addNodes(4));
      settle(c);
      c.setImage('foo/bar:v2');
      settle(c, { max: 3, ready: (p) => p.spec.nodeName !== 'node-2' });
      settle(c);
      return c;
    },
  },
  {
    name: 'in place: image change under InPlaceIfPossible, containers restarted by the kubelet',
    did: ['inPlaceUpdate', 'patch:InPlaceUpdateReady'],
    run() {
      const c = new FullAndTrimmedCluster(
        rollingUpdate({ rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 2 }),
        addNodes(4),
      );
      settle(c);
      c.setImage('foo/bar:v2');
      settle(c);
      c.updateSpec((ds) => {
        ds.spec.template.metadata = { ...ds.spec.template.metadata, annotations: { note: 'in place too' } };
        const container = ds.spec.template.spec.containers[0];
        if (container) container.image = 'foo/bar:v3';
      });
      settle(c);
      return c;
    },
  },
  {
    name: 'partition 2 of 5, then 0',
    did: ['delete:RollingUpdate'],
    run() {
      const c = new FullAndTrimmedCluster(rollingUpdate({ maxUnavailable: '100%', partition: 2 }), addNodes(5));
      settle(c);
      c.setImage('foo/bar:v2');
      settle(c);
      c.updateSpec((ds) => {
        (ds.spec.updateStrategy?.rollingUpdate as { partition: number }).partition = 0;
      });
      settle(c);
      return c;
    },
  },
  {
    name: 'rollingUpdate.selector: only labelled nodes update; a node relabelled mid-way',
    did: ['delete:RollingUpdate'],
    run() {
      const nodes = ['a', 'b', 'c', 'd'].map((n, i) => newNode(`node-${n}`, i < 2 ? { canary: 'true' } : {}));
      const c = new FullAndTrimmedCluster(
        rollingUpdate({ maxUnavailable: 1, selector: { matchLabels: { canary: 'true' } } }),
        nodes,
      );
      settle(c);
      c.setImage('foo/bar:v2');
      settle(c, { max: 2 });
      c.nodes = c.nodes.map((n) =>
        n.metadata.name === 'node-c' ? { ...n, metadata: { ...n.metadata, labels: { canary: 'true' } } } : n,
      );
      settle(c);
      return c;
    },
  },
  {
    name: 'taints, tolerations, node selector and affinity; a NoExecute taint evicts mid-way',
    did: ['delete:NodeNotEligible'],
    run() {
      const ds = rollingUpdate(
        { maxUnavailable: 1 },
        {
          templateSpec: {
            nodeSelector: { pool: 'workers' },
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }],
                },
              },
            },
            tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }],
          },
        },
      );
      const workers = { pool: 'workers', zone: 'a' };
      const nodes = [
        newNode('n-plain', workers),
        newNode('n-tolerated', workers, [{ key: 'dedicated', value: 'agents', effect: 'NoSchedule' }]),
        newNode('n-untolerated', workers, [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }]),
        newNode('n-prefer', workers, [{ key: 'soft', effect: 'PreferNoSchedule' }]),
        newNode('n-other-zone', { pool: 'workers', zone: 'c' }),
        newNode('n-other-pool', { pool: 'system', zone: 'a' }),
        { ...newNode('n-cordoned', workers), spec: { unschedulable: true } },
        newNode('n-not-ready', workers, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }]),
      ];
      const c = new FullAndTrimmedCluster(ds, nodes);
      settle(c);
      c.nodes = c.nodes.map((n) =>
        n.metadata.name === 'n-plain' ? { ...n, spec: { taints: [{ key: 'evict', effect: 'NoExecute' }] } } : n,
      );
      c.terminateOnDelete = true;
      settle(c);
      return c;
    },
  },
  {
    name: 'lifecycle preDelete hook (labels, finalizers, markPodNotReady): nodes leaving, then released',
    did: ['patch:PreparingDelete', 'patch:MarkPodNotReady', 'delete:NodeNotEligible'],
    run() {
      const ds = rollingUpdate(
        { maxUnavailable: 1 },
        {
          lifecycle: {
            preDelete: {
              labelsHandler: { hold: 'true' },
              finalizersHandler: ['example.com/hold'],
              markPodNotReady: true,
            },
          },
          templateSpec: { nodeSelector: { run: 'yes' } },
        },
      );
      const c = new FullAndTrimmedCluster(ds, addNodes(4, { run: 'yes' }));
      settle(c);
      c.pods = c.pods.map((p) => ({
        ...p,
        metadata: { ...p.metadata, labels: { ...p.metadata.labels, hold: 'true' }, finalizers: ['example.com/hold'] },
      }));
      c.nodes = c.nodes.map((n, i) => (i < 2 ? { ...n, metadata: { ...n.metadata, labels: { run: 'no' } } } : n));
      settle(c, { max: 3 });
      c.pods = c.pods.map((p) => {
        const { hold: _, ...labels } = p.metadata.labels ?? {};
        return { ...p, metadata: { ...p.metadata, labels, finalizers: [] } };
      });
      settle(c);
      c.setImage('foo/bar:v2');
      settle(c);
      return c;
    },
  },
  {
    name: 'image pre-download by pull pods (parallelism 2), one pull failing',
    did: ['pullPodCreate', 'pullPodDelete', 'patch:ImagePreDownloaded', 'event:FailedPreDownloadImage'],
    run() {
      const ds = rollingUpdate(
        { maxUnavailable: 1 },
        { annotations: { 'apps.kruise.io/image-predownload-parallelism': '2' } },
      );
      const c = new FullAndTrimmedCluster(ds, addNodes(5), { imagePreDownload: 'pods' });
      settle(c);
      c.setImage('foo/bar:v2');
      for (let i = 0; i < 3; i++) {
        c.sync();
        c.finishPulls((p) => p.spec.nodeName === 'node-1');
        c.now += 5_000;
      }
      settle(c);
      return c;
    },
  },
  {
    name: 'failed, succeeded, excess and terminating pods, and a pod pinned to a node that is gone',
    did: ['delete:FailedPod', 'delete:SucceededPod', 'delete:ExcessPod', 'delete:NodeGone'],
    run() {
      const ds = rollingUpdate({ maxUnavailable: 1 });
      const c = new FullAndTrimmedCluster(ds, addNodes(4));
      const hash = c.plan().hash;
      c.pods = [
        newPod(ds, 'node-0', { name: 'failed', hash, ready: false, phase: 'Failed' }),
        newPod(ds, 'node-1', { name: 'done', hash, ready: false, phase: 'Succeeded' }),
        newPod(ds, 'node-2', { name: 'older', hash, ready: true, created: T0 - 60_000 }),
        newPod(ds, 'node-2', { name: 'newer', hash, ready: true }),
        newPod(ds, 'node-3', { name: 'leaving', hash, ready: true, deleting: true }),
        newPod(ds, 'node-gone', { name: 'orphaned', hash, bound: false }),
        newPod(ds, 'node-3', { name: 'old-hash', hash: 'old', ready: true, labels: { extra: 'x' } }),
      ];
      settle(c, { max: 2 });
      c.now += 20 * 60_000;
      settle(c);
      return c;
    },
  },
  {
    name: 'OnDelete: a new template waits for pods deleted by hand',
    did: ['create'],
    run() {
      const c = new FullAndTrimmedCluster(newDaemonSet({ image: 'foo/bar:v1' }), addNodes(3));
      settle(c);
      c.setImage('foo/bar:v2');
      settle(c, { max: 2 });
      c.pods = c.pods.filter((p) => p.spec.nodeName !== 'node-0');
      settle(c);
      return c;
    },
  },
  {
    name: 'canary: two canary nodes observed, one crashing, then rolled back',
    did: ['event:CanaryStarted', 'patch:CanaryLabel', 'event:CanaryFailed'],
    run() {
      const ds = rollingUpdate({
        maxUnavailable: 1,
        canary: { nodes: 2, duration: '10m', noRestartsDuration: '5m', autoFail: { enabled: true, maxRestarts: 2 } },
      });
      const c = new FullAndTrimmedCluster(ds, addNodes(5));
      settle(c);
      c.setImage('foo/bar:v2');
      settle(c, { max: 6 });
      c.pods = c.pods.map((p) =>
        p.spec.nodeName !== 'node-0' || p.spec.containers[0]?.image !== 'foo/bar:v2'
          ? p
          : {
              ...p,
              status: {
                ...p.status,
                conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: formatTime(c.now) }],
                containerStatuses: (p.status?.containerStatuses ?? []).map((s) => ({
                  ...s,
                  restartCount: 5,
                  state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s' } },
                  lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: formatTime(c.now) } },
                })),
              },
            },
      );
      settle(c, { max: 6, ready: (p) => p.spec.nodeName !== 'node-0' });
      c.now += 11 * 60_000;
      settle(c, { ready: (p) => p.spec.nodeName !== 'node-0' });
      return c;
    },
  },
];

describe('the same plans with full objects and with trimmed ones', () => {
  for (const s of scenarios) {
    test(s.name, () => {
      const c = s.run();
      assert.ok(c.plans >= 3, `the scenario planned ${c.plans} times`);
      const did = Object.fromEntries([...c.did].filter(([, n]) => n > 0));
      for (const what of s.did) assert.ok(did[what], `no plan did ${what}: ${JSON.stringify(did)}`);
    });
  }

  test('the fields read cover what each path needs (the recording saw them)', () => {
    // Guards the recording itself: if it saw none of these, the check above would pass for nothing.
    for (const pattern of [
      'Node.metadata.name',
      'Node.metadata.labels',
      'Node.spec.taints',
      'Pod.metadata.labels',
      'Pod.metadata.deletionTimestamp',
      'Pod.spec.containers.[].image',
      'Pod.status.conditions.[].lastTransitionTime',
      'Pod.status.containerStatuses.[].imageID',
      'Pod.status.containerStatuses.[].restartCount',
    ])
      assert.ok(readPatterns.has(pattern), `no plan read ${pattern}; read: ${[...readPatterns].sort().join(', ')}`);
  });
});

describe('node events: the same DaemonSets woken with full and trimmed nodes', () => {
  const ds = rollingUpdate(
    { maxUnavailable: 1, selector: { matchLabels: { canary: 'true' } } },
    { templateSpec: { nodeSelector: { pool: 'workers' } } },
  );
  const base = newNode('n1', { pool: 'workers' });
  const change = (f: (n: Node) => void): Node => {
    const n = fullNode(base);
    f(n);
    return n;
  };
  const rows: { name: string; cur: Node; want: boolean }[] = [
    {
      name: 'heartbeat only',
      cur: change((n) => {
        for (const c of n.status?.conditions ?? []) c.lastHeartbeatTime = '2026-11-24T01:15:46Z';
        n.metadata.resourceVersion = '999';
      }),
      want: false,
    },
    {
      name: 'allocatable and images change',
      cur: change((n) => (n.status = { ...n.status, allocatable: {}, images: [] })),
      want: false,
    },
    { name: 'annotation added', cur: change((n) => (n.metadata.annotations = { x: 'y' })), want: false },
    {
      name: 'label leaves the node selector',
      cur: change((n) => (n.metadata.labels = { pool: 'system' })),
      want: true,
    },
    {
      name: 'label joins the update selector',
      cur: change((n) => (n.metadata.labels = { pool: 'workers', canary: 'true' })),
      want: true,
    },
    {
      name: 'NoExecute taint',
      cur: change((n) => (n.spec = { taints: [{ key: 'evict', effect: 'NoExecute' }] })),
      want: true,
    },
    {
      name: 'Ready turns False (eligibility ignores it, as upstream)',
      cur: change((n) => {
        const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
        if (ready) ready.status = 'False';
      }),
      want: false,
    },
    {
      name: 'cordoned (tolerated by every daemon pod)',
      cur: change((n) => (n.spec = { unschedulable: true })),
      want: false,
    },
  ];
  for (const { name, cur, want } of rows) {
    test(name, () => {
      const old = fullNode(base);
      assert.equal(nodeUpdateAffects(old, cur, ds), want, 'full nodes');
      assert.equal(nodeUpdateAffects(cachedNode(old), cachedNode(cur), ds), want, 'trimmed nodes');
      assert.equal(nodeAddAffects(cachedNode(cur), ds), nodeAddAffects(cur, ds), 'add');
    });
  }
});
