// The benchmarks that need a cluster, all on one private kwok cluster: the rollout race (native
// DaemonSet controller in kube-controller-manager vs our manager, one at a time), the apiserver's
// ceiling (a plain client replacing pods as fast as it is allowed), and new-node latency.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  clusterDown,
  clusterUp,
  createNodes,
  fakeNode,
  kubectl,
  nodeName,
  waitForNodesReady,
  type ClusterState,
} from '../e2e/cluster/cluster.ts';
import { installCrd, waitConversionWebhook } from '../e2e/cluster/crd.ts';
import { startManager, type ManagerProcess } from '../e2e/lib/manager.ts';
import { isNotFound } from '../src/k8s/errors.ts';
import { resources } from '../src/k8s/resources.ts';
import { type KubeClient } from '../src/k8s/client.ts';
import { createKubeClient } from '../src/k8s/kubeconfig.ts';
import { isPodReady } from '../src/k8s/pod.ts';
import { getTargetNodeName } from '../src/k8s/scheduling.ts';
import { KRUISE_POD_READY } from '../src/api/constants.ts';
import { kruisePodReadyPatch } from '../src/daemonset/pods.ts';
import type { Pod } from '../src/k8s/types.ts';
import { auditApiserverArgs, auditWindow, countRequests, waitQuiet, type AuditWindow } from './lib/audit.ts';
import { cpuSeconds, peakRssMiB } from './lib/proc.ts';
import { daemonSetManifest, daemonSetType, type DaemonSetObject, pool } from './lib/kube.ts';
import { median, percentile, say } from './lib/stats.ts';
import { sleep } from '../src/testing/wait.ts';
import { Tracker, until } from './lib/tracker.ts';

export interface ClusterBenchOptions {
  /** Scratch directory: cluster state, audit log, manager logs. */
  dir: string;
  nodes: number;
  rounds: number;
  /** New-node latency: cluster size before the new nodes come, DaemonSets, nodes added. */
  newNodeBase: number;
  newNodeDaemonSets: number;
  newNodes: number;
  /** 'new': the DaemonSets select only the added nodes (few pods); 'all': every node. */
  newNodeScope: 'new' | 'all';
  /** Client budget of kube-controller-manager (so native's) and kube-scheduler in the benchmark's cluster. */
  controlPlaneQps: number;
  controlPlaneBurst: number;
  /** The fake kubelet's pod stages at once (kwok's podPlayStageParallelism; e2e/cluster/cluster.ts). */
  kwokPodParallelism: number;
  /** Client budget of our manager; the default matches the KCM of this cluster (cluster.ts). */
  managerQps: number;
  managerBurst: number;
  /** More flags for our manager, e.g. ['--image-predownload', 'off']. */
  managerArgs: string[];
  /** Command line of our manager (lib/programs.ts). */
  managerCommand: string[];
  /** Only the rollout race and the ceiling it is read against (`--only race`): no new-node latency. */
  raceOnly?: boolean;
}

export type ControllerKind = 'native' | 'ours';

export interface RaceRound {
  controller: ControllerKind;
  round: number;
  createSeconds: number;
  rolloutSeconds: number;
  createRequests: number;
  rolloutRequests: number;
  /** CPU seconds of the process doing the work: our manager, or the whole KCM for native. */
  createCpuSeconds: number;
  rolloutCpuSeconds: number;
  /** Our manager only: peak RSS over the round (VmHWM). */
  peakRssMiB?: number;
  requestsByVerb: Record<string, number>;
  /** Requests by verb and resource, creation and rollout apart. */
  createByVerb?: Record<string, number>;
  rolloutByVerb?: Record<string, number>;
  /** From the step's start to the controller's last pod write in it (audit log), s. */
  createWritesSeconds?: number;
  rolloutWritesSeconds?: number;
  /** The apiserver's time on each of the controller's pod writes of the step (audit log), ms: p50 and p99. */
  createPodWriteMs?: { p50: number; p99: number };
  rolloutPodWriteMs?: { p50: number; p99: number };
  /** Daemon pods the step made (the cluster's nodes). */
  pods: number;
  /** The controller's client QPS (native: the KCM's --kube-api-qps). */
  qps: number;
  /** Whether the pods carried the KruisePodReady readiness gate (one more pods/status write per pod created). */
  readinessGate: boolean;
  /**
   * The fake kubelet's (kwok's) writes of pods/status in each step: one per pod started when the pod has what it needs
   * to be Ready by then, two when a readiness gate's condition comes after the kubelet started it.
   */
  kubeletCreateStatusWrites?: number;
  kubeletRolloutStatusWrites?: number;
}

