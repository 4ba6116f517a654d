// apps.kruise.io/v1beta1 next to v1alpha1 on the real control plane (docs/api.md: API versions and conversion).
//
// On the shared cluster, whose manager registered the conversion webhook by URL (e2e/run.ts): an object created in
// v1alpha1 reads in v1beta1, and updated in v1beta1 reads back in v1alpha1, every field compared leaf by leaf with
// only the documented renames allowed; Kruise 1.9's v1beta1 validation comes back as 422 with field paths;
// `scaleStrategy.partitionedScaling: true` creates pods as the progressive-create annotation does, side by side; the
// controller rolls an image out the same way whichever version wrote the object.
//
// On a private cluster, the upgrade: the CRD of before (v1alpha1 only, stored so) holds objects written with no
// webhook at all, so verbatim (a `Surging` one among them, which our defaulting would have rewritten); the new CRD
// and a manager arrive; the leader's storage migration rewrites them in v1beta1 and sets status.storedVersions to
// [v1beta1]; they read in both versions and survive round trips; then the manager stops and what a client sees
// without the conversion webhook is recorded: reads in the storage version work; in the other version a single
// object is refused at once with the apiserver's error, a list is answered from its watch cache until an object
// changes, then refused the same way.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { crdObject } from '../../src/api/crd.ts';
import { ApiError } from '../../src/k8s/errors.ts';
import { KubeClient } from '../../src/k8s/client.ts';
import { resources } from '../../src/k8s/resources.ts';
import { loadKubeConfig } from '../../src/k8s/kubeconfig.ts';
import { getCrd, installCrd, waitConversionWebhook, waitEstablished } from '../cluster/crd.ts';
import {
  ADS,
  ADS_V1BETA1,
  adsManifest,
  describeOnPrivateCluster,
  getAds,
  imagePatch,
  PodWatch,
  terminating,
  patchAds,
  readLogLines,
  startProductProcess,
  waitRolledOut,
  type AdsJson,
  type ManagedProcess,
} from '../lib/ads.ts';
import {
  apply,
  createNamespace,
  deleteNamespace,
  eventually,
  fixture,
  kubeconfig,
  kubectl,
  kubectlJson,
  KubectlError,
  podReady,
  uniqueName,
  type Fixture,
} from '../lib/kube.ts';
import { managerArgs } from '../lib/manager.ts';
import { assertUnchanged, layout, waitLayout } from '../strategies/lib.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PROGRESSIVE = 'daemonset.kruise.io/progressive-create-pod';
const STASH_PREFIX = 'conversion.advanced-daemonset.io/';
const RU = 'spec.updateStrategy.rollingUpdate';

/** Every JSON leaf of `x` by path (`a.b[0].c`); empty objects and arrays are leaves too. */
function leaves(x: unknown, path = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (Array.isArray(x)) {
    if (x.length === 0) out.set(path, []);
    x.forEach((v, i) => leaves(v, `${path}[${i}]`, out));
  } else if (x && typeof x === 'object') {
    const entries = Object.entries(x);
    if (entries.length === 0) out.set(path, {});
    for (const [k, v] of entries) leaves(v, path ? `${path}.${k.includes('.') ? `[${k}]` : k}` : k, out);
  } else out.set(path, x);
  return out;
}

/**
 * Where the v1alpha1 and v1beta1 views of one object (one resourceVersion) differ, beyond what the versions rename:
 * apiVersion, status.daemonSetHash = status.updateRevision, the progressive-create annotation "true" =
 * scaleStrategy.partitionedScaling true, Surging = Standard, and the conversion stash annotations (each view may
 * carry what the other version alone can say). Every other leaf must be equal.
 */
