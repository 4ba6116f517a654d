// Table tests of the per-DaemonSet metric values (metrics.ts): the gauges from a DaemonSet and the planner's view,
// and the rollout clock behind kruise_daemonset_rollout_duration_seconds.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet, DaemonSetStatus } from '../api/types.ts';
import {
  daemonSetGauges,
  nextRolloutClock,
  NO_CANARY_PHASE,
  rolloutDurationSeconds,
  type DaemonSetGaugeValues,
  type PlannerView,
  type RolloutClock,
} from './metrics.ts';
import { newDaemonSet, type DaemonSetOptions } from './test-fixtures.ts';

/** A status with `desired` nodes, `updated` of them on the update revision and `available` available. */
function status(desired: number, updated: number, available: number, extra: Partial<DaemonSetStatus> = {}) {
  return {
    desiredNumberScheduled: desired,
    currentNumberScheduled: desired,
    numberReady: available,
    numberAvailable: available,
    numberUnavailable: desired - available,
    updatedNumberScheduled: updated,
    numberMisscheduled: 0,
    observedGeneration: 1,
    daemonSetHash: 'stored',
    ...extra,
  } as DaemonSetStatus;
}

function ds(opts: DaemonSetOptions & { generation?: number; stored?: DaemonSetStatus } = {}): DaemonSet {
  const d = newDaemonSet(opts);
  if (opts.generation !== undefined) d.metadata.generation = opts.generation;
  if (opts.stored) d.status = opts.stored;
  return d;
}

/** The values every row starts from: 10 nodes, all updated and available, RollingUpdate maxUnavailable 1. */
const base: DaemonSetGaugeValues = {
  desiredNumberScheduled: 10,
  currentNumberScheduled: 10,
  numberReady: 10,
  numberAvailable: 10,
  numberUnavailable: 0,
  updatedNumberScheduled: 10,
  numberMisscheduled: 0,
  generation: 1,
  observedGeneration: 1,
  partition: 0,
  maxUnavailable: 1,
  paused: 0,
  frozen: 0,
  conditions: [],
  canaryPhase: NO_CANARY_PHASE,
  rolloutInProgress: 0,
};

