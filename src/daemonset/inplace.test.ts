// InPlaceIfPossible, after the in-place cases of Kruise's e2e test
// (https://github.com/openkruise/kruise/blob/master/test/e2e/apps/v1alpha1/daemonset.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setDefaultsPodTemplate } from '../api/defaults.ts';
import type { DaemonSet } from '../api/types.ts';
import type { ContainerStatus, ControllerRevision, Pod, PodCondition, PodTemplateSpec } from '../k8s/types.ts';
import {
  canPodInPlaceUpdate,
  inPlaceRefreshPatch,
  inPlaceSpec,
  inPlaceUpdateCompleted,
  planInPlaceUpdate,
  type InPlaceUpdateState,
} from './inplace.ts';
import { FakeCluster, addNodes, expectSyncDaemonSets, newDaemonSet } from './test-fixtures.ts';

const tpl = (
  image: string,
  extra: Record<string, unknown> = {},
  labels: Record<string, string> = { a: '1' },
): PodTemplateSpec => ({
  metadata: { labels },
  spec: { containers: [{ name: 'c', image, ...extra }] },
});

describe('inPlaceSpec (CanUpdateInPlace)', () => {
  const rows: { name: string; from: PodTemplateSpec; to: PodTemplateSpec; ok: boolean }[] = [
    { name: 'image only', from: tpl('v1'), to: tpl('v2'), ok: true },
    { name: 'labels only', from: tpl('v1'), to: tpl('v1', {}, { a: '2', b: '3' }), ok: true },
    { name: 'env change', from: tpl('v1'), to: tpl('v2', { env: [{ name: 'X', value: '1' }] }), ok: false },
    { name: 'resources change', from: tpl('v1'), to: tpl('v1', { resources: { limits: { cpu: '1' } } }), ok: false },
    {
      name: 'container added',
      from: tpl('v1'),
      to: {
        metadata: { labels: { a: '1' } },
        spec: {
          containers: [
            { name: 'c', image: 'v1' },
            { name: 'd', image: 'x' },
          ],
        },
      },
      ok: false,
    },
  ];
  for (const { name, from, to, ok } of rows) test(name, () => assert.equal(inPlaceSpec(from, to) !== undefined, ok));
  test('label diff includes removals as null', () => {
    assert.deepEqual(inPlaceSpec(tpl('v1', {}, { a: '1', gone: 'x' }), tpl('v2', {}, { a: '2' })), {
      images: [{ name: 'c', image: 'v2' }],
      labels: { a: '2', gone: null },
      annotations: {},
      resize: [],
    });
  });
});

function inPlaceCluster(maxUnavailable: number | string, nodes = 3): FakeCluster {
  const ds = newDaemonSet({
    strategy: 'RollingUpdate',
    rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable },
  });
  const c = new FakeCluster(ds, addNodes(nodes));
  c.sync();
  c.sync();
  c.markReady();
  return c;
}

