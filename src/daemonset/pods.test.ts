import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { findUpdatedPodsOnNode, getNodesToDaemonPods, isPodHooked, kruisePodReadyPatch, newPod } from './pods.ts';
import { addNotReadyKeyPatch, PRE_DELETE_HOLDER } from './pods.ts';
import { FOO_CONTROLLER_REF, newDaemonSet, newPod as fixturePod, T0 } from './test-fixtures.ts';

describe('newPod', () => {
  const ds = newDaemonSet({
    strategy: 'RollingUpdate',
    templateSpec: {
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 },
      ],
      nodeName: 'ignored-by-scheduler-path',
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
          },
        },
        podAntiAffinity: { x: 1 },
      },
      readinessGates: [{ conditionType: 'KruisePodReady' }],
    },
  });
  ds.spec.template.metadata = {
    labels: { name: 'simple-daemon', type: 'production' },
    annotations: { a: 'b' },
    finalizers: ['f'],
  };
  const pod = newPod(ds, 'node-3', 'abc');

  test('metadata: generateName, namespace, labels with hash, template annotations and finalizers, controllerRef', () => {
    assert.equal(pod.metadata.generateName, 'foo-');
    assert.equal(pod.metadata.name, undefined);
    assert.equal(pod.metadata.namespace, 'default');
    assert.deepEqual(pod.metadata.labels, {
      name: 'simple-daemon',
      type: 'production',
      'controller-revision-hash': 'abc',
    });
    assert.deepEqual(pod.metadata.annotations, { a: 'b' });
    assert.deepEqual(pod.metadata.finalizers, ['f']);
    assert.deepEqual(pod.metadata.ownerReferences, [FOO_CONTROLLER_REF]);
  });
  test('affinity pinned to the node with one matchFields term; other affinity kept; nodeName left to the scheduler', () => {
    assert.deepEqual(pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-3'] }] }],
    });
    assert.deepEqual(pod.spec.affinity?.podAntiAffinity, { x: 1 });
    assert.equal(pod.spec.nodeName, undefined);
  });
  test('automatic tolerations added, user duplicate replaced', () => {
    const keys = (pod.spec.tolerations ?? []).map((t) => t.key);
    assert.equal(keys.length, 6);
    assert.equal(keys.filter((k) => k === 'node.kubernetes.io/not-ready').length, 1);
    assert.equal(pod.spec.tolerations?.[0]?.tolerationSeconds, undefined);
  });
  // --kruise-pod-ready-gate: 'always' (the default) gives every pod the gate, as Kruise's pod webhook
  // (https://github.com/openkruise/kruise/blob/master/pkg/webhook/pod/mutating/pod_readiness.go); 'when-needed'
  // only pods of DaemonSets with markPodNotReady. A gate in the template is kept once either way.
  const hooked = newDaemonSet({ lifecycle: { preDelete: { markPodNotReady: true, labelsHandler: { x: 'y' } } } });
  const inPlace = newDaemonSet({
    strategy: 'RollingUpdate',
    rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible' },
  });
  const gateRows: {
    name: string;
    ds: ReturnType<typeof newDaemonSet>;
    mode?: 'always' | 'when-needed';
    want: string[];
  }[] = [
    { name: 'plain DaemonSet, default: the gate', ds: newDaemonSet(), want: ['KruisePodReady'] },
    { name: 'plain DaemonSet, always', ds: newDaemonSet(), mode: 'always', want: ['KruisePodReady'] },
    { name: 'plain DaemonSet, when-needed: none', ds: newDaemonSet(), mode: 'when-needed', want: [] },
    { name: 'markPodNotReady, default', ds: hooked, want: ['KruisePodReady'] },
    { name: 'markPodNotReady, when-needed', ds: hooked, mode: 'when-needed', want: ['KruisePodReady'] },
    { name: 'gate in the template, default: once', ds, want: ['KruisePodReady'] },
    { name: 'gate in the template, when-needed: kept', ds, mode: 'when-needed', want: ['KruisePodReady'] },
    { name: 'InPlaceIfPossible, default: both', ds: inPlace, want: ['KruisePodReady', 'InPlaceUpdateReady'] },
    { name: 'InPlaceIfPossible, when-needed', ds: inPlace, mode: 'when-needed', want: ['InPlaceUpdateReady'] },
  ];
  for (const row of gateRows) {
    test(`readiness gates: ${row.name}`, () => {
      const opts = row.mode ? { kruisePodReadyGate: row.mode } : {};
      assert.deepEqual(
        (newPod(row.ds, 'n', 'h', opts).spec.readinessGates ?? []).map((g) => g.conditionType),
        row.want,
      );
    });
  }
  test('template is not modified', () => {
    assert.equal(ds.spec.template.spec.tolerations?.length, 1);
    assert.equal(
      ds.spec.template.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]
        ?.matchFields,
      undefined,
    );
  });
  test('assignPodsByScheduler=false binds directly', () => {
    const p = newPod(newDaemonSet(), 'node-1', 'h', { assignPodsByScheduler: false });
    assert.equal(p.spec.nodeName, 'node-1');
    assert.equal(p.spec.schedulerName, 'kubernetes.io/daemonset-controller');
  });
  test('legacy template generation label', () => {
    const legacy = newDaemonSet({ annotations: { 'deprecated.daemonset.template.generation': '3' } });
    assert.equal(newPod(legacy, 'n', 'h').metadata.labels?.['pod-template-generation'], '3');
  });
});

