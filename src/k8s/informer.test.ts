// Reflector/informer edge cases against the in-process fake apiserver: the ones a real
// apiserver cannot be made to produce on demand (410 mid-watch, ERROR event, silent and dropped
// connections, a restart). Normal list/watch behaviour is proven on the real control plane in e2e.
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { KubeClient } from './client.ts';
import { resources } from './resources.ts';
import type { Pod } from './types.ts';
import {
  DeletedFinalStateUnknown,
  indexByController,
  indexByNamespace,
  NAMESPACE_INDEX,
  indexPodsByNodeName,
  Indexer,
  Informer,
  orphanIndexValue,
  REPLACE_BATCH,
  stripManagedFields,
} from './informer.ts';
import { FakeApiServer, startForSuite } from './testing/fake-apiserver.ts';
import { sleep, until as waitUntil } from '../testing/wait.ts';

const PODS = 'core/v1/pods';

function pod(name: string, nodeName = 'n1', extra: Record<string, unknown> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ns',
      ownerReferences: [
        { apiVersion: 'apps.kruise.io/v1alpha1', kind: 'DaemonSet', name: 'ds', uid: 'ds-uid', controller: true },
      ],
      managedFields: [{}],
    },
    spec: { nodeName, containers: [{ name: 'c' }] },
    ...extra,
  };
}

/** Waits for `cond`; this file's waits are bounded at 1500 ms unless a test says otherwise. */
const until = (what: string, cond: () => boolean, timeoutMs = 1500) => waitUntil(what, cond, timeoutMs);

describe('Indexer.listSorted', () => {
  test('key order, following adds, updates and deletes', () => {
    const store = new Indexer<Pod>();
    const names = () => store.listSorted().map((p) => p.metadata.name);
    for (const name of ['node-10', 'node-2', 'node-1']) store.set(`ns/${name}`, pod(name));
    assert.deepEqual(names(), ['node-1', 'node-10', 'node-2']);
    store.set('ns/node-0', pod('node-0'));
    assert.deepEqual(names(), ['node-0', 'node-1', 'node-10', 'node-2']);
    // An update keeps the order and hands out the new object.
    store.set('ns/node-10', pod('node-10', 'n9'));
    assert.equal(store.listSorted()[2]?.spec.nodeName, 'n9');
    store.delete('ns/node-1');
    assert.deepEqual(names(), ['node-0', 'node-10', 'node-2']);
  });

  test('a list handed out never changes: the same array until an update, a new one after it', () => {
    const store = new Indexer<Pod>();
    store.set('ns/a', pod('a', 'n1'));
    store.set('ns/b', pod('b', 'n2'));
    const before = store.listSorted();
    assert.equal(store.listSorted(), before, 'no update between two lists: the same array');
    store.set('ns/a', pod('a', 'n3'));
    store.set('ns/b', pod('b', 'n4'));
    assert.deepEqual(
      before.map((p) => p.spec.nodeName),
      ['n1', 'n2'],
      'the list taken before the updates is unchanged',
    );
    const after = store.listSorted();
    assert.notEqual(after, before);
    assert.deepEqual(
      after.map((p) => p.spec.nodeName),
      ['n3', 'n4'],
    );
    store.set('ns/c', pod('c', 'n5'));
    assert.deepEqual(
      after.map((p) => p.spec.nodeName),
      ['n3', 'n4'],
      'nor after an add',
    );
    assert.deepEqual(
      store.listSorted().map((p) => p.metadata.name),
      ['a', 'b', 'c'],
    );
  });

  test('random adds, updates and deletes: always the objects in sorted key order; lists handed out stay as they were', () => {
    const store = new Indexer<Pod>();
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);
    const handedOut: { list: readonly Pod[]; copy: Pod[] }[] = [];
    for (let step = 0; step < 2000; step++) {
      // Keys of several lengths and cases, so the order is the strings' code-unit order, not a numeric one.
      const name = `${['N', 'n', 'node-'][rand(3)]}${rand(60)}`;
      if (rand(4) === 0) store.delete(`ns/${name}`);
      else store.set(`ns/${name}`, pod(name, `n${step}`));
      if (rand(3) === 0) {
        const list = store.listSorted();
        const expected = store
          .listKeys()
          .sort()
          .map((k) => store.get(k));
        assert.equal(list.length, expected.length, `step ${step}`);
        list.forEach((p, i) => assert.equal(p, expected[i], `step ${step}, place ${i}`));
        handedOut.push({ list, copy: [...list] });
      }
    }
    // A relist's worth of new keys between two lists: the list is sorted again rather than kept.
    for (let i = 0; i < 200; i++) store.set(`ns/relisted-${i}`, pod(`relisted-${i}`));
    assert.deepEqual(
      store.listSorted().map((p) => `ns/${p.metadata.name}`),
      store.listKeys().sort(),
    );
    for (const { list, copy } of handedOut) assert.deepEqual(list, copy);
  });
});

