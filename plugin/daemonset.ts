// What the plugin reads off an Advanced DaemonSet, pure: the update revision, a one-cell summary of the update
// strategy, the canary phase, the rows of `get`, label selectors as strings, and the partition arithmetic of
// `partition N|N%|--step K`.
import type { DaemonSet } from '../src/api/types.ts';
import type { LabelSelector, ObjectMeta } from '../src/k8s/types.ts';
import { getScaledValueFromIntOrPercent, isPercent } from '../src/k8s/intstr.ts';
import {
  CANARY_FAILED_ANNOTATION,
  CANARY_PAUSED_ANNOTATION,
  CANARY_RESUMED_ANNOTATION,
  CANARY_VALIDATED_ANNOTATION,
  ROLLOUT_FROZEN_ANNOTATION,
} from '../src/api/constants.ts';
import { parseWaveMessage } from '../src/daemonset/waves.ts';
import { PluginError } from './errors.ts';
import { age } from './printers.ts';

/**
 * The revision new pods get: status.daemonSetHash in v1alpha1 (apps.kruise.io/v1beta1 calls it updateRevision), the
 * controller-revision-hash label of the current ControllerRevision.
 */
export function updateRevision(ds: DaemonSet): string {
  const s = (ds.status ?? {}) as { updateRevision?: string; daemonSetHash?: string };
  return s.updateRevision || s.daemonSetHash || '';
}

/** metav1.FormatLabelSelector: "app=x,tier in (a,b),!gone", "<none>" for none or empty. */
export function formatLabelSelector(selector: LabelSelector | null | undefined): string {
  const s = labelSelectorQuery(selector);
  return s === '' ? '<none>' : s;
}

/** The same as a ?labelSelector= query ('' selects everything). */
export function labelSelectorQuery(selector: LabelSelector | null | undefined): string {
  if (!selector) return '';
  const parts: string[] = [];
  for (const k of Object.keys(selector.matchLabels ?? {}).sort()) parts.push(`${k}=${selector.matchLabels?.[k]}`);
  for (const r of selector.matchExpressions ?? []) {
    const values = [...(r.values ?? [])].sort().join(',');
    if (r.operator === 'In') parts.push(`${r.key} in (${values})`);
    else if (r.operator === 'NotIn') parts.push(`${r.key} notin (${values})`);
    else if (r.operator === 'Exists') parts.push(r.key);
    else if (r.operator === 'DoesNotExist') parts.push(`!${r.key}`);
  }
  return parts.join(',');
}

/** The spec.updateStrategy.rollingUpdate.canary block, once the canary API exists (unknown shape: read loosely). */
export function canarySpec(ds: DaemonSet): Record<string, unknown> | undefined {
  const c = (ds.spec.updateStrategy?.rollingUpdate as { canary?: unknown } | undefined)?.canary;
  return c !== null && typeof c === 'object' ? (c as Record<string, unknown>) : undefined;
}

/** status.canary as the controller reports it (src/daemonset/canary/settings.ts CanaryStatus; read loosely). */
export interface CanaryStatus {
  revision?: string;
  stableRevision?: string;
  nodes?: string[];
  phase?: string;
  reason?: string;
  message?: string;
}

export function canaryStatus(ds: DaemonSet): CanaryStatus | undefined {
  const c = (ds.status as { canary?: unknown } | undefined)?.canary;
  return c !== null && typeof c === 'object' ? (c as CanaryStatus) : undefined;
}

/** status.canary when it is about the update revision (a canary of an earlier template is over). */
export function currentCanary(ds: DaemonSet): CanaryStatus | undefined {
  const c = canaryStatus(ds);
  const rev = updateRevision(ds);
  return c && (!c.revision || !rev || c.revision === rev) ? c : undefined;
}

/** The CANARY cell: "-" without a canary, else its phase ("Pending" until the controller reports one). */
export function canaryPhase(ds: DaemonSet): string {
  if (!canarySpec(ds)) return '-';
  return currentCanary(ds)?.phase || 'Pending';
}

export type CanaryAction = 'promote' | 'pause' | 'resume' | 'fail';
export const CANARY_ACTIONS: readonly { word: CanaryAction; help: string }[] = [
  { word: 'promote', help: 'Validate the canary now: the rolling update takes over' },
  { word: 'pause', help: 'Hold the canary where it is' },
  { word: 'resume', help: 'Resume a paused canary (also one autoPause paused)' },
  { word: 'fail', help: 'Fail the canary: its nodes go back to the stable revision' },
];

