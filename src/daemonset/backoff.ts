// Failed-pod backoff, as client-go flowcontrol.Backoff used by the DaemonSet controller (1 s initial, doubling,
// 15 min cap, entries forgotten after 2 x max without an update). Pure: the state is passed in and a new state is
// returned; the shell keeps it between syncs (per DaemonSet), and every sync drops the entries no later sync can
// read (gcFailedPodsBackoff).

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

/**
 * The failed-pod backoff of one DaemonSet without the entries no sync will read again:
 * - expired ones, not updated for more than 2 x max: upstream's flowcontrol.Backoff.GC, which the DaemonSet
 *   controller runs every minute (BackoffGCInterval in
 *   https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/daemon_controller.go);
 * - those of another DaemonSet UID or of an earlier status.observedGeneration: failedPodsBackoffKey embeds both,
 *   and observedGeneration never goes back, so each rollout would otherwise leave one entry per failing node
 *   (upstream leaves them to the same 2 x max GC);
 * - those of nodes that no longer exist.
 * An entry outlives the failed pod that made it on purpose: a pod that keeps failing is deleted and recreated
 * between failures, and only the entry kept meanwhile doubles its next delay (1 s, 2 s, 4 s ... 15 min).
 * Returns `state` itself when nothing is dropped.
 */
export function gcFailedPodsBackoff(
  state: BackoffState,
  dsUID: string,
  observedGeneration: number,
  nodeExists: (nodeName: string) => boolean,
  now: number,
  maxMs = FAILED_POD_BACKOFF_MAX_MS,
): BackoffState {
  const prefix = failedPodsBackoffKey(dsUID, observedGeneration, '');
  const keep = (k: string, e: BackoffEntry) =>
    k.startsWith(prefix) && nodeExists(k.slice(prefix.length)) && !hasExpired(now, e.lastUpdateMs, maxMs);
  const entries = Object.entries(state);
  if (entries.every(([k, e]) => keep(k, e))) return state;
  const out: Record<string, BackoffEntry> = {};
  for (const [k, e] of entries) if (keep(k, e)) out[k] = e;
  return out;
}

// Backoff of a pod's failed in-place update (per pod and revision): 1 s, doubling, at most 5 min. A pod whose update
// to a revision was just refused (e.g. by an admission controller) waits it out: retried at once, every attempt would
// flip it NotReady and back, and the pod events of those writes would requeue the DaemonSet at once. The shell keeps
// one InPlaceFailure per pod between syncs.
export const IN_PLACE_RETRY_BASE_MS = 1_000;
export const IN_PLACE_RETRY_MAX_MS = 5 * 60_000;

export interface InPlaceFailure {
  /** The revision hash the update failed to reach. */
  toHash: string;
  /** Failures in a row towards toHash. */
  failures: number;
  /** Not retried before this (ms since the epoch). */
  retryAt: number;
}

/** How long the in-place update of a pod to `toHash` still waits after its last failure `failure` (0: go now). */
export function inPlaceRetryWaitMs(failure: InPlaceFailure | undefined, toHash: string, now: number): number {
  return failure?.toHash === toHash ? Math.max(0, failure.retryAt - now) : 0;
}

/** The record after one more failed in-place update to `toHash`; a failure towards another revision starts over. */
export function nextInPlaceFailure(prev: InPlaceFailure | undefined, toHash: string, now: number): InPlaceFailure {
  const failures = (prev?.toHash === toHash ? prev.failures : 0) + 1;
  const retryInMs = Math.min(IN_PLACE_RETRY_BASE_MS * 2 ** (failures - 1), IN_PLACE_RETRY_MAX_MS);
  return { toHash, failures, retryAt: now + retryInMs };
}

/** A record no sync will read again (its pod long gone or updated): kept at most the longest delay past retryAt. */
export function inPlaceFailureExpired(failure: InPlaceFailure, now: number): boolean {
  return failure.retryAt + IN_PLACE_RETRY_MAX_MS < now;
}
