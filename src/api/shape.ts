// The shape of an object before anything reads it: nesting depth and JSON types. A review for a DaemonSet whose
// fields have the wrong JSON type (`matchExpressions: "x"`, `containers: [null]`, a string for an object) is
// refused as a bad request naming the field, as Kruise's webhooks refuse a body their typed decoder cannot read
// (admission.Errored(http.StatusBadRequest, err) in pkg/webhook/daemonset/mutating and validating,
// github.com/openkruise/kruise), and defaulting and validation only ever see objects of the right shape.
import { POD_SHAPES } from './pod-shapes.generated.ts';
import { FieldPath, forbidden, invalid, typeInvalid, type FieldError } from './field.ts';

/**
 * Deepest nesting accepted, counting the object itself as level 1. A DaemonSet's deepest real field
 * (spec.template.spec.affinity.nodeAffinity...matchExpressions[0].values[0], or the same path under
 * metadata.managedFields[].fieldsV1) is about 15 levels down; Go's encoding/json stops at 10,000, which is
 * far deeper than the recursion of defaulting, validation and patch building can safely go in Node.
 */
export const MAX_NESTING_DEPTH = 100;

/** Longest field path text put in a message: the path of a too-deep value is itself long. */
const MAX_PATH_TEXT = 256;

/** A step of a field path: an object's key, or (a number) an array's index. */
type Step = string | number;

function pathText(steps: readonly Step[], root: string): string {
  let text = root;
  for (const step of steps) {
    if (typeof step === 'number') text += `[${step}]`;
    else text = text ? `${text}.${step}` : step;
    if (text.length > MAX_PATH_TEXT) return `${text.slice(0, MAX_PATH_TEXT)}...`;
  }
  return text;
}

/**
 * Forbidden when `value` nests deeper than `max` levels, at the path of the first value past the limit. The walk
 * recurses at most `max` levels (a value nested 100,000 levels deep costs no deeper stack), and makes the path
 * only for the error: it runs on every review, and allocates nothing for one within the limit.
 */
export function nestingError(value: unknown, root = '', max = MAX_NESTING_DEPTH): FieldError | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const steps = tooDeep(value, 1, max);
  if (!steps) return undefined;
  return forbidden(
    FieldPath.root(pathText(steps.reverse(), root)),
    `must not be nested more than ${max} levels deep (the limit of this webhook; no Kubernetes object comes near it)`,
  );
}

/** The steps, innermost first, to the first object or array below `value` (at `level`) that is past `max`. */
function tooDeep(value: object, level: number, max: number): Step[] | undefined {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const steps = stepsBelow(value[i], i, level, max);
      if (steps) return steps;
    }
    return undefined;
  }
  // for-in over a parsed object reads V8's enumeration cache, where Object.keys would copy the keys.
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    const steps = stepsBelow((value as Record<string, unknown>)[k], k, level, max);
    if (steps) return steps;
  }
  return undefined;
}

/** tooDeep of a child at `step` of a value at `level`: [step] when the child itself is past `max`. */
function stepsBelow(child: unknown, step: Step, level: number, max: number): Step[] | undefined {
  if (typeof child !== 'object' || child === null) return undefined;
  const steps = level >= max ? [] : tooDeep(child, level + 1, max);
  steps?.push(step);
  return steps;
}

/** The JSON type name kube-openapi reports for a value. */
export function jsonTypeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/**
 * kube-openapi's InvalidType as the apiserver reports it for a custom resource: the bad value is the JSON type
 * name, never the value itself (which may be megabytes).
 */
