// In-place update for rollingUpdateType InPlaceIfPossible (kruise pkg/util/inplaceupdate, daemonset
// inPlaceUpdatePods / refreshUpdateStates), pure: which pods can be updated in place, the patches that do it,
// and the InPlaceUpdateReady refresh that ends it.
import type { ControllerRevision, Pod, PodTemplateSpec } from '../k8s/types.ts';
import { canonicalJson } from '../k8s/hash.ts';
import { cloneJson } from '../k8s/json.ts';
import { formatTime, getPodCondition, hasReadinessGate } from '../k8s/pod.ts';
import {
  CONTROLLER_REVISION_HASH_LABEL,
  IN_PLACE_UPDATE_READY,
  INPLACE_UPDATE_STATE_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION_OLD,
} from './constants.ts';
import { normalizeRevisionData, revisionHashLabel } from './history.ts';
import { conditionStatusPatch, podRevisionHash } from './pods.ts';
import type { InPlaceUpdate } from './plan-types.ts';

/** The annotation recording an in-place update (a subset of Kruise's InPlaceUpdateState). */
export interface InPlaceUpdateState {
  revision: string;
  updateTimestamp: string;
  /** Per updated container, what it ran before: done when the imageID changed or the container restarted. */
  lastContainerStatuses: Record<string, { imageID: string; restartCount?: number }>;
  updateImages?: boolean;
}

/** The template stored in a revision's data (`spec.template` without `$patch`). */
export function templateOfRevision(r: ControllerRevision): PodTemplateSpec | undefined {
  const t = (r.data as { spec?: { template?: Record<string, unknown> } } | undefined)?.spec?.template;
  if (!t || typeof t !== 'object') return undefined;
  const { $patch: _patch, ...rest } = t;
  return rest as unknown as PodTemplateSpec;
}

export interface InPlaceSpec {
  /** Containers whose image changes, with the new image. */
  images: { name: string; image: string }[];
  /** Template label changes (null = removed). */
  labels: Record<string, string | null>;
  /** Template annotation changes (null = removed). */
  annotations: Record<string, string | null>;
}

function mapDiff(
  from: Record<string, string> | undefined,
  to: Record<string, string> | undefined,
): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(to ?? {})) if (from?.[k] !== v) out[k] = v;
  for (const k of Object.keys(from ?? {})) if (!(to && Object.hasOwn(to, k))) out[k] = null;
  return out;
}

function stripForCompare(t: PodTemplateSpec): unknown {
  const spec = cloneJson(t.spec ?? { containers: [] });
  for (const c of spec.containers ?? []) delete c.image;
  const meta = { ...(t.metadata ?? {}) };
  delete meta.labels;
  delete meta.annotations;
  return normalizeRevisionData({ metadata: meta, spec });
}

/**
 * CanUpdateInPlace: the change from `from` to `to` touches only container images (same containers, same order)
 * and template labels/annotations. Anything else (env, command, resources, volumes, containers added or removed)
 * needs a recreate. Returns what to change, or undefined.
 */
export function inPlaceSpec(from: PodTemplateSpec, to: PodTemplateSpec): InPlaceSpec | undefined {
  if (canonicalJson(stripForCompare(from)) !== canonicalJson(stripForCompare(to))) return undefined;
  const images: InPlaceSpec['images'] = [];
  const fromContainers = from.spec?.containers ?? [];
  for (const [i, c] of (to.spec?.containers ?? []).entries()) {
    const before = fromContainers[i];
    if (!before || before.name !== c.name) return undefined;
    if (before.image !== c.image && c.image !== undefined) images.push({ name: c.name, image: c.image });
  }
  return {
    images,
    labels: mapDiff(from.metadata?.labels, to.metadata?.labels),
    annotations: mapDiff(from.metadata?.annotations, to.metadata?.annotations),
  };
}

/**
 * canPodInPlaceUpdate: the pod carries the InPlaceUpdateReady gate (only pods created under InPlaceIfPossible do),
 * an old revision with the pod's hash is known, and the change from it to the current revision is in-place-able.
 */
