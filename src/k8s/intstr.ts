// IntOrString helpers, as k8s.io/apimachinery/pkg/util/intstr.
// An IntOrString is a JSON number or a string; only "N%" strings are meaningful (percent of a total).

export type IntOrStringValue = number | string;

const PERCENT_RE = /^(\d+)%$/;

/** True if the value is a string of the form "N%". */
export function isPercent(v: IntOrStringValue | null | undefined): v is string {
  return typeof v === 'string' && PERCENT_RE.test(v);
}

/**
 * GetScaledValueFromIntOrPercent: an int is returned as is; "N%" is N percent of total, rounded up when roundUp,
 * else down. Throws for nil (upstream: "nil value for IntOrString") and for strings that are not a percent.
 */
export function getScaledValueFromIntOrPercent(
  v: IntOrStringValue | null | undefined,
  total: number,
  roundUp: boolean,
): number {
  if (v === undefined || v === null) throw new Error('nil value for IntOrString');
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new Error(`invalid value for IntOrString: ${v}`);
    return v;
  }
  const m = PERCENT_RE.exec(v);
  if (!m) throw new Error(`invalid value for IntOrString: invalid type: string is not a percentage: "${v}"`);
  const pct = Number(m[1]);
  const scaled = (pct * total) / 100;
  // Integer arithmetic as upstream (Ceil/Floor of a float64 of the product / 100).
  return roundUp ? Math.ceil(scaled) : Math.floor(scaled);
}
