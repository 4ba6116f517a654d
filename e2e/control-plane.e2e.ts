// Proves the local control plane itself (docs/testing.md): the native DaemonSet controller, the
// scheduler, garbage collection and our kwok stages behave as a real cluster would.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  apply,
  eventually,
  kubectl,
  kubectlJson,
  listPods,
  patchPod,
  podReady,
  type PodJson,
  fixture,
} from './lib/kube.ts';
import { sleep } from '../src/testing/wait.ts';

describe('local control plane', () => {
  const f = fixture('cp', 3);

  test('an apps/v1 DaemonSet gets one scheduled, Running, Ready pod per node; deleting it garbage-collects them', async () => {
    await apply({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'native', namespace: f.ns },
      spec: {
        selector: { matchLabels: { app: 'native' } },
        template: {
          metadata: { labels: { app: 'native' } },
          spec: { nodeSelector: { 'e2e-group': f.group }, containers: [{ name: 'c', image: 'busybox:1.36' }] },
        },
      },
    });
    const pods = await eventually('3 Ready pods of the native DaemonSet', async () => {
      const ps = await listPods(f.ns, 'app=native');
      return ps.length === 3 && ps.every((p) => p.status?.phase === 'Running' && podReady(p)) && ps;
    });
    assert.deepEqual(pods.map((p) => p.spec.nodeName).sort(), [...f.nodes].sort(), 'one pod on each test node');
    // The native controller leaves placement to kube-scheduler through a per-node affinity term.
    const scheduled = await kubectlJson<{ items: { reason: string; involvedObject: { name: string } }[] }>([
      'get',
      'events',
      '-n',
      f.ns,
      '--field-selector',
      'reason=Scheduled',
    ]);
    for (const p of pods) {
      assert.ok(
        scheduled.items.some((e) => e.involvedObject.name === p.metadata.name),
        `pod ${p.metadata.name} was bound by kube-scheduler (Scheduled event)`,
      );
    }
    const ds = await kubectlJson<{ status: Record<string, number> }>(['get', 'daemonset', 'native', '-n', f.ns]);
    assert.equal(ds.status.desiredNumberScheduled, 3);

    await kubectl(['delete', 'daemonset', 'native', '-n', f.ns, '--wait=false']);
    await eventually(
      'garbage collector to remove the pods',
      async () => (await listPods(f.ns, 'app=native')).length === 0,
    );
  });

  test('a readiness gate without its condition keeps a pod NotReady until the condition turns True', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'gated', namespace: f.ns },
      spec: {
        nodeName: f.nodes[0],
        readinessGates: [{ conditionType: 'example.com/Gate' }],
        containers: [{ name: 'c', image: 'busybox:1.36' }],
      },
    });
    const get = () => kubectlJson<PodJson>(['get', 'pod', 'gated', '-n', f.ns]);
    const setGate = (status: 'True' | 'False') =>
      patchPod(f.ns, 'gated', 'strategic', { status: { conditions: [{ type: 'example.com/Gate', status }] } }, [
        '--subresource=status',
      ]);
    await eventually('gated pod Running', async () => (await get()).status?.phase === 'Running');
    // Give kwok time to (wrongly) flip it; it must stay NotReady with its containers ready.
    await sleep(2000);
    const before = await get();
    assert.equal(podReady(before), false, 'Ready must be False while the gate condition is missing');
    assert.ok(
      before.status?.containerStatuses?.every((c) => c.ready),
      'containers themselves are ready',
    );

    await setGate('True');
    await eventually('gated pod Ready after the gate turned True', async () => podReady(await get()));

    await setGate('False');
    await eventually('gated pod NotReady again after the gate turned False', async () => !podReady(await get()));
  });

  test('an image change in a running pod spec shows up in its status, as an in-place restart', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'inplace', namespace: f.ns },
      spec: {
        nodeName: f.nodes[1],
        containers: [
          { name: 'c', image: 'busybox:1.36' },
          { name: 'side', image: 'nginx:1.27' },
        ],
      },
    });
    const get = () => kubectlJson<PodJson>(['get', 'pod', 'inplace', '-n', f.ns]);
    const first = await eventually('inplace pod Ready', async () => {
      const p = await get();
      return podReady(p) && p;
    });
    const before = Object.fromEntries((first.status?.containerStatuses ?? []).map((c) => [c.name, c]));
    assert.equal(before.c?.image, 'busybox:1.36');

    await patchPod(f.ns, 'inplace', 'json', [
      { op: 'replace', path: '/spec/containers/0/image', value: 'busybox:1.37' },
    ]);
    const updated = await eventually('container c to run busybox:1.37', async () => {
      const p = await get();
      const c = p.status?.containerStatuses?.find((s) => s.name === 'c');
      return c?.image === 'busybox:1.37' && p;
    });
    const after = Object.fromEntries((updated.status?.containerStatuses ?? []).map((c) => [c.name, c]));
    assert.notEqual(after.c?.imageID, before.c?.imageID, 'imageID changes with the image');
    assert.equal(
      after.c?.restartCount,
      (before.c?.restartCount ?? 0) + 1,
      'restartCount + 1 for the changed container',
    );
    assert.equal(after.side?.restartCount, before.side?.restartCount, 'untouched container keeps its restart count');
    assert.equal(after.side?.imageID, before.side?.imageID);
    assert.equal(updated.metadata.uid, first.metadata.uid, 'same pod (in place)');
    assert.ok(podReady(updated));
  });

  test('a terminating pod with a finalizer stays until the finalizer is removed', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'held', namespace: f.ns, finalizers: ['example.com/hold'] },
      spec: { nodeName: f.nodes[2], containers: [{ name: 'c', image: 'busybox:1.36' }] },
    });
    const get = () => kubectlJson<PodJson>(['get', 'pod', 'held', '-n', f.ns]);
    await eventually('held pod Running', async () => (await get()).status?.phase === 'Running');
    await kubectl(['delete', 'pod', 'held', '-n', f.ns, '--wait=false']);
    await sleep(1500);
    assert.ok((await get()).metadata.deletionTimestamp, 'still there, terminating');
    await patchPod(f.ns, 'held', 'json', [{ op: 'remove', path: '/metadata/finalizers' }]);
    await eventually('held pod gone', async () => (await listPods(f.ns)).every((p) => p.metadata.name !== 'held'));
  });
});
