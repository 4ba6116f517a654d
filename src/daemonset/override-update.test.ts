import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSetSetting, DaemonSetSettingStatus } from '../api/setting.ts';
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod } from '../k8s/types.ts';
import { RESOURCES_OVERRIDE_ANNOTATION } from './constants.ts';
import { overrideSources, podResourceOverrides } from './overrides.ts';
import type { Plan, PlanOptions } from './plan-types.ts';
import type { ResourceRequirements } from './resize.ts';
import { addNodes, FakeCluster, newDaemonSet, newSetting } from './test-fixtures.ts';

const burstable = (cpu: string): ResourceRequirements => ({
  requests: { cpu, memory: '64Mi' },
  limits: { memory: '128Mi' },
});

/** 4 nodes, node-0 and node-1 in pool "big"; InPlaceIfPossible with maxUnavailable 1 unless `mutate` says otherwise. */
function cluster(options: PlanOptions = { inPlaceResize: true }, mutate?: (ds: DaemonSet) => void): FakeCluster {
  const ds = newDaemonSet({
    strategy: 'RollingUpdate',
    rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1 },
  });
  ds.spec.template.spec.containers[0]!.resources = burstable('100m');
  mutate?.(ds);
  const nodes = addNodes(4).map((n, i) =>
    i < 2 ? { ...n, metadata: { ...n.metadata, labels: { ...n.metadata.labels, pool: 'big' } } } : n,
  );
  return new FakeCluster(ds, nodes, options);
}

function bigSetting(c: FakeCluster, resources = burstable('500m'), name = 'big'): DaemonSetSetting {
  return newSetting(c.ds, name, '2026-01-01T00:00:00Z', [{ name: 'foo', resources }], { pool: 'big' });
}

function settle(c: FakeCluster): void {
  for (let i = 0; i < 3; i++) c.sync();
  c.markReady();
  c.sync();
}

const cpuOn = (c: FakeCluster) =>
  Object.fromEntries(
    c
      .live()
      .sort((a, b) => (a.spec.nodeName ?? '').localeCompare(b.spec.nodeName ?? ''))
      .map((p) => [p.spec.nodeName, (p.spec.containers[0]!.resources as ResourceRequirements).requests?.cpu]),
  );
const kinds = (p: Plan) => p.inPlaceUpdates.map((u) => `${u.kind ?? 'update'}:${u.nodeName ?? ''}`);
const sourceOf = (p: Pod) => overrideSources(podResourceOverrides(p));

