// A shared index informer, as client-go's tools/cache: a reflector filling an indexed store,
// and event handlers told about every change. Handlers run synchronously, in order, right after
// the store changed, so a handler always sees the store at least as new as the event; they
// should only map the object to keys and enqueue them (docs/architecture.md).
//
// Hand-written rather than client-node's makeInformer: that cache has no custom indexes (only
// name/namespace), no bookmarks, no server-side timeout and no silent-watch detection.
import { objectKey, type KubeObject, type Pod } from './types.ts';
import { defaultLogger, type Logger } from './log.ts';
import { lowerBound } from './sorted.ts';
import {
  Reflector,
  type BackoffOptions,
  type ReflectorOptions,
  type ReflectorStore,
  type Transform,
} from './reflector.ts';

/** Values of one index for an object (an object may sit under several values, or none). */
export type IndexFunc<T> = (obj: T) => string[];

/** The object was deleted while we were not watching; `obj` is the last state we had (client-go's tombstone). */
export class DeletedFinalStateUnknown<T> {
  constructor(
    readonly key: string,
    readonly obj: T,
  ) {}
}

/** The object from a delete notification, whether or not it is a tombstone. */
export function deletedObject<T>(obj: T | DeletedFinalStateUnknown<T>): T {
  return obj instanceof DeletedFinalStateUnknown ? obj.obj : obj;
}

export interface EventHandler<T> {
  /** `isInInitialList`: the object came with the first list (client-go ≥ 1.27 passes the same flag). */
  onAdd?(obj: T, isInInitialList: boolean): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T | DeletedFinalStateUnknown<T>): void;
}

export const NAMESPACE_INDEX = 'namespace';

/** client-go's MetaNamespaceIndexFunc. */
export const indexByNamespace: IndexFunc<KubeObject> = (obj) =>
  obj.metadata.namespace ? [obj.metadata.namespace] : [];

/** Pods by spec.nodeName (unscheduled pods are not indexed). */
export const indexPodsByNodeName: IndexFunc<Pod> = (pod) => (pod.spec?.nodeName ? [pod.spec.nodeName] : []);

/**
 * Objects by the UID of their controller owner reference, and an object with none (an orphan, which a controller of
 * its namespace may adopt) under `orphanIndexValue(namespace)`: a sync reads its own objects and the orphans it may
 * claim without a pass over every object of the namespace.
 */
export const indexByController: IndexFunc<KubeObject> = (obj) => {
  const ref = obj.metadata.ownerReferences?.find((r) => r.controller);
  return [ref ? ref.uid : orphanIndexValue(obj.metadata.namespace ?? '')];
};

/** `indexByController`'s value for the orphans of a namespace (a UID never holds a '/'). */
export const orphanIndexValue = (namespace: string): string => `orphans/${namespace}`;

/**
 * Drops metadata.managedFields, which the controller never reads and which can be half of an
 * object's size (controller-runtime's TransformStripManagedFields). Updates from a stripped
 * copy are fine: the apiserver keeps the stored managedFields when a request omits them.
 */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata && 'managedFields' in obj.metadata) delete obj.metadata.managedFields;
  return obj;
}

/**
 * A thread-safe-store equivalent (client-go's cache.Indexer): objects by namespace/name key,
 * plus named indexes. Objects handed out are the cached ones: treat them as read-only and
 * structuredClone before changing anything.
 */
export class Indexer<T extends KubeObject> {
  private readonly items = new Map<string, T>();
  /**
   * Per index, its values and the objects under each: the objects themselves rather than their keys, so walking an
   * index (a DaemonSet's pods, at every sync) costs no lookup per object (a fifth of a steady sync's time at 10,000
   * nodes, V8 profile of the simulated cluster). An object is stored under one key only.
   */
  private readonly indices = new Map<string, Map<string, Set<T>>>();
  private readonly indexers = new Map<string, IndexFunc<T>>();
  /**
   * The objects in key order, and their keys, once listSorted was asked; kept up to date as objects are set and
   * deleted (a new or gone key is put in or taken out at its place, found by binary search), so a list costs no
   * lookup per key (a tenth of a steady sync's time at 10,000 nodes, V8 profile of the simulated cluster,
   * bench/README.md section 8) and a node added costs no sort of every key (at 65,000 nodes a sort and a map of the
   * keys' places was about 60 ms, once per node added). `shared`: listSorted handed `items` out, so the next change
   * copies it first (copy on write), and a sync still holding the previous list never sees it change; with no change
   * between two lists the second is the same array.
   */
  private sorted?: { items: T[]; keys: string[]; shared: boolean; moves: number };
  /**
   * The keys set or deleted since each list listSorted handed out, for a reader that keeps what it derived from its
   * last list (the planner's memo, src/daemonset/memo.ts): it takes in those keys alone where it compared the two
   * lists key by key (1.2 ms in each sync after a node joined at 65,000 nodes, bench/README.md section 8). `handed`:
   * each list handed out and the log's position then; `base`: the position of `keys[0]`. Past a quarter of the
   * objects (at least 256) its older half is dropped: a reader told that many changes might as well compare.
   */
  private changeLog?: { base: number; keys: string[]; handed: WeakMap<readonly T[], number> };

