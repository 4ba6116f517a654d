// `kubectl ads migrate NAME`: an apps/v1 DaemonSet becomes an Advanced DaemonSet with no pod restarted. The steps
// are the ones that keep every pod: delete the native object with propagationPolicy Orphan (the garbage collector
// removes the pods' and ControllerRevisions' ownerReferences and keeps them), create the Advanced DaemonSet with
// the same selector and template, and let the controller adopt the orphans (claimPods) and the revision whose
// template matches its own (src/daemonset/history.ts revisionMatches): the pods keep their controller-revision-hash,
// so they count as updated and none is replaced. Applying the new manifest next to the running native one instead
// would run a second pod on every node.
//
// This file decides (pure); plugin/commands.ts runMigrate reads the objects and does the steps.
import type { DaemonSet } from '../src/api/types.ts';
import { API_VERSION, KIND } from '../src/api/constants.ts';
import type { ControllerRevision, KubeObject, Pod } from '../src/k8s/types.ts';
import { CONTROLLER_REVISION_HASH_LABEL } from '../src/daemonset/constants.ts';
import { revisionMatches } from '../src/daemonset/history.ts';

/** The apps/v1 DaemonSet as read (the fields migrate uses). */
export interface NativeDaemonSet extends KubeObject {
  spec: {
    selector: DaemonSet['spec']['selector'];
    template: DaemonSet['spec']['template'];
    minReadySeconds?: number;
    revisionHistoryLimit?: number;
    updateStrategy?: {
      type?: string;
      rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string };
    };
  };
  status?: { observedGeneration?: number; desiredNumberScheduled?: number; updatedNumberScheduled?: number };
}

/** Annotations that belong to the native object's life, not to the new one. */
const DROPPED_ANNOTATIONS = [
  'kubectl.kubernetes.io/last-applied-configuration',
  'deprecated.daemonset.template.generation',
];

/** The Advanced DaemonSet that takes over: the same name, labels, selector, template and rolling update budget. */
export function advancedDaemonSetFor(native: NativeDaemonSet, apiVersion = API_VERSION): DaemonSet {
  const annotations = Object.fromEntries(
    Object.entries(native.metadata.annotations ?? {}).filter(([k]) => !DROPPED_ANNOTATIONS.includes(k)),
  );
  const s = native.spec;
  const ru = s.updateStrategy?.rollingUpdate;
  const updateStrategy =
    s.updateStrategy?.type === 'OnDelete'
      ? { type: 'OnDelete' as const }
      : {
          type: 'RollingUpdate' as const,
          rollingUpdate: {
            rollingUpdateType: 'Standard' as const,
            ...(ru?.maxUnavailable !== undefined ? { maxUnavailable: ru.maxUnavailable } : {}),
            ...(ru?.maxSurge !== undefined ? { maxSurge: ru.maxSurge } : {}),
          },
        };
  return {
    apiVersion,
    kind: KIND,
    metadata: {
      name: native.metadata.name,
      namespace: native.metadata.namespace,
      ...(native.metadata.labels ? { labels: { ...native.metadata.labels } } : {}),
      ...(Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      selector: s.selector,
      template: s.template,
      ...(s.minReadySeconds !== undefined ? { minReadySeconds: s.minReadySeconds } : {}),
      ...(s.revisionHistoryLimit !== undefined ? { revisionHistoryLimit: s.revisionHistoryLimit } : {}),
      updateStrategy,
    },
  } as DaemonSet;
}

export interface MigrationPlan {
  manifest: DaemonSet;
  /** Why the pods would not all be kept; empty when migrating keeps every one. */
  refusals: string[];
  /** What would happen, in order, for --dry-run and the log of a run. */
  steps: string[];
  /** The pods to be kept, by name: their uids must be the same afterwards. */
  pods: { name: string; uid: string; node: string }[];
}

/**
 * Decides a migration. `defaulted` is the manifest as the webhook defaults it (a server-side dry-run create), so
 * the revision check sees what the controller will hash; `revisions` and `pods` are those the native object owns.
 */
export function planMigration(
  native: NativeDaemonSet,
  defaulted: DaemonSet,
  revisions: readonly ControllerRevision[],
  pods: readonly Pod[],
): MigrationPlan {
  const name = native.metadata.name ?? '';
  const key = `${native.metadata.namespace}/${name}`;
  const refusals: string[] = [];
  const s = native.status ?? {};
  if (
    (native.metadata.generation ?? 0) > (s.observedGeneration ?? 0) ||
    (s.updatedNumberScheduled ?? 0) < (s.desiredNumberScheduled ?? 0)
  )
    refusals.push(
      `daemonset.apps/${name} is rolling out (${s.updatedNumberScheduled ?? 0} of ${s.desiredNumberScheduled ?? 0} pods updated): wait for "kubectl rollout status daemonset/${name}" to finish, so that every pod runs the template that moves`,
    );
  const current = revisions.find((r) => revisionMatches(defaulted, r));
  if (!current)
    refusals.push(
      `no ControllerRevision of daemonset.apps/${name} holds its template as the Advanced DaemonSet would run it: the controller would hash it anew and replace every pod`,
    );
  const hash = current?.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? current?.metadata.name ?? '';
  const stale = current ? pods.filter((p) => p.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] !== hash) : [];
  if (stale.length > 0)
    refusals.push(
      `${stale.length} pod(s) do not run revision ${hash} (${stale
        .slice(0, 3)
        .map((p) => p.metadata.name)
        .join(', ')}${stale.length > 3 ? ', ...' : ''}): they would be replaced`,
    );
  const steps = [
    `delete daemonset.apps/${name} in ${native.metadata.namespace} with propagationPolicy Orphan: its ${pods.length} pod(s) and ${revisions.length} ControllerRevision(s) stay, without an owner`,
    `create daemonset.apps.kruise.io/${name} (${defaulted.apiVersion}) with the same selector and template`,
    `wait until the controller adopts every pod (same uid) and revision ${hash || '(none)'}: no pod is restarted`,
  ];
  return {
    manifest: advancedDaemonSetFor(native, defaulted.apiVersion),
    refusals: refusals.map((r) => `${key}: ${r}`),
    steps,
    pods: pods.map((p) => ({ name: p.metadata.name ?? '', uid: p.metadata.uid ?? '', node: p.spec?.nodeName ?? '' })),
  };
}
