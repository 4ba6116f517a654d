// Table tests of `pods` rows (lifecycle state, in-place state) and of kubectl's printers (columns, ages, names).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { inPlaceCell, ownedPods, podRows, podStatusCell, resourcesCell } from './pods.ts';
import { age, formatObjects, formatTable, humanDuration, nameLine } from './printers.ts';
import { ds, pod, T0 } from './test-fixtures.ts';

const INPLACE = 'apps.kruise.io/inplace-update-state';

describe('pods rows', () => {
  const d = ds({ status: { daemonSetHash: 'h2' } });
  const pods = [
    pod('n2', 'h1', { labels: { 'lifecycle.apps.kruise.io/state': 'PreparingDelete' }, restarts: 3 }),
    pod('n1', 'h2', { labels: { 'lifecycle.apps.kruise.io/state': 'Normal' } }),
    pod('n3', 'h2', { ready: false }),
    pod('n4', 'h1', { owner: 'someone-else' }),
  ];
  test('only the pods the DaemonSet controls', () => {
    assert.deepEqual(
      ownedPods(pods, d).map((p) => p.spec.nodeName),
      ['n2', 'n1', 'n3'],
    );
  });
  test('by node: NODE POD REVISION UPDATED READY STATUS LIFECYCLE IN-PLACE RESOURCES RESTARTS AGE', () => {
    assert.deepEqual(podRows(ownedPods(pods, d), d, T0 + 65_000), [
      ['n1', 'agent-n1', 'h2', 'true', '1/1', 'Running', 'Normal', '-', 'template', '0', '65s'],
      ['n2', 'agent-n2', 'h1', 'false', '1/1', 'Running', 'PreparingDelete', '-', 'template', '3', '65s'],
      ['n3', 'agent-n3', 'h2', 'true', '0/1', 'Running', '-', '-', 'template', '0', '65s'],
    ]);
  });
  test('RESOURCES: the source of each overridden container, from the pod’s record', () => {
    const key = 'advanced-daemonset.io/resources-override';
    const record = (containers: Record<string, string>) =>
      JSON.stringify({
        hash: 'x',
        containers: Object.fromEntries(Object.entries(containers).map(([c, source]) => [c, { source, resources: {} }])),
      });
    const cases: [Record<string, string> | undefined, string][] = [
      [undefined, 'template'],
      [{ [key]: record({ agent: 'Node' }) }, 'agent=Node'],
      [{ [key]: record({ side: 'DaemonSetSetting/big', agent: 'Node' }) }, 'agent=Node, side=DaemonSetSetting/big'],
      [{ [key]: '{' }, 'invalid record'],
    ];
    for (const [annotations, want] of cases) {
      const p = pod('n1', 'h2');
      if (annotations) p.metadata.annotations = annotations;
      assert.equal(resourcesCell(p), want);
    }
  });
  test('READY says when the containers are ready but the pod is not (a readiness gate holds it)', () => {
    const p = pod('n1', 'h2');
    p.status!.conditions = [{ type: 'Ready', status: 'False' }];
    assert.equal(podRows([p], d, T0)[0]?.[4], '1/1 (not Ready)');
  });
  const statuses: { name: string; edit: (p: ReturnType<typeof pod>) => void; want: string }[] = [
    { name: 'running', edit: () => {}, want: 'Running' },
    { name: 'terminating', edit: (p) => (p.metadata.deletionTimestamp = '2025-01-01T00:00:00Z'), want: 'Terminating' },
    {
      name: 'waiting container',
      edit: (p) => (p.status!.containerStatuses![0]!.state = { waiting: { reason: 'CrashLoopBackOff' } }),
      want: 'CrashLoopBackOff',
    },
  ];
  for (const c of statuses)
    test(`STATUS: ${c.name}`, () => {
      const p = pod('n1', 'h2');
      c.edit(p);
      assert.equal(podStatusCell(p), c.want);
    });
});

describe('IN-PLACE cell', () => {
  const state = (revision: string) =>
    JSON.stringify({
      revision,
      updateTimestamp: '2025-01-01T00:00:00Z',
      lastContainerStatuses: { c: { imageID: 'id0' } },
    });
  const cases: {
    name: string;
    annotations?: Record<string, string>;
    imageID?: string;
    gate?: 'True' | 'False';
    want: string;
  }[] = [
    { name: 'no in-place update', want: '-' },
    { name: 'not parseable', annotations: { [INPLACE]: '{' }, want: 'invalid' },
    {
      name: 'container still on the old image',
      annotations: { [INPLACE]: state('h2') },
      imageID: 'id0',
      want: 'updating to h2',
    },
    {
      name: 'new image reported but InPlaceUpdateReady False',
      annotations: { [INPLACE]: state('h2') },
      gate: 'False',
      want: 'updating to h2',
    },
    { name: 'finished', annotations: { [INPLACE]: state('h2') }, gate: 'True', want: 'done (h2)' },
    {
      name: 'the older annotation key is read too',
      annotations: { 'inplace-update-state': state('h2') },
      want: 'done (h2)',
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const p = pod('n1', 'h2', c.annotations ? { annotations: c.annotations } : {});
      if (c.imageID) {
        p.status!.containerStatuses![0]!.imageID = c.imageID;
        p.status!.containerStatuses![0]!.image = 'busybox:1.35';
      }
      if (c.gate) p.status!.conditions!.push({ type: 'InPlaceUpdateReady', status: c.gate });
      assert.equal(inPlaceCell(p), c.want);
    });
});

describe('printers', () => {
  test("columns as kubectl's tabwriter: widest cell + 3, at least 6, last column unpadded", () => {
    assert.equal(
      formatTable(
        ['NAME', 'X'],
        [
          ['a', '1'],
          ['longer-name', '22'],
        ],
      ),
      'NAME          X\na             1\nlonger-name   22',
    );
    assert.equal(formatTable(['A', 'B'], [['1', '2']]), 'A     B\n1     2');
  });
  const ages: { ms: number; want: string }[] = [
    { ms: -5000, want: '<invalid>' },
    { ms: -500, want: '0s' },
    { ms: 59_000, want: '59s' },
    { ms: 119_000, want: '119s' },
    { ms: 185_000, want: '3m5s' },
    { ms: 540_000, want: '9m' },
    { ms: 3_600_000, want: '60m' },
    { ms: 3 * 3_600_000 + 120_000, want: '3h2m' },
    { ms: 9 * 3_600_000, want: '9h' },
    { ms: 3 * 86_400_000 + 4 * 3_600_000, want: '3d4h' },
    { ms: 100 * 86_400_000, want: '100d' },
    { ms: (2 * 365 + 30) * 86_400_000, want: '2y30d' },
    { ms: 9 * 365 * 86_400_000, want: '9y' },
  ];
  for (const c of ages) test(`HumanDuration ${c.ms} ms = ${c.want}`, () => assert.equal(humanDuration(c.ms), c.want));
  test('age of a missing timestamp', () => assert.equal(age(undefined, T0), '<unknown>'));
  test('name printer', () => assert.equal(nameLine('x', 'paused'), 'daemonset.apps.kruise.io/x paused'));
  test('-o json of several objects is a List', () => {
    assert.deepEqual(JSON.parse(formatObjects([{ a: 1 }], 'json', false)), {
      apiVersion: 'v1',
      items: [{ a: 1 }],
      kind: 'List',
      metadata: { resourceVersion: '' },
    });
    assert.equal(formatObjects([{ a: 1 }], 'yaml', true), 'a: 1');
  });
});
