// Canary with health gates (rollingUpdate.canary), pure. A new revision first goes to a few canary nodes only; their
// pods are judged as ExtendedDaemonSet judges its canary pods
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/canary.go,
// manageCanaryPodFailures); the canary is then promoted (the rolling update takes over, with partition, selector,
// paused and maxUnavailable as without a canary), paused, or failed: the canary nodes go back to the stable revision
// and the rollout is held until the template changes. The spec is never rewritten; people steer with annotations.
//
// planCanary(ctx, revisions) decides one sync: which nodes are canary nodes (selectCanaryNodes), how healthy their
// pods are (judgeCanaryPod), the phase (nextCanaryPhase), status.canary, events, canary labels and requeue. The rest
// of the planner asks targetHash(ctx, node) which revision a node should run (manage.ts newPodForNode builds its pod).
import type { Canary, CanaryPhase, CanaryStatus, CanaryValidation, DaemonSet } from '../api/types.ts';
import type { ControllerRevision, LabelSelector, Node, Pod } from '../k8s/types.ts';
import {
  formatTime,
  getPodCondition,
  getPodReadyCondition,
  hasReadinessGate,
  isPodAvailable,
  parseTime,
} from '../k8s/pod.ts';
import { getScaledValueFromIntOrPercent, type IntOrStringValue } from '../k8s/intstr.ts';
import { labelSelectorMatches } from '../k8s/labels.ts';
import { getTargetNodeName } from '../k8s/scheduling.ts';
import {
  CANARY_FAILED_ANNOTATION,
  CANARY_PAUSED_ANNOTATION,
  CANARY_POD_LABEL,
  CANARY_RESUMED_ANNOTATION,
  CANARY_VALIDATED_ANNOTATION,
  DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS,
  DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS,
  DEFAULT_CANARY_DURATION,
  DEFAULT_CANARY_NO_RESTARTS_DURATION,
  DEFAULT_CANARY_NODES,
  IN_PLACE_UPDATE_READY,
} from './constants.ts';
import { cmp, minDelay, type SyncContext } from './context.ts';
import { durationMs, formatDuration } from '../api/duration.ts';
import {
  CANARY_FAILED_REASON,
  CANARY_PAUSED_REASON,
  CANARY_PROMOTED_REASON,
  CANARY_ROLLED_BACK_REASON,
  CANARY_STARTED_REASON,
} from './events.ts';
import { revisionHashLabel } from './history.ts';
import { getInPlaceUpdateState, templateOfRevision } from './inplace.ts';
import { podRevisionHash } from './pods.ts';
import type { CanaryPlan, PlanEvent, PodPatch } from './plan-types.ts';
import { isRollingUpdate, nodeSelectedForUpdate } from './strategy.ts';

// ---- API shapes (src/api/schema.ts: the same in v1alpha1 and v1beta1) ----

export type { CanaryPhase, CanaryStatus, CanaryValidation };
/** rollingUpdate.canary. */
export type CanarySpec = Canary;

/** rollingUpdate.canary with defaults applied and durations in ms (invalid ones, which validation rejects, unset). */
export interface CanarySettings {
  nodes: IntOrStringValue;
  nodeSelector?: LabelSelector;
  spreadByNodeLabels: string[];
  validation: CanaryValidation;
  /** Auto: every canary pod available this long. */
  durationMs?: number;
  /** Auto: no canary container restarted for this long. */
  noRestartsDurationMs?: number;
  autoPause: { enabled: boolean; maxRestarts: number; maxStartupDurationMs?: number };
  autoFail: { enabled: boolean; maxRestarts: number; maxRestartsDurationMs?: number; timeoutMs?: number };
}

/** rollingUpdate.canary when it applies: RollingUpdate with a canary. */
export function canarySpecOf(ds: DaemonSet): CanarySpec | undefined {
  if (!isRollingUpdate(ds)) return undefined;
  return ds.spec.updateStrategy?.rollingUpdate?.canary ?? undefined;
}

/** status.canary as stored. */
export function storedCanaryStatus(ds: Pick<DaemonSet, 'status'>): CanaryStatus | undefined {
  return ds.status?.canary ?? undefined;
}

