// nodeShouldRunDaemonPod (kruise daemonset_util.go, upstream daemon_controller.go NodeShouldRunDaemonPod).
import type { DaemonSet } from '../api/types.ts';
import type { Node, NodeCondition, Toleration } from '../k8s/types.ts';
import { canonicalJson } from '../k8s/hash.ts';
import { daemonPodTolerations, findMatchingUntoleratedTaint, requiredNodeAffinityMatches } from '../k8s/scheduling.ts';
import { nodeShouldUpdateBySelector } from './strategy.ts';

export interface NodeEligibility {
  /** A daemon pod should be created on this node if it has none. */
  shouldRun: boolean;
  /** An existing daemon pod may stay (false: delete it). */
  shouldContinueRunning: boolean;
}

// Shared results: a sync evaluates every node, and most answers are one of these (callers never change them).
const RUN: NodeEligibility = Object.freeze({ shouldRun: true, shouldContinueRunning: true });
const NOT_RUN: NodeEligibility = Object.freeze({ shouldRun: false, shouldContinueRunning: false });
const CONTINUE_ONLY: NodeEligibility = Object.freeze({ shouldRun: false, shouldContinueRunning: true });

/** The template's tolerations plus the automatic daemon tolerations (what a created pod will carry). */
export function templateTolerations(ds: DaemonSet): Toleration[] {
  return daemonPodTolerations(ds.spec.template.spec);
}

/**
 * nodeShouldRunDaemonPod, evaluated on a pod built from the template with the automatic daemon tolerations:
 * 1. template spec.nodeName set and not this node -> (false, false);
 * 2. nodeSelector and required node affinity (incl. matchFields metadata.name) must match -> else (false, false);
 * 3. an untolerated NoSchedule/NoExecute taint -> shouldRun false; shouldContinueRunning = no untolerated NoExecute.
 * Not considered (the scheduler's business, as upstream): node Ready condition, spec.unschedulable (cordon is
 * tolerated through the automatic node.kubernetes.io/unschedulable toleration), resources, host ports.
 * PreferNoSchedule taints are ignored.
 *
 * `tolerations` may be passed to avoid recomputing templateTolerations(ds) for every node.
 */
export function nodeShouldRunDaemonPod(
  node: Node,
  ds: DaemonSet,
  tolerations: readonly Toleration[] = templateTolerations(ds),
): NodeEligibility {
  const spec = ds.spec.template.spec;
  const nodeName = node.metadata.name ?? '';
  if (spec.nodeName && spec.nodeName !== nodeName) return NOT_RUN;
  if (!requiredNodeAffinityMatches(spec, node)) return NOT_RUN;
  const taints = node.spec?.taints;
  const untolerated = findMatchingUntoleratedTaint(
    taints,
    tolerations,
    (t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute',
  );
  if (untolerated) {
    const noExecute = findMatchingUntoleratedTaint(taints, tolerations, (t) => t.effect === 'NoExecute');
    return noExecute === undefined ? CONTINUE_ONLY : NOT_RUN;
  }
  return RUN;
}

/**
 * nodeInSameCondition: the sets of condition types with status True are equal (Kruise ignores node updates that
 * only move heartbeats).
 */
export function nodeInSameCondition(
  old: readonly NodeCondition[] | undefined,
  cur: readonly NodeCondition[] | undefined,
): boolean {
  const trueTypes = (cs: readonly NodeCondition[] | undefined) =>
    [...new Set((cs ?? []).filter((c) => c.status === 'True').map((c) => c.type))].sort().join('\n');
  return trueTypes(old) === trueTypes(cur);
}

/**
 * shouldIgnoreNodeUpdate: nothing but resourceVersion and conditions changed, and the True condition types are the
 * same.
 */
export function shouldIgnoreNodeUpdate(oldNode: Node, curNode: Node): boolean {
  if (!nodeInSameCondition(oldNode.status?.conditions, curNode.status?.conditions)) return false;
  const strip = (n: Node) => {
    const { resourceVersion: _rv, managedFields: _mf, ...metadata } = n.metadata;
    const { conditions: _c, ...status } = n.status ?? {};
    return canonicalJson({ ...n, metadata, status });
  };
  return strip(oldNode) === strip(curNode);
}

/**
 * Node update event handler decision for one DaemonSet (kruise nodeEventHandler.Update): enqueue when
 * shouldRun, shouldContinueRunning or the rollingUpdate.selector match differ between the old and new node.
 */
export function nodeUpdateAffects(oldNode: Node, curNode: Node, ds: DaemonSet): boolean {
  if (shouldIgnoreNodeUpdate(oldNode, curNode)) return false;
  const tolerations = templateTolerations(ds);
  const a = nodeShouldRunDaemonPod(oldNode, ds, tolerations);
  const b = nodeShouldRunDaemonPod(curNode, ds, tolerations);
  return (
    a.shouldRun !== b.shouldRun ||
    a.shouldContinueRunning !== b.shouldContinueRunning ||
    nodeShouldUpdateBySelector(oldNode, ds) !== nodeShouldUpdateBySelector(curNode, ds)
  );
}

/** Node add event handler decision: enqueue every DaemonSet that should run on the new node. */
export function nodeAddAffects(node: Node, ds: DaemonSet): boolean {
  return nodeShouldRunDaemonPod(node, ds).shouldRun;
}
