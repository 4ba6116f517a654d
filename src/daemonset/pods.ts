// Daemon pods: construction (newPod = CreatePodTemplate + ReplaceDaemonSetPodNodeNameNodeAffinity + controllerRef;
// newPodForNode, the pod of a node's target revision),
// grouping by node (getNodesToDaemonPods), old/new split (findUpdatedPodsOnNode), lifecycle hooks, KruisePodReady.
import type { DaemonSet } from '../api/types.ts';
import type { OwnerReference, Pod, PodCondition } from '../k8s/types.ts';
import { compareByCreationTimestampAndPhase, formatTime, getPodCondition, hasReadinessGate } from '../k8s/pod.ts';
import { cloneJson } from '../k8s/json.ts';
import { getTargetNodeName, replaceDaemonSetPodNodeNameNodeAffinity } from '../k8s/scheduling.ts';
import {
  CANARY_POD_LABEL,
  CONTROLLER_REVISION_HASH_LABEL,
  DAEMONSET_API_VERSION,
  DAEMONSET_CONTROLLER_SCHEDULER,
  DAEMONSET_KIND,
  DEPRECATED_TEMPLATE_GENERATION_ANNOTATION,
  IN_PLACE_UPDATE_READY,
  KRUISE_POD_READY,
  LIFECYCLE_STATE_LABEL,
  LIFECYCLE_STATE_PREPARING_DELETE,
  LIFECYCLE_TIMESTAMP_ANNOTATION,
  POD_TEMPLATE_GENERATION_LABEL,
} from './constants.ts';
import { templateTolerations } from './eligibility.ts';
import { withResourceOverrides, type ResourceOverrides } from './overrides.ts';
import { isInPlaceIfPossible } from './strategy.ts';

/**
 * --kruise-pod-ready-gate: which new pods get the KruisePodReady readiness gate. 'always' (the default), as Kruise's
 * pod webhook gives it to every pod a Kruise workload owns
 * (https://github.com/openkruise/kruise/blob/master/pkg/webhook/pod/mutating/pod_readiness.go): other Kruise
 * features hold a pod NotReady through it (lifecycle.preDelete.markPodNotReady, ContainerRecreateRequest's
 * unreadyGracePeriodSeconds), also on pods created before they were turned on. Each gate costs one status write per
 * pod created (the condition set True). 'when-needed' saves that write on very large clusters by giving the gate
 * only to pods of DaemonSets with lifecycle.preDelete.markPodNotReady; pods created without it can never be made
 * NotReady by those features.
 */
export type KruisePodReadyGateMode = 'always' | 'when-needed';
/** Kruise's behaviour: the gate on every pod. */
export const DEFAULT_KRUISE_POD_READY_GATE: KruisePodReadyGateMode = 'always';

export interface NewPodOptions {
  /**
   * --assign-pods-by-scheduler (default true): pin the pod with node affinity and let the scheduler bind it;
   * false sets spec.nodeName and schedulerName kubernetes.io/daemonset-controller instead.
   */
  assignPodsByScheduler?: boolean;
  /** --kruise-pod-ready-gate; default DEFAULT_KRUISE_POD_READY_GATE. */
  kruisePodReadyGate?: KruisePodReadyGateMode;
}

/** Whether new pods of `ds` get the KruisePodReady readiness gate (see KruisePodReadyGateMode). */
export function needsKruisePodReadyGate(
  ds: DaemonSet,
  mode: KruisePodReadyGateMode = DEFAULT_KRUISE_POD_READY_GATE,
): boolean {
  return mode === 'always' || ds.spec.lifecycle?.preDelete?.markPodNotReady === true;
}

/**
 * metav1.NewControllerRef(ds): controller and blockOwnerDeletion true. apiVersion stays apps.kruise.io/v1alpha1
 * although v1beta1 is the storage version: Kruise 1.9's DaemonSet controller still reconciles the v1alpha1 type
 * (`controllerKind = appsv1alpha1.SchemeGroupVersion.WithKind("DaemonSet")` in
 * https://github.com/openkruise/kruise/blob/v1.9.0/pkg/controller/daemonset/daemonset_controller.go), so the pods it
 * leaves and the pods we make carry the same reference, and a takeover in either direction patches no pod (claims
 * compare the uid; the garbage collector reads the owner in v1alpha1, a served version).
 */
