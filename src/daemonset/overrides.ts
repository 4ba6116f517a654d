// Per-node container resources (ExtendedDaemonSet's node annotations and ExtendedDaemonsetSetting,
// https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/utils.go),
// pure: which resources each container of a DaemonSet's pod gets on a node, where they come from, and the pod's
// template with them. Precedence per container: the node annotation
// resources.advanced-daemonset.io/<namespace>.<daemonset>.<container> (EDS's resources.extendeddaemonset.datadoghq.com/
// key read too, ours first), then the oldest DaemonSetSetting (then the first by name) whose nodeSelector matches the
// node and that lists the container, then the template. The overrides are not part of the revision: a pod records what
// it was given (RESOURCES_OVERRIDE_ANNOTATION), and a pod whose record differs from what its node asks for now is
// resized in place or recreated (plan.ts, overrideStage) without a rollout.
import { quantityFromJSON } from '../api/quantity.ts';
import type { DaemonSetSetting } from '../api/setting.ts';
import type { DaemonSet } from '../api/types.ts';
import { canonicalJson, computeHash } from '../k8s/hash.ts';
import { cloneJson } from '../k8s/json.ts';
import { labelSelectorMatches } from '../k8s/labels.ts';
import type { Node, Pod, PodTemplateSpec } from '../k8s/types.ts';
import {
  EDS_NODE_RESOURCES_ANNOTATION_PREFIX,
  NODE_RESOURCES_ANNOTATION_PREFIX,
  RESOURCES_OVERRIDE_ANNOTATION,
} from './constants.ts';
import type { ResourceList, ResourceRequirements } from './resize.ts';

/** Where a container's resources come from: a node annotation, or a setting (`DaemonSetSetting/<name>`). */
export const NODE_SOURCE = 'Node';
export const settingSource = (name: string): string => `DaemonSetSetting/${name}`;

export interface ContainerOverride {
  source: string;
  resources: ResourceRequirements;
}

/** The resources a pod gets on one node, in place of the template's, for the containers listed. */
export interface ResourceOverrides {
  /** A hash of the containers' resources (not their sources): what a pod's record is compared by. */
  hash: string;
  containers: Readonly<Record<string, ContainerOverride>>;
}

/** A node annotation for this DaemonSet that is not a ResourceRequirements: ignored, and said why. */
export interface OverrideError {
  node: string;
  key: string;
  message: string;
}

/** The settings that reference `ds` (same namespace, kind DaemonSet), in precedence order: oldest, then by name. */
export function settingsOf(ds: DaemonSet, settings: readonly DaemonSetSetting[]): DaemonSetSetting[] {
  const name = ds.metadata.name ?? '';
  const namespace = ds.metadata.namespace ?? '';
  return settings
    .filter(
      (s) =>
        (s.metadata.namespace ?? '') === namespace &&
        s.spec.reference.name === name &&
        (s.spec.reference.kind ?? 'DaemonSet') === 'DaemonSet' &&
        !s.metadata.deletionTimestamp,
    )
    .sort(settingPrecedence);
}

