// Test fixtures for the planner tables, after upstream's daemon_controller_test.go helpers (newNode,
// newDaemonSet, newPod, expectSyncDaemonSets) plus a tiny in-memory cluster where creates and deletes are
// instant, as with upstream's fake clients. Used by *.test.ts only.
import assert from 'node:assert/strict';
import type { DaemonSetSetting } from '../api/setting.ts';
import type { DaemonSet } from '../api/types.ts';
import type { ControllerRevision, Node, Pod, PodCondition, Taint } from '../k8s/types.ts';
import { formatTime, isPodReady } from '../k8s/pod.ts';
import type { BackoffState } from './backoff.ts';
import { CONTROLLER_REVISION_HASH_LABEL } from './constants.ts';
import { PlanMemo } from './memo.ts';
import { planDaemonSet } from './plan.ts';
import type { DaemonSetSnapshot, NodeChanges, Plan, PlanOptions } from './plan-types.ts';

export const T0 = Date.parse('2024-01-01T00:00:00Z');

export const SIMPLE_DAEMON_LABELS = { name: 'simple-daemon', type: 'production' };

/** The controllerRef that pods of newDaemonSet() (name foo) must carry: set on new pods, written on adoption. */
export const FOO_CONTROLLER_REF = {
  apiVersion: 'apps.kruise.io/v1alpha1',
  kind: 'DaemonSet',
  name: 'foo',
  uid: 'foo-uid',
  controller: true,
  blockOwnerDeletion: true,
};

export function newNode(name: string, labels: Record<string, string> = {}, taints?: Taint[]): Node {
  const node: Node = { apiVersion: 'v1', kind: 'Node', metadata: { name, labels } };
  if (taints) node.spec = { taints };
  return node;
}

export function addNodes(count: number, labels: Record<string, string> = {}, start = 0): Node[] {
  return Array.from({ length: count }, (_, i) => newNode(`node-${start + i}`, labels));
}

export interface DaemonSetOptions {
  name?: string;
  image?: string;
  strategy?: 'RollingUpdate' | 'OnDelete';
  rollingUpdate?: Record<string, unknown>;
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
  burstReplicas?: number | string;
  annotations?: Record<string, string>;
  templateSpec?: Record<string, unknown>;
  lifecycle?: Record<string, unknown>;
}

/** DaemonSet "foo" (OnDelete unless told), selector/labels simple-daemon, generation 1, uid "foo-uid". */
export function newDaemonSet(opts: DaemonSetOptions = {}): DaemonSet {
  const name = opts.name ?? 'foo';
  const strategy = opts.strategy ?? 'OnDelete';
  const ds = {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: {
      name,
      namespace: 'default',
      uid: `${name}-uid`,
      generation: 1,
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      selector: { matchLabels: { ...SIMPLE_DAEMON_LABELS } },
      template: {
        metadata: { labels: { ...SIMPLE_DAEMON_LABELS } },
        spec: {
          containers: [{ name: 'foo', image: opts.image ?? 'foo/bar' }],
          ...(opts.templateSpec ?? {}),
        },
      },
      updateStrategy:
        strategy === 'OnDelete'
          ? { type: 'OnDelete' }
          : { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, ...(opts.rollingUpdate ?? {}) } },
      minReadySeconds: opts.minReadySeconds ?? 0,
      revisionHistoryLimit: opts.revisionHistoryLimit ?? 2,
      ...(opts.burstReplicas !== undefined ? { burstReplicas: opts.burstReplicas } : {}),
      ...(opts.lifecycle ? { lifecycle: opts.lifecycle } : {}),
    },
    status: {
      currentNumberScheduled: 0,
      numberMisscheduled: 0,
      desiredNumberScheduled: 0,
      numberReady: 0,
    },
  };
  return ds as unknown as DaemonSet;
}

