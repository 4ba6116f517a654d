// e2e of canaries that go well (docs/rollout-strategies.md, "Canary with health gates"): a new revision first runs on the canary nodes
// only, labelled advanced-daemonset.io/canary, while every other node keeps the stable revision; Auto validation
// promotes once every canary pod has been available for `duration`, Manual when the canary-validated annotation names
// the revision; then the rolling update finishes. Canary nodes spread over spreadByNodeLabels and stay the same across
// syncs; under InPlaceIfPossible the canary and the rollout keep every pod (same UID). Pods, the DaemonSet and the
// safety limits are watched for each whole test.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, kubectl, type PodJson } from '../lib/kube.ts';
import { ADS, adsPods, imagePatch, patchAds, readySince, terminating, waitRolledOut } from '../lib/ads.ts';
import {
  assertSamePods,
  assertUnchanged,
  fixture,
  layout,
  rolledOutDaemonSet,
  waitLayout,
  waitNewRevision,
} from '../strategies/lib.ts';
import {
  CANARY_POD_LABEL,
  CANARY_VALIDATED_ANNOTATION,
  ZONE_LABEL,
  annotateAds,
  canaryStrategy,
  startCanaryWatches,
  waitCanary,
  waitEvent,
  type CanaryWatches,
} from './lib.ts';

const canaryLabel = (p: PodJson | undefined) => p?.metadata.labels?.[CANARY_POD_LABEL];

/** Every pod of the DaemonSet has lost the canary label (the canary ended). */
async function waitCanaryLabelsGone(ns: string, name: string): Promise<void> {
  await eventually(`no pod of ${name} labelled ${CANARY_POD_LABEL}`, async () =>
    (await adsPods(ns, name)).every((p) => terminating(p) || canaryLabel(p) === undefined),
  );
}

function assertSafe(w: CanaryWatches): void {
  assert.deepEqual(w.sampler.snapshot().violations, [], `safety limits held: ${w.sampler.summary()}`);
}

/** `kubectl get ads NAME -o wide` as a header -> cell map. */
async function wideColumns(ns: string, name: string): Promise<Record<string, string>> {
  const [header, row] = (await kubectl(['get', ADS, name, '-n', ns, '-o', 'wide'])).trim().split('\n');
  const keys = header!.trim().split(/\s{2,}/);
  const cells = row!.trim().split(/\s{2,}/);
  return Object.fromEntries(keys.map((k, i) => [k, cells[i] ?? '']));
}

describe('canary, Auto validation', { timeout: 300_000 }, () => {
  const f = fixture('canary-auto', 4);
  const name = 'canary-auto';

  test('2 canary nodes run the new revision first; promoted once available for its duration; the rollout finishes', async (t) => {
    const durationS = 10;
    const { hash: v1, pods: initial } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: canaryStrategy({ nodes: 2, duration: `${durationS}s`, noRestartsDuration: '2s' }) },
    });
    const w = await startCanaryWatches(f, name);
    t.after(() => w.stop());

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    const { canary } = await waitCanary(
      f.ns,
      name,
      `canary of ${v2} Observing on 2 nodes`,
      (c) => c.revision === v2 && c.phase === 'Observing' && c.nodes.length === 2,
    );
    assert.equal(canary.stableRevision, v1, 'the stable revision is the one every pod ran');
    const canaryNodes = [...canary.nodes].sort();
    const others = f.nodes.filter((n) => !canaryNodes.includes(n));
    assert.equal(others.length, 2, `canary nodes ${canaryNodes.join(',')} are 2 of the DaemonSet's nodes`);
    await waitEvent(f.ns, name, 'CanaryStarted', new RegExp(v2));

    // While it is observed: the canary nodes run the new revision, labelled; the others keep their very pods.
    const during = await waitLayout(f.ns, name, layout(canaryNodes, v2, layout(others, v1)));
    for (const n of canaryNodes) assert.equal(canaryLabel(during.get(n)), 'true', `canary pod on ${n} is labelled`);
    for (const n of others) assert.equal(canaryLabel(during.get(n)), undefined, `pod on ${n} is not a canary pod`);
    assertSamePods(initial, during, others, 'outside the canary');

    const { canary: promoted } = await waitCanary(
      f.ns,
      name,
      `canary of ${v2} promoted`,
      (c) => c.revision === v2 && c.phase === 'Promoted',
    );
    assert.equal(promoted.reason, 'Validated', 'promoted by Auto validation');
    await waitEvent(f.ns, name, 'CanaryPromoted', new RegExp(v2));
    await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
    await waitLayout(f.ns, name, layout(f.nodes, v2));
    await waitCanaryLabelsGone(f.ns, name);

    // After its duration: promoted no earlier than `duration` after the last canary pod became Ready (both on the
    // apiserver's clock, in whole seconds).
    const promotedAt = Date.parse(promoted.since!);
    const readyAt = Math.max(...canaryNodes.map((n) => readySince(during.get(n)!)!));
    assert.ok(
      promotedAt - readyAt >= (durationS - 1) * 1000,
      `promoted ${promotedAt - readyAt} ms after the canary pods were Ready (duration ${durationS}s)`,
    );
    // No other node got the new revision before the promotion.
    for (const r of w.history.pods.values()) {
      if (!r.hashes.has(v2) || !r.node || canaryNodes.includes(r.node)) continue;
      assert.ok(
        r.created! >= promotedAt - 1000,
        `pod ${r.name} of ${v2} on ${r.node} created at ${r.created}, before the promotion at ${promotedAt}`,
      );
    }
    assert.deepEqual(
      await w.ds.phasesThrough(v2, 'Promoted'),
      ['Observing', 'Promoted'],
      'the canary phases, in order',
    );
    assert.ok(
      w.ds.progressingReasons().includes('True/CanaryObserving'),
      `Progressing said CanaryObserving: ${w.ds.progressingReasons().join(' -> ')}`,
    );
    assertSafe(w);
  });
});

