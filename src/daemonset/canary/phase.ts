// The phase machine of a running canary (Observing or Paused) as a table: CANARY_TRANSITIONS lists, in
// ExtendedDaemonSet's order of precedence
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/canary.go,
// manageCanaryPodFailures), from which phase what moves the canary to which phase with which reason; the first row
// that applies decides (firstTransition). What the rows read is derived once from the input (canarySituation).
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

// ---- what the rows read ----

/** The input with what the rows derive from it, computed once. */
export interface CanarySituation extends CanaryPhaseInput {
  revision: string;
  /**
   * A person resumed this canary: autoPause no longer applies until it ends. A resume names this revision
   * (canary-resumed), or is the pause annotation going away (or another value than "true") after it paused this
   * canary, as the stored status shows. The pause annotation's value alone says nothing: left on the object, "false"
   * would turn autoPause off for every later canary; a leftover canary-resumed names an earlier revision and is ignored.
   */
  resumed: boolean;
  /** The pod with the most recent restart on the canary revision. */
  lastRestart?: CanaryPodHealth;
  /** The first restart seen (ms): the stored one, else the earliest of this sync. */
  restartingSince?: number;
  /** The pod with the most restarts. */
  mostRestarts?: CanaryPodHealth;
  /** Canary pods available. */
  available: number;
  /** Every canary node runs a canary pod, and every one is available. */
  allAvailable: boolean;
}

export function canarySituation(input: CanaryPhaseInput): CanarySituation {
  const { prev, annotations, pods } = input;
  const revision = prev.revision;
  const resumed =
    prev.resumed === true ||
    annotations[CANARY_RESUMED_ANNOTATION] === revision ||
    (prev.phase === 'Paused' &&
      prev.reason === CANARY_REASON_MANUAL_PAUSE &&
      annotations[CANARY_PAUSED_ANNOTATION] !== 'true');
  let lastRestart: CanaryPodHealth | undefined;
  let firstRestart: number | undefined;
  for (const p of pods) {
    if (p.lastRestart === undefined) continue;
    if (!lastRestart || p.lastRestart > (lastRestart.lastRestart ?? 0)) lastRestart = p;
    firstRestart = Math.min(firstRestart ?? p.lastRestart, p.lastRestart);
  }
  const restartingSince = parseTime(prev.restartingSince) ?? firstRestart;
  const mostRestarts = pods.reduce<CanaryPodHealth | undefined>(
    (m, p) => (!m || p.restarts > m.restarts ? p : m),
    undefined,
  );
  const available = pods.filter((p) => p.available).length;
  return {
    ...input,
    revision,
    resumed,
    ...(lastRestart ? { lastRestart } : {}),
    ...(restartingSince !== undefined ? { restartingSince } : {}),
    ...(mostRestarts ? { mostRestarts } : {}),
    available,
    allAvailable: input.complete && input.nodes.length > 0 && available === pods.length,
  };
}

/**
 * Auto validation: when every canary pod will have been available for `duration` and no canary container will have
 * restarted for `noRestartsDuration`.
 */
function promotionTime(s: CanarySituation): number {
  const { settings, now } = s;
  let at = 0;
  for (const p of s.pods) at = Math.max(at, (p.availableSince ?? now) + (settings.durationMs ?? 0));
  if (s.lastRestart?.lastRestart !== undefined)
    at = Math.max(at, s.lastRestart.lastRestart + (settings.noRestartsDurationMs ?? 0));
  return at;
}

// ---- the table ----

/** The phases the machine runs from; planCanary holds Failed and Promoted without it. */
export type RunningPhase = 'Observing' | 'Paused';

/**
 * The reason of a row whose verdict takes its reason from what the row saw: a container's waiting or termination
 * reason, or the reason autoPause paused the canary with.
 */
export const AS_SEEN = '(as seen)';
/** The reason of a row that keeps the stored one (Started or Restarted). */
export const AS_BEFORE = '(as before)';

/** A row that applies now: the verdict's message, and its pod and reason where the row takes them from what it saw. */
export interface CanaryFinding {
  message: string;
  pod?: string;
  reason?: string;
}

/** A row's check: a finding when it applies now; else, maybe, after how long it may apply by time alone. */
export interface CanaryCheck {
  finding?: CanaryFinding;
  wakeAfterMs?: number;
}

