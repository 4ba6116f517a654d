// The phase machine of a running canary (Observing or Paused), in ExtendedDaemonSet's order of precedence
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/canary.go,
// manageCanaryPodFailures).
import type { CanaryPhase, CanaryStatus } from '../../api/types.ts';
import { formatTime, parseTime } from '../../k8s/pod.ts';
import { formatDuration } from '../../api/duration.ts';
import {
  CANARY_FAILED_ANNOTATION,
  CANARY_PAUSED_ANNOTATION,
  CANARY_RESUMED_ANNOTATION,
  CANARY_VALIDATED_ANNOTATION,
} from '../constants.ts';
import { minDelay } from '../context.ts';
import type { CanaryPodHealth } from './health.ts';
import type { CanarySettings } from './settings.ts';

export const CANARY_REASON_STARTED = 'Started';
/** A newer template restarted the canary on the same nodes. */
export const CANARY_REASON_RESTARTED = 'Restarted';
export const CANARY_REASON_RESUMED = 'Resumed';
export const CANARY_REASON_MANUAL_PAUSE = 'ManualPause';
export const CANARY_REASON_MANUAL_FAIL = 'ManualFail';
export const CANARY_REASON_MANUAL_VALIDATION = 'ManualValidation';
/** Auto validation: duration and noRestartsDuration passed. */
export const CANARY_REASON_VALIDATED = 'Validated';
/** EDS's reasons for the time-based checks. */
export const CANARY_REASON_SLOW_START = 'SlowStartTimeoutExceeded';
export const CANARY_REASON_RESTARTS_TIMEOUT = 'RestartsTimeoutExceeded';
export const CANARY_REASON_TIMEOUT = 'TimeoutExceeded';
/** The template went back to the stable revision: nothing to observe, the rolling update takes over. */
export const CANARY_REASON_STABLE_REVISION = 'StableRevision';
/** rollingUpdate.canary was removed during the canary. */
export const CANARY_REASON_REMOVED = 'CanaryRemoved';

export interface CanaryPhaseInput {
  settings: CanarySettings;
  /** The canary of this revision as stored, phase Observing or Paused. */
  prev: CanaryStatus;
  annotations: Readonly<Record<string, string>>;
  /** The canary pods: pods of the canary revision on canary nodes. */
  pods: readonly CanaryPodHealth[];
  /** Canary nodes; every one runs a canary pod when `complete`. */
  nodes: readonly string[];
  complete: boolean;
  now: number;
}

export interface CanaryVerdict {
  phase: CanaryPhase;
  reason: string;
  message: string;
  /** The pod the verdict is about, if one (namespace/name). */
  pod?: string;
  /** Decided by a person (annotation). */
  manual: boolean;
  resumed: boolean;
  /** First restart seen (ms), if any. */
  restartingSince?: number;
  /** When the verdict may change by time alone. */
  requeueAfterMs?: number;
  /** Observing and every canary pod is available: the canary waits for its clock or a person, it is not stuck. */
  waiting: boolean;
}

const restartText = (p: CanaryPodHealth) =>
  `container ${p.restartContainer ?? '?'} restarted ${p.restarts} time${p.restarts === 1 ? '' : 's'} ` +
  `(${p.restartReason ?? 'CrashLoopBackOff'}` +
  (p.exitCode !== undefined ? `, last exit code ${p.exitCode}` : '') +
  (p.terminationReason ? ` ${p.terminationReason}` : '') +
  ')';

const podText = (p: CanaryPodHealth) => `pod ${p.pod} on node ${p.node}`;

/**
 * One step of the phase machine for a running canary (Observing or Paused), in EDS's order of precedence
 * (manageCanaryPodFailures): a person failing it (canary-failed "true", or naming this revision); a person
 * validating it (canary-validated names this revision); autoFail (restarts above autoFail.maxRestarts, restarts going
 * on longer than maxRestartsDuration, older than timeout); a person pausing it (canary-paused "true"); then, unless a
 * person resumed it, autoPause, which holds once it paused: a container that cannot start, restarts above
 * autoPause.maxRestarts, a pod not ready maxStartupDuration after it started; finally Auto validation once every
 * canary node has run an available canary pod for `duration` and no canary container restarted for
 * `noRestartsDuration`. A resume (canary-resumed naming this revision, or canary-paused going away after it paused
 * the canary) wins over autoPause until the canary ends.
 */
