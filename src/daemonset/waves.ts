// The order of a rollout by node labels: rollingUpdate.priorityStrategy (Kruise CloneSet's UpdatePriorityStrategy,
// https://github.com/openkruise/kruise/blob/master/apis/apps/pub/update_priority.go, sorted as
// https://github.com/openkruise/kruise/blob/master/pkg/util/updatesort/priority_sort.go, here on nodes) and
// rollingUpdate.waves (one topology domain at a time, https://github.com/openkruise/kruise/issues/2132).
// Pure: update.ts sorts the nodes still to update with updateOrder and keeps only the current wave's with gateWaves.
//
// How they compose (docs/rollout-strategies.md#rollouts-in-waves): rollingUpdate.selector filters first; the
// nodes still to update are sorted by wave, then priority, then the default order (descending name); the partition
// then keeps the last of them old (the lowest-priority nodes, in the last waves), counted over all nodes as before;
// of the rest only the current wave's are updated, within maxUnavailable/maxSurge. paused stops everything; a
// canary runs before the waves (its nodes are chosen as without waves), which apply after promotion.
import type { DaemonSet, RolloutWaves, UpdatePriorityStrategy } from '../api/types.ts';
import type { LabelSelector } from '../k8s/types.ts';
import { isEmptyLabelSelector, labelSelectorErrors, labelSelectorMatches, type Labels } from '../k8s/labels.ts';
import { cmp, type SyncContext } from './context.ts';
import { factsDaemonAvailable, factsWaitingTimeMs, updatedPodsOf, type NodeState } from './node-state.ts';
import type { NodesToUpdateStates, WaveProgress } from './plan-types.ts';
import { isRollingUpdate } from './strategy.ts';

/** rollingUpdate.priorityStrategy with at least one term; undefined otherwise (or not RollingUpdate). */
function priorityOf(ds: DaemonSet): UpdatePriorityStrategy | undefined {
  if (!isRollingUpdate(ds)) return undefined;
  const ps = ds.spec.updateStrategy?.rollingUpdate?.priorityStrategy;
  return (ps?.weightPriority?.length ?? 0) > 0 || (ps?.orderPriority?.length ?? 0) > 0 ? ps : undefined;
}

/** rollingUpdate.waves with a topologyKey; undefined otherwise (or not RollingUpdate). */
export function wavesOf(ds: DaemonSet): RolloutWaves | undefined {
  if (!isRollingUpdate(ds)) return undefined;
  const w = ds.spec.updateStrategy?.rollingUpdate?.waves;
  return w?.topologyKey ? w : undefined;
}

/** A node's priority: weight (weightPriority) or level, number and value (orderPriority). */
export interface Priority {
  weight: number;
  /** Index of the first orderPriority term whose key the node has; Infinity when none. */
  level: number;
  /** The value's trailing integer (Kruise's getIntFromStringSuffix), 0 without one. */
  num: number;
  value: string;
}

const NO_PRIORITY: Priority = Object.freeze({ weight: 0, level: Infinity, num: 0, value: '' });

/** Kruise's getIntFromStringSuffix: the digits the value ends with, as a number; 0 when none. */
function trailingInt(v: string): number {
  const m = /\d+$/.exec(v);
  const n = m ? Number(m[0]) : 0;
  return Number.isSafeInteger(n) ? n : 0;
}

/**
 * The priority of a node with `labels`. Weight: the sum of the weights of the terms whose matchSelector selects it
 * (a selector that does not parse is skipped, as Kruise; an empty one selects everything, as
 * LabelSelectorAsSelector). Order: the first term whose key the node has.
 */
export function priorityOfLabels(ps: UpdatePriorityStrategy | undefined, labels: Labels): Priority {
  if (!ps) return NO_PRIORITY;
  if ((ps.weightPriority?.length ?? 0) > 0) {
    let weight = 0;
    for (const t of ps.weightPriority ?? []) {
      const sel = t.matchSelector as LabelSelector;
      if (labelSelectorErrors(sel).length > 0) continue;
      if (isEmptyLabelSelector(sel) || labelSelectorMatches(sel, labels)) weight += t.weight;
    }
    return { ...NO_PRIORITY, weight };
  }
  const terms = ps.orderPriority ?? [];
  for (let i = 0; i < terms.length; i++) {
    const value = labels?.[(terms[i] as { orderedKey: string }).orderedKey];
    if (value !== undefined) return { weight: 0, level: i, num: trailingInt(value), value };
  }
  return NO_PRIORITY;
}