describe('in-place rolling update', () => {
  test('image change: pods keep name, UID and node; InPlaceUpdateReady False until the new image runs', () => {
    const c = inPlaceCluster('100%');
    const before = c.pods.map((p) => [p.metadata.name, p.metadata.uid, p.spec.nodeName]);
    assert.ok(c.pods.every((p) => p.spec.readinessGates?.some((g) => g.conditionType === 'InPlaceUpdateReady')));
    assert.ok(
      c.pods.every((p) => p.status?.conditions?.some((x) => x.type === 'InPlaceUpdateReady' && x.status === 'True')),
    );
    c.setImage('foo/bar:v2');
    const p = c.sync();
    assert.equal(p.deletes.length, 0);
    assert.equal(p.inPlaceUpdates.length, 3);
    assert.deepEqual(
      c.pods.map((x) => [x.metadata.name, x.metadata.uid, x.spec.nodeName]),
      before,
    );
    assert.ok(c.pods.every((x) => x.spec.containers[0]?.image === 'foo/bar:v2' && c.hashOf(x) === p.hash));
    assert.ok(c.pods.every((x) => x.metadata.annotations?.['apps.kruise.io/inplace-update-state']));
    const ipr = (x: (typeof c.pods)[number]) =>
      x.status?.conditions?.find((k) => k.type === 'InPlaceUpdateReady')?.status;
    assert.ok(c.pods.every((x) => ipr(x) === 'False'));
    c.sync();
    assert.ok(
      c.pods.every((x) => ipr(x) === 'False'),
      'containers not restarted yet',
    );
    c.kubeletRestartChangedContainers();
    c.sync();
    assert.ok(c.pods.every((x) => ipr(x) === 'True'));
  });

  test('the maxUnavailable budget applies: one pod at a time', () => {
    const c = inPlaceCluster(1);
    c.setImage('foo/bar:v2');
    for (let i = 0; i < 3; i++) {
      assert.equal(c.sync().inPlaceUpdates.length, 1, `step ${i}`);
      assert.equal(c.sync().inPlaceUpdates.length, 0, 'waiting for the updated pod');
      c.kubeletRestartChangedContainers();
      c.sync();
      c.markReady();
    }
    assert.equal(c.sync().inPlaceUpdates.length, 0);
    assert.ok(c.pods.every((x) => x.spec.containers[0]?.image === 'foo/bar:v2'));
  });

  test('a change that is not in-place-able (env) recreates the pods', () => {
    const c = inPlaceCluster('100%');
    c.updateSpec((ds: DaemonSet) => {
      const ct = ds.spec.template.spec.containers[0];
      if (ct) ct.env = [{ name: 'X', value: '1' }];
    });
    const p = c.sync();
    assert.deepEqual([p.inPlaceUpdates.length, p.deletes.length], [0, 3]);
  });

  test('pods created under Standard lack the gate: the first update after switching type recreates', () => {
    const c = new FakeCluster(
      newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } }),
      addNodes(2),
    );
    c.sync();
    c.markReady();
    c.updateSpec((ds) => {
      (ds.spec.updateStrategy?.rollingUpdate as Record<string, unknown>).rollingUpdateType = 'InPlaceIfPossible';
      const ct = ds.spec.template.spec.containers[0];
      if (ct) ct.image = 'v2';
    });
    expectSyncDaemonSets(c, 0, 2);
  });
});

/** A template as our webhook stores it: apps/v1 template defaults applied. */
function defaultedTpl(t: PodTemplateSpec): PodTemplateSpec {
  const out = structuredClone(t);
  setDefaultsPodTemplate(out as unknown as Record<string, unknown>);
  return out;
}

/** A template as kruise-manager's revision holds it: undefaulted, with Go's marshalling artifacts. */
const kruiseTpl = (image: string, extra: Record<string, unknown> = {}): PodTemplateSpec =>
  ({
    metadata: { creationTimestamp: null, labels: { a: '1' } },
    spec: { containers: [{ name: 'c', image, resources: {}, ...extra }] },
  }) as unknown as PodTemplateSpec;