export interface CanaryChange {
  /** Set when nothing is to be written. */
  noop?: string;
  /** metadata.annotations merge patch values (null removes one). */
  annotations?: Record<string, string | null>;
  message: string;
}

/**
 * `canary promote|pause|resume|fail`: the annotation the controller reads (src/daemonset/canary/phase.ts,
 * nextCanaryPhase). Promote, resume and fail name the canary's revision (canary-validated, canary-resumed,
 * canary-failed), so the annotation left behind touches no later canary; pause sets canary-paused=true, and resume
 * removes it (a resume wins over autoPause until that canary ends). A DaemonSet without rollingUpdate.canary is an
 * error.
 */
export function canaryChange(ds: DaemonSet, action: CanaryAction): CanaryChange {
  if (!canarySpec(ds))
    throw new PluginError(`${key(ds.metadata)} has no canary: spec.updateStrategy.rollingUpdate.canary is not set`);
  const a = ds.metadata.annotations ?? {};
  const c = currentCanary(ds);
  const rev = c?.revision || updateRevision(ds);
  const phase = c?.phase;
  const needRevision = () => {
    if (!rev) throw new PluginError(`${key(ds.metadata)}: no update revision yet (status.daemonSetHash is empty)`);
    return rev;
  };
  // A Failed canary is final for its revision (the controller holds the rollout on the stable revision until the
  // template changes): promoting, pausing or resuming it would only leave an annotation nothing reads.
  if (phase === 'Failed' && action !== 'fail')
    throw new PluginError(
      `the canary of revision ${rev} failed${c?.message ? ` (${c.message})` : ''}: it cannot be ${action === 'promote' ? 'promoted' : action === 'pause' ? 'paused' : 'resumed'}. Change the template to start a new canary, or roll back with "kubectl ads undo ${ds.metadata.name ?? ''}"`,
    );
  switch (action) {
    case 'promote': {
      needRevision();
      if (phase === 'Promoted' || a[CANARY_VALIDATED_ANNOTATION] === rev)
        return {
          noop: `canary already promoted (revision ${rev})`,
          message: `canary already promoted (revision ${rev})`,
        };
      return { annotations: { [CANARY_VALIDATED_ANNOTATION]: rev }, message: `canary promoted (revision ${rev})` };
    }
    case 'pause':
      if (phase === 'Promoted')
        throw new PluginError(
          `the canary of revision ${rev} is already promoted: nothing to pause (to hold the rolling update: kubectl ads pause ${ds.metadata.name ?? ''})`,
        );
      if (a[CANARY_PAUSED_ANNOTATION] === 'true')
        return { noop: 'canary already paused', message: 'canary already paused' };
      return { annotations: { [CANARY_PAUSED_ANNOTATION]: 'true' }, message: 'canary paused' };
    case 'resume': {
      const paused = a[CANARY_PAUSED_ANNOTATION] === 'true';
      if (!paused && (phase !== 'Paused' || a[CANARY_RESUMED_ANNOTATION] === rev))
        return { noop: 'canary already resumed', message: 'canary already resumed' };
      // Any canary-paused goes, a leftover "false" included (it does nothing but mislead). Before the controller
      // reports a revision no autoPause can have paused the canary: removing the pause is enough.
      return {
        annotations: {
          ...(rev ? { [CANARY_RESUMED_ANNOTATION]: rev } : {}),
          ...(a[CANARY_PAUSED_ANNOTATION] !== undefined ? { [CANARY_PAUSED_ANNOTATION]: null } : {}),
        },
        message: rev ? `canary resumed (revision ${rev})` : 'canary resumed',
      };
    }
    case 'fail':
      if (phase === 'Failed' || a[CANARY_FAILED_ANNOTATION] === 'true' || (rev && a[CANARY_FAILED_ANNOTATION] === rev))
        return { noop: 'canary already failed', message: 'canary already failed' };
      return {
        annotations: { [CANARY_FAILED_ANNOTATION]: needRevision() },
        message: `canary failed (revision ${rev})`,
      };
  }
}

/**
 * The current wave of rollingUpdate.waves, as the controller's Progressing message names it
 * (src/daemonset/waves.ts waveMessage); undefined when none is under way (or before the spec is observed).
 */
export function currentWave(ds: DaemonSet): ReturnType<typeof parseWaveMessage> {
  if (!ds.spec.updateStrategy?.rollingUpdate?.waves) return undefined;
  if ((ds.metadata.generation ?? 0) > (ds.status?.observedGeneration ?? 0)) return undefined;
  return parseWaveMessage(ds.status?.conditions?.find((c) => c.type === 'Progressing')?.message);
}