/**
 * Negative when `a` goes first: heavier first; else the lower level (earlier term) first, nodes with no key last
 * (Kruise's priority_sort.go gives them level -1, which sorts them first; its API comment puts the nodes without a
 * key behind, and so do we); then the higher trailing integer (as Kruise), then the higher value as text (Kruise
 * leaves such ties in the default order; comparing the text orders values without digits, such as zone names, in
 * the same direction as the default descending node-name order). 0 keeps the default order.
 */
export function comparePriority(a: Priority, b: Priority): number {
  if (a.weight !== b.weight) return b.weight - a.weight;
  if (a.level !== b.level) return a.level < b.level ? -1 : 1;
  if (a.num !== b.num) return b.num - a.num;
  return cmp(b.value, a.value);
}

/** The waves of a rollout: label values in wave order, the nodes without the label last (value undefined). */
export interface WaveOrder {
  topologyKey: string;
  values: (string | undefined)[];
  indexOf(labels: Labels): number;
}

function takesPart(s: NodeState): boolean {
  return s.first !== undefined || s.shouldRun;
}

/**
 * The waves of `states` (the nodes taking part in the rolling update): one per value of waves.topologyKey, ordered
 * by the priority of their highest-priority node (priorityStrategy), then by value, ascending; the nodes without the
 * label form the last wave. Undefined without rollingUpdate.waves.
 */
export function waveOrder(ds: DaemonSet, states: readonly NodeState[]): WaveOrder | undefined {
  const waves = wavesOf(ds);
  if (!waves) return undefined;
  const key = waves.topologyKey;
  const ps = priorityOf(ds);
  const best = new Map<string, Priority>();
  let unlabelled = false;
  for (const s of states) {
    if (!s.node || !takesPart(s)) continue;
    const labels = s.node.metadata.labels;
    const v = labels?.[key];
    if (v === undefined) {
      unlabelled = true;
      continue;
    }
    const p = priorityOfLabels(ps, labels);
    const b = best.get(v);
    if (!b || comparePriority(p, b) < 0) best.set(v, p);
  }
  const values: (string | undefined)[] = [...best.keys()].sort(
    (a, b) => comparePriority(best.get(a) as Priority, best.get(b) as Priority) || cmp(a, b),
  );
  if (unlabelled) values.push(undefined);
  const index = new Map(values.map((v, i) => [v, i]));
  return {
    topologyKey: key,
    values,
    indexOf: (labels) => index.get(labels?.[key]) ?? values.length,
  };
}

/** Whether the rolling update orders the nodes still to update by their labels (priorityStrategy, waves). */
export function ordersByLabels(ds: DaemonSet): boolean {
  return priorityOf(ds) !== undefined || wavesOf(ds) !== undefined;
}

/**
 * How the nodes still to update are sorted (in place, stably): by wave, then by priority; ties keep the order
 * they come in (update.ts: descending node name). Undefined when neither priorityStrategy nor waves is set, so a
 * DaemonSet without them pays nothing. `all`: every node of the sync, for the wave order.
 */
export function updateOrder(
  ds: DaemonSet,
  all: readonly NodeState[],
): ((toUpdate: NodeState[]) => NodeState[]) | undefined {
  const ps = priorityOf(ds);
  const waves = waveOrder(ds, all);
  if (!ps && !waves) return undefined;
  return (toUpdate) => {
    if (toUpdate.length < 2) return toUpdate;
    const keys = new Map<NodeState, { wave: number; priority: Priority }>();
    for (const s of toUpdate) {
      const labels = s.node?.metadata.labels;
      keys.set(s, { wave: waves?.indexOf(labels) ?? 0, priority: priorityOfLabels(ps, labels) });
    }
    return toUpdate.sort((a, b) => {
      const ka = keys.get(a) as { wave: number; priority: Priority };
      const kb = keys.get(b) as { wave: number; priority: Priority };
      return ka.wave - kb.wave || comparePriority(ka.priority, kb.priority);
    });
  };
}

