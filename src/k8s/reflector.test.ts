// The reflector's list resourceVersion rule and its watchdog, as client-go's
// tools/cache/reflector.go: the first list at resourceVersion "0" (the watch cache), relists at
// the last synced one, and a consistent list ("") at once when either is refused as expired or
// too large; a silent watch aborted and rewatched. Pure rules as tables; the requests sent,
// against the in-process fake apiserver (it can refuse a list on demand, a real one cannot).
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { pino } from 'pino';
import type { KubeClient } from './client.ts';
import { ApiError } from './errors.ts';
import { resources } from './resources.ts';
import type { Pod } from './types.ts';
import {
  DEFAULT_INACTIVITY_TIMEOUT_MS,
  DEFAULT_WATCH_TIMEOUT_SECONDS,
  isExpiredError,
  isTooLargeResourceVersionError,
  listPageSize,
  Reflector,
  relistResourceVersion,
  watchTimeoutSeconds,
  type ReflectorStore,
} from './reflector.ts';
import { FakeApiServer, type RequestRecord, startForSuite } from './testing/fake-apiserver.ts';
import { sleep, until as waitUntil } from '../testing/wait.ts';

const PODS = 'core/v1/pods';
const LIST_PATH = '/api/v1/namespaces/ns/pods';

describe('reflector rules', () => {
  test('relistResourceVersion', () => {
    const rows = [
      { name: 'nothing synced yet: the watch cache', last: '', unavailable: false, want: '0' },
      { name: 'a relist: at least as fresh as the last synced', last: '42', unavailable: false, want: '42' },
      { name: 'that was refused: a consistent read', last: '42', unavailable: true, want: '' },
      { name: 'the first list was refused: a consistent read', last: '', unavailable: true, want: '' },
    ];
    for (const r of rows) assert.equal(relistResourceVersion(r.last, r.unavailable), r.want, r.name);
  });

  test('listPageSize', () => {
    const rows = [
      { name: 'first list, default pages', rv: '0', configured: undefined, paginated: false, want: 500 },
      { name: 'consistent list, default pages', rv: '', configured: undefined, paginated: false, want: 500 },
      {
        name: 'relist at an rv: unpaged, for the watch cache',
        rv: '42',
        configured: undefined,
        paginated: false,
        want: 0,
      },
      { name: 'relist where lists come in pages', rv: '42', configured: undefined, paginated: true, want: 500 },
      { name: 'configured page size wins', rv: '42', configured: 2, paginated: false, want: 2 },
    ];
    for (const r of rows) {
      assert.equal(listPageSize(r.rv, { configured: r.configured, paginatedResult: r.paginated }), r.want, r.name);
    }
  });

  test('which refusals fall back to a consistent list', () => {
    const err = (code: number, status: Record<string, unknown>) =>
      new ApiError('list', LIST_PATH, code, { kind: 'Status', code, ...status });
    const rows = [
      { name: '410 Expired', err: err(410, { reason: 'Expired' }), expired: true, tooLarge: false },
      { name: '410 Gone', err: err(410, { reason: 'Gone' }), expired: true, tooLarge: false },
      {
        name: '504 with cause ResourceVersionTooLarge',
        err: err(504, {
          reason: 'Timeout',
          message: 'Too large resource version: 99, current: 7',
          details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] },
        }),
        expired: false,
        tooLarge: true,
      },
      {
        name: '504 with the message only (apiserver < 1.17)',
        err: err(504, { reason: 'Timeout', message: 'Too large resource version: 99, current: 7' }),
        expired: false,
        tooLarge: true,
      },
      {
        name: 'other 504',
        err: err(504, { reason: 'Timeout', message: 'request timed out' }),
        expired: false,
        tooLarge: false,
      },
      { name: '500', err: err(500, { reason: 'InternalError' }), expired: false, tooLarge: false },
      { name: 'not an API error', err: new Error('ECONNREFUSED'), expired: false, tooLarge: false },
    ];
    for (const r of rows) {
      assert.equal(isExpiredError(r.err), r.expired, `${r.name}: expired`);
      assert.equal(isTooLargeResourceVersionError(r.err), r.tooLarge, `${r.name}: too large`);
    }
  });

  test('watch timeoutSeconds are jittered in [1x, 2x) of 5 minutes, as client-go', () => {
    assert.deepEqual(DEFAULT_WATCH_TIMEOUT_SECONDS, [300, 600]);
    assert.equal(
      watchTimeoutSeconds(DEFAULT_WATCH_TIMEOUT_SECONDS, () => 0),
      300,
    );
    assert.equal(
      watchTimeoutSeconds(DEFAULT_WATCH_TIMEOUT_SECONDS, () => 0.5),
      450,
    );
    assert.equal(
      watchTimeoutSeconds(DEFAULT_WATCH_TIMEOUT_SECONDS, () => 0.999999),
      599,
    );
    const drawn = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const t = watchTimeoutSeconds(DEFAULT_WATCH_TIMEOUT_SECONDS);
      assert.ok(t >= 300 && t < 600, `${t} in [300, 600)`);
      drawn.add(t);
    }
    assert.ok(drawn.size > 50, `jittered: ${drawn.size} distinct values in 200 draws`);
  });

  test('the silent-watch watchdog fires within 2-3 minutes by default', () => {
    assert.ok(
      DEFAULT_INACTIVITY_TIMEOUT_MS >= 120_000 && DEFAULT_INACTIVITY_TIMEOUT_MS <= 180_000,
      `${DEFAULT_INACTIVITY_TIMEOUT_MS} ms in [120 s, 180 s]`,
    );
    // Below the shortest server-side watch timeout, so it is the watchdog (not the server) that
    // ends a dead watch; above two bookmark periods (the apiserver sends one about every minute).
    assert.ok(DEFAULT_INACTIVITY_TIMEOUT_MS < DEFAULT_WATCH_TIMEOUT_SECONDS[0] * 1000);
    assert.ok(DEFAULT_INACTIVITY_TIMEOUT_MS > 2 * 60_000);
  });
});

