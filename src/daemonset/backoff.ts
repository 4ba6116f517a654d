// Failed-pod backoff, as client-go flowcontrol.Backoff used by the DaemonSet controller (1 s initial, doubling,
// 15 min cap, entries forgotten after 2 x max without an update). Pure: the state is passed in and a new state is
// returned; the shell keeps it between syncs (per DaemonSet) and may call gcBackoff every minute.

export const FAILED_POD_BACKOFF_INITIAL_MS = 1_000;
export const FAILED_POD_BACKOFF_MAX_MS = 15 * 60_000;

export interface BackoffEntry {
  /** Current delay. */
  backoffMs: number;
  /** When the delay was last advanced (ms since the epoch). */
  lastUpdateMs: number;
}

/** Keyed `<dsUID>/<status.observedGeneration>/<nodeName>` (failedPodsBackoffKey). */
export type BackoffState = Readonly<Record<string, BackoffEntry>>;

export function failedPodsBackoffKey(dsUID: string, observedGeneration: number, nodeName: string): string {
  return `${dsUID}/${observedGeneration}/${nodeName}`;
}

function hasExpired(now: number, lastUpdateMs: number, maxMs: number): boolean {
  return now - lastUpdateMs > 2 * maxMs;
}

/** IsInBackOffSinceUpdate: true while less than the current delay has passed since the last update. */
export function isInBackOffSinceUpdate(
  state: BackoffState,
  key: string,
  now: number,
  maxMs = FAILED_POD_BACKOFF_MAX_MS,
): boolean {
  const e = state[key];
  if (!e || hasExpired(now, e.lastUpdateMs, maxMs)) return false;
  return now - e.lastUpdateMs < e.backoffMs;
}

/** Remaining delay of a key in backoff (0 when not in backoff). */
export function backoffRemainingMs(state: BackoffState, key: string, now: number): number {
  const e = state[key];
  if (!e || !isInBackOffSinceUpdate(state, key, now)) return 0;
  return e.lastUpdateMs + e.backoffMs - now;
}

/** Next: start at the initial delay (new or expired entry), else double up to the cap; lastUpdate = now. */
export function backoffNext(
  state: BackoffState,
  key: string,
  now: number,
  initialMs = FAILED_POD_BACKOFF_INITIAL_MS,
  maxMs = FAILED_POD_BACKOFF_MAX_MS,
): BackoffState {
  const e = state[key];
  const backoffMs = !e || hasExpired(now, e.lastUpdateMs, maxMs) ? initialMs : Math.min(e.backoffMs * 2, maxMs);
  return { ...state, [key]: { backoffMs, lastUpdateMs: now } };
}

/** GC: drops entries not updated for more than 2 x max. */
export function gcBackoff(state: BackoffState, now: number, maxMs = FAILED_POD_BACKOFF_MAX_MS): BackoffState {
  const out: Record<string, BackoffEntry> = {};
  for (const [k, e] of Object.entries(state)) if (!hasExpired(now, e.lastUpdateMs, maxMs)) out[k] = e;
  return out;
}
