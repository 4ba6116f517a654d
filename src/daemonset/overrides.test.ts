import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSetSetting } from '../api/setting.ts';
import type { Node } from '../k8s/types.ts';
import { RESOURCES_OVERRIDE_ANNOTATION } from './constants.ts';
import {
  nodeOverridesChanged,
  nodeResourceOverrides,
  nodeResources,
  overrideSources,
  parseResourceRequirements,
  podResourceOverrides,
  settingsOf,
  withResourceOverrides,
} from './overrides.ts';
import { newDaemonSet, newNode, newSetting } from './test-fixtures.ts';

const ds = newDaemonSet();
ds.spec.template.spec.containers = [
  { name: 'agent', image: 'agent:1', resources: { requests: { cpu: '100m' } } },
  { name: 'sidecar', image: 'sidecar:1' },
];
const ns = ds.metadata.namespace ?? '';
const name = ds.metadata.name ?? '';

const setting = (
  settingName: string,
  created: string,
  containers: DaemonSetSetting['spec']['containers'],
  matchLabels?: Record<string, string>,
  reference = name,
) => newSetting(ds, settingName, created, containers, matchLabels, reference);

function annotated(node: Node, annotations: Record<string, string>): Node {
  return { ...node, metadata: { ...node.metadata, annotations } };
}

const ours = (container: string) => `resources.advanced-daemonset.io/${ns}.${name}.${container}`;
const eds = (container: string) => `resources.extendeddaemonset.datadoghq.com/${ns}.${name}.${container}`;

describe('nodeResourceOverrides: node annotation, then the oldest setting, then the template', () => {
  const big = setting('big', '2026-01-02T00:00:00Z', [{ name: 'agent', resources: { requests: { cpu: '2' } } }], {
    pool: 'big',
  });
  const older = setting('older', '2026-01-01T00:00:00Z', [{ name: 'agent', resources: { requests: { cpu: '3' } } }], {
    pool: 'big',
  });
  const sameAgeB = setting('b', '2026-01-01T00:00:00Z', [{ name: 'agent', resources: { requests: { cpu: '4' } } }]);
  const sameAgeA = setting('a', '2026-01-01T00:00:00Z', [{ name: 'agent', resources: { requests: { cpu: '5' } } }]);
  const cases: [string, Node, DaemonSetSetting[], Record<string, [string, string | undefined]>][] = [
    ['no override: nothing', newNode('n'), [big], {}],
    ['a matching setting', newNode('n', { pool: 'big' }), [big], { agent: ['DaemonSetSetting/big', '2'] }],
    ['the oldest matching setting wins', newNode('n', { pool: 'big' }), [big, older], { agent: ['DaemonSetSetting/older', '3'] }],
    ['same age: the first by name', newNode('n'), [sameAgeB, sameAgeA], { agent: ['DaemonSetSetting/a', '5'] }],
    [
      'our node annotation wins over every setting',
      annotated(newNode('n', { pool: 'big' }), { [ours('agent')]: '{"requests":{"cpu":"7"}}' }),
      [big],
      { agent: ['Node', '7'] },
    ],
    [
      "EDS's key is read too; ours first where both are set",
      annotated(newNode('n'), { [eds('agent')]: '{"requests":{"cpu":"8"}}', [eds('sidecar')]: '{"requests":{"cpu":1}}', [ours('agent')]: '{"requests":{"cpu":"9"}}' }),
      [],
      { agent: ['Node', '9'], sidecar: ['Node', '1'] },
    ],
    [
      'an annotation that does not parse is skipped: the setting applies',
      annotated(newNode('n', { pool: 'big' }), { [ours('agent')]: '{"requests":' }),
      [big],
      { agent: ['DaemonSetSetting/big', '2'] },
    ],
    [
      'a key for another DaemonSet or a container the template lacks: nothing',
      annotated(newNode('n'), { [`resources.advanced-daemonset.io/${ns}.other.agent`]: '{}', [ours('ghost')]: '{}' }),
      [],
      {},
    ],
  ]; // prettier-ignore
  for (const [title, node, settings, want] of cases) {
    test(title, () => {
      const { overrides } = nodeResourceOverrides(ds, node, settingsOf(ds, settings));
      const got = Object.fromEntries(
        Object.entries(overrides?.containers ?? {}).map(([c, o]) => [c, [o.source, o.resources.requests?.cpu]]),
      );
      assert.deepEqual(got, want);
    });
  }

  test('an ignored annotation is reported with its key and why', () => {
    const node = annotated(newNode('n'), { [ours('agent')]: '{"limits":{"cpu":"lots"}}' });
    const { overrides, errors } = nodeResourceOverrides(ds, node, []);
    assert.equal(overrides, undefined);
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.key, ours('agent'));
    assert.match(errors[0]?.message ?? '', /^limits\[cpu\]: /);
  });

  test('the hash is of the resources, not their source, and a number is its text', () => {
    const fromNode = nodeResourceOverrides(
      ds,
      annotated(newNode('n'), { [ours('agent')]: '{"requests":{"cpu":2}}' }),
      [],
    );
    const fromSetting = nodeResourceOverrides(ds, newNode('n', { pool: 'big' }), [big]);
    assert.equal(fromNode.overrides?.hash, fromSetting.overrides?.hash);
    const other = nodeResourceOverrides(ds, newNode('n', { pool: 'big' }), [older]);
    assert.notEqual(other.overrides?.hash, fromSetting.overrides?.hash);
  });
});