/** A store that records what the reflector fed it. */
class RecordingStore implements ReflectorStore<Pod> {
  readonly replaced: { names: string[]; resourceVersion: string }[] = [];
  readonly names = new Set<string>();
  replace(items: Pod[], resourceVersion: string): void {
    this.names.clear();
    for (const p of items) this.names.add(p.metadata.name ?? '');
    this.replaced.push({ names: [...this.names].sort(), resourceVersion });
  }
  upsert(obj: Pod): void {
    this.names.add(obj.metadata.name ?? '');
  }
  remove(obj: Pod): void {
    this.names.delete(obj.metadata.name ?? '');
  }
  current(): Pod | undefined {
    return undefined;
  }
}

function pod(name: string): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'ns' }, spec: { containers: [{ name: 'c' }] } };
}

/** Waits for `cond`; this file's waits are bounded at 2000 ms unless a test says otherwise. */
const until = (what: string, cond: () => boolean, timeoutMs = 2000) => waitUntil(what, cond, timeoutMs);

function refuse(res: ServerResponse, code: number, status: Record<string, unknown>): true {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, ...status }));
  return true;
}

const tooLarge = {
  reason: 'Timeout',
  message: 'Too large resource version: 1000, current: 7',
  details: {
    // The apiserver also says retryAfterSeconds: 1, which the client honours (up to 10 times)
    // before the reflector sees the error; left out here to keep the test fast.
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
  },
};
const expired = { reason: 'Expired', message: 'The resourceVersion for the provided list is too old.' };