describe('inPlaceSpec compares defaulted templates (taking over from kruise-manager)', () => {
  const rows: { name: string; from: PodTemplateSpec; to: PodTemplateSpec; images?: string[] }[] = [
    {
      name: 'Kruise revision (undefaulted) -> image change defaulted by our webhook: in place',
      from: kruiseTpl('nginx:1.25'),
      to: defaultedTpl(tpl('nginx:1.27')),
      images: ['nginx:1.27'],
    },
    {
      name: 'our revision (defaulted) -> Kruise-era template (rollback, undefaulted): in place',
      from: defaultedTpl(tpl('nginx:1.27')),
      to: kruiseTpl('nginx:1.25'),
      images: ['nginx:1.25'],
    },
    {
      name: 'untagged -> tagged: the pull policy defaulted from each image is no change',
      from: kruiseTpl('nginx'),
      to: defaultedTpl(tpl('nginx:1.27')),
      images: ['nginx:1.27'],
    },
    {
      name: 'both defaulted, untagged -> tagged: in place (the pull policies are both their image default)',
      from: defaultedTpl(tpl('nginx')),
      to: defaultedTpl(tpl('nginx:1.27')),
      images: ['nginx:1.27'],
    },
    {
      name: 'an explicit pull policy other than the default changes: recreate',
      from: kruiseTpl('nginx:1.25'),
      to: defaultedTpl(tpl('nginx:1.27', { imagePullPolicy: 'Always' })),
    },
    {
      name: 'a real change hidden among defaults (env): recreate',
      from: kruiseTpl('nginx:1.25'),
      to: defaultedTpl(tpl('nginx:1.27', { env: [{ name: 'X', value: '1' }] })),
    },
    {
      name: 'a non-default value of a defaulted field (terminationMessagePath): recreate',
      from: kruiseTpl('nginx:1.25'),
      to: defaultedTpl(tpl('nginx:1.27', { terminationMessagePath: '/tmp/x' })),
    },
  ];
  for (const r of rows) {
    test(r.name, () => {
      const spec = inPlaceSpec(r.from, r.to);
      if (!r.images) assert.equal(spec, undefined);
      else
        assert.deepEqual(
          spec?.images.map((i) => i.image),
          r.images,
        );
    });
  }

  test('canPodInPlaceUpdate: a pod of a Kruise revision, current revision written by us', () => {
    const rev = (name: string, t: PodTemplateSpec, revision: number): ControllerRevision => ({
      metadata: { name: `ds-${name}`, labels: { 'controller-revision-hash': name } },
      data: { spec: { template: { $patch: 'replace', ...t } } },
      revision,
    });
    const old = rev('k1', kruiseTpl('nginx:1.25'), 1);
    const current = rev('o2', defaultedTpl(tpl('nginx:1.27')), 2);
    const pod = gatedPod({ hash: 'k1', image: 'nginx:1.25' });
    assert.deepEqual(canPodInPlaceUpdate(pod, current, [old])?.images, [{ name: 'c', image: 'nginx:1.27' }]);
    assert.equal(canPodInPlaceUpdate({ ...pod, spec: { ...pod.spec, readinessGates: [] } }, current, [old]), undefined);
  });
});

interface PodRow {
  hash?: string;
  /** The spec image of container c. */
  image?: string;
  /** status.containerStatuses (none when undefined). */
  statuses?: Partial<ContainerStatus>[];
  condition?: 'True' | 'False';
  state?: InPlaceUpdateState | string;
  deleting?: boolean;
  gate?: boolean;
}

function gatedPod(o: PodRow): Pod {
  const conditions: PodCondition[] = [{ type: 'Ready', status: 'True', lastTransitionTime: '2024-01-01T00:00:00Z' }];
  if (o.condition) {
    conditions.push({ type: 'InPlaceUpdateReady', status: o.condition, lastTransitionTime: '2024-01-01T00:00:00Z' });
  }
  const annotations: Record<string, string> = {};
  if (o.state !== undefined) {
    annotations['apps.kruise.io/inplace-update-state'] =
      typeof o.state === 'string' ? o.state : JSON.stringify(o.state);
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      namespace: 'default',
      uid: 'p-uid',
      labels: { 'controller-revision-hash': o.hash ?? 'h2' },
      annotations,
      ...(o.deleting ? { deletionTimestamp: '2024-01-01T00:00:00Z' } : {}),
    },
    spec: {
      nodeName: 'n1',
      containers: [{ name: 'c', image: o.image ?? 'img:v2' }],
      readinessGates: o.gate === false ? [] : [{ conditionType: 'InPlaceUpdateReady' }],
    },
    status: {
      phase: 'Running',
      conditions,
      ...(o.statuses
        ? {
            containerStatuses: o.statuses.map((cs) => ({
              name: 'c',
              image: 'img:v1',
              imageID: 'id-v1',
              ready: true,
              restartCount: 0,
              state: { running: {} },
              ...cs,
            })) as ContainerStatus[],
          }
        : {}),
    },
  } as Pod;
}

const stateFrom = (imageID: string): InPlaceUpdateState => ({
  revision: 'h2',
  updateTimestamp: '2024-01-01T00:00:00Z',
  lastContainerStatuses: { c: { imageID } },
  updateImages: true,
});

