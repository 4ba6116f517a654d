// What the controller keeps of each cached object: transforms applied to every object as it is decoded, before it
// reaches an informer's store, as client-go's SharedIndexInformer.SetTransform / cache.TransformFunc
// (https://github.com/kubernetes/client-go/blob/master/tools/cache/controller.go) and controller-runtime's
// cache.TransformStripManagedFields
// (https://github.com/kubernetes-sigs/controller-runtime/blob/main/pkg/cache/cache.go) do. A node from the apiserver
// carries managedFields, its images, addresses, capacity and nodeInfo; a pod its volumes, env, probes, resources and
// every status detail: most of it never read here, and all of it cached for every node and pod of the cluster.
//
// Each shape keeps exactly what the planner (src/daemonset/*: eligibility, manage, rolling update, in-place update,
// lifecycle hooks, image pre-download, canary, status), the event handlers and the executor read. A new read of a
// field not kept here must add it: cache-shapes.test.ts plans the same snapshots with full and trimmed objects
// and compares the plans, and records every field the planner reads on the full objects.
//
// Objects are rebuilt rather than pruned with `delete`, which would leave V8 dictionary-mode objects (larger and
// slower to read) behind. The executor never writes a cached object back whole: pod writes are patches built from
// a few fields (uid, name, conditions), and the one full update (ControllerRevision, which keeps all but
// managedFields) is accepted without managedFields (the apiserver keeps the stored ones when a request has none).
import type {
  ContainerStatus,
  KubeObject,
  Node,
  NodeCondition,
  ObjectMeta,
  Pod,
  PodCondition,
  PodSpec,
  PodStatus,
} from '../k8s/types.ts';
import { KRUISE_POD_READY } from './constants.ts';
import { isNodeResourcesAnnotation } from './overrides.ts';

/**
 * Drops metadata.managedFields, which nothing here reads and which is often half of an object's bytes
 * (controller-runtime's TransformStripManagedFields). A new object: the input is not changed.
 */
