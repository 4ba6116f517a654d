// What the cluster benchmarks share about the objects they drive: the DaemonSet status fields they read, and a
// bounded fan-out of requests.
import type { KubeObject } from '../../src/k8s/types.ts';

/** A DaemonSet (either kind) as the benchmarks read it: its status counters. */
export interface DaemonSetObject extends KubeObject {
  status?: {
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    currentNumberScheduled?: number;
    numberMisscheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
    updatedNumberScheduled?: number;
  };
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
