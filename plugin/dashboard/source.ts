// Where the dashboard's data comes from: watches of the Advanced DaemonSets in scope (always), and, while a page
// looks at one of them, of the nodes and of that DaemonSet's pods, ControllerRevisions and events. Every change
// recomputes the page's view with model.ts and hands it to the subscribers, at most every `throttleMs` (a rollout
// of 1,000 nodes changes pods many times a second; the page needs a few frames a second).
import type { DaemonSet } from '../../src/api/types.ts';
import { resources } from '../../src/k8s/resources.ts';
import { type KubeClient } from '../../src/k8s/client.ts';
import type { ControllerRevision, Node, Pod } from '../../src/k8s/types.ts';
import { revisionHashLabel } from '../../src/daemonset/history.ts';
import {
  canaryPodRows,
  conditionView,
  daemonSetRow,
  daemonSetRows,
  daemonSetSelector,
  eventRows,
  holdCounts,
  nodeGroups,
  nodeMap,
  ownedBy,
  revisionRows,
  updateRevisionOf,
  ZONE_LABEL,
  type CoreEvent,
} from './model.ts';
import type { HoldCounts } from './rollout.ts';
import { observeRollout, rolloutPace, type RolloutHistory } from './timeline.ts';
import type { DetailView, ListView } from './views.ts';

export type { DetailView, ListView };
import { WatchedList } from './watch.ts';

export type Unsubscribe = () => void;

/** How the page wants the detail: the node label its per-zone breakdown groups by. */
export interface DetailOptions {
  groupBy?: string;
}

/** What the server needs; tests give it a fake. */
export interface DashboardSource {
  list(): ListView;
  subscribeList(listener: (v: ListView) => void): Unsubscribe;
  detail(namespace: string, name: string, opts?: DetailOptions): Promise<DetailView>;
  subscribeDetail(
    namespace: string,
    name: string,
    listener: (v: DetailView) => void,
    opts?: DetailOptions,
  ): Unsubscribe;
  /** Whether the DaemonSet is in the dashboard's scope (actions only touch those). */
  has(namespace: string, name: string): boolean;
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

/** How often a watched DaemonSet's view is pushed even when nothing changed (its pace is a function of time). */
export const PACE_REFRESH_MS = 5000;

/** The watches of one DaemonSet, kept while some page looks at it. */
class DetailWatch {
  /** Each page's listener, with the node label it groups by. */
  readonly listeners = new Map<(v: DetailView) => void, string>();
  /** The holds of the last node map: the table's row of this DaemonSet counts its target from them too. */
  holds?: HoldCounts;
  private readonly abort = new AbortController();
  /** Aborts the watches of the DaemonSet's current incarnation (uid). */
  private watchAbort?: AbortController;
  private pods?: WatchedList<Pod>;
  private revisions?: WatchedList<ControllerRevision>;
  private events?: WatchedList<CoreEvent>;
  private uid?: string;
  readonly notify: ReturnType<typeof throttle>;
  /** Recomputes now and then without a watch event: elapsed time, rate and ETA move while the objects do not. */
  private readonly ticker: NodeJS.Timeout;

