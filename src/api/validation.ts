// Validation of apps.kruise.io DaemonSet (v1alpha1 and v1beta1) as pure functions over plain JSON, returning field
// errors in the apiserver's format (field.ts). Rules: Kruise's validating webhook
// (https://github.com/openkruise/kruise/blob/master/pkg/webhook/daemonset/validating/daemonset_validation.go,
// summed up in docs/kruise-rules.md#validation), the pod-template checks a user gets from apps/v1, and stricter
// IntOrString checks than Kruise (which silently treats garbage strings as 0; docs/differences.md). v1beta1 follows
// Kruise 1.9's v1beta1 functions (validateDaemonSetSpecV1beta1 in
// https://github.com/openkruise/kruise/blob/v1.9.0/pkg/webhook/daemonset/validating/daemonset_validation.go,
// validateDaemonSetUpdateV1beta1 in
// https://github.com/openkruise/kruise/blob/v1.9.0/pkg/webhook/daemonset/validating/daemonset_create_update_handler.go):
// the same rules without Surging, and scaleStrategy mutable. The structural part (types, required fields) comes
// from the same schema as the CRD version, through ajv, so an object the apiserver would reject is rejected here
// with the same kind of message.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { labelSelectorMatches } from '../k8s/labels.ts';
import type { LabelSelector } from '../k8s/types.ts';
import {
  DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS,
  DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS,
  DEFAULT_CANARY_DURATION,
  V1BETA1,
  VERSION,
  type ServedVersion,
} from './constants.ts';
import { stashErrors } from './conversion.ts';
import { parseDuration } from './duration.ts';
import { openAPIV3Schema } from './crd.ts';
import { defaultedPodTemplate, isObject, type JsonObject } from './defaults.ts';
import {
  duplicate,
  forbidden,
  invalid,
  notFound,
  notSupported,
  path,
  required,
  type FieldError,
  type FieldPath,
} from './field.ts';
import {
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  isValidPercent,
  isValidPortName,
} from './names.ts';
import { compareQuantity, formatQuantity, isNegative, quantityFromJSON, type Quantity } from './quantity.ts';
import {
  CANARY_VALIDATIONS,
  NODE_READINESS_MODES,
  ROLLING_UPDATE_TYPES,
  ROLLING_UPDATE_TYPES_V1BETA1,
  TAINT_EFFECTS,
  UNHEALTHY_NODES_POLICIES,
  UPDATE_STRATEGY_TYPES,
} from './schema.ts';
import { jsonTypeName, nestingError, typedShapeErrors, wrongType } from './shape.ts';

export const NEGATIVE_ERROR = 'must be greater than or equal to 0';

// ---------------------------------------------------------------------------------------------------------
// Structural schema (ajv)

const compiled = new Map<ServedVersion, ValidateFunction>();

function schemaValidator(version: ServedVersion): ValidateFunction {
  const cached = compiled.get(version);
  if (cached) return cached;
  const validate = compileStructuralSchema(openAPIV3Schema(version));
  compiled.set(version, validate);
  return validate;
}

/** An ajv validator of a CRD's structural schema: its Kubernetes extensions are annotations, its formats checked. */
export function compileStructuralSchema(schema: Record<string, unknown>): ValidateFunction {
  const ajv = new Ajv({ allErrors: true, verbose: true, strictTypes: false, strictTuples: false });
  for (const keyword of [
    'x-kubernetes-int-or-string',
    'x-kubernetes-preserve-unknown-fields',
    'x-kubernetes-list-type',
    'x-kubernetes-list-map-keys',
    'x-kubernetes-map-type',
  ])
    ajv.addKeyword(keyword);
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => n >= -(2 ** 31) && n < 2 ** 31 });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
  ajv.addFormat('date-time', { type: 'string', validate: (s: string) => !Number.isNaN(Date.parse(s)) });
  return ajv.compile(schema);
}

/** "/spec/selector/matchExpressions/0/key" → "spec.selector.matchExpressions[0].key". */
function pointerToPath(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(seg)) out += `[${seg}]`;
    else out += out ? `.${seg}` : seg;
  }
  return out;
}

function fieldPathOf(p: string): FieldPath {
  const [first = '', ...rest] = p.split('.');
  return rest.length ? path(first, ...rest) : path(first);
}

/** Whether the value at a JSON pointer is an element of an array (rather than a field of an object). */
function inArray(root: unknown, pointer: string): boolean {
  const segments = pointer.split('/').slice(1);
  let v: unknown = root;
  for (const raw of segments.slice(0, -1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof v !== 'object' || v === null || !Object.hasOwn(v, seg)) return false;
    v = (v as Record<string, unknown>)[seg];
  }
  return segments.length > 0 && Array.isArray(v);
}

/**
 * Errors of the structural schema, as the apiserver reports them for a CRD: type mismatches as TypeInvalid
 * with kube-openapi's text (the bad value is the JSON type name, as there), missing required fields as
 * Required. null fields are ignored (the apiserver prunes nulls of non-nullable fields) but a null list element
 * is a type error, and status is not checked (the apiserver resets it on create).
 */
export function schemaErrors(obj: JsonObject, version: ServedVersion = VERSION): FieldError[] {
  return structuralSchemaErrors(schemaValidator(version), obj);
}