export function withoutManagedFields<T extends KubeObject>(obj: T): T {
  if (!obj.metadata || !('managedFields' in obj.metadata)) return obj;
  const { managedFields: _, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

const interned = new Map<string, string>();
/** Parts shared by hashConsed, by their JSON text (apart from the strings: a string may look like JSON). */
const consed = new Map<string, unknown>();
/** The most values each pool holds. */
export const MAX_INTERNED = 4096;
/**
 * The longest JSON text of a part hashConsed shares. Its pool keeps each text as the key: with this bound it holds
 * about 2 MiB at most, whatever the objects carry (an annotation or a termination message may be kilobytes long).
 */
export const MAX_CONSED_TEXT = 512;
/**
 * Values of one node that its daemon pods share (its name, their node affinity), one entry per node: pods of a node
 * come far apart in a list (sorted by namespace and name), so the small pools above would have been emptied between
 * them. At 65,536 nodes this pool holds about 10 MB and saves about 250 B of each of 20 pods per node (bench/README.md
 * section 8).
 */
const perNodePool = new Map<string, unknown>();
export const MAX_PER_NODE = 131_072;

/** How many values each pool holds (tests). */
export function internedCount(): number {
  return interned.size;
}
export function hashConsedCount(): number {
  return consed.size;
}

/** `value`'s copy in `pool` under `key`, or `value`, now the pool's; a full pool is emptied first. */
function shared<V>(pool: Map<string, V>, key: string, value: V): V {
  const known = pool.get(key);
  if (known !== undefined) return known;
  if (pool.size >= MAX_INTERNED) pool.clear();
  pool.set(key, value);
  return value;
}

/** `value`'s copy in the per-node pool (perNodePool) under `key`, or `value`, now the pool's. */
function perNode<V>(key: string, value: V): V {
  const known = perNodePool.get(key);
  if (known !== undefined) return known as V;
  if (perNodePool.size >= MAX_PER_NODE) perNodePool.clear();
  perNodePool.set(key, value);
  return value;
}

/**
 * One copy of each repeated string value. JSON.parse gives every object its own copy of each string value:
 * "Ready" and "True" in every node's conditions, the image, the owner's uid, the namespace in every pod. Interned
 * here, the copies in the decoded object become garbage and the cache holds one of each (heap snapshot, 1,000 nodes
 * and pods: 0.9 MiB of such copies; bench/README.md, section 6). Only fields whose values repeat across objects go
 * through it, and the pool is bounded: once full, it is emptied and starts over, so an unexpected spread of values
 * costs at most MAX_INTERNED entries (values already cached stay shared).
 */
export function intern<T extends string | undefined>(value: T): T {
  return value === undefined ? value : (shared(interned, value, value) as T);
}

/**
 * One copy of each repeated part (hash-consing, as `intern` for strings): the parts many cached objects hold
 * alike, such as every healthy node's conditions, a DaemonSet's pods' labels, owner references and containers, and
 * the conditions of pods that turned Ready in the same second (with 5,000 nodes and pods cached, the cache holds
 * some 40,000 node conditions and 26,000 pod conditions, most of them equal to another). Keyed by the JSON text, so
 * the same keys in another order make another part (never a wrong one). For parts whose values repeat across
 * objects; a longer one (MAX_CONSED_TEXT) is left as it is, and the pool is bounded as `intern`'s. The parts are
 * cached objects: never modified.
 */
export function hashConsed<T>(value: T): T {
  return value === undefined ? value : (pooledCopy(value) ?? value);
}

/** hashConsed's copy of `value`; undefined when its text is too long to be pooled (MAX_CONSED_TEXT). */
function pooledCopy<T>(value: T): T | undefined {
  const text = JSON.stringify(value);
  return text.length > MAX_CONSED_TEXT ? undefined : (shared(consed, text, value) as T);
}

/** Lists of pooled parts, by the parts' numbers (sharedList). */
const sharedLists = new Map<string, unknown[]>();
/** A number for each pooled part a list of sharedList holds. */
const partNumbers = new WeakMap<object, number>();
let nextPartNumber = 0;

/**
 * One copy of each list of pooled parts (`parts`, each one copy already): a DaemonSet's running pods hold equal
 * container statuses, and each pod had an array of its own for them (56 B in each of the 1.3 million pods a
 * 65,000-node cluster with 20 DaemonSets caches; bench/README.md section 8). Keyed by the parts' identities, so a
 * list of two or three containers is shared too, where its text could be longer than MAX_CONSED_TEXT. The pool is
 * bounded as `intern`'s.
 */
function sharedList<T extends object>(parts: T[]): T[] {
  let key = '';
  for (const part of parts) {
    let n = partNumbers.get(part);
    if (n === undefined) partNumbers.set(part, (n = nextPartNumber++));
    key += `${n},`;
  }
  return shared(sharedLists, key, parts) as T[];
}

/**
 * `next`, an object just trimmed for the cache, with every part that equals the same part of `prev` (the cached
 * object it replaces) taken from `prev`, as persistent data structures share what an update leaves unchanged. Most
 * updates change little of what is kept: a node's heartbeat only its resourceVersion, a pod's status update a
 * condition or two. The cache then holds one copy of the rest, and what an update leaves behind for the old
 * generation's collector (the cached object it replaces lived long enough to be promoted) is only what changed.
 * Returns `prev` itself when all of `next` equals it. Changes `next` in place: only for objects made for the cache
 * and not yet shared (their parts taken from the decoded object are not shared either). Cached objects are never
 * modified (src/daemonset/memo.ts finds changes by the identity of the top-level objects only), so sharing parts
 * of them is safe; the one exception, a node's resourceVersion after a heartbeat (cachedNode), is no part shared.
 */
export function shareUnchanged<T>(next: T, prev: unknown): T {
  if (next === prev) return prev as T;
  if (typeof next !== 'object' || next === null || typeof prev !== 'object' || prev === null) return next;
  if (Array.isArray(next)) {
    if (!Array.isArray(prev)) return next;
    let same = next.length === prev.length;
    for (let i = 0; i < next.length && i < prev.length; i++) {
      next[i] = shareUnchanged(next[i], prev[i]);
      same &&= next[i] === prev[i];
    }
    return (same ? prev : next) as T;
  }
  if (Array.isArray(prev)) return next;
  const n = next as Record<string, unknown>;
  const p = prev as Record<string, unknown>;
  let same = true;
  let count = 0;
  for (const k of Object.keys(n)) {
    count++;
    // JSON.parse makes `__proto__` an own property; assigning it would set the prototype instead.
    if (k === '__proto__' || !Object.hasOwn(p, k)) {
      same = false;
      continue;
    }
    n[k] = shareUnchanged(n[k], p[k]);
    same &&= n[k] === p[k];
  }
  return (same && count === Object.keys(p).length ? prev : next) as T;
}

/** Labels with interned values; the keys are interned by V8 already (property names). */
function internValues(map: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!map) return map;
  const out: Record<string, string> = {};
  for (const k in map) out[k] = intern(map[k]!);
  return out;
}

/**
 * creationTimestamp interned: objects made together share the second (a DaemonSet's pods, nodes added in a batch), as
 * pods share their conditions' transition times (about 50,000 timestamps, 2 MiB, with 5,000 nodes and pods cached).
 */
function internTimestamp(meta: ObjectMeta): void {
  if (meta.creationTimestamp !== undefined) meta.creationTimestamp = intern(meta.creationTimestamp);
}

/**
 * A plain object made by a constructor of its own, for the shapes the cache holds by the million. V8 sizes the
 * objects of a constructor from the properties its first objects got (in-object slack tracking,
 * https://v8.dev/blog/slack-tracking), where an object started as `{}` keeps 4 properties in itself and the rest
 * in a separate, over-allocated PropertyArray. A pod's metadata (8 properties) and spec (4, from a 1-property
 * literal) carried one each: 102 B per cached pod (heap snapshot at 10,000 nodes and 20 DaemonSets; 32 B less per
 * metadata in isolation). `common`, the arguments of an object with the optional fields most objects have, is made
 * once here: slack tracking then leaves room for them, where the first objects the informer decodes (pods not yet
 * scheduled or gated, nodes without taints) would size the rest one field short, that field in a PropertyArray of
 * its own (a heap snapshot of the 5,000-node scale run, bench/README.md section 7: 11,355 nodes, 16,491 pod
 * statuses and 5,617 pod specs with one, 1.5 MiB). A field left out of it costs a PropertyArray where it is set, a
 * field in it a slot in every object. The prototype is Object.prototype: the objects are plain objects to every
 * reader (deepStrictEqual, JSON, spread).
 */
function plainConstructor<A extends unknown[]>(
  init: (this: Record<string, unknown>, ...args: A) => void,
  common?: A,
): new (...args: A) => Record<string, unknown> {
  init.prototype = Object.prototype;
  const made = init as unknown as new (...args: A) => Record<string, unknown>;
  // Kept: a shape no live object has leaves the constructor's transition tree at the next collection, and slack
  // tracking, which ends after a few more objects, would no longer see it (a collection in between: 97 B an object
  // with the sample dropped, 65 B with it kept, 4 fields).
  if (common) commonSamples.push(new made(...common));
  return made;
}

const commonSamples: unknown[] = [];

/** A function copying the listed keys that are present (not undefined), in that order (plainConstructor's objects). */
function picker<K extends string>(keys: readonly K[]) {
  const Picked = plainConstructor(function (from: Record<string, unknown>) {
    for (const k of keys) {
      const v = from[k];
      if (v !== undefined) this[k] = v;
    }
  });
  return <T extends Partial<Record<K, unknown>>>(from: T | undefined): Pick<T, K> =>
    (from ? new Picked(from) : {}) as Pick<T, K>;
}

/**
 * Identity, ownership and what selectors, claims, expectations, lifecycle hooks and in-place updates read:
 * labels, annotations (inplace-update-state, pre-download marks, lifecycle timestamps), finalizers (lifecycle
 * finalizer hooks), ownerReferences (controllerRef), deletionTimestamp, resourceVersion (expectations, informer
 * replace), creationTimestamp (pod ordering, canary start).
 */
const META_KEYS = [
  'name',
  'generateName',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
] as const satisfies readonly (keyof ObjectMeta)[];

/** Eligibility (nodeShouldRunDaemonPod, strategy selectors, canary spread) reads names, labels and taints only. */
const NODE_META_KEYS = ['name', 'uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'labels'] as const;

const pickPodMeta = picker(META_KEYS);
const pickNodeMeta = picker(NODE_META_KEYS);
const pickNodeSpec = picker(['taints', 'unschedulable'] as const);

/**
 * A node as the controller caches it: name, labels, taints, unschedulable and its conditions' type and status.
 * nodeShouldRunDaemonPod reads the name (template nodeName, matchFields), labels (nodeSelector, required node
 * affinity, rollingUpdate.selector, canary spread) and taints; the node event handler compares the set of True
 * condition types (nodeInSameCondition) and everything else it keeps (shouldIgnoreNodeUpdate), so a heartbeat,
 * which only moves condition times, wakes no DaemonSet. spec.unschedulable is kept for the node event handler's
 * comparison (cordoning is tolerated through the daemon tolerations, as upstream). Of the annotations only the per-node
 * resources ones (overrides.ts) are kept. Resources (allocatable, capacity), images, addresses and nodeInfo are not
 * read: the scheduler checks resources.
 * `previous`, the cached node it replaces, lends its unchanged parts (shareUnchanged). After a heartbeat, where
 * nothing kept changed but the resourceVersion, it is `previous` itself, its resourceVersion moved to the new one: the
 * one change ever made to a cached object, so that a kubelet's heartbeat (an unchanged status every 5 minutes)
 * makes no new node, no new sorted node list (Indexer.set), no update to tell (Informer.upsert), and leaves no old
 * version behind in the memo of each DaemonSet that has not synced since (6,582 of them in a heap snapshot at
 * 5,000 nodes, bench/README.md section 8). The resourceVersion is kept up to date for the node readiness patch,
 * whose guard tests it (controller/daemonset/node-readiness.ts, taintsPatch); nothing compares it.
 */
export function cachedNode(node: Node, previous?: Node): Node {
  const metadata: ObjectMeta = pickNodeMeta(node.metadata);
  internTimestamp(metadata);
  // Zone, region, instance type, OS, architecture, pool: the values of most node labels repeat across nodes.
  if (metadata.labels) metadata.labels = internValues(metadata.labels);
  // Of the annotations, only per-node resources (overrides.ts); most nodes have none, and share one empty object.
  if (node.metadata.annotations)
    metadata.annotations = nodeResourcesAnnotations(node.metadata.annotations) ?? NO_ANNOTATIONS;
  const conditions = node.status?.conditions;
  const out = new CachedNode(
    metadata,
    node.apiVersion,
    node.kind,
    // An object the apiserver sent stays an object (empty, if nothing of it is kept): readers may test for it.
    node.spec && hashConsed(pickNodeSpec(node.spec)),
    node.status &&
      hashConsed(
        conditions
          ? { conditions: conditions.map((c): NodeCondition => ({ type: intern(c.type), status: intern(c.status) })) }
          : {},
      ),
  ) as Node;
  if (!previous) return out;
  const shared = shareUnchanged(out, previous);
  if (shared === previous || !onlyResourceVersionMoved(shared, previous)) return shared;
  previous.metadata.resourceVersion = shared.metadata.resourceVersion;
  return previous;
}

/** Whether two cached nodes, their unchanged parts shared, differ in their resourceVersion alone. */
function onlyResourceVersionMoved(a: Node, b: Node): boolean {
  if (a.spec !== b.spec || a.status !== b.status || a.apiVersion !== b.apiVersion || a.kind !== b.kind) return false;
  const am = a.metadata as Record<string, unknown>;
  const bm = b.metadata as Record<string, unknown>;
  const keys = Object.keys(am);
  return (
    keys.length === Object.keys(bm).length &&
    keys.every((k) => k === 'resourceVersion' || (Object.hasOwn(bm, k) && am[k] === bm[k]))
  );
}

/** cachedNode's objects: metadata, apiVersion and kind (interned), spec and status, each when present. */
const CachedNode = plainConstructor(
  function (
    metadata: ObjectMeta,
    apiVersion: string | undefined,
    kind: string | undefined,
    spec: Node['spec'],
    status: Node['status'],
  ) {
    this.metadata = metadata;
    if (apiVersion !== undefined) this.apiVersion = intern(apiVersion);
    if (kind !== undefined) this.kind = intern(kind);
    if (spec !== undefined) this.spec = spec;
    if (status !== undefined) this.status = status;
  },
  [{}, 'v1', 'Node', {}, {}],
);

const NO_ANNOTATIONS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** The per-node resources annotations (ours and EDS's) of a node, or undefined when it has none. */
function nodeResourcesAnnotations(annotations: Record<string, string> | undefined): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const k in annotations) {
    if (Object.hasOwn(annotations, k) && isNodeResourcesAnnotation(k)) (out ??= {})[k] = annotations[k] as string;
  }
  return out;
}

/**
 * The spec fields the planner reads on existing pods: the node it is for (nodeName, else the matchFields affinity
 * term, getTargetNodeName), containers' names and images (in-place update completion, images to pre-download),
 * readinessGates (KruisePodReady, InPlaceUpdateReady), containers' resources and resizePolicy (in-place resize).
 * Volumes, env, probes, tolerations and the rest are the kubelet's and the scheduler's.
 */
function cachedPodSpec(spec: PodSpec | undefined): PodSpec {
  const required = spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  return new CachedPodSpec(
    hashConsed(cachedContainers(spec?.containers)),
    spec?.nodeName !== undefined ? perNode(spec.nodeName, spec.nodeName) : undefined,
    // A DaemonSet's pods on a node share one affinity (matchFields metadata.name In [node], newPod in pods.ts).
    required
      ? perNode(JSON.stringify(required), {
          nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: required },
        })
      : undefined,
    spec?.readinessGates ? hashConsed(spec.readinessGates) : undefined,
  ) as PodSpec;
}