export interface CanaryTransition {
  from: readonly RunningPhase[];
  /** What moves the canary, in words. */
  on: string;
  to: CanaryPhase;
  /** The verdict's reason; AS_SEEN and AS_BEFORE as they say. */
  reason: string;
  /** Decided by a person (an annotation). */
  manual: boolean;
  check: (s: CanarySituation) => CanaryCheck;
}

const RUNNING: readonly RunningPhase[] = ['Observing', 'Paused'];
const fires = (message: string, more: Omit<CanaryFinding, 'message'> = {}): CanaryCheck => ({
  finding: { message, ...more },
});
const NOT_NOW: CanaryCheck = {};

/** autoPause applies: enabled, and no person resumed the canary. */
const autoPauses = (s: CanarySituation) => !s.resumed && s.settings.autoPause.enabled;

/** What a canary autoPause paused says: why, and how a person goes on. */
function autoPaused(s: CanarySituation, why: string, pod: string, reason?: string): CanaryCheck {
  const r = s.revision;
  return fires(
    `${why}; annotate ${CANARY_VALIDATED_ANNOTATION}=${r} to promote, ${CANARY_FAILED_ANNOTATION}=${r} to fail, or ${CANARY_RESUMED_ANNOTATION}=${r} to resume without autoPause`,
    { pod, ...(reason !== undefined ? { reason } : {}) },
  );
}

function observingMessage(s: CanarySituation): string {
  const { nodes, settings, revision } = s;
  const counts = `${s.available} of ${nodes.length} canary pod${nodes.length === 1 ? '' : 's'} available`;
  if (nodes.length === 0)
    return 'no node can be a canary node (eligible, matching canary.nodeSelector and rollingUpdate.selector)';
  if (settings.validation === 'Manual')
    return `${counts}; waiting for annotation ${CANARY_VALIDATED_ANNOTATION}=${revision}`;
  if (!s.allAvailable)
    return `${counts}; promotion once every canary pod has been available for ${formatDuration(settings.durationMs ?? 0)}`;
  return `${counts}; promotion at ${formatTime(promotionTime(s))}`;
}

/**
 * The phase transitions of a running canary, in order of precedence: a person failing it (canary-failed "true",
 * which fails whichever canary runs and stays in force until removed, or naming this revision); a person validating
 * it; autoFail; a person pausing it; then, unless a person resumed it, autoPause, which holds once it paused (EDS
 * keeps its CanaryPaused condition until a person acts); Auto validation; else the canary goes on observing. A row
 * that does not apply yet but may by time alone (autoFail.timeout, maxStartupDuration, the promotion time) says when,
 * and the soonest such time above the row that applies is when the verdict may change (requeueAfterMs).
 */
