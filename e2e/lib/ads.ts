// Helpers for e2e tests of the Advanced DaemonSet controller: manifests, status and pod queries,
// revisions, events, a streaming pod watcher that checks invariants at every change, and
// control of extra manager processes (leader election).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe } from 'node:test';
import { zeroCounters } from '../../src/daemonset/status.ts';
import type { StatusCounters } from '../../src/daemonset/plan-types.ts';
import { binaries, repoRoot } from '../cluster/binaries.ts';
import { clusterDown, clusterUp, fakeNode } from '../cluster/cluster.ts';
import { installCrd } from '../cluster/crd.ts';
import { startConversionWebhook, type ConversionWebhook } from './conversion.ts';
import { auditApiserverArgs } from './audit.ts';
import { eventually, kubeconfig, kubectl, kubectlJson, listPods, nodeReady, podReady, type PodJson } from './kube.ts';
import { sleep } from '../../src/testing/wait.ts';

/**
 * kubectl resource name of our DaemonSets in v1alpha1, the version these tests write and read (the bare name
 * `daemonset` means apps/v1; `daemonsets.apps.kruise.io` alone means the preferred version, v1beta1).
 */
export const ADS = 'daemonsets.v1alpha1.apps.kruise.io';
/** The same DaemonSets in v1beta1 (the storage version). */
export const ADS_V1BETA1 = 'daemonsets.v1beta1.apps.kruise.io';
export const HASH_LABEL = 'controller-revision-hash';
export const KRUISE_POD_READY = 'KruisePodReady';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  /** Progressing, with progressDeadlineSeconds: the last progress (as a Deployment condition). */
  lastUpdateTime?: string;
}

export interface AdsStatus {
  desiredNumberScheduled?: number;
  currentNumberScheduled?: number;
  numberMisscheduled?: number;
  numberReady?: number;
  numberAvailable?: number;
  numberUnavailable?: number;
  updatedNumberScheduled?: number;
  observedGeneration?: number;
  daemonSetHash?: string;
  collisionCount?: number;
  conditions?: Condition[];
}

export interface AdsJson {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: Record<string, unknown> & { template: { spec: Record<string, unknown> } };
  status?: AdsStatus;
}

export interface AdsOptions {
  name: string;
  namespace: string;
  /** e2e-group of this test's nodes: always part of the nodeSelector (isolation). */
  group: string;
  image?: string;
  /** Extra nodeSelector terms on top of e2e-group. */
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  updateStrategy?: unknown;
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
}

/** `kubectl ads ARGS` (bin/kubectl-ads) against the suite's cluster: its stdout, trimmed; a non-zero exit throws. */
export async function kubectlAds(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(join(repoRoot, 'bin', 'kubectl-ads'), args, {
    env: { ...process.env, KUBECONFIG: kubeconfig() },
  });
  return stdout.trim();
}

/** An apps.kruise.io/v1alpha1 DaemonSet selecting `app: <name>`, confined to the test's nodes. */
export function adsManifest(o: AdsOptions): Record<string, unknown> {
  const spec: Record<string, unknown> = {
    selector: { matchLabels: { app: o.name } },
    template: {
      metadata: { labels: { app: o.name } },
      spec: {
        nodeSelector: { 'e2e-group': o.group, ...o.nodeSelector },
        ...(o.tolerations ? { tolerations: o.tolerations } : {}),
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'c', image: o.image ?? 'busybox:1.36' }],
      },
    },
  };
  if (o.updateStrategy !== undefined) spec.updateStrategy = o.updateStrategy;
  if (o.minReadySeconds !== undefined) spec.minReadySeconds = o.minReadySeconds;
  if (o.revisionHistoryLimit !== undefined) spec.revisionHistoryLimit = o.revisionHistoryLimit;
  return {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: { name: o.name, namespace: o.namespace },
    spec,
  };
}