/**
 * cachedPodSpec's objects: the fields present (not undefined), in this order. Room is kept for all four: the
 * controller's pods carry the KruisePodReady gate by default.
 */
const CachedPodSpec = plainConstructor(
  function (
    containers: PodSpec['containers'],
    nodeName: string | undefined,
    affinity: PodSpec['affinity'],
    readinessGates: PodSpec['readinessGates'],
  ) {
    this.containers = containers;
    if (nodeName !== undefined) this.nodeName = nodeName;
    if (affinity !== undefined) this.affinity = affinity;
    if (readinessGates !== undefined) this.readinessGates = readinessGates;
  },
  [[], '', {}, []],
);

/**
 * Name and image of each container, and its resources and resizePolicy when set (in-place resize, resize.ts: what
 * the pod holds against what its revision asks for). The containers of a DaemonSet's pods are alike, so they are
 * hash-consed as one part; a pod that holds per-node resources holds the list of its node group.
 */
function cachedContainers(containers: PodSpec['containers'] | undefined): PodSpec['containers'] {
  return (containers ?? []).map((c) => {
    const out: PodSpec['containers'][number] = { name: intern(c.name) };
    if (c.image !== undefined) out.image = intern(c.image);
    if (c.resources !== undefined) out.resources = c.resources;
    if (c.resizePolicy !== undefined) out.resizePolicy = c.resizePolicy;
    return out;
  });
}