export interface PodOptions {
  name?: string;
  hash?: string;
  ready?: boolean;
  /** When the Ready condition last changed (ms); default T0. */
  readySince?: number;
  phase?: NonNullable<Pod['status']>['phase'];
  deleting?: boolean;
  created?: number;
  /** Bound to the node (spec.nodeName) rather than pinned by affinity only. */
  bound?: boolean;
  labels?: Record<string, string>;
}

let podSeq = 0;

/** A daemon pod of `ds` on `nodeName` (pinned by matchFields affinity, bound unless told). */
export function newPod(ds: DaemonSet, nodeName: string, opts: PodOptions = {}): Pod {
  const name = opts.name ?? `${ds.metadata.name}-${nodeName}-${++podSeq}`;
  const labels: Record<string, string> = { ...SIMPLE_DAEMON_LABELS, ...(opts.labels ?? {}) };
  if (opts.hash !== undefined) labels[CONTROLLER_REVISION_HASH_LABEL] = opts.hash;
  const conditions: PodCondition[] = [];
  if (opts.ready !== undefined) {
    conditions.push({
      type: 'Ready',
      status: opts.ready ? 'True' : 'False',
      lastTransitionTime: formatTime(opts.readySince ?? T0),
    });
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'default',
      uid: `${name}-uid`,
      labels,
      creationTimestamp: formatTime(opts.created ?? T0),
      ...(opts.deleting ? { deletionTimestamp: formatTime(T0) } : {}),
      ownerReferences: [
        {
          apiVersion: 'apps.kruise.io/v1alpha1',
          kind: 'DaemonSet',
          name: ds.metadata.name ?? '',
          uid: ds.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      ...(opts.bound === false ? {} : { nodeName }),
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [nodeName] }] }],
          },
        },
      },
      containers: [{ name: 'foo', image: 'foo/bar' }],
    },
    status: { phase: opts.phase ?? 'Running', conditions },
  };
}

/** A DaemonSetSetting of `ds` (its namespace), created at `created`, for the nodes `matchLabels` selects (all without). */
export function newSetting(
  ds: DaemonSet,
  name: string,
  created: string,
  containers: DaemonSetSetting['spec']['containers'],
  matchLabels?: Record<string, string>,
  reference = ds.metadata.name ?? '',
): DaemonSetSetting {
  return {
    apiVersion: 'advanced-daemonset.io/v1alpha1',
    kind: 'DaemonSetSetting',
    metadata: { name, namespace: ds.metadata.namespace, creationTimestamp: created, generation: 1, uid: `${name}-uid` },
    spec: {
      reference: { kind: 'DaemonSet', name: reference },
      ...(matchLabels ? { nodeSelector: { matchLabels } } : {}),
      containers,
    },
  };
}

export function snapshot(
  ds: DaemonSet,
  nodes: Node[],
  pods: Pod[] = [],
  extra: Partial<DaemonSetSnapshot> = {},
): DaemonSetSnapshot {
  return { ds, nodes, pods, revisions: [], now: T0, ...extra };
}

/** Plan once and return it (revisions auto-created so the hash is the planned one). */
export function plan(ds: DaemonSet, nodes: Node[], pods: Pod[] = [], extra: Partial<DaemonSetSnapshot> = {}): Plan {
  return planDaemonSet(snapshot(ds, nodes, pods, extra));
}

function deepMerge(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (k === 'containers' && Array.isArray(v)) {
      const list = [...((out[k] as Record<string, unknown>[] | undefined) ?? [])];
      for (const c of v as Record<string, unknown>[]) {
        const i = list.findIndex((x) => x.name === c.name);
        if (i >= 0) list[i] = { ...list[i], ...c };
        else list.push(c);
      }
      out[k] = list;
    } else if (k === 'conditions' && Array.isArray(v)) {
      const list = [...((out[k] as PodCondition[] | undefined) ?? [])];
      for (const c of v as PodCondition[]) {
        const i = list.findIndex((x) => x.type === c.type);
        if (i >= 0) list[i] = { ...list[i], ...c } as PodCondition;
        else list.push(c);
      }
      out[k] = list;
    } else if (v && typeof v === 'object' && !Array.isArray(v)) {
      out[k] = deepMerge((out[k] as Record<string, unknown>) ?? {}, v as Record<string, unknown>);
    } else if (v === null) {
      // Strategic merge (and JSON merge) patch: null removes the key.
      delete out[k];
    } else {
      out[k] = v;
    }
  }
  return out;
}