  constructor(indexers: Record<string, IndexFunc<T>> = {}) {
    for (const [name, fn] of Object.entries(indexers)) this.addIndexer(name, fn);
  }

  /** Adds an index; existing objects are indexed at once. */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    if (this.indexers.has(name)) throw new Error(`indexer ${name} already exists`);
    this.indexers.set(name, fn);
    const index = new Map<string, Set<T>>();
    this.indices.set(name, index);
    for (const obj of this.items.values()) addToIndex(index, fn(obj), obj);
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  /** By namespace and name (namespace '' or undefined for cluster-scoped objects). */
  getByName(namespace: string | undefined, name: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }

  has(key: string): boolean {
    return this.items.has(key);
  }

  get size(): number {
    return this.items.size;
  }

  list(): T[] {
    return [...this.items.values()];
  }

  /**
   * Objects in key order (for cluster-scoped objects, name order). The planner walks nodes in name order; keeping
   * the order here sorts once per node added or removed instead of once per sync.
   */
  listSorted(): readonly T[] {
    if (!this.sorted) {
      const keys = [...this.items.keys()].sort();
      this.sorted = { items: keys.map((key) => this.items.get(key) as T), keys, shared: false, moves: 0 };
    }
    this.sorted.shared = true;
    this.sorted.moves = 0;
    // A list is handed out again only while no key changed (a change copies a shared list first), so its position
    // stays the one it had.
    this.changeLog ??= { base: 0, keys: [], handed: new WeakMap() };
    this.changeLog.handed.set(this.sorted.items, this.changeLog.base + this.changeLog.keys.length);
    return this.sorted.items;
  }

  /**
   * The keys set or deleted (each at least once, some more than once) between `list`, handed out by listSorted, and
   * the current list; undefined when that is no longer known (`list` was not handed out, or too many changes since).
   */
  changedKeysSince(list: readonly T[]): readonly string[] | undefined {
    const log = this.changeLog;
    const at = log?.handed.get(list);
    if (log === undefined || at === undefined || at < log.base) return undefined;
    return log.keys.slice(at - log.base);
  }

  private logChange(key: string): void {
    const log = this.changeLog;
    if (log === undefined) return;
    if (log.keys.length >= Math.max(MIN_CHANGE_LOG, this.items.size >> 2)) {
      // The older half goes: a list handed out within the newer half is still told.
      const drop = log.keys.length >> 1;
      log.base += drop;
      log.keys.splice(0, drop);
    }
    log.keys.push(key);
  }

  /**
   * The sorted list, ready to be changed: copied first if it was handed out. When `move` (a key added or removed) and
   * many keys came or went since the last list (a relist), the list is dropped instead: each move shifts the rest of
   * the list, and one sort at the next list costs less than thousands of them.
   */
  private ownSorted(move: boolean): { items: T[]; keys: string[]; shared: boolean; moves: number } | undefined {
    const sorted = this.sorted;
    if (sorted && move && ++sorted.moves > MAX_SORTED_MOVES) {
      this.sorted = undefined;
      return undefined;
    }
    if (sorted?.shared) {
      sorted.items = sorted.items.slice();
      sorted.shared = false;
    }
    return sorted;
  }

  listKeys(): string[] {
    return [...this.items.keys()];
  }

  /** Objects whose index `indexName` includes `value`. */
  byIndex(indexName: string, value: string): T[] {
    const out: T[] = [];
    this.forEachInIndex(indexName, value, (obj) => out.push(obj));
    return out;
  }

  /** byIndex without the array: `fn` for each object whose index `indexName` includes `value`. */
  forEachInIndex(indexName: string, value: string, fn: (obj: T) => void): void {
    // Set.forEach: a for-of over the set allocates an iterator result per object where it is not optimized.
    this.indexSet(indexName)
      .get(value)
      ?.forEach((obj) => fn(obj));
  }

