// Conversion of apps.kruise.io DaemonSet between v1alpha1 and v1beta1, as pure functions over plain JSON: the CRD
// conversion webhook (webhook/app.ts, /convert) and the controller (which reads and writes v1beta1, the storage
// version, and works on the v1alpha1 model) both call convertDaemonSet.
//
// The mapping is Kruise's (https://github.com/openkruise/kruise/blob/v1.9.0/apis/apps/v1alpha1/daemonset_conversion.go):
// v1alpha1 Surging -> v1beta1 Standard; the annotation daemonset.kruise.io/progressive-create-pod: "true" <->
// spec.scaleStrategy.partitionedScaling: true; status.daemonSetHash <-> status.updateRevision. Beyond Kruise:
// - the v1alpha1 `rollingUpdate.type` alias (docs/differences.md#rollingupdatetype-alias) means rollingUpdateType
//   when that is unset, as the defaulter reads it; v1beta1 has no alias, so it becomes rollingUpdateType there;
// - a v1beta1 object carries the mapped annotation as partitionedScaling only (not both, as Kruise's copy of the
//   metadata leaves it), so that v1beta1 has one place that says it; and partitionedScaling false (or absent)
//   with the annotation "true" in a v1beta1 object's metadata means false, as the v1beta1 controller reads it;
// - it is lossless. What the target version cannot say travels in one annotation on the converted object, named
//   after the version whose data it holds (STASH_ANNOTATIONS): `conversion.advanced-daemonset.io/v1alpha1` on a
//   v1beta1 object, `conversion.advanced-daemonset.io/v1beta1` on a v1alpha1 object. Its value is the JSON
//   Stash below: for each field where converting back would not give the source value, the source value and the
//   value of the field it was mapped to (the guard). Converting back restores a value only while its guard still
//   holds that value, so a field edited in the other version wins; the annotation is then removed (and made anew
//   by the next conversion that needs it). So for every object x, convert(convert(x, B), A) deep-equals x (unless x
//   carries a stash for B that no conversion made: that one is made anew, not kept as written); everything the
//   mapping does not touch (the template, unknown fields, metadata, the rest of status) is the very same value,
//   shared, not copied.
//
// Malformed input (not a DaemonSet of a served version, a field the mapping reads of the wrong JSON type) throws a
// ConversionError naming the field. A stash that cannot be read (not JSON, not a Stash) is not applied; it is kept,
// as an ordinary annotation, and comes back unchanged on the return trip. A stash is never trusted: anyone who may
// write a DaemonSet may write the annotation, so each value it would restore is checked as the target version
// requires (stashedValueError: the enums and JSON types of the fields a stash may restore), and one that fails is
// not restored but reported in `warnings` (the conversion webhook logs them; admission refuses an object whose stash
// would not convert cleanly: stashErrors).
import { cloneJson } from '../k8s/json.ts';
import {
  API_GROUP,
  API_VERSION,
  API_VERSION_V1BETA1,
  KIND,
  PROGRESSIVE_CREATE_POD_ANNOTATION,
  V1BETA1,
  VERSION,
} from './constants.ts';
import { isObject, type JsonObject } from './defaults.ts';
import { ROLLING_UPDATE_TYPES, ROLLING_UPDATE_TYPES_V1BETA1 } from './schema.ts';
import { jsonTypeName, MAX_NESTING_DEPTH, nestingError } from './shape.ts';
import type { DaemonSet, DaemonSetStatus, DaemonSetStatusV1beta1, DaemonSetV1beta1 } from './types.ts';

/** Annotation (on the converted object) holding what its version cannot express, by the version the data is of. */
export const STASH_ANNOTATIONS = {
  [VERSION]: 'conversion.advanced-daemonset.io/v1alpha1',
  [V1BETA1]: 'conversion.advanced-daemonset.io/v1beta1',
} as const;
const RESERVED = new Set<string>(Object.values(STASH_ANNOTATIONS));