export function canarySettings(spec: CanarySpec): CanarySettings {
  // The webhook defaults these (src/api/defaults.ts); an object stored without them reads the same.
  const validation: CanaryValidation = spec.validation === 'Manual' ? 'Manual' : 'Auto';
  const auto = validation === 'Auto';
  const durationMsValue = auto ? durationMs(spec.duration ?? DEFAULT_CANARY_DURATION) : undefined;
  const timeoutMs = durationMs(spec.autoFail?.timeout);
  return {
    nodes: spec.nodes ?? DEFAULT_CANARY_NODES,
    ...(spec.nodeSelector ? { nodeSelector: spec.nodeSelector } : {}),
    spreadByNodeLabels: spec.spreadByNodeLabels ?? [],
    validation,
    ...(durationMsValue !== undefined ? { durationMs: durationMsValue } : {}),
    ...(auto
      ? { noRestartsDurationMs: durationMs(spec.noRestartsDuration ?? DEFAULT_CANARY_NO_RESTARTS_DURATION) }
      : {}),
    autoPause: {
      enabled: spec.autoPause?.enabled ?? true,
      maxRestarts: spec.autoPause?.maxRestarts ?? DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS,
      maxStartupDurationMs: durationMs(spec.autoPause?.maxStartupDuration),
    },
    autoFail: {
      enabled: spec.autoFail?.enabled ?? true,
      maxRestarts: spec.autoFail?.maxRestarts ?? DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS,
      maxRestartsDurationMs: durationMs(spec.autoFail?.maxRestartsDuration),
      // EDS ignores a timeout not above the duration (it would fail every canary before it can be promoted).
      timeoutMs:
        timeoutMs !== undefined && (durationMsValue === undefined || timeoutMs > durationMsValue)
          ? timeoutMs
          : undefined,
    },
  };
}

// ---- the stable revision ----

/**
 * The revision a new canary protects: among the live pods' revisions other than `hash` (with a ControllerRevision
 * still there to build pods from), the one most pods run; ties go to the newer revision. Undefined when no pod runs
 * another revision (a new DaemonSet, or every pod is on `hash` already): there is nothing to protect.
 */
export function stableRevisionHash(
  pods: Iterable<Pod>,
  hash: string,
  revisions: ReadonlyMap<string, ControllerRevision>,
): string | undefined {
  const counts = new Map<string, number>();
  for (const pod of pods) {
    const phase = pod.status?.phase;
    if (pod.metadata.deletionTimestamp || phase === 'Failed' || phase === 'Succeeded') continue;
    const h = podRevisionHash(pod);
    if (!h || h === hash || !revisions.has(h)) continue;
    counts.set(h, (counts.get(h) ?? 0) + 1);
  }
  let best: string | undefined;
  for (const [h, n] of counts) {
    if (best === undefined) {
      best = h;
      continue;
    }
    const bn = counts.get(best) ?? 0;
    const rev = revisions.get(h)?.revision ?? 0;
    const bestRev = revisions.get(best)?.revision ?? 0;
    if (n > bn || (n === bn && (rev > bestRev || (rev === bestRev && h > best)))) best = h;
  }
  return best;
}

// ---- canary node selection ----

/** `nodes`: an int, or "N%" of the desired nodes rounded up; at least 1 (an invalid value counts as 1). */
export function canaryNodeCount(nodes: IntOrStringValue, desired: number): number {
  try {
    return Math.max(1, getScaledValueFromIntOrPercent(nodes, desired, true));
  } catch {
    return 1;
  }
}

export interface CanaryCandidate {
  name: string;
  /** Highest container restartCount of the node's daemon pod (0 without one). */
  restarts: number;
  /** The node's values of spreadByNodeLabels (missing labels read as ''). */
  spreadKey: string;
}

/**
 * Nodes that may be canary nodes: eligible (the daemon should run there), matching canary.nodeSelector and
 * rollingUpdate.selector. With their restarts and spread key, in name order.
 */