/** Oldest first (creationTimestamp, RFC 3339 in UTC: compared as text), then by name. */
export function settingPrecedence(a: DaemonSetSetting, b: DaemonSetSetting): number {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  const na = a.metadata.name ?? '';
  const nb = b.metadata.name ?? '';
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/** Whether a setting's nodeSelector matches the node: a missing or empty selector matches every node. */
export function settingMatchesNode(s: DaemonSetSetting, node: Node): boolean {
  const sel = s.spec.nodeSelector;
  return sel === undefined || labelSelectorMatches(sel, node.metadata.labels);
}

/** `<prefix><namespace>.<daemonset>.<container>`, as EDS spells its key. */
export function nodeAnnotationKey(prefix: string, ds: DaemonSet, container: string): string {
  return `${prefix}${ds.metadata.namespace ?? ''}.${ds.metadata.name ?? ''}.${container}`;
}

/** The start of every node annotation key for `ds`'s containers, ours and EDS's. */
function annotationPrefixes(ds: DaemonSet): string[] {
  return [NODE_RESOURCES_ANNOTATION_PREFIX, EDS_NODE_RESOURCES_ANNOTATION_PREFIX].map((p) =>
    nodeAnnotationKey(p, ds, ''),
  );
}

/** Whether a node annotation key is a per-node resources key (ours or EDS's): the node cache keeps only these. */
export function isNodeResourcesAnnotation(key: string): boolean {
  return key.startsWith(NODE_RESOURCES_ANNOTATION_PREFIX) || key.startsWith(EDS_NODE_RESOURCES_ANNOTATION_PREFIX);
}

/** Whether `node` holds a per-node resources annotation of any DaemonSet. */
export function hasNodeResourcesAnnotation(node: Node): boolean {
  const a = node.metadata.annotations;
  if (a === undefined) return false;
  for (const k in a) if (isNodeResourcesAnnotation(k)) return true;
  return false;
}

/**
 * A node annotation's value as ResourceRequirements: JSON with `limits` and `requests` maps of quantities (a number
 * taken as its decimal text, as the apiserver decodes a Quantity), nothing else. Returns the error message otherwise.
 */
export function parseResourceRequirements(raw: string): ResourceRequirements | string {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return 'not JSON';
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'not a JSON object';
  const out: ResourceRequirements = {};
  for (const [field, list] of Object.entries(v as Record<string, unknown>)) {
    if (field !== 'limits' && field !== 'requests') return `unknown field "${field}" (want limits, requests)`;
    if (list === null || typeof list !== 'object' || Array.isArray(list)) return `${field}: not a JSON object`;
    const parsed: ResourceList = {};
    for (const [name, q] of Object.entries(list as Record<string, unknown>)) {
      const quantity = quantityFromJSON(q);
      if (typeof quantity === 'string') return `${field}[${name}]: ${quantity}`;
      parsed[name] = typeof q === 'number' ? String(q) : (q as string).trim();
    }
    out[field] = parsed;
  }
  return out;
}

/**
 * The resources each container of `ds`'s pod gets on `node` (nodeResourceOverrides' rule, see the file's comment):
 * undefined when every container keeps the template's; `errors` names the node annotations ignored.
 * `settings` must be settingsOf(ds, ...): in precedence order.
 */
export function nodeResourceOverrides(
  ds: DaemonSet,
  node: Node | undefined,
  settings: readonly DaemonSetSetting[],
): { overrides?: ResourceOverrides; errors: OverrideError[] } {
  const errors: OverrideError[] = [];
  if (!node) return { errors };
  const annotations = node.metadata.annotations;
  const containers: Record<string, ContainerOverride> = {};
  for (const c of ds.spec.template.spec?.containers ?? []) {
    const fromNode = annotations && nodeAnnotation(ds, node, c.name, errors);
    if (fromNode) {
      containers[c.name] = { source: NODE_SOURCE, resources: fromNode };
      continue;
    }
    for (const s of settings) {
      const entry = s.spec.containers?.find((x) => x.name === c.name);
      if (!entry || !settingMatchesNode(s, node)) continue;
      containers[c.name] = { source: settingSource(s.metadata.name ?? ''), resources: normalized(entry.resources) };
      break;
    }
  }
  if (Object.keys(containers).length === 0) return { errors };
  return { overrides: { hash: overridesHash(containers), containers }, errors };
}

/** Our node annotation for the container, else EDS's; one that does not parse is reported and skipped. */
function nodeAnnotation(
  ds: DaemonSet,
  node: Node,
  container: string,
  errors: OverrideError[],
): ResourceRequirements | undefined {
  for (const prefix of [NODE_RESOURCES_ANNOTATION_PREFIX, EDS_NODE_RESOURCES_ANNOTATION_PREFIX]) {
    const key = nodeAnnotationKey(prefix, ds, container);
    const raw = node.metadata.annotations?.[key];
    if (raw === undefined) continue;
    const parsed = parseResourceRequirements(raw);
    if (typeof parsed !== 'string') return parsed;
    errors.push({ node: node.metadata.name ?? '', key, message: parsed });
  }
  return undefined;
}

/** Quantities as text (a setting may hold numbers): a number and its text are the same amount and the same hash. */
function normalized(r: { limits?: Record<string, unknown>; requests?: Record<string, unknown> }): ResourceRequirements {
  const out: ResourceRequirements = {};
  for (const field of ['limits', 'requests'] as const) {
    const list = r[field];
    if (list) out[field] = Object.fromEntries(Object.entries(list).map(([k, v]) => [k, String(v)]));
  }
  return out;
}

function overridesHash(containers: Readonly<Record<string, ContainerOverride>>): string {
  const resources = Object.fromEntries(Object.entries(containers).map(([name, o]) => [name, o.resources]));
  return computeHash(resources);
}

/** Whether the pod records resources it was given (RESOURCES_OVERRIDE_ANNOTATION), valid or not. */
export function hasResourcesOverrideRecord(pod: Pod): boolean {
  return pod.metadata.annotations?.[RESOURCES_OVERRIDE_ANNOTATION] !== undefined;
}

/**
 * What a pod records it was given (RESOURCES_OVERRIDE_ANNOTATION): undefined when it has no record (the template's
 * resources), 'invalid' when the record does not parse (treated as different from anything a node asks for).
 */
export function podResourceOverrides(pod: Pod): ResourceOverrides | 'invalid' | undefined {
  const raw = pod.metadata.annotations?.[RESOURCES_OVERRIDE_ANNOTATION];
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as { hash?: unknown; containers?: unknown };
    if (typeof v.hash !== 'string' || v.containers === null || typeof v.containers !== 'object') return 'invalid';
    return { hash: v.hash, containers: v.containers as Record<string, ContainerOverride> };
  } catch {
    return 'invalid';
  }
}