/**
 * What is read of a container status: the in-place update's imageID and image comparison, restartCount
 * (in-place update state, canary health), ready/started, state and lastState (canary: waiting reasons, last
 * termination), resources (a resize is done when they report the spec's). Volume mounts, containerID, user and
 * allocatedResources are not.
 */
const CONTAINER_STATUS_KEYS = [
  'name',
  'image',
  'imageID',
  'ready',
  'started',
  'restartCount',
  'state',
  'lastState',
  'resources',
] as const satisfies readonly (keyof ContainerStatus)[];

const pickContainerStatus = picker(CONTAINER_STATUS_KEYS);

function containerStatuses(list: unknown): ContainerStatus[] | undefined {
  if (!Array.isArray(list)) return undefined;
  let pooled = true;
  const statuses = (list as ContainerStatus[]).map((s) => {
    const out = pickContainerStatus(s) as ContainerStatus;
    out.name = intern(out.name);
    if (out.image !== undefined) out.image = intern(out.image);
    if (out.imageID !== undefined) out.imageID = intern(out.imageID);
    // Of a running container's state only that it runs: its startedAt, different in every pod, is never read (canary
    // health reads waiting and terminated), so the statuses of a DaemonSet's running pods are one shared object.
    if (out.state?.running) out.state = { ...out.state, running: {} };
    const last = out.lastState as Record<string, unknown> | undefined;
    if (last?.running) out.lastState = { ...last, running: {} };
    const copy = pooledCopy(out);
    if (copy === undefined) pooled = false;
    return copy ?? out;
  });
  return pooled ? sharedList(statuses) : statuses;
}

