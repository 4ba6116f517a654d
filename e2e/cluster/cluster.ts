// A local Kubernetes control plane made only of upstream components, run as processes on
// 127.0.0.1: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (fake nodes), and on request
// real nodes (a kubelet with containerd each: real-node.ts) with an image registry on 127.0.0.1 they pull from.
// State (PKI, kubeconfig, pids, logs, etcd data) lives in one directory; `down` stops exactly the
// pids it recorded, removes what the real nodes made, and removes that directory.
import { spawn, execFile } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { UserError } from '../../src/cli/command.ts';
import { resources } from '../../src/k8s/resources.ts';
import { type KubeClient } from '../../src/k8s/client.ts';
import { createKubeClient } from '../../src/k8s/kubeconfig.ts';
import { createCA, createKeyPair, createLeaf, loadCA } from '../../src/pki/pki.ts';
import { binaries, cacheDir, nodeBinaries, repoRoot, versions } from './binaries.ts';
import {
  cleanUpRealNode,
  containerdReady,
  FAKE_NODE_TAINT,
  kubeletArgs,
  leftovers,
  prepareRealNode,
  removePodSandboxes,
  type RealNodeRecord,
} from './real-node.ts';
import { pushPauseImage } from '../../hack/image/pause.ts';
import { sleep, until } from '../../src/testing/wait.ts';

const run = promisify(execFile);

export interface ProcessRecord {
  name: string;
  pid: number;
  binary: string;
  log: string;
  /** The arguments it was started with, so it can be started again the same way (startApiserver). */
  args?: string[];
}

export interface ClusterState {
  dir: string;
  kubeconfig: string;
  server: string;
  kubernetesVersion: string;
  ports: Record<string, number>;
  processes: ProcessRecord[];
  nodes: number;
  startedAt: string;
  /** With real nodes: the image registry they pull from, HOST:PORT on 127.0.0.1. */
  registry?: string;
  realNodes?: RealNodeRecord[];
}

export type Progress = (line: string) => void;

export function defaultClusterDir(): string {
  return process.env.ADS_CLUSTER_DIR ?? join(cacheDir(), 'cluster');
}

const statePath = (dir: string) => join(dir, 'state.json');