describe('Indexer.changedKeysSince', () => {
  /** The keys whose object differs between two sorted lists (added, replaced or gone). */
  function differing(a: readonly Pod[], b: readonly Pod[]): string[] {
    const key = (p: Pod) => `ns/${p.metadata.name}`;
    const before = new Map(a.map((p) => [key(p), p]));
    const after = new Map(b.map((p) => [key(p), p]));
    return [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k)).sort();
  }

  test('random adds, updates and deletes: the keys set or deleted since a list handed out, those that differ among them', () => {
    const store = new Indexer<Pod>();
    let seed = 11;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);
    assert.equal(store.changedKeysSince([]), undefined, 'a list it did not hand out');
    // Each list handed out, and how many keys had been set or deleted then.
    const handedOut: { list: readonly Pod[]; at: number }[] = [];
    const touched: string[] = [];
    let told = 0;
    for (let step = 0; step < 3000; step++) {
      const key = `ns/node-${rand(80)}`;
      if (rand(4) === 0) {
        if (store.delete(key)) touched.push(key);
      } else {
        store.set(key, pod(key.slice(3), `n${step}`));
        touched.push(key);
      }
      if (rand(3) !== 0) continue;
      const current = store.listSorted();
      handedOut.push({ list: current, at: touched.length });
      for (const { list, at } of handedOut.slice(-20)) {
        const keys = store.changedKeysSince(list);
        if (keys === undefined) continue;
        told++;
        const names = [...new Set(keys)].sort();
        // A key set and then deleted between the two lists is told too: the reader finds it in neither.
        assert.deepEqual(names, [...new Set(touched.slice(at))].sort(), `step ${step}`);
        for (const k of differing(list, current)) assert.ok(names.includes(k), `step ${step}: ${k} told`);
      }
    }
    assert.ok(told > 15_000, `lists told: ${told}`);
    // With fewer than 1,024 objects the log holds 128 to 256 changes: a list is told through 128 changes at least,
    // not through 256.
    const old = store.listSorted();
    for (let i = 0; i < 128; i++) store.set('ns/node-1', pod('node-1', `again-${i}`));
    assert.deepEqual(store.changedKeysSince(old)?.length, 128);
    for (let i = 0; i < 128; i++) store.set('ns/node-1', pod('node-1', `more-${i}`));
    assert.equal(store.changedKeysSince(old), undefined, 'past the log');
    assert.deepEqual(store.changedKeysSince(store.listSorted()), [], 'the current list');
  });

  test('a relist between two lists (the sorted list dropped and made again): still told, each key at least once', () => {
    const store = new Indexer<Pod>();
    for (let i = 0; i < 2000; i++) store.set(`ns/node-${i}`, pod(`node-${i}`));
    const before = store.listSorted();
    // 100 keys come and go, more than the sorted list is kept through; fewer than a quarter of the objects.
    for (let i = 0; i < 50; i++) store.delete(`ns/node-${i}`);
    for (let i = 0; i < 50; i++) store.set(`ns/new-${i}`, pod(`new-${i}`));
    const after = store.listSorted();
    assert.deepEqual([...new Set(store.changedKeysSince(before))].sort(), differing(before, after));
  });
});

describe('indexByController', () => {
  test("a controller's UID; an object with no controller (no owner, or owners that are not its controller) under its namespace's orphans, until it gets one", () => {
    const store = new Indexer<Pod>({ controller: indexByController });
    const names = (value: string) => store.byIndex('controller', value).map((p) => p.metadata.name);
    const withOwners = (name: string, ownerReferences: Pod['metadata']['ownerReferences']): Pod => ({
      ...pod(name),
      metadata: { ...pod(name).metadata, ownerReferences },
    });
    store.set('ns/owned', pod('owned'));
    store.set('ns/no-owner', withOwners('no-owner', undefined));
    store.set(
      'ns/not-controller',
      withOwners('not-controller', [{ ...pod('x').metadata.ownerReferences![0]!, controller: false }]),
    );
    store.set('other/no-owner', { ...withOwners('no-owner', []), metadata: { name: 'no-owner', namespace: 'other' } });
    assert.deepEqual(names('ds-uid'), ['owned']);
    assert.deepEqual(names(orphanIndexValue('ns')), ['no-owner', 'not-controller']);
    assert.deepEqual(names(orphanIndexValue('other')), ['no-owner']);
    // Adopted: the pod leaves the orphans.
    store.set('ns/no-owner', pod('no-owner'));
    assert.deepEqual(names('ds-uid'), ['owned', 'no-owner']);
    assert.deepEqual(names(orphanIndexValue('ns')), ['not-controller']);
  });
});

