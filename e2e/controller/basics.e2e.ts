// e2e: with no extra fields an Advanced DaemonSet behaves as a native one: one available
// pod per node, built as upstream builds daemon pods; deleted, failed and missing pods replaced;
// status counters that agree with `kubectl get` and with the pods; `kubectl wait` on a condition.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, kubectl, apply, podReady, type PodJson, fixture } from '../lib/kube.ts';
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
  const f = fixture('basics', 4);
  const name = 'basic';
  let ds: AdsJson;
  let pods: Map<string, PodJson>;

  test('kubectl wait --for=condition=RolloutComplete returns once every node runs a Ready pod', async () => {
    await apply(adsManifest({ name, namespace: f.ns, group: f.group }));
    await kubectl(['wait', '-n', f.ns, `${ADS}/${name}`, '--for=condition=RolloutComplete', '--timeout=90s']);
    // No polling here: when the condition says complete, the pods must already be there.
    const list = await adsPods(f.ns, name);
    assert.deepEqual(
      list.map((p) => p.spec.nodeName).sort(),
      [...f.nodes].sort(),
      'exactly one pod on each test node when RolloutComplete turned True',
    );
    for (const p of list) assert.ok(podReady(p), `pod ${p.metadata.name} Ready when RolloutComplete is True`);
    ds = await getAds(f.ns, name);
    assert.equal(ds.status?.observedGeneration, ds.metadata.generation, 'observedGeneration is current');
    assert.equal(condition(ds, 'Available')?.status, 'True', 'Available True');
    const progressing = condition(ds, 'Progressing');
    assert.equal(progressing?.status, 'True', "Progressing True once done, as a Deployment's");
    assert.equal(progressing?.reason, 'RolloutComplete', 'Progressing reason says it is done');
    pods = await waitOnePodPerNode(f.ns, name, f.nodes);
  });

  test('each pod is a daemon pod: controller ownerReference, revision hash label, KruisePodReady gate set True, pinned to its node, daemon tolerations', async () => {
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
      // Every pod carries the gate, as Kruise's pod webhook gives it to every pod a Kruise workload owns
      // (--kruise-pod-ready-gate always, the default), and the controller set the condition True after the create:
      // the pod is Ready, and kwok's stages count a missing gate condition as False.
      assert.deepEqual(
        (p.spec.readinessGates ?? []).filter((g) => g.conditionType === KRUISE_POD_READY),
        [{ conditionType: KRUISE_POD_READY }],
        `${what}: readiness gate ${KRUISE_POD_READY}, once`,
      );
      assert.equal(
        p.status?.conditions?.find((c) => c.type === KRUISE_POD_READY)?.status,
        'True',
        `${what}: ${KRUISE_POD_READY} condition True`,
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
    const revisions = await listRevisions(f.ns, name);
    assert.deepEqual(
      revisions.map((r) => [r.metadata.name, r.revision]),
      [[`${name}-${hash}`, 1]],
      'one ControllerRevision <ds>-<hash>, revision 1',
    );
    assert.equal(revisions[0]!.metadata.ownerReferences?.[0]?.uid, ds.metadata.uid, 'revision owned by the DaemonSet');
    await eventually('a SuccessfulCreate event per pod', async () => {
      const created = (await eventsFor(f.ns, name, ds.metadata.uid))
        .filter((e) => e.reason === 'SuccessfulCreate')
        .map((e) => e.message);
      return [...pods.values()].every((p) => created.includes(`Created pod: ${p.metadata.name}`));
    });
  });

  test('status counters equal the columns of kubectl get ads and the pods counted here', async () => {
    await waitStatusAgrees(f.ns, name, f.nodes, {
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
    const victim = pods.get(f.nodes[1]!)!;
    await kubectl(['delete', 'pod', victim.metadata.name, '-n', f.ns, '--wait=false']);
    const now = await eventually('a replacement pod on the node of the deleted one', async () => {
      const m = await waitOnePodPerNode(f.ns, name, f.nodes, { timeoutMs: 1000 }).catch(() => undefined);
      return m && m.get(f.nodes[1]!)!.metadata.uid !== victim.metadata.uid && m;
    });
    for (const n of f.nodes) {
      if (n === f.nodes[1]) continue;
      assert.equal(now.get(n)!.metadata.uid, pods.get(n)!.metadata.uid, `pod on ${n} not recreated`);
    }
    const replacement = now.get(f.nodes[1]!)!;
    assert.equal(
      replacement.metadata.labels?.[HASH_LABEL],
      ds.status?.daemonSetHash,
      'replacement has the current hash',
    );
    await eventually('SuccessfulCreate event for the replacement', async () =>
      (await eventsFor(f.ns, name, ds.metadata.uid)).some(
        (e) => e.reason === 'SuccessfulCreate' && e.message === `Created pod: ${replacement.metadata.name}`,
      ),
    );
    pods = now;
    await waitRolledOut(f.ns, name, 4);
  });

  test('a failed pod is deleted (FailedDaemonPod) and replaced on its node', async () => {
    const victim = pods.get(f.nodes[2]!)!;
    await kubectl([
      'patch',
      'pod',
      victim.metadata.name,
      '-n',
      f.ns,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { phase: 'Failed' } }),
    ]);
    await eventually('the failed pod to be deleted', async () =>
      (await adsPods(f.ns, name)).every((p) => p.metadata.uid !== victim.metadata.uid),
    );
    const now = await waitOnePodPerNode(f.ns, name, f.nodes);
    assert.notEqual(now.get(f.nodes[2]!)!.metadata.uid, victim.metadata.uid, 'a new pod runs on the node');
    for (const n of [f.nodes[0]!, f.nodes[1]!, f.nodes[3]!]) {
      assert.equal(now.get(n)!.metadata.uid, pods.get(n)!.metadata.uid, `pod on ${n} not recreated`);
    }
    await eventually('a FailedDaemonPod warning naming the failed pod', async () =>
      (await eventsFor(f.ns, name, ds.metadata.uid)).some(
        (e) => e.reason === 'FailedDaemonPod' && e.type === 'Warning' && e.message.includes(victim.metadata.name),
      ),
    );
    pods = now;
  });

  test('a new node gets a pod and is counted', async () => {
    f.extra.push(`${f.group}-x`); // cleaned up even if the wait below fails
    const extra = await addNodeToGroup(f.group, `${f.group}-x`);
    const now = await waitOnePodPerNode(f.ns, name, [...f.nodes, extra]);
    for (const n of f.nodes) assert.equal(now.get(n)!.metadata.uid, pods.get(n)!.metadata.uid, `pod on ${n} untouched`);
    await waitStatusAgrees(f.ns, name, [...f.nodes, extra], {
      desiredNumberScheduled: 5,
      currentNumberScheduled: 5,
      numberReady: 5,
      numberAvailable: 5,
      updatedNumberScheduled: 5,
      numberMisscheduled: 0,
    });
    // Pods created later carry the gate too, set True (numberReady 5 above needs it under kwok's stages).
    for (const p of await adsPods(f.ns, name)) {
      assert.ok(
        p.spec.readinessGates?.some((g) => g.conditionType === KRUISE_POD_READY),
        `pod ${p.metadata.name} on ${p.spec.nodeName}: readiness gate ${KRUISE_POD_READY}`,
      );
      assert.equal(
        p.status?.conditions?.find((c) => c.type === KRUISE_POD_READY)?.status,
        'True',
        `pod ${p.metadata.name} on ${p.spec.nodeName}: ${KRUISE_POD_READY} True`,
      );
    }
  });
});
