// The manager's memory with N nodes and N daemon pods cached (`--only memory`, size from --nodes): a private
// cluster of N fake nodes, one DaemonSet on every node created by a first manager (its peak is the creation's), then
// a fresh manager started on that cluster, as a restarted or newly elected one would be: its caches are filled by
// one list of each resource, then it stays for the steady part (node heartbeats) and rolls the DaemonSet to a new
// image. Its RSS is sampled from /proc (VmRSS) and its peak read at the end of each part (VmHWM); its heap from its
// own /metrics. Reported, never asserted (goals in bench/README.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  clusterDown,
  clusterUp,
  countReadyNodes,
  createNodes,
  nodeName,
  waitForNodesReady,
} from '../e2e/cluster/cluster.ts';
import { installCrd, waitConversionWebhook } from '../e2e/cluster/crd.ts';
import { startManager, type ManagerProcess } from '../e2e/lib/manager.ts';
import { resources } from '../src/k8s/resources.ts';
import { type KubeClient } from '../src/k8s/client.ts';
import { createKubeClient } from '../src/k8s/kubeconfig.ts';
import { sleep } from '../src/testing/wait.ts';
import { cpuSeconds, peakRssMiB, rssMiB } from './lib/proc.ts';
import { BENCH_NODE_HEARTBEAT_SECONDS, type DaemonSetObject } from './lib/kube.ts';
import { say } from './lib/stats.ts';

const NAMESPACE = 'ads-memory';
const NAME = 'node-agent';
const IMAGE_V1 = 'registry.example/node-agent:1.0.0';
const IMAGE_V2 = 'registry.example/node-agent:1.0.1';
/** Set for the manager, it caches whole objects (controller/run.ts): the "before" of the trimmed caches. */
export const UNTRIMMED_ENV = 'ADS_BENCH_UNTRIMMED_CACHE';

export interface MemoryBenchOptions {
  dir: string;
  nodes: number;
  /** Command line of our manager (lib/programs.ts). */
  managerCommand: string[];
  /** Client budget of the measured manager (the creating one gets more, to be done sooner). */
  managerQps: number;
  managerBurst: number;
  /** More flags for our managers. */
  managerArgs: string[];
  /** Node flags added to the managers' (V8 experiments). */
  nodeFlags: string[];
  /** Caches of whole objects, as before the trimming (UNTRIMMED_ENV). */
  untrimmed: boolean;
  /** How long the fresh manager stays after its caches synced, before the rollout. */
  steadySeconds: number;
  /** The rollout's figures are taken when it is done, or after this long. */
  rolloutTimeoutSeconds: number;
}

export interface HeapFigures {
  /** V8 heap in use and reserved, and memory outside it (buffers), MiB, from the manager's /metrics. */
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
}

export interface MemoryBenchResult {
  nodes: number;
  pods: number;
  trimmed: boolean;
  /** Node flags of the managers besides the bundle's (NODE_RUNTIME_FLAGS). */
  nodeFlags: string[];
  /** The managers' flags besides the client's budget, logging and drain (--manager-args). */
  managerArgs: string[];
  /** Nodes Ready when the pods were created, and pods Ready at the end of the creation (a loaded cluster lags). */
  creation: { seconds: number; peakRssMiB: number; readyNodes: number; readyPods: number };
  /** The fresh manager: its caches synced after `syncSeconds`, then `steadySeconds` of heartbeats. */
  cached: {
    syncSeconds: number;
    steadySeconds: number;
    rssMiB: number;
    peakRssMiB: number;
    /** CPU seconds from its start to the end of the steady part. */
    cpuSeconds: number;
  } & Partial<HeapFigures>;
  /** The same manager through a rollout of every pod to a new image. */
  rollout?: {
    seconds: number;
    peakRssMiB: number;
    cpuSeconds: number;
    /** False when it was not done within the time allowed (a loaded cluster): the figures are up to then. */
    done: boolean;
  };
}

function manifest() {
  return {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: { name: NAME, namespace: NAMESPACE },
    spec: {
      selector: { matchLabels: { app: NAME } },
      template: {
        metadata: { labels: { app: NAME }, annotations: { 'prometheus.io/scrape': 'true' } },
        spec: {
          nodeSelector: { type: 'kwok' },
          terminationGracePeriodSeconds: 1,
          tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }],
          containers: [
            {
              name: 'agent',
              image: IMAGE_V1,
              args: ['--config=/etc/node-agent/config.yaml', '--v=2'],
              env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
              ports: [{ name: 'metrics', containerPort: 9100 }],
              resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
              volumeMounts: [{ name: 'varlog', mountPath: '/var/log', readOnly: true }],
            },
          ],
          volumes: [{ name: 'varlog', hostPath: { path: '/var/log' } }],
        },
      },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } },
    },
  };
}

