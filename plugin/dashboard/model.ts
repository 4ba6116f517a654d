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
import { desiredNodeNames, nodesToUpdate } from '../../src/daemonset/update.ts';
import { revisionHashLabel } from '../../src/daemonset/history.ts';
import { formatLabelSelector } from '../daemonset.ts';
import type { CellState, DaemonSetRow, EventRow, NodeCell, NodeMap, NodeMapCounts, RevisionCount } from './views.ts';

export type * from './views.ts';

/** status.canary as the canary feature will report it (read only when present). */
interface CanaryStatus {
  phase?: string;
  nodes?: string[];
}

function canaryStatus(ds: DaemonSet): CanaryStatus | undefined {
  const c = (ds.status as { canary?: unknown } | undefined)?.canary;
  return typeof c === 'object' && c !== null ? (c as CanaryStatus) : undefined;
}

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
  // Terminating pods are shown too (the controller's grouping drops deleted terminal ones).
  const byNode = getNodesToDaemonPods(owned, true);
  const canary = canaryStatus(ds);
  const canaryNodes = new Set(canary?.nodes ?? []);
  const minReady = ds.spec.minReadySeconds ?? 0;

  const names = new Set(desiredNodeNames(ctx));
  for (const n of byNode.keys()) names.add(n);
  const cells: NodeCell[] = [];
  for (const name of [...names].sort(cmp)) {
    const onNode = byNode.get(name) ?? [];
    const live = onNode.filter((p) => !p.metadata.deletionTimestamp);
    const terminating = onNode.filter((p) => !!p.metadata.deletionTimestamp);
    const newPod = hash ? live.find((p) => podRevisionHash(p) === hash) : undefined;
    const oldPod = live.find((p) => p !== newPod);
    const shown = newPod ?? oldPod;
    const eligibility = ctx.eligibility.get(name);
    const node = ctx.nodeByName.get(name);
    let state: CellState;
    if (live.some((p) => isPodPreDeleting(p))) state = 'preparing-delete';
    else if (terminating.length > 0) state = 'terminating';
    else if (!shown) state = 'missing';
    else state = isDaemonPodAvailable(shown, minReady, now) ? 'available' : 'unavailable';
    const cell: NodeCell = {
      node: name,
      revision: newPod ? 'new' : oldPod ? 'old' : 'none',
      hash: podRevisionHash(shown ?? terminating[0] ?? ({ metadata: {} } as Pod)),
      state,
      pods: [...live, ...terminating].map((p) => p.metadata.name ?? ''),
    };
    if (canaryNodes.has(name)) cell.canary = true;
    if (rolling && !newPod && oldPod && node && !mayUpdate.has(name)) {
      cell.hold = nodeSelectedForUpdate(node, ds) ? 'partition' : 'selector';
    }
    if (onNode.length > 0 && (!node || !eligibility?.shouldContinueRunning)) cell.misscheduled = true;
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
  };
  for (const c of cells) {
    counts[c.revision]++;
    if (c.state === 'preparing-delete') counts.preparingDelete++;
    else counts[c.state]++;
    if (c.canary) counts.canary++;
    if (c.hold === 'partition') counts.heldByPartition++;
    if (c.hold === 'selector') counts.heldBySelector++;
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
  return out;
}

export function daemonSetRow(ds: DaemonSet): DaemonSetRow {
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
  };
}

/** DaemonSet rows in namespace, name order. */
export function daemonSetRows(list: readonly DaemonSet[]): DaemonSetRow[] {
  return list.map(daemonSetRow).sort((a, b) => cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
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
  const time = (t: string | null | undefined) => (t ? Date.parse(t) || 0 : 0);
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