export interface CeilingResult {
  createSeconds: number;
  replaceSeconds: number;
  requests: number;
  /**
   * Whether each pod carried the KruisePodReady gate, with its condition written by the plain client right after the
   * create (one `patch pods/status` per pod), as our manager's pods do: the same writes as ours.
   */
  readinessGate: boolean;
}

export interface NewNodeResult {
  baseNodes: number;
  daemonSets: number;
  newNodes: number;
  scope: 'new' | 'all';
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Our manager's peak RSS over this part (every node and the DaemonSets' pods in its caches), MiB. */
  peakRssMiB: number;
}

export interface ClusterBenchResult {
  kubernetesVersion: string;
  race: RaceRound[];
  ceiling?: CeilingResult;
  newNode?: NewNodeResult;
  /** Why the run stopped early; what was measured before is kept. */
  error?: string;
}

const NAMESPACE = 'ads-bench';
const IMAGE_V1 = 'registry.example/node-agent:1.0.0';
const IMAGE_V2 = 'registry.example/node-agent:1.0.1';
/** User agents in the audit log: the KCM's DaemonSet controller client, and our manager. */
const USER_AGENT: Record<ControllerKind, string> = {
  native: '/daemon-set-controller',
  ours: 'advanced-daemonset/',
};
const BENCH_AGENT = 'ads-bench-ceiling';
/** The fake kubelet's client (kwok's default user agent). */
const KUBELET_AGENT = 'kwok/';
/** After "done", requests (final status writes) and CPU keep being counted this long. */
export const SETTLE_MS = 2000;
const NEW_NODE_LABEL = 'ads-bench/new';
const PULL_POD_LABEL = 'apps.kruise.io/image-predownload-daemonset-uid';

/** The pod template both controllers get: a typical node agent, identical but for apiVersion. */
function podTemplate(app: string, image: string, nodeSelector: Record<string, string>) {
  return {
    metadata: { labels: { app } },
    spec: {
      nodeSelector,
      terminationGracePeriodSeconds: 1,
      tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }],
      containers: [
        {
          name: 'agent',
          image,
          resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
        },
      ],
    },
  };
}

function raceDaemonSet(kind: ControllerKind, name: string, nodeSelector: Record<string, string>) {
  return daemonSetManifest(kind, NAMESPACE, name, podTemplate(name, IMAGE_V1, nodeSelector).spec, {
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } },
  });
}

class Bench {
  readonly client: KubeClient;
  readonly watchClient: KubeClient;
  readonly pods: Tracker<Pod>;
  readonly ds: Record<ControllerKind, Tracker<DaemonSetObject>>;
  readonly windows: AuditWindow[] = [];
  private managerSeq = 0;

  constructor(
    readonly state: ClusterState,
    readonly opts: ClusterBenchOptions,
    readonly auditLog: string,
  ) {
    // No client-side limit: the benchmark must never be what slows a measurement down.
    this.client = createKubeClient({ kubeconfig: state.kubeconfig, qps: 0, userAgent: BENCH_AGENT, maxInFlight: 64 });
    // Watches on their own client and user agent, so the ceiling's request count is only its writes.
    this.watchClient = createKubeClient({ kubeconfig: state.kubeconfig, qps: 0, userAgent: 'ads-bench-watch' });
    this.pods = new Tracker<Pod>(this.watchClient, resources.pods, NAMESPACE);
    this.ds = {
      native: new Tracker<DaemonSetObject>(this.watchClient, resources.nativeDaemonSets, NAMESPACE),
      ours: new Tracker<DaemonSetObject>(this.watchClient, resources.daemonSets, NAMESPACE),
    };
  }

  get kcmPid(): number {
    const p = this.state.processes.find((x) => x.name === 'kube-controller-manager');
    if (!p) throw new Error('kube-controller-manager is not in the cluster state');
    return p.pid;
  }

  /** Daemon pods of `app` not being deleted (image pre-download pull pods, if any, are not daemon pods). */
  liveApp(app: string): Pod[] {
    const out: Pod[] = [];
    for (const p of this.pods.objects.values()) {
      const labels = p.metadata.labels;
      if (labels?.app === app && !labels[PULL_POD_LABEL] && !p.metadata.deletionTimestamp) out.push(p);
    }
    return out;
  }