export function wrongType(p: FieldPath, v: unknown, want: string): FieldError {
  const actual = jsonTypeName(v);
  return typeInvalid(p, actual, `${p.toString()} in body must be of type ${want}: "${actual}"`);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The JSON type a kind of the shape table needs, in kube-openapi's words. */
function wantedType(kind: string): string {
  if (kind.startsWith('[')) return 'array';
  if (kind.startsWith('{')) return 'object';
  switch (kind) {
    case 'string':
    case 'date':
      return 'string';
    case 'int32':
    case 'int64':
      return 'integer';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'intOrString':
      return 'integer,string';
    case 'quantity':
      return 'number,string';
    default:
      return 'object';
  }
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * What is wrong with `v` (not null) for a scalar `kind`: nothing (undefined), its JSON type, or (an integer) its
 * range; 'walk' for a list, map or object kind, whose parts checkKind walks.
 */
function scalarFault(v: unknown, kind: string): 'type' | 'range' | 'walk' | undefined {
  switch (kind) {
    case 'any':
      return undefined;
    case 'string':
    case 'date':
      return typeof v === 'string' ? undefined : 'type';
    case 'boolean':
      return typeof v === 'boolean' ? undefined : 'type';
    case 'number':
    case 'quantity':
      if (typeof v === 'number') return Number.isFinite(v) ? undefined : 'type';
      return kind === 'quantity' && typeof v === 'string' ? undefined : 'type';
    case 'intOrString':
    case 'int32':
    case 'int64':
      if (typeof v === 'string' && kind === 'intOrString') return undefined;
      if (typeof v !== 'number' || !Number.isInteger(v)) return 'type';
      return (kind === 'int64' ? Number.isSafeInteger(v) : v >= INT32_MIN && v <= INT32_MAX) ? undefined : 'range';
    default:
      return 'walk';
  }
}

/** The element kind of a list (`[T]`) or map (`{T}`) kind, one string per kind of the table. */
const innerKinds = new Map<string, string>();
function innerKind(kind: string): string {
  let inner = innerKinds.get(kind);
  if (inner === undefined) innerKinds.set(kind, (inner = kind.slice(1, -1)));
  return inner;
}

/**
 * Errors of `v` against `kind` (see pod-shapes.generated.ts). null is Go's zero value: fine for a field. `fault` is
 * scalarFault(v, kind) when the caller has it already (it asks before making the path of a part).
 */
function checkKind(
  v: unknown,
  kind: string,
  p: FieldPath,
  errs: FieldError[],
  fault = v === null || v === undefined ? undefined : scalarFault(v, kind),
): void {
  if (fault === 'type') return void errs.push(wrongType(p, v, wantedType(kind)));
  if (fault === 'range') {
    const format = kind === 'int64' ? 'int64' : 'int32';
    return void errs.push(invalid(p, v, `${p.toString()} in body must be of type ${format}: "${String(v)}"`));
  }
  if (fault === undefined) return;
  if (kind.startsWith('[')) {
    if (!Array.isArray(v)) return void errs.push(wrongType(p, v, wantedType(kind)));
    const inner = innerKind(kind);
    // A null element is no value of the list's type: refused, where Go would decode a zero value.
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (x === null) errs.push(wrongType(p.index(i), x, wantedType(inner)));
      else {
        const f = scalarFault(x, inner);
        if (f !== undefined) checkKind(x, inner, p.index(i), errs, f);
      }
    }
    return;
  }
  if (!isPlainObject(v)) return void errs.push(wrongType(p, v, wantedType(kind)));
  if (kind.startsWith('{')) {
    const inner = innerKind(kind);
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      const x = v[k];
      if (x === null) errs.push(wrongType(p.key(k), x, wantedType(inner)));
      else {
        const f = scalarFault(x, inner);
        if (f !== undefined) checkKind(x, inner, p.key(k), errs, f);
      }
    }
    return;
  }
  const fields = POD_SHAPES[kind];
  if (!fields) return;
  // Own keys only: a `__proto__` or `constructor` key is an unknown field like any other. A field's path is made
  // only to report it or to walk into it: most are scalars that fit.
  for (const k in v) {
    if (!Object.hasOwn(v, k) || !Object.hasOwn(fields, k)) continue;
    const x = v[k];
    const fieldKind = fields[k] as string;
    if (x === null || x === undefined) continue;
    const f = scalarFault(x, fieldKind);
    if (f !== undefined) checkKind(x, fieldKind, p.child(k), errs, f);
  }
}

/** Shape errors of a core/v1 type of the table (e.g. a PodTemplateSpec at spec.template). */
export function typedShapeErrors(value: unknown, type: string, p: FieldPath): FieldError[] {
  if (!Object.hasOwn(POD_SHAPES, type)) throw new Error(`no shape for ${type}`);
  const errs: FieldError[] = [];
  checkKind(value, type, p, errs);
  return errs;
}