export function controllerRef(ds: DaemonSet): OwnerReference {
  return {
    apiVersion: DAEMONSET_API_VERSION,
    kind: DAEMONSET_KIND,
    name: ds.metadata.name ?? '',
    uid: ds.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The controllerRef of an object, if any. */
export function getControllerOf(obj: { metadata: { ownerReferences?: OwnerReference[] } }): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}

/** The legacy template generation, when the DaemonSet carries deprecated.daemonset.template.generation. */
export function templateGeneration(ds: DaemonSet): string | undefined {
  const v = ds.metadata.annotations?.[DEPRECATED_TEMPLATE_GENERATION_ANNOTATION];
  return v !== undefined && /^-?\d+$/.test(v) ? v : undefined;
}

/**
 * newPod(ds, nodeName, hash): the pod the controller creates for a node.
 * - spec = template spec + automatic daemon tolerations (AddOrUpdateDaemonPodTolerations);
 * - labels = template labels + controller-revision-hash (+ pod-template-generation for legacy objects);
 * - annotations and finalizers from the template;
 * - required node affinity replaced by one term `matchFields metadata.name In [node]` (user required terms are
 *   dropped: the controller already evaluated them), spec.nodeName left empty for the scheduler;
 * - readiness gate KruisePodReady when needsKruisePodReadyGate (and InPlaceUpdateReady under rollingUpdateType
 *   InPlaceIfPossible), no duplicates;
 * - generateName `<ds>-`, namespace, controller ownerReference;
 * - with `overrides`, the node's per-node resources in the containers they name, recorded in an annotation
 *   (overrides.ts, withResourceOverrides).
 */
export function newPod(
  ds: DaemonSet,
  nodeName: string,
  hash: string,
  opts: NewPodOptions = {},
  overrides?: ResourceOverrides,
): Pod {
  const template = withResourceOverrides(ds.spec.template, overrides);
  const spec = cloneJson(template.spec);
  spec.tolerations = templateTolerations(ds);
  const gates = [...(spec.readinessGates ?? [])];
  const addGate = (conditionType: string) => {
    if (!gates.some((g) => g.conditionType === conditionType)) gates.push({ conditionType });
  };
  if (needsKruisePodReadyGate(ds, opts.kruisePodReadyGate)) addGate(KRUISE_POD_READY);
  if (isInPlaceIfPossible(ds)) addGate(IN_PLACE_UPDATE_READY);
  spec.readinessGates = gates;
  if (opts.assignPodsByScheduler === false) {
    spec.nodeName = nodeName;
    spec.schedulerName = DAEMONSET_CONTROLLER_SCHEDULER;
  } else {
    delete spec.nodeName;
    spec.affinity = replaceDaemonSetPodNodeNameNodeAffinity(spec.affinity, nodeName);
  }

  const labels: Record<string, string> = { ...(template.metadata?.labels ?? {}) };
  const generation = templateGeneration(ds);
  if (generation !== undefined) labels[POD_TEMPLATE_GENERATION_LABEL] = generation;
  if (hash) labels[CONTROLLER_REVISION_HASH_LABEL] = hash;

  const metadata: Pod['metadata'] = {
    generateName: `${ds.metadata.name ?? ''}-`,
    namespace: ds.metadata.namespace,
    labels,
    ownerReferences: [controllerRef(ds)],
  };
  if (template.metadata?.annotations) metadata.annotations = { ...template.metadata.annotations };
  if (template.metadata?.finalizers?.length) metadata.finalizers = [...template.metadata.finalizers];
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec };
}

/**
 * What a node's new pod is built from (targets.ts podTargetOf): the revision it runs, the DaemonSet whose template
 * builds it (the stable revision's beside a canary), and whether it is a canary pod.
 */
