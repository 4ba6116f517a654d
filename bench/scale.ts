// Scale: new nodes in a converged cluster (`--only scale`, sized by --nodes; part of the full run). A private kwok
// cluster of N nodes with pools, zones, accelerators, NVMe and tainted infra nodes; 20 DaemonSets of varied placement
// (nodeSelector, node affinity, tolerations) and update strategies (Standard, InPlaceIfPossible, maxSurge, a
// partition holding a paused image update) all converged; then 50 nodes are created at once (all 50 creates in
// flight together) and each (new node, DaemonSet that should run there) is timed from its Node create returning to
// its pod arriving in the benchmark's pod watch. Ours first (our manager, fresh), then, on the same cluster cleaned,
// the native DaemonSet controller of kube-controller-manager with the same 20 DaemonSets as apps/v1 (no partition or
// in-place there: OnDelete and Standard stand in; neither changes what a new node gets).
// Our manager's RSS is sampled from /proc (VmRSS) every 200 ms, and its peak read at the end (VmHWM).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { clusterDown, clusterUp, fakeNode, kubectl } from '../e2e/cluster/cluster.ts';
import { installCrd, waitConversionWebhook } from '../e2e/cluster/crd.ts';
import { startManager, type ManagerProcess } from '../e2e/lib/manager.ts';
import { ApiError, isNotFound } from '../src/k8s/errors.ts';
import { resources, type ResourceType } from '../src/k8s/resources.ts';
import { type KubeClient } from '../src/k8s/client.ts';
import { createKubeClient } from '../src/k8s/kubeconfig.ts';
import { isPodReady } from '../src/k8s/pod.ts';
import { getTargetNodeName } from '../src/k8s/scheduling.ts';
import type { Node, Pod, Taint, Toleration } from '../src/k8s/types.ts';
import { sleep } from '../src/testing/wait.ts';
import { peakRssMiB, rssMiB } from './lib/proc.ts';
import { MANAGER_HEAP_FLAGS } from './lib/programs.ts';
import {
  BENCH_NODE_HEARTBEAT_SECONDS,
  daemonSetManifest,
  daemonSetType,
  type DaemonSetObject,
  pool,
} from './lib/kube.ts';
import { percentile, say } from './lib/stats.ts';
import { Tracker } from './lib/tracker.ts';

export type ScaleController = 'ours' | 'native';

export interface ScaleOptions {
  /** Scratch directory: cluster state, manager log. */
  dir: string;
  /** Nodes before the burst. */
  nodes: number;
  /** DaemonSets: the first `daemonSets` of ARCHETYPES (cycled past 20). */
  daemonSets: number;
  /** Nodes created in the burst. */
  newNodes: number;
  /** How long the converged cluster is left alone before the idle RSS is read, s. */
  idleSeconds: number;
  /** Which controllers run the scenario, in this order. */
  controllers: ScaleController[];
  /** The fake kubelet's pod stages at once (kwok's podPlayStageParallelism; e2e/cluster/cluster.ts). */
  kwokPodParallelism: number;
  /** Command line of our manager (lib/programs.ts). */
  managerCommand: string[];
  managerQps: number;
  managerBurst: number;
  managerArgs: string[];
}

