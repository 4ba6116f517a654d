// A large cluster, simulated (`--only simulate`; size from --sim-nodes and --sim-daemonsets, default 65,000 nodes and
// 20 DaemonSets on every node, 1.3 million pods): our controller, the production bundle in a child process, fed by a
// simulated apiserver in this process (lib/sim-apiserver.ts) that generates the cluster as it is listed. What it
// measures, on the benchmark's clock unless said:
//   1. a cold start: from the process's start to its caches synced (its own log), then to the first sync of every
//      DaemonSet (its reconcile counter); its RSS (VmRSS, VmHWM from /proc) and V8 heap (its /metrics) with every
//      object cached, and heap per cached pod;
//   2. steady syncs: a pod's status changed (as the kubelet writes it), which wakes its DaemonSet; the time of each
//      sync from the manager's controller_runtime_reconcile_time_seconds (its sum and count, and its 5 ms bucket);
//   3. nodes added one at a time: from the node's ADDED event written to the manager's watch to the last of its D
//      pod creates received (each a POST the executor sent after planning it); p50/p95/max;
//   4. a second replica (leader election on, as the chart runs two): its RSS once its caches are warm; then the
//      leader killed (SIGKILL: its Lease is not released), and the time until the standby holds the Lease and until
//      it has synced every DaemonSet.
// Pods are created but never run: the simulated apiserver answers the creates and the KruisePodReady patches and
// writes their watch events; no kubelet follows. Reported, never asserted (bench/README.md).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { constructHistory } from '../src/daemonset/history.ts';
import { newPod } from '../src/daemonset/pods.ts';
import { toInternal } from '../src/api/conversion.ts';
import { heapFlags } from '../src/cli/heap.ts';
import type { KubeObject } from '../src/k8s/types.ts';
import { sleep } from '../src/testing/wait.ts';
import { readLogLines } from '../e2e/lib/log.ts';
import { cpuSeconds, peakRssMiB, rssMiB } from './lib/proc.ts';
import { JsonTemplate, SimApiServer, type GeneratedObjects } from './lib/sim-apiserver.ts';
import { percentile, say } from './lib/stats.ts';

const NAMESPACE = 'sim-system';
const PODS = 'core/v1/pods';
const NODES = 'core/v1/nodes';
const DAEMONSETS = 'apps.kruise.io/v1beta1/daemonsets';
const REVISIONS = 'apps/v1/controllerrevisions';
const LEASES = 'coordination.k8s.io/v1/leases';
const BASE_RV = 1000;
/** Creation times of the generated objects spread over the 30 days before this, as in a long-lived cluster. */
const T_BASE = Date.parse('2026-01-01T00:00:00Z');
const LEASE_DURATION_S = 15;
/** How long the standby is watched after its first syncs of every DaemonSet (the renewals it keeps up meanwhile). */
const FOLLOW_TAKEOVER_MS = 20_000;

export interface SimulateOptions {
  dir: string;
  nodes: number;
  daemonSets: number;
  /** Nodes added one at a time (latency samples). */
  addedNodes: number;
  /** Pod status changes, each a steady sync of one DaemonSet. */
  steadySyncs: number;
  /** The memory limit the managers' heap flag is computed from (src/cli/heap.ts), MiB. */
  memoryLimitMiB: number;
  /** Our manager's command line (lib/programs.ts); its heap flag is replaced by the one for memoryLimitMiB. */
  managerCommand: string[];
  managerQps: number;
  managerBurst: number;
  workers: number;
  /** Also start a second replica and kill the leader. */
  failover: boolean;
}