const isZeroPartition = (p: unknown) => p === undefined || p === null || p === 0 || p === '0%' || p === '0';

/**
 * The STRATEGY cell: "OnDelete", or the rolling update type (Standard, Surge when maxSurge is set,
 * InPlaceIfPossible) followed by what holds the rollout: "partition=N", "selector=<labels>", "paused", and
 * "waves=<topologyKey>" with the current wave ("2/3") while the controller's Progressing message names one.
 */
export function strategySummary(ds: DaemonSet): string {
  const strategy = ds.spec.updateStrategy;
  if (strategy?.type === 'OnDelete') return 'OnDelete';
  const ru = strategy?.rollingUpdate ?? {};
  const type = ru.rollingUpdateType ?? 'Standard';
  const surge = ru.maxSurge !== undefined && ru.maxSurge !== 0 && ru.maxSurge !== '0%';
  const parts = [type === 'Standard' && surge ? `Surge(${ru.maxSurge})` : type];
  if (!isZeroPartition(ru.partition)) parts.push(`partition=${ru.partition}`);
  if (ru.selector) parts.push(`selector=${formatLabelSelector(ru.selector as LabelSelector)}`);
  if (ru.paused === true) parts.push('paused');
  if (ru.waves?.topologyKey) {
    const w = currentWave(ds);
    parts.push(`waves=${ru.waves.topologyKey}${w ? `(${w.index}/${w.count})` : ''}`);
  }
  return parts.join(' ');
}

export const GET_HEADERS = [
  'NAME',
  'DESIRED',
  'UPDATED',
  'READY',
  'AVAILABLE',
  'REVISION',
  'STRATEGY',
  'CANARY',
  'AGE',
] as const;
export const GET_WIDE_HEADERS = [...GET_HEADERS, 'CURRENT', 'CONTAINERS', 'IMAGES', 'SELECTOR'] as const;

/** One row of `get` (NAMESPACE first with -A, the wide columns with -o wide). */
export function getRow(ds: DaemonSet, now: number, opts: { wide?: boolean; allNamespaces?: boolean } = {}): string[] {
  const s = ds.status;
  const n = (v: number | undefined) => String(v ?? 0);
  const row = [
    ds.metadata.name ?? '',
    n(s?.desiredNumberScheduled),
    n(s?.updatedNumberScheduled),
    n(s?.numberReady),
    n(s?.numberAvailable),
    updateRevision(ds) || '<none>',
    strategySummary(ds),
    canaryPhase(ds),
    age(ds.metadata.creationTimestamp, now),
  ];
  if (opts.wide) {
    const containers = ds.spec.template.spec?.containers ?? [];
    row.push(
      n(s?.currentNumberScheduled),
      containers.map((c) => c.name).join(',') || '<none>',
      containers.map((c) => c.image ?? '').join(',') || '<none>',
      formatLabelSelector(ds.spec.selector as LabelSelector),
    );
  }
  return opts.allNamespaces ? [ds.metadata.namespace ?? '', ...row] : row;
}

export function getHeaders(opts: { wide?: boolean; allNamespaces?: boolean } = {}): string[] {
  const h: string[] = [...(opts.wide ? GET_WIDE_HEADERS : GET_HEADERS)];
  return opts.allNamespaces ? ['NAMESPACE', ...h] : h;
}

// ------------------------------------------------------------------------------------------------
// Partition

export type PartitionValue = number | string;

/** `N` (a node count) or `N%` (of status.desiredNumberScheduled, 0-100). */
export function parsePartition(raw: string): PartitionValue {
  if (/^\d+$/.test(raw)) return Number(raw);
  const m = /^(\d+)%$/.exec(raw);
  if (m && Number(m[1]) <= 100) return `${Number(m[1])}%`;
  throw new PluginError(`invalid partition "${raw}": want a non-negative integer (nodes) or a percentage 0%-100%`);
}

/** The partition as the object has it (absent = 0). */
export function currentPartition(ds: DaemonSet): PartitionValue {
  const p = ds.spec.updateStrategy?.rollingUpdate?.partition;
  return p === undefined || p === null ? 0 : p;
}

/**
 * The node count a partition keeps old: a percentage of `desired` rounded down (as the controller resolves it,
 * src/daemonset/strategy.ts partitionCount).
 */
