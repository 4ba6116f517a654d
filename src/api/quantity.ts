// resource.Quantity (k8s.io/apimachinery/pkg/api/resource): parsing, comparison and the canonical string the
// apiserver writes back. The template defaulter needs the canonical form ("0.5" is stored as "500m", "1024Mi" as
// "1Gi") to match what apps/v1 stores; validation needs parsing and comparison. Values are kept exactly as
// unscaled BigInt × 10^exp, so there is no float rounding anywhere.

export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

/** Never changed once parsed: quantityFromJSON hands the same object to every reader of the same text. */
export interface Quantity {
  /** value = unscaled × 10^exp */
  readonly unscaled: bigint;
  readonly exp: number;
  readonly format: QuantityFormat;
  /** The input string when upstream would reuse it verbatim as the serialized form (already canonical). */
  readonly cached?: string;
}

export const QUANTITY_FORMAT_ERROR =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
export const QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix";
export const QUANTITY_NUMERIC_ERROR = 'unable to parse quantity, no numeric component';

const DEC_SUFFIXES: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BIN_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DEC_BY_EXP = new Map(Object.entries(DEC_SUFFIXES).map(([s, e]) => [e, s]));
const BIN_BY_EXP = new Map(Object.entries(BIN_SUFFIXES).map(([s, e]) => [e, s]));
const MAX_INT64 = (1n << 63n) - 1n;
const SUFFIX_CHARS = 'eEinumkKMGTP';

export class QuantityError extends Error {}

interface Parts {
  positive: boolean;
  value: string;
  num: string;
  denom: string;
  suffix: string;
}