export interface ScaleSide {
  controller: ScaleController;
  /** Daemon pods running when the nodes were added, and how many of them were Ready (kwok's doing). */
  pods: number;
  readyAtBurst: number;
  /**
   * From the first DaemonSet create to every DaemonSet converged: status observed, every pod created and bound (not
   * Ready: on a loaded machine kwok's heartbeats come late, the node lifecycle controller marks pods NotReady, and
   * readiness flaps, for both controllers alike), and the paused updates observed, s.
   */
  convergeSeconds: number;
  /** Expected (new node, DaemonSet) pairs, and how many got a pod. */
  expected: number;
  samples: number;
  /** Pods for a (node, DaemonSet) that should not run there: a bug in either the controller or ARCHETYPES. */
  unexpected: number;
  /** Node create returned → pod seen in the benchmark's watch, ms. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The same from the Node create being sent, ms (adds the create's own latency). */
  p99FromSentMs: number;
  /** The slowest of the 50 Node creates, ms. */
  slowestCreateMs: number;
  /** Whose memory: our manager, or the whole kube-controller-manager process (all its controllers). */
  rssOf: 'manager' | 'kube-controller-manager';
  /** VmRSS after `idleSeconds` of quiet once converged, MiB. */
  rssIdleMiB: number;
  /** Highest VmRSS sampled (200 ms) from the burst until every pod was seen + 2 s, MiB. */
  rssBurstPeakMiB: number;
  /** Ours: VmHWM at the end (start, lists, convergence and burst), MiB. */
  rssPeakMiB?: number;
  /** Ours: V8 heap used at idle, from its /metrics, MiB. */
  heapUsedIdleMiB?: number;
  /** 1-minute load average of the machine when the burst started. */
  load1AtBurst: number;
}

export interface ScaleResult {
  nodes: number;
  newNodes: number;
  daemonSets: number;
  /** Heap flags of our manager (as under the chart's memory limit). */
  heapFlags: string[];
  managerQps: number;
  managerBurst: number;
  managerArgs: string[];
  /** 1/5/15-minute load averages when the scenario started. */
  loadAtStart: number[];
  sides: ScaleSide[];
  /** Why the run stopped early; what was measured before is kept. */
  error?: string;
}

const NAMESPACE = 'ads-scale';
const IMAGE_V1 = 'registry.example/node-agent:1.0.0';
const IMAGE_V2 = 'registry.example/node-agent:1.0.1';
const L = 'ads-bench/';

// ------------------------------------------------------------------------------------------------
// The cluster's shape: labels and taints of node number i (the same for the base nodes and the added ones, so the
// added nodes get the mix of DaemonSets the cluster has).

export function nodeLabels(i: number): Record<string, string> {
  return {
    [`${L}pool`]: `p${i % 10}`,
    [`${L}zone`]: `z${i % 3}`,
    ...(i % 16 === 1 ? { [`${L}storage`]: 'nvme' } : {}),
    ...(i % 25 === 3 ? { [`${L}accelerator`]: 'gpu' } : {}),
    ...(i % 20 === 7 ? { [`${L}role`]: 'infra' } : {}),
  };
}

/** One node in 20 is an infra node that only tolerating DaemonSets may run on (NoExecute, as dedicated nodes). */
export function nodeTaints(i: number): Taint[] {
  return i % 20 === 7 ? [{ key: `${L}dedicated`, value: 'infra', effect: 'NoExecute' }] : [];
}

