// Helpers for e2e tests: kubectl against the harness's cluster, polling with clear failure
// messages, and per-test isolation (own namespace, own labelled fake nodes).
import { after, before } from 'node:test';
import { randomBytes } from 'node:crypto';
import { fakeNode, KubectlError, kubectl as kubectlWith } from '../cluster/cluster.ts';
import { until, type WaitOptions } from '../../src/testing/wait.ts';

export function kubeconfig(): string {
  const kc = process.env.KUBECONFIG;
  if (!kc) throw new Error('KUBECONFIG is not set: run e2e tests through `npm run test:e2e` (e2e/run.ts)');
  return kc;
}

export { KubectlError };

/** kubectl against the suite's cluster (e2e/cluster/cluster.ts's, with KUBECONFIG): resolves with stdout. */
export async function kubectl(args: string[], input?: string): Promise<string> {
  return (await kubectlWith(kubeconfig(), args, input)).stdout;
}

export async function kubectlJson<T = unknown>(args: string[]): Promise<T> {
  return JSON.parse(await kubectl([...args, '-o', 'json'])) as T;
}

/** kubectl apply/create of plain objects (JSON is YAML). */
export async function apply(obj: unknown, verb: 'apply' | 'create' = 'apply', extra: string[] = []): Promise<string> {
  const args =
    verb === 'apply'
      ? ['apply', '--server-side', '--force-conflicts', '-f', '-', ...extra]
      : ['create', '-f', '-', ...extra];
  return kubectl(args, JSON.stringify(obj));
}

/**
 * src/testing/wait.ts's until with the e2e defaults: a minute, checked every 300 ms (a check is a kubectl call or
 * an API request). Returns what `check` returned.
 */
export const eventually = <T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  { timeoutMs = 60_000, intervalMs = 300 }: WaitOptions = {},
): Promise<T> => until(what, check, { timeoutMs, intervalMs });

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

export async function createNamespace(prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, 'create');
  await eventually(`default service account in ${name}`, async () => {
    await kubectl(['get', 'serviceaccount', 'default', '-n', name]);
    return true;
  });
  return name;
}

export async function deleteNamespace(name: string): Promise<void> {
  await kubectl(['delete', 'namespace', name, '--wait=false', '--ignore-not-found']);
}

interface NodeJson {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { taints?: { key: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

export function nodeReady(n: NodeJson): boolean {
  return (
    (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True') &&
    !(n.spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/'))
  );
}

/**
 * Fake nodes of this test alone: all carry label `e2e-group=<group>`, so a DaemonSet with that
 * nodeSelector lands only on them. Names sort in creation order (`<group>-0`, `-1`, ...).
 */
export async function createTestNodes(
  group: string,
  count: number,
  labels: (i: number) => Record<string, string> = () => ({}),
): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${group}-${i}`);
  const items = names.map((n, i) => fakeNode(n, { 'e2e-group': group, ...labels(i) }));
  await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  await waitNodesReady(names);
  return names;
}

export async function waitNodesReady(names: string[]): Promise<void> {
  await eventually(`nodes ${names.join(',')} Ready and untainted`, async () => {
    const list = await kubectlJson<{ items: NodeJson[] }>(['get', 'nodes', ...names]);
    return list.items.length === names.length && list.items.every(nodeReady);
  });
}

export async function deleteNodes(names: string[]): Promise<void> {
  if (names.length > 0) await kubectl(['delete', 'node', ...names, '--ignore-not-found', '--wait=false']);
}

export interface PodJson {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
    deletionTimestamp?: string;
    deletionGracePeriodSeconds?: number;
    finalizers?: string[];
    creationTimestamp?: string;
  };
  spec: {
    nodeName?: string;
    containers: { name: string; image: string }[];
    readinessGates?: { conditionType: string }[];
  };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string; lastTransitionTime?: string }[];
    containerStatuses?: { name: string; image: string; imageID: string; restartCount: number; ready: boolean }[];
  };
}

export function podReady(p: PodJson): boolean {
  return (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

export async function listPods(namespace: string, selector?: string): Promise<PodJson[]> {
  const args = ['get', 'pods', '-n', namespace];
  if (selector) args.push('-l', selector);
  return (await kubectlJson<{ items: PodJson[] }>(args)).items;
}

/**
 * `kubectl patch pod NAME -n NAMESPACE --type=TYPE -p PATCH [extra]`; a `patch` that is not a string is sent as JSON.
 * `extra` carries flags such as --subresource=status or --dry-run=server.
 */
export async function patchPod(
  namespace: string,
  name: string,
  type: 'strategic' | 'merge' | 'json',
  patch: unknown,
  extra: string[] = [],
): Promise<string> {
  const body = typeof patch === 'string' ? patch : JSON.stringify(patch);
  return kubectl(['patch', 'pod', name, '-n', namespace, ...extra, `--type=${type}`, '-p', body]);
}

// ------------------------------------------------------------------------------------------------
// Per-describe isolation

export interface Fixture {
  ns: string;
  group: string;
  /** `<group>-0`, `<group>-1`, ...: names sort in index order (fewer than 10 nodes). */
  nodes: string[];
  /** Nodes added later by the test, deleted with the others. */
  extra: string[];
}

/** Registers before/after hooks in the current describe: a namespace and `count` fake nodes of its own. */
export function fixture(prefix: string, count: number, labels?: (i: number) => Record<string, string>): Fixture {
  const f: Fixture = { ns: '', group: '', nodes: [], extra: [] };
  before(async () => {
    f.ns = await createNamespace(`e2e-${prefix}`);
    f.group = uniqueName(prefix);
    f.nodes = await createTestNodes(f.group, count, labels);
  });
  after(async () => {
    await deleteNamespace(f.ns);
    await deleteNodes([...f.nodes, ...f.extra]);
  });
  return f;
}