export interface SimulateResult {
  nodes: number;
  daemonSets: number;
  pods: number;
  memoryLimitMiB: number;
  heapFlag: string;
  qps: number;
  burst: number;
  workers: number;
  /** Bytes of JSON the apiserver sent for one pod and one node (what a real one would send, managedFields aside). */
  podJsonBytes: number;
  nodeJsonBytes: number;
  coldStart: {
    cacheSyncSeconds: number;
    firstSyncAllSeconds: number;
    cpuSeconds: number;
    rssMiB: number;
    peakRssMiB: number;
    heapUsedMiB?: number;
    /** heapUsed / pods: an upper bound of one cached pod (nodes and the process's baseline are in it too). */
    heapBytesPerPod?: number;
  };
  steady: { syncs: number; meanMs: number; within5msShare: number; within10msShare: number };
  nodeAdded: { samples: number; expected: number; p50Ms: number; p95Ms: number; maxMs: number; syncMeanMs: number };
  replica?: {
    cacheSyncSeconds: number;
    rssMiB: number;
    peakRssMiB: number;
    /** From the leader's SIGKILL to the standby's Lease update naming itself. */
    leaseAcquiredSeconds: number;
    /** From the leader's SIGKILL to the standby having synced every DaemonSet. */
    allSyncedSeconds: number;
    /** The leader had exited on its own (lost its Lease) before the SIGKILL: the failover times mean nothing. */
    leaderExitedBeforeKill: boolean;
    /**
     * The longest time between two Lease writes of the leader (as this apiserver received them) while the standby
     * listed beside it, and of the standby once it led, from its taking the Lease to FOLLOW_TAKEOVER_MS after it had
     * synced every DaemonSet: against the renew deadline (10 s), how near each came to losing its Lease.
     */
    leaderMaxRenewGapSeconds: number;
    standbyMaxRenewGapSeconds: number;
    /** The standby had exited (lost its Lease) by the end of that time. */
    standbyExitedAfterTakeover: boolean;
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The cluster

const pad = (i: number, width: number) => String(i).padStart(width, '0');
const timeOf = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
/** Node i's creation time: spread over 30 days (a different second for most nodes). */
const nodeCreatedMs = (i: number) => T_BASE - ((i * 7919) % (30 * 86_400)) * 1000;
const ipOf = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];
const TYPES = ['m6i.2xlarge', 'm6i.4xlarge', 'c6i.4xlarge', 'r6i.2xlarge', 'g5.4xlarge'];

function nodeObject(): unknown {
  return {
    metadata: {
      name: '@@name@@',
      uid: '@@uid@@',
      resourceVersion: String(BASE_RV),
      creationTimestamp: '@@ts@@',
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': '@@name@@',
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': '@@type@@',
        'topology.kubernetes.io/region': 'us-east-1',
        'topology.kubernetes.io/zone': '@@zone@@',
        pool: '@@pool@@',
      },
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
    },
    spec: { podCIDR: '@@cidr@@', podCIDRs: ['@@cidr@@'], providerID: 'aws:///@@zone@@/i-@@uid@@' },
    status: {
      capacity: { cpu: '16', 'ephemeral-storage': '104845292Ki', memory: '65023448Ki', pods: '110' },
      allocatable: { cpu: '15890m', 'ephemeral-storage': '95551679124', memory: '63998424Ki', pods: '110' },
      conditions: ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map((type) => ({
        type,
        status: type === 'Ready' ? 'True' : 'False',
        lastHeartbeatTime: '@@heartbeat@@',
        lastTransitionTime: '@@ts@@',
        reason: type === 'Ready' ? 'KubeletReady' : `KubeletHasNo${type}`,
        message: type === 'Ready' ? 'kubelet is posting ready status' : `kubelet has no ${type}`,
      })),
      addresses: [
        { type: 'InternalIP', address: '@@ip@@' },
        { type: 'Hostname', address: '@@name@@' },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: '@@uid@@',
        systemUUID: '@@uid@@',
        bootID: '@@uid@@',
        kernelVersion: '6.1.112-124.190.amzn2023.x86_64',
        osImage: 'Amazon Linux 2023',
        containerRuntimeVersion: 'containerd://1.7.22',
        kubeletVersion: 'v1.33.5',
        kubeProxyVersion: 'v1.33.5',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    },
  };
}

function nodeValues(name: string, i: number): Record<string, string> {
  const ts = timeOf(nodeCreatedMs(i));
  return {
    name,
    uid: `node-${pad(i, 8)}-0000-4000-8000-${pad(i, 12)}`,
    ts,
    heartbeat: timeOf(T_BASE),
    type: TYPES[i % TYPES.length]!,
    zone: ZONES[i % ZONES.length]!,
    pool: `pool-${i % 8}`,
    cidr: `100.${(i >> 8) & 255}.${i & 255}.0/24`,
    ip: ipOf(i),
  };
}

/** DaemonSet d as the apiserver stores it (v1beta1), on every node: varied images, resources, env and volumes. */
function daemonSetObject(d: number): KubeObject {
  const name = `agent-${pad(d, 2)}`;
  const containers = [
    {
      name: 'agent',
      image: `registry.example/agent-${d}:1.${d}.0`,
      args: ['--config=/etc/agent/config.yaml', '--v=2'],
      env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
      ports: [{ name: 'metrics', containerPort: 9100 + d, protocol: 'TCP' }],
      resources: { requests: { cpu: `${10 + d}m`, memory: `${32 + d}Mi` }, limits: { memory: `${64 + 2 * d}Mi` } },
      volumeMounts: [{ name: 'varlog', mountPath: '/var/log', readOnly: true }],
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
      imagePullPolicy: 'IfNotPresent',
    },
    ...(d % 3 === 0
      ? [
          {
            name: 'sidecar',
            image: 'registry.example/log-shipper:2.4.1',
            resources: { requests: { cpu: '5m', memory: '16Mi' } },
            terminationMessagePath: '/dev/termination-log',
            terminationMessagePolicy: 'File',
            imagePullPolicy: 'IfNotPresent',
          },
        ]
      : []),
  ];
  return {
    apiVersion: 'apps.kruise.io/v1beta1',
    kind: 'DaemonSet',
    metadata: {
      name,
      namespace: NAMESPACE,
      uid: `ds-${pad(d, 8)}-0000-4000-8000-000000000000`,
      generation: 1,
      resourceVersion: String(BASE_RV),
      creationTimestamp: timeOf(T_BASE - 40 * 86_400_000),
    },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name, tier: 'node' } },
        spec: {
          containers,
          volumes: [{ name: 'varlog', hostPath: { path: '/var/log', type: '' } }],
          tolerations: [{ operator: 'Exists' }],
          priorityClassName: 'system-node-critical',
          restartPolicy: 'Always',
          terminationGracePeriodSeconds: 30,
          dnsPolicy: 'ClusterFirst',
          schedulerName: 'default-scheduler',
          serviceAccountName: name,
          securityContext: {},
        },
      },
      updateStrategy: {
        type: 'RollingUpdate',
        rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: '10%', maxSurge: 0 },
      },
      revisionHistoryLimit: 10,
    },
  } as unknown as KubeObject;
}