interface Expression {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

type Strategy = 'standard' | 'inplace' | 'surge' | 'partition';

export interface Archetype {
  name: string;
  nodeSelector?: Record<string, string>;
  affinity?: Expression[];
  /** Besides the `Exists/NoSchedule` every template has (node agents run on cordoned and not-ready nodes). */
  tolerations?: Toleration[];
  /**
   * Ours / native: standard = RollingUpdate maxUnavailable 10% / the same; inplace = InPlaceIfPossible / Standard;
   * surge = maxSurge 10%, maxUnavailable 0 / the same; partition = partition 100% and an image update after
   * convergence (every pod held at the old revision) / OnDelete and the same update.
   */
  strategy: Strategy;
}

const TOLERATE_INFRA: Toleration = { key: `${L}dedicated`, operator: 'Exists' };

export const ARCHETYPES: Archetype[] = [
  { name: 'logs', nodeSelector: { type: 'kwok' }, tolerations: [{ operator: 'Exists' }], strategy: 'standard' },
  { name: 'metrics', nodeSelector: { type: 'kwok' }, strategy: 'inplace' },
  ...Array.from({ length: 10 }, (_, k): Archetype => ({
    name: `pool-p${k}`,
    nodeSelector: { [`${L}pool`]: `p${k}` },
    ...(k === 7 ? { tolerations: [TOLERATE_INFRA] } : {}),
    strategy: k === 2 ? 'partition' : k === 5 ? 'inplace' : k === 9 ? 'surge' : 'standard',
  })),
  { name: 'infra-agent', nodeSelector: { [`${L}role`]: 'infra' }, tolerations: [TOLERATE_INFRA], strategy: 'standard' },
  {
    name: 'infra-proxy',
    nodeSelector: { [`${L}role`]: 'infra' },
    tolerations: [TOLERATE_INFRA],
    strategy: 'partition',
  },
  { name: 'gpu-driver', nodeSelector: { [`${L}accelerator`]: 'gpu' }, strategy: 'standard' },
  { name: 'gpu-monitor', nodeSelector: { [`${L}accelerator`]: 'gpu' }, strategy: 'inplace' },
  { name: 'nvme-csi', nodeSelector: { [`${L}storage`]: 'nvme' }, strategy: 'surge' },
  {
    name: 'nvme-exporter',
    affinity: [
      { key: `${L}storage`, operator: 'In', values: ['nvme'] },
      { key: `${L}zone`, operator: 'NotIn', values: ['z2'] },
    ],
    strategy: 'partition',
  },
  {
    name: 'cache-z1',
    affinity: [
      { key: `${L}zone`, operator: 'In', values: ['z1'] },
      { key: `${L}pool`, operator: 'In', values: ['p1', 'p3'] },
    ],
    strategy: 'standard',
  },
  {
    name: 'edge-z0',
    nodeSelector: { [`${L}pool`]: 'p0', [`${L}zone`]: 'z0' },
    affinity: [{ key: `${L}accelerator`, operator: 'DoesNotExist' }],
    strategy: 'inplace',
  },
];

/** The archetypes of `count` DaemonSets: ARCHETYPES in order, cycled with a suffix past 20. */
export function archetypes(count: number): Archetype[] {
  return Array.from({ length: count }, (_, i) => {
    const a = ARCHETYPES[i % ARCHETYPES.length] as Archetype;
    return i < ARCHETYPES.length ? a : { ...a, name: `${a.name}-${Math.floor(i / ARCHETYPES.length)}` };
  });
}

const tolerationsOf = (a: Archetype): Toleration[] => [
  { operator: 'Exists', effect: 'NoSchedule' },
  ...(a.tolerations ?? []),
];

function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

/**
 * Whether a daemon pod of `a` belongs on node number i: its nodeSelector and affinity match the node's labels and
 * it tolerates every NoSchedule/NoExecute taint (upstream nodeShouldRunDaemonPod, for the taints this cluster has;
 * the not-ready taint of a new node is NoSchedule, tolerated by every template). Written apart from the product's
 * predicate, and checked against both controllers' desiredNumberScheduled before the burst.
 */
export function shouldRun(a: Archetype, i: number): boolean {
  const labels: Record<string, string> = { type: 'kwok', ...nodeLabels(i) };
  for (const [k, v] of Object.entries(a.nodeSelector ?? {})) if (labels[k] !== v) return false;
  for (const e of a.affinity ?? []) {
    const v = labels[e.key];
    const ok =
      e.operator === 'In'
        ? v !== undefined && (e.values ?? []).includes(v)
        : e.operator === 'NotIn'
          ? v === undefined || !(e.values ?? []).includes(v)
          : e.operator === 'Exists'
            ? v !== undefined
            : v === undefined;
    if (!ok) return false;
  }
  return nodeTaints(i).every((taint) => tolerationsOf(a).some((t) => tolerates(t, taint)));
}

function strategyOf(a: Archetype, controller: ScaleController): Record<string, unknown> {
  const rolling = (rollingUpdate: Record<string, unknown>) => ({ type: 'RollingUpdate', rollingUpdate });
  switch (a.strategy) {
    case 'standard':
      return rolling({ maxUnavailable: '10%' });
    case 'surge':
      return rolling({ maxSurge: '10%', maxUnavailable: 0 });
    case 'inplace':
      return controller === 'ours'
        ? rolling({ rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: '10%' })
        : rolling({ maxUnavailable: '10%' });
    case 'partition':
      return controller === 'ours' ? rolling({ partition: '100%', maxUnavailable: '10%' }) : { type: 'OnDelete' };
  }
}

function manifest(a: Archetype, controller: ScaleController) {
  return daemonSetManifest(
    controller,
    NAMESPACE,
    `${controller}-${a.name}`,
    {
      ...(a.nodeSelector ? { nodeSelector: a.nodeSelector } : {}),
      ...(a.affinity
        ? {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [{ matchExpressions: a.affinity }],
                },
              },
            },
          }
        : {}),
      terminationGracePeriodSeconds: 1,
      tolerations: tolerationsOf(a),
      containers: [
        {
          name: 'agent',
          image: IMAGE_V1,
          resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
        },
      ],
    },
    { updateStrategy: strategyOf(a, controller) },
  );
}

