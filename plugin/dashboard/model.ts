// The dashboard's pure part: what the page shows, computed from plain objects (the DaemonSet, nodes, pods,
// ControllerRevisions, events) with the controller's own planner functions, so the page draws the boundaries the
// controller acts on. Which nodes the rolling update may touch is src/daemonset/update.ts's nodesToUpdate (Kruise's
// filterDaemonPodsNodeToUpdate, https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_update.go):
// a node with an old pod outside that list is held back, by rollingUpdate.selector when the node does not match it,
// else by the partition.
import type { DaemonSet } from '../../src/api/types.ts';
import type { ControllerRevision, KubeObject, LabelSelector, Node, Pod } from '../../src/k8s/types.ts';
import { cmp, newSyncContext } from '../../src/daemonset/context.ts';
import { getNodesToDaemonPods, getControllerOf, isPodPreDeleting, podRevisionHash } from '../../src/daemonset/pods.ts';
import { isDaemonPodAvailable } from '../../src/daemonset/status.ts';
import {
  isDaemonSetPaused,
  isRollingUpdate,
  nodeSelectedForUpdate,
  partitionCount,
  rollingUpdateType,
} from '../../src/daemonset/strategy.ts';
import { nodeHasTaint, readinessTaintOf } from '../../src/daemonset/node-readiness.ts';
import { desiredNodeNames, nodesToUpdate, nodesToUpdateResult, setAside } from '../../src/daemonset/update.ts';
import { waveMessage, waveOrder, parseWaveMessage } from '../../src/daemonset/waves.ts';
import { revisionHashLabel } from '../../src/daemonset/history.ts';
import { templateOfRevision } from '../../src/daemonset/inplace.ts';
import { canarySpec, canaryStatus, currentCanary, formatLabelSelector } from '../daemonset.ts';
import { controlledRevisions, CHANGE_CAUSE_ANNOTATION, findHistory } from '../history.ts';
import { rolloutView, type HoldCounts } from './rollout.ts';
import type {
  CanaryPodRow,
  CellState,
  ConditionView,
  DaemonSetRow,
  EventRow,
  NodeCell,
  NodeGroupRow,
  NodeGroups,
  NodeMap,
  NodeMapCounts,
  RevisionCount,
  RevisionRow,
} from './views.ts';

export type * from './views.ts';

/** The label the per-zone breakdown groups nodes by unless the page picks another (well-known label). */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

/** The update revision: status.daemonSetHash (v1alpha1), or status.updateRevision (v1beta1). */
export function updateRevisionOf(ds: DaemonSet): string {
  const s = ds.status as { daemonSetHash?: string; updateRevision?: string } | undefined;
  return s?.daemonSetHash || s?.updateRevision || '';
}

/** "RollingUpdate/Standard", "RollingUpdate/InPlaceIfPossible", "OnDelete". */
export function strategyName(ds: DaemonSet): string {
  return isRollingUpdate(ds) ? `RollingUpdate/${rollingUpdateType(ds)}` : (ds.spec.updateStrategy?.type ?? 'OnDelete');
}

/** A label selector in the query syntax (`a=b,c in (d,e),!f`, as kubectl prints it); '<none>' when empty. */
export const labelSelectorString = (selector: LabelSelector): string => formatLabelSelector(selector);

/** Whether `obj` is controlled by the DaemonSet (its controller ownerReference names the DaemonSet's uid). */
export function ownedBy(obj: KubeObject, ds: DaemonSet): boolean {
  return !!ds.metadata.uid && getControllerOf(obj)?.uid === ds.metadata.uid;
}

export interface NodeMapInput {
  ds: DaemonSet;
  nodes: readonly Node[];
  /** The DaemonSet's pods (others are ignored). */
  pods: readonly Pod[];
  /** The DaemonSet's ControllerRevisions (others are ignored). */
  revisions: readonly ControllerRevision[];
  now: number;
}

