// KubeClient's unary requests over HTTP/2 (H2Connection in client.ts), against the fake apiserver served over TLS:
// one session multiplexes them, lists and watches stay on HTTP/1.1, a lost or closing session is recovered as an
// HTTP/1.1 connection would be, and a server without h2 is spoken to over HTTP/1.1.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type http from 'node:http';
import { FakeApiServer, type RequestRecord } from './testing/fake-apiserver.ts';
import { TransportError } from './errors.ts';
import { KubeClient, type WatchEvent } from './client.ts';
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

  test("a scope's fenced writes go over HTTP/1.1 (their fence checked in the tick they are sent); its reads over HTTP/2", async () => {
    const scoped = client.withScope({ beforeWrite: () => undefined });
    server.requests.length = 0;
    await scoped.create(resources.pods, pod('fenced'));
    await scoped.get(resources.pods, { namespace: 'ns', name: 'fenced' });
    await scoped.delete(resources.pods, { namespace: 'ns', name: 'fenced' });
    assert.deepEqual(
      server.requests.map((r) => `${r.method} ${r.httpVersion}`),
      ['POST 1.1', 'GET 2.0', 'DELETE 1.1'],
    );
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
