// What every planning step shares within one sync: nodes with their eligibility, pods grouped by node, the hash.
import type { DaemonSet } from '../api/types.ts';
import type { CanaryPlan } from './canary.ts';
import type { Node, Pod } from '../k8s/types.ts';
import { nodeShouldRunDaemonPod, templateTolerations, type NodeEligibility } from './eligibility.ts';
import { getNodesToDaemonPods, type NodeToDaemonPods } from './pods.ts';
import type { PlanOptions } from './plan-types.ts';
import type { CountersResult } from './status.ts';
import type { NodesToUpdate } from './update.ts';

export interface SyncContext {
  ds: DaemonSet;
  /** All nodes, sorted by name (upstream iterates the lister's order; sorting makes plans deterministic). */
  nodes: Node[];
  nodeByName: Map<string, Node>;
  eligibility: Map<string, NodeEligibility>;
  /** Live count of nodes where shouldRun (what desiredNumberScheduled will be). */
  desired: number;
  /** Pods by target node (deleted terminal pods left out). */
  nodeToDaemonPods: NodeToDaemonPods;
  /** Built on first use: a settled sync looks up no pod by name. */
  readonly podsByName: ReadonlyMap<string, Pod>;
  hash: string;
  now: number;
  opts: PlanOptions;
  /**
   * The canary of this sync (planCanary, canary.ts), set right after the context is built; absent in contexts built
   * for a single step (tests), which then behave as without a canary.
   */
  canary?: CanaryPlan;
  /**
   * Values several steps derive from the same state (rolling update, status conditions, the afterManage part),
   * computed once per sync on first use; see memo().
   */
  readonly memo: SyncMemo;
}

/** Derived values of one sync; each is filled by the function named in its comment. */
export interface SyncMemo {
  /** nodesToUpdateResult (update.ts). */
  nodesToUpdate?: NodesToUpdate;
  /** calculateCounters (status.ts). */
  counters?: CountersResult;
  /** pendingNodes (status.ts). */
  pendingNodes?: number;
}

/**
 * The value `key` of this sync, computed by `compute` on first use. The context does not change during a sync, so
 * a derived value never goes stale; computing it once keeps a plan linear in nodes when several steps need it.
 */
export function memo<K extends keyof SyncMemo>(
  ctx: SyncContext,
  key: K,
  compute: () => NonNullable<SyncMemo[K]>,
): NonNullable<SyncMemo[K]> {
  return (ctx.memo[key] ??= compute());
}

/** True when the nodes are in name order already (the controller's node cache hands them over that way). */
function sortedByName(nodes: readonly Node[]): boolean {
  for (let i = 1; i < nodes.length; i++) {
    if (cmp((nodes[i - 1] as Node).metadata.name ?? '', (nodes[i] as Node).metadata.name ?? '') > 0) return false;
  }
  return true;
}

export function newSyncContext(
  ds: DaemonSet,
  nodes: readonly Node[],
  pods: readonly Pod[],
  hash: string,
  now: number,
  opts: PlanOptions = {},
): SyncContext {
  const sorted = sortedByName(nodes)
    ? (nodes as Node[])
    : [...nodes].sort((a, b) => cmp(a.metadata.name ?? '', b.metadata.name ?? ''));
  const nodeByName = new Map<string, Node>();
  const tolerations = templateTolerations(ds);
  const eligibility = new Map<string, NodeEligibility>();
  let desired = 0;
  for (const node of sorted) {
    const name = node.metadata.name ?? '';
    const e = nodeShouldRunDaemonPod(node, ds, tolerations);
    nodeByName.set(name, node);
    eligibility.set(name, e);
    if (e.shouldRun) desired++;
  }
  let podsByName: Map<string, Pod> | undefined;
  return {
    ds,
    nodes: sorted,
    nodeByName,
    eligibility,
    desired,
    nodeToDaemonPods: getNodesToDaemonPods(pods),
    get podsByName() {
      return (podsByName ??= new Map(pods.map((p) => [p.metadata.name ?? '', p])));
    },
    hash,
    now,
    opts,
    memo: {},
  };
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function minDelay(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined || a <= 0) return b !== undefined && b > 0 ? b : undefined;
  if (b === undefined || b <= 0) return a;
  return Math.min(a, b);
}
