import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getScaledValueFromIntOrPercent, isPercent } from './intstr.ts';
import { isEmptyLabelSelector, labelSelectorErrors, labelSelectorMatches } from './labels.ts';
import {
  daemonPodTolerations,
  findMatchingUntoleratedTaint,
  getTargetNodeName,
  replaceDaemonSetPodNodeNameNodeAffinity,
  requiredNodeAffinityMatches,
  toleratesTaint,
} from './scheduling.ts';
import { compareByCreationTimestampAndPhase, isPodAvailable, podAvailableWaitingTimeMs } from './pod.ts';
import { canonicalJson, computeHash, fnv32a, safeEncodeString } from './hash.ts';
import { cloneJson } from './json.ts';
import type { Node, NodeSelectorTerm, Pod, Taint, Toleration } from './types.ts';

const node = (name: string, labels: Record<string, string> = {}): Node => ({ metadata: { name, labels } });

describe('intstr', () => {
  const rows: { v: number | string; total: number; up: boolean; want: number }[] = [
    { v: 3, total: 10, up: true, want: 3 },
    { v: '50%', total: 3, up: true, want: 2 },
    { v: '50%', total: 3, up: false, want: 1 },
    { v: '10%', total: 5, up: true, want: 1 },
    { v: '10%', total: 5, up: false, want: 0 },
    { v: '100%', total: 7, up: true, want: 7 },
    { v: '0%', total: 7, up: true, want: 0 },
  ];
  for (const { v, total, up, want } of rows) {
    test(`${v} of ${total} roundUp=${up} -> ${want}`, () => {
      assert.equal(getScaledValueFromIntOrPercent(v, total, up), want);
    });
  }
  test('invalid strings and nil throw', () => {
    assert.throws(() => getScaledValueFromIntOrPercent('abc', 1, true));
    assert.throws(() => getScaledValueFromIntOrPercent('5', 1, true));
    assert.throws(() => getScaledValueFromIntOrPercent(undefined, 1, true));
    assert.equal(isPercent('5%'), true);
    assert.equal(isPercent('5'), false);
  });
});

describe('label selectors', () => {
  const labels = { app: 'a', tier: 'web' };
  const rows: { name: string; sel: Parameters<typeof labelSelectorMatches>[0]; want: boolean }[] = [
    { name: 'nil matches nothing', sel: undefined, want: false },
    { name: 'empty matches everything', sel: {}, want: true },
    { name: 'matchLabels hit', sel: { matchLabels: { app: 'a' } }, want: true },
    { name: 'matchLabels miss', sel: { matchLabels: { app: 'b' } }, want: false },
    { name: 'In', sel: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'db'] }] }, want: true },
    {
      name: 'NotIn on absent key matches',
      sel: { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['x'] }] },
      want: true,
    },
    {
      name: 'NotIn hit',
      sel: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['web'] }] },
      want: false,
    },
    { name: 'Exists', sel: { matchExpressions: [{ key: 'app', operator: 'Exists' }] }, want: true },
    { name: 'DoesNotExist', sel: { matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, want: false },
    {
      name: 'invalid In without values matches nothing',
      sel: { matchExpressions: [{ key: 'app', operator: 'In' }] },
      want: false,
    },
  ];
  for (const { name, sel, want } of rows) test(name, () => assert.equal(labelSelectorMatches(sel, labels), want));
  test('errors and emptiness', () => {
    assert.equal(
      labelSelectorErrors({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }).length,
      1,
    );
    assert.equal(isEmptyLabelSelector({}), true);
    assert.equal(isEmptyLabelSelector(undefined), false);
    assert.equal(isEmptyLabelSelector({ matchLabels: { a: 'b' } }), false);
  });
});