  countApp(app: string): number {
    let n = 0;
    for (const p of this.pods.objects.values()) if (p.metadata.labels?.app === app) n++;
    return n;
  }

  timeoutMs(pods: number): number {
    return Math.max(180_000, pods * 600);
  }

  async startManager(): Promise<ManagerProcess> {
    const m = await startManager({
      kubeconfig: this.state.kubeconfig,
      dir: join(this.opts.dir, `manager-${++this.managerSeq}`),
      command: this.opts.managerCommand,
      args: [
        '--kube-api-qps',
        String(this.opts.managerQps),
        '--kube-api-burst',
        String(this.opts.managerBurst),
        // info: startManager finds the ports in the "manager started" line.
        '--log-level',
        'info',
        '--webhook-drain',
        '0s',
        // The product's default --kruise-pod-ready-gate (always): every pod carries the gate, one more pods/status
        // write per pod created than native; the table sets each controller against the floor of its own writes.
        ...this.opts.managerArgs,
      ],
    });
    // Its conversion webhook (by URL) must be registered before a v1alpha1 DaemonSet is written.
    await waitConversionWebhook(this.state.kubeconfig, `https://127.0.0.1:${m.webhookPort}/convert`);
    say(`  manager started (pid ${m.child.pid}, log ${m.log})`);
    return m;
  }

  /**
   * Waits until the fake kubelet has worked through its queue (no pod request of it for 2 s), so a step never waits
   * behind the previous one's leftovers (waitQuiet).
   */
  async kubeletQuiet(): Promise<void> {
    const waited = await waitQuiet(this.auditLog, KUBELET_AGENT, 2000, 180_000);
    if (waited > 5000) say(`  waited ${(waited / 1000).toFixed(1)}s for the fake kubelet to finish the previous step`);
  }

  /** Deletes a DaemonSet and waits until the garbage collector has removed its pods. */
  async deleteDaemonSet(kind: ControllerKind, name: string): Promise<void> {
    await this.client.delete(daemonSetType(kind), { namespace: NAMESPACE, name }, { propagationPolicy: 'Background' });
    await until(
      [this.pods],
      `pods of ${name} gone`,
      () => this.countApp(name) === 0,
      () => `${this.countApp(name)} left`,
      this.timeoutMs(this.opts.nodes),
    );
  }