describe('inPlaceUpdateCompleted (Kruise defaultCheckContainersInPlaceUpdateCompleted)', () => {
  const rows: { name: string; pod: PodRow; done: boolean }[] = [
    {
      name: 'the kubelet runs the new image (new image and imageID)',
      pod: { statuses: [{ image: 'img:v2', imageID: 'id-v2', restartCount: 1 }] },
      done: true,
    },
    {
      name: 'a restart on the old image (restartCount up, imageID and image unchanged) is not the update',
      pod: { statuses: [{ image: 'img:v1', imageID: 'id-v1', restartCount: 1 }] },
      done: false,
    },
    {
      name: 'nothing happened yet',
      pod: { statuses: [{}] },
      done: false,
    },
    {
      name: 'same imageID (the new tag is the same image) but the status reports the spec image',
      pod: { statuses: [{ image: 'img:v2', imageID: 'id-v1' }] },
      done: true,
    },
    {
      name: 'imageID changed (status image spelled otherwise, e.g. docker.io/...): Kruise trusts the imageID',
      pod: { statuses: [{ image: 'docker.io/library/img:v2', imageID: 'id-v2' }] },
      done: true,
    },
    {
      name: 'an untagged spec image is compared as :latest',
      pod: { image: 'img', statuses: [{ image: 'img:latest', imageID: 'id-v1' }] },
      done: true,
    },
    {
      name: 'no status for the updated container',
      pod: {},
      done: false,
    },
  ];
  for (const r of rows) {
    test(r.name, () => assert.equal(inPlaceUpdateCompleted(gatedPod(r.pod), stateFrom('id-v1')), r.done));
  }
});

describe('inPlaceRefreshPatch (Kruise inplaceupdate Refresh)', () => {
  const newImage = [{ image: 'img:v2', imageID: 'id-v2', restartCount: 1 }];
  const oldImage = [{ image: 'img:v1', imageID: 'id-v1' }];
  const rows: { name: string; pod: PodRow; setTrue: boolean }[] = [
    { name: 'fresh pod: condition missing -> True', pod: { statuses: oldImage }, setTrue: true },
    { name: 'already True -> nothing', pod: { condition: 'True', statuses: oldImage }, setTrue: false },
    {
      name: 'False, update in flight (recorded, new image not running yet) -> stays False',
      pod: { condition: 'False', statuses: oldImage, state: stateFrom('id-v1') },
      setTrue: false,
    },
    {
      name: 'False, recorded update finished -> True',
      pod: { condition: 'False', statuses: newImage, state: stateFrom('id-v1') },
      setTrue: true,
    },
    {
      name: 'False, a restart on the old image only -> stays False',
      pod: { condition: 'False', statuses: [{ ...oldImage[0], restartCount: 3 }], state: stateFrom('id-v1') },
      setTrue: false,
    },
    {
      name: 'False, no update recorded (the pod patch was refused after the condition was written) -> True',
      pod: { condition: 'False', image: 'img:v1', hash: 'h1', statuses: oldImage },
      setTrue: true,
    },
    {
      name: 'False, only an earlier finished update recorded (this one refused) -> True',
      pod: {
        condition: 'False',
        image: 'img:v1',
        hash: 'h1',
        statuses: oldImage,
        state: { ...stateFrom('id-v0'), revision: 'h1' },
      },
      setTrue: true,
    },
    {
      name: 'False, unparseable state -> left alone (Kruise: refresh error)',
      pod: { condition: 'False', statuses: newImage, state: '{not json' },
      setTrue: false,
    },
    { name: 'terminating -> nothing', pod: { deleting: true, statuses: oldImage }, setTrue: false },
    { name: 'no InPlaceUpdateReady gate -> nothing', pod: { gate: false, statuses: oldImage }, setTrue: false },
  ];
  for (const r of rows) {
    test(r.name, () => {
      const patch = inPlaceRefreshPatch(gatedPod(r.pod), Date.parse('2024-01-02T00:00:00Z')) as
        { status: { conditions: PodCondition[] } } | undefined;
      if (!r.setTrue) assert.equal(patch, undefined);
      else
        assert.deepEqual(patch?.status.conditions, [
          { type: 'InPlaceUpdateReady', status: 'True', lastTransitionTime: '2024-01-02T00:00:00Z' },
        ]);
    });
  }
});

