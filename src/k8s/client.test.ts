import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { FakeApiServer } from './testing/fake-apiserver.ts';
import {
  ApiError,
  isAlreadyExists,
  isConflict,
  isGone,
  isNotFound,
  TransportError,
  WriteRefusedError,
} from './errors.ts';
import {
  DEFAULT_MAX_IN_FLIGHT,
  defaultMaxInFlight,
  idleConnections,
  MAX_IN_FLIGHT_FOR_QPS,
  defaultUserAgent,
  followSignals,
  goJson,
  KubeClient,
  type LateWrite,
  MAX_IDLE_CONNECTIONS,
  type RequestObservation,
  type WatchEvent,
} from './client.ts';
import { resourcePath, resources } from './resources.ts';
import { RequestThrottle, TokenBucket } from './rate-limit.ts';
import type { KubeObject, Pod } from './types.ts';
import { sleep, until } from '../testing/wait.ts';

const pod = (name: string, labels: Record<string, string> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ns', labels },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
  unknownTopLevelField: { kept: true },
});

describe('resourcePath', () => {
  test('core, grouped, namespaced, cluster-scoped, subresource', () => {
    assert.equal(
      resourcePath(resources.pods, { namespace: 'a', name: 'p' }, 'status'),
      '/api/v1/namespaces/a/pods/p/status',
    );
    assert.equal(resourcePath(resources.pods), '/api/v1/pods');
    assert.equal(resourcePath(resources.nodes, { name: 'n1' }), '/api/v1/nodes/n1');
    assert.equal(
      resourcePath(resources.daemonSets, { namespace: 'x' }),
      '/apis/apps.kruise.io/v1alpha1/namespaces/x/daemonsets',
    );
  });
});

describe('goJson', () => {
  test('escapes <, >, &, U+2028 and U+2029 as Go encoding/json does; the value is unchanged', () => {
    const v = { cmd: 'a && b > c < d', sep: '\u2028\u2029' };
    const text = goJson(v);
    assert.equal(text, '{"cmd":"a \\u0026\\u0026 b \\u003e c \\u003c d","sep":"\\u2028\\u2029"}');
    assert.deepEqual(JSON.parse(text), v);
  });
});

describe('TokenBucket', () => {
  test('burst, then one token per 1/qps seconds (reservation semantics)', () => {
    let now = 0;
    const b = new TokenBucket(10, 3, () => now);
    assert.deepEqual([b.reserve(), b.reserve(), b.reserve()], [0, 0, 0]);
    assert.equal(Math.round(b.reserve()), 100);
    assert.equal(Math.round(b.reserve()), 200);
    now = 1000; // the debt of 2 is paid and the bucket refilled, but never beyond burst
    assert.equal(b.reserve(), 0);
    assert.equal(b.tryAccept(), true);
    assert.equal(b.tryAccept(), true);
    assert.equal(b.tryAccept(), false);
  });
});

