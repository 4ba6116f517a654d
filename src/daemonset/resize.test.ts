import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { Container, Pod, PodSpec } from '../k8s/types.ts';
import type { Plan } from './plan-types.ts';
import { addNodes, FakeCluster, newDaemonSet } from './test-fixtures.ts';
import {
  podQOSClass,
  podResources,
  resizePatch,
  resizeProgress,
  resizeRequested,
  resourceChange,
  sameQuantity,
  type ResourceRequirements,
} from './resize.ts';

const c = (name: string, resources?: ResourceRequirements, extra: Partial<Container> = {}): Container => ({
  name,
  image: 'agent:1',
  ...(resources ? { resources } : {}),
  ...extra,
});
const spec = (...containers: Container[]): PodSpec => ({ containers });

describe('podQOSClass (ComputePodQOS)', () => {
  const cases: [string, PodSpec, string][] = [
    ['no resources', spec(c('a')), 'BestEffort'],
    ['only a GPU', spec(c('a', { limits: { 'nvidia.com/gpu': '1' } })), 'BestEffort'],
    ['a cpu request', spec(c('a', { requests: { cpu: '100m' } })), 'Burstable'],
    ['limits only: requests default to them', spec(c('a', { limits: { cpu: '1', memory: '1Gi' } })), 'Guaranteed'],
    [
      'requests equal limits, spelled apart',
      spec(c('a', { requests: { cpu: '1000m', memory: '1Gi' }, limits: { cpu: '1', memory: '1024Mi' } })),
      'Guaranteed',
    ],
    ['cpu limited only', spec(c('a', { limits: { cpu: '1' } })), 'Burstable'],
    ['one container of two without limits', spec(c('a', { limits: { cpu: '1', memory: '1Gi' } }), c('b')), 'Burstable'],
    ['zero requests do not count', spec(c('a', { requests: { cpu: '0' } })), 'BestEffort'],
  ];
  for (const [name, s, want] of cases) test(name, () => assert.equal(podQOSClass(s), want));
});

describe('resourceChange', () => {
  const cpu = (req: string, lim?: string): ResourceRequirements => ({
    requests: { cpu: req, memory: '64Mi' },
    ...(lim ? { limits: { cpu: lim, memory: '128Mi' } } : {}),
  });
  test('no change, or the same amounts written differently', () => {
    assert.deepEqual(resourceChange(spec(c('a', cpu('100m'))), spec(c('a', cpu('0.1')))), { kind: 'none' });
  });
  test('cpu and memory of a container: resized, with the requests defaulted from the limits', () => {
    const change = resourceChange(
      spec(c('a', { limits: { cpu: '1', memory: '1Gi' } }), c('b', cpu('100m'))),
      spec(c('a', { limits: { cpu: '2', memory: '2Gi' } }), c('b', cpu('100m'))),
    );
    assert.deepEqual(change, {
      kind: 'resize',
      containers: [
        {
          name: 'a',
          resources: { limits: { cpu: '2', memory: '2Gi' }, requests: { cpu: '2', memory: '2Gi' } },
          restartsContainer: false,
        },
      ],
    });
  });
  test('a resizePolicy of RestartContainer for a changed resource restarts the container; for another it does not', () => {
    const policy = { resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] };
    const cpuOnly = resourceChange(spec(c('a', cpu('100m', '1'), policy)), spec(c('a', cpu('200m', '1'), policy)));
    assert.equal(cpuOnly.kind === 'resize' && cpuOnly.containers[0]!.restartsContainer, false);
    const memory = resourceChange(
      spec(c('a', { requests: { memory: '64Mi' } }, policy)),
      spec(c('a', { requests: { memory: '96Mi' } }, policy)),
    );
    assert.equal(memory.kind === 'resize' && memory.containers[0]!.restartsContainer, true);
  });
  const recreates: [string, PodSpec, PodSpec, RegExp][] = [
    [
      'a GPU limit changes',
      spec(c('a', { limits: { 'nvidia.com/gpu': '1' } })),
      spec(c('a', { limits: { 'nvidia.com/gpu': '2' } })),
      /^spec\.template\.spec\.containers\[0\]\.resources\.limits\[nvidia\.com\/gpu\]: only cpu and memory/,
    ],
    [
      'a request is added',
      spec(c('a', { requests: { cpu: '100m' } })),
      spec(c('a', { requests: { cpu: '100m', memory: '64Mi' } })),
      /resources\.requests\[memory\]: added/,
    ],
    [
      'a limit is removed',
      spec(c('a', { requests: { cpu: '100m' }, limits: { cpu: '1' } })),
      spec(c('a', { requests: { cpu: '100m' } })),
      /resources\.limits\[cpu\]: removed/,
    ],
    [
      'Burstable to Guaranteed',
      spec(c('a', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '1', memory: '64Mi' } })),
      spec(c('a', { requests: { cpu: '1', memory: '64Mi' }, limits: { cpu: '1', memory: '64Mi' } })),
      /^spec\.template\.spec\.containers: the pod's QoS class would change from Burstable to Guaranteed$/,
    ],
    [
      'an init container',
      { containers: [c('a')], initContainers: [c('i', { requests: { cpu: '1' } })] },
      { containers: [c('a')], initContainers: [c('i', { requests: { cpu: '2' } })] },
      /initContainers\[0\]\.resources: init containers are not resized in place/,
    ],
  ];
  for (const [name, from, to, reason] of recreates) {
    test(`recreate: ${name}, with the field path`, () => {
      const change = resourceChange(from, to);
      assert.equal(change.kind, 'recreate');
      assert.ok(change.kind === 'recreate' && change.reasons.some((r) => reason.test(r)), JSON.stringify(change));
    });
  }
});