/** A field path: keys from the object's root (annotation keys contain dots, so not a dotted string). */
export type Path = readonly string[];

/** One field the target version could not carry. */
export interface StashField {
  /** Where the value goes back, in the source version. */
  path: string[];
  /** The source value; absent: the field was absent (converting back removes it). */
  value?: unknown;
  /**
   * The field of the converted object it was mapped to, and the value it had then: the value is restored only
   * while that field still holds it. Absent for a stash annotation that was itself carried (always restored).
   */
  mapped?: { path: string[]; value?: unknown };
}

/** The value of a stash annotation, as JSON. */
export interface Stash {
  fields: StashField[];
  /**
   * What the converted object's metadata.annotations was before the stash was added, when it was `{}` or null:
   * removing the stash leaves that. Without it, removing the stash removes the then-empty map (the stash made it).
   */
  annotationsWere?: Record<string, never> | null;
}

/** A DaemonSet that cannot be converted: not a DaemonSet of a served version, or a field of the wrong JSON type. */
export class ConversionError extends Error {
  /** The field at fault ("" for the object itself), as a dotted path. */
  readonly field: string;
  constructor(field: string, message: string) {
    super(field ? `${field}: ${message}` : message);
    this.name = 'ConversionError';
    this.field = field;
  }
}

type Version = typeof VERSION | typeof V1BETA1;
/** The version of a served apiVersion (a plain comparison: no lookup by a key the input chose). */
const versionOf = (apiVersion: unknown): Version | undefined =>
  apiVersion === API_VERSION ? VERSION : apiVersion === API_VERSION_V1BETA1 ? V1BETA1 : undefined;

const ANNOTATIONS: Path = ['metadata', 'annotations'];
const ROLLING_UPDATE: Path = ['spec', 'updateStrategy', 'rollingUpdate'];
const ROLLING_UPDATE_TYPE: Path = [...ROLLING_UPDATE, 'rollingUpdateType'];
const ROLLING_UPDATE_ALIAS: Path = [...ROLLING_UPDATE, 'type'];
const SCALE_STRATEGY: Path = ['spec', 'scaleStrategy'];
const PROGRESSIVE: Path = [...ANNOTATIONS, PROGRESSIVE_CREATE_POD_ANNOTATION];
const DAEMON_SET_HASH: Path = ['status', 'daemonSetHash'];
const UPDATE_REVISION: Path = ['status', 'updateRevision'];

// -------------------------------------------------------------------------------------------------------------
// Public API

/**
 * `obj` (an apps.kruise.io DaemonSet, v1alpha1 or v1beta1) in `toApiVersion`. An object already in that version is
 * returned as it is (the same reference). The result shares every subtree the conversion does not change with
 * `obj`: treat both as immutable (or clone). Throws ConversionError for an unknown version or a malformed object.
 */
/** A stashed value that was not restored, because the target version could not hold it. */
export interface StashWarning {
  /** The stash annotation's key. */
  annotation: string;
  /** The field it would have restored, dotted. */
  field: string;
  message: string;
}

/**
 * `obj` in `toApiVersion`. Stashed values the target version cannot hold are left out and, when `warnings` is
 * given, reported there.
 */
export function convertDaemonSet(obj: unknown, toApiVersion: string, warnings?: StashWarning[]): JsonObject {
  const to = versionOf(toApiVersion);
  if (!to) throw unsupported('desired apiVersion', toApiVersion, [API_VERSION, API_VERSION_V1BETA1]);
  const x = checkDaemonSet(obj);
  const from = versionOf(x.apiVersion) as Version;
  if (from === to) return x;
  return convertBetween(x, from, to, warnings ?? []);
}

/**
 * What a stash annotation of `obj` (a DaemonSet of a served version) would restore that its version cannot hold, by
 * annotation: empty when every stash converts cleanly. Admission refuses such an object (validation.ts).
 */