describe('canary, Manual validation', { timeout: 300_000 }, () => {
  const f = fixture('canary-manual', 3);
  const name = 'canary-manual';

  test('waits until advanced-daemonset.io/canary-validated names the revision, then the rollout finishes', async (t) => {
    const { hash: v1, pods: initial } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: canaryStrategy({ nodes: 1, validation: 'Manual' }) },
    });
    const w = await startCanaryWatches(f, name);
    t.after(() => w.stop());

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    const { canary } = await waitCanary(
      f.ns,
      name,
      `canary of ${v2} Observing on 1 node`,
      (c) => c.revision === v2 && c.phase === 'Observing' && c.nodes.length === 1,
    );
    const canaryNodes = canary.nodes;
    const others = f.nodes.filter((n) => !canaryNodes.includes(n));
    const during = await waitLayout(f.ns, name, layout(canaryNodes, v2, layout(others, v1)));
    assertSamePods(initial, during, others, 'outside the canary');

    // It waits, and says for what; `kubectl get ads -o wide` shows the phase.
    await assertUnchanged(f.ns, name, during, 'a Manual canary with its pod available', 6000);
    const { canary: waiting } = await waitCanary(f.ns, name, 'still Observing', (c) => c.phase === 'Observing');
    assert.match(waiting.message ?? '', new RegExp(`${CANARY_VALIDATED_ANNOTATION}=${v2}`), 'the message says how');
    assert.equal((await wideColumns(f.ns, name)).CANARY, 'Observing', 'CANARY column of kubectl get ads -o wide');

    // An annotation naming another revision validates nothing.
    await annotateAds(f.ns, name, { [CANARY_VALIDATED_ANNOTATION]: v1 });
    await assertUnchanged(f.ns, name, during, `${CANARY_VALIDATED_ANNOTATION}=${v1} (not the canary's revision)`, 4000);
    await waitCanary(f.ns, name, 'still Observing', (c) => c.revision === v2 && c.phase === 'Observing');

    await annotateAds(f.ns, name, { [CANARY_VALIDATED_ANNOTATION]: v2 });
    const { canary: promoted } = await waitCanary(f.ns, name, 'promoted', (c) => c.phase === 'Promoted');
    assert.equal(promoted.reason, 'ManualValidation');
    await waitEvent(f.ns, name, 'CanaryPromoted', new RegExp(v2));
    await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
    await waitLayout(f.ns, name, layout(f.nodes, v2));
    await waitCanaryLabelsGone(f.ns, name);
    assert.deepEqual(await w.ds.phasesThrough(v2, 'Promoted'), ['Observing', 'Promoted']);
    assertSafe(w);
  });
});

