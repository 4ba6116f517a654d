import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setDefaultsPodTemplate } from '../api/defaults.ts';
import type { DaemonSet } from '../api/types.ts';
import type { ControllerRevision } from '../k8s/types.ts';
import { cleanupHistory, computeRevisionHash, constructHistory, revisionData, revisionMatches } from './history.ts';
import { FakeCluster, addNodes, newDaemonSet, newPod } from './test-fixtures.ts';

function revisionOf(ds: DaemonSet, revision: number, collisionCount?: number): ControllerRevision {
  const h = constructHistory({ ...ds, status: { ...(ds.status ?? {}), collisionCount } } as DaemonSet, [], []);
  assert.ok(h.create);
  return { ...h.create, revision };
}

describe('constructHistory', () => {
  const dsA = newDaemonSet({ image: 'img:a' });
  const dsB = newDaemonSet({ image: 'img:b' });

  test('no revision: snapshot <ds>-<hash> numbered 1 with template labels, DS annotations, controllerRef', () => {
    const ds = newDaemonSet({ annotations: { note: 'x' } });
    const h = constructHistory(ds, [], []);
    assert.ok(h.create);
    assert.equal(h.create.metadata.name, `foo-${h.hash}`);
    assert.equal(h.create.revision, 1);
    assert.equal(h.create.metadata.labels?.['controller-revision-hash'], h.hash);
    assert.equal(h.create.metadata.labels?.name, 'simple-daemon');
    assert.deepEqual(h.create.metadata.annotations, { note: 'x' });
    assert.equal(h.create.metadata.ownerReferences?.[0]?.controller, true);
    assert.deepEqual(h.create.data, revisionData(ds));
    assert.equal((revisionData(ds).spec.template as { $patch?: string }).$patch, 'replace');
    assert.match(h.hash, /^[bcdfghjklmnpqrstvwxz2456789]+$/);
  });

  test('hash is stable: same template, other key order, other process -> same hash; other image -> other hash', () => {
    const reordered = structuredClone(dsA);
    reordered.spec.template = { spec: reordered.spec.template.spec, metadata: reordered.spec.template.metadata };
    assert.equal(computeRevisionHash(dsA, undefined), computeRevisionHash(reordered, undefined));
    assert.notEqual(computeRevisionHash(dsA, undefined), computeRevisionHash(dsB, undefined));
    assert.notEqual(computeRevisionHash(dsA, undefined), computeRevisionHash(dsA, 1));
  });

  test('an existing matching revision is current: no create, its hash label is the hash', () => {
    const r = revisionOf(dsA, 1);
    const h = constructHistory(dsA, [r], []);
    assert.equal(h.create, undefined);
    assert.equal(h.hash, r.metadata.labels?.['controller-revision-hash']);
    assert.deepEqual(h.update, []);
    assert.deepEqual(h.old, []);
  });

  test('template change: new revision numbered max(old)+1, old kept in old', () => {
    const r1 = revisionOf(dsA, 1);
    const h = constructHistory(dsB, [r1], []);
    assert.equal(h.create?.revision, 2);
    assert.deepEqual(
      h.old.map((r) => r.metadata.name),
      [r1.metadata.name],
    );
  });

  test('rollback reuses the earlier revision (same name and hash) and bumps its number', () => {
    const r1 = revisionOf(dsA, 1);
    const r2 = revisionOf(dsB, 2);
    const h = constructHistory(dsA, [r1, r2], []);
    assert.equal(h.create, undefined);
    assert.equal(h.current.metadata.name, r1.metadata.name);
    assert.equal(h.current.revision, 3);
    assert.deepEqual(
      h.update.map((r) => [r.metadata.name, r.revision]),
      [[r1.metadata.name, 3]],
    );
    assert.equal(h.hash, r1.metadata.labels?.['controller-revision-hash']);
  });

  test('duplicates: the highest revision is kept, others deleted, only their pods relabelled', () => {
    const keep = revisionOf(dsA, 3);
    const dup = {
      ...revisionOf(dsA, 2),
      metadata: { ...revisionOf(dsA, 2).metadata, name: 'foo-dup', labels: { 'controller-revision-hash': 'dup' } },
    };
    const old = revisionOf(dsB, 1);
    const pods = [
      newPod(dsA, 'n1', { name: 'p-dup', hash: 'dup' }),
      newPod(dsA, 'n2', { name: 'p-old', hash: 'oldhash' }),
    ];
    const h = constructHistory(dsA, [dup, keep, old], pods);
    assert.equal(h.current.metadata.name, keep.metadata.name);
    assert.deepEqual(h.delete, ['foo-dup']);
    assert.deepEqual(h.podRelabels, [{ podName: 'p-dup', hash: h.hash }]);
    assert.deepEqual(h.update, [], 'revision 3 is already max(old)+1 or more');
  });

  test('a revision without the hash label gets its own name as the label', () => {
    const r = revisionOf(dsA, 1);
    delete r.metadata.labels?.['controller-revision-hash'];
    const h = constructHistory(dsA, [r], []);
    assert.equal(h.hash, r.metadata.name);
    assert.equal(h.update[0]?.metadata.labels?.['controller-revision-hash'], r.metadata.name);
  });

  test('name collision with other data: collisionCount bumped and the hash recomputed', () => {
    const wanted = `foo-${computeRevisionHash(dsA, undefined)}`;
    const squatter = { ...revisionOf(dsB, 1), metadata: { ...revisionOf(dsB, 1).metadata, name: wanted } };
    const h = constructHistory(dsA, [squatter], []);
    assert.equal(h.collisionCount, 1);
    assert.equal(h.hash, computeRevisionHash(dsA, 1));
    assert.equal(h.create?.metadata.name, `foo-${computeRevisionHash(dsA, 1)}`);
    assert.equal(h.notes.length, 1);
    const foreign = constructHistory(dsA, [], [], [squatter]);
    assert.equal(foreign.collisionCount, 1, 'foreign revisions collide too');
  });

  test('a foreign revision with our name and our data is used as is', () => {
    const r = revisionOf(dsA, 4);
    const h = constructHistory(dsA, [], [], [r]);
    assert.equal(h.create, undefined);
    assert.equal(h.current, r);
  });

  test('a revision written by kruise-manager (Go marshalling) matches the same template', () => {
    const goData = {
      spec: {
        template: {
          $patch: 'replace',
          metadata: { creationTimestamp: null, labels: { name: 'simple-daemon', type: 'production' } },
          spec: { containers: [{ name: 'foo', image: 'img:a', resources: {} }] },
        },
      },
    };
    const r: ControllerRevision = {
      metadata: { name: 'foo-5d8f7b', labels: { 'controller-revision-hash': '5d8f7b' } },
      data: goData,
      revision: 1,
    };
    assert.equal(revisionMatches(dsA, r), true);
    assert.equal(constructHistory(dsA, [r], []).hash, '5d8f7b');
  });
});