describe('planInPlaceUpdate: revertStatusPatch undoes the condition when the pod patch is refused', () => {
  const spec = { images: [{ name: 'c', image: 'img:v2' }], labels: {}, annotations: {}, resize: [] };
  const now = Date.parse('2024-01-02T00:00:00Z');
  const rows: { name: string; pod: PodRow; reverted: PodCondition }[] = [
    {
      name: 'condition True before: restored as it was',
      pod: { condition: 'True', image: 'img:v1', hash: 'h1', statuses: [{}] },
      reverted: { type: 'InPlaceUpdateReady', status: 'True', lastTransitionTime: '2024-01-01T00:00:00Z' },
    },
    {
      name: 'condition missing before: True',
      pod: { image: 'img:v1', hash: 'h1', statuses: [{}] },
      reverted: { type: 'InPlaceUpdateReady', status: 'True', lastTransitionTime: '2024-01-02T00:00:00Z' },
    },
    {
      name: 'condition False before (an earlier update in flight): stays False',
      pod: { condition: 'False', image: 'img:v1', hash: 'h1', statuses: [{}] },
      reverted: { type: 'InPlaceUpdateReady', status: 'False', lastTransitionTime: '2024-01-01T00:00:00Z' },
    },
  ];
  for (const r of rows) {
    test(r.name, () => {
      const u = planInPlaceUpdate(gatedPod(r.pod), spec, 'h2', now);
      assert.deepEqual((u.revertStatusPatch as { status: { conditions: PodCondition[] } }).status.conditions, [
        r.reverted,
      ]);
      const started = (u.statusPatch as { status: { conditions: PodCondition[] } }).status.conditions;
      assert.equal(started.find((c) => c.type === 'InPlaceUpdateReady')?.status, 'False');
      const state = JSON.parse(
        (u.patch as { metadata: { annotations: Record<string, string> } }).metadata.annotations[
          'apps.kruise.io/inplace-update-state'
        ]!,
      ) as InPlaceUpdateState;
      assert.deepEqual(state.lastContainerStatuses, { c: { imageID: 'id-v1' } });
    });
  }
});

describe('a half-applied in-place update (pod patch refused after InPlaceUpdateReady False)', () => {
  const ipr = (p: Pod) => p.status?.conditions?.find((k) => k.type === 'InPlaceUpdateReady')?.status;
  const refreshes = (plan: { podPatches: { reason: string; podName: string }[] }) =>
    plan.podPatches.filter((x) => x.reason === 'InPlaceUpdateReady').map((x) => x.podName);

  test('the next sync on an up-to-date cache sets InPlaceUpdateReady True again; on a stale cache it waits', () => {
    const c = inPlaceCluster('100%');
    c.setImage('foo/bar:v2');
    const first = c.plan();
    assert.equal(first.inPlaceUpdates.length, 3);
    // Only the status write landed: the pod patch (images, hash, state) was refused.
    c.apply({ ...first, inPlaceUpdates: first.inPlaceUpdates.map((u) => ({ ...u, patch: {} })) });
    assert.ok(c.pods.every((p) => ipr(p) === 'False' && p.spec.containers[0]?.image === 'foo/bar'));

    // Expectations pending (the cache may predate the pod patch in flight): no refresh.
    assert.deepEqual(refreshes(c.plan(false)), []);
    // Up to date: no in-place update is in flight for these pods, so True again; the update is planned anew.
    const next = c.plan();
    assert.deepEqual(refreshes(next).sort(), c.pods.map((p) => p.metadata.name ?? '').sort());
    assert.equal(next.inPlaceUpdates.length, 3);
  });

  test('while the update is in flight (pod patched, new image not running) no refresh sets it True', () => {
    const c = inPlaceCluster('100%');
    c.setImage('foo/bar:v2');
    c.sync();
    assert.ok(c.pods.every((p) => ipr(p) === 'False'));
    // The kubelet restarted the container on the old image (a crash, not the update): still in flight.
    c.pods = c.pods.map((p) => ({
      ...p,
      status: {
        ...p.status,
        containerStatuses: (p.status?.containerStatuses ?? []).map((cs) => ({ ...cs, restartCount: 1 })),
      },
    }));
    assert.deepEqual(refreshes(c.plan()), []);
    c.kubeletRestartChangedContainers();
    assert.equal(refreshes(c.plan()).length, 3);
  });
});