/**
 * rollingUpdate.waves on the nodes the rolling update may touch (`r`, after selector and partition): the current
 * wave is the first one with a node of `r` that should run the daemon and does not yet run a lone pod of the
 * current revision, available for minReadySeconds + waves.availableSeconds. The nodes still to update (an old pod,
 * no new one) of the later waves are left out of `r`; `wave` says where the rollout stands, and when the current
 * wave only waits for availableSeconds, when to look again (requeueAfterMs). `r` as it is when every wave is done,
 * and without waves. Not used while a canary runs (update.ts).
 */
export function gateWaves(ctx: SyncContext, r: NodesToUpdateStates): NodesToUpdateStates {
  const order = waveOrder(ctx.ds, ctx.states);
  const waves = wavesOf(ctx.ds);
  if (!order || !waves) return r;
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  const settle = minReady + Math.max(0, waves.availableSeconds ?? 0);
  const waveOfState = (s: NodeState) => order.indexOf(s.node?.metadata.labels);
  // A node is done when it runs only an available pod of the current revision, for availableSeconds more.
  const done = (s: NodeState) => {
    if (!s.shouldRun) return true;
    const { newFacts, oldFacts, ok } = updatedPodsOf(s, ctx.hash);
    return ok && !!newFacts && !oldFacts && !newFacts.preDeleting && factsDaemonAvailable(newFacts, settle, ctx.now);
  };
  let current = order.values.length;
  for (const s of r.states) {
    const w = waveOfState(s);
    if (w < current && !done(s)) current = w;
  }
  if (current >= order.values.length) return r;
  // The current wave only waits for availableSeconds: its nodes are updated and available (minReadySeconds).
  let waitingMs: number | undefined = 0;
  for (const s of r.states) {
    if (waitingMs === undefined) break;
    if (waveOfState(s) !== current || done(s)) continue;
    const { newFacts, oldFacts, ok } = updatedPodsOf(s, ctx.hash);
    if (ok && newFacts && !oldFacts && !newFacts.preDeleting && factsDaemonAvailable(newFacts, minReady, ctx.now))
      waitingMs = Math.max(waitingMs, factsWaitingTimeMs(newFacts, settle, ctx.now));
    else waitingMs = undefined;
  }
  const states: NodeState[] = [];
  let held = 0;
  for (const s of r.states) {
    if (waveOfState(s) > current && stillToUpdate(s, ctx.hash)) held++;
    else states.push(s);
  }
  const wave: WaveProgress = {
    index: current,
    count: order.values.length,
    topologyKey: order.topologyKey,
    ...(order.values[current] !== undefined ? { value: order.values[current] } : {}),
    held,
    ...(waitingMs !== undefined ? { waiting: true } : {}),
    ...(waitingMs !== undefined && waitingMs > 0 && held > 0 ? { requeueAfterMs: waitingMs } : {}),
  };
  if (held === 0) return { ...r, wave };
  // The current wave's nodes only: no longer every node of the buckets (NodesToUpdateStates.complete).
  return { ...r, nodes: states.map((s) => s.name), states, wave, complete: false };
}

/** update.ts's "still to update" bucket: an old pod that is not PreparingDelete, and no new one. */
function stillToUpdate(s: NodeState, hash: string): boolean {
  const { newFacts, oldFacts, ok } = updatedPodsOf(s, hash);
  return ok && !newFacts && oldFacts !== undefined && !oldFacts.preDeleting;
}

/** The wave, as the Progressing message says it: "wave 2 of 3 (topology.kubernetes.io/zone=b)". */
export function waveMessage(w: WaveProgress): string {
  const which = w.value !== undefined ? `${w.topologyKey}=${w.value}` : `nodes without ${w.topologyKey}`;
  const waiting = w.waiting && w.held > 0 ? ', waiting for waves.availableSeconds before the next wave' : '';
  return `wave ${w.index + 1} of ${w.count} (${which})${waiting}`;
}

/** The wave a Progressing message names (waveMessage), for `kubectl ads` and the dashboard; undefined if none. */
export function parseWaveMessage(
  message: string | undefined,
): { index: number; count: number; which: string; waiting: boolean } | undefined {
  const m = /\bwave (\d+) of (\d+) \(([^)]*)\)(, waiting)?/.exec(message ?? '');
  if (!m) return undefined;
  return { index: Number(m[1]), count: Number(m[2]), which: m[3] ?? '', waiting: m[4] !== undefined };
}
