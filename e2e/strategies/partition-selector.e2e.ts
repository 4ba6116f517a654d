// e2e: rollingUpdate.partition (int and percent of the live desired count) and rollingUpdate.selector, alone and
// combined with partition and maxUnavailable (the "multi-dimensional" release of docs/differences.md). Which nodes keep
// the old revision is asserted exactly, and kept pods are checked by UID.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, kubectl, podReady, type PodJson } from '../lib/kube.ts';
import { sleep } from '../../src/testing/wait.ts';
import { ADS, PodWatch, condition, eventsFor, getAds, hashOf, imagePatch, patchAds, liveByNode } from '../lib/ads.ts';
import {
  assertSamePods,
  assertUnchanged,
  fixture,
  layout,
  rolledOutDaemonSet,
  waitLayout,
  waitNewRevision,
  waitObserved,
} from './lib.ts';

const partitionPatch = (partition: number | string) => ({
  spec: { updateStrategy: { rollingUpdate: { partition } } },
});

describe('rollingUpdate.partition', { timeout: 300_000 }, () => {
  const f = fixture('partition', 8);
  const name = 'part';

  test('partition 3 on 8 nodes keeps exactly the 3 lowest node names old; raising it rolls nothing back; lowering it (13% = 1) continues', async () => {
    const n = f.nodes;
    // A partition does not hold back the first rollout's creations (no progressive annotation).
    const { hash: v1, pods: initial } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2, partition: 3 } } },
    });

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    // Kruise's order: descending node names are updated first, so the lowest names stay old.
    const want = layout(n.slice(0, 3), v1, layout(n.slice(3), v2));
    const p3 = await waitLayout(f.ns, name, want);
    assertSamePods(initial, p3, n.slice(0, 3), 'kept at the old revision by partition 3');
    // Status follows the pods by one sync: wait for it, then hold the layout.
    await eventually('updatedNumberScheduled = 8 - partition', async () => {
      const ds = await getAds(f.ns, name);
      return ds.status?.observedGeneration === ds.metadata.generation && ds.status?.updatedNumberScheduled === 5;
    });
    await assertUnchanged(f.ns, name, p3, 'partition reached');

    await patchAds(f.ns, name, partitionPatch(6));
    await waitObserved(f.ns, name);
    await assertUnchanged(f.ns, name, p3, 'raising the partition to 6 never rolls updated pods back');

    await patchAds(f.ns, name, partitionPatch('13%'));
    // 13% of 8 = 1.04, rounded down to 1: one node (the lowest name) stays old; rounding up would keep 2.
    const p1 = await waitLayout(f.ns, name, layout(n.slice(0, 1), v1, layout(n.slice(1), v2)));
    assertSamePods(initial, p1, n.slice(0, 1), 'kept at the old revision by partition 13%');
    assertSamePods(p3, p1, n.slice(3), 'already updated pods untouched when the partition is lowered');
    await assertUnchanged(f.ns, name, p1, 'partition 13% reached');
  });
});

