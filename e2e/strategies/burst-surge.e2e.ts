// e2e of burstReplicas and surge (docs/kruise-rules.md; the surge case after Kruise's e2e test
// https://github.com/openkruise/kruise/blob/master/test/e2e/apps/v1alpha1/daemonset.go): burstReplicas caps the pods
// created per sync, and a percent never rounds a small DaemonSet down to zero work; surging (the deprecated Surging
// type, and maxSurge with Standard) starts the new pod before the old one goes, within maxSurge (percent rounded up),
// with at most one new and one old pod per node.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, podReady, type PodJson } from '../lib/kube.ts';
import {
  PodWatch,
  deletedAt,
  hashOf,
  readySince,
  imagePatch,
  patchAds,
  waitRolledOut,
  ADS,
  liveByNode,
} from '../lib/ads.ts';
import { fixture, type Fixture, layout, rolledOutDaemonSet, RvWatch, waitLayout, waitNewRevision } from './lib.ts';

describe('burstReplicas', { timeout: 300_000 }, () => {
  const f = fixture('burst', 4);
  const name = 'burst';

  test('burstReplicas 10% of 4 nodes still creates every pod (never rounded down to 0), one pod per sync', async (t) => {
    const pods = await RvWatch.start('pod', ['pods', '-n', f.ns, '-l', `app=${name}`]);
    const dsw = await RvWatch.start(name, [ADS, '-n', f.ns, '--field-selector', `metadata.name=${name}`]);
    t.after(() => {
      pods.stop();
      dsw.stop();
    });
    await rolledOutDaemonSet(f, name, { mutate: (m) => (m.spec.burstReplicas = '10%') });
    await eventually('the watches to catch up', async () => pods.events.filter((e) => e.type === 'ADDED').length === 4);

    // Each sync that creates pods ends with a status write of the DaemonSet (its counters changed; only syncs that
    // act on no pod are throttled), so pods created by one sync are consecutive in etcd order with no write of the
    // DaemonSet between them. At most 1 per sync here.
    const timeline = [...pods.events.filter((e) => e.type === 'ADDED'), ...dsw.events].sort((a, b) => a.rv - b.rv);
    let run = 0;
    let longest = 0;
    for (const e of timeline) {
      run = e.source === 'pod' ? run + 1 : 0;
      longest = Math.max(longest, run);
    }
    assert.equal(
      longest,
      1,
      `pods created back to back without a sync in between: ${longest}; timeline ${timeline.map((e) => `${e.source}:${e.type}`).join(' ')}`,
    );
  });
});

interface SurgeStats {
  maxSurged: number;
  nodesWithoutReady: Set<string>;
  sawBoth: Set<string>;
  /** "node: what" for states with more than one new or more than one old live pod on a node. */
  crowded: string[];
  /** Per node: lastTransitionTime (ms) of the new pod's Ready condition. */
  newReadyAt: Map<string, number>;
  /** Per node: when the old pod was deleted (ms, its deletionTimestamp less its grace period). */
  oldGoneAt: Map<string, number>;
  final: Map<string, PodJson>;
  newHash: string;
}