export function resolvePartition(p: PartitionValue, desired: number): number {
  return Math.max(0, getScaledValueFromIntOrPercent(p, desired, false));
}

export interface PartitionChange {
  /** Set when nothing is to be written: the message ("partition already 3"). */
  noop?: string;
  /** The new spec value. */
  value: PartitionValue;
  /** The line printed after the write. */
  message: string;
}

const show = (p: PartitionValue) => String(p);

/** `partition NAME N|N%`: the new value, or a no-op when the object already has exactly it. */
export function setPartition(ds: DaemonSet, value: PartitionValue): PartitionChange {
  const cur = currentPartition(ds);
  if (cur === value)
    return { noop: `partition already ${show(value)}`, value, message: `partition already ${show(value)}` };
  return { value, message: `partition set to ${show(value)} (was ${show(cur)})` };
}

/**
 * `partition NAME --step K`: lowers the partition by K nodes, never below 0. It steps from the partition in effect:
 * a percentage is first resolved against status.desiredNumberScheduled (rounded down, as the controller does) and
 * the result is written as a node count; a partition above desiredNumberScheduled steps from desiredNumberScheduled
 * (a partition of 10 on 4 nodes keeps all 4 old; one step must release one node, not go to 9). Without a status
 * (desiredNumberScheduled unknown) a percentage cannot be stepped.
 */
export function stepPartition(ds: DaemonSet, step: number): PartitionChange {
  if (!Number.isInteger(step) || step < 1) throw new PluginError(`--step must be a positive integer, got ${step}`);
  const cur = currentPartition(ds);
  const desired = ds.status?.desiredNumberScheduled;
  const known = ds.status !== undefined && desired !== undefined;
  if (isPercent(cur) && !known)
    throw new PluginError(
      `partition is ${cur} and status.desiredNumberScheduled is not known yet: cannot resolve the percentage; set a number with "partition NAME N"`,
    );
  const resolved = resolvePartition(cur, desired ?? 0);
  const effective = known ? Math.min(resolved, desired as number) : resolved;
  const next = Math.max(0, effective - step);
  const was = isPercent(cur) ? `${cur} = ${resolved} of ${desired} nodes` : String(cur);
  if (effective === 0) {
    const noop = `partition already ${isPercent(cur) ? `${cur} (0 of ${desired} nodes)` : '0'}`;
    return { noop, value: cur, message: noop };
  }
  return { value: next, message: `partition set to ${next} (was ${was})` };
}

/** The merge patch that sets the partition. */
export function partitionPatch(value: PartitionValue): unknown {
  return { spec: { updateStrategy: { rollingUpdate: { partition: value } } } };
}

/** The merge patch of pause/resume (rollingUpdate.paused), or undefined when it already has that value. */
export function pausePatch(ds: DaemonSet, paused: boolean): unknown {
  const cur = ds.spec.updateStrategy?.rollingUpdate?.paused === true;
  return cur === paused ? undefined : { spec: { updateStrategy: { rollingUpdate: { paused } } } };
}

/**
 * The merge patch of freeze/unfreeze (annotation ROLLOUT_FROZEN_ANNOTATION), or undefined when it is already so.
 * Unfreezing removes the annotation (null in a merge patch).
 */
export function freezePatch(ds: DaemonSet, frozen: boolean): unknown {
  const cur = ds.metadata.annotations?.[ROLLOUT_FROZEN_ANNOTATION] === 'true';
  return cur === frozen
    ? undefined
    : { metadata: { annotations: { [ROLLOUT_FROZEN_ANNOTATION]: frozen ? 'true' : null } } };
}

/** The annotation `kubectl rollout restart` sets on the pod template. */
export const RESTARTED_AT_ANNOTATION = 'kubectl.kubernetes.io/restartedAt';

/** time.Now().Format(time.RFC3339) in the local zone, as kubectl writes restartedAt ("2024-05-01T10:00:00+02:00"). */
export function rfc3339Local(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const off = -date.getTimezoneOffset();
  const zone =
    off === 0 ? 'Z' : `${off > 0 ? '+' : '-'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}${zone}`
  );
}

/** The merge patch of `restart`. */
export function restartPatch(at: Date): unknown {
  return { spec: { template: { metadata: { annotations: { [RESTARTED_AT_ANNOTATION]: rfc3339Local(at) } } } } };
}

/** namespace/name, for messages. */
export const key = (m: ObjectMeta) => `${m.namespace ?? ''}/${m.name ?? ''}`;
