// e2e of InPlaceIfPossible and lifecycle.preDelete, after the cases of Kruise's e2e test
// (https://github.com/openkruise/kruise/blob/master/test/e2e/apps/v1alpha1/daemonset.go): InPlaceIfPossible updates
// images and template metadata in place (same pod, same UID, InPlaceUpdateReady False then True, within maxUnavailable)
// and recreates for any other change; lifecycle.preDelete holds a hooked pod in PreparingDelete (KruisePodReady False
// with markPodNotReady) until its hook label or finalizer is removed.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, kubectl, patchPod, podReady, type PodJson } from '../lib/kube.ts';
import {
  KRUISE_POD_READY,
  PodWatch,
  adsPods,
  eventsFor,
  getAds,
  imagePatch,
  labelNode,
  patchAds,
  terminating,
  waitRolledOut,
  liveByNode,
} from '../lib/ads.ts';
import {
  assertSamePods,
  assertUnchanged,
  fixture,
  layout,
  rolledOutDaemonSet,
  waitLayout,
  waitNewRevision,
  waitObserved,
} from './lib.ts';

const IN_PLACE_UPDATE_READY = 'InPlaceUpdateReady';
const STATE_LABEL = 'lifecycle.apps.kruise.io/state';
const TIMESTAMP_ANNOTATION = 'lifecycle.apps.kruise.io/timestamp';

interface PodCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

function cond(p: PodJson, type: string): PodCondition | undefined {
  return (p.status?.conditions as PodCondition[] | undefined)?.find((c) => c.type === type);
}

/** A merge patch replaces the containers list: keep the image. */
const envPatch = (image: string, value: string) => ({
  spec: { template: { spec: { containers: [{ name: 'c', image, env: [{ name: 'MODE', value }] }] } } },
});

describe('InPlaceIfPossible', { timeout: 300_000 }, () => {
  const f = fixture('inplace', 4);
  const name = 'inplace';
  let watch: PodWatch | undefined;

  test('an image change updates every pod in place within maxUnavailable 1; a template label too; an env change recreates', async (t) => {
    t.after(() => watch?.stop());
    const n = f.nodes;
    const {
      ds,
      hash: v1,
      pods: initial,
    } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible' } } },
    });
    for (const p of initial.values()) {
      assert.ok(
        p.spec.readinessGates?.some((g) => g.conditionType === IN_PLACE_UPDATE_READY),
        `pod ${p.metadata.name} created under InPlaceIfPossible carries the ${IN_PLACE_UPDATE_READY} gate`,
      );
      assert.equal(cond(p, IN_PLACE_UPDATE_READY)?.status, 'True', `${IN_PLACE_UPDATE_READY} True when created`);
    }

    let worst: string[] = [];
    const sawStartInPlace = new Set<string>();
    watch = await PodWatch.start(f.ns, `app=${name}`, (w) => {
      const notReady = [...liveByNode(w.list(), n)].filter(([, ps]) => !ps.some(podReady)).map(([node]) => node);
      if (notReady.length > worst.length) worst = notReady;
      for (const p of w.list()) {
        const c = cond(p, IN_PLACE_UPDATE_READY);
        if (c?.status === 'False' && c.reason === 'StartInPlaceUpdate') sawStartInPlace.add(p.metadata.uid);
      }
    });

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    await waitRolledOut(f.ns, name, 4);
    const updated = await waitLayout(f.ns, name, layout(n, v2));
    await eventually('InPlaceUpdateReady True on every pod', async () =>
      (await adsPods(f.ns, name)).every((p) => cond(p, IN_PLACE_UPDATE_READY)?.status === 'True'),
    );
    assertSamePods(initial, updated, n, 'in-place image update');
    for (const [node, p] of updated) {
      const before = initial.get(node)!;
      assert.equal(p.metadata.name, before.metadata.name, `pod on ${node} keeps its name`);
      assert.equal(p.spec.containers[0]!.image, 'busybox:1.37', `pod on ${node} runs the new image`);
      const cs = p.status!.containerStatuses![0]!;
      assert.equal(cs.restartCount, 1, `container on ${node} restarted once on the new image`);
      assert.notEqual(cs.imageID, before.status!.containerStatuses![0]!.imageID, `new imageID on ${node}`);
      const state = JSON.parse(p.metadata.annotations?.['apps.kruise.io/inplace-update-state'] ?? '{}') as {
        revision?: string;
        lastContainerStatuses?: Record<string, { imageID: string }>;
      };
      assert.equal(state.revision, v2, `inplace-update-state on ${node} records the revision`);
      assert.equal(
        state.lastContainerStatuses?.c?.imageID,
        before.status!.containerStatuses![0]!.imageID,
        `inplace-update-state on ${node} records the old imageID`,
      );
    }
    assert.deepEqual(
      [...sawStartInPlace].sort(),
      [...initial.values()].map((p) => p.metadata.uid).sort(),
      `every pod went through ${IN_PLACE_UPDATE_READY} False (StartInPlaceUpdate) while its new image started`,
    );
    assert.ok(worst.length <= 1, `maxUnavailable 1: at most one pod not Ready at a time; saw ${worst}`);
    assert.equal(worst.length, 1, 'the in-place update made pods unavailable one at a time');
    await eventually('a SuccessfulUpdatePodInPlace event per pod', async () => {
      const evs = (await eventsFor(f.ns, name, ds.metadata.uid)).filter(
        (e) => e.reason === 'SuccessfulUpdatePodInPlace',
      );
      return [...initial.values()].every((p) =>
        evs.some((e) => e.message === `successfully update pod ${p.metadata.name} in-place`),
      );
    });

    // Template metadata only: in place too.
    await patchAds(f.ns, name, { spec: { template: { metadata: { labels: { tier: 'edge' } } } } });
    const v3 = (await waitNewRevision(f.ns, name, v2)).status!.daemonSetHash!;
    const relabelled = await waitLayout(f.ns, name, layout(n, v3));
    assertSamePods(initial, relabelled, n, 'in-place template label change');
    for (const p of relabelled.values()) assert.equal(p.metadata.labels?.tier, 'edge', 'template label patched in');

    // Anything else (env) recreates, and the recreated pods carry the gate again.
    await patchAds(f.ns, name, envPatch('busybox:1.37', 'a'));
    const v4 = (await waitNewRevision(f.ns, name, v3)).status!.daemonSetHash!;
    await waitRolledOut(f.ns, name, 4);
    const recreated = await waitLayout(f.ns, name, layout(n, v4));
    for (const [node, p] of recreated) {
      assert.notEqual(p.metadata.uid, initial.get(node)!.metadata.uid, `env change recreated the pod on ${node}`);
      assert.ok(p.spec.readinessGates?.some((g) => g.conditionType === IN_PLACE_UPDATE_READY));
    }
  });
});

