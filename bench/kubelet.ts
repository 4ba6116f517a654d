// A real kubelet's status writes per daemon pod (`--only kubelet`): a private cluster with one real node (kubelet,
// containerd, runc: `cluster up --real-nodes 1`), native's apps/v1 DaemonSet and ours side by side on it, each pod
// deleted and re-created by its controller, by turns. The race (section 9 of bench/README.md) runs on kwok, whose
// fake kubelet writes a pod's status again for each event of a bound Pending pod, so our `KruisePodReady` patch
// landing after the binding costs kwok writes a kubelet would not make; this part counts what a kubelet makes.
// Reported, never asserted (bench/README.md).
import { join } from 'node:path';
import { clusterDown, clusterUp } from '../e2e/cluster/cluster.ts';
import { installCrd, waitConversionWebhook } from '../e2e/cluster/crd.ts';
import { realNodeUnsupported } from '../e2e/cluster/real-node.ts';
import { auditApiserverArgs, readAuditWrites, type AuditWrite } from '../e2e/lib/audit.ts';
import { startManager, type ManagerProcess } from '../e2e/lib/manager.ts';
import { pushTestDaemonImages } from '../hack/image/daemon.ts';
import type { KubeClient } from '../src/k8s/client.ts';
import { createKubeClient } from '../src/k8s/kubeconfig.ts';
import { isPodReady } from '../src/k8s/pod.ts';
import { resources } from '../src/k8s/resources.ts';
import type { Pod } from '../src/k8s/types.ts';
import { sleep, until } from '../src/testing/wait.ts';
import { daemonSetManifest, daemonSetType } from './lib/kube.ts';
import { median, say } from './lib/stats.ts';
import type { ControllerKind } from './cluster.ts';

const NAMESPACE = 'default';

export interface KubeletBenchOptions {
  dir: string;
  /** How many times each controller's pod is deleted and re-created. */
  recreations: number;
  /** Command line of our manager (lib/programs.ts). */
  managerCommand: string[];
  /** More flags for our manager (--manager-args). */
  managerArgs: string[];
}

export interface KubeletWrites {
  controller: ControllerKind;
  /** Pods counted: each one the controller created that was then deleted (the first, and every later one but the last). */
  pods: number;
  /** The kubelet's writes of pods/status per pod from its create until its delete: starting, running, Ready. */
  kubeletUntilDelete: number;
  /** And from its delete on: stopping. */
  kubeletAfterDelete: number;
  /** The controller's own writes of pods/status per pod (ours: the KruisePodReady condition). */
  controllerStatusWrites: number;
  /** Pods whose controller status write completed before the kubelet's first status write was received. */
  conditionFirst: number;
  /** Pods with a controller status write that did not (the others have none: native's). */
  conditionLater: number;
  /** Of those and of the others, the kubelet's writes until the delete, per pod (undefined without such a pod). */
  kubeletUntilDeleteConditionFirst?: number;
  kubeletUntilDeleteConditionLater?: number;
  /** Delete of the previous pod → the new one Ready, as polled, median, s. */
  replacedSeconds: number;
}

export interface KubeletBenchResult {
  node: string;
  recreations: number;
  managerArgs: string[];
  rows: KubeletWrites[];
}