export function stashErrors(obj: JsonObject): StashWarning[] {
  const from = versionOf(obj.apiVersion);
  if (!from) return [];
  const warnings: StashWarning[] = [];
  for (const to of [VERSION, V1BETA1] as const) {
    if (to === from || scalarAt(obj, [...ANNOTATIONS, STASH_ANNOTATIONS[to]], 'string') === undefined) continue;
    convertBetween(obj, from, to, warnings);
  }
  return warnings;
}

/** A v1beta1 (or v1alpha1) DaemonSet as the controller's internal model, the v1alpha1 DaemonSet. */
export function toInternal(obj: unknown): DaemonSet {
  return convertDaemonSet(obj, API_VERSION) as unknown as DaemonSet;
}

/** The internal model (v1alpha1) as v1beta1, for a write of the whole object. */
export function toV1beta1(ds: unknown): DaemonSetV1beta1 {
  return convertDaemonSet(ds, API_VERSION_V1BETA1) as unknown as DaemonSetV1beta1;
}

/**
 * The planner's status (v1alpha1) as v1beta1, for a write of the status subresource: daemonSetHash becomes
 * updateRevision (omitted when empty, as Kruise's `omitempty`), in its place; everything else is the same.
 */
export function statusToV1beta1(status: DaemonSetStatus): DaemonSetStatusV1beta1 {
  const out: JsonObject = {};
  renameInto(
    out,
    status as unknown as JsonObject,
    'daemonSetHash',
    'updateRevision',
    status.daemonSetHash || undefined,
  );
  return out as unknown as DaemonSetStatusV1beta1;
}

// -------------------------------------------------------------------------------------------------------------
// Reading the input

const cut = (s: string): string => (s.length > 100 ? `${s.slice(0, 100)}...` : s);

/** A value for a message: a string quoted (cut), anything else by its JSON type. */
const shown = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(cut(v)) : jsonTypeName(v));

function unsupported(field: string, v: unknown, supported: readonly string[]): ConversionError {
  const values = supported.map((s) => JSON.stringify(s)).join(', ');
  return new ConversionError(field, `Unsupported value: ${shown(v)}: supported values: ${values}`);
}

const dotted = (path: Path): string =>
  path.map((k, i) => (i > 0 && /[./]/.test(k) ? `[${k}]` : i > 0 ? `.${k}` : k)).join('');

const getOwn = (o: JsonObject, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined);

/** The value at `path` (own properties of objects only); undefined when any step is missing. */
function get(root: unknown, path: Path): unknown {
  let v: unknown = root;
  for (const key of path) {
    if (!isObject(v)) return undefined;
    v = getOwn(v, key);
  }
  return v;
}

/** The object at `path`; undefined when absent or null; ConversionError for another type there. */
function objectAt(root: JsonObject, path: Path): JsonObject | undefined {
  let v: unknown = root;
  for (let i = 0; i < path.length; i++) {
    v = getOwn(v as JsonObject, path[i] as string);
    if (v === undefined || v === null) return undefined;
    if (!isObject(v)) throw new ConversionError(dotted(path.slice(0, i + 1)), `must be an object, not ${shown(v)}`);
  }
  return v as JsonObject;
}

/** A scalar the mapping reads: undefined when absent or null; ConversionError for another JSON type. */
function scalarAt<T extends 'string' | 'boolean'>(
  root: JsonObject,
  path: Path,
  type: T,
): (T extends 'string' ? string : boolean) | undefined {
  const parent = objectAt(root, path.slice(0, -1));
  const v = parent ? getOwn(parent, path[path.length - 1] as string) : undefined;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== type) throw new ConversionError(dotted(path), `must be a ${type}, not ${shown(v)}`);
  return v as T extends 'string' ? string : boolean;
}

