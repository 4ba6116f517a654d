// A continuous sampler of a DaemonSet's safety invariants, for the fault-injection e2e tests: it watches the
// DaemonSet's pods and the nodes it should run on for the whole test (a watch, not polling: every state the
// apiserver went through is checked, not the states a poll happened to see) and checks at every event:
//   - unavailable nodes <= maxUnavailable,
//   - daemon pods per node <= 1 (2 with maxSurge),
//   - no pod held by a preDelete hook is deleted while the hook label is present.
// The watch survives kube-apiserver restarts: it resumes from the last resourceVersion it saw (bookmarks
// included); only when the apiserver answers 410 Gone (its watch cache, rebuilt on start, no longer holds that
// version) does it list again, and that gap (states between its last event and the new list are not seen) is
// counted and reported, never hidden.
import { request, type RequestOptions } from 'node:https';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { kubeconfig as defaultKubeconfig, type PodJson } from './kube.ts';
import { sleep } from '../../src/testing/wait.ts';

// ------------------------------------------------------------------------------------------------
// A resumable watch over HTTPS

interface ApiTarget {
  server: URL;
  tls: Pick<RequestOptions, 'ca' | 'cert' | 'key'>;
}

function apiTarget(kubeconfigPath: string): ApiTarget {
  const kc = parseYaml(readFileSync(kubeconfigPath, 'utf8')) as {
    clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
    users: { user: { 'client-certificate-data': string; 'client-key-data': string } }[];
  };
  const b64 = (s: string) => Buffer.from(s, 'base64');
  const cluster = kc.clusters[0]!.cluster;
  const user = kc.users[0]!.user;
  return {
    server: new URL(cluster.server),
    tls: {
      ca: b64(cluster['certificate-authority-data']),
      cert: b64(user['client-certificate-data']),
      key: b64(user['client-key-data']),
    },
  };
}

interface KubeObject {
  metadata: { name: string; uid: string; resourceVersion?: string };
}

interface WatchHandlers<T> {
  /** The full state (first list, and every list after a 410). */
  onList(items: T[]): void;
  onEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T): void;
}

class GoneError extends Error {}

/** list + watch of one collection, resumed from the last resourceVersion across disconnects and apiserver restarts. */
class ResumableWatch<T extends KubeObject> {
  private rv = '';
  private stopped = false;
  private current: { destroy(): void } | undefined;
  /** Lists after the first, each a window whose states were not seen: [watch lost, list]. */
  readonly gaps: { from: number; to: number }[] = [];
  reconnects = 0;
  /** When the last open watch ended (every event before was delivered); undefined while one is open. */
  private lostAt: number | undefined;
  private listed!: Promise<void>;

  constructor(
    private readonly target: ApiTarget,
    private readonly path: string,
    private readonly labelSelector: string,
    private readonly handlers: WatchHandlers<T>,
  ) {}

  /** Resolves after the first list was delivered. */
  start(): Promise<void> {
    this.listed = this.list();
    void this.listed.then(() => this.loop());
    return this.listed;
  }

  stop(): void {
    this.stopped = true;
    this.current?.destroy();
  }

  private url(params: Record<string, string>): URL {
    const u = new URL(this.path, this.target.server);
    if (this.labelSelector) u.searchParams.set('labelSelector', this.labelSelector);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return u;
  }

