// e2e: rollingUpdate.paused (the update stops, pod management does not) and the
// progressive-create-pod annotation (the partition also limits how many nodes get a first pod; a percent
// partition is of the live desired count, so it holds on the very first sync).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kubectl } from '../lib/kube.ts';
import { addNodeToGroup, adsPods, getAds, patchAds, waitRolledOut } from '../lib/ads.ts';
import {
  applyDaemonSet,
  assertSamePods,
  assertUnchanged,
  fixture,
  layout,
  rolledOutDaemonSet,
  waitLayout,
  waitNewRevision,
  waitObserved,
} from './lib.ts';

describe('rollingUpdate.paused', { timeout: 300_000 }, () => {
  const f = fixture('paused', 3);
  const name = 'paused';

  test('paused: no pod is replaced for the update, yet a new node is filled, a deleted pod replaced, and status stays current; unpausing finishes the rollout', async () => {
    const n = f.nodes;
    const { hash: v1, pods: initial } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } } },
    });

    await patchAds(f.ns, name, {
      spec: {
        template: { spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] } },
        updateStrategy: { rollingUpdate: { paused: true } },
      },
    });
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    await assertUnchanged(f.ns, name, initial, 'paused with maxUnavailable 100%');

    // A new node still gets a pod, and new pods are always built from the current template.
    const added = await addNodeToGroup(f.group, `${f.group}-9`);
    f.extra.push(added);
    const withNew = await waitLayout(f.ns, name, layout(n, v1, { [added]: v2 }));
    assertSamePods(initial, withNew, n, 'paused');

    // A deleted pod is replaced too (on the current revision).
    await kubectl(['delete', 'pod', initial.get(n[0]!)!.metadata.name, '-n', f.ns, '--wait=false']);
    const replaced = await waitLayout(f.ns, name, layout(n.slice(1), v1, layout([n[0]!, added], v2)));
    assertSamePods(initial, replaced, n.slice(1), 'paused');

    const s = (await getAds(f.ns, name)).status;
    assert.deepEqual(
      [s?.desiredNumberScheduled, s?.currentNumberScheduled, s?.updatedNumberScheduled, s?.numberAvailable],
      [4, 4, 2, 4],
      'status is current while paused: 4 desired, 4 current, 2 updated, 4 available',
    );
    await assertUnchanged(f.ns, name, replaced, 'still paused');

    await patchAds(f.ns, name, { spec: { updateStrategy: { rollingUpdate: { paused: false } } } });
    await waitRolledOut(f.ns, name, 4);
    await waitLayout(f.ns, name, layout([...n, added], v2));
  });
});

describe('progressive creation: daemonset.kruise.io/progressive-create-pod', { timeout: 300_000 }, () => {
  const f = fixture('progressive', 5);
  const name = 'progressive';

  test('partition 60% of 5 nodes creates pods on only 2 nodes from the first sync; lowering the partition adds the rest', async () => {
    const n = f.nodes;
    await applyDaemonSet(f, name, {
      options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, partition: '60%' } } },
      annotations: { 'daemonset.kruise.io/progressive-create-pod': 'true' },
    });
    // 60% of the 5 nodes seen now = 3 kept without a pod (a stale status.desiredNumberScheduled of 0 would
    // create all 5 on the first pass); creation goes in ascending name order.
    const hash = (await waitObserved(f.ns, name)).status!.daemonSetHash!;
    const two = await waitLayout(f.ns, name, layout(n.slice(0, 2), hash));
    await assertUnchanged(f.ns, name, two, 'partition 60% of 5 with progressive creation');
    const s = (await getAds(f.ns, name)).status;
    assert.deepEqual(
      [s?.desiredNumberScheduled, s?.currentNumberScheduled],
      [5, 2],
      'desired 5, current 2: the partition held creation back',
    );

    await patchAds(f.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 1 } } } });
    const four = await waitLayout(f.ns, name, layout(n.slice(0, 4), hash));
    assertSamePods(two, four, n.slice(0, 2), 'lowering the partition only adds pods');
    await assertUnchanged(f.ns, name, four, 'partition 1 with progressive creation');

    await patchAds(f.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 0 } } } });
    await waitLayout(f.ns, name, layout(n, hash));
    assert.equal((await adsPods(f.ns, name)).length, 5);
  });
});
