// Image pre-download (docs/kruise-rules.md#image-pre-download) without kruise-daemon: while a rollout that does
// not update every node at once is in progress, the new images are pulled ahead on the nodes still running old pods,
// by a short-lived "pull pod" per node: pinned to the node (spec.nodeName), one container per new image running a no-op
// command, restartPolicy Never, activeDeadlineSeconds = the pull timeout. At most `parallelism` pull pods run at a
// time, in the order the rollout will reach the nodes. A finished pull pod is deleted and its node remembered on
// the node's old daemon pod (annotation, so the memory goes away with the pod); all pull pods are cancelled when
// the revision changes or no old pod needs the images any more. Pure: the shell creates and deletes what this plans.
import type { DaemonSet } from '../api/types.ts';
import { cloneJson } from '../k8s/json.ts';
import type { Container, ControllerRevision, KubeObject, Pod } from '../k8s/types.ts';
import type { SyncContext } from './context.ts';
import {
  CONTROLLER_REVISION_HASH_LABEL,
  IMAGE_PREDOWNLOAD_CREATED_LABEL,
  IMAGE_PREDOWNLOAD_IGNORED_LABEL,
  IMAGE_PREDOWNLOAD_PARALLELISM_ANNOTATION,
  IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS_ANNOTATION,
  IMAGE_PREDOWNLOADED_ANNOTATION,
  IMAGE_PULL_POD_DAEMONSET_UID_LABEL,
  IMAGE_PULL_POD_REVISION_LABEL,
} from './constants.ts';
import { templateTolerations } from './eligibility.ts';
import { templateOfRevision } from './inplace.ts';
import { controllerRef, findUpdatedPodsOnNode } from './pods.ts';
import type { ImagePreDownloadPlan, ImagePullJobPlan } from './plan-types.ts';
import { hasUpdateSelector, isRollingUpdate, partitionCount, rollingUpdateBudget } from './strategy.ts';
import { nodesToUpdate } from './update.ts';
import { cmp } from './context.ts';
import { FAILED_PRE_DOWNLOAD_IMAGE_REASON } from './events.ts';

/** The no-op a pull pod's containers run: the image is pulled before the command starts (or fails to). */
export const PULL_POD_COMMAND = ['/bin/sh', '-c', 'exit 0'];
export const DEFAULT_PREDOWNLOAD_PARALLELISM = 1;
export const DEFAULT_PREDOWNLOAD_TIMEOUT_SECONDS = 300;

function positiveIntAnnotation(ds: DaemonSet, key: string, fallback: number): number {
  const v = ds.metadata.annotations?.[key];
  if (v === undefined || !/^\d+$/.test(v.trim())) return fallback;
  const n = Number(v.trim());
  return n >= 1 ? n : fallback;
}

/** apps.kruise.io/image-predownload-parallelism: an integer >= 1, else 1 (non-integers ignored, as Kruise). */
export function preDownloadParallelism(ds: DaemonSet): number {
  return positiveIntAnnotation(ds, IMAGE_PREDOWNLOAD_PARALLELISM_ANNOTATION, DEFAULT_PREDOWNLOAD_PARALLELISM);
}

export function preDownloadTimeoutSeconds(ds: DaemonSet): number {
  return positiveIntAnnotation(ds, IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS_ANNOTATION, DEFAULT_PREDOWNLOAD_TIMEOUT_SECONDS);
}

/**
 * The rollout replaces every old pod in one step, so pulling ahead gains nothing (Kruise: partition 0 and
 * maxUnavailable >= desired; here also maxSurge >= desired, and never with a selector). OnDelete never updates
 * all at once (Kruise dereferences a nil rollingUpdate there; docs/differences.md).
 */
export function rolloutUpdatesAllAtOnce(ds: DaemonSet, desired: number): boolean {
  if (!isRollingUpdate(ds) || hasUpdateSelector(ds) || partitionCount(ds, desired) > 0) return false;
  try {
    const { maxSurge, maxUnavailable } = rollingUpdateBudget(ds, desired);
    return maxUnavailable >= desired || maxSurge >= desired;
  } catch {
    return false;
  }
}