/** Rolls busybox:1.36 -> 1.37 with `rollingUpdate`, watching every pod state on the way. */
async function surgeRollout(
  f: Fixture,
  name: string,
  rollingUpdate: Record<string, unknown>,
  minReadySeconds: number,
): Promise<SurgeStats> {
  const n = f.nodes;
  const { hash: oldHash, pods: initial } = await rolledOutDaemonSet(f, name, {
    options: { minReadySeconds, updateStrategy: { type: 'RollingUpdate', rollingUpdate } },
  });
  const stats: SurgeStats = {
    maxSurged: 0,
    nodesWithoutReady: new Set(),
    sawBoth: new Set(),
    crowded: [],
    newReadyAt: new Map(),
    oldGoneAt: new Map(),
    final: new Map(),
    newHash: '',
  };
  const check = (w: PodWatch) => {
    const live = liveByNode(w.list(), n);
    stats.maxSurged = Math.max(stats.maxSurged, [...live.values()].filter((ps) => ps.length > 1).length);
    for (const [node, ps] of live) {
      if (!ps.some(podReady)) stats.nodesWithoutReady.add(node);
      const olds = ps.filter((p) => hashOf(p) === oldHash);
      const news = ps.filter((p) => hashOf(p) !== oldHash);
      if (olds.length > 1 || news.length > 1) stats.crowded.push(`${node}: ${olds.length} old, ${news.length} new`);
      if (olds.length && news.length) stats.sawBoth.add(node);
      const readyNew = news.find(podReady);
      if (readyNew && !stats.newReadyAt.has(node)) stats.newReadyAt.set(node, readySince(readyNew)!);
    }
    // Server-side times, as the controller sees them (its clock is not the watch's).
    for (const node of n) {
      const oldPod = w.list().find((p) => p.metadata.uid === initial.get(node)!.metadata.uid);
      const gone = oldPod && deletedAt(oldPod);
      if (gone !== undefined && !stats.oldGoneAt.has(node)) stats.oldGoneAt.set(node, gone);
    }
  };
  const watch = await PodWatch.start(f.ns, `app=${name}`, check);
  try {
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    stats.newHash = (await waitNewRevision(f.ns, name, oldHash)).status!.daemonSetHash!;
    await waitRolledOut(f.ns, name, n.length, 120_000);
    stats.final = await waitLayout(f.ns, name, layout(n, stats.newHash));
    await eventually('the watch to see the final pods', async () => {
      watch.assertAlive();
      return [...stats.final.values()].every((p) => watch.pods.has(p.metadata.uid));
    });
  } finally {
    watch.stop();
  }
  for (const node of n) {
    assert.notEqual(stats.final.get(node)!.metadata.uid, initial.get(node)!.metadata.uid, `pod on ${node} replaced`);
  }
  return stats;
}

describe('surging', { timeout: 300_000 }, () => {
  const f = fixture('surging', 3);

  test('deprecated rollingUpdateType Surging, maxSurge 50% of 3 = 2 (rounded up): new pod before old, two nodes at a time, never more than one new and one old pod per node', async () => {
    const s = await surgeRollout(f, 'surging', { rollingUpdateType: 'Surging', maxSurge: '50%' }, 3);
    assert.deepEqual(s.crowded, [], 'each node keeps at most one new and one old pod');
    assert.deepEqual([...s.nodesWithoutReady], [], 'a node never lacks a Ready pod: the new one starts first');
    assert.deepEqual([...s.sawBoth].sort(), [...f.nodes].sort(), 'on every node the new pod ran next to the old');
    assert.equal(s.maxSurged, 2, '50% of 3 rounds up to 2 nodes surging at once (and never more)');
  });
});

describe("surge with minReadySeconds 10 (as Kruise's e2e test)", { timeout: 300_000 }, () => {
  const f = fixture('surge-mrs', 3);

  test('maxSurge 100%, maxUnavailable 0: every node gets a second pod while the old one runs; the old one goes only after the new one was Ready 10s', async () => {
    const minReady = 10;
    const s = await surgeRollout(f, 'surge-mrs', { maxSurge: '100%', maxUnavailable: 0 }, minReady);
    assert.deepEqual(s.crowded, [], 'each node keeps at most one new and one old pod');
    assert.deepEqual([...s.nodesWithoutReady], [], 'maxUnavailable 0: a node never lacks a Ready pod');
    assert.equal(s.maxSurged, 3, 'maxSurge 100%: all three nodes surge together');
    for (const node of f.nodes) {
      const ready = s.newReadyAt.get(node);
      const gone = s.oldGoneAt.get(node);
      assert.ok(ready !== undefined && gone !== undefined, `on ${node}: new pod seen Ready and old pod seen gone`);
      // Both are whole seconds of the apiserver's clock; "available" means Ready for strictly more than
      // minReadySeconds since lastTransitionTime, so the delete cannot come in an earlier second.
      assert.ok(gone - ready >= minReady * 1000, `on ${node}: old pod deleted ${gone - ready} ms after new Ready`);
    }
  });
});