// ------------------------------------------------------------------------------------------------

interface PodCounts {
  live: number;
  bound: number;
  ready: number;
}

/**
 * Polls `done` every second (a check over every pod per watch event would cost more than it measures), after
 * `refresh` when given.
 */
async function poll(
  what: string,
  done: () => boolean,
  progress: () => string,
  timeoutMs: number,
  refresh?: () => Promise<void>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let printed = 0;
  for (;;) {
    await refresh?.();
    if (done()) return;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}: ${progress()}`);
    if (Date.now() - printed > 10_000) {
      printed = Date.now();
      say(`  scale: ${what}: ${progress()}`);
    }
    await sleep(1000);
  }
}

/** The highest VmRSS of a process, sampled every 200 ms between `reset` and `peak`. */
class RssSampler {
  private max = 0;
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 200);
  }
  private sample(): void {
    const r = rssMiB(this.pid);
    if (r > this.max) this.max = r;
  }
  reset(): void {
    this.max = 0;
    this.sample();
  }
  peak(): number {
    this.sample();
    return this.max;
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

async function heapUsedMiB(metricsPort: number): Promise<number | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const v = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1]);
    return Number.isFinite(v) ? v / 1048576 : undefined;
  } catch {
    return undefined;
  }
}

function scaleNode(name: string, i: number) {
  const node = fakeNode(name, nodeLabels(i));
  const taints = nodeTaints(i);
  return taints.length ? { ...node, spec: { taints } } : node;
}

/** The DaemonSets of the namespace as of the last `refresh` (one list; a failed list keeps the last). */
class DaemonSetSnapshot {
  objects = new Map<string, DaemonSetObject>();
  constructor(
    private readonly client: KubeClient,
    private readonly type: ResourceType,
  ) {}
  async refresh(): Promise<void> {
    try {
      const list = await this.client.list<DaemonSetObject>(this.type, { namespace: NAMESPACE });
      this.objects = new Map(list.items.map((d) => [d.metadata.name ?? '', d]));
    } catch (err) {
      say(`  scale: listing ${this.type.resource} failed (the last list is kept): ${(err as Error).message}`);
    }
  }
}

class Scale {
  readonly client: KubeClient;
  readonly watchClient: KubeClient;
  readonly pods: Tracker<Pod>;
  readonly kinds: Archetype[];

  constructor(
    readonly o: ScaleOptions,
    readonly kubeconfig: string,
    readonly kcmPid: number,
    readonly managerCommand: string[],
  ) {
    // No client-side limit: the benchmark must never be what slows a measurement down.
    this.client = createKubeClient({ kubeconfig, qps: 0, userAgent: 'ads-bench-scale', maxInFlight: 64 });
    this.watchClient = createKubeClient({ kubeconfig, qps: 0, userAgent: 'ads-bench-scale-watch' });
    this.pods = new Tracker<Pod>(this.watchClient, resources.pods, NAMESPACE);
    this.kinds = archetypes(o.daemonSets);
  }

  /** Pods per app not being deleted: all, bound to their node, Ready. */
  liveByApp(): Map<string, PodCounts> {
    const out = new Map<string, PodCounts>();
    for (const p of this.pods.objects.values()) {
      const app = p.metadata.labels?.app;
      if (!app || p.metadata.deletionTimestamp) continue;
      let c = out.get(app);
      if (!c) out.set(app, (c = { live: 0, bound: 0, ready: 0 }));
      c.live++;
      if (p.spec.nodeName) c.bound++;
      if (isPodReady(p)) c.ready++;
    }
    return out;
  }

  /**
   * Creates the N nodes (16 creates in flight) and waits until kwok has initialized each (its allocatable set, so
   * pods fit). Not until each is Ready and untainted: on a loaded machine kwok's heartbeats for thousands of nodes
   * come late and the node lifecycle controller marks some NotReady and taints them, which daemon pods tolerate
   * (both controllers add the not-ready and unreachable tolerations; every template tolerates NoSchedule).
   */
  async createBaseNodes(): Promise<void> {
    const n = this.o.nodes;
    say(`scale: creating ${n} labelled kwok nodes`);
    const indexes = Array.from({ length: n }, (_, i) => i);
    await pool(indexes, 16, async (i) => {
      await this.client.create(resources.nodes, scaleNode(`scale-node-${String(i).padStart(5, '0')}`, i));
    });
    let initialized = 0;
    await poll(
      'nodes initialized by kwok',
      () => initialized >= n,
      () => `${initialized}/${n}`,
      Math.max(300_000, n * 200),
      async () => {
        const list = await this.client.listAll<Node>(resources.nodes, { pageSize: 1000 });
        initialized = list.items.filter((x) => (x.status as { allocatable?: unknown } | undefined)?.allocatable).length;
      },
    );
  }

  async side(controller: ScaleController, measured: (side: ScaleSide) => void): Promise<ScaleSide> {
    const o = this.o;
    const type = daemonSetType(controller);
    // Ours are read in their storage version, v1beta1: a v1alpha1 read would go through our conversion webhook, and
    // the benchmark's own reads must not load the process it measures.
    const ds = new DaemonSetSnapshot(this.client, controller === 'ours' ? resources.daemonSetsV1beta1 : type);
    let manager: ManagerProcess | undefined;
    // A manager that exits (e.g. lost its lease on a starved machine) ends the run with its last log line.
    const alive = async () => {
      const code = manager?.child.exitCode;
      if (manager && code !== null && code !== undefined) {
        const last = readFileSync(manager.log, 'utf8').trimEnd().split('\n').at(-1) ?? '';
        throw new Error(`our manager exited with code ${code}: ${last.slice(0, 400)}`);
      }
    };
    const refresh = async () => {
      await alive();
      await ds.refresh();
    };
    let sampler: RssSampler | undefined;
    try {
      if (controller === 'ours') {
        manager = await startManager({
          kubeconfig: this.kubeconfig,
          dir: join(o.dir, 'scale-manager'),
          command: this.managerCommand,
          args: [
            ...['--kube-api-qps', String(o.managerQps), '--kube-api-burst', String(o.managerBurst)],
            ...['--log-level', 'info', '--webhook-drain', '0s'],
            // As the memory part: no readiness gate, like native pods. The gate costs a pods/status write per pod
            // and a kwok stage per pod, long after the pod's creation, which is what is timed here.
            ...['--kruise-pod-ready-gate', 'when-needed'],
            // As the KCM of this cluster (e2e/cluster/cluster.ts: --leader-elect=false). On the shared 2 cores at a
            // load of 30-70 a lease renewal took over its 10 s deadline and the manager exited (as Kruise's would).
            ...['--leader-elect', 'false'],
            ...o.managerArgs,
          ],
        });
        await waitConversionWebhook(this.kubeconfig, `https://127.0.0.1:${manager.webhookPort}/convert`);
        say(`  scale: manager started (pid ${manager.child.pid}, log ${manager.log})`);
      }
      const pid = manager?.child.pid ?? this.kcmPid;
      sampler = new RssSampler(pid);

      const names = this.kinds.map((a) => `${controller}-${a.name}`);
      const expected = new Map(
        this.kinds.map((a, k) => {
          let want = 0;
          for (let i = 0; i < o.nodes; i++) if (shouldRun(a, i)) want++;
          return [names[k] as string, want];
        }),
      );
      const total = [...expected.values()].reduce((s, x) => s + x, 0);
      say(`scale: ${controller}: ${names.length} DaemonSets, ${total} daemon pods on ${o.nodes} nodes`);
      const t0 = performance.now();
      for (const a of this.kinds) await this.client.create(type, manifest(a, controller));
      const converged = (generations: Map<string, number>) => () => {
        const statusDone = names.every((n) => {
          const d = ds.objects.get(n);
          const want = expected.get(n);
          return (
            d !== undefined &&
            (d.status?.observedGeneration ?? 0) >= (generations.get(n) ?? d.metadata.generation ?? 1) &&
            d.status?.desiredNumberScheduled === want &&
            d.status?.currentNumberScheduled === want &&
            d.status?.numberMisscheduled === 0
          );
        });
        if (!statusDone) return false;
        const live = this.liveByApp();
        return names.every((n) => live.get(n)?.bound === expected.get(n));
      };
      const progress = () => {
        const live = [...this.liveByApp().values()];
        const done = names.filter((n) => ds.objects.get(n)?.status?.currentNumberScheduled === expected.get(n)).length;
        const wrong = names
          .filter((n) => {
            const d = ds.objects.get(n)?.status?.desiredNumberScheduled;
            return d !== undefined && d !== expected.get(n);
          })
          .map((n) => `${n} desired ${ds.objects.get(n)?.status?.desiredNumberScheduled} != ${expected.get(n)}`);
        const sum = (f: (x: PodCounts) => number) => live.reduce((s, x) => s + f(x), 0);
        return `${done}/${names.length} DaemonSets with every pod, ${sum((x) => x.live)}/${total} pods, ${sum((x) => x.bound)} bound, ${sum((x) => x.ready)} Ready${wrong.length ? `; ${wrong.join(', ')}` : ''}`;
      };
      const timeoutMs = 300_000 + total * 200;
      await poll('convergence', converged(new Map()), progress, timeoutMs, refresh);

      // A paused update: the image changes, and the partition (ours) or OnDelete (native) keeps every pod as it is.
      const generations = new Map<string, number>();
      for (const [k, a] of this.kinds.entries()) {
        if (a.strategy !== 'partition') continue;
        const patched = await this.client.patch<DaemonSetObject>(
          type,
          { namespace: NAMESPACE, name: names[k] as string },
          { spec: { template: { spec: { containers: [{ name: 'agent', image: IMAGE_V2 }] } } } },
          { type: 'merge' },
        );
        generations.set(names[k] as string, patched.metadata.generation ?? 0);
      }
      await poll('paused updates observed', converged(generations), progress, timeoutMs, refresh);
      const convergeSeconds = (performance.now() - t0) / 1000;
      say(`scale: ${controller}: converged in ${convergeSeconds.toFixed(0)} s; ${o.idleSeconds} s idle`);
      await sleep(o.idleSeconds * 1000);
      const rssIdleMiB = rssMiB(pid);
      const readyAtBurst = [...this.liveByApp().values()].reduce((s, x) => s + x.ready, 0);
      const heapUsedIdleMiB = manager ? await heapUsedMiB(manager.metricsPort) : undefined;

      // The burst.
      const added = Array.from({ length: o.newNodes }, (_, j) => ({
        name: `scale-new-${controller}-${String(j).padStart(3, '0')}`,
        index: o.nodes + j,
      }));
      const wanted = new Set<string>();
      for (const { name, index } of added)
        for (const [k, a] of this.kinds.entries()) if (shouldRun(a, index)) wanted.add(`${name}/${names[k]}`);
      const addedNames = new Set(added.map((x) => x.name));
      const sentAt = new Map<string, number>();
      const returnedAt = new Map<string, number>();
      const seenAt = new Map<string, number>();
      let unexpected = 0;
      const off = this.pods.onChange((e) => {
        if (e?.type !== 'ADDED') return;
        const now = performance.now();
        const node = getTargetNodeName(e.object.spec);
        if (!node || !addedNames.has(node)) return;
        const key = `${node}/${e.object.metadata.labels?.app ?? ''}`;
        if (!wanted.has(key)) unexpected++;
        else if (!seenAt.has(key)) seenAt.set(key, now);
      });
      const load1AtBurst = loadavg()[0] ?? NaN;
      say(`scale: ${controller}: adding ${added.length} nodes at once (1-min load ${load1AtBurst.toFixed(1)})`);
      sampler.reset();
      try {
        await Promise.all(
          added.map(async ({ name, index }) => {
            sentAt.set(name, performance.now());
            await this.client.create(resources.nodes, scaleNode(name, index));
            returnedAt.set(name, performance.now());
          }),
        );
        await poll(
          'a pod of every DaemonSet that should run on every added node',
          () => seenAt.size >= wanted.size,
          () => `${seenAt.size}/${wanted.size} pods`,
          120_000 + wanted.size * 200,
          alive,
        );
        await sleep(2000);
      } finally {
        off();
      }
      const rssBurstPeakMiB = sampler.peak();
      const fromReturned: number[] = [];
      const fromSent: number[] = [];
      for (const [key, t] of seenAt) {
        const node = key.slice(0, key.indexOf('/'));
        fromReturned.push(t - (returnedAt.get(node) ?? t));
        fromSent.push(t - (sentAt.get(node) ?? t));
      }
      const side: ScaleSide = {
        controller,
        pods: total,
        readyAtBurst,
        convergeSeconds,
        expected: wanted.size,
        samples: seenAt.size,
        unexpected,
        p50Ms: percentile(fromReturned, 50),
        p99Ms: percentile(fromReturned, 99),
        maxMs: Math.max(...fromReturned),
        p99FromSentMs: percentile(fromSent, 99),
        slowestCreateMs: Math.max(...added.map(({ name }) => (returnedAt.get(name) ?? 0) - (sentAt.get(name) ?? 0))),
        rssOf: manager ? 'manager' : 'kube-controller-manager',
        rssIdleMiB,
        rssBurstPeakMiB,
        ...(manager ? { rssPeakMiB: peakRssMiB(pid) } : {}),
        ...(heapUsedIdleMiB !== undefined ? { heapUsedIdleMiB } : {}),
        load1AtBurst,
      };
      say(
        `scale: ${controller}: ${side.samples} samples, p50 ${side.p50Ms.toFixed(0)} ms, p99 ${side.p99Ms.toFixed(0)} ms, max ${side.maxMs.toFixed(0)} ms; RSS idle ${rssIdleMiB.toFixed(0)} MiB, burst peak ${rssBurstPeakMiB.toFixed(0)} MiB${side.rssPeakMiB ? `, VmHWM ${side.rssPeakMiB.toFixed(0)} MiB` : ''}`,
      );

      measured(side);
      // Leave the cluster as it was for the next controller: its DaemonSets removed (orphaning their pods, while
      // our conversion webhook still answers), the pods deleted at once, the added nodes deleted.
      if (controller !== o.controllers.at(-1))
        await this.clean(
          type,
          names,
          added.map((x) => x.name),
          ds,
        );
      return side;
    } finally {
      sampler?.stop();
      await manager?.stop();
    }
  }

  private async clean(type: ResourceType, names: string[], nodes: string[], ds: DaemonSetSnapshot): Promise<void> {
    say('scale: cleaning up for the next controller');
    const ignoreGone = (err: unknown) => {
      if (!isNotFound(err)) throw err;
    };
    for (const name of names)
      await retryOverload(`deleting DaemonSet ${name}`, () =>
        this.client.delete(type, { namespace: NAMESPACE, name }, { propagationPolicy: 'Orphan' }),
      ).catch(ignoreGone);
    await poll(
      'DaemonSets gone',
      () => names.every((n) => !ds.objects.has(n)),
      () => `${ds.objects.size} left`,
      120_000,
      () => ds.refresh(),
    );
    await sleep(1000); // the controller sees the deletions before its pods go
    const pods = [...this.pods.objects.keys()];
    await pool(pods, 32, async (name) => {
      await this.client
        .delete(resources.pods, { namespace: NAMESPACE, name }, { gracePeriodSeconds: 0 })
        .catch(ignoreGone);
    });
    await pool(nodes, 16, async (name) => {
      await this.client.delete(resources.nodes, { name }).catch(ignoreGone);
    });
    await poll(
      'pods gone',
      () => this.pods.objects.size === 0,
      () => `${this.pods.objects.size} left`,
      300_000,
    );
  }

  close(): void {
    this.pods.close();
    this.client.close();
    this.watchClient.close();
  }
}

