// What every planning step shares within one sync: nodes with their eligibility, pods grouped by node, the hash
// (the node index, newSyncContext), then each node's target revision (withTargets). Each stage returns its results
// rather than writing them into the context; only derivedOnce fills in values computed from the context itself.
import type { DaemonSetSetting } from '../api/setting.ts';
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod } from '../k8s/types.ts';
import { nodeShouldRunDaemonPod, templateTolerations, type NodeEligibility } from './eligibility.ts';
import type { PlanMemo, PodLookup, PodUpkeepCounts, StateChanges } from './memo.ts';
import { newNodeState, type NodeState } from './node-state.ts';
import { nodeResources, type NodeResources } from './overrides.ts';
import { getNodesToDaemonPods } from './pods.ts';
import type {
  BusyNodesToUpdate,
  CountersResult,
  NodesToUpdateStates,
  NodeTargets,
  PlanOptions,
  SetAsideReason,
  SnapshotChanges,
} from './plan-types.ts';

/** The node index of one sync: what the stages read about nodes and pods, built before the canary is decided. */
export interface NodeIndex {
  ds: DaemonSet;
  /** All nodes, sorted by name (upstream iterates the lister's order; sorting makes plans deterministic). */
  nodes: readonly Node[];
  nodeByName: ReadonlyMap<string, Node>;
  eligibility: ReadonlyMap<string, NodeEligibility>;
  /** Live count of nodes where shouldRun (what desiredNumberScheduled will be). */
  desired: number;
  /** Pods by target node (deleted terminal pods left out). */
  nodeToDaemonPods: ReadonlyMap<string, Pod[]>;
  /** The snapshot's pods, in its order. */
  pods: readonly Pod[];
  /** Built on first use (without a memo): a settled sync looks up no pod by name. */
  readonly podsByName: PodLookup;
  /** Per node, aligned with `nodes`: eligibility, pods and their facts (node-state.ts). */
  states: NodeState[];
  /** The states of `nodes` and `ghosts` by name; built on first use without a memo. */
  readonly stateByName: Pick<ReadonlyMap<string, NodeState>, 'get'>;
  /** Node names daemon pods point to that no node has, in name order. */
  ghosts: NodeState[];
  /**
   * With a memo only: how many pods have readiness-gate or canary-label upkeep pending or a resources record, so a
   * sync where none has skips those passes over every pod.
   */
  upkeep?: PodUpkeepCounts;
  /** With a memo only: which states changed since an earlier sync, for values kept between syncs (memo.ts). */
  changes?: StateChanges;
  hash: string;
  now: number;
  opts: PlanOptions;
  /** Each node's per-node container resources (overrides.ts): node annotations and DaemonSetSettings. */
  resources: NodeResources;
}

/** The context of the stages after the canary: the node index with each node's target revision. */
export interface SyncContext extends NodeIndex {
  /**
   * Which revision each node runs (targets.ts): set by withTargets from the canary of this sync; every node targets
   * `hash` in a context built for a single step (tests, the dashboard), as without a canary.
   */
  readonly targets: NodeTargets;
  /**
   * Values several steps derive from the same state (rolling update, status conditions, the afterManage part),
   * computed once per sync on first use; see derivedOnce(). (Not PlanMemo, memo.ts, which outlives a sync.)
   */
  readonly derived: SyncDerived;
}

/** Derived values of one sync; each is filled by the function named in its comment. */
export interface SyncDerived {
  /** nodesToUpdateResult (update.ts). */
  nodesToUpdate?: NodesToUpdateStates;
  /** busyNodesToUpdate (update.ts). */
  busyNodesToUpdate?: BusyNodesToUpdate;
  /** calculateCounters (status.ts). */
  counters?: CountersResult;
  /** pendingNodes (status.ts). */
  pendingNodes?: number;
  /** setAsideNodes (unhealthy.ts). */
  setAside?: ReadonlyMap<string, SetAsideReason>;
}

/**
 * The value `key` of this sync, computed by `compute` on first use. A context does not change once built (withTargets
 * makes another, with its own derived values), so a derived value never goes stale; computing it once keeps a plan
 * linear in nodes when several steps need it.
 */
export function derivedOnce<K extends keyof SyncDerived>(
  ctx: SyncContext,
  key: K,
  compute: () => NonNullable<SyncDerived[K]>,
): NonNullable<SyncDerived[K]> {
  return (ctx.derived[key] ??= compute());
}

/** How keptSubset picks and orders its states. */
export interface SubsetRule {
  /** Whether a state of `all` is in the subset; reads the state and nothing `key` does not stand for. */
  member(s: NodeState): boolean;
  /** Whether a changed state is one of `all` now (ghosts never are). */
  inAll(s: NodeState): boolean;
  /** `all`'s order. */
  compare(a: NodeState, b: NodeState): number;
}

interface KeptSubset {
  all: readonly NodeState[];
  key: string;
  /** The memo's position (StateChanges.seq) it is known to hold at. */
  seq: number;
  members: Set<NodeState>;
  /** `members` in `all`'s order, until they change. */
  inOrder: NodeState[] | undefined;
}

/**
 * The states of `all` that `rule.member` picks, in `all`'s order, kept between syncs of the same memo (StateChanges)
 * under `name` while `all` is the same array and `key` the same, and brought up to date from the nodes changed since.
 * The passes over every node that have work on a few only (manage's unsettled nodes, the rolling update's busy ones)
 * go over those few: in a settled DaemonSet, none. Without a memo, `all` filtered.
 */
