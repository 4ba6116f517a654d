// e2e of the failure images of the local cluster (e2e/cluster/kwok-stages.yaml), which the canary tests rely on: a
// container whose image name contains `crashloop` restarts every few seconds (restartCount up, waiting in
// CrashLoopBackOff, last state terminated with exit code 1, pod Running and never Ready), one whose image name
// contains `badimage` waits in ErrImagePull then ImagePullBackOff (pod Pending and never Ready); both also after an
// in-place image change, and both recover when the image is changed back. Every never-claim is checked on every state
// a watch delivered. Last, an Advanced DaemonSet without canary rolling to a crashloop image stalls after
// maxUnavailable nodes, as the controller must see those pods unavailable.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apply, eventually, podReady, patchPod, type PodJson } from '../lib/kube.ts';
import { PodWatch, adsPods, getAds, imagePatch, patchAds, sleep } from '../lib/ads.ts';
import { fixture, rolledOutDaemonSet, waitNewRevision } from '../strategies/lib.ts';
import { BAD_IMAGE, CRASHLOOP_IMAGE, PodHistory, containerStatus, type PodRecord } from './lib.ts';

const GOOD_IMAGE = 'busybox:1.36';

function plainPod(ns: string, name: string, node: string, image: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { test: 'failure-images' } },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'c', image },
        { name: 'side', image: GOOD_IMAGE },
      ],
    },
  };
}

const setImage = (ns: string, name: string, image: string) =>
  patchPod(ns, name, 'strategic', { spec: { containers: [{ name: 'c', image }] } });

async function podNamed(w: PodWatch, name: string): Promise<PodJson> {
  return eventually(`pod ${name} seen by the watch`, async () => {
    w.assertAlive();
    return w.list().find((p) => p.metadata.name === name);
  });
}

function describeRecord(r: PodRecord | undefined): string {
  return JSON.stringify(r && { ...r, images: [...r.images], phases: [...r.phases], readyWith: [...r.readyWith] });
}