export function canPodInPlaceUpdate(
  pod: Pod,
  current: ControllerRevision,
  oldRevisions: readonly ControllerRevision[],
): InPlaceSpec | undefined {
  if (!hasReadinessGate(pod, IN_PLACE_UPDATE_READY)) return undefined;
  const hash = podRevisionHash(pod);
  const old = oldRevisions.find((r) => revisionHashLabel(r) === hash);
  if (!old) return undefined;
  const from = templateOfRevision(old);
  const to = templateOfRevision(current);
  if (!from || !to) return undefined;
  return inPlaceSpec(from, to);
}

/**
 * The in-place update of one pod: InPlaceUpdateReady False (reason StartInPlaceUpdate; Ready forced False) on
 * pods/status first, then the pod patch: new images, hash label, template label/annotation changes and the
 * inplace-update-state annotation recording the containers' current imageIDs.
 */
export function planInPlaceUpdate(pod: Pod, spec: InPlaceSpec, toHash: string, now: number): InPlaceUpdate {
  const ts = formatTime(now);
  const lastContainerStatuses: InPlaceUpdateState['lastContainerStatuses'] = {};
  for (const { name } of spec.images) {
    const cs = pod.status?.containerStatuses?.find((s) => s.name === name);
    lastContainerStatuses[name] = { imageID: cs?.imageID ?? '', restartCount: cs?.restartCount ?? 0 };
  }
  const state: InPlaceUpdateState = {
    revision: toHash,
    updateTimestamp: ts,
    lastContainerStatuses,
    updateImages: spec.images.length > 0,
  };
  const patch: Record<string, unknown> = {
    metadata: {
      labels: { ...spec.labels, [CONTROLLER_REVISION_HASH_LABEL]: toHash },
      annotations: { ...spec.annotations, [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify(state) },
    },
  };
  if (spec.images.length > 0) patch.spec = { containers: spec.images.map(({ name, image }) => ({ name, image })) };
  return {
    podName: pod.metadata.name ?? '',
    nodeName: pod.spec.nodeName,
    fromHash: podRevisionHash(pod),
    toHash,
    statusPatch: conditionStatusPatch(
      pod,
      {
        type: IN_PLACE_UPDATE_READY,
        status: 'False',
        reason: 'StartInPlaceUpdate',
        lastTransitionTime: ts,
      },
      true,
    ),
    patch,
  };
}

export function getInPlaceUpdateState(pod: Pod): InPlaceUpdateState | undefined {
  const a = pod.metadata.annotations;
  const raw = a?.[INPLACE_UPDATE_STATE_ANNOTATION] ?? a?.[INPLACE_UPDATE_STATE_ANNOTATION_OLD];
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as InPlaceUpdateState;
  } catch {
    return undefined;
  }
}

/**
 * Refresh (every sync, every pod with the InPlaceUpdateReady gate): the condition is set True when it is missing
 * (fresh pods) or when a recorded in-place update has finished: every updated container reports another imageID
 * or a higher restartCount than recorded, and is running. Returns the pods/status patch, or undefined.
 */
export function inPlaceRefreshPatch(pod: Pod, now: number): unknown {
  if (pod.metadata.deletionTimestamp || !hasReadinessGate(pod, IN_PLACE_UPDATE_READY)) return undefined;
  const cond = getPodCondition(pod, IN_PLACE_UPDATE_READY);
  const setTrue = () =>
    conditionStatusPatch(pod, { type: IN_PLACE_UPDATE_READY, status: 'True', lastTransitionTime: formatTime(now) });
  if (!cond) return setTrue();
  if (cond.status === 'True') return undefined;
  const state = getInPlaceUpdateState(pod);
  if (!state || state.revision !== podRevisionHash(pod)) return undefined;
  for (const [name, last] of Object.entries(state.lastContainerStatuses ?? {})) {
    const cs = pod.status?.containerStatuses?.find((s) => s.name === name);
    if (!cs || !cs.state || !('running' in cs.state)) return undefined;
    const restarted = (cs.restartCount ?? 0) > (last.restartCount ?? Number.MAX_SAFE_INTEGER);
    if (cs.imageID === last.imageID && !restarted) return undefined;
  }
  return setTrue();
}
