// How a canary pod's health is read (restarts on the canary revision, containers that cannot start, availability),
// as ExtendedDaemonSet reads its canary pods
// (https://github.com/DataDog/extendeddaemonset/blob/main/pkg/controller/utils/pod/pod.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Pod } from '../../k8s/types.ts';
import { formatTime } from '../../k8s/pod.ts';
import { INPLACE_UPDATE_STATE_ANNOTATION } from '../constants.ts';
import { T0, newDaemonSet, newPod } from '../test-fixtures.ts';
import { judgeCanaryPod, type CanaryPodHealth } from './health.ts';

const MIN = 60_000;

/** A canary pod of `ds` on `node` with the given container status (Ready unless told). */
function podWith(
  status: {
    restartCount?: number;
    waiting?: string;
    lastTerminated?: { reason?: string; exitCode?: number; finishedAt: number };
    ready?: boolean;
    readySince?: number;
    created?: number;
  },
  annotations?: Record<string, string>,
): Pod {
  const ds = newDaemonSet();
  const pod = newPod(ds, 'n1', {
    name: 'p1',
    hash: 'h2',
    ready: status.ready ?? true,
    readySince: status.readySince ?? T0,
    created: status.created ?? T0,
  });
  if (annotations) pod.metadata.annotations = annotations;
  pod.status = {
    ...pod.status,
    containerStatuses: [
      {
        name: 'foo',
        image: 'foo/bar:v2',
        imageID: 'v2-id',
        ready: status.ready ?? true,
        restartCount: status.restartCount ?? 0,
        state: status.waiting ? { waiting: { reason: status.waiting, message: 'details' } } : { running: {} },
        ...(status.lastTerminated
          ? {
              lastState: {
                terminated: {
                  exitCode: status.lastTerminated.exitCode ?? 1,
                  reason: status.lastTerminated.reason ?? 'Error',
                  finishedAt: formatTime(status.lastTerminated.finishedAt),
                },
              },
            }
          : {}),
      },
    ],
  };
  return pod;
}

describe('judgeCanaryPod', () => {
  const inPlace = (restartCounts: Record<string, number> | undefined) => ({
    [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify({
      revision: 'h2',
      updateTimestamp: formatTime(T0 + 10 * MIN),
      lastContainerStatuses: { foo: { imageID: 'v1-id' } },
      ...(restartCounts ? { restartCounts } : {}),
    }),
  });
  const rows: {
    name: string;
    pod: Pod;
    want: Partial<CanaryPodHealth>;
  }[] = [
    {
      name: 'healthy, available since Ready',
      pod: podWith({ readySince: T0 + MIN }),
      want: { restarts: 0, ready: true, available: true, availableSince: T0 + MIN, startedAt: T0 },
    },
    {
      name: 'ErrImagePull cannot start',
      pod: podWith({ waiting: 'ErrImagePull', ready: false }),
      want: { cannotStart: { container: 'foo', reason: 'ErrImagePull', message: 'details' }, available: false },
    },
    { name: 'CrashLoopBackOff is not "cannot start"', pod: podWith({ waiting: 'CrashLoopBackOff' }), want: {} },
    {
      name: 'restarts with the waiting reason and exit code',
      pod: podWith({
        restartCount: 3,
        waiting: 'CrashLoopBackOff',
        ready: false,
        lastTerminated: { finishedAt: T0 + 2 * MIN, exitCode: 1 },
      }),
      want: {
        restarts: 3,
        restartReason: 'CrashLoopBackOff',
        exitCode: 1,
        terminationReason: 'Error',
        lastRestart: T0 + 2 * MIN,
      },
    },
    {
      name: 'restarts, running again between two: still CrashLoopBackOff (not the instant the sync reads)',
      pod: podWith({ restartCount: 2, lastTerminated: { reason: 'Error', exitCode: 1, finishedAt: T0 } }),
      want: { restarts: 2, restartReason: 'CrashLoopBackOff', exitCode: 1, terminationReason: 'Error' },
    },
    {
      name: 'restarts killed for memory: OOMKilled',
      pod: podWith({ restartCount: 1, lastTerminated: { reason: 'OOMKilled', exitCode: 137, finishedAt: T0 } }),
      want: { restarts: 1, restartReason: 'OOMKilled', exitCode: 137 },
    },
    {
      name: 'updated in place: its history and the restart of the update do not count',
      pod: podWith({ restartCount: 8, lastTerminated: { finishedAt: T0 + 10 * MIN } }, inPlace({ foo: 7 })),
      want: { restarts: 0, startedAt: T0 + 10 * MIN },
    },
    {
      name: 'updated in place: restarts after the update count',
      pod: podWith({ restartCount: 11, lastTerminated: { finishedAt: T0 + 12 * MIN } }, inPlace({ foo: 7 })),
      want: { restarts: 3, lastRestart: T0 + 12 * MIN },
    },
    {
      name: 'updated in place by Kruise (no restartCounts): only the update restart is subtracted',
      pod: podWith({ restartCount: 2, lastTerminated: { finishedAt: T0 + 11 * MIN } }, inPlace(undefined)),
      want: { restarts: 1 },
    },
  ];
  for (const r of rows) {
    test(r.name, () => {
      const h = judgeCanaryPod(r.pod, 0, T0 + 20 * MIN);
      for (const [k, v] of Object.entries(r.want)) assert.deepEqual(h[k as keyof CanaryPodHealth], v, k);
      if (!('cannotStart' in r.want)) assert.equal(h.cannotStart, undefined);
    });
  }
});