/** Checks what every conversion reads and returns the object. */
function checkDaemonSet(obj: unknown): JsonObject {
  if (!isObject(obj)) throw new ConversionError('', `the object must be a JSON object, not ${shown(obj)}`);
  for (const key of ['apiVersion', 'kind'])
    if (getOwn(obj, key) === undefined) throw new ConversionError(key, 'Required value');
  const kind = getOwn(obj, 'kind');
  if (kind !== KIND) throw unsupported('kind', kind, [KIND]);
  const apiVersion = getOwn(obj, 'apiVersion');
  if (!versionOf(apiVersion)) {
    const group = typeof apiVersion === 'string' ? apiVersion.split('/')[0] : undefined;
    if (group !== API_GROUP && typeof apiVersion === 'string' && apiVersion.includes('/'))
      throw new ConversionError('apiVersion', `${shown(apiVersion)} is not of the group ${API_GROUP}`);
    throw unsupported('apiVersion', apiVersion, [API_VERSION, API_VERSION_V1BETA1]);
  }
  for (const key of ['metadata', 'spec']) {
    const v = getOwn(obj, key);
    if (!isObject(v))
      throw new ConversionError(key, v === undefined ? 'Required value' : `must be an object, not ${shown(v)}`);
  }
  return obj;
}

// -------------------------------------------------------------------------------------------------------------
// Copy-on-write editing

/** Sets o[key] as an own data property (JSON.parse makes `__proto__` one; assigning it would set the prototype). */
function setOwn(o: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
  else o[key] = value;
}

function shallowCopy(o: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(o)) setOwn(out, key, o[key]);
  return out;
}

/**
 * An object being converted: the containers on the way to a change are copied (once); everything else stays
 * shared with the input.
 */
class Draft {
  private readonly copies = new WeakSet<object>();
  readonly root: JsonObject;
  constructor(src: JsonObject) {
    this.root = this.copy(src);
  }
  private copy(o: JsonObject): JsonObject {
    const c = shallowCopy(o);
    this.copies.add(c);
    return c;
  }
  /**
   * The object at `path`, writable. A missing or null step is created as {} when `create`, else the answer is
   * undefined; so is a step of another type.
   */
  at(path: Path, create = false): JsonObject | undefined {
    let cur = this.root;
    for (const key of path) {
      const v = getOwn(cur, key);
      let next: JsonObject;
      if (isObject(v)) next = this.copies.has(v) ? v : this.copy(v);
      else if (create && (v === undefined || v === null)) {
        next = {};
        this.copies.add(next);
      } else return undefined;
      if (next !== v) setOwn(cur, key, next);
      cur = next;
    }
    return cur;
  }
  /** Removes the field at `path` if it is there. */
  remove(path: Path): void {
    if (!hasField(this.root, path)) return;
    const parent = this.at(path.slice(0, -1));
    if (parent) delete parent[path[path.length - 1] as string];
  }
  /** Sets the field at `path` (see `at` for `create`); no-op when its parent is not an object. */
  set(path: Path, value: unknown, create = false): void {
    const parent = this.at(path.slice(0, -1), create);
    if (parent) setOwn(parent, path[path.length - 1] as string, value);
  }
}

function hasField(root: unknown, path: Path): boolean {
  const parent = get(root, path.slice(0, -1));
  return isObject(parent) && Object.hasOwn(parent, path[path.length - 1] as string);
}

/**
 * Copies `src` into `out` with the key `from` replaced, in its place, by `to` set to `value` (left out when
 * undefined); an existing `to` elsewhere is dropped. Keeps the key order a reader of the object sees.
 */
function renameInto(out: JsonObject, src: JsonObject, from: string, to: string, value: unknown): void {
  let placed = value === undefined;
  for (const key of Object.keys(src)) {
    if (key === from) {
      if (!placed) setOwn(out, to, value);
      placed = true;
    } else if (key !== to) setOwn(out, key, src[key]);
  }
  if (!placed) setOwn(out, to, value);
}

/** Renames a key of the writable object `o` in place (see renameInto). */
function renameKey(o: JsonObject, from: string, to: string, value: unknown): void {
  const src = shallowCopy(o);
  for (const key of Object.keys(o)) delete o[key];
  renameInto(o, src, from, to, value);
}