test('podResources keeps set requests, fills the missing ones from the limits', () => {
  assert.deepEqual(podResources(c('a', { requests: { cpu: '100m' }, limits: { cpu: '1', memory: '1Gi' } })), {
    requests: { cpu: '100m', memory: '1Gi' },
    limits: { cpu: '1', memory: '1Gi' },
  });
});

test('sameQuantity compares amounts', () => {
  assert.equal(sameQuantity('1', '1000m'), true);
  assert.equal(sameQuantity('1Gi', '1024Mi'), true);
  assert.equal(sameQuantity('1G', '1Gi'), false);
  assert.equal(sameQuantity(undefined, '1'), false);
});

test('resizePatch: a strategic merge patch of the changed containers, requests and limits only', () => {
  assert.deepEqual(
    resizePatch([{ name: 'a', resources: { requests: { cpu: '2' }, limits: { cpu: '2' } }, restartsContainer: false }]),
    { spec: { containers: [{ name: 'a', resources: { requests: { cpu: '2' }, limits: { cpu: '2' } } }] } },
  );
});

describe('resizeProgress', () => {
  const pod = (
    status: Pod['status'],
    generation = 2,
    resources: ResourceRequirements = { requests: { cpu: '200m' } },
  ): Pod => ({
    metadata: { name: 'p', generation },
    spec: { containers: [c('a', resources)] },
    ...(status ? { status } : {}),
  });
  const statuses = (cpu: string) => [
    { name: 'a', image: 'agent:1', imageID: 'x', ready: true, restartCount: 0, resources: { requests: { cpu } } },
  ];
  const cases: [string, Pod, ReturnType<typeof resizeProgress>][] = [
    [
      'status reports the spec: done',
      pod({ observedGeneration: 2, containerStatuses: statuses('0.2') }),
      { state: 'done' },
    ],
    [
      'status still the old amount',
      pod({ observedGeneration: 2, containerStatuses: statuses('100m') }),
      { state: 'in-progress' },
    ],
    [
      'generation not observed yet',
      pod({ observedGeneration: 1, containerStatuses: statuses('200m') }),
      { state: 'in-progress' },
    ],
    [
      'no resources in the status (a node without resize support)',
      pod({ containerStatuses: [{ name: 'a', image: 'agent:1', imageID: 'x', ready: true, restartCount: 0 }] }),
      { state: 'in-progress' },
    ],
    [
      'Deferred',
      pod({
        conditions: [
          {
            type: 'PodResizePending',
            status: 'True',
            reason: 'Deferred',
            message: "Node didn't have enough resource: cpu",
          },
        ],
      }),
      { state: 'deferred', message: "Node didn't have enough resource: cpu" },
    ],
    [
      'Infeasible',
      pod({
        conditions: [
          {
            type: 'PodResizePending',
            status: 'True',
            reason: 'Infeasible',
            message: "Node didn't have enough capacity: cpu, requested: 5000, capacity: 2000",
          },
        ],
      }),
      { state: 'infeasible', message: "Node didn't have enough capacity: cpu, requested: 5000, capacity: 2000" },
    ],
    [
      'in progress with an error',
      pod({
        conditions: [
          {
            type: 'PodResizeInProgress',
            status: 'True',
            reason: 'Error',
            message: 'memory limit (1) below current usage',
          },
        ],
      }),
      { state: 'in-progress', message: 'memory limit (1) below current usage' },
    ],
  ];
  for (const [name, p, want] of cases) test(name, () => assert.deepEqual(resizeProgress(p), want));
});