/** schemaErrors against any structural schema compiled by compileStructuralSchema. */
export function structuralSchemaErrors(validate: ValidateFunction, obj: JsonObject): FieldError[] {
  const { status: _status, ...rest } = obj;
  if (validate(rest)) return [];
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  const all = (validate.errors ?? []) as ErrorObject[];
  // An int-or-string mismatch yields one error per anyOf branch plus the anyOf itself: report it once.
  const anyOfPaths = new Set(all.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  for (const e of all) {
    const p = pointerToPath(e.instancePath);
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      const full = p ? `${p}.${missing}` : missing;
      if (!seen.has(full)) errors.push(required(fieldPathOf(full)));
      seen.add(full);
      continue;
    }
    if ((e.data === null && !inArray(rest, e.instancePath)) || seen.has(p)) continue;
    if (anyOfPaths.has(e.instancePath) && e.keyword !== 'anyOf') continue;
    seen.add(p);
    const fp = fieldPathOf(p);
    if (e.keyword === 'anyOf') {
      errors.push(wrongType(fp, e.data, 'integer,string'));
    } else if (e.keyword === 'type') {
      const want = (e.params as { type: string | string[] }).type;
      errors.push(wrongType(fp, e.data, String(want)));
    } else if (e.keyword === 'format') {
      const format = (e.params as { format: string }).format;
      errors.push(invalid(fp, e.data, `${p} in body must be of type ${format}: "${String(e.data)}"`));
    } else if (e.keyword === 'pattern') {
      // kube-openapi's text (validate.FailedPattern): "should match", the pattern quoted.
      const pattern = (e.params as { pattern: string }).pattern;
      errors.push(invalid(fp, e.data, `${p} in body should match '${pattern}'`));
    } else {
      const bad = typeof e.data === 'object' && e.data !== null ? jsonTypeName(e.data) : e.data;
      errors.push(invalid(fp, bad, `${p} in body ${e.message ?? 'is invalid'}`));
    }
  }
  return errors;
}

/**
 * The errors that make an object unreadable rather than invalid, checked before anything else reads it: nesting
 * deeper than MAX_NESTING_DEPTH (reported alone: the other checks recurse), then wrong JSON types of the
 * structural schema of `version`, of metadata (core ObjectMeta) and of the schemaless pod template (core/v1
 * PodTemplateSpec). The webhooks refuse such an object as a bad request; defaulting and validation assume none.
 */
export function shapeErrors(obj: JsonObject, version: ServedVersion = VERSION): FieldError[] {
  const tooDeep = nestingError(obj);
  if (tooDeep) return [tooDeep];
  const errs = schemaErrors(obj, version).filter((e) => e.type === 'FieldValueTypeInvalid');
  if (errs.length > 0) return errs;
  errs.push(...typedShapeErrors(obj.metadata, 'V1ObjectMeta', path('metadata')));
  const spec = obj.spec;
  if (isObject(spec)) errs.push(...typedShapeErrors(spec.template, 'V1PodTemplateSpec', path('spec', 'template')));
  return errs;
}

// ---------------------------------------------------------------------------------------------------------
// Generic helpers

/** A value in a message: String() of a primitive, JSON of anything else (String({toString: 1}) throws). */
const text = (v: unknown): string => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const objectAt = (obj: JsonObject | undefined, key: string): JsonObject | undefined => {
  const v = obj?.[key];
  return isObject(v) ? v : undefined;
};
const arrayAt = (obj: JsonObject | undefined, key: string): unknown[] | undefined => {
  const v = obj?.[key];
  return Array.isArray(v) ? v : undefined;
};
const isSet = (v: unknown) => v !== undefined && v !== null;

/** The value of an IntOrString as Go's IntOrString.String() prints it. */
const intOrStringText = (v: unknown): string =>
  typeof v === 'number' || typeof v === 'string' ? String(v) : JSON.stringify(v);

/** ValidateNonnegativeField for plain integers (bad values print bare, as Go's int64). */
function validateNonNegative(v: unknown, p: FieldPath): FieldError[] {
  return typeof v === 'number' && v < 0 ? [invalid(p, v, NEGATIVE_ERROR)] : [];
}

/**
 * An IntOrString that must be an int >= 0 or a valid "N%" <= 100%. Unlike Kruise, strings that are not percents
 * ("abc", "5", "-1") are errors rather than a silent 0. Bad values print as the quoted String() of the value.
 */
export function validateIntOrPercent(v: unknown, p: FieldPath): FieldError[] {
  if (typeof v === 'number') {
    // A fraction is a type error of the structural schema (schemaErrors), reported there once.
    if (!Number.isInteger(v)) return [];
    return v < 0 ? [invalid(p, intOrStringText(v), NEGATIVE_ERROR)] : [];
  }
  if (typeof v === 'string') {
    const errs = isValidPercent(v).map((msg) => invalid(p, v, msg));
    if (errs.length) return errs;
    if (Number(v.slice(0, -1)) > 100) return [invalid(p, v, 'must not be greater than 100%')];
  }
  return [];
}

/** getIntOrPercentValue for a well-formed value; undefined for a malformed one (already reported). */
function intOrPercentValue(v: unknown): number | undefined {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v : undefined;
  if (typeof v === 'string' && isValidPercent(v).length === 0) return Number(v.slice(0, -1));
  return undefined;
}

function validateLabels(labels: unknown, p: FieldPath): FieldError[] {
  if (!isObject(labels)) return [];
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(labels)) {
    errs.push(...isQualifiedName(k).map((msg) => invalid(p, k, msg)));
    if (typeof v === 'string') errs.push(...isValidLabelValue(v).map((msg) => invalid(p, v, msg)));
  }
  return errs;
}