/** Deletes the annotations map when it is empty. */
function dropEmptyAnnotations(d: Draft): void {
  const a = get(d.root, ANNOTATIONS);
  if (isObject(a) && Object.keys(a).length === 0) d.remove(ANNOTATIONS);
}

// -------------------------------------------------------------------------------------------------------------
// The mapping (Kruise's, with the choices above), without the stash

const isUnset = (v: string | undefined): boolean => v === undefined || v === '';

/** v1alpha1 -> v1beta1 (ConvertTo). */
function mapToV1beta1(src: JsonObject): JsonObject {
  const d = new Draft(src);
  d.root.apiVersion = API_VERSION_V1BETA1;

  if (objectAt(src, ROLLING_UPDATE)) {
    const type = scalarAt(src, ROLLING_UPDATE_TYPE, 'string');
    const alias = scalarAt(src, ROLLING_UPDATE_ALIAS, 'string');
    // The alias means rollingUpdateType when that is unset (src/api/defaults.ts moveRollingUpdateTypeAlias).
    let next = isUnset(type) && alias !== undefined ? alias : type;
    // "Map deprecated Surging to Standard" (Kruise's ConvertTo).
    if (next === 'Surging') next = 'Standard';
    if (hasField(src, ROLLING_UPDATE_ALIAS)) d.remove(ROLLING_UPDATE_ALIAS);
    if (next !== type) d.set(ROLLING_UPDATE_TYPE, next);
  }

  // The annotation "true" becomes partitionedScaling: true; anything else in spec.scaleStrategy is not v1alpha1.
  if (scalarAt(src, PROGRESSIVE, 'string') === 'true') {
    d.remove(PROGRESSIVE);
    dropEmptyAnnotations(d);
    d.set(SCALE_STRATEGY, { partitionedScaling: true });
  } else if (hasField(src, SCALE_STRATEGY)) d.remove(SCALE_STRATEGY);

  if (objectAt(src, ['status'])) {
    const hash = scalarAt(src, DAEMON_SET_HASH, 'string');
    // UpdateRevision is `omitempty` in Kruise's v1beta1: an empty hash is no field.
    renameKey(d.at(['status']) as JsonObject, 'daemonSetHash', 'updateRevision', hash || undefined);
  }
  return d.root;
}

/** v1beta1 -> v1alpha1 (ConvertFrom). */
function mapToV1alpha1(src: JsonObject): JsonObject {
  const d = new Draft(src);
  d.root.apiVersion = API_VERSION;

  // v1beta1 has no alias: a `type` there is no field of it, and in v1alpha1 it would mean something.
  if (objectAt(src, ROLLING_UPDATE)) {
    scalarAt(src, ROLLING_UPDATE_TYPE, 'string');
    if (hasField(src, ROLLING_UPDATE_ALIAS)) d.remove(ROLLING_UPDATE_ALIAS);
  }

  objectAt(src, SCALE_STRATEGY);
  const partitioned = scalarAt(src, [...SCALE_STRATEGY, 'partitionedScaling'], 'boolean') === true;
  if (hasField(src, SCALE_STRATEGY)) d.remove(SCALE_STRATEGY);
  const annotation = scalarAt(src, PROGRESSIVE, 'string');
  if (partitioned) {
    if (annotation !== 'true') d.set(PROGRESSIVE, 'true', true);
  } else if (annotation === 'true') {
    // partitionedScaling is what v1beta1 reads: false (or unset) wins over the annotation left in the metadata.
    d.remove(PROGRESSIVE);
    dropEmptyAnnotations(d);
  }

  if (objectAt(src, ['status'])) {
    const revision = scalarAt(src, UPDATE_REVISION, 'string');
    // DaemonSetHash has no omitempty in Kruise's v1alpha1 (and our v1alpha1 schema requires it).
    renameKey(d.at(['status']) as JsonObject, 'updateRevision', 'daemonSetHash', revision ?? '');
  }
  return d.root;
}