export function canaryCandidates(ctx: SyncContext, settings: CanarySettings): CanaryCandidate[] {
  const out: CanaryCandidate[] = [];
  for (const node of ctx.nodes) {
    const name = node.metadata.name ?? '';
    if (!ctx.eligibility.get(name)?.shouldRun) continue;
    const labels = node.metadata.labels ?? {};
    if (settings.nodeSelector && !labelSelectorMatches(settings.nodeSelector, labels)) continue;
    if (!nodeSelectedForUpdate(node, ctx.ds)) continue;
    const pod = ctx.nodeToDaemonPods.get(name)?.[0];
    out.push({ name, restarts: pod ? highestRestartCount(pod) : 0, spreadKey: spreadKey(node, settings) });
  }
  return out;
}

function spreadKey(node: Node, settings: CanarySettings): string {
  return JSON.stringify(settings.spreadByNodeLabels.map((l) => node.metadata.labels?.[l] ?? ''));
}

function highestRestartCount(pod: Pod): number {
  let n = 0;
  for (const cs of containerStatuses(pod)) n = Math.max(n, cs.restartCount ?? 0);
  return n;
}

const byRestartsThenName = (a: CanaryCandidate, b: CanaryCandidate) => a.restarts - b.restarts || cmp(a.name, b.name);

/**
 * The canary nodes: the `previous` ones that are still candidates (kept across syncs and for a newer template, never
 * dropped to shrink the set), filled up to `count` round-robin over the spread groups: the group with the fewest
 * canary nodes gets the next one, its candidate with the fewest restarts (then by name); between groups with as
 * many, the one with the better candidate goes first. Without spreadByNodeLabels there is one group. Name order.
 */
export function selectCanaryNodes(
  candidates: readonly CanaryCandidate[],
  count: number,
  previous: readonly string[] = [],
): string[] {
  const byName = new Map(candidates.map((c) => [c.name, c]));
  const chosen = new Set(previous.filter((n) => byName.has(n)));
  const picks = new Map<string, number>();
  const groups = new Map<string, CanaryCandidate[]>();
  for (const c of candidates) {
    if (chosen.has(c.name)) picks.set(c.spreadKey, (picks.get(c.spreadKey) ?? 0) + 1);
    else {
      const g = groups.get(c.spreadKey);
      if (g) g.push(c);
      else groups.set(c.spreadKey, [c]);
    }
  }
  for (const g of groups.values()) g.sort(byRestartsThenName);
  while (chosen.size < count) {
    let best: { key: string; head: CanaryCandidate; n: number } | undefined;
    for (const [key, g] of groups) {
      const head = g[0];
      if (!head) continue;
      const n = picks.get(key) ?? 0;
      if (!best || n < best.n || (n === best.n && byRestartsThenName(head, best.head) < 0)) best = { key, head, n };
    }
    if (!best) break;
    (groups.get(best.key) as CanaryCandidate[]).shift();
    picks.set(best.key, best.n + 1);
    chosen.add(best.head.name);
  }
  return [...chosen].sort(cmp);
}

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

// ---- the phase machine ----

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

// ---- one sync ----

/** The revision hash `nodeName` should run this sync. */
export function targetHash(ctx: SyncContext, nodeName: string): string {
  const c = ctx.canary;
  if (!c?.active) return ctx.hash;
  return c.phase !== 'Failed' && c.nodes.has(nodeName) ? ctx.hash : c.stableHash;
}

const ROLLED_BACK_NOTE = 'the canary nodes run the stable revision again';

function liveOn(ctx: SyncContext, nodeName: string): Pod[] {
  return (ctx.nodeToDaemonPods.get(nodeName) ?? []).filter((p) => {
    const phase = p.status?.phase;
    return !p.metadata.deletionTimestamp && phase !== 'Failed' && phase !== 'Succeeded';
  });
}

/**
 * Canary label upkeep: "true" on `labelled` pods that lack it, removed from every other pod of the DaemonSet that
 * carries it (a strategic merge patch with null removes a label).
 */