export function nextCanaryPhase(input: CanaryPhaseInput): CanaryVerdict {
  const { settings, prev, annotations, pods, nodes, complete, now } = input;
  const revision = prev.revision;
  const pausedAnnotation = annotations[CANARY_PAUSED_ANNOTATION];
  const failedAnnotation = annotations[CANARY_FAILED_ANNOTATION];
  // A resume names this revision (canary-resumed), or is the pause annotation going away (or another value than
  // "true") after it paused this canary, as the stored status shows. The pause annotation's value alone says nothing:
  // left on the object, "false" would turn autoPause off for every later canary; a leftover canary-resumed names an
  // earlier revision and is ignored.
  const resumed =
    prev.resumed === true ||
    annotations[CANARY_RESUMED_ANNOTATION] === revision ||
    (prev.phase === 'Paused' && prev.reason === CANARY_REASON_MANUAL_PAUSE && pausedAnnotation !== 'true');
  let lastRestart: CanaryPodHealth | undefined;
  let firstRestart: number | undefined;
  for (const p of pods) {
    if (p.lastRestart === undefined) continue;
    if (!lastRestart || p.lastRestart > (lastRestart.lastRestart ?? 0)) lastRestart = p;
    firstRestart = Math.min(firstRestart ?? p.lastRestart, p.lastRestart);
  }
  const restartingSince = parseTime(prev.restartingSince) ?? firstRestart;
  const base = {
    manual: false,
    resumed,
    waiting: false,
    ...(restartingSince !== undefined ? { restartingSince } : {}),
  };
  const mostRestarts = pods.reduce<CanaryPodHealth | undefined>(
    (m, p) => (!m || p.restarts > m.restarts ? p : m),
    undefined,
  );
  const { autoFail, autoPause } = settings;

  // "true" fails whichever canary runs (the contract's form; in force until removed); a hash, that revision's only.
  if (failedAnnotation === 'true' || failedAnnotation === revision) {
    return {
      ...base,
      phase: 'Failed',
      reason: CANARY_REASON_MANUAL_FAIL,
      manual: true,
      message: `failed by annotation ${CANARY_FAILED_ANNOTATION}=${failedAnnotation}`,
    };
  }
  if (annotations[CANARY_VALIDATED_ANNOTATION] === revision) {
    return {
      ...base,
      phase: 'Promoted',
      reason: CANARY_REASON_MANUAL_VALIDATION,
      manual: true,
      message: `validated by annotation ${CANARY_VALIDATED_ANNOTATION}=${revision}`,
    };
  }
  let requeue: number | undefined;
  if (autoFail.enabled) {
    if (mostRestarts && mostRestarts.restarts > autoFail.maxRestarts) {
      return {
        ...base,
        phase: 'Failed',
        reason: mostRestarts.restartReason ?? 'CrashLoopBackOff',
        pod: mostRestarts.pod,
        message: `${podText(mostRestarts)}: ${restartText(mostRestarts)}, more than autoFail.maxRestarts ${autoFail.maxRestarts}`,
      };
    }
    const limit = autoFail.maxRestartsDurationMs;
    if (limit !== undefined && restartingSince !== undefined && lastRestart?.lastRestart !== undefined) {
      const span = lastRestart.lastRestart - restartingSince;
      if (span > limit) {
        return {
          ...base,
          phase: 'Failed',
          reason: CANARY_REASON_RESTARTS_TIMEOUT,
          pod: lastRestart.pod,
          message: `canary containers kept restarting for ${formatDuration(span)}, longer than autoFail.maxRestartsDuration ${formatDuration(limit)} (last: ${podText(lastRestart)}, ${restartText(lastRestart)})`,
        };
      }
    }
    const start = parseTime(prev.startTime) ?? now;
    if (autoFail.timeoutMs !== undefined) {
      if (now - start > autoFail.timeoutMs) {
        return {
          ...base,
          phase: 'Failed',
          reason: CANARY_REASON_TIMEOUT,
          message: `the canary started ${formatDuration(now - start)} ago, longer than autoFail.timeout ${formatDuration(autoFail.timeoutMs)}`,
        };
      }
      requeue = minDelay(requeue, start + autoFail.timeoutMs - now + 1);
    }
  }
  if (pausedAnnotation === 'true') {
    return {
      ...base,
      phase: 'Paused',
      reason: CANARY_REASON_MANUAL_PAUSE,
      manual: true,
      message: `paused by annotation ${CANARY_PAUSED_ANNOTATION}=true; remove it to resume`,
      ...(requeue !== undefined ? { requeueAfterMs: requeue } : {}),
    };
  }
  if (!resumed && autoPause.enabled) {
    const pause = (reason: string, message: string, pod?: string): CanaryVerdict => ({
      ...base,
      phase: 'Paused',
      reason,
      message: `${message}; annotate ${CANARY_VALIDATED_ANNOTATION}=${revision} to promote, ${CANARY_FAILED_ANNOTATION}=${revision} to fail, or ${CANARY_RESUMED_ANNOTATION}=${revision} to resume without autoPause`,
      ...(pod ? { pod } : {}),
      ...(requeue !== undefined ? { requeueAfterMs: requeue } : {}),
    });
    // Once paused by autoPause, it stays paused until a person acts (EDS keeps its CanaryPaused condition).
    if (prev.phase === 'Paused' && prev.reason !== CANARY_REASON_MANUAL_PAUSE) {
      return {
        ...base,
        phase: 'Paused',
        reason: prev.reason ?? 'Unknown',
        message: prev.message ?? '',
        ...(requeue !== undefined ? { requeueAfterMs: requeue } : {}),
      };
    }
    const stuck = pods.find((p) => p.cannotStart);
    if (stuck?.cannotStart) {
      const c = stuck.cannotStart;
      return pause(
        c.reason,
        `${podText(stuck)}: container ${c.container} cannot start: ${c.reason}${c.message ? ` (${c.message})` : ''}`,
        stuck.pod,
      );
    }
    if (mostRestarts && mostRestarts.restarts > autoPause.maxRestarts) {
      return pause(
        mostRestarts.restartReason ?? 'CrashLoopBackOff',
        `${podText(mostRestarts)}: ${restartText(mostRestarts)}, more than autoPause.maxRestarts ${autoPause.maxRestarts}`,
        mostRestarts.pod,
      );
    }
    const maxStartup = autoPause.maxStartupDurationMs;
    if (maxStartup !== undefined) {
      for (const p of pods) {
        if (p.ready) continue;
        if (now - p.startedAt > maxStartup) {
          return pause(
            CANARY_REASON_SLOW_START,
            `${podText(p)}: not ready ${formatDuration(now - p.startedAt)} after it started, longer than autoPause.maxStartupDuration ${formatDuration(maxStartup)}`,
            p.pod,
          );
        }
        requeue = minDelay(requeue, p.startedAt + maxStartup - now + 1);
      }
    }
  }

  const available = pods.filter((p) => p.available).length;
  const allAvailable = complete && nodes.length > 0 && available === pods.length;
  const counts = `${available} of ${nodes.length} canary pod${nodes.length === 1 ? '' : 's'} available`;
  let message: string;
  if (nodes.length === 0) {
    message = 'no node can be a canary node (eligible, matching canary.nodeSelector and rollingUpdate.selector)';
  } else if (settings.validation === 'Manual') {
    message = `${counts}; waiting for annotation ${CANARY_VALIDATED_ANNOTATION}=${revision}`;
  } else if (!allAvailable) {
    message = `${counts}; promotion once every canary pod has been available for ${formatDuration(settings.durationMs ?? 0)}`;
  } else {
    let at = 0;
    for (const p of pods) at = Math.max(at, (p.availableSince ?? now) + (settings.durationMs ?? 0));
    if (lastRestart?.lastRestart !== undefined)
      at = Math.max(at, lastRestart.lastRestart + (settings.noRestartsDurationMs ?? 0));
    if (now >= at) {
      return {
        ...base,
        phase: 'Promoted',
        reason: CANARY_REASON_VALIDATED,
        message:
          `every canary pod has been available for ${formatDuration(settings.durationMs ?? 0)}` +
          (settings.noRestartsDurationMs !== undefined
            ? ` with no container restart for ${formatDuration(settings.noRestartsDurationMs)}`
            : ''),
      };
    }
    requeue = minDelay(requeue, at - now);
    message = `${counts}; promotion at ${formatTime(at)}`;
  }
  return {
    ...base,
    phase: 'Observing',
    reason: prev.phase === 'Observing' ? (prev.reason ?? CANARY_REASON_STARTED) : CANARY_REASON_RESUMED,
    message,
    waiting: allAvailable,
    ...(requeue !== undefined ? { requeueAfterMs: requeue } : {}),
  };
}
