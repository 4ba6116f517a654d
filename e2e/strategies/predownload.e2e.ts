// e2e: image pre-download without kruise-daemon (docs/kruise-rules.md#image-pre-download). During a rollout that does
// not update every node at once, short-lived pull pods pinned to the nodes still running old pods pull the new image,
// at most `apps.kruise.io/image-predownload-parallelism` at a time; they are deleted when done and none is left (or
// made) when the rollout updates everything at once.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, listPods, type PodJson } from '../lib/kube.ts';
import { PodWatch, adsPods, imagePatch, patchAds, terminating, waitRolledOut } from '../lib/ads.ts';
import { fixture, layout, rolledOutDaemonSet, waitLayout, waitNewRevision } from './lib.ts';

const UID_LABEL = 'apps.kruise.io/image-predownload-daemonset-uid';
const REVISION_LABEL = 'apps.kruise.io/image-predownload-revision';
const PULLED_ANNOTATION = 'apps.kruise.io/image-predownloaded';

describe('image pre-download with pull pods', { timeout: 300_000 }, () => {
  const f = fixture('predownload', 4);
  const name = 'predl';

  test('pull pods pre-pull the new image on the nodes kept old, 2 at a time, and are cleaned up; none when the rollout updates every node at once', async (t) => {
    const n = f.nodes;
    const { ds, hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, partition: 2 } } },
      annotations: { 'apps.kruise.io/image-predownload-parallelism': '2' },
    });

    const seen = new Map<string, PodJson>();
    let maxLive = 0;
    const watch = await PodWatch.start(f.ns, `${UID_LABEL}=${ds.metadata.uid}`, (w) => {
      for (const p of w.list()) seen.set(p.metadata.uid, p);
      maxLive = Math.max(maxLive, w.list().filter((p) => !terminating(p)).length);
    });
    t.after(() => watch.stop());

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    // Partition 2: nodes 2 and 3 updated, nodes 0 and 1 keep old pods, which are marked pulled ahead.
    const kept = await eventually('the old pods kept by the partition marked as pulled ahead', async () => {
      const m = await waitLayout(f.ns, name, layout(n.slice(0, 2), v1, layout(n.slice(2), v2)), 5000).catch(
        () => undefined,
      );
      return m && n.slice(0, 2).every((node) => m.get(node)!.metadata.annotations?.[PULLED_ANNOTATION] === v2) && m;
    });
    assert.equal(kept.size, 4);
    await eventually('every pull pod cleaned up', async () => {
      const left = await listPods(f.ns, `${UID_LABEL}=${ds.metadata.uid}`);
      return left.length === 0;
    });
    const pulls = [...seen.values()];
    assert.ok(pulls.length >= 2, `pull pods were made (saw ${pulls.length})`);
    for (const node of n.slice(0, 2)) {
      assert.ok(
        pulls.some((p) => p.spec.nodeName === node),
        `a pull pod ran on ${node}, a node still running an old pod`,
      );
    }
    for (const p of pulls) {
      assert.equal(p.metadata.labels?.[REVISION_LABEL], v2, `pull pod ${p.metadata.name} is for the new revision`);
      assert.deepEqual(
        p.spec.containers.map((c) => c.image),
        ['busybox:1.37'],
        `pull pod ${p.metadata.name} runs only the new image`,
      );
      assert.equal(p.metadata.labels?.app, undefined, 'a pull pod is not a daemon pod (no template labels)');
    }
    assert.ok(maxLive <= 2, `parallelism 2: at most 2 pull pods at a time; saw ${maxLive}`);
    const daemonPods = await adsPods(f.ns, name);
    assert.equal(daemonPods.length, 4, 'pull pods never counted or adopted as daemon pods');

    // Everything at once (partition 0, maxUnavailable 100%): pulling ahead gains nothing, so no pull pod.
    seen.clear();
    await patchAds(f.ns, name, {
      spec: {
        template: { spec: { containers: [{ name: 'c', image: 'busybox:1.38' }] } },
        updateStrategy: { rollingUpdate: { partition: 0, maxUnavailable: '100%' } },
      },
    });
    const v3 = (await waitNewRevision(f.ns, name, v2)).status!.daemonSetHash!;
    await waitRolledOut(f.ns, name, 4);
    await waitLayout(f.ns, name, layout(n, v3));
    assert.deepEqual(
      [...seen.values()].filter((p) => p.metadata.labels?.[REVISION_LABEL] === v3).map((p) => p.spec.nodeName),
      [],
      'no pull pod for a rollout that updates every node at once',
    );
  });
});