  /** One controller, one round: create until all Ready, roll a new image until done, delete. */
  async raceOnce(kind: ControllerKind, round: number, managerPid?: number): Promise<RaceRound> {
    const n = this.opts.nodes;
    const name = `race-${kind}-${round}`;
    const cpuPid = managerPid ?? this.kcmPid;
    const ds = this.ds[kind];
    const status = () => ds.objects.get(name)?.status ?? {};
    const generation = () => ds.objects.get(name)?.metadata.generation ?? Infinity;

    await this.kubeletQuiet();
    say(`round ${round + 1}: ${kind} creates ${name} on ${n} nodes`);
    const cpu0 = cpuSeconds(cpuPid);
    const t0 = Date.now();
    await this.client.create(daemonSetType(kind), raceDaemonSet(kind, name, { type: 'kwok' }));
    const created = await until(
      [this.pods, ds],
      'every pod Ready',
      () => {
        // Status first: it is cheap, and the pod scan only runs once the controller says it is done.
        const s = status();
        if (s.desiredNumberScheduled !== n || s.numberReady !== n || (s.observedGeneration ?? 0) < generation())
          return false;
        const live = this.liveApp(name);
        return live.length === n && live.every(isPodReady);
      },
      () => {
        const live = this.liveApp(name);
        return `pods ${live.length}/${n}, ready ${live.filter(isPodReady).length}, status.numberReady ${status().numberReady ?? 0}`;
      },
      this.timeoutMs(n),
    );
    const readinessGate = this.liveApp(name).some((p) =>
      p.spec.readinessGates?.some((g) => g.conditionType === KRUISE_POD_READY),
    );
    await sleep(SETTLE_MS);
    const cpu1 = cpuSeconds(cpuPid);
    const createWindow = auditWindow(USER_AGENT[kind], t0, created + SETTLE_MS);
    await this.kubeletQuiet();
    const cpuRollout = cpuSeconds(cpuPid);

    say(`round ${round + 1}: ${kind} rolls ${name} to a new image (maxUnavailable 10%)`);
    const t1 = Date.now();
    const patched = await this.client.patch<DaemonSetObject>(
      daemonSetType(kind),
      { namespace: NAMESPACE, name },
      { spec: { template: { spec: { containers: [{ name: 'agent', image: IMAGE_V2 }] } } } },
      { type: 'merge' },
    );
    const wantGeneration = patched.metadata.generation ?? 0;
    const rolled = await until(
      [this.pods, ds],
      'rollout complete',
      () => {
        const s = status();
        if (
          (s.observedGeneration ?? 0) < wantGeneration ||
          s.desiredNumberScheduled !== n ||
          s.updatedNumberScheduled !== n ||
          s.numberAvailable !== n
        )
          return false;
        const live = this.liveApp(name);
        return live.length === n && live.every((p) => isPodReady(p) && p.spec.containers[0]?.image === IMAGE_V2);
      },
      () => {
        const live = this.liveApp(name);
        const updated = live.filter((p) => p.spec.containers[0]?.image === IMAGE_V2);
        return `updated pods ${updated.length}/${n}, ready ${updated.filter(isPodReady).length}, status.updated ${status().updatedNumberScheduled ?? 0}`;
      },
      this.timeoutMs(2 * n),
    );
    await sleep(SETTLE_MS);
    const cpu2 = cpuSeconds(cpuPid);
    const rssPeak = managerPid ? peakRssMiB(managerPid) : undefined;
    const rolloutWindow = auditWindow(USER_AGENT[kind], t1, rolled + SETTLE_MS);
    const kubelet = {
      create: auditWindow(KUBELET_AGENT, t0, created + SETTLE_MS),
      rollout: auditWindow(KUBELET_AGENT, t1, rolled + SETTLE_MS),
    };
    this.windows.push(createWindow, rolloutWindow, kubelet.create, kubelet.rollout);

    say(
      `round ${round + 1}: ${kind} done (create ${((created - t0) / 1000).toFixed(1)}s, rollout ${((rolled - t1) / 1000).toFixed(1)}s); deleting`,
    );
    await this.deleteDaemonSet(kind, name);
    const result: RaceRound = {
      controller: kind,
      round,
      createSeconds: (created - t0) / 1000,
      rolloutSeconds: (rolled - t1) / 1000,
      createRequests: 0,
      rolloutRequests: 0,
      createCpuSeconds: cpu1 - cpu0,
      rolloutCpuSeconds: cpu2 - cpuRollout,
      requestsByVerb: {},
      pods: n,
      qps: kind === 'native' ? this.opts.controlPlaneQps : this.opts.managerQps,
      readinessGate,
      ...(rssPeak !== undefined ? { peakRssMiB: rssPeak } : {}),
    };
    // Filled in after the run, when the audit log is read once.
    this.pendingCounts.push({ result, createWindow, rolloutWindow, kubelet });
    return result;
  }

  readonly pendingCounts: {
    result: RaceRound;
    createWindow: AuditWindow;
    rolloutWindow: AuditWindow;
    kubelet: { create: AuditWindow; rollout: AuditWindow };
  }[] = [];

  /** Appends each finished round to `rounds`, so a later failure keeps them. */
  async race(rounds: RaceRound[]): Promise<void> {
    for (let r = 0; r < this.opts.rounds; r++) {
      // Alternating within a round spreads slow spells of the shared machine over both controllers.
      rounds.push(await this.raceOnce('native', r));
      const manager = await this.startManager();
      try {
        rounds.push(await this.raceOnce('ours', r, manager.child.pid));
      } finally {
        await manager.stop();
      }
    }
  }

