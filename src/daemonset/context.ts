// What every planning step shares within one sync: nodes with their eligibility, pods grouped by node, the hash.
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod } from '../k8s/types.ts';
import { nodeShouldRunDaemonPod, templateTolerations, type NodeEligibility } from './eligibility.ts';
import { getNodesToDaemonPods, type NodeToDaemonPods } from './pods.ts';
import type { PlanOptions } from './plan-types.ts';

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
  podsByName: Map<string, Pod>;
  hash: string;
  now: number;
  opts: PlanOptions;
}

export function newSyncContext(
  ds: DaemonSet,
  nodes: readonly Node[],
  pods: readonly Pod[],
  hash: string,
  now: number,
  opts: PlanOptions = {},
): SyncContext {
  const sorted = [...nodes].sort((a, b) => cmp(a.metadata.name ?? '', b.metadata.name ?? ''));
  const tolerations = templateTolerations(ds);
  const eligibility = new Map<string, NodeEligibility>();
  let desired = 0;
  for (const node of sorted) {
    const e = nodeShouldRunDaemonPod(node, ds, tolerations);
    eligibility.set(node.metadata.name ?? '', e);
    if (e.shouldRun) desired++;
  }
  return {
    ds,
    nodes: sorted,
    nodeByName: new Map(sorted.map((n) => [n.metadata.name ?? '', n])),
    eligibility,
    desired,
    nodeToDaemonPods: getNodesToDaemonPods(pods),
    podsByName: new Map(pods.map((p) => [p.metadata.name ?? '', p])),
    hash,
    now,
    opts,
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