function canaryLabelPatches(ctx: SyncContext, labelled: ReadonlySet<string>): PodPatch[] {
  const out: PodPatch[] = [];
  // With a memo (memo.ts), a sync where no pod carries the label and none should skips the pass over every pod.
  if (labelled.size === 0 && ctx.upkeep?.canaryLabel === 0) return out;
  // In the snapshot's order; the pods of nodeToDaemonPods, i.e. those targeting a node (terminal pods being deleted
  // are left out there, and terminating ones here).
  for (const pod of ctx.pods) {
    if (pod.metadata.deletionTimestamp || !getTargetNodeName(pod.spec)) continue;
    const name = pod.metadata.name ?? '';
    const has = pod.metadata.labels?.[CANARY_POD_LABEL] !== undefined;
    const want = labelled.has(name);
    if (want && pod.metadata.labels?.[CANARY_POD_LABEL] !== 'true') {
      out.push({
        podName: name,
        patchType: 'strategic',
        patch: { metadata: { labels: { [CANARY_POD_LABEL]: 'true' } } },
        reason: 'CanaryLabel',
      });
    } else if (!want && has) {
      out.push({
        podName: name,
        patchType: 'strategic',
        patch: { metadata: { labels: { [CANARY_POD_LABEL]: null } } },
        reason: 'CanaryLabel',
      });
    }
  }
  return out;
}

function withTemplate(ds: DaemonSet, revision: ControllerRevision | undefined): DaemonSet | undefined {
  const template = revision && templateOfRevision(revision);
  return template ? { ...ds, spec: { ...ds.spec, template } } : undefined;
}

const list = (names: readonly string[]) => (names.length > 0 ? names.join(', ') : '(none)');

/**
 * The canary of one sync, from the DaemonSet (spec, annotations, status.canary), nodes, pods, revisions (the
 * current one and the others) and now:
 * - no rollingUpdate.canary (or OnDelete): nothing, as without the feature; a canary that had not ended (Observing,
 *   Paused, or Failed: the hold ends with the canary) is recorded Promoted (CanaryRemoved) for the current revision,
 *   so nothing reports a failed canary for the rollout that now proceeds;
 * - a new revision: a canary starts when some pods run another revision (the stable one: stableRevisionHash), on
 *   nodes picked by selectCanaryNodes; a canary that was still running or had failed restarts on its nodes with its
 *   stable revision; a template back at the stable revision ends it (Promoted, StableRevision);
 * - Observing/Paused: nextCanaryPhase on the canary pods; Failed is held (the canary nodes go back to the stable
 *   revision) and Promoted hands over to the rolling update, until the template changes.
 */