/** Pod template of a DaemonSet: what our controller creates (newPod), then scheduled, started and Ready. */
function podObject(ds: KubeObject, hash: string): unknown {
  const internal = toInternal(structuredClone(ds));
  const pod = newPod(internal, '@@node@@', hash, { kruisePodReadyGate: 'always' }) as KubeObject & {
    spec: Record<string, unknown> & { containers: { name: string; image?: string }[] };
  };
  pod.metadata = {
    ...pod.metadata,
    name: '@@name@@',
    uid: '@@uid@@',
    resourceVersion: String(BASE_RV),
    creationTimestamp: '@@ts@@',
  };
  delete pod.apiVersion;
  delete pod.kind;
  Object.assign(pod.spec, { nodeName: '@@node@@', enableServiceLinks: true, preemptionPolicy: 'PreemptLowerPriority' });
  const condition = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: '@@ts@@' });
  (pod as unknown as { status: unknown }).status = {
    phase: 'Running',
    conditions: [
      { type: 'KruisePodReady', status: 'True', lastTransitionTime: '@@ts@@' },
      ...['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(condition),
    ],
    hostIP: '@@ip@@',
    hostIPs: [{ ip: '@@ip@@' }],
    podIP: '@@ip@@',
    podIPs: [{ ip: '@@ip@@' }],
    startTime: '@@ts@@',
    qosClass: 'Burstable',
    containerStatuses: pod.spec.containers.map((c) => ({
      name: c.name,
      state: { running: { startedAt: '@@ts@@' } },
      lastState: {},
      ready: true,
      restartCount: 0,
      image: c.image,
      imageID: `${c.image}@sha256:${'0'.repeat(64)}`,
      containerID: 'containerd://@@uid@@',
      started: true,
    })),
  };
  return pod;
}