  constructor(
    private readonly source: KubeSource,
    readonly namespace: string,
    readonly name: string,
    throttleMs: number,
  ) {
    this.notify = throttle(() => {
      const views = new Map<string, DetailView>();
      for (const [l, groupBy] of this.listeners) {
        let v = views.get(groupBy);
        if (!v) views.set(groupBy, (v = this.view(groupBy)));
        l(v);
      }
    }, throttleMs);
    this.ticker = setInterval(() => this.notify(), PACE_REFRESH_MS).unref();
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

  view(groupBy = ZONE_LABEL): DetailView {
    const ds = this.source.findDaemonSet(this.namespace, this.name);
    const base = { namespace: this.namespace, name: this.name };
    if (!ds) return { ...base, synced: this.source.listSynced(), found: false, events: [] };
    const now = Date.now();
    const nodes = this.source.nodes().list();
    const pods = this.pods?.list() ?? [];
    const revisions = this.revisions?.list() ?? [];
    const map = nodeMap({ ds, nodes, pods, revisions, now });
    const holds = holdCounts(map);
    if (JSON.stringify(holds) !== JSON.stringify(this.holds)) {
      this.holds = holds;
      // The table's row of this DaemonSet counts from the same holds: redraw it too.
      this.source.notifyListChanged();
    }
    const row = daemonSetRow(ds, holds);
    const progressing = conditionView(ds);
    const hash = updateRevisionOf(ds);
    const current = revisions.find((r) => ownedBy(r, ds) && revisionHashLabel(r) === hash);
    const revisionCreated = Date.parse(current?.metadata.creationTimestamp ?? '') || undefined;
    return {
      ...base,
      synced: this.synced(),
      found: true,
      row,
      map,
      events: eventRows(this.events?.list() ?? [], ds),
      ...(progressing ? { progressing } : {}),
      timeline: this.source.history(ds)?.entries ?? [],
      pace: rolloutPace({
        history: this.source.history(ds),
        progress: row.rollout.progress,
        state: row.rollout.state,
        ...(revisionCreated ? { revisionCreated } : {}),
        now,
      }),
      groups: nodeGroups(map, nodes, groupBy),
      revisionRows: revisionRows(ds, revisions, map),
      canaryPods: canaryPodRows(ds, pods),
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
    clearInterval(this.ticker);
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
  /** Each DaemonSet's rollout as seen so far (timeline.ts), by namespace/name. */
  private readonly histories = new Map<string, RolloutHistory>();
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
          this.observe();
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

  /** Records what changed in every DaemonSet since the last watch event (observeRollout keeps what did not). */
  private observe(): void {
    const now = Date.now();
    const seen = new Set<string>();
    for (const ds of this.daemonSets.list()) {
      const k = `${ds.metadata.namespace ?? ''}/${ds.metadata.name ?? ''}`;
      seen.add(k);
      this.histories.set(k, observeRollout(this.histories.get(k), ds, now));
    }
    for (const k of this.histories.keys()) if (!seen.has(k)) this.histories.delete(k);
  }

  history(ds: DaemonSet): RolloutHistory | undefined {
    const h = this.histories.get(`${ds.metadata.namespace ?? ''}/${ds.metadata.name ?? ''}`);
    return h?.uid === ds.metadata.uid ? h : undefined;
  }

  notifyListChanged(): void {
    this.notifyList();
  }

  has(namespace: string, name: string): boolean {
    return this.findDaemonSet(namespace, name) !== undefined;
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
      daemonSets: daemonSetRows(
        this.daemonSets.list(),
        (ds) => this.details.get(`${ds.metadata.namespace ?? ''}/${ds.metadata.name ?? ''}`)?.holds,
      ),
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

  async detail(namespace: string, name: string, opts: DetailOptions = {}): Promise<DetailView> {
    const d = this.detailWatch(namespace, name);
    try {
      await d.ready();
      return d.view(opts.groupBy || ZONE_LABEL);
    } finally {
      if (d.listeners.size === 0) this.release(namespace, name, d);
    }
  }

  subscribeDetail(
    namespace: string,
    name: string,
    listener: (v: DetailView) => void,
    opts: DetailOptions = {},
  ): Unsubscribe {
    const d = this.detailWatch(namespace, name);
    const groupBy = opts.groupBy || ZONE_LABEL;
    d.listeners.set(listener, groupBy);
    listener(d.view(groupBy));
    return () => {
      d.listeners.delete(listener);
      if (d.listeners.size === 0) this.release(namespace, name, d);
    };
  }

  private release(namespace: string, name: string, d: DetailWatch): void {
    d.close();
    this.details.delete(`${namespace}/${name}`);
    // Its row goes back to the estimate from the status alone.
    if (d.holds) this.notifyList();
  }

  async close(): Promise<void> {
    this.notifyList.cancel();
    for (const d of this.details.values()) d.close();
    this.details.clear();
    this.abort.abort();
    await Promise.all([this.daemonSets.stopped(), this.nodeList?.stopped()]);
  }
}
