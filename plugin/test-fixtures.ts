// Objects for the plugin's table tests: an Advanced DaemonSet as the apiserver returns it (defaulted, with status),
// its pods and ControllerRevisions.
import type { DaemonSet, DaemonSetStatus } from '../src/api/types.ts';
import type { ControllerRevision, Pod } from '../src/k8s/types.ts';
import { revisionData } from '../src/daemonset/history.ts';

export const T0 = Date.parse('2025-01-01T00:00:00Z');
export const UID = 'uid-ds';

type RollingUpdate = NonNullable<NonNullable<DaemonSet['spec']['updateStrategy']>['rollingUpdate']>;

export interface DsOptions {
  name?: string;
  generation?: number;
  image?: string;
  rollingUpdate?: Partial<RollingUpdate> & Record<string, unknown>;
  onDelete?: boolean;
  /** Loose: tests set fields the schema types strictly (status.canary) only in part. */
  status?: Record<string, unknown>;
  annotations?: Record<string, string>;
}

export function ds(o: DsOptions = {}): DaemonSet {
  const name = o.name ?? 'agent';
  return {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: {
      name,
      namespace: 'ns',
      uid: UID,
      generation: o.generation ?? 1,
      resourceVersion: '100',
      creationTimestamp: new Date(T0).toISOString(),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: o.image ?? 'busybox:1.36' }] },
      },
      updateStrategy: o.onDelete
        ? { type: 'OnDelete' }
        : {
            type: 'RollingUpdate',
            rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1, partition: 0, ...o.rollingUpdate },
          },
    } as DaemonSet['spec'],
    ...(o.status === undefined
      ? {}
      : {
          status: {
            currentNumberScheduled: 0,
            desiredNumberScheduled: 0,
            numberMisscheduled: 0,
            numberReady: 0,
            updatedNumberScheduled: 0,
            observedGeneration: o.generation ?? 1,
            daemonSetHash: 'h2',
            ...o.status,
          } as DaemonSetStatus,
        }),
  };
}

export function pod(
  node: string,
  hash: string,
  o: {
    ready?: boolean;
    terminating?: boolean;
    name?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    restarts?: number;
    owner?: string;
  } = {},
): Pod {
  const ready = o.ready ?? true;
  return {
    metadata: {
      name: o.name ?? `agent-${node}`,
      namespace: 'ns',
      creationTimestamp: new Date(T0).toISOString(),
      labels: { app: 'agent', 'controller-revision-hash': hash, ...o.labels },
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ...(o.terminating ? { deletionTimestamp: new Date(T0 + 1000).toISOString() } : {}),
      ownerReferences: [
        {
          apiVersion: 'apps.kruise.io/v1alpha1',
          kind: 'DaemonSet',
          name: 'agent',
          uid: o.owner ?? UID,
          controller: true,
        },
      ],
    },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox:1.36' }] },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      containerStatuses: [{ name: 'c', image: 'busybox:1.36', imageID: 'id1', ready, restartCount: o.restarts ?? 0 }],
    },
  };
}

/** A ControllerRevision of `d`'s template (as the controller writes it), numbered `revision`. */
export function revisionOf(
  d: DaemonSet,
  revision: number,
  hash: string,
  o: { owner?: string; cause?: string } = {},
): ControllerRevision {
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name: `${d.metadata.name ?? ''}-${hash}`,
      namespace: 'ns',
      labels: { app: d.metadata.name ?? '', 'controller-revision-hash': hash },
      ...(o.cause ? { annotations: { 'kubernetes.io/change-cause': o.cause } } : {}),
      ownerReferences: [
        {
          apiVersion: 'apps.kruise.io/v1alpha1',
          kind: 'DaemonSet',
          name: d.metadata.name ?? '',
          uid: o.owner ?? UID,
          controller: true,
        },
      ],
    },
    data: revisionData(d),
    revision,
  };
}