  /**
   * A plain client creates N pods bound to their nodes, then deletes and re-creates each. With the readiness gate
   * (as our manager's pods have it by default) each create is followed by the gate's condition, as ours does.
   */
  async ceiling(): Promise<CeilingResult> {
    const n = this.opts.nodes;
    const nodes = Array.from({ length: n }, (_, i) => nodeName(i, n));
    const app = 'ceiling';
    const readinessGate = kruisePodReadyGateOn(this.opts.managerArgs);
    const pod = (node: string, suffix: string, image: string) => {
      const t = podTemplate(app, image, {});
      return {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `ceiling-${node}-${suffix}`, namespace: NAMESPACE, labels: t.metadata.labels },
        spec: {
          ...t.spec,
          nodeName: node,
          nodeSelector: undefined,
          ...(readinessGate ? { readinessGates: [{ conditionType: KRUISE_POD_READY }] } : {}),
        },
      };
    };
    const create = async (node: string, suffix: string, image: string) => {
      const created = (await this.client.create(resources.pods, pod(node, suffix, image))) as Pod;
      if (!readinessGate) return;
      await this.client.patch(
        resources.pods,
        { namespace: NAMESPACE, name: created.metadata.name ?? '' },
        kruisePodReadyPatch(created, Date.now()),
        { type: 'strategic', subresource: 'status' },
      );
    };
    const allReady = (image: string) => () => {
      const live = this.liveApp(app);
      return live.length === n && live.every((p) => isPodReady(p) && p.spec.containers[0]?.image === image);
    };
    const seen = () => {
      const live = this.liveApp(app);
      return `pods ${live.length}/${n}, ready ${live.filter(isPodReady).length}`;
    };
    const gate = readinessGate ? ', each with the KruisePodReady condition written after it' : '';
    await this.kubeletQuiet();
    say(`ceiling: a plain client creates ${n} pods as fast as the apiserver takes them${gate}`);
    const t0 = Date.now();
    await pool(nodes, 64, (node) => create(node, 'a', IMAGE_V1));
    const created = await until([this.pods], 'ceiling pods Ready', allReady(IMAGE_V1), seen, this.timeoutMs(n));
    await this.kubeletQuiet();
    say(`ceiling: deleting and re-creating each of the ${n} pods with a new image`);
    const t1 = Date.now();
    await pool(nodes, 64, async (node) => {
      await this.client.delete(resources.pods, { namespace: NAMESPACE, name: `ceiling-${node}-a` });
      await create(node, 'b', IMAGE_V2);
    });
    const replaced = await until([this.pods], 'replaced pods Ready', allReady(IMAGE_V2), seen, this.timeoutMs(2 * n));
    const window = auditWindow(BENCH_AGENT, t0, replaced);
    this.windows.push(window);
    await pool(nodes, 64, async (node) => {
      await this.client
        .delete(resources.pods, { namespace: NAMESPACE, name: `ceiling-${node}-b` })
        .catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
    });
    await until([this.pods], 'ceiling pods gone', () => this.countApp(app) === 0, seen, this.timeoutMs(n));
    this.ceilingWindow = window;
    return {
      createSeconds: (created - t0) / 1000,
      replaceSeconds: (replaced - t1) / 1000,
      requests: 0,
      readinessGate,
    };
  }

  ceilingWindow: AuditWindow | undefined;

  /** Grows the cluster, runs D DaemonSets, adds nodes and times Node creation -> our pod exists. */
  async newNodeLatency(): Promise<NewNodeResult> {
    const o = this.opts;
    const base = Math.max(o.newNodeBase, o.nodes);
    if (base > o.nodes) {
      say(`new-node latency: growing the cluster from ${o.nodes} to ${base} nodes`);
      await createNodes(
        this.state.kubeconfig,
        Array.from({ length: base - o.nodes }, (_, i) => nodeName(o.nodes + i, base)),
      );
      await waitForNodesReady(this.state.kubeconfig, base, (l) => say(l), this.timeoutMs(base));
    }
    const manager = await this.startManager();
    try {
      const selector: Record<string, string> =
        o.newNodeScope === 'new' ? { [NEW_NODE_LABEL]: 'true' } : { type: 'kwok' };
      const names = Array.from({ length: o.newNodeDaemonSets }, (_, i) => `newnode-${i}`);
      say(
        `new-node latency: ${names.length} DaemonSets on ${base} nodes (selecting ${o.newNodeScope === 'new' ? 'the added nodes' : 'every node'})`,
      );
      for (const name of names) await this.client.create(resources.daemonSets, raceDaemonSet('ours', name, selector));
      const perDs = o.newNodeScope === 'new' ? 0 : base;
      await until(
        [this.ds.ours, this.pods],
        'DaemonSets settled',
        () =>
          names.every((name) => {
            const d = this.ds.ours.objects.get(name);
            return (
              (d?.status?.observedGeneration ?? 0) >= (d?.metadata.generation ?? 1) &&
              d?.status?.numberReady === perDs &&
              this.liveApp(name).length === perDs
            );
          }),
        () =>
          `${names.filter((name) => this.ds.ours.objects.get(name)?.status?.numberReady === perDs).length}/${names.length} settled`,
        this.timeoutMs(perDs * names.length + 100),
      );

      const added = Array.from({ length: o.newNodes }, (_, i) => `bench-new-${String(i).padStart(3, '0')}`);
      const createdAt = new Map<string, number>();
      const firstPod = new Map<string, number>(); // `${node}/${ds}` -> ms
      const dsSet = new Set(names);
      const off = this.pods.onChange((e) => {
        if (e?.type !== 'ADDED') return;
        if (e.object.metadata.labels?.[PULL_POD_LABEL]) return;
        const app = e.object.metadata.labels?.app ?? '';
        const node = getTargetNodeName(e.object.spec);
        if (!dsSet.has(app) || !node || !createdAt.has(node)) return;
        const key = `${node}/${app}`;
        if (!firstPod.has(key)) firstPod.set(key, Date.now());
      });
      say(`new-node latency: adding ${added.length} nodes`);
      try {
        await pool(added, 16, async (name) => {
          createdAt.set(name, Date.now());
          await this.client.create(resources.nodes, fakeNode(name, { [NEW_NODE_LABEL]: 'true' }));
        });
        const want = added.length * names.length;
        await until(
          [this.pods],
          'a pod of every DaemonSet on every added node',
          () => firstPod.size >= want,
          () => `${firstPod.size}/${want} pods`,
          this.timeoutMs(want),
        );
      } finally {
        off();
      }
      const latencies = [...firstPod].map(([key, t]) => t - (createdAt.get(key.split('/')[0] ?? '') ?? t));
      return {
        baseNodes: base,
        daemonSets: names.length,
        newNodes: added.length,
        scope: o.newNodeScope,
        samples: latencies.length,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        maxMs: Math.max(...latencies),
        peakRssMiB: peakRssMiB(manager.child.pid ?? 0),
      };
    } finally {
      await manager.stop();
    }
  }

  async countRequests(): Promise<void> {
    say('counting API requests per controller in the audit log');
    await countRequests(this.auditLog, this.windows);
    const podStatusWrites = (w: AuditWindow) =>
      (w.byVerb['patch pods/status'] ?? 0) + (w.byVerb['update pods/status'] ?? 0);
    for (const { result, createWindow, rolloutWindow, kubelet } of this.pendingCounts) {
      result.kubeletCreateStatusWrites = podStatusWrites(kubelet.create);
      result.kubeletRolloutStatusWrites = podStatusWrites(kubelet.rollout);
      result.createRequests = createWindow.count;
      result.rolloutRequests = rolloutWindow.count;
      result.createByVerb = createWindow.byVerb;
      result.rolloutByVerb = rolloutWindow.byVerb;
      if (createWindow.lastPodWriteAt !== undefined)
        result.createWritesSeconds = (createWindow.lastPodWriteAt - createWindow.start) / 1000;
      if (rolloutWindow.lastPodWriteAt !== undefined)
        result.rolloutWritesSeconds = (rolloutWindow.lastPodWriteAt - rolloutWindow.start) / 1000;
      const p50p99 = (xs: number[]) => (xs.length ? { p50: percentile(xs, 50), p99: percentile(xs, 99) } : undefined);
      const createMs = p50p99(createWindow.podWriteMs);
      const rolloutMs = p50p99(rolloutWindow.podWriteMs);
      if (createMs) result.createPodWriteMs = createMs;
      if (rolloutMs) result.rolloutPodWriteMs = rolloutMs;
      const merged: Record<string, number> = { ...createWindow.byVerb };
      for (const [k, v] of Object.entries(rolloutWindow.byVerb)) merged[k] = (merged[k] ?? 0) + v;
      result.requestsByVerb = merged;
    }
  }
}

