// Image pre-download, the Kruise mode (docs/kruise-rules.md#image-pre-download): with Kruise's ImagePullJob CRD in the
// cluster, `--image-predownload imagepulljob` creates ImagePullJob objects (kruise-daemon would act on them) instead of
// pull pods. Runs on a private cluster with a manager of its own started with that flag; the CRD is a schemaless
// stand-in for Kruise's (no kruise-daemon here: what is checked is what we write, and that we clean it up).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { HASH_LABEL, eventsFor, getAds, patchAds, describeOnPrivateCluster, type AdsJson } from '../lib/ads.ts';
import { apply, eventually, fixture, kubectl, kubectlJson } from '../lib/kube.ts';
import { startManager, type ManagerProcess } from '../lib/manager.ts';
import { rolledOutDaemonSet, waitLayout, layout, waitNewRevision } from './lib.ts';

const IMAGE_PULL_JOB_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'imagepulljobs.apps.kruise.io' },
  spec: {
    group: 'apps.kruise.io',
    names: { kind: 'ImagePullJob', listKind: 'ImagePullJobList', plural: 'imagepulljobs', singular: 'imagepulljob' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifest surgery
type Json = any;

/** Two containers: c (the image under test) and a sidecar whose image never changes. */
const containers = (image: string) => [
  { name: 'c', image },
  { name: 'sidecar', image: 'pause:3.10' },
];

interface ImagePullJobJson {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    ownerReferences?: { uid: string; controller?: boolean }[];
  };
  spec: {
    image: string;
    parallelism: number;
    podSelector: {
      matchLabels?: Record<string, string>;
      matchExpressions?: { key: string; operator: string; values: string[] }[];
    };
  };
}

describeOnPrivateCluster(
  'image pre-download with Kruise ImagePullJobs (--image-predownload imagepulljob)',
  { timeout: 300_000 },
  (cluster) => {
    const f = fixture('ipj', 4);
    let manager: ManagerProcess | undefined;
    const name = 'ipj';

    before(async () => {
      await apply(IMAGE_PULL_JOB_CRD);
      await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/imagepulljobs.apps.kruise.io']);
      manager = await startManager({
        kubeconfig: cluster.kubeconfig,
        dir: join(cluster.dir, 'manager'),
        args: ['--feature-gates', 'PreDownloadImageForDaemonSetUpdate=true', '--image-predownload', 'imagepulljob'],
      });
    });
    after(async () => {
      await manager?.stop();
    });

    const jobs = async () =>
      (await kubectlJson<{ items: ImagePullJobJson[] }>(['get', 'imagepulljobs.apps.kruise.io', '-n', f.ns])).items;
    const revisionLabels = async (revision: string) =>
      (
        await kubectlJson<{ metadata: { labels?: Record<string, string> } }>([
          'get',
          'controllerrevision',
          revision,
          '-n',
          f.ns,
        ])
      ).metadata.labels ?? {};

    test('a partitioned rollout gets one job per changed image, excluding updated pods by hash; the jobs go when it completes', async () => {
      const n = f.nodes;
      const { hash: v1 } = await rolledOutDaemonSet(f, name, {
        options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, partition: 2 } } },
        annotations: { 'apps.kruise.io/image-predownload-parallelism': '3' },
        mutate: (m) => ((m.spec as Json).template.spec.containers = containers('busybox:1.36')),
      });
      assert.deepEqual(await jobs(), [], 'no job for the first revision');

      // A merge patch replaces the whole list: both containers, only c's image changed.
      await patchAds(f.ns, name, { spec: { template: { spec: { containers: containers('busybox:1.37') } } } });
      const ds: AdsJson = await waitNewRevision(f.ns, name, v1);
      const v2 = ds.status!.daemonSetHash!;
      const revision = `${name}-${v2}`;
      // Partition 2 of 4: the two highest names are updated, the two lowest keep v1.
      await waitLayout(f.ns, name, layout(n.slice(0, 2), v1, layout(n.slice(2), v2)));

      const [job, ...more] = await eventually('the ImagePullJob of the changed image', async () => {
        const list = await jobs();
        return list.length > 0 && list;
      });
      assert.deepEqual(more, [], 'one job: only container c changed its image');
      assert.equal(job!.metadata.name, `${revision}-c`, 'named <revision>-<container>, as Kruise');
      assert.equal(job!.spec.image, 'busybox:1.37');
      assert.equal(job!.spec.parallelism, 3, 'parallelism from the annotation');
      assert.deepEqual(job!.spec.podSelector.matchLabels, { app: name });
      assert.deepEqual(
        job!.spec.podSelector.matchExpressions,
        [{ key: HASH_LABEL, operator: 'NotIn', values: [v2] }],
        'pods already on the new revision are excluded by the hash they carry (Kruise: by revision name, matching none)',
      );
      assert.equal(job!.metadata.labels?.[HASH_LABEL], v2);
      const uid = (await getAds(f.ns, name)).metadata.uid;
      assert.ok(
        job!.metadata.ownerReferences?.some((o) => o.uid === uid && o.controller),
        'owned by the DaemonSet',
      );
      assert.equal((await revisionLabels(revision))['apps.kruise.io/pre-predownload-created'], 'true');
      const events = await eventsFor(f.ns, name, uid);
      assert.ok(
        events.some(
          (e) =>
            e.reason === 'CreatedImagePullJob' &&
            e.message === `created ImagePullJob ${revision}-c for image: busybox:1.37`,
        ),
        'CreatedImagePullJob event',
      );

      // Completing the rollout deletes the DaemonSet's jobs and marks the revision.
      await patchAds(f.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 0 } } } });
      await waitLayout(f.ns, name, layout(n, v2));
      await eventually(
        'the jobs deleted once every node runs the new revision',
        async () => (await jobs()).length === 0,
      );
      await eventually(
        'the revision marked cleaned',
        async () => (await revisionLabels(revision))['apps.kruise.io/pre-predownload-created'] === 'cleaned',
      );
    });
  },
);