export interface PodTarget {
  hash: string;
  ds: DaemonSet;
  canary: boolean;
}

/** The pod to create on `nodeName` for its target revision: newPod, labelled as a canary pod when it is one. */
export function newPodForNode(
  target: PodTarget,
  nodeName: string,
  opts: NewPodOptions = {},
  overrides?: ResourceOverrides,
): Pod {
  const pod = newPod(target.ds, nodeName, target.hash, opts, overrides);
  if (target.canary) pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [CANARY_POD_LABEL]: 'true' };
  return pod;
}

/** The pod's controller-revision-hash label ('' when absent). */
export function podRevisionHash(pod: Pod): string {
  return pod.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? '';
}

/**
 * util.IsPodUpdated: the pod's hash label is the current hash. (Upstream also compares pod-template-generation
 * against a printed pointer, which never matches; that dead branch is not reproduced.)
 */
export function isPodUpdated(pod: Pod, hash: string): boolean {
  return podRevisionHash(pod) === hash;
}

export type NodeToDaemonPods = Map<string, Pod[]>;

/**
 * getNodesToDaemonPods: pods grouped by target node (spec.nodeName, else the matchFields metadata.name affinity);
 * pods targeting no node are ignored. Terminal pods that are also being deleted are left out (the kubelet is done
 * with them) unless includeDeletedTerminal. Each node's pods are sorted scheduled-first, oldest-first, by name.
 */
export function getNodesToDaemonPods(pods: readonly Pod[], includeDeletedTerminal = false): NodeToDaemonPods {
  const out: NodeToDaemonPods = new Map();
  for (const pod of pods) {
    const phase = pod.status?.phase;
    if (!includeDeletedTerminal && pod.metadata.deletionTimestamp && (phase === 'Succeeded' || phase === 'Failed')) {
      continue;
    }
    const nodeName = getTargetNodeName(pod.spec);
    if (!nodeName) continue;
    const list = out.get(nodeName);
    if (list) list.push(pod);
    else out.set(nodeName, [pod]);
  }
  for (const list of out.values()) if (list.length > 1) list.sort(compareByCreationTimestampAndPhase);
  return out;
}

export interface UpdatedPodsOnNode {
  newPod?: Pod;
  oldPod?: Pod;
  /** False when there is more than one new or more than one old non-terminating pod (manage prunes those). */
  ok: boolean;
}

/** findUpdatedPodsOnNode: the single new and single old non-terminating pod on a node. */
export function findUpdatedPodsOnNode(podsOnNode: readonly Pod[] | undefined, hash: string): UpdatedPodsOnNode {
  let newPod: Pod | undefined;
  let oldPod: Pod | undefined;
  for (const pod of podsOnNode ?? []) {
    if (pod.metadata.deletionTimestamp) continue;
    if (isPodUpdated(pod, hash)) {
      if (newPod) return { ok: false };
      newPod = pod;
    } else {
      if (oldPod) return { ok: false };
      oldPod = pod;
    }
  }
  return { newPod, oldPod, ok: true };
}

// ---- lifecycle (kruise pkg/util/lifecycle) ----

export interface LifecycleHook {
  labelsHandler?: Record<string, string>;
  finalizersHandler?: string[];
  markPodNotReady?: boolean;
}

export function podLifecycleState(pod: Pod | undefined): string | undefined {
  return pod?.metadata.labels?.[LIFECYCLE_STATE_LABEL];
}

/** isPodPreDeleting: lifecycle state PreparingDelete. */
export function isPodPreDeleting(pod: Pod | undefined): boolean {
  return pod !== undefined && podLifecycleState(pod) === LIFECYCLE_STATE_PREPARING_DELETE;
}

/** lifecycle.IsPodHooked: any handler label with exactly the listed value, or any handler finalizer present. */
export function isPodHooked(hook: LifecycleHook | undefined, pod: Pod): boolean {
  if (!hook) return false;
  const labels = pod.metadata.labels ?? {};
  for (const [k, v] of Object.entries(hook.labelsHandler ?? {})) {
    if (Object.hasOwn(labels, k) && labels[k] === v) return true;
  }
  const finalizers = pod.metadata.finalizers ?? [];
  return (hook.finalizersHandler ?? []).some((f) => finalizers.includes(f));
}