export function readState(dir: string): ClusterState | undefined {
  try {
    return JSON.parse(readFileSync(statePath(dir), 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

/** True when pid is alive and still runs the binary we started (pids get reused). */
export function processAlive(p: ProcessRecord): boolean {
  try {
    const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8');
    return cmdline.split('\0')[0] === p.binary;
  } catch {
    return false;
  }
}

/** Waits until the pid has left the process table (exited and reaped, not just a zombie). */
async function waitGone(pid: number, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (existsSync(`/proc/${pid}`) && Date.now() < deadline) await sleep(50);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * kube-apiserver refuses a loopback --advertise-address and dies when it cannot find a default
 * route, so give it the first non-loopback IPv4 of this host (it is never listened on: we bind
 * 127.0.0.1). A documentation-range address stands in on a host with no network at all.
 */
function advertiseAddress(): string {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '192.0.2.1';
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function startProcess(
  dir: string,
  name: string,
  binary: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
): ProcessRecord {
  const log = join(dir, 'logs', `${name}.log`);
  const fd = openSync(log, 'a');
  // detached: own process group, so Ctrl-C in the terminal reaches only our CLI, which then stops
  // the components in order; unref: `up` can exit and leave the cluster running.
  const child = spawn(binary, args, { detached: true, stdio: ['ignore', fd, fd], env: env ?? process.env });
  closeSync(fd);
  child.unref();
  if (child.pid === undefined) throw new UserError(`could not start ${name} (${binary})`);
  return { name, pid: child.pid, binary, log, args };
}

function failure(p: ProcessRecord, what: string): UserError {
  return new UserError(
    `${p.name} ${what}.\n  command: ${p.binary}\n  log: ${p.log}\n------ last lines of the log ------\n${tail(p.log)}`,
  );
}

/** SIGKILLs `p` if it still runs (after its graceful stop had its time), and waits until it is reaped. */
async function killAndReap(p: ProcessRecord): Promise<void> {
  if (processAlive(p)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    while (processAlive(p)) await sleep(50);
  }
  await waitGone(p.pid);
}

/** Polls check() until it returns true; fails early with the log tail if the process died. */
async function waitFor(p: ProcessRecord, what: string, timeoutMs: number, check: () => Promise<boolean>) {
  const outcome = await until(
    what,
    async () => (!processAlive(p) ? 'exited' : (await check().catch(() => false)) && 'ready'),
    { timeoutMs, intervalMs: 250 },
  ).catch(() => 'timed out' as const);
  if (outcome === 'exited') throw failure(p, `exited before it was ${what}`);
  if (outcome === 'timed out') throw failure(p, `was not ${what} after ${Math.round(timeoutMs / 1000)}s`);
}

/**
 * GET over TLS. Without `tls`, the peer is a component's self-signed health endpoint on loopback:
 * only liveness is checked there, so its certificate is not verified.
 */
function httpGetOk(url: string, tls?: { ca: string; cert: string; key: string }): Promise<boolean> {
  return new Promise((resolve) => {
    const options = tls ? { ...tls, timeout: 2000 } : { rejectUnauthorized: false, timeout: 2000 };
    const req = request(url, options, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

export interface KubectlResult {
  stdout: string;
  stderr: string;
}

export class KubectlError extends Error {
  constructor(
    readonly args: string[],
    readonly stderr: string,
    readonly code: number | null,
  ) {
    super(`kubectl ${args.join(' ')} failed (exit ${code}): ${stderr.trim()}`);
  }
}

/** The one kubectl of the harness, the e2e tests (e2e/lib/kube.ts binds the suite's kubeconfig), the demo and bench. */
export async function kubectl(kubeconfig: string, args: string[], input?: string): Promise<KubectlResult> {
  const child = run(binaries().kubectl, ['--kubeconfig', kubeconfig, ...args], { maxBuffer: 256 * 1024 * 1024 });
  if (input !== undefined) child.child.stdin?.end(input);
  try {
    return await child;
  } catch (err) {
    const e = err as { stderr?: string; code?: unknown; message: string };
    throw new KubectlError(args, e.stderr || e.message, typeof e.code === 'number' ? e.code : null);
  }
}

export function nodeName(i: number, total: number): string {
  return `kwok-node-${String(i).padStart(Math.max(3, String(total - 1).length), '0')}`;
}

/** A fake Node object as kwok manages it (labels as a kubelet would set them). */
export function fakeNode(
  name: string,
  labels: Record<string, string> = {},
  taints: { key: string; value?: string; effect: string }[] = [],
) {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        type: 'kwok',
        ...labels,
      },
    },
    spec: taints.length > 0 ? { taints } : {},
    status: {},
  };
}

/**
 * The zone of a fake node, two nodes per zone in turn (kwok-node-000 and -001 in zone-a, -002 and -003 in zone-b,
 * -004 and -005 in zone-c, then zone-a again), as the well-known label a cloud's nodes carry: what the README's
 * canary example spreads over.
 */
export function zoneLabels(name: string): Record<string, string> {
  const n = /(\d+)$/.exec(name)?.[1];
  return n === undefined ? {} : { 'topology.kubernetes.io/zone': `zone-${'abc'[Math.floor(Number(n) / 2) % 3]}` };
}

export async function createNodes(
  kubeconfig: string,
  names: string[],
  taints: { key: string; value?: string; effect: string }[] = [],
): Promise<void> {
  // In chunks so a 1,000-node cluster does not become one huge request.
  for (let i = 0; i < names.length; i += 200) {
    const items = names.slice(i, i + 200).map((n) => fakeNode(n, zoneLabels(n), taints));
    await kubectl(kubeconfig, ['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  }
}

interface NodeItem {
  spec?: { taints?: { key: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

export const readyAndUntainted = (n: NodeItem): boolean =>
  !!n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
  !(n.spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/'));

/**
 * Nodes that are Ready and carry no not-ready/unreachable taint (so daemon pods can land). Listed from the
 * apiserver's watch cache (resourceVersion "0", no read from etcd) and each node reduced to that one fact as it is
 * decoded: through `kubectl get nodes -o json` (a read from etcd, then a kubectl process of 260 MiB decoding and
 * printing every node), a poll of 5,000 nodes took a third of a core, on a 2-core machine whose apiserver and kwok
 * need all they can get to keep 5,000 heartbeats fresh.
 */
export async function countReadyNodes(
  kubeconfig: string,
  client?: KubeClient,
): Promise<{ ready: number; total: number }> {
  const c = client ?? createKubeClient({ kubeconfig, qps: 0, userAgent: 'ads-cluster' });
  try {
    const list = await c.list(resources.nodes, {
      resourceVersion: '0',
      decodeItem: (n) => readyAndUntainted(n as NodeItem),
    });
    return { ready: list.items.filter(Boolean).length, total: list.items.length };
  } finally {
    if (!client) c.close();
  }
}

/** Waits for `want` nodes ready and untainted; polls less often on a large cluster (each poll lists every node). */
export async function waitForNodesReady(kubeconfig: string, want: number, progress: Progress, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  const client = createKubeClient({ kubeconfig, qps: 0, userAgent: 'ads-cluster' });
  let last = -1;
  try {
    for (;;) {
      const { ready } = await countReadyNodes(kubeconfig, client);
      if (ready !== last) progress(`  nodes ready and untainted: ${ready}/${want}`);
      last = ready;
      if (ready >= want) return;
      if (Date.now() > deadline)
        throw new UserError(`only ${ready} of ${want} nodes became Ready within ${timeoutMs / 1000}s`);
      await sleep(Math.max(1000, want));
    }
  } finally {
    client.close();
  }
}

function kubeconfigYaml(server: string, ca: string, cert: string, key: string): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return toYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'ads-local', cluster: { server, 'certificate-authority-data': b64(ca) } }],
    users: [{ name: 'ads-admin', user: { 'client-certificate-data': b64(cert), 'client-key-data': b64(key) } }],
    contexts: [{ name: 'ads-local', context: { cluster: 'ads-local', user: 'ads-admin' } }],
    'current-context': 'ads-local',
  });
}

export interface UpOptions {
  dir?: string;
  nodes?: number;
  progress?: Progress;
  /** Extra kube-apiserver flags, appended to the defaults (the benchmarks add an audit log); none by default. */
  apiserverArgs?: string[];
  /**
   * Seconds between two node status heartbeats of the fake kubelet (plus up to a fifth more, at random), with the
   * node lifecycle controller's grace period sized to them. Default: the stage file's 20-45 s, with a grace period
   * of 60 s, so that node tests see NotReady within a minute.
   */
  nodeHeartbeatSeconds?: number;
  /**
   * Real nodes to add beside the fake ones (real-node.ts; Linux and root only). With any, the fake nodes are tainted
   * (FAKE_NODE_TAINT) so that what must really run lands on a real node, and the controllers a Deployment behind a
   * Service needs are on.
   */
  realNodes?: number;
  /**
   * Client QPS and burst of kube-controller-manager and kube-scheduler (--kube-api-qps, --kube-api-burst). Default
   * 100 and 200, above their own defaults (KCM 20 and 30, scheduler 50 and 100); the benchmarks raise them to
   * measure controllers at what the apiserver can take rather than at a client's rate.
   */
  clientRate?: { qps: number; burst: number };
  /**
   * Pod stages the fake kubelet plays at once (kwok's podPlayStageParallelism, default 4): with 4, one process's 4
   * workers stand in for every node's kubelet, and at 100-250 ms per status write under load they pace every pod
   * of a step (16-40 status writes a second). The benchmarks raise it so that the controllers, not the fake
   * kubelet, set the pace, as a kubelet per node would.
   */
  kwokPodParallelism?: number;
}

/**
 * A kwok configuration file in `dir` with podPlayStageParallelism set. The other options keep kwok's defaults
 * (a configuration given leaves the ones it omits at 0, which kwok refuses).
 */
function kwokOptions(dir: string, podParallelism: number): string {
  const file = join(dir, 'kwok-options.yaml');
  writeFileSync(
    file,
    [
      'apiVersion: config.kwok.x-k8s.io/v1alpha1',
      'kind: KwokConfiguration',
      'options:',
      `  podPlayStageParallelism: ${podParallelism}`,
      '  nodePlayStageParallelism: 4',
      '  nodeLeaseParallelism: 4',
      '',
    ].join('\n'),
  );
  return file;
}

/** The heartbeat stage's delay in kwok-stages.yaml, replaced when UpOptions.nodeHeartbeatSeconds is given. */
const HEARTBEAT_DELAY =
  /(name: node-heartbeat\n[\s\S]*?\n {2}delay:\n {4}durationMilliseconds: )20000(\n {4}jitterDurationMilliseconds: )25000\n/;

/**
 * The kwok stage file to run with: the repository's, or a copy in `dir` whose node heartbeat comes every
 * `heartbeatSeconds`; and the node lifecycle controller's grace period for it, seconds.
 */
export function kwokStages(dir: string, heartbeatSeconds?: number): { file: string; gracePeriodSeconds: number } {
  const file = join(repoRoot, 'e2e', 'cluster', 'kwok-stages.yaml');
  if (heartbeatSeconds === undefined) return { file, gracePeriodSeconds: 60 };
  const text = readFileSync(file, 'utf8');
  if (!HEARTBEAT_DELAY.test(text)) throw new Error(`${file}: the node-heartbeat stage's delay is not 20000 + 25000 ms`);
  const ms = Math.round(heartbeatSeconds * 1000);
  const copy = join(dir, 'kwok-stages.yaml');
  writeFileSync(copy, text.replace(HEARTBEAT_DELAY, `$1${ms}$2${Math.round(ms / 5)}\n`));
  // Two heartbeats late before NotReady, as 60 s is for the default 45 s at most.
  return { file: copy, gracePeriodSeconds: Math.ceil((2 * ms * 1.2) / 1000) };
}

export async function clusterUp(opts: UpOptions = {}): Promise<ClusterState> {
  const dir = opts.dir ?? defaultClusterDir();
  const progress = opts.progress ?? ((l: string) => process.stderr.write(`${l}\n`));
  const nodes = opts.nodes ?? 3;
  const realNodes = opts.realNodes ?? 0;
  const existing = readState(dir);
  if (existing && existing.processes.every(processAlive)) {
    throw new UserError(
      `a cluster is already running from ${dir} (kubeconfig ${existing.kubeconfig}); run 'cluster down' first`,
    );
  }
  if (existing) await clusterDown({ dir, progress: () => {} });

  const bin = binaries();
  const t0 = Date.now();
  mkdirSync(join(dir, 'logs'), { recursive: true });
  mkdirSync(join(dir, 'pki'), { recursive: true });

  // Each port is picked right before its component starts (onFreePorts below).
  const ports: Record<string, number> = {
    etcdClient: 0,
    etcdPeer: 0,
    apiserver: 0,
    controllerManager: 0,
    scheduler: 0,
    kwok: 0,
  };

  progress('generating PKI (CA, apiserver serving cert, admin client cert, service-account keys)');
  const pki = (f: string) => join(dir, 'pki', f);
  const ca = await createCA('advanced-daemonset-local-ca');
  const serving = await createLeaf(ca, {
    commonName: 'kube-apiserver',
    usage: 'server',
    ipAddresses: ['127.0.0.1', '10.96.0.1'],
    dnsNames: [
      'localhost',
      'kubernetes',
      'kubernetes.default',
      'kubernetes.default.svc',
      'kubernetes.default.svc.cluster.local',
    ],
  });
  const admin = await createLeaf(ca, {
    commonName: 'kubernetes-admin',
    organizations: ['system:masters'],
    usage: 'client',
  });
  const sa = await createKeyPair();
  writeFileSync(pki('ca.crt'), ca.certPem);
  writeFileSync(pki('ca.key'), ca.keyPem, { mode: 0o600 });
  writeFileSync(pki('apiserver.crt'), serving.certPem);
  writeFileSync(pki('apiserver.key'), serving.keyPem, { mode: 0o600 });
  writeFileSync(pki('admin.crt'), admin.certPem);
  writeFileSync(pki('admin.key'), admin.keyPem, { mode: 0o600 });
  writeFileSync(pki('sa.pub'), sa.publicPem);
  writeFileSync(pki('sa.key'), sa.privatePem, { mode: 0o600 });
  if (realNodes > 0) {
    // kube-apiserver's client certificate to kubelets (logs, exec, port-forward).
    const kubeletClient = await createLeaf(ca, {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usage: 'client',
    });
    writeFileSync(pki('apiserver-kubelet-client.crt'), kubeletClient.certPem);
    writeFileSync(pki('apiserver-kubelet-client.key'), kubeletClient.keyPem, { mode: 0o600 });
  }
  const kubeconfig = join(dir, 'kubeconfig');

  const state: ClusterState = {
    dir,
    kubeconfig,
    server: '',
    kubernetesVersion: versions.kubernetes,
    ports,
    processes: [],
    nodes,
    startedAt: new Date().toISOString(),
  };
  const save = () => writeFileSync(statePath(dir), JSON.stringify(state, null, 2));
  /**
   * Starts a component listening on fresh ports and waits until `ready`. A port found free can be taken by another
   * process (an outgoing connection, a parallel test's cluster) before the component binds it; then the component
   * exits with "address already in use", and it is started again on other ports.
   */
  const onFreePorts = async (
    keys: string[],
    name: string,
    binary: string,
    args: () => string[],
    ready: (p: ProcessRecord) => Promise<void>,
  ): Promise<ProcessRecord> => {
    for (let attempt = 1; ; attempt++) {
      for (const k of keys) ports[k] = await freePort();
      const p = startProcess(dir, name, binary, args());
      state.processes.push(p);
      save();
      try {
        await ready(p);
        return p;
      } catch (err) {
        if (attempt >= 3 || processAlive(p) || !/address already in use/.test(tail(p.log))) throw err;
        state.processes.splice(state.processes.indexOf(p), 1);
      }
    }
  };

  try {
    const etcdUrl = () => `http://127.0.0.1:${ports.etcdClient}`;
    const peerUrl = () => `http://127.0.0.1:${ports.etcdPeer}`;
    const etcdArgs = () => {
      // A data dir left by an attempt that could not bind would hold its peer URL.
      rmSync(join(dir, 'etcd'), { recursive: true, force: true });
      progress(`starting etcd on 127.0.0.1:${ports.etcdClient}`);
      return [
        '--name=ads',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl()}`,
        `--advertise-client-urls=${etcdUrl()}`,
        `--listen-peer-urls=${peerUrl()}`,
        `--initial-advertise-peer-urls=${peerUrl()}`,
        `--initial-cluster=ads=${peerUrl()}`,
        '--listen-metrics-urls=',
        '--unsafe-no-fsync=true',
        '--quota-backend-bytes=8589934592',
        '--auto-compaction-retention=1',
        '--log-level=warn',
      ];
    };
    await onFreePorts(['etcdClient', 'etcdPeer'], 'etcd', bin.etcd, etcdArgs, (p) =>
      waitFor(p, 'healthy', 60_000, () => httpGetOkPlain(`${etcdUrl()}/health`)),
    );

    const apiserverArgs = () => {
      // The kubeconfig names the apiserver's port, so it is written with each attempt.
      state.server = `https://127.0.0.1:${ports.apiserver}`;
      writeFileSync(kubeconfig, kubeconfigYaml(state.server, ca.certPem, admin.certPem, admin.keyPem), {
        mode: 0o600,
      });
      progress(`starting kube-apiserver ${versions.kubernetes} on ${state.server}`);
      return [
        `--etcd-servers=${etcdUrl()}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${ports.apiserver}`,
        `--advertise-address=${advertiseAddress()}`,
        `--tls-cert-file=${pki('apiserver.crt')}`,
        `--tls-private-key-file=${pki('apiserver.key')}`,
        `--client-ca-file=${pki('ca.crt')}`,
        '--authorization-mode=Node,RBAC',
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${pki('sa.pub')}`,
        `--service-account-signing-key-file=${pki('sa.key')}`,
        '--service-cluster-ip-range=10.96.0.0/16',
        '--allow-privileged=true',
        '--enable-priority-and-fairness=false',
        '--profiling=false',
        '--v=1',
        ...(realNodes > 0
          ? [
              `--kubelet-client-certificate=${pki('apiserver-kubelet-client.crt')}`,
              `--kubelet-client-key=${pki('apiserver-kubelet-client.key')}`,
              // Webhook Services are reached at their endpoints' pod addresses: there is no kube-proxy.
              '--enable-aggregator-routing=true',
              // Node names are not in any DNS here.
              '--kubelet-preferred-address-types=InternalIP',
            ]
          : []),
        ...(opts.apiserverArgs ?? []),
      ];
    };
    const tls = { ca: ca.certPem, cert: admin.certPem, key: admin.keyPem };
    await onFreePorts(['apiserver'], 'kube-apiserver', bin.kubeApiserver, apiserverArgs, (p) =>
      waitFor(p, 'ready', 120_000, () => httpGetOk(`${state.server}/readyz`, tls)),
    );

    progress('starting kube-controller-manager, kube-scheduler and kwok');
    const stages = kwokStages(dir, opts.nodeHeartbeatSeconds);
    const healthz = (port: string) => () => httpGetOk(`https://127.0.0.1:${ports[port]}/healthz`);
    const rate = opts.clientRate ?? { qps: 100, burst: 200 };
    const rateArgs = [`--kube-api-qps=${rate.qps}`, `--kube-api-burst=${rate.burst}`];
    const kcmArgs = () => [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      `--controllers=${[...KCM_CONTROLLERS, ...(realNodes > 0 ? KCM_CONTROLLERS_FOR_REAL_NODES : [])].join(',')}`,
      `--service-account-private-key-file=${pki('sa.key')}`,
      `--root-ca-file=${pki('ca.crt')}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.controllerManager}`,
      '--node-monitor-period=5s',
      `--node-monitor-grace-period=${stages.gracePeriodSeconds}s`,
      ...rateArgs,
      '--v=1',
    ];
    const schedulerArgs = () => [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.scheduler}`,
      ...rateArgs,
      '--v=1',
    ];
    const kwokArgs = () => [
      `--kubeconfig=${kubeconfig}`,
      `--config=${stages.file}`,
      ...(opts.kwokPodParallelism ? [`--config=${kwokOptions(dir, opts.kwokPodParallelism)}`] : []),
      // Only the fake nodes (fakeNode annotates them): a real node's kubelet reports its own status.
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--cidr=10.244.0.0/16',
      `--server-address=127.0.0.1:${ports.kwok}`,
      '--node-lease-duration-seconds=0',
      '--v=1',
    ];
    const [kcm] = await Promise.all([
      onFreePorts(['controllerManager'], 'kube-controller-manager', bin.kubeControllerManager, kcmArgs, (p) =>
        waitFor(p, 'healthy', 60_000, healthz('controllerManager')),
      ),
      onFreePorts(['scheduler'], 'kube-scheduler', bin.kubeScheduler, schedulerArgs, (p) =>
        waitFor(p, 'healthy', 60_000, healthz('scheduler')),
      ),
      onFreePorts(['kwok'], 'kwok', bin.kwok, kwokArgs, (p) =>
        waitFor(p, 'healthy', 60_000, () => httpGetOkPlain(`http://127.0.0.1:${ports.kwok}/healthz`)),
      ),
    ]);
    // The ServiceAccount admission plugin rejects pods until the namespace's default SA exists.
    await waitFor(kcm, 'creating the default service account', 60_000, async () => {
      await kubectl(kubeconfig, ['get', 'serviceaccount', 'default', '-n', 'default']);
      return true;
    });

    if (nodes > 0) {
      progress(
        `creating ${nodes} fake nodes${realNodes > 0 ? ` (tainted ${FAKE_NODE_TAINT.key}=${FAKE_NODE_TAINT.value}:${FAKE_NODE_TAINT.effect})` : ''}`,
      );
      await createNodes(
        kubeconfig,
        Array.from({ length: nodes }, (_, i) => nodeName(i, nodes)),
        realNodes > 0 ? [FAKE_NODE_TAINT] : [],
      );
      await waitForNodesReady(kubeconfig, nodes, progress);
    }
    if (realNodes > 0) await startRealNodes(state, realNodes, { ca: pki('ca.crt'), save, progress, onFreePorts });
  } catch (err) {
    await clusterDown({ dir, progress: () => {}, keepDir: true });
    throw err;
  }
  progress(`cluster up in ${((Date.now() - t0) / 1000).toFixed(1)}s with ${nodes} nodes`);
  return state;
}

/** The controllers of kube-controller-manager every local cluster runs (no Deployments: nothing needs them). */
const KCM_CONTROLLERS = [
  'garbage-collector-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'node-lifecycle-controller',
  'taint-eviction-controller',
  'daemonset-controller',
  'root-ca-certificate-publisher-controller',
  'pod-garbage-collector-controller',
];
/** And with real nodes, what a Deployment behind a Service with a PodDisruptionBudget needs (the chart's manager). */
const KCM_CONTROLLERS_FOR_REAL_NODES = [
  'deployment-controller',
  'replicaset-controller',
  'endpoints-controller',
  'endpointslice-controller',
  'disruption-controller',
];

interface RealNodesContext {
  ca: string;
  save: () => void;
  progress: Progress;
  onFreePorts: (
    keys: string[],
    name: string,
    binary: string,
    args: () => string[],
    ready: (p: ProcessRecord) => Promise<void>,
  ) => Promise<ProcessRecord>;
}

async function nodeIsReady(kubeconfig: string, name: string): Promise<boolean> {
  const { stdout } = await kubectl(kubeconfig, ['get', 'node', name, '-o', 'json']);
  return readyAndUntainted(JSON.parse(stdout) as NodeItem);
}

/** The registry, then each real node: its network and files, containerd, and the kubelet until the node is Ready. */
async function startRealNodes(state: ClusterState, count: number, ctx: RealNodesContext): Promise<void> {
  const { dir, ports } = state;
  const bin = nodeBinaries();
  const registryDir = join(dir, 'registry');
  mkdirSync(registryDir, { recursive: true });
  const registryArgs = () => {
    const config = join(registryDir, 'config.yml');
    writeFileSync(
      config,
      toYaml({
        version: 0.1,
        log: { level: 'warn', accesslog: { disabled: true } },
        storage: { filesystem: { rootdirectory: join(registryDir, 'data') }, delete: { enabled: true } },
        http: { addr: `127.0.0.1:${ports.registry}` },
      }),
    );
    ctx.progress(`starting the image registry on 127.0.0.1:${ports.registry}`);
    return ['serve', config];
  };
  await ctx.onFreePorts(['registry'], 'registry', '/usr/bin/docker-registry', registryArgs, (p) =>
    waitFor(p, 'serving', 30_000, () => httpGetOkPlain(`http://127.0.0.1:${ports.registry}/v2/`)),
  );
  state.registry = `127.0.0.1:${ports.registry}`;
  ctx.progress(`pushing the sandbox (pause) image to ${state.registry}`);
  const sandboxImage = await pushPauseImage(state.registry);
  state.realNodes = [];
  const taken = new Set<string>();
  for (let i = 0; i < count; i++) {
    const files = await prepareRealNode({
      clusterDir: dir,
      index: i,
      pkiDir: join(dir, 'pki'),
      server: state.server,
      registry: state.registry,
      sandboxImage,
      taken,
      kubeletPort: await freePort(),
      kubeletHealthzPort: await freePort(),
    });
    const r = files.record;
    state.realNodes.push(r);
    ctx.save();
    ctx.progress(`starting containerd ${versions.containerd} for ${r.name}`);
    // containerd finds its shim on PATH.
    const env = { ...process.env, PATH: `${dirname(bin.containerdShim)}:${process.env.PATH ?? ''}` };
    const containerd = startProcess(
      dir,
      `containerd-${r.name}`,
      bin.containerd,
      ['--config', files.containerdConfig],
      env,
    );
    state.processes.push(containerd);
    ctx.save();
    await waitFor(containerd, 'answering CRI', 60_000, () => containerdReady(r));
    ctx.progress(`starting kubelet ${versions.kubernetes} as node ${r.name} (${r.ip}, pods in ${r.subnet})`);
    const kubelet = startProcess(dir, `kubelet-${r.name}`, bin.kubelet, kubeletArgs(files));
    state.processes.push(kubelet);
    ctx.save();
    await waitFor(kubelet, 'Ready', 120_000, () => nodeIsReady(state.kubeconfig, r.name));
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; waits until it is reaped. */
async function stopProcess(p: ProcessRecord, graceMs = 10_000): Promise<void> {
  if (!processAlive(p)) return;
  try {
    process.kill(p.pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (processAlive(p) && Date.now() < deadline) await sleep(100);
  await killAndReap(p);
}

/**
 * Stops a real node as a drained machine would go: the kubelet first (so it restarts nothing), then every pod
 * sandbox through CRI (containers stopped, networks torn down by the CNI plugins), containerd, and last whatever is
 * left by force (real-node.ts). Returns what could not be removed.
 */
async function stopRealNode(state: ClusterState, r: RealNodeRecord, progress: Progress): Promise<string[]> {
  const proc = (name: string) => state.processes.find((p) => p.name === `${name}-${r.name}`);
  progress(`stopping real node ${r.name}`);
  const kubelet = proc('kubelet');
  if (kubelet) await stopProcess(kubelet);
  await removePodSandboxes(r, progress);
  const containerd = proc('containerd');
  if (containerd) await stopProcess(containerd);
  await cleanUpRealNode(r, progress);
  return leftovers(r);
}

function httpGetOkPlain(url: string): Promise<boolean> {
  return fetch(url, { signal: AbortSignal.timeout(2000) }).then(
    (r) => r.ok,
    () => false,
  );
}

export interface DownOptions {
  dir?: string;
  progress?: Progress;
  /** Keep logs after a failed start, so the user can read them. */
  keepDir?: boolean;
}

/** Stops the recorded processes (reverse start order, SIGTERM then SIGKILL) and removes the dir. */
export async function clusterDown(opts: DownOptions = {}): Promise<boolean> {
  const dir = opts.dir ?? defaultClusterDir();
  const progress = opts.progress ?? ((l: string) => process.stderr.write(`${l}\n`));
  const state = readState(dir);
  if (!state) {
    progress(`no cluster recorded in ${dir}`);
    return false;
  }
  const left: string[] = [];
  for (const r of [...(state.realNodes ?? [])].reverse()) left.push(...(await stopRealNode(state, r, progress)));
  for (const p of [...state.processes].reverse()) {
    if (!processAlive(p)) continue;
    progress(`stopping ${p.name} (pid ${p.pid})`);
    await stopProcess(p);
  }
  if (!opts.keepDir) rmSync(dir, { recursive: true, force: true });
  progress(opts.keepDir ? `cluster stopped; logs kept in ${join(dir, 'logs')}` : `cluster stopped and ${dir} removed`);
  if (left.length > 0) {
    throw new UserError(`the real nodes left these behind (remove them by hand):\n  ${left.join('\n  ')}`);
  }
  return true;
}

export interface ClusterStatus {
  state?: ClusterState;
  running: { name: string; pid: number; alive: boolean }[];
  nodes?: { ready: number; total: number };
}

export async function clusterStatus(dir = defaultClusterDir()): Promise<ClusterStatus> {
  const state = readState(dir);
  if (!state) return { running: [] };
  const running = state.processes.map((p) => ({ name: p.name, pid: p.pid, alive: processAlive(p) }));
  let nodes;
  if (running.every((r) => r.alive)) nodes = await countReadyNodes(state.kubeconfig).catch(() => undefined);
  return { state, running, nodes };
}

// ------------------------------------------------------------------------------------------------
// Faults and identities for the fault-injection e2e tests

const APISERVER = 'kube-apiserver';

function adminTls(dir: string): { ca: string; cert: string; key: string } {
  const pki = (f: string) => readFileSync(join(dir, 'pki', f), 'utf8');
  return { ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key') };
}

function recordedApiserver(dir: string): { state: ClusterState; p: ProcessRecord } {
  const state = readState(dir);
  const p = state?.processes.find((x) => x.name === APISERVER);
  if (!state || !p) throw new UserError(`no ${APISERVER} recorded in ${dir}`);
  return { state, p };
}

/**
 * Stops kube-apiserver of the cluster in `dir` and waits until it has exited; etcd and the other components keep
 * running. SIGTERM starts its graceful termination: it stops listening and finishes the requests in flight
 * ("InFlightRequestsDrained" in its log), but then waits up to a minute for open watch connections before it
 * exits, and a one-minute outage would let the node lifecycle controller mark every node NotReady. So once the
 * requests in flight are drained (or after 60s) it is killed (SIGKILL): every request it accepted was answered, the
 * watches are cut as by a crash.
 */
export async function stopApiserver(dir: string): Promise<void> {
  const { p } = recordedApiserver(dir);
  if (!processAlive(p)) return;
  const from = existsSync(p.log) ? readFileSync(p.log).length : 0;
  process.kill(p.pid, 'SIGTERM');
  const drained = () => {
    try {
      return readFileSync(p.log).subarray(from).includes('InFlightRequestsDrained');
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + 60_000;
  while (processAlive(p) && !drained() && Date.now() < deadline) await sleep(50);
  await killAndReap(p);
}

/**
 * Starts kube-apiserver of the cluster in `dir` again, with the arguments it was first started with (same port,
 * same etcd, same PKI, same audit log), records the new pid in the cluster state (so `cluster down` stops what
 * runs) and waits for /readyz. Its port cannot change (every kubeconfig names it): when another process took it
 * meanwhile, the start is retried for a while.
 */
export async function startApiserver(dir: string): Promise<void> {
  const { state, p } = recordedApiserver(dir);
  if (processAlive(p)) throw new UserError(`${APISERVER} (pid ${p.pid}) is still running`);
  if (!p.args) throw new UserError(`the arguments of ${APISERVER} are not recorded in ${dir}`);
  const tls = adminTls(dir);
  const at = state.processes.indexOf(p);
  for (let attempt = 1; ; attempt++) {
    const next = startProcess(dir, APISERVER, p.binary, p.args);
    state.processes[at] = next;
    writeFileSync(statePath(dir), JSON.stringify(state, null, 2));
    try {
      await waitFor(next, 'ready again', 120_000, () => httpGetOk(`${state.server}/readyz`, tls));
      return;
    } catch (err) {
      if (attempt >= 10 || processAlive(next) || !/address already in use/.test(tail(next.log))) throw err;
      await sleep(1000);
    }
  }
}

/**
 * Writes a kubeconfig for the cluster in `dir` with a client certificate of its own, minted from the cluster's CA:
 * user `commonName` in `groups` (system:masters by default). Gives each process of a test its own identity, so the
 * audit log (user.username) tells which one made a request. Returns the kubeconfig's path.
 */
export async function clientKubeconfig(
  dir: string,
  commonName: string,
  groups: string[] = ['system:masters'],
): Promise<string> {
  const state = readState(dir);
  if (!state) throw new UserError(`no cluster recorded in ${dir}`);
  const pki = (f: string) => readFileSync(join(dir, 'pki', f), 'utf8');
  const ca = await loadCA(pki('ca.crt'), pki('ca.key'));
  const leaf = await createLeaf(ca, { commonName, organizations: groups, usage: 'client' });
  const path = join(dir, `kubeconfig-${commonName}`);
  writeFileSync(path, kubeconfigYaml(state.server, ca.certPem, leaf.certPem, leaf.keyPem), { mode: 0o600 });
  return path;
}