export async function runScaleBench(o: ScaleOptions): Promise<ScaleResult> {
  const clusterDir = join(o.dir, 'scale-cluster');
  const result: ScaleResult = {
    nodes: o.nodes,
    newNodes: o.newNodes,
    daemonSets: o.daemonSets,
    heapFlags: MANAGER_HEAP_FLAGS,
    managerQps: o.managerQps,
    managerBurst: o.managerBurst,
    managerArgs: o.managerArgs,
    loadAtStart: loadavg(),
    sides: [],
  };
  say(`scale: starting a private cluster (${o.nodes} nodes to come)`);
  const state = await clusterUp({
    dir: clusterDir,
    nodes: 0,
    nodeHeartbeatSeconds: BENCH_NODE_HEARTBEAT_SECONDS,
    progress: (l) => say(l),
    kwokPodParallelism: o.kwokPodParallelism,
  });
  const kcm = state.processes.find((p) => p.name === 'kube-controller-manager');
  const scale = new Scale(o, state.kubeconfig, kcm?.pid ?? 0, o.managerCommand);
  let saReady = false;
  try {
    await installCrd(state.kubeconfig);
    await scale.client.create(resources.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NAMESPACE },
    });
    // The ServiceAccount admission plugin refuses pods until the namespace's default service account exists.
    await poll(
      `the default service account of ${NAMESPACE}`,
      () => saReady,
      () => 'not yet',
      60_000,
      async () => {
        saReady = await kubectl(state.kubeconfig, ['get', 'serviceaccount', 'default', '-n', NAMESPACE]).then(
          () => true,
          () => false,
        );
      },
    );
    await scale.createBaseNodes();
    await scale.pods.start();
    // Each side is kept as soon as it is measured, before the cluster is cleaned for the next: a failed clean-up
    // loses no figures.
    for (const controller of o.controllers) await scale.side(controller, (side) => result.sides.push(side));
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    say(`scale benchmark stopped early: ${result.error}`);
  } finally {
    scale.close();
    await clusterDown({ dir: clusterDir, progress: (l) => say(l) });
  }
  return result;
}

/**
 * Runs `f` again on an apiserver overload (429 or 5xx), up to 5 attempts: at 5,000 nodes, orphaning the 16,673 pods
 * of the DaemonSets kept the apiserver busy enough that a DaemonSet delete answered 504 Timeout.
 */
async function retryOverload<T>(what: string, f: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (err) {
      const code = err instanceof ApiError ? err.code : 0;
      if (attempt >= 5 || !(code === 429 || code >= 500)) throw err;
      say(`scale: ${what}: ${(err as Error).message}; trying again (${attempt}/4)`);
      await sleep(2000 * attempt);
    }
  }
}