/**
 * Polls the DaemonSet's status until `done` holds or `timeoutMs` passed; returns when (ms since the epoch), whether
 * it was done, and the last status.
 */
async function waitStatus(
  client: KubeClient,
  what: string,
  done: (s: NonNullable<DaemonSetObject['status']>) => boolean,
  timeoutMs: number,
): Promise<{ at: number; done: boolean; status: NonNullable<DaemonSetObject['status']> }> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const ds = await client.get<DaemonSetObject>(resources.daemonSets, { namespace: NAMESPACE, name: NAME });
    const s = ds.status ?? {};
    if (done(s)) return { at: Date.now(), done: true, status: s };
    const now = `ready ${s.numberReady ?? 0}, updated ${s.updatedNumberScheduled ?? 0}, available ${s.numberAvailable ?? 0} of ${s.desiredNumberScheduled ?? 0}`;
    if (now !== last) say(`  memory: ${what}: ${now}`);
    last = now;
    if (Date.now() > deadline) {
      say(`  memory: ${what}: not done in ${timeoutMs / 1000} s (${now})`);
      return { at: Date.now(), done: false, status: s };
    }
    await sleep(2_000);
  }
}

/** The heap figures prom-client's default metrics report. */
async function heapFigures(metricsPort: number): Promise<HeapFigures | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1]) / 1048576;
    return {
      heapUsedMiB: value('nodejs_heap_size_used_bytes'),
      heapTotalMiB: value('nodejs_heap_size_total_bytes'),
      externalMiB: value('nodejs_external_memory_bytes'),
    };
  } catch {
    return undefined;
  }
}

