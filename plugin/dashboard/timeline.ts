// The rollout's timeline, rate, elapsed time and ETA, from the DaemonSet as the dashboard sees it change: each
// watch event of the object goes through observeRollout, a pure reducer, which records the Progressing condition's
// transitions (status or reason, with the message), canary phase changes, update revision changes, spec changes the
// actions make (partition, paused) and the updated count over time.
//
// Not from events: the apiserver's event spam filter lets 25 events per object through and then one per 5 minutes
// (client-go tools/record EventSourceObjectSpamFilter, defaultSpamBurst = 25, defaultSpamQPS = 1/300,
// https://github.com/kubernetes/client-go/blob/master/tools/record/events_cache.go), so a rollout of 500 nodes goes
// quiet in the events after its first few dozen steps; the status keeps moving.
import type { DaemonSet } from '../../src/api/types.ts';
import { isDaemonSetPaused, isRollingUpdate } from '../../src/daemonset/strategy.ts';
import { canarySpec, currentCanary, currentPartition, updateRevision } from '../daemonset.ts';
import type { RolloutPace, RolloutProgress, RolloutState, TimelineEntry } from './views.ts';

/** What one observation keeps of the object, to compare with the next. */
export interface RolloutSnapshot {
  hash: string;
  progressing: string;
  progressingReason: string;
  canaryPhase: string;
  updated: number;
  partition: string;
  paused: boolean;
}

export interface UpdatedSample {
  at: number;
  updated: number;
}

/** What the dashboard remembers of one DaemonSet (its uid) between watch events. */
export interface RolloutHistory {
  uid: string;
  /** When the dashboard first saw this object. */
  firstSeen: number;
  /** When the dashboard saw the update revision change (the rollout start it knows exactly). */
  revisionSeenAt?: number;
  last: RolloutSnapshot;
  entries: TimelineEntry[];
  /** status.updatedNumberScheduled over time, since the update revision was first seen; for the rate. */
  samples: UpdatedSample[];
}

/** Entries kept (the oldest go first); samples kept (older than the rate window go first). */
export const MAX_ENTRIES = 300;
export const MAX_SAMPLES = 2000;
/** Consecutive updated-count changes within this time make one timeline entry ("updated 130 → 141"). */
export const UPDATED_COALESCE_MS = 30_000;
/** The rate's window: nodes updated over the last 5 minutes. */
export const RATE_WINDOW_MS = 5 * 60_000;
/** Below this much observed time there is no rate (one or two steps say nothing about the pace). */
export const MIN_RATE_SPAN_MS = 15_000;

const time = (t: string | null | undefined) => (t ? Date.parse(t) || 0 : 0);

function snapshotOf(ds: DaemonSet): RolloutSnapshot {
  const p = ds.status?.conditions?.find((c) => c.type === 'Progressing');
  const canary = canarySpec(ds) ? currentCanary(ds) : undefined;
  return {
    hash: updateRevision(ds),
    progressing: p?.status ?? '',
    progressingReason: p?.reason ?? '',
    canaryPhase: canary?.phase ?? '',
    updated: ds.status?.updatedNumberScheduled ?? 0,
    partition: isRollingUpdate(ds) ? String(currentPartition(ds)) : '',
    paused: isDaemonSetPaused(ds),
  };
}

function progressingText(ds: DaemonSet): { text: string; reason: string; at: number } | undefined {
  const p = ds.status?.conditions?.find((c) => c.type === 'Progressing');
  if (!p) return undefined;
  return {
    text: `Progressing=${p.status}${p.reason ? ` (${p.reason})` : ''}${p.message ? `: ${p.message}` : ''}`,
    reason: p.reason ?? '',
    at: time(p.lastTransitionTime),
  };
}

function canaryText(ds: DaemonSet): { text: string; reason: string; at: number } | undefined {
  const c = canarySpec(ds) ? currentCanary(ds) : undefined;
  if (!c?.phase) return undefined;
  return {
    text: `canary ${c.phase}${c.reason ? ` (${c.reason})` : ''}${c.message ? `: ${c.message}` : ''}`,
    reason: c.reason ?? '',
    at: time((c as { since?: string }).since),
  };
}

function push(entries: TimelineEntry[], e: TimelineEntry): TimelineEntry[] {
  const out = [...entries, e];
  return out.length > MAX_ENTRIES ? out.slice(out.length - MAX_ENTRIES) : out;
}

/** The first observation: what the object's own timestamps tell (Progressing's last transition, the canary's). */
function firstObservation(ds: DaemonSet, now: number): RolloutHistory {
  const last = snapshotOf(ds);
  const entries: TimelineEntry[] = [];
  const p = progressingText(ds);
  if (p) entries.push({ at: p.at || now, kind: 'progressing', text: p.text, reason: p.reason, observed: false });
  const c = canaryText(ds);
  if (c) entries.push({ at: c.at || now, kind: 'canary', text: c.text, reason: c.reason, observed: false });
  entries.push({
    at: now,
    kind: 'observed',
    text: `dashboard started watching: update revision ${last.hash || '-'}, ${last.updated} updated`,
    observed: true,
  });
  entries.sort((a, b) => a.at - b.at);
  return {
    uid: ds.metadata.uid ?? '',
    firstSeen: now,
    last,
    entries,
    samples: [{ at: now, updated: last.updated }],
  };
}

/**
 * The history after seeing `ds` at `now`. A new uid (the DaemonSet was deleted and created again) starts over.
 * Only differences are recorded; an observation without any leaves `prev` as it is (the same object).
 */