async function setup(state: ClusterState, client: KubeClient): Promise<void> {
  say('installing the CRD and the benchmark namespace');
  await installCrd(state.kubeconfig);
  await client.create(resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await kubectl(state.kubeconfig, ['get', 'serviceaccount', 'default', '-n', NAMESPACE]);
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`namespace ${NAMESPACE} got no default service account: ${(err as Error).message}`);
      await sleep(500);
    }
  }
}

export async function runClusterBench(opts: ClusterBenchOptions): Promise<ClusterBenchResult> {
  const auditDir = join(opts.dir, 'audit');
  mkdirSync(auditDir, { recursive: true });
  const auditLog = join(auditDir, 'audit.log');
  const clusterDir = join(opts.dir, 'cluster');
  say(`starting a private cluster in ${clusterDir} with ${opts.nodes} fake nodes (audit log ${auditLog})`);
  const state = await clusterUp({
    dir: clusterDir,
    nodes: opts.nodes,
    progress: (l) => say(l),
    apiserverArgs: auditApiserverArgs(join(auditDir, 'policy.yaml'), auditLog),
    clientRate: { qps: opts.controlPlaneQps, burst: opts.controlPlaneBurst },
    kwokPodParallelism: opts.kwokPodParallelism,
  });
  const bench = new Bench(state, opts, auditLog);
  const result: ClusterBenchResult = { kubernetesVersion: state.kubernetesVersion, race: [] };
  try {
    await setup(state, bench.client);
    await bench.pods.start();
    await bench.ds.native.start();
    await bench.ds.ours.start();
    await bench.race(result.race);
    result.ceiling = await bench.ceiling();
    if (!opts.raceOnly) result.newNode = await bench.newNodeLatency();
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    say(`cluster benchmark stopped early: ${result.error}`);
  }
  try {
    await bench.countRequests();
    if (result.ceiling) result.ceiling.requests = bench.ceilingWindow?.count ?? 0;
    return result;
  } finally {
    bench.pods.close();
    bench.ds.native.close();
    bench.ds.ours.close();
    bench.client.close();
    bench.watchClient.close();
    await clusterDown({ dir: clusterDir, progress: (l) => say(l) });
  }
}