/** The DaemonSet as kubectl shows it, in v1alpha1 unless `resource` names another version (ADS_V1BETA1). */
export function getAds(namespace: string, name: string, resource = ADS): Promise<AdsJson> {
  return kubectlJson<AdsJson>(['get', resource, name, '-n', namespace]);
}

/** JSON merge patch of the DaemonSet (e.g. a template change), sent in v1alpha1 unless `resource` says otherwise. */
export async function patchAds(namespace: string, name: string, patch: unknown, resource = ADS): Promise<void> {
  await kubectl(['patch', resource, name, '-n', namespace, '--type=merge', '-p', JSON.stringify(patch)]);
}

/** Merge patch changing the image of the template's only container `c`. */
export function imagePatch(image: string): unknown {
  return { spec: { template: { spec: { containers: [{ name: 'c', image }] } } } };
}

export function condition(ds: AdsJson, type: string): Condition | undefined {
  return ds.status?.conditions?.find((c) => c.type === type);
}

/** Since when (ms, apiserver clock) `pod` is Ready: its Ready condition's lastTransitionTime. */
export function readySince(pod: PodJson): number | undefined {
  const at = pod.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True')?.lastTransitionTime;
  return at === undefined ? undefined : Date.parse(at);
}

/** When (ms, apiserver clock) `pod` was deleted: its deletionTimestamp less the grace period it was given. */
export function deletedAt(pod: PodJson): number | undefined {
  const at = pod.metadata.deletionTimestamp;
  return at === undefined ? undefined : Date.parse(at) - (pod.metadata.deletionGracePeriodSeconds ?? 0) * 1000;
}

export function hashOf(p: PodJson): string | undefined {
  return p.metadata.labels?.[HASH_LABEL];
}

export function terminating(p: PodJson): boolean {
  return p.metadata.deletionTimestamp !== undefined;
}

/** Pods of DaemonSet `name` (label app=<name>), terminating ones included. */
export function adsPods(namespace: string, name: string): Promise<PodJson[]> {
  return listPods(namespace, `app=${name}`);
}

/** Non-terminating pods per node (every node of `nodes` present). */
export function liveByNode(pods: PodJson[], nodes: string[]): Map<string, PodJson[]> {
  const m = new Map<string, PodJson[]>(nodes.map((n) => [n, []]));
  for (const p of pods) if (!terminating(p) && p.spec.nodeName) m.get(p.spec.nodeName)?.push(p);
  return m;
}

/** Pods grouped by spec.nodeName ('' for unscheduled). */
export function byNode(pods: PodJson[]): Map<string, PodJson[]> {
  const m = new Map<string, PodJson[]>();
  for (const p of pods) {
    const n = p.spec.nodeName ?? '';
    m.set(n, [...(m.get(n) ?? []), p]);
  }
  return m;
}

export function describePods(pods: PodJson[]): string {
  return JSON.stringify(
    pods.map((p) => ({
      name: p.metadata.name,
      node: p.spec.nodeName,
      hash: hashOf(p),
      ready: podReady(p),
      phase: p.status?.phase,
      terminating: terminating(p),
    })),
  );
}

/**
 * Waits until exactly `nodes` each run one Ready, non-terminating pod of the DaemonSet (with
 * `hash` when given), no other pod of it exists (no terminating leftovers, none elsewhere), and
 * returns the pods keyed by node.
 */
