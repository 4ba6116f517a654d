// A tiny in-process stand-in for kube-apiserver, for runtime unit tests ONLY (docs/testing.md:
// only for edge cases a real apiserver cannot be made to produce on demand): a 410 in the middle of a watch, an ERROR event, a silent
// connection, a dropped connection, a refused connection, a Lease conflict. Everything else is
// proven against the real control plane in e2e/.
//
// It keeps objects per resource with a global resourceVersion counter and an event log, serves
// get/list (with limit/continue)/create/update/merge-patch/delete and watch from a
// resourceVersion, and exposes knobs to misbehave.
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo, Server, Socket } from 'node:net';
import { after, before } from 'node:test';
import { KubeClient, type RestConfig } from '../client.ts';
import type { KubeObject } from '../types.ts';
import { json, keyOf, onRequestBody, parsePath, status } from './http-api.ts';

interface Watcher {
  collection: string;
  namespace: string | undefined;
  res: http.ServerResponse;
  bookmarks: boolean;
}

interface LoggedEvent {
  rv: number;
  collection: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
}

export interface RequestRecord {
  method: string;
  path: string;
  query: URLSearchParams;
  userAgent: string | undefined;
  authorization: string | undefined;
  contentType: string | undefined;
  /** '1.1' or '2.0'. */
  httpVersion: string;
  body?: unknown;
  /** performance.now() when the request's body had arrived: gaps between requests measured where they happen. */
  receivedAt: number;
}

/** Return true to say the request was answered by the hook. */
export type RequestHook = (req: RequestRecord, res: http.ServerResponse) => boolean;

export class FakeApiServer {
  port = 0;
  /** Every request, in order. */
  readonly requests: RequestRecord[] = [];
  /** Watches from a resourceVersion at or below this get 410 Gone. */
  compactedRV = 0;
  /** How a compacted watch is refused: HTTP 410, or 200 followed by an ERROR event (watch cache). */
  goneMode: 'http' | 'event' = 'event';
  /** New watches get their 200 and headers, then nothing ever (a silent connection). */
  silentWatches = false;
  hook: RequestHook | undefined;
  /**
   * Serve https with this key pair (restConfig trusts `caPem`); with `http2`, HTTP/2 is offered by ALPN besides
   * HTTP/1.1 (http2.createSecureServer with allowHTTP1), as kube-apiserver does. Set before start.
   */
  tls: { certPem: string; keyPem: string; caPem: string; http2: boolean } | undefined;
  /** Every HTTP/2 session clients opened, in order. */
  readonly h2Sessions: http2.ServerHttp2Session[] = [];