describe('per-node resources', () => {
  test('new pods get their node’s resources, recorded on the pod; one revision for every shape', () => {
    const c = cluster();
    c.settings = [bigSetting(c)];
    settle(c);
    assert.deepEqual(cpuOn(c), { 'node-0': '500m', 'node-1': '500m', 'node-2': '100m', 'node-3': '100m' });
    assert.deepEqual(c.live().map(sourceOf).sort(), ['', '', 'foo=DaemonSetSetting/big', 'foo=DaemonSetSetting/big']);
    assert.equal(c.revisions.length, 1);
    assert.equal(new Set(c.live().map((p) => c.hashOf(p))).size, 1);
  });

  test('a setting created under running pods resizes only the matched pods in place, without a rollout', () => {
    const c = cluster();
    settle(c);
    const uids = c.live().map((p) => p.metadata.uid);
    const hash = c.lastPlan?.hash;
    c.settings = [bigSetting(c)];
    const resize = c.sync();
    assert.deepEqual([kinds(resize), resize.deletes, resize.creates], [['resize:node-0', 'resize:node-1'], [], []]);
    assert.equal(resize.hash, hash, 'no new revision');
    assert.deepEqual(kinds(c.sync()), [], 'the kubelet is at it');
    c.kubeletResize('done');
    assert.deepEqual(kinds(c.sync()), ['finish:node-0', 'finish:node-1']);
    assert.deepEqual(cpuOn(c), { 'node-0': '500m', 'node-1': '500m', 'node-2': '100m', 'node-3': '100m' });
    assert.deepEqual(
      c.live().map((p) => p.metadata.uid),
      uids,
    );
    const settled = c.sync();
    assert.deepEqual([kinds(settled), settled.deletes.length, settled.podPatches.length], [[], 0, 0]);
  });

  test('paused, or a partition holding every node, does not hold per-node resources back', () => {
    for (const mutate of [
      (ds: DaemonSet) => (ds.spec.updateStrategy!.rollingUpdate!.paused = true),
      (ds: DaemonSet) => (ds.spec.updateStrategy!.rollingUpdate!.partition = 4),
    ]) {
      const c = cluster({ inPlaceResize: true }, mutate);
      settle(c);
      c.settings = [bigSetting(c)];
      assert.deepEqual(kinds(c.sync()), ['resize:node-0', 'resize:node-1']);
    }
  });

  test('without in-place resize: recreated within maxUnavailable, the new pod built with its node’s resources', () => {
    const c = cluster({ inPlaceResize: false });
    settle(c);
    c.settings = [bigSetting(c)];
    const first = c.sync();
    assert.deepEqual(
      first.deletes.map((d) => [d.nodeName, d.reason]),
      [['node-0', 'ResourcesOverride']],
    );
    assert.match(first.events.find((e) => e.reason === 'ResizeNotPossible')?.message ?? '', /in-place resize is off/);
    const recreate = c.sync();
    assert.deepEqual([recreate.creates.map((x) => x.nodeName), recreate.deletes.length], [['node-0'], 0]);
    const waiting = c.sync();
    assert.equal(waiting.deletes.length, 0, 'the new pod is not available yet: the budget is used');
    assert.deepEqual(
      waiting.events.filter((e) => e.reason === 'ResizeNotPossible'),
      [],
      'said when a pod is recreated, not at every sync it waits',
    );
    c.markReady();
    assert.deepEqual(
      c.sync().deletes.map((d) => d.nodeName),
      ['node-1'],
    );
    c.sync();
    c.markReady();
    c.sync();
    assert.deepEqual(cpuOn(c), { 'node-0': '500m', 'node-1': '500m', 'node-2': '100m', 'node-3': '100m' });
  });

  test('a change of QoS class cannot be resized: recreated within maxUnavailable, saying why', () => {
    const c = cluster();
    settle(c);
    const guaranteed = { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } };
    c.settings = [bigSetting(c, guaranteed)];
    const p = c.sync();
    assert.deepEqual([kinds(p), p.deletes.map((d) => d.nodeName)], [[], ['node-0']]);
    assert.match(p.events.find((e) => e.reason === 'ResizeNotPossible')?.message ?? '', /QoS/);
  });

  test('a pod the partition holds on an old revision is resized there, never recreated', () => {
    for (const inPlaceResize of [true, false]) {
      const c = cluster({ inPlaceResize }, (ds) => (ds.spec.updateStrategy!.rollingUpdate!.partition = 4));
      settle(c);
      c.setImage('foo/bar:2');
      c.sync();
      c.settings = [bigSetting(c)];
      const p = c.sync();
      assert.equal(p.deletes.length, 0, `inPlaceResize ${inPlaceResize}`);
      assert.deepEqual(kinds(p), inPlaceResize ? ['resize:node-0', 'resize:node-1'] : []);
    }
  });

  test('a node annotation edited, then removed: that node only, and back to the setting or the template', () => {
    const c = cluster();
    c.settings = [bigSetting(c)];
    settle(c);
    const key = `resources.advanced-daemonset.io/${c.ds.metadata.namespace}.${c.ds.metadata.name}.foo`;
    const annotate = (name: string, value?: string) =>
      (c.nodes = c.nodes.map((n): Node =>
        n.metadata.name === name
          ? { ...n, metadata: { ...n.metadata, annotations: value ? { [key]: value } : {} } }
          : n,
      ));
    annotate('node-1', JSON.stringify(burstable('700m')));
    annotate('node-3', JSON.stringify(burstable('300m')));
    assert.deepEqual(kinds(c.sync()), ['resize:node-1', 'resize:node-3']);
    c.kubeletResize('done');
    c.sync();
    assert.deepEqual(cpuOn(c), { 'node-0': '500m', 'node-1': '700m', 'node-2': '100m', 'node-3': '300m' });
    assert.equal(sourceOf(c.live().find((p) => p.spec.nodeName === 'node-1')!), 'foo=Node');
    annotate('node-1');
    annotate('node-3');
    assert.deepEqual(kinds(c.sync()), ['resize:node-1', 'resize:node-3']);
    c.kubeletResize('done');
    c.sync();
    assert.deepEqual(cpuOn(c), { 'node-0': '500m', 'node-1': '500m', 'node-2': '100m', 'node-3': '100m' });
    const pod3 = c.live().find((p) => p.spec.nodeName === 'node-3')!;
    assert.equal(
      pod3.metadata.annotations?.[RESOURCES_OVERRIDE_ANNOTATION],
      undefined,
      'back to the template: no record',
    );
  });

  test('a setting deleted whose resources equal the template’s: the record goes, nothing is resized', () => {
    const c = cluster();
    c.settings = [bigSetting(c, burstable('100m'))];
    settle(c);
    c.settings = [];
    const p = c.sync();
    assert.deepEqual([kinds(p), p.podPatches.filter((x) => x.reason === 'ResourcesOverride').length], [[], 2]);
    assert.ok(c.live().every((x) => x.metadata.annotations?.[RESOURCES_OVERRIDE_ANNOTATION] === undefined));
  });

  test('a template rollout in place carries each node’s resources', () => {
    const c = cluster();
    c.settings = [bigSetting(c)];
    settle(c);
    c.setImage('foo/bar:2');
    const p = c.sync();
    assert.equal(p.inPlaceUpdates.length, 1);
    assert.equal(p.inPlaceUpdates[0]?.kind ?? 'update', 'update', 'an image change: no resize, the node keeps its cpu');
    c.kubeletRestartChangedContainers();
    for (let i = 0; i < 8; i++) {
      c.markReady();
      c.kubeletRestartChangedContainers();
      c.sync();
    }
    assert.deepEqual(cpuOn(c), { 'node-0': '500m', 'node-1': '500m', 'node-2': '100m', 'node-3': '100m' });
  });

  test('OnDelete: running pods keep what they have; a pod deleted by hand comes back with its node’s resources', () => {
    const c = cluster({ inPlaceResize: true }, (ds) => (ds.spec.updateStrategy = { type: 'OnDelete' }));
    settle(c);
    c.settings = [bigSetting(c)];
    const p = c.sync();
    assert.deepEqual([kinds(p), p.deletes.length], [[], 0]);
    c.pods = c.pods.filter((x) => x.spec.nodeName !== 'node-0');
    c.sync();
    assert.equal(cpuOn(c)['node-0'], '500m');
  });
});

