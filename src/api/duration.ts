// Go duration strings ("90s", "10m", "1h30m"), as metav1.Duration reads and writes them, in milliseconds:
// time.ParseDuration (https://github.com/golang/go/blob/master/src/time/format.go) and Duration.String
// (https://github.com/golang/go/blob/master/src/time/time.go).

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * time.ParseDuration: an optional sign, then one or more decimal numbers each with a unit (ns, us, µs, ms, s, m, h),
 * e.g. "300ms", "1.5h", "2h45m"; "0" alone needs no unit. Returns milliseconds, or an Error with Go's message
 * (`time: invalid duration "x"`, `time: missing unit in duration "10"`, `time: unknown unit "d" in duration "1d"`).
 */
export function parseDuration(s: string): number | Error {
  const quoted = JSON.stringify(s);
  const invalid = () => new Error(`time: invalid duration ${quoted}`);
  let rest = s;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest.startsWith('-')) sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return invalid();
  let total = 0;
  while (rest !== '') {
    const num = /^(\d*)(?:\.(\d*))?/.exec(rest) as RegExpExecArray;
    const [whole, int = '', frac = ''] = num;
    if (int === '' && frac === '') return invalid();
    rest = rest.slice(whole.length);
    const unit = /^[^\d.]*/.exec(rest)?.[0] ?? '';
    if (unit === '') return new Error(`time: missing unit in duration ${quoted}`);
    const scale = UNIT_MS[unit];
    if (scale === undefined) return new Error(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    total += Number(`${int || '0'}.${frac || '0'}`) * scale;
    rest = rest.slice(unit.length);
  }
  return sign * total;
}

/** parseDuration, undefined for an absent or invalid value (validation reports those; the planner ignores them). */
export function durationMs(s: string | undefined | null): number | undefined {
  if (s === undefined || s === null) return undefined;
  const v = parseDuration(s);
  return v instanceof Error ? undefined : v;
}

/** Duration.String for messages: "1h0m0s", "10m0s", "1.5s", "300ms", "0s". */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let v = Math.abs(ms);
  if (v < 1000) return `${sign}${trim(v)}ms`;
  const h = Math.floor(v / 3_600_000);
  v -= h * 3_600_000;
  const m = Math.floor(v / 60_000);
  v -= m * 60_000;
  const s = `${trim(v / 1000)}s`;
  if (h > 0) return `${sign}${h}h${m}m${s}`;
  if (m > 0) return `${sign}${m}m${s}`;
  return `${sign}${s}`;
}

function trim(n: number): string {
  return String(Number(n.toFixed(3)));
}