/**
 * The fields kept of each pod condition type read past its type: all but lastProbeTime, which nothing reads (the
 * kubelet writes it null), for Ready (its lastTransitionTime for availability), KruisePodReady (the message listing
 * its holders, and while False its lastTransitionTime, which adding a holder keeps) and the resize conditions (reason
 * and message); InPlaceUpdateReady whole, as a revert writes it back as it was; PodScheduled's reason (unhealthy.ts).
 * Other types (Initialized, ContainersReady, PodReadyToStartContainers...) keep type and status, the same in most
 * pods: one shared object each.
 */
const ALL_BUT_PROBE_TIME = ['type', 'status', 'reason', 'message', 'lastTransitionTime'] as const;
const NO_TIMES = ['type', 'status', 'reason', 'message'] as const;
const CONDITION_KEYS: Record<string, readonly (keyof PodCondition)[] | 'all'> = {
  Ready: ALL_BUT_PROBE_TIME,
  KruisePodReady: ALL_BUT_PROBE_TIME,
  InPlaceUpdateReady: 'all',
  PodResizePending: ALL_BUT_PROBE_TIME,
  PodResizeInProgress: ALL_BUT_PROBE_TIME,
  PodScheduled: NO_TIMES,
};

/**
 * KruisePodReady True, as the controller sets it on every pod it creates: no time is read, so one object is shared
 * by all such pods where each had its own (48 B in each of the 1.3 million pods of a 65,000-node cluster with 20
 * DaemonSets; bench/README.md section 8).
 */
