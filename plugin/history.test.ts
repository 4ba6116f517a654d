// Table tests of history/undo as kubectl's DaemonSetHistoryViewer / DaemonSetRollbacker, the template description,
// and the diff between revisions (plus the diff algorithm itself).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PluginError } from './errors.ts';
import {
  controlledRevisions,
  describeTemplate,
  diffRevisions,
  findHistory,
  historyTable,
  rollbackPlan,
} from './history.ts';
import { unifiedDiff } from './diff.ts';
import { ds, revisionOf } from './test-fixtures.ts';

const v1 = ds({ image: 'busybox:1.36' });
const v2 = ds({ image: 'busybox:1.37' });
const v3 = ds({ image: 'busybox:1.38' });
const r1 = revisionOf(v1, 1, 'h1', { cause: 'kubectl apply v1' });
const r2 = revisionOf(v2, 2, 'h2');
const r3 = revisionOf(v3, 3, 'h3');
const foreign = revisionOf(v1, 9, 'hx', { owner: 'other-uid' });

describe('history', () => {
  test('controlledRevisions: only those controlled by this DaemonSet (UID), by revision', () => {
    assert.deepEqual(
      controlledRevisions([r3, foreign, r1, r2], v3).map((r) => r.revision),
      [1, 2, 3],
    );
  });
  test('the table: REVISION, HASH, CHANGE-CAUSE (<none> when unset)', () => {
    assert.equal(
      historyTable([r1, r2]),
      ['REVISION   HASH   CHANGE-CAUSE', '1          h1     kubectl apply v1', '2          h2     <none>'].join('\n'),
    );
  });
  test("no revisions: kubectl's line", () => assert.equal(historyTable([]), 'No rollout history found.'));
});

describe('undo (DaemonSetRollbacker)', () => {
  const history = [r1, r2, r3];
  const cases: {
    name: string;
    current: ReturnType<typeof ds>;
    history: typeof history;
    to: number;
    revision?: number;
    image?: string;
    skipped?: string;
    error?: string;
  }[] = [
    { name: 'default: the second highest revision', current: v3, history, to: 0, revision: 2, image: 'busybox:1.37' },
    { name: '--to-revision 1', current: v3, history, to: 1, revision: 1, image: 'busybox:1.36' },
    {
      name: 'to the current template: skipped rollback',
      current: v3,
      history,
      to: 3,
      skipped: 'skipped rollback (current template already matches revision 3)',
    },
    { name: 'unknown revision', current: v3, history, to: 7, error: 'unable to find specified revision 7 in history' },
    {
      name: 'negative revision',
      current: v3,
      history,
      to: -1,
      error: 'unable to find specified revision -1 in history',
    },
    { name: 'one revision only', current: v1, history: [r1], to: 0, error: 'no last revision to roll back to' },
  ];
  for (const c of cases)
    test(c.name, () => {
      if (c.error) {
        assert.throws(
          () => rollbackPlan(c.current, c.history, c.to),
          (e: unknown) => e instanceof PluginError && e.message === c.error,
        );
        return;
      }
      const plan = rollbackPlan(c.current, c.history, c.to);
      if (c.skipped) {
        assert.ok('skipped' in plan);
        assert.equal(plan.skipped, c.skipped);
        return;
      }
      assert.ok('patch' in plan);
      assert.equal(plan.revision, c.revision);
      assert.deepEqual(
        plan.patch[0],
        { op: 'test', path: '/metadata/generation', value: 1 },
        'conditional on the spec',
      );
      assert.equal(plan.patch.length, 2);
      const op = plan.patch[1]!;
      assert.equal(op.op, 'replace');
      assert.equal(op.path, '/spec/template');
      const value = op.value as { spec: { containers: { image: string }[] }; $patch?: unknown };
      assert.equal(value.spec.containers[0]?.image, c.image);
      assert.equal(value.$patch, undefined, 'the strategic-merge directive is not written into the object');
    });
  test('a revision written undefaulted by another controller matches the same template defaulted by the webhook', () => {
    const defaulted = ds({ image: 'busybox:1.36' });
    defaulted.spec.template.spec.containers[0] = {
      name: 'c',
      image: 'busybox:1.36',
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
    };
    defaulted.spec.template.spec.restartPolicy = 'Always';
    const plan = rollbackPlan(defaulted, [r1, r2], 1);
    assert.ok('skipped' in plan, JSON.stringify(plan));
  });
  test('findHistory with 0 sorts by revision number, not list order', () => {
    assert.equal(findHistory(0, [r3, r1, r2])?.revision, 2);
  });
});