export function observeRollout(prev: RolloutHistory | undefined, ds: DaemonSet, now: number): RolloutHistory {
  if (!prev || prev.uid !== (ds.metadata.uid ?? '')) return firstObservation(ds, now);
  const next = snapshotOf(ds);
  const was = prev.last;
  let entries = prev.entries;
  let samples = prev.samples;
  let revisionSeenAt = prev.revisionSeenAt;
  if (next.hash !== was.hash) {
    entries = push(entries, {
      at: now,
      kind: 'revision',
      text: `update revision ${was.hash || '-'} → ${next.hash || '-'}`,
      observed: true,
    });
    revisionSeenAt = now;
    samples = [];
  }
  if (next.partition !== was.partition)
    entries = push(entries, {
      at: now,
      kind: 'spec',
      text: `partition ${was.partition} → ${next.partition}`,
      observed: true,
    });
  if (next.paused !== was.paused)
    entries = push(entries, {
      at: now,
      kind: 'spec',
      text: next.paused ? 'rollingUpdate.paused set: rollout paused' : 'rollingUpdate.paused cleared: rollout resumed',
      observed: true,
    });
  if (next.progressing !== was.progressing || next.progressingReason !== was.progressingReason) {
    const p = progressingText(ds);
    if (p) entries = push(entries, { at: now, kind: 'progressing', text: p.text, reason: p.reason, observed: true });
  }
  if (next.canaryPhase !== was.canaryPhase) {
    const c = canaryText(ds);
    entries = push(
      entries,
      c
        ? { at: now, kind: 'canary', text: c.text, reason: c.reason, observed: true }
        : { at: now, kind: 'canary', text: 'canary over (no canary of the update revision)', observed: true },
    );
  }
  if (next.updated !== was.updated || next.hash !== was.hash) {
    const lastEntry = entries.at(-1);
    const from = next.hash !== was.hash ? next.updated : was.updated;
    if (next.hash === was.hash && lastEntry?.kind === 'updated' && now - lastEntry.at <= UPDATED_COALESCE_MS) {
      // One entry for a burst: "updated 130 → 141", its start time kept.
      const start = /^updated (\d+) →/.exec(lastEntry.text)?.[1] ?? String(was.updated);
      entries = [...entries.slice(0, -1), { ...lastEntry, text: `updated ${start} → ${next.updated}` }];
    } else if (next.hash === was.hash) {
      entries = push(entries, { at: now, kind: 'updated', text: `updated ${from} → ${next.updated}`, observed: true });
    }
    samples = [...samples, { at: now, updated: next.updated }];
    if (samples.length > MAX_SAMPLES) samples = samples.slice(samples.length - MAX_SAMPLES);
  }
  const same = (Object.keys(next) as (keyof RolloutSnapshot)[]).every((k) => next[k] === was[k]);
  if (same) return prev;
  const out: RolloutHistory = { ...prev, last: next, entries, samples };
  if (revisionSeenAt !== undefined) out.revisionSeenAt = revisionSeenAt;
  return out;
}

/** The updated count at time `t` (the last sample at or before it), undefined before the first sample. */
function updatedAt(samples: readonly UpdatedSample[], t: number): number | undefined {
  let v: number | undefined;
  for (const s of samples) {
    if (s.at > t) break;
    v = s.updated;
  }
  return v;
}

export interface PaceInput {
  history: RolloutHistory | undefined;
  progress: RolloutProgress;
  state: RolloutState;
  /** The update revision's ControllerRevision creationTimestamp (ms), when known. */
  revisionCreated?: number;
  now: number;
  windowMs?: number;
}

/**
 * Elapsed time, rate and ETA. The start is when the dashboard saw the update revision change, else the update
 * revision's ControllerRevision creation (a rollback reuses an older ControllerRevision: then this is too early; the
 * page says where the start comes from). Not the Progressing condition: as a Deployment's, it stays True from one
 * rollout to the next (src/daemonset/status.ts progressingStatus). The rate is the updated count's
 * change over the last `windowMs` (or since first seen, when shorter), per minute; the ETA divides what is left to
 * the allowed target by it.
 */
export function rolloutPace(input: PaceInput): RolloutPace {
  const { history, progress, state, now } = input;
  const windowMs = input.windowMs ?? RATE_WINDOW_MS;
  const out: RolloutPace = { windowMs };
  if (history?.revisionSeenAt !== undefined) {
    out.startedAt = history.revisionSeenAt;
    out.startedFrom = 'observed';
  } else if (input.revisionCreated) {
    out.startedAt = input.revisionCreated;
    out.startedFrom = 'revision';
  }
  if (out.startedAt !== undefined) out.elapsedMs = Math.max(0, now - out.startedAt);

  const samples = history?.samples ?? [];
  const first = samples[0];
  if (first) {
    const from = Math.max(now - windowMs, first.at);
    const span = now - from;
    const before = updatedAt(samples, from);
    if (span >= MIN_RATE_SPAN_MS && before !== undefined) {
      out.perMinute = (Math.max(0, progress.updated - before) * 60_000) / span;
    }
  }

  const left = progress.target - progress.updated;
  if (state === 'failed') out.etaNote = 'failed: no progress until fixed';
  else if (state === 'complete' || state === 'held' || left <= 0) out.etaMs = 0;
  else if (state === 'paused') out.etaNote = 'paused';
  else if (state === 'frozen') out.etaNote = 'frozen';
  else if (state === 'canary' || state === 'canary-paused') out.etaNote = 'waiting for the canary';
  else if (state === 'pending') out.etaNote = 'spec change not observed yet';
  else if (out.perMinute === undefined) out.etaNote = 'measuring the rate';
  else if (out.perMinute <= 0) out.etaNote = 'no progress in the window';
  else out.etaMs = Math.round((left / out.perMinute) * 60_000);
  return out;
}
