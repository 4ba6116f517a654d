// Validation of advanced-daemonset.io DaemonSetSetting as pure functions over plain JSON, returning field errors in
// the apiserver's format (field.ts), as validation.ts does for the DaemonSet. The structural part comes from the
// setting's CRD schema (setting.ts) through ajv; the rules are ExtendedDaemonsetSetting's
// (https://github.com/DataDog/extendeddaemonset/blob/main/api/v1alpha1/extendeddaemonsetsetting_types.go) made
// explicit, and the container resources are checked as the apiserver checks a pod's (ValidateResourceRequirements and
// validateContainerResourceName in
// https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/core/validation/validation.go): a setting the
// apiserver would refuse in a pod is refused when it is written, not when the controller makes the pod. Whether the
// DaemonSet and its containers exist is the controller's to report (status.conditions): no API call here.
import type { ValidateFunction } from 'ajv';
import { settingOpenAPIV3Schema } from './crd.ts';
import { isObject, type JsonObject } from './defaults.ts';
import {
  duplicate,
  forbidden,
  invalid,
  notSupported,
  path,
  required,
  type FieldError,
  type FieldPath,
} from './field.ts';
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName } from './names.ts';
import { compareQuantity, formatQuantity, isNegative, quantityFromJSON, type Quantity } from './quantity.ts';
import { setDefaultsSettingReference } from './setting-defaults.ts';
import {
  DEFAULT_SETTING_REFERENCE_API_VERSION,
  SETTING_REFERENCE_API_VERSIONS,
  SETTING_REFERENCE_KIND,
} from './setting.ts';
import { nestingError, typedShapeErrors } from './shape.ts';
import {
  compileStructuralSchema,
  dedupe,
  NEGATIVE_ERROR,
  semanticEqual,
  structuralSchemaErrors,
  validateLabelSelector,
  validateObjectMeta,
} from './validation.ts';

let compiled: ValidateFunction | undefined;
const schemaValidator = () => (compiled ??= compileStructuralSchema(settingOpenAPIV3Schema()));

/** Errors of the setting's structural schema, as the apiserver reports them (validation.ts, schemaErrors). */
export function settingSchemaErrors(obj: JsonObject): FieldError[] {
  return structuralSchemaErrors(schemaValidator(), obj);
}

/**
 * The errors that make a setting unreadable rather than invalid (shapeErrors in validation.ts, for the DaemonSet):
 * nesting deeper than MAX_NESTING_DEPTH alone, then wrong JSON types of the schema, then of metadata.
 */
