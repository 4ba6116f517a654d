// `kubectl ads status`: when is a rollout done, failed or still going, and the live picture on a terminal.
//
// The rules are kubectl's DaemonSetStatusViewer
// (https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go),
// with its messages, plus what an Advanced DaemonSet adds:
// - a partition or rollingUpdate.selector leaves some nodes on the old revision on purpose. Such a rollout is
//   complete when every node the partition and selector let the controller update runs an updated, available pod:
//   the controller says so with condition Progressing reason PartitionReached (src/daemonset/status.ts). Without
//   that condition (another controller, e.g. kruise-manager, writes none) the target is desired - partition, which is
//   exact without a selector; with a selector and no condition, every node must be updated (kubectl's rule).
//   The messages are kubectl's StatefulSet viewer's for a partitioned roll out ("Waiting for partitioned roll out
//   to finish: U out of T new pods have been updated...", "partitioned roll out complete: U new pods have been
//   updated..."), T counted as the status bar counts it.
// - a paused rollout is not complete; the message says it is paused and how to resume (the wait goes on until
//   --timeout, as kubectl waits on a paused Deployment). So does a canary that is Observing or Paused (status.canary
//   of the update revision); the message is the controller's canary message.
// - failed: an invalid rollingUpdate.selector (it matches no node: nothing would ever be updated), condition
//   Progressing=False reason ProgressDeadlineExceeded (the Deployment convention), or a canary whose
//   status.canary.phase is Failed. Without rollingUpdate.canary in the spec there is no canary to fail or wait on,
//   whatever status.canary says (the controller records a canary removed after it failed as Promoted, CanaryRemoved).
import type { DaemonSet, DaemonSetCondition } from '../src/api/types.ts';
import type { Pod } from '../src/k8s/types.ts';
import { isPodReady } from '../src/k8s/pod.ts';
import { CONTROLLER_REVISION_HASH_LABEL } from '../src/api/constants.ts';
import { isRolloutFrozen, partitionCount } from '../src/daemonset/strategy.ts';
import { labelSelectorErrors } from '../src/k8s/labels.ts';
import { PluginError } from './errors.ts';
import { canarySpec, currentCanary, currentWave, updateRevision } from './daemonset.ts';

export type RolloutState = 'progressing' | 'complete' | 'failed';

export interface RolloutStatus {
  state: RolloutState;
  /** One line, kubectl's wording where kubectl has one. */
  message: string;
  desired: number;
  updated: number;
  available: number;
  /** How many nodes this rollout means to update (desired, less what partition/selector keep old when known). */
  target: number;
}

export const PROGRESS_DEADLINE_EXCEEDED = 'ProgressDeadlineExceeded';
export const PARTITION_REACHED = 'PartitionReached';
/** Progressing reason and condition type of rollingUpdate.unhealthyNodes Ignore (src/daemonset/status.ts). */
export const NODES_SET_ASIDE = 'NodesSetAside';

const conditionOf = (ds: DaemonSet, type: string): DaemonSetCondition | undefined =>
  ds.status?.conditions?.find((c) => c.type === type);

