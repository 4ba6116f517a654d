// The rollout's state, badges and progress: ONE pure function, rolloutView, that the DaemonSet table and the detail
// panel both call, so they cannot disagree (one said Failed while the other said Paused when each had its own).
//
// The verdict is `kubectl ads status`'s (plugin/status.ts rolloutStatus: kubectl's DaemonSetStatusViewer plus the
// partition, rollingUpdate.selector, pause and canary rules), so the CLI, the controller's Progressing condition and
// the page agree on failed / complete / progressing and use the same words. Progress is counted against what the
// rollout may update, as kubectl counts a partitioned StatefulSet ("Waiting for partitioned roll out to finish: X out
// of Y new pods have been updated",
// https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go),
// not against every desired node: 141 of the 226 nodes the partition allows is "141 / 226 allowed (of 500)", not 28%.
import type { DaemonSet } from '../../src/api/types.ts';
import { isDaemonSetPaused, isRollingUpdate, isRolloutFrozen, partitionCount } from '../../src/daemonset/strategy.ts';
import { canarySpec, currentCanary } from '../daemonset.ts';
import { rolloutStatus, type RolloutStatus } from '../status.ts';
import type { Badge, RolloutProgress, RolloutState, RolloutView } from './views.ts';

/**
 * What the node map counted (model.ts nodeMap): old nodes each boundary holds. Without it (the table's other rows,
 * whose pods the dashboard does not watch) the target is rolloutStatus's estimate from the status alone.
 */
export interface HoldCounts {
  heldByPartition: number;
  heldBySelector: number;
  heldByCanary: number;
}

const STATE_BADGE: Record<RolloutState, Omit<Badge, 'title'>> = {
  failed: { kind: 'failed', text: 'failed', tone: 'bad' },
  pending: { kind: 'pending', text: 'not observed', tone: 'info' },
  complete: { kind: 'complete', text: 'complete', tone: 'ok' },
  held: { kind: 'held', text: 'partition reached', tone: 'ok' },
  frozen: { kind: 'frozen', text: 'frozen', tone: 'warn' },
  canary: { kind: 'canary', text: 'canary observing', tone: 'info' },
  'canary-paused': { kind: 'canary-paused', text: 'canary paused', tone: 'warn' },
  paused: { kind: 'paused', text: 'paused', tone: 'warn' },
  progressing: { kind: 'progressing', text: 'progressing', tone: 'info' },
  ondelete: { kind: 'ondelete', text: 'OnDelete', tone: 'info' },
};

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The state from rolloutStatus's verdict and the object (the order rolloutStatus decides in). */
function stateOf(ds: DaemonSet, s: RolloutStatus): RolloutState {
  if (s.state === 'failed') return 'failed';
  if (s.state === 'complete') return s.updated < s.desired ? 'held' : 'complete';
  if ((ds.metadata.generation ?? 0) > (ds.status?.observedGeneration ?? 0)) return 'pending';
  if (isRolloutFrozen(ds)) return 'frozen';
  const canary = canarySpec(ds) ? currentCanary(ds) : undefined;
  if (canary?.phase === 'Observing') return 'canary';
  if (canary?.phase === 'Paused') return 'canary-paused';
  if (isDaemonSetPaused(ds)) return 'paused';
  return 'progressing';
}

/**
 * The nodes this rollout may update: from the node map's holds when known (exact), else rolloutStatus's target
 * (desired - partition; every desired node with a rollingUpdate.selector, which only the nodes can tell). Never below
 * what is updated already (raising the partition rolls nothing back).
 */
function targetOf(ds: DaemonSet, s: RolloutStatus, holds: HoldCounts | undefined): { target: number; exact: boolean } {
  const { desired, updated } = s;
  if (holds) {
    const held = holds.heldByPartition + holds.heldBySelector + holds.heldByCanary;
    return { target: Math.max(Math.min(updated, desired), desired - held, 0), exact: true };
  }
  const canary = canarySpec(ds) ? currentCanary(ds) : undefined;
  if (canary && (canary.phase === 'Observing' || canary.phase === 'Paused'))
    return { target: Math.max(canary.nodes?.length ?? 0, Math.min(updated, desired)), exact: false };
  return {
    target: Math.max(s.target, Math.min(updated, desired)),
    exact: !ds.spec.updateStrategy?.rollingUpdate?.selector,
  };
}

/**
 * rolloutStatus counts a rollout with a rollingUpdate.selector out of every desired node ("U out of D new pods"): only
 * the nodes tell how many the selector and the partition allow. Knowing that from the node map, the line is the one
 * rolloutStatus prints for a partition alone, kubectl's partitioned StatefulSet wording, out of the allowed target.
 */