describe('RequestThrottle', () => {
  test('the rate and burst of its bucket; high requests pass every normal one waiting; order kept in a lane', async () => {
    const throttle = new RequestThrottle(new TokenBucket(200, 1));
    const order: string[] = [];
    const started = performance.now();
    const wait = (name: string, priority: 'high' | 'normal') => throttle.wait(priority).then(() => order.push(name));
    const all = [wait('n1', 'normal'), wait('n2', 'normal'), wait('n3', 'normal')];
    await Promise.resolve();
    all.push(wait('h1', 'high'), wait('h2', 'high'), wait('n4', 'normal'));
    assert.equal(throttle.waiting(), 5, 'the burst of 1 let n1 through at once');
    await Promise.all(all);
    assert.deepEqual(order, ['n1', 'h1', 'h2', 'n2', 'n3', 'n4']);
    assert.ok(performance.now() - started >= 20, '5 tokens at 200 qps after the burst take ≥ 25 ms');
  });

  test('at most maxInFlight requests hold a slot; the next waits in its lane, high first; a watch takes none', async () => {
    const throttle = new RequestThrottle(new TokenBucket(0, 0), 2);
    const order: string[] = [];
    const releases = new Map<string, () => void>();
    const wait = (name: string, priority: 'high' | 'normal', takesSlot = true) =>
      throttle.wait(priority, undefined, takesSlot).then((release) => {
        order.push(name);
        releases.set(name, release);
      });
    const all = [wait('n1', 'normal'), wait('n2', 'normal'), wait('n3', 'normal'), wait('n4', 'normal')];
    await Promise.resolve();
    all.push(wait('h1', 'high'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['n1', 'n2'], 'two slots, taken in turn');
    assert.equal(throttle.running(), 2);
    assert.equal(throttle.waiting(), 3);
    releases.get('n1')!();
    releases.get('n1')!(); // a second call frees nothing more
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['n1', 'n2', 'h1'], 'the freed slot goes to the high request first');
    assert.equal(throttle.running(), 2);
    // A watch holds its connection for minutes: it takes no slot and passes while every slot is held, once it is
    // its turn in the lanes (it waits behind n3 and n4 here, so it is queued in the high lane to be next).
    const watch = wait('watch', 'high', false);
    releases.get('n2')!();
    await watch;
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['n1', 'n2', 'h1', 'watch', 'n3']);
    assert.equal(throttle.running(), 2, 'h1 and n3; the watch holds no slot');
    releases.get('h1')!();
    await Promise.all(all);
    assert.deepEqual(order, ['n1', 'n2', 'h1', 'watch', 'n3', 'n4']);
    releases.get('n3')!();
    releases.get('n4')!();
    assert.equal(throttle.running(), 0);
    assert.equal(throttle.waiting(), 0);
  });

  test('a request aborted while it waits leaves the queue, rejected with the reason, and takes no token', async () => {
    let now = 0;
    const bucket = new TokenBucket(10, 1, () => now);
    const throttle = new RequestThrottle(bucket);
    await throttle.wait(); // the burst token
    const ac = new AbortController();
    const aborted = throttle.wait('normal', ac.signal);
    const reason = new Error('leadership lost');
    ac.abort(reason);
    await assert.rejects(aborted, (err) => err === reason);
    assert.equal(throttle.waiting(), 0);
    now = 100; // one token refilled: still there, nobody took it
    assert.equal(bucket.tryAccept(), true);
    await assert.rejects(throttle.wait('high', ac.signal), (err) => err === reason, 'aborted before: not queued');
    assert.equal(throttle.waiting(), 0);
  });
});

describe('followSignals', () => {
  test("aborts with the first source's reason, and stops following the others", () => {
    const a = new AbortController();
    const b = new AbortController();
    const { signal } = followSignals([a.signal, b.signal]);
    assert.equal(getEventListeners(a.signal, 'abort').length, 1);
    b.abort(new Error('b ended'));
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as Error).message, 'b ended');
    assert.equal(getEventListeners(a.signal, 'abort').length, 0, 'nothing left on the source that did not abort');
  });

  test('a source aborted already: aborted at once, with its reason, nothing attached', () => {
    const a = new AbortController();
    const b = new AbortController();
    b.abort(new Error('gone before'));
    const { signal } = followSignals([a.signal, b.signal], 60_000);
    assert.equal((signal.reason as Error).message, 'gone before');
    assert.equal(getEventListeners(a.signal, 'abort').length, 0);
  });

  test('times out with a TimeoutError, as AbortSignal.timeout does', async () => {
    const a = new AbortController();
    const { signal } = followSignals([a.signal], 20);
    await until('the timeout', () => signal.aborted, 2000);
    assert.equal((signal.reason as DOMException).name, 'TimeoutError');
    assert.equal(getEventListeners(a.signal, 'abort').length, 0);
  });

  test('release: the long-lived source keeps no listener, the timer no longer fires, a later abort is not followed', async () => {
    const a = new AbortController();
    const { signal, release } = followSignals([a.signal], 20);
    release();
    assert.equal(getEventListeners(a.signal, 'abort').length, 0);
    await sleep(60);
    a.abort(new Error('later'));
    assert.equal(signal.aborted, false);
  });
});

