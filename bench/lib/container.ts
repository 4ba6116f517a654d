// A process under a container's limits without a container runtime: a cgroup v1 memory and cpu group of its own,
// bind-mounted over /sys/fs/cgroup/{memory,cpu} in a private mount namespace, so that the process reads its limits
// where it would in a pod (src/cli/heap.ts, src/cli/cpu.ts) and the kernel enforces them (OOM kill, CFS quota).
// Needs root and cgroup v1 (this machine: see docs/testing.md); elsewhere `containerLimitsUnsupported` says why.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const V1 = '/sys/fs/cgroup';

export interface ContainerLimits {
  memoryBytes: number;
  /** CPU limit in cores (CFS quota over a 100 ms period). */
  cpus: number;
}

export interface LimitedCommand {
  /** The command to spawn: it joins the group, then execs `command` (same pid). */
  command: string[];
  /** Highest memory use of the group (memory.max_usage_in_bytes), bytes. */
  peakBytes(): number;
  /** Times the group hit its memory limit (memory.failcnt). */
  failures(): number;
  /** Removes the group; call once the process has exited. */
  remove(): void;
}

/** Why limits cannot be applied here, or undefined when they can. */
export function containerLimitsUnsupported(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  if (!existsSync(join(V1, 'memory', 'memory.limit_in_bytes')) || !existsSync(join(V1, 'cpu', 'cpu.cfs_quota_us')))
    return 'no cgroup v1 memory and cpu hierarchies';
  return undefined;
}

export function withContainerLimits(name: string, limits: ContainerLimits, command: string[]): LimitedCommand {
  const memory = join(V1, 'memory', name);
  const cpu = join(V1, 'cpu', name);
  for (const dir of [memory, cpu]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
  writeFileSync(join(cpu, 'cpu.cfs_period_us'), '100000');
  writeFileSync(join(cpu, 'cpu.cfs_quota_us'), String(Math.round(limits.cpus * 100_000)));
  const script = [
    `echo $$ > ${memory}/tasks`,
    `echo $$ > ${cpu}/tasks`,
    `mount --bind ${memory} ${V1}/memory`,
    `mount --bind ${cpu} ${V1}/cpu`,
    'exec "$@"',
  ].join(' && ');
  const read = (file: string) => Number(readFileSync(join(memory, file), 'utf8').trim());
  return {
    command: ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', ...command],
    peakBytes: () => read('memory.max_usage_in_bytes'),
    failures: () => read('memory.failcnt'),
    remove: () => {
      for (const dir of [memory, cpu]) if (existsSync(dir)) rmdirSync(dir);
    },
  };
}