  private indexSet(indexName: string): Map<string, Set<T>> {
    const index = this.indices.get(indexName);
    if (!index) throw new Error(`index ${indexName} does not exist`);
    return index;
  }

  /** All values of an index. */
  listIndexValues(indexName: string): string[] {
    const index = this.indices.get(indexName);
    if (!index) throw new Error(`index ${indexName} does not exist`);
    return [...index.keys()];
  }

  /** Stores the object under `key`; returns the previous one. Storing the very object stored changes nothing. */
  set(key: string, obj: T): T | undefined {
    const old = this.items.get(key);
    if (old === obj) return old;
    const sorted = this.ownSorted(!old);
    if (sorted) {
      const i = sortedIndex(sorted.keys, key);
      if (old) {
        sorted.items[i] = obj;
      } else {
        sorted.keys.splice(i, 0, key);
        sorted.items.splice(i, 0, obj);
      }
    }
    this.items.set(key, obj);
    this.logChange(key);
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name) as Map<string, Set<T>>;
      if (old) removeFromIndex(index, fn(old), old);
      addToIndex(index, fn(obj), obj);
    }
    return old;
  }

  /** Removes the object under `key`; returns it. */
  delete(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.items.delete(key);
    this.logChange(key);
    const sorted = this.ownSorted(true);
    if (sorted) {
      const i = sortedIndex(sorted.keys, key);
      sorted.keys.splice(i, 1);
      sorted.items.splice(i, 1);
    }
    for (const [name, fn] of this.indexers)
      removeFromIndex(this.indices.get(name) as Map<string, Set<T>>, fn(old), old);
    return old;
  }
}

/** Keys added or removed between two lists beyond which the sorted list is dropped rather than kept (Indexer.sorted). */
const MAX_SORTED_MOVES = 64;

/** The fewest changes Indexer.changeLog holds before its older half is dropped. */
const MIN_CHANGE_LOG = 256;

/** The place of `key` in `keys` (sorted as Array.prototype.sort sorts strings): where it is, or would be put. */
function sortedIndex(keys: readonly string[], key: string): number {
  return lowerBound(keys, (k) => k < key);
}

function addToIndex<T>(index: Map<string, Set<T>>, values: string[], obj: T): void {
  for (const v of values) {
    let set = index.get(v);
    if (!set) index.set(v, (set = new Set()));
    set.add(obj);
  }
}

function removeFromIndex<T>(index: Map<string, Set<T>>, values: string[], obj: T): void {
  for (const v of values) {
    const set = index.get(v);
    if (!set) continue;
    set.delete(obj);
    if (set.size === 0) index.delete(v);
  }
}

export interface InformerOptions<T extends KubeObject> extends Pick<
  ReflectorOptions<T>,
  'name' | 'client' | 'type' | 'namespace' | 'labelSelector' | 'fieldSelector'
> {
  /**
   * Indexes by name (client-go's cache.Indexers); none by default. client-go's informer factory adds the namespace
   * index to every informer; here an informer asks for it (NAMESPACE_INDEX), as an index nobody reads costs a set
   * per value and an entry per object: the pod cache's namespace index held a set of every pod of the namespace
   * (1.3 MiB of hash table at 16,673 pods, a heap snapshot of bench/README.md section 7's run) and no sync read it.
   */
  indexers?: Record<string, IndexFunc<T>>;
  /** Redeliver every cached object to onUpdate this often (client-go's resyncPeriod). Off by default. */
  resyncPeriodMs?: number;
  transform?: Transform<T>;
  pageSize?: number;
  watchTimeoutSeconds?: [number, number];
  inactivityTimeoutMs?: number;
  backoff?: BackoffOptions;
  logger?: Logger;
}