describe('tolerations', () => {
  const taint: Taint = { key: 'k', value: 'v', effect: 'NoSchedule' };
  const rows: { name: string; tol: Toleration; want: boolean }[] = [
    { name: 'Equal same value', tol: { key: 'k', operator: 'Equal', value: 'v' }, want: true },
    { name: 'empty operator means Equal', tol: { key: 'k', value: 'v' }, want: true },
    { name: 'Equal other value', tol: { key: 'k', operator: 'Equal', value: 'w' }, want: false },
    { name: 'Exists ignores value', tol: { key: 'k', operator: 'Exists' }, want: true },
    { name: 'empty key Exists tolerates all', tol: { operator: 'Exists' }, want: true },
    { name: 'other effect', tol: { key: 'k', operator: 'Exists', effect: 'NoExecute' }, want: false },
    { name: 'same effect', tol: { key: 'k', operator: 'Exists', effect: 'NoSchedule' }, want: true },
    { name: 'other key', tol: { key: 'x', operator: 'Exists' }, want: false },
  ];
  for (const { name, tol, want } of rows) test(name, () => assert.equal(toleratesTaint(tol, taint), want));

  test('findMatchingUntoleratedTaint honours the filter', () => {
    const taints: Taint[] = [
      { key: 'a', effect: 'PreferNoSchedule' },
      { key: 'b', effect: 'NoExecute' },
    ];
    assert.equal(
      findMatchingUntoleratedTaint(taints, [], (t) => t.effect === 'NoSchedule'),
      undefined,
    );
    assert.equal(findMatchingUntoleratedTaint(taints, [], (t) => t.effect === 'NoExecute')?.key, 'b');
  });

  test('daemon tolerations: six automatic ones, network-unavailable only with hostNetwork, user duplicate replaced', () => {
    const base = daemonPodTolerations({});
    assert.deepEqual(
      base.map((t) => `${t.key}:${t.effect}`),
      [
        'node.kubernetes.io/not-ready:NoExecute',
        'node.kubernetes.io/unreachable:NoExecute',
        'node.kubernetes.io/disk-pressure:NoSchedule',
        'node.kubernetes.io/memory-pressure:NoSchedule',
        'node.kubernetes.io/pid-pressure:NoSchedule',
        'node.kubernetes.io/unschedulable:NoSchedule',
      ],
    );
    assert.ok(base.every((t) => t.operator === 'Exists'));
    const host = daemonPodTolerations({ hostNetwork: true });
    assert.equal(host.length, 7);
    assert.equal(host[6]?.key, 'node.kubernetes.io/network-unavailable');
    const user: Toleration = {
      key: 'node.kubernetes.io/not-ready',
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 300,
    };
    const merged = daemonPodTolerations({ tolerations: [user, { key: 'x', operator: 'Exists' }] });
    assert.equal(merged.length, 7);
    assert.equal(merged[0]?.tolerationSeconds, undefined, 'user toleration replaced, tolerationSeconds lost');
    assert.equal(merged[1]?.key, 'x');
  });
});

describe('node affinity', () => {
  const n = node('node-1', { zone: 'a', cpus: '8' });
  const rows: { name: string; spec: Parameters<typeof requiredNodeAffinityMatches>[0]; want: boolean }[] = [
    { name: 'no constraints', spec: {}, want: true },
    { name: 'nodeSelector hit', spec: { nodeSelector: { zone: 'a' } }, want: true },
    { name: 'nodeSelector miss', spec: { nodeSelector: { zone: 'b' } }, want: false },
    {
      name: 'matchFields metadata.name In',
      spec: aff([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }]),
      want: true,
    },
    {
      name: 'matchFields other node',
      spec: aff([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-2'] }] }]),
      want: false,
    },
    {
      name: 'matchFields NotIn other node',
      spec: aff([{ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['node-2'] }] }]),
      want: true,
    },
    {
      name: 'matchFields with two values is a parse error: term ignored',
      spec: aff([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1', 'node-2'] }] }]),
      want: false,
    },
    {
      name: 'terms are ORed',
      spec: aff([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }, zoneA()]),
      want: true,
    },
    {
      name: 'expressions in a term are ANDed',
      spec: aff([
        {
          matchExpressions: [
            { key: 'zone', operator: 'In', values: ['a'] },
            { key: 'gpu', operator: 'Exists' },
          ],
        },
      ]),
      want: false,
    },
    { name: 'Gt', spec: aff([{ matchExpressions: [{ key: 'cpus', operator: 'Gt', values: ['4'] }] }]), want: true },
    { name: 'Lt', spec: aff([{ matchExpressions: [{ key: 'cpus', operator: 'Lt', values: ['4'] }] }]), want: false },
    { name: 'empty term matches nothing', spec: aff([{}]), want: false },
    { name: 'nodeSelector AND affinity', spec: { nodeSelector: { zone: 'b' }, ...aff([zoneA()]) }, want: false },
  ];
  for (const { name, spec, want } of rows) test(name, () => assert.equal(requiredNodeAffinityMatches(spec, n), want));

  test('ReplaceDaemonSetPodNodeNameNodeAffinity drops user required terms, keeps preferred', () => {
    const preferred = [{ weight: 1 }];
    const out = replaceDaemonSetPodNodeNameNodeAffinity(
      {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [zoneA()] },
          preferredDuringSchedulingIgnoredDuringExecution: preferred,
        },
      },
      'node-7',
    );
    assert.deepEqual(out.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-7'] }] }],
    });
    assert.equal(out.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution, preferred);
    assert.equal(getTargetNodeName(out.nodeAffinity ? { affinity: out } : {}), 'node-7');
    assert.equal(getTargetNodeName({ nodeName: 'bound', affinity: out }), 'bound');
    assert.equal(getTargetNodeName({}), undefined);
  });

  function aff(terms: NodeSelectorTerm[]) {
    return {
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
    };
  }
  function zoneA(): NodeSelectorTerm {
    return { matchExpressions: [{ key: 'zone', operator: 'In' as const, values: ['a'] }] };
  }
});