test('settingsOf: same namespace and DaemonSet name, not being deleted; oldest first, then by name', () => {
  const list = [
    setting('c', '2026-01-02T00:00:00Z', []),
    setting('b', '2026-01-01T00:00:00Z', []),
    setting('a', '2026-01-02T00:00:00Z', []),
    setting('other-ds', '2026-01-01T00:00:00Z', [], undefined, 'other'),
    { ...setting('other-ns', '2026-01-01T00:00:00Z', []), metadata: { name: 'other-ns', namespace: 'x' } },
    { ...setting('deleted', '2026-01-01T00:00:00Z', []), metadata: { name: 'deleted', namespace: ns, deletionTimestamp: 'x' } },
  ]; // prettier-ignore
  assert.deepEqual(
    settingsOf(ds, list).map((s) => s.metadata.name),
    ['b', 'a', 'c'],
  );
});

test('parseResourceRequirements: limits and requests of quantities only', () => {
  assert.deepEqual(parseResourceRequirements('{"limits":{"memory":"1Gi"},"requests":{"cpu":0.5}}'), {
    limits: { memory: '1Gi' },
    requests: { cpu: '0.5' },
  });
  for (const [raw, message] of [
    ['nope', 'not JSON'],
    ['[]', 'not a JSON object'],
    ['{"claims":[]}', 'unknown field "claims" (want limits, requests)'],
    ['{"limits":"1"}', 'limits: not a JSON object'],
  ])
    assert.equal(parseResourceRequirements(raw as string), message);
  assert.match(parseResourceRequirements('{"requests":{"cpu":"1x"}}') as string, /^requests\[cpu\]: /);
});

test('withResourceOverrides replaces the named containers’ resources whole and records them on the pod', () => {
  const { overrides } = nodeResourceOverrides(
    ds,
    annotated(newNode('n'), { [ours('sidecar')]: '{"limits":{"memory":"1Gi"}}' }),
    [],
  );
  const t = withResourceOverrides(ds.spec.template, overrides);
  assert.deepEqual(
    t.spec.containers.map((c) => c.resources),
    [{ requests: { cpu: '100m' } }, { limits: { memory: '1Gi' } }],
  );
  const pod = { metadata: { annotations: t.metadata?.annotations }, spec: t.spec };
  const recorded = podResourceOverrides(pod);
  assert.deepEqual(recorded, overrides);
  assert.equal(overrideSources(recorded), 'sidecar=Node');
  assert.equal(withResourceOverrides(ds.spec.template, undefined), ds.spec.template, 'no override: the same template');
  assert.equal(ds.spec.template.spec.containers[1]?.resources, undefined, 'the template is not changed');
  assert.equal(
    podResourceOverrides({ metadata: { annotations: { [RESOURCES_OVERRIDE_ANNOTATION]: '{' } }, spec: t.spec }),
    'invalid',
  );
});

test('nodeResources: none without settings or annotations; per node otherwise', () => {
  const plain = new Map([['n', newNode('n')]]);
  assert.equal(nodeResources(ds, plain, []).none, true);
  const withKey = new Map([['n', annotated(newNode('n'), { [eds('agent')]: '{}' })]]);
  assert.equal(nodeResources(ds, withKey, []).none, false);
  const s = setting('s', '2026-01-01T00:00:00Z', [{ name: 'agent', resources: { limits: { cpu: '1' } } }]);
  const r = nodeResources(ds, plain, [s]);
  assert.equal(r.of('n')?.containers.agent?.source, 'DaemonSetSetting/s');
});

test('nodeOverridesChanged: only this DaemonSet’s keys, ours or EDS’s', () => {
  const a = annotated(newNode('n'), { [ours('agent')]: '{}', unrelated: '1' });
  assert.equal(nodeOverridesChanged(a, annotated(newNode('n'), { [ours('agent')]: '{}', unrelated: '2' }), ds), false);
  assert.equal(nodeOverridesChanged(a, annotated(newNode('n'), { [ours('agent')]: '{"limits":{}}' }), ds), true);
  assert.equal(
    nodeOverridesChanged(a, annotated(newNode('n'), { [ours('agent')]: '{}', [eds('sidecar')]: '{}' }), ds),
    true,
  );
  assert.equal(
    nodeOverridesChanged(
      newNode('n'),
      annotated(newNode('n'), { [`resources.advanced-daemonset.io/${ns}.x.agent`]: '{}' }),
      ds,
    ),
    false,
  );
});