  private async list(): Promise<void> {
    for (;;) {
      try {
        const body = await new Promise<string>((resolve, reject) => {
          const req = request(this.url({}), { ...this.target.tls, timeout: 10_000 }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (text += c));
            res.on('end', () =>
              res.statusCode === 200 ? resolve(text) : reject(new Error(`list ${this.path}: ${res.statusCode}`)),
            );
            res.on('error', reject);
          });
          req.on('error', reject);
          req.on('timeout', () => req.destroy(new Error('list timed out')));
          req.end();
        });
        const list = JSON.parse(body) as { metadata: { resourceVersion: string }; items: T[] };
        this.rv = list.metadata.resourceVersion;
        this.handlers.onList(list.items);
        return;
      } catch (err) {
        if (this.stopped) return;
        void err;
        await sleep(100);
      }
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.watchOnce();
      } catch (err) {
        if (this.stopped) return;
        this.lostAt ??= Date.now();
        if (err instanceof GoneError) {
          const from = this.lostAt;
          await this.list();
          this.gaps.push({ from, to: Date.now() });
          continue;
        }
        await sleep(100);
      }
      this.lostAt ??= Date.now();
      this.reconnects++;
    }
  }

  private watchOnce(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const url = this.url({
        watch: '1',
        allowWatchBookmarks: 'true',
        resourceVersion: this.rv,
        timeoutSeconds: '300',
      });
      const req = request(url, { ...this.target.tls }, (res) => {
        if (res.statusCode === 410) {
          res.resume();
          reject(new GoneError('410'));
          return;
        }
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`watch ${this.path}: ${res.statusCode}`));
          return;
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            const ev = JSON.parse(line) as { type: string; object: T & { code?: number } };
            if (ev.type === 'ERROR') {
              req.destroy();
              reject(ev.object.code === 410 ? new GoneError('410') : new Error(`watch error ${JSON.stringify(ev)}`));
              return;
            }
            // Resumed: the first event (or bookmark) after a reconnect; a 410 comes as an ERROR event instead.
            this.lostAt = undefined;
            if (ev.object.metadata?.resourceVersion) this.rv = ev.object.metadata.resourceVersion;
            if (ev.type === 'BOOKMARK') continue;
            this.handlers.onEvent(ev.type as 'ADDED' | 'MODIFIED' | 'DELETED', ev.object);
          }
        });
        res.on('end', () => resolve());
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('watch aborted')));
      });
      req.on('error', reject);
      req.end();
      this.current = req;
    });
  }
}

// ------------------------------------------------------------------------------------------------
// The sampler

export interface NodeJson extends KubeObject {
  metadata: KubeObject['metadata'] & { labels?: Record<string, string> };
  status?: { conditions?: { type: string; status: string }[] };
}

interface DaemonSetJson extends KubeObject {
  status?: { observedGeneration?: number; conditions?: { type: string; lastTransitionTime?: string }[] };
}

export interface SamplerOptions {
  namespace: string;
  /** The DaemonSet; its pods carry `app=<name>` (adsManifest). */
  name: string;
  /** Label selector of the nodes the DaemonSet should run on (e.g. `e2e-group=<group>`). */
  nodeSelector: string;
  /** The DaemonSet's maxUnavailable, resolved to a number of nodes (percentages round up, as upstream). */
  maxUnavailable: number;
  /** Daemon pods (not yet deleted) a node may hold: 1, or 2 with maxSurge. */
  maxPodsPerNode: number;
  minReadySeconds?: number;
  /** lifecycle.preDelete.labelsHandler: a pod in PreparingDelete carrying these labels is held. */
  preDeleteHook?: Record<string, string>;
  kubeconfig?: string;
}

export interface Violation {
  at: string;
  kind: 'unavailable' | 'pods-per-node' | 'pre-delete' | 'status-backwards';
  node?: string;
  detail: string;
}

export interface SamplerFigures {
  samples: number;
  maxUnavailableSeen: number;
  maxUnavailable: number;
  maxPodsPerNodeSeen: number;
  maxPodsPerNode: number;
  /** Terminating pods included (reported, not limited: upstream does not count them, see below). */
  maxPodsPerNodeWithTerminatingSeen: number;
  preDeleteHeldSeen: number;
  /** DaemonSet status versions seen (each checked: observedGeneration and conditions never go back). */
  statusSamples: number;
  violations: Violation[];
  /** Re-lists after 410 Gone: windows whose states were not seen. */
  gaps: number;
  gapMs: number;
  reconnects: number;
  /** Nodes of the selector seen NotReady (a fault of the fake-node harness, not of the controller). */
  nodesNotReady: string[];
}

export const LIFECYCLE_STATE_LABEL = 'lifecycle.apps.kruise.io/state';
export const PREPARING_DELETE = 'PreparingDelete';

