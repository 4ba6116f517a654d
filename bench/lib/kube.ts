// What the cluster benchmarks share about the objects they drive: the DaemonSet status fields they read, and a
// bounded fan-out of requests.
import { resources, type ResourceType } from '../../src/k8s/resources.ts';
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

/**
 * A DaemonSet of native's kind (apps/v1) or ours (apps.kruise.io/v1alpha1), its pods labelled and selected by
 * `app: <name>`; the same object for both controllers but for apiVersion.
 */
export function daemonSetManifest(
  controller: 'native' | 'ours',
  namespace: string,
  name: string,
  podSpec: Record<string, unknown>,
  spec: Record<string, unknown> = {},
) {
  return {
    apiVersion: controller === 'native' ? 'apps/v1' : 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: { name, namespace },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: podSpec },
      ...spec,
    },
  };
}

/** The resource of that DaemonSet: apps/v1 `daemonsets` for native's, ours in v1alpha1, as created. */
export const daemonSetType = (controller: 'native' | 'ours'): ResourceType =>
  controller === 'native' ? resources.nativeDaemonSets : resources.daemonSets;

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Seconds between two node status heartbeats of the fake kubelet in the memory and scale benchmarks: a real
 * kubelet reports an unchanged node status every 5 minutes (nodeStatusReportFrequency,
 * https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/) and renews its Lease every 10 s.
 * kwok's leases for 5,000 nodes (500 writes/s) or its heartbeats every 20-45 s of the test clusters (150 node
 * writes/s, each to every node watcher) keep a 2-core machine's apiserver busy enough that nodes go NotReady and
 * a 5,000-pod rollout stalls; heartbeats at the kubelet's own pace, with a grace period sized to them, give the
 * controller the node updates a real cluster sends.
 */
export const BENCH_NODE_HEARTBEAT_SECONDS = 300;
