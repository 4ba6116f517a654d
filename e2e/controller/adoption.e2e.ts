// e2e: ownership. `kubectl delete --cascade=orphan` then re-creating the same DaemonSet
// adopts the running pods and revisions without restarting them; a pod whose labels stop matching
// is released and replaced; deleting the DaemonSet removes its pods through garbage collection.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apply, eventually, kubectl, kubectlJson, type PodJson, fixture } from '../lib/kube.ts';
import { sleep } from '../../src/testing/wait.ts';
import {
  ADS,
  adsManifest,
  adsPods,
  eventsFor,
  getAds,
  hashOf,
  listRevisions,
  waitOnePodPerNode,
  waitRolledOut,
  type AdsJson,
} from '../lib/ads.ts';

const restarts = (p: PodJson) => (p.status?.containerStatuses ?? []).map((c) => c.restartCount);

describe('orphan and re-adopt', { timeout: 300_000 }, () => {
  const f = fixture('adopt', 3);
  const name = 'adopted';
  let first: AdsJson;
  let pods: Map<string, PodJson>;

  test('kubectl delete --cascade=orphan leaves the pods and revision running, without owner', async () => {
    await apply(adsManifest({ name, namespace: f.ns, group: f.group }));
    first = await waitRolledOut(f.ns, name, 3);
    pods = await waitOnePodPerNode(f.ns, name, f.nodes, { hash: first.status?.daemonSetHash });

    await kubectl(['delete', ADS, name, '-n', f.ns, '--cascade=orphan', '--wait=true', '--timeout=60s']);
    await eventually('the pods to lose their ownerReference (orphaned by the garbage collector)', async () =>
      (await adsPods(f.ns, name)).every((p) => (p.metadata.ownerReferences ?? []).length === 0),
    );
    await eventually('the revision to lose its ownerReference', async () =>
      (await listRevisions(f.ns, name)).every((r) => (r.metadata.ownerReferences ?? []).length === 0),
    );
    await sleep(1500);
    const orphans = await waitOnePodPerNode(f.ns, name, f.nodes, { timeoutMs: 5000 });
    for (const n of f.nodes) {
      assert.equal(orphans.get(n)!.metadata.uid, pods.get(n)!.metadata.uid, `pod on ${n} survived the orphaning`);
    }
  });

  test('re-creating the same DaemonSet adopts the same pods and revision: no pod created, deleted or restarted', async () => {
    await apply(adsManifest({ name, namespace: f.ns, group: f.group }));
    const second = await getAds(f.ns, name);
    assert.notEqual(second.metadata.uid, first.metadata.uid, 'a new DaemonSet object');
    await eventually('every pod to carry a controller ownerReference to the new DaemonSet', async () =>
      (await adsPods(f.ns, name)).every((p) =>
        (p.metadata.ownerReferences ?? []).some((o) => o.controller && o.uid === second.metadata.uid),
      ),
    );
    const ds = await waitRolledOut(f.ns, name, 3);
    assert.equal(ds.status?.daemonSetHash, first.status?.daemonSetHash, 'the same template hashes the same');
    // Give a wrong implementation time to churn.
    await sleep(2000);
    const now = await waitOnePodPerNode(f.ns, name, f.nodes, { timeoutMs: 5000 });
    for (const n of f.nodes) {
      const before = pods.get(n)!;
      const after = now.get(n)!;
      assert.equal(after.metadata.uid, before.metadata.uid, `pod on ${n} adopted, not recreated`);
      assert.deepEqual(restarts(after), restarts(before), `pod on ${n} not restarted`);
      assert.equal(hashOf(after), first.status?.daemonSetHash, `pod on ${n} keeps its hash`);
      const owners = after.metadata.ownerReferences ?? [];
      assert.equal(owners.length, 1, `pod on ${n}: one ownerReference`);
      assert.equal(owners[0]!.uid, second.metadata.uid);
    }
    const revs = await listRevisions(f.ns, name);
    assert.deepEqual(
      revs.map((r) => [r.metadata.name, r.metadata.ownerReferences?.find((o) => o.controller)?.uid]),
      [[`${name}-${first.status?.daemonSetHash}`, second.metadata.uid]],
      'the orphaned revision was adopted, no new one created',
    );
    const churn = (await eventsFor(f.ns, name, second.metadata.uid)).filter((e) =>
      ['SuccessfulCreate', 'SuccessfulDelete'].includes(e.reason),
    );
    assert.deepEqual(
      churn.map((e) => `${e.reason}: ${e.message}`),
      [],
      'the new DaemonSet created and deleted no pod',
    );
  });
});

describe('release and garbage collection', { timeout: 300_000 }, () => {
  const f = fixture('gc', 3);
  const name = 'owned';

  test('a pod relabelled out of the selector is released (ownerReference removed, not deleted) and replaced', async () => {
    await apply(adsManifest({ name, namespace: f.ns, group: f.group }));
    await waitRolledOut(f.ns, name, 3);
    const pods = await waitOnePodPerNode(f.ns, name, f.nodes);
    const victim = pods.get(f.nodes[0]!)!;
    await kubectl(['label', 'pod', victim.metadata.name, '-n', f.ns, '--overwrite', 'app=released']);
    const released = await eventually('the relabelled pod to lose its controller ownerReference', async () => {
      const p = await kubectlJson<PodJson>(['get', 'pod', victim.metadata.name, '-n', f.ns]);
      return !(p.metadata.ownerReferences ?? []).some((o) => o.controller) && p;
    });
    assert.equal(released.metadata.deletionTimestamp, undefined, 'released, not deleted');
    const now = await waitOnePodPerNode(f.ns, name, f.nodes);
    assert.notEqual(now.get(f.nodes[0]!)!.metadata.uid, victim.metadata.uid, 'a new pod replaces it on its node');
    await kubectl(['delete', 'pod', victim.metadata.name, '-n', f.ns, '--wait=false']);
  });

  test('deleting the DaemonSet removes its pods through garbage collection', async () => {
    const ds = await getAds(f.ns, name);
    const pods = await waitOnePodPerNode(f.ns, name, f.nodes);
    const uids = new Set([...pods.values()].map((p) => p.metadata.uid));
    await kubectl(['delete', ADS, name, '-n', f.ns, '--wait=false']);
    await eventually(
      'the DaemonSet and all its pods to be gone',
      async () => {
        const left = (await adsPods(f.ns, name)).filter((p) => uids.has(p.metadata.uid));
        const gone = (await kubectl(['get', ADS, '-n', f.ns, '-o', 'name'])).trim() === '';
        return gone && left.length === 0;
      },
      { timeoutMs: 60_000 },
    );
    await sleep(1000);
    assert.deepEqual(await adsPods(f.ns, name), [], 'no pod recreated after the DaemonSet is gone');
    const controllerDeletes = (await eventsFor(f.ns, name, ds.metadata.uid)).filter(
      (e) => e.reason === 'SuccessfulDelete',
    );
    assert.deepEqual(
      controllerDeletes.map((e) => e.message),
      [],
      'the pods went by garbage collection, not deleted one by one by the controller',
    );
  });
});