describe('Informer', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  let informer: Informer<Pod>;
  let stop: AbortController;
  let running: Promise<void>;
  let seen: string[];
  const errorLogs: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (s: string) => void errorLogs.push(s) });

  startForSuite(server, (c) => (client = c));

  beforeEach(async () => {
    for (const p of ['p1', 'p2', 'p3']) server.upsert(PODS, pod(p, p === 'p3' ? 'n2' : 'n1'));
    seen = [];
    informer = new Informer<Pod>({
      name: 'pods',
      client,
      type: resources.pods,
      namespace: 'ns',
      pageSize: 2,
      indexers: { nodeName: indexPodsByNodeName, controller: indexByController, [NAMESPACE_INDEX]: indexByNamespace },
      transform: stripManagedFields,
      backoff: { initialMs: 10, maxMs: 40 },
      logger,
    });
    informer.addEventHandler({
      onAdd: (p, initial) => seen.push(`add:${p.metadata.name}${initial ? ':initial' : ''}`),
      onUpdate: (o, n) =>
        seen.push(`update:${n.metadata.name}:${o.metadata.resourceVersion}->${n.metadata.resourceVersion}`),
      onDelete: (p) =>
        seen.push(
          p instanceof DeletedFinalStateUnknown ? `tombstone:${p.obj.metadata.name}` : `delete:${p.metadata.name}`,
        ),
    });
    stop = new AbortController();
    running = informer.run(stop.signal);
    assert.equal(await informer.waitForCacheSync(AbortSignal.timeout(1500)), true);
    await until('watch open', () => server.watchCount === 1);
    seen.length = 0;
    server.requests.length = 0;
  });

  afterEach(async () => {
    stop.abort();
    await running; // stopping resolves; it does not throw
    server.silentWatches = false;
    server.goneMode = 'event';
    for (const p of [...informer.store.listKeys()]) server.removeSilently(PODS, 'ns', p.split('/')[1] ?? '');
    for (const p of ['p1', 'p2', 'p3', 'p4', 'p5']) server.removeSilently(PODS, 'ns', p);
    const errors = errorLogs.filter((l) => JSON.parse(l).level >= 50);
    assert.deepEqual(errors, [], 'no error logs');
    errorLogs.length = 0;
  });

  test('lists in pages, indexes, strips managedFields, then follows the watch', async () => {
    assert.equal(informer.store.size, 3);
    assert.deepEqual(
      informer.store
        .byIndex('nodeName', 'n1')
        .map((p) => p.metadata.name)
        .sort(),
      ['p1', 'p2'],
    );
    assert.equal(informer.store.byIndex('controller', 'ds-uid').length, 3);
    assert.deepEqual(informer.store.byIndex(NAMESPACE_INDEX, 'ns').length, 3);
    const p1 = informer.store.getByName('ns', 'p1');
    assert.equal(p1?.metadata.managedFields, undefined);
    assert.equal(p1?.kind, 'Pod', 'kind filled in on list items');

    // Handlers added late get the cache replayed as adds.
    const late: string[] = [];
    informer.addEventHandler({ onAdd: (p) => late.push(p.metadata.name ?? '') });
    assert.equal(late.length, 3);

    server.upsert(PODS, pod('p4', 'n2'));
    server.upsert(PODS, pod('p1', 'n2'));
    server.remove(PODS, 'ns', 'p2');
    await until('three events', () => seen.length >= 3);
    assert.deepEqual(
      seen.map((s) => s.replace(/:\d+->\d+$/, '')),
      ['add:p4', 'update:p1', 'delete:p2'],
    );
    assert.deepEqual(
      informer.store
        .byIndex('nodeName', 'n2')
        .map((p) => p.metadata.name)
        .sort(),
      ['p1', 'p3', 'p4'],
    );
    assert.deepEqual(informer.store.byIndex('nodeName', 'n1'), []);
    assert.equal(informer.lastSyncResourceVersion(), String(server.resourceVersion));
  });

  test('the transform runs on each list item and watch object as decoded, with apiVersion and kind set, and the cached object it replaces', async () => {
    const seen: string[] = [];
    const previous: (Pod | undefined)[] = [];
    const other = new Informer<Pod>({
      name: 'pods-transformed',
      client,
      type: resources.pods,
      namespace: 'ns',
      transform: (p, prev) => {
        seen.push(`${p.apiVersion}/${p.kind}/${p.metadata.name}`);
        previous.push(prev);
        return { apiVersion: p.apiVersion, kind: p.kind, metadata: { name: p.metadata.name, namespace: 'ns' } } as Pod;
      },
      logger,
    });
    const stopOther = new AbortController();
    const runningOther = other.run(stopOther.signal);
    try {
      assert.equal(await other.waitForCacheSync(AbortSignal.timeout(1500)), true);
      assert.deepEqual(seen.sort(), ['v1/Pod/p1', 'v1/Pod/p2', 'v1/Pod/p3']);
      assert.deepEqual(other.store.get('ns/p1'), {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p1', namespace: 'ns' },
      });
      server.upsert(PODS, pod('p4', 'n1'));
      await until('p4 cached', () => other.store.has('ns/p4'));
      assert.deepEqual(other.store.get('ns/p4'), {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p4', namespace: 'ns' },
      });
      assert.deepEqual(previous, [undefined, undefined, undefined, undefined], 'no cached object yet');
      const cached = other.store.get('ns/p4');
      server.upsert(PODS, pod('p4', 'n2'));
      await until('p4 modified', () => previous.length === 5);
      assert.equal(previous[4], cached, 'a MODIFIED event: the object it replaces');
      assert.notEqual(other.store.get('ns/p4'), cached);
    } finally {
      stopOther.abort();
      await runningOther;
    }
  });

  test('a transform that hands back the cached object: nothing stored, no update told, the same sorted list', async () => {
    const updates: string[] = [];
    const keeping = new Informer<Pod>({
      name: 'pods-keeping',
      client,
      type: resources.pods,
      namespace: 'ns',
      // As cachedNode after a heartbeat: the cached object itself when what it keeps (here the node) is the same.
      transform: (p, prev) =>
        prev && prev.spec?.nodeName === p.spec?.nodeName
          ? prev
          : ({ metadata: { name: p.metadata.name, namespace: 'ns' }, spec: { nodeName: p.spec?.nodeName } } as Pod),
      logger,
    });
    keeping.addEventHandler({ onUpdate: (o, n) => updates.push(`${o.spec?.nodeName}->${n.spec?.nodeName}`) });
    const stopKeeping = new AbortController();
    const runningKeeping = keeping.run(stopKeeping.signal);
    try {
      assert.equal(await keeping.waitForCacheSync(AbortSignal.timeout(1500)), true);
      server.upsert(PODS, pod('p6', 'n1'));
      await until('p6 cached', () => keeping.store.has('ns/p6'));
      const cached = keeping.store.get('ns/p6');
      const list = keeping.store.listSorted();
      server.upsert(PODS, pod('p6', 'n1', { metadata: { name: 'p6', namespace: 'ns', labels: { beat: '1' } } }));
      server.upsert(PODS, pod('p7', 'n1'));
      await until('p7 cached', () => keeping.store.has('ns/p7'));
      assert.equal(keeping.store.get('ns/p6'), cached, 'the cached object stays');
      assert.deepEqual(updates, [], 'no update told for it');
      assert.deepEqual(keeping.store.changedKeysSince(list), ['ns/p7'], 'only p7 changed the list');
      server.upsert(PODS, pod('p6', 'n2'));
      await until('p6 moved', () => updates.length === 1);
      assert.deepEqual(updates, ['n1->n2']);
      assert.notEqual(keeping.store.get('ns/p6'), cached);
    } finally {
      stopKeeping.abort();
      await runningKeeping;
    }
  });

  test('a dropped connection is rewatched from the last resourceVersion, without a relist', async () => {
    server.upsert(PODS, pod('p4'));
    await until('p4', () => informer.store.has('ns/p4'));
    const rv = informer.lastSyncResourceVersion();
    server.dropWatches();
    server.upsert(PODS, pod('p5')); // happens while disconnected; replayed from the log
    await until('p5 after rewatch', () => informer.store.has('ns/p5'));
    const watches = server.requests.filter((r) => r.query.get('watch') === 'true');
    assert.equal(watches.at(-1)?.query.get('resourceVersion'), rv);
    assert.equal(watches.at(-1)?.query.get('allowWatchBookmarks'), 'true');
    const timeout = Number(watches.at(-1)?.query.get('timeoutSeconds'));
    assert.ok(timeout >= 300 && timeout < 600, `timeoutSeconds ${timeout} in [300, 600)`);
    assert.equal(server.requests.filter((r) => r.query.get('watch') !== 'true').length, 0, 'no list');
    assert.deepEqual(seen, ['add:p4', 'add:p5']);
  });

  test('an ERROR 410 event mid-watch relists and emits the difference, with tombstones', async () => {
    const oldRv = informer.store.getByName('ns', 'p1')?.metadata.resourceVersion;
    server.upsertSilently(PODS, pod('p1', 'n2'));
    server.removeSilently(PODS, 'ns', 'p2');
    server.upsertSilently(PODS, pod('p4'));
    server.compact();
    server.sendWatchError({ code: 410, reason: 'Expired', message: 'too old resource version' });
    await until('relist diff', () => seen.length >= 3);
    assert.deepEqual(
      seen.sort(),
      [
        'add:p4',
        `tombstone:p2`,
        `update:p1:${oldRv}->${server.get(PODS, 'ns', 'p1')?.metadata.resourceVersion}`,
      ].sort(),
    );
    assert.equal(informer.store.has('ns/p2'), false);
    assert.ok(
      server.requests.some((r) => r.query.get('limit') === '2'),
      'relisted',
    );
    await until('rewatch', () => server.watchCount === 1);
    server.upsert(PODS, pod('p5'));
    await until('events after relist', () => informer.store.has('ns/p5'));
  });

  test('an HTTP 410 on rewatch relists', async () => {
    server.goneMode = 'http';
    server.upsertSilently(PODS, pod('p4'));
    server.compact();
    server.dropWatches();
    await until('p4 via relist', () => informer.store.has('ns/p4'));
    assert.ok(
      server.requests.some(
        (r) => r.query.get('watch') === 'true' && r.query.get('resourceVersion') !== informer.lastSyncResourceVersion(),
      ),
    );
    assert.deepEqual(seen, ['add:p4']);
  });

  test('a silent watch is aborted by the inactivity watchdog and rewatched', async () => {
    stop.abort();
    await running;
    server.silentWatches = true;
    const quiet = new Informer<Pod>({
      name: 'quiet',
      client,
      type: resources.pods,
      namespace: 'ns',
      inactivityTimeoutMs: 100,
      backoff: { initialMs: 10, maxMs: 20 },
      logger,
    });
    const ac = new AbortController();
    const run = quiet.run(ac.signal);
    await quiet.waitForCacheSync();
    const watches = () => server.requests.filter((r) => r.query.get('watch') === 'true').length;
    await until('a second watch after silence', () => watches() >= 2);
    server.silentWatches = false;
    await until('a live watch', () => server.watchCount === 1, 1000);
    server.upsert(PODS, pod('p4'));
    await until('p4', () => quiet.store.has('ns/p4'));
    ac.abort();
    await run;
    assert.ok(errorLogs.some((l) => /watch silent/.test(l)));
    errorLogs.length = 0;
  });

  test('survives an apiserver restart (connection refused → backoff → rewatch)', async () => {
    await server.stop();
    server.upsert(PODS, pod('p4')); // written while the apiserver is unreachable
    await sleep(60); // a few refused attempts
    await server.start(server.port);
    await until('p4 after restart', () => informer.store.has('ns/p4'));
    assert.ok(errorLogs.some((l) => /ECONNREFUSED/.test(l)));
    errorLogs.length = 0;
  });
});