/** `last` when `now` holds the same objects in the same places, else a copy of `now`. */
function sameOrCopy<T>(last: T[], now: T[]): T[] {
  return last.length === now.length && now.every((o, i) => o === last[i]) ? last : [...now];
}

/**
 * The names of the nodes added, replaced or gone from `since` to `nodes`, as the node store tells them
 * (Indexer.changedKeysSince); undefined unless both lists are in name order.
 */
export function nodeChangesBetween(since: readonly Node[], nodes: readonly Node[]): NodeChanges | undefined {
  const name = (n: Node) => n.metadata.name ?? '';
  const inOrder = (list: readonly Node[]) => list.every((n, i) => i === 0 || name(list[i - 1] as Node) < name(n));
  if (!inOrder(since) || !inOrder(nodes)) return undefined;
  const before = new Map(since.map((n) => [name(n), n]));
  const names = nodes.filter((n) => before.get(name(n)) !== n).map(name);
  const now = new Set(nodes.map(name));
  names.push(...[...before.keys()].filter((k) => !now.has(k)));
  return { since, names };
}

/**
 * An in-memory cluster: sync() plans and applies the plan at once (creates get a name, creationTimestamp = now,
 * are bound to their node and are not Ready; deletes vanish, or become terminating with `terminateOnDelete`).
 */
export class FakeCluster {
  ds: DaemonSet;
  nodes: Node[];
  pods: Pod[] = [];
  revisions: ControllerRevision[] = [];
  now = T0;
  backoff: BackoffState = {};
  terminateOnDelete = false;
  lastPlan?: Plan;
  /** Kept across this cluster's syncs, as the controller keeps one per DaemonSet (memo.ts). */
  memo = new PlanMemo();
  private seq = 0;

  options?: PlanOptions;
  /** DaemonSetSettings of the namespace; their statuses are written back as the controller writes them. */
  settings: DaemonSetSetting[] = [];

  constructor(ds: DaemonSet, nodes: Node[], options?: PlanOptions) {
    this.ds = ds;
    this.nodes = nodes;
    this.options = options;
  }

  /**
   * Nodes and pods as the controller hands them over (Indexer.listSorted, ClaimedPods): the same array while none
   * changed, a new one after a change, so tests may change `nodes` and `pods` in place.
   */
  private handedNodes: Node[] = [];
  private handedPods: Pod[] = [];

  /**
   * Whether a sync tells which nodes changed since the last one's list (DaemonSetSnapshot.nodeChanges), as the
   * controller does from the node store, when both lists are in name order.
   */
  tellNodeChanges = true;

  plan(expectationsSatisfied = true): Plan {
    const last = this.handedNodes;
    const nodes = (this.handedNodes = sameOrCopy(this.handedNodes, this.nodes));
    const nodeChanges = this.tellNodeChanges ? nodeChangesBetween(last, nodes) : undefined;
    const snap: DaemonSetSnapshot = {
      ds: this.ds,
      nodes,
      ...(nodeChanges ? { nodeChanges } : {}),
      pods: (this.handedPods = sameOrCopy(this.handedPods, this.pods)),
      revisions: this.revisions,
      now: this.now,
      failedPodsBackoff: this.backoff,
      expectationsSatisfied,
      ...(this.options ? { options: this.options } : {}),
      ...(this.settings.length > 0 ? { settings: this.settings } : {}),
    };
    const full = planDaemonSet(snap);
    // Every sync of every table is planned a second time with this cluster's memo, which must not change the plan.
    assert.deepEqual(planDaemonSet(snap, this.memo), full, 'the plan with the memo differs from the full computation');
    return full;
  }