function versionDiff(alpha: Json, beta: Json): string[] {
  const a = leaves(alpha);
  const b = leaves(beta);
  const problems: string[] = [];
  const take = (m: Map<string, unknown>, path: string) => {
    const v = m.get(path);
    m.delete(path);
    return v;
  };
  if (take(a, 'apiVersion') !== 'apps.kruise.io/v1alpha1') problems.push('v1alpha1 view: apiVersion');
  if (take(b, 'apiVersion') !== 'apps.kruise.io/v1beta1') problems.push('v1beta1 view: apiVersion');
  const hash = take(a, 'status.daemonSetHash');
  const revision = take(b, 'status.updateRevision');
  if ((hash || undefined) !== revision) problems.push(`daemonSetHash ${String(hash)} vs updateRevision ${String(revision)}`);
  const annotation = take(a, `metadata.annotations.[${PROGRESSIVE}]`);
  const scaling = take(b, 'spec.scaleStrategy.partitionedScaling');
  take(b, 'spec.scaleStrategy'); // an empty scaleStrategy: {}
  if ((annotation === 'true') !== (scaling === true)) {
    problems.push(`progressive-create annotation ${String(annotation)} vs partitionedScaling ${String(scaling)}`);
  }
  const type = `${RU}.rollingUpdateType`;
  const [ta, tb] = [take(a, type), take(b, type)];
  if (ta !== tb && !(ta === 'Surging' && tb === 'Standard')) problems.push(`rollingUpdateType ${String(ta)} vs ${String(tb)}`);
  for (const m of [a, b]) for (const k of [...m.keys()]) if (k.startsWith(`metadata.annotations.[${STASH_PREFIX}`)) m.delete(k);
  // An annotations map that held only what was taken out above.
  for (const m of [a, b]) if (m.get('metadata.annotations') !== undefined) m.delete('metadata.annotations');
  for (const [k, v] of a) if (JSON.stringify(b.get(k)) !== JSON.stringify(v)) problems.push(`${k}: ${JSON.stringify(v)} vs ${JSON.stringify(b.get(k))}`);
  for (const k of b.keys()) if (!a.has(k)) problems.push(`${k}: only in v1beta1 (${JSON.stringify(b.get(k))})`);
  return problems;
} // prettier-ignore

/** The two views of `name` at one resourceVersion (read again while a write lands between the reads). */
async function bothViews(ns: string, name: string): Promise<{ alpha: Json; beta: Json }> {
  return eventually(`${name} read in both versions at one resourceVersion`, async () => {
    const alpha = await kubectlJson<Json>(['get', ADS, name, '-n', ns]);
    const beta = await kubectlJson<Json>(['get', ADS_V1BETA1, name, '-n', ns]);
    return alpha.metadata.resourceVersion === beta.metadata.resourceVersion && { alpha, beta };
  });
}

/** A v1beta1 manifest: adsManifest's with the apiVersion changed. */
function v1beta1Manifest(m: Record<string, unknown>): Json {
  return { ...m, apiVersion: 'apps.kruise.io/v1beta1' };
}

function client(): KubeClient {
  return KubeClient.fromKubeConfig(loadKubeConfig(kubeconfig()));
}

