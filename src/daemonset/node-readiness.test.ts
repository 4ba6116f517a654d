import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import { defaultDaemonSet } from '../api/defaults.ts';
import { validateDaemonSet } from '../api/validation.ts';
import { formatTime } from '../k8s/pod.ts';
import type { Node, Pod, Taint } from '../k8s/types.ts';
import { planNodeReadiness } from './node-readiness.ts';
import { FakeCluster, newDaemonSet, newNode, newPod, T0 } from './test-fixtures.ts';

const TAINT: Taint = { key: 'example.com/agent-not-ready', effect: 'NoSchedule' };
// Another writer's taint, which a daemon pod need not tolerate to run (PreferNoSchedule).
const OTHER: Taint = { key: 'example.com/other', effect: 'PreferNoSchedule' };

function agentSet(name: string, mode?: 'Bootstrap' | 'Continuous', edit?: (ds: DaemonSet) => void): DaemonSet {
  const ds = newDaemonSet({ name });
  ds.metadata.uid = `${name}-uid`;
  ds.spec.nodeReadiness = { taint: { key: TAINT.key, effect: 'NoSchedule' }, ...(mode ? { mode } : {}) };
  // The toleration the webhook adds.
  ds.spec.template.spec.tolerations = [{ key: TAINT.key, operator: 'Exists', effect: 'NoSchedule' }];
  edit?.(ds);
  return ds;
}

function podOf(ds: DaemonSet, node: string, ready: boolean | undefined, since = T0): Pod {
  const p = newPod(ds, node, { ready: ready === true });
  p.metadata.ownerReferences = [{ apiVersion: 'apps.kruise.io/v1alpha1', kind: 'DaemonSet', name: ds.metadata.name ?? '', uid: ds.metadata.uid ?? '', controller: true }];
  p.metadata.creationTimestamp = formatTime(since);
  p.status!.conditions = ready === undefined ? [] : [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: formatTime(since) }];
  return p;
} // prettier-ignore

const tainted = (taints: Taint[] = [TAINT, OTHER]): Node => newNode('n1', {}, taints);

describe('planNodeReadiness', () => {
  const a = agentSet('a');
  const b = agentSet('b');
  const pods =
    (...list: Pod[]) =>
    (ds: DaemonSet) =>
      list.find((p) => p.metadata.ownerReferences?.[0]?.uid === ds.metadata.uid);
  const cases: { name: string; node: Node; sets: DaemonSet[]; pods: Pod[]; now?: number; taints?: Taint[] | 'unchanged'; reason?: string; requeue?: number }[] = [
    { name: 'the only agent Ready: the taint goes, every other taint stays', node: tainted(), sets: [a], pods: [podOf(a, 'n1', true)], taints: [OTHER], reason: 'NodeReadinessTaintRemoved' },
    { name: 'no pod yet: the taint stays', node: tainted(), sets: [a], pods: [], taints: 'unchanged' },
    { name: 'two DaemonSets naming the key: stays until both are Ready', node: tainted(), sets: [a, b], pods: [podOf(a, 'n1', true), podOf(b, 'n1', false)], taints: 'unchanged' },
    { name: 'two DaemonSets, both Ready: removed', node: tainted(), sets: [a, b], pods: [podOf(a, 'n1', true), podOf(b, 'n1', true)], taints: [OTHER], reason: 'NodeReadinessTaintRemoved' },
    { name: 'Ready, not yet for minReadySeconds: waits, and looks again then', node: tainted(), sets: [agentSet('m', undefined, (ds) => (ds.spec.minReadySeconds = 10))], pods: [podOf(agentSet('m'), 'n1', true, T0)], now: T0 + 4_000, taints: 'unchanged', requeue: 6_001 },
    { name: 'a DaemonSet that should not run here (node selector): left alone, with a Warning', node: tainted(), sets: [agentSet('sel', undefined, (ds) => (ds.spec.template.spec.nodeSelector = { pool: 'gpu' }))], pods: [], taints: 'unchanged', reason: 'NodeReadinessTaintKept' },
    { name: 'Bootstrap: an untainted node with an unready pod is never tainted again', node: tainted([OTHER]), sets: [a], pods: [podOf(a, 'n1', false, T0)], now: T0 + 3_600_000, taints: 'unchanged' },
    { name: 'Continuous: not Ready for unreadySeconds (default 30): put back', node: tainted([OTHER]), sets: [agentSet('c', 'Continuous')], pods: [podOf(agentSet('c'), 'n1', false, T0)], now: T0 + 31_000, taints: [OTHER, TAINT], reason: 'NodeReadinessTaintAdded' },
    { name: 'Continuous: not Ready for less: waits', node: tainted([OTHER]), sets: [agentSet('c', 'Continuous')], pods: [podOf(agentSet('c'), 'n1', false, T0)], now: T0 + 10_000, taints: 'unchanged', requeue: 20_001 },
  ]; // prettier-ignore
  for (const c of cases) {
    test(c.name, () => {
      const plan = planNodeReadiness(c.node, c.sets, pods(...c.pods), c.now ?? T0 + 1000);
      assert.deepEqual(plan.taints ?? 'unchanged', c.taints);
      if (c.reason)
        assert.deepEqual(
          plan.events.map((e) => e.reason),
          [c.reason],
        );
      else assert.deepEqual(plan.events, []);
      if (c.requeue !== undefined) assert.equal(plan.requeueAfterMs, c.requeue);
    });
  }

  test('NoExecute is put back only when the spec names it, with timeAdded', () => {
    const ds = agentSet('x', 'Continuous', (d) => (d.spec.nodeReadiness!.taint.effect = 'NoExecute'));
    const plan = planNodeReadiness(tainted([]), [ds], () => podOf(ds, 'n1', false, T0), T0 + 60_000);
    assert.deepEqual(plan.taints, [{ key: TAINT.key, effect: 'NoExecute', timeAdded: formatTime(T0 + 60_000) }]);
  });
});