export function keptSubset(
  changes: StateChanges | undefined,
  name: string,
  all: readonly NodeState[],
  key: string,
  rule: SubsetRule,
): readonly NodeState[] {
  if (!changes) return all.filter(rule.member);
  let kept = changes.kept.get(name) as KeptSubset | undefined;
  const changed = kept?.all === all && kept.key === key ? changes.since(kept.seq) : undefined;
  if (kept && changed) {
    changes.reused(name);
    for (const s of changed) {
      // A state may have left `all`, or moved in it, in place (update.ts moves nodes between buckets).
      const member = rule.inAll(s) && rule.member(s);
      if (!member && !kept.members.has(s)) continue;
      if (member) kept.members.add(s);
      else kept.members.delete(s);
      kept.inOrder = undefined;
    }
  } else {
    const inOrder = all.filter(rule.member);
    kept = { all, key, seq: 0, members: new Set(inOrder), inOrder };
    changes.kept.set(name, kept);
  }
  kept.seq = changes.seq;
  return (kept.inOrder ??= [...kept.members].sort(rule.compare));
}

/** True when the nodes are in name order already (the controller's node cache hands them over that way). */
function sortedByName(nodes: readonly Node[]): boolean {
  for (let i = 1; i < nodes.length; i++) {
    if (cmp((nodes[i - 1] as Node).metadata.name ?? '', (nodes[i] as Node).metadata.name ?? '') > 0) return false;
  }
  return true;
}

/**
 * The context of one sync, every node targeting `hash`; `settings`, the DaemonSetSettings of `ds` in precedence order
 * (overrides.ts, settingsOf). With `memo` (memo.ts), the per-node part is brought up to date from the previous sync
 * of the same DaemonSet, re-evaluating only the nodes whose object or pods changed (`changes` tells which, when the
 * caller knows); without it everything is built here. The two give the same context.
 */
export function newSyncContext(
  ds: DaemonSet,
  nodes: readonly Node[],
  pods: readonly Pod[],
  hash: string,
  now: number,
  opts: PlanOptions = {},
  memo?: PlanMemo,
  settings: readonly DaemonSetSetting[] = [],
  changes: SnapshotChanges = {},
): SyncContext {
  const tolerations = templateTolerations(ds);
  if (memo) {
    const v = memo.update(ds, nodes, pods, tolerations, sortedByName, byName, changes);
    return {
      resources: nodeResources(ds, v.nodeByName, settings, v.resourceAnnotated),
      ds,
      nodes: v.nodes,
      nodeByName: v.nodeByName,
      eligibility: v.eligibility,
      desired: v.desired,
      nodeToDaemonPods: v.nodeToDaemonPods,
      pods,
      podsByName: v.podsByName,
      states: v.states,
      stateByName: v.stateByName,
      ghosts: v.ghosts,
      upkeep: v.upkeep,
      changes: v.changes,
      hash,
      now,
      opts,
      targets: { hash },
      derived: {},
    };
  }
  const sorted = sortedByName(nodes) ? (nodes as Node[]) : [...nodes].sort(byName);
  const nodeByName = new Map<string, Node>();
  const eligibility = new Map<string, NodeEligibility>();
  const nodeToDaemonPods = getNodesToDaemonPods(pods);
  const states: NodeState[] = new Array<NodeState>(sorted.length);
  let desired = 0;
  for (let i = 0; i < sorted.length; i++) {
    const node = sorted[i] as Node;
    const name = node.metadata.name ?? '';
    const e = nodeShouldRunDaemonPod(node, ds, tolerations);
    nodeByName.set(name, node);
    eligibility.set(name, e);
    states[i] = newNodeState(name, node, e, nodeToDaemonPods.get(name));
    if (e.shouldRun) desired++;
  }
  const ghosts: NodeState[] = [];
  for (const [name, list] of nodeToDaemonPods) {
    if (!nodeByName.has(name)) ghosts.push(newNodeState(name, undefined, NOT_RUN, list));
  }
  ghosts.sort((a, b) => cmp(a.name, b.name));
  return {
    resources: nodeResources(ds, nodeByName, settings),
    ds,
    nodes: sorted,
    nodeByName,
    eligibility,
    desired,
    nodeToDaemonPods,
    pods,
    podsByName: lazyLookup(() => new Map(pods.map((p) => [p.metadata.name ?? '', p]))),
    states,
    stateByName: lazyLookup(() => new Map([...states, ...ghosts].map((s) => [s.name, s]))),
    ghosts,
    hash,
    now,
    opts,
    targets: { hash },
    derived: {},
  };
}

/**
 * The context of the stages after the canary: `ctx` with each node's target revision (nodeTargets, targets.ts). A new
 * context, with derived values of its own (they read the targets), rather than a field set on the one the canary read.
 */
export function withTargets(ctx: NodeIndex, targets: NodeTargets): SyncContext {
  return { ...ctx, targets, derived: {} };
}

/** A lookup by name whose map is built on first use: a settled sync looks up nothing. */
function lazyLookup<T>(build: () => Map<string, T>): Pick<ReadonlyMap<string, T>, 'get'> {
  let map: Map<string, T> | undefined;
  return { get: (name) => (map ??= build()).get(name) };
}

const NOT_RUN: NodeEligibility = Object.freeze({ shouldRun: false, shouldContinueRunning: false });

function byName(a: Node, b: Node): number {
  return cmp(a.metadata.name ?? '', b.metadata.name ?? '');
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function minDelay(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined || a <= 0) return b !== undefined && b > 0 ? b : undefined;
  if (b === undefined || b <= 0) return a;
  return Math.min(a, b);
}