/** The node a daemon pod is for: spec.nodeName, or before binding the node affinity's metadata.name term. */
export function targetNode(p: PodJson): string | undefined {
  if (p.spec.nodeName) return p.spec.nodeName;
  const spec = p.spec as PodJson['spec'] & {
    affinity?: {
      nodeAffinity?: {
        requiredDuringSchedulingIgnoredDuringExecution?: {
          nodeSelectorTerms?: { matchFields?: { key: string; values?: string[] }[] }[];
        };
      };
    };
  };
  for (const term of spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ??
    []) {
    const f = term.matchFields?.find((m) => m.key === 'metadata.name');
    if (f?.values?.[0]) return f.values[0];
  }
  return undefined;
}

/**
 * Available as upstream's podutil.IsPodAvailable: Ready, and Ready for at least minReadySeconds
 * (https://github.com/kubernetes/kubernetes/blob/master/pkg/api/v1/pod/util.go). A pod being deleted is not
 * counted: upstream's rollingUpdate skips pods with a deletionTimestamp (findUpdatedPodsOnNode), so a node whose
 * only pod is terminating counts as unavailable.
 */
export function podAvailable(p: PodJson, minReadySeconds: number, now: number): boolean {
  if (p.metadata.deletionTimestamp) return false;
  const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True') return false;
  if (minReadySeconds <= 0) return true;
  const since = ready.lastTransitionTime ? Date.parse(ready.lastTransitionTime) : NaN;
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= now;
}

export class Sampler {
  private readonly pods = new Map<string, PodJson>();
  private readonly nodes = new Map<string, NodeJson>();
  private readonly podWatch: ResumableWatch<PodJson & KubeObject>;
  private readonly nodeWatch: ResumableWatch<NodeJson>;
  private readonly dsWatch: ResumableWatch<DaemonSetJson>;
  /** The newest status seen: observedGeneration and each condition's lastTransitionTime. */
  private lastStatus: { observedGeneration: number; transitions: Map<string, number> } | undefined;
  private armed = false;
  private primed = false;
  private readonly listeners: ((type: string, pod: PodJson) => void)[] = [];
  private readonly open = new Set<string>();
  private readonly notReady = new Set<string>();
  private readonly heldUids = new Set<string>();
  private batch = false;
  readonly figures: SamplerFigures;

  private constructor(private readonly o: SamplerOptions) {
    const target = apiTarget(o.kubeconfig ?? defaultKubeconfig());
    this.figures = {
      samples: 0,
      maxUnavailableSeen: 0,
      maxUnavailable: o.maxUnavailable,
      maxPodsPerNodeSeen: 0,
      maxPodsPerNode: o.maxPodsPerNode,
      maxPodsPerNodeWithTerminatingSeen: 0,
      preDeleteHeldSeen: 0,
      statusSamples: 0,
      violations: [],
      gaps: 0,
      gapMs: 0,
      reconnects: 0,
      nodesNotReady: [],
    };
    this.podWatch = new ResumableWatch<PodJson & KubeObject>(
      target,
      `/api/v1/namespaces/${o.namespace}/pods`,
      `app=${o.name}`,
      {
        onList: (items) => {
          // Applied as one state (the list's), checked once. A pod deleted during a gap is checked for the hook
          // rule on its last known state as it leaves.
          this.batch = true;
          const seen = new Set(items.map((p) => p.metadata.uid));
          for (const [uid, p] of this.pods) if (!seen.has(uid)) this.onPod('DELETED', p);
          for (const p of items) this.onPod('MODIFIED', p);
          this.batch = false;
          this.check();
        },
        onEvent: (type, p) => this.onPod(type, p),
      },
    );
    this.nodeWatch = new ResumableWatch<NodeJson>(target, '/api/v1/nodes', o.nodeSelector, {
      onList: (items) => {
        this.nodes.clear();
        for (const n of items) this.nodes.set(n.metadata.name, n);
        this.check();
      },
      onEvent: (type, n) => {
        if (type === 'DELETED') this.nodes.delete(n.metadata.name);
        else this.nodes.set(n.metadata.name, n);
        this.check();
      },
    });
    this.dsWatch = new ResumableWatch<DaemonSetJson>(
      target,
      `/apis/apps.kruise.io/v1alpha1/namespaces/${o.namespace}/daemonsets`,
      '',
      {
        onList: (items) => items.forEach((ds) => this.onDaemonSet(ds)),
        onEvent: (type, ds) => type !== 'DELETED' && this.onDaemonSet(ds),
      },
    );
  }

