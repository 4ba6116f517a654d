// Image pre-download by pull pods (docs/kruise-rules.md#image-pre-download): which nodes pull, how many at once,
// when pulls finish or are cancelled, and what a pull pod looks like.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod } from '../k8s/types.ts';
import type { DaemonSetSnapshot, Plan } from './plan-types.ts';
import { newImagePullPod, PULL_POD_COMMAND } from './predownload.ts';
import { addNodes, newDaemonSet, newPod, plan } from './test-fixtures.ts';

const NEW_IMAGE = 'foo/bar:v2';
const PARALLELISM = 'apps.kruise.io/image-predownload-parallelism';

function ds(rollingUpdate: Record<string, unknown> = { maxUnavailable: 1 }, annotations?: Record<string, string>) {
  return newDaemonSet({
    strategy: 'RollingUpdate',
    rollingUpdate,
    image: NEW_IMAGE,
    ...(annotations ? { annotations } : {}),
  });
}

/** Old pods (image foo/bar, hash "old") on every node, ready. */
const oldPods = (d: DaemonSet, nodes: Node[]) =>
  nodes.map((n) => newPod(d, n.metadata.name!, { hash: 'old', ready: true, name: `old-${n.metadata.name}` }));

const pre = (d: DaemonSet, nodes: Node[], pods: Pod[], extra: Partial<DaemonSetSnapshot> = {}): Plan =>
  plan(d, nodes, pods, { options: { imagePreDownload: 'pods' }, ...extra });

const hashOf = (d: DaemonSet) => plan(d, []).hash;

/** A pull pod of `d` on `node` for `hash`, with its container pulled or not. */
function pullPod(d: DaemonSet, node: string, hash: string, state: 'pulling' | 'pulled' | 'failed' = 'pulling'): Pod {
  const p = newImagePullPod(d, node, hash, [{ name: 'foo', image: NEW_IMAGE }]);
  p.metadata.name = `pull-${node}`;
  p.metadata.uid = `pull-${node}-uid`;
  p.status = {
    phase: state === 'failed' ? 'Failed' : 'Running',
    containerStatuses:
      state === 'pulled' ? [{ name: 'foo', image: NEW_IMAGE, imageID: 'sha256:1', ready: false, restartCount: 0 }] : [],
  };
  return p;
}

const createdOn = (p: Plan) => p.imagePreDownload?.creates.map((c) => c.nodeName) ?? [];
const deleted = (p: Plan) => p.imagePreDownload?.deletes.map((d) => `${d.podName}:${d.reason}`) ?? [];

describe('image pre-download: where and how many', () => {
  const nodes = addNodes(4);

  test('off unless enabled', () => {
    const d = ds();
    assert.equal(plan(d, nodes, oldPods(d, nodes)).imagePreDownload, undefined);
  });
  test('parallelism 1 (default): one node, the one the rollout reaches first (highest name)', () => {
    const d = ds();
    assert.deepEqual(createdOn(pre(d, nodes, oldPods(d, nodes))), ['node-3']);
  });
  test('parallelism 3: three nodes in rollout order', () => {
    const d = ds({ maxUnavailable: 1 }, { [PARALLELISM]: '3' });
    assert.deepEqual(createdOn(pre(d, nodes, oldPods(d, nodes))), ['node-3', 'node-2', 'node-1']);
  });
  test('parallelism not an integer: ignored (1)', () => {
    const d = ds({ maxUnavailable: 1 }, { [PARALLELISM]: 'lots' });
    assert.deepEqual(createdOn(pre(d, nodes, oldPods(d, nodes))), ['node-3']);
  });
  test('nodes kept by a partition still pull, after the nodes the rollout updates now', () => {
    const d = ds({ maxUnavailable: 1, partition: 3 }, { [PARALLELISM]: '2' });
    assert.deepEqual(createdOn(pre(d, nodes, oldPods(d, nodes))), ['node-3', 'node-2']);
  });
  test('with a selector, the selected nodes first', () => {
    const labelled = [...addNodes(2), ...addNodes(2, { canary: 'true' }, 2)].map((n, i) =>
      i === 0 ? { ...n, metadata: { ...n.metadata, labels: { canary: 'true' } } } : n,
    );
    const d = ds({ maxUnavailable: 1, selector: { matchLabels: { canary: 'true' } } }, { [PARALLELISM]: '3' });
    assert.deepEqual(createdOn(pre(d, labelled, oldPods(d, labelled))), ['node-3', 'node-2', 'node-0']);
  });
  test('a rollout that updates every node at once pulls nothing (partition 0, maxUnavailable 100%)', () => {
    const d = ds({ maxUnavailable: '100%' });
    assert.deepEqual(createdOn(pre(d, nodes, oldPods(d, nodes))), []);
  });
  test('OnDelete pulls too (Kruise dereferences the nil rollingUpdate there and fails the sync)', () => {
    const d = newDaemonSet({ image: NEW_IMAGE });
    assert.deepEqual(createdOn(pre(d, nodes, oldPods(d, nodes))), ['node-3']);
  });
  test('no image change (only env): nothing to pull', () => {
    const d = newDaemonSet({
      strategy: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1 },
      templateSpec: { containers: [{ name: 'foo', image: 'foo/bar', env: [{ name: 'A', value: 'b' }] }] },
    });
    assert.deepEqual(createdOn(pre(d, nodes, oldPods(d, nodes))), []);
  });
  test('nodes already on the new revision, and nodes marked pulled for this revision, are skipped', () => {
    const d = ds({ maxUnavailable: 1 }, { [PARALLELISM]: '4' });
    const h = hashOf(d);
    const pods = oldPods(d, nodes);
    pods[3] = newPod(d, 'node-3', { hash: h, ready: true });
    pods[2]!.metadata.annotations = { 'apps.kruise.io/image-predownloaded': h };
    assert.deepEqual(createdOn(pre(d, nodes, pods)), ['node-1', 'node-0']);
  });
});

