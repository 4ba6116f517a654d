// An in-memory DashboardSource for tests of the server and the page (plugin/dashboard/server.test.ts, and the
// browser e2e at 1,000 nodes): views are set by the test and pushed to the subscribers as they change.
import type { DashboardSource, DetailOptions, Unsubscribe } from './source.ts';
import type { DetailView, ListView } from './views.ts';

export class StaticSource implements DashboardSource {
  listView: ListView = { scope: 'namespace default', server: 'https://test', synced: true, daemonSets: [] };
  readonly details = new Map<string, DetailView>();
  readonly listListeners = new Set<(v: ListView) => void>();
  readonly detailListeners = new Map<string, Set<(v: DetailView) => void>>();
  closed = false;

  list(): ListView {
    return this.listView;
  }

  subscribeList(listener: (v: ListView) => void): Unsubscribe {
    this.listListeners.add(listener);
    listener(this.listView);
    return () => this.listListeners.delete(listener);
  }

  /** Replaces the list and pushes it. */
  setList(view: ListView): void {
    this.listView = view;
    for (const l of this.listListeners) l(view);
  }

  private detailOf(namespace: string, name: string): DetailView {
    return this.details.get(`${namespace}/${name}`) ?? { namespace, name, synced: true, found: false, events: [] };
  }

  /** The options of each detail request and subscription, in order (what the page asked for). */
  readonly detailOptions: DetailOptions[] = [];

  async detail(namespace: string, name: string, opts: DetailOptions = {}): Promise<DetailView> {
    this.detailOptions.push(opts);
    return this.detailOf(namespace, name);
  }

  subscribeDetail(
    namespace: string,
    name: string,
    listener: (v: DetailView) => void,
    opts: DetailOptions = {},
  ): Unsubscribe {
    this.detailOptions.push(opts);
    const k = `${namespace}/${name}`;
    const set = this.detailListeners.get(k) ?? new Set();
    this.detailListeners.set(k, set);
    set.add(listener);
    listener(this.detailOf(namespace, name));
    return () => set.delete(listener);
  }

  /** Replaces one DaemonSet's view and pushes it. */
  setDetail(view: DetailView): void {
    const k = `${view.namespace}/${view.name}`;
    this.details.set(k, view);
    for (const l of this.detailListeners.get(k) ?? []) l(view);
  }

  /** In scope: listed in the list view, or given a detail view. */
  has(namespace: string, name: string): boolean {
    return (
      this.listView.daemonSets.some((r) => r.namespace === namespace && r.name === name) ||
      this.details.get(`${namespace}/${name}`)?.found === true
    );
  }

  /** Subscribers of every stream. */
  subscribers(): number {
    return this.listListeners.size + [...this.detailListeners.values()].reduce((n, s) => n + s.size, 0);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