/** parseQuantityString, including its leniencies ("1.", ".5", "-" all parse). */
function parseParts(str: string): Parts {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') pos++;
  while (pos < end && str[pos] === '0') pos++;
  if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' };
  let i = pos;
  while (i < end && isDigit(str[i])) i++;
  let num = str.slice(pos, i);
  if (i >= end) return { positive, value: str, num, denom: '', suffix: '' };
  pos = i;
  if (num.length === 0) num = '0';
  let denom = '';
  if (str[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && isDigit(str[i])) i++;
    denom = str.slice(pos, i);
    if (i >= end) return { positive, value: str, num, denom, suffix: '' };
    pos = i;
  }
  const value = str.slice(0, pos);
  const suffixStart = pos;
  while (pos < end && SUFFIX_CHARS.includes(str[pos] as string)) pos++;
  if (pos >= end) return { positive, value, num, denom, suffix: str.slice(suffixStart) };
  if (str[pos] === '-' || str[pos] === '+') pos++;
  while (pos < end && isDigit(str[pos])) pos++;
  if (pos >= end) return { positive, value, num, denom, suffix: str.slice(suffixStart) };
  throw new QuantityError(QUANTITY_FORMAT_ERROR);
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

function interpretSuffix(suffix: string): { base: 10 | 2; exponent: number; format: QuantityFormat } {
  const dec = DEC_SUFFIXES[suffix];
  if (dec !== undefined) return { base: 10, exponent: dec, format: 'DecimalSI' };
  const bin = BIN_SUFFIXES[suffix];
  if (bin !== undefined) return { base: 2, exponent: bin, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[-+]?\d+$/.test(suffix.slice(1))) {
    const exponent = Number(suffix.slice(1));
    if (Number.isSafeInteger(exponent) && Math.abs(exponent) < 2 ** 31)
      return { base: 10, exponent, format: 'DecimalExponent' };
  }
  throw new QuantityError(QUANTITY_SUFFIX_ERROR);
}

/** resource.ParseQuantity. Throws QuantityError with upstream's messages. */
export function parseQuantity(input: string): Quantity {
  const str = input;
  if (str.length === 0) throw new QuantityError(QUANTITY_FORMAT_ERROR);
  if (str === '0') return { unscaled: 0n, exp: 0, format: 'DecimalSI', cached: '0' };
  const { positive, value, num, denom, suffix } = parseParts(str);
  const { base, exponent, format } = interpretSuffix(suffix);

  // Fast path of upstream (int64Amount): decides whether the input string is kept as the serialized form.
  let precision: number;
  let scale = 0;
  let mantissa = 1n;
  if (format === 'BinarySI') {
    if (exponent >= 0 && denom.length === 0) {
      mantissa = 1n << BigInt(exponent);
      precision = 15 - num.length - Math.trunc((exponent * 3) / 10) - 1;
    } else precision = -1;
  } else {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  }
  if (precision >= 0) {
    scale -= denom.length;
    if (scale >= -9) {
      const shifted = num + denom;
      const v = BigInt(shifted);
      const result = v * mantissa;
      if (result <= MAX_INT64) {
        const signed = positive ? result : -result;
        let canonical: boolean;
        if (format === 'BinarySI') canonical = exponent % 10 === 0 && (v & 7n) !== 0n;
        else canonical = scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0';
        return canonical
          ? { unscaled: signed, exp: scale, format, cached: str }
          : { unscaled: signed, exp: scale, format };
      }
    }
  }

  // Slow path (inf.Dec): exact decimal, rounded up to nano, capped at 2^63-1.
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(value);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw new QuantityError(QUANTITY_NUMERIC_ERROR);
  const frac = m[3] ?? '';
  let unscaled = BigInt((m[2] || '0') + frac);
  let exp = -frac.length;
  if (base === 10) exp += exponent;
  else unscaled *= 1n << BigInt(exponent);
  ({ unscaled, exp } = roundAwayFromZero(unscaled, exp, -9));
  if (compareParts(unscaled, exp, MAX_INT64, 0) > 0) {
    unscaled = MAX_INT64;
    exp = 0;
  }
  let fmt = format;
  if (fmt === 'BinarySI' && compareParts(unscaled, exp, 1n, 0) < 0 && unscaled > 0n) fmt = 'DecimalSI';
  if (!positive) unscaled = -unscaled;
  return { unscaled, exp, format: fmt };
}

/** Decimal digits of |v| (1 for 0). */
const digits = (v: bigint): number => (v < 0n ? -v : v).toString().length;

/** Rounds to 10^minExp away from zero when there is a remainder (inf.RoundUp / int64Amount.AsScale). */
function roundAwayFromZero(unscaled: bigint, exp: number, minExp: number): { unscaled: bigint; exp: number } {
  if (exp >= minExp) return { unscaled, exp };
  // |value| < 10^minExp: one unit (or zero), without computing 10^(minExp - exp), which may be 10^2000000000.
  if (minExp - exp > digits(unscaled))
    return { unscaled: unscaled === 0n ? 0n : unscaled < 0n ? -1n : 1n, exp: minExp };
  const div = 10n ** BigInt(minExp - exp);
  let q = unscaled / div;
  if (unscaled % div !== 0n) q += unscaled < 0n ? -1n : 1n;
  return { unscaled: q, exp: minExp };
}

function compareParts(a: bigint, ae: number, b: bigint, be: number): number {
  const sa = a < 0n ? -1 : a > 0n ? 1 : 0;
  const sb = b < 0n ? -1 : b > 0n ? 1 : 0;
  if (sa !== sb) return sa < sb ? -1 : 1;
  if (sa === 0) return 0;
  // Different orders of magnitude decide without scaling: exponents such as 1e2000000000 (a valid quantity)
  // would need a power of ten beyond BigInt's size limit.
  const ma = digits(a) + ae;
  const mb = digits(b) + be;
  if (ma !== mb) return (ma < mb ? -1 : 1) * sa;
  const e = Math.min(ae, be);
  const x = a * 10n ** BigInt(ae - e);
  const y = b * 10n ** BigInt(be - e);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function compareQuantity(a: Quantity, b: Quantity): number {
  return compareParts(a.unscaled, a.exp, b.unscaled, b.exp);
}

export function isNegative(q: Quantity): boolean {
  return q.unscaled < 0n;
}

/** SetDefaults_ResourceList: Quantity.RoundUp(-3); the cached string survives only when nothing was rounded. */
export function roundUpToMilli(q: Quantity): Quantity {
  if (q.exp >= -3) return q;
  const { unscaled, exp } = roundAwayFromZero(q.unscaled, q.exp, -3);
  return { unscaled, exp, format: q.format };
}

function removeFactors(value: bigint, base: bigint): { amount: bigint; times: number } {
  let amount = value < 0n ? -value : value;
  let times = 0;
  while (amount >= base && amount % base === 0n) {
    amount /= base;
    times++;
  }
  return { amount: value < 0n ? -amount : amount, times };
}

/** Quantity.String(): the cached input when canonical, else CanonicalizeBytes. */
export function formatQuantity(q: Quantity): string {
  if (q.cached !== undefined) return q.cached;
  if (q.unscaled === 0n) return '0';
  let format = q.format;
  let integer: bigint | undefined;
  if (format === 'BinarySI') {
    if (compareParts(q.unscaled, q.exp, -1024n, 0) > 0 && compareParts(q.unscaled, q.exp, 1024n, 0) < 0)
      format = 'DecimalSI';
    else if (q.exp >= 0) integer = q.unscaled * 10n ** BigInt(q.exp);
    else {
      const div = 10n ** BigInt(-q.exp);
      if (q.unscaled % div === 0n) integer = q.unscaled / div;
      else format = 'DecimalSI';
    }
  }
  if (format === 'BinarySI' && integer !== undefined) {
    const { amount, times } = removeFactors(integer, 1024n);
    return `${amount}${BIN_BY_EXP.get(times * 10) ?? ''}`;
  }
  const factors = removeFactors(q.unscaled, 10n);
  let amount = factors.amount;
  let exponent = q.exp + factors.times;
  while (exponent % 3 !== 0) {
    amount *= 10n;
    exponent--;
  }
  if (format === 'DecimalExponent') return exponent === 0 ? `${amount}` : `${amount}e${exponent}`;
  return `${amount}${DEC_BY_EXP.get(exponent) ?? ''}`;
}

/**
 * Reads a quantity from JSON as the typed decoder does: a string (trimmed) or a number (its decimal text).
 * Returns the error message for anything else.
 */
export function quantityFromJSON(v: unknown): Quantity | string {
  let s: string;
  if (typeof v === 'string') s = v.trim();
  else if (typeof v === 'number' && Number.isFinite(v)) s = String(v);
  else return QUANTITY_FORMAT_ERROR;
  const known = readQuantities.get(s);
  if (known !== undefined) return known;
  let read: Quantity | string;
  try {
    read = parseQuantity(s);
  } catch (err) {
    read = (err as Error).message;
  }
  if (s.length <= MAX_MEMO_TEXT) {
    if (readQuantities.size >= MAX_MEMO_ENTRIES) readQuantities.clear();
    readQuantities.set(s, read);
  }
  return read;
}

/**
 * Quantities read before, by their text: a DaemonSet's few resource strings ("10m", "20Mi") are read in every
 * review, by defaulting and again by validation, and parsing them (BigInt arithmetic) was 6% of a validate review
 * in process. A Quantity is never changed once parsed, so one object serves every reader. Bounded whatever the
 * input: texts up to MAX_MEMO_TEXT characters, cleared once MAX_MEMO_ENTRIES are held.
 */
const readQuantities = new Map<string, Quantity | string>();
const MAX_MEMO_TEXT = 32;
const MAX_MEMO_ENTRIES = 1024;
