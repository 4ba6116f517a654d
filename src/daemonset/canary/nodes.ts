// Which nodes are canary nodes (a count of the eligible ones, fewest restarts first, spread over node labels) and
// which revision the other nodes keep meanwhile (the stable one).
import type { ControllerRevision, Node, Pod } from '../../k8s/types.ts';
import { getScaledValueFromIntOrPercent, type IntOrStringValue } from '../../k8s/intstr.ts';
import { labelSelectorMatches } from '../../k8s/labels.ts';
import { cmp, type NodeIndex } from '../context.ts';
import { podRevisionHash } from '../pods.ts';
import { nodeSelectedForUpdate } from '../strategy.ts';
import { highestRestartCount } from './health.ts';
import { ignoresUnhealthyNodes, nodeNotReadyReason } from '../unhealthy.ts';
import type { CanarySettings } from './settings.ts';

// ---- the stable revision ----

/**
 * The revision a new canary protects: among the live pods' revisions other than `hash` (with a ControllerRevision
 * still there to build pods from), the one most pods run; ties go to the newer revision. Undefined when no pod runs
 * another revision (a new DaemonSet, or every pod is on `hash` already): there is nothing to protect.
 */
export function stableRevisionHash(
  pods: Iterable<Pod>,
  hash: string,
  revisions: ReadonlyMap<string, ControllerRevision>,
): string | undefined {
  const counts = new Map<string, number>();
  for (const pod of pods) {
    const phase = pod.status?.phase;
    if (pod.metadata.deletionTimestamp || phase === 'Failed' || phase === 'Succeeded') continue;
    const h = podRevisionHash(pod);
    if (!h || h === hash || !revisions.has(h)) continue;
    counts.set(h, (counts.get(h) ?? 0) + 1);
  }
  let best: string | undefined;
  for (const [h, n] of counts) {
    if (best === undefined) {
      best = h;
      continue;
    }
    const bn = counts.get(best) ?? 0;
    const rev = revisions.get(h)?.revision ?? 0;
    const bestRev = revisions.get(best)?.revision ?? 0;
    if (n > bn || (n === bn && (rev > bestRev || (rev === bestRev && h > best)))) best = h;
  }
  return best;
}

// ---- canary node selection ----

/** `nodes`: an int, or "N%" of the desired nodes rounded up; at least 1 (an invalid value counts as 1). */
export function canaryNodeCount(nodes: IntOrStringValue, desired: number): number {
  try {
    return Math.max(1, getScaledValueFromIntOrPercent(nodes, desired, true));
  } catch {
    return 1;
  }
}

export interface CanaryCandidate {
  name: string;
  /** Highest container restartCount of the node's daemon pod (0 without one). */
  restarts: number;
  /** The node's values of spreadByNodeLabels (missing labels read as ''). */
  spreadKey: string;
}

/**
 * Nodes that may be canary nodes: eligible (the daemon should run there), matching canary.nodeSelector and
 * rollingUpdate.selector. With their restarts and spread key, in name order. With rollingUpdate.unhealthyNodes
 * Ignore, a node that is not Ready and holds no pod of the current revision is no candidate: the rolling update
 * would set it aside (unhealthy.ts), and the canary would wait for it. One that got the canary pod stays: its
 * failure is the canary's.
 */
export function canaryCandidates(ctx: NodeIndex, settings: CanarySettings): CanaryCandidate[] {
  const out: CanaryCandidate[] = [];
  const ignoreUnhealthy = ignoresUnhealthyNodes(ctx.ds);
  for (const node of ctx.nodes) {
    const name = node.metadata.name ?? '';
    if (!ctx.eligibility.get(name)?.shouldRun) continue;
    const labels = node.metadata.labels ?? {};
    if (settings.nodeSelector && !labelSelectorMatches(settings.nodeSelector, labels)) continue;
    if (!nodeSelectedForUpdate(node, ctx.ds)) continue;
    const pods = ctx.nodeToDaemonPods.get(name);
    if (
      ignoreUnhealthy &&
      nodeNotReadyReason(node) !== undefined &&
      !pods?.some((p) => !p.metadata.deletionTimestamp && podRevisionHash(p) === ctx.hash)
    )
      continue;
    const pod = pods?.[0];
    out.push({ name, restarts: pod ? highestRestartCount(pod) : 0, spreadKey: spreadKey(node, settings) });
  }
  return out;
}

function spreadKey(node: Node, settings: CanarySettings): string {
  return JSON.stringify(settings.spreadByNodeLabels.map((l) => node.metadata.labels?.[l] ?? ''));
}

const byRestartsThenName = (a: CanaryCandidate, b: CanaryCandidate) => a.restarts - b.restarts || cmp(a.name, b.name);

/**
 * The canary nodes: the `previous` ones that are still candidates (kept across syncs and for a newer template, never
 * dropped to shrink the set), filled up to `count` round-robin over the spread groups: the group with the fewest
 * canary nodes gets the next one, its candidate with the fewest restarts (then by name); between groups with as
 * many, the one with the better candidate goes first. Without spreadByNodeLabels there is one group. Name order.
 */
export function selectCanaryNodes(
  candidates: readonly CanaryCandidate[],
  count: number,
  previous: readonly string[] = [],
): string[] {
  const byName = new Map(candidates.map((c) => [c.name, c]));
  const chosen = new Set(previous.filter((n) => byName.has(n)));
  const picks = new Map<string, number>();
  const groups = new Map<string, CanaryCandidate[]>();
  for (const c of candidates) {
    if (chosen.has(c.name)) picks.set(c.spreadKey, (picks.get(c.spreadKey) ?? 0) + 1);
    else {
      const g = groups.get(c.spreadKey);
      if (g) g.push(c);
      else groups.set(c.spreadKey, [c]);
    }
  }
  for (const g of groups.values()) g.sort(byRestartsThenName);
  while (chosen.size < count) {
    let best: { key: string; head: CanaryCandidate; n: number } | undefined;
    for (const [key, g] of groups) {
      const head = g[0];
      if (!head) continue;
      const n = picks.get(key) ?? 0;
      if (!best || n < best.n || (n === best.n && byRestartsThenName(head, best.head) < 0)) best = { key, head, n };
    }
    if (!best) break;
    (groups.get(best.key) as CanaryCandidate[]).shift();
    picks.set(best.key, best.n + 1);
    chosen.add(best.head.name);
  }
  return [...chosen].sort(cmp);
}