describe('Reflector against the fake apiserver', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  const logs: string[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void logs.push(s) });
  let stop: AbortController | undefined;
  let running: Promise<void> | undefined;

  startForSuite(server, (c) => {
    client = c;
    for (const n of ['p1', 'p2', 'p3']) server.upsert(PODS, pod(n));
  });
  afterEach(async () => {
    stop?.abort();
    await running;
    await until('the watch closed', () => server.watchCount === 0);
    server.hook = undefined;
    server.silentWatches = false;
    server.goneMode = 'event';
    server.requests.length = 0;
    logs.length = 0;
  });

  const lists = () => server.requests.filter((r) => r.path === LIST_PATH && r.query.get('watch') !== 'true');
  const watches = () => server.requests.filter((r) => r.path === LIST_PATH && r.query.get('watch') === 'true');
  const rvOf = (r: RequestRecord | undefined) => r?.query.get('resourceVersion') ?? '(unset)';

  function start(opts: { inactivityTimeoutMs?: number; backoff?: { initialMs: number; maxMs: number } } = {}) {
    const store = new RecordingStore();
    const reflector = new Reflector<Pod>(
      {
        name: 'pods',
        client,
        type: resources.pods,
        namespace: 'ns',
        backoff: { initialMs: 20, maxMs: 40 },
        logger,
        ...opts,
      },
      store,
    );
    stop = new AbortController();
    running = reflector.run(stop.signal);
    return { store, reflector };
  }

  test('the first list asks the watch cache (resourceVersion "0"), then watches from what it returned', async () => {
    const { store } = start();
    await until('a watch', () => server.watchCount === 1);
    assert.equal(lists().length, 1);
    assert.equal(rvOf(lists()[0]), '0');
    assert.equal(lists()[0]?.query.get('limit'), '500');
    assert.deepEqual(store.replaced, [{ names: ['p1', 'p2', 'p3'], resourceVersion: String(server.resourceVersion) }]);
    assert.equal(rvOf(watches()[0]), String(server.resourceVersion));
    assert.equal(watches()[0]?.query.get('allowWatchBookmarks'), 'true');
  });

  for (const refusal of [
    { name: 'too large resource version (504)', code: 504, status: tooLarge },
    { name: 'expired (410)', code: 410, status: expired },
  ]) {
    test(`a first list refused as ${refusal.name} is followed at once by a consistent list`, async () => {
      server.hook = (r, res) =>
        r.path === LIST_PATH && r.query.get('resourceVersion') === '0' && refuse(res, refusal.code, refusal.status);
      // A backoff longer than the wait below: the fallback must not wait for it.
      const { store } = start({ backoff: { initialMs: 10_000, maxMs: 10_000 } });
      await until('a watch', () => server.watchCount === 1);
      assert.deepEqual(lists().map(rvOf), ['0', '(unset)'], 'resourceVersion "0", then none (consistent read)');
      assert.deepEqual(store.replaced.at(-1)?.names, ['p1', 'p2', 'p3']);
      assert.ok(logs.some((l) => /listing with a consistent read/.test(l)));
    });
  }

  test('any other failure of the first list is retried after a backoff at "0" again, as client-go', async () => {
    let refused = 0;
    server.hook = (r, res) =>
      r.path === LIST_PATH &&
      r.query.get('watch') !== 'true' &&
      refused++ < 2 &&
      refuse(res, 500, { reason: 'InternalError', message: 'etcd is sad' });
    start();
    await until('a watch', () => server.watchCount === 1);
    assert.deepEqual(lists().map(rvOf), ['0', '0', '0']);
  });

  test('after a watch 410 it relists at the last synced resourceVersion, unpaged, then falls back to ""', async () => {
    const { store, reflector } = start();
    await until('a watch', () => server.watchCount === 1);
    const synced = reflector.lastSyncResourceVersion();
    server.upsertSilently(PODS, pod('p4'));
    server.compact();
    // The compacted list at the old resourceVersion is refused, as etcd refuses a compacted revision.
    server.hook = (r, res) =>
      r.path === LIST_PATH &&
      r.query.get('watch') !== 'true' &&
      r.query.get('resourceVersion') === synced &&
      refuse(res, 410, expired);
    server.requests.length = 0;
    server.sendWatchError({ code: 410, reason: 'Expired', message: `too old resource version: ${synced}` });
    await until('p4 via the relist', () => store.names.has('p4'));
    assert.deepEqual(lists().map(rvOf), [synced, '(unset)']);
    assert.equal(lists()[0]?.query.get('limit'), null, 'a relist at a resourceVersion is unpaged (watch cache)');
    assert.equal(lists()[1]?.query.get('limit'), null, 'the fallback keeps the page size chosen');
    await until('a new watch', () => server.watchCount === 1);
    assert.equal(rvOf(watches().at(-1)), String(server.resourceVersion));

    // The next relist after a successful one is at the last synced resourceVersion again.
    server.hook = undefined;
    server.requests.length = 0;
    const now = reflector.lastSyncResourceVersion();
    server.sendWatchError({ code: 410, reason: 'Expired', message: 'too old resource version' });
    await until('a relist', () => lists().length === 1);
    assert.equal(rvOf(lists()[0]), now);
  });

  test('a silent watch is aborted by the watchdog and rewatched from the same resourceVersion', async () => {
    server.silentWatches = true;
    const { reflector } = start({ inactivityTimeoutMs: 150 });
    // This reflector's watches: those after its list (the previous test's reflector may have sent one more watch
    // just before it was stopped, which the server records late). The gap is measured between the two as the
    // server received them, not by polling: a busy machine that delays the poll cannot make it look shorter.
    await until('the list', () => lists().length === 1);
    const ours = () => watches().filter((w) => w.receivedAt >= lists()[0]!.receivedAt);
    await until('a second watch after silence', () => ours().length >= 2);
    const [first, second] = ours();
    const waited = Math.round(second!.receivedAt - first!.receivedAt);
    assert.ok(waited >= 140, `rewatched after ${waited} ms of silence, not before the watchdog`);
    assert.ok(waited < 1000, `rewatched after ${waited} ms`);
    assert.deepEqual(
      ours().map(rvOf),
      ours().map(() => reflector.lastSyncResourceVersion()),
      'rewatch, no relist',
    );
    assert.equal(lists().length, 1);
    assert.ok(logs.some((l) => /watch silent; rewatching/.test(l)));
    server.silentWatches = false;
    await until('a live watch', () => server.watchCount === 1);
    server.upsert(PODS, pod('p5'));
    server.remove(PODS, 'ns', 'p5');
  });

  test('an idle watch that gets bookmarks is kept', async () => {
    start({ inactivityTimeoutMs: 150 });
    await until('a watch', () => server.watchCount === 1);
    const deadline = Date.now() + 600;
    while (Date.now() < deadline) {
      server.sendBookmarks();
      await sleep(50);
    }
    assert.equal(watches().length, 1, 'four watchdog periods with bookmarks and no other event: one watch');
    assert.equal(server.watchCount, 1);
  });
});