const MAP: Record<Version, (src: JsonObject) => JsonObject> = { [VERSION]: mapToV1alpha1, [V1BETA1]: mapToV1beta1 };

/**
 * The field of the converted object (version `to`) a field of the source (version `from`) was mapped to: its guard.
 * The annotation and partitionedScaling guard each other, daemonSetHash and updateRevision, the alias and
 * rollingUpdateType; any other field (one that keeps its name, or one the source version does not have) is
 * guarded by itself.
 */
function guardPath(path: Path, from: Version): string[] {
  const key = dotted(path);
  if (from === VERSION) {
    if (key === dotted(ROLLING_UPDATE_ALIAS)) return [...ROLLING_UPDATE_TYPE];
    if (key === dotted(PROGRESSIVE)) return [...SCALE_STRATEGY];
    if (key === dotted(DAEMON_SET_HASH)) return [...UPDATE_REVISION];
  } else {
    if (path[0] === 'spec' && path[1] === 'scaleStrategy') return [...PROGRESSIVE];
    if (key === dotted(UPDATE_REVISION)) return [...DAEMON_SET_HASH];
  }
  return [...path];
}

/** The fields a stash may restore: the ones the mapping changes (and the annotations map, which it may create). */
function restorable(path: readonly unknown[]): boolean {
  const k = (i: number) => path[i];
  if (k(0) === 'metadata')
    return (
      k(1) === 'annotations' &&
      (path.length === 2 ||
        (path.length === 3 && (k(2) === PROGRESSIVE_CREATE_POD_ANNOTATION || RESERVED.has(k(2) as string))))
    );
  if (k(0) === 'spec') {
    if (k(1) === 'scaleStrategy') return true;
    return (
      path.length === 4 &&
      k(1) === 'updateStrategy' &&
      k(2) === 'rollingUpdate' &&
      (k(3) === 'rollingUpdateType' || k(3) === 'type')
    );
  }
  return path.length === 2 && k(0) === 'status' && (k(1) === 'daemonSetHash' || k(1) === 'updateRevision');
}

// -------------------------------------------------------------------------------------------------------------
// JSON comparison

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bs = b as unknown[];
    return a.length === bs.length && a.every((v, i) => jsonEqual(v, bs[i]));
  }
  const ak = Object.keys(a);
  const bo = b as JsonObject;
  if (ak.length !== Object.keys(bo).length) return false;
  return ak.every((k) => Object.hasOwn(bo, k) && jsonEqual((a as JsonObject)[k], bo[k]));
}

/**
 * Where `want` and `got` differ, at the deepest path where both are still objects: [path, want's value there
 * (undefined: absent)]. Subtrees `got` shares with `want` compare by reference, so only the containers the mapping
 * copied are walked.
 */
function differences(want: unknown, got: unknown, path: string[], out: [string[], unknown][]): void {
  if (want === got) return;
  if (isObject(want) && isObject(got)) {
    for (const key of Object.keys(want)) differences(want[key], getOwn(got, key), [...path, key], out);
    for (const key of Object.keys(got)) if (!Object.hasOwn(want, key)) out.push([[...path, key], undefined]);
    return;
  }
  if (!jsonEqual(want, got)) out.push([path, want]);
}

// -------------------------------------------------------------------------------------------------------------
// The stash

/**
 * How deep the stash holds a value: stash, `fields`, the field, `mapped`, then the value. convertBetween takes a
 * value nested up to MAX_NESTING_DEPTH levels on its own, so a stash it writes nests up to this much deeper.
 */
const STASH_DEPTH = 4;