test('resizeRequested: the pod spec already holds the new cpu and memory', () => {
  const target = [{ name: 'a', resources: { requests: { cpu: '200m' } }, restartsContainer: false }];
  const pod = (cpu: string): Pod => ({
    metadata: { name: 'p' },
    spec: { containers: [c('a', { requests: { cpu } })] },
  });
  assert.equal(resizeRequested(pod('0.2'), target), true);
  assert.equal(resizeRequested(pod('100m'), target), false);
});

// ---- planning: resize under InPlaceIfPossible (plan.ts, inplace.ts inPlaceStep) ----

describe('planning a resize', () => {
  const withResources = (resources: ResourceRequirements, policy?: Container['resizePolicy']) => (ds: DaemonSet) => {
    const ct = ds.spec.template.spec.containers[0]!;
    ct.resources = resources;
    if (policy) ct.resizePolicy = policy;
  };
  const burstable = (cpu: string): ResourceRequirements => ({
    requests: { cpu, memory: '64Mi' },
    limits: { memory: '128Mi' },
  });
  /** 3 ready pods of a template with resources, under InPlaceIfPossible with maxUnavailable 1. */
  function cluster(inPlaceResize: boolean, policy?: Container['resizePolicy']): FakeCluster {
    const ds = newDaemonSet({
      strategy: 'RollingUpdate',
      rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1 },
    });
    withResources(burstable('100m'), policy)(ds);
    const c = new FakeCluster(ds, addNodes(3), { inPlaceResize });
    c.sync();
    c.sync();
    c.markReady();
    return c;
  }
  const kinds = (p: Plan) => p.inPlaceUpdates.map((u) => u.kind ?? 'update');
  const cpuOf = (p: Pod) => (p.spec.containers[0]!.resources as ResourceRequirements).requests?.cpu;

  test('cpu only: every pod resized at once (it stays Ready), then takes the revision once the kubelet is done', () => {
    const c = cluster(true);
    const uids = c.pods.map((p) => p.metadata.uid);
    c.updateSpec(withResources(burstable('200m')));
    const resize = c.sync();
    assert.deepEqual([kinds(resize), resize.deletes.length], [['resize', 'resize', 'resize'], 0]);
    assert.ok(
      resize.inPlaceUpdates.every((u) => u.statusPatch === undefined),
      'no readiness flip',
    );
    assert.deepEqual(c.pods.map(cpuOf), ['200m', '200m', '200m']);
    assert.ok(
      c.pods.every((p) => c.hashOf(p) !== resize.hash),
      'the revision waits for the kubelet',
    );
    assert.deepEqual(kinds(c.sync()), [], 'the kubelet is still at it: nothing to do');
    c.kubeletResize('done');
    const finish = c.sync();
    assert.deepEqual(kinds(finish), ['finish', 'finish', 'finish']);
    assert.ok(c.pods.every((p) => c.hashOf(p) === finish.hash));
    assert.deepEqual(
      c.pods.map((p) => p.metadata.uid),
      uids,
    );
    assert.equal(c.sync().status?.updatedNumberScheduled, 3);
  });

  test('a container that restarts for its resize (RestartContainer) is resized within maxUnavailable', () => {
    const c = cluster(true, [{ resourceName: 'cpu', restartPolicy: 'RestartContainer' }]);
    c.updateSpec(withResources(burstable('200m')));
    assert.deepEqual(kinds(c.sync()), ['resize']);
  });

  test('Deferred waits; Infeasible recreates within maxUnavailable, with the kubelet message in an event', () => {
    const c = cluster(true);
    c.updateSpec(withResources(burstable('200m')));
    c.sync();
    c.kubeletResize('Deferred');
    const waiting = c.sync();
    assert.deepEqual([kinds(waiting), waiting.deletes.length], [[], 0]);
    c.kubeletResize('Infeasible');
    const recreate = c.sync();
    assert.deepEqual([kinds(recreate), recreate.deletes.length], [[], 1]);
    assert.match(
      recreate.events.find((e) => e.reason === 'ResizeInfeasible')?.message ?? '',
      /^pod \S+ on node node-\d is recreated: its resize cannot be made: the kubelet reports it Infeasible: resize Infeasible$/,
    );
  });

  test('a pods/resize the apiserver refused (the executor marks the pod) recreates within maxUnavailable', () => {
    const c = cluster(true);
    const before = structuredClone(c.pods);
    c.updateSpec(withResources(burstable('64')));
    const resize = c.sync();
    assert.equal(resize.inPlaceUpdates.length, 3);
    // The apiserver refused the first (its spec unchanged) and the executor marked it (executor.ts,
    // recordResizeRefused); the others were accepted and wait for the kubelet.
    const refused = resize.inPlaceUpdates[0]!;
    const message = "node didn't have enough allocatable resources: cpu, requested: 64000, allocatable: 2000";
    c.pods = c.pods.map((p) => {
      if (p.metadata.name !== refused.podName) return p;
      const old = before.find((x) => x.metadata.name === p.metadata.name)!;
      const annotations = {
        ...p.metadata.annotations,
        'advanced-daemonset.io/resize-refused': JSON.stringify({ revision: refused.toHash, message }),
      };
      return { ...old, metadata: { ...old.metadata, annotations } };
    });
    const recreate = c.sync();
    assert.deepEqual(
      [recreate.deletes.map((d) => d.podName), kinds(recreate)],
      [[refused.podName], []],
      JSON.stringify(recreate.events),
    );
    assert.equal(
      recreate.events.find((e) => e.reason === 'ResizeInfeasible')?.message,
      `pod ${refused.podName} on node ${refused.nodeName} is recreated: its resize cannot be made: pods/resize refused: ${message}`,
    );
  });

  test('resources and image: resize first, the image (within the budget) once the resize is done', () => {
    const c = cluster(true);
    c.updateSpec((ds) => {
      withResources(burstable('200m'))(ds);
      ds.spec.template.spec.containers[0]!.image = 'foo/bar:v2';
    });
    const first = c.sync();
    assert.deepEqual(kinds(first), ['resize', 'resize', 'resize']);
    assert.ok(
      c.pods.every((p) => p.spec.containers[0]!.image !== 'foo/bar:v2'),
      'no image change yet',
    );
    c.kubeletResize('done');
    const second = c.sync();
    assert.deepEqual(kinds(second), ['update']);
    assert.equal(c.pods.filter((p) => p.spec.containers[0]!.image === 'foo/bar:v2').length, 1);
  });

  const recreates: [string, (ds: DaemonSet) => void, RegExp | undefined, boolean][] = [
    [
      'a QoS class change',
      withResources({ requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '100m', memory: '128Mi' } }),
      /is recreated: .*limits\[cpu\]: added.*; spec\.template\.spec\.containers: the pod's QoS class would change from Burstable to Guaranteed$/,
      true,
    ],
    [
      'a GPU',
      withResources({ ...burstable('100m'), limits: { memory: '128Mi', 'nvidia.com/gpu': '1' } }),
      /resources\.limits\[nvidia\.com\/gpu\]: added/,
      true,
    ],
    ['cpu with the gate off', withResources(burstable('200m')), undefined, false],
  ];
  for (const [name, change, reason, gate] of recreates) {
    test(`${name}: recreated within maxUnavailable${reason ? ', saying why' : ', silently as before'}`, () => {
      const c = cluster(gate);
      c.updateSpec(change);
      const p = c.sync();
      assert.deepEqual([kinds(p), p.deletes.length], [[], 1]);
      const event = p.events.find((e) => e.reason === 'ResizeNotPossible');
      if (reason) assert.match(event?.message ?? '', reason);
      else assert.equal(event, undefined);
    });
  }
});
