// Per-node targets, the stage between the canary and the rest of the sync: which revision each node runs, and what its
// new pod is built from. Without a canary every node targets the current revision, as upstream's rolling update
// (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/update.go, "new" is the current hash);
// an active canary keeps the nodes other than its own on its stable revision (canary/plan.ts).
import type { DaemonSet } from '../api/types.ts';
import type { PodTarget } from './pods.ts';
import type { CanaryPlan, NodeTargets } from './plan-types.ts';

/** The targets of this sync from its canary (planCanary): held by it while it is active. */
export function nodeTargets(hash: string, canary: CanaryPlan | undefined): NodeTargets {
  if (!canary?.active) return { hash };
  return {
    hash,
    canary: {
      nodes: canary.nodes,
      failed: canary.phase === 'Failed',
      stableHash: canary.stableHash,
      ...(canary.stableDs ? { stableDs: canary.stableDs } : {}),
      rollingNodes: canary.rollingNodes,
    },
  };
}

/** The revision hash `nodeName` should run this sync. */
export function targetHash(targets: NodeTargets, nodeName: string): string {
  const c = targets.canary;
  if (!c) return targets.hash;
  return !c.failed && c.nodes.has(nodeName) ? targets.hash : c.stableHash;
}

/** The hash every node targets, when no canary holds a node (the passes over every node then skip targetHash). */
export function sameTarget(targets: NodeTargets): string | undefined {
  return targets.canary ? undefined : targets.hash;
}

/**
 * What `nodeName`'s new pod is built from: its target revision with that revision's template (the current one of
 * `ds`, or the stable one beside a canary), labelled as a canary pod on a running canary's node. Without the stable
 * revision's ControllerRevision (deleted by hand) its pods cannot be built: they use the current template then.
 */
export function podTargetOf(ds: DaemonSet, targets: NodeTargets, nodeName: string): PodTarget {
  const hash = targetHash(targets, nodeName);
  const c = targets.canary;
  if (hash !== targets.hash && c?.stableDs) return { hash, ds: c.stableDs, canary: false };
  return { hash: targets.hash, ds, canary: c !== undefined && !c.failed && c.nodes.has(nodeName) };
}
