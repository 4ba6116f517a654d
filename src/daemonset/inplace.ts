// In-place update for rollingUpdateType InPlaceIfPossible (kruise pkg/util/inplaceupdate, daemonset
// inPlaceUpdatePods / refreshUpdateStates), pure: which pods can be updated in place, the patches that do it,
// and the InPlaceUpdateReady refresh that ends it.
import { setDefaultsPodTemplate } from '../api/defaults.ts';
import { defaultImagePullPolicy } from '../api/image.ts';
import type { ControllerRevision, Pod, PodCondition, PodTemplateSpec } from '../k8s/types.ts';
import { canonicalJson } from '../k8s/hash.ts';
import { cloneJson } from '../k8s/json.ts';
import { formatTime, getPodCondition, hasReadinessGate } from '../k8s/pod.ts';
import {
  CONTROLLER_REVISION_HASH_LABEL,
  IN_PLACE_UPDATE_READY,
  INPLACE_UPDATE_STATE_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION_OLD,
  RESIZE_REFUSED_ANNOTATION,
} from './constants.ts';
import { normalizeRevisionData, revisionHashLabel } from './history.ts';
import { conditionStatusPatch, podRevisionHash } from './pods.ts';
import type { InPlaceUpdate } from './plan-types.ts';
import {
  resizePatch,
  resizeProgress,
  resizeRequested,
  resourceChange,
  type ContainerResize,
  type ResizeProgress,
} from './resize.ts';

/** The annotation recording an in-place update (a subset of Kruise's InPlaceUpdateState). */
export interface InPlaceUpdateState {
  revision: string;
  updateTimestamp: string;
  /** Per updated container, the imageID it ran before (see inPlaceUpdateCompleted). */
  lastContainerStatuses: Record<string, { imageID: string }>;
  updateImages?: boolean;
  /**
   * Ours (Kruise ignores it): every container's restartCount when the update started, so the canary's health
   * judgement (canary/health.ts) counts only the restarts on the new revision, not the pod's history nor the restart of
   * the update itself.
   */
  restartCounts?: Record<string, number>;
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
  /** Containers whose cpu or memory change, resized through pods/resize before any image changes (resize.ts). */
  resize: ContainerResize[];
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

/** A defaulted copy of a template (apps/v1 template defaults, as our webhook applies them; src/api/defaults.ts). */
function defaultedTemplate(t: PodTemplateSpec): PodTemplateSpec {
  const out = cloneJson(t);
  setDefaultsPodTemplate(out as unknown as Record<string, unknown>);
  return out;
}

/**
 * The defaulted template without what an in-place update may change: container images, template labels and
 * annotations. A container's imagePullPolicy that is the default for its own image goes too: defaulting derives it
 * from the image (Always for `:latest` or no tag), so `nginx` -> `nginx:1.27` would otherwise change it, where
 * kruise-manager, comparing undefaulted templates, sees an image change only. The pod keeps its pull policy.
 */
function stripForCompare(t: PodTemplateSpec, resize: boolean): unknown {
  const spec = cloneJson(t.spec ?? { containers: [] });
  for (const c of spec.containers ?? []) {
    if (c.imagePullPolicy === defaultImagePullPolicy(c.image ?? '')) delete c.imagePullPolicy;
    delete c.image;
    // Compared by resourceChange instead, which knows which resource changes a pods/resize can make.
    if (resize) delete c.resources;
  }
  if (resize) {
    for (const c of spec.initContainers ?? []) delete c.resources;
    delete spec.resources;
  }
  const meta = { ...(t.metadata ?? {}) };
  delete meta.labels;
  delete meta.annotations;
  return normalizeRevisionData({ metadata: meta, spec });
}

/**
 * CanUpdateInPlace: the change from `from` to `to` touches only container images (same containers, same order),
 * template labels/annotations and, with `resize` (InPlaceWorkloadVerticalScaling), the cpu and memory of containers
 * as resourceChange allows. Anything else (env, command, other resources, volumes, containers added or removed)
 * needs a recreate. Returns what to change, or undefined.
 *
 * Both templates are defaulted first (apps/v1 template defaults): kruise-manager's revisions hold templates
 * undefaulted, ours defaulted, and a field only one side spells out by default is no change.
 */
export function inPlaceSpec(from: PodTemplateSpec, to: PodTemplateSpec, resize = false): InPlaceSpec | undefined {
  const a = defaultedTemplate(from);
  const b = defaultedTemplate(to);
  if (canonicalJson(stripForCompare(a, resize)) !== canonicalJson(stripForCompare(b, resize))) return undefined;
  const resources = resize ? resourceChange(a.spec, b.spec) : ({ kind: 'none' } as const);
  if (resources.kind === 'recreate') return undefined;
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
    resize: resources.kind === 'resize' ? resources.containers : [],
  };
}

