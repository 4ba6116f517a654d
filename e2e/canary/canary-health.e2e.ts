// e2e of the canary's health gates (docs/rollout-strategies.md, "Canary with health gates"), with the failure images of the local
// cluster (e2e/cluster/kwok-stages.yaml, proven in failure-images.e2e.ts): a crashing canary pauses
// (autoPause.maxRestarts), then fails (autoFail.maxRestarts); its nodes go back to the stable revision, the rollout is
// held until the template changes, and a fixed template restarts the canary on the same nodes. An image that cannot
// be pulled pauses the canary at once; the canary-failed annotation fails it. Every pod state is watched for the whole
// test: no node outside the canary ever runs the bad image.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adsPods, condition, getAds, hashOf, imagePatch, patchAds, sleep, waitRolledOut } from '../lib/ads.ts';
import {
  assertUnchanged,
  fixture,
  layout,
  rolledOutDaemonSet,
  waitLayout,
  waitNewRevision,
} from '../strategies/lib.ts';
import {
  BAD_IMAGE,
  CANARY_FAILED_ANNOTATION,
  CRASHLOOP_IMAGE,
  annotateAds,
  canaryStrategy,
  containerStatus,
  startCanaryWatches,
  waitCanary,
  waitEvent,
  type CanaryWatches,
} from './lib.ts';

function assertSafe(w: CanaryWatches): void {
  assert.deepEqual(w.sampler.snapshot().violations, [], `safety limits held: ${w.sampler.summary()}`);
}

/** The nodes that ever ran `image` are exactly the canary nodes. */
function assertOnlyCanaryNodesRan(w: CanaryWatches, image: string, canaryNodes: string[]): void {
  assert.deepEqual(
    [...w.history.nodesThatRan((i) => i === image)].sort(),
    [...canaryNodes].sort(),
    `only the canary nodes ever ran ${image}`,
  );
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('canary of a crashing image', { timeout: 300_000 }, () => {
  const f = fixture('canary-crash', 4);
  const name = 'canary-crash';

  test('pauses, then fails; the canary node goes back to the stable revision, held until a fixed template, which restarts the canary there', async (t) => {
    const { hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: canaryStrategy({
          nodes: 1,
          duration: '5s',
          noRestartsDuration: '1s',
          autoPause: { enabled: true, maxRestarts: 1 },
          autoFail: { enabled: true, maxRestarts: 3 },
        }),
      },
    });
    const w = await startCanaryWatches(f, name);
    t.after(() => w.stop());

    await patchAds(f.ns, name, imagePatch(CRASHLOOP_IMAGE));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    const { ds, canary: failed } = await waitCanary(
      f.ns,
      name,
      `canary of ${v2} Failed`,
      (c) => c.revision === v2 && c.phase === 'Failed',
      120_000,
    );
    const canaryNodes = failed.nodes;
    assert.equal(canaryNodes.length, 1);
    assert.equal(failed.stableRevision, v1);
    assert.equal(failed.reason, 'CrashLoopBackOff', `failed for the crash loop: ${failed.message}`);
    assert.deepEqual(
      await w.ds.phasesThrough(v2, 'Failed'),
      ['Observing', 'Paused', 'Failed'],
      'paused first (autoPause), then failed',
    );
    const paused = w.ds.samples.find((s) => s.canary?.revision === v2 && s.canary.phase === 'Paused')!.canary!;
    assert.equal(paused.reason, 'CrashLoopBackOff', `paused for the crash loop: ${paused.message}`);

    // The condition and the events say why, naming the pod.
    const progressing = condition(ds, 'Progressing');
    assert.equal(progressing?.status, 'False');
    assert.equal(progressing?.reason, 'CanaryFailed');
    assert.match(progressing?.message ?? '', /CrashLoopBackOff/);
    assert.ok(
      w.ds.progressingReasons().includes('Unknown/CanaryPaused'),
      `Progressing said CanaryPaused: ${w.ds.progressingReasons().join(' -> ')}`,
    );
    const canaryPod = [...w.history.pods.values()].find((r) => r.node === canaryNodes[0] && r.hashes.has(v2))!;
    assert.ok(canaryPod, 'the canary pod was seen');
    await waitEvent(f.ns, name, 'CanaryPaused', new RegExp(`${escape(canaryPod.name)}.*CrashLoopBackOff`));
    await waitEvent(f.ns, name, 'CanaryFailed', /CrashLoopBackOff/);

    // The canary node goes back to the stable revision; every node runs it, and nothing moves until the template
    // changes (the spec is not rewritten).
    const back = await waitLayout(f.ns, name, layout(f.nodes, v1));
    await waitEvent(f.ns, name, 'CanaryRolledBack', new RegExp(v1));
    await assertUnchanged(f.ns, name, back, 'a failed canary holds the rollout', 5000);
    const { ds: held } = await waitCanary(f.ns, name, 'still Failed', (c) => c.revision === v2 && c.phase === 'Failed');
    assert.equal(
      (held.spec.template.spec.containers as { image: string }[])[0]!.image,
      CRASHLOOP_IMAGE,
      'the spec is left as applied',
    );
    assertOnlyCanaryNodesRan(w, CRASHLOOP_IMAGE, canaryNodes);
    const crashing = w.history.byName(canaryPod.name)!;
    assert.ok(!crashing.readyWith.has(CRASHLOOP_IMAGE), 'the canary pod was never Ready');

    // A fixed template: the canary restarts on the same node, and this one is promoted.
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v3 = (await waitNewRevision(f.ns, name, v2)).status!.daemonSetHash!;
    const { canary: restarted } = await waitCanary(f.ns, name, `canary of ${v3}`, (c) => c.revision === v3);
    assert.deepEqual(restarted.nodes, canaryNodes, 'the same canary node');
    assert.equal(restarted.stableRevision, v1, 'the same stable revision');
    await waitEvent(f.ns, name, 'CanaryStarted', new RegExp(v3));
    await waitCanary(f.ns, name, 'promoted', (c) => c.revision === v3 && c.phase === 'Promoted');
    await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
    await waitLayout(f.ns, name, layout(f.nodes, v3));
    assertOnlyCanaryNodesRan(w, CRASHLOOP_IMAGE, canaryNodes);
    assertSafe(w);
  });
});