function messageOf(ds: DaemonSet, s: RolloutStatus, target: number, exact: boolean): string {
  const generic = `Waiting for daemon set "${ds.metadata.name ?? ''}" rollout to finish: ${s.updated} out of ${s.desired} new pods`;
  if (!exact || s.state !== 'progressing' || target >= s.desired || !s.message.startsWith(generic)) return s.message;
  return `Waiting for partitioned roll out to finish: ${s.updated} out of ${target} new pods${s.message.slice(generic.length)}`;
}

export function progressText(p: Pick<RolloutProgress, 'updated' | 'target' | 'desired' | 'exact'>): string {
  const approx = p.exact ? '' : '≈';
  if (p.target >= p.desired) return `${p.updated} / ${p.desired}`;
  return `${p.updated} / ${approx}${p.target} allowed (of ${p.desired})`;
}

/** The rollout's state, badges and progress: the table's row and the detail panel both show exactly this. */
export function rolloutView(ds: DaemonSet, holds?: HoldCounts): RolloutView {
  const s0 = ds.status;
  const desired = s0?.desiredNumberScheduled ?? 0;
  const updated = s0?.updatedNumberScheduled ?? 0;
  const available = s0?.numberAvailable ?? 0;
  if (!isRollingUpdate(ds)) {
    // kubectl has no rollout status for OnDelete: old pods change when someone deletes them.
    const progress = { updated, target: desired, desired, available, exact: true };
    return {
      state: 'ondelete',
      message: `updateStrategy OnDelete: ${updated} out of ${desired} pods run the update revision; old pods are replaced when deleted`,
      badges: [{ ...STATE_BADGE.ondelete, title: 'old pods are replaced only when deleted' }],
      progress: { ...progress, percent: percent(updated, desired), text: progressText(progress) },
    };
  }
  const s = rolloutStatus(ds);
  const state = stateOf(ds, s);
  const { target, exact } = targetOf(ds, s, holds);
  const progress = { updated, target, desired, available, exact };
  const badges: Badge[] = [{ ...STATE_BADGE[state], title: s.message }];

  const ru = ds.spec.updateStrategy?.rollingUpdate;
  const partition = partitionCount(ds, desired);
  const unfinished = updated < desired;
  if (holds) {
    if (holds.heldByPartition > 0)
      badges.push({
        kind: 'held-partition',
        text: `held by partition: ${holds.heldByPartition}`,
        title: `partition ${String(ru?.partition)} keeps ${plural(holds.heldByPartition, 'node')} on the old revision`,
        tone: 'warn',
      });
    if (holds.heldBySelector > 0)
      badges.push({
        kind: 'held-selector',
        text: `held by selector: ${holds.heldBySelector}`,
        title: `${plural(holds.heldBySelector, 'node')} not matched by rollingUpdate.selector keep the old revision`,
        tone: 'warn',
      });
    if (holds.heldByCanary > 0)
      badges.push({
        kind: 'held-canary',
        text: `held by canary: ${holds.heldByCanary}`,
        title: `${plural(holds.heldByCanary, 'node')} keep the stable revision until the canary is promoted`,
        tone: 'warn',
      });
  } else if (unfinished) {
    if (partition > 0)
      badges.push({
        kind: 'held-partition',
        text: `held by partition: ${Math.min(partition, desired)}`,
        title: `partition ${String(ru?.partition)} keeps up to ${plural(Math.min(partition, desired), 'node')} on the old revision`,
        tone: 'warn',
      });
    if (ru?.selector)
      badges.push({
        kind: 'held-selector',
        text: 'held by selector',
        title: 'nodes not matched by rollingUpdate.selector keep the old revision',
        tone: 'warn',
      });
  }
  if (isDaemonSetPaused(ds) && state !== 'paused')
    badges.push({ kind: 'paused', text: 'paused', title: 'rollingUpdate.paused is set', tone: 'warn' });
  const canary = canarySpec(ds) ? currentCanary(ds) : undefined;
  if (canary?.phase && state !== 'canary' && state !== 'canary-paused')
    badges.push({
      kind: 'canary',
      text: `canary ${canary.phase}`,
      title: canary.message || `canary of revision ${canary.revision ?? ''}: ${canary.phase}`,
      tone: canary.phase === 'Failed' ? 'bad' : canary.phase === 'Promoted' ? 'ok' : 'info',
    });
  return {
    state,
    message: holds ? messageOf(ds, s, target, exact) : s.message,
    badges,
    progress: { ...progress, percent: percent(updated, target), text: progressText(progress) },
  };
}

function percent(done: number, total: number): number {
  if (total <= 0) return done > 0 ? 0 : 100;
  return Math.min(100, Math.floor((100 * done) / total));
}