/** The stash in an annotation's text; undefined when it is not one (not JSON, another shape, a field not ours). */
export function parseStash(text: string): Stash | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(v) || !Array.isArray(v.fields) || nestingError(v, '', MAX_NESTING_DEPTH + STASH_DEPTH))
    return undefined;
  const were = v.annotationsWere;
  if (were !== undefined && were !== null && !(isObject(were) && Object.keys(were).length === 0)) return undefined;
  const isPath = (p: unknown): p is string[] =>
    Array.isArray(p) && p.length > 0 && p.length <= 16 && p.every((k) => typeof k === 'string');
  for (const f of v.fields as unknown[]) {
    if (!isObject(f) || !isPath(f.path) || !restorable(f.path)) return undefined;
    if (f.mapped !== undefined && !(isObject(f.mapped) && isPath(f.mapped.path))) return undefined;
  }
  return v as unknown as Stash;
}

const valueOf = (f: { value?: unknown }): unknown => (Object.hasOwn(f, 'value') ? f.value : undefined);

function field(path: string[], value: unknown): StashField {
  return value === undefined ? { path } : { path, value };
}

const ROLLING_UPDATE_TYPES_OF: Record<Version, readonly string[]> = {
  [VERSION]: ROLLING_UPDATE_TYPES,
  [V1BETA1]: ROLLING_UPDATE_TYPES_V1BETA1,
};

/**
 * Why `value`, stashed for `path`, cannot go into a DaemonSet of version `to`; undefined when it can. Restoring the
 * absence of a field is always fine. The checks are those of the target's schema and webhook for the fields a stash
 * may restore (restorable): enums and JSON types; a value the webhook would refuse for other reasons (a rule across
 * fields) is what admission checks on the converted object anyway.
 */
export function stashedValueError(path: readonly string[], value: unknown, to: Version): string | undefined {
  // Absent, or null, which a Kubernetes object reads as absent.
  if (value === undefined || value === null) return undefined;
  const want = (ok: boolean, what: string) => (ok ? undefined : `must be ${what}, not ${JSON.stringify(value)}`);
  const [k0, k1, k2, k3] = path;
  if (k0 === 'metadata') {
    if (path.length === 2)
      return want(
        value === null || (isObject(value) && Object.values(value).every((v) => typeof v === 'string')),
        'a map of strings',
      );
    return want(typeof value === 'string', 'a string');
  }
  if (k0 === 'status') return want(typeof value === 'string', 'a string');
  if (k1 === 'scaleStrategy') {
    if (to !== V1BETA1) return `${VERSION} has no spec.scaleStrategy`;
    if (path.length === 2)
      return want(
        isObject(value) && (value.partitionedScaling === undefined || typeof value.partitionedScaling === 'boolean'),
        'an object whose partitionedScaling is a boolean',
      );
    return path.length === 3 && k2 === 'partitionedScaling'
      ? want(typeof value === 'boolean', 'a boolean')
      : `${V1BETA1} has no ${dotted(path)}`;
  }
  if (k2 === 'rollingUpdate' && (k3 === 'rollingUpdateType' || k3 === 'type')) {
    if (k3 === 'type' && to !== VERSION) return `${V1BETA1} has no ${dotted(path)}`;
    const types = ROLLING_UPDATE_TYPES_OF[to];
    // "" is unset, as validation.ts reads it.
    return want(typeof value === 'string' && (value === '' || types.includes(value)), `one of ${types.join(', ')}`);
  }
  return `a stash may not restore ${dotted(path)}`;
}

/** Restores one stashed field into `d`: its value, or its absence. */
function restore(d: Draft, f: StashField): void {
  const value = valueOf(f);
  if (value === undefined) d.remove(f.path);
  // Only the annotations map is created when missing: any other field is restored into the object the mapping
  // made, which is there whenever the guard holds.
  else d.set(f.path, cloneJson(value), f.path[0] === 'metadata');
}

const isReservedPath = (path: Path): boolean =>
  path.length === 3 && path[0] === 'metadata' && path[1] === 'annotations' && RESERVED.has(path[2] as string);

/**
 * x (version `from`) in version `to`:
 * 1. the stash annotations come off x: the one for `to` (data of `to` kept on x) is read; a stash for `from`
 *    on x (a leftover) or one that cannot be read is kept, to come back on the return trip;
 * 2. the mapping; then the fields of the stash whose guard still holds in x are restored;
 * 3. the mapping back is run on the result: wherever it would not give x's value, that value goes into the new
 *    stash for `from`, guarded by the value of the field it was mapped to.
 */