export async function waitOnePodPerNode(
  namespace: string,
  name: string,
  nodes: string[],
  { hash, timeoutMs = 90_000 }: { hash?: string; timeoutMs?: number } = {},
): Promise<Map<string, PodJson>> {
  let seen: PodJson[] = [];
  try {
    return await eventually(
      `one Ready pod of ${name}${hash ? ` with hash ${hash}` : ''} on exactly nodes ${nodes.join(',')}`,
      async () => {
        const pods = (seen = await adsPods(namespace, name));
        if (pods.length !== nodes.length) return false;
        const m = new Map<string, PodJson>();
        for (const p of pods) {
          if (terminating(p) || !podReady(p)) return false;
          if (hash !== undefined && hashOf(p) !== hash) return false;
          const n = p.spec.nodeName ?? '';
          if (!nodes.includes(n) || m.has(n)) return false;
          m.set(n, p);
        }
        return m;
      },
      { timeoutMs },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  pods: ${describePods(seen)}`, { cause: err });
  }
}

/**
 * Waits until the controller reports the current generation rolled out: observedGeneration ==
 * generation, condition RolloutComplete True, updated == available == desired == `desired`.
 */
export async function waitRolledOut(
  namespace: string,
  name: string,
  desired: number,
  timeoutMs = 90_000,
  resource = ADS,
): Promise<AdsJson> {
  let last: AdsJson | undefined;
  try {
    return await eventually(
      `${name} rolled out on ${desired} nodes (observedGeneration current, RolloutComplete True)`,
      async () => {
        const ds = (last = await getAds(namespace, name, resource));
        const s = ds.status ?? {};
        return (
          s.observedGeneration === ds.metadata.generation &&
          condition(ds, 'RolloutComplete')?.status === 'True' &&
          s.desiredNumberScheduled === desired &&
          s.updatedNumberScheduled === desired &&
          s.numberAvailable === desired &&
          ds
        );
      },
      { timeoutMs },
    );
  } catch (err) {
    const seen = last && { generation: last.metadata.generation, status: last.status };
    throw new Error(`${(err as Error).message}\n  last DaemonSet: ${JSON.stringify(seen)}`, { cause: err });
  }
}

export interface ControllerRevisionJson {
  metadata: {
    name: string;
    uid: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  };
  revision: number;
}

/** ControllerRevisions of DaemonSet `name` (label app=<name>), sorted by revision. */
export async function listRevisions(namespace: string, name: string): Promise<ControllerRevisionJson[]> {
  const list = await kubectlJson<{ items: ControllerRevisionJson[] }>([
    'get',
    'controllerrevisions',
    '-n',
    namespace,
    '-l',
    `app=${name}`,
  ]);
  return list.items.sort((a, b) => a.revision - b.revision);
}

export interface EventJson {
  reason: string;
  message: string;
  type: string;
  count?: number;
  involvedObject: { kind?: string; name?: string; uid?: string };
  source?: { component?: string };
}

/** core/v1 Events whose involvedObject is the object `name` (and `uid` when given). */
export async function eventsFor(namespace: string, name: string, uid?: string): Promise<EventJson[]> {
  const list = await kubectlJson<{ items: EventJson[] }>([
    'get',
    'events',
    '-n',
    namespace,
    '--field-selector',
    `involvedObject.name=${name}`,
  ]);
  return list.items.filter((e) => uid === undefined || e.involvedObject.uid === uid);
}

/**
 * One more fake node in an existing e2e group (named `name`, labelled `e2e-group=<group>`), waited
 * Ready and untainted. (createTestNodes with count 1 cannot be used: `kubectl get nodes X -o json`
 * of a single name returns the Node, not a List, so its readiness wait never succeeds.)
 */
export async function addNodeToGroup(
  group: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<string> {
  await kubectl(['create', '-f', '-'], JSON.stringify(fakeNode(name, { 'e2e-group': group, ...labels })));
  await eventually(`node ${name} Ready and untainted`, async () =>
    nodeReady(await kubectlJson<Parameters<typeof nodeReady>[0]>(['get', 'node', name])),
  );
  return name;
}

export async function labelNode(node: string, labels: Record<string, string | null>): Promise<void> {
  const args = Object.entries(labels).map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`));
  await kubectl(['label', 'node', node, '--overwrite', ...args]);
}

// ------------------------------------------------------------------------------------------------
// Streaming pod watch