export const CANARY_TRANSITIONS: readonly CanaryTransition[] = [
  {
    from: RUNNING,
    on: `annotation ${CANARY_FAILED_ANNOTATION} "true" or naming the revision`,
    to: 'Failed',
    reason: CANARY_REASON_MANUAL_FAIL,
    manual: true,
    check: ({ annotations, revision }) => {
      const failed = annotations[CANARY_FAILED_ANNOTATION];
      return failed === 'true' || failed === revision
        ? fires(`failed by annotation ${CANARY_FAILED_ANNOTATION}=${failed}`)
        : NOT_NOW;
    },
  },
  {
    from: RUNNING,
    on: `annotation ${CANARY_VALIDATED_ANNOTATION} naming the revision`,
    to: 'Promoted',
    reason: CANARY_REASON_MANUAL_VALIDATION,
    manual: true,
    check: ({ annotations, revision }) =>
      annotations[CANARY_VALIDATED_ANNOTATION] === revision
        ? fires(`validated by annotation ${CANARY_VALIDATED_ANNOTATION}=${revision}`)
        : NOT_NOW,
  },
  {
    from: RUNNING,
    on: 'autoFail: a container restarted more than autoFail.maxRestarts times',
    to: 'Failed',
    reason: AS_SEEN,
    manual: false,
    check: ({ settings: { autoFail }, mostRestarts: m }) =>
      autoFail.enabled && m && m.restarts > autoFail.maxRestarts
        ? fires(`${podText(m)}: ${restartText(m)}, more than autoFail.maxRestarts ${autoFail.maxRestarts}`, {
            pod: m.pod,
            reason: m.restartReason ?? 'CrashLoopBackOff',
          })
        : NOT_NOW,
  },
  {
    from: RUNNING,
    on: 'autoFail: containers kept restarting for longer than autoFail.maxRestartsDuration',
    to: 'Failed',
    reason: CANARY_REASON_RESTARTS_TIMEOUT,
    manual: false,
    check: ({ settings: { autoFail }, restartingSince, lastRestart }) => {
      const limit = autoFail.maxRestartsDurationMs;
      if (!autoFail.enabled || limit === undefined || restartingSince === undefined) return NOT_NOW;
      if (lastRestart?.lastRestart === undefined) return NOT_NOW;
      const span = lastRestart.lastRestart - restartingSince;
      return span > limit
        ? fires(
            `canary containers kept restarting for ${formatDuration(span)}, longer than autoFail.maxRestartsDuration ${formatDuration(limit)} (last: ${podText(lastRestart)}, ${restartText(lastRestart)})`,
            { pod: lastRestart.pod },
          )
        : NOT_NOW;
    },
  },
  {
    from: RUNNING,
    on: 'autoFail: the canary started longer than autoFail.timeout ago',
    to: 'Failed',
    reason: CANARY_REASON_TIMEOUT,
    manual: false,
    check: ({ settings: { autoFail }, prev, now }) => {
      if (!autoFail.enabled || autoFail.timeoutMs === undefined) return NOT_NOW;
      const start = parseTime(prev.startTime) ?? now;
      if (now - start > autoFail.timeoutMs) {
        return fires(
          `the canary started ${formatDuration(now - start)} ago, longer than autoFail.timeout ${formatDuration(autoFail.timeoutMs)}`,
        );
      }
      return { wakeAfterMs: start + autoFail.timeoutMs - now + 1 };
    },
  },
  {
    from: RUNNING,
    on: `annotation ${CANARY_PAUSED_ANNOTATION} "true"`,
    to: 'Paused',
    reason: CANARY_REASON_MANUAL_PAUSE,
    manual: true,
    check: ({ annotations }) =>
      annotations[CANARY_PAUSED_ANNOTATION] === 'true'
        ? fires(`paused by annotation ${CANARY_PAUSED_ANNOTATION}=true; remove it to resume`)
        : NOT_NOW,
  },
  {
    from: ['Paused'],
    on: 'autoPause paused it: it stays paused until a person acts',
    to: 'Paused',
    reason: AS_SEEN,
    manual: false,
    check: (s) =>
      autoPauses(s) && s.prev.reason !== CANARY_REASON_MANUAL_PAUSE
        ? fires(s.prev.message ?? '', { reason: s.prev.reason ?? 'Unknown' })
        : NOT_NOW,
  },
  {
    // Observing only: a Paused canary reaching this row was paused by a person and resumed (or autoPause is off).
    from: ['Observing'],
    on: 'autoPause: a container cannot start (ErrImagePull, CreateContainerError, ...)',
    to: 'Paused',
    reason: AS_SEEN,
    manual: false,
    check: (s) => {
      const stuck = autoPauses(s) ? s.pods.find((p) => p.cannotStart) : undefined;
      const c = stuck?.cannotStart;
      if (!stuck || !c) return NOT_NOW;
      const why = `${podText(stuck)}: container ${c.container} cannot start: ${c.reason}${c.message ? ` (${c.message})` : ''}`;
      return autoPaused(s, why, stuck.pod, c.reason);
    },
  },
  {
    from: ['Observing'],
    on: 'autoPause: a container restarted more than autoPause.maxRestarts times',
    to: 'Paused',
    reason: AS_SEEN,
    manual: false,
    check: (s) => {
      const m = s.mostRestarts;
      const max = s.settings.autoPause.maxRestarts;
      if (!autoPauses(s) || !m || m.restarts <= max) return NOT_NOW;
      const why = `${podText(m)}: ${restartText(m)}, more than autoPause.maxRestarts ${max}`;
      return autoPaused(s, why, m.pod, m.restartReason ?? 'CrashLoopBackOff');
    },
  },
  {
    from: ['Observing'],
    on: 'autoPause: a pod not ready autoPause.maxStartupDuration after it started',
    to: 'Paused',
    reason: CANARY_REASON_SLOW_START,
    manual: false,
    check: (s) => {
      const max = s.settings.autoPause.maxStartupDurationMs;
      if (!autoPauses(s) || max === undefined) return NOT_NOW;
      // In pod order: the first pod too slow decides; the pods before it say when they would be.
      let wakeAfterMs: number | undefined;
      for (const p of s.pods) {
        if (p.ready) continue;
        if (s.now - p.startedAt > max) {
          const why = `${podText(p)}: not ready ${formatDuration(s.now - p.startedAt)} after it started, longer than autoPause.maxStartupDuration ${formatDuration(max)}`;
          return { ...autoPaused(s, why, p.pod), ...(wakeAfterMs !== undefined ? { wakeAfterMs } : {}) };
        }
        wakeAfterMs = minDelay(wakeAfterMs, p.startedAt + max - s.now + 1);
      }
      return wakeAfterMs !== undefined ? { wakeAfterMs } : NOT_NOW;
    },
  },
  {
    from: RUNNING,
    on: 'Auto validation: every canary pod available for duration, no container restart for noRestartsDuration',
    to: 'Promoted',
    reason: CANARY_REASON_VALIDATED,
    manual: false,
    check: (s) => {
      const { settings } = s;
      if (settings.validation === 'Manual' || !s.allAvailable) return NOT_NOW;
      const at = promotionTime(s);
      if (s.now < at) return { wakeAfterMs: at - s.now };
      return fires(
        `every canary pod has been available for ${formatDuration(settings.durationMs ?? 0)}` +
          (settings.noRestartsDurationMs !== undefined
            ? ` with no container restart for ${formatDuration(settings.noRestartsDurationMs)}`
            : ''),
      );
    },
  },
  {
    from: ['Observing'],
    on: 'none of the above: it goes on',
    to: 'Observing',
    reason: AS_BEFORE,
    manual: false,
    check: (s) => fires(observingMessage(s)),
  },
  {
    from: ['Paused'],
    on: 'none of the above: a person resumed it',
    to: 'Observing',
    reason: CANARY_REASON_RESUMED,
    manual: false,
    check: (s) => fires(observingMessage(s)),
  },
];