/** Whether our manager runs with the KruisePodReady gate on every pod: its default, unless its flags say otherwise. */
export function kruisePodReadyGateOn(managerArgs: readonly string[]): boolean {
  const mode = /--kruise-pod-ready-gate[= ](\S+)/.exec(managerArgs.join(' '))?.[1];
  return mode === undefined || mode === 'always';
}

/**
 * The writes a step needs at the least: a create per pod (creation), a delete and a create per pod (rollout), and
 * with the KruisePodReady gate one pods/status patch per pod created.
 */
export function writesNeeded(r: Pick<RaceRound, 'pods' | 'readinessGate'>, step: 'create' | 'rollout'): number {
  return r.pods * ((step === 'create' ? 1 : 2) + (r.readinessGate ? 1 : 0));
}

/** The floor of a step: the writes it needs at the client's QPS, s (the burst left out). */
export function floorSeconds(r: Pick<RaceRound, 'pods' | 'readinessGate' | 'qps'>, step: 'create' | 'rollout'): number {
  return writesNeeded(r, step) / r.qps;
}

/** Medians per controller of a race, for the table. */
export function raceMedians(rounds: RaceRound[], kind: ControllerKind) {
  const mine = rounds.filter((r) => r.controller === kind);
  const m = (f: (r: RaceRound) => number | undefined) =>
    median(mine.map(f).filter((x): x is number => x !== undefined && Number.isFinite(x)));
  return {
    createSeconds: m((r) => r.createSeconds),
    rolloutSeconds: m((r) => r.rolloutSeconds),
    createRequests: m((r) => r.createRequests),
    rolloutRequests: m((r) => r.rolloutRequests),
    createCpuSeconds: m((r) => r.createCpuSeconds),
    rolloutCpuSeconds: m((r) => r.rolloutCpuSeconds),
    peakRssMiB: m((r) => r.peakRssMiB),
    createFloorRatio: m((r) => (r.qps ? r.createSeconds / floorSeconds(r, 'create') : undefined)),
    rolloutFloorRatio: m((r) => (r.qps ? r.rolloutSeconds / floorSeconds(r, 'rollout') : undefined)),
    createWritesRatio: m((r) =>
      r.qps && r.createWritesSeconds !== undefined ? r.createWritesSeconds / floorSeconds(r, 'create') : undefined,
    ),
    rolloutWritesRatio: m((r) =>
      r.qps && r.rolloutWritesSeconds !== undefined ? r.rolloutWritesSeconds / floorSeconds(r, 'rollout') : undefined,
    ),
  };
}
