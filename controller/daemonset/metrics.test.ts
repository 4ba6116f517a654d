// The shell of the per-DaemonSet metrics: what a scrape of the process registry shows after observe, podOperation,
// forget and resetGauges (the values themselves are table-tested in src/daemonset/metrics.test.ts).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet, DaemonSetStatus } from '../../src/api/types.ts';
import { newDaemonSet } from '../../src/daemonset/test-fixtures.ts';
import { registry } from '../runtime/metrics.ts';
import { DaemonSetMetrics, METRIC_PREFIX } from './metrics.ts';

/** Every kruise_daemonset_* sample of the registry, as `name{label="v",...} value` lines, for one DaemonSet. */
async function samples(name: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of await registry.getMetricsAsJSON()) {
    if (!m.name.startsWith(METRIC_PREFIX)) continue;
    for (const v of m.values as { labels: Record<string, string | number>; value: number }[]) {
      if (v.labels.daemonset !== name) continue;
      const rest = Object.entries(v.labels)
        .filter(([k]) => k !== 'namespace' && k !== 'daemonset')
        .map(([k, x]) => `${k}="${x}"`)
        .join(',');
      out.set(`${m.name.slice(METRIC_PREFIX.length)}${rest ? `{${rest}}` : ''}`, v.value);
    }
  }
  return out;
}

function status(desired: number, updated: number, extra: Partial<DaemonSetStatus> = {}): DaemonSetStatus {
  return {
    desiredNumberScheduled: desired,
    currentNumberScheduled: desired,
    numberReady: desired,
    numberAvailable: desired,
    numberUnavailable: 0,
    updatedNumberScheduled: updated,
    numberMisscheduled: 0,
    observedGeneration: 1,
    daemonSetHash: 'x',
    ...extra,
  };
}

function ds(name: string): DaemonSet {
  return newDaemonSet({ name, strategy: 'RollingUpdate', rollingUpdate: { partition: 1 } });
}

describe('DaemonSetMetrics', () => {
  test('observe sets every gauge with namespace and daemonset labels; counters start at 0 for both results', async () => {
    const m = new DaemonSetMetrics(() => 0);
    m.observe(ds('obs'), {
      status: status(4, 4, { conditions: [{ type: 'RolloutComplete', status: 'True' }] }),
      hash: 'a',
    });
    const s = await samples('obs');
    assert.equal(s.get('status_desired_number_scheduled'), 4);
    assert.equal(s.get('status_updated_number_scheduled'), 4);
    assert.equal(s.get('spec_strategy_rollingupdate_partition'), 1);
    assert.equal(s.get('spec_strategy_rollingupdate_max_unavailable'), 1);
    assert.equal(s.get('spec_strategy_rollingupdate_paused'), 0);
    assert.equal(s.get('rollout_in_progress'), 0);
    assert.equal(s.get('rollout_duration_seconds'), 0);
    assert.equal(s.get('status_canary_phase{phase="none"}'), 1);
    assert.equal(s.get('status_condition{condition="RolloutComplete",status="true"}'), 1);
    assert.equal(s.get('status_condition{condition="RolloutComplete",status="false"}'), 0);
    for (const c of ['pod_creates_total', 'pod_deletes_total', 'pod_inplace_updates_total'])
      for (const r of ['success', 'error']) assert.equal(s.get(`${c}{result="${r}"}`), 0, `${c} ${r}`);
    m.forget('default/obs');
  });

  test('the rollout duration is computed at scrape time from the rollout start, and ends with the rollout', async () => {
    let now = 10_000;
    const m = new DaemonSetMetrics(() => now);
    const d = ds('dur');
    m.observe(d, { status: status(4, 4), hash: 'a' });
    m.observe(d, { status: status(4, 1), hash: 'b' }); // the update revision changed: the rollout starts
    now += 30_000;
    assert.equal((await samples('dur')).get('rollout_duration_seconds'), 30, 'no sync needed for it to age');
    now += 15_000;
    assert.equal((await samples('dur')).get('rollout_duration_seconds'), 45);
    assert.equal((await samples('dur')).get('rollout_in_progress'), 1);
    m.observe(d, { status: status(4, 4), hash: 'b' });
    assert.equal((await samples('dur')).get('rollout_duration_seconds'), 0);
    assert.equal((await samples('dur')).get('rollout_in_progress'), 0);
    m.forget('default/dur');
  });

  test('a condition or canary phase that goes away takes its series with it', async () => {
    const m = new DaemonSetMetrics(() => 0);
    const d = ds('phase');
    m.observe(d, {
      status: { ...status(2, 2), canary: { phase: 'Observing' } } as unknown as DaemonSetStatus,
      hash: 'a',
    });
    m.observe(d, {
      status: { ...status(2, 2, { conditions: [{ type: 'Available', status: 'True' }] }), canary: { phase: 'Failed' } },
      hash: 'a',
    } as unknown as never);
    let s = await samples('phase');
    assert.equal(s.get('status_canary_phase{phase="Failed"}'), 1);
    assert.equal(s.has('status_canary_phase{phase="Observing"}'), false);
    m.observe(d, { status: status(2, 2), hash: 'a' });
    s = await samples('phase');
    assert.deepEqual(
      [...s.keys()].filter((k) => k.startsWith('status_condition') || k.startsWith('status_canary')),
      ['status_canary_phase{phase="none"}'],
    );
    m.forget('default/phase');
  });

  test('podOperation counts by result; forget removes every series of the DaemonSet, counters included', async () => {
    const m = new DaemonSetMetrics(() => 0);
    const d = ds('gone');
    m.observe(d, { status: status(3, 3), hash: 'a' });
    m.podOperation(d, 'create', 'success');
    m.podOperation(d, 'create', 'success');
    m.podOperation(d, 'create', 'error');
    m.podOperation(d, 'delete', 'success');
    m.podOperation(d, 'inplace_update', 'error');
    const s = await samples('gone');
    assert.equal(s.get('pod_creates_total{result="success"}'), 2);
    assert.equal(s.get('pod_creates_total{result="error"}'), 1);
    assert.equal(s.get('pod_deletes_total{result="success"}'), 1);
    assert.equal(s.get('pod_inplace_updates_total{result="error"}'), 1);
    assert.equal(s.get('pod_inplace_updates_total{result="success"}'), 0);
    m.forget('default/gone');
    assert.deepEqual([...(await samples('gone')).keys()], []);
  });

  test('resetGauges (leadership ended) drops the gauges and keeps the counters', async () => {
    const m = new DaemonSetMetrics(() => 0);
    const d = ds('follower');
    m.observe(d, { status: status(3, 1), hash: 'a' });
    m.podOperation(d, 'delete', 'success');
    m.resetGauges();
    assert.deepEqual(
      [...(await samples('follower')).entries()].filter(([, v]) => v !== 0),
      [['pod_deletes_total{result="success"}', 1]],
    );
    assert.ok(
      [...(await samples('follower')).keys()].every((k) => k.startsWith('pod_')),
      'only counters remain',
    );
    m.forget('default/follower');
  });
});