describe('image pre-download: progress and cleanup', () => {
  const nodes = addNodes(3);

  test('a pull in progress holds the parallelism: nothing created or deleted', () => {
    const d = ds();
    const p = pre(d, nodes, oldPods(d, nodes), { imagePullPods: [pullPod(d, 'node-2', hashOf(d))] });
    assert.deepEqual([createdOn(p), deleted(p)], [[], []]);
  });
  test('a finished pull: pull pod deleted, node marked on its old pod, next node started', () => {
    const d = ds();
    const h = hashOf(d);
    const p = pre(d, nodes, oldPods(d, nodes), { imagePullPods: [pullPod(d, 'node-2', h, 'pulled')] });
    assert.deepEqual(deleted(p), ['pull-node-2:Pulled']);
    const mark = p.podPatches.find((x) => x.reason === 'ImagePreDownloaded');
    assert.deepEqual(mark, {
      podName: 'old-node-2',
      patchType: 'strategic',
      patch: { metadata: { annotations: { 'apps.kruise.io/image-predownloaded': h } } },
      reason: 'ImagePreDownloaded',
    });
    assert.deepEqual(createdOn(p), ['node-1']);
  });
  test('a failed pull: Warning FailedPreDownloadImage, deleted, not retried', () => {
    const d = ds();
    const p = pre(d, nodes, oldPods(d, nodes), { imagePullPods: [pullPod(d, 'node-2', hashOf(d), 'failed')] });
    assert.deepEqual(deleted(p), ['pull-node-2:PullFailed']);
    assert.ok(p.events.some((e) => e.type === 'Warning' && e.reason === 'FailedPreDownloadImage'));
    assert.ok(p.podPatches.some((x) => x.podName === 'old-node-2' && x.reason === 'ImagePreDownloaded'));
  });
  test('a pull for an older revision is cancelled', () => {
    const d = ds();
    const p = pre(d, nodes, oldPods(d, nodes), { imagePullPods: [pullPod(d, 'node-2', 'stale')] });
    assert.deepEqual(deleted(p), ['pull-node-2:Cancelled']);
    assert.deepEqual(createdOn(p), ['node-2']);
  });
  test('rollout complete: every pull pod cancelled, nothing created', () => {
    const d = ds({ maxUnavailable: 1 }, { [PARALLELISM]: '3' });
    const h = hashOf(d);
    const pods = nodes.map((n) => newPod(d, n.metadata.name!, { hash: h, ready: true }));
    const p = pre(d, nodes, pods, { imagePullPods: [pullPod(d, 'node-0', h), pullPod(d, 'node-1', h)] });
    assert.deepEqual(deleted(p).sort(), ['pull-node-0:Cancelled', 'pull-node-1:Cancelled']);
    assert.deepEqual(createdOn(p), []);
  });
});

describe('the pull pod', () => {
  test('pinned to its node, no-op command, pull timeout, pull secrets; owned but not controlled; no daemon labels', () => {
    const d = newDaemonSet({
      image: NEW_IMAGE,
      annotations: { 'apps.kruise.io/image-predownload-timeout-seconds': '60' },
      templateSpec: { imagePullSecrets: [{ name: 'registry' }] },
    });
    const p = newImagePullPod(d, 'node-7', 'h1', [{ name: 'foo', image: NEW_IMAGE, imagePullPolicy: 'Always' }]);
    assert.equal(p.spec.nodeName, 'node-7');
    assert.equal(p.spec.restartPolicy, 'Never');
    assert.equal(p.spec.activeDeadlineSeconds, 60);
    assert.deepEqual(p.spec.imagePullSecrets, [{ name: 'registry' }]);
    assert.deepEqual(p.spec.containers, [
      { name: 'foo', image: NEW_IMAGE, command: PULL_POD_COMMAND, imagePullPolicy: 'Always' },
    ]);
    assert.deepEqual(p.metadata.labels, {
      'apps.kruise.io/image-predownload-daemonset-uid': 'foo-uid',
      'apps.kruise.io/image-predownload-revision': 'h1',
    });
    assert.equal(p.metadata.ownerReferences?.[0]?.uid, 'foo-uid');
    assert.equal(p.metadata.ownerReferences?.[0]?.controller, false);
    assert.ok(
      p.spec.tolerations?.some((t) => t.key === 'node.kubernetes.io/unschedulable'),
      'daemon tolerations, so a cordoned or tainted node still pulls',
    );
  });
});