/** A DaemonSet whose template is defaulted as our webhook stores it (apps/v1 template defaults). */
function defaulted(ds: DaemonSet): DaemonSet {
  const out = structuredClone(ds);
  setDefaultsPodTemplate(out.spec.template as unknown as Record<string, unknown>);
  return out;
}

/** A revision as kruise-manager writes it: the raw template (Go marshalling), Kruise's name and hash label. */
function kruiseRevision(hash: string, containers: Record<string, unknown>[], revision = 1): ControllerRevision {
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: { name: `foo-${hash}`, labels: { 'controller-revision-hash': hash } },
    data: {
      spec: {
        template: {
          $patch: 'replace',
          metadata: { creationTimestamp: null, labels: { name: 'simple-daemon', type: 'production' } },
          spec: { containers: containers.map((c) => ({ resources: {}, ...c })) },
        },
      },
    },
    revision,
  };
}

describe('revisionMatches compares defaulted templates (taking over from kruise-manager)', () => {
  const rows: { name: string; ds: DaemonSet; revision: ControllerRevision; matches: boolean }[] = [
    {
      name: 'Kruise revision (undefaulted) vs the same template defaulted by our webhook',
      ds: defaulted(newDaemonSet({ image: 'img:a' })),
      revision: kruiseRevision('k1', [{ name: 'foo', image: 'img:a' }]),
      matches: true,
    },
    {
      name: 'Kruise revision vs the same template undefaulted (DaemonSet as kruise-manager left it)',
      ds: newDaemonSet({ image: 'img:a' }),
      revision: kruiseRevision('k1', [{ name: 'foo', image: 'img:a' }]),
      matches: true,
    },
    {
      name: 'a default spelled out on one side only (terminationGracePeriodSeconds: 30)',
      ds: newDaemonSet({ image: 'img:a', templateSpec: { terminationGracePeriodSeconds: 30 } }),
      revision: kruiseRevision('k1', [{ name: 'foo', image: 'img:a' }]),
      matches: true,
    },
    {
      name: 'quantities in another spelling (0.5 vs 500m)',
      ds: defaulted(
        newDaemonSet({
          templateSpec: { containers: [{ name: 'foo', image: 'img:a', resources: { limits: { cpu: '500m' } } }] },
        }),
      ),
      revision: kruiseRevision('k1', [{ name: 'foo', image: 'img:a', resources: { limits: { cpu: '0.5' } } }]),
      matches: true,
    },
    {
      name: 'another image',
      ds: defaulted(newDaemonSet({ image: 'img:b' })),
      revision: kruiseRevision('k1', [{ name: 'foo', image: 'img:a' }]),
      matches: false,
    },
    {
      name: 'a value other than the default (terminationGracePeriodSeconds: 5)',
      ds: defaulted(newDaemonSet({ image: 'img:a', templateSpec: { terminationGracePeriodSeconds: 5 } })),
      revision: kruiseRevision('k1', [{ name: 'foo', image: 'img:a' }]),
      matches: false,
    },
  ];
  for (const r of rows) test(r.name, () => assert.equal(revisionMatches(r.ds, r.revision), r.matches));

  test('rollback to a Kruise-era template reuses its revision (no new one), numbered max(old)+1', () => {
    const kruiseEra = kruiseRevision('k1', [{ name: 'foo', image: 'img:a' }], 1);
    const ours = revisionOf(defaulted(newDaemonSet({ image: 'img:b' })), 2);
    const h = constructHistory(defaulted(newDaemonSet({ image: 'img:a' })), [kruiseEra, ours], []);
    assert.equal(h.create, undefined);
    assert.equal(h.current.metadata.name, 'foo-k1');
    assert.equal(h.hash, 'k1');
    assert.deepEqual(
      h.update.map((r) => [r.metadata.name, r.revision]),
      [['foo-k1', 3]],
    );
  });

  test('a Kruise revision and ours of the same template are duplicates: the higher kept, the other deleted', () => {
    const kruiseEra = kruiseRevision('k1', [{ name: 'foo', image: 'img:a' }], 1);
    const ds = defaulted(newDaemonSet({ image: 'img:a' }));
    const ours = revisionOf(ds, 2);
    const h = constructHistory(ds, [kruiseEra, ours], [newPod(ds, 'n1', { name: 'p-k1', hash: 'k1' })]);
    assert.equal(h.current.metadata.name, ours.metadata.name);
    assert.deepEqual(h.delete, ['foo-k1']);
    assert.deepEqual(h.podRelabels, [{ podName: 'p-k1', hash: h.hash }]);
  });
});

