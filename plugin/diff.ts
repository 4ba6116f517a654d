// A unified line diff (`diff -u` shape: ---/+++ headers, @@ hunks with 3 lines of context), for comparing two
// revisions' pod templates. Longest common subsequence by dynamic programming: templates are a few hundred lines.

type Op = { kind: ' ' | '-' | '+'; line: string };

function lcsOps(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  // lengths[i][j]: LCS length of a[i..] and b[j..].
  const lengths: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      (lengths[i] as Uint32Array)[j] =
        a[i] === b[j]
          ? ((lengths[i + 1] as Uint32Array)[j + 1] as number) + 1
          : Math.max((lengths[i + 1] as Uint32Array)[j] as number, (lengths[i] as Uint32Array)[j + 1] as number);
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      ops.push({ kind: ' ', line: a[i] as string });
      i++;
      j++;
    } else if (((lengths[i + 1] as Uint32Array)[j] as number) >= ((lengths[i] as Uint32Array)[j + 1] as number)) {
      ops.push({ kind: '-', line: a[i++] as string });
    } else {
      ops.push({ kind: '+', line: b[j++] as string });
    }
  }
  while (i < n) ops.push({ kind: '-', line: a[i++] as string });
  while (j < m) ops.push({ kind: '+', line: b[j++] as string });
  return ops;
}

/** `diff -u` of two texts; '' when they are equal. */
export function unifiedDiff(a: string, b: string, aName: string, bName: string, context = 3): string {
  const al = a === '' ? [] : a.replace(/\n$/, '').split('\n');
  const bl = b === '' ? [] : b.replace(/\n$/, '').split('\n');
  const ops = lcsOps(al, bl);
  if (ops.every((o) => o.kind === ' ')) return '';
  // Positions (in ops) of changes, grouped into hunks whose context overlaps.
  const changed = ops.flatMap((o, k) => (o.kind === ' ' ? [] : [k]));
  const hunks: [number, number][] = [];
  for (const k of changed) {
    const start = Math.max(0, k - context);
    const end = Math.min(ops.length, k + context + 1);
    const last = hunks[hunks.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else hunks.push([start, end]);
  }
  const out = [`--- ${aName}`, `+++ ${bName}`];
  // Line numbers (1-based) in a and b at each op position.
  const aAt: number[] = [];
  const bAt: number[] = [];
  let ai = 1;
  let bi = 1;
  for (const o of ops) {
    aAt.push(ai);
    bAt.push(bi);
    if (o.kind !== '+') ai++;
    if (o.kind !== '-') bi++;
  }
  for (const [start, end] of hunks) {
    const slice = ops.slice(start, end);
    const aLen = slice.filter((o) => o.kind !== '+').length;
    const bLen = slice.filter((o) => o.kind !== '-').length;
    const aStart = aLen === 0 ? (aAt[start] as number) - 1 : (aAt[start] as number);
    const bStart = bLen === 0 ? (bAt[start] as number) - 1 : (bAt[start] as number);
    out.push(`@@ -${aStart},${aLen} +${bStart},${bLen} @@`);
    for (const o of slice) out.push(`${o.kind}${o.line}`);
  }
  return out.join('\n');
}