describe('ImagePullJob mode (--image-predownload imagepulljob)', () => {
  const nodes = addNodes(3);
  const v1 = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
  const oldRevision = plan(v1, []).revisions.create[0]!;
  const oldHash = plan(v1, []).hash;
  const v2 = ds({ maxUnavailable: 1 }, { [PARALLELISM]: '4' });
  v2.spec.template.spec.imagePullSecrets = [{ name: 'registry' }];
  const jobs = (d: DaemonSet, pods: Pod[], revisions = [oldRevision]) =>
    plan(d, nodes, pods, { revisions, options: { imagePreDownload: 'imagepulljob' } }).imagePullJobs;
  const olds = nodes.map((n) => newPod(v1, n.metadata.name!, { hash: oldHash, ready: true }));

  test('rollout in progress: one job per changed image, shaped as Kruise, selecting pods not on the new hash', () => {
    const p = jobs(v2, olds)!;
    const h = hashOf(v2);
    assert.equal(p.creates.length, 1);
    assert.deepEqual(p.revisionLabels, { 'apps.kruise.io/pre-predownload-created': 'true' });
    const job = p.creates[0] as { metadata: Pod['metadata']; spec: Record<string, unknown> };
    assert.equal(job.metadata.name, `foo-${h}-foo`, '<revisionName>-<containerName>');
    assert.equal(job.metadata.labels?.['controller-revision-hash'], h, 'the real hash (Kruise leaves it empty)');
    assert.deepEqual(job.spec, {
      image: NEW_IMAGE,
      pullSecrets: ['registry'],
      podSelector: {
        matchLabels: { name: 'simple-daemon', type: 'production' },
        matchExpressions: [{ key: 'controller-revision-hash', operator: 'NotIn', values: [h] }],
      },
      parallelism: 4,
      pullPolicy: { backoffLimit: 1, timeoutSeconds: 300 },
      completionPolicy: { type: 'Always', ttlSecondsAfterFinished: 600 },
      sandboxConfig: { labels: { name: 'simple-daemon', type: 'production' } },
    });
  });
  test('already created, or ignored, for this revision: nothing', () => {
    const current = plan(v2, [], [], { revisions: [oldRevision] }).revisions.create[0]!;
    for (const label of ['apps.kruise.io/pre-predownload-created', 'apps.kruise.io/image-predownload-ignored']) {
      const labelled = {
        ...current,
        metadata: { ...current.metadata, labels: { ...current.metadata.labels, [label]: 'true' } },
      };
      const p = jobs(v2, olds, [oldRevision, labelled])!;
      assert.deepEqual([p.creates.length, p.deleteAll, p.revisionLabels], [0, false, undefined], label);
    }
  });
  test('a rollout that updates every node at once: revision labelled ignored, no job', () => {
    const all = ds({ maxUnavailable: '100%' });
    const p = jobs(all, olds)!;
    assert.deepEqual([p.creates.length, p.revisionLabels], [0, { 'apps.kruise.io/image-predownload-ignored': 'true' }]);
  });
  test('rollout complete after jobs were created: delete them all, once', () => {
    const h = hashOf(v2);
    const current = plan(v2, [], [], { revisions: [oldRevision] }).revisions.create[0]!;
    const created = {
      ...current,
      metadata: {
        ...current.metadata,
        labels: { ...current.metadata.labels, 'apps.kruise.io/pre-predownload-created': 'true' },
      },
    };
    const news = nodes.map((n) => newPod(v2, n.metadata.name!, { hash: h, ready: true }));
    const p = jobs(v2, news, [oldRevision, created])!;
    assert.deepEqual([p.deleteAll, p.revisionLabels], [true, { 'apps.kruise.io/pre-predownload-created': 'cleaned' }]);
    const cleaned = {
      ...created,
      metadata: {
        ...created.metadata,
        labels: { ...created.metadata.labels, 'apps.kruise.io/pre-predownload-created': 'cleaned' },
      },
    };
    assert.equal(jobs(v2, news, [oldRevision, cleaned])!.deleteAll, false);
  });
});
