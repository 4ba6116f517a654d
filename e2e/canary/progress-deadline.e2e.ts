// e2e of spec.progressDeadlineSeconds (as a Deployment's: docs/rollout-strategies.md, "Canary with health gates"): an ordinary rollout
// (no canary) that makes no progress for that long turns Progressing False with reason ProgressDeadlineExceeded; the
// rollout itself is not stopped, and a fixed template makes progress again and completes. The image that cannot be
// pulled (e2e/cluster/kwok-stages.yaml) stalls the rollout at maxUnavailable.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { condition, getAds, imagePatch, patchAds, waitRolledOut } from '../lib/ads.ts';
import { fixture, layout, rolledOutDaemonSet, waitLayout, waitNewRevision } from '../strategies/lib.ts';
import { BAD_IMAGE, startCanaryWatches } from './lib.ts';
import { eventually } from '../lib/kube.ts';

describe('progressDeadlineSeconds', { timeout: 300_000 }, () => {
  const f = fixture('deadline', 3);
  const name = 'deadline';

  test('a stuck rollout turns Progressing False (ProgressDeadlineExceeded) after the deadline; a fixed template completes it', async (t) => {
    const deadlineS = 10;
    const { hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } } },
      mutate: (m) => (m.spec.progressDeadlineSeconds = deadlineS),
    });
    const w = await startCanaryWatches(f, name);
    t.after(() => w.stop());

    await patchAds(f.ns, name, imagePatch(BAD_IMAGE));
    await waitNewRevision(f.ns, name, v1);
    const exceeded = await eventually(
      'Progressing False, reason ProgressDeadlineExceeded',
      async () => {
        const c = condition(await getAds(f.ns, name), 'Progressing');
        return c?.status === 'False' && c.reason === 'ProgressDeadlineExceeded' && c;
      },
      { timeoutMs: 90_000 },
    );
    assert.match(exceeded.message ?? '', /progressDeadlineSeconds/, `the message says why: ${exceeded.message}`);
    // Not before the deadline: the rollout started moving (Progressing True, reason Updating, lastUpdateTime then) at
    // least deadlineS before it turned False (the controller writes both, in whole seconds).
    const reasons = w.ds.progressingReasons();
    const updating = w.ds.samples.find((s) => s.progressing?.reason === 'Updating')?.progressing;
    assert.ok(updating?.lastUpdateTime, `Progressing said Updating first: ${reasons.join(' -> ')}`);
    const after = Date.parse(exceeded.lastTransitionTime!) - Date.parse(updating.lastUpdateTime);
    assert.ok(
      after >= (deadlineS - 1) * 1000,
      `turned False ${after} ms after the rollout started moving (deadline ${deadlineS}s)`,
    );
    // From the last rollout (done: True) through Updating straight to stuck, never paused or failed otherwise.
    assert.deepEqual(
      reasons.filter((r) => !r.startsWith('True/')),
      ['False/ProgressDeadlineExceeded'],
      `Progressing: ${reasons.join(' -> ')}`,
    );
    assert.ok(
      reasons.indexOf('True/Updating') >= 0 &&
        reasons.indexOf('True/Updating') < reasons.indexOf('False/ProgressDeadlineExceeded'),
      `Updating before ProgressDeadlineExceeded: ${reasons.join(' -> ')}`,
    );
    // Stuck at maxUnavailable 1: one node tried the image.
    assert.equal(w.history.nodesThatRan((i) => i === BAD_IMAGE).size, 1, 'one node tried the bad image');

    // A fixed template is progress: the rollout completes, and Progressing says so.
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const ds = await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
    await waitLayout(f.ns, name, layout(f.nodes, ds.status!.daemonSetHash!));
    await eventually('Progressing True, reason RolloutComplete', async () => {
      const c = condition(await getAds(f.ns, name), 'Progressing');
      return c?.status === 'True' && c.reason === 'RolloutComplete';
    });
    assert.deepEqual(w.sampler.snapshot().violations, [], `safety limits held: ${w.sampler.summary()}`);
  });
});