describe('lifecycle.preDelete', { timeout: 300_000 }, () => {
  const f = fixture('predelete', 3);
  const name = 'predelete';
  const hook = 'example.io/block-deleting';

  test('a hooked pod stays PreparingDelete (and NotReady with markPodNotReady) until its label is removed; then exactly one new pod', async () => {
    const { pods: initial } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1 },
        },
      },
      mutate: (m) => {
        const spec = m.spec as { template: { metadata: { labels: Record<string, string> } } };
        spec.template.metadata.labels[hook] = 'true';
        m.spec.lifecycle = { preDelete: { labelsHandler: { [hook]: 'true' }, markPodNotReady: true } };
      },
    });

    // markPodNotReady brings the KruisePodReady gate, which the controller sets True after creating each pod.
    for (const [node, p] of initial) {
      assert.ok(
        p.spec.readinessGates?.some((g) => g.conditionType === KRUISE_POD_READY),
        `pod on ${node}: readiness gate ${KRUISE_POD_READY}`,
      );
      assert.equal(cond(p, KRUISE_POD_READY)?.status, 'True', `pod on ${node}: ${KRUISE_POD_READY} True`);
    }

    // env is not in-place-able: every pod must be deleted, and each is hooked.
    await patchAds(f.ns, name, envPatch('busybox:1.36', 'b'));
    const ds2 = await waitObserved(f.ns, name);
    assert.equal(ds2.metadata.generation, 2);
    const held = await eventually('exactly one pod in PreparingDelete', async () => {
      const ps = (await adsPods(f.ns, name)).filter((p) => p.metadata.labels?.[STATE_LABEL] === 'PreparingDelete');
      return ps.length === 1 && ps[0]!;
    });
    assert.ok(held.metadata.annotations?.[TIMESTAMP_ANNOTATION], 'lifecycle timestamp annotation set');
    const notReady = await eventually('the held pod NotReady through KruisePodReady False', async () => {
      const p = (await adsPods(f.ns, name)).find((x) => x.metadata.uid === held.metadata.uid);
      return p && cond(p, KRUISE_POD_READY)?.status === 'False' && !podReady(p) && p;
    });
    assert.deepEqual(
      JSON.parse(cond(notReady, KRUISE_POD_READY)?.message ?? '[]'),
      [{ userAgent: 'Lifecycle', key: 'preDeleteHook' }],
      'KruisePodReady message lists who holds it',
    );
    // Hooked pods count as unavailable: with maxUnavailable 1 no other pod is touched, and none is deleted.
    await assertUnchanged(f.ns, name, initial, 'hook held');
    const stillHeld = (await adsPods(f.ns, name)).filter((p) => p.metadata.labels?.[STATE_LABEL] === 'PreparingDelete');
    assert.deepEqual(
      stillHeld.map((p) => p.metadata.uid),
      [held.metadata.uid],
      'still exactly the same one pod in PreparingDelete',
    );

    // The user's controller releases it: the pod is deleted and replaced by one new-revision pod.
    await kubectl(['label', 'pod', held.metadata.name, '-n', f.ns, `${hook}=false`, '--overwrite']);
    const v2 = (await getAds(f.ns, name)).status!.daemonSetHash!;
    const node = held.spec.nodeName!;
    const next = await eventually('the released pod replaced on its node by a new-revision pod', async () => {
      const ps = await adsPods(f.ns, name);
      const onNode = ps.filter((p) => p.spec.nodeName === node);
      return (
        onNode.length === 1 &&
        onNode[0]!.metadata.labels?.['controller-revision-hash'] === v2 &&
        podReady(onNode[0]!) &&
        ps
      );
    });
    assert.equal(next.filter((p) => p.metadata.labels?.['controller-revision-hash'] === v2).length, 1);
    await eventually('the next pod enters PreparingDelete, still not deleted', async () => {
      const ps = await adsPods(f.ns, name);
      const hookedNext = ps.filter((p) => p.metadata.labels?.[STATE_LABEL] === 'PreparingDelete');
      return hookedNext.length === 1 && hookedNext[0]!.spec.nodeName !== node && !terminating(hookedNext[0]!);
    });
  });
});

