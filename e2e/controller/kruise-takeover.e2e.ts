// Taking over from kruise-manager. kruise-manager stores pod templates undefaulted in its ControllerRevisions (getPatch
// marshals spec.template as the DaemonSet holds it:
// https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_history.go), while templates
// written through our webhook are defaulted as apps/v1 defaults them. After a takeover, an image change under
// InPlaceIfPossible must still update the pods in place (same UIDs), and a rollback to the Kruise-era template must
// reuse Kruise's revision (no new ControllerRevision).
//
// A private cluster: the DaemonSet, its revision and its pods are written here exactly as kruise-manager leaves them,
// before our controller runs (on the shared cluster the harness's manager would take them at once). That cluster has
// no webhook, so the template changes are sent defaulted as our webhook stores them (defaultDaemonSet).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { defaultDaemonSet, type JsonObject } from '../../src/api/defaults.ts';
import type { DaemonSet } from '../../src/api/types.ts';
import { controllerRef, newPod } from '../../src/daemonset/pods.ts';
import { apply, eventually, fixture, kubectl, kubectlJson, patchPod, podReady, type PodJson } from '../lib/kube.ts';
import { sleep } from '../../src/testing/wait.ts';
import {
  controllerArgs,
  ADS,
  HASH_LABEL,
  KRUISE_POD_READY,
  PodWatch,
  adsManifest,
  adsPods,
  describeOnPrivateCluster,
  getAds,
  listRevisions,
  readLogLines,
  startProductProcess,
  terminating,
  waitRolledOut,
  type ManagedProcess,
} from '../lib/ads.ts';

const IN_PLACE_UPDATE_READY = 'InPlaceUpdateReady';
/** A hash as Kruise's ComputeHash spells it (rand.SafeEncodeString alphabet). */
const KRUISE_HASH = '6d8f9b5c7d';

const cond = (p: PodJson, type: string) => p.status?.conditions?.find((c) => c.type === type);

/** The template's only container: spec image vs the image its status reports. */
function images(p: PodJson): { spec?: string; running?: string } {
  return { spec: p.spec.containers[0]?.image, running: p.status?.containerStatuses?.[0]?.image };
}

