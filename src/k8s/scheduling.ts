// Scheduling predicates the DaemonSet controller evaluates itself: taints vs tolerations
// (k8s.io/api/core/v1 toleration.go, component-helpers v1helper), required node affinity and nodeSelector
// (component-helpers nodeaffinity), and the daemon-pod helpers of pkg/controller/daemon/util.
import type {
  Affinity,
  Node,
  NodeSelector,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  PodSpec,
  Taint,
  Toleration,
} from './types.ts';

/** The only field a node selector term's matchFields may use. */
export const OBJECT_NAME_FIELD = 'metadata.name';

// Taint keys of k8s.io/api/core/v1 well_known_taints.go.
export const TAINT_NODE_NOT_READY = 'node.kubernetes.io/not-ready';
export const TAINT_NODE_UNREACHABLE = 'node.kubernetes.io/unreachable';
export const TAINT_NODE_UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';
export const TAINT_NODE_MEMORY_PRESSURE = 'node.kubernetes.io/memory-pressure';
export const TAINT_NODE_DISK_PRESSURE = 'node.kubernetes.io/disk-pressure';
export const TAINT_NODE_NETWORK_UNAVAILABLE = 'node.kubernetes.io/network-unavailable';
export const TAINT_NODE_PID_PRESSURE = 'node.kubernetes.io/pid-pressure';

/** Toleration.ToleratesTaint: effect (empty = all), key (empty = all), then Equal compares values, Exists does not. */
export function toleratesTaint(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? '') {
    case '':
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/** v1helper.FindMatchingUntoleratedTaint: the first taint passing `filter` that no toleration tolerates. */
export function findMatchingUntoleratedTaint(
  taints: readonly Taint[] | undefined,
  tolerations: readonly Toleration[] | undefined,
  filter: (t: Taint) => boolean,
): Taint | undefined {
  for (const taint of taints ?? []) {
    if (!filter(taint)) continue;
    if (!(tolerations ?? []).some((tol) => toleratesTaint(tol, taint))) return taint;
  }
  return undefined;
}

/** Toleration.MatchToleration: same key, operator, value and effect (tolerationSeconds ignored). */
function sameToleration(a: Toleration, b: Toleration): boolean {
  return (
    (a.key ?? '') === (b.key ?? '') &&
    (a.operator ?? '') === (b.operator ?? '') &&
    (a.value ?? '') === (b.value ?? '') &&
    (a.effect ?? '') === (b.effect ?? '')
  );
}

function deepEqualToleration(a: Toleration, b: Toleration): boolean {
  return sameToleration(a, b) && a.tolerationSeconds === b.tolerationSeconds;
}

/**
 * v1helper.AddOrUpdateTolerationInPodSpec: replaces a matching toleration (so its tolerationSeconds is lost),
 * otherwise appends. Returns a new array; the input is not modified.
 */
export function addOrUpdateToleration(tolerations: readonly Toleration[] | undefined, t: Toleration): Toleration[] {
  const out: Toleration[] = [];
  let updated = false;
  for (const existing of tolerations ?? []) {
    if (sameToleration(t, existing)) {
      if (deepEqualToleration(t, existing)) return [...(tolerations ?? [])];
      out.push({ ...t });
      updated = true;
      continue;
    }
    out.push(existing);
  }
  if (!updated) out.push({ ...t });
  return out;
}

/**
 * util.AddOrUpdateDaemonPodTolerations: the tolerations every daemon pod gets (operator Exists), so daemons run on
 * not-ready, unreachable, pressured and cordoned nodes; network-unavailable only for hostNetwork pods.
 */
export function daemonPodTolerations(spec: Pick<PodSpec, 'tolerations'> & { hostNetwork?: unknown }): Toleration[] {
  const auto: Toleration[] = [
    { key: TAINT_NODE_NOT_READY, operator: 'Exists', effect: 'NoExecute' },
    { key: TAINT_NODE_UNREACHABLE, operator: 'Exists', effect: 'NoExecute' },
    { key: TAINT_NODE_DISK_PRESSURE, operator: 'Exists', effect: 'NoSchedule' },
    { key: TAINT_NODE_MEMORY_PRESSURE, operator: 'Exists', effect: 'NoSchedule' },
    { key: TAINT_NODE_PID_PRESSURE, operator: 'Exists', effect: 'NoSchedule' },
    { key: TAINT_NODE_UNSCHEDULABLE, operator: 'Exists', effect: 'NoSchedule' },
  ];
  if (spec.hostNetwork === true) {
    auto.push({ key: TAINT_NODE_NETWORK_UNAVAILABLE, operator: 'Exists', effect: 'NoSchedule' });
  }
  let tolerations = [...(spec.tolerations ?? [])];
  for (const t of auto) tolerations = addOrUpdateToleration(tolerations, t);
  return tolerations;
}

// ---- node affinity ----

type Matcher = (node: Node) => boolean;

function parseInt64(s: string): number | undefined {
  return /^[+-]?\d+$/.test(s) ? Number(s) : undefined;
}

/** nodeSelectorRequirementsAsSelector for one label requirement; undefined = parse error. */
function labelRequirement(r: NodeSelectorRequirement): Matcher | undefined {
  const values = r.values ?? [];
  const get = (n: Node): string | undefined => {
    const labels = n.metadata.labels;
    return labels && Object.hasOwn(labels, r.key) ? labels[r.key] : undefined;
  };
  switch (r.operator) {
    case 'In':
      if (values.length === 0) return undefined;
      return (n) => {
        const v = get(n);
        return v !== undefined && values.includes(v);
      };
    case 'NotIn':
      if (values.length === 0) return undefined;
      return (n) => {
        const v = get(n);
        return v === undefined || !values.includes(v);
      };
    case 'Exists':
      if (values.length > 0) return undefined;
      return (n) => get(n) !== undefined;
    case 'DoesNotExist':
      if (values.length > 0) return undefined;
      return (n) => get(n) === undefined;
    case 'Gt':
    case 'Lt': {
      const bound = values.length === 1 ? parseInt64(values[0] as string) : undefined;
      if (bound === undefined) return undefined;
      return (n) => {
        const v = get(n);
        const num = v === undefined ? undefined : parseInt64(v);
        if (num === undefined) return false;
        return r.operator === 'Gt' ? num > bound : num < bound;
      };
    }
    default:
      return undefined;
  }
}

/** nodeFieldSelectorRequirementsAsSelector: only In/NotIn with exactly one value; fields are {metadata.name}. */
function fieldRequirement(r: NodeSelectorRequirement): Matcher | undefined {
  const values = r.values ?? [];
  if ((r.operator !== 'In' && r.operator !== 'NotIn') || values.length !== 1) return undefined;
  const want = values[0] as string;
  const get = (n: Node) => (r.key === OBJECT_NAME_FIELD ? (n.metadata.name ?? '') : '');
  return r.operator === 'In' ? (n) => get(n) === want : (n) => get(n) !== want;
}

/** A term's requirements are ANDed; an empty term or one that fails to parse matches nothing. */
function termMatcher(term: NodeSelectorTerm): Matcher | undefined {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return undefined;
  const matchers: Matcher[] = [];
  for (const r of exprs) {
    const m = labelRequirement(r);
    if (!m) return undefined;
    matchers.push(m);
  }
  for (const r of fields) {
    const m = fieldRequirement(r);
    if (!m) return undefined;
    matchers.push(m);
  }
  return (n) => matchers.every((m) => m(n));
}

/** NodeSelector.Match with lazy errors: terms are ORed; terms that fail to parse are skipped. */
export function nodeSelectorMatches(selector: NodeSelector, node: Node): boolean {
  for (const term of selector.nodeSelectorTerms ?? []) {
    const m = termMatcher(term);
    if (m && m(node)) return true;
  }
  return false;
}

/**
 * nodeaffinity.GetRequiredNodeAffinity(pod).Match(node): spec.nodeSelector (exact label match) AND the required
 * node affinity terms.
 */
export function requiredNodeAffinityMatches(spec: Pick<PodSpec, 'nodeSelector' | 'affinity'>, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  const nodeSelector = spec.nodeSelector;
  for (const k in nodeSelector) {
    if (!Object.hasOwn(labels, k) || labels[k] !== nodeSelector[k]) return false;
  }
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required) return nodeSelectorMatches(required, node);
  return true;
}