const pickKruisePodReadyTrue = picker(NO_TIMES);

const pickTypeAndStatus = picker(['type', 'status'] as const);
const conditionPickers = new Map(
  Object.entries(CONDITION_KEYS).map(([type, keys]) => [type, keys === 'all' ? 'all' : picker(keys)] as const),
);

function cachedCondition(c: PodCondition): PodCondition {
  const pickKeys =
    c.type === KRUISE_POD_READY && c.status === 'True'
      ? pickKruisePodReadyTrue
      : (conditionPickers.get(c.type) ?? pickTypeAndStatus);
  const copy = (pickKeys === 'all' ? { ...c } : pickKeys(c)) as PodCondition;
  copy.type = intern(c.type);
  copy.status = intern(c.status);
  if (copy.lastTransitionTime !== undefined) copy.lastTransitionTime = intern(copy.lastTransitionTime);
  return hashConsed(copy);
}

/**
 * Phase (terminal pods, pull pods), observedGeneration, conditions (CONDITION_KEYS) and the container statuses of
 * every kind (canary health counts init and ephemeral containers too).
 */
function cachedPodStatus(status: PodStatus | undefined): PodStatus | undefined {
  if (!status) return undefined;
  return new CachedPodStatus(
    status.phase,
    // Whether the kubelet has seen a resize (resize.ts, resizeProgress).
    status.observedGeneration as number | undefined,
    status.conditions?.map(cachedCondition),
    containerStatuses(status.containerStatuses),
    containerStatuses(status.initContainerStatuses),
    containerStatuses(status.ephemeralContainerStatuses),
  ) as PodStatus;
}