  /** Starts the watches and waits until each has listed; the hook and status rules are checked from now on, the limits once armed. */
  static async start(o: SamplerOptions): Promise<Sampler> {
    const s = new Sampler(o);
    await Promise.all([s.nodeWatch.start(), s.podWatch.start(), s.dsWatch.start()]);
    s.primed = true;
    s.check();
    return s;
  }

  /** From now on, check the unavailable and pods-per-node limits (call once the DaemonSet was rolled out). */
  arm(): void {
    this.armed = true;
    this.check();
  }

  /** Called after every pod event is applied. */
  onPodEvent(listener: (type: string, pod: PodJson) => void): void {
    this.listeners.push(listener);
  }

  list(): PodJson[] {
    return [...this.pods.values()];
  }

  stop(): SamplerFigures {
    this.podWatch.stop();
    this.nodeWatch.stop();
    this.dsWatch.stop();
    return this.snapshot();
  }

  snapshot(): SamplerFigures {
    const gaps = [...this.podWatch.gaps, ...this.nodeWatch.gaps];
    return {
      ...this.figures,
      gaps: gaps.length,
      gapMs: gaps.reduce((sum, g) => sum + (g.to - g.from), 0),
      reconnects: this.podWatch.reconnects + this.nodeWatch.reconnects,
      nodesNotReady: [...this.notReady],
      violations: [...this.figures.violations],
    };
  }

  /** One line of figures, e.g. for stderr. */
  summary(): string {
    const f = this.snapshot();
    return (
      `samples=${f.samples} maxUnavailable=${f.maxUnavailableSeen}/${f.maxUnavailable} ` +
      `maxPodsPerNode=${f.maxPodsPerNodeSeen}/${f.maxPodsPerNode} (with terminating ${f.maxPodsPerNodeWithTerminatingSeen}) ` +
      `preDeleteHeld=${f.preDeleteHeldSeen} statusSamples=${f.statusSamples} violations=${f.violations.length} gaps=${f.gaps} (${f.gapMs}ms) ` +
      `reconnects=${f.reconnects} nodesNotReady=${f.nodesNotReady.length}`
    );
  }

  /**
   * The DaemonSet's status never goes back: observedGeneration never decreases and no condition's
   * lastTransitionTime moves to an earlier time (an older status written over a newer one would do either).
   */
  private onDaemonSet(ds: DaemonSetJson): void {
    if (ds.metadata.name !== this.o.name || !ds.status) return;
    this.figures.statusSamples++;
    const observedGeneration = ds.status.observedGeneration ?? 0;
    const transitions = new Map(
      (ds.status.conditions ?? []).map((c) => [c.type, Date.parse(c.lastTransitionTime ?? '') || 0] as const),
    );
    const last = this.lastStatus;
    if (last) {
      if (observedGeneration < last.observedGeneration) {
        this.violate({
          kind: 'status-backwards',
          detail: `observedGeneration ${observedGeneration} after ${last.observedGeneration} (resourceVersion ${ds.metadata.resourceVersion})`,
        });
      }
      for (const [type, at] of transitions) {
        const before = last.transitions.get(type) ?? 0;
        if (at < before) {
          this.violate({
            kind: 'status-backwards',
            detail: `condition ${type} lastTransitionTime ${new Date(at).toISOString()} after ${new Date(before).toISOString()}`,
          });
        }
      }
    }
    const merged = new Map(last?.transitions);
    for (const [type, at] of transitions) merged.set(type, Math.max(at, merged.get(type) ?? 0));
    this.lastStatus = {
      observedGeneration: Math.max(observedGeneration, last?.observedGeneration ?? 0),
      transitions: merged,
    };
  }

  private held(p: PodJson): boolean {
    const hook = this.o.preDeleteHook;
    if (!hook || p.metadata.labels?.[LIFECYCLE_STATE_LABEL] !== PREPARING_DELETE) return false;
    return Object.entries(hook).every(([k, v]) => p.metadata.labels?.[k] === v);
  }

