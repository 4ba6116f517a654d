// e2e: which nodes run a daemon pod. The template's nodeSelector and node labels (in,
// out, and a changed selector), taints against the template's tolerations (NoSchedule keeps a
// running pod and counts it misscheduled, NoExecute removes it) and the automatic daemon
// tolerations (a cordoned node still runs its daemon pod).
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apply, eventually, kubectl, type PodJson, fixture } from '../lib/kube.ts';
import { sleep } from '../../src/testing/wait.ts';
import {
  adsManifest,
  adsPods,
  describePods,
  getAds,
  labelNode,
  patchAds,
  waitOnePodPerNode,
  waitRolledOut,
  waitStatusAgrees,
} from '../lib/ads.ts';

const uidsOn = (m: Map<string, PodJson>, nodes: string[]) => nodes.map((n) => m.get(n)?.metadata.uid);

/** For `ms`, no pod of the DaemonSet may exist on `node`. */
async function assertStaysWithoutPod(ns: string, name: string, node: string, ms: number, why: string) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const pods = await adsPods(ns, name);
    const there = pods.filter((p) => p.spec.nodeName === node);
    assert.equal(there.length, 0, `${why}: no pod on ${node}, found ${describePods(there)}`);
    await sleep(300);
  }
}

describe('template nodeSelector and node labels', { timeout: 300_000 }, () => {
  const f = fixture('nodesel', 5, (i): Record<string, string> =>
    i < 3 ? { role: 'a' } : i === 4 ? { role: 'b' } : {},
  );
  const name = 'selected';
  let pods: Map<string, PodJson>;

  before(async () => {
    // role=a on 0,1,2; nothing on 3; role=b on 4.
  });

  test('only nodes matching the template nodeSelector get a pod', async () => {
    await apply(adsManifest({ name, namespace: f.ns, group: f.group, nodeSelector: { role: 'a' } }));
    pods = await waitOnePodPerNode(f.ns, name, f.nodes.slice(0, 3));
    await waitRolledOut(f.ns, name, 3);
    await assertStaysWithoutPod(f.ns, name, f.nodes[3]!, 1500, 'unlabelled node');
    await assertStaysWithoutPod(f.ns, name, f.nodes[4]!, 0, 'node labelled role=b');
  });

  test('a node relabelled to match gets a pod; the others keep theirs', async () => {
    await labelNode(f.nodes[3]!, { role: 'a' });
    const now = await waitOnePodPerNode(f.ns, name, f.nodes.slice(0, 4));
    assert.deepEqual(uidsOn(now, f.nodes.slice(0, 3)), uidsOn(pods, f.nodes.slice(0, 3)), 'existing pods untouched');
    pods = now;
    await waitStatusAgrees(f.ns, name, f.nodes.slice(0, 4), { desiredNumberScheduled: 4, numberAvailable: 4 });
  });

  test('a node relabelled out of the selector loses its pod, which is not recreated', async () => {
    await labelNode(f.nodes[0]!, { role: 'b' });
    const now = await waitOnePodPerNode(f.ns, name, f.nodes.slice(1, 4));
    assert.deepEqual(
      uidsOn(now, f.nodes.slice(1, 4)),
      uidsOn(pods, f.nodes.slice(1, 4)),
      'pods on matching nodes untouched',
    );
    await assertStaysWithoutPod(f.ns, name, f.nodes[0]!, 2000, 'node relabelled out');
    await waitStatusAgrees(f.ns, name, f.nodes.slice(1, 4), {
      desiredNumberScheduled: 3,
      currentNumberScheduled: 3,
      numberMisscheduled: 0,
      numberAvailable: 3,
    });
    pods = now;
  });

  test('changing the template nodeSelector moves the pods to the newly selected nodes', async () => {
    const before = await getAds(f.ns, name);
    await patchAds(f.ns, name, { spec: { template: { spec: { nodeSelector: { 'e2e-group': f.group, role: 'b' } } } } });
    // role=b: node 0 (relabelled) and node 4.
    const ds = await waitRolledOut(f.ns, name, 2);
    assert.notEqual(ds.status?.daemonSetHash, before.status?.daemonSetHash, 'a new template, a new revision hash');
    const now = await waitOnePodPerNode(f.ns, name, [f.nodes[0]!, f.nodes[4]!], { hash: ds.status?.daemonSetHash });
    assert.equal(now.size, 2);
    for (const n of f.nodes.slice(1, 4)) await assertStaysWithoutPod(f.ns, name, n, 0, 'node no longer selected');
  });
});