describe('the NodeReadiness condition of the DaemonSet', () => {
  test('NodesWaiting while tainted nodes lack an available pod, then True; NodeWritesForbidden when refused', () => {
    const ds = agentSet('a');
    const nodes = [newNode('n1', {}, [TAINT]), newNode('n2', {}, [TAINT]), newNode('n3')];
    const c = new FakeCluster(ds, nodes);
    c.sync();
    const cond = () => c.ds.status?.conditions?.find((x) => x.type === 'NodeReadiness');
    assert.deepEqual([cond()?.status, cond()?.reason], ['False', 'NodesWaiting']);
    assert.match(cond()?.message ?? '', /^2 nodes carry example\.com\/agent-not-ready:NoSchedule and wait for this DaemonSet's pods: n1, n2$/);
    c.markReady();
    c.nodes = [newNode('n1'), newNode('n2'), newNode('n3')];
    c.sync();
    assert.deepEqual([cond()?.status, cond()?.reason], ['True', 'NoNodeWaiting']);
    c.options = { nodeTaintsForbidden: true };
    c.sync();
    assert.deepEqual([cond()?.status, cond()?.reason], ['False', 'NodeWritesForbidden']);
    assert.match(cond()?.message ?? '', /nodeReadiness\.manageTaints=true/);
  }); // prettier-ignore

  test('none without spec.nodeReadiness', () => {
    const c = new FakeCluster(newDaemonSet(), [newNode('n1')]);
    c.sync();
    assert.equal(
      c.ds.status?.conditions?.some((x) => x.type === 'NodeReadiness'),
      false,
    );
  });
});

describe('spec.nodeReadiness at admission', () => {
  const manifest = (readiness: unknown, tolerations?: unknown[]) => {
    const ds = JSON.parse(JSON.stringify(newDaemonSet())) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    ds.spec.nodeReadiness = readiness;
    if (tolerations) ds.spec.template.spec.tolerations = tolerations;
    return ds;
  };
  test('defaulted: mode Bootstrap, effect NoSchedule, the toleration added once; unreadySeconds 30 under Continuous', () => {
    const out = defaultDaemonSet(manifest({ taint: { key: TAINT.key } })) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.deepEqual(out.spec.nodeReadiness, { taint: { key: TAINT.key, effect: 'NoSchedule' }, mode: 'Bootstrap' });
    assert.deepEqual(out.spec.template.spec.tolerations, [
      { key: TAINT.key, operator: 'Exists', effect: 'NoSchedule' },
    ]);
    const again = defaultDaemonSet(out) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(again.spec.template.spec.tolerations.length, 1, 'not added twice');
    const wide = defaultDaemonSet(manifest({ taint: { key: TAINT.key } }, [{ operator: 'Exists' }])) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.deepEqual(
      wide.spec.template.spec.tolerations,
      [{ operator: 'Exists' }],
      'a toleration of everything covers it',
    );
    const cont = defaultDaemonSet(
      manifest({ taint: { key: TAINT.key, effect: 'NoExecute' }, mode: 'Continuous' }),
    ) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(cont.spec.nodeReadiness.unreadySeconds, 30);
  });
  test('validated with field paths', () => {
    const errors = (r: unknown) => validateDaemonSet(defaultDaemonSet(manifest(r))).map((e) => `${e.field}: ${e.type}`);
    assert.deepEqual(errors({ taint: { key: 'bad key!' } }), ['spec.nodeReadiness.taint.key: FieldValueInvalid']);
    assert.deepEqual(errors({ taint: { key: TAINT.key, effect: 'Sometimes' } }), ['spec.nodeReadiness.taint.effect: FieldValueNotSupported']);
    assert.deepEqual(errors({ taint: { key: TAINT.key }, mode: 'Always' }), ['spec.nodeReadiness.mode: FieldValueNotSupported']);
    assert.deepEqual(errors({ taint: { key: TAINT.key }, mode: 'Continuous', unreadySeconds: -1 }), ['spec.nodeReadiness.unreadySeconds: FieldValueInvalid']);
    assert.deepEqual(errors({ mode: 'Bootstrap' }), ['spec.nodeReadiness.taint: FieldValueRequired']);
  }); // prettier-ignore
});