describe('v1alpha1 and v1beta1: one object, two views', { timeout: 240_000 }, () => {
  let ns: string;
  let group: string;
  before(async () => {
    ns = await createNamespace('e2e-v1beta1');
    group = uniqueName('no-such-nodes');
  });
  after(() => deleteNamespace(ns));

  test('created in v1alpha1, read in v1beta1; updated in v1beta1, read back in v1alpha1: every field', async () => {
    const name = 'two-views';
    const m = adsManifest({
      name,
      namespace: ns,
      group,
      image: 'busybox:1.36',
      minReadySeconds: 5,
      revisionHistoryLimit: 3,
      updateStrategy: {
        type: 'RollingUpdate',
        rollingUpdate: {
          rollingUpdateType: 'Standard',
          maxUnavailable: '25%',
          partition: '30%',
          selector: { matchLabels: { canary: 'true' } },
          paused: false,
        },
      },
    }) as Json;
    m.metadata.labels = { team: 'a' };
    m.metadata.annotations = { 'example.com/note': 'kept', [PROGRESSIVE]: 'true' };
    m.spec.burstReplicas = '10%';
    m.spec.lifecycle = { preDelete: { labelsHandler: { 'example.com/drain': 'true' } } };
    await apply(m);
    // The controller's status write (no node matches: desired 0) lands first, so both views hold a status.
    await eventually('status observed', async () => (await getAds(ns, name)).status?.observedGeneration === 1);

    const first = await bothViews(ns, name);
    assert.deepEqual(versionDiff(first.alpha, first.beta), []);
    assert.deepEqual(first.beta.spec.scaleStrategy, { partitionedScaling: true });
    assert.equal(first.beta.metadata.annotations?.[PROGRESSIVE], undefined, 'v1beta1 says it once, as the field');
    assert.equal(first.beta.spec.updateStrategy.rollingUpdate.partition, '30%');
    assert.match(first.beta.status.updateRevision, /^[a-z0-9]+$/);

    // Updated through v1beta1: a merge patch of the v1beta1 object.
    const patch = {
      metadata: { annotations: { 'example.com/note': 'changed in v1beta1' } },
      spec: {
        scaleStrategy: { partitionedScaling: false },
        updateStrategy: { rollingUpdate: { partition: '50%', paused: true, maxUnavailable: 2 } },
        template: { spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] } },
      },
    };
    await patchAds(ns, name, patch, ADS_V1BETA1);
    await eventually(
      'the new generation observed',
      async () => (await getAds(ns, name)).status?.observedGeneration === 2,
    );
    const second = await bothViews(ns, name);
    assert.deepEqual(versionDiff(second.alpha, second.beta), []);
    const a = second.alpha;
    assert.equal(a.metadata.annotations['example.com/note'], 'changed in v1beta1');
    assert.equal(a.metadata.annotations[PROGRESSIVE], undefined, 'partitionedScaling false: no annotation in v1alpha1');
    assert.deepEqual(a.spec.updateStrategy, {
      type: 'RollingUpdate',
      rollingUpdate: {
        ...first.alpha.spec.updateStrategy.rollingUpdate,
        maxUnavailable: 2,
        partition: '50%',
        paused: true,
      },
    });
    assert.equal(a.spec.updateStrategy.rollingUpdate.rollingUpdateType, 'Standard');
    assert.deepEqual(a.spec.updateStrategy.rollingUpdate.selector, { matchLabels: { canary: 'true' } });
    assert.equal(a.spec.template.spec.containers[0].image, 'busybox:1.37');
    assert.equal(a.spec.burstReplicas, '10%');
    assert.deepEqual(a.spec.lifecycle, { preDelete: { labelsHandler: { 'example.com/drain': 'true' } } });
    assert.notEqual(a.status.daemonSetHash, first.alpha.status.daemonSetHash, 'a new revision for the new template');
  });

  test('what v1alpha1-only tools (kubectl-kruise 1.2) rely on: discovery prefers v1beta1; the fully qualified resource reads v1alpha1', async () => {
    // Discovery's preferred version is what a tool that names no version gets: v1beta1, which kubectl-kruise's
    // scheme does not know ("no kind DaemonSet is registered for version apps.kruise.io/v1beta1").
    const group = JSON.parse(await kubectl(['get', '--raw', '/apis/apps.kruise.io']));
    assert.equal(group.preferredVersion.groupVersion, 'apps.kruise.io/v1beta1');
    assert.deepEqual(group.versions.map((v: { version: string }) => v.version).sort(), ['v1alpha1', 'v1beta1']);
    // Naming the version in the resource (daemonsets.v1alpha1.apps.kruise.io/NAME, as README says for such tools)
    // reads and writes v1alpha1, the stored v1beta1 object converted.
    const got = await kubectl(['get', `daemonsets.v1alpha1.apps.kruise.io/two-views`, '-n', ns, '-o', 'jsonpath={.apiVersion} {.spec.updateStrategy.rollingUpdate.rollingUpdateType}']); // prettier-ignore
    assert.equal(got, 'apps.kruise.io/v1alpha1 Standard');
    await kubectl(['annotate', 'daemonsets.v1alpha1.apps.kruise.io/two-views', '-n', ns, 'example.com/touched=yes']);
    const back = await kubectl(['get', 'daemonsets.v1beta1.apps.kruise.io/two-views', '-n', ns, '-o', 'jsonpath={.metadata.annotations.example\\.com/touched}']); // prettier-ignore
    assert.equal(back, 'yes');
  });

  test("Kruise 1.9's v1beta1 validation: 422 Invalid with the field path (a wrong JSON type: 400 naming it)", async () => {
    const base = () => v1beta1Manifest(adsManifest({ name: 'x', namespace: ns, group })) as Json;
    const ru = (v: Json) => (s: Json) => (s.updateStrategy = { type: 'RollingUpdate', rollingUpdate: v });
    const cases: { name: string; edit: (s: Json) => void; field: string; want: string; code?: [number, string] }[] = [
      { name: 'surging', edit: ru({ rollingUpdateType: 'Surging', maxSurge: 1, maxUnavailable: 0 }), field: `${RU}.rollingUpdateType`, want: `${RU}.rollingUpdateType: Unsupported value: "Surging": supported values: "Standard", "InPlaceIfPossible"` },
      { name: 'inplace-surge', edit: ru({ rollingUpdateType: 'InPlaceIfPossible', maxSurge: 1, maxUnavailable: 0 }), field: `${RU}.maxSurge`, want: `${RU}.maxSurge: Invalid value: "1": must be 0 for InPlaceIfPossible type` },
      { name: 'both-set', edit: ru({ maxSurge: 1, maxUnavailable: 1 }), field: `${RU}.maxSurge`, want: `${RU}.maxSurge: Invalid value: "1": may not be set when maxUnavailable is non-zero` },
      { name: 'both-zero', edit: ru({ maxSurge: 0, maxUnavailable: 0 }), field: `${RU}.maxUnavailable`, want: `${RU}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0` },
      { name: 'selector-mismatch', edit: (s) => (s.selector.matchLabels = { app: 'other' }), field: 'spec.template.metadata.labels', want: '`selector` does not match template `labels`' },
      { name: 'deadline', edit: (s) => (s.template.spec.activeDeadlineSeconds = 30), field: 'spec.template.spec.activeDeadlineSeconds', want: 'activeDeadlineSeconds in DaemonSet is not Supported' },
      { name: 'scaling-not-bool', edit: (s) => (s.scaleStrategy = { partitionedScaling: 'yes' }), field: 'spec.scaleStrategy.partitionedScaling', want: 'spec.scaleStrategy.partitionedScaling', code: [400, 'BadRequest'] },
    ]; // prettier-ignore
    const c = client();
    try {
      const failures: string[] = [];
      for (const k of cases) {
        const obj = base();
        obj.metadata.name = `invalid-${k.name}`;
        k.edit(obj.spec);
        try {
          await c.create(resources.daemonSetsV1beta1, obj as never, { namespace: ns });
          failures.push(`${k.name}: accepted`);
          continue;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          const causes = (err.status?.details?.causes ?? []) as { field?: string }[];
          const [code, reason] = k.code ?? [422, 'Invalid'];
          if (err.code !== code || err.reason !== reason) failures.push(`${k.name}: ${err.code} ${err.reason}`);
          if (!err.status?.message?.includes(k.want)) failures.push(`${k.name}: message ${err.status?.message}`);
          if (!causes.some((cause) => cause.field === k.field))
            failures.push(`${k.name}: causes ${JSON.stringify(causes)}`);
        }
      }
      assert.deepEqual(failures, []);
    } finally {
      c.close();
    }
  });
});