/** The hash a pod's record has ('' without one), to compare with what its node asks for. */
export function recordedOverridesHash(pod: Pod): string | undefined {
  const o = podResourceOverrides(pod);
  return o === 'invalid' ? undefined : (o?.hash ?? '');
}

/** Whether the pod holds what its node asks for now (`wanted`), by the hash of the resources. */
export function overridesCurrent(pod: Pod, wanted: ResourceOverrides | undefined): boolean {
  return recordedOverridesHash(pod) === (wanted?.hash ?? '');
}

/** The annotation's value for `o`: canonical JSON, so the same overrides always write the same text. */
export function overridesAnnotationValue(o: ResourceOverrides): string {
  return canonicalJson({ hash: o.hash, containers: o.containers });
}

/**
 * The template a pod on a node is built from: `template` with the overridden containers' resources replaced whole
 * (as EDS does: a resource left out of the override is not taken from the template) and the record annotation set.
 * `template` itself when there is nothing to override.
 */
export function withResourceOverrides(template: PodTemplateSpec, o: ResourceOverrides | undefined): PodTemplateSpec {
  if (!o) return template;
  const out = cloneJson(template);
  for (const c of out.spec?.containers ?? []) {
    const override = o.containers[c.name];
    if (override) c.resources = cloneJson(override.resources);
  }
  out.metadata = {
    ...(out.metadata ?? {}),
    annotations: { ...(out.metadata?.annotations ?? {}), [RESOURCES_OVERRIDE_ANNOTATION]: overridesAnnotationValue(o) },
  };
  return out;
}

/** The sources of a pod's containers' resources for display: `agent=Node, sidecar=DaemonSetSetting/big`, or ''. */
export function overrideSources(o: ResourceOverrides | 'invalid' | undefined): string {
  if (o === undefined) return '';
  if (o === 'invalid') return 'invalid record';
  return Object.entries(o.containers)
    .map(([name, c]) => `${name}=${c.source}`)
    .sort()
    .join(', ');
}

/** Whether a node's per-node resources annotations for `ds` differ between two versions of the node. */
export function nodeOverridesChanged(oldNode: Node, curNode: Node, ds: DaemonSet): boolean {
  const prefixes = annotationPrefixes(ds);
  const pick = (n: Node) => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(n.metadata.annotations ?? {})) {
      if (prefixes.some((p) => k.startsWith(p))) out[k] = v;
    }
    return canonicalJson(out);
  };
  return pick(oldNode) !== pick(curNode);
}

/** The per-node resources of one sync, computed per node on first use. */
export interface NodeResources {
  /** No setting references the DaemonSet and no node holds an annotation for it: every pod gets the template's. */
  readonly none: boolean;
  /** The settings of the DaemonSet, in precedence order. */
  readonly settings: readonly DaemonSetSetting[];
  of(nodeName: string): ResourceOverrides | undefined;
  /** The node's annotations for the DaemonSet that are ignored, and why. */
  errorsOf(nodeName: string): readonly OverrideError[];
}

/**
 * NodeResources for `ds` over the sync's nodes; `settings` as settingsOf gives them. `annotated`, when known (the
 * plan memo keeps it), holds every node with a per-node resources annotation, so only those are looked at.
 */
export function nodeResources(
  ds: DaemonSet,
  nodeByName: ReadonlyMap<string, Node>,
  settings: readonly DaemonSetSetting[],
  annotated: Iterable<Node> = nodeByName.values(),
): NodeResources {
  const none = settings.length === 0 && !anyNodeAnnotation(ds, annotated);
  const cache = new Map<string, { overrides?: ResourceOverrides; errors: OverrideError[] }>();
  const get = (nodeName: string) => {
    let r = cache.get(nodeName);
    if (!r) cache.set(nodeName, (r = nodeResourceOverrides(ds, nodeByName.get(nodeName), settings)));
    return r;
  };
  return {
    none,
    settings,
    of: (nodeName) => (none ? undefined : get(nodeName).overrides),
    errorsOf: (nodeName) => (none ? [] : get(nodeName).errors),
  };
}

/** The node cache keeps only per-node resources annotations (cache-shapes.ts): most nodes have none at all. */
function anyNodeAnnotation(ds: DaemonSet, nodes: Iterable<Node>): boolean {
  const prefixes = annotationPrefixes(ds);
  for (const node of nodes) {
    const a = node.metadata.annotations;
    if (a === undefined) continue;
    for (const k in a) if (prefixes.some((p) => k.startsWith(p))) return true;
  }
  return false;
}

/** No per-node resources: what a context built without settings (tests, the dashboard) holds. */
export const NO_NODE_RESOURCES: NodeResources = Object.freeze({
  none: true,
  settings: [],
  of: () => undefined,
  errorsOf: () => [],
});