/**
 * util.ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes exactly one term
 * `matchFields metadata.name In [nodeName]`; preferred terms and pod (anti-)affinity are kept. Returns a copy.
 */
export function replaceDaemonSetPodNodeNameNodeAffinity(affinity: Affinity | undefined, nodeName: string): Affinity {
  const required: NodeSelector = {
    nodeSelectorTerms: [{ matchFields: [{ key: OBJECT_NAME_FIELD, operator: 'In', values: [nodeName] }] }],
  };
  const out: Affinity = { ...(affinity ?? {}) };
  out.nodeAffinity = { ...(affinity?.nodeAffinity ?? {}), requiredDuringSchedulingIgnoredDuringExecution: required };
  return out;
}

/**
 * util.GetTargetNodeName: spec.nodeName, else the single value of a required-affinity
 * `matchFields metadata.name In [x]`; undefined when the pod targets no node.
 */
export function getTargetNodeName(spec: Pick<PodSpec, 'nodeName' | 'affinity'>): string | undefined {
  if (spec.nodeName) return spec.nodeName;
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  for (const term of terms) {
    for (const exp of term.matchFields ?? []) {
      if (exp.key === OBJECT_NAME_FIELD && exp.operator === 'In') {
        return exp.values?.length === 1 ? exp.values[0] : undefined;
      }
    }
  }
  return undefined;
}
