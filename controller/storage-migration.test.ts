// The storage migration: when it runs (a table over the CRD's versions and storedVersions), and against the
// in-process fake apiserver what a real one cannot be made to do on demand: a writer racing the rewrite (Conflict),
// an object deleted between the list and its rewrite, the CRD changed before storedVersions is set. The upgrade
// itself (objects stored in v1alpha1 rewritten in v1beta1 through the conversion webhook) runs on the real control
// plane in e2e/api/v1beta1.e2e.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { until } from '../src/testing/wait.ts';
import type { KubeClient } from '../src/k8s/client.ts';
import type { KubeObject } from '../src/k8s/types.ts';
import { FakeApiServer, startForSuite } from '../src/k8s/testing/fake-apiserver.ts';
import type { EventRecorder } from '../src/k8s/events.ts';
import { storageMigrationSkipped } from './runtime/metrics.ts';
import { migrateStorage, planStorageMigration, runStorageMigration, type CrdVersions } from './storage-migration.ts';

const logger = pino({ level: process.env.DEBUG_LOG ?? 'silent' });
const CRDS = 'apiextensions.k8s.io/v1/customresourcedefinitions';
const V1BETA1 = 'apps.kruise.io/v1beta1/daemonsets';
const V1ALPHA1 = 'apps.kruise.io/v1alpha1/daemonsets';
const NAME = 'daemonsets.apps.kruise.io';

const crd = (storage: string, storedVersions?: string[], strategy = 'Webhook'): CrdVersions & KubeObject =>
  ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: NAME },
    spec: {
      versions: ['v1alpha1', 'v1beta1'].map((name) => ({ name, storage: name === storage })),
      conversion: { strategy },
    },
    ...(storedVersions ? { status: { storedVersions } } : {}),
  }) as CrdVersions & KubeObject;

describe('planStorageMigration', () => {
  const rows: { name: string; crd: CrdVersions; want: ReturnType<typeof planStorageMigration>['action'] }[] = [
    { name: 'upgraded: v1alpha1 objects may remain', crd: crd('v1beta1', ['v1alpha1', 'v1beta1']), want: 'migrate' },
    { name: 'migrated, or created with v1beta1 storage', crd: crd('v1beta1', ['v1beta1']), want: 'skip' },
    { name: 'storage switched back to v1alpha1', crd: crd('v1alpha1', ['v1beta1', 'v1alpha1']), want: 'migrate' },
    { name: 'storedVersions names only another version', crd: crd('v1beta1', ['v1alpha1']), want: 'migrate' },
    { name: 'no status yet', crd: crd('v1beta1'), want: 'migrate' },
    {
      name: 'conversion without the webhook: not yet',
      crd: crd('v1beta1', ['v1alpha1', 'v1beta1'], 'None'),
      want: 'wait',
    },
    { name: 'conversion without the webhook, nothing to do', crd: crd('v1beta1', ['v1beta1'], 'None'), want: 'skip' },
  ];
  for (const row of rows) {
    test(row.name, () => assert.equal(planStorageMigration(row.crd).action, row.want));
  }

  test('a CRD without one storage version is an error naming what it has', () => {
    assert.throws(
      () => planStorageMigration({ metadata: {}, spec: { versions: [{ name: 'v1alpha1' }, { name: 'v1beta1' }] } }),
      /has 0 storage versions \(none\)/,
    );
  });
});