describe('DaemonSetSetting status', () => {
  test('nodes matched, conflicts with the tie-break, unknown containers; written once, with Warnings once', () => {
    const c = cluster();
    const older = bigSetting(c, burstable('500m'), 'older');
    const newer = { ...bigSetting(c, burstable('600m'), 'newer'), metadata: { ...older.metadata, name: 'newer', creationTimestamp: '2026-02-01T00:00:00Z' } };
    const all = newSetting(c.ds, 'all', '2026-03-01T00:00:00Z', [{ name: 'ghost', resources: {} }]);
    c.settings = [newer, older, all];
    const p = c.sync();
    const byName: Record<string, DaemonSetSettingStatus> = Object.fromEntries(
      (p.settingStatuses ?? []).map((w) => [w.setting.metadata.name ?? '', w.status]),
    );
    const cond = (name: string, type: string) => byName[name]?.conditions?.find((x) => x.type === type);
    assert.deepEqual(Object.fromEntries(Object.entries(byName).map(([n, s]) => [n, s.nodes])), { older: 2, newer: 2, all: 4 });
    assert.deepEqual([cond('older', 'Conflicting')?.reason, cond('newer', 'Conflicting')?.reason, cond('all', 'Conflicting')?.status], ['Preferred', 'Overridden', 'False']);
    assert.match(cond('newer', 'Conflicting')?.message ?? '', /DaemonSetSetting older on 2 nodes \(node-0, node-1\).*the oldest setting wins, then the first by name/);
    assert.deepEqual([cond('older', 'Valid')?.status, cond('all', 'Valid')?.status, cond('all', 'Valid')?.reason], ['True', 'False', 'UnknownContainer']);
    assert.match(cond('all', 'Valid')?.message ?? '', /spec\.containers\[0\]\.name: "ghost"/);
    const warnings = p.events.filter((e) => e.about).map((e) => `${e.about?.metadata.name}:${e.reason}`).sort();
    assert.deepEqual(warnings, ['all:UnknownContainer', 'newer:SettingConflict', 'older:SettingConflict']);
    assert.deepEqual(cpuOn(c), { 'node-0': '500m', 'node-1': '500m', 'node-2': '100m', 'node-3': '100m' }, 'the oldest wins');
    const again = c.sync();
    assert.deepEqual([again.settingStatuses, again.events.filter((e) => e.about)], [undefined, []]);
  }); // prettier-ignore
});
