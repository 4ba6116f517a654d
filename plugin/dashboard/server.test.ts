// The dashboard's HTTP side over a fake source: routes, the localhost-only Host check, server-sent events (first view
// at once, then each pushed change, unsubscribed when the page goes), the page script built from the sources, the
// throttle that folds bursts of watch events into few pushes, and the action routes: POST only, the session token,
// the Origin and Host checks, 400 for bad input, the apiserver's 403 as such, the security headers on every answer.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../../src/testing/wait.ts';
import { ApiError } from '../../src/k8s/errors.ts';
import { PluginError } from '../errors.ts';
import { createDashboardServer, newToken, SECURITY_HEADERS } from './server.ts';
import { indexHtml, loadAssets } from './assets.ts';
import { throttle } from './source.ts';
import { StaticSource } from './testing.ts';
import type { ActionOutcome, ActionRequest, DashboardActions } from './actions.ts';

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
  hasCanary: false,
  rollout: {
    state: updated === 3 ? ('complete' as const) : ('progressing' as const),
    message: `Waiting for daemon set "${name}" rollout to finish: ${updated} out of 3 new pods have been updated...`,
    badges: [],
    progress: {
      updated,
      target: 3,
      desired: 3,
      available: 3,
      exact: true,
      percent: 33 * updated,
      text: `${updated} / 3`,
    },
  },
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

/** Records the actions asked for; answers with `outcome`, or throws `fail`. */
class FakeActions implements DashboardActions {
  readonly calls: ActionRequest[] = [];
  fail?: unknown;
  async run(request: ActionRequest): Promise<ActionOutcome> {
    this.calls.push(request);
    if (this.fail) throw this.fail;
    return { message: `daemonset.apps.kruise.io/${request.name} done`, warnings: ['warning: w'] };
  }
}