describe('taints and tolerations', { timeout: 300_000 }, () => {
  const f = fixture('taints', 4);
  const name = 'tainted';
  let pods: Map<string, PodJson>;

  before(async () => {
    // Node 3 carries a taint the DaemonSet tolerates.
    await kubectl(['taint', 'node', f.nodes[3]!, 'e2e/dedicated=x:NoSchedule']);
  });

  test('a node with a NoSchedule taint the template tolerates gets a pod', async () => {
    await apply(
      adsManifest({
        name,
        namespace: f.ns,
        group: f.group,
        tolerations: [{ key: 'e2e/dedicated', operator: 'Exists', effect: 'NoSchedule' }],
      }),
    );
    pods = await waitOnePodPerNode(f.ns, name, f.nodes);
    await waitRolledOut(f.ns, name, 4);
  });

  test('an untolerated NoSchedule taint keeps the running pod, counted misscheduled; removing it counts it desired again', async () => {
    const kept = pods.get(f.nodes[0]!)!;
    await kubectl(['taint', 'node', f.nodes[0]!, 'e2e/block=x:NoSchedule']);
    await waitStatusAgrees(f.ns, name, f.nodes.slice(1), {
      desiredNumberScheduled: 3,
      currentNumberScheduled: 3,
      numberMisscheduled: 1,
      numberAvailable: 3,
    });
    await sleep(2000);
    const still = (await adsPods(f.ns, name)).filter((p) => p.spec.nodeName === f.nodes[0]);
    assert.deepEqual(
      still.map((p) => [p.metadata.uid, p.metadata.deletionTimestamp]),
      [[kept.metadata.uid, undefined]],
      'the running pod on the NoSchedule-tainted node is kept, not deleted',
    );

    await kubectl(['taint', 'node', f.nodes[0]!, 'e2e/block:NoSchedule-']);
    await waitStatusAgrees(f.ns, name, f.nodes, {
      desiredNumberScheduled: 4,
      currentNumberScheduled: 4,
      numberMisscheduled: 0,
      numberAvailable: 4,
    });
    const now = await waitOnePodPerNode(f.ns, name, f.nodes);
    assert.equal(now.get(f.nodes[0]!)!.metadata.uid, kept.metadata.uid, 'same pod throughout');
    pods = now;
  });

  test('a NoExecute taint removes the pod and none comes back while it stays; removing it brings one back', async () => {
    const evicted = pods.get(f.nodes[1]!)!;
    await kubectl(['taint', 'node', f.nodes[1]!, 'e2e/evict=x:NoExecute']);
    // kube-controller-manager's taint eviction may delete it as well as our controller; either
    // way it must go and must not be recreated while the taint stays.
    await eventually('the pod on the NoExecute-tainted node to be gone', async () =>
      (await adsPods(f.ns, name)).every((p) => p.metadata.uid !== evicted.metadata.uid),
    );
    await assertStaysWithoutPod(f.ns, name, f.nodes[1]!, 4000, 'NoExecute-tainted node');
    const others = [f.nodes[0]!, f.nodes[2]!, f.nodes[3]!];
    await waitStatusAgrees(f.ns, name, others, {
      desiredNumberScheduled: 3,
      currentNumberScheduled: 3,
      numberMisscheduled: 0,
      numberAvailable: 3,
    });
    const mid = await waitOnePodPerNode(f.ns, name, others);
    assert.deepEqual(uidsOn(mid, others), uidsOn(pods, others), 'pods on other nodes untouched');

    await kubectl(['taint', 'node', f.nodes[1]!, 'e2e/evict:NoExecute-']);
    const now = await waitOnePodPerNode(f.ns, name, f.nodes);
    assert.notEqual(now.get(f.nodes[1]!)!.metadata.uid, evicted.metadata.uid, 'a new pod after the taint is gone');
    pods = now;
    await waitRolledOut(f.ns, name, 4);
  });

  test('a cordoned node keeps its daemon pod, and a deleted one comes back there (automatic unschedulable toleration)', async () => {
    await kubectl(['cordon', f.nodes[2]!]);
    const victim = pods.get(f.nodes[2]!)!;
    await kubectl(['delete', 'pod', victim.metadata.name, '-n', f.ns, '--wait=false']);
    const now = await eventually('a new pod on the cordoned node', async () => {
      const m = await waitOnePodPerNode(f.ns, name, f.nodes, { timeoutMs: 1000 }).catch(() => undefined);
      return m && m.get(f.nodes[2]!)!.metadata.uid !== victim.metadata.uid && m;
    });
    assert.ok(now.get(f.nodes[2]!), 'daemon pod scheduled on the unschedulable node');
    await waitStatusAgrees(f.ns, name, f.nodes, {
      desiredNumberScheduled: 4,
      numberMisscheduled: 0,
      numberAvailable: 4,
    });
  });
});
