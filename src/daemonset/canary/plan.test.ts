// Whole canaries through the planner (FakeCluster): which nodes run which revision, the events, status.canary and
// the Progressing condition, after ExtendedDaemonSet's canary tests
// (https://github.com/DataDog/extendeddaemonset/blob/main/controllers/extendeddaemonsetreplicaset/strategy/canary_test.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet, DaemonSetCondition } from '../../api/types.ts';
import type { Node, Pod } from '../../k8s/types.ts';
import { formatTime } from '../../k8s/pod.ts';
import { CANARY_POD_LABEL, CONTROLLER_REVISION_HASH_LABEL } from '../constants.ts';
import { daemonSetGauges } from '../metrics.ts';
import type { Plan } from '../plan-types.ts';
import { FakeCluster, addNodes, newDaemonSet, newNode } from '../test-fixtures.ts';
import { storedCanaryStatus, type CanarySpec } from './settings.ts';

const MIN = 60_000;

const ZONES = ['zone-a', 'zone-b', 'zone-c'];

function canaryCluster(canary: CanarySpec, opts: { nodes?: Node[]; rollingUpdate?: Record<string, unknown> } = {}) {
  const ds = newDaemonSet({
    image: 'img:v1',
    strategy: 'RollingUpdate',
    rollingUpdate: { maxUnavailable: 1, ...(opts.rollingUpdate ?? {}), canary },
  });
  const c = new FakeCluster(ds, opts.nodes ?? addNodes(5));
  settle(c);
  return c;
}

/** Sync (pods turning Ready at once) until a sync changes nothing; every plan is returned. */
function settle(c: FakeCluster, max = 40, ready = (_p: Pod) => true): Plan[] {
  const plans: Plan[] = [];
  for (let i = 0; i < max; i++) {
    const p = c.sync();
    plans.push(p);
    c.markReady(ready);
    if (p.creates.length + p.deletes.length + p.inPlaceUpdates.length === 0 && p.stage === 'Complete') {
      const again = c.plan();
      if (again.creates.length + again.deletes.length + again.inPlaceUpdates.length === 0) {
        if (again.statusChanged || again.podPatches.length > 0) {
          c.apply(again);
          plans.push(again);
        }
        return plans;
      }
    }
  }
  return plans;
}

const imageOf = (p: Pod) => p.spec.containers[0]?.image ?? '';
const imagesByNode = (c: FakeCluster) =>
  Object.fromEntries(
    c
      .live()
      .map((p) => [p.spec.nodeName ?? '', imageOf(p)] as const)
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
const canaryOf = (c: FakeCluster) => storedCanaryStatus(c.ds);
const progressing = (ds: DaemonSet) =>
  (ds.status?.conditions ?? []).find((x: DaemonSetCondition) => x.type === 'Progressing');
const eventsOf = (plans: Plan[], reason: string) => plans.flatMap((p) => p.events.filter((e) => e.reason === reason));

/** Pods of `image` on `nodes` crash: restartCount and CrashLoopBackOff as the kubelet reports it, not Ready. */
function crash(c: FakeCluster, nodes: readonly string[], restartCount: number, image = 'img:v2'): void {
  c.pods = c.pods.map((p) => {
    if (!nodes.includes(p.spec.nodeName ?? '') || imageOf(p) !== image || p.metadata.deletionTimestamp) return p;
    const cs = (p.status?.containerStatuses ?? []).map((s) => ({
      ...s,
      restartCount,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: formatTime(c.now) } },
    }));
    const conditions = [{ type: 'Ready', status: 'False' as const, lastTransitionTime: formatTime(c.now) }];
    return { ...p, status: { ...p.status, containerStatuses: cs, conditions } };
  });
}

