// KubeClient's unary requests over HTTP/2 (H2Connection in client.ts), against the fake apiserver served over TLS:
// one session multiplexes them, lists and watches stay on HTTP/1.1, a lost or closing session is recovered as an
// HTTP/1.1 connection would be, and a server without h2 is spoken to over HTTP/1.1.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import type http from 'node:http';
import { FakeApiServer, type RequestRecord } from './testing/fake-apiserver.ts';
import { TransportError, WriteRefusedError } from './errors.ts';
import { KubeClient, type LateWrite, type WatchEvent } from './client.ts';
import { resources } from './resources.ts';
import type { Pod } from './types.ts';
import { createCA, createLeaf } from '../pki/pki.ts';
import { until } from '../testing/wait.ts';

const pod = (name: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ns' },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
});

let serving: { certPem: string; keyPem: string; caPem: string };
before(async () => {
  const ca = await createCA('fake-apiserver-ca');
  const leaf = await createLeaf(ca, { commonName: 'apiserver', ipAddresses: ['127.0.0.1'], usage: 'server' });
  serving = { ...leaf, caPem: ca.certPem };
});

async function startServer(http2: boolean): Promise<FakeApiServer> {
  const server = new FakeApiServer();
  server.tls = { ...serving, http2 };
  await server.start();
  return server;
}

/** Holds requests matching `match` unanswered; `held` lists them with their responses. */
function hold(server: FakeApiServer, match: (r: RequestRecord) => boolean) {
  const held: { r: RequestRecord; res: http.ServerResponse }[] = [];
  server.hook = (r, res) => {
    if (!match(r)) return false;
    held.push({ r, res });
    return true;
  };
  return held;
}

/** The server side of a held HTTP/2 request (the compatibility API's response carries its stream). */
const streamOf = (res: http.ServerResponse) => (res as unknown as http2.Http2ServerResponse).stream;

