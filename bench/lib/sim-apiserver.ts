// A simulated apiserver for the `simulate` part (bench/simulate.ts): a cluster of N nodes and D DaemonSets with their
// N x D pods, served over HTTP list (limit/continue) and watch to the manager, whose own reflectors, informers,
// transforms, indexers and controller run unchanged in a child process. Why HTTP and not recorded streams injected
// at the reflector's list/watch boundary: the manager under test is the production bundle, untouched, so its decode
// (list-stream.ts), client and rate limiter are measured too.
//
// The cluster is generated, not stored: 1.3 million pods as ~2 KB JSON strings would take 2.6 GB in this process. A
// pod or node is a JSON template per DaemonSet (or one for nodes) with a few values filled in from its index (name,
// uid, node, timestamps), made again for every page asked for. Only what changes is stored: objects written by the
// manager or by the benchmark (created pods, patched statuses, added nodes) live in an overlay that lists and gets
// read first. Writes are accepted as an apiserver with nothing but a watch cache would: create, merge and strategic
// patches (conditions merge by type), update with a resourceVersion precondition, delete; each emits its watch event.
// Not for tests of the product: src/k8s/testing/fake-apiserver.ts is that (small, misbehaving on demand).
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { KubeObject } from '../../src/k8s/types.ts';
import { json, keyOf, onRequestBody, parsePath, status } from '../../src/k8s/testing/http-api.ts';

/** The objects of a collection that are generated, not stored: `count` of them, by index. */
export interface GeneratedObjects {
  count: number;
  /** The key (namespace/name or name) of object i. */
  keyAt(i: number): string;
  /** The index of the object with this key, or -1. */
  indexOf(key: string): number;
  /** Object i as JSON, without kind/apiVersion (as list items come). */
  jsonAt(i: number): string;
}

/** A JSON template with `@@name@@` holes, filled by string concatenation (JSON.stringify per object is 5x slower). */
export class JsonTemplate {
  private readonly parts: string[];
  constructor(obj: unknown) {
    this.parts = JSON.stringify(obj).split(/@@(\w+)@@/);
  }
  fill(values: Record<string, string>): string {
    const p = this.parts;
    let out = p[0]!;
    for (let i = 1; i < p.length; i += 2) out += (values[p[i]!] ?? '') + p[i + 1]!;
    return out;
  }
}

interface Watcher {
  collection: string;
  res: http.ServerResponse;
  bookmarks: boolean;
}

interface Collection {
  generated?: GeneratedObjects;
  /** Stored objects: written ones, and generated ones once changed. */
  stored: Map<string, KubeObject>;
  /** Generated objects deleted. */
  deleted: Set<string>;
  /** Keys of stored objects that are not generated, in creation order (listed after the generated ones). */
  extra: string[];
}

interface WriteRecord {
  at: number;
  method: string;
  collection: string;
  subresource?: string;
  object: KubeObject;
}

const BOOKMARK_INTERVAL_MS = 60_000;

export class SimApiServer {
  port = 0;
  /** Every write, on this process's clock (performance.now()). */
  onWrite: ((w: WriteRecord) => void) | undefined;
  /** Pages served per collection (the manager's lists). */
  readonly pagesServed = new Map<string, number>();
  private rv: number;
  private readonly collections = new Map<string, Collection>();
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private readonly log: { rv: number; collection: string; line: string }[] = [];
  private server: http.Server | undefined;
  private bookmarkTimer: NodeJS.Timeout | undefined;
  private nameSeq = 0;

  constructor(baseResourceVersion: number) {
    this.rv = baseResourceVersion;
  }

  /** Collection names are `<group or core>/<version>/<resource>`, as the paths name them. */
  define(collection: string, generated?: GeneratedObjects): void {
    this.collections.set(collection, { generated, stored: new Map(), deleted: new Set(), extra: [] });
  }

  async start(): Promise<void> {
    const server = http.createServer((req, res) => this.handle(req, res));
    server.keepAliveTimeout = 120_000;
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    // The watch cache's bookmarks (about one a minute on an idle watch): the reflector's watchdog expects them.
    this.bookmarkTimer = setInterval(() => {
      const line = (kind: string) =>
        `${JSON.stringify({ type: 'BOOKMARK', object: { kind, metadata: { resourceVersion: String(this.rv) } } })}\n`;
      for (const w of this.watchers) if (w.bookmarks) w.res.write(line('Bookmark'));
    }, BOOKMARK_INTERVAL_MS);
    this.bookmarkTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.bookmarkTimer);
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Creates or replaces an object (the benchmark's own writes: an added node, a pod's kubelet update). */
  upsert(collection: string, obj: KubeObject): KubeObject {
    const c = this.mustCollection(collection);
    const key = keyOf(obj.metadata.namespace, obj.metadata.name ?? '');
    const existed = this.read(c, key) !== undefined;
    obj.metadata.uid ??= `uid-${key.replaceAll('/', '-')}`;
    obj.metadata.resourceVersion = String(++this.rv);
    if (!c.stored.has(key) && (c.generated?.indexOf(key) ?? -1) < 0) c.extra.push(key);
    c.stored.set(key, obj);
    c.deleted.delete(key);
    this.emit(collection, existed ? 'MODIFIED' : 'ADDED', obj);
    return obj;
  }