describe(
  'scaleStrategy.partitionedScaling: true creates pods as the progressive-create annotation does',
  { timeout: 300_000 },
  () => {
    const alpha = fixture('v1a-progressive', 4);
    const beta = fixture('v1b-progressive', 4);
    const name = 'progressive';
    const strategy = { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, partition: '50%' } };

    test('partition 50% of 4: pods on the 2 lowest nodes only, in both; partition 1 then 0 adds the rest, in both', async () => {
      const a = adsManifest({ name, namespace: alpha.ns, group: alpha.group, updateStrategy: strategy }) as Json;
      a.metadata.annotations = { [PROGRESSIVE]: 'true' };
      const b = v1beta1Manifest(adsManifest({ name, namespace: beta.ns, group: beta.group, updateStrategy: strategy }));
      b.spec.scaleStrategy = { partitionedScaling: true };
      await Promise.all([apply(a), apply(b)]);
      const hash = async (f: Fixture) =>
        eventually(`${f.ns} observed`, async () => {
          const ds = await getAds(f.ns, name);
          return ds.status?.observedGeneration === ds.metadata.generation && ds.status?.daemonSetHash;
        });
      const [ha, hb] = [await hash(alpha), await hash(beta)];
      const step = async (keep: number, why: string) => {
        const [pa, pb] = await Promise.all([
          waitLayout(alpha.ns, name, layout(alpha.nodes.slice(0, 4 - keep), ha)),
          waitLayout(beta.ns, name, layout(beta.nodes.slice(0, 4 - keep), hb)),
        ]);
        await Promise.all([
          assertUnchanged(alpha.ns, name, pa, `annotation, ${why}`),
          assertUnchanged(beta.ns, name, pb, `partitionedScaling, ${why}`),
        ]);
        const [sa, sb] = [(await getAds(alpha.ns, name)).status, (await getAds(beta.ns, name)).status];
        assert.deepEqual(
          [sb?.desiredNumberScheduled, sb?.currentNumberScheduled],
          [sa?.desiredNumberScheduled, sa?.currentNumberScheduled],
          why,
        );
        assert.deepEqual([sa?.desiredNumberScheduled, sa?.currentNumberScheduled], [4, 4 - keep], why);
      };
      await step(2, 'partition 50%');
      await patchAds(alpha.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 1 } } } });
      await patchAds(beta.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 1 } } } }, ADS_V1BETA1);
      await step(1, 'partition 1');
      await patchAds(alpha.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 0 } } } });
      await patchAds(beta.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 0 } } } }, ADS_V1BETA1);
      await step(0, 'partition 0');
    });
  },
);