/**
 * cachedPodStatus's objects: the fields present, in this order. Room is kept for all but the ephemeral containers'
 * statuses (kubectl debug's).
 */
const CachedPodStatus = plainConstructor(
  function (
    phase: string | undefined,
    observedGeneration: number | undefined,
    conditions: PodStatus['conditions'],
    containerStatuses: PodStatus['containerStatuses'],
    initContainerStatuses: PodStatus['initContainerStatuses'],
    ephemeralContainerStatuses: PodStatus['ephemeralContainerStatuses'],
  ) {
    if (phase !== undefined) this.phase = intern(phase);
    if (observedGeneration !== undefined) this.observedGeneration = observedGeneration;
    if (conditions !== undefined) this.conditions = conditions;
    if (containerStatuses !== undefined) this.containerStatuses = containerStatuses;
    if (initContainerStatuses !== undefined) this.initContainerStatuses = initContainerStatuses;
    if (ephemeralContainerStatuses !== undefined) this.ephemeralContainerStatuses = ephemeralContainerStatuses;
  },
  ['Running', 0, [], [], [], undefined],
);

/**
 * META_KEYS, with the values a DaemonSet's pods share interned: namespace, generateName, label values (app, hash,
 * generation) and the owner reference (the DaemonSet's apiVersion, kind, name and uid).
 */
function cachedPodMeta(meta: ObjectMeta | undefined): ObjectMeta {
  const out: ObjectMeta = pickPodMeta(meta);
  internTimestamp(out);
  if (out.namespace !== undefined) out.namespace = intern(out.namespace);
  if (out.generateName !== undefined) out.generateName = intern(out.generateName);
  if (out.labels) out.labels = hashConsed(internValues(out.labels));
  if (out.annotations) out.annotations = hashConsed(out.annotations);
  if (out.finalizers) out.finalizers = hashConsed(out.finalizers);
  if (out.ownerReferences) {
    out.ownerReferences = hashConsed(
      out.ownerReferences.map((r) => ({
        ...r,
        apiVersion: intern(r.apiVersion),
        kind: intern(r.kind),
        name: intern(r.name),
        uid: intern(r.uid),
      })),
    );
  }
  return out;
}

/**
 * A pod as the controller caches it (the fields above); daemon pods, pull pods and others alike. `previous`, the
 * cached pod it replaces, lends its unchanged parts (shareUnchanged).
 */
export function cachedPod(pod: Pod, previous?: Pod): Pod {
  const out = new CachedPod(
    cachedPodMeta(pod.metadata),
    cachedPodSpec(pod.spec),
    pod.apiVersion,
    pod.kind,
    cachedPodStatus(pod.status),
  ) as Pod;
  return previous ? shareUnchanged(out, previous) : out;
}

/** cachedPod's objects: metadata, spec, then apiVersion and kind (interned) and status when present. */
const CachedPod = plainConstructor(function (
  metadata: ObjectMeta,
  spec: PodSpec,
  apiVersion: string | undefined,
  kind: string | undefined,
  status: PodStatus | undefined,
) {
  this.metadata = metadata;
  this.spec = spec;
  if (apiVersion !== undefined) this.apiVersion = intern(apiVersion);
  if (kind !== undefined) this.kind = intern(kind);
  if (status !== undefined) this.status = status;
});
