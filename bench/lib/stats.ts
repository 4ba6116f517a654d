// Small statistics and formatting helpers shared by every benchmark.

export function median(xs: readonly number[]): number {
  return percentile(xs, 50);
}

/** Nearest-rank percentile (p in 0..100); NaN for no samples. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export function ratio(ours: number, base: number): number {
  return base > 0 && Number.isFinite(ours) ? ours / base : NaN;
}

/** 3 significant digits, no exponent for the ranges we print. */
export function fmt(x: number | undefined, digits = 3): string {
  if (x === undefined || !Number.isFinite(x)) return 'n/a';
  if (x === 0) return '0';
  const abs = Math.abs(x);
  if (abs >= 10 ** digits) return Math.round(x).toLocaleString('en-US');
  return Number(x.toPrecision(digits)).toString();
}

export function fmtRatio(x: number): string {
  return Number.isFinite(x) ? `${x.toFixed(2)}x` : 'n/a';
}

/** One progress line on stderr (stdout carries only the table). */
export function say(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}