export async function runMemoryBench(o: MemoryBenchOptions): Promise<MemoryBenchResult> {
  const clusterDir = join(o.dir, 'memory-cluster');
  say(`memory: starting a private cluster with ${o.nodes} fake nodes`);
  // Up with a first hundred nodes, then the rest with a wait sized to them (clusterUp allows 5 minutes).
  const first = Math.min(o.nodes, 100);
  const state = await clusterUp({
    dir: clusterDir,
    nodes: first,
    nodeHeartbeatSeconds: BENCH_NODE_HEARTBEAT_SECONDS,
    progress: (l) => say(l),
  });
  // The managers inherit the environment.
  if (o.untrimmed) process.env[UNTRIMMED_ENV] = '1';
  else delete process.env[UNTRIMMED_ENV];
  // The manager's command has the launcher's heap flag for the chart's 512Mi limit (lib/programs.ts); ours go last
  // before the script: of two values of one flag, the later wins.
  const command = [...o.managerCommand.slice(0, -1), ...o.nodeFlags, ...o.managerCommand.slice(-1)];
  const client = createKubeClient({ kubeconfig: state.kubeconfig, qps: 0, userAgent: 'ads-bench-memory' });
  let seq = 0;
  const start = async (qps: number, burst: number): Promise<ManagerProcess> => {
    const m = await startManager({
      kubeconfig: state.kubeconfig,
      dir: join(o.dir, `memory-manager-${++seq}`),
      command,
      args: [
        ...['--kube-api-qps', String(qps), '--kube-api-burst', String(burst)],
        ...['--log-level', 'info', '--webhook-drain', '0s'],
        // Otherwise the product's defaults, as the rollout race's manager (bench/cluster.ts): the KruisePodReady gate
        // on every pod (--kruise-pod-ready-gate always), one more pods/status write per pod created.
        ...o.managerArgs,
      ],
    });
    await waitConversionWebhook(state.kubeconfig, `https://127.0.0.1:${m.webhookPort}/convert`);
    say(`  memory: manager started (pid ${m.child.pid}, log ${m.log})`);
    return m;
  };
  const timeoutMs = Math.max(300_000, o.nodes * 120);
  try {
    if (o.nodes > first) {
      say(`memory: growing the cluster to ${o.nodes} nodes`);
      await createNodes(
        state.kubeconfig,
        Array.from({ length: o.nodes - first }, (_, i) => nodeName(first + i, o.nodes)),
      );
      // On a loaded machine kwok may not keep every node's heartbeat fresh: go on with the nodes there are (each
      // is cached either way), and say how many were Ready.
      await waitForNodesReady(state.kubeconfig, o.nodes, (l) => say(l), Math.max(300_000, o.nodes * 120)).catch(
        (err: unknown) => say(`memory: going on: ${(err as Error).message}`),
      );
    }
    const readyNodes = (await countReadyNodes(state.kubeconfig)).ready;
    await installCrd(state.kubeconfig);
    await client.create(resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });

    // 1. A first manager creates a pod on every node.
    const creator = await start(Math.max(o.managerQps, 400), Math.max(o.managerBurst, 800));
    let creation: MemoryBenchResult['creation'];
    try {
      const t0 = Date.now();
      await client.create(resources.daemonSets, manifest());
      // Every pod must exist (they are what is cached); then as many Ready as the cluster manages in a while (on a
      // loaded machine kwok lets nodes, and so their pods, turn NotReady).
      await waitStatus(
        client,
        'creation',
        (s) => s.desiredNumberScheduled === o.nodes && s.updatedNumberScheduled === o.nodes,
        timeoutMs,
      );
      const created = await waitStatus(
        client,
        'creation (Ready)',
        (s) =>
          s.desiredNumberScheduled === o.nodes && s.numberReady === o.nodes && s.updatedNumberScheduled === o.nodes,
        Math.min(timeoutMs, 300_000),
      );
      // Every pod must exist (they are what is cached); on a loaded cluster some may stay not Ready.
      if (created.status.updatedNumberScheduled !== o.nodes)
        throw new Error(`only ${created.status.updatedNumberScheduled ?? 0} of ${o.nodes} pods were created`);
      creation = {
        seconds: (created.at - t0) / 1000,
        peakRssMiB: peakRssMiB(creator.child.pid ?? 0),
        readyNodes,
        readyPods: created.status.numberReady ?? 0,
      };
      say(
        `memory: ${o.nodes} pods created, ${creation.readyPods} Ready, in ${creation.seconds.toFixed(0)} s; creating manager's peak RSS ${creation.peakRssMiB.toFixed(0)} MiB`,
      );
    } finally {
      await creator.stop();
    }

    // 2. A fresh manager on the populated cluster: caches filled by lists, then steady.
    const t1 = Date.now();
    const m = await start(o.managerQps, o.managerBurst);
    const pid = m.child.pid ?? 0;
    try {
      for (let i = 0; !readFileSync(m.log, 'utf8').includes('"msg":"caches synced"'); i++) {
        if (i > 1200) throw new Error('the manager did not sync its caches in 120 s');
        await sleep(100);
      }
      const syncSeconds = (Date.now() - t1) / 1000;
      await sleep(o.steadySeconds * 1000);
      const cached = {
        syncSeconds,
        steadySeconds: o.steadySeconds,
        rssMiB: rssMiB(pid),
        peakRssMiB: peakRssMiB(pid),
        cpuSeconds: cpuSeconds(pid),
        ...(await heapFigures(m.metricsPort)),
      };
      say(
        `memory: fresh manager: caches synced in ${syncSeconds.toFixed(1)} s; after ${o.steadySeconds} s RSS ${cached.rssMiB.toFixed(0)} MiB, peak ${cached.peakRssMiB.toFixed(0)} MiB, heap used ${cached.heapUsedMiB?.toFixed(0)} MiB`,
      );

      // 3. The same manager rolls every pod to a new image.
      const t2 = Date.now();
      const patched = await client.patch<DaemonSetObject>(
        resources.daemonSets,
        { namespace: NAMESPACE, name: NAME },
        { spec: { template: { spec: { containers: [{ name: 'agent', image: IMAGE_V2 }] } } } },
        { type: 'merge' },
      );
      const generation = patched.metadata.generation ?? 0;
      const rolloutFigures = (done: boolean): NonNullable<MemoryBenchResult['rollout']> => ({
        seconds: (Date.now() - t2) / 1000,
        peakRssMiB: peakRssMiB(pid),
        cpuSeconds: cpuSeconds(pid) - cached.cpuSeconds,
        done,
      });
      const rolled = await waitStatus(
        client,
        'rollout',
        (s) =>
          (s.observedGeneration ?? 0) >= generation &&
          s.updatedNumberScheduled === o.nodes &&
          s.numberAvailable === o.nodes,
        o.rolloutTimeoutSeconds * 1000,
      );
      const rollout = rolloutFigures(rolled.done);
      say(
        `memory: rollout ${rolled.done ? 'done' : 'not done, figures up to now'} after ${rollout.seconds.toFixed(0)} s; peak RSS ${rollout.peakRssMiB.toFixed(0)} MiB, ${rollout.cpuSeconds.toFixed(1)} CPU s`,
      );
      return {
        nodes: o.nodes,
        pods: o.nodes,
        trimmed: !o.untrimmed,
        nodeFlags: o.nodeFlags,
        managerArgs: o.managerArgs,
        creation,
        cached,
        rollout,
      };
    } finally {
      await m.stop();
    }
  } finally {
    delete process.env[UNTRIMMED_ENV];
    client.close();
    await clusterDown({ dir: clusterDir, progress: (l) => say(l) });
  }
}