/** Splits a stream of concatenated (pretty-printed) JSON values into values. */
export class JsonStreamSplitter {
  private buf = '';
  private depth = 0;
  private inString = false;
  private escaped = false;
  private start = -1;
  private scanned = 0;

  push(chunk: string): unknown[] {
    this.buf += chunk;
    const out: unknown[] = [];
    for (let i = this.scanned; i < this.buf.length; i++) {
      const ch = this.buf[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (ch === '\\') this.escaped = true;
        else if (ch === '"') this.inString = false;
        continue;
      }
      if (ch === '"') this.inString = true;
      else if (ch === '{' || ch === '[') {
        if (this.depth === 0) this.start = i;
        this.depth++;
      } else if (ch === '}' || ch === ']') {
        this.depth--;
        if (this.depth === 0) {
          out.push(JSON.parse(this.buf.slice(this.start, i + 1)));
          this.buf = this.buf.slice(i + 1);
          i = -1;
          this.start = -1;
        }
      }
    }
    this.scanned = this.buf.length;
    return out;
  }
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | string;
  pod: PodJson;
  /** Local time the event arrived. */
  at: number;
}

/**
 * `kubectl get pods -w --output-watch-events -o json` for one label selector, kept as a live map
 * of pods (by UID). `onEvent` runs after each event is applied, so invariants are checked at every
 * state the apiserver went through, not at poll instants.
 */
export class PodWatch {
  readonly pods = new Map<string, PodJson>();
  readonly events: WatchEvent[] = [];
  private child: ChildProcess;
  private exited: string | undefined;
  private stopping = false;
  private stderr = '';
  /** onEvent runs only once every pod that existed at start was seen (a partial initial list is no state). */
  private primed = false;