/**
 * Why a pod of `from` is recreated rather than resized in place for `to`: resourceChange's field-path reasons when
 * everything but resources could change in place, else none (the change was never an in-place one).
 */
export function resizeRecreateReasons(from: PodTemplateSpec, to: PodTemplateSpec): string[] {
  const a = defaultedTemplate(from);
  const b = defaultedTemplate(to);
  if (canonicalJson(stripForCompare(a, true)) !== canonicalJson(stripForCompare(b, true))) return [];
  const change = resourceChange(a.spec, b.spec);
  return change.kind === 'recreate' ? change.reasons : [];
}

/** inPlaceSpec between two revisions, cached per pair of data objects (asked once per pod to update), per `resize`. */
const specCaches = [false, true].map(() => new WeakMap<object, WeakMap<object, InPlaceSpec | null>>());
function inPlaceSpecBetween(
  old: ControllerRevision,
  current: ControllerRevision,
  resize: boolean,
): InPlaceSpec | undefined {
  const specCache = specCaches[resize ? 1 : 0]!;
  const cacheable = typeof old.data === 'object' && old.data !== null && typeof current.data === 'object';
  const byOld = cacheable ? specCache.get(old.data as object) : undefined;
  const hit = byOld?.get(current.data as object);
  if (hit !== undefined) return hit ?? undefined;
  const from = templateOfRevision(old);
  const to = templateOfRevision(current);
  const spec = from && to ? inPlaceSpec(from, to, resize) : undefined;
  if (cacheable && current.data !== null) {
    const m = byOld ?? new WeakMap<object, InPlaceSpec | null>();
    m.set(current.data as object, spec ?? null);
    if (!byOld) specCache.set(old.data as object, m);
  }
  return spec;
}

/**
 * canPodInPlaceUpdate: the pod carries the InPlaceUpdateReady gate (only pods created under InPlaceIfPossible do),
 * an old revision with the pod's hash is known, and the change from it to the current revision is in-place-able.
 */
export function canPodInPlaceUpdate(
  pod: Pod,
  current: ControllerRevision,
  oldRevisions: readonly ControllerRevision[],
  resize = false,
): InPlaceSpec | undefined {
  const old = podRevision(pod, oldRevisions);
  return old && inPlaceSpecBetween(old, current, resize);
}

/** The revision a pod was made from, when it may be updated in place (it carries the InPlaceUpdateReady gate). */
export function podRevision(pod: Pod, revisions: readonly ControllerRevision[]): ControllerRevision | undefined {
  if (!hasReadinessGate(pod, IN_PLACE_UPDATE_READY)) return undefined;
  const hash = podRevisionHash(pod);
  return revisions.find((r) => revisionHashLabel(r) === hash);
}

/**
 * The next write of a pod's in-place update. With containers to resize: the pods/resize first ('resize'; free of
 * the maxUnavailable budget unless a container restarts for it), then, while the kubelet actuates it, nothing
 * ('wait', free too: the pod stays Ready), a recreate if its node can never fit it ('infeasible'), and once done the
 * rest: the image update ('update', within the budget: the containers restart) or only the hash label and template
 * metadata ('finish', free). Images change only after the resources: a cgroup v1 node fails a container restarted
 * with both (https://github.com/kubernetes/kubernetes/issues/127356). Without containers to resize: 'update'.
 */