/** The UID of the DaemonSet a pull pod pulls for; undefined for any other pod. */
export function imagePullPodDaemonSetUID(pod: Pod): string | undefined {
  return pod.metadata.labels?.[IMAGE_PULL_POD_DAEMONSET_UID_LABEL];
}

export function isImagePullPod(pod: Pod): boolean {
  return imagePullPodDaemonSetUID(pod) !== undefined;
}

/** The current template's containers whose image the old pod does not run (what its node must pull). */
export function imagesToPull(ds: DaemonSet, oldPod: Pod): Container[] {
  const running = new Set((oldPod.spec.containers ?? []).map((c) => c.image));
  return (ds.spec.template.spec.containers ?? []).filter((c) => c.image && !running.has(c.image));
}

/** The pull pod for one node: the new images with a no-op command, pinned to the node, not a daemon pod. */
export function newImagePullPod(ds: DaemonSet, nodeName: string, hash: string, images: Container[]): Pod {
  const t = ds.spec.template.spec;
  const spec: Pod['spec'] = {
    nodeName,
    restartPolicy: 'Never',
    activeDeadlineSeconds: preDownloadTimeoutSeconds(ds),
    terminationGracePeriodSeconds: 1,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    tolerations: templateTolerations(ds),
    containers: images.map((c) => ({
      name: c.name,
      image: c.image,
      command: PULL_POD_COMMAND,
      ...(c.imagePullPolicy !== undefined ? { imagePullPolicy: c.imagePullPolicy } : {}),
      ...(c.securityContext !== undefined ? { securityContext: c.securityContext } : {}),
    })),
  };
  // What the daemon pods need to pull and to be admitted, the pull pod needs too.
  for (const key of ['imagePullSecrets', 'securityContext', 'priorityClassName', 'runtimeClassName'] as const) {
    if (t[key] !== undefined) spec[key] = cloneJson(t[key]);
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${(ds.metadata.name ?? '').slice(0, 200)}-predownload-`,
      namespace: ds.metadata.namespace,
      labels: { [IMAGE_PULL_POD_DAEMONSET_UID_LABEL]: ds.metadata.uid ?? '', [IMAGE_PULL_POD_REVISION_LABEL]: hash },
      // Garbage-collected with the DaemonSet, but not controlled by it: never mistaken for a daemon pod.
      ownerReferences: [{ ...controllerRef(ds), controller: false, blockOwnerDeletion: false }],
    },
    spec,
  };
}

/** Every container reports an image ID (pulled), or the pod ended. */
function pullFinished(pod: Pod): { done: boolean; failed: boolean } {
  const statuses = pod.status?.containerStatuses ?? [];
  const pulled = pod.spec.containers.every((c) => statuses.some((s) => s.name === c.name && s.imageID));
  const phase = pod.status?.phase;
  if (pulled) return { done: true, failed: false };
  if (phase === 'Failed' || phase === 'Succeeded') return { done: true, failed: true };
  return { done: false, failed: false };
}

/**
 * planImagePreDownload: which pull pods to create and delete now. Nodes needing a pull: eligible, running an old
 * daemon pod (no new one yet) whose containers lack some of the new images, not yet marked done for this
 * revision. Order: the nodes the rollout may update next (its partition/selector filter order), then the rest in
 * descending name order (the order later steps reach them).
 */
export function planImagePreDownload(ctx: SyncContext, pullPods: readonly Pod[]): ImagePreDownloadPlan {
  const { ds, hash } = ctx;
  const out: ImagePreDownloadPlan = { creates: [], deletes: [], podPatches: [], events: [] };
  const needing = new Map<string, { oldPod: Pod; images: Container[] }>();
  if (!ds.metadata.deletionTimestamp && !rolloutUpdatesAllAtOnce(ds, ctx.desired)) {
    for (const node of ctx.nodes) {
      const name = node.metadata.name ?? '';
      if (!ctx.eligibility.get(name)?.shouldRun) continue;
      const { newPod, oldPod, ok } = findUpdatedPodsOnNode(ctx.nodeToDaemonPods.get(name), hash);
      if (!ok || newPod || !oldPod) continue;
      if (oldPod.metadata.annotations?.[IMAGE_PREDOWNLOADED_ANNOTATION] === hash) continue;
      const images = imagesToPull(ds, oldPod);
      if (images.length > 0) needing.set(name, { oldPod, images });
    }
  }

  /** Nodes that get no new pull pod this sync; `pulling` of them count against the parallelism. */
  const busy = new Set<string>();
  let pulling = 0;
  for (const pod of pullPods) {
    const nodeName = pod.spec.nodeName ?? '';
    if (pod.metadata.deletionTimestamp) {
      // Still going away: wait for it rather than start another pull there.
      busy.add(nodeName);
      pulling++;
      continue;
    }
    const del = (reason: ImagePreDownloadPlan['deletes'][number]['reason']) =>
      out.deletes.push({ podName: pod.metadata.name ?? '', uid: pod.metadata.uid, nodeName, reason });
    const target = needing.get(nodeName);
    if (pod.metadata.labels?.[IMAGE_PULL_POD_REVISION_LABEL] !== hash || !target || busy.has(nodeName)) {
      del('Cancelled');
      continue;
    }
    busy.add(nodeName);
    const { done, failed } = pullFinished(pod);
    if (!done) {
      pulling++;
      continue;
    }
    del(failed ? 'PullFailed' : 'Pulled');
    if (failed) {
      out.events.push({
        type: 'Warning',
        reason: FAILED_PRE_DOWNLOAD_IMAGE_REASON,
        message: `failed to pre-download images ${target.images.map((c) => c.image).join(', ')} on node ${nodeName} (pod ${pod.metadata.name})`,
      });
    }
    // Done either way: a failed pull is not retried for this revision (the rollout pulls again anyway).
    out.podPatches.push({
      podName: target.oldPod.metadata.name ?? '',
      patchType: 'strategic',
      patch: { metadata: { annotations: { [IMAGE_PREDOWNLOADED_ANNOTATION]: hash } } },
      reason: 'ImagePreDownloaded',
    });
  }

  let room = preDownloadParallelism(ds) - pulling;
  if (room <= 0 || needing.size === 0) return out;
  const first = nodesToUpdate(ctx);
  const rest = [...needing.keys()].sort(cmp).reverse();
  for (const nodeName of new Set([...first, ...rest])) {
    if (room <= 0) break;
    const target = needing.get(nodeName);
    if (!target || busy.has(nodeName)) continue;
    out.creates.push({ nodeName, pod: newImagePullPod(ds, nodeName, hash, target.images) });
    room--;
  }
  return out;
}

// ---- ImagePullJob mode (--image-predownload imagepulljob, when Kruise's ImagePullJob CRD is installed) ----

export const IMAGE_PULL_JOB_API_VERSION = 'apps.kruise.io/v1alpha1';
export const IMAGE_PULL_JOB_KIND = 'ImagePullJob';
/** Value of the revision's pre-predownload-created label once its jobs were deleted after the rollout. */
export const IMAGE_PULL_JOBS_CLEANED = 'cleaned';

/** Containers of the current template whose image differs from the same-named container of every old revision. */
function changedContainers(current: ControllerRevision, old: readonly ControllerRevision[]): Container[] {
  const before = old.map((r) => templateOfRevision(r)?.spec?.containers ?? []);
  return (templateOfRevision(current)?.spec?.containers ?? []).filter(
    (c) => c.image && before.some((cs) => cs.find((o) => o.name === c.name)?.image !== c.image),
  );
}

/**
 * One ImagePullJob per changed container image, as Kruise names and shapes it, without its podSelector and hash-label
 * bugs (docs/differences.md).
 */
export function newImagePullJob(ds: DaemonSet, revisionName: string, hash: string, c: Container): KubeObject {
  const selector = ds.spec.selector ?? {};
  const t = ds.spec.template;
  const pullSecrets = ((t.spec.imagePullSecrets ?? []) as { name?: string }[]).flatMap((s) => (s.name ? [s.name] : []));
  return {
    apiVersion: IMAGE_PULL_JOB_API_VERSION,
    kind: IMAGE_PULL_JOB_KIND,
    metadata: {
      name: `${revisionName}-${c.name}`.slice(0, 253),
      namespace: ds.metadata.namespace,
      labels: { [IMAGE_PULL_POD_DAEMONSET_UID_LABEL]: ds.metadata.uid ?? '', [CONTROLLER_REVISION_HASH_LABEL]: hash },
      ownerReferences: [controllerRef(ds)],
    },
    spec: {
      image: c.image,
      ...(pullSecrets.length > 0 ? { pullSecrets } : {}),
      // Pods not yet on this revision: the hash, which is what pods carry (Kruise uses the revision name).
      podSelector: {
        ...(selector.matchLabels ? { matchLabels: selector.matchLabels } : {}),
        matchExpressions: [
          ...(selector.matchExpressions ?? []),
          { key: CONTROLLER_REVISION_HASH_LABEL, operator: 'NotIn', values: [hash] },
        ],
      },
      parallelism: preDownloadParallelism(ds),
      pullPolicy: { backoffLimit: 1, timeoutSeconds: preDownloadTimeoutSeconds(ds) },
      completionPolicy: { type: 'Always', ttlSecondsAfterFinished: 600 },
      sandboxConfig: {
        ...(t.metadata?.labels ? { labels: t.metadata.labels } : {}),
        ...(t.metadata?.annotations ? { annotations: t.metadata.annotations } : {}),
      },
    },
  };
}

/**
 * Kruise's pre-download with ImagePullJobs (docs/kruise-rules.md#image-pre-download), state kept in labels of the
 * current ControllerRevision: rollout in progress and neither pre-predownload-created nor image-predownload-ignored set -> create one job per
 * changed image and label it created (or ignored when the rollout updates every node at once, or no image
 * changed); rollout complete and created "true" -> delete the DaemonSet's jobs and mark the label cleaned, so that
 * is done once rather than at every sync.
 */
export function planImagePullJobs(
  ctx: SyncContext,
  current: ControllerRevision,
  old: readonly ControllerRevision[],
): ImagePullJobPlan {
  const { ds, hash } = ctx;
  const out: ImagePullJobPlan = { revisionName: current.metadata.name ?? '', creates: [], deleteAll: false };
  const labels = current.metadata.labels ?? {};
  const created = labels[IMAGE_PREDOWNLOAD_CREATED_LABEL];
  const inProgress = ctx.nodes.some((node) => {
    const name = node.metadata.name ?? '';
    if (!ctx.eligibility.get(name)?.shouldRun) return false;
    const { newPod, oldPod, ok } = findUpdatedPodsOnNode(ctx.nodeToDaemonPods.get(name), hash);
    return !ok || (!newPod && oldPod !== undefined);
  });
  if (!inProgress) {
    if (created === 'true') {
      out.deleteAll = true;
      out.revisionLabels = { [IMAGE_PREDOWNLOAD_CREATED_LABEL]: IMAGE_PULL_JOBS_CLEANED };
    }
    return out;
  }
  if (created !== undefined || labels[IMAGE_PREDOWNLOAD_IGNORED_LABEL] !== undefined) return out;
  const containers = changedContainers(current, old);
  if (rolloutUpdatesAllAtOnce(ds, ctx.desired) || containers.length === 0) {
    out.revisionLabels = { [IMAGE_PREDOWNLOAD_IGNORED_LABEL]: 'true' };
    return out;
  }
  out.creates = containers.map((c) => newImagePullJob(ds, current.metadata.name ?? '', hash, c));
  out.revisionLabels = { [IMAGE_PREDOWNLOAD_CREATED_LABEL]: 'true' };
  return out;
}