describe('describeTemplate (kubectl rollout history --revision N)', () => {
  test('labels, containers, volumes, node selectors, tolerations', () => {
    const d = ds({ image: 'busybox:1.37' });
    d.spec.template.metadata = { labels: { app: 'agent', tier: 'node' }, annotations: { note: 'x' } };
    Object.assign(d.spec.template.spec, {
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [{ operator: 'Exists' }, { key: 'k', value: 'v', effect: 'NoSchedule' }],
      volumes: [{ name: 'logs', hostPath: { path: '/var/log' } }],
    });
    d.spec.template.spec.containers[0] = {
      name: 'c',
      image: 'busybox:1.37',
      ports: [{ containerPort: 9100, hostPort: 9100 }],
      args: ['--x'],
      env: [{ name: 'A', value: '1' }],
      volumeMounts: [{ name: 'logs', mountPath: '/logs', readOnly: true }],
      resources: { limits: { memory: '64Mi' } },
    };
    assert.equal(
      describeTemplate(d.spec.template),
      [
        'Pod Template:',
        '  Labels:\tapp=agent',
        '         \ttier=node',
        '  Annotations:\tnote: x',
        '  Containers:',
        '   c:',
        '    Image:\tbusybox:1.37',
        '    Port:\t9100/TCP',
        '    Host Port:\t9100/TCP',
        '    Args:',
        '      --x',
        '    Limits:',
        '      memory:\t64Mi',
        '    Environment:',
        '      A:\t1',
        '    Mounts:',
        '      /logs from logs (ro)',
        '  Volumes:',
        '   logs:\thostPath',
        '  Node-Selectors:\tkubernetes.io/os=linux',
        '  Tolerations:\top=Exists',
        '              \tk=v:NoSchedule',
      ].join('\n'),
    );
  });
});

describe('diff between revisions', () => {
  test('revision M to revision N: the image line changes, context around it', () => {
    const text = diffRevisions(v3, [r1, r2, r3], 1, 2);
    assert.match(text, /^--- revision 1\n\+\+\+ revision 2\n@@ /);
    assert.match(text, /\n-\s+- image: busybox:1\.36\n\+\s+- image: busybox:1\.37\n/);
  });
  test('revision M to the current template', () => {
    assert.match(
      diffRevisions(v3, [r1, r2, r3], 2, undefined),
      /\+\+\+ current template[\s\S]*\n\+\s+- image: busybox:1\.38\n/,
    );
  });
  test('equal templates: no diff', () => assert.equal(diffRevisions(v3, [r1, r2, r3], 3, undefined), ''));
  test('unknown revision', () =>
    assert.throws(() => diffRevisions(v3, [r1], 5, 1), /unable to find the specified revision/));
});

describe('unifiedDiff', () => {
  const cases: { name: string; a: string; b: string; want: string }[] = [
    { name: 'equal', a: 'x\ny\n', b: 'x\ny\n', want: '' },
    { name: 'one line changed', a: 'a\nb\nc\n', b: 'a\nB\nc\n', want: '--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c' },
    { name: 'added at the end', a: 'a\n', b: 'a\nb\n', want: '--- a\n+++ b\n@@ -1,1 +1,2 @@\n a\n+b' },
    { name: 'from nothing', a: '', b: 'a\n', want: '--- a\n+++ b\n@@ -0,0 +1,1 @@\n+a' },
    {
      name: 'two changes far apart: two hunks with 3 lines of context',
      a: '1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n',
      b: '1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n',
      want: [
        '--- a',
        '+++ b',
        '@@ -1,5 +1,5 @@',
        ' 1',
        '-2',
        '+X',
        ' 3',
        ' 4',
        ' 5',
        '@@ -8,5 +8,5 @@',
        ' 8',
        ' 9',
        ' 10',
        '-11',
        '+Y',
        ' 12',
      ].join('\n'),
    },
  ];
  for (const c of cases) test(c.name, () => assert.equal(unifiedDiff(c.a, c.b, 'a', 'b'), c.want));
});
