// Pod readiness and availability, as k8s.io/kubernetes/pkg/api/v1/pod (podutil). Times are ms since the epoch;
// Kubernetes timestamps are RFC 3339 strings with second precision.
import type { Pod, PodCondition } from './types.ts';

/** Parses an RFC 3339 timestamp; undefined for absent or unparsable values (Go's zero time). */
export function parseTime(t: string | null | undefined): number | undefined {
  if (!t) return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

/** RFC 3339 with second precision, as metav1.Time marshals. */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function getPodCondition(pod: Pod, type: string): PodCondition | undefined {
  return pod.status?.conditions?.find((c) => c.type === type);
}

export function getPodReadyCondition(pod: Pod): PodCondition | undefined {
  return getPodCondition(pod, 'Ready');
}

/** podutil.IsPodReady: condition Ready is True. */
export function isPodReady(pod: Pod): boolean {
  return getPodReadyCondition(pod)?.status === 'True';
}

/**
 * podutil.IsPodAvailable: Ready, and either minReadySeconds is 0 or the Ready condition's lastTransitionTime
 * plus minReadySeconds is strictly before now.
 */
export function isPodAvailable(pod: Pod, minReadySeconds: number, now: number): boolean {
  const c = getPodReadyCondition(pod);
  if (c?.status !== 'True') return false;
  if (minReadySeconds <= 0) return true;
  const since = parseTime(c.lastTransitionTime);
  return since !== undefined && since + minReadySeconds * 1000 < now;
}

/**
 * Milliseconds until a Ready pod becomes available (kruise podAvailableWaitingTime), at least 1 ms so that a requeue
 * lands strictly after the boundary; 0 when it is already available or not Ready (nothing to wait for).
 */
export function podAvailableWaitingTimeMs(pod: Pod, minReadySeconds: number, now: number): number {
  const c = getPodReadyCondition(pod);
  if (c?.status !== 'True' || minReadySeconds <= 0) return 0;
  const since = parseTime(c.lastTransitionTime);
  if (since === undefined) return minReadySeconds * 1000;
  const remaining = since + minReadySeconds * 1000 - now;
  return remaining >= 0 ? remaining + 1 : 0;
}

export function hasReadinessGate(pod: Pod, conditionType: string): boolean {
  return (pod.spec.readinessGates ?? []).some((g) => g.conditionType === conditionType);
}

/**
 * podByCreationTimestampAndPhase: scheduled pods (spec.nodeName set) first, then older creationTimestamp, then name.
 */
export function compareByCreationTimestampAndPhase(a: Pod, b: Pod): number {
  const as = !!a.spec.nodeName;
  const bs = !!b.spec.nodeName;
  if (as !== bs) return as ? -1 : 1;
  const at = parseTime(a.metadata.creationTimestamp) ?? Number.NEGATIVE_INFINITY;
  const bt = parseTime(b.metadata.creationTimestamp) ?? Number.NEGATIVE_INFINITY;
  if (at !== bt) return at < bt ? -1 : 1;
  const an = a.metadata.name ?? '';
  const bn = b.metadata.name ?? '';
  return an < bn ? -1 : an > bn ? 1 : 0;
}
