// The health of one canary pod, as ExtendedDaemonSet reads its canary pods
// (https://github.com/DataDog/extendeddaemonset/blob/main/pkg/controller/utils/pod/pod.go): restarts on the canary
// revision, a container that cannot start, readiness and availability.
import type { Pod } from '../../k8s/types.ts';
import { getPodCondition, getPodReadyCondition, hasReadinessGate, isPodAvailable, parseTime } from '../../k8s/pod.ts';
import { IN_PLACE_UPDATE_READY } from '../constants.ts';
import { getInPlaceUpdateState } from '../inplace.ts';
import { podRevisionHash } from '../pods.ts';

// ---- health of one canary pod ----

/**
 * Waiting reasons that mean a container cannot start, as EDS's cannotStartReasons
 * (https://github.com/DataDog/extendeddaemonset/blob/main/pkg/controller/utils/pod/pod.go).
 */
export const CANNOT_START_REASONS: ReadonlySet<string> = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'ImageInspectError',
  'ErrImageNeverPull',
  'RegistryUnavailable',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'PreStartHookError',
  'PostStartHookError',
  'PreCreateHookError',
]);

interface ContainerStatusView {
  name: string;
  restartCount?: number;
  state?: { waiting?: { reason?: string; message?: string } };
  lastState?: { terminated?: { reason?: string; exitCode?: number; finishedAt?: string } };
}

/** Containers, init containers and ephemeral containers (EDS's containerStatusList). */
function containerStatuses(pod: Pod): ContainerStatusView[] {
  const s = pod.status as
    | { containerStatuses?: unknown[]; initContainerStatuses?: unknown[]; ephemeralContainerStatuses?: unknown[] }
    | undefined;
  return [
    ...(s?.containerStatuses ?? []),
    ...(s?.initContainerStatuses ?? []),
    ...(s?.ephemeralContainerStatuses ?? []),
  ] as ContainerStatusView[];
}

/** Highest container restartCount of the pod (all its restarts, whichever revision). */
export function highestRestartCount(pod: Pod): number {
  let n = 0;
  for (const cs of containerStatuses(pod)) n = Math.max(n, cs.restartCount ?? 0);
  return n;
}

export interface CanaryPodHealth {
  /** namespace/name. */
  pod: string;
  node: string;
  /** Highest restart count of a container on this revision (EDS's HighestRestartCount). */
  restarts: number;
  /** The container with the most restarts. */
  restartContainer?: string;
  /**
   * The reason of the restarts: OOMKilled when its last termination says so, else CrashLoopBackOff (a container
   * that keeps restarting, whichever state the kubelet reports between two restarts: the reason must not depend on
   * the instant a sync reads it).
   */
  restartReason?: string;
  /** Its last termination: exit code and reason (Error, OOMKilled, ...), if known. */
  exitCode?: number;
  terminationReason?: string;
  /** The most recent restart on this revision (EDS's MostRecentRestart), ms. */
  lastRestart?: number;
  /** A container waiting for a reason that means it cannot start (CANNOT_START_REASONS). */
  cannotStart?: { container: string; reason: string; message?: string };
  ready: boolean;
  /** Available as the rolling update counts it (Ready for minReadySeconds, no in-place update in flight). */
  available: boolean;
  /** Since when it is available (ms), when it is. */
  availableSince?: number;
  /** When the pod started on this revision: created, or updated in place (ms). */
  startedAt: number;
}

/**
 * The health of a canary pod, as EDS reads its canary pods. Restarts count only on the canary revision: a pod
 * updated in place carries its history and the restart of the update itself, which its inplace-update-state
 * (restartCounts, inplace.ts) lets us subtract.
 */
export function judgeCanaryPod(pod: Pod, minReadySeconds: number, now: number): CanaryPodHealth {
  const state = getInPlaceUpdateState(pod);
  const inPlace = state && state !== 'invalid' && state.revision === podRevisionHash(pod) ? state : undefined;
  const startedAt = parseTime(inPlace?.updateTimestamp) ?? parseTime(pod.metadata.creationTimestamp) ?? now;
  const out: CanaryPodHealth = {
    pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
    node: pod.spec.nodeName ?? '',
    restarts: 0,
    ready: false,
    available: false,
    startedAt,
  };
  for (const cs of containerStatuses(pod)) {
    let n = cs.restartCount ?? 0;
    if (inPlace) {
      n -= inPlace.restartCounts?.[cs.name] ?? 0;
      // The kubelet restarts an updated container into its new image: that restart is the update, not a crash.
      if (inPlace.lastContainerStatuses?.[cs.name] && n > 0) n--;
      n = Math.max(0, n);
    }
    const waiting = cs.state?.waiting;
    const terminated = cs.lastState?.terminated;
    if (n > 0) {
      const finished = parseTime(terminated?.finishedAt);
      if (finished !== undefined && (!inPlace || finished >= startedAt)) {
        out.lastRestart = Math.max(out.lastRestart ?? 0, finished);
      }
    }
    if (n > out.restarts) {
      out.restarts = n;
      out.restartContainer = cs.name;
      out.restartReason = terminated?.reason === 'OOMKilled' ? 'OOMKilled' : 'CrashLoopBackOff';
      if (terminated?.exitCode !== undefined) out.exitCode = terminated.exitCode;
      else delete out.exitCode;
      if (terminated?.reason) out.terminationReason = terminated.reason;
      else delete out.terminationReason;
    }
    if (!out.cannotStart && waiting?.reason && CANNOT_START_REASONS.has(waiting.reason)) {
      out.cannotStart = {
        container: cs.name,
        reason: waiting.reason,
        ...(waiting.message ? { message: waiting.message } : {}),
      };
    }
  }
  const ready = getPodReadyCondition(pod);
  out.ready = ready?.status === 'True';
  let inPlaceDone = true;
  let inPlaceSince: number | undefined;
  if (hasReadinessGate(pod, IN_PLACE_UPDATE_READY)) {
    const c = getPodCondition(pod, IN_PLACE_UPDATE_READY);
    if (c && c.status !== 'True') inPlaceDone = false;
    inPlaceSince = parseTime(c?.lastTransitionTime);
  }
  out.available = isPodAvailable(pod, minReadySeconds, now) && inPlaceDone;
  if (out.available) {
    const readySince = (parseTime(ready?.lastTransitionTime) ?? startedAt) + minReadySeconds * 1000;
    out.availableSince = Math.max(readySince, inPlaceSince ?? 0, startedAt);
  }
  return out;
}
