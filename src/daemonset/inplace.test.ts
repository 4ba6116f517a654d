// InPlaceIfPossible (issue #5.7), after kruise e2e §6.2 items 4-5.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { PodTemplateSpec } from '../k8s/types.ts';
import { inPlaceSpec } from './inplace.ts';
import { FakeCluster, addNodes, expectSyncDaemonSets, newDaemonSet } from './test-fixtures.ts';

const tpl = (
  image: string,
  extra: Record<string, unknown> = {},
  labels: Record<string, string> = { a: '1' },
): PodTemplateSpec => ({
  metadata: { labels },
  spec: { containers: [{ name: 'c', image, ...extra }] },
});

describe('inPlaceSpec (CanUpdateInPlace)', () => {
  const rows: [string, PodTemplateSpec, PodTemplateSpec, boolean][] = [
    ['image only', tpl('v1'), tpl('v2'), true],
    ['labels only', tpl('v1'), tpl('v1', {}, { a: '2', b: '3' }), true],
    ['env change', tpl('v1'), tpl('v2', { env: [{ name: 'X', value: '1' }] }), false],
    ['resources change', tpl('v1'), tpl('v1', { resources: { limits: { cpu: '1' } } }), false],
    [
      'container added',
      tpl('v1'),
      {
        metadata: { labels: { a: '1' } },
        spec: {
          containers: [
            { name: 'c', image: 'v1' },
            { name: 'd', image: 'x' },
          ],
        },
      },
      false,
    ],
  ];
  for (const [name, from, to, ok] of rows) test(name, () => assert.equal(inPlaceSpec(from, to) !== undefined, ok));
  test('label diff includes removals as null', () => {
    assert.deepEqual(inPlaceSpec(tpl('v1', {}, { a: '1', gone: 'x' }), tpl('v2', {}, { a: '2' })), {
      images: [{ name: 'c', image: 'v2' }],
      labels: { a: '2', gone: null },
      annotations: {},
    });
  });
});

function inPlaceCluster(maxUnavailable: number | string, nodes = 3): FakeCluster {
  const ds = newDaemonSet({
    strategy: 'RollingUpdate',
    rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable },
  });
  const c = new FakeCluster(ds, addNodes(nodes));
  c.sync();
  c.sync();
  c.markReady();
  return c;
}

describe('in-place rolling update', () => {
  test('image change: pods keep name, UID and node; InPlaceUpdateReady False until the new image runs', () => {
    const c = inPlaceCluster('100%');
    const before = c.pods.map((p) => [p.metadata.name, p.metadata.uid, p.spec.nodeName]);
    assert.ok(c.pods.every((p) => p.spec.readinessGates?.some((g) => g.conditionType === 'InPlaceUpdateReady')));
    assert.ok(
      c.pods.every((p) => p.status?.conditions?.some((x) => x.type === 'InPlaceUpdateReady' && x.status === 'True')),
    );
    c.setImage('foo/bar:v2');
    const p = c.sync();
    assert.equal(p.deletes.length, 0);
    assert.equal(p.inPlaceUpdates.length, 3);
    assert.deepEqual(
      c.pods.map((x) => [x.metadata.name, x.metadata.uid, x.spec.nodeName]),
      before,
    );
    assert.ok(c.pods.every((x) => x.spec.containers[0]?.image === 'foo/bar:v2' && c.hashOf(x) === p.hash));
    assert.ok(c.pods.every((x) => x.metadata.annotations?.['apps.kruise.io/inplace-update-state']));
    const ipr = (x: (typeof c.pods)[number]) =>
      x.status?.conditions?.find((k) => k.type === 'InPlaceUpdateReady')?.status;
    assert.ok(c.pods.every((x) => ipr(x) === 'False'));
    c.sync();
    assert.ok(
      c.pods.every((x) => ipr(x) === 'False'),
      'containers not restarted yet',
    );
    c.kubeletRestartChangedContainers();
    c.sync();
    assert.ok(c.pods.every((x) => ipr(x) === 'True'));
  });

  test('the maxUnavailable budget applies: one pod at a time', () => {
    const c = inPlaceCluster(1);
    c.setImage('foo/bar:v2');
    for (let i = 0; i < 3; i++) {
      assert.equal(c.sync().inPlaceUpdates.length, 1, `step ${i}`);
      assert.equal(c.sync().inPlaceUpdates.length, 0, 'waiting for the updated pod');
      c.kubeletRestartChangedContainers();
      c.sync();
      c.markReady();
    }
    assert.equal(c.sync().inPlaceUpdates.length, 0);
    assert.ok(c.pods.every((x) => x.spec.containers[0]?.image === 'foo/bar:v2'));
  });

  test('a change that is not in-place-able (env) recreates the pods', () => {
    const c = inPlaceCluster('100%');
    c.updateSpec((ds: DaemonSet) => {
      const ct = ds.spec.template.spec.containers[0];
      if (ct) ct.env = [{ name: 'X', value: '1' }];
    });
    const p = c.sync();
    assert.deepEqual([p.inPlaceUpdates.length, p.deletes.length], [0, 3]);
  });

  test('pods created under Standard lack the gate: the first update after switching type recreates', () => {
    const c = new FakeCluster(
      newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } }),
      addNodes(2),
    );
    c.sync();
    c.markReady();
    c.updateSpec((ds) => {
      (ds.spec.updateStrategy?.rollingUpdate as Record<string, unknown>).rollingUpdateType = 'InPlaceIfPossible';
      const ct = ds.spec.template.spec.containers[0];
      if (ct) ct.image = 'v2';
    });
    expectSyncDaemonSets(c, 0, 2);
  });
});
