// rollingUpdate.unhealthyNodes: Ignore sets aside the nodes that cannot take the new revision, so that they use none
// of the rolling update's budget. Upstream counts them: a node without an available pod is unavailable, so three
// NotReady nodes with maxUnavailable 1 stall a rollout for good (https://github.com/kubernetes/kubernetes/issues/73011).
// ExtendedDaemonSet skips nodes whose pod has a scheduler issue, up to maxPodSchedulerFailure
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/rollingupdate.go)
// and Kruise prunes ineligible nodes behind its DaemonSetPruneIneligibleNodes gate
// (https://github.com/openkruise/kruise/blob/master/pkg/features/kruise_features.go); docs/differences.md compares them.
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod } from '../k8s/types.ts';
import { getPodCondition } from '../k8s/pod.ts';
import { derivedOnce, type SyncContext } from './context.ts';
import { updatedPodsOf, type NodeState } from './node-state.ts';
import type { SetAsideReason } from './plan-types.ts';
import { isDaemonSetPaused, isRollingUpdate } from './strategy.ts';
import { sameTarget, targetHash } from './targets.ts';

/** The taint the node lifecycle controller puts on a node it has not heard from (Ready Unknown). */
export const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';

/** rollingUpdate.unhealthyNodes is Ignore (Count, the default, is upstream's rule). */
export function ignoresUnhealthyNodes(ds: DaemonSet): boolean {
  return ds.spec.updateStrategy?.rollingUpdate?.unhealthyNodes === 'Ignore';
}

/**
 * Why a node is not Ready: its Ready condition False (NotReady) or Unknown, or the unreachable taint (the node
 * lifecycle controller's, https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/nodelifecycle/node_lifecycle_controller.go).
 * A node without a Ready condition yet (just registered) is not judged.
 */
export function nodeNotReadyReason(node: Node): SetAsideReason | undefined {
  if (node.spec?.taints?.some((t) => t.key === UNREACHABLE_TAINT)) return 'Unreachable';
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status === 'False') return 'NotReady';
  if (ready?.status === 'Unknown') return 'Unknown';
  return undefined;
}

/**
 * The scheduler could not place the pod (PodScheduled False, reason Unschedulable: its message says "Insufficient
 * cpu" and the like, https://github.com/kubernetes/kubernetes/blob/master/pkg/scheduler/schedule_one.go).
 */
export function isPodUnschedulable(pod: Pod): boolean {
  if (pod.status?.phase !== undefined && pod.status.phase !== 'Pending') return false;
  const c = getPodCondition(pod, 'PodScheduled');
  return c?.status === 'False' && c.reason === 'Unschedulable';
}

/**
 * Why the rolling update sets node `s` aside, relative to its target revision `hash`; undefined when it counts.
 * A node with a pod of the target revision got it: its pod's failure is the revision's (it counts), unless that pod
 * cannot be scheduled. Otherwise a node that is not Ready, or whose old pod cannot be scheduled, is set aside.
 */
export function setAsideReason(s: NodeState, hash: string): SetAsideReason | undefined {
  if (s.node === undefined) return undefined;
  const { newFacts, oldFacts, ok } = updatedPodsOf(s, hash);
  if (!ok) return undefined;
  if (newFacts && !newFacts.preDeleting) return isPodUnschedulable(newFacts.pod) ? 'Unschedulable' : undefined;
  const notReady = nodeNotReadyReason(s.node);
  if (notReady) return notReady;
  return oldFacts && isPodUnschedulable(oldFacts.pod) ? 'Unschedulable' : undefined;
}

const NONE: ReadonlyMap<string, SetAsideReason> = new Map();

/**
 * The nodes this sync's rolling update sets aside, with why, in its processing order: among `states`, the nodes it
 * may update (nodesToUpdateResult, update.ts: partition, selector and canary applied), those setAsideReason names.
 * Empty unless unhealthyNodes is Ignore and the rolling update runs (RollingUpdate, not paused).
 */
export function setAsideNodes(ctx: SyncContext, states: readonly NodeState[]): ReadonlyMap<string, SetAsideReason> {
  return derivedOnce(ctx, 'setAside', () => {
    const { ds } = ctx;
    if (!ignoresUnhealthyNodes(ds) || !isRollingUpdate(ds) || isDaemonSetPaused(ds)) return NONE;
    const same = sameTarget(ctx.targets);
    const out = new Map<string, SetAsideReason>();
    for (const s of states) {
      const why = setAsideReason(s, same ?? targetHash(ctx.targets, s.name));
      if (why) out.set(s.name, why);
    }
    return out.size === 0 ? NONE : out;
  });
}

/** How many names a message lists before "and N more". */
const LISTED = 5;

/**
 * E.g. "2 nodes set aside by unhealthyNodes Ignore: node-a (NotReady), node-b (Unschedulable)"; undefined when none.
 */
export function setAsideMessage(aside: ReadonlyMap<string, SetAsideReason>): string | undefined {
  if (aside.size === 0) return undefined;
  const listed = [...aside].slice(0, LISTED).map(([n, why]) => `${n} (${why})`);
  const more = aside.size > LISTED ? `, and ${aside.size - LISTED} more` : '';
  return `${aside.size} node${aside.size === 1 ? '' : 's'} set aside by unhealthyNodes Ignore: ${listed.join(', ')}${more}`;
}

/** The condition's reason: the one reason all set-aside nodes share, else Unhealthy. */
export function setAsideConditionReason(aside: ReadonlyMap<string, SetAsideReason>): string {
  const reasons = new Set(aside.values());
  return reasons.size === 1 ? ([...reasons][0] as string) : 'Unhealthy';
}
