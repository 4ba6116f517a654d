// The dashboard's HTTP side over a fake source: routes, the localhost-only Host check, server-sent events (first view
// at once, then each pushed change, unsubscribed when the page goes), the page script built from the sources, and the
// throttle that folds bursts of watch events into few pushes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../../src/testing/wait.ts';
import { createDashboardServer, SECURITY_HEADERS } from './server.ts';
import { loadAssets } from './assets.ts';
import { throttle } from './source.ts';
import { StaticSource } from './testing.ts';

const row = (name: string, updated: number) => ({
  namespace: 'default',
  name,
  strategy: 'RollingUpdate/Standard',
  desired: 3,
  current: 3,
  updated,
  ready: 3,
  available: 3,
  unavailable: 0,
  partition: '-',
  paused: false,
  canary: '-',
  updateRevision: 'h',
  observed: true,
  complete: updated === 3,
});

/** Reads server-sent events from a fetch body: yields [event, data] pairs. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<[string, unknown]> {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data) yield [event, JSON.parse(data)];
    }
  }
}

describe('dashboard server', () => {
  const assets = { html: '<!doctype html><title>t</title>', script: 'console.log(1)' };

  test('serves the page, its script and the JSON views', async (t) => {
    const source = new StaticSource();
    source.listView = { ...source.listView, daemonSets: [row('ds1', 1)] };
    source.details.set('default/ds1', { namespace: 'default', name: 'ds1', synced: true, found: true, events: [] });
    const app = await createDashboardServer(source, assets);
    t.after(() => app.close());
    const page = await app.inject({ url: '/', headers: { host: '127.0.0.1:8765' } });
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /^text\/html/);
    assert.equal(page.body, assets.html);
    const script = await app.inject({ url: '/app.js', headers: { host: 'localhost:8765' } });
    assert.equal(script.statusCode, 200);
    assert.match(script.headers['content-type'] as string, /^text\/javascript/);
    const list = await app.inject({ url: '/api/daemonsets', headers: { host: '127.0.0.1:8765' } });
    assert.deepEqual(list.json(), source.listView);
    const found = await app.inject({ url: '/api/daemonsets/default/ds1', headers: { host: '127.0.0.1:8765' } });
    assert.equal(found.statusCode, 200);
    assert.equal(found.json().found, true);
    const missing = await app.inject({ url: '/api/daemonsets/default/nope', headers: { host: '127.0.0.1:8765' } });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().found, false);
  });

  test('every response carries the security headers: CSP, no framing, no sniffing, no referrer', async (t) => {
    const app = await createDashboardServer(new StaticSource(), assets);
    t.after(() => app.close());
    for (const [url, host] of [
      ['/', '127.0.0.1:8765'],
      ['/app.js', 'localhost:8765'],
      ['/api/daemonsets', '127.0.0.1:8765'],
      ['/nope', '127.0.0.1:8765'],
      ['/', 'evil.example'],
    ]) {
      const res = await app.inject({ url: url!, headers: { host: host! } });
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) assert.equal(res.headers[k], v, `${url} (${host}): ${k}`);
    }
    assert.match(SECURITY_HEADERS['content-security-policy']!, /default-src 'none'.*frame-ancestors 'none'/);
  });

  test('refuses requests under any other host name (DNS rebinding)', async (t) => {
    const app = await createDashboardServer(new StaticSource(), assets);
    t.after(() => app.close());
    for (const host of ['evil.example:8765', 'evil.example', '10.0.0.1:8765']) {
      const res = await app.inject({ url: '/api/daemonsets', headers: { host } });
      assert.equal(res.statusCode, 403, host);
    }
  });

  test('the list stream sends the current view, then every change; closing the page unsubscribes', async (t) => {
    const source = new StaticSource();
    const app = await createDashboardServer(source, assets);
    t.after(() => app.close());
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const abort = new AbortController();
    const res = await fetch(`http://127.0.0.1:${port}/api/stream`, { signal: abort.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const it = events(res.body!);
    const first = await it.next();
    assert.deepEqual(first.value, ['list', source.listView]);
    const next = { ...source.listView, daemonSets: [row('ds1', 2)] };
    source.setList(next);
    const second = await it.next();
    assert.deepEqual(second.value, ['list', next]);
    abort.abort();
    await until('the stream to unsubscribe once the page went away', () => source.subscribers() === 0, 10_000);
  });

  test('the detail stream sends the DaemonSet view', async (t) => {
    const source = new StaticSource();
    const view = { namespace: 'default', name: 'ds1', synced: true, found: true, events: [] };
    source.setDetail(view);
    const app = await createDashboardServer(source, assets);
    t.after(() => app.close());
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const abort = new AbortController();
    t.after(() => abort.abort());
    const res = await fetch(`http://127.0.0.1:${port}/api/daemonsets/default/ds1/stream`, { signal: abort.signal });
    const it = events(res.body!);
    assert.deepEqual((await it.next()).value, ['detail', view]);
    const next = { ...view, events: [{ type: 'Normal', reason: 'R', message: 'm', count: 1, last: 1, from: 'x' }] };
    source.setDetail(next);
    assert.deepEqual((await it.next()).value, ['detail', next]);
  });

  test('closing the server closes the source', async () => {
    const source = new StaticSource();
    const app = await createDashboardServer(source, assets);
    await app.close();
    assert.equal(source.closed, true);
  });
});

describe('dashboard assets', () => {
  test('run from the sources, the page script is built with esbuild (preact, htm and the stylesheet inside)', async () => {
    const a = await loadAssets('ads dashboard · <ctx>');
    assert.match(a.html, /<script type="module" src="app.js"><\/script>/);
    assert.match(a.html, /<title>ads dashboard · &#60;ctx&#62;<\/title>/, 'the title is escaped');
    assert.ok(a.script.length > 10_000, `script of ${a.script.length} bytes`);
    assert.match(a.script, /EventSource/);
    assert.match(a.script, /data-revision/);
    assert.match(a.script, /preparing-delete/, 'the stylesheet is inlined');
    assert.ok(a.script.length < 200_000, `script of ${a.script.length} bytes stays small`);
  });
});

describe('throttle', () => {
  test('the first call runs at once; a burst within the interval folds into one trailing call', async () => {
    let calls = 0;
    const f = throttle(() => calls++, 200);
    f();
    assert.equal(calls, 1);
    for (let i = 0; i < 50; i++) f();
    assert.equal(calls, 1, 'folded while the interval runs');
    await until('the trailing call', () => calls === 2, 5_000);
    f.cancel();
  });

  test('cancel drops a pending call', async () => {
    let calls = 0;
    const f = throttle(() => calls++, 50);
    f();
    f();
    f.cancel();
    const t0 = performance.now();
    await until('the interval to pass', () => performance.now() - t0 > 150, 5_000);
    assert.equal(calls, 1);
  });
});
