// How many cores this process may use: the container's CPU limit (cgroup quota), else the CPU the chart requested
// for it (CPU_REQUEST_MILLICORES, from the downward API), else the machine's cores. Node sizes nothing by it; the
// webhook does (requests in flight, admission threads): from the machine's 16 cores under no CPU limit it let 64 big
// reviews in at once, far more than the pod's CPU could serve and its 512Mi could hold.
import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';

/** The environment variable the chart fills with the container's CPU request, in millicores. */
export const CPU_REQUEST_ENV = 'CPU_REQUEST_MILLICORES';

/**
 * Cores of a CFS quota: cgroup v2 cpu.max ("max 100000" or "200000 100000"), or v1 cpu.cfs_quota_us with
 * cpu.cfs_period_us (-1: none); rounded up. Undefined without a quota.
 */
export function quotaCores(cpuMax: string | undefined, v1Quota?: string, v1Period?: string): number | undefined {
  const [q, p] = cpuMax?.trim().split(/\s+/) ?? [v1Quota?.trim(), v1Period?.trim()];
  const quota = Number(q);
  const period = Number(p);
  if (!Number.isFinite(quota) || !Number.isFinite(period) || quota <= 0 || period <= 0) return undefined;
  return Math.max(1, Math.ceil(quota / period));
}

/** Cores of a request in millicores (the chart's CPU_REQUEST_MILLICORES), rounded up; undefined if not a number. */
export function requestCores(millicores: string | undefined): number | undefined {
  const m = Number(millicores);
  return millicores && Number.isFinite(m) && m > 0 ? Math.max(1, Math.ceil(m / 1000)) : undefined;
}

export interface CpuInputs {
  machineCores: number;
  quota?: number;
  request?: number;
}

/** The cores to size by: the quota, else the request, never more than the machine has, at least 1. */
export function usableCores(i: CpuInputs): number {
  return Math.max(1, Math.min(i.machineCores, i.quota ?? i.request ?? i.machineCores));
}

const readText = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** usableCores of this process (cgroup v2 at its own path or the mount root, then v1; then the env). */
export function readUsableCores(
  read: (path: string) => string | undefined = readText,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const v2 = /^0::(\/.*)$/m.exec(read('/proc/self/cgroup') ?? '')?.[1];
  const cpuMax = (v2 && v2 !== '/' ? read(`/sys/fs/cgroup${v2}/cpu.max`) : undefined) ?? read('/sys/fs/cgroup/cpu.max');
  const quota =
    cpuMax !== undefined
      ? quotaCores(cpuMax)
      : quotaCores(
          undefined,
          read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'),
          read('/sys/fs/cgroup/cpu/cpu.cfs_period_us'),
        );
  return usableCores({ machineCores: availableParallelism(), quota, request: requestCores(env[CPU_REQUEST_ENV]) });
}