  private violate(v: Omit<Violation, 'at'>): void {
    this.figures.violations.push({ at: new Date().toISOString(), ...v });
  }

  private onPod(type: string, p: PodJson): void {
    const uid = p.metadata.uid;
    // The hook rule, on the state the pod had when it was deleted: a deletionTimestamp set, or the object gone.
    if ((type === 'DELETED' || p.metadata.deletionTimestamp) && this.held(p) && !this.open.has(`hook/${uid}`)) {
      this.open.add(`hook/${uid}`);
      this.violate({
        kind: 'pre-delete',
        node: targetNode(p),
        detail: `pod ${p.metadata.name} deleted in ${PREPARING_DELETE} with its hook labels ${JSON.stringify(this.o.preDeleteHook)}`,
      });
    }
    if (this.held(p)) this.heldUids.add(uid);
    this.figures.preDeleteHeldSeen = this.heldUids.size;
    if (type === 'DELETED') this.pods.delete(uid);
    else this.pods.set(uid, p);
    this.check();
    for (const l of this.listeners) l(type, p);
  }

  private check(): void {
    if (!this.primed || this.batch) return;
    const now = Date.now();
    this.figures.samples++;
    const live = new Map<string, number>();
    const all = new Map<string, number>();
    const available = new Set<string>();
    for (const p of this.pods.values()) {
      const node = targetNode(p);
      if (!node) continue;
      all.set(node, (all.get(node) ?? 0) + 1);
      if (!p.metadata.deletionTimestamp) live.set(node, (live.get(node) ?? 0) + 1);
      if (podAvailable(p, this.o.minReadySeconds ?? 0, now)) available.add(node);
    }
    for (const n of this.nodes.values()) {
      const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
      if (ready !== undefined && ready !== 'True') this.notReady.add(n.metadata.name);
    }
    // Unavailable as upstream counts for maxUnavailable (pkg/controller/daemon/update.go, rollingUpdate and
    // updatedDesiredNodeCounts): a node that should run the pod and has no available pod. Every node of the
    // selector should run it here (the DaemonSet's nodeSelector is that label; daemon pods tolerate the node
    // condition taints).
    const unavailable = [...this.nodes.keys()].filter((n) => !available.has(n));
    // Pods per node as upstream's surge limit counts them: pods not being deleted (findUpdatedPodsOnNode skips
    // pods with a deletionTimestamp; a replacement may be created while the old pod terminates).
    const worst = Math.max(0, ...live.values());
    const withTerminating = Math.max(0, ...all.values());
    if (!this.armed) return;
    this.figures.maxUnavailableSeen = Math.max(this.figures.maxUnavailableSeen, unavailable.length);
    this.figures.maxPodsPerNodeSeen = Math.max(this.figures.maxPodsPerNodeSeen, worst);
    this.figures.maxPodsPerNodeWithTerminatingSeen = Math.max(
      this.figures.maxPodsPerNodeWithTerminatingSeen,
      withTerminating,
    );
    // Each violation is recorded when it starts (not at every event while it lasts).
    if (unavailable.length > this.o.maxUnavailable) {
      if (!this.open.has('unavailable')) {
        this.open.add('unavailable');
        this.violate({
          kind: 'unavailable',
          detail: `${unavailable.length} nodes unavailable > maxUnavailable ${this.o.maxUnavailable}: ${unavailable.sort().join(',')}`,
        });
      }
    } else this.open.delete('unavailable');
    for (const [node, c] of live) {
      const key = `node/${node}`;
      if (c > this.o.maxPodsPerNode) {
        if (!this.open.has(key)) {
          this.open.add(key);
          const pods = [...this.pods.values()].filter((p) => targetNode(p) === node).map((p) => p.metadata.name);
          this.violate({
            kind: 'pods-per-node',
            node,
            detail: `${c} daemon pods on ${node} > ${this.o.maxPodsPerNode}: ${pods.join(',')}`,
          });
        }
      } else this.open.delete(key);
    }
  }
}