describe('the storage migration against the fake apiserver', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  startForSuite(server, (c) => (client = c));

  const ds = (name: string): KubeObject =>
    ({
      apiVersion: 'apps.kruise.io/v1beta1',
      kind: 'DaemonSet',
      metadata: { name, namespace: 'ns' },
      spec: { template: {} },
    }) as unknown as KubeObject;
  const puts = (from: number) =>
    server.requests.slice(from).filter((r) => r.method === 'PUT' && r.path.includes('/daemonsets/'));
  const run = () => migrateStorage({ client, logger, signal: new AbortController().signal, retryDelayMs: () => 10 });

  test('an object the apiserver refuses is skipped with an event, a metric and a log; the rest are rewritten; storedVersions stays', async () => {
    server.upsert(CRDS, crd('v1beta1', ['v1alpha1', 'v1beta1']));
    for (const n of ['f', 'g', 'h']) server.upsert(V1BETA1, ds(n));
    server.hook = (r, res) => {
      if (r.method !== 'PUT' || !r.path.endsWith('/daemonsets/g')) return false;
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'Invalid',
          code: 422,
          message:
            'DaemonSet.apps.kruise.io "g" is invalid: spec.updateStrategy.rollingUpdate.rollingUpdateType: Unsupported value: "Evil"',
        }),
      );
      return true;
    };
    const events: { key: string; type: string; reason: string; message: string }[] = [];
    const recorder = {
      event: (o: KubeObject, type: string, reason: string, message: string) =>
        events.push({ key: `${o.metadata.namespace}/${o.metadata.name}`, type, reason, message }),
    } as unknown as EventRecorder;
    const skippedBefore = (await storageMigrationSkipped.get()).values[0]?.value ?? 0;
    const from = server.requests.length;
    const result = await migrateStorage({ client, logger, signal: new AbortController().signal, recorder });
    server.hook = undefined;
    assert.deepEqual(result, { action: 'incomplete', storageVersion: 'v1beta1', rewritten: 2, skipped: ['ns/g'] });
    assert.deepEqual(
      puts(from).map((r) => r.path.split('/').pop()),
      ['f', 'g', 'h'],
      'each tried once; h after the refused g (the first test: the server holds only these)',
    );
    assert.equal(events.length, 1);
    assert.deepEqual(
      { ...events[0], message: undefined },
      {
        key: 'ns/g',
        type: 'Warning',
        reason: 'StorageMigrationFailed',
        message: undefined,
      },
    );
    assert.match(events[0]!.message, /^cannot be rewritten in v1beta1: .*Unsupported value: "Evil"/);
    assert.equal((await storageMigrationSkipped.get()).values[0]?.value, skippedBefore + 1);
    const stored = server.get(CRDS, undefined, NAME) as unknown as CrdVersions;
    assert.deepEqual(stored.status?.storedVersions, ['v1alpha1', 'v1beta1'], 'not every object is in v1beta1 yet');
    for (const n of ['f', 'g', 'h']) server.remove(V1BETA1, 'ns', n);
  });

  test('rewrites each object once, rereads one a writer changed meanwhile, skips one deleted, then sets storedVersions', async () => {
    server.upsert(CRDS, crd('v1beta1', ['v1alpha1', 'v1beta1']));
    for (const n of ['a', 'b', 'c']) server.upsert(V1BETA1, ds(n));
    let raced = false;
    server.hook = (r) => {
      if (r.method === 'PUT' && r.path.endsWith('/daemonsets/b') && !raced) {
        raced = true; // another writer got there first: the PUT carries a stale resourceVersion
        server.upsert(V1BETA1, { ...ds('b'), metadata: { ...ds('b').metadata, labels: { x: 'y' } } });
      }
      if (r.method === 'PUT' && r.path.endsWith('/daemonsets/c')) server.remove(V1BETA1, 'ns', 'c');
      return false;
    };
    const from = server.requests.length;
    const result = await run();
    server.hook = undefined;
    assert.deepEqual(result, {
      action: 'migrated',
      storageVersion: 'v1beta1',
      rewritten: 3,
      from: ['v1alpha1', 'v1beta1'],
    });
    assert.deepEqual(
      puts(from).map((r) => r.path.split('/').pop()),
      ['a', 'b', 'b', 'c'],
      'b again after its Conflict, c not again once gone',
    );
    assert.equal(server.get(V1BETA1, 'ns', 'b')?.metadata.labels?.x, 'y', 'the racing write stands');
    const stored = server.get(CRDS, undefined, NAME) as unknown as CrdVersions;
    assert.deepEqual(stored.status?.storedVersions, ['v1beta1']);

    const again = server.requests.length;
    assert.deepEqual(await run(), { action: 'skip', storageVersion: 'v1beta1' });
    assert.deepEqual(
      server.requests.slice(again).map((r) => `${r.method} ${r.path}`),
      [`GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/${NAME}`],
      'storedVersions already [v1beta1]: nothing listed, nothing written',
    );
  });

  test('while the CRD converts without the webhook nothing is listed or written; once it does, the migration runs', async () => {
    server.upsert(CRDS, crd('v1beta1', ['v1alpha1', 'v1beta1'], 'None'));
    server.upsert(V1BETA1, ds('e'));
    let gets = 0;
    server.hook = (r) => {
      if (r.method === 'GET' && r.path.endsWith(`/customresourcedefinitions/${NAME}`) && ++gets === 3) {
        server.upsert(CRDS, crd('v1beta1', ['v1alpha1', 'v1beta1'])); // the manager registered its webhook
      }
      return false;
    };
    const from = server.requests.length;
    const result = await run();
    server.hook = undefined;
    assert.equal(result.action, 'migrated');
    const sent = server.requests.slice(from).map((r) => `${r.method} ${r.path.split('/').slice(-2).join('/')}`);
    assert.deepEqual(sent.slice(0, 2), [
      `GET customresourcedefinitions/${NAME}`,
      `GET customresourcedefinitions/${NAME}`,
    ]);
    assert.equal(
      sent.findIndex((r) => r.startsWith('GET ') && r.endsWith('/daemonsets')),
      3,
      `listed only after the webhook was registered: ${sent.join(', ')}`,
    );
  });

  test('the leader looks again: a storage version changed while it leads is migrated to', async () => {
    server.upsert(CRDS, crd('v1beta1', ['v1beta1']));
    // The fake keeps each version apart: the object as the v1alpha1 endpoint serves it.
    server.upsert(V1ALPHA1, { ...ds('f'), apiVersion: 'apps.kruise.io/v1alpha1' } as KubeObject);
    const leading = new AbortController();
    const running = runStorageMigration({ client, logger, signal: leading.signal, recheckIntervalMs: 20 });
    running.catch(() => {});
    try {
      await until('a few looks at the CRD', () => server.requests.filter((r) => r.path.endsWith(NAME)).length >= 3);
      // `helm upgrade --set crd.storageVersion=v1alpha1`: the apiserver adds the new storage version.
      server.upsert(CRDS, crd('v1alpha1', ['v1beta1', 'v1alpha1']));
      await until('storedVersions [v1alpha1]', () => {
        const stored = server.get(CRDS, undefined, NAME) as unknown as CrdVersions;
        return JSON.stringify(stored.status?.storedVersions) === '["v1alpha1"]';
      });
      assert.ok(
        server.requests.some(
          (r) =>
            r.method === 'PUT' && r.path === `/apis/${V1ALPHA1.replace('daemonsets', 'namespaces/ns/daemonsets')}/f`,
        ),
      );
    } finally {
      leading.abort();
    }
    await assert.rejects(running);
  });

  test('storedVersions is set only over the CRD as read at the start; a changed CRD makes it start over', async () => {
    server.upsert(CRDS, crd('v1beta1', ['v1alpha1', 'v1beta1']));
    server.upsert(V1BETA1, ds('d'));
    let changed = false;
    server.hook = (r) => {
      if (r.method === 'PATCH' && r.path.endsWith('/status') && !changed) {
        changed = true; // e.g. the storage version switched by a helm upgrade after the list
        server.upsert(CRDS, crd('v1beta1', ['v1alpha1', 'v1beta1']));
      }
      return false;
    };
    const from = server.requests.length;
    const result = await run();
    server.hook = undefined;
    assert.equal(result.action, 'migrated');
    const lists = server.requests.slice(from).filter((r) => r.method === 'GET' && r.path.endsWith('/daemonsets'));
    assert.equal(lists.length, 2, 'listed again after the Conflict on the CRD status');
    assert.deepEqual((server.get(CRDS, undefined, NAME) as unknown as CrdVersions).status?.storedVersions, ['v1beta1']);
  });
});