interface SimCluster {
  server: SimApiServer;
  daemonSets: KubeObject[];
  podJsonBytes: number;
  nodeJsonBytes: number;
}

export function buildCluster(nodes: number, daemonSets: number): SimCluster {
  const server = new SimApiServer(BASE_RV);
  const nodeTemplate = new JsonTemplate(nodeObject());
  const nodeName = (i: number) => `ip-${ipOf(i).replaceAll('.', '-')}.ec2.internal`;
  const nodeIndex = new Map<string, number>();
  const nodeNames: string[] = [];
  for (let i = 0; i < nodes; i++) {
    const name = nodeName(i);
    nodeNames.push(name);
    nodeIndex.set(name, i);
  }
  const nodeJson = (i: number) => nodeTemplate.fill(nodeValues(nodeNames[i]!, i));
  const generatedNodes: GeneratedObjects = {
    count: nodes,
    keyAt: (i) => nodeNames[i]!,
    indexOf: (key) => nodeIndex.get(key) ?? -1,
    jsonAt: nodeJson,
  };

  const dsObjects = Array.from({ length: daemonSets }, (_, d) => daemonSetObject(d));
  const podTemplates: JsonTemplate[] = [];
  const revisions: KubeObject[] = [];
  for (const ds of dsObjects) {
    // The revision our controller would write for this template (constructHistory on no history), so the generated
    // pods carry the hash it expects: a cluster converged under this controller.
    const history = constructHistory(toInternal(structuredClone(ds)), [], []);
    const rev = history.create!;
    rev.metadata = { ...rev.metadata, uid: `rev-${ds.metadata.uid}`, creationTimestamp: ds.metadata.creationTimestamp };
    revisions.push(rev);
    podTemplates.push(new JsonTemplate(podObject(ds, history.hash)));
  }
  // Pods are listed DaemonSet by DaemonSet; pod d*N+i runs DaemonSet d on node i.
  const dsNames = dsObjects.map((ds) => ds.metadata.name!);
  const dsIndex = new Map(dsNames.map((n, d) => [n, d]));
  const podName = (d: number, i: number) => `${dsNames[d]}-${pad(i, 6)}`;
  const podJson = (k: number) => {
    const d = Math.floor(k / nodes);
    const i = k % nodes;
    const created = nodeCreatedMs(i) + ((d * 3) % 11) * 1000;
    return podTemplates[d]!.fill({
      name: podName(d, i),
      uid: `pod-${pad(d, 3)}${pad(i, 5)}-0000-4000-8000-${pad(k, 12)}`,
      node: nodeNames[i]!,
      ts: timeOf(created),
      ip: ipOf(i),
    });
  };
  const generatedPods: GeneratedObjects = {
    count: nodes * daemonSets,
    keyAt: (k) => `${NAMESPACE}/${podName(Math.floor(k / nodes), k % nodes)}`,
    indexOf(key) {
      const m = /^sim-system\/(agent-\d+)-(\d{6})$/.exec(key);
      const d = m ? dsIndex.get(m[1]!) : undefined;
      const i = m ? Number(m[2]) : -1;
      return d === undefined || i >= nodes ? -1 : d * nodes + i;
    },
    jsonAt: podJson,
  };
  server.define(NODES, generatedNodes);
  server.define(PODS, generatedPods);
  server.define(DAEMONSETS);
  server.define(REVISIONS);
  server.define(LEASES);
  server.define('core/v1/events');
  server.define('events.k8s.io/v1/events');
  server.define('advanced-daemonset.io/v1alpha1/daemonsetsettings');
  server.define('apiextensions.k8s.io/v1/customresourcedefinitions');
  for (const ds of dsObjects) server.upsert(DAEMONSETS, ds);
  for (const rev of revisions) server.upsert(REVISIONS, rev);
  // The CRD as the chart installs it, its objects all stored in v1beta1: the storage migration has nothing to do.
  server.upsert('apiextensions.k8s.io/v1/customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'daemonsets.apps.kruise.io' },
    spec: {
      versions: [
        { name: 'v1alpha1', served: true },
        { name: 'v1beta1', served: true, storage: true },
      ],
    },
    status: { storedVersions: ['v1beta1'] },
  } as KubeObject);
  return {
    server,
    daemonSets: dsObjects,
    podJsonBytes: daemonSets > 0 && nodes > 0 ? Buffer.byteLength(podJson(0)) : 0,
    nodeJsonBytes: nodes > 0 ? Buffer.byteLength(nodeJson(0)) : 0,
  };
}