  private constructor(
    namespace: string,
    selector: string,
    private readonly onEvent: (w: PodWatch, ev: WatchEvent) => void,
  ) {
    this.child = spawn(
      binaries().kubectl,
      [
        '--kubeconfig',
        kubeconfig(),
        'get',
        'pods',
        '-n',
        namespace,
        '-l',
        selector,
        '--watch',
        '--output-watch-events',
        '-o',
        'json',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const splitter = new JsonStreamSplitter();
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      for (const v of splitter.push(chunk)) this.apply(v as { type: string; object: PodJson });
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (c: string) => (this.stderr += c));
    this.child.on('exit', (code, signal) => {
      if (!this.stopping) this.exited = `kubectl watch exited (code ${code}, signal ${signal}): ${this.stderr}`;
    });
  }

  /**
   * Starts watching and waits until every pod that exists now has been seen; `onEvent` runs for
   * the events after that (call your check once yourself for the primed state).
   */
  static async start(
    namespace: string,
    selector: string,
    onEvent: (w: PodWatch, ev: WatchEvent) => void = () => {},
  ): Promise<PodWatch> {
    const existing = await listPods(namespace, selector);
    const w = new PodWatch(namespace, selector, onEvent);
    await eventually(`pod watch on ${selector} to list the ${existing.length} existing pods`, async () => {
      w.assertAlive();
      return existing.every((p) => w.pods.has(p.metadata.uid));
    });
    w.primed = true;
    return w;
  }

  private apply(ev: { type: string; object: PodJson }): void {
    const pod = ev.object;
    if (ev.type === 'DELETED') this.pods.delete(pod.metadata.uid);
    else this.pods.set(pod.metadata.uid, pod);
    const e: WatchEvent = { type: ev.type, pod, at: Date.now() };
    this.events.push(e);
    if (this.primed) this.onEvent(this, e);
  }

  assertAlive(): void {
    if (this.exited) throw new Error(this.exited);
  }

  list(): PodJson[] {
    return [...this.pods.values()];
  }

  stop(): void {
    this.stopping = true;
    this.child.kill('SIGTERM');
  }
}

// ------------------------------------------------------------------------------------------------
// Extra controller/manager processes (leader election)

export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  logFile: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface PrivateCluster {
  /** A directory of this describe's own (cluster, process logs). */
  dir: string;
  /** The cluster's own directory (state, PKI: for stopApiserver, startApiserver, clientKubeconfig). */
  clusterDir: string;
  /** The cluster's kubeconfig, once `before` ran. */
  kubeconfig: string;
  /** With `audit: true`: the apiserver's audit log of writes (e2e/lib/audit.ts). */
  auditLog?: string;
}

/**
 * `describe` on a control plane of its own (no nodes; our CRD installed unless `crd: false`, with its conversion
 * webhook served from the test process: e2e/lib/conversion.ts), with every helper of the test file pointed at it
 * (node:test runs each file in its own process). For tests that run their own controller: on the shared cluster the
 * harness's manager would act on the same objects. The cluster comes up before the hooks `fn` registers and goes
 * down after all of them; `cluster.dir` (logs of the processes the tests start) is kept only when a test failed.
 */
export function describeOnPrivateCluster(
  name: string,
  options: { timeout?: number; crd?: boolean; audit?: boolean },
  fn: (cluster: PrivateCluster) => void,
): void {
  const { crd = true, audit = false, ...describeOptions } = options;
  describe(name, describeOptions, () => {
    const top = mkdtempSync(join(tmpdir(), 'ads-e2e-private-'));
    const dir = join(top, 'cluster');
    const pc: PrivateCluster = { dir: top, clusterDir: dir, kubeconfig: '' };
    let failed = false;
    let conversion: ConversionWebhook | undefined;
    before(async () => {
      const a = audit ? auditApiserverArgs(pc.dir) : undefined;
      pc.auditLog = a?.log;
      pc.kubeconfig = (await clusterUp({ dir, nodes: 0, progress: () => {}, apiserverArgs: a?.args })).kubeconfig;
      process.env.KUBECONFIG = pc.kubeconfig;
      if (!crd) return;
      await installCrd(pc.kubeconfig);
      conversion = await startConversionWebhook(pc.kubeconfig, pc.dir);
    });
    afterEach((t) => {
      if ('passed' in t && !t.passed) failed = true;
    });
    fn(pc);
    after(async () => {
      await conversion?.stop();
      await clusterDown({ dir, progress: () => {}, keepDir: failed });
      if (failed) process.stderr.write(`${name}: failed; logs kept in ${pc.dir}\n`);
      else rmSync(pc.dir, { recursive: true, force: true });
    });
  });
}

/**
 * `controller` arguments of the e2e suites: leader election on the Lease `leaseId` in default, ephemeral health and
 * metrics ports, debug logs; with `leaseDurationS`, a short lease (renew deadline 4 s, retry period 1 s: the
 * defaults' ratios) so that a takeover is quick.
 */
export function controllerArgs(kubeconfig: string, leaseId: string, leaseDurationS?: number): string[] {
  return [
    'controller',
    ...['--kubeconfig', kubeconfig, '--leader-election-namespace', 'default', '--leader-election-id', leaseId],
    ...(leaseDurationS === undefined
      ? []
      : ['--lease-duration', `${leaseDurationS}s`, '--renew-deadline', '4s', '--retry-period', '1s']),
    ...['--health-port', '0', '--metrics-port', '0', '--log-level', 'debug'],
  ];
}

/** Starts `bin/advanced-daemonset <args>` with stdout and stderr to `logFile`. */
export function startProductProcess(name: string, args: string[], logFile: string): ManagedProcess {
  const fd = openSync(logFile, 'w');
  const child = spawn(`${repoRoot}/bin/advanced-daemonset`, args, {
    cwd: repoRoot,
    stdio: ['ignore', fd, fd],
    env: { ...process.env },
  });
  closeSync(fd);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { name, child, logFile, exit };
}

export { readLogLines, type LogLine } from './log.ts';

export { sleep };

// ------------------------------------------------------------------------------------------------
// Status counters, counted independently

/**
 * The status counters. Only the type and the zeroed record come from src/daemonset/status.ts: the counting is done
 * here independently of the controller, so a wrong count there cannot agree with itself.
 */
export type Counters = StatusCounters;

export const COUNTER_NAMES = [
  'desiredNumberScheduled',
  'currentNumberScheduled',
  'numberMisscheduled',
  'numberReady',
  'numberAvailable',
  'numberUnavailable',
  'updatedNumberScheduled',
] as const;

/**
 * The counters as the spec defines them, from the pods (minReadySeconds 0, one pod per node):
 * desired = eligible nodes; current = eligible nodes with a pod; misscheduled = other nodes with
 * a pod; ready/available = eligible nodes whose pod is Ready; updated = eligible nodes whose pod
 * carries `hash`.
 */
export function countFromPods(pods: PodJson[], eligible: string[], hash: string | undefined): Counters {
  const nodes = byNode(pods);
  const c: Counters = { ...zeroCounters(), desiredNumberScheduled: eligible.length };
  for (const [node, ps] of nodes) {
    if (!eligible.includes(node)) {
      c.numberMisscheduled++;
      continue;
    }
    c.currentNumberScheduled++;
    const p = ps[0]!;
    if (podReady(p)) {
      c.numberReady++;
      c.numberAvailable++;
    }
    if (hash !== undefined && hashOf(p) === hash) c.updatedNumberScheduled++;
  }
  c.numberUnavailable = c.desiredNumberScheduled - c.numberAvailable;
  return c;
}

/** `kubectl get ads NAME` as a header -> cell map (DESIRED, CURRENT, READY, UP-TO-DATE, AVAILABLE...). */
export async function printedColumns(namespace: string, name: string): Promise<Record<string, string>> {
  const out = (await kubectl(['get', ADS, name, '-n', namespace])).trim().split('\n');
  const header = out[0]!.trim().split(/\s+/);
  const row = out[1]!.trim().split(/\s+/);
  return Object.fromEntries(header.map((h, i) => [h, row[i] ?? '']));
}

/**
 * Waits until three views agree: the status the controller wrote, the columns `kubectl get ads`
 * prints, and the counters counted here from pods and `eligible` nodes; and the counted ones
 * equal `expected`. Returns the DaemonSet.
 */
export async function waitStatusAgrees(
  namespace: string,
  name: string,
  eligible: string[],
  expected: Partial<Counters>,
  timeoutMs = 60_000,
): Promise<AdsJson> {
  let last: unknown;
  try {
    return await eventually(
      `status of ${name} = kubectl get columns = own count ${JSON.stringify(expected)}`,
      async () => {
        const ds = await getAds(namespace, name);
        const pods = await adsPods(namespace, name);
        const cols = await printedColumns(namespace, name);
        const own = countFromPods(pods, eligible, ds.status?.daemonSetHash);
        const status = Object.fromEntries(COUNTER_NAMES.map((k) => [k, ds.status?.[k] ?? 0]));
        const printed = {
          desiredNumberScheduled: Number(cols.DESIRED),
          currentNumberScheduled: Number(cols.CURRENT),
          numberReady: Number(cols.READY),
          updatedNumberScheduled: Number(cols['UP-TO-DATE']),
          numberAvailable: Number(cols.AVAILABLE),
        };
        last = {
          own,
          status,
          printed,
          observedGeneration: ds.status?.observedGeneration,
          generation: ds.metadata.generation,
        };
        const agree =
          ds.status?.observedGeneration === ds.metadata.generation &&
          COUNTER_NAMES.every((k) => status[k] === own[k]) &&
          Object.entries(printed).every(([k, v]) => v === own[k as keyof Counters]) &&
          Object.entries(expected).every(([k, v]) => own[k as keyof Counters] === v);
        return agree && ds;
      },
      { timeoutMs },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  last views: ${JSON.stringify(last)}`, { cause: err });
  }
}