export function planCanary(
  ctx: SyncContext,
  current: ControllerRevision,
  old: readonly ControllerRevision[],
): CanaryPlan {
  const { ds, hash, now } = ctx;
  const stored = storedCanaryStatus(ds);
  // Every field written, whatever the stored object lacks (see CanaryStatus in src/api/schema.ts: a merge patch
  // keeps the fields it does not name).
  const prev: CanaryStatus | undefined = stored && {
    reason: '',
    message: '',
    since: formatTime(now),
    startTime: stored.since ?? formatTime(now),
    resumed: false,
    restartingSince: '',
    ...stored,
  };
  const events: PlanEvent[] = [];
  const inactive = (status: CanaryStatus | undefined): CanaryPlan => ({
    ...(status ? { status, phase: status.phase } : {}),
    active: false,
    nodes: new Set(),
    stableHash: hash,
    rollingNodes: [],
    events,
    podPatches: canaryLabelPatches(ctx, new Set()),
    waiting: false,
  });
  const nowText = formatTime(now);
  const spec = canarySpecOf(ds);
  if (!spec) {
    if (!prev || prev.phase === 'Promoted') return inactive(prev);
    // The canary ends with its spec. Recorded for the current revision (status.canary is the latest revision's
    // canary): a Failed record left would keep `kubectl ads status` failing and the CanaryFailed alert firing while
    // the rolling update takes the revision everywhere.
    const same = prev.revision === hash;
    const failed = prev.phase === 'Failed' ? `failed (${prev.reason ?? ''})` : '';
    const removed = 'rollingUpdate.canary was removed';
    const takesOver = 'the rolling update takes over';
    let message = `${removed}: ${takesOver}`;
    if (same && failed) message = `${removed} after the canary ${failed}: ${takesOver}`;
    else if (!same)
      message += ` (the canary of revision ${prev.revision} ${failed ? `had ${failed}` : `was ${prev.phase}`})`;
    const status: CanaryStatus = {
      ...prev,
      revision: hash,
      phase: 'Promoted',
      reason: CANARY_REASON_REMOVED,
      message,
      since: nowText,
      ...(same ? {} : { startTime: nowText, resumed: false, restartingSince: '' }),
    };
    events.push({
      type: 'Normal',
      reason: CANARY_PROMOTED_REASON,
      message: same
        ? `Canary of revision ${hash} promoted: ${message}`
        : `Canary of revision ${prev.revision} ended, revision ${hash} rolls out: ${message}`,
    });
    return inactive(status);
  }
  const settings = canarySettings(spec);
  const revisions = new Map<string, ControllerRevision>();
  for (const r of [current, ...old]) revisions.set(revisionHashLabel(r), r);

  let record: CanaryStatus;
  let started = false;
  if (prev && prev.revision === hash) {
    record = prev;
  } else {
    // A newer template while a canary runs or after it failed: the same nodes, the same stable revision.
    const restart = !!prev && prev.phase !== 'Promoted' && revisions.has(prev.stableRevision);
    const stable = restart ? prev.stableRevision : stableRevisionHash(allPods(ctx), hash, revisions);
    if (stable === undefined || stable === hash) {
      if (!prev || prev.phase === 'Promoted') return inactive(prev);
      const status: CanaryStatus = {
        revision: hash,
        stableRevision: hash,
        nodes: prev.nodes,
        phase: 'Promoted',
        reason: CANARY_REASON_STABLE_REVISION,
        message: `the template is the stable revision ${hash} again: the rolling update takes over`,
        since: nowText,
        startTime: nowText,
        resumed: false,
        restartingSince: '',
      };
      return inactive(status);
    }
    record = {
      revision: hash,
      stableRevision: stable,
      nodes: restart ? [...prev.nodes] : [],
      phase: 'Observing',
      reason: restart ? CANARY_REASON_RESTARTED : CANARY_REASON_STARTED,
      message: '',
      since: nowText,
      startTime: nowText,
      resumed: false,
      restartingSince: '',
    };
    started = true;
  }
  if (record.phase === 'Promoted') return inactive(record);

  // Without the stable revision's ControllerRevision (deleted by hand) its pods cannot be built: new pods then use
  // the current template, as without a canary.
  const stableDs = withTemplate(ds, revisions.get(record.stableRevision));
  const base = { active: true, stableHash: record.stableRevision, ...(stableDs ? { stableDs } : {}), events };

  if (record.phase === 'Failed') return failedPlan(ctx, record, base, false);

  const candidates = canaryCandidates(ctx, settings);
  const nodes = selectCanaryNodes(candidates, canaryNodeCount(settings.nodes, ctx.desired), record.nodes);
  if (started) {
    events.push({
      type: 'Normal',
      reason: CANARY_STARTED_REASON,
      message:
        record.reason === CANARY_REASON_RESTARTED
          ? `Canary restarted for revision ${hash} on the same nodes ${list(nodes)} (previous canary revision ${prev?.revision ?? ''}, stable revision ${record.stableRevision})`
          : `Canary of revision ${hash} started on nodes ${list(nodes)} (stable revision ${record.stableRevision})`,
    });
  }
  const minReady = ds.spec.minReadySeconds ?? 0;
  const canaryPods: Pod[] = [];
  let complete = nodes.length > 0;
  for (const n of nodes) {
    const mine = liveOn(ctx, n).filter((p) => podRevisionHash(p) === hash);
    if (mine.length === 0) complete = false;
    canaryPods.push(...mine);
  }
  const health = canaryPods.map((p) => judgeCanaryPod(p, minReady, now));
  const verdict = nextCanaryPhase({
    settings,
    prev: record,
    annotations: ds.metadata.annotations ?? {},
    pods: health,
    nodes,
    complete,
    now,
  });
  const next: CanaryStatus = {
    ...record,
    nodes,
    phase: verdict.phase,
    reason: verdict.reason,
    message: verdict.message,
    since: verdict.phase === record.phase && !started ? record.since : nowText,
    resumed: verdict.resumed,
    restartingSince: verdict.restartingSince !== undefined ? formatTime(verdict.restartingSince) : '',
  };
  const was = started ? undefined : record.phase;
  if (verdict.phase === 'Paused' && was !== 'Paused') {
    events.push({
      type: verdict.manual ? 'Normal' : 'Warning',
      reason: CANARY_PAUSED_REASON,
      message: `Canary of revision ${hash} paused (${verdict.reason}): ${verdict.message}`,
    });
  } else if (verdict.phase === 'Promoted') {
    events.push({
      type: 'Normal',
      reason: CANARY_PROMOTED_REASON,
      message: `Canary of revision ${hash} promoted (${verdict.reason}): ${verdict.message}`,
    });
    return inactive(next);
  } else if (verdict.phase === 'Failed') {
    events.push({
      type: 'Warning',
      reason: CANARY_FAILED_REASON,
      message: `Canary of revision ${hash} failed (${verdict.reason}): ${verdict.message}; rolling back nodes ${list(nodes)} to revision ${record.stableRevision}`,
    });
    return failedPlan(ctx, next, base, true);
  }
  const labelled = new Set(
    verdict.phase === 'Observing' || verdict.phase === 'Paused' ? canaryPods.map((p) => p.metadata.name ?? '') : [],
  );
  return {
    ...base,
    status: next,
    phase: next.phase,
    nodes: new Set(nodes),
    rollingNodes: next.phase === 'Observing' ? nodes : [],
    podPatches: canaryLabelPatches(ctx, labelled),
    ...(verdict.requeueAfterMs !== undefined ? { requeueAfterMs: verdict.requeueAfterMs } : {}),
    waiting: verdict.waiting,
  };
}

