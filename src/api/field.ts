// Field errors and the Invalid status, in the exact text format of k8s.io/apimachinery
// (util/validation/field/errors.go and api/errors.NewInvalid), so messages read as the apiserver's own.

export type FieldErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'InternalError'
  | 'FieldValueTypeInvalid';

export interface FieldError {
  type: FieldErrorType;
  /** Dotted path with [i] / [key] subscripts, as field.Path.String(). */
  field: string;
  badValue?: unknown;
  detail: string;
}

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  InternalError: 'Internal error',
  FieldValueTypeInvalid: 'Invalid value',
};

/**
 * A field.Path built by chaining, e.g. `path('spec').child('template', 'spec').index(0).key('cpu')`. As upstream's
 * field.Path (a link to the parent and one name or subscript:
 * https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apimachinery/pkg/util/validation/field/path.go),
 * the text is built only when asked for: validation makes a path for every field it visits and needs the text only
 * of a field in error, and building each one's text up front allocated more than the rest of a review's handling.
 */
export class FieldPath {
  private text: string | undefined;
  private constructor(
    private readonly parent: FieldPath | undefined,
    /** The root's name, a child's name, or a subscript (`[i]`, `[key]`) when `subscript` is true. */
    private readonly segment: string | number,
    private readonly subscript: boolean,
  ) {
    if (parent === undefined) this.text = String(segment);
  }
  static root(name: string): FieldPath {
    return new FieldPath(undefined, name, false);
  }
  child(...names: string[]): FieldPath {
    let p: FieldPath | undefined;
    for (const name of names) p = new FieldPath(p ?? this, name, false);
    return p ?? this;
  }
  index(i: number): FieldPath {
    return new FieldPath(this, i, true);
  }
  key(k: string): FieldPath {
    return new FieldPath(this, k, true);
  }
  toString(): string {
    if (this.text !== undefined) return this.text;
    // The links up to the nearest one whose text is known (the root's always is), then their text downwards.
    const segments: FieldPath[] = [];
    let known: FieldPath | undefined = this.parent;
    segments.push(this);
    while (known && known.text === undefined) {
      segments.push(known);
      known = known.parent;
    }
    let text = known?.text ?? '';
    for (let i = segments.length - 1; i >= 0; i--) {
      const s = segments[i] as FieldPath;
      text = s.subscript ? `${text}[${s.segment}]` : `${text}.${s.segment}`;
    }
    this.text = text;
    return text;
  }
}

export const path = (name: string, ...more: string[]) => FieldPath.root(name).child(...more);

export const invalid = (p: FieldPath, badValue: unknown, detail: string): FieldError => ({
  type: 'FieldValueInvalid',
  field: p.toString(),
  badValue,
  detail,
});
export const typeInvalid = (p: FieldPath, badValue: unknown, detail: string): FieldError => ({
  type: 'FieldValueTypeInvalid',
  field: p.toString(),
  badValue,
  detail,
});
export const required = (p: FieldPath, detail = ''): FieldError => ({
  type: 'FieldValueRequired',
  field: p.toString(),
  badValue: '',
  detail,
});
export const forbidden = (p: FieldPath, detail: string): FieldError => ({
  type: 'FieldValueForbidden',
  field: p.toString(),
  badValue: '',
  detail,
});
export const duplicate = (p: FieldPath, badValue: unknown): FieldError => ({
  type: 'FieldValueDuplicate',
  field: p.toString(),
  badValue,
  detail: '',
});
export const notFound = (p: FieldPath, badValue: unknown): FieldError => ({
  type: 'FieldValueNotFound',
  field: p.toString(),
  badValue,
  detail: '',
});
export const notSupported = (p: FieldPath, badValue: unknown, validValues: readonly string[]): FieldError => ({
  type: 'FieldValueNotSupported',
  field: p.toString(),
  badValue,
  detail: validValues.length ? `supported values: ${validValues.map((v) => JSON.stringify(v)).join(', ')}` : '',
});

/**
 * How Go's fmt prints a bad value: strings quoted (%q), numbers and booleans bare, null as "null". Objects
 * and arrays are printed as JSON rather than Go's %#v struct dump, which would name internal Go types.
 */
export function formatBadValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return goQuote(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** strconv.Quote for the common cases: JSON string escaping matches it for printable text. */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** field.Error.ErrorBody(): the message without the field path. */
export function errorBody(e: FieldError): string {
  let s: string;
  switch (e.type) {
    case 'FieldValueRequired':
    case 'FieldValueForbidden':
    case 'FieldValueTooLong':
    case 'InternalError':
      s = TYPE_TEXT[e.type];
      break;
    default:
      s = `${TYPE_TEXT[e.type]}: ${formatBadValue(e.badValue)}`;
  }
  if (e.detail) s += `: ${e.detail}`;
  return s;
}

/** field.Error.Error(): `path: body`. */
export function errorString(e: FieldError): string {
  return `${e.field}: ${errorBody(e)}`;
}

/**
 * At most this many distinct errors are reported, in the message and in the causes. apimachinery's NewInvalid
 * reports every one, but the webhook would then answer an object of 10,000 empty containers (32 KiB) with 3.6 MB
 * of "Required value" and a 3.5 MiB one with hundreds of megabytes; the first ones are enough to fix a manifest, and
 * the message says how many more there are.
 */
export const MAX_REPORTED_ERRORS = 100;

/**
 * ErrorList.ToAggregate().Error(): duplicates dropped; one error bare, several in brackets. Beyond
 * MAX_REPORTED_ERRORS distinct errors, a last item says how many more were found.
 */
export function aggregateMessage(errors: readonly FieldError[]): string {
  const { shown, more } = reportedErrors(errors);
  const msgs = shown.map(errorString);
  if (more) msgs.push(`and ${more} more errors`);
  if (msgs.length === 1) return msgs[0] ?? '';
  return `[${msgs.join(', ')}]`;
}

/** The first MAX_REPORTED_ERRORS distinct errors (by their text), and how many of the rest were left out. */
function reportedErrors(errors: readonly FieldError[]): { shown: FieldError[]; more: number } {
  const seen = new Set<string>();
  const shown: FieldError[] = [];
  let i = 0;
  for (; i < errors.length && shown.length < MAX_REPORTED_ERRORS; i++) {
    const e = errors[i]!;
    const key = errorString(e);
    if (seen.has(key)) continue;
    seen.add(key);
    shown.push(e);
  }
  return { shown, more: errors.length - i };
}

export interface StatusCause {
  reason: FieldErrorType;
  message: string;
  field: string;
}

/** metav1.Status as the apiserver writes it. */
export interface Status {
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message: string;
  reason?: string;
  details?: { name?: string; group?: string; kind?: string; causes?: StatusCause[] };
  code: number;
}

/** errors.NewInvalid(qualifiedKind, name, errs).ErrStatus. */
export function invalidStatus(group: string, kind: string, name: string, errors: readonly FieldError[]): Status {
  const qualified = group ? `${kind}.${group}` : kind;
  const message = errors.length
    ? `${qualified} ${goQuote(name)} is invalid: ${aggregateMessage(errors)}`
    : `${qualified} ${goQuote(name)} is invalid`;
  return {
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Invalid',
    details: {
      name,
      group,
      kind,
      // One cause per error, duplicates included, as NewInvalid does: the first MAX_REPORTED_ERRORS.
      causes: errors
        .slice(0, MAX_REPORTED_ERRORS)
        .map((e) => ({ reason: e.type, message: errorBody(e), field: e.field })),
    },
    code: 422,
  };
}