/** The controller's pod that is Ready and is none of `not`, polled every 100 ms for up to 120 s. */
function readyPod(client: KubeClient, controller: ControllerKind, not: Set<string>): Promise<Pod> {
  return until(
    `a new Ready pod of the ${controller} DaemonSet`,
    async () => {
      const { items } = await client.list<Pod>(resources.pods, {
        namespace: NAMESPACE,
        labelSelector: `app=kubelet-${controller}`,
      });
      return items.find((p) => !p.metadata.deletionTimestamp && !not.has(p.metadata.name!) && isPodReady(p));
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
}

/** One controller's figures from the audit log's writes to its pods. */
export function kubeletWrites(
  controller: ControllerKind,
  pods: readonly string[],
  writes: readonly AuditWrite[],
  node: string,
  replacedSeconds: number[],
): KubeletWrites {
  const kubelet = `system:node:${node}`;
  const per = pods.map((name) => {
    const own = writes.filter((w) => w.namespace === NAMESPACE && w.name === name);
    const deletedAt = own.find((w) => w.verb === 'delete' && w.resource === 'pods')?.received ?? Infinity;
    const byKubelet = own.filter((w) => w.user === kubelet && w.resource === 'pods/status');
    const untilDelete = byKubelet.filter((w) => w.received < deletedAt);
    const byController = own.filter((w) => w.user !== kubelet && w.resource === 'pods/status');
    const kubeletFirst = untilDelete[0];
    return {
      untilDelete: untilDelete.length,
      afterDelete: byKubelet.length - untilDelete.length,
      controller: byController.length,
      conditionFirst:
        byController[0] !== undefined &&
        kubeletFirst !== undefined &&
        byController[0].completed <= kubeletFirst.received,
    };
  });
  const mean = (xs: typeof per, f: (p: (typeof per)[number]) => number) =>
    xs.length ? xs.reduce((s, p) => s + f(p), 0) / xs.length : undefined;
  const first = per.filter((p) => p.conditionFirst);
  const later = per.filter((p) => !p.conditionFirst && p.controller > 0);
  return {
    controller,
    pods: per.length,
    kubeletUntilDelete: mean(per, (p) => p.untilDelete) ?? 0,
    kubeletAfterDelete: mean(per, (p) => p.afterDelete) ?? 0,
    controllerStatusWrites: mean(per, (p) => p.controller) ?? 0,
    conditionFirst: first.length,
    conditionLater: later.length,
    kubeletUntilDeleteConditionFirst: mean(first, (p) => p.untilDelete),
    kubeletUntilDeleteConditionLater: mean(later, (p) => p.untilDelete),
    replacedSeconds: median(replacedSeconds),
  };
}

export async function runKubeletBench(o: KubeletBenchOptions): Promise<KubeletBenchResult> {
  const why = realNodeUnsupported();
  if (why) throw new Error(`a real node cannot run here: ${why}`);
  const clusterDir = join(o.dir, 'kubelet-cluster');
  const audit = auditApiserverArgs(o.dir);
  say('kubelet: starting a private cluster with one real node');
  const state = await clusterUp({
    dir: clusterDir,
    nodes: 0,
    realNodes: 1,
    apiserverArgs: audit.args,
    progress: (l) => say(`  ${l}`),
  });
  let manager: ManagerProcess | undefined;
  try {
    const node = state.realNodes![0]!.name;
    const client = createKubeClient({ kubeconfig: state.kubeconfig, qps: 0, userAgent: 'ads-bench-kubelet' });
    await installCrd(state.kubeconfig);
    manager = await startManager({
      kubeconfig: state.kubeconfig,
      dir: join(o.dir, 'kubelet-manager'),
      command: o.managerCommand,
      args: ['--log-level', 'info', '--webhook-drain', '0s', ...o.managerArgs],
    });
    await waitConversionWebhook(state.kubeconfig, `https://127.0.0.1:${manager.webhookPort}/convert`);
    const images = await pushTestDaemonImages(state.registry!);
    const controllers: ControllerKind[] = ['native', 'ours'];
    for (const c of controllers)
      await client.create(
        daemonSetType(c),
        daemonSetManifest(c, NAMESPACE, `kubelet-${c}`, {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'daemon', image: images.v1 }],
        }),
      );
    const pods = new Map<ControllerKind, string[]>();
    const replaced = new Map<ControllerKind, number[]>(controllers.map((c) => [c, []]));
    for (const c of controllers) pods.set(c, [(await readyPod(client, c, new Set())).metadata.name!]);
    say(`kubelet: both pods Ready on ${node}; deleting each ${o.recreations} times, by turns`);
    for (let i = 0; i < o.recreations; i++)
      for (const c of controllers) {
        const seen = pods.get(c)!;
        const started = Date.now();
        await client.delete(resources.pods, { namespace: NAMESPACE, name: seen.at(-1)! });
        seen.push((await readyPod(client, c, new Set(seen))).metadata.name!);
        replaced.get(c)!.push((Date.now() - started) / 1000);
      }
    // The last pods' writes are not counted (never deleted); the deleted ones' stopping writes need a moment.
    await sleep(3_000);
    const writes = readAuditWrites(audit.log);
    return {
      node,
      recreations: o.recreations,
      managerArgs: o.managerArgs,
      rows: controllers.map((c) => kubeletWrites(c, pods.get(c)!.slice(0, -1), writes, node, replaced.get(c)!)),
    };
  } finally {
    await manager?.stop();
    await clusterDown({ dir: clusterDir, progress: (l) => say(`  ${l}`) });
  }
}