describe('Informer.replace', () => {
  test('a large list is applied in batches, the event loop turning between them; synced only at the end', async () => {
    const informer = new Informer<Pod>({
      name: 'pods',
      client: undefined as unknown as KubeClient, // never run: replace is called as the reflector would
      type: resources.pods,
      indexers: { nodeName: indexPodsByNodeName },
    });
    const total = 2 * REPLACE_BATCH + 1;
    const items = Array.from({ length: total }, (_, i) => pod(`p${i}`, `n${i % 7}`));
    let midway: { size: number; synced: boolean } | undefined;
    setImmediate(() => (midway = { size: informer.store.size, synced: informer.hasSynced() }));
    await informer.replace(items, '1');
    assert.deepEqual(midway, { size: REPLACE_BATCH, synced: false });
    assert.equal(informer.store.size, total);
    assert.equal(informer.hasSynced(), true);
    assert.equal(informer.store.byIndex('nodeName', 'n0').length, Math.ceil(total / 7));
  });

  test('a list of at most one batch is applied before replace returns', () => {
    const informer = new Informer<Pod>({
      name: 'pods',
      client: undefined as unknown as KubeClient,
      type: resources.pods,
    });
    void informer.replace([pod('p1'), pod('p2')], '1');
    assert.equal(informer.store.size, 2);
    assert.equal(informer.hasSynced(), true);
  });
});