describe('canary of an image that cannot be pulled', { timeout: 300_000 }, () => {
  const f = fixture('canary-pull', 3);
  const name = 'canary-pull';

  test('pauses at once (ErrImagePull / ImagePullBackOff), stays paused; canary-failed fails it and rolls it back', async (t) => {
    const { hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: canaryStrategy({ nodes: 1, duration: '5s' }) },
    });
    const w = await startCanaryWatches(f, name);
    t.after(() => w.stop());

    await patchAds(f.ns, name, imagePatch(BAD_IMAGE));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    const { canary: paused } = await waitCanary(
      f.ns,
      name,
      `canary of ${v2} Paused`,
      (c) => c.revision === v2 && c.phase === 'Paused',
    );
    assert.ok(
      ['ErrImagePull', 'ImagePullBackOff'].includes(paused.reason ?? ''),
      `paused for the pull: ${paused.reason}: ${paused.message}`,
    );
    // At once: on the first state the kubelet reports (no restart, no time limit: none is set); the bound is only
    // generous for a loaded machine (create, schedule, kubelet status, sync).
    const started = w.ds.samples.find((x) => x.canary?.revision === v2 && x.canary.phase === 'Observing')?.canary;
    assert.ok(started?.since, 'the canary was seen Observing first');
    const pausedAfter = Date.parse(paused.since!) - Date.parse(started.since);
    assert.ok(pausedAfter <= 30_000, `paused ${pausedAfter} ms after the canary started`);
    const canaryNodes = paused.nodes;
    const pod = (await adsPods(f.ns, name)).find((p) => p.spec.nodeName === canaryNodes[0] && hashOf(p) === v2);
    assert.ok(pod, `the canary pod of ${v2} on ${canaryNodes[0]}`);
    assert.equal(containerStatus(pod, 'c')?.restartCount, 0, 'no restart needed to pause');
    await waitEvent(
      f.ns,
      name,
      'CanaryPaused',
      new RegExp(`${escape(pod.metadata.name)}.*(ErrImagePull|ImagePullBackOff)`),
    );
    const progressing = condition(await getAds(f.ns, name), 'Progressing');
    assert.deepEqual([progressing?.status, progressing?.reason], ['Unknown', 'CanaryPaused']);

    // It stays paused (the others keep the stable revision), until a person fails it.
    const others = f.nodes.filter((n) => !canaryNodes.includes(n));
    await sleep(5000);
    await waitCanary(f.ns, name, 'still Paused', (c) => c.revision === v2 && c.phase === 'Paused');
    await annotateAds(f.ns, name, { [CANARY_FAILED_ANNOTATION]: 'true' });
    const { canary: failed } = await waitCanary(f.ns, name, 'Failed', (c) => c.revision === v2 && c.phase === 'Failed');
    assert.equal(failed.reason, 'ManualFail');
    await waitEvent(f.ns, name, 'CanaryFailed', /ManualFail/);
    await waitLayout(f.ns, name, layout(f.nodes, v1));
    await waitEvent(f.ns, name, 'CanaryRolledBack', new RegExp(v1));
    assert.deepEqual(await w.ds.phasesThrough(v2, 'Failed'), ['Observing', 'Paused', 'Failed']);
    assertOnlyCanaryNodesRan(w, BAD_IMAGE, canaryNodes);
    assert.equal(others.length, 2);
    assertSafe(w);
  });
});
