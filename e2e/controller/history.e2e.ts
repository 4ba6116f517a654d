// e2e: ControllerRevisions. Going back to an earlier template reuses its revision (same
// name and object, revision number bumped); history is trimmed to revisionHistoryLimit, oldest
// first, never deleting a revision a live pod still uses.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apply, eventually, kubectl, fixture } from '../lib/kube.ts';
import {
  adsManifest,
  getAds,
  hashOf,
  imagePatch,
  listRevisions,
  patchAds,
  waitOnePodPerNode,
  waitRolledOut,
  type ControllerRevisionJson,
} from '../lib/ads.ts';

const summary = (revs: ControllerRevisionJson[]) => revs.map((r) => `${r.metadata.name}@${r.revision}`).join(', ');

describe('rollback to a previous template', { timeout: 300_000 }, () => {
  const f = fixture('rollback', 3);
  const name = 'rollback';

  test('reuses the earlier ControllerRevision (same name and UID) with its revision number bumped', async () => {
    await apply(adsManifest({ name, namespace: f.ns, group: f.group, image: 'busybox:1.36' }));
    const h1 = (await waitRolledOut(f.ns, name, 3)).status!.daemonSetHash!;
    const [r1] = await listRevisions(f.ns, name);
    assert.equal(r1?.metadata.name, `${name}-${h1}`);
    assert.equal(r1?.revision, 1);

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const h2 = (await waitRolledOut(f.ns, name, 3)).status!.daemonSetHash!;
    assert.notEqual(h2, h1);
    await waitOnePodPerNode(f.ns, name, f.nodes, { hash: h2 });
    const afterUpdate = await eventually('two revisions', async () => {
      const revs = await listRevisions(f.ns, name);
      return revs.length === 2 && revs;
    });
    assert.deepEqual(
      afterUpdate.map((r) => [r.metadata.name, r.revision]),
      [
        [`${name}-${h1}`, 1],
        [`${name}-${h2}`, 2],
      ],
    );

    await patchAds(f.ns, name, imagePatch('busybox:1.36'));
    const back = await waitRolledOut(f.ns, name, 3);
    assert.equal(back.status?.daemonSetHash, h1, 'the old template hashes to the old revision');
    const pods = await waitOnePodPerNode(f.ns, name, f.nodes, { hash: h1 });
    for (const p of pods.values()) assert.equal(p.spec.containers[0]!.image, 'busybox:1.36');
    const revs = await eventually('the reused revision to carry revision 3', async () => {
      const rs = await listRevisions(f.ns, name);
      return rs.some((r) => r.metadata.name === `${name}-${h1}` && r.revision === 3) && rs;
    });
    assert.equal(revs.length, 2, `no third revision was created: ${summary(revs)}`);
    const reused = revs.find((r) => r.metadata.name === `${name}-${h1}`)!;
    assert.equal(reused.metadata.uid, r1!.metadata.uid, 'the same ControllerRevision object, not a re-created one');
    assert.equal(revs.find((r) => r.metadata.name === `${name}-${h2}`)?.revision, 2, 'the other keeps its number');
  });
});

describe('revision history limit', { timeout: 300_000 }, () => {
  const f = fixture('history', 3);

  test('revisionHistoryLimit 2 after four template changes keeps the current and the two newest old revisions', async () => {
    const name = 'limited';
    await apply(adsManifest({ name, namespace: f.ns, group: f.group, image: 'busybox:1.31', revisionHistoryLimit: 2 }));
    const hashes = [(await waitRolledOut(f.ns, name, 3)).status!.daemonSetHash!];
    for (const v of ['1.32', '1.33', '1.34', '1.35']) {
      await patchAds(f.ns, name, imagePatch(`busybox:${v}`));
      const ds = await waitRolledOut(f.ns, name, 3);
      hashes.push(ds.status!.daemonSetHash!);
    }
    assert.equal(new Set(hashes).size, 5, 'five distinct templates, five hashes');
    const expected = hashes.slice(2).map((h) => `${name}-${h}`);
    const revs = await eventually(`history trimmed to ${expected.join(', ')}`, async () => {
      const rs = await listRevisions(f.ns, name);
      return rs.length === 3 && rs;
    });
    assert.deepEqual(
      revs.map((r) => r.metadata.name),
      expected,
      `the oldest revisions were deleted first: ${summary(revs)}`,
    );
    assert.deepEqual(
      revs.map((r) => r.revision),
      [3, 4, 5],
    );
  });

  test('a revision still used by a live pod is never deleted (OnDelete leaves old pods running)', async () => {
    const name = 'pinned';
    await apply(
      adsManifest({
        name,
        namespace: f.ns,
        group: f.group,
        image: 'busybox:1.31',
        revisionHistoryLimit: 2,
        updateStrategy: { type: 'OnDelete' },
      }),
    );
    const h1 = (await waitRolledOut(f.ns, name, 3)).status!.daemonSetHash!;
    const v1Pods = await waitOnePodPerNode(f.ns, name, f.nodes, { hash: h1 });

    // v2, and move node 0 to it by deleting its pod.
    const h2 = await changeTemplate(f.ns, name, 'busybox:1.32');
    await kubectl(['delete', 'pod', v1Pods.get(f.nodes[0]!)!.metadata.name, '-n', f.ns, '--wait=false']);
    await eventually('node 0 on v2', async () => {
      const m = await waitOnePodPerNode(f.ns, name, f.nodes, { timeoutMs: 1000 }).catch(() => undefined);
      return m && hashOf(m.get(f.nodes[0]!)!) === h2;
    });
    // v3, v4, v5 with no pod deleted: live pods use v1 (nodes 1, 2) and v2 (node 0).
    const h3 = await changeTemplate(f.ns, name, 'busybox:1.33');
    const h4 = await changeTemplate(f.ns, name, 'busybox:1.34');
    const h5 = await changeTemplate(f.ns, name, 'busybox:1.35');
    assert.equal(new Set([h1, h2, h3, h4, h5]).size, 5);

    // Old revisions h1..h4, limit 2: the two not in use (h3, h4) go; h1 and h2 stay for their pods.
    const expected = [h1, h2, h5].map((h) => `${name}-${h}`);
    const revs = await eventually(`revisions trimmed to ${expected.join(', ')}`, async () => {
      const rs = await listRevisions(f.ns, name);
      return rs.length <= 3 && rs;
    });
    assert.deepEqual(
      revs.map((r) => r.metadata.name),
      expected,
      `revisions used by live pods are kept, unused ones trimmed: ${summary(revs)}`,
    );
    const pods = await waitOnePodPerNode(f.ns, name, f.nodes);
    assert.deepEqual(
      f.nodes.map((n) => hashOf(pods.get(n)!)),
      [h2, h1, h1],
      'the live pods are still on v2 and v1',
    );
  });
});

/** Changes the image and waits for status to name the new revision; returns its hash. */
async function changeTemplate(ns: string, name: string, image: string): Promise<string> {
  const before = (await getAds(ns, name)).status?.daemonSetHash;
  await patchAds(ns, name, imagePatch(image));
  return eventually(`status of ${name} to observe the change to ${image}`, async () => {
    const ds = await getAds(ns, name);
    const status = ds.status;
    return (
      status !== undefined &&
      status.observedGeneration === ds.metadata.generation &&
      status.daemonSetHash !== before &&
      status.daemonSetHash
    );
  });
}
