// In-place resource resize of daemon pods (Kruise's InPlaceWorkloadVerticalScaling, through Kubernetes' pods/resize
// subresource, GA since 1.35: https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/),
// pure: which resource changes between two templates can be made in place, the patch that makes them, and how far a
// pod's resize has got.
//
// The rules are Kruise's (https://github.com/openkruise/kruise/blob/master/pkg/util/inplaceupdate/inplace_update_vertical.go,
// NativeVerticalUpdate): only the cpu and memory requests and limits of containers change in place; another
// resource name (a GPU, ephemeral-storage, hugepages), a request or limit added or removed, or a change of the pod's
// QoS class recreates the pod, because the apiserver refuses them on pods/resize (ValidatePodResize in
// https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/core/validation/validation.go).
import { compareQuantity, parseQuantity, quantityFromJSON, type Quantity } from '../api/quantity.ts';
import type { Container, Pod, PodSpec } from '../k8s/types.ts';

/** The resources a pods/resize may change. */
export const RESIZABLE_RESOURCES = ['cpu', 'memory'] as const;

export type ResourceList = Record<string, string>;
export interface ResourceRequirements {
  requests?: ResourceList;
  limits?: ResourceList;
  claims?: unknown[];
}
export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** One container's resize: its resources as the pod must hold them, and whether the kubelet restarts it for them. */
export interface ContainerResize {
  name: string;
  resources: ResourceRequirements;
  /** A changed resource's resizePolicy is RestartContainer: the container restarts, the pod turns unready. */
  restartsContainer: boolean;
}

/** What a template change does to a pod's resources. */
export type ResourceChange =
  | { kind: 'none' }
  | { kind: 'resize'; containers: ContainerResize[] }
  /** Each reason starts with the field path that forces the recreate. */
  | { kind: 'recreate'; reasons: string[] };

const resourcesOf = (c: Container | undefined): ResourceRequirements =>
  (c?.resources as ResourceRequirements | undefined) ?? {};

/**
 * The resources a pod created from this container holds: requests default to the limits where unset, as the
 * apiserver defaults a pod (SetDefaults_Pod in https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/core/v1/defaults.go),
 * which a template is not.
 */
export function podResources(c: Container | undefined): ResourceRequirements {
  const r = resourcesOf(c);
  if (!r.limits) return r;
  const requests = { ...r.requests };
  for (const [name, q] of Object.entries(r.limits)) if (!(name in requests)) requests[name] = q;
  return { ...r, requests };
}

const quantity = (s: string | undefined): Quantity | undefined => {
  const q = s === undefined ? undefined : quantityFromJSON(s);
  return typeof q === 'string' ? undefined : q;
};

/** Whether two quantities are the same amount ("1" and "1000m" are); an unparsable one equals only its own text. */
export function sameQuantity(a: string | undefined, b: string | undefined): boolean {
  if (a === b) return true;
  const x = quantity(a);
  const y = quantity(b);
  return x !== undefined && y !== undefined && compareQuantity(x, y) === 0;
}

function addQuantity(a: Quantity, b: Quantity): Quantity {
  const exp = Math.min(a.exp, b.exp);
  const unscaled = a.unscaled * 10n ** BigInt(a.exp - exp) + b.unscaled * 10n ** BigInt(b.exp - exp);
  return { unscaled, exp, format: a.format };
}

const ZERO = parseQuantity('0');

/**
 * The pod's QoS class, as ComputePodQOS (https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/core/helper/qos/qos.go)
 * computes it from containers and init containers (pod-level resources, when set, instead): only cpu and memory
 * count; Guaranteed when every container limits both and the summed requests equal the summed limits.
 */
export function podQOSClass(spec: PodSpec): QOSClass {
  const requests = new Map<string, Quantity>();
  const limits = new Map<string, Quantity>();
  let guaranteed = true;
  const add = (into: Map<string, Quantity>, list: ResourceList | undefined, found?: Set<string>) => {
    for (const [name, text] of Object.entries(list ?? {})) {
      if (!(RESIZABLE_RESOURCES as readonly string[]).includes(name)) continue;
      const q = quantity(text);
      if (!q || compareQuantity(q, ZERO) <= 0) continue;
      found?.add(name);
      const before = into.get(name);
      into.set(name, before ? addQuantity(before, q) : q);
    }
  };
  const podLevel = spec.resources as ResourceRequirements | undefined;
  const sources = podLevel ? [podLevel] : [...spec.containers, ...(spec.initContainers ?? [])].map(podResources);
  for (const r of sources) {
    const found = new Set<string>();
    add(requests, r.requests);
    add(limits, r.limits, found);
    if (!RESIZABLE_RESOURCES.every((n) => found.has(n))) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, req] of requests) {
      const lim = limits.get(name);
      if (!lim || compareQuantity(lim, req) !== 0) guaranteed = false;
    }
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** The field-path reasons one container's resources cannot change in place, and whether any resizable one changes. */
function containerChange(path: string, from: ResourceRequirements, to: ResourceRequirements) {
  const reasons: string[] = [];
  let changed = false;
  const names = new Set<string>();
  for (const kind of ['requests', 'limits'] as const) {
    const a = from[kind] ?? {};
    const b = to[kind] ?? {};
    for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const field = `${path}.resources.${kind}[${name}]`;
      if (!(name in a)) reasons.push(`${field}: added; a pod's ${kind} can only be changed, not added, in place`);
      else if (!(name in b)) reasons.push(`${field}: removed; a pod's ${kind} cannot be removed in place`);
      else if (sameQuantity(a[name], b[name])) continue;
      else if (!(RESIZABLE_RESOURCES as readonly string[]).includes(name))
        reasons.push(`${field}: only cpu and memory are resized in place`);
      else {
        changed = true;
        names.add(name);
      }
    }
  }
  if (JSON.stringify(from.claims ?? []) !== JSON.stringify(to.claims ?? []))
    reasons.push(`${path}.resources.claims: resource claims are not resized in place`);
  return { reasons, changed, names };
}