describe('the controller rolls out the same way whichever version wrote the object', { timeout: 300_000 }, () => {
  const alpha = fixture('v1a-rollout', 4);
  const beta = fixture('v1b-rollout', 4);
  const name = 'rollout';
  const strategy = { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, partition: 1 } };

  test('an image change with partition 1: the 3 highest nodes updated, never 2 nodes without a Ready pod, in both', async () => {
    const a = adsManifest({ name, namespace: alpha.ns, group: alpha.group, updateStrategy: strategy });
    const b = v1beta1Manifest(adsManifest({ name, namespace: beta.ns, group: beta.group, updateStrategy: strategy }));
    await Promise.all([apply(a), apply(b)]);
    const [da, db] = await Promise.all([
      waitRolledOut(alpha.ns, name, 4, 120_000),
      waitRolledOut(beta.ns, name, 4, 120_000, ADS_V1BETA1),
    ]);
    const v1 = { a: da.status!.daemonSetHash!, b: (db.status as Json).updateRevision as string };
    const watches = [await unavailableWatch(alpha, name), await unavailableWatch(beta, name)];
    try {
      // Each updated through the version that wrote it.
      await patchAds(alpha.ns, name, imagePatch('busybox:1.37'));
      await patchAds(beta.ns, name, imagePatch('busybox:1.37'), ADS_V1BETA1);
      const v2 = {
        a: await newRevision(alpha.ns, name, v1.a, ADS),
        b: await newRevision(beta.ns, name, v1.b, ADS_V1BETA1),
      };
      await Promise.all([
        waitLayout(alpha.ns, name, layout(alpha.nodes.slice(1), v2.a, layout(alpha.nodes.slice(0, 1), v1.a)), 180_000),
        waitLayout(beta.ns, name, layout(beta.nodes.slice(1), v2.b, layout(beta.nodes.slice(0, 1), v1.b)), 180_000),
      ]);
      const [sa, sb] = [(await getAds(alpha.ns, name)).status!, (await getAds(beta.ns, name, ADS_V1BETA1)).status!];
      for (const k of ['desiredNumberScheduled', 'updatedNumberScheduled', 'numberAvailable'] as const) {
        assert.equal(sb[k], sa[k], k);
      }
      assert.equal(sa.updatedNumberScheduled, 3);
      for (const w of watches) {
        w.watch.assertAlive();
        assert.ok(w.worst() <= 1, `${w.ns}: at most maxUnavailable (1) node without a Ready pod; saw ${w.worst()}`);
      }
    } finally {
      for (const w of watches) w.watch.stop();
    }
  });
});

