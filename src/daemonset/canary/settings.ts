// rollingUpdate.canary as the planner reads it (defaults applied, durations in ms) and status.canary as stored. The
// canary is ExtendedDaemonSet's: its spec fields, defaults and rules follow ExtendedDaemonSetSpecStrategyCanary
// (https://github.com/DataDog/extendeddaemonset/blob/main/api/v1alpha1/extendeddaemonset_types.go).
import type { Canary, CanaryPhase, CanaryStatus, CanaryValidation, DaemonSet } from '../../api/types.ts';
import type { LabelSelector } from '../../k8s/types.ts';
import type { IntOrStringValue } from '../../k8s/intstr.ts';
import { durationMs } from '../../api/duration.ts';
import {
  DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS,
  DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS,
  DEFAULT_CANARY_DURATION,
  DEFAULT_CANARY_NO_RESTARTS_DURATION,
  DEFAULT_CANARY_NODES,
} from '../constants.ts';
import { isRollingUpdate } from '../strategy.ts';

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