describe('KubeClient over HTTP/2', () => {
  let server: FakeApiServer;
  let client: KubeClient;
  before(async () => {
    server = await startServer(true);
    client = new KubeClient(server.restConfig(), { qps: 0 });
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  test('unary requests share one HTTP/2 session, with the headers HTTP/1.1 sends; lists and watches stay on HTTP/1.1', async () => {
    server.requests.length = 0;
    const created = await client.create(resources.pods, pod('a'));
    await client.get(resources.pods, { namespace: 'ns', name: 'a' });
    await client.update(resources.pods, { ...created, metadata: { ...created.metadata, labels: { x: 'y' } } });
    await client.patch(
      resources.pods,
      { namespace: 'ns', name: 'a' },
      { metadata: { labels: { z: '1' } } },
      { type: 'merge' },
    );
    const list = await client.list(resources.pods, { namespace: 'ns' });
    assert.deepEqual(
      list.items.map((p) => p.metadata.name),
      ['a'],
    );
    const events: WatchEvent[] = [];
    const watching = new AbortController();
    const watch = client.watch(
      resources.pods,
      { namespace: 'ns', resourceVersion: list.metadata.resourceVersion, signal: watching.signal },
      (e) => {
        events.push(e);
      },
    );
    await until('the watch', () => server.watchCount === 1);
    await client.delete(resources.pods, { namespace: 'ns', name: 'a' });
    await until('the DELETED event', () => events.some((e) => e.type === 'DELETED'));
    watching.abort();
    await assert.rejects(watch);

    assert.deepEqual(
      server.requests.map((r) => `${r.method} ${r.query.get('watch') ? 'watch' : ''}${r.httpVersion}`),
      ['POST 2.0', 'GET 2.0', 'PUT 2.0', 'PATCH 2.0', 'GET 1.1', 'GET watch1.1', 'DELETE 2.0'],
    );
    for (const r of server.requests) {
      assert.equal(r.authorization, 'Bearer fake-token');
      assert.match(r.userAgent ?? '', /^advanced-daemonset\//);
    }
    assert.equal(server.requests[3]!.contentType, 'application/merge-patch+json');
    assert.equal(server.requests[0]!.contentType, 'application/json');
    assert.equal(server.h2Sessions.length, 1);
  });

  test('concurrent requests are multiplexed over the one session', async () => {
    const sessionsBefore = server.h2Sessions.length;
    const held = hold(server, (r) => r.path.startsWith('/api/v1/namespaces/ns/pods/m'));
    const gets = Array.from({ length: 20 }, (_, i) =>
      client.getIfExists(resources.pods, { namespace: 'ns', name: `m${i}` }),
    );
    // All 20 reach the server before any is answered: in flight together.
    await until('20 requests in flight', () => held.length === 20);
    const streams = new Set(held.map(({ res }) => streamOf(res).session));
    assert.equal(streams.size, 1);
    server.hook = undefined;
    for (const { res } of held)
      res.writeHead(404, { 'Content-Type': 'application/json' }).end('{"kind":"Status","code":404}');
    assert.deepEqual(await Promise.all(gets), Array(20).fill(undefined));
    assert.equal(server.h2Sessions.length, sessionsBefore);
  });

  test('GOAWAY: streams up to its last one are answered, a write past it is sent again on a new session', async () => {
    const sessionsBefore = server.h2Sessions.length;
    server.upsert('core/v1/pods', pod('before-goaway'));
    const held = hold(server, (r) => r.method === 'GET' || (r.method === 'POST' && held.length === 1));
    const get = client.get(resources.pods, { namespace: 'ns', name: 'before-goaway' });
    await until('the get held', () => held.length === 1);
    const create = client.create(resources.pods, pod('goaway'));
    await until('the create held', () => held.length === 2);
    // A graceful GOAWAY whose last stream is the get's: the create's stream was not processed.
    const getStream = streamOf(held[0]!.res);
    getStream.session!.goaway(http2.constants.NGHTTP2_NO_ERROR, getStream.id!);
    const created = await create;
    assert.equal(created.metadata.name, 'goaway');
    assert.equal(server.h2Sessions.length, sessionsBefore + 1);
    server.hook = undefined;
    held[0]!.res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"metadata":{"name":"before-goaway"}}');
    assert.equal((await get).metadata?.name, 'before-goaway');
    await client.delete(resources.pods, { namespace: 'ns', name: 'goaway' });
    assert.equal(server.h2Sessions.length, sessionsBefore + 1);
  });

  test('a stream refused (RST_STREAM REFUSED_STREAM) is sent again, even a write', async () => {
    const held = hold(server, (r) => r.method === 'POST' && held.length === 0);
    const create = client.create(resources.pods, pod('refused'));
    await until('the create held', () => held.length === 1);
    streamOf(held[0]!.res).close(http2.constants.NGHTTP2_REFUSED_STREAM);
    assert.equal((await create).metadata.name, 'refused');
    server.hook = undefined;
    await client.delete(resources.pods, { namespace: 'ns', name: 'refused' });
  });

  test('a session lost mid-request: a read is retried on a new session, a write fails with a TransportError', async () => {
    server.upsert('core/v1/pods', pod('lost'));
    let held = hold(server, (r) => r.method === 'GET' && held.length === 0);
    const get = client.get(resources.pods, { namespace: 'ns', name: 'lost' });
    await until('the get held', () => held.length === 1);
    streamOf(held[0]!.res).session!.destroy();
    assert.equal((await get).metadata?.name, 'lost');

    held = hold(server, (r) => r.method === 'PUT');
    const update = client.update(resources.pods, pod('lost'));
    await until('the update held', () => held.length === 1);
    streamOf(held[0]!.res).session!.destroy();
    await assert.rejects(update, (err) => {
      assert.ok(err instanceof TransportError, String(err));
      assert.equal(err.errno, 'ECONNRESET');
      return true;
    });
    assert.equal(held.length, 1, 'a write is not sent twice');
    server.hook = undefined;
  });

  test("a scope's fenced writes go over an HTTP/2 session of their own; its reads over the shared one", async () => {
    const scoped = client.withScope({ beforeWrite: () => undefined });
    server.requests.length = 0;
    const sessions: unknown[] = [];
    server.hook = (_r, res) => {
      sessions.push(streamOf(res).session);
      return false;
    };
    await scoped.create(resources.pods, pod('fenced'));
    await scoped.get(resources.pods, { namespace: 'ns', name: 'fenced' });
    await scoped.delete(resources.pods, { namespace: 'ns', name: 'fenced' });
    server.hook = undefined;
    assert.deepEqual(
      server.requests.map((r) => `${r.method} ${r.httpVersion}`),
      ['POST 2.0', 'GET 2.0', 'DELETE 2.0'],
    );
    assert.equal(sessions[0], sessions[2], 'the fenced writes share a session');
    assert.notEqual(sessions[0], sessions[1], 'not the one of reads');
  });

  test("both sessions' sockets are dialed with Nagle off, the write gate's too", async (t) => {
    const fresh = new KubeClient(server.restConfig(), { qps: 0 });
    const dialed: tls.TLSSocket[] = [];
    const connect = tls.connect.bind(tls);
    t.mock.method(tls, 'connect', (...args: Parameters<typeof tls.connect>) => {
      const socket = connect(...args);
      dialed.push(socket);
      return socket;
    });
    const noDelay = t.mock.method(net.Socket.prototype, 'setNoDelay');
    try {
      await fresh.withScope({ beforeWrite: () => undefined }).create(resources.pods, pod('nagle'));
      await fresh.get(resources.pods, { namespace: 'ns', name: 'nagle' });
    } finally {
      fresh.close();
    }
    const h2 = dialed.filter((s) => s.alpnProtocol === 'h2');
    assert.equal(h2.length, 2, 'the fenced session and the shared one');
    for (const socket of h2) {
      const calls = noDelay.mock.calls.filter((c) => c.this === socket && c.arguments[0] !== false);
      assert.ok(calls.length > 0, 'setNoDelay(true) on each dialed socket');
    }
  });

  describe('the write fence holds until the frames are written', () => {
    /** A fenced scope whose fence closes after `open` more checks (the first is the one before the request sets out). */
    function fencedScope() {
      const fence = { open: Infinity, checks: 0 };
      const late: LateWrite[] = [];
      const scoped = client.withScope({
        beforeWrite: () => {
          fence.checks++;
          return fence.open-- > 0 ? undefined : 'lease lost meanwhile';
        },
        onLateWrite: (w) => late.push(w),
      });
      return { fence, scoped, late };
    }

    /**
     * Makes a first fenced write (`warm`), then records every stream the server's side of its session opens, from its
     * HEADERS on: the body bytes that arrived, and whether it was cut off (its session closed before END_STREAM).
     */
    async function watchStreams(scoped: KubeClient, warm: string) {
      let session: http2.Http2Session | undefined;
      server.hook = (_r, res) => {
        session = streamOf(res).session;
        return false;
      };
      await scoped.create(resources.pods, pod(warm));
      server.hook = undefined;
      const streams: { path: string; bytes: number; aborted: boolean }[] = [];
      session!.on('stream', (stream, headers) => {
        const s = { path: String(headers[':path']), bytes: 0, aborted: false };
        streams.push(s);
        stream.on('data', (chunk: Buffer) => (s.bytes += chunk.length));
        stream.once('aborted', () => (s.aborted = true));
      });
      return { session: session!, streams };
    }

    test('a fence that closes after the check before the request set out: no frame of it is written', async () => {
      const { fence, scoped, late } = fencedScope();
      const { session, streams } = await watchStreams(scoped, 'warm-1');
      server.requests.length = 0;
      // Passes the check in KubeClient.request, then is checked again by the gate as the frames are written.
      fence.open = 1;
      fence.checks = 0;
      await assert.rejects(scoped.create(resources.pods, pod('late')), (err) => {
        assert.ok(err instanceof WriteRefusedError, String(err));
        assert.match(err.message, /not sent: lease lost meanwhile/);
        return true;
      });
      assert.ok(fence.checks >= 2, `checked again as it was written (${fence.checks} checks)`);
      await until('the server to see the session closed', () => session.closed || session.destroyed);
      assert.deepEqual(streams, [], 'no HEADERS of the refused request reached the server');
      assert.deepEqual(server.requests, []);
      assert.equal(server.get('core/v1/pods', 'ns', 'late'), undefined);
      assert.deepEqual(late, [], 'a refused write is not a late one');

      // Reads go on over their own session; a write passing its fence opens a new fenced session.
      await client.get(resources.pods, { namespace: 'ns', name: 'warm-1' });
      fence.open = Infinity;
      await scoped.delete(resources.pods, { namespace: 'ns', name: 'warm-1' });
    });

    test('a fence that closes while a body is written: its END_STREAM never reaches the server', async () => {
      const { fence, scoped } = fencedScope();
      const { streams } = await watchStreams(scoped, 'warm-2');
      server.requests.length = 0;
      // 256 KiB: more than the stream's flow-control window (64 KiB), so the body goes out over several writes, the
      // later ones once the server's WINDOW_UPDATE came back.
      const big = pod('big');
      big.metadata.annotations = { big: 'x'.repeat(256 * 1024) };
      // The check before the request set out, and the gate's first write (HEADERS and the first DATA).
      fence.open = 2;
      const err = await scoped.create(resources.pods, big).then(
        () => assert.fail('answered'),
        (e: unknown) => e,
      );
      // Some of it was written: the client cannot tell whether the server has it all, so it says the session was lost.
      assert.ok(err instanceof TransportError || err instanceof WriteRefusedError, String(err));
      await until('the server stream to be cut off', () => streams[0]?.aborted === true);
      assert.equal(streams.length, 1);
      assert.equal(streams[0]!.path, '/api/v1/namespaces/ns/pods');
      assert.ok(streams[0]!.bytes > 0, 'some of the body was written before the fence closed');
      assert.ok(streams[0]!.bytes < 256 * 1024, `the body was cut off (${streams[0]!.bytes} bytes arrived)`);
      assert.deepEqual(server.requests, [], 'no complete request reached the server');
      assert.equal(server.get('core/v1/pods', 'ns', 'big'), undefined);
      fence.open = Infinity;
      await scoped.delete(resources.pods, { namespace: 'ns', name: 'warm-2' });
    });

    test('a fence that closes between the check as the frames are written and their send: reported as late', async () => {
      const { fence, scoped, late } = fencedScope();
      await scoped.create(resources.pods, pod('warm-4'));
      assert.equal(late.length, 0, 'writes sent with the fence open are not reported');
      server.requests.length = 0;
      // The check before the request set out and the gate's as it hands the frames to the socket pass; the one right
      // after the send finds the fence closed, as a process paused between the two would on resuming.
      fence.open = 2;
      await scoped.create(resources.pods, pod('paused')).catch(() => undefined);
      assert.deepEqual(
        late.map((w) => `${w.verb} ${w.path}`),
        ['create /api/v1/namespaces/ns/pods'],
      );
      assert.ok(late[0]!.pausedMs >= 0 && late[0]!.pausedMs < 10_000, `a duration (${late[0]!.pausedMs} ms)`);
      assert.deepEqual(
        server.requests.map((r) => `${r.method} ${(r.body as Pod).metadata.name}`),
        ['POST paused'],
        'it went out: what the report says',
      );
      fence.open = Infinity;
      await scoped.delete(resources.pods, { namespace: 'ns', name: 'warm-4' });
      await scoped.delete(resources.pods, { namespace: 'ns', name: 'paused' });
    });

    test("another scope's write on the session a fence closed is sent again when none of it went out", async () => {
      const { fence, scoped } = fencedScope();
      const other = client.withScope({ beforeWrite: () => undefined });
      await scoped.create(resources.pods, pod('warm-3'));
      server.requests.length = 0;
      fence.open = 1;
      const [lost, kept] = await Promise.allSettled([
        scoped.create(resources.pods, pod('lost')),
        other.create(resources.pods, pod('kept')),
      ]);
      assert.equal(lost.status, 'rejected');
      assert.ok((lost as PromiseRejectedResult).reason instanceof WriteRefusedError);
      assert.equal(kept.status, 'fulfilled', String((kept as PromiseRejectedResult).reason));
      assert.deepEqual(
        server.requests.map((r) => `${r.method} ${(r.body as Pod).metadata.name}`),
        ['POST kept'],
      );
      fence.open = Infinity;
      await scoped.delete(resources.pods, { namespace: 'ns', name: 'warm-3' });
      await other.delete(resources.pods, { namespace: 'ns', name: 'kept' });
    });
  });

  test('abort and timeout cancel the stream (RST_STREAM CANCEL), not the session', async () => {
    const held = hold(server, (r) => r.path.endsWith('/pods/slow'));
    const abort = new AbortController();
    const get = client.get(resources.pods, { namespace: 'ns', name: 'slow' }, { signal: abort.signal });
    await until('the get held', () => held.length === 1);
    const stream = streamOf(held[0]!.res);
    const session = stream.session!;
    abort.abort(new Error('stop'));
    await assert.rejects(get, /stop/);
    await until('the server stream closed', () => stream.closed);
    assert.equal(stream.rstCode, http2.constants.NGHTTP2_CANCEL);
    assert.equal(session.destroyed, false);

    const quick = new KubeClient(server.restConfig(), { qps: 0, requestTimeoutMs: 100 });
    try {
      const err = await quick.get(resources.pods, { namespace: 'ns', name: 'slow' }).then(
        () => assert.fail('answered'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof TransportError, String(err));
      assert.equal((err.cause as Error).name, 'TimeoutError');
    } finally {
      server.hook = undefined;
      quick.close();
    }
  });
});

describe('KubeClient falls back to HTTP/1.1', () => {
  test('when the server does not offer h2 by ALPN', async () => {
    const server = await startServer(false);
    const client = new KubeClient(server.restConfig(), { qps: 0 });
    try {
      await client.create(resources.pods, pod('a'));
      await Promise.all([client.get(resources.pods, { namespace: 'ns', name: 'a' }), client.list(resources.pods)]);
      assert.deepEqual(
        server.requests.map((r) => r.httpVersion),
        ['1.1', '1.1', '1.1'],
      );
    } finally {
      client.close();
      await server.stop();
    }
  });

  test('with the http2 option off', async () => {
    const server = await startServer(true);
    const client = new KubeClient(server.restConfig(), { qps: 0, http2: false });
    try {
      await client.create(resources.pods, pod('a'));
      await client.get(resources.pods, { namespace: 'ns', name: 'a' });
      assert.deepEqual(
        server.requests.map((r) => r.httpVersion),
        ['1.1', '1.1'],
      );
      assert.equal(server.h2Sessions.length, 0);
    } finally {
      client.close();
      await server.stop();
    }
  });
});
