// e2e: rollingUpdate.waves and rollingUpdate.priorityStrategy (src/daemonset/waves.ts) on the real control plane:
// six kwok nodes in three zones, the rollout sampled through a pod watch at every change, so that a node of a later
// zone getting the new revision too early is caught whenever it happens, not only at the end.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, podReady, type PodJson } from '../lib/kube.ts';
import { PodWatch, condition, getAds, hashOf, imagePatch, liveByNode, patchAds } from '../lib/ads.ts';
import { rolledOutDaemonSet, waitNewRevision, waitLayout, layout, fixture } from './lib.ts';

const ZONE = 'topology.kubernetes.io/zone';
// Zone by node index: name order is not zone order (default order is descending names).
const ZONES = ['b', 'c', 'a', 'b', 'c', 'a'];

const readySince = (p: PodJson): number | undefined => {
  const c = p.status?.conditions?.find((x) => x.type === 'Ready' && x.status === 'True');
  return c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : undefined;
};

describe('rollingUpdate.waves and priorityStrategy', { timeout: 300_000 }, () => {
  const f = fixture('waves', 6, (i): Record<string, string> => ({
    [ZONE]: ZONES[i]!,
    ...(i === 1 ? { heavy: 'true' } : {}),
  }));
  const name = 'waves';
  const zoneOf = (node: string) => ZONES[f.nodes.indexOf(node)]!;

  test('zone by zone (a, b, c), each available 3 s before the next starts', async (t) => {
    const availableSeconds = 3;
    const { hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { maxUnavailable: 2, waves: { topologyKey: ZONE, availableSeconds } },
        },
      },
    });
    let v2 = '';
    const violations: string[] = [];
    const firstNew = new Map<string, number>();
    let samples = 0;
    const w = await PodWatch.start(f.ns, `app=${name}`, (pw) => {
      if (!v2) return;
      samples++;
      const now = Date.now();
      const byNode = liveByNode(pw.list(), f.nodes);
      const newPod = (node: string) => (byNode.get(node) ?? []).find((p) => hashOf(p) === v2);
      for (const node of f.nodes) if (newPod(node) && !firstNew.has(node)) firstNew.set(node, now);
      for (const [prev, next] of [
        ['a', 'b'],
        ['b', 'c'],
      ]) {
        const started = f.nodes.filter((n) => zoneOf(n) === next && newPod(n));
        if (started.length === 0) continue;
        for (const n of f.nodes.filter((x) => zoneOf(x) === prev)) {
          const p = newPod(n);
          const since = p && podReady(p) ? readySince(p) : undefined;
          // Ready times are written to the second, as the controller reads them: it sees no more than this.
          if (since === undefined || now - since < availableSeconds * 1000)
            violations.push(
              `${started.join(',')} (zone ${next}) got the new revision while ${n} (zone ${prev}) ${since === undefined ? 'had no available new pod' : `was available for ${now - since} ms`}`,
            );
        }
      }
    });
    t.after(() => w.stop());
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    const mid = await eventually('the Progressing message names a wave', async () => {
      const c = condition(await getAds(f.ns, name), 'Progressing');
      return /wave [12] of 3 \(topology\.kubernetes\.io\/zone=[ab]\)/.test(c?.message ?? '') && c;
    });
    assert.equal(mid.reason, 'Updating');
    await waitLayout(f.ns, name, layout(f.nodes, v2), 120_000);
    w.stop();
    assert.deepEqual(violations, [], 'no zone starts before the one before it has been available 3 s');
    const order = [...firstNew].sort((a, b) => a[1] - b[1]).map(([n]) => zoneOf(n));
    assert.deepEqual(
      order,
      ['a', 'a', 'b', 'b', 'c', 'c'],
      `zones in the order their nodes got v2 (${samples} samples)`,
    );
    await eventually(
      'RolloutComplete',
      async () => condition(await getAds(f.ns, name), 'Progressing')?.reason === 'RolloutComplete',
    );
  });

  test('weightPriority: the heavier nodes first, then descending name', async (t) => {
    const ds = await getAds(f.ns, name);
    const v2 = ds.status!.daemonSetHash!;
    const order: string[] = [];
    let v3 = '';
    const w = await PodWatch.start(f.ns, `app=${name}`, (pw) => {
      if (!v3) return;
      for (const p of pw.list()) {
        const n = p.spec.nodeName;
        if (n && hashOf(p) === v3 && !order.includes(n)) order.push(n);
      }
    });
    t.after(() => w.stop());
    await patchAds(f.ns, name, {
      spec: {
        template: { spec: { containers: [{ name: 'c', image: 'busybox:1.38' }] } },
        updateStrategy: {
          rollingUpdate: {
            maxUnavailable: 1,
            waves: null,
            priorityStrategy: {
              weightPriority: [
                { weight: 60, matchSelector: { matchLabels: { heavy: 'true' } } },
                { weight: 30, matchSelector: { matchLabels: { [ZONE]: 'a' } } },
              ],
            },
          },
        },
      },
    });
    v3 = (await waitNewRevision(f.ns, name, v2)).status!.daemonSetHash!;
    await waitLayout(f.ns, name, layout(f.nodes, v3), 120_000);
    w.stop();
    const n = f.nodes;
    // heavy (60), then zone a (30) by descending name (n5, n2), then the rest by descending name.
    assert.deepEqual(order, [n[1], n[5], n[2], n[4], n[3], n[0]]);
  });
});