describe('KubeClient against the fake apiserver', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  const observed: RequestObservation[] = [];
  before(async () => {
    await server.start();
    client = new KubeClient(server.restConfig(), { qps: 0, onRequest: (o) => observed.push(o) });
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  test('create/get/update/patch/delete keep unknown fields and send the right headers', async () => {
    const created = await client.create(resources.pods, pod('a'));
    assert.equal(created.metadata.name, 'a');
    assert.deepEqual(created.unknownTopLevelField, { kept: true });
    const last = server.requests.at(-1);
    assert.equal(last?.userAgent, defaultUserAgent);
    assert.equal(last?.authorization, 'Bearer fake-token');
    assert.match(defaultUserAgent, /^advanced-daemonset\/\d+\.\d+\.\d+/);
    assert.equal(last?.contentType, 'application/json');

    const got = await client.get<Pod>(resources.pods, { namespace: 'ns', name: 'a' });
    assert.equal(got.metadata.uid, created.metadata.uid);

    got.metadata.labels = { x: '1' };
    const updated = await client.update(resources.pods, got);
    assert.notEqual(updated.metadata.resourceVersion, got.metadata.resourceVersion);

    // A stale resourceVersion is a Conflict.
    await assert.rejects(client.update(resources.pods, got), (err) => isConflict(err) && !isAlreadyExists(err));

    await client.patch(resources.pods, updated.metadata, { metadata: { labels: { y: '2' } } }, { type: 'merge' });
    assert.equal(server.requests.at(-1)?.contentType, 'application/merge-patch+json');
    await client.patch(resources.pods, updated.metadata, { status: { phase: 'Running' } }, { type: 'strategic' });
    assert.equal(server.requests.at(-1)?.contentType, 'application/strategic-merge-patch+json');
    await client.patchStatus(
      resources.pods,
      updated.metadata,
      { status: { phase: 'Running' } },
      {
        type: 'apply',
        fieldManager: 'test',
        force: true,
      },
    );
    const applied = server.requests.at(-1);
    assert.equal(applied?.contentType, 'application/apply-patch+yaml');
    assert.equal(applied?.path, '/api/v1/namespaces/ns/pods/a/status');
    assert.equal(applied?.query.get('fieldManager'), 'test');
    assert.equal(applied?.query.get('force'), 'true');
    await assert.rejects(client.patch(resources.pods, updated.metadata, {}, { type: 'apply' }), /fieldManager/);

    await assert.rejects(client.create(resources.pods, pod('a')), (err) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.reason, 'AlreadyExists');
      assert.equal(err.verb, 'create');
      assert.equal(err.path, '/api/v1/namespaces/ns/pods');
      return isAlreadyExists(err);
    });

    await assert.rejects(
      client.delete(resources.pods, { namespace: 'ns', name: 'a' }, { preconditions: { uid: 'other' } }),
      isConflict,
    );
    await client.delete(
      resources.pods,
      { namespace: 'ns', name: 'a' },
      {
        preconditions: { uid: created.metadata.uid },
        propagationPolicy: 'Background',
      },
    );
    assert.deepEqual(server.requests.at(-1)?.body, {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { uid: created.metadata.uid },
      propagationPolicy: 'Background',
    });
    await assert.rejects(client.get(resources.pods, { namespace: 'ns', name: 'a' }), (err) => {
      assert.match(String(err), /get \/api\/v1\/namespaces\/ns\/pods\/a: 404 NotFound/);
      return isNotFound(err);
    });
    assert.ok(observed.some((o) => o.code === '404' && o.method === 'GET' && o.host === `127.0.0.1:${server.port}`));
  });

  test('listAll pages with limit/continue and falls back to a full list when the token expires', async () => {
    for (const n of ['p1', 'p2', 'p3', 'p4', 'p5']) server.upsert('core/v1/pods', pod(n, { app: 'x' }));
    const list = await client.listAll<Pod>(resources.pods, { namespace: 'ns', pageSize: 2, labelSelector: 'app=x' });
    assert.deepEqual(
      list.items.map((p) => p.metadata.name),
      ['p1', 'p2', 'p3', 'p4', 'p5'],
    );
    const pages = server.requests.filter(
      (r) => r.path === '/api/v1/namespaces/ns/pods' && r.query.get('limit') === '2',
    );
    assert.equal(pages.length, 3);
    assert.equal(pages[0]?.query.get('labelSelector'), 'app=x');

    server.hook = (r) => {
      if (r.query.get('continue')) server.compact();
      return false;
    };
    const again = await client.listAll<Pod>(resources.pods, { namespace: 'ns', pageSize: 2 });
    server.hook = undefined;
    assert.equal(again.items.length, 5);
    assert.equal(server.requests.at(-1)?.query.get('limit'), null, 'last request is the unpaged fallback');
  });

  test('listAll sends resourceVersion on the first page only, and no limit with pageSize 0', async () => {
    for (const n of ['p1', 'p2', 'p3']) server.upsert('core/v1/pods', pod(n, { app: 'x' }));
    server.requests.length = 0;
    const paged = await client.listAll<Pod>(resources.pods, { namespace: 'ns', pageSize: 2, resourceVersion: '0' });
    const pages = server.requests.filter((r) => r.path === '/api/v1/namespaces/ns/pods');
    assert.ok(pages.length >= 2, 'more than one page');
    assert.equal(pages[0]?.query.get('resourceVersion'), '0');
    for (const p of pages.slice(1)) {
      assert.ok(p.query.get('continue'));
      assert.equal(p.query.get('resourceVersion'), null, 'continue pages carry no resourceVersion');
    }
    assert.equal(paged.paginated, true);

    server.requests.length = 0;
    const whole = await client.listAll<Pod>(resources.pods, { namespace: 'ns', pageSize: 0, resourceVersion: '7' });
    assert.equal(server.requests.length, 1);
    assert.equal(server.requests[0]?.query.get('limit'), null);
    assert.equal(server.requests[0]?.query.get('resourceVersion'), '7');
    assert.equal(whole.paginated, false);
    assert.equal(whole.items.length, paged.items.length);
  });

  test('list with decodeItem: each item through it as decoded, pages and errors as without', async () => {
    for (const n of ['d1', 'd2', 'd3']) server.upsert('core/v1/pods', pod(n, { app: 'decoded' }));
    const seen: string[] = [];
    const decodeItem = (item: unknown) => {
      const p = item as Pod;
      seen.push(p.metadata.name ?? '');
      return { name: p.metadata.name, hasUnknown: 'unknownTopLevelField' in p };
    };
    const list = await client.listAll(resources.pods, {
      namespace: 'ns',
      labelSelector: 'app=decoded',
      pageSize: 2,
      decodeItem,
    });
    assert.deepEqual(list.items, [
      { name: 'd1', hasUnknown: true },
      { name: 'd2', hasUnknown: true },
      { name: 'd3', hasUnknown: true },
    ]);
    assert.deepEqual(seen, ['d1', 'd2', 'd3']);
    assert.ok(list.metadata.resourceVersion, 'the list metadata is decoded too');
    assert.equal(list.paginated, true);

    // An error answer is not a list: it is read whole and becomes an ApiError, as without decodeItem.
    server.hook = (r, res) => {
      if (r.path !== '/api/v1/namespaces/ns/pods') return false;
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'pods is forbidden' }));
      return true;
    };
    await assert.rejects(client.list(resources.pods, { namespace: 'ns', decodeItem }), (err) => {
      assert.ok(err instanceof ApiError && err.code === 403, String(err));
      return true;
    });
    // A body that ends inside the list is a TransportError (the reflector retries), not a short list.
    server.hook = (r, res) => {
      if (r.path !== '/api/v1/namespaces/ns/pods') return false;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"p1"}},{"meta');
      return true;
    };
    await assert.rejects(client.list(resources.pods, { namespace: 'ns', decodeItem }), (err) => {
      assert.ok(err instanceof TransportError, String(err));
      assert.match(String(err), /the body ended inside the list/);
      return true;
    });
    server.hook = undefined;
  });

  test('429 with Retry-After is retried', async () => {
    let refused = 0;
    server.hook = (r, res) => {
      if (r.path.endsWith('/pods/p1') && refused < 2) {
        refused++;
        res.writeHead(429, { 'Retry-After': '0', 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', reason: 'TooManyRequests', code: 429, message: 'slow down' }));
        return true;
      }
      return false;
    };
    const got = await client.get(resources.pods, { namespace: 'ns', name: 'p1' });
    server.hook = undefined;
    assert.equal(got.metadata.name, 'p1');
    assert.equal(refused, 2);
  });

  test('watch streams events, returns ApiError for 410, and stops on abort', async () => {
    const events: WatchEvent<KubeObject>[] = [];
    const ac = new AbortController();
    const rv = String(server.resourceVersion);
    const done = client.watch(resources.pods, { namespace: 'ns', resourceVersion: rv, signal: ac.signal }, (e) => {
      events.push(e);
      if (events.length === 2) ac.abort();
    });
    await until('a watch', () => server.watchCount === 1, 1000);
    server.upsert('core/v1/pods', pod('w1'));
    server.remove('core/v1/pods', 'ns', 'w1');
    await assert.rejects(done, (err) => (err as Error).name === 'AbortError');
    assert.deepEqual(
      events.map((e) => e.type),
      ['ADDED', 'DELETED'],
    );

    server.goneMode = 'http';
    server.compact();
    server.upsert('core/v1/pods', pod('w2'));
    await assert.rejects(
      client.watch(resources.pods, { namespace: 'ns', resourceVersion: '1' }, () => {}),
      isGone,
    );
    server.goneMode = 'event';
  });

  test('watch: events split across writes arrive whole; a line that is not JSON ends the watch with a TransportError', async () => {
    const first = JSON.stringify({ type: 'ADDED', object: pod('wé') });
    const second = JSON.stringify({ type: 'MODIFIED', object: pod('wé') });
    server.hook = (r, res) => {
      if (r.query.get('watch') !== 'true') return false;
      res.writeHead(200, { 'content-type': 'application/json' });
      const bytes = Buffer.from(`${first}\n${second}\n{"type":"ADDED","object":\n`);
      // Cut inside the first event's "é" (two bytes in UTF-8) and inside the second event.
      const cutA = bytes.indexOf('é') + 1;
      const cutB = bytes.length - 40;
      res.write(bytes.subarray(0, cutA));
      setTimeout(() => res.write(bytes.subarray(cutA, cutB)), 20);
      setTimeout(() => res.write(bytes.subarray(cutB)), 40);
      return true;
    };
    const events: WatchEvent<KubeObject>[] = [];
    await assert.rejects(
      client.watch(resources.pods, { namespace: 'ns' }, (e) => events.push(e)),
      (err) => {
        assert.ok(err instanceof TransportError, String(err));
        return true;
      },
    );
    server.hook = undefined;
    assert.deepEqual(events, [JSON.parse(first), JSON.parse(second)]);
  });

  test('a refused connection is a TransportError naming the request', async () => {
    const dead = new FakeApiServer();
    await dead.start();
    const config = dead.restConfig();
    await dead.stop();
    const c = new KubeClient(config);
    await assert.rejects(c.list(resources.nodes), (err) => {
      assert.ok(err instanceof TransportError);
      assert.equal(err.errno, 'ECONNREFUSED');
      assert.match(err.message, /^list \/api\/v1\/nodes:/);
      return true;
    });
  });

  test('client-side rate limit spaces requests', async () => {
    const slow = new KubeClient(server.restConfig(), { qps: 20, burst: 1 });
    const start = performance.now();
    await Promise.all([1, 2, 3].map(() => slow.list(resources.nodes)));
    assert.ok(performance.now() - start >= 90, 'three requests at 20 qps / burst 1 take ≥ 100 ms');
    slow.close();
  });

  test('maxInFlight: requests beyond it wait; answers, errors and refusals all free their slot; a watch takes none', async () => {
    const one = new KubeClient(server.restConfig(), { qps: 0, maxInFlight: 1 });
    let inFlight = 0;
    let most = 0;
    server.hook = (r) => {
      if (r.path.includes('/pods')) most = Math.max(most, ++inFlight);
      return false;
    };
    const ac = new AbortController();
    const watching = one.watch(resources.pods, { namespace: 'ns', signal: ac.signal }, () => {});
    await until('a watch', () => server.watchCount >= 1, 1000);
    inFlight = 0; // the watch's GET, still open: not a slot
    const settle = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (err: unknown) => (isNotFound(err) ? '404' : 'other'),
      );
    const tracked = <T>(p: Promise<T>) => p.finally(() => inFlight--);
    const results = await Promise.all([
      settle(tracked(one.get(resources.pods, { namespace: 'ns', name: 'p1' }))),
      settle(tracked(one.get(resources.pods, { namespace: 'ns', name: 'no-such-pod' }))),
      settle(tracked(one.list(resources.pods, { namespace: 'ns' }))),
      settle(one.withScope({ beforeWrite: () => 'refused' }).create(resources.pods, pod('never-sent'))),
      settle(tracked(one.get(resources.pods, { namespace: 'ns', name: 'p1' }))),
    ]);
    server.hook = undefined;
    assert.deepEqual(results, ['ok', '404', 'ok', 'other', 'ok']);
    assert.equal(most, 1, 'one request at a time reached the server');
    ac.abort();
    await assert.rejects(watching, (err) => (err as Error).name === 'AbortError');
    one.close();
  });

  test('the default cap on requests in flight follows the client rate above 320 QPS', () => {
    const rows: [qps: number, cap: number][] = [
      [0, DEFAULT_MAX_IN_FLIGHT],
      [30, DEFAULT_MAX_IN_FLIGHT],
      [100, DEFAULT_MAX_IN_FLIGHT],
      [320, DEFAULT_MAX_IN_FLIGHT],
      [500, 50],
      [1000, 100],
      [2000, MAX_IN_FLIGHT_FOR_QPS],
      [Infinity, DEFAULT_MAX_IN_FLIGHT],
    ];
    for (const [qps, cap] of rows) assert.equal(defaultMaxInFlight(qps), cap, `qps ${qps}`);
    assert.equal(idleConnections(DEFAULT_MAX_IN_FLIGHT), MAX_IDLE_CONNECTIONS);
    assert.equal(idleConnections(MAX_IN_FLIGHT_FOR_QPS), MAX_IN_FLIGHT_FOR_QPS / 2);
  });

  test('by default 32 requests in flight at most, and at most 16 of their connections kept alive afterwards', async (t) => {
    const own = new FakeApiServer(); // a server of its own: no connection of another test's client counted
    await own.start();
    const burst = new KubeClient(own.restConfig(), { qps: 0 });
    t.after(async () => {
      burst.close();
      await own.stop();
    });
    let inFlight = 0;
    let most = 0;
    const held: (() => void)[] = [];
    own.hook = (r, res) => {
      if (!r.path.endsWith('/pods/held')) return false;
      most = Math.max(most, ++inFlight);
      held.push(() => {
        inFlight--;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(pod('held')));
      });
      return true;
    };
    const gets = Array.from({ length: 40 }, () => burst.get(resources.pods, { namespace: 'ns', name: 'held' }));
    await until('the first requests held', () => held.length === DEFAULT_MAX_IN_FLIGHT, 5000);
    await sleep(100);
    assert.equal(held.length, DEFAULT_MAX_IN_FLIGHT, 'no request beyond the cap reached the server');
    assert.equal(own.connectionCount, DEFAULT_MAX_IN_FLIGHT, 'a connection for each');
    // Answered one at a time as they arrive, until all 40 are done.
    for (let answered = 0; answered < 40; answered++) {
      await until('a held request', () => held.length > 0, 5000);
      held.shift()!();
    }
    await Promise.all(gets);
    assert.equal(most, DEFAULT_MAX_IN_FLIGHT);
    await until(
      'idle connections beyond the kept ones closed',
      () => own.connectionCount <= MAX_IDLE_CONNECTIONS,
      5000,
    );
    assert.equal(own.connectionCount, MAX_IDLE_CONNECTIONS, 'the kept ones stay open for the next requests');
  });

  test('withScope: beforeWrite refuses writes before they are sent; reads pass; nested scopes combine', async () => {
    const fences: { inner?: string; outer?: string } = {};
    const scoped = client.withScope({ beforeWrite: () => fences.outer }).withScope({ beforeWrite: () => fences.inner });
    const before = server.requests.length;
    await scoped.create(resources.pods, pod('fenced-ok'));
    fences.inner = 'lease lost';
    await assert.rejects(scoped.create(resources.pods, pod('fenced-no')), (err: unknown) => {
      assert.ok(err instanceof WriteRefusedError);
      assert.match(err.message, /^create \/api\/v1\/namespaces\/ns\/pods: not sent: lease lost$/);
      return true;
    });
    await assert.rejects(scoped.delete(resources.pods, { namespace: 'ns', name: 'fenced-ok' }), WriteRefusedError);
    await assert.rejects(
      scoped.patch(resources.pods, { namespace: 'ns', name: 'fenced-ok' }, {}, { type: 'merge' }),
      WriteRefusedError,
    );
    assert.equal(
      (await scoped.get<Pod>(resources.pods, { namespace: 'ns', name: 'fenced-ok' })).metadata.name,
      'fenced-ok',
    );
    fences.inner = undefined;
    fences.outer = 'outer says no';
    await assert.rejects(scoped.create(resources.pods, pod('fenced-outer')), /not sent: outer says no/);
    const sent = server.requests.slice(before).map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(sent, ['POST /api/v1/namespaces/ns/pods', 'GET /api/v1/namespaces/ns/pods/fenced-ok']);
    // The unscoped client is untouched by its views.
    await client.delete(resources.pods, { namespace: 'ns', name: 'fenced-ok' });
  });

  test('withScope: the fence is checked after the rate limiter, right before the send', async () => {
    const slow = new KubeClient(server.restConfig(), { qps: 10, burst: 1 });
    const fences: { inner?: string } = {};
    const scoped = slow.withScope({ beforeWrite: () => fences.inner });
    const before = server.requests.length;
    await slow.list(resources.nodes); // takes the one burst token: the next request waits ~100 ms
    const queued = scoped.create(resources.pods, pod('queued-write'));
    fences.inner = 'renew deadline passed while queued';
    await assert.rejects(queued, /not sent: renew deadline passed while queued/);
    assert.deepEqual(
      server.requests.slice(before).map((r) => r.method),
      ['GET'],
      'the queued write never reached the server',
    );
    slow.close();
  });

  test('withScope: the fence is checked again when the socket can take the write, on a new and a kept-alive socket', async () => {
    // As a process stopped right after the first check would see it: the fence closes between the check before
    // the request is made and the moment its bytes could go out.
    for (const socket of ['new', 'kept-alive']) {
      const fresh = new KubeClient(server.restConfig());
      if (socket === 'kept-alive') await fresh.list(resources.nodes); // leaves one socket in the pool
      let checks = 0;
      const scoped = fresh.withScope({ beforeWrite: () => (++checks === 1 ? undefined : 'lease lost meanwhile') });
      const before = server.requests.length;
      await assert.rejects(scoped.create(resources.pods, pod(`late-${socket}`)), (err: unknown) => {
        assert.ok(err instanceof WriteRefusedError, String(err));
        assert.match(err.message, /not sent: lease lost meanwhile$/);
        return true;
      });
      assert.equal(checks, 2, `${socket} socket: checked before the request and when its socket was ready`);
      assert.deepEqual(server.requests.slice(before), [], `${socket} socket: the write never reached the server`);
      fresh.close();
    }
  });

  test('withScope: a fence that closes between the check on the socket and the send reports the write as late', async () => {
    // As a process paused right after that check would see it on resuming: the write went out after the fence closed.
    for (const socket of ['new', 'kept-alive']) {
      const fresh = new KubeClient(server.restConfig());
      if (socket === 'kept-alive') await fresh.list(resources.nodes);
      let checks = 0;
      const late: LateWrite[] = [];
      const scoped = fresh.withScope({
        beforeWrite: () => (++checks <= 2 ? undefined : 'lease lost meanwhile'),
        onLateWrite: (w) => late.push(w),
      });
      await scoped.create(resources.pods, pod(`paused-${socket}`));
      assert.equal(checks, 3, `${socket} socket: checked before the request, on the socket, and after the send`);
      assert.deepEqual(
        late.map((w) => `${w.verb} ${w.path}`),
        ['create /api/v1/namespaces/ns/pods'],
        `${socket} socket`,
      );
      assert.ok(server.get('core/v1/pods', 'ns', `paused-${socket}`), `${socket} socket: it went out`);
      fresh.close();
    }
  });

  test('a request past requestTimeoutMs fails with a TransportError caused by a TimeoutError', async () => {
    const quick = new KubeClient(server.restConfig(), { qps: 0, requestTimeoutMs: 100 });
    server.hook = (r) => r.path.endsWith('/pods/slow'); // never answered
    try {
      const err = await quick.get(resources.pods, { namespace: 'ns', name: 'slow' }).then(
        () => assert.fail('answered'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof TransportError, String(err));
      let cause: unknown = err;
      while (cause instanceof Error && cause.name !== 'TimeoutError') cause = cause.cause;
      assert.equal((cause as Error | undefined)?.name, 'TimeoutError', String(err));
    } finally {
      server.hook = undefined;
      quick.close();
    }
  });

  test("requests leave nothing on the scope's and the call's signals once answered", async () => {
    const leadership = new AbortController();
    const call = new AbortController();
    const scoped = client.withScope({ signal: leadership.signal });
    for (let i = 0; i < 20; i++) {
      await scoped.create(resources.pods, pod(`followed-${i}`), { signal: call.signal });
      await scoped.get(resources.pods, { namespace: 'ns', name: `followed-${i}` });
      await client.get(resources.pods, { namespace: 'ns', name: `followed-${i}` }, { signal: call.signal });
    }
    await assert.rejects(scoped.get(resources.pods, { namespace: 'ns', name: 'missing' }, { signal: call.signal }));
    assert.equal(getEventListeners(leadership.signal, 'abort').length, 0);
    assert.equal(getEventListeners(call.signal, 'abort').length, 0);
    for (let i = 0; i < 20; i++) await client.delete(resources.pods, { namespace: 'ns', name: `followed-${i}` });
  });

  test("withScope: the scope's signal aborts requests and watches of the view, not of the client", async () => {
    const ac = new AbortController();
    const scoped = client.withScope({ signal: ac.signal });
    server.hook = (r) => r.path.endsWith('/pods/hang'); // never answered
    const pending = scoped.get(resources.pods, { namespace: 'ns', name: 'hang' });
    const watching = scoped.watch(resources.pods, { namespace: 'ns' }, () => {});
    await until('the hanging request', () => server.requests.some((r) => r.path.endsWith('/pods/hang')), 1000);
    ac.abort(new Error('leadership ended'));
    await assert.rejects(pending, /leadership ended/);
    await assert.rejects(watching, /leadership ended/);
    server.hook = undefined;
    await assert.rejects(scoped.create(resources.pods, pod('after-abort')), /leadership ended/);
    const created = await client.create<Pod>(resources.pods, pod('unscoped-after-abort'));
    assert.equal(created.metadata.name, 'unscoped-after-abort', 'the client itself is not aborted');
    await client.delete(resources.pods, { namespace: 'ns', name: 'unscoped-after-abort' });
  });
});