describe('daemonSetGauges', () => {
  const cases: { name: string; ds: DaemonSet; view: PlannerView; want: Partial<DaemonSetGaugeValues> }[] = [
    {
      name: 'rolled out: counters as the planner computed them, nothing in progress',
      ds: ds({ strategy: 'RollingUpdate' }),
      view: { status: status(10, 10, 10), hash: 'h' },
      want: {},
    },
    {
      name: 'the planner status wins over the stored one',
      ds: ds({ strategy: 'RollingUpdate', stored: status(10, 2, 10) }),
      view: { status: status(10, 10, 10), hash: 'h' },
      want: {},
    },
    {
      name: 'no planner status (sync stopped early): the stored status',
      ds: ds({ strategy: 'RollingUpdate', stored: status(10, 4, 9) }),
      view: { hash: '' },
      want: {
        updatedNumberScheduled: 4,
        numberAvailable: 9,
        numberReady: 9,
        numberUnavailable: 1,
        rolloutInProgress: 1,
      },
    },
    {
      name: 'mid-rollout: updated below desired is in progress',
      ds: ds({ strategy: 'RollingUpdate' }),
      view: { status: status(10, 3, 9), hash: 'h' },
      want: {
        updatedNumberScheduled: 3,
        numberAvailable: 9,
        numberReady: 9,
        numberUnavailable: 1,
        rolloutInProgress: 1,
      },
    },
    {
      name: 'every node updated but one pod not yet available: still in progress',
      ds: ds({ strategy: 'RollingUpdate' }),
      view: { status: status(10, 10, 9), hash: 'h' },
      want: { numberAvailable: 9, numberReady: 9, numberUnavailable: 1, rolloutInProgress: 1 },
    },
    {
      name: 'a generation not yet observed is in progress',
      ds: ds({ strategy: 'RollingUpdate', generation: 2 }),
      view: { status: status(10, 10, 10), hash: 'h' },
      want: { generation: 2, rolloutInProgress: 1 },
    },
    {
      name: 'partition 30% of 10 nodes resolves to 3 nodes; on the way there the rollout is in progress',
      ds: ds({ strategy: 'RollingUpdate', rollingUpdate: { partition: '30%' } }),
      view: { status: status(10, 7, 10), hash: 'h' },
      want: { partition: 3, updatedNumberScheduled: 7, rolloutInProgress: 1 },
    },
    {
      name: 'held at its partition (Progressing False, PartitionReached): not in progress, as kubectl ads status says',
      ds: ds({ strategy: 'RollingUpdate', rollingUpdate: { partition: '30%' } }),
      view: {
        status: {
          ...status(10, 7, 10),
          conditions: [
            { type: 'Progressing', status: 'False', reason: 'PartitionReached', message: '', lastTransitionTime: '' },
          ],
        },
        hash: 'h',
      },
      want: {
        partition: 3,
        updatedNumberScheduled: 7,
        rolloutInProgress: 0,
        conditions: [{ type: 'Progressing', status: 'false' }],
      },
    },
    {
      name: 'partition as a number of nodes',
      ds: ds({ strategy: 'RollingUpdate', rollingUpdate: { partition: 4 } }),
      view: { status: status(10, 10, 10), hash: 'h' },
      want: { partition: 4 },
    },
    {
      name: 'maxUnavailable 25% of 10 nodes is 3 (rounded up); paused',
      ds: ds({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', paused: true } }),
      view: { status: status(10, 10, 10), hash: 'h' },
      want: { maxUnavailable: 3, paused: 1 },
    },
    {
      name: 'surge with maxUnavailable 0 keeps 0',
      ds: ds({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 2 } }),
      view: { status: status(10, 10, 10), hash: 'h' },
      want: { maxUnavailable: 0 },
    },
    {
      name: 'OnDelete: no maxUnavailable, no partition, never paused',
      ds: ds({ strategy: 'OnDelete' }),
      view: { status: status(10, 10, 10), hash: 'h' },
      want: { maxUnavailable: undefined },
    },
    {
      name: 'a maxUnavailable percent that does not parse: no number',
      ds: ds({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: 'ten' } }),
      view: { status: status(10, 10, 10), hash: 'h' },
      want: { maxUnavailable: undefined },
    },
    {
      name: 'misscheduled nodes',
      ds: ds({ strategy: 'RollingUpdate' }),
      view: { status: status(10, 10, 10, { numberMisscheduled: 2 }), hash: 'h' },
      want: { numberMisscheduled: 2 },
    },
    {
      name: 'conditions as kube-state-metrics encodes them',
      ds: ds({ strategy: 'RollingUpdate' }),
      view: {
        status: status(10, 10, 10, {
          conditions: [
            { type: 'RolloutComplete', status: 'True' },
            { type: 'Progressing', status: 'False' },
            { type: 'Available', status: 'Unknown' },
          ],
        }),
        hash: 'h',
      },
      want: {
        conditions: [
          { type: 'RolloutComplete', status: 'true' },
          { type: 'Progressing', status: 'false' },
          { type: 'Available', status: 'unknown' },
        ],
      },
    },
    {
      name: 'status.canary.phase is reported when the object has one',
      ds: ds({ strategy: 'RollingUpdate' }),
      view: { status: { ...status(10, 10, 10), canary: { phase: 'Failed' } } as unknown as DaemonSetStatus, hash: 'h' },
      want: { canaryPhase: 'Failed' },
    },
    {
      name: 'an empty canary phase counts as none',
      ds: ds({ strategy: 'RollingUpdate' }),
      view: { status: { ...status(10, 10, 10), canary: { phase: '' } } as unknown as DaemonSetStatus, hash: 'h' },
      want: { canaryPhase: NO_CANARY_PHASE },
    },
    {
      name: 'no status at all (never synced): zeros, complete since nothing is desired',
      ds: (() => {
        const d = ds({ strategy: 'RollingUpdate', generation: 0 });
        delete (d as { status?: unknown }).status;
        return d;
      })(),
      view: { hash: '' },
      want: {
        desiredNumberScheduled: 0,
        currentNumberScheduled: 0,
        numberReady: 0,
        numberAvailable: 0,
        updatedNumberScheduled: 0,
        generation: 0,
        observedGeneration: 0,
      },
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const want: DaemonSetGaugeValues = { ...base, ...c.want };
      if ('maxUnavailable' in c.want && c.want.maxUnavailable === undefined) delete want.maxUnavailable;
      assert.deepEqual(daemonSetGauges(c.ds, c.view), want);
    });
  }
});