describe('dashboard actions', () => {
  const TOKEN = 'test-token-0123456789';
  const HOST = '127.0.0.1:8765';
  const assets = { html: indexHtml('t'), script: 'console.log(1)' };

  /** What the server logged (the terminal's lines). */
  const lines: string[] = [];

  async function server(opts: { readOnly?: boolean } = {}) {
    const source = new StaticSource();
    source.listView = { ...source.listView, daemonSets: [row('agent', 1)] };
    const actions = new FakeActions();
    const log = (l: string) => void lines.push(l);
    const app = await createDashboardServer(
      source,
      assets,
      opts.readOnly ? { token: TOKEN, log } : { actions, token: TOKEN, log },
    );
    const post = (path: string, body: unknown = {}, headers: Record<string, string | undefined> = {}) => {
      const h: Record<string, string> = { host: HOST, 'content-type': 'application/json', 'x-ads-token': TOKEN };
      for (const [k, v] of Object.entries(headers)) {
        if (v === undefined) delete h[k];
        else h[k] = v;
      }
      return app.inject({
        method: 'POST',
        url: `/api/daemonsets/default/${path}`,
        headers: h,
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
    };
    return { app, source, actions, post };
  }

  test('the page carries the session token in a <meta>; a read-only dashboard carries none', async (t) => {
    const { app } = await server();
    t.after(() => app.close());
    const page = await app.inject({ url: '/', headers: { host: HOST } });
    assert.match(page.body, new RegExp(`<meta name="ads-token" content="${TOKEN}">`));
    assert.equal(page.headers['cache-control'], 'no-store');
    const ro = await server({ readOnly: true });
    t.after(() => ro.app.close());
    const roPage = await ro.app.inject({ url: '/', headers: { host: HOST } });
    assert.match(roPage.body, /<meta name="ads-token" content="">/);
    assert.notEqual(newToken(), newToken());
    assert.match(newToken(), /^[A-Za-z0-9_-]{43}$/, '256 random bits, base64url');
  });

  test("with the token: the action runs, and its answer is kubectl ads's output", async (t) => {
    const { app, actions, post } = await server();
    t.after(() => app.close());
    const res = await post('agent/actions/partition-step', { step: 2 });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      ok: true,
      message: 'daemonset.apps.kruise.io/agent done',
      warnings: ['warning: w'],
    });
    assert.deepEqual(
      actions.calls.map((c) => c.command),
      ['kubectl ads partition agent --step 2 -n default'],
    );
  });

  test('a missing or wrong token is 403 with a message, and nothing runs', async (t) => {
    const { app, actions, post } = await server();
    t.after(() => app.close());
    for (const token of [undefined, '', 'wrong', `${TOKEN}x`, TOKEN.slice(1)]) {
      const res = await post('agent/actions/pause', {}, { 'x-ads-token': token });
      assert.equal(res.statusCode, 403, String(token));
      assert.match(res.json().message, /missing or wrong x-ads-token header: reload the page/);
    }
    assert.equal(actions.calls.length, 0);
  });

  test("an Origin other than the dashboard's own is 403, token or not; the own origin and none pass", async (t) => {
    const { app, actions, post } = await server();
    t.after(() => app.close());
    for (const origin of [
      'http://evil.example',
      'null',
      'http://127.0.0.1:9999',
      'https://127.0.0.1:8765',
      'http://localhost:8765',
    ]) {
      const res = await post('agent/actions/pause', {}, { origin });
      assert.equal(res.statusCode, 403, origin);
      assert.match(res.json().message, /origin ".*" refused/);
    }
    assert.equal(actions.calls.length, 0);
    assert.equal((await post('agent/actions/pause', {}, { origin: `http://${HOST}` })).statusCode, 200);
    assert.equal((await post('agent/actions/pause', {}, { origin: undefined })).statusCode, 200);
    assert.equal(actions.calls.length, 2);
  });

  test('another Host is refused (DNS rebinding), the action does not run', async (t) => {
    const { app, actions, post } = await server();
    t.after(() => app.close());
    const res = await post(
      'agent/actions/pause',
      {},
      { host: 'evil.example:8765', origin: 'http://evil.example:8765' },
    );
    assert.equal(res.statusCode, 403);
    assert.equal(actions.calls.length, 0);
  });

  test('bad input is 400 with a message: unknown action, partition not N or N%, bad step, bad JSON, not JSON', async (t) => {
    const { app, actions, post } = await server();
    t.after(() => app.close());
    const cases: [string, unknown, number, RegExp][] = [
      ['agent/actions/delete', {}, 400, /unknown action "delete"/],
      ['agent/actions/partition', { value: 'abc' }, 400, /invalid partition "abc"/],
      ['agent/actions/partition', { value: '150%' }, 400, /invalid partition "150%"/],
      ['agent/actions/partition-step', { step: 'two' }, 400, /invalid step "two"/],
      ['agent/actions/partition', '{not json', 400, /JSON/],
    ];
    for (const [path, body, status, message] of cases) {
      const res = await post(path, body);
      assert.equal(res.statusCode, status, path);
      assert.match(res.json().message, message, path);
    }
    const form = await post('agent/actions/pause', 'a=b', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(form.statusCode, 415, 'a form post is not JSON');
    assert.equal(actions.calls.length, 0);
  });

  test("a DaemonSet outside the dashboard's scope is 404", async (t) => {
    const { app, actions, post } = await server();
    t.after(() => app.close());
    const res = await post('other/actions/pause');
    assert.equal(res.statusCode, 404);
    assert.equal(actions.calls.length, 0);
  });

  test("the apiserver's Forbidden is a 403 with its message; a refusal 409; a bug a 500 without its stack", async (t) => {
    const { app, actions, post } = await server();
    t.after(() => app.close());
    const message =
      'daemonsets.apps.kruise.io "agent" is forbidden: User "viewer" cannot patch resource "daemonsets" in API group "apps.kruise.io" in the namespace "default"';
    actions.fail = new ApiError('patch', '/apis/apps.kruise.io/v1alpha1/namespaces/default/daemonsets/agent', 403, {
      reason: 'Forbidden',
      message,
    });
    const res = await post('agent/actions/pause');
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().ok, false);
    assert.ok(res.json().message.startsWith(`Error from server (Forbidden): ${message}\n`), res.json().message);

    actions.fail = new PluginError('the canary of revision h2 failed: it cannot be promoted');
    const refused = await post('agent/actions/canary-promote');
    assert.equal(refused.statusCode, 409);
    assert.equal(refused.json().message, 'error: the canary of revision h2 failed: it cannot be promoted');

    actions.fail = new TypeError('boom');
    const bug = await post('agent/actions/pause');
    assert.equal(bug.statusCode, 500);
    assert.doesNotMatch(bug.body, /boom|at .*\.ts/);
    assert.match(lines.at(-1)!, /TypeError: boom\n\s+at /, 'the stack goes to the terminal, not the page');
  });

  test('read-only: every action is 403', async (t) => {
    const { app, post } = await server({ readOnly: true });
    t.after(() => app.close());
    const res = await post('agent/actions/pause');
    assert.equal(res.statusCode, 403);
    assert.match(res.json().message, /--read-only/);
  });

  test('every answer of the action routes carries the security headers', async (t) => {
    const { app, post } = await server();
    t.after(() => app.close());
    const answers = [
      await post('agent/actions/pause'),
      await post('agent/actions/pause', {}, { 'x-ads-token': 'wrong' }),
      await post('agent/actions/pause', {}, { origin: 'http://evil.example' }),
      await post('agent/actions/pause', {}, { host: 'evil.example' }),
      await post('agent/actions/partition', { value: 'x' }),
      await post('agent/actions/partition', '{'),
      await post('agent/actions/pause', 'a=b', { 'content-type': 'text/plain' }),
      await post('other/actions/pause'),
      await app.inject({ url: '/api/daemonsets/default/agent/actions/pause', headers: { host: HOST } }),
    ];
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      [200, 403, 403, 403, 400, 400, 415, 404, 405],
    );
    for (const a of answers)
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) assert.equal(a.headers[k], v, `${a.statusCode}: ${k}`);
  });

  test('GET never changes anything: the action URL answers 405 (Allow: POST); no GET route runs an action', async (t) => {
    const { app, actions } = await server();
    t.after(() => app.close());
    const headers = { host: HOST, 'x-ads-token': TOKEN };
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await app.inject({ method, url: '/api/daemonsets/default/agent/actions/pause', headers });
      assert.equal(res.statusCode, 405, method);
      assert.equal(res.headers.allow, 'POST');
    }
    for (const url of [
      '/',
      '/app.js',
      '/api/daemonsets',
      '/api/daemonsets/default/agent',
      '/api/daemonsets/default/agent?action=pause',
      '/api/daemonsets/default/agent/actions/pause?token=' + TOKEN,
    ])
      await app.inject({ url, headers });
    assert.equal(actions.calls.length, 0);
  });

  test('the detail routes pass the grouping label to the source', async (t) => {
    const { app, source } = await server();
    t.after(() => app.close());
    await app.inject({ url: '/api/daemonsets/default/agent?groupBy=pool', headers: { host: HOST } });
    await app.inject({ url: '/api/daemonsets/default/agent', headers: { host: HOST } });
    assert.deepEqual(source.detailOptions, [{ groupBy: 'pool' }, {}]);
  });
});