describe('canary, spreadByNodeLabels', { timeout: 300_000 }, () => {
  // Zones a, a, b, b, c, c: the first three nodes by name are not spread.
  const f = fixture('canary-spread', 6, (i) => ({ [ZONE_LABEL]: `zone-${'abc'[Math.floor(i / 2)]}` }));
  const name = 'canary-spread';

  test('3 canary nodes over 3 zones, kept across syncs (a canary pod deleted comes back on the same node)', async (t) => {
    const { hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: canaryStrategy(
          { nodes: 3, spreadByNodeLabels: [ZONE_LABEL], validation: 'Manual' },
          {
            maxUnavailable: 3,
          },
        ),
      },
    });
    const w = await startCanaryWatches(f, name, 3);
    t.after(() => w.stop());
    const zoneOf = (n: string) => `zone-${'abc'[Math.floor(f.nodes.indexOf(n) / 2)]}`;

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    const { canary } = await waitCanary(
      f.ns,
      name,
      `canary of ${v2} on 3 nodes`,
      (c) => c.revision === v2 && c.phase === 'Observing' && c.nodes.length === 3,
    );
    const canaryNodes = [...canary.nodes].sort();
    assert.deepEqual(
      canaryNodes.map(zoneOf).sort(),
      ['zone-a', 'zone-b', 'zone-c'],
      `spread: ${canaryNodes.join(',')}`,
    );
    const others = f.nodes.filter((n) => !canaryNodes.includes(n));
    const during = await waitLayout(f.ns, name, layout(canaryNodes, v2, layout(others, v1)));

    // Kept across syncs: a deleted canary pod comes back on the same node, and the canary nodes do not move.
    const victim = during.get(canaryNodes[0]!)!;
    await kubectl(['delete', 'pod', victim.metadata.name, '-n', f.ns, '--wait=false']);
    const after = await waitLayout(f.ns, name, layout(canaryNodes, v2, layout(others, v1)));
    assert.notEqual(after.get(canaryNodes[0]!)!.metadata.uid, victim.metadata.uid, 'the canary pod was replaced');
    const { canary: still } = await waitCanary(f.ns, name, 'still Observing', (c) => c.phase === 'Observing');
    assert.deepEqual([...still.nodes].sort(), canaryNodes, 'the same canary nodes');
    assert.deepEqual(
      [...w.history.nodesWithHash(v2)].sort(),
      canaryNodes,
      'no other node ever ran the canary revision',
    );
    for (const s of w.ds.samples) {
      if (s.canary?.revision !== v2 || s.canary.nodes.length === 0) continue;
      assert.deepEqual([...s.canary.nodes].sort(), canaryNodes, 'status.canary.nodes never changed');
    }
    assertSafe(w);
  });
});

describe('canary under InPlaceIfPossible', { timeout: 300_000 }, () => {
  const f = fixture('canary-inplace', 3);
  const name = 'canary-inplace';

  test('the canary pod and then every pod are updated in place: same UIDs throughout', async (t) => {
    const { hash: v1, pods: initial } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: canaryStrategy(
          { nodes: 1, duration: '5s', noRestartsDuration: '1s' },
          { rollingUpdateType: 'InPlaceIfPossible' },
        ),
      },
    });
    const w = await startCanaryWatches(f, name);
    t.after(() => w.stop());

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    const { canary } = await waitCanary(
      f.ns,
      name,
      `canary of ${v2} Observing on 1 node`,
      (c) => c.revision === v2 && c.phase === 'Observing' && c.nodes.length === 1,
    );
    const canaryNodes = canary.nodes;
    const others = f.nodes.filter((n) => !canaryNodes.includes(n));
    const during = await waitLayout(f.ns, name, layout(canaryNodes, v2, layout(others, v1)));
    assertSamePods(initial, during, f.nodes, 'the canary updates in place');
    assert.equal(canaryLabel(during.get(canaryNodes[0]!)), 'true', 'the pod updated in place is labelled canary');

    await waitCanary(f.ns, name, 'promoted', (c) => c.revision === v2 && c.phase === 'Promoted');
    await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
    const final = await waitLayout(f.ns, name, layout(f.nodes, v2));
    assertSamePods(initial, final, f.nodes, 'the rollout after the canary updates in place');
    await waitCanaryLabelsGone(f.ns, name);
    assert.deepEqual(
      w.pods.events.filter((e) => e.type === 'DELETED').map((e) => e.pod.metadata.name),
      [],
      'no pod was deleted',
    );
    assertSafe(w);
  });
});