async function newRevision(ns: string, name: string, old: string, resource: string): Promise<string> {
  return eventually(`${name} in ${ns} on a new revision`, async () => {
    const ds = (await getAds(ns, name, resource)) as AdsJson & { status?: Json };
    const hash = (ds.status?.daemonSetHash ?? ds.status?.updateRevision) as string | undefined;
    return ds.status?.observedGeneration === ds.metadata.generation && !!hash && hash !== old && hash;
  });
}

/** A pod watch counting, at every event, the fixture's nodes without a Ready pod; `worst` is the most seen. */
async function unavailableWatch(f: Fixture, name: string) {
  let worst = 0;
  const count = (w: PodWatch) => {
    const ready = new Set(
      w
        .list()
        .filter((p) => !terminating(p) && podReady(p))
        .map((p) => p.spec.nodeName),
    );
    worst = Math.max(worst, f.nodes.filter((n) => !ready.has(n)).length);
  };
  const watch = await PodWatch.start(f.ns, `app=${name}`, (w) => count(w));
  count(watch);
  return { ns: f.ns, watch, worst: () => worst };
}

// ------------------------------------------------------------------------------------------------
// The upgrade, on a cluster of its own

describeOnPrivateCluster(
  'upgrade: objects stored in v1alpha1, the storage migration, the conversion webhook unreachable',
  { timeout: 420_000, crd: false },
  (cluster) => {
    const ns = 'upgrade';
    let manager: ManagedProcess | undefined;
    const lease = 'v1beta1-upgrade';
    const startManager = async (n: number) => {
      const p = startProductProcess(
        `manager-${n}`,
        [
          ...managerArgs(cluster.kubeconfig, join(cluster.dir, 'certs')),
          // Stopped, its registration stays (as after a crash): the conversion webhook is then unreachable.
          '--webhook-keep-registration=true',
          '--leader-election-id',
          lease,
          '--log-level',
          'debug',
        ],
        join(cluster.dir, `manager-${n}.log`),
      );
      const serving = await eventually(`manager ${n} serving its webhook`, async () => {
        if (p.child.exitCode !== null) throw new Error(`manager ${n} exited ${p.child.exitCode}`);
        return readLogLines(p.logFile).find((l) => l.msg === 'webhook serving');
      });
      await waitConversionWebhook(cluster.kubeconfig, `https://127.0.0.1:${serving.webhookPort as number}/convert`);
      return p;
    };
    const stop = async (p: ManagedProcess) => {
      p.child.kill('SIGTERM');
      assert.deepEqual(await p.exit, { code: 0, signal: null });
    };

    before(async () => {
      // The CRD of before v1beta1: v1alpha1 alone, stored so, no conversion.
      const old = crdObject({ storageVersion: 'v1alpha1' }) as Json;
      old.spec.versions = old.spec.versions.filter((v: Json) => v.name === 'v1alpha1');
      await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(old));
      await waitEstablished(cluster.kubeconfig);
      await kubectl(['create', 'namespace', ns]);
      // Written with no webhook registered: stored verbatim (our defaulting would have made Surging Standard).
      const surging = adsManifest({
        name: 'surging',
        namespace: ns,
        group: 'none',
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { rollingUpdateType: 'Surging', maxSurge: 1, maxUnavailable: 0, partition: '30%' },
        },
      }) as Json;
      const progressive = adsManifest({ name: 'progressive', namespace: ns, group: 'none' }) as Json;
      progressive.metadata.annotations = { [PROGRESSIVE]: 'true' };
      for (const m of [surging, progressive, adsManifest({ name: 'plain', namespace: ns, group: 'none' })]) {
        await apply(m, 'create');
      }
      // As kruise-manager left its status.
      await kubectl(['patch', ADS, 'surging', '-n', ns, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { daemonSetHash: 'kruise-hash', observedGeneration: 1, currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0, updatedNumberScheduled: 0 } })]); // prettier-ignore
    });

    after(async () => {
      if (manager && manager.child.exitCode === null) manager.child.kill('SIGKILL');
    });

    test('a manager and the new CRD: the leader rewrites every object in v1beta1 and sets storedVersions [v1beta1]', async () => {
      // As `helm upgrade` brings them: the CRD never converts without the webhook (here the manager registers its
      // URL on the old CRD first, and applying the new one keeps it; the chart's CRD names the Service). With
      // strategy None any write meanwhile, a status update, would store the v1alpha1 object merely relabelled.
      manager = await startManager(1);
      await installCrd(cluster.kubeconfig);
      assert.deepEqual((await getCrd(cluster.kubeconfig)).status?.storedVersions, ['v1alpha1', 'v1beta1']);
      // The leader looked at the CRD before the new one came (nothing to do then) and looks again every minute.
      await eventually(
        'storedVersions [v1beta1]',
        async () => JSON.stringify((await getCrd(cluster.kubeconfig)).status?.storedVersions) === '["v1beta1"]',
        { timeoutMs: 150_000 },
      );
      const logged = readLogLines(manager.logFile).filter((l) => String(l.msg).startsWith('storage migration'));
      const done = logged.find((l) => l.msg === 'storage migration done');
      assert.ok(
        logged.some((l) => l.msg === 'storage migration started' && l.total === 3),
        JSON.stringify(logged),
      );
      assert.equal(done?.rewritten, 3);
      assert.deepEqual(done?.previousStoredVersions, ['v1alpha1', 'v1beta1']);

      // Readable in both versions; the v1alpha1 view is what was written, Surging included, plus the one default
      // the migration's rewrite (an update, through the mutating webhook) adds: unhealthyNodes, a field newer than
      // the object.
      const s = await bothViews(ns, 'surging');
      assert.deepEqual(versionDiff(s.alpha, s.beta), []);
      assert.deepEqual(s.alpha.spec.updateStrategy.rollingUpdate, {
        rollingUpdateType: 'Surging',
        maxSurge: 1,
        maxUnavailable: 0,
        partition: '30%',
        unhealthyNodes: 'Count',
      });
      assert.equal(s.beta.spec.updateStrategy.rollingUpdate.rollingUpdateType, 'Standard');
      assert.equal(s.beta.spec.updateStrategy.rollingUpdate.partition, '30%');
      const p = await bothViews(ns, 'progressive');
      assert.deepEqual(versionDiff(p.alpha, p.beta), []);
      assert.deepEqual(p.beta.spec.scaleStrategy, { partitionedScaling: true });
      const plain = await bothViews(ns, 'plain');
      assert.deepEqual(versionDiff(plain.alpha, plain.beta), []);

      // A round trip through v1beta1 (a label added there) keeps Surging and the percent partition.
      await patchAds(ns, 'surging', { metadata: { labels: { 'round-trip': '1' } } }, ADS_V1BETA1);
      const again = await bothViews(ns, 'surging');
      assert.equal(again.alpha.metadata.labels['round-trip'], '1');
      assert.deepEqual(again.alpha.spec.updateStrategy, s.alpha.spec.updateStrategy);

      // A second leadership finds nothing to do.
      await stop(manager);
      manager = await startManager(2);
      await eventually('the second leader skips the migration', async () =>
        readLogLines(manager!.logFile).some((l) => l.msg === 'storage migration not needed'),
      );
    });

    test('with the conversion webhook unreachable: the storage version reads; the other fails, lists once the cache is stale', async () => {
      assert.ok(manager, 'the manager of the previous test');
      // Read in v1alpha1 once more while the webhook answers: the apiserver's watch cache of v1alpha1 holds them.
      const cached = await kubectlJson<{ items: Json[] }>(['get', ADS, '-n', ns]);
      await stop(manager);
      manager = undefined;
      const refusal = async (args: string[]) => {
        try {
          return `succeeded: ${(await kubectl(args)).slice(0, 200)}`;
        } catch (err) {
          if (!(err instanceof KubectlError)) throw err;
          return err.stderr.trim();
        }
      };
      const CONVERSION_FAILED =
        /^Error from server: conversion webhook for apps\.kruise\.io\/v1beta1, Kind=DaemonSet failed: Post "https:\/\/127\.0\.0\.1:\d+\/convert\?timeout=\d+s": dial tcp 127\.0\.0\.1:\d+: connect: connection refused$/;
      const seen: Record<string, string> = {};

      // Stored in v1beta1 (the migration): served as stored, no webhook needed.
      const beta = await kubectlJson<{ items: Json[] }>(['get', ADS_V1BETA1, '-n', ns]);
      assert.equal(beta.items.length, 3);
      // A single object in v1alpha1: read from etcd, converted now, refused.
      seen.get = await refusal(['get', ADS, 'surging', '-n', ns, '-o', 'json']);
      assert.match(seen.get, CONVERSION_FAILED);
      // A list in v1alpha1 comes from the watch cache, converted while the webhook answered: the same objects.
      const list = await kubectlJson<{ items: Json[] }>(['get', ADS, '-n', ns]);
      assert.deepEqual(list.items, cached.items, 'the cached v1alpha1 list');
      // Until one of them changes (a status write, which our admission webhooks do not see): then lists fail too.
      await kubectl(['patch', ADS_V1BETA1, 'plain', '-n', ns, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { collisionCount: 1 } })]); // prettier-ignore
      seen.list = await eventually('a v1alpha1 list refused', async () => {
        const text = await refusal(['get', ADS, '-n', ns, '-o', 'json']);
        return CONVERSION_FAILED.test(text) && text;
      });
      assert.equal((await kubectlJson<{ items: Json[] }>(['get', ADS_V1BETA1, '-n', ns])).items.length, 3);
      // What kubectl prints (kept in the test output for the README).
      process.stderr.write(`conversion webhook unreachable:\n${JSON.stringify(seen, null, 2)}\n`);

      // Back: a new manager registers its URL and both versions read again.
      manager = await startManager(3);
      const s = await bothViews(ns, 'surging');
      assert.deepEqual(versionDiff(s.alpha, s.beta), []);
      assert.equal((await kubectlJson<{ items: Json[] }>(['get', ADS, '-n', ns])).items.length, 3);
      await stop(manager);
      manager = undefined;
    });
  },
);