/** The node × revision map of one DaemonSet. */
export function nodeMap({ ds, nodes, pods, revisions, now }: NodeMapInput): NodeMap {
  const owned = pods.filter((p) => ownedBy(p, ds));
  const hash = updateRevisionOf(ds);
  // The controller's own view of this sync: eligibility, desired count, partition and selector filtering.
  const ctx = newSyncContext(ds, nodes, owned, hash, now);
  const partition = partitionCount(ds, ctx.desired);
  const rolling = isRollingUpdate(ds) && hash !== '';
  const mayUpdate = new Set(rolling ? nodesToUpdate(ctx) : []);
  // The nodes the controller's rolling update sets aside (unhealthyNodes Ignore), as it decides it.
  const aside = rolling ? setAside(ctx) : new Map();
  // Terminating pods are shown too (the controller's grouping drops deleted terminal ones).
  const byNode = getNodesToDaemonPods(owned, true);
  const canary = canaryStatus(ds);
  const canaryNodes = new Set(canary?.nodes ?? []);
  // A canary of the update revision that is not over holds the other nodes on the stable revision (and, Paused or
  // Failed, its own nodes too), whatever partition and selector say (src/daemonset/update.ts nodesToUpdateResult).
  // Only with rollingUpdate.canary in the spec, as plugin/status.ts reads it.
  const live = canarySpec(ds) ? currentCanary(ds) : undefined;
  const canaryHolds = live?.phase === 'Observing' || live?.phase === 'Paused' || live?.phase === 'Failed';
  const minReady = ds.spec.minReadySeconds ?? 0;
  // rollingUpdate.waves: each node's wave, and the current one as the controller decides it (src/daemonset/waves.ts).
  const waves = rolling ? waveOrder(ds, ctx.states) : undefined;
  const currentWave = waves ? nodesToUpdateResult(ctx).wave : undefined;

  const names = new Set(desiredNodeNames(ctx));
  for (const n of byNode.keys()) names.add(n);
  const cells: NodeCell[] = [];
  const readiness = readinessTaintOf(ds);
  for (const name of [...names].sort(cmp)) {
    const onNode = byNode.get(name) ?? [];
    const running = onNode.filter((p) => !p.metadata.deletionTimestamp);
    const terminating = onNode.filter((p) => !!p.metadata.deletionTimestamp);
    const newPod = hash ? running.find((p) => podRevisionHash(p) === hash) : undefined;
    const oldPod = running.find((p) => p !== newPod);
    const shown = newPod ?? oldPod;
    const eligibility = ctx.eligibility.get(name);
    const node = ctx.nodeByName.get(name);
    let state: CellState;
    if (running.some((p) => isPodPreDeleting(p))) state = 'preparing-delete';
    else if (terminating.length > 0) state = 'terminating';
    else if (!shown) state = 'missing';
    else state = isDaemonPodAvailable(shown, minReady, now) ? 'available' : 'unavailable';
    const cell: NodeCell = {
      node: name,
      revision: newPod ? 'new' : oldPod ? 'old' : 'none',
      hash: podRevisionHash(shown ?? terminating[0] ?? ({ metadata: {} } as Pod)),
      state,
      pods: [...running, ...terminating].map((p) => p.metadata.name ?? ''),
    };
    if (canaryNodes.has(name)) cell.canary = true;
    if (waves && node) cell.wave = node.metadata.labels?.[waves.topologyKey] ?? '';
    if (rolling && !newPod && oldPod && node) {
      if (canaryHolds) {
        if (!(live?.phase === 'Observing' && canaryNodes.has(name))) cell.hold = 'canary';
      } else if (!mayUpdate.has(name)) {
        const later = currentWave && waves && waves.indexOf(node.metadata.labels) > currentWave.index;
        cell.hold = !nodeSelectedForUpdate(node, ds) ? 'selector' : later ? 'wave' : 'partition';
      }
    }
    if (onNode.length > 0 && (!node || !eligibility?.shouldContinueRunning)) cell.misscheduled = true;
    if (readiness && node && nodeHasTaint(node, readiness)) cell.waiting = true;
    const why = aside.get(name);
    if (why) cell.setAside = why;
    cells.push(cell);
  }

  const counts: NodeMapCounts = {
    nodes: cells.length,
    new: 0,
    old: 0,
    none: 0,
    available: 0,
    unavailable: 0,
    terminating: 0,
    preparingDelete: 0,
    missing: 0,
    canary: 0,
    heldByPartition: 0,
    heldBySelector: 0,
    heldByCanary: 0,
  };
  for (const c of cells) {
    counts[c.revision]++;
    if (c.state === 'preparing-delete') counts.preparingDelete++;
    else counts[c.state]++;
    if (c.canary) counts.canary++;
    if (c.hold === 'partition') counts.heldByPartition++;
    if (c.hold === 'selector') counts.heldBySelector++;
    if (c.hold === 'canary') counts.heldByCanary++;
  }

  const numbers = new Map<string, number>();
  for (const r of revisions) if (ownedBy(r, ds)) numbers.set(revisionHashLabel(r), r.revision);
  const perHash = new Map<string, number>();
  if (hash) perHash.set(hash, 0);
  for (const p of owned) {
    if (p.metadata.deletionTimestamp) continue;
    const h = podRevisionHash(p);
    perHash.set(h, (perHash.get(h) ?? 0) + 1);
  }
  const revisionCounts: RevisionCount[] = [...perHash].map(([h, n]) => {
    const r: RevisionCount = { hash: h, pods: n, current: h === hash };
    const number = numbers.get(h);
    if (number !== undefined) r.number = number;
    return r;
  });
  revisionCounts.sort(
    (a, b) => Number(b.current) - Number(a.current) || (b.number ?? -1) - (a.number ?? -1) || cmp(a.hash, b.hash),
  );

  const selector = isRollingUpdate(ds) ? ds.spec.updateStrategy?.rollingUpdate?.selector : undefined;
  const out: NodeMap = {
    updateRevision: hash,
    revisions: revisionCounts,
    cells,
    counts,
    strategy: strategyName(ds),
    partition,
    paused: isDaemonSetPaused(ds),
    untargeted: nodes.length - cells.filter((c) => ctx.nodeByName.has(c.node)).length,
  };
  if (selector) out.rolloutSelector = labelSelectorString(selector);
  if (canary) out.canary = { phase: canary.phase ?? '-', nodes: canaryNodes.size };
  const wave = currentWave && parseWaveMessage(waveMessage(currentWave));
  if (wave) out.wave = wave;
  return out;
}

