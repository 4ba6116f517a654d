import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Container, Pod, PodSpec } from '../k8s/types.ts';
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