describe('canary through the planner', () => {
  test('Auto: only the canary nodes get the new revision, new nodes the stable one; promoted after duration', () => {
    const c = canaryCluster({ nodes: 2, duration: '10m', noRestartsDuration: '5m' });
    assert.equal(canaryOf(c), undefined, 'no canary for the first rollout');
    c.setImage('img:v2');
    c.nodes = [...c.nodes, newNode('node-9')];
    const plans = settle(c);
    const canary = canaryOf(c);
    assert.deepEqual([canary?.phase, canary?.reason, canary?.nodes], ['Observing', 'Started', ['node-0', 'node-1']]);
    assert.equal(
      canary?.stableRevision,
      c.revisions.find((r) => r.revision === 1)?.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL],
    );
    assert.deepEqual(imagesByNode(c), {
      'node-0': 'img:v2',
      'node-1': 'img:v2',
      'node-2': 'img:v1',
      'node-3': 'img:v1',
      'node-4': 'img:v1',
      'node-9': 'img:v1',
    });
    assert.deepEqual(
      c
        .live()
        .filter((p) => p.metadata.labels?.[CANARY_POD_LABEL] === 'true')
        .map((p) => p.spec.nodeName)
        .sort(),
      ['node-0', 'node-1'],
    );
    assert.equal(eventsOf(plans, 'CanaryStarted').length, 1);
    assert.match(eventsOf(plans, 'CanaryStarted')[0]?.message ?? '', /started on nodes node-0, node-1/);
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'CanaryObserving']);
    const last = c.plan();
    assert.equal(last.requeueAfterMs, 10 * MIN, 'requeued for the duration, no event needed');

    c.now += 10 * MIN;
    const after = settle(c);
    assert.equal(canaryOf(c)?.phase, 'Promoted');
    assert.equal(eventsOf(after, 'CanaryPromoted').length, 1);
    assert.ok(
      c.live().every((p) => imageOf(p) === 'img:v2'),
      JSON.stringify(imagesByNode(c)),
    );
    assert.ok(
      c.live().every((p) => p.metadata.labels?.[CANARY_POD_LABEL] === undefined),
      'labels removed',
    );
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'RolloutComplete']);
  });

  test('crashloop: paused, then failed; canary nodes back to stable, no other node ever ran the bad image', () => {
    const c = canaryCluster({ nodes: 2, autoPause: { maxRestarts: 1 }, autoFail: { maxRestarts: 3 } });
    c.setImage('img:v2');
    const plans: Plan[] = [];
    const badOutsideCanary = () =>
      c.pods.some((p) => imageOf(p) === 'img:v2' && !['node-0', 'node-1'].includes(p.spec.nodeName ?? ''));
    const step = (restarts: number) => {
      for (let i = 0; i < 6; i++) {
        plans.push(c.sync());
        c.markReady((p) => imageOf(p) === 'img:v1');
        crash(c, ['node-0', 'node-1'], restarts);
        assert.ok(!badOutsideCanary(), 'a non-canary node ran the canary revision');
        c.now += 1000;
      }
    };
    step(2);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Paused', 'CrashLoopBackOff']);
    const paused = eventsOf(plans, 'CanaryPaused');
    assert.equal(paused.length, 1);
    assert.equal(paused[0]?.type, 'Warning');
    assert.match(paused[0]?.message ?? '', /pod default\/foo-\d+ on node node-[01]: container foo restarted 2 times/);
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['Unknown', 'CanaryPaused']);
    // Paused: the rolling update stops, so at most maxUnavailable canary nodes took the bad revision.
    assert.equal(c.live().filter((p) => imageOf(p) === 'img:v2').length, 1);

    step(4);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Failed', 'CrashLoopBackOff']);
    assert.equal(eventsOf(plans, 'CanaryFailed').length, 1);
    assert.match(
      eventsOf(plans, 'CanaryFailed')[0]?.message ?? '',
      /more than autoFail.maxRestarts 3; rolling back nodes node-0, node-1/,
    );
    for (let i = 0; i < 10; i++) {
      plans.push(c.sync());
      c.markReady((p) => imageOf(p) === 'img:v1');
      assert.ok(!badOutsideCanary());
    }
    assert.ok(
      c.live().every((p) => imageOf(p) === 'img:v1'),
      JSON.stringify(imagesByNode(c)),
    );
    assert.equal(eventsOf(plans, 'CanaryRolledBack').length, 1);
    assert.match(canaryOf(c)?.message ?? '', /the canary nodes run the stable revision again$/);
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['False', 'CanaryFailed']);
    assert.ok(c.live().every((p) => p.metadata.labels?.[CANARY_POD_LABEL] === undefined));

    // Held until the template changes: a new node gets the stable revision, nothing moves.
    c.nodes = [...c.nodes, newNode('node-7')];
    settle(c);
    assert.equal(imagesByNode(c)['node-7'], 'img:v1');
    assert.equal(canaryOf(c)?.phase, 'Failed');

    // A fixed version: a new canary, on the same nodes, with the same stable revision.
    const stable = canaryOf(c)?.stableRevision;
    c.setImage('img:v3');
    const restarted = settle(c);
    assert.deepEqual(
      [canaryOf(c)?.phase, canaryOf(c)?.reason, canaryOf(c)?.nodes],
      ['Observing', 'Restarted', ['node-0', 'node-1']],
    );
    assert.equal(canaryOf(c)?.stableRevision, stable);
    assert.equal(eventsOf(restarted, 'CanaryStarted').length, 1);
  });

  test('badimage: paused at once', () => {
    const c = canaryCluster({ nodes: 1 });
    c.setImage('img:v2');
    c.sync();
    c.sync();
    c.pods = c.pods.map((p) =>
      imageOf(p) === 'img:v2'
        ? {
            ...p,
            status: {
              ...p.status,
              containerStatuses: (p.status?.containerStatuses ?? []).map((s) => ({
                ...s,
                state: { waiting: { reason: 'ErrImagePull', message: 'pull failed' } },
              })),
            },
          }
        : p,
    );
    const p = c.sync();
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Paused', 'ErrImagePull']);
    assert.match(
      p.events.find((e) => e.reason === 'CanaryPaused')?.message ?? '',
      /cannot start: ErrImagePull \(pull failed\)/,
    );
  });

  test('Manual: waits for canary-validated naming the revision', () => {
    const c = canaryCluster({ nodes: 1, validation: 'Manual' });
    c.setImage('img:v2');
    settle(c);
    c.now += 600 * MIN;
    settle(c);
    assert.equal(canaryOf(c)?.phase, 'Observing');
    assert.equal(c.live().filter((p) => imageOf(p) === 'img:v2').length, 1);
    const hash = canaryOf(c)?.revision ?? '';
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-validated': hash } } };
    const plans = settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Promoted', 'ManualValidation']);
    assert.equal(eventsOf(plans, 'CanaryPromoted').length, 1);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v2'));
  });

  test('spreadByNodeLabels: 3 canary nodes over 3 zones', () => {
    const nodes = Array.from({ length: 9 }, (_, i) =>
      newNode(`node-${i}`, { 'topology.kubernetes.io/zone': ZONES[Math.floor(i / 3)] as string }),
    );
    const c = canaryCluster({ nodes: 3, spreadByNodeLabels: ['topology.kubernetes.io/zone'] }, { nodes });
    c.setImage('img:v2');
    settle(c);
    const picked = canaryOf(c)?.nodes ?? [];
    assert.equal(picked.length, 3);
    const zones = picked.map(
      (n) => c.nodes.find((x) => x.metadata.name === n)?.metadata.labels?.['topology.kubernetes.io/zone'],
    );
    assert.deepEqual([...new Set(zones)].sort(), ZONES);
  });

  test('nodeSelector and rollingUpdate.selector restrict the candidates', () => {
    const nodes = [
      newNode('node-0'),
      newNode('node-1', { pool: 'general' }),
      newNode('node-2', { pool: 'general', gpu: 'y' }),
    ];
    const c = canaryCluster(
      { nodes: 3, nodeSelector: { matchLabels: { pool: 'general' } } },
      { nodes, rollingUpdate: { selector: { matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] } } },
    );
    c.setImage('img:v2');
    settle(c);
    assert.deepEqual(canaryOf(c)?.nodes, ['node-1']);
  });

  test('a newer template during the canary restarts it on the same nodes', () => {
    const c = canaryCluster({ nodes: 2 });
    c.setImage('img:v2');
    settle(c);
    const first = canaryOf(c);
    c.setImage('img:v3');
    settle(c);
    const second = canaryOf(c);
    assert.deepEqual([second?.phase, second?.reason, second?.nodes], ['Observing', 'Restarted', first?.nodes]);
    assert.equal(second?.stableRevision, first?.stableRevision);
    assert.notEqual(second?.revision, first?.revision);
    assert.deepEqual(
      c
        .live()
        .filter((p) => imageOf(p) !== 'img:v1')
        .map((p) => [p.spec.nodeName, imageOf(p)])
        .sort(),
      [
        ['node-0', 'img:v3'],
        ['node-1', 'img:v3'],
      ],
    );
  });

  test('back to the stable template during the canary: it ends, canary nodes return', () => {
    const c = canaryCluster({ nodes: 2 });
    c.setImage('img:v2');
    settle(c);
    c.setImage('img:v1');
    settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Promoted', 'StableRevision']);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));
  });

  test('InPlaceIfPossible: canary pods keep their UIDs, forward and back', () => {
    const c = canaryCluster(
      { nodes: 2 },
      { rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 2 } },
    );
    const uids = new Map(c.live().map((p) => [p.spec.nodeName, p.metadata.uid]));
    c.setImage('img:v2');
    const plans = settle(c);
    c.kubeletRestartChangedContainers();
    settle(c);
    assert.ok(plans.some((p) => p.inPlaceUpdates.length > 0));
    assert.equal(canaryOf(c)?.phase, 'Observing', canaryOf(c)?.message);
    assert.equal(c.live().filter((p) => imageOf(p) === 'img:v2').length, 2);
    assert.deepEqual(new Map(c.live().map((p) => [p.spec.nodeName, p.metadata.uid])), uids);
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-failed': 'true' } } };
    settle(c);
    c.kubeletRestartChangedContainers();
    settle(c);
    assert.equal(canaryOf(c)?.phase, 'Failed');
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));
    assert.deepEqual(new Map(c.live().map((p) => [p.spec.nodeName, p.metadata.uid])), uids);
  });

  test('surge on canary nodes: the new pod first, within maxSurge', () => {
    const c = canaryCluster({ nodes: 2 }, { rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
    c.setImage('img:v2');
    const p = c.sync();
    assert.deepEqual([p.creates.length, p.deletes.length], [1, 0]);
    assert.ok(['node-0', 'node-1'].includes(p.creates[0]?.nodeName ?? ''));
    settle(c);
    assert.equal(c.live().filter((x) => imageOf(x) === 'img:v2').length, 2);
    assert.equal(c.live().length, 5);
  });

  test('canary removed from the spec during the canary: promoted (CanaryRemoved), rolled out everywhere', () => {
    const c = canaryCluster({ nodes: 1 });
    c.setImage('img:v2');
    settle(c);
    c.updateSpec((ds) => {
      delete (ds.spec.updateStrategy?.rollingUpdate as { canary?: unknown }).canary;
    });
    settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Promoted', 'CanaryRemoved']);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v2'));
  });

  test('canary-resumed resumes a canary autoPause paused, for that canary only; autoFail still applies', () => {
    const c = canaryCluster({ nodes: 2, autoPause: { maxRestarts: 1 }, autoFail: { maxRestarts: 6 } });
    c.setImage('img:v2');
    const plans: Plan[] = [];
    const step = (restarts: number, image = 'img:v2', nodes = ['node-0', 'node-1']) => {
      for (let i = 0; i < 6; i++) {
        plans.push(c.sync());
        c.markReady((p) => imageOf(p) === 'img:v1');
        crash(c, nodes, restarts, image);
        c.now += 1000;
      }
    };
    const annotate = (annotations: Record<string, string>) => {
      c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations } };
    };
    step(2);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Paused', 'CrashLoopBackOff']);
    const v2 = canaryOf(c)?.revision ?? '';

    // A hash of another revision does nothing.
    annotate({ 'advanced-daemonset.io/canary-resumed': canaryOf(c)?.stableRevision ?? '' });
    step(2);
    assert.deepEqual(
      [canaryOf(c)?.phase, canaryOf(c)?.reason, canaryOf(c)?.resumed],
      ['Paused', 'CrashLoopBackOff', false],
    );

    annotate({ 'advanced-daemonset.io/canary-resumed': v2 });
    step(3);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason, canaryOf(c)?.resumed], ['Observing', 'Resumed', true]);
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'CanaryObserving']);
    assert.equal(eventsOf(plans, 'CanaryPaused').length, 1, 'not paused again: autoPause is off for this canary');

    step(7);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Failed', 'CrashLoopBackOff']);

    // The next canary (the annotation still names v2): autoPause applies again.
    c.setImage('img:v3');
    plans.length = 0;
    step(2, 'img:v3');
    assert.notEqual(canaryOf(c)?.revision, v2);
    assert.deepEqual(
      [canaryOf(c)?.phase, canaryOf(c)?.reason, canaryOf(c)?.resumed],
      ['Paused', 'CrashLoopBackOff', false],
    );
    assert.equal(eventsOf(plans, 'CanaryPaused').length, 1);
  });

  test('canary-failed naming the revision fails that canary only: the next template runs its canary', () => {
    const c = canaryCluster({ nodes: 1, duration: '10m', noRestartsDuration: '5m' });
    c.setImage('img:v2');
    settle(c);
    const v2 = canaryOf(c)?.revision ?? '';
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-failed': v2 } } };
    settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Failed', 'ManualFail']);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));

    c.setImage('img:v3');
    settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Observing', 'Restarted']);
    c.now += 10 * MIN;
    settle(c);
    assert.equal(canaryOf(c)?.phase, 'Promoted');
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v3'));
  });

  test('canary-failed "true" stays in force: the next canary fails at its first sync', () => {
    const c = canaryCluster({ nodes: 1 });
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-failed': 'true' } } };
    c.setImage('img:v2');
    const plans = settle(c);
    assert.deepEqual([canaryOf(c)?.phase, canaryOf(c)?.reason], ['Failed', 'ManualFail']);
    assert.equal(eventsOf(plans, 'CanaryFailed').length, 1);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));
  });

  /** A canary of img:v2 failed by hand and rolled back. */
  const failedCanary = () => {
    const c = canaryCluster({ nodes: 1 });
    c.setImage('img:v2');
    settle(c);
    const hash = canaryOf(c)?.revision ?? '';
    c.ds = { ...c.ds, metadata: { ...c.ds.metadata, annotations: { 'advanced-daemonset.io/canary-failed': hash } } };
    settle(c);
    assert.equal(canaryOf(c)?.phase, 'Failed');
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v1'));
    return { c, hash };
  };
  const removeCanary = (c: FakeCluster) =>
    c.updateSpec((ds) => {
      delete (ds.spec.updateStrategy?.rollingUpdate as { canary?: unknown }).canary;
    });
  const notFailed = (c: FakeCluster) => {
    assert.notEqual(canaryOf(c)?.phase, 'Failed');
    assert.notEqual(progressing(c.ds)?.reason, 'CanaryFailed');
    // The CanaryFailed alert matches this series (charts/advanced-daemonset/templates/prometheusrule.yaml).
    assert.notEqual(daemonSetGauges(c.ds, { hash: '' }).canaryPhase, 'Failed');
  };

  test('canary removed from the spec after it failed: no longer Failed (Promoted, CanaryRemoved), rolled out', () => {
    const { c, hash } = failedCanary();
    removeCanary(c);
    const plans = settle(c);
    assert.deepEqual(
      [canaryOf(c)?.revision, canaryOf(c)?.phase, canaryOf(c)?.reason],
      [hash, 'Promoted', 'CanaryRemoved'],
    );
    assert.match(canaryOf(c)?.message ?? '', /rollingUpdate.canary was removed after the canary failed \(ManualFail\)/);
    assert.equal(eventsOf(plans, 'CanaryPromoted').length, 1);
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v2'));
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'RolloutComplete']);
    notFailed(c);
  });

  test('canary removed together with a new template after it failed: the new revision rolls out, not Failed', () => {
    const { c, hash } = failedCanary();
    removeCanary(c);
    c.setImage('img:v3');
    settle(c);
    const now = canaryOf(c);
    assert.notEqual(now?.revision, hash);
    assert.deepEqual(
      [now?.revision, now?.phase, now?.reason],
      [c.ds.status?.daemonSetHash, 'Promoted', 'CanaryRemoved'],
    );
    assert.match(now?.message ?? '', new RegExp(`the canary of revision ${hash} had failed`));
    assert.ok(c.live().every((p) => imageOf(p) === 'img:v3'));
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'RolloutComplete']);
    notFailed(c);
  });

  test('OnDelete: no canary', () => {
    const c = canaryCluster({ nodes: 1 });
    c.updateSpec((ds) => {
      ds.spec.updateStrategy = {
        type: 'OnDelete',
        rollingUpdate: { canary: { nodes: 1 } },
      } as DaemonSet['spec']['updateStrategy'];
    });
    c.setImage('img:v2');
    settle(c);
    assert.equal(canaryOf(c), undefined);
  });

  test('the stable revision is kept by cleanupHistory while the canary runs', () => {
    const ds = newDaemonSet({
      image: 'img:v1',
      strategy: 'RollingUpdate',
      revisionHistoryLimit: 0,
      rollingUpdate: { canary: { nodes: 1 } },
    });
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c);
    const stable = canaryOf(c)?.stableRevision;
    assert.ok(c.revisions.some((r) => r.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] === stable));
  });
});

