// Helpers of the real-node e2e tests: a private cluster with one real node (a kubelet with containerd and runc) and
// tainted kwok nodes, crictl on that node, and what a test needs to look inside it.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe } from 'node:test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { clusterDown, fakeNode, readState, type ClusterState } from '../cluster/cluster.ts';
import { nodeBinaries } from '../cluster/binaries.ts';
import { FAKE_NODE_TAINT, realNodeUnsupported, type RealNodeRecord } from '../cluster/real-node.ts';
import { kubectl, waitNodesReady } from '../lib/kube.ts';

const run = promisify(execFile);

export interface RealNodeCluster {
  /** A directory of this describe's own (the cluster's directory is `clusterDir`). */
  dir: string;
  clusterDir: string;
  kubeconfig: string;
  registry: string;
  node: RealNodeRecord;
  state: ClusterState;
}

/**
 * Why the real-node tests do not run here, or undefined when they do. With CI=true they always run: a missing
 * prerequisite is then the tests' failure (in `before`), never a skip, so CI cannot go green without them.
 */
export const realNodeSkip = (): string | undefined => {
  const why = realNodeUnsupported();
  return why && process.env.CI !== 'true' ? `${why}; CI=true runs them` : undefined;
};

/**
 * `describe` around a private cluster with one real node that the first test brings up, the way the README's
 * "On the local cluster" block does (`cluster up --real-nodes 1` with $ADS_CLUSTER_DIR set to `cluster.clusterDir`),
 * and then hands to `attachRealNodeCluster`. `cluster.dir` is kept only when a test failed. The cluster goes down
 * after the tests unless a test took it down (the cleanup test).
 */
export function describeOnRealNodeCluster(
  name: string,
  options: { timeout?: number },
  fn: (cluster: RealNodeCluster) => void,
): void {
  const skip = realNodeSkip();
  describe(name, { ...options, skip }, () => {
    const top = mkdtempSync(join(tmpdir(), 'ads-e2e-real-'));
    const clusterDir = join(top, 'cluster');
    const c = { dir: top, clusterDir } as RealNodeCluster;
    let failed = false;
    before(() => {
      const why = realNodeUnsupported();
      if (why) throw new Error(`CI=true, but real nodes cannot run here: ${why}`);
    });
    afterEach((t) => {
      if ('passed' in t && !t.passed) failed = true;
    });
    fn(c);
    after(async () => {
      if (readState(clusterDir)) await clusterDown({ dir: clusterDir, progress: () => {}, keepDir: failed });
      if (failed) process.stderr.write(`${name}: failed; logs kept in ${top}\n`);
      else rmSync(top, { recursive: true, force: true });
    });
  });
}

/** Fills `c` from the state of the cluster that `cluster up` started in `c.clusterDir`; points kubectl at it. */
export function attachRealNodeCluster(c: RealNodeCluster): void {
  const state = readState(c.clusterDir);
  if (!state?.registry || !state.realNodes?.[0]) throw new Error(`no cluster with a real node in ${c.clusterDir}`);
  c.state = state;
  c.kubeconfig = state.kubeconfig;
  c.registry = state.registry;
  c.node = state.realNodes[0];
  process.env.KUBECONFIG = c.kubeconfig;
}

/** Fake nodes carrying the taint `cluster up --real-nodes` gives them, in group `group` (label e2e-group). */
export async function createTaintedFakeNodes(group: string, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${group}-${i}`);
  const items = names.map((n) => fakeNode(n, { 'e2e-group': group }, [FAKE_NODE_TAINT]));
  await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  await waitNodesReady(names);
  return names;
}

/** The toleration a pod needs to land on those fake nodes. */
export const FAKE_NODE_TOLERATION = { key: FAKE_NODE_TAINT.key, operator: 'Exists', effect: FAKE_NODE_TAINT.effect };

/** crictl on the real node's containerd, parsed from its JSON output. */
export async function crictlJson<T>(node: RealNodeRecord, args: string[]): Promise<T> {
  const { stdout } = await run(
    nodeBinaries().crictl,
    // The output flag right after the subcommand: crictl takes what follows its positional arguments as more of them.
    ['--runtime-endpoint', `unix://${node.containerdSocket}`, args[0]!, '-o', 'json', ...args.slice(1)],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as T;
}

export interface CriContainer {
  id: string;
  metadata: { name: string; attempt: number };
  image: { image: string };
  imageRef: string;
  state: string;
  labels: Record<string, string>;
}

/** The containers containerd runs (or ran) for the pod `namespace/name`. */
export async function criContainers(node: RealNodeRecord, namespace: string, pod: string): Promise<CriContainer[]> {
  const { containers } = await crictlJson<{ containers: CriContainer[] }>(node, [
    'ps',
    '-a',
    '--label',
    `io.kubernetes.pod.namespace=${namespace}`,
    '--label',
    `io.kubernetes.pod.name=${pod}`,
  ]);
  return containers;
}

/** The host pid of a running container's first process (`crictl inspect`'s info.pid). */
export async function criContainerPid(node: RealNodeRecord, id: string): Promise<number> {
  return (await crictlJson<{ info: { pid: number } }>(node, ['inspect', id])).info.pid;
}

/** The image ID (sha256:...) containerd's image store has for `ref` on the node. */
export async function criImageId(node: RealNodeRecord, ref: string): Promise<string | undefined> {
  const { images } = await crictlJson<{ images: { id: string; repoTags: string[] | null }[] }>(node, ['images']);
  return images.find((i) => i.repoTags?.includes(ref))?.id;
}

/** Image references containerd's image store holds on the node (every tag of every image). */
export async function criImages(node: RealNodeRecord): Promise<string[]> {
  const { images } = await crictlJson<{ images: { repoTags: string[] | null }[] }>(node, ['images']);
  return images.flatMap((i) => i.repoTags ?? []);
}

/**
 * The cpu quota (microseconds per period, -1 without a limit) and the memory limit (bytes, -1 without) of a running
 * process's cgroup, as the kernel enforces them: cgroup v1 (cpu.cfs_quota_us, memory.limit_in_bytes in the
 * hierarchies /proc/PID/cgroup names) or v2 (cpu.max, memory.max).
 */
export function cgroupLimits(pid: number): { cpuQuotaUs: number; memoryBytes: number } {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
  const num = (text: string) => (text === 'max' ? -1 : Number(text));
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) {
    const dir = join('/sys/fs/cgroup', lines.find((l) => l.startsWith('0::'))!.slice(3));
    return {
      cpuQuotaUs: num(readFileSync(join(dir, 'cpu.max'), 'utf8').trim().split(' ')[0]!),
      memoryBytes: num(readFileSync(join(dir, 'memory.max'), 'utf8').trim()),
    };
  }
  const dirOf = (controller: string) => {
    const [, controllers, path] = lines.map((l) => l.split(':')).find((f) => f[1]!.split(',').includes(controller))!;
    return join('/sys/fs/cgroup', controllers!, path!);
  };
  // cgroup v1 writes "no limit" as the largest page-aligned value; -1 for the quota.
  const memory = Number(readFileSync(join(dirOf('memory'), 'memory.limit_in_bytes'), 'utf8').trim());
  return {
    cpuQuotaUs: Number(readFileSync(join(dirOf('cpu'), 'cpu.cfs_quota_us'), 'utf8').trim()),
    memoryBytes: memory >= 2 ** 62 ? -1 : memory,
  };
}