// ---- KruisePodReady (kruise pkg/util/podreadiness, pkg/controller/podreadiness) ----

/** Who holds KruisePodReady False: the condition message is a JSON list of these. */
export interface NotReadyHolder {
  userAgent: string;
  key: string;
}

export const PRE_DELETE_HOLDER: NotReadyHolder = { userAgent: 'Lifecycle', key: 'preDeleteHook' };

function parseHolders(message: string | undefined): NotReadyHolder[] {
  if (!message) return [];
  try {
    const v: unknown = JSON.parse(message);
    return Array.isArray(v) ? (v as NotReadyHolder[]).filter((h) => h && typeof h.userAgent === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * Strategic-merge body for pods/status setting condition `type` (conditions merge by type), plus Ready False with
 * reason ReadinessGatesNotReady when `forceNotReady` and the pod is currently Ready (as Kruise does so the pod
 * leaves endpoints at once rather than after the kubelet's next sync).
 */
export function conditionStatusPatch(pod: Pod, condition: PodCondition, forceNotReady = false): unknown {
  const conditions: PodCondition[] = [condition];
  const ready = getPodCondition(pod, 'Ready');
  if (forceNotReady && ready?.status === 'True') {
    conditions.push({
      type: 'Ready',
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message: `the status of pod readiness gate "${condition.type}" is not "True", but ${condition.status}`,
      lastTransitionTime: condition.lastTransitionTime,
    });
  }
  return { status: { conditions } };
}

/**
 * The KruisePodReady condition the controller sets True once the pod exists (pod-readiness controller): needed for
 * pods with the KruisePodReady gate and no such condition yet. Undefined when nothing is to be done.
 */
export function kruisePodReadyPatch(pod: Pod, now: number): unknown {
  if (pod.metadata.deletionTimestamp) return undefined;
  if (!hasReadinessGate(pod, KRUISE_POD_READY)) return undefined;
  if (getPodCondition(pod, KRUISE_POD_READY)) return undefined;
  return conditionStatusPatch(pod, { type: KRUISE_POD_READY, status: 'True', lastTransitionTime: formatTime(now) });
}

/**
 * podReadinessControl.AddNotReadyKey: KruisePodReady False with `holder` recorded in the JSON message list.
 * Undefined when the pod lacks the gate (no-op, as Kruise) or already lists the holder.
 */
export function addNotReadyKeyPatch(pod: Pod, holder: NotReadyHolder, now: number): unknown {
  if (!hasReadinessGate(pod, KRUISE_POD_READY)) return undefined;
  const current = getPodCondition(pod, KRUISE_POD_READY);
  const holders = parseHolders(current?.message);
  if (current?.status === 'False' && holders.some((h) => h.userAgent === holder.userAgent && h.key === holder.key)) {
    return undefined;
  }
  const next = [...holders.filter((h) => !(h.userAgent === holder.userAgent && h.key === holder.key)), holder];
  next.sort((a, b) => (a.userAgent + a.key < b.userAgent + b.key ? -1 : 1));
  const lastTransitionTime =
    current?.status === 'False' && current.lastTransitionTime ? current.lastTransitionTime : formatTime(now);
  return conditionStatusPatch(
    pod,
    { type: KRUISE_POD_READY, status: 'False', message: JSON.stringify(next), lastTransitionTime },
    true,
  );
}

/** Metadata patch (strategic merge) entering lifecycle state PreparingDelete with its timestamp annotation. */
export function preparingDeletePatch(now: number): unknown {
  return {
    metadata: {
      labels: { [LIFECYCLE_STATE_LABEL]: LIFECYCLE_STATE_PREPARING_DELETE },
      annotations: { [LIFECYCLE_TIMESTAMP_ANNOTATION]: formatTime(now) },
    },
  };
}