  /** The object under `key`, generated or stored (a parsed copy: change it through upsert). */
  get(collection: string, key: string): KubeObject | undefined {
    const c = this.mustCollection(collection);
    const obj = this.read(c, key);
    return obj && structuredClone(obj);
  }

  private read(c: Collection, key: string): KubeObject | undefined {
    const stored = c.stored.get(key);
    if (stored) return stored;
    if (c.deleted.has(key) || !c.generated) return undefined;
    const i = c.generated.indexOf(key);
    return i < 0 ? undefined : (JSON.parse(c.generated.jsonAt(i)) as KubeObject);
  }

  private mustCollection(name: string): Collection {
    const c = this.collections.get(name);
    if (!c) throw new Error(`no collection ${name}`);
    return c;
  }

  private emit(collection: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject): void {
    const line = `${JSON.stringify({ type, object })}\n`;
    this.log.push({ rv: this.rv, collection, line });
    for (const w of this.watchers) if (w.collection === collection) w.res.write(line);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    onRequestBody(req, (url, text) => {
      try {
        this.route(req.method ?? 'GET', url, text ? JSON.parse(text) : undefined, req.headers['content-type'], res);
      } catch (err) {
        status(res, 500, 'InternalError', (err as Error).message);
      }
    });
  }

  private route(method: string, url: URL, body: unknown, contentType: string | undefined, res: http.ServerResponse) {
    const parsed = parsePath(url.pathname);
    if (!parsed) return status(res, 404, 'NotFound', `no route for ${url.pathname}`);
    const { collection, namespace, name, subresource } = parsed;
    const c = this.collections.get(collection);
    if (!c) {
      // Discovery of a group version: the resources defined in it.
      const gv = url.pathname.replace(/^\/apis?\//, '').replace(/^v1$/, 'core/v1');
      if (method === 'GET' && name === undefined && /^[^/]+\/[^/]+$/.test(gv) && parsed.resourceMissing) {
        const served = [...this.collections.keys()].filter((k) => k.startsWith(`${gv}/`));
        if (served.length === 0) return status(res, 404, 'NotFound', 'not found');
        return json(res, 200, {
          kind: 'APIResourceList',
          groupVersion: gv.replace(/^core\//, ''),
          resources: served.map((k) => ({ name: k.slice(gv.length + 1), namespaced: true, verbs: [] })),
        });
      }
      return status(res, 404, 'NotFound', `${collection} is not served`);
    }
    if (method === 'GET' && name === undefined) {
      if (url.searchParams.get('watch') === 'true') return this.watch(url, res, collection);
      return this.list(url, res, collection, c, namespace);
    }
    if (method === 'POST' && name === undefined) {
      const obj = body as KubeObject;
      obj.metadata.namespace ??= namespace;
      if (!obj.metadata.name && obj.metadata.generateName)
        obj.metadata.name = `${obj.metadata.generateName}${(++this.nameSeq).toString(36).padStart(5, '0')}`;
      const key = keyOf(obj.metadata.namespace, obj.metadata.name ?? '');
      if (this.read(c, key)) return status(res, 409, 'AlreadyExists', `${obj.metadata.name} already exists`);
      obj.metadata.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      obj.metadata.uid = `uid-${key.replaceAll('/', '-')}-${this.rv}`;
      const stored = this.upsert(collection, obj);
      this.onWrite?.({ at: performance.now(), method, collection, object: stored });
      return json(res, 201, stored);
    }
    if (name === undefined) return status(res, 405, 'MethodNotAllowed', 'method not allowed');
    const key = keyOf(namespace, name);
    const existing = this.read(c, key);
    if (!existing) return status(res, 404, 'NotFound', `${name} not found`);
    if (method === 'GET') return json(res, 200, existing);
    const precondition = (rv: string | undefined) =>
      rv !== undefined && rv !== '' && rv !== existing.metadata.resourceVersion;
    let next: KubeObject;
    if (method === 'PUT') {
      const obj = body as KubeObject;
      if (precondition(obj.metadata.resourceVersion))
        return status(
          res,
          409,
          'Conflict',
          'the object has been modified; please apply your changes to the latest version',
        );
      next = subresource === 'status' ? { ...existing, status: obj.status } : obj;
      next.metadata = { ...(subresource === 'status' ? existing.metadata : obj.metadata), uid: existing.metadata.uid };
    } else if (method === 'PATCH') {
      if (contentType === 'application/json-patch+json')
        return status(res, 415, 'UnsupportedMediaType', 'json patch is not served here');
      const patch = body as { metadata?: { resourceVersion?: string } } | undefined;
      if (precondition(patch?.metadata?.resourceVersion))
        return status(
          res,
          409,
          'Conflict',
          'the object has been modified; please apply your changes to the latest version',
        );
      next = mergePatch(structuredClone(existing), body, contentType?.includes('strategic') ?? false) as KubeObject;
    } else if (method === 'DELETE') {
      c.stored.delete(key);
      if ((c.generated?.indexOf(key) ?? -1) >= 0) c.deleted.add(key);
      else c.extra.splice(c.extra.indexOf(key), 1);
      const final = { ...existing, metadata: { ...existing.metadata, resourceVersion: String(++this.rv) } };
      this.emit(collection, 'DELETED', final);
      this.onWrite?.({ at: performance.now(), method, collection, object: final });
      return json(res, 200, final);
    } else return status(res, 405, 'MethodNotAllowed', 'method not allowed');
    const stored = this.upsert(collection, next);
    this.onWrite?.({ at: performance.now(), method, collection, subresource, object: stored });
    return json(res, 200, stored);
  }

  /**
   * A page of `limit` items from `continue` (an offset into generated, then stored-only objects), written to the
   * socket as it is made, so a page of 500 pods is never one big string.
   */
  private list(url: URL, res: http.ServerResponse, name: string, c: Collection, namespace: string | undefined) {
    const limit = Number(url.searchParams.get('limit') ?? 0);
    const cont = url.searchParams.get('continue');
    let offset = 0;
    let listRV = this.rv;
    if (cont) {
      const token = JSON.parse(Buffer.from(cont, 'base64').toString()) as { offset: number; rv: number };
      offset = token.offset;
      listRV = token.rv;
    }
    const generated = c.generated?.count ?? 0;
    const total = generated + c.extra.length;
    const end = limit > 0 ? Math.min(total, offset + limit) : total;
    const more = end < total;
    const metadata = {
      resourceVersion: String(listRV),
      ...(more ? { continue: Buffer.from(JSON.stringify({ offset: end, rv: listRV })).toString('base64') } : {}),
    };
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write(`{"kind":"List","apiVersion":"v1","metadata":${JSON.stringify(metadata)},"items":[`);
    let first = true;
    let chunk = '';
    const inNamespace = (o: KubeObject) => !namespace || o.metadata.namespace === namespace;
    for (let i = offset; i < end; i++) {
      let item: string | undefined;
      const key = i < generated ? c.generated!.keyAt(i) : c.extra[i - generated]!;
      const stored = c.stored.get(key);
      if (stored) {
        if (inNamespace(stored)) item = JSON.stringify(withoutTypeMeta(stored));
      } else if (i < generated && !c.deleted.has(key)) item = c.generated!.jsonAt(i);
      if (item === undefined) continue;
      chunk += first ? item : `,${item}`;
      first = false;
      if (chunk.length > 256 * 1024) {
        res.write(chunk);
        chunk = '';
      }
    }
    res.end(`${chunk}]}`);
    this.pagesServed.set(name, (this.pagesServed.get(name) ?? 0) + 1);
  }

  private watch(url: URL, res: http.ServerResponse, collection: string): void {
    const from = Number(url.searchParams.get('resourceVersion') || 0);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    for (const ev of this.log) if (ev.rv > from && ev.collection === collection) res.write(ev.line);
    const w: Watcher = { collection, res, bookmarks: url.searchParams.get('allowWatchBookmarks') === 'true' };
    this.watchers.add(w);
    res.on('close', () => this.watchers.delete(w));
  }
}

function withoutTypeMeta({ kind: _k, apiVersion: _a, ...rest }: KubeObject): Omit<KubeObject, 'kind' | 'apiVersion'> {
  return rest;
}

/** JSON merge patch; with `strategic`, lists of objects with a `type` (conditions) merge by it, as the apiserver's. */
function mergePatch(target: unknown, patch: unknown, strategic: boolean): unknown {
  if (patch === null || typeof patch !== 'object') return patch;
  if (Array.isArray(patch)) {
    if (
      !strategic ||
      !Array.isArray(target) ||
      !patch.every((p) => typeof (p as { type?: unknown })?.type === 'string')
    )
      return patch;
    const out = [...(target as { type?: string }[])];
    for (const p of patch as { type: string }[]) {
      const i = out.findIndex((t) => t.type === p.type);
      if (i < 0) out.push(p);
      else out[i] = mergePatch(out[i], p, true) as { type: string };
    }
    return out;
  }
  const out = (target && typeof target === 'object' && !Array.isArray(target) ? target : {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (k === '$patch' || k.startsWith('$setElementOrder')) continue;
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v, strategic);
  }
  return out;
}