/** An added node: a new index past the generated ones, same shape. */
function addedNode(i: number): KubeObject {
  return JSON.parse(new JsonTemplate(nodeObject()).fill(nodeValues(`sim-added-${pad(i, 5)}`, 900_000 + i)));
}

// ---------------------------------------------------------------------------------------------------------------
// The managers

interface Manager {
  child: ChildProcess;
  log: string;
  startedAt: number;
  metricsPort: number;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

function startManager(opts: SimulateOptions, kubeconfig: string, name: string): Promise<Manager> {
  const log = join(opts.dir, `${name}.log`);
  const fd = openSync(log, 'w');
  const heap = heapFlag(opts.memoryLimitMiB);
  const command = opts.managerCommand.filter((a) => !/^--max[-_]old[-_]space[-_]size/.test(a));
  const [program, ...leading] = [...command.slice(0, -1), ...heap, command.at(-1)!];
  const args = [
    'controller',
    ...['--kubeconfig', kubeconfig, '--health-port', '0', '--metrics-port', '0'],
    ...['--leader-election-namespace', 'default', '--lease-duration', `${LEASE_DURATION_S}s`],
    ...['--kube-api-qps', String(opts.managerQps), '--kube-api-burst', String(opts.managerBurst)],
    ...['--workers', String(opts.workers), '--log-level', 'info'],
  ];
  const startedAt = Date.now();
  const child = spawn(program!, [...leading, ...args], { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return (async () => {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}): ${tail(log)}`);
      const started = readLogLines(log).find((r) => r.msg === 'controller started');
      if (typeof started?.metricsPort === 'number' && started.metricsPort > 0)
        return {
          child,
          log,
          startedAt,
          metricsPort: started.metricsPort,
          async stop(signal: NodeJS.Signals = 'SIGTERM') {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            await exited;
          },
        };
      if (Date.now() - startedAt > 60_000) {
        child.kill('SIGKILL');
        throw new Error(`${name} did not start within 60 s: ${tail(log)}`);
      }
      await sleep(100);
    }
  })();
}

export function heapFlag(memoryLimitMiB: number): string[] {
  // As the image's launcher under that memory limit; the machine's memory stands in for a larger node.
  return heapFlags([], undefined, memoryLimitMiB * 1024 * 1024, Number.MAX_SAFE_INTEGER);
}

const tail = (file: string) => {
  try {
    return readFileSync(file, 'utf8').slice(-2000);
  } catch {
    return '(no log)';
  }
};

/** Wall time (epoch ms) of the manager's "caches synced" line, waiting for it. */
async function cachesSynced(m: Manager, name: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let lastSay = Date.now();
  for (;;) {
    const rec = readLogLines(m.log).find((r) => r.msg === 'caches synced');
    if (rec?.time) return rec.time;
    if (m.child.exitCode !== null || m.child.signalCode !== null)
      throw new Error(`${name} exited before its caches synced: ${tail(m.log)}`);
    if (Date.now() > deadline) throw new Error(`${name}: caches not synced within ${timeoutMs / 1000} s`);
    if (Date.now() - lastSay > 15_000) {
      say(
        `simulate: ${name} listing, ${Math.round((Date.now() - m.startedAt) / 1000)} s, RSS ${Math.round(rssMiB(m.child.pid!))} MiB`,
      );
      lastSay = Date.now();
    }
    await sleep(250);
  }
}

interface Scrape {
  reconciles: number;
  reconcileSeconds: number;
  /** Reconciles of at most 5 ms and at most 10 ms (the histogram's first buckets). */
  within5ms: number;
  within10ms: number;
  heapUsedBytes?: number;
}

async function scrape(m: Manager): Promise<Scrape> {
  const text = await (await fetch(`http://127.0.0.1:${m.metricsPort}/metrics`)).text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  const heap = value(/^nodejs_heap_size_used_bytes (\S+)$/m);
  return {
    reconciles: value(/^controller_runtime_reconcile_time_seconds_count\{controller="daemonset"\} (\S+)$/m) || 0,
    reconcileSeconds: value(/^controller_runtime_reconcile_time_seconds_sum\{controller="daemonset"\} (\S+)$/m) || 0,
    within5ms:
      value(/^controller_runtime_reconcile_time_seconds_bucket\{le="0\.005",controller="daemonset"\} (\S+)$/m) || 0,
    within10ms:
      value(/^controller_runtime_reconcile_time_seconds_bucket\{le="0\.01",controller="daemonset"\} (\S+)$/m) || 0,
    ...(Number.isFinite(heap) ? { heapUsedBytes: heap } : {}),
  };
}

/** Polls the reconcile counter until it reaches `count`; the wall time (epoch ms) it did. */
async function reconcilesReach(m: Manager, count: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (m.child.exitCode !== null || m.child.signalCode !== null) throw new Error(`exited: ${tail(m.log)}`);
    const s = await scrape(m).catch(() => undefined);
    if (s && s.reconciles >= count) return Date.now();
    if (Date.now() > deadline) throw new Error(`fewer than ${count} reconciles within ${timeoutMs / 1000} s`);
    await sleep(50);
  }
}

// ---------------------------------------------------------------------------------------------------------------

export async function runSimulateBench(opts: SimulateOptions): Promise<SimulateResult> {
  const pods = opts.nodes * opts.daemonSets;
  say(
    `simulate: ${opts.nodes} nodes, ${opts.daemonSets} DaemonSets, ${pods} pods; heap ${heapFlag(opts.memoryLimitMiB).join(' ')}`,
  );
  const cluster = buildCluster(opts.nodes, opts.daemonSets);
  const { server } = cluster;
  await server.start();
  const kubeconfig = join(opts.dir, 'sim-kubeconfig.json');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'sim', cluster: { server: server.url } }],
      users: [{ name: 'sim', user: { token: 'sim' } }],
      contexts: [{ name: 'sim', context: { cluster: 'sim', user: 'sim', namespace: 'default' } }],
      'current-context': 'sim',
    }),
  );
  // Pod creates by node, and the Lease's holder changes, on this process's clock.
  const createsByNode = new Map<string, number[]>();
  let leaseHolder: { identity: string; at: number } | undefined;
  const leaseWrites: { identity: string; at: number }[] = [];
  /** The longest gap between two Lease writes naming `identity`, among those from `from` on (performance.now()). */
  const maxRenewGapSeconds = (identity: string | undefined, from: number, to = Infinity) => {
    const at = leaseWrites.filter((w) => w.identity === identity && w.at >= from && w.at <= to).map((w) => w.at);
    let gap = NaN;
    for (let i = 1; i < at.length; i++) gap = Math.max(Number.isNaN(gap) ? 0 : gap, at[i]! - at[i - 1]!);
    return gap / 1000;
  };
  server.onWrite = (w) => {
    if (w.collection === PODS && w.method === 'POST') {
      const node = (w.object as { spec?: { affinity?: unknown } }).spec?.affinity;
      const name = JSON.stringify(node ?? '').match(/"values":\["([^"]+)"\]/)?.[1] ?? '';
      const list = createsByNode.get(name) ?? [];
      list.push(w.at);
      createsByNode.set(name, list);
    }
    if (w.collection === LEASES) {
      const identity = (w.object as { spec?: { holderIdentity?: string } }).spec?.holderIdentity ?? '';
      if (identity !== leaseHolder?.identity) leaseHolder = { identity, at: w.at };
      leaseWrites.push({ identity, at: w.at });
    }
  };
  const managers: Manager[] = [];
  const timeoutMs = Math.max(120_000, pods * 0.5);
  try {
    // 1. Cold start.
    const a = await startManager(opts, kubeconfig, 'leader');
    managers.push(a);
    const syncedAt = await cachesSynced(a, 'leader', timeoutMs);
    say(`simulate: leader's caches synced after ${((syncedAt - a.startedAt) / 1000).toFixed(1)} s`);
    const allSyncedAt = await reconcilesReach(a, opts.daemonSets, timeoutMs);
    await sleep(3000);
    const heapSamples: number[] = [];
    for (let i = 0; i < 5; i++) {
      const h = (await scrape(a)).heapUsedBytes;
      if (h !== undefined) heapSamples.push(h);
      await sleep(1000);
    }
    // The lowest of the samples: the least garbage (no GC can be forced in the manager).
    const heapUsed = heapSamples.length > 0 ? Math.min(...heapSamples) : undefined;
    const coldStart = {
      cacheSyncSeconds: (syncedAt - a.startedAt) / 1000,
      firstSyncAllSeconds: (allSyncedAt - a.startedAt) / 1000,
      cpuSeconds: cpuSeconds(a.child.pid!),
      rssMiB: rssMiB(a.child.pid!),
      peakRssMiB: peakRssMiB(a.child.pid!),
      ...(heapUsed !== undefined
        ? { heapUsedMiB: heapUsed / 2 ** 20, ...(pods > 0 ? { heapBytesPerPod: heapUsed / pods } : {}) }
        : {}),
    };
    say(
      `simulate: every DaemonSet synced after ${coldStart.firstSyncAllSeconds.toFixed(1)} s; RSS ${Math.round(coldStart.rssMiB)} MiB, peak ${Math.round(coldStart.peakRssMiB)} MiB`,
    );

    // 2. Steady syncs: one pod's status at a time, as a kubelet would write it (a new container restart count is
    // not Ready-changing: the DaemonSet's status stays as it is, so the sync plans and writes nothing).
    const before = await scrape(a);
    for (let s = 0; s < opts.steadySyncs; s++) {
      const d = s % opts.daemonSets;
      const i = (s * 7919) % opts.nodes;
      const key = `${NAMESPACE}/${cluster.daemonSets[d]!.metadata.name}-${pad(i, 6)}`;
      const pod = server.get(PODS, key) as KubeObject & { status: { containerStatuses: { restartCount: number }[] } };
      pod.status.containerStatuses[0]!.restartCount++;
      server.upsert(PODS, pod);
      // Each its own sync: the next change after this one's reconcile.
      await reconcilesReach(a, before.reconciles + s + 1, 30_000).catch(() => undefined);
    }
    const after = await scrape(a);
    const syncs = after.reconciles - before.reconciles;
    const steady = {
      syncs,
      meanMs: ((after.reconcileSeconds - before.reconcileSeconds) / Math.max(1, syncs)) * 1000,
      within5msShare: (after.within5ms - before.within5ms) / Math.max(1, syncs),
      within10msShare: (after.within10ms - before.within10ms) / Math.max(1, syncs),
    };
    say(
      `simulate: ${syncs} steady syncs, mean ${steady.meanMs.toFixed(2)} ms, ${Math.round(steady.within5msShare * 100)}% within 5 ms`,
    );

    // 3. Nodes added one at a time.
    const latencies: number[] = [];
    const beforeAdd = await scrape(a);
    for (let j = 0; j < opts.addedNodes; j++) {
      const node = addedNode(j);
      const addedAt = performance.now();
      server.upsert(NODES, node);
      const deadline = Date.now() + 30_000;
      while ((createsByNode.get(node.metadata.name!)?.length ?? 0) < opts.daemonSets && Date.now() < deadline)
        await sleep(2);
      const creates = createsByNode.get(node.metadata.name!) ?? [];
      if (creates.length >= opts.daemonSets) latencies.push(Math.max(...creates) - addedAt);
      // Let its KruisePodReady patches and the syncs their events bring pass before the next node.
      await sleep(300);
    }
    const afterAdd = await scrape(a);
    const nodeAdded = {
      samples: latencies.length,
      expected: opts.addedNodes,
      p50Ms: percentile(latencies, 50),
      p95Ms: percentile(latencies, 95),
      maxMs: latencies.length ? Math.max(...latencies) : NaN,
      syncMeanMs:
        ((afterAdd.reconcileSeconds - beforeAdd.reconcileSeconds) /
          Math.max(1, afterAdd.reconciles - beforeAdd.reconciles)) *
        1000,
    };
    say(
      `simulate: node added → its ${opts.daemonSets} creates: p50 ${nodeAdded.p50Ms.toFixed(0)} ms, p95 ${nodeAdded.p95Ms.toFixed(0)} ms (${latencies.length}/${opts.addedNodes})`,
    );

    const result: SimulateResult = {
      nodes: opts.nodes,
      daemonSets: opts.daemonSets,
      pods,
      memoryLimitMiB: opts.memoryLimitMiB,
      heapFlag: heapFlag(opts.memoryLimitMiB).join(' '),
      qps: opts.managerQps,
      burst: opts.managerBurst,
      workers: opts.workers,
      podJsonBytes: cluster.podJsonBytes,
      nodeJsonBytes: cluster.nodeJsonBytes,
      coldStart,
      steady,
      nodeAdded,
    };

    // 4. A second replica, then the leader's death.
    if (opts.failover) {
      const standbyStartedAt = performance.now();
      const b = await startManager(opts, kubeconfig, 'standby');
      managers.push(b);
      const bSynced = await cachesSynced(b, 'standby', timeoutMs);
      await sleep(5000);
      const replicaRss = { rssMiB: rssMiB(b.child.pid!), peakRssMiB: peakRssMiB(b.child.pid!) };
      say(
        `simulate: standby's caches synced after ${((bSynced - b.startedAt) / 1000).toFixed(1)} s, RSS ${Math.round(replicaRss.rssMiB)} MiB; killing the leader`,
      );
      // A leader that lost its Lease exits by itself (its syncs and GC kept the renewal from running): then there is
      // no failover to time.
      const leaderExitedBeforeKill = a.child.exitCode !== null || a.child.signalCode !== null;
      const holderBefore = leaseHolder?.identity;
      const killedAt = performance.now();
      const killedWall = Date.now();
      await a.stop('SIGKILL');
      while ((leaseHolder?.identity ?? holderBefore) === holderBefore && performance.now() - killedAt < 120_000)
        await sleep(20);
      const leaseAcquiredSeconds =
        leaseHolder && leaseHolder.identity !== holderBefore ? (leaseHolder.at - killedAt) / 1000 : NaN;
      const allSynced = await reconcilesReach(b, opts.daemonSets, timeoutMs).catch(() => NaN);
      const takenAt = leaseHolder?.at ?? killedAt;
      await sleep(FOLLOW_TAKEOVER_MS);
      result.replica = {
        cacheSyncSeconds: (bSynced - b.startedAt) / 1000,
        ...replicaRss,
        leaseAcquiredSeconds,
        allSyncedSeconds: (allSynced - killedWall) / 1000,
        leaderExitedBeforeKill,
        leaderMaxRenewGapSeconds: maxRenewGapSeconds(holderBefore, standbyStartedAt, killedAt),
        standbyMaxRenewGapSeconds: maxRenewGapSeconds(leaseHolder?.identity, takenAt),
        standbyExitedAfterTakeover: b.child.exitCode !== null || b.child.signalCode !== null,
      };
      say(
        `simulate: failover: Lease after ${leaseAcquiredSeconds.toFixed(1)} s, every DaemonSet synced after ${result.replica.allSyncedSeconds.toFixed(1)} s; longest gap between renewals: leader ${result.replica.leaderMaxRenewGapSeconds.toFixed(1)} s, standby ${result.replica.standbyMaxRenewGapSeconds.toFixed(1)} s${result.replica.standbyExitedAfterTakeover ? ' (the standby lost its Lease)' : ''}`,
      );
    }
    return result;
  } finally {
    await Promise.all(managers.map(stopGracefully));
    await server.stop();
  }
}

/** SIGTERM, so a manager shuts down as in a cluster (and writes its CPU profile with --cpu-prof); SIGKILL after 10 s. */
async function stopGracefully(m: Manager): Promise<void> {
  const kill = setTimeout(() => m.child.kill('SIGKILL'), 10_000);
  try {
    await m.stop('SIGTERM');
  } finally {
    clearTimeout(kill);
  }
}