describe('revisionData', () => {
  test('keys sorted at every level, as Go re-marshals them (the GC patches revisions; other bytes are immutable)', () => {
    const ds = newDaemonSet();
    ds.spec.template = {
      spec: { containers: [{ name: 'c', image: 'x', command: ['sh'] }], nodeSelector: { z: '1', a: '2' } },
      metadata: { labels: { name: 'foo' } },
    };
    assert.equal(
      JSON.stringify(revisionData(ds)),
      '{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"name":"foo"}},' +
        '"spec":{"containers":[{"command":["sh"],"image":"x","name":"c"}],"nodeSelector":{"a":"2","z":"1"}}}}}',
    );
  });
});

describe('cleanupHistory', () => {
  const ds = newDaemonSet({ revisionHistoryLimit: 2 });
  const revs = [1, 2, 3, 4].map((n) => ({
    metadata: { name: `foo-r${n}`, labels: { 'controller-revision-hash': `r${n}` } },
    revision: n,
  })) as ControllerRevision[];
  test('trims oldest first down to the limit', () => {
    assert.deepEqual(cleanupHistory(ds, revs, []), ['foo-r1', 'foo-r2']);
  });
  test('never deletes a revision a live pod uses (terminating pods count)', () => {
    const pods = [newPod(ds, 'n', { hash: 'r1', deleting: true })];
    assert.deepEqual(cleanupHistory(ds, revs, pods), ['foo-r2', 'foo-r3']);
  });
  test('within the limit: nothing; limit 0: all unused', () => {
    assert.deepEqual(cleanupHistory(ds, revs.slice(0, 2), []), []);
    assert.deepEqual(
      cleanupHistory(newDaemonSet({ revisionHistoryLimit: 0 }), revs, [newPod(ds, 'n', { hash: 'r3' })]),
      ['foo-r1', 'foo-r2', 'foo-r4'],
    );
  });
});

describe('revisions through syncs', () => {
  test('image changes create revisions, history trimmed to the limit, rollback reuses the hash', () => {
    const c = new FakeCluster(
      newDaemonSet({ image: 'v1', strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } }),
      addNodes(2),
    );
    const settle = () => {
      for (let i = 0; i < 6; i++) {
        c.sync();
        c.markReady();
      }
    };
    settle();
    const h1 = c.lastPlan?.hash;
    c.setImage('v2');
    settle();
    c.setImage('v3');
    settle();
    const h3 = c.lastPlan?.hash;
    c.setImage('v4');
    settle();
    assert.equal(c.revisions.length, 3, 'current + revisionHistoryLimit 2');
    assert.ok(!c.revisions.some((r) => r.metadata.labels?.['controller-revision-hash'] === h1), 'v1 trimmed');
    c.setImage('v3');
    const p = c.sync();
    assert.equal(p.revisions.create.length, 0, 'v3 revision reused');
    assert.equal(p.revisions.update[0]?.revision, 5);
    assert.equal(p.hash, h3);
    assert.equal(p.deletes.length, 2, 'pods at v4 are rolled back to v3 (maxUnavailable 100%)');
  });
});