/** Failed: the canary nodes go back to the stable revision; CanaryRolledBack once they all run it, available. */
function failedPlan(
  ctx: SyncContext,
  record: CanaryStatus,
  base: Pick<CanaryPlan, 'active' | 'stableHash' | 'stableDs' | 'events'>,
  justFailed: boolean,
): CanaryPlan {
  const nodes = record.nodes.filter((n) => ctx.nodeByName.has(n));
  const minReady = ctx.ds.spec.minReadySeconds ?? 0;
  const back: string[] = [];
  let rolledBack = true;
  for (const n of nodes) {
    const pods = liveOn(ctx, n);
    const shouldRun = ctx.eligibility.get(n)?.shouldRun ?? false;
    if (!shouldRun && pods.length === 0) continue;
    const pod = pods[0];
    if (
      pods.length !== 1 ||
      !pod ||
      podRevisionHash(pod) !== record.stableRevision ||
      !isPodAvailable(pod, minReady, ctx.now)
    ) {
      rolledBack = false;
      break;
    }
    back.push(pod.metadata.name ?? '');
  }
  let status = record;
  if (rolledBack && !justFailed && !(record.message ?? '').endsWith(ROLLED_BACK_NOTE)) {
    status = { ...record, message: `${record.message ?? ''}; ${ROLLED_BACK_NOTE}` };
    base.events.push({
      type: 'Normal',
      reason: CANARY_ROLLED_BACK_REASON,
      message: `Canary nodes ${list(nodes)} run available pods of the stable revision ${record.stableRevision} again (pods ${list(back)}); the canary of revision ${record.revision} failed (${record.reason ?? ''}): ${record.message ?? ''}`,
    });
  }
  return {
    ...base,
    status,
    phase: 'Failed',
    nodes: new Set(nodes),
    rollingNodes: nodes,
    podPatches: canaryLabelPatches(ctx, new Set()),
    waiting: false,
    rolledBack,
  };
}

function* allPods(ctx: SyncContext): Generator<Pod> {
  for (const pods of ctx.nodeToDaemonPods.values()) yield* pods;
}
