// e2e: the per-DaemonSet metrics of a running manager, and the chart's PromQL against them. A manager (webhook +
// controller, leader election) on a control plane of its own drives one DaemonSet through a rollout held at its
// partition, paused, resumed, then updated in place; at each step its kruise_daemonset_* series must equal the
// DaemonSet's status and spec, the rollout duration must age between scrapes without a sync, and the pod counters
// must equal the creates, deletes and in-place updates a pod watch saw. Then every metric that a PrometheusRule
// expression or a Grafana panel query of the chart reads (parsed with the Prometheus parser, test/chart/promql.ts)
// must be one this manager exports, and the DaemonSet's series must vanish once it is deleted.
//
// A private cluster: on the shared one the harness's manager would reconcile the DaemonSet (and report it).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { apply, eventually, fixture, kubectl } from '../lib/kube.ts';
import {
  ADS,
  PodWatch,
  adsManifest,
  condition,
  describeOnPrivateCluster,
  getAds,
  patchAds,
  waitRolledOut,
  type AdsJson,
} from '../lib/ads.ts';
import { startManager, type ManagerProcess } from '../lib/manager.ts';
import { render } from '../../test/chart/helm.ts';
import { isExported, metricNames, shippedQueries } from '../../test/chart/promql.ts';
import { daemonSetSeries, scrape, type Scrape } from './scrape.ts';

const PREFIX = 'kruise_daemonset_';
const name = 'metrics';

/** The template's only container; a merge patch replaces the whole list. */
const container = (image: string, mode: string) => ({ name: 'c', image, env: [{ name: 'MODE', value: mode }] });
const templatePatch = (image: string, mode: string) => ({
  spec: { template: { spec: { containers: [container(image, mode)] } } },
});

/** What the pod watch saw the controller do: pods created, pods deleted, in-place image changes. */
function podOperations(watch: PodWatch): { creates: number; deletes: number; inPlace: number } {
  const images = new Map<string, Set<string>>();
  const deleted = new Set<string>();
  for (const e of watch.events) {
    const uid = e.pod.metadata.uid;
    const set = images.get(uid) ?? new Set<string>();
    for (const c of e.pod.spec.containers) set.add(c.image ?? '');
    images.set(uid, set);
    if (e.type === 'DELETED' || e.pod.metadata.deletionTimestamp) deleted.add(uid);
  }
  let inPlace = 0;
  for (const s of images.values()) inPlace += s.size - 1;
  return { creates: images.size, deletes: deleted.size, inPlace };
}

/** The series the DaemonSet's status and the given spec values must show (the status read from the apiserver). */
function expectedSeries(ds: AdsJson, spec: { partition: number; maxUnavailable: number; paused: number }) {
  const s = ds.status ?? {};
  const want = new Map<string, number>([
    ['status_desired_number_scheduled', s.desiredNumberScheduled ?? 0],
    ['status_current_number_scheduled', s.currentNumberScheduled ?? 0],
    ['status_number_ready', s.numberReady ?? 0],
    ['status_number_available', s.numberAvailable ?? 0],
    ['status_number_unavailable', s.numberUnavailable ?? 0],
    ['status_updated_number_scheduled', s.updatedNumberScheduled ?? 0],
    ['status_number_misscheduled', s.numberMisscheduled ?? 0],
    ['metadata_generation', ds.metadata.generation ?? 0],
    ['status_observed_generation', s.observedGeneration ?? 0],
    ['spec_strategy_rollingupdate_partition', spec.partition],
    ['spec_strategy_rollingupdate_max_unavailable', spec.maxUnavailable],
    ['spec_strategy_rollingupdate_paused', spec.paused],
    ['rollout_frozen', ds.metadata.annotations?.['advanced-daemonset.io/rollout-frozen'] === 'true' ? 1 : 0],
    ['status_canary_phase{phase="none"}', 1],
    [
      'rollout_in_progress',
      condition(ds, 'RolloutComplete')?.status === 'True' || condition(ds, 'Progressing')?.reason === 'PartitionReached'
        ? 0
        : 1,
    ],
  ]);
  for (const c of s.conditions ?? []) {
    for (const st of ['true', 'false', 'unknown'])
      want.set(`status_condition{condition="${c.type}",status="${st}"}`, +(c.status.toLowerCase() === st));
  }
  return want;
}

