// Where the dashboard's data comes from: watches of the Advanced DaemonSets in scope (always), and, while a page
// looks at one of them, of the nodes and of that DaemonSet's pods, ControllerRevisions and events. Every change
// recomputes the page's view with model.ts and hands it to the subscribers, at most every `throttleMs` (a rollout
// of 1,000 nodes changes pods many times a second; the page needs a few frames a second).
import type { DaemonSet } from '../../src/api/types.ts';
import { resources, type KubeClient } from '../../src/k8s/client.ts';
import type { ControllerRevision, Node, Pod } from '../../src/k8s/types.ts';
import { daemonSetRows, daemonSetSelector, eventRows, nodeMap, type CoreEvent } from './model.ts';
import type { DetailView, ListView } from './views.ts';

export type { DetailView, ListView };
import { WatchedList } from './watch.ts';

export type Unsubscribe = () => void;

/** What the server needs; tests give it a fake. */
export interface DashboardSource {
  list(): ListView;
  subscribeList(listener: (v: ListView) => void): Unsubscribe;
  detail(namespace: string, name: string): Promise<DetailView>;
  subscribeDetail(namespace: string, name: string, listener: (v: DetailView) => void): Unsubscribe;
  close(): Promise<void>;
}

/**
 * Calls `fn` at most every `ms`: the first call at once, later ones folded into one call at the end of the interval.
 * `fn` reads the latest state when it runs, so no change is lost.
 */
export function throttle(fn: () => void, ms: number): { (): void; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let last = -Infinity;
  const fire = () => {
    timer = undefined;
    last = performance.now();
    fn();
  };
  const call = () => {
    if (timer) return;
    const wait = last + ms - performance.now();
    if (wait <= 0) fire();
    else timer = setTimeout(fire, wait);
  };
  call.cancel = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  return call;
}

/** The watches of one DaemonSet, kept while some page looks at it. */
class DetailWatch {
  readonly listeners = new Set<(v: DetailView) => void>();
  private readonly abort = new AbortController();
  /** Aborts the watches of the DaemonSet's current incarnation (uid). */
  private watchAbort?: AbortController;
  private pods?: WatchedList<Pod>;
  private revisions?: WatchedList<ControllerRevision>;
  private events?: WatchedList<CoreEvent>;
  private uid?: string;
  readonly notify: ReturnType<typeof throttle>;

  constructor(
    private readonly source: KubeSource,
    readonly namespace: string,
    readonly name: string,
    throttleMs: number,
  ) {
    this.notify = throttle(() => {
      const v = this.view();
      for (const l of this.listeners) l(v);
    }, throttleMs);
    this.refresh();
  }

  /** Starts (or restarts, for a recreated DaemonSet) the watches once the DaemonSet is known. */
  refresh(): void {
    const ds = this.source.findDaemonSet(this.namespace, this.name);
    if (ds && ds.metadata.uid !== this.uid) {
      // A new DaemonSet (or one deleted and created again): fresh watches, with its selector.
      this.watchAbort?.abort();
      this.watchAbort = new AbortController();
      this.uid = ds.metadata.uid;
      const { client, log } = this.source;
      const signal = AbortSignal.any([this.abort.signal, this.watchAbort.signal]);
      const onChange = () => this.notify();
      const namespace = this.namespace;
      const labelSelector = daemonSetSelector(ds);
      this.pods = new WatchedList<Pod>(client, resources.pods, { namespace, labelSelector, onChange, log }, signal);
      this.revisions = new WatchedList<ControllerRevision>(
        client,
        resources.controllerRevisions,
        { namespace, labelSelector, onChange, log },
        signal,
      );
      this.events = new WatchedList<CoreEvent>(
        client,
        resources.events,
        {
          namespace,
          fieldSelector: `involvedObject.kind=DaemonSet,involvedObject.name=${this.name}`,
          onChange,
          log,
        },
        signal,
      );
    }
    this.notify();
  }

  private synced(): boolean {
    return !!(this.source.nodes().synced && this.pods?.synced && this.revisions?.synced && this.events?.synced);
  }