describe('lifecycle.preDelete finalizersHandler on a node that no longer qualifies', { timeout: 300_000 }, () => {
  const f = fixture('prefin', 2, () => ({ run: 'yes' }));
  const name = 'prefin';
  const finalizer = 'example.io/unready-blocker';

  test('the pod of an ineligible node is held in PreparingDelete until the finalizer is removed', async (t) => {
    t.after(async () => {
      // Never leave a finalizer behind: it would keep the namespace terminating.
      for (const p of await adsPods(f.ns, name).catch(() => [])) {
        await patchPod(f.ns, p.metadata.name, 'merge', '{"metadata":{"finalizers":null}}').catch(() => undefined);
      }
    });
    const { pods: initial } = await rolledOutDaemonSet(f, name, {
      options: { nodeSelector: { run: 'yes' } },
      mutate: (m) => {
        (m.spec as { template: { metadata: Record<string, unknown> } }).template.metadata.finalizers = [finalizer];
        m.spec.lifecycle = { preDelete: { finalizersHandler: [finalizer] } };
      },
    });
    const [keep, drop] = f.nodes as [string, string];
    await labelNode(drop, { run: null });
    const held = await eventually(`the pod on ${drop} in PreparingDelete`, async () => {
      const p = (await adsPods(f.ns, name)).find((x) => x.spec.nodeName === drop);
      return p && p.metadata.labels?.[STATE_LABEL] === 'PreparingDelete' && p;
    });
    assert.equal(held.metadata.uid, initial.get(drop)!.metadata.uid);
    await assertUnchanged(f.ns, name, initial, 'finalizer hook held');
    await patchPod(f.ns, held.metadata.name, 'json', '[{"op":"remove","path":"/metadata/finalizers"}]');
    const left = await eventually(`the pod on ${drop} gone once released`, async () => {
      const ps = await adsPods(f.ns, name);
      return ps.length === 1 && ps[0]!.spec.nodeName === keep && ps;
    });
    assert.equal(left[0]!.metadata.uid, initial.get(keep)!.metadata.uid, `the pod on ${keep} untouched`);
  });
});