function convertBetween(x: JsonObject, from: Version, to: Version, warnings: StashWarning[]): JsonObject {
  const inKey = STASH_ANNOTATIONS[to];
  const outKey = STASH_ANNOTATIONS[from];
  const annotations = objectAt(x, ANNOTATIONS);
  const inText = scalarAt(x, [...ANNOTATIONS, inKey], 'string');
  const leftover = scalarAt(x, [...ANNOTATIONS, outKey], 'string');
  const incoming = inText === undefined ? undefined : parseStash(inText);

  // 1. x without the stash annotations: what the stash was made from, and what its guards are read against.
  const carried: StashField[] = [];
  if (inText !== undefined && !incoming) carried.push(field([...ANNOTATIONS, inKey], inText));
  if (leftover !== undefined) carried.push(field([...ANNOTATIONS, outKey], leftover));
  let plain = x;
  if (annotations && (inText !== undefined || leftover !== undefined)) {
    const d = new Draft(x);
    // Only the annotations read above (strings) come off: a stash key holding anything else is an ordinary
    // annotation, left where it is, or the round trip would lose it.
    if (inText !== undefined) d.remove([...ANNOTATIONS, inKey]);
    if (leftover !== undefined) d.remove([...ANNOTATIONS, outKey]);
    const a = get(d.root, ANNOTATIONS);
    if (isObject(a) && Object.keys(a).length === 0) {
      const were = incoming?.annotationsWere;
      if (were === undefined) d.remove(ANNOTATIONS);
      else (d.at(['metadata']) as JsonObject).annotations = were === null ? null : {};
    }
    plain = d.root;
  }

  // 2. The mapping, then the stashed fields of `to` whose guard holds.
  const mapped = MAP[to](plain);
  const out = new Draft(mapped);
  const restoredLater: StashField[] = [];
  for (const f of incoming?.fields ?? []) {
    if (f.mapped && !jsonEqual(get(plain, f.mapped.path), valueOf(f.mapped))) continue;
    const refused = stashedValueError(f.path, valueOf(f), to);
    if (refused) {
      warnings.push({ annotation: inKey, field: dotted(f.path), message: refused });
      continue;
    }
    if (isReservedPath(f.path)) restoredLater.push(f);
    else restore(out, f);
  }
  const converted = out.root;

  // 3. What the mapping back would lose. Serialized before anything else changes `converted`, which the guard
  // values may share.
  const diffs: [string[], unknown][] = [];
  differences(plain, MAP[from](converted), [], diffs);
  const fields = [
    ...diffs.map(([path, value]): StashField => {
      if (!restorable(path)) throw new Error(`conversion ${from} -> ${to} changed ${dotted(path)}, which it must not`);
      const guard = guardPath(path, from);
      const mappedValue = get(converted, guard);
      for (const [p, v] of [
        [path, value],
        [guard, mappedValue],
      ] as const) {
        const deep = nestingError(v, dotted(p), MAX_NESTING_DEPTH);
        if (deep) throw new ConversionError(deep.field, deep.detail);
      }
      return { ...field(path, value), mapped: field(guard, mappedValue) };
    }),
    ...carried,
  ];
  const a = get(converted, ANNOTATIONS);
  const stash: Stash | undefined =
    fields.length === 0
      ? undefined
      : {
          fields,
          ...(a === null || (isObject(a) && Object.keys(a).length === 0)
            ? { annotationsWere: a === null ? null : {} }
            : {}),
        };
  const stashText = stash && JSON.stringify(stash);
  // Stashed annotations of a previous trip go back in place (the new stash, if any, is written over its own key).
  for (const f of restoredLater) restore(out, f);
  if (stashText !== undefined) out.set([...ANNOTATIONS, outKey], stashText, true);
  return out.root;
}
