// e2e: update strategies. A streaming pod watch checks the invariants at every state the
// apiserver went through during the rollout (not at poll instants): the unavailability budget of
// maxUnavailable, the surge budget and minReadySeconds of maxSurge, and OnDelete.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apply, eventually, kubectl, podReady, fixture, type Fixture, type PodJson } from '../lib/kube.ts';
import { sleep } from '../../src/testing/wait.ts';
import {
  PodWatch,
  adsManifest,
  adsPods,
  condition,
  getAds,
  deletedAt,
  hashOf,
  readySince,
  imagePatch,
  liveByNode,
  patchAds,
  terminating,
  waitOnePodPerNode,
  waitRolledOut,
  type AdsOptions,
} from '../lib/ads.ts';

/**
 * Applies a busybox:1.36 DaemonSet on the fixture's nodes with `o` on top and waits until it rolled out; returns its
 * revision hash and its pods by node.
 */
async function rollOut(f: Fixture, name: string, o: Partial<AdsOptions>) {
  await apply(adsManifest({ name, namespace: f.ns, group: f.group, image: 'busybox:1.36', ...o }));
  const ds = await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
  const hash = ds.status!.daemonSetHash!;
  return { hash, pods: await waitOnePodPerNode(f.ns, name, f.nodes, { hash }) };
}

/** Waits until the watch has seen `finalPods` too (so its checks covered the end state), then stops it. */
async function watchSawAndStop(watch: PodWatch, finalPods: Map<string, PodJson>): Promise<void> {
  await eventually('the watch to see the final pods', async () => {
    watch.assertAlive();
    return [...finalPods.values()].every((p) => watch.pods.has(p.metadata.uid));
  });
  watch.stop();
}

describe('rolling update with maxUnavailable 2 over 6 nodes', { timeout: 300_000 }, () => {
  const f = fixture('rolling', 6);
  const name = 'rolling';
  let watch: PodWatch | undefined;

  after(() => {
    watch?.stop();
  });

  test('never more than 2 nodes lack an available pod, the budget is used, and every node ends on the new revision', async () => {
    const { hash: oldHash, pods: oldPods } = await rollOut(f, name, {
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2, maxSurge: 0 } },
    });

    let maxLacking = 0;
    let worst = '';
    let maxPodsOnANode = 0;
    let states = 0;
    const check = (w: PodWatch) => {
      states++;
      const all = w.list();
      const live = liveByNode(all, f.nodes);
      // A terminating pod is not available: the controller counts it as gone.
      const lacking = f.nodes.filter((n) => !live.get(n)!.some(podReady));
      if (lacking.length > maxLacking) {
        maxLacking = lacking.length;
        worst = `nodes without an available pod: ${lacking.join(', ')}`;
      }
      for (const n of f.nodes) {
        // Without surge a terminating pod blocks its replacement: at most one pod per node, terminating or not.
        const onNode = all.filter((p) => p.spec.nodeName === n).length;
        maxPodsOnANode = Math.max(maxPodsOnANode, onNode);
      }
    };
    watch = await PodWatch.start(f.ns, `app=${name}`, check);
    check(watch);
    assert.equal(maxLacking, 0, 'all 6 nodes had an available pod before the update');

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = await waitRolledOut(f.ns, name, 6, 120_000);
    const newHash = v2.status!.daemonSetHash!;
    assert.notEqual(newHash, oldHash, 'the image change made a new revision');
    const finalPods = await waitOnePodPerNode(f.ns, name, f.nodes, { hash: newHash });
    await watchSawAndStop(watch, finalPods);

    assert.ok(maxLacking <= 2, `at most maxUnavailable=2 nodes without an available pod at any time; worst: ${worst}`);
    assert.equal(maxLacking, 2, `the rollout used its budget of 2 (saw at most ${maxLacking}) over ${states} states`);
    assert.equal(
      maxPodsOnANode,
      1,
      'never two pods on one node without surge (a terminating pod blocks its replacement)',
    );
    for (const n of f.nodes) {
      const p = finalPods.get(n)!;
      assert.notEqual(p.metadata.uid, oldPods.get(n)!.metadata.uid, `pod on ${n} was replaced`);
      assert.equal(p.spec.containers[0]!.image, 'busybox:1.37', `pod on ${n} runs the new image`);
    }
    const ds = await getAds(f.ns, name);
    assert.equal(condition(ds, 'RolloutComplete')?.status, 'True');
  });
});