export interface CanaryTransitionTaken {
  row: CanaryTransition;
  finding: CanaryFinding;
  /** The soonest time a row up to this one may apply by time alone. */
  wakeAfterMs?: number;
}

/**
 * The first row of CANARY_TRANSITIONS that applies from the stored phase. The last rows apply from each running
 * phase, so a row is always found from Observing and Paused; from another phase (planCanary never runs the machine
 * there) the canary is resumed, as the last row says.
 */
export function firstTransition(s: CanarySituation): CanaryTransitionTaken {
  let wakeAfterMs: number | undefined;
  for (const row of CANARY_TRANSITIONS) {
    if (!row.from.includes(s.prev.phase as RunningPhase)) continue;
    const c = row.check(s);
    wakeAfterMs = minDelay(wakeAfterMs, c.wakeAfterMs);
    if (c.finding) return { row, finding: c.finding, ...(wakeAfterMs !== undefined ? { wakeAfterMs } : {}) };
  }
  const row = CANARY_TRANSITIONS[CANARY_TRANSITIONS.length - 1] as CanaryTransition;
  return { row, finding: { message: observingMessage(s) }, ...(wakeAfterMs !== undefined ? { wakeAfterMs } : {}) };
}

/**
 * One step of the phase machine for a running canary (Observing or Paused): the row of CANARY_TRANSITIONS that
 * applies. A verdict that ends the canary (Promoted, Failed) is final; one that does not is requeued for when it may
 * change by time alone. Observing with every canary pod available waits for its clock or a person: it is not stuck.
 */
export function nextCanaryPhase(input: CanaryPhaseInput): CanaryVerdict {
  const s = canarySituation(input);
  const { row, finding, wakeAfterMs } = firstTransition(s);
  const ends = row.to === 'Promoted' || row.to === 'Failed';
  let reason = row.reason;
  if (reason === AS_SEEN) reason = finding.reason ?? 'Unknown';
  else if (reason === AS_BEFORE) reason = s.prev.reason ?? CANARY_REASON_STARTED;
  return {
    phase: row.to,
    reason,
    message: finding.message,
    ...(finding.pod ? { pod: finding.pod } : {}),
    manual: row.manual,
    resumed: s.resumed,
    ...(s.restartingSince !== undefined ? { restartingSince: s.restartingSince } : {}),
    ...(!ends && wakeAfterMs !== undefined ? { requeueAfterMs: wakeAfterMs } : {}),
    waiting: row.to === 'Observing' && s.allAvailable,
  };
}