/** The rollout's state. Throws a PluginError for an OnDelete DaemonSet (kubectl: only RollingUpdate has a status). */
export function rolloutStatus(ds: DaemonSet): RolloutStatus {
  const name = ds.metadata.name ?? '';
  if ((ds.spec.updateStrategy?.type ?? 'RollingUpdate') !== 'RollingUpdate')
    throw new PluginError('rollout status is only available for RollingUpdate strategy type');
  const s = ds.status;
  const desired = s?.desiredNumberScheduled ?? 0;
  const updated = s?.updatedNumberScheduled ?? 0;
  const available = s?.numberAvailable ?? 0;
  const ru = ds.spec.updateStrategy?.rollingUpdate;
  const hasSelector = !!ru?.selector;
  const partition = partitionCount(ds, desired);
  const estimated = hasSelector ? desired : Math.max(0, desired - partition);
  const base = { desired, updated, available, target: estimated };

  if ((ds.metadata.generation ?? 0) > (s?.observedGeneration ?? 0))
    return { ...base, state: 'progressing', message: 'Waiting for daemon set spec update to be observed...' };
  const canary = canarySpec(ds) ? currentCanary(ds) : undefined;
  if (canary?.phase === 'Failed')
    return {
      ...base,
      state: 'failed',
      message: `daemon set "${name}" canary failed${canary.message ? `: ${canary.message}` : ''}`,
    };
  const progressing = conditionOf(ds, 'Progressing');
  if (progressing?.status === 'False' && progressing.reason === PROGRESS_DEADLINE_EXCEEDED)
    return { ...base, state: 'failed', message: `daemon set "${name}" exceeded its progress deadline` };

  // A selector that does not parse matches no node (the webhook refuses it now; it may be stored from before).
  const selectorErrors = ru?.selector ? labelSelectorErrors(ru.selector) : [];
  if (updated < desired && selectorErrors.length > 0)
    return {
      ...base,
      state: 'failed',
      message: `daemon set "${name}" cannot roll out: invalid rollingUpdate.selector: ${selectorErrors.join('; ')}`,
    };
  // rollingUpdate.unhealthyNodes Ignore: which nodes the rollout goes on past, said briefly in every message.
  const aside = conditionOf(ds, NODES_SET_ASIDE);
  const asideNote = aside?.status === 'True' && aside.message ? `; ${aside.message}` : '';
  if (updated < desired && progressing?.reason === NODES_SET_ASIDE)
    return {
      ...base,
      target: updated,
      state: 'complete',
      message: `roll out complete but for the nodes set aside: ${updated} new pods have been updated${asideNote}`,
    };
  if (updated < desired) {
    const reached = progressing
      ? progressing.reason === PARTITION_REACHED
      : !hasSelector && partition > 0 && updated >= estimated;
    if (reached)
      return {
        ...base,
        target: updated,
        state: 'complete',
        message: `partitioned roll out complete: ${updated} new pods have been updated...`,
      };
    if (canary && (canary.phase === 'Observing' || canary.phase === 'Paused'))
      return {
        ...base,
        state: 'progressing',
        message: `Waiting for daemon set "${name}" canary (${canary.phase}${canary.nodes?.length ? ` on ${canary.nodes.join(', ')}` : ''}): ${canary.message || `${updated} out of ${desired} new pods have been updated`}...`,
      };
    const wave = currentWave(ds);
    const paused =
      (wave
        ? ` (wave ${wave.index} of ${wave.count}: ${wave.which}${wave.waiting ? ', waiting for availableSeconds' : ''})`
        : '') +
      (isRolloutFrozen(ds)
        ? ` (frozen: unfreeze with "kubectl ads unfreeze ${name}")`
        : ru?.paused === true
          ? ` (paused: resume with "kubectl ads resume ${name}")`
          : '');
    // Out of the nodes the partition lets the controller update, as the status bar counts them (kubectl's
    // partitioned StatefulSet wording); with a selector that number is the controller's to know.
    if (partition > 0 && !hasSelector)
      return {
        ...base,
        state: 'progressing',
        message: `Waiting for partitioned roll out to finish: ${updated} out of ${estimated} new pods have been updated${paused}...`,
      };
    return {
      ...base,
      state: 'progressing',
      message: `Waiting for daemon set "${name}" rollout to finish: ${updated} out of ${desired} new pods have been updated${paused}${asideNote}...`,
    };
  }
  if (available < desired) {
    // spec.nodeReadiness: nodes whose readiness taint waits for these pods, or a manager that may not remove it.
    const readiness = conditionOf(ds, 'NodeReadiness');
    const waiting = readiness?.status === 'False' ? ` (${readiness.message})` : '';
    return {
      ...base,
      state: 'progressing',
      message: `Waiting for daemon set "${name}" rollout to finish: ${available} of ${desired} updated pods are available${waiting}...`,
    };
  }
  return {
    ...base,
    target: desired,
    state: 'complete',
    message: `daemon set "${name}" successfully rolled out${asideNote}`,
  };
}