function validateAnnotations(annotations: unknown, p: FieldPath): FieldError[] {
  if (!isObject(annotations)) return [];
  const errs: FieldError[] = [];
  for (const k of Object.keys(annotations))
    errs.push(...isQualifiedName(k.toLowerCase()).map((msg) => invalid(p, k, msg)));
  return errs;
}

/** metav1validation.ValidateLabelSelector. */
export function validateLabelSelector(selector: unknown, p: FieldPath): FieldError[] {
  if (!isObject(selector)) return [];
  const errs = validateLabels(selector.matchLabels, p.child('matchLabels'));
  (arrayAt(selector, 'matchExpressions') ?? []).forEach((expr, i) => {
    if (!isObject(expr)) return;
    const ep = p.child('matchExpressions').index(i);
    const values = arrayAt(expr, 'values') ?? [];
    switch (expr.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0)
          errs.push(required(ep.child('values'), "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0)
          errs.push(
            forbidden(ep.child('values'), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
          );
        break;
      default:
        errs.push(invalid(ep.child('operator'), expr.operator ?? '', 'not a valid selector operator'));
    }
    if (typeof expr.key === 'string')
      errs.push(...isQualifiedName(expr.key).map((msg) => invalid(ep.child('key'), expr.key, msg)));
    values.forEach((v, j) => {
      if (typeof v === 'string')
        errs.push(...isValidLabelValue(v).map((msg) => invalid(ep.child('values').index(j), v, msg)));
    });
  });
  return errs;
}

// ---------------------------------------------------------------------------------------------------------
// Object metadata

/** ValidateObjectMeta's checks of a namespaced object: name (or generateName), namespace, labels, annotations. */
export function validateObjectMeta(meta: JsonObject | undefined): FieldError[] {
  const p = path('metadata');
  const errs: FieldError[] = [];
  const name = str(meta?.name);
  const generateName = str(meta?.generateName);
  if (name) errs.push(...isDNS1123Subdomain(name).map((msg) => invalid(p.child('name'), name, msg)));
  else if (!generateName) errs.push(required(p.child('name'), 'name or generateName is required'));
  if (!str(meta?.namespace)) errs.push(required(p.child('namespace')));
  errs.push(...validateLabels(meta?.labels, p.child('labels')));
  errs.push(...validateAnnotations(meta?.annotations, p.child('annotations')));
  return errs;
}

// ---------------------------------------------------------------------------------------------------------
// Pod template (the checks a user gets from apps/v1's ValidatePodTemplateSpec that matter for daemons)

const SUPPORTED_PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const SUPPORTED_DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const SUPPORTED_PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const PORT_RANGE_ERROR = 'must be between 1 and 65535, inclusive';

function validateResourceList(list: unknown, p: FieldPath): { errors: FieldError[]; parsed: Map<string, Quantity> } {
  const errors: FieldError[] = [];
  const parsed = new Map<string, Quantity>();
  if (!isObject(list)) return { errors, parsed };
  for (const [name, raw] of Object.entries(list)) {
    const kp = p.key(name);
    errors.push(...isQualifiedName(name).map((msg) => invalid(kp, name, msg)));
    const q = quantityFromJSON(raw);
    if (typeof q === 'string') {
      errors.push(invalid(kp, typeof raw === 'string' ? raw : intOrStringText(raw), q));
      continue;
    }
    if (isNegative(q)) errors.push(invalid(kp, formatQuantity(q), NEGATIVE_ERROR));
    parsed.set(name, q);
  }
  return { errors, parsed };
}

/** ValidateResourceRequirements: parseable, non-negative quantities and requests <= limits. */
function validateResources(resources: unknown, p: FieldPath): FieldError[] {
  if (!isObject(resources)) return [];
  const limits = validateResourceList(resources.limits, p.child('limits'));
  const requests = validateResourceList(resources.requests, p.child('requests'));
  const errs = [...limits.errors, ...requests.errors];
  for (const [name, request] of requests.parsed) {
    const limit = limits.parsed.get(name);
    if (limit && compareQuantity(request, limit) > 0)
      errs.push(
        invalid(
          p.child('requests'),
          formatQuantity(request),
          `must be less than or equal to ${name} limit of ${formatQuantity(limit)}`,
        ),
      );
  }
  return errs;
}

function validatePortNumber(v: unknown, p: FieldPath, requiredPort: boolean): FieldError[] {
  if (v === undefined || v === null || v === 0) return requiredPort ? [required(p)] : [];
  if (typeof v === 'number' && (!Number.isInteger(v) || v < 1 || v > 65535)) return [invalid(p, v, PORT_RANGE_ERROR)];
  return [];
}

function validateContainer(c: JsonObject, p: FieldPath, allNames: Set<string>, volumeNames: Set<string>): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(c.name);
  if (!name) errs.push(required(p.child('name')));
  else {
    errs.push(...isDNS1123Label(name).map((msg) => invalid(p.child('name'), name, msg)));
    if (allNames.has(name)) errs.push(duplicate(p.child('name'), name));
    allNames.add(name);
  }
  const image = str(c.image);
  if (!image) errs.push(required(p.child('image')));
  else if (image.trim() !== image)
    errs.push(invalid(p.child('image'), image, 'must not have leading or trailing whitespace'));
  const pullPolicy = c.imagePullPolicy;
  if (typeof pullPolicy === 'string' && !SUPPORTED_PULL_POLICIES.includes(pullPolicy))
    errs.push(notSupported(p.child('imagePullPolicy'), pullPolicy, SUPPORTED_PULL_POLICIES));
  const portNames = new Set<string>();
  (arrayAt(c, 'ports') ?? []).forEach((port, i) => {
    if (!isObject(port)) return;
    const pp = p.child('ports').index(i);
    const portName = str(port.name);
    if (portName) {
      errs.push(...isValidPortName(portName).map((msg) => invalid(pp.child('name'), portName, msg)));
      if (portNames.has(portName)) errs.push(duplicate(pp.child('name'), portName));
      portNames.add(portName);
    }
    errs.push(...validatePortNumber(port.containerPort, pp.child('containerPort'), true));
    errs.push(...validatePortNumber(port.hostPort, pp.child('hostPort'), false));
    if (typeof port.protocol === 'string' && !SUPPORTED_PROTOCOLS.includes(port.protocol))
      errs.push(notSupported(pp.child('protocol'), port.protocol, SUPPORTED_PROTOCOLS));
  });
  (arrayAt(c, 'volumeMounts') ?? []).forEach((m, i) => {
    if (!isObject(m)) return;
    const mp = p.child('volumeMounts').index(i);
    const mountName = str(m.name);
    if (!mountName) errs.push(required(mp.child('name')));
    else if (!volumeNames.has(mountName)) errs.push(notFound(mp.child('name'), mountName));
    if (!str(m.mountPath)) errs.push(required(mp.child('mountPath')));
  });
  errs.push(...validateResources(c.resources, p.child('resources')));
  return errs;
}

/**
 * The template checks, on a template already defaulted (validation defaults a copy first, as Kruise does).
 * Paths are under `p` (spec.template).
 */
export function validatePodTemplate(template: unknown, p: FieldPath): FieldError[] {
  if (!isObject(template)) return [required(p)];
  const errs: FieldError[] = [];
  const meta = objectAt(template, 'metadata');
  errs.push(...validateLabels(meta?.labels, p.child('metadata', 'labels')));
  errs.push(...validateAnnotations(meta?.annotations, p.child('metadata', 'annotations')));

  const spec = objectAt(template, 'spec');
  const sp = p.child('spec');
  if (!spec) return [...errs, required(sp)];

  const volumeNames = new Set<string>();
  (arrayAt(spec, 'volumes') ?? []).forEach((v, i) => {
    if (!isObject(v)) return;
    const vp = sp.child('volumes').index(i).child('name');
    const name = str(v.name);
    if (!name) errs.push(required(vp));
    else {
      errs.push(...isDNS1123Label(name).map((msg) => invalid(vp, name, msg)));
      if (volumeNames.has(name)) errs.push(duplicate(vp, name));
      volumeNames.add(name);
    }
  });

  const containerNames = new Set<string>();
  (arrayAt(spec, 'initContainers') ?? []).forEach((c, i) => {
    if (isObject(c))
      errs.push(...validateContainer(c, sp.child('initContainers').index(i), containerNames, volumeNames));
  });
  const containers = arrayAt(spec, 'containers') ?? [];
  if (containers.length === 0) errs.push(required(sp.child('containers')));
  containers.forEach((c, i) => {
    if (isObject(c)) errs.push(...validateContainer(c, sp.child('containers').index(i), containerNames, volumeNames));
  });

  const dnsPolicy = spec.dnsPolicy;
  if (typeof dnsPolicy === 'string' && !SUPPORTED_DNS_POLICIES.includes(dnsPolicy))
    errs.push(notSupported(sp.child('dnsPolicy'), dnsPolicy, SUPPORTED_DNS_POLICIES));
  errs.push(...validateNonNegative(spec.terminationGracePeriodSeconds, sp.child('terminationGracePeriodSeconds')));
  errs.push(...validateLabels(spec.nodeSelector, sp.child('nodeSelector')));
  return errs;
}

// ---------------------------------------------------------------------------------------------------------
// DaemonSet

/** Kruise's v1alpha1 text, including its two spaces after 'lifecycle',. */
export const SPEC_UPDATE_FORBIDDEN =
  "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle',  'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";
/** Kruise's v1beta1 text (validateDaemonSetUpdateV1beta1): scaleStrategy is mutable too, one space throughout. */
export const SPEC_UPDATE_FORBIDDEN_V1BETA1 =
  "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";

/** What the two versions' rules differ in; everything else is shared. */
interface VersionRules {
  rollingUpdateTypes: readonly string[];
  /** v1alpha1's deprecated Surging type and `rollingUpdate.type` alias. */
  surging: boolean;
  mutableSpecFields: readonly string[];
  specUpdateForbidden: string;
}

/**
 * Kruise's list, plus progressDeadlineSeconds (ours; mutable as a Deployment's, and the mutating webhook adds it to
 * objects stored without it at their next update) and nodeReadiness (ours). Kruise's error text is kept as it is.
 */
const MUTABLE_SPEC_FIELDS = [
  'template',
  'updateStrategy',
  'lifecycle',
  'nodeReadiness',
  'burstReplicas',
  'minReadySeconds',
  'revisionHistoryLimit',
  'progressDeadlineSeconds',
];

const RULES: Readonly<Record<ServedVersion, VersionRules>> = {
  [VERSION]: {
    rollingUpdateTypes: ROLLING_UPDATE_TYPES,
    surging: true,
    mutableSpecFields: MUTABLE_SPEC_FIELDS,
    specUpdateForbidden: SPEC_UPDATE_FORBIDDEN,
  },
  [V1BETA1]: {
    rollingUpdateTypes: ROLLING_UPDATE_TYPES_V1BETA1,
    surging: false,
    mutableSpecFields: [...MUTABLE_SPEC_FIELDS, 'scaleStrategy'],
    specUpdateForbidden: SPEC_UPDATE_FORBIDDEN_V1BETA1,
  },
};

/** A Go duration string (metav1.Duration) that parses and is not negative. */
function validateDuration(v: unknown, p: FieldPath): FieldError[] {
  if (typeof v !== 'string') return []; // a wrong type is the structural schema's error
  const ms = parseDuration(v);
  if (ms instanceof Error) return [invalid(p, v, ms.message)];
  return ms < 0 ? [invalid(p, v, NEGATIVE_ERROR)] : [];
}

const durationOf = (v: unknown): number | undefined => {
  if (typeof v !== 'string') return undefined;
  const ms = parseDuration(v);
  return ms instanceof Error ? undefined : ms;
};

/**
 * rollingUpdate.canary, with ExtendedDaemonSet's rules
 * (https://github.com/DataDog/extendeddaemonset/blob/main/api/v1alpha1/extendeddaemonset_validate.go): autoFail's
 * maxRestarts above autoPause's when both are enabled (strictly: equal would fail the canary before it pauses),
 * no duration nor noRestartsDuration with validation Manual; plus timeout above duration (EDS ignores such a timeout
 * silently), nodes at least 1, durations that parse, and spreadByNodeLabels as label keys. Unset values read as
 * their defaults (the mutating webhook sets them).
 */
function validateCanary(c: JsonObject, p: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (isSet(c.nodes)) {
    const nodeErrs = validateIntOrPercent(c.nodes, p.child('nodes'));
    errs.push(...nodeErrs);
    if (nodeErrs.length === 0 && intOrPercentValue(c.nodes) === 0)
      errs.push(invalid(p.child('nodes'), intOrStringText(c.nodes), 'must be greater than 0'));
  }
  if (isSet(c.nodeSelector)) errs.push(...validateLabelSelector(c.nodeSelector, p.child('nodeSelector')));
  const seen = new Set<string>();
  (arrayAt(c, 'spreadByNodeLabels') ?? []).forEach((key, i) => {
    if (typeof key !== 'string') return;
    const kp = p.child('spreadByNodeLabels').index(i);
    errs.push(...isQualifiedName(key).map((msg) => invalid(kp, key, msg)));
    if (seen.has(key)) errs.push(duplicate(kp, key));
    seen.add(key);
  });
  const validation = c.validation;
  if (isSet(validation) && validation !== '' && !(CANARY_VALIDATIONS as readonly unknown[]).includes(validation))
    errs.push(notSupported(p.child('validation'), validation, CANARY_VALIDATIONS));
  const manual = validation === 'Manual';
  const autoPause = objectAt(c, 'autoPause');
  const autoFail = objectAt(c, 'autoFail');
  for (const [v, fp] of [
    [c.duration, p.child('duration')],
    [c.noRestartsDuration, p.child('noRestartsDuration')],
    [autoPause?.maxStartupDuration, p.child('autoPause', 'maxStartupDuration')],
    [autoFail?.maxRestartsDuration, p.child('autoFail', 'maxRestartsDuration')],
    [autoFail?.timeout, p.child('autoFail', 'timeout')],
  ] as const)
    errs.push(...validateDuration(v, fp));
  if (manual) {
    for (const k of ['duration', 'noRestartsDuration'])
      if (isSet(c[k])) errs.push(forbidden(p.child(k), 'may not be set when validation is Manual'));
  }
  errs.push(...validateNonNegative(autoPause?.maxRestarts, p.child('autoPause', 'maxRestarts')));
  errs.push(...validateNonNegative(autoFail?.maxRestarts, p.child('autoFail', 'maxRestarts')));
  const pauseMax =
    typeof autoPause?.maxRestarts === 'number' ? autoPause.maxRestarts : DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS;
  const failMax =
    typeof autoFail?.maxRestarts === 'number' ? autoFail.maxRestarts : DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS;
  if (autoPause?.enabled !== false && autoFail?.enabled !== false && failMax >= 0 && failMax <= pauseMax)
    errs.push(
      invalid(p.child('autoFail', 'maxRestarts'), failMax, `must be greater than autoPause.maxRestarts (${pauseMax})`),
    );
  const timeout = durationOf(autoFail?.timeout);
  const duration = manual
    ? undefined
    : isSet(c.duration)
      ? durationOf(c.duration)
      : durationOf(DEFAULT_CANARY_DURATION);
  if (timeout !== undefined && duration !== undefined && timeout <= duration)
    errs.push(
      invalid(
        p.child('autoFail', 'timeout'),
        autoFail?.timeout,
        `must be greater than duration (${isSet(c.duration) ? text(c.duration) : DEFAULT_CANARY_DURATION})`,
      ),
    );
  return errs;
}

/**
 * rollingUpdate.priorityStrategy, with Kruise's rules (UpdatePriorityStrategy.FieldsValidation,
 * https://github.com/openkruise/kruise/blob/master/apis/apps/pub/update_priority.go): one of weightPriority and
 * orderPriority, weights 0-100, selectors not empty and valid, ordered keys not empty; plus ordered keys as label
 * keys (a key no label can have orders nothing).
 */
function validatePriorityStrategy(ps: JsonObject, p: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const weights = arrayAt(ps, 'weightPriority') ?? [];
  const orders = arrayAt(ps, 'orderPriority') ?? [];
  if (weights.length > 0 && orders.length > 0)
    errs.push(forbidden(p.child('orderPriority'), 'only one of weightPriority and orderPriority can be used'));
  weights.forEach((w, i) => {
    if (!isObject(w)) return;
    const wp = p.child('weightPriority').index(i);
    if (typeof w.weight === 'number' && (w.weight < 0 || w.weight > 100))
      errs.push(invalid(wp.child('weight'), w.weight, 'must be in the range 0-100'));
    const sel = w.matchSelector;
    if (isObject(sel)) {
      const count =
        Object.keys(objectAt(sel, 'matchLabels') ?? {}).length + (arrayAt(sel, 'matchExpressions') ?? []).length;
      if (count === 0) errs.push(invalid(wp.child('matchSelector'), sel, 'selector can not be empty'));
      errs.push(...validateLabelSelector(sel, wp.child('matchSelector')));
    }
  });
  orders.forEach((o, i) => {
    if (!isObject(o) || typeof o.orderedKey !== 'string') return;
    const kp = p.child('orderPriority').index(i).child('orderedKey');
    errs.push(...isQualifiedName(o.orderedKey).map((msg) => invalid(kp, o.orderedKey, msg)));
  });
  return errs;
}

/**
 * rollingUpdate.waves: topologyKey a label key (its absence is the structural schema's Required value),
 * availableSeconds >= 0 and below progressDeadlineSeconds (as a Deployment's minReadySeconds: waiting that long
 * with no pod changing would read as a stuck rollout).
 */
function validateWaves(w: JsonObject, p: FieldPath, progressDeadlineSeconds: unknown): FieldError[] {
  const errs: FieldError[] = [];
  if (typeof w.topologyKey === 'string')
    errs.push(...isQualifiedName(w.topologyKey).map((msg) => invalid(p.child('topologyKey'), w.topologyKey, msg)));
  errs.push(...validateNonNegative(w.availableSeconds, p.child('availableSeconds')));
  if (
    typeof w.availableSeconds === 'number' &&
    typeof progressDeadlineSeconds === 'number' &&
    w.availableSeconds >= progressDeadlineSeconds
  )
    errs.push(
      invalid(
        p.child('availableSeconds'),
        w.availableSeconds,
        `must be less than spec.progressDeadlineSeconds (${progressDeadlineSeconds})`,
      ),
    );
  return errs;
}

function validateRollingUpdate(
  ru: JsonObject,
  p: FieldPath,
  rules: VersionRules,
  progressDeadlineSeconds?: unknown,
): FieldError[] {
  const errs: FieldError[] = [];
  errs.push(...validateIntOrPercent(ru.maxUnavailable, p.child('maxUnavailable')));
  errs.push(...validateIntOrPercent(ru.maxSurge, p.child('maxSurge')));
  const unavailable = intOrPercentValue(ru.maxUnavailable);
  const surge = intOrPercentValue(ru.maxSurge);
  // A malformed value is reported above; the pair rules would only add noise about it.
  const hasUnavailable = unavailable !== undefined && unavailable !== 0;
  const hasSurge = surge !== undefined && surge !== 0;
  if (unavailable !== undefined && surge !== undefined) {
    if (hasUnavailable && hasSurge)
      errs.push(
        invalid(p.child('maxSurge'), intOrStringText(ru.maxSurge), 'may not be set when maxUnavailable is non-zero'),
      );
    else if (!hasUnavailable && !hasSurge)
      errs.push(required(p.child('maxUnavailable'), 'cannot be 0 when maxSurge is 0'));
  }
  const type = ru.rollingUpdateType;
  // The v1alpha1 alias is moved away by the mutating webhook; left over, it disagrees with rollingUpdateType.
  // v1beta1 has no such field: the apiserver prunes it before admission.
  if (rules.surging && isSet(ru.type) && ru.type !== type)
    errs.push(invalid(p.child('type'), text(ru.type), `conflicts with rollingUpdateType "${text(type)}"`));
  if (type === 'InPlaceIfPossible') {
    if (hasSurge)
      errs.push(invalid(p.child('maxSurge'), intOrStringText(ru.maxSurge), 'must be 0 for InPlaceIfPossible type'));
  } else if (rules.surging && type === 'Surging') {
    if (hasUnavailable)
      errs.push(invalid(p.child('maxUnavailable'), intOrStringText(ru.maxUnavailable), 'must be 0 for Surging type'));
  } else if (isSet(type) && type !== '' && type !== 'Standard') {
    // v1beta1 refuses Surging here, with Kruise's list of its two types.
    errs.push(notSupported(p.child('rollingUpdateType'), type, rules.rollingUpdateTypes));
  }
  if (isSet(ru.partition)) errs.push(...validateIntOrPercent(ru.partition, p.child('partition')));
  // Validated as spec.selector is: Kruise does not, and a selector that does not parse matched no node, so the
  // rollout then updated nothing and reported itself complete.
  errs.push(...validateLabelSelector(ru.selector, p.child('selector')));
  const unhealthy = ru.unhealthyNodes;
  if (isSet(unhealthy) && unhealthy !== '' && !(UNHEALTHY_NODES_POLICIES as readonly unknown[]).includes(unhealthy))
    errs.push(notSupported(p.child('unhealthyNodes'), unhealthy, UNHEALTHY_NODES_POLICIES));
  const canary = objectAt(ru, 'canary');
  if (canary) errs.push(...validateCanary(canary, p.child('canary')));
  const priority = objectAt(ru, 'priorityStrategy');
  if (priority) errs.push(...validatePriorityStrategy(priority, p.child('priorityStrategy')));
  const waves = objectAt(ru, 'waves');
  if (waves) errs.push(...validateWaves(waves, p.child('waves'), progressDeadlineSeconds));
  return errs;
}

function validateUpdateStrategy(
  strategy: JsonObject | undefined,
  p: FieldPath,
  rules: VersionRules,
  progressDeadlineSeconds?: unknown,
): FieldError[] {
  const type = strategy?.type;
  if (type === 'OnDelete') return [];
  if (type === 'RollingUpdate') {
    const ru = objectAt(strategy, 'rollingUpdate');
    if (!ru) return [required(p.child('rollingUpdate'))];
    return validateRollingUpdate(ru, p.child('rollingUpdate'), rules, progressDeadlineSeconds);
  }
  // Kruise reports the whole strategy struct at spec.updateStrategy; the type field is what the user must fix.
  return [notSupported(p.child('type'), type ?? '', UPDATE_STRATEGY_TYPES)];
}

/** A selector that labelSelectorMatches can read: malformed ones are reported by shapeErrors/schemaErrors. */
function wellFormedSelector(selector: unknown): boolean {
  if (!isObject(selector)) return false;
  const { matchLabels, matchExpressions } = selector;
  if (isSet(matchLabels) && !isObject(matchLabels)) return false;
  if (!isSet(matchExpressions)) return true;
  return (
    Array.isArray(matchExpressions) &&
    matchExpressions.every(
      (r) => isObject(r) && typeof r.key === 'string' && (!isSet(r.values) || Array.isArray(r.values)),
    )
  );
}

function validateSpec(spec: JsonObject | undefined, rules: VersionRules): FieldError[] {
  const p = path('spec');
  const errs: FieldError[] = [];
  const selector = spec?.selector;
  const selectorErrs = validateLabelSelector(selector, p.child('selector'));
  errs.push(...selectorErrs);
  const rawTemplate = spec?.template;
  const templateMeta = isObject(rawTemplate) ? objectAt(rawTemplate, 'metadata') : undefined;
  const templateLabels = templateMeta?.labels;
  // A nil selector selects nothing, so it fails here too; a selector that does not parse is reported above.
  if (selectorErrs.length === 0 && (selector === undefined || selector === null || wellFormedSelector(selector))) {
    const labels = isObject(templateLabels) ? (templateLabels as Record<string, string>) : undefined;
    if (!labelSelectorMatches((selector ?? undefined) as LabelSelector | undefined, labels))
      errs.push(
        invalid(
          p.child('template', 'metadata', 'labels'),
          templateLabels ?? null,
          '`selector` does not match template `labels`',
        ),
      );
  }
  if (isObject(selector)) {
    const matchLabels = objectAt(selector, 'matchLabels');
    const count = Object.keys(matchLabels ?? {}).length + (arrayAt(selector, 'matchExpressions') ?? []).length;
    if (count === 0) errs.push(invalid(p.child('selector'), selector, 'empty selector is invalid for daemonset'));
  }

  // As Kruise: the template is validated after pod defaults are applied to a copy.
  const template = isObject(rawTemplate) ? defaultedPodTemplate(rawTemplate) : rawTemplate;
  errs.push(...validatePodTemplate(template, p.child('template')));
  const podSpec = isObject(template) ? objectAt(template, 'spec') : undefined;
  if (podSpec) {
    if (podSpec.restartPolicy !== 'Always')
      errs.push(notSupported(p.child('template', 'spec', 'restartPolicy'), podSpec.restartPolicy ?? '', ['Always']));
    if (isSet(podSpec.activeDeadlineSeconds))
      errs.push(
        forbidden(
          p.child('template', 'spec', 'activeDeadlineSeconds'),
          'activeDeadlineSeconds in DaemonSet is not Supported',
        ),
      );
  }
  errs.push(...validateNonNegative(spec?.minReadySeconds, p.child('minReadySeconds')));
  // As a Deployment's (ValidateDeploymentSpec in
  // https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/apps/validation/validation.go).
  const deadline = spec?.progressDeadlineSeconds;
  if (typeof deadline === 'number') {
    const deadlineErrs = validateNonNegative(deadline, p.child('progressDeadlineSeconds'));
    errs.push(...deadlineErrs);
    const minReady = typeof spec?.minReadySeconds === 'number' ? spec.minReadySeconds : 0;
    if (deadlineErrs.length === 0 && deadline <= minReady)
      errs.push(invalid(p.child('progressDeadlineSeconds'), deadline, 'must be greater than minReadySeconds'));
  }
  errs.push(
    ...validateUpdateStrategy(
      objectAt(spec, 'updateStrategy'),
      p.child('updateStrategy'),
      rules,
      spec?.progressDeadlineSeconds,
    ),
  );
  errs.push(...validateNonNegative(spec?.revisionHistoryLimit, p.child('revisionHistoryLimit')));
  if (isSet(spec?.burstReplicas)) errs.push(...validateIntOrPercent(spec?.burstReplicas, p.child('burstReplicas')));
  const lifecycle = objectAt(spec, 'lifecycle');
  if (lifecycle && isSet(lifecycle.inPlaceUpdate))
    errs.push(forbidden(p.child('lifecycle', 'inPlaceUpdate'), 'inPlaceUpdate hook has not supported yet'));
  const readiness = objectAt(spec, 'nodeReadiness');
  if (readiness) errs.push(...validateNodeReadiness(readiness, p.child('nodeReadiness')));
  return errs;
}

/** spec.nodeReadiness: a taint as the apiserver validates a node's (validateNodeTaints), a known mode. */
function validateNodeReadiness(readiness: JsonObject, p: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const taint = objectAt(readiness, 'taint');
  if (!taint) return [required(p.child('taint'), '')];
  const key = taint.key;
  if (typeof key !== 'string' || key === '') errs.push(required(p.child('taint', 'key'), ''));
  else errs.push(...isQualifiedName(key).map((msg) => invalid(p.child('taint', 'key'), key, msg)));
  if (typeof taint.value === 'string' && taint.value !== '')
    errs.push(...isValidLabelValue(taint.value).map((msg) => invalid(p.child('taint', 'value'), taint.value, msg)));
  if (isSet(taint.effect) && !(TAINT_EFFECTS as readonly unknown[]).includes(taint.effect))
    errs.push(notSupported(p.child('taint', 'effect'), taint.effect, TAINT_EFFECTS));
  if (isSet(readiness.mode) && !(NODE_READINESS_MODES as readonly unknown[]).includes(readiness.mode))
    errs.push(notSupported(p.child('mode'), readiness.mode, NODE_READINESS_MODES));
  if (isSet(readiness.unreadySeconds))
    errs.push(...validateNonNegative(readiness.unreadySeconds, p.child('unreadySeconds')));
  return errs;
}

/** The rules of a served version; throws for any other (the webhook refuses those before validating). */
function rulesOf(version: ServedVersion): VersionRules {
  const rules = Object.hasOwn(RULES, version) ? RULES[version] : undefined;
  if (!rules) throw new Error(`no DaemonSet validation for version ${String(version)}`);
  return rules;
}

/**
 * All errors of a DaemonSet of `version` on CREATE: the structural schema of that version first, then Kruise's
 * rules in Kruise's order. Errors of the same path and text are reported once.
 */
export function validateDaemonSet(obj: JsonObject, version: ServedVersion = VERSION): FieldError[] {
  const rules = rulesOf(version);
  const errs = [
    ...schemaErrors(obj, version),
    ...validateObjectMeta(objectAt(obj, 'metadata')),
    ...validateSpec(objectAt(obj, 'spec'), rules),
    ...validateStash(obj),
  ];
  return dedupe(errs);
}

/**
 * A conversion stash annotation (src/api/conversion.ts) whose values the other version could not hold: written by
 * hand, it would otherwise be restored into the stored object, which every later update would then fail on. The
 * conversion leaves such values out anyway; refusing the write says so where the user can see it.
 */
function validateStash(obj: JsonObject): FieldError[] {
  try {
    return stashErrors(obj).map((w) =>
      invalid(path('metadata', 'annotations').key(w.annotation), '(stash)', `would set ${w.field}, which ${w.message}`),
    );
  } catch {
    // A field the conversion cannot read at all: reported by the schema checks.
    return [];
  }
}

/** Semantic equality: null, absent, empty maps and empty lists are the same (apimachinery Semantic.DeepEqual). */
export function semanticEqual(a: unknown, b: unknown): boolean {
  // The same value (the restored mutable fields): no walk through it, however deep the stored object is.
  if (a === b) return true;
  const empty = (v: unknown) =>
    v === undefined ||
    v === null ||
    (Array.isArray(v) && v.length === 0) ||
    (isObject(v) && Object.keys(v).length === 0);
  if (empty(a) && empty(b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => semanticEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    // Own fields only: a missing `constructor` is absent, not Object.prototype.constructor.
    const own = (o: JsonObject, k: string) => (Object.hasOwn(o, k) ? o[k] : undefined);
    return [...keys].every((k) => semanticEqual(own(a, k), own(b, k)));
  }
  return a === b;
}

/**
 * Errors on UPDATE (both objects in `version`): the full create validation of the new object, then the
 * immutability rule (only spec.selector; every field of the version's mutable list may change).
 */
export function validateDaemonSetUpdate(
  obj: JsonObject,
  oldObj: JsonObject,
  version: ServedVersion = VERSION,
): FieldError[] {
  const rules = rulesOf(version);
  const errs = validateDaemonSet(obj, version);
  const spec = objectAt(obj, 'spec') ?? {};
  const oldSpec = objectAt(oldObj, 'spec') ?? {};
  const restored: JsonObject = { ...spec };
  for (const k of rules.mutableSpecFields) {
    if (Object.hasOwn(oldSpec, k)) restored[k] = oldSpec[k];
    else delete restored[k];
  }
  if (!semanticEqual(restored, oldSpec)) errs.push(forbidden(path('spec'), rules.specUpdateForbidden));
  return dedupe(errs);
}

export function dedupe(errs: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errs.filter((e) => {
    const key = `${e.field}\u0000${e.type}\u0000${JSON.stringify(e.badValue)}\u0000${e.detail}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