  view(): DetailView {
    const ds = this.source.findDaemonSet(this.namespace, this.name);
    const base = { namespace: this.namespace, name: this.name };
    if (!ds) return { ...base, synced: this.source.listSynced(), found: false, events: [] };
    return {
      ...base,
      synced: this.synced(),
      found: true,
      row: daemonSetRows([ds])[0],
      map: nodeMap({
        ds,
        nodes: this.source.nodes().list(),
        pods: this.pods?.list() ?? [],
        revisions: this.revisions?.list() ?? [],
        now: Date.now(),
      }),
      events: eventRows(this.events?.list() ?? [], ds),
    };
  }

  /** Resolves once every watch has listed (or the DaemonSet list says there is no such DaemonSet). */
  async ready(timeoutMs = 30_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    const known = () => this.source.findDaemonSet(this.namespace, this.name) !== undefined;
    while (!(this.source.listSynced() && !known()) && !this.synced() && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): void {
    this.notify.cancel();
    this.abort.abort();
  }
}

/** The source on a live cluster. */
export class KubeSource implements DashboardSource {
  private readonly abort = new AbortController();
  private readonly daemonSets: WatchedList<DaemonSet>;
  private nodeList?: WatchedList<Node>;
  private readonly details = new Map<string, DetailWatch>();
  private readonly listListeners = new Set<(v: ListView) => void>();
  private readonly notifyList: ReturnType<typeof throttle>;
  private readonly throttleMs: number;
  readonly log: (line: string) => void;

  constructor(
    readonly client: KubeClient,
    private readonly scope: { namespace?: string; allNamespaces?: boolean },
    opts: { log?: (line: string) => void; throttleMs?: number } = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.throttleMs = opts.throttleMs ?? 250;
    this.notifyList = throttle(() => {
      const v = this.list();
      for (const l of this.listListeners) l(v);
    }, this.throttleMs);
    this.daemonSets = new WatchedList<DaemonSet>(
      client,
      resources.daemonSets,
      {
        namespace: scope.allNamespaces ? undefined : scope.namespace,
        onChange: () => {
          this.notifyList();
          for (const d of this.details.values()) d.refresh();
        },
        log: this.log,
      },
      this.abort.signal,
    );
  }

  listSynced(): boolean {
    return this.daemonSets.synced;
  }

  findDaemonSet(namespace: string, name: string): DaemonSet | undefined {
    return this.daemonSets.list().find((d) => d.metadata.namespace === namespace && d.metadata.name === name);
  }

  /** The node watch, started the first time a page looks at a DaemonSet, then kept. */
  nodes(): WatchedList<Node> {
    this.nodeList ??= new WatchedList<Node>(
      this.client,
      resources.nodes,
      {
        onChange: () => {
          for (const d of this.details.values()) d.notify();
        },
        log: this.log,
      },
      this.abort.signal,
    );
    return this.nodeList;
  }

  list(): ListView {
    return {
      scope: this.scope.allNamespaces ? 'all namespaces' : `namespace ${this.scope.namespace ?? 'default'}`,
      server: this.client.server,
      synced: this.daemonSets.synced,
      daemonSets: daemonSetRows(this.daemonSets.list()),
    };
  }

  subscribeList(listener: (v: ListView) => void): Unsubscribe {
    this.listListeners.add(listener);
    listener(this.list());
    return () => this.listListeners.delete(listener);
  }

  private detailWatch(namespace: string, name: string): DetailWatch {
    const k = `${namespace}/${name}`;
    let d = this.details.get(k);
    if (!d) {
      this.nodes();
      d = new DetailWatch(this, namespace, name, this.throttleMs);
      this.details.set(k, d);
    }
    return d;
  }

  async detail(namespace: string, name: string): Promise<DetailView> {
    const d = this.detailWatch(namespace, name);
    try {
      await d.ready();
      return d.view();
    } finally {
      if (d.listeners.size === 0) this.release(namespace, name, d);
    }
  }

  subscribeDetail(namespace: string, name: string, listener: (v: DetailView) => void): Unsubscribe {
    const d = this.detailWatch(namespace, name);
    d.listeners.add(listener);
    listener(d.view());
    return () => {
      d.listeners.delete(listener);
      if (d.listeners.size === 0) this.release(namespace, name, d);
    };
  }

  private release(namespace: string, name: string, d: DetailWatch): void {
    d.close();
    this.details.delete(`${namespace}/${name}`);
  }

  async close(): Promise<void> {
    this.notifyList.cancel();
    for (const d of this.details.values()) d.close();
    this.details.clear();
    this.abort.abort();
    await Promise.all([this.daemonSets.stopped(), this.nodeList?.stopped()]);
  }
}
