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

interface Frame {
  value: object;
  keys: string[] | undefined; // undefined for arrays
  next: number;
}

function pathText(frames: readonly Frame[], root: string): string {
  let text = root;
  for (const f of frames) {
    const i = f.next - 1;
    if (f.keys) text = text ? `${text}.${f.keys[i] ?? ''}` : (f.keys[i] ?? '');
    else text += `[${i}]`;
    if (text.length > MAX_PATH_TEXT) return `${text.slice(0, MAX_PATH_TEXT)}...`;
  }
  return text;
}

/**
 * Forbidden when `value` nests deeper than `max` levels, at the path of the first value past the limit. The
 * walk is iterative (an explicit stack), so a value nested 100,000 levels deep is measured without recursion.
 */
export function nestingError(value: unknown, root = '', max = MAX_NESTING_DEPTH): FieldError | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const frames: Frame[] = [{ value, keys: Array.isArray(value) ? undefined : Object.keys(value), next: 0 }];
  while (frames.length > 0) {
    const top = frames[frames.length - 1] as Frame;
    const length = top.keys ? top.keys.length : (top.value as unknown[]).length;
    if (top.next >= length) {
      frames.pop();
      continue;
    }
    const i = top.next++;
    const child: unknown = top.keys
      ? (top.value as Record<string, unknown>)[top.keys[i] as string]
      : (top.value as unknown[])[i];
    if (typeof child !== 'object' || child === null) continue;
    if (frames.length >= max) {
      return forbidden(
        FieldPath.root(pathText(frames, root)),
        `must not be nested more than ${max} levels deep (the limit of this webhook; no Kubernetes object comes near it)`,
      );
    }
    frames.push({ value: child, keys: Array.isArray(child) ? undefined : Object.keys(child), next: 0 });
  }
  return undefined;
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

/** Errors of `v` against `kind` (see pod-shapes.generated.ts). null is Go's zero value: fine for a field. */
function checkKind(v: unknown, kind: string, p: FieldPath, errs: FieldError[]): void {
  if (v === null || v === undefined) return;
  const want = wantedType(kind);
  if (kind.startsWith('[') || kind.startsWith('{')) {
    const inner = kind.slice(1, -1);
    if (kind.startsWith('[')) {
      if (!Array.isArray(v)) return void errs.push(wrongType(p, v, want));
      // A null element is no value of the list's type: refused, where Go would decode a zero value.
      v.forEach((x, i) =>
        x === null ? errs.push(wrongType(p.index(i), x, wantedType(inner))) : checkKind(x, inner, p.index(i), errs),
      );
    } else {
      if (!isPlainObject(v)) return void errs.push(wrongType(p, v, want));
      for (const k of Object.keys(v)) {
        const x = v[k];
        if (x === null) errs.push(wrongType(p.key(k), x, wantedType(inner)));
        else checkKind(x, inner, p.key(k), errs);
      }
    }
    return;
  }
  switch (kind) {
    case 'any':
      return;
    case 'string':
    case 'date':
    case 'boolean':
      if (typeof v !== want) errs.push(wrongType(p, v, want));
      return;
    case 'number':
    case 'quantity':
      if (typeof v === 'number' && !Number.isFinite(v)) errs.push(wrongType(p, v, want));
      else if (typeof v !== 'number' && (kind === 'number' || typeof v !== 'string')) errs.push(wrongType(p, v, want));
      return;
    case 'int32':
    case 'int64':
    case 'intOrString':
      if (typeof v === 'string' && kind === 'intOrString') return;
      if (typeof v !== 'number' || !Number.isInteger(v)) return void errs.push(wrongType(p, v, want));
      if (kind === 'int64' ? !Number.isSafeInteger(v) : v < INT32_MIN || v > INT32_MAX) {
        const format = kind === 'int64' ? 'int64' : 'int32';
        errs.push(invalid(p, v, `${p.toString()} in body must be of type ${format}: "${String(v)}"`));
      }
      return;
  }
  const fields = POD_SHAPES[kind];
  if (!isPlainObject(v)) return void errs.push(wrongType(p, v, want));
  if (!fields) return;
  // Own keys only: a `__proto__` or `constructor` key is an unknown field like any other.
  for (const k of Object.keys(v)) {
    if (Object.hasOwn(fields, k)) checkKind(v[k], fields[k] as string, p.child(k), errs);
  }
}

/** Shape errors of a core/v1 type of the table (e.g. a PodTemplateSpec at spec.template). */
export function typedShapeErrors(value: unknown, type: string, p: FieldPath): FieldError[] {
  if (!Object.hasOwn(POD_SHAPES, type)) throw new Error(`no shape for ${type}`);
  const errs: FieldError[] = [];
  checkKind(value, type, p, errs);
  return errs;
}
