// e2e: the rollout freeze (annotation advanced-daemonset.io/rollout-frozen, ExtendedDaemonSet's rollout-frozen) next
// to rollingUpdate.paused, on the same nodes: set with `kubectl ads freeze`, a frozen DaemonSet creates no pod on a new
// node, deletes none on a node it no longer selects and replaces none for a new template, while the paused one fills
// the new node and leaves the other; Progressing says RolloutFrozen (Unknown) with one event. `kubectl ads unfreeze`
// lets everything that waited happen.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../lib/kube.ts';
import {
  addNodeToGroup,
  adsPods,
  condition,
  eventsFor,
  getAds,
  kubectlAds,
  labelNode,
  patchAds,
  waitRolledOut,
} from '../lib/ads.ts';
import { assertUnchanged, fixture, layout, rolledOutDaemonSet, waitLayout, waitNewRevision } from './lib.ts';

describe('rollout freeze next to pause', { timeout: 300_000 }, () => {
  const f = fixture('frozen', 3);

  test('frozen: no pod created on a new node, none deleted, none replaced; paused fills the new node; unfreeze catches up', async () => {
    const n = f.nodes;
    const strategy = { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } } };
    const frozen = await rolledOutDaemonSet(f, 'frozen', { options: strategy });
    const paused = await rolledOutDaemonSet(f, 'paused', { options: strategy });
    await patchAds(f.ns, 'paused', { spec: { updateStrategy: { rollingUpdate: { paused: true } } } });

    assert.equal(await kubectlAds(['freeze', 'frozen', '-n', f.ns]), 'daemonset.apps.kruise.io/frozen frozen');
    assert.equal(await kubectlAds(['freeze', 'frozen', '-n', f.ns]), 'daemonset.apps.kruise.io/frozen already frozen');
    const said = await eventually('Progressing Unknown, reason RolloutFrozen', async () => {
      const c = condition(await getAds(f.ns, 'frozen'), 'Progressing');
      return c?.status === 'Unknown' && c.reason === 'RolloutFrozen' && c;
    });
    assert.match(said.message ?? '', /rollout frozen by annotation advanced-daemonset\.io\/rollout-frozen=true/);

    // A new template: a new revision, observed, but no pod replaced.
    await patchAds(f.ns, 'frozen', {
      spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] } } },
    });
    const v2 = (await waitNewRevision(f.ns, 'frozen', frozen.hash)).status!.daemonSetHash!;

    // A new node: the paused DaemonSet fills it, the frozen one does not.
    const added = await addNodeToGroup(f.group, `${f.group}-9`);
    f.extra.push(added);
    await waitLayout(f.ns, 'paused', layout([...n, added], paused.hash));
    // A node it no longer selects: the paused one deletes its pod there, the frozen one keeps it.
    await labelNode(n[2]!, { 'e2e-group': null });
    await waitLayout(f.ns, 'paused', layout([n[0]!, n[1]!, added], paused.hash));
    await assertUnchanged(f.ns, 'frozen', frozen.pods, 'frozen: new template, new node, node no longer selected');
    const events = (await eventsFor(f.ns, 'frozen')).filter((e) => e.reason === 'RolloutFrozen');
    assert.equal(events.length, 1, 'one RolloutFrozen event');

    // Unfrozen: the new node gets a pod, the unselected node's pod goes, and the new template rolls out.
    assert.equal(await kubectlAds(['unfreeze', 'frozen', '-n', f.ns]), 'daemonset.apps.kruise.io/frozen unfrozen');
    await waitRolledOut(f.ns, 'frozen', 3);
    await waitLayout(f.ns, 'frozen', layout([n[0]!, n[1]!, added], v2));
    assert.notEqual(condition(await getAds(f.ns, 'frozen'), 'Progressing')?.reason, 'RolloutFrozen');
    assert.equal((await adsPods(f.ns, 'frozen')).length, 3);
  });
});