describeOnPrivateCluster('taking over a DaemonSet from kruise-manager', { timeout: 420_000 }, (cluster) => {
  const f = fixture('takeover', 3);
  const name = 'kruise-made';
  let controller: ManagedProcess | undefined;
  let watch: PodWatch | undefined;
  let kruiseTemplate: JsonObject;
  let kruisePods: PodJson[] = [];
  const violations: string[] = [];

  before(async () => {
    // The DaemonSet as kruise-manager's webhook leaves it: SetDefaultsDaemonSet's fields, the template untouched.
    const manifest = adsManifest({
      name,
      namespace: f.ns,
      group: f.group,
      image: 'busybox:1.36',
      updateStrategy: {
        type: 'RollingUpdate',
        rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1, maxSurge: 0, partition: 0 },
      },
      revisionHistoryLimit: 10,
    });
    (manifest.spec as JsonObject).burstReplicas = 250;
    kruiseTemplate = structuredClone((manifest.spec as JsonObject).template as JsonObject);
    await apply(manifest, 'create');
    const ds = (await getAds(f.ns, name)) as unknown as DaemonSet;

    // Its revision, as snapshot() writes it: `<ds>-<hash>`, template labels + hash label, the DaemonSet's
    // annotations, a controller reference, and data = the Go-marshalled template with "$patch":"replace".
    const data = {
      spec: {
        template: {
          $patch: 'replace',
          metadata: { creationTimestamp: null, labels: { app: name } },
          spec: {
            containers: [{ image: 'busybox:1.36', name: 'c', resources: {} }],
            nodeSelector: { 'e2e-group': f.group },
            terminationGracePeriodSeconds: 1,
          },
        },
      },
    };
    await apply(
      {
        apiVersion: 'apps/v1',
        kind: 'ControllerRevision',
        metadata: {
          name: `${name}-${KRUISE_HASH}`,
          namespace: f.ns,
          labels: { app: name, [HASH_LABEL]: KRUISE_HASH },
          ownerReferences: [controllerRef(ds)],
        },
        data,
        revision: 1,
      },
      'create',
    );

    // Its pods, one per node, as kruise-manager creates them (newPod mirrors its NewPod: node affinity, daemon
    // tolerations, the KruisePodReady and InPlaceUpdateReady gates, the hash label), then made Ready as Kruise's
    // pod-readiness and in-place refresh leave them: both gate conditions True.
    for (const node of f.nodes) await apply(newPod(ds, node, KRUISE_HASH), 'create');
    kruisePods = await eventually('the Kruise-made pods to run', async () => {
      const pods = await adsPods(f.ns, name);
      return pods.length === f.nodes.length && pods.every((p) => p.status?.phase === 'Running') && pods;
    });
    const now = new Date().toISOString();
    for (const p of kruisePods) {
      await patchPod(
        f.ns,
        p.metadata.name,
        'strategic',
        {
          status: {
            conditions: [
              { type: KRUISE_POD_READY, status: 'True', lastTransitionTime: now },
              { type: IN_PLACE_UPDATE_READY, status: 'True', lastTransitionTime: now },
            ],
          },
        },
        ['--subresource=status'],
      );
    }
    kruisePods = await eventually('the Kruise-made pods to be Ready', async () => {
      const pods = await adsPods(f.ns, name);
      return pods.length === f.nodes.length && pods.every(podReady) && pods;
    });

    // From here on, at every pod state the apiserver goes through: no pod is deleted, and a pod with
    // InPlaceUpdateReady True after an in-place update runs the spec's image.
    watch = await PodWatch.start(f.ns, `app=${name}`, (_w, ev) => {
      const p = ev.pod;
      if (ev.type === 'DELETED' || terminating(p)) violations.push(`pod ${p.metadata.name} deleted`);
      const state = p.metadata.annotations?.['apps.kruise.io/inplace-update-state'];
      const im = images(p);
      if (state && cond(p, IN_PLACE_UPDATE_READY)?.status === 'True' && im.spec !== im.running) {
        violations.push(`pod ${p.metadata.name} InPlaceUpdateReady True while running ${im.running}, spec ${im.spec}`);
      }
    });

    controller = startProductProcess(
      'controller',
      controllerArgs(cluster.kubeconfig, 'takeover-e2e'),
      join(cluster.dir, 'controller.log'),
    );
  });

  after(async () => {
    watch?.stop();
    if (controller && controller.child.exitCode === null && controller.child.signalCode === null) {
      controller.child.kill('SIGTERM');
      await controller.exit;
    }
  });

  /** Sends a template as our webhook stores it: defaulted (the private cluster has no webhook). */
  async function setTemplate(template: JsonObject): Promise<void> {
    await eventually('the template change to be written', async () => {
      const cur = await kubectlJson<JsonObject>(['get', ADS, name, '-n', f.ns]);
      const next = structuredClone(cur);
      (next.spec as JsonObject).template = structuredClone(template);
      const stored = defaultDaemonSet(next, cur);
      const spec = (stored.spec as JsonObject).template as { spec: JsonObject };
      assert.equal(spec.spec.dnsPolicy, 'ClusterFirst', 'the template is sent defaulted, as our webhook stores it');
      try {
        await kubectl(['replace', '-f', '-'], JSON.stringify(stored));
        return true;
      } catch (err) {
        if (/conflict|modified/i.test(String(err))) return false; // a status write in between: again
        throw err;
      }
    });
  }

  const uids = (pods: PodJson[]) => pods.map((p) => p.metadata.uid).sort();

  test('our controller takes over: Kruise revision current, pods kept', async () => {
    await eventually('the controller to sync its caches', async () =>
      readLogLines(controller!.logFile).some((l) => l.msg === 'caches synced'),
    );
    const ds = await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
    assert.equal(ds.status?.daemonSetHash, KRUISE_HASH, "Kruise's revision is current");
    assert.deepEqual(
      (await listRevisions(f.ns, name)).map((r) => r.metadata.name),
      [`${name}-${KRUISE_HASH}`],
      'no revision of ours next to it',
    );
    assert.deepEqual(uids(await adsPods(f.ns, name)), uids(kruisePods), 'the Kruise-made pods were kept');
    assert.deepEqual(violations, []);
  });

  test('an image change (template defaulted by our webhook) updates every pod in place', async () => {
    const t = structuredClone(kruiseTemplate) as { spec: { containers: { image: string }[] } };
    t.spec.containers[0]!.image = 'busybox:1.37';
    await setTemplate(t as unknown as JsonObject);
    const rolled = await eventually(
      'the rollout to the new image',
      async () => {
        const ds = await getAds(f.ns, name);
        const pods = await adsPods(f.ns, name);
        const done =
          ds.status?.observedGeneration === ds.metadata.generation &&
          ds.status?.daemonSetHash !== KRUISE_HASH &&
          pods.length === f.nodes.length &&
          pods.every(
            (p) =>
              p.metadata.labels?.[HASH_LABEL] === ds.status?.daemonSetHash &&
              images(p).running === 'busybox:1.37' &&
              cond(p, IN_PLACE_UPDATE_READY)?.status === 'True' &&
              podReady(p),
          );
        return done && { ds, pods };
      },
      { timeoutMs: 120_000 },
    );
    assert.deepEqual(uids(rolled.pods), uids(kruisePods), 'every pod kept its UID (updated in place)');
    for (const p of rolled.pods) {
      assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 1, `${p.metadata.name} restarted once`);
    }
    assert.equal((await listRevisions(f.ns, name)).length, 2, "Kruise's revision and the new one");
    assert.deepEqual(violations, []);
  });

  test("a rollback to the Kruise-era template reuses Kruise's revision: no new ControllerRevision", async () => {
    const before = await listRevisions(f.ns, name);
    await setTemplate(kruiseTemplate);
    const rolled = await eventually(
      'the rollback',
      async () => {
        const ds = await getAds(f.ns, name);
        const pods = await adsPods(f.ns, name);
        const done =
          ds.status?.observedGeneration === ds.metadata.generation &&
          ds.status?.daemonSetHash === KRUISE_HASH &&
          pods.length === f.nodes.length &&
          pods.every(
            (p) =>
              p.metadata.labels?.[HASH_LABEL] === KRUISE_HASH &&
              images(p).running === 'busybox:1.36' &&
              cond(p, IN_PLACE_UPDATE_READY)?.status === 'True' &&
              podReady(p),
          );
        return done && { ds, pods };
      },
      { timeoutMs: 120_000 },
    );
    const after = await listRevisions(f.ns, name);
    assert.deepEqual(
      after.map((r) => r.metadata.uid).sort(),
      before.map((r) => r.metadata.uid).sort(),
      'the same ControllerRevisions, none created',
    );
    const kruiseRev = after.find((r) => r.metadata.name === `${name}-${KRUISE_HASH}`);
    assert.equal(kruiseRev?.revision, 3, "Kruise's revision renumbered max(old)+1, as upstream's rollback");
    assert.deepEqual(uids(rolled.pods), uids(kruisePods), 'rolled back in place, same pods');
    await sleep(1000);
    assert.deepEqual(violations, []);
  });
});