describeOnPrivateCluster('rollout metrics of a running manager', { timeout: 900_000 }, (cluster) => {
  const f = fixture('metrics', 3);
  let manager: ManagerProcess | undefined;
  let watch: PodWatch | undefined;

  before(async () => {
    manager = await startManager({
      kubeconfig: cluster.kubeconfig,
      dir: join(cluster.dir, 'manager'),
      args: ['--log-level', 'debug'],
      timeoutMs: 120_000,
    });
  });

  after(async () => {
    watch?.stop();
    await manager?.stop();
  });

  const series = async () => daemonSetSeries(await scrape(manager!.metricsPort), PREFIX, f.ns, name);

  /**
   * Waits until the DaemonSet's status satisfies `ready`, then until its series equal what that status and `spec`
   * say (both read afresh each time, as the metrics follow the controller's syncs); returns the last scrape's series.
   */
  async function agree(
    what: string,
    ready: (ds: AdsJson) => boolean,
    spec: { partition: number; maxUnavailable: number; paused: number },
  ): Promise<Map<string, number>> {
    await eventually(`${name} to reach: ${what}`, async () => ready(await getAds(f.ns, name)), { timeoutMs: 180_000 });
    return eventually(
      `the kruise_daemonset_* series of ${name} to equal its status (${what})`,
      async () => {
        const ds = await getAds(f.ns, name);
        if (!ready(ds)) throw new Error(`${what} no longer holds: ${JSON.stringify(ds.status)}`);
        const got = await series();
        const wrong = [...expectedSeries(ds, spec)].filter(([k, v]) => got.get(k) !== v);
        if (wrong.length > 0) {
          throw new Error(wrong.map(([k, v]) => `${k}: want ${v}, got ${got.get(k)}`).join('; '));
        }
        return got;
      },
      { timeoutMs: 120_000 },
    );
  }

  /** Waits until the pod counters equal what the watch saw, with no error counted. */
  async function countersMatchWatch(): Promise<{ creates: number; deletes: number; inPlace: number }> {
    return eventually(
      'the pod operation counters to equal the creates, deletes and in-place updates the watch saw',
      async () => {
        watch!.assertAlive();
        const seen = podOperations(watch!);
        const got = await series();
        const counts = {
          creates: got.get('pod_creates_total{result="success"}'),
          deletes: got.get('pod_deletes_total{result="success"}'),
          inPlace: got.get('pod_inplace_updates_total{result="success"}'),
        };
        const errors = ['pod_creates_total', 'pod_deletes_total', 'pod_inplace_updates_total'].map((c) =>
          got.get(`${c}{result="error"}`),
        );
        if (JSON.stringify(counts) !== JSON.stringify(seen) || errors.some((e) => e !== 0)) {
          throw new Error(
            `counters ${JSON.stringify(counts)} errors ${errors.join(',')}; watch ${JSON.stringify(seen)}`,
          );
        }
        return seen;
      },
      { timeoutMs: 60_000 },
    );
  }

  test('the series follow a rollout: held at its partition, paused, resumed, then updated in place', async () => {
    watch = await PodWatch.start(f.ns, `app=${name}`);
    const manifest = adsManifest({
      name,
      namespace: f.ns,
      group: f.group,
      updateStrategy: {
        type: 'RollingUpdate',
        rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1 },
      },
    });
    (manifest.spec as { template: { spec: Record<string, unknown> } }).template.spec.containers = [
      container('busybox:1.36', 'v1'),
    ];
    await apply(manifest);
    await waitRolledOut(f.ns, name, 3, 180_000);

    // 1. Rolled out: nothing in progress, no duration.
    const rolledOut = (ds: AdsJson) =>
      ds.status?.observedGeneration === ds.metadata.generation &&
      condition(ds, 'RolloutComplete')?.status === 'True' &&
      ds.status?.updatedNumberScheduled === 3;
    let s = await agree('rolled out', rolledOut, { partition: 0, maxUnavailable: 1, paused: 0 });
    assert.equal(s.get('rollout_duration_seconds'), 0);
    assert.equal(s.get('status_desired_number_scheduled'), 3);
    const first = await countersMatchWatch();
    assert.deepEqual(first, { creates: 3, deletes: 0, inPlace: 0 }, 'one pod per node created');

    // 2. A template change the pods cannot take in place (env), held at partition 2 of 3: one node is recreated.
    const changedAt = Date.now();
    await patchAds(f.ns, name, {
      spec: {
        template: { spec: { containers: [container('busybox:1.36', 'v2')] } },
        updateStrategy: { rollingUpdate: { partition: 2 } },
      },
    });
    const heldAtPartition = (ds: AdsJson) =>
      ds.status?.observedGeneration === ds.metadata.generation &&
      ds.status?.updatedNumberScheduled === 1 &&
      ds.status?.numberAvailable === 3 &&
      condition(ds, 'Progressing')?.reason === 'PartitionReached';
    s = await agree('held at partition 2', heldAtPartition, { partition: 2, maxUnavailable: 1, paused: 0 });
    // Held at its partition: done for now, as kubectl ads status says; the duration goes on.
    assert.equal(s.get('rollout_in_progress'), 0);
    assert.equal(s.get('status_condition{condition="Progressing",status="true"}'), 1, 'done, as a Deployment says');
    // The duration counts from the revision change, and ages at every scrape though no sync runs.
    const a = await scrape(manager!.metricsPort);
    const d1 = daemonSetSeries(a, PREFIX, f.ns, name).get('rollout_duration_seconds')!;
    assert.ok(
      d1 > 0 && d1 <= (a.readAt - changedAt) / 1000,
      `duration ${d1}s within the ${a.readAt - changedAt} ms since the change`,
    );
    const { b, d2 } = await eventually(
      'the rollout duration to grow by 2 s',
      async () => {
        const b = await scrape(manager!.metricsPort);
        const d2 = daemonSetSeries(b, PREFIX, f.ns, name).get('rollout_duration_seconds')!;
        return d2 >= d1 + 2 && { b, d2 };
      },
      { timeoutMs: 30_000 },
    );
    const grew = d2 - d1;
    assert.ok(
      grew >= (b.sentAt - a.readAt) / 1000 && grew <= (b.readAt - a.sentAt) / 1000,
      `grew by ${grew}s between scrapes ${b.sentAt - a.readAt}..${b.readAt - a.sentAt} ms apart`,
    );
    assert.deepEqual(await countersMatchWatch(), { creates: 4, deletes: 1, inPlace: 0 }, 'one node recreated');

    // 3. Paused with the partition lifted: nothing moves, the rollout goes on counting.
    await patchAds(f.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 0, paused: true } } } });
    const paused = (ds: AdsJson) =>
      ds.status?.observedGeneration === ds.metadata.generation &&
      ds.status?.updatedNumberScheduled === 1 &&
      condition(ds, 'Progressing')?.reason === 'Paused';
    s = await agree('paused', paused, { partition: 0, maxUnavailable: 1, paused: 1 });
    assert.equal(s.get('rollout_in_progress'), 1);
    assert.ok(s.get('rollout_duration_seconds')! > d2, 'the same rollout: its duration was not reset');

    // 4. Resumed: the rollout completes, the duration ends.
    await patchAds(f.ns, name, { spec: { updateStrategy: { rollingUpdate: { paused: false } } } });
    await waitRolledOut(f.ns, name, 3, 180_000);
    s = await agree('rolled out after the resume', rolledOut, { partition: 0, maxUnavailable: 1, paused: 0 });
    assert.equal(s.get('rollout_in_progress'), 0);
    assert.equal(s.get('rollout_duration_seconds'), 0);
    assert.deepEqual(await countersMatchWatch(), { creates: 6, deletes: 3, inPlace: 0 }, 'every node recreated');

    // 5. An image change: updated in place.
    await patchAds(f.ns, name, templatePatch('busybox:1.37', 'v2'));
    await waitRolledOut(f.ns, name, 3, 180_000);
    await agree('rolled out in place', rolledOut, { partition: 0, maxUnavailable: 1, paused: 0 });
    assert.deepEqual(await countersMatchWatch(), { creates: 6, deletes: 3, inPlace: 3 }, 'every pod updated in place');
  });

  test('every metric the chart PrometheusRule and Grafana dashboard read is one the manager exports', async () => {
    const objects = await render({ set: ['prometheusRule.enabled=true', 'grafanaDashboard.enabled=true'] });
    const queries = shippedQueries(objects);
    assert.ok(queries.length >= 20, `rule expressions and panel queries found: ${queries.length}`);
    const named = new Map<string, string[]>();
    for (const q of queries) for (const n of metricNames(q.expr)) named.set(n, [...(named.get(n) ?? []), q.where]);
    assert.ok(named.size >= 15, `metrics named: ${[...named.keys()].join(', ')}`);

    const s: Scrape = await scrape(manager!.metricsPort);
    const missing = [...named].filter(([n]) => !isExported(n, s)).map(([n, where]) => `${n} (${where.join('; ')})`);
    assert.deepEqual(missing, [], 'metrics read by the chart that the manager does not export');
    // The per-DaemonSet ones have a series of this DaemonSet; the leader reports it leads.
    const ours = daemonSetSeries(s, '', f.ns, name);
    for (const n of named.keys()) {
      if (!n.startsWith(PREFIX)) continue;
      assert.ok(
        [...ours.keys()].some((k) => k === n || k.startsWith(`${n}{`)),
        `${n} has a series for ${f.ns}/${name}`,
      );
    }
    assert.ok(
      s.samples.some((x) => x.name === 'leader_election_master_status' && x.value === 1),
      'leader_election_master_status 1 on the leader',
    );
  });

  test('the DaemonSet series vanish once it is deleted', async () => {
    assert.ok((await series()).size > 20, 'series of the DaemonSet before the delete');
    await kubectl(['delete', ADS, name, '-n', f.ns, '--wait=false']);
    await eventually(
      `no kruise_daemonset_* series of ${f.ns}/${name}`,
      async () => {
        const left = await series();
        if (left.size > 0) throw new Error(`left: ${[...left.keys()].join(', ')}`);
        return true;
      },
      { timeoutMs: 120_000 },
    );
    const s = await scrape(manager!.metricsPort);
    assert.ok(s.types.has(`${PREFIX}status_desired_number_scheduled`), 'the metric families stay declared');
    assert.equal(manager!.child.exitCode, null, 'the manager still runs');
  });
});