  sync(): Plan {
    const p = this.plan();
    this.apply(p);
    return p;
  }

  apply(p: Plan): void {
    this.lastPlan = p;
    for (const r of p.revisions.create) this.revisions.push(structuredClone(r));
    for (const r of p.revisions.update) {
      this.revisions = this.revisions.map((x) => (x.metadata.name === r.metadata.name ? structuredClone(r) : x));
    }
    this.revisions = this.revisions.filter((x) => !p.revisions.delete.includes(x.metadata.name ?? ''));
    for (const c of p.creates) {
      const pod = structuredClone(c.pod);
      const name = `${pod.metadata.generateName}${++this.seq}`;
      pod.metadata = { ...pod.metadata, name, uid: `${name}-uid`, creationTimestamp: formatTime(this.now) };
      pod.spec.nodeName = c.nodeName;
      pod.status = {
        phase: 'Pending',
        conditions: [],
        containerStatuses: pod.spec.containers.map((ct) => ({
          name: ct.name,
          image: ct.image ?? '',
          imageID: `${ct.image ?? ''}@sha256:1`,
          ready: false,
          restartCount: 0,
          state: { running: {} },
          ...(ct.resources ? { resources: ct.resources } : {}),
        })),
      };
      this.pods.push(pod);
    }
    const deleted = new Set(p.deletes.map((d) => d.podName));
    if (this.terminateOnDelete) {
      this.pods = this.pods.map((x) =>
        deleted.has(x.metadata.name ?? '')
          ? { ...x, metadata: { ...x.metadata, deletionTimestamp: formatTime(this.now) } }
          : x,
      );
    } else {
      this.pods = this.pods.filter((x) => !deleted.has(x.metadata.name ?? ''));
    }
    for (const u of p.inPlaceUpdates) {
      this.pods = this.pods.map((x) => {
        if (x.metadata.name !== u.podName) return x;
        const afterStatus = u.statusPatch ? deepMerge(x, u.statusPatch as Record<string, unknown>) : x;
        const patched = deepMerge(afterStatus, u.patch as Record<string, unknown>) as Pod;
        // The apiserver counts a pods/resize as a new generation of the pod.
        if (u.kind === 'resize')
          patched.metadata = { ...patched.metadata, generation: (x.metadata.generation ?? 1) + 1 };
        return patched;
      });
    }
    for (const patch of p.podPatches) {
      this.pods = this.pods.map((x) =>
        x.metadata.name === patch.podName ? (deepMerge(x, patch.patch as Record<string, unknown>) as Pod) : x,
      );
    }
    if (p.status && p.statusChanged) this.ds = { ...this.ds, status: p.status };
    for (const w of p.settingStatuses ?? []) {
      this.settings = this.settings.map((x) =>
        x.metadata.name === w.setting.metadata.name ? { ...x, status: structuredClone(w.status) } : x,
      );
    }
    this.backoff = p.failedPodsBackoff;
  }