export function settingShapeErrors(obj: JsonObject): FieldError[] {
  const tooDeep = nestingError(obj);
  if (tooDeep) return [tooDeep];
  const errs = settingSchemaErrors(obj).filter((e) => e.type === 'FieldValueTypeInvalid');
  if (errs.length > 0) return errs;
  return typedShapeErrors(obj.metadata, 'V1ObjectMeta', path('metadata'));
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const unset = (v: unknown) => v === undefined || v === null || v === '';

// ---------------------------------------------------------------------------------------------------------
// Container resources, as validateContainerResourceName and ValidateResourceRequirements

const HUGE_PAGES_PREFIX = 'hugepages-';
/** helper.standardResources: every name a ResourceQuota or a LimitRange may use without a prefix. */
const STANDARD_RESOURCES = new Set([
  'cpu',
  'memory',
  'ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'pods',
  'resourcequotas',
  'services',
  'replicationcontrollers',
  'secrets',
  'configmaps',
  'persistentvolumeclaims',
  'storage',
  'requests.storage',
  'services.nodeports',
  'services.loadbalancers',
]);
/** helper.standardContainerResources. */
const STANDARD_CONTAINER_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage']);

const isHugePages = (name: string) => name.startsWith(HUGE_PAGES_PREFIX);
const isStandardResource = (name: string) =>
  STANDARD_RESOURCES.has(name) || isHugePages(name) || name.startsWith(`requests.${HUGE_PAGES_PREFIX}`);
/** helper.IsNativeResource: no domain, or a kubernetes.io one. */
const isNative = (name: string) => !name.includes('/') || name.includes('kubernetes.io/');
/** helper.IsExtendedResourceName: a domain other than kubernetes.io, and a valid quota name with `requests.`. */
const isExtended = (name: string) =>
  !isNative(name) && !name.startsWith('requests.') && isQualifiedName(`requests.${name}`).length === 0;
/** helper.IsOvercommitAllowed: requests below limits only for native resources other than huge pages. */
const overcommitAllowed = (name: string) => isNative(name) && !isHugePages(name);

/** validateContainerResourceName: the apiserver's messages. */
function validateResourceName(name: string, p: FieldPath): FieldError[] {
  const errs = isQualifiedName(name).map((msg) => invalid(p, name, msg));
  if (errs.length > 0) return errs;
  if (!name.includes('/')) {
    if (!isStandardResource(name)) errs.push(invalid(p, name, 'must be a standard resource type or fully qualified'));
    if (!STANDARD_CONTAINER_RESOURCES.has(name) && !isHugePages(name))
      errs.push(invalid(p, name, 'must be a standard resource for containers'));
  } else if (!isNative(name) && !isExtended(name)) {
    errs.push(invalid(p, name, "doesn't follow extended resource name standard"));
  }
  return errs;
}

/** One of limits or requests: names, parseable, non-negative quantities, whole ones for extended resources. */
function validateResourceList(list: unknown, p: FieldPath): { errors: FieldError[]; parsed: Map<string, Quantity> } {
  const errors: FieldError[] = [];
  const parsed = new Map<string, Quantity>();
  if (!isObject(list)) return { errors, parsed };
  for (const [name, raw] of Object.entries(list)) {
    const kp = p.key(name);
    errors.push(...validateResourceName(name, kp));
    const q = quantityFromJSON(raw);
    if (typeof q === 'string') {
      // A wrong type is the shape check's; a string that is no quantity is also refused by the schema's pattern.
      if (typeof raw === 'string') errors.push(invalid(kp, raw, q));
      continue;
    }
    if (isNegative(q)) errors.push(invalid(kp, formatQuantity(q), NEGATIVE_ERROR));
    // ValidateResourceQuantityValue: an extended resource (a device) is counted in whole units.
    else if (isExtended(name) && !isWhole(q)) errors.push(invalid(kp, formatQuantity(q), 'must be an integer'));
    parsed.set(name, q);
  }
  return { errors, parsed };
}

/** Whether a quantity has no fractional part (unscaled × 10^exp with exp < 0 divides out). */
function isWhole(q: Quantity): boolean {
  return q.exp >= 0 || q.unscaled % 10n ** BigInt(-q.exp) === 0n;
}

/**
 * ValidateResourceRequirements of one container: each list, then requests against limits (equal for resources that
 * cannot be overcommitted, at most the limit for the others), and huge pages only next to cpu or memory.
 */
function validateResources(resources: unknown, p: FieldPath): FieldError[] {
  if (!isObject(resources)) return [];
  const limitsPath = p.child('limits');
  const requestsPath = p.child('requests');
  const limits = validateResourceList(resources.limits, limitsPath);
  const requests = validateResourceList(resources.requests, requestsPath);
  const errs = [...limits.errors, ...requests.errors];
  for (const [name, request] of requests.parsed) {
    const limit = limits.parsed.get(name);
    if (limit) {
      const cmp = compareQuantity(request, limit);
      if (cmp !== 0 && !overcommitAllowed(name))
        errs.push(
          invalid(requestsPath, formatQuantity(request), `must be equal to ${name} limit of ${formatQuantity(limit)}`),
        );
      else if (cmp > 0)
        errs.push(
          invalid(
            requestsPath,
            formatQuantity(request),
            `must be less than or equal to ${name} limit of ${formatQuantity(limit)}`,
          ),
        );
    } else if (!overcommitAllowed(name) && !(isObject(resources.limits) && Object.hasOwn(resources.limits, name))) {
      errs.push(required(limitsPath, 'Limit must be set for non overcommitable resources'));
    }
  }
  const names = [...limits.parsed.keys(), ...requests.parsed.keys()];
  if (names.some(isHugePages) && !names.some((n) => n === 'cpu' || n === 'memory'))
    errs.push(forbidden(p, 'HugePages require cpu or memory'));
  return errs;
}

// ---------------------------------------------------------------------------------------------------------
// The setting

/** spec.reference: a DaemonSet of a served apps.kruise.io version, by a name it could have. */
function validateReference(reference: unknown, p: FieldPath): FieldError[] {
  if (!isObject(reference)) return [required(p)];
  const errs: FieldError[] = [];
  const name = str(reference.name);
  if (!name) errs.push(required(p.child('name')));
  else errs.push(...isDNS1123Subdomain(name).map((msg) => invalid(p.child('name'), name, msg)));
  // Unset reads as its default (the mutating webhook sets it).
  const kind = unset(reference.kind) ? SETTING_REFERENCE_KIND : reference.kind;
  if (kind !== SETTING_REFERENCE_KIND) errs.push(notSupported(p.child('kind'), kind, [SETTING_REFERENCE_KIND]));
  const apiVersion = unset(reference.apiVersion) ? DEFAULT_SETTING_REFERENCE_API_VERSION : reference.apiVersion;
  if (!(SETTING_REFERENCE_API_VERSIONS as readonly unknown[]).includes(apiVersion))
    errs.push(notSupported(p.child('apiVersion'), apiVersion, SETTING_REFERENCE_API_VERSIONS));
  return errs;
}

/** spec.containers: at least one; names non-empty, unique, DNS-1123 labels (a container's name rules). */
function validateContainers(containers: unknown, p: FieldPath): FieldError[] {
  if (!Array.isArray(containers) || containers.length === 0) return [required(p)];
  const errs: FieldError[] = [];
  const names = new Set<string>();
  containers.forEach((c, i) => {
    if (!isObject(c)) return;
    const cp = p.index(i);
    const name = str(c.name);
    if (!name) errs.push(required(cp.child('name')));
    else {
      errs.push(...isDNS1123Label(name).map((msg) => invalid(cp.child('name'), name, msg)));
      if (names.has(name)) errs.push(duplicate(cp.child('name'), name));
      names.add(name);
    }
    errs.push(...validateResources(c.resources, cp.child('resources')));
  });
  return errs;
}

/**
 * All errors of a DaemonSetSetting on CREATE: the structural schema, then metadata, then the rules. A field the schema
 * already refused (a quantity that does not match its pattern, say) is not reported a second time by the rules.
 */
export function validateDaemonSetSetting(obj: JsonObject): FieldError[] {
  const schema = settingSchemaErrors(obj);
  // The schema's paths name a map key as a field (`limits.cpu`), the rules' as a subscript (`limits[cpu]`).
  const fieldOf = (e: FieldError) => e.field.replace(/\[([^\]]*[^\]0-9][^\]]*)\]/g, '.$1');
  const refused = new Set(schema.map(fieldOf));
  const spec = isObject(obj.spec) ? obj.spec : undefined;
  const p = path('spec');
  const rules = [
    ...validateObjectMeta(isObject(obj.metadata) ? obj.metadata : undefined),
    ...(spec
      ? [
          ...validateReference(spec.reference, p.child('reference')),
          ...validateLabelSelector(spec.nodeSelector, p.child('nodeSelector')),
          ...validateContainers(spec.containers, p.child('containers')),
        ]
      : []),
  ];
  return dedupe([...schema, ...rules.filter((e) => !refused.has(fieldOf(e)))]);
}