describe('surge rolling update: maxSurge 2, maxUnavailable 0, minReadySeconds 5', { timeout: 300_000 }, () => {
  const f = fixture('surge', 5);
  const name = 'surge';
  const minReadySeconds = 5;
  let watch: PodWatch | undefined;

  after(() => {
    watch?.stop();
  });

  test('new pods start next to the old ones, at most 2 nodes at a time, no node ever without a Ready pod, old pods go only after the new one was Ready for minReadySeconds', async () => {
    const { hash: oldHash } = await rollOut(f, name, {
      minReadySeconds,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 2 } },
    });

    let maxSurged = 0;
    let surgedAt = '';
    const nodesWithoutReady = new Set<string>();
    const sawBoth = new Set<string>();
    /** Per node, apiserver clock: the new pod's Ready lastTransitionTime, and when the old pod was deleted. */
    const newReadyAt = new Map<string, number>();
    const oldGoneAt = new Map<string, number>();
    // Read by the watch callback before the new revision is known, so it cannot be a const.
    // eslint-disable-next-line prefer-const
    let newHash: string | undefined;
    const oldUids = new Map<string, string>();

    const check = (w: PodWatch) => {
      const all = w.list();
      const live = liveByNode(all, f.nodes);
      const surged = f.nodes.filter((n) => live.get(n)!.length > 1);
      if (surged.length > maxSurged) {
        maxSurged = surged.length;
        surgedAt = surged.join(', ');
      }
      for (const n of f.nodes) {
        const ps = live.get(n)!;
        if (!ps.some(podReady)) nodesWithoutReady.add(n);
        if (newHash === undefined) continue;
        const oldPod = ps.find((p) => hashOf(p) !== newHash);
        const newPod = ps.find((p) => hashOf(p) === newHash);
        if (oldPod && newPod) sawBoth.add(n);
        if (newPod && podReady(newPod) && !newReadyAt.has(n)) newReadyAt.set(n, readySince(newPod)!);
        const first = all.find((p) => p.metadata.uid === oldUids.get(n));
        const gone = first && deletedAt(first);
        if (gone !== undefined && !oldGoneAt.has(n)) oldGoneAt.set(n, gone);
      }
    };
    watch = await PodWatch.start(f.ns, `app=${name}`, check);
    check(watch);
    for (const p of watch.list()) oldUids.set(p.spec.nodeName!, p.metadata.uid);
    assert.equal(oldUids.size, 5, 'one old pod per node before the update');

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    newHash = await eventually('the new revision hash in status', async () => {
      const ds = await getAds(f.ns, name);
      return ds.status?.daemonSetHash !== oldHash && ds.status?.daemonSetHash;
    });
    check(watch);
    const v2 = await waitRolledOut(f.ns, name, 5, 120_000);
    assert.equal(v2.status?.daemonSetHash, newHash);
    const finalPods = await waitOnePodPerNode(f.ns, name, f.nodes, { hash: newHash });
    await watchSawAndStop(watch, finalPods);

    assert.deepEqual([...nodesWithoutReady], [], 'with maxUnavailable 0 no node is ever without a Ready pod');
    assert.ok(maxSurged <= 2, `at most maxSurge=2 nodes run two pods at once; saw ${maxSurged} (${surgedAt})`);
    assert.ok(maxSurged >= 1, 'a surge happened at all');
    assert.deepEqual([...sawBoth].sort(), [...f.nodes].sort(), 'on every node the new pod ran next to the old one');
    for (const n of f.nodes) {
      const ready = newReadyAt.get(n);
      const gone = oldGoneAt.get(n);
      assert.ok(ready !== undefined && gone !== undefined, `on ${n}: saw the new pod Ready and the old pod go`);
      // Whole seconds of the apiserver's clock; available = Ready for strictly more than minReadySeconds.
      assert.ok(
        gone - ready >= minReadySeconds * 1000,
        `on ${n}: old pod deleted ${gone - ready} ms after the new one turned Ready; must wait minReadySeconds=${minReadySeconds}`,
      );
    }
  });
});

describe('OnDelete update strategy', { timeout: 300_000 }, () => {
  const f = fixture('ondelete', 3);
  const name = 'ondelete';

  test('a template change replaces no pod; a deleted pod comes back on the new revision', async () => {
    const { hash: oldHash, pods: before } = await rollOut(f, name, { updateStrategy: { type: 'OnDelete' } });

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const ds = await eventually('status to observe the new generation', async () => {
      const d = await getAds(f.ns, name);
      return d.status?.observedGeneration === d.metadata.generation && d;
    });
    const newHash = ds.status!.daemonSetHash!;
    assert.notEqual(newHash, oldHash, 'daemonSetHash names the new revision');
    assert.equal(ds.status?.updatedNumberScheduled, 0, 'no pod is updated');
    assert.equal(condition(ds, 'RolloutComplete')?.status, 'False', 'RolloutComplete False: old pods remain');
    assert.equal(condition(ds, 'Progressing')?.reason, 'OnDelete', 'Progressing says it waits for deletions');
    await sleep(3000);
    const still = await adsPods(f.ns, name);
    assert.deepEqual(
      still.map((p) => p.metadata.uid).sort(),
      [...before.values()].map((p) => p.metadata.uid).sort(),
      'no pod replaced by the template change',
    );
    assert.ok(
      still.every((p) => hashOf(p) === oldHash && !terminating(p)),
      'all pods still on the old revision',
    );

    const victim = before.get(f.nodes[0]!)!;
    await kubectl(['delete', 'pod', victim.metadata.name, '-n', f.ns, '--wait=false']);
    const after = await eventually('a new-revision pod on the node of the deleted pod', async () => {
      const m = await waitOnePodPerNode(f.ns, name, f.nodes, { timeoutMs: 1000 }).catch(() => undefined);
      return m && hashOf(m.get(f.nodes[0]!)!) === newHash && m;
    });
    assert.equal(after.get(f.nodes[0]!)!.spec.containers[0]!.image, 'busybox:1.37', 'new image on the recreated pod');
    for (const n of f.nodes.slice(1)) {
      assert.equal(after.get(n)!.metadata.uid, before.get(n)!.metadata.uid, `pod on ${n} untouched`);
      assert.equal(hashOf(after.get(n)!), oldHash, `pod on ${n} still old`);
    }
    await eventually('updatedNumberScheduled 1', async () => {
      const d = await getAds(f.ns, name);
      return d.status?.updatedNumberScheduled === 1 && d.status.numberAvailable === 3;
    });
  });
});