describe('progressDeadlineSeconds', () => {
  const stuck = () => {
    const ds = newDaemonSet({ image: 'img:v1', strategy: 'RollingUpdate' });
    ds.spec.progressDeadlineSeconds = 60;
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    // New pods never become Ready: one node is down, maxUnavailable 1 keeps the rest.
    settle(c, 10, (p) => imageOf(p) === 'img:v1');
    return c;
  };

  test('a stuck rollout turns Progressing False after the deadline, and True again on progress', () => {
    const c = stuck();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'Updating']);
    const p = c.plan();
    assert.ok(p.requeueAfterMs !== undefined && p.requeueAfterMs <= 61_000, `requeue ${p.requeueAfterMs}`);
    c.now += 30_000;
    c.sync();
    assert.equal(progressing(c.ds)?.status, 'True');
    c.now += 31_000;
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['False', 'ProgressDeadlineExceeded']);
    assert.match(progressing(c.ds)?.message ?? '', /no progress for more than progressDeadlineSeconds 60/);
    c.now += 60_000;
    c.sync();
    assert.equal(progressing(c.ds)?.reason, 'ProgressDeadlineExceeded', 'stays until progress');
    c.markReady();
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'Updating']);
  });

  test('without progressDeadlineSeconds: no deadline, no lastUpdateTime', () => {
    const ds = newDaemonSet({ image: 'img:v1', strategy: 'RollingUpdate' });
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c, 10, (p) => imageOf(p) === 'img:v1');
    c.now += 3600_000;
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'Updating']);
    assert.equal((progressing(c.ds) as { lastUpdateTime?: string }).lastUpdateTime, undefined);
  });

  test('a canary stuck after waiting: the deadline counts from the last wait, not from the canary start', () => {
    const ds = newDaemonSet({
      image: 'img:v1',
      strategy: 'RollingUpdate',
      rollingUpdate: {
        canary: { nodes: 1, duration: '30m', autoPause: { enabled: false }, autoFail: { enabled: false } },
      },
    });
    ds.spec.progressDeadlineSeconds = 60;
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c);
    c.now += 10 * MIN;
    c.sync();
    crash(c, canaryOf(c)?.nodes ?? [], 1);
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['True', 'CanaryObserving']);
    c.now += 61_000;
    c.sync();
    assert.deepEqual([progressing(c.ds)?.status, progressing(c.ds)?.reason], ['False', 'ProgressDeadlineExceeded']);
  });

  test('a waiting canary does not write status at every sync (each write syncs again)', () => {
    const ds = newDaemonSet({ image: 'img:v1', strategy: 'RollingUpdate', rollingUpdate: { canary: { nodes: 1 } } });
    ds.spec.progressDeadlineSeconds = 600;
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c);
    const changed: boolean[] = [];
    for (let i = 0; i < 30; i++) {
      c.now += 1000;
      changed.push(c.sync().statusChanged);
    }
    assert.ok(!changed.includes(true), JSON.stringify(changed));
  });

  test('a canary waiting for its duration is not stuck', () => {
    const ds = newDaemonSet({
      image: 'img:v1',
      strategy: 'RollingUpdate',
      rollingUpdate: { canary: { nodes: 1, duration: '30m' } },
    });
    ds.spec.progressDeadlineSeconds = 60;
    const c = new FakeCluster(ds, addNodes(3));
    settle(c);
    c.setImage('img:v2');
    settle(c);
    for (let i = 0; i < 20; i++) {
      c.now += 60_000;
      c.sync();
      assert.equal(progressing(c.ds)?.reason, 'CanaryObserving');
    }
  });
});