/**
 * An object's own keys in order, as Go prints a map: the message is the same whatever order the client (or the
 * apiserver, which sends objects with sorted keys) wrote them in.
 */
function sortedKeys(v: unknown): unknown {
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort())
    Object.defineProperty(out, k, { value: v[k], enumerable: true, writable: true });
  return out;
}

/** Kubernetes' ValidateImmutableField text. */
export const FIELD_IMMUTABLE = 'field is immutable';

/**
 * Errors on UPDATE: the create validation of the new object, then spec.reference immutable (another DaemonSet would
 * be a new setting: its pods' resources are not this one's to move). Both references are compared with their
 * defaults, so an apply that leaves out the defaulted kind or apiVersion is no change.
 */
export function validateDaemonSetSettingUpdate(obj: JsonObject, oldObj: JsonObject): FieldError[] {
  const errs = validateDaemonSetSetting(obj);
  const referenceOf = (o: JsonObject): unknown => {
    const ref = isObject(o.spec) ? o.spec.reference : undefined;
    if (!isObject(ref)) return ref;
    const copy = { ...ref };
    setDefaultsSettingReference(copy);
    return copy;
  };
  const reference = referenceOf(obj);
  if (!semanticEqual(reference, referenceOf(oldObj)))
    errs.push(invalid(path('spec', 'reference'), sortedKeys(reference) ?? null, FIELD_IMMUTABLE));
  return dedupe(errs);
}
