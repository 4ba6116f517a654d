// Issue #4, e2e: with no extra fields an Advanced DaemonSet behaves as a native one: one available
// pod per node, built as upstream builds daemon pods; deleted, failed and missing pods replaced;
// status counters that agree with `kubectl get` and with the pods; `kubectl wait` on a condition.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  createNamespace,
  createTestNodes,
  deleteNamespace,
  deleteNodes,
  eventually,
  kubectl,
  apply,
  podReady,
  uniqueName,
  type PodJson,
} from '../lib/kube.ts';
import {
  ADS,
  HASH_LABEL,
  KRUISE_POD_READY,
  adsManifest,
  addNodeToGroup,
  adsPods,
  condition,
  eventsFor,
  getAds,
  listRevisions,
  waitOnePodPerNode,
  waitRolledOut,
  waitStatusAgrees,
  type AdsJson,
} from '../lib/ads.ts';

/** Automatic tolerations of daemon pods (upstream AddOrUpdateDaemonPodTolerations, no hostNetwork). */
const DAEMON_TOLERATIONS = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

describe('one available pod per node', { timeout: 300_000 }, () => {
  let ns: string;
  let group: string;
  let nodes: string[] = [];
  const extraNodes: string[] = [];
  const name = 'basic';
  let ds: AdsJson;
  let pods: Map<string, PodJson>;

  before(async () => {
    ns = await createNamespace('e2e-basics');
    group = uniqueName('basics');
    nodes = await createTestNodes(group, 4);
  });
  after(async () => {
    await deleteNamespace(ns);
    await deleteNodes([...nodes, ...extraNodes]);
  });

  test('kubectl wait --for=condition=RolloutComplete returns once every node runs a Ready pod', async () => {
    await apply(adsManifest({ name, namespace: ns, group }));
    await kubectl(['wait', '-n', ns, `${ADS}/${name}`, '--for=condition=RolloutComplete', '--timeout=90s']);
    // No polling here: when the condition says complete, the pods must already be there.
    const list = await adsPods(ns, name);
    assert.deepEqual(
      list.map((p) => p.spec.nodeName).sort(),
      [...nodes].sort(),
      'exactly one pod on each test node when RolloutComplete turned True',
    );
    for (const p of list) assert.ok(podReady(p), `pod ${p.metadata.name} Ready when RolloutComplete is True`);
    ds = await getAds(ns, name);
    assert.equal(ds.status?.observedGeneration, ds.metadata.generation, 'observedGeneration is current');
    assert.equal(condition(ds, 'Available')?.status, 'True', 'Available True');
    const progressing = condition(ds, 'Progressing');
    assert.equal(progressing?.status, 'False', 'Progressing False once done');
    assert.equal(progressing?.reason, 'RolloutComplete', 'Progressing reason says why it stopped');
    pods = await waitOnePodPerNode(ns, name, nodes);
  });

  test('each pod is a daemon pod: controller ownerReference, revision hash label, KruisePodReady gate True, pinned to its node, daemon tolerations', async () => {
    const hash = ds.status?.daemonSetHash;
    assert.ok(hash, 'status.daemonSetHash is set');
    for (const [node, p] of pods) {
      const what = `pod ${p.metadata.name} on ${node}`;
      const owners = p.metadata.ownerReferences ?? [];
      assert.equal(owners.length, 1, `${what}: one ownerReference`);
      assert.deepEqual(
        owners[0],
        {
          apiVersion: 'apps.kruise.io/v1alpha1',
          kind: 'DaemonSet',
          name,
          uid: ds.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
        `${what}: controller ownerReference to the DaemonSet`,
      );
      assert.ok(p.metadata.name.startsWith(`${name}-`), `${what}: generateName ${name}-`);
      assert.equal(p.metadata.labels?.[HASH_LABEL], hash, `${what}: ${HASH_LABEL} = status.daemonSetHash`);
      assert.equal(p.metadata.labels?.app, name, `${what}: template labels kept`);
      assert.ok(
        p.spec.readinessGates?.some((g) => g.conditionType === KRUISE_POD_READY),
        `${what}: readiness gate ${KRUISE_POD_READY}`,
      );
      assert.equal(
        p.status?.conditions?.find((c) => c.type === KRUISE_POD_READY)?.status,
        'True',
        `${what}: ${KRUISE_POD_READY} condition set True by the controller`,
      );
      const spec = p.spec as PodJson['spec'] & {
        affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: unknown } };
        tolerations?: { key?: string; operator?: string; effect?: string }[];
      };
      assert.deepEqual(
        spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
        { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }] },
        `${what}: required node affinity pins it to its node (matchFields metadata.name)`,
      );
      for (const t of DAEMON_TOLERATIONS) {
        assert.ok(
          (spec.tolerations ?? []).some((x) => x.key === t.key && x.operator === t.operator && x.effect === t.effect),
          `${what}: automatic toleration ${t.key}:${t.effect}`,
        );
      }
    }
    const revisions = await listRevisions(ns, name);
    assert.deepEqual(
      revisions.map((r) => [r.metadata.name, r.revision]),
      [[`${name}-${hash}`, 1]],
      'one ControllerRevision <ds>-<hash>, revision 1',
    );
    assert.equal(revisions[0]!.metadata.ownerReferences?.[0]?.uid, ds.metadata.uid, 'revision owned by the DaemonSet');
    await eventually('a SuccessfulCreate event per pod', async () => {
      const created = (await eventsFor(ns, name, ds.metadata.uid))
        .filter((e) => e.reason === 'SuccessfulCreate')
        .map((e) => e.message);
      return [...pods.values()].every((p) => created.includes(`Created pod: ${p.metadata.name}`));
    });
  });

  test('status counters equal the columns of kubectl get ads and the pods counted here', async () => {
    await waitStatusAgrees(ns, name, nodes, {
      desiredNumberScheduled: 4,
      currentNumberScheduled: 4,
      numberMisscheduled: 0,
      numberReady: 4,
      numberAvailable: 4,
      numberUnavailable: 0,
      updatedNumberScheduled: 4,
    });
  });

  test('a deleted pod is replaced by a new pod on the same node; the others are untouched', async () => {
    const victim = pods.get(nodes[1]!)!;
    await kubectl(['delete', 'pod', victim.metadata.name, '-n', ns, '--wait=false']);
    const now = await eventually('a replacement pod on the node of the deleted one', async () => {
      const m = await waitOnePodPerNode(ns, name, nodes, { timeoutMs: 1000 }).catch(() => undefined);
      return m && m.get(nodes[1]!)!.metadata.uid !== victim.metadata.uid && m;
    });
    for (const n of nodes) {
      if (n === nodes[1]) continue;
      assert.equal(now.get(n)!.metadata.uid, pods.get(n)!.metadata.uid, `pod on ${n} not recreated`);
    }
    const replacement = now.get(nodes[1]!)!;
    assert.equal(
      replacement.metadata.labels?.[HASH_LABEL],
      ds.status?.daemonSetHash,
      'replacement has the current hash',
    );
    await eventually('SuccessfulCreate event for the replacement', async () =>
      (await eventsFor(ns, name, ds.metadata.uid)).some(
        (e) => e.reason === 'SuccessfulCreate' && e.message === `Created pod: ${replacement.metadata.name}`,
      ),
    );
    pods = now;
    await waitRolledOut(ns, name, 4);
  });

  test('a failed pod is deleted (FailedDaemonPod) and replaced on its node', async () => {
    const victim = pods.get(nodes[2]!)!;
    await kubectl([
      'patch',
      'pod',
      victim.metadata.name,
      '-n',
      ns,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { phase: 'Failed' } }),
    ]);
    await eventually('the failed pod to be deleted', async () =>
      (await adsPods(ns, name)).every((p) => p.metadata.uid !== victim.metadata.uid),
    );
    const now = await waitOnePodPerNode(ns, name, nodes);
    assert.notEqual(now.get(nodes[2]!)!.metadata.uid, victim.metadata.uid, 'a new pod runs on the node');
    for (const n of [nodes[0]!, nodes[1]!, nodes[3]!]) {
      assert.equal(now.get(n)!.metadata.uid, pods.get(n)!.metadata.uid, `pod on ${n} not recreated`);
    }
    await eventually('a FailedDaemonPod warning naming the failed pod', async () =>
      (await eventsFor(ns, name, ds.metadata.uid)).some(
        (e) => e.reason === 'FailedDaemonPod' && e.type === 'Warning' && e.message.includes(victim.metadata.name),
      ),
    );
    pods = now;
  });

  test('a new node gets a pod and is counted', async () => {
    extraNodes.push(`${group}-x`); // cleaned up even if the wait below fails
    const extra = await addNodeToGroup(group, `${group}-x`);
    const now = await waitOnePodPerNode(ns, name, [...nodes, extra]);
    for (const n of nodes) assert.equal(now.get(n)!.metadata.uid, pods.get(n)!.metadata.uid, `pod on ${n} untouched`);
    await waitStatusAgrees(ns, name, [...nodes, extra], {
      desiredNumberScheduled: 5,
      currentNumberScheduled: 5,
      numberReady: 5,
      numberAvailable: 5,
      updatedNumberScheduled: 5,
      numberMisscheduled: 0,
    });
  });
});
