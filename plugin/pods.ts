// `kubectl ads pods NAME`: one row per pod of the DaemonSet, by node: its revision, readiness, the Kruise lifecycle
// state (label lifecycle.apps.kruise.io/state: PreparingNormal, Normal, PreparingUpdate, Updated, PreparingDelete)
// the in-place update recorded in annotation apps.kruise.io/inplace-update-state, and where its containers' resources
// come from (per-node resources, src/daemonset/overrides.ts).
import type { DaemonSet } from '../src/api/types.ts';
import type { Pod } from '../src/k8s/types.ts';
import { getPodCondition, isPodReady } from '../src/k8s/pod.ts';
import { CONTROLLER_REVISION_HASH_LABEL, IN_PLACE_UPDATE_READY, LIFECYCLE_STATE_LABEL } from '../src/api/constants.ts';
import { getControllerOf } from '../src/daemonset/pods.ts';
import { getInPlaceUpdateState, inPlaceUpdateCompleted } from '../src/daemonset/inplace.ts';
import { overrideSources, podResourceOverrides } from '../src/daemonset/overrides.ts';
import { age } from './printers.ts';
import { updateRevision } from './daemonset.ts';

export const POD_HEADERS = [
  'NODE',
  'POD',
  'REVISION',
  'UPDATED',
  'READY',
  'STATUS',
  'LIFECYCLE',
  'IN-PLACE',
  'RESOURCES',
  'RESTARTS',
  'AGE',
] as const;

/** The pods `ds` controls (controller reference by UID). */
export function ownedPods(pods: readonly Pod[], ds: DaemonSet): Pod[] {
  return pods.filter((p) => getControllerOf(p)?.uid === ds.metadata.uid);
}

/**
 * The IN-PLACE cell: "-" when the pod records no in-place update; "updating to <rev>" while it runs (the recorded
 * containers have not all reported the new image, or InPlaceUpdateReady is False); "done (<rev>)" after; "invalid"
 * for an annotation that does not parse.
 */
export function inPlaceCell(pod: Pod): string {
  const state = getInPlaceUpdateState(pod);
  if (state === undefined) return '-';
  if (state === 'invalid') return 'invalid';
  const rev = state.revision ?? '';
  const ready = getPodCondition(pod, IN_PLACE_UPDATE_READY);
  const running = !inPlaceUpdateCompleted(pod, state) || ready?.status === 'False';
  return running ? `updating to ${rev}` : `done (${rev})`;
}

/**
 * The RESOURCES cell: "template" when the pod records no per-node resources, else each overridden container's
 * source (`agent=Node`, `agent=DaemonSetSetting/big`); "invalid record" for an annotation that does not parse.
 */
export function resourcesCell(pod: Pod): string {
  return overrideSources(podResourceOverrides(pod)) || 'template';
}

/** kubectl's STATUS cell, shortened: Terminating, a waiting/terminated container's reason, else the phase. */
export function podStatusCell(pod: Pod): string {
  if (pod.metadata.deletionTimestamp) return 'Terminating';
  for (const cs of pod.status?.containerStatuses ?? []) {
    const state = cs.state as { waiting?: { reason?: string }; terminated?: { reason?: string } } | undefined;
    if (state?.waiting?.reason) return state.waiting.reason;
    if (state?.terminated?.reason) return state.terminated.reason;
  }
  return pod.status?.phase ?? 'Unknown';
}

export function podRow(pod: Pod, current: string, now: number): string[] {
  const statuses = pod.status?.containerStatuses ?? [];
  const containers = pod.spec.containers?.length ?? 0;
  const readyContainers = statuses.filter((s) => s.ready).length;
  const rev = pod.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? '';
  return [
    pod.spec.nodeName || '<none>',
    pod.metadata.name ?? '',
    rev || '<none>',
    current && rev === current ? 'true' : 'false',
    `${readyContainers}/${containers}${isPodReady(pod) || readyContainers < containers ? '' : ' (not Ready)'}`,
    podStatusCell(pod),
    pod.metadata.labels?.[LIFECYCLE_STATE_LABEL] ?? '-',
    inPlaceCell(pod),
    resourcesCell(pod),
    String(statuses.reduce((n, s) => n + (s.restartCount ?? 0), 0)),
    age(pod.metadata.creationTimestamp, now),
  ];
}

/** The rows of `pods`, by node name then pod name. */
export function podRows(pods: readonly Pod[], ds: DaemonSet, now: number): string[][] {
  const current = updateRevision(ds);
  return [...pods]
    .sort((a, b) => {
      const an = a.spec.nodeName ?? '';
      const bn = b.spec.nodeName ?? '';
      if (an !== bn) return an < bn ? -1 : 1;
      return (a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1;
    })
    .map((p) => podRow(p, current, now));
}