export type InPlaceStep =
  /** `update` builds the write: only for the pods this sync updates, not for every pod asked whether it is free. */
  | { kind: 'resize' | 'update' | 'finish'; update: () => InPlaceUpdate; free: boolean }
  | { kind: 'wait'; progress: ResizeProgress; free: true }
  /** `message` says why: the apiserver refused the pods/resize, or the kubelet found it Infeasible. */
  | { kind: 'infeasible'; message: string; free: false };

export function inPlaceStep(pod: Pod, spec: InPlaceSpec, toHash: string, now: number): InPlaceStep {
  if (spec.resize.length > 0) {
    const refused = resizeRefused(pod, toHash);
    if (refused !== undefined) return { kind: 'infeasible', message: `pods/resize refused: ${refused}`, free: false };
    if (!resizeRequested(pod, spec.resize)) {
      const free = !spec.resize.some((c) => c.restartsContainer);
      return { kind: 'resize', update: () => planResize(pod, spec.resize, toHash), free };
    }
    const progress = resizeProgress(pod);
    if (progress.state === 'infeasible')
      return { kind: 'infeasible', message: `the kubelet reports it Infeasible: ${progress.message}`, free: false };
    if (progress.state !== 'done') return { kind: 'wait', progress, free: true };
  }
  if (spec.images.length > 0 || spec.resize.length === 0)
    return { kind: 'update', update: () => planInPlaceUpdate(pod, spec, toHash, now), free: false };
  return { kind: 'finish', update: () => planResizeFinish(pod, spec, toHash, now), free: true };
}

/** The apiserver's message when it refused the pod's pods/resize to `toHash` (RESIZE_REFUSED_ANNOTATION). */
function resizeRefused(pod: Pod, toHash: string): string | undefined {
  const raw = pod.metadata.annotations?.[RESIZE_REFUSED_ANNOTATION];
  if (!raw) return undefined;
  try {
    const r = JSON.parse(raw) as { revision?: unknown; message?: unknown };
    return r.revision === toHash ? String(r.message ?? '') : undefined;
  } catch {
    return undefined;
  }
}

/** An in-place update of `pod` to `toHash` that writes `patch` only (no readiness flip). */
function podWrite(pod: Pod, toHash: string, kind: 'resize' | 'finish', patch: unknown): InPlaceUpdate {
  return {
    podName: pod.metadata.name ?? '',
    nodeName: pod.spec.nodeName,
    fromHash: podRevisionHash(pod),
    toHash,
    kind,
    patch,
  };
}

function planResize(pod: Pod, containers: readonly ContainerResize[], toHash: string): InPlaceUpdate {
  return podWrite(pod, toHash, 'resize', resizePatch(containers));
}