/** Objects a replace applies per turn of the event loop (about 50-100 ms of pods with the controller's handlers). */
export const REPLACE_BATCH = 5000;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class Informer<T extends KubeObject = KubeObject> implements ReflectorStore<T> {
  readonly name: string;
  /** The cache. Read-only for callers. */
  readonly store: Indexer<T>;
  private readonly handlers = new Set<EventHandler<T>>();
  private readonly reflector: Reflector<T>;
  private readonly log: Logger;
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private running = false;

  constructor(private readonly opts: InformerOptions<T>) {
    this.name = opts.name;
    this.log = (opts.logger ?? defaultLogger()).child({ informer: opts.name });
    this.store = new Indexer<T>(opts.indexers);
    this.reflector = new Reflector<T>({ ...opts, logger: opts.logger }, this);
  }

  /**
   * Registers handlers. If the cache already holds objects they are replayed as adds first,
   * as client-go does for handlers added to a running informer. Returns an unregister function.
   */
  addEventHandler(handler: EventHandler<T>): () => void {
    this.handlers.add(handler);
    if (this.synced) {
      for (const obj of this.store.list()) this.call('onAdd', () => handler.onAdd?.(obj, true));
    }
    return () => this.handlers.delete(handler);
  }

  /** Lists and watches until `signal` aborts; resolves then, without an error. */
  async run(signal: AbortSignal): Promise<void> {
    if (this.running) throw new Error(`informer ${this.name} is already running`);
    this.running = true;
    let resync: NodeJS.Timeout | undefined;
    if (this.opts.resyncPeriodMs) {
      resync = setInterval(() => this.resync(), this.opts.resyncPeriodMs);
      resync.unref();
    }
    try {
      await this.reflector.run(signal);
    } finally {
      clearInterval(resync);
      this.running = false;
    }
  }

  /** True once the first list has been stored and delivered to handlers. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves true once synced, false if `signal` aborts first. */
  waitForCacheSync(signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = () => resolve(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      });
    });
  }

  lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion();
  }

  // --- ReflectorStore --------------------------------------------------------------------------

  /**
   * Resolves when done. A list of more than REPLACE_BATCH objects is applied in batches with a turn of the event loop
   * between them, so timers and I/O run meanwhile: in one piece, the first list of 1.3 million pods (65,000 nodes, 20
   * DaemonSets) held the event loop for over 20 s, the Lease could not be renewed within its 10 s deadline and the
   * leader exited right after its caches synced (bench/README.md section 8). Readers may see the store between
   * batches, as client-go's informer applies a Replace one delta at a time while workers read its cache; `synced`
   * turns true only at the end. Up to REPLACE_BATCH objects, all of it happens before this returns.
   */
  async replace(items: T[], _resourceVersion: string): Promise<void> {
    const initial = !this.synced;
    const seen = new Set<string>();
    let done = 0;
    for (const obj of items) {
      const key = objectKey(obj);
      seen.add(key);
      const old = this.store.set(key, obj);
      if (!old) this.notifyAdd(obj, initial);
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.notifyUpdate(old, obj);
      if (++done % REPLACE_BATCH === 0) await nextTurn();
    }
    // Objects that vanished while the watch was down: their final state is unknown.
    for (const key of this.store.listKeys()) {
      if (seen.has(key)) continue;
      const old = this.store.delete(key);
      if (old) this.notifyDelete(new DeletedFinalStateUnknown(key, old));
      if (++done % REPLACE_BATCH === 0) await nextTurn();
    }
    if (initial) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  /**
   * An event's object, as the transform made it. The very object cached (a transform that kept nothing of the
   * change, as cachedNode after a node's heartbeat) is no update to tell: client-go's informer would hand the
   * handlers two objects that differ in nothing they keep.
   */
  upsert(obj: T): void {
    const old = this.store.set(objectKey(obj), obj);
    if (old === obj) return;
    if (old) this.notifyUpdate(old, obj);
    else this.notifyAdd(obj, false);
  }

  current(obj: T): T | undefined {
    return this.store.get(objectKey(obj));
  }

  remove(obj: T): void {
    const key = objectKey(obj);
    // Prefer the event's object: it is the final state.
    this.store.delete(key);
    this.notifyDelete(obj);
  }

  // --- notifications ---------------------------------------------------------------------------

  private resync(): void {
    for (const obj of this.store.list()) this.notifyUpdate(obj, obj);
  }

  private notifyAdd(obj: T, initial: boolean): void {
    for (const h of this.handlers) this.call('onAdd', () => h.onAdd?.(obj, initial));
  }

  private notifyUpdate(old: T, obj: T): void {
    for (const h of this.handlers) this.call('onUpdate', () => h.onUpdate?.(old, obj));
  }

  private notifyDelete(obj: T | DeletedFinalStateUnknown<T>): void {
    for (const h of this.handlers) this.call('onDelete', () => h.onDelete?.(obj));
  }

  /** A throwing handler is a bug in that handler; it must not stop the informer or other handlers. */
  private call(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ err, handler: what }, 'event handler threw');
    }
  }
}

/** Waits for several informers (client-go's cache.WaitForCacheSync). False if `signal` aborts first. */
export async function waitForCacheSync(
  signal: AbortSignal | undefined,
  ...informers: { waitForCacheSync(signal?: AbortSignal): Promise<boolean> }[]
): Promise<boolean> {
  const results = await Promise.all(informers.map((i) => i.waitForCacheSync(signal)));
  return results.every(Boolean);
}