describe('failure images of the kwok stages', { timeout: 300_000 }, () => {
  // Two nodes: createTestNodes cannot wait for a single one (see addNodeToGroup).
  const f = fixture('failimg', 2);
  const history = new PodHistory();
  let watch: PodWatch;

  test('crashloop: restarts every few seconds, waiting CrashLoopBackOff, last exit code 1, Running and never Ready', async (t) => {
    watch = await PodWatch.start(f.ns, 'test=failure-images', (_w, ev) => history.record(ev.pod, ev.at));
    t.after(() => watch.stop());
    const node = f.nodes[0]!;
    await apply(plainPod(f.ns, 'crash', node, CRASHLOOP_IMAGE), 'create');
    const created = Date.now();
    const pod = await eventually(
      'pod crash restarted 3 times, waiting in CrashLoopBackOff after an exit with code 1',
      async () => {
        const p = await podNamed(watch, 'crash');
        const c = containerStatus(p, 'c');
        return (
          c !== undefined &&
          c.restartCount >= 3 &&
          c.state?.waiting?.reason === 'CrashLoopBackOff' &&
          c.lastState?.terminated?.exitCode === 1 &&
          p
        );
      },
    );
    const r = history.byName('crash');
    assert.ok(r, 'the watch recorded the pod');
    assert.deepEqual(
      [...r.phases].filter((ph) => ph !== 'Pending'),
      ['Running'],
      describeRecord(r),
    );
    assert.equal(r.readyWith.size, 0, `never Ready: ${describeRecord(r)}`);
    assert.equal(r.containersReadySeen, false, `ContainersReady never True: ${describeRecord(r)}`);
    assert.equal(r.restartsWentBack, false, `restartCount only goes up: ${describeRecord(r)}`);
    assert.equal(containerStatus(pod, 'side')?.ready, true, 'the other container runs');
    // Every few seconds (2 to 4 s per restart in the stage; generous for a loaded machine).
    const third = r.restarts.find((x) => x.count >= 3)!;
    assert.ok(third.at - created < 40_000, `3 restarts within 40 s of creation (took ${third.at - created} ms)`);
  });

  test('badimage: waits in ErrImagePull, then ImagePullBackOff, and stays so; Pending and never Ready', async (t) => {
    watch = await PodWatch.start(f.ns, 'test=failure-images', (_w, ev) => history.record(ev.pod, ev.at));
    t.after(() => watch.stop());
    await apply(plainPod(f.ns, 'pull', f.nodes[0]!, BAD_IMAGE), 'create');
    await eventually('pod pull waiting in ImagePullBackOff', async () => {
      const c = containerStatus(await podNamed(watch, 'pull'), 'c');
      return c?.state?.waiting?.reason === 'ImagePullBackOff';
    });
    await sleep(6000);
    const p = await podNamed(watch, 'pull');
    const r = history.byName('pull');
    assert.ok(r, 'the watch recorded the pod');
    assert.equal(containerStatus(p, 'c')?.state?.waiting?.reason, 'ImagePullBackOff', '6 s later still backing off');
    assert.equal(containerStatus(p, 'c')?.restartCount, 0, 'never started, never restarted');
    assert.deepEqual(r.waitingReasons, ['ErrImagePull', 'ImagePullBackOff'], describeRecord(r));
    assert.deepEqual([...r.phases], ['Pending'], `Pending throughout: ${describeRecord(r)}`);
    assert.equal(r.readyWith.size, 0, `never Ready: ${describeRecord(r)}`);
    assert.equal(containerStatus(p, 'side')?.ready, true, 'the other container runs');
  });

  test('in place: a running pod changed to crashloop crashes, to badimage fails its pull, and recovers when changed back', async (t) => {
    watch = await PodWatch.start(f.ns, 'test=failure-images', (_w, ev) => history.record(ev.pod, ev.at));
    t.after(() => watch.stop());
    await apply(plainPod(f.ns, 'inplace', f.nodes[0]!, GOOD_IMAGE), 'create');
    await eventually('pod inplace Ready', async () => podReady(await podNamed(watch, 'inplace')));
    const uid = (await podNamed(watch, 'inplace')).metadata.uid;
    const restartsOf = async () => containerStatus(await podNamed(watch, 'inplace'), 'c')?.restartCount ?? -1;
    const before = await restartsOf();

    await setImage(f.ns, 'inplace', CRASHLOOP_IMAGE);
    await eventually('pod inplace crashing on the crashloop image, not Ready', async () => {
      const p = await podNamed(watch, 'inplace');
      const c = containerStatus(p, 'c');
      return (
        c?.image === CRASHLOOP_IMAGE &&
        c.state?.waiting?.reason === 'CrashLoopBackOff' &&
        c.restartCount >= before + 3 &&
        !podReady(p)
      );
    });

    await setImage(f.ns, 'inplace', 'busybox:1.37');
    await eventually('pod inplace Ready again on busybox:1.37', async () => {
      const p = await podNamed(watch, 'inplace');
      return containerStatus(p, 'c')?.image === 'busybox:1.37' && podReady(p);
    });

    await setImage(f.ns, 'inplace', BAD_IMAGE);
    await eventually('pod inplace in ImagePullBackOff, not Ready', async () => {
      const p = await podNamed(watch, 'inplace');
      const c = containerStatus(p, 'c');
      return c?.image === BAD_IMAGE && c.state?.waiting?.reason === 'ImagePullBackOff' && !podReady(p);
    });

    await setImage(f.ns, 'inplace', GOOD_IMAGE);
    const back = await eventually('pod inplace Ready again on busybox:1.36', async () => {
      const p = await podNamed(watch, 'inplace');
      return containerStatus(p, 'c')?.image === GOOD_IMAGE && podReady(p) && p;
    });
    assert.equal(back.metadata.uid, uid, 'the same pod throughout (in place)');
    const r = history.byName('inplace')!;
    assert.deepEqual(
      [...r.phases].filter((ph) => ph !== 'Pending'),
      ['Running'],
      describeRecord(r),
    );
    assert.ok(!r.readyWith.has(BAD_IMAGE), `never Ready on the bad image: ${describeRecord(r)}`);
    assert.equal(r.restartsWentBack, false, `restartCount only goes up: ${describeRecord(r)}`);
    assert.ok(r.waitingReasons.includes('ErrImagePull'), describeRecord(r));
  });
});

describe('an Advanced DaemonSet (no canary) rolling to a crashloop image', { timeout: 300_000 }, () => {
  const f = fixture('failimg-ads', 3);
  const name = 'failimg';

  test('maxUnavailable 1: one node gets the crashing pod, it is never available, and the rollout goes no further', async (t) => {
    const { hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } } },
    });
    const history = new PodHistory();
    const watch = await PodWatch.start(f.ns, `app=${name}`, (_w, ev) => history.record(ev.pod, ev.at));
    t.after(() => watch.stop());
    await patchAds(f.ns, name, imagePatch(CRASHLOOP_IMAGE));
    await waitNewRevision(f.ns, name, v1);
    await eventually('one pod of the new revision crashing', async () =>
      (await adsPods(f.ns, name)).some((p) => (containerStatus(p, 'c')?.restartCount ?? 0) >= 2),
    );
    // Several restarts' worth of syncs: still one node on the crashing image, none of its pods ever Ready.
    await sleep(8000);
    const crashing = history.nodesThatRan((i) => i === CRASHLOOP_IMAGE);
    assert.equal(crashing.size, 1, `exactly one node ever ran the crashloop image: ${[...crashing].join(',')}`);
    for (const r of history.pods.values()) {
      assert.ok(!r.readyWith.has(CRASHLOOP_IMAGE), `pod ${r.name} never Ready on the crashloop image`);
    }
    await eventually('status: 1 updated, 2 available, 1 unavailable', async () => {
      const s = (await getAds(f.ns, name)).status;
      return s?.updatedNumberScheduled === 1 && s.numberAvailable === 2 && s.numberUnavailable === 1;
    });
  });
});