// ------------------------------------------------------------------------------------------------
// The live picture (a terminal only)

/** `[██████░░░░]  3/5 updated` in `width` columns for the bar itself. */
export function progressBar(done: number, total: number, width: number): string {
  const w = Math.max(4, width);
  const frac = total > 0 ? Math.min(1, done / total) : 1;
  const full = Math.round(frac * w);
  return `[${'█'.repeat(full)}${'░'.repeat(w - full)}] ${String(Math.round(frac * 100)).padStart(3)}%`;
}

export interface PodCell {
  revision: string;
  ready: boolean;
  terminating: boolean;
}

export interface NodeColumn {
  node: string;
  pods: PodCell[];
}

/** The DaemonSet's pods per node, nodes sorted by name (pods not yet scheduled are left out). */
export function nodeColumns(pods: readonly Pod[]): NodeColumn[] {
  const byNode = new Map<string, PodCell[]>();
  for (const p of pods) {
    const node = p.spec.nodeName;
    if (!node) continue;
    const cells = byNode.get(node) ?? [];
    cells.push({
      revision: p.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? '',
      ready: isPodReady(p),
      terminating: !!p.metadata.deletionTimestamp,
    });
    byNode.set(node, cells);
  }
  return [...byNode.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([node, p]) => ({ node, pods: p }));
}

export const MAP_LEGEND = '● ready  ○ not ready  ◌ terminating  · none (one column per node, by name)';

/**
 * The node × revision map: one row per revision (the update revision first, then by pod count), one column per node
 * (by name), wrapped to `width`. A cell is the state of that node's pod of that revision.
 */
export function revisionMap(columns: readonly NodeColumn[], current: string, width: number): string[] {
  const counts = new Map<string, number>();
  for (const c of columns) for (const p of c.pods) counts.set(p.revision, (counts.get(p.revision) ?? 0) + 1);
  if (current && !counts.has(current)) counts.set(current, 0);
  const revisions = [...counts.keys()].sort((a, b) =>
    a === current ? -1 : b === current ? 1 : (counts.get(b) ?? 0) - (counts.get(a) ?? 0) || (a < b ? -1 : 1),
  );
  const label = (r: string) => `${r || '<none>'}${r === current ? ' (update)' : ''}`;
  const labelWidth = Math.max(...revisions.map((r) => label(r).length), 8);
  const countWidth = Math.max(...[...counts.values()].map((n) => String(n).length), 1);
  const prefix = labelWidth + countWidth + 4;
  const cellsPerLine = Math.max(10, width - prefix);
  const lines: string[] = [];
  for (const r of revisions) {
    const cells = columns
      .map((c) => {
        const p = c.pods.find((x) => x.revision === r && !x.terminating) ?? c.pods.find((x) => x.revision === r);
        if (!p) return '·';
        if (p.terminating) return '◌';
        return p.ready ? '●' : '○';
      })
      .join('');
    const head = `${label(r).padEnd(labelWidth)}  ${String(counts.get(r) ?? 0).padStart(countWidth)}  `;
    for (let i = 0; i < Math.max(cells.length, 1); i += cellsPerLine)
      lines.push(`${i === 0 ? head : ' '.repeat(prefix)}${cells.slice(i, i + cellsPerLine)}`.trimEnd());
  }
  return lines;
}

/**
 * The whole terminal frame: the status line, the bar, the map, the legend; `mapNote` instead of the map when the pods
 * cannot be read (e.g. no permission to list them).
 */
export function statusFrame(
  ds: DaemonSet,
  pods: readonly Pod[],
  status: RolloutStatus,
  width: number,
  mapNote?: string,
): string[] {
  const counts = `${status.updated}/${status.target} updated, ${status.available}/${status.desired} available`;
  const bar = progressBar(status.updated, status.target, Math.min(40, Math.max(10, width - counts.length - 10)));
  const map = mapNote ? [mapNote] : [...revisionMap(nodeColumns(pods), updateRevision(ds), width), MAP_LEGEND];
  return [status.message, `${bar}  ${counts}`, ...map];
}
