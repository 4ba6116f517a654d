// V8's heap limit from the container's memory limit. Without a flag V8 sizes the old generation from the
// machine's memory, not the container's, so a process under a 512 MiB limit could grow its heap until the
// kernel kills it (OOMKilled) instead of collecting garbage first. dist/launch.mjs (launch.ts), the image's
// entrypoint, reads the cgroup limit and starts the manager with --max-old-space-size at HEAP_FRACTION of it;
// the rest is for the young generation (--max-semi-space-size, NODE_RUNTIME_FLAGS in hack/bundle.ts),
// code, TLS and socket buffers, which live outside the old generation.
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';

/** Share of the memory limit given to V8's old generation. */
export const HEAP_FRACTION = 0.6;
/** Never less: below this the manager's caches alone would not fit and it would crash at once. */
export const MIN_OLD_SPACE_MIB = 96;

/**
 * A cgroup memory limit file in bytes: cgroup v2 memory.max ("max" when unlimited) or cgroup v1
 * memory.limit_in_bytes (a number near 2^63 when unlimited). Undefined when unlimited or unreadable.
 */
export function parseMemoryLimit(text: string | undefined): number | undefined {
  const t = text?.trim();
  if (!t || t === 'max' || !/^\d+$/.test(t)) return undefined;
  const n = Number(t);
  return n > 0 && n < 2 ** 60 ? n : undefined;
}

/**
 * --max-old-space-size (MiB) for a memory limit, or undefined to keep V8's default: no limit, or a limit at
 * least the machine's memory (V8's default already fits the machine).
 */
export function oldSpaceSizeMiB(limitBytes: number | undefined, machineBytes: number): number | undefined {
  if (limitBytes === undefined || limitBytes >= machineBytes) return undefined;
  return Math.max(MIN_OLD_SPACE_MIB, Math.floor((limitBytes * HEAP_FRACTION) / (1024 * 1024)));
}

const HEAP_FLAG = /^--max[-_]old[-_]space[-_]size(?:[-_]percentage)?(?:=|$)/;

/** True when the command line or NODE_OPTIONS already sets the heap limit (the user's choice wins). */
export function hasHeapFlag(execArgv: readonly string[], nodeOptions = ''): boolean {
  return [...execArgv, ...nodeOptions.split(/\s+/)].some((a) => HEAP_FLAG.test(a));
}

/** The cgroup files, in order: v2 at the process's own cgroup path, v2 at the mount root, v1. */
export function cgroupLimitFiles(procSelfCgroup: string | undefined): string[] {
  const v2 = /^0::(\/.*)$/m.exec(procSelfCgroup ?? '')?.[1];
  return [
    ...(v2 && v2 !== '/' ? [`/sys/fs/cgroup${v2}/memory.max`] : []),
    '/sys/fs/cgroup/memory.max',
    '/sys/fs/cgroup/memory/memory.limit_in_bytes',
  ];
}

/** The process's memory limit in bytes, or undefined. `read` returns undefined for a missing file. */
export function readMemoryLimit(read: (path: string) => string | undefined = readText): number | undefined {
  for (const file of cgroupLimitFiles(read('/proc/self/cgroup'))) {
    const text = read(file);
    if (text !== undefined) {
      const limit = parseMemoryLimit(text);
      if (limit !== undefined) return limit;
    }
  }
  return undefined;
}

/** The flags to add to this process's command line: [] when none are needed. */
export function heapFlags(
  execArgv: readonly string[],
  nodeOptions: string | undefined,
  limitBytes: number | undefined,
  machineBytes = totalmem(),
): string[] {
  if (hasHeapFlag(execArgv, nodeOptions)) return [];
  const mib = oldSpaceSizeMiB(limitBytes, machineBytes);
  return mib === undefined ? [] : [`--max-old-space-size=${mib}`];
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