describe('pod grouping and split', () => {
  const ds = newDaemonSet();
  test('grouped by nodeName or affinity; deleted terminal pods left out; sorted scheduled, oldest, name', () => {
    const a = fixturePod(ds, 'n1', { name: 'a', created: T0 + 2000 });
    const b = fixturePod(ds, 'n1', { name: 'b', created: T0 + 1000, bound: false });
    const c = fixturePod(ds, 'n1', { name: 'c', created: T0 + 3000 });
    const gone = fixturePod(ds, 'n1', { name: 'gone', phase: 'Failed', deleting: true });
    const nowhere = { ...fixturePod(ds, 'x', { name: 'nowhere', bound: false }), spec: { containers: [] } };
    const map = getNodesToDaemonPods([a, b, c, gone, nowhere]);
    assert.deepEqual([...map.keys()], ['n1']);
    assert.deepEqual(
      map.get('n1')?.map((p) => p.metadata.name),
      ['a', 'c', 'b'],
    );
    assert.equal(getNodesToDaemonPods([gone], true).get('n1')?.length, 1);
  });
  test('findUpdatedPodsOnNode', () => {
    const n = fixturePod(ds, 'n', { hash: 'new' });
    const o = fixturePod(ds, 'n', { hash: 'old' });
    const o2 = fixturePod(ds, 'n', { hash: 'older' });
    const t = fixturePod(ds, 'n', { hash: 'old', deleting: true });
    assert.deepEqual(findUpdatedPodsOnNode([n, o, t], 'new'), { newPod: n, oldPod: o, ok: true });
    assert.equal(findUpdatedPodsOnNode([n, o, o2], 'new').ok, false);
  });
});

describe('readiness and lifecycle helpers', () => {
  const ds = newDaemonSet();
  test('KruisePodReady True is planned once for pods with the gate and without the condition', () => {
    const p = fixturePod(ds, 'n');
    assert.equal(kruisePodReadyPatch(p, T0), undefined, 'no gate, nothing');
    p.spec.readinessGates = [{ conditionType: 'KruisePodReady' }];
    assert.deepEqual(kruisePodReadyPatch(p, T0), {
      status: { conditions: [{ type: 'KruisePodReady', status: 'True', lastTransitionTime: '2024-01-01T00:00:00Z' }] },
    });
    p.status?.conditions?.push({ type: 'KruisePodReady', status: 'True' });
    assert.equal(kruisePodReadyPatch(p, T0), undefined);
  });
  test('markPodNotReady: KruisePodReady False with the hook recorded, Ready forced False', () => {
    const p = fixturePod(ds, 'n', { ready: true });
    assert.equal(addNotReadyKeyPatch(p, PRE_DELETE_HOLDER, T0), undefined, 'no gate: no-op');
    p.spec.readinessGates = [{ conditionType: 'KruisePodReady' }];
    const patch = addNotReadyKeyPatch(p, PRE_DELETE_HOLDER, T0) as {
      status: { conditions: { type: string; status: string; message?: string }[] };
    };
    assert.equal(patch.status.conditions[0]?.status, 'False');
    assert.deepEqual(JSON.parse(patch.status.conditions[0]?.message ?? ''), [
      { userAgent: 'Lifecycle', key: 'preDeleteHook' },
    ]);
    assert.deepEqual(patch.status.conditions[1]?.type, 'Ready');
    assert.deepEqual(patch.status.conditions[1]?.status, 'False');
    p.status?.conditions?.push({
      type: 'KruisePodReady',
      status: 'False',
      message: patch.status.conditions[0]?.message,
    });
    assert.equal(addNotReadyKeyPatch(p, PRE_DELETE_HOLDER, T0), undefined, 'already held');
  });
  test('isPodHooked: exact label value or finalizer', () => {
    const p = fixturePod(ds, 'n', { labels: { hook: 'true' } });
    assert.equal(isPodHooked({ labelsHandler: { hook: 'true' } }, p), true);
    assert.equal(isPodHooked({ labelsHandler: { hook: 'false' } }, p), false);
    assert.equal(isPodHooked({ finalizersHandler: ['x'] }, p), false);
    p.metadata.finalizers = ['x'];
    assert.equal(isPodHooked({ finalizersHandler: ['x'] }, p), true);
    assert.equal(isPodHooked(undefined, p), false);
  });
});