describe('pod availability', () => {
  const t0 = Date.parse('2024-01-01T00:00:00Z');
  const pod = (ready: boolean, since = '2024-01-01T00:00:00Z'): Pod => ({
    metadata: { name: 'p' },
    spec: { containers: [] },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: since }] },
  });
  test('available needs Ready for strictly more than minReadySeconds', () => {
    assert.equal(isPodAvailable(pod(true), 0, t0), true);
    assert.equal(isPodAvailable(pod(false), 0, t0), false);
    assert.equal(isPodAvailable(pod(true), 10, t0 + 10_000), false);
    assert.equal(isPodAvailable(pod(true), 10, t0 + 10_001), true);
    assert.equal(podAvailableWaitingTimeMs(pod(true), 10, t0 + 4_000), 6_001);
    assert.equal(podAvailableWaitingTimeMs(pod(true), 10, t0 + 20_000), 0);
    assert.equal(podAvailableWaitingTimeMs(pod(false), 10, t0), 0);
  });
  test('ordering: scheduled first, then oldest, then name', () => {
    const mk = (name: string, ts: string, nodeName?: string): Pod => ({
      metadata: { name, creationTimestamp: ts },
      spec: { containers: [], ...(nodeName ? { nodeName } : {}) },
    });
    const pods = [
      mk('c', '2024-01-01T00:00:00Z'),
      mk('b', '2024-01-02T00:00:00Z', 'n'),
      mk('a', '2024-01-02T00:00:00Z', 'n'),
      mk('d', '2024-01-01T00:00:00Z', 'n'),
    ];
    assert.deepEqual(
      pods.sort(compareByCreationTimestampAndPhase).map((p) => p.metadata.name),
      ['d', 'a', 'b', 'c'],
    );
  });
});

describe('cloneJson', () => {
  test('an equal value that shares nothing with the original', () => {
    const original = { a: [1, 'x', null, { b: true }], c: { d: { e: 0 } }, f: '' };
    const copy = cloneJson(original);
    assert.deepEqual(copy, original);
    assert.notEqual(copy.a, original.a);
    assert.notEqual(copy.a[3], original.a[3]);
    assert.notEqual(copy.c.d, original.c.d);
    (copy.c.d as { e: number }).e = 1;
    assert.equal(original.c.d.e, 0);
  });
  test('scalars and null as they are', () => {
    for (const v of [null, 0, 'a', false]) assert.equal(cloneJson(v), v);
  });
  test('__proto__, constructor and prototype keys are copied as plain data', () => {
    const text = '{"name":"c","__proto__":{"imagePullPolicy":"Never"},"constructor":{"prototype":{"x":1}}}';
    const original = JSON.parse(text) as Record<string, unknown>;
    const copy = cloneJson(original);
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.deepEqual(Object.keys(copy), ['name', '__proto__', 'constructor']);
    assert.ok(Object.hasOwn(copy, '__proto__'));
    assert.equal(copy.imagePullPolicy, undefined, 'nothing inherited from the __proto__ key');
    assert.equal(JSON.stringify(copy), text);
  });
});

describe('hash', () => {
  test('fnv32a known vectors', () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    assert.equal(fnv32a(enc('')), 0x811c9dc5);
    assert.equal(fnv32a(enc('a')), 0xe40c292c);
    assert.equal(fnv32a(enc('foobar')), 0xbf9cf968);
  });
  test('safe encoding avoids vowels', () => {
    assert.match(safeEncodeString('0123456789'), /^[bcdfghjklmnpqrstvwxz2456789]+$/);
  });
  test('canonical JSON sorts keys at every level; hash independent of key order, depends on collisionCount', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } }),
      '{"a":{"d":[1,{"y":2,"z":1}]},"b":1}',
    );
    const h1 = computeHash({ a: 1, b: { c: 2, d: 3 } });
    const h2 = computeHash({ b: { d: 3, c: 2 }, a: 1 });
    assert.equal(h1, h2);
    assert.notEqual(computeHash({ a: 1 }, 1), computeHash({ a: 1 }));
    assert.notEqual(computeHash({ a: 1 }, 1), computeHash({ a: 1 }, 2));
    assert.equal(computeHash({ a: 1 }, 0), computeHash({ a: 1 }, 0));
  });
});