describe('rollingUpdate.selector', { timeout: 300_000 }, () => {
  // Canary nodes 1, 3 and 4: not a prefix or suffix of the name order, so name order alone cannot pass.
  const canary = new Set([1, 3, 4]);
  const f = fixture('selector', 6, (i): Record<string, string> => (canary.has(i) ? { nodeType: 'canary' } : {}));
  const name = 'canary';
  let watch: PodWatch | undefined;

  test('a canary selector updates exactly the labelled nodes; selector + partition + maxUnavailable 1 updates the highest-named selected nodes one at a time', async (t) => {
    t.after(() => watch?.stop());
    const n = f.nodes;
    const selected = n.filter((_, i) => canary.has(i));
    const others = n.filter((_, i) => !canary.has(i));
    const { hash: v1, pods: initial } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { maxUnavailable: 1, selector: { matchLabels: { nodeType: 'canary' } } },
        },
      },
    });

    // maxUnavailable 1 is the concurrency cap: never two nodes without an available pod.
    let worst: string[] = [];
    watch = await PodWatch.start(f.ns, `app=${name}`, (w) => {
      const lacking = [...liveByNode(w.list(), n)].filter(([, ps]) => !ps.some(podReady)).map(([node]) => node);
      if (lacking.length > worst.length) worst = lacking;
    });

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    const canaried = await waitLayout(f.ns, name, layout(others, v1, layout(selected, v2)));
    assertSamePods(initial, canaried, others, 'nodes outside the selector');
    await assertUnchanged(f.ns, name, canaried, 'canary done: unlabelled nodes stay old');

    // Multi-dimensional: a new image; filter by the canary selector (nodes 1, 3, 4), partition 1 within
    // those -> 2 updated, in descending name order (nodes 4 and 3); node 1 keeps v2, the rest v1. (Counting the
    // partition over all 6 nodes, as Kruise does, would update all three canaries.)
    await patchAds(f.ns, name, {
      spec: {
        template: { spec: { containers: [{ name: 'c', image: 'busybox:1.38' }] } },
        updateStrategy: { rollingUpdate: { partition: 1 } },
      },
    });
    const v3 = (await waitNewRevision(f.ns, name, v2)).status!.daemonSetHash!;
    const want = layout(others, v1, layout([n[1]!], v2, layout([n[3]!, n[4]!], v3)));
    const multi = await waitLayout(f.ns, name, want);
    assertSamePods(canaried, multi, [...others, n[1]!], 'outside the selector or inside the partition');
    await assertUnchanged(f.ns, name, multi, 'selector + partition reached');
    watch.stop();
    assert.ok(worst.length <= 1, `maxUnavailable 1: at most one node without an available pod; saw ${worst}`);
    assert.equal(worst.length, 1, 'the rollout used its budget of one');
    held = { v1, v2, v3, pods: multi };
  });

  let held: { v1: string; v2: string; v3: string; pods: Map<string, PodJson> } | undefined;
  let v4 = '';

  test('a partition of at least the selected nodes holds them all: Progressing says so with the numbers, and one PartitionHoldsSelectedNodes event', async (t) => {
    assert.ok(held, 'the previous test left the canary layout');
    // A new image with partition 3 = the 3 canary nodes: nothing moves (Kruise, counting 3 over all 6 nodes,
    // would update all three canaries).
    let moved: string[] = [];
    const before = new Set([...held.pods.values()].map((p) => p.metadata.uid));
    const w = await PodWatch.start(f.ns, `app=${name}`, (pw) => {
      const fresh = pw.list().filter((p) => !before.has(p.metadata.uid));
      if (fresh.length > moved.length) moved = fresh.map((p) => `${p.spec.nodeName}:${hashOf(p)}`);
    });
    t.after(() => w.stop());
    await patchAds(f.ns, name, {
      spec: {
        template: { spec: { containers: [{ name: 'c', image: 'busybox:1.39' }] } },
        updateStrategy: { rollingUpdate: { partition: 3 } },
      },
    });
    const ds = await waitNewRevision(f.ns, name, held.v3);
    v4 = ds.status!.daemonSetHash!;
    const hold =
      'partition 3 keeps all 3 nodes selected by rollingUpdate.selector on the old revision; ' +
      'Kruise counts the partition across all 6 nodes';
    const progressing = await eventually('Progressing True (done), its message naming the partition hold', async () => {
      const c = condition(await getAds(f.ns, name), 'Progressing');
      return c?.status === 'True' && c.message?.includes(hold) && c;
    });
    assert.equal(progressing.reason, 'PartitionReached');
    await eventually('a Normal PartitionHoldsSelectedNodes event with the same text', async () => {
      const es = (await eventsFor(f.ns, name, ds.metadata.uid)).filter(
        (e) => e.reason === 'PartitionHoldsSelectedNodes',
      );
      return es.length > 0 && es;
    });
    // Recorded by the sync that first finds the hold (a sync on a cache that has not seen that status write yet may
    // record it once more, which the recorder folds into the same Event); later syncs do not record it again.
    await sleep(2000);
    const countOf = async () => {
      const es = (await eventsFor(f.ns, name, ds.metadata.uid)).filter(
        (e) => e.reason === 'PartitionHoldsSelectedNodes',
      );
      assert.deepEqual(
        es.map((e) => [e.type, e.message]),
        [['Normal', hold]],
        'one Event object with the hold text',
      );
      return es[0]!.count ?? 1;
    };
    const settled = await countOf();
    assert.ok(settled <= 2, `recorded by the first syncs only: count ${settled}`);
    for (let i = 0; i < 3; i++) {
      // Each annotation change is a DaemonSet update event: one more sync that still finds the hold.
      await kubectl(['annotate', '--overwrite', ADS, name, '-n', f.ns, `e2e/poke=${i}`]);
      await sleep(700);
    }
    await assertUnchanged(f.ns, name, held.pods, 'partition 3 holds the 3 selected nodes');
    assert.equal(await countOf(), settled, 'not recorded again by the later syncs');
    assert.ok(
      condition(await getAds(f.ns, name), 'Progressing')?.message?.includes(hold),
      'the Progressing message still says it',
    );
    w.stop();
    assert.deepEqual(moved, [], 'no pod was created while the partition held every selected node');
  });

  test('rollingUpdate.selector {} selects every node, as Kruise (labels.Everything()): the rollout reaches all 6 nodes', async () => {
    assert.ok(held && v4, 'the previous tests left the held layout');
    await kubectl([
      'patch',
      ADS,
      name,
      '-n',
      f.ns,
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'replace', path: '/spec/updateStrategy/rollingUpdate/selector', value: {} },
        { op: 'replace', path: '/spec/updateStrategy/rollingUpdate/partition', value: 0 },
      ]),
    ]);
    const ds = await waitObserved(f.ns, name);
    const stored = ds.spec.updateStrategy as { rollingUpdate?: { selector?: unknown } } | undefined;
    assert.deepEqual(stored?.rollingUpdate?.selector, {}, 'the stored selector is {}');
    const all = await waitLayout(f.ns, name, layout(f.nodes, v4), 120_000);
    assert.equal(all.size, 6);
    const done = await eventually('Progressing True/RolloutComplete', async () => {
      const c = condition(await getAds(f.ns, name), 'Progressing');
      return c?.reason === 'RolloutComplete' && c;
    });
    assert.ok(!done.message?.includes('keeps'), `no partition hold reported: ${done.message}`);
  });
});