/** The old nodes each boundary holds, from a node map (what rolloutView counts the allowed target from). */
export function holdCounts(map: NodeMap): HoldCounts {
  const { heldByPartition, heldBySelector, heldByCanary } = map.counts;
  return { heldByPartition, heldBySelector, heldByCanary };
}

/**
 * One row of the table. `holds`, from the node map when the dashboard watches the DaemonSet's pods, makes the
 * allowed target exact; the detail panel shows the same row, so both say the same.
 */
export function daemonSetRow(ds: DaemonSet, holds?: HoldCounts): DaemonSetRow {
  const s = ds.status;
  const desired = s?.desiredNumberScheduled ?? 0;
  const updated = s?.updatedNumberScheduled ?? 0;
  const available = s?.numberAvailable ?? 0;
  const observed = (s?.observedGeneration ?? 0) >= (ds.metadata.generation ?? 0);
  const p = isRollingUpdate(ds) ? ds.spec.updateStrategy?.rollingUpdate?.partition : undefined;
  return {
    namespace: ds.metadata.namespace ?? '',
    name: ds.metadata.name ?? '',
    strategy: strategyName(ds),
    desired,
    current: s?.currentNumberScheduled ?? 0,
    updated,
    ready: s?.numberReady ?? 0,
    available,
    unavailable: s?.numberUnavailable ?? 0,
    partition: p === undefined || p === null ? '-' : String(p),
    paused: isDaemonSetPaused(ds),
    canary: canaryStatus(ds)?.phase ?? '-',
    updateRevision: updateRevisionOf(ds),
    observed,
    complete: observed && updated === desired && available === desired,
    hasCanary: !!canarySpec(ds),
    rollout: rolloutView(ds, holds),
  };
}