describe('nextRolloutClock', () => {
  const T = 1_000_000;
  const cases: {
    name: string;
    prev: RolloutClock | undefined;
    observed: { revision: string; complete: boolean };
    want: RolloutClock | undefined;
  }[] = [
    {
      name: 'first seen complete: no rollout',
      prev: undefined,
      observed: { revision: 'a', complete: true },
      want: { revision: 'a' },
    },
    {
      name: 'first seen incomplete (restart, new leader): starts now',
      prev: undefined,
      observed: { revision: 'a', complete: false },
      want: { revision: 'a', startedAt: T },
    },
    {
      name: 'the update revision changed: starts now',
      prev: { revision: 'a' },
      observed: { revision: 'b', complete: false },
      want: { revision: 'b', startedAt: T },
    },
    {
      name: 'still rolling out the same revision: keeps its start',
      prev: { revision: 'b', startedAt: T - 60_000 },
      observed: { revision: 'b', complete: false },
      want: { revision: 'b', startedAt: T - 60_000 },
    },
    {
      name: 'a new revision before the last one completed: starts over',
      prev: { revision: 'b', startedAt: T - 60_000 },
      observed: { revision: 'c', complete: false },
      want: { revision: 'c', startedAt: T },
    },
    {
      name: 'complete: the rollout ends',
      prev: { revision: 'b', startedAt: T - 60_000 },
      observed: { revision: 'b', complete: true },
      want: { revision: 'b' },
    },
    {
      name: 'a node added after completion (same revision, incomplete): no new rollout',
      prev: { revision: 'b' },
      observed: { revision: 'b', complete: false },
      want: { revision: 'b' },
    },
    {
      name: 'a revision change that is complete at once: no rollout',
      prev: { revision: 'b', startedAt: T - 60_000 },
      observed: { revision: 'c', complete: true },
      want: { revision: 'c' },
    },
    {
      name: 'no revision computed (sync stopped early): unchanged',
      prev: { revision: 'b', startedAt: T - 60_000 },
      observed: { revision: '', complete: false },
      want: { revision: 'b', startedAt: T - 60_000 },
    },
    {
      name: 'no revision and nothing seen before: still nothing',
      prev: undefined,
      observed: { revision: '', complete: false },
      want: undefined,
    },
  ];
  for (const c of cases) {
    test(c.name, () => assert.deepEqual(nextRolloutClock(c.prev, c.observed, T), c.want));
  }
});

describe('rolloutDurationSeconds', () => {
  const cases: { name: string; clock: RolloutClock | undefined; now: number; want: number }[] = [
    { name: 'no clock', clock: undefined, now: 5000, want: 0 },
    { name: 'no rollout running', clock: { revision: 'a' }, now: 5000, want: 0 },
    { name: 'seconds since the start', clock: { revision: 'a', startedAt: 1000 }, now: 91_500, want: 90.5 },
    { name: 'never negative', clock: { revision: 'a', startedAt: 5000 }, now: 4000, want: 0 },
  ];
  for (const c of cases) test(c.name, () => assert.equal(rolloutDurationSeconds(c.clock, c.now), c.want));
});