/** Whether the container's resizePolicy restarts it for one of these resources (the default is NotRequired). */
function restartsFor(c: Container, names: Set<string>): boolean {
  const policy = (c.resizePolicy as { resourceName?: string; restartPolicy?: string }[] | undefined) ?? [];
  return policy.some((p) => p.resourceName && names.has(p.resourceName) && p.restartPolicy === 'RestartContainer');
}

/**
 * What changing a pod's template from `from` to `to` does to its resources. The caller has checked that nothing
 * but resources (and what else an in-place update may change) differs, containers by the same names in the same
 * order.
 */
export function resourceChange(from: PodSpec, to: PodSpec): ResourceChange {
  const reasons: string[] = [];
  const containers: ContainerResize[] = [];
  for (const [i, c] of to.containers.entries()) {
    const path = `spec.template.spec.containers[${i}]`;
    const change = containerChange(path, podResources(from.containers[i]), podResources(c));
    reasons.push(...change.reasons);
    if (change.changed)
      containers.push({ name: c.name, resources: podResources(c), restartsContainer: restartsFor(c, change.names) });
  }
  for (const [i, c] of (to.initContainers ?? []).entries()) {
    const change = containerChange(
      `spec.template.spec.initContainers[${i}]`,
      podResources(from.initContainers?.[i]),
      podResources(c),
    );
    if (change.changed || change.reasons.length > 0)
      reasons.push(`spec.template.spec.initContainers[${i}].resources: init containers are not resized in place`);
  }
  if (JSON.stringify(from.resources ?? null) !== JSON.stringify(to.resources ?? null))
    reasons.push('spec.template.spec.resources: pod-level resources are not resized in place');
  const qosBefore = podQOSClass(from);
  const qosAfter = podQOSClass(to);
  if (qosBefore !== qosAfter)
    reasons.push(`spec.template.spec.containers: the pod's QoS class would change from ${qosBefore} to ${qosAfter}`);
  if (reasons.length > 0) return { kind: 'recreate', reasons };
  return containers.length > 0 ? { kind: 'resize', containers } : { kind: 'none' };
}

/**
 * The pods/resize patch (strategic merge, containers merged by name): only the containers that change, with their
 * requests and limits. A JSON merge patch would replace the whole containers list.
 */
export function resizePatch(containers: readonly ContainerResize[]): unknown {
  return {
    spec: {
      containers: containers.map(({ name, resources }) => ({
        name,
        resources: {
          ...(resources.requests ? { requests: resources.requests } : {}),
          ...(resources.limits ? { limits: resources.limits } : {}),
        },
      })),
    },
  };
}

/** Whether the pod's spec already holds these resources (the resize was sent). */
export function resizeRequested(pod: Pod, containers: readonly ContainerResize[]): boolean {
  return containers.every((want) =>
    sameResources(resourcesOf(pod.spec.containers.find((c) => c.name === want.name)), want.resources),
  );
}

function sameResources(a: ResourceRequirements, b: ResourceRequirements): boolean {
  for (const kind of ['requests', 'limits'] as const)
    for (const name of RESIZABLE_RESOURCES) if (!sameQuantity(a[kind]?.[name], b[kind]?.[name])) return false;
  return true;
}

/**
 * How far the kubelet has got with the pod's resize (https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/#pod-resize-status):
 * `PodResizePending` Deferred (waits for room on the node, retried by the kubelet) or Infeasible (never fits this
 * node); `PodResizeInProgress` (actuating; reason Error with a message when that failed, e.g. a memory limit below
 * usage); done once no such condition is left, the kubelet has observed the pod's generation, and every container's
 * status reports the spec's cpu and memory (the rule of upstream's e2e, WaitForPodResizeActuation in
 * https://github.com/kubernetes/kubernetes/blob/master/test/e2e/common/node/framework/podresize/resize.go).
 */
export type ResizeProgress =
  | { state: 'done' }
  | { state: 'deferred'; message: string }
  | { state: 'infeasible'; message: string }
  | { state: 'in-progress'; message?: string };

export function resizeProgress(pod: Pod): ResizeProgress {
  const conditions = pod.status?.conditions ?? [];
  const pending = conditions.find((c) => c.type === 'PodResizePending' && c.status === 'True');
  if (pending) {
    const message = pending.message ?? '';
    return pending.reason === 'Infeasible' ? { state: 'infeasible', message } : { state: 'deferred', message };
  }
  const inProgress = conditions.find((c) => c.type === 'PodResizeInProgress' && c.status === 'True');
  if (inProgress)
    return inProgress.reason === 'Error'
      ? { state: 'in-progress', message: inProgress.message ?? '' }
      : { state: 'in-progress' };
  const observed = pod.status?.observedGeneration as number | undefined;
  const generation = pod.metadata.generation;
  if (observed !== undefined && generation !== undefined && observed < generation) return { state: 'in-progress' };
  const statuses = pod.status?.containerStatuses ?? [];
  for (const c of pod.spec.containers) {
    const s = statuses.find((st) => st.name === c.name);
    const actual = s?.resources as ResourceRequirements | undefined;
    if (!actual || !sameResources(actual, resourcesOf(c))) return { state: 'in-progress' };
  }
  return { state: 'done' };
}