  private rv = 1;
  private readonly collections = new Map<string, Map<string, KubeObject>>();
  private readonly log: LoggedEvent[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;

  async start(port = this.port): Promise<void> {
    // The HTTP/2 compatibility API's request and response stand in for HTTP/1.1's (what the routes use of them).
    const handle = (req: unknown, res: unknown) => this.handle(req as http.IncomingMessage, res as http.ServerResponse);
    const tls = this.tls;
    let server: Server;
    if (tls?.http2) {
      const h2 = http2.createSecureServer({ allowHTTP1: true, cert: tls.certPem, key: tls.keyPem }, handle);
      h2.on('session', (s) => this.h2Sessions.push(s));
      server = h2;
    } else if (tls) server = https.createServer({ cert: tls.certPem, key: tls.keyPem }, handle);
    else server = http.createServer(handle);
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Stops listening and cuts every connection (an apiserver crash). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.watchers.clear();
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  /** Client configuration pointing at this server with a bearer token. */
  restConfig(): RestConfig {
    return { server: this.url, ca: this.tls?.caPem, headers: { Authorization: 'Bearer fake-token' } };
  }

  get resourceVersion(): number {
    return this.rv;
  }

  get watchCount(): number {
    return this.watchers.size;
  }

  /** Connections open to the server now. */
  get connectionCount(): number {
    return this.sockets.size;
  }

  // --- test-side mutations ---------------------------------------------------------------------

  /** Creates or replaces an object directly (no conflict checks), emitting a watch event. */
  upsert(collection: string, obj: KubeObject): KubeObject {
    const objects = this.collection(collection);
    const key = keyOf(obj.metadata.namespace, obj.metadata.name ?? '');
    const existed = objects.has(key);
    const stored = structuredClone(obj);
    stored.metadata.uid ??= objects.get(key)?.metadata.uid ?? `uid-${obj.metadata.name}-${this.rv}`;
    stored.metadata.resourceVersion = String(++this.rv);
    objects.set(key, stored);
    this.emit(collection, existed ? 'MODIFIED' : 'ADDED', stored);
    return stored;
  }

  remove(collection: string, namespace: string | undefined, name: string): void {
    const objects = this.collection(collection);
    const key = keyOf(namespace, name);
    const obj = objects.get(key);
    if (!obj) return;
    objects.delete(key);
    const final = structuredClone(obj);
    final.metadata.resourceVersion = String(++this.rv);
    this.emit(collection, 'DELETED', final);
  }

  /** Changes an object without telling any watcher (an event lost while disconnected). */
  upsertSilently(collection: string, obj: KubeObject): void {
    const stored = structuredClone(obj);
    stored.metadata.uid ??= `uid-${obj.metadata.name}-${this.rv}`;
    stored.metadata.resourceVersion = String(++this.rv);
    this.collection(collection).set(keyOf(obj.metadata.namespace, obj.metadata.name ?? ''), stored);
  }

  removeSilently(collection: string, namespace: string | undefined, name: string): void {
    this.collection(collection).delete(keyOf(namespace, name));
    this.rv++;
  }

  /** The objects of a collection, in one namespace or all. */
  objects(collection: string, namespace?: string): KubeObject[] {
    return [...this.collection(collection).values()].filter(
      (o) => namespace === undefined || o.metadata.namespace === namespace,
    );
  }

  get(collection: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.collections.get(collection)?.get(keyOf(namespace, name));
  }

  /** Forgets history: watches from older resourceVersions now get 410. */
  compact(): void {
    this.compactedRV = this.rv;
    this.log.length = 0;
  }

  /** Sends an ERROR event with this status on every open watch, then ends them. */
  sendWatchError(status: { code: number; reason: string; message: string }): void {
    for (const w of this.watchers) {
      write(w.res, { type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', ...status } });
      w.res.end();
    }
    this.watchers.clear();
  }

  /** Sends a BOOKMARK at the current resourceVersion on watches that allow them. */
  sendBookmarks(kind = 'Pod', apiVersion = 'v1'): void {
    for (const w of this.watchers) {
      if (w.bookmarks) {
        write(w.res, {
          type: 'BOOKMARK',
          object: { kind, apiVersion, metadata: { resourceVersion: String(this.rv) } },
        });
      }
    }
  }

  /** Ends every watch cleanly (as the server-side timeout does). */
  endWatches(): void {
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
  }

  /** Cuts every watch connection mid-stream (a load balancer dropping it). */
  dropWatches(): void {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
  }

  // --- HTTP ------------------------------------------------------------------------------------

  private collection(name: string): Map<string, KubeObject> {
    let c = this.collections.get(name);
    if (!c) this.collections.set(name, (c = new Map()));
    return c;
  }

  private emit(collection: string, type: LoggedEvent['type'], object: KubeObject): void {
    const ev = { rv: this.rv, collection, type, object };
    this.log.push(ev);
    for (const w of this.watchers) {
      if (w.collection === collection && (!w.namespace || w.namespace === object.metadata.namespace)) {
        write(w.res, { type, object });
      }
    }
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    onRequestBody(req, (url, text) => {
      const record: RequestRecord = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        userAgent: req.headers['user-agent'],
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        httpVersion: req.httpVersion,
        body: text ? JSON.parse(text) : undefined,
        receivedAt: performance.now(),
      };
      this.requests.push(record);
      if (this.hook?.(record, res)) return;
      try {
        this.route(record, res);
      } catch (err) {
        status(res, 500, 'InternalError', (err as Error).message);
      }
    });
  }

  private route(r: RequestRecord, res: http.ServerResponse): void {
    const parsed = parsePath(r.path);
    if (!parsed || parsed.resourceMissing) return status(res, 404, 'NotFound', `no route for ${r.path}`);
    const { collection, namespace, name, subresource } = parsed;
    const objects = this.collection(collection);

    if (r.method === 'GET' && name === undefined) {
      if (r.query.get('watch') === 'true') return this.watch(r, res, collection, namespace);
      return this.list(r, res, objects, namespace);
    }
    if (r.method === 'POST' && name === undefined) {
      const obj = r.body as KubeObject;
      obj.metadata.namespace ??= namespace;
      if (!obj.metadata.name && obj.metadata.generateName) {
        obj.metadata.name = `${obj.metadata.generateName}${Math.random().toString(36).slice(2, 7)}`;
      }
      if (objects.has(keyOf(namespace, obj.metadata.name ?? ''))) {
        return status(res, 409, 'AlreadyExists', `${obj.metadata.name} already exists`);
      }
      obj.metadata.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      return json(res, 201, this.upsert(collection, obj));
    }
    if (name === undefined) return status(res, 405, 'MethodNotAllowed', 'method not allowed');
    const existing = objects.get(keyOf(namespace, name));
    switch (r.method) {
      case 'GET':
        if (!existing) return status(res, 404, 'NotFound', `${name} not found`);
        return json(res, 200, existing);
      case 'PUT': {
        if (!existing) return status(res, 404, 'NotFound', `${name} not found`);
        const obj = r.body as KubeObject;
        if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== existing.metadata.resourceVersion) {
          return status(
            res,
            409,
            'Conflict',
            `the object has been modified; please apply your changes to the latest version`,
          );
        }
        const next = subresource === 'status' ? { ...existing, status: obj.status } : obj;
        next.metadata = { ...obj.metadata, uid: existing.metadata.uid };
        return json(res, 200, this.upsert(collection, next as KubeObject));
      }
      case 'PATCH': {
        if (!existing) return status(res, 404, 'NotFound', `${name} not found`);
        if (r.contentType === 'application/json-patch+json') {
          return status(res, 415, 'UnsupportedMediaType', 'json patch is not implemented by the fake');
        }
        // A resourceVersion in the patch is a precondition, as the real apiserver treats it.
        const patchRV = (r.body as { metadata?: { resourceVersion?: string } } | undefined)?.metadata?.resourceVersion;
        if (patchRV && patchRV !== existing.metadata.resourceVersion) {
          return status(
            res,
            409,
            'Conflict',
            'the object has been modified; please apply your changes to the latest version',
          );
        }
        const merged = mergePatch(structuredClone(existing), r.body) as KubeObject;
        return json(res, 200, this.upsert(collection, merged));
      }
      case 'DELETE': {
        if (!existing) return status(res, 404, 'NotFound', `${name} not found`);
        const pre = (r.body as { preconditions?: { uid?: string; resourceVersion?: string } } | undefined)
          ?.preconditions;
        if (pre?.uid && pre.uid !== existing.metadata.uid)
          return status(res, 409, 'Conflict', 'precondition failed: uid');
        if (pre?.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
          return status(res, 409, 'Conflict', 'precondition failed: resourceVersion');
        }
        this.remove(collection, namespace, name);
        return json(res, 200, existing);
      }
      default:
        return status(res, 405, 'MethodNotAllowed', 'method not allowed');
    }
  }

  private list(r: RequestRecord, res: http.ServerResponse, objects: Map<string, KubeObject>, namespace?: string): void {
    let items = [...objects.values()].filter((o) => !namespace || o.metadata.namespace === namespace);
    const selector = r.query.get('labelSelector');
    if (selector) {
      const [k, v] = selector.split('=');
      items = items.filter((o) => o.metadata.labels?.[k ?? ''] === v);
    }
    items.sort((a, b) =>
      keyOf(a.metadata.namespace, a.metadata.name ?? '').localeCompare(
        keyOf(b.metadata.namespace, b.metadata.name ?? ''),
      ),
    );
    const limit = Number(r.query.get('limit') ?? 0);
    const cont = r.query.get('continue');
    let offset = 0;
    let listRV = this.rv;
    if (cont) {
      const token = JSON.parse(Buffer.from(cont, 'base64').toString()) as { offset: number; rv: number };
      if (token.rv <= this.compactedRV) return status(res, 410, 'Expired', 'continue token expired');
      offset = token.offset;
      listRV = token.rv;
    }
    const page = limit > 0 ? items.slice(offset, offset + limit) : items.slice(offset);
    const more = limit > 0 && offset + limit < items.length;
    json(res, 200, {
      kind: 'List',
      apiVersion: 'v1',
      metadata: {
        resourceVersion: String(listRV),
        ...(more
          ? { continue: Buffer.from(JSON.stringify({ offset: offset + limit, rv: listRV })).toString('base64') }
          : {}),
      },
      // Real lists omit kind/apiVersion on items.
      items: page.map(({ kind: _k, apiVersion: _a, ...rest }) => rest),
    });
  }

  private watch(r: RequestRecord, res: http.ServerResponse, collection: string, namespace?: string): void {
    const from = Number(r.query.get('resourceVersion') || 0);
    if (from && from < this.compactedRV && this.goneMode === 'http') {
      return status(res, 410, 'Expired', `too old resource version: ${from} (${this.compactedRV})`);
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    if (this.silentWatches) return; // never registered: no events, no end
    if (from && from < this.compactedRV) {
      write(res, {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'Expired',
          code: 410,
          message: `too old resource version: ${from} (${this.compactedRV})`,
        },
      });
      res.end();
      return;
    }
    for (const ev of this.log) {
      if (ev.rv > from && ev.collection === collection && (!namespace || ev.object.metadata.namespace === namespace)) {
        write(res, { type: ev.type, object: ev.object });
      }
    }
    const w: Watcher = { collection, namespace, res, bookmarks: r.query.get('allowWatchBookmarks') === 'true' };
    this.watchers.add(w);
    res.on('close', () => this.watchers.delete(w));
  }
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out = (target && typeof target === 'object' && !Array.isArray(target) ? target : {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function write(res: http.ServerResponse, event: unknown): void {
  res.write(`${JSON.stringify(event)}\n`);
}

/**
 * Starts `server` before the calling describe's tests, with a KubeClient on it (no client-side rate limit) handed
 * to `onStarted`; closes both after them.
 */
export function startForSuite(server: FakeApiServer, onStarted: (client: KubeClient) => void): void {
  let client: KubeClient | undefined;
  before(async () => {
    await server.start();
    client = new KubeClient(server.restConfig(), { qps: 0 });
    onStarted(client);
  });
  after(async () => {
    client?.close();
    await server.stop();
  });
}
