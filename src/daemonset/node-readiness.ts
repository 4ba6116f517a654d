// Nodes that wait for their agents (spec.nodeReadiness), pure: a node joins with a startup taint (a node pool's
// startupTaints, a kubelet's --register-with-taints), the DaemonSets that name it tolerate it (the webhook adds the
// toleration), and the taint goes once the pod of every DaemonSet naming that key that should run on the node has been
// Ready for its minReadySeconds: the node is ready when all its agents are. Continuous mode puts the taint back while
// such a pod stays not Ready. What others run beside the DaemonSet controller
// (https://github.com/uswitch/nidhogg, https://github.com/kubernetes-sigs/node-readiness-controller); here the
// controller that runs the agents decides. Only the named key and effect are ever touched (the shell's patch tests the
// taints it read, so another writer's taint is never dropped).
import type { DaemonSet } from '../api/types.ts';
import { DEFAULT_NODE_READINESS_UNREADY_SECONDS } from '../api/constants.ts';
import { formatTime, getPodReadyCondition, isPodAvailable, parseTime } from '../k8s/pod.ts';
import type { Node, Pod, Taint, TaintEffect } from '../k8s/types.ts';
import type { NodeIndex } from './context.ts';
import { nodeShouldRunDaemonPod } from './eligibility.ts';

/** The taint a DaemonSet clears: its key and effect (NoSchedule when unset). */
export interface ReadinessTaint {
  key: string;
  value?: string;
  effect: TaintEffect;
}

export function readinessTaintOf(ds: DaemonSet): ReadinessTaint | undefined {
  const t = ds.spec.nodeReadiness?.taint;
  if (!t?.key) return undefined;
  return { key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect ?? 'NoSchedule' };
}

const sameTaint = (t: Taint, r: ReadinessTaint) => t.key === r.key && (t.effect ?? '') === r.effect;

export function nodeHasTaint(node: Node, r: ReadinessTaint): boolean {
  return (node.spec?.taints ?? []).some((t) => sameTaint(t, r));
}

/** One DaemonSet on one node: the DaemonSet, and its live pod there, if any. */
export interface Agent {
  ds: DaemonSet;
  pod: Pod | undefined;
}

export interface NodeEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** What to do about one node's readiness taints. */
export interface NodeReadinessPlan {
  /** The node's taints after the changes, when any (undefined: leave the node alone). */
  taints?: Taint[];
  removed: ReadinessTaint[];
  added: ReadinessTaint[];
  events: NodeEvent[];
  /** Look again then: a pod Ready but not for minReadySeconds yet, or unready but not for unreadySeconds yet. */
  requeueAfterMs?: number;
}

const key = (ds: DaemonSet) => `${ds.metadata.namespace ?? ''}/${ds.metadata.name ?? ''}`;

/**
 * The plan for `node`: `daemonSets` are every DaemonSet with spec.nodeReadiness (any namespace), `podOn` the live pod
 * of one of them on the node. Per taint (key and effect): present, and every DaemonSet naming it that should run
 * on the node has an available pod there -> removed; present and none should run there -> left, with a Warning
 * (nothing will ever clear it); absent, and a Continuous DaemonSet's pod has been not Ready for its unreadySeconds
 * -> put back.
 */