/** A resize is done: the pod takes the revision (hash label, template metadata, the update's state), Ready kept. */
function planResizeFinish(pod: Pod, spec: InPlaceSpec, toHash: string, now: number): InPlaceUpdate {
  const state: InPlaceUpdateState = {
    revision: toHash,
    updateTimestamp: formatTime(now),
    lastContainerStatuses: {},
    updateImages: false,
  };
  return podWrite(pod, toHash, 'finish', {
    metadata: {
      labels: { ...spec.labels, [CONTROLLER_REVISION_HASH_LABEL]: toHash },
      annotations: { ...spec.annotations, [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify(state) },
    },
  });
}

/**
 * The in-place update of one pod: InPlaceUpdateReady False (reason StartInPlaceUpdate; Ready forced False) on
 * pods/status first, then the pod patch: new images, hash label, template label/annotation changes and the
 * inplace-update-state annotation recording the containers' current imageIDs. When the pod patch is refused
 * (admission, 5xx, timeout) `revertStatusPatch` puts the condition back as it was (True when it was missing).
 */
export function planInPlaceUpdate(pod: Pod, spec: InPlaceSpec, toHash: string, now: number): InPlaceUpdate {
  const ts = formatTime(now);
  const lastContainerStatuses: InPlaceUpdateState['lastContainerStatuses'] = {};
  for (const { name } of spec.images) {
    const cs = pod.status?.containerStatuses?.find((s) => s.name === name);
    lastContainerStatuses[name] = { imageID: cs?.imageID ?? '' };
  }
  const before: PodCondition = getPodCondition(pod, IN_PLACE_UPDATE_READY) ?? {
    type: IN_PLACE_UPDATE_READY,
    status: 'True',
    lastTransitionTime: ts,
  };
  const restartCounts: Record<string, number> = {};
  for (const cs of pod.status?.containerStatuses ?? []) restartCounts[cs.name] = cs.restartCount ?? 0;
  const state: InPlaceUpdateState = {
    revision: toHash,
    updateTimestamp: ts,
    lastContainerStatuses,
    updateImages: spec.images.length > 0,
    restartCounts,
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
    revertStatusPatch: conditionStatusPatch(pod, before),
    patch,
  };
}

/**
 * The inplace-update-state annotation (current key, else the old one): the state, 'invalid' when it does not parse
 * (Kruise's Refresh then returns an error and leaves the condition alone), undefined when absent.
 */
export function getInPlaceUpdateState(pod: Pod): InPlaceUpdateState | 'invalid' | undefined {
  const a = pod.metadata.annotations;
  const raw = a?.[INPLACE_UPDATE_STATE_ANNOTATION] ?? a?.[INPLACE_UPDATE_STATE_ANNOTATION_OLD];
  if (!raw) return undefined;
  try {
    const state = JSON.parse(raw) as unknown;
    return state !== null && typeof state === 'object' ? (state as InPlaceUpdateState) : 'invalid';
  } catch {
    return 'invalid';
  }
}

/**
 * Whether the in-place update recorded in `state` has finished (Kruise's defaultCheckContainersInPlaceUpdateCompleted,
 * https://github.com/openkruise/kruise/blob/master/pkg/util/inplaceupdate/inplace_update_defaults.go): every
 * updated container reports a status, and one whose imageID is still the recorded one must report the spec's image
 * (an image without a tag compared as `:latest`). A container restart on the old image is not the update.
 */
export function inPlaceUpdateCompleted(pod: Pod, state: InPlaceUpdateState): boolean {
  const specImages = new Map<string, string>();
  for (const c of pod.spec.containers ?? []) {
    const image = c.image ?? '';
    specImages.set(c.name, image.split(':').length <= 1 ? `${image}:latest` : image);
  }
  for (const [name, last] of Object.entries(state.lastContainerStatuses ?? {})) {
    const cs = pod.status?.containerStatuses?.find((s) => s.name === name);
    if (!cs) return false;
    if (cs.imageID === last?.imageID && cs.image !== specImages.get(name)) return false;
  }
  return true;
}

/**
 * Refresh (every sync, every pod with the InPlaceUpdateReady gate), as Kruise's inplaceupdate Refresh
 * (https://github.com/openkruise/kruise/blob/master/pkg/util/inplaceupdate/inplace_update.go): the condition is set
 * True unless an in-place update is in flight, i.e. unless the pod records one (inplace-update-state) that has not
 * finished (inPlaceUpdateCompleted). So a pod left False by an update whose pod patch was refused after the
 * condition was written (no state recorded, or only an earlier, finished one) gets True back at the next sync.
 * Returns the pods/status patch, or undefined.
 */
export function inPlaceRefreshPatch(pod: Pod, now: number): unknown {
  if (pod.metadata.deletionTimestamp || !hasReadinessGate(pod, IN_PLACE_UPDATE_READY)) return undefined;
  if (getPodCondition(pod, IN_PLACE_UPDATE_READY)?.status === 'True') return undefined;
  const state = getInPlaceUpdateState(pod);
  if (state === 'invalid') return undefined;
  if (state && !inPlaceUpdateCompleted(pod, state)) return undefined;
  return conditionStatusPatch(pod, {
    type: IN_PLACE_UPDATE_READY,
    status: 'True',
    lastTransitionTime: formatTime(now),
  });
}