  /** Mark pods Ready (since `since`, default now); pods already Ready keep their transition time. */
  markReady(filter: (p: Pod) => boolean = () => true, since = this.now): void {
    this.pods = this.pods.map((p) => {
      if (p.metadata.deletionTimestamp || isPodReady(p) || !filter(p)) return p;
      const conditions = (p.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
      conditions.push({ type: 'Ready', status: 'True', lastTransitionTime: formatTime(since) });
      return { ...p, status: { ...p.status, phase: 'Running', conditions } };
    });
  }

  markNotReady(filter: (p: Pod) => boolean): void {
    this.pods = this.pods.map((p) => {
      if (!filter(p)) return p;
      const conditions = (p.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
      conditions.push({ type: 'Ready', status: 'False', lastTransitionTime: formatTime(this.now) });
      return { ...p, status: { ...p.status, conditions } };
    });
  }

  /** The kubelet restarts containers whose spec image differs from their status (in-place update). */
  kubeletRestartChangedContainers(): void {
    this.pods = this.pods.map((p) => {
      const statuses = (p.status?.containerStatuses ?? []).map((cs) => {
        const spec = p.spec.containers.find((c) => c.name === cs.name);
        if (!spec || spec.image === cs.image) return cs;
        return {
          ...cs,
          image: spec.image ?? '',
          imageID: `${spec.image ?? ''}@sha256:1`,
          restartCount: cs.restartCount + 1,
        };
      });
      return { ...p, status: { ...p.status, containerStatuses: statuses } };
    });
  }

  /**
   * The kubelet's answer to resizes (pods/resize) of the pods `filter` picks: 'done' reports the spec's resources in
   * the container statuses and observes the generation; 'Deferred' or 'Infeasible' sets PodResizePending.
   */
  kubeletResize(outcome: 'done' | 'Deferred' | 'Infeasible', filter: (p: Pod) => boolean = () => true): void {
    this.pods = this.pods.map((p) => {
      if (!filter(p)) return p;
      const conditions = (p.status?.conditions ?? []).filter((c) => c.type !== 'PodResizePending');
      if (outcome !== 'done') {
        conditions.push({ type: 'PodResizePending', status: 'True', reason: outcome, message: `resize ${outcome}` });
        return { ...p, status: { ...p.status, conditions } };
      }
      const containerStatuses = (p.status?.containerStatuses ?? []).map((cs) => {
        const spec = p.spec.containers.find((c) => c.name === cs.name);
        return spec?.resources ? { ...cs, resources: spec.resources } : cs;
      });
      const status = { ...p.status, conditions, containerStatuses, observedGeneration: p.metadata.generation ?? 1 };
      return { ...p, status };
    });
  }

  /** Finish terminating pods (they vanish). */
  reapTerminating(): void {
    this.pods = this.pods.filter((p) => !p.metadata.deletionTimestamp);
  }

  /** Change the template (image) and bump generation, as the apiserver does. */
  setImage(image: string): void {
    const ds = structuredClone(this.ds);
    const c = ds.spec.template.spec.containers[0];
    if (c) c.image = image;
    ds.metadata.generation = (ds.metadata.generation ?? 0) + 1;
    this.ds = ds;
  }

  updateSpec(mutate: (ds: DaemonSet) => void): void {
    const ds = structuredClone(this.ds);
    mutate(ds);
    ds.metadata.generation = (ds.metadata.generation ?? 0) + 1;
    this.ds = ds;
  }

  hashOf(p: Pod): string {
    return p.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? '';
  }

  live(): Pod[] {
    return this.pods.filter((p) => !p.metadata.deletionTimestamp);
  }
}

/**
 * One sync as upstream's tests see it with their fake pod control, where creates and deletes are observed at once:
 * plan and apply; when the plan stopped after manage (stage Managed) and the next plan has no manage work, that
 * next plan is the rolling-update half of the same sync, applied and counted too.
 */
export function syncOnce(cluster: FakeCluster): { creates: number; deletes: number; plans: Plan[] } {
  const first = cluster.sync();
  const plans = [first];
  if (first.stage === 'Managed') {
    const second = cluster.plan();
    if (second.stage !== 'Managed') {
      cluster.apply(second);
      plans.push(second);
    }
  }
  return {
    creates: plans.reduce((n, p) => n + p.creates.length, 0),
    deletes: plans.reduce((n, p) => n + p.deletes.length, 0),
    plans,
  };
}

/** expectSyncDaemonSets: one sync (see syncOnce) produces exactly `creates` creates and `deletes` deletes. */
export function expectSyncDaemonSets(cluster: FakeCluster, creates: number, deletes: number, msg = ''): Plan[] {
  const r = syncOnce(cluster);
  assert.deepEqual([r.creates, r.deletes], [creates, deletes], `[creates, deletes] ${msg}`);
  return r.plans;
}