export function planNodeReadiness(
  node: Node,
  daemonSets: readonly DaemonSet[],
  podOn: (ds: DaemonSet) => Pod | undefined,
  now: number,
): NodeReadinessPlan {
  const out: NodeReadinessPlan = { removed: [], added: [], events: [] };
  const groups = new Map<string, { taint: ReadinessTaint; agents: Agent[]; naming: DaemonSet[] }>();
  for (const ds of daemonSets) {
    const t = readinessTaintOf(ds);
    if (!t || ds.metadata.deletionTimestamp) continue;
    const id = `${t.key}:${t.effect}`;
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { taint: t, agents: [], naming: [] }));
    g.naming.push(ds);
    if (nodeShouldRunDaemonPod(node, ds).shouldRun) g.agents.push({ ds, pod: podOn(ds) });
  }
  let taints = [...(node.spec?.taints ?? [])];
  const name = node.metadata.name ?? '';
  for (const { taint, agents, naming } of groups.values()) {
    const present = taints.some((t) => sameTaint(t, taint));
    if (present) {
      if (agents.length === 0) {
        out.events.push({
          type: 'Warning',
          reason: 'NodeReadinessTaintKept',
          message: `taint ${taint.key}:${taint.effect} is left on node ${name}: none of the DaemonSets that clear it should run here (${naming.map(key).join(', ')})`,
        });
        continue;
      }
      const waiting = agents.filter((a) => !agentAvailable(a, now));
      if (waiting.length > 0) {
        out.requeueAfterMs = minPositive(out.requeueAfterMs, ...waiting.map((a) => availableInMs(a, now)));
        continue;
      }
      taints = taints.filter((t) => !sameTaint(t, taint));
      out.removed.push(taint);
      out.events.push({
        type: 'Normal',
        reason: 'NodeReadinessTaintRemoved',
        message: `removed taint ${taint.key}:${taint.effect}: the pods of ${agents.map((a) => key(a.ds)).join(', ')} are Ready on node ${name}`,
      });
      continue;
    }
    for (const a of agents) {
      if (a.ds.spec.nodeReadiness?.mode !== 'Continuous' || !a.pod) continue;
      const unreadyMs = unreadyForMs(a.pod, now);
      if (unreadyMs === undefined) continue;
      const limitMs = (a.ds.spec.nodeReadiness.unreadySeconds ?? DEFAULT_NODE_READINESS_UNREADY_SECONDS) * 1000;
      if (unreadyMs < limitMs) {
        out.requeueAfterMs = minPositive(out.requeueAfterMs, limitMs - unreadyMs + 1);
        continue;
      }
      const added: Taint = { key: taint.key, effect: taint.effect, ...(taint.value ? { value: taint.value } : {}) };
      if (taint.effect === 'NoExecute') added.timeAdded = formatTime(now);
      taints = [...taints, added];
      out.added.push(taint);
      out.events.push({
        type: 'Warning',
        reason: 'NodeReadinessTaintAdded',
        message: `put taint ${taint.key}:${taint.effect} back on node ${name}: pod ${a.pod.metadata.name ?? ''} of ${key(a.ds)} has not been Ready for ${Math.round(unreadyMs / 1000)}s (unreadySeconds ${limitMs / 1000})`,
      });
      break;
    }
  }
  if (out.removed.length > 0 || out.added.length > 0) out.taints = taints;
  return out;
}

function agentAvailable(a: Agent, now: number): boolean {
  return a.pod !== undefined && isPodAvailable(a.pod, a.ds.spec.minReadySeconds ?? 0, now);
}

/** How long until a Ready pod becomes available (minReadySeconds); undefined when not Ready or absent. */
function availableInMs(a: Agent, now: number): number | undefined {
  const ready = a.pod && getPodReadyCondition(a.pod);
  if (ready?.status !== 'True') return undefined;
  const since = parseTime(ready.lastTransitionTime);
  return since === undefined ? undefined : since + (a.ds.spec.minReadySeconds ?? 0) * 1000 - now + 1;
}

/** How long the pod has not been Ready (since its Ready condition turned False, or since it was created). */
function unreadyForMs(pod: Pod, now: number): number | undefined {
  if (pod.metadata.deletionTimestamp) return undefined;
  const ready = getPodReadyCondition(pod);
  if (ready?.status === 'True') return undefined;
  const since = parseTime(ready?.lastTransitionTime) ?? parseTime(pod.metadata.creationTimestamp);
  return since === undefined ? undefined : Math.max(0, now - since);
}

function minPositive(current: number | undefined, ...values: (number | undefined)[]): number | undefined {
  let out = current;
  for (const v of values) if (v !== undefined && v > 0 && (out === undefined || v < out)) out = v;
  return out;
}

/**
 * For the DaemonSet's status: the nodes it should run on that carry its taint while its pod there is not available
 * (they wait for it), in name order.
 */
export function nodesWaitingFor(ctx: NodeIndex): string[] {
  const t = readinessTaintOf(ctx.ds);
  if (!t) return [];
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  const out: string[] = [];
  for (const s of ctx.states) {
    if (!s.shouldRun || !s.node || !nodeHasTaint(s.node, t)) continue;
    const live = s.facts.find((f) => !f.terminating);
    if (!live || !isPodAvailable(live.pod, minReady, ctx.now)) out.push(s.name);
  }
  return out;
}