/** DaemonSet rows in namespace, name order; `holdsOf` gives the node map's holds of those the dashboard watches. */
export function daemonSetRows(
  list: readonly DaemonSet[],
  holdsOf: (ds: DaemonSet) => HoldCounts | undefined = () => undefined,
): DaemonSetRow[] {
  return list
    .map((ds) => daemonSetRow(ds, holdsOf(ds)))
    .sort((a, b) => cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
}

const time = (t: string | null | undefined) => (t ? Date.parse(t) || 0 : 0);

/** status.conditions[type], as shown; undefined when the controller wrote none. */
export function conditionView(ds: DaemonSet, type = 'Progressing'): ConditionView | undefined {
  const c = ds.status?.conditions?.find((x) => x.type === type);
  if (!c) return undefined;
  return {
    type: c.type,
    status: c.status,
    reason: c.reason ?? '',
    message: c.message ?? '',
    lastTransitionTime: time(c.lastTransitionTime),
  };
}

/** Groups listed before the rest are folded into one "other" row (a label such as hostname has one per node). */
export const MAX_GROUPS = 50;

/** Label keys of `nodes` to group by: the zone label first (the default, listed even when absent), then sorted. */
export function nodeLabelKeys(nodes: readonly Node[]): string[] {
  const keys = new Set<string>();
  for (const n of nodes) for (const k of Object.keys(n.metadata.labels ?? {})) keys.add(k);
  keys.delete(ZONE_LABEL);
  return [ZONE_LABEL, ...[...keys].sort(cmp)];
}

/**
 * The per-zone breakdown: the map's cells grouped by the value of node label `key` (zone by default), with how many
 * run the update revision, an old one or none, how many are not available and how many are held. Groups by value
 * ('' = without the label, last); beyond MAX_GROUPS, the smallest are folded into `other`.
 */
export function nodeGroups(map: NodeMap, nodes: readonly Node[], key: string = ZONE_LABEL): NodeGroups {
  const valueOf = new Map(nodes.map((n) => [n.metadata.name ?? '', n.metadata.labels?.[key] ?? '']));
  const byValue = new Map<string, NodeGroupRow>();
  const row = (value: string): NodeGroupRow => ({ value, nodes: 0, new: 0, old: 0, none: 0, unavailable: 0, held: 0 });
  for (const c of map.cells) {
    const value = valueOf.get(c.node) ?? '';
    let r = byValue.get(value);
    if (!r) byValue.set(value, (r = row(value)));
    add(r, c);
  }
  let rows = [...byValue.values()].sort(
    (a, b) => Number(a.value === '') - Number(b.value === '') || cmp(a.value, b.value),
  );
  const out: NodeGroups = { key, keys: nodeLabelKeys(nodes), rows, folded: 0 };
  if (rows.length > MAX_GROUPS) {
    const kept = new Set([...rows].sort((a, b) => b.nodes - a.nodes || cmp(a.value, b.value)).slice(0, MAX_GROUPS - 1));
    const other = row('');
    for (const r of rows.filter((x) => !kept.has(x))) {
      for (const f of ['nodes', 'new', 'old', 'none', 'unavailable', 'held'] as const) other[f] += r[f];
      out.folded++;
    }
    rows = rows.filter((x) => kept.has(x));
    out.rows = rows;
    out.other = other;
  }
  return out;
}

function add(r: NodeGroupRow, c: NodeCell): void {
  r.nodes++;
  r[c.revision]++;
  if (c.state !== 'available') r.unavailable++;
  if (c.hold) r.held++;
}

/** "name=image" of a template's init containers, then containers. */
function imagesOf(template: { spec?: unknown } | undefined): string[] {
  const spec = (template?.spec ?? {}) as {
    initContainers?: { name?: string; image?: string }[];
    containers?: { name?: string; image?: string }[];
  };
  return [...(spec.initContainers ?? []), ...(spec.containers ?? [])].map((c) => `${c.name ?? ''}=${c.image ?? ''}`);
}

/**
 * The DaemonSet's ControllerRevisions as `kubectl ads history` reads them (plugin/history.ts controlledRevisions:
 * controlled by it, by revision number), newest first, with their images, live pods, which one new pods get, which
 * one `undo` goes back to (findHistory(0): the previous one) and the canary's stable revision.
 */
export function revisionRows(ds: DaemonSet, revisions: readonly ControllerRevision[], map?: NodeMap): RevisionRow[] {
  const history = controlledRevisions(revisions, ds);
  const update = updateRevisionOf(ds);
  const undo = findHistory(0, history);
  const stable = canarySpec(ds) ? currentCanary(ds)?.stableRevision : undefined;
  const pods = new Map((map?.revisions ?? []).map((r) => [r.hash, r.pods]));
  return history
    .map((r) => {
      const hash = revisionHashLabel(r);
      return {
        number: r.revision ?? 0,
        hash,
        images: imagesOf(templateOfRevision(r)),
        changeCause: r.metadata.annotations?.[CHANGE_CAUSE_ANNOTATION] ?? '',
        update: hash === update,
        undoTarget: r === undo,
        stable: !!stable && hash === stable,
        pods: pods.get(hash) ?? 0,
      };
    })
    .reverse();
}

interface ContainerStatusLike {
  restartCount?: number;
  state?: { waiting?: { reason?: string }; terminated?: { reason?: string } };
}

/**
 * The pods on the canary's nodes (status.canary.nodes of the update revision's canary, with rollingUpdate.canary in
 * the spec), by node, with their restarts (the sum of containerStatuses[].restartCount, what the canary's
 * autoFail.maxRestarts judges) and a waiting or terminated container's reason.
 */
export function canaryPodRows(ds: DaemonSet, pods: readonly Pod[]): CanaryPodRow[] {
  const canary = canarySpec(ds) ? currentCanary(ds) : undefined;
  const nodes = new Set(canary?.nodes ?? []);
  if (nodes.size === 0) return [];
  const hash = updateRevisionOf(ds);
  const rows: CanaryPodRow[] = [];
  for (const p of pods) {
    const node = p.spec?.nodeName ?? '';
    if (!nodes.has(node) || !ownedBy(p, ds) || p.metadata.deletionTimestamp) continue;
    const statuses = (p.status?.containerStatuses ?? []) as ContainerStatusLike[];
    const reason = statuses.map((c) => c.state?.waiting?.reason ?? c.state?.terminated?.reason ?? '').find(Boolean);
    rows.push({
      pod: p.metadata.name ?? '',
      node,
      revision: podRevisionHash(p) === hash && hash ? 'new' : 'old',
      ready: (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
      restarts: statuses.reduce((n, c) => n + (c.restartCount ?? 0), 0),
      reason: reason ?? '',
    });
  }
  return rows.sort((a, b) => cmp(a.node, b.node) || cmp(a.pod, b.pod));
}

/** core/v1 Event, the fields read here. */
export interface CoreEvent extends KubeObject {
  involvedObject?: { kind?: string; name?: string; namespace?: string; uid?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  eventTime?: string | null;
  series?: { count?: number; lastObservedTime?: string } | null;
  source?: { component?: string };
  reportingComponent?: string;
}

/** The most recent `limit` events about the DaemonSet (its uid), newest first (kubectl describe's fields). */
export function eventRows(events: readonly CoreEvent[], ds: DaemonSet, limit = 100): EventRow[] {
  const uid = ds.metadata.uid;
  return events
    .filter((e) => !!uid && e.involvedObject?.uid === uid)
    .map((e) => ({
      type: e.type ?? '',
      reason: e.reason ?? '',
      message: e.message ?? '',
      count: e.series?.count ?? e.count ?? 1,
      last:
        time(e.series?.lastObservedTime) ||
        time(e.lastTimestamp) ||
        time(e.eventTime) ||
        time(e.metadata.creationTimestamp),
      from: e.reportingComponent || e.source?.component || '',
    }))
    .sort((a, b) => b.last - a.last || cmp(a.reason, b.reason) || cmp(a.message, b.message))
    .slice(0, limit);
}

/** The label selector that lists the pods and revisions of `ds` (its spec.selector); undefined when empty. */
export function daemonSetSelector(ds: DaemonSet): string | undefined {
  const s = labelSelectorString(ds.spec.selector as LabelSelector);
  return s === '<none>' ? undefined : s;
}
