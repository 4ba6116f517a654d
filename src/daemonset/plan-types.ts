// The data a sync plan is made of: what the shell (controller/) executes. See planDaemonSet in plan.ts.
import type { DaemonSetSetting, DaemonSetSettingStatus } from '../api/setting.ts';
import type { CanaryPhase, CanaryStatus, DaemonSet, DaemonSetStatus } from '../api/types.ts';
import type { ControllerRevision, KubeObject, Node, Pod } from '../k8s/types.ts';
import type { BackoffState } from './backoff.ts';
import type { PlanEventReason } from './events.ts';
import type { KruisePodReadyGateMode } from './pods.ts';
import type { NodeState } from './node-state.ts';

/** Why a pod is deleted (for logs and tests; the events are SuccessfulDelete/FailedDelete as upstream). */
export type DeleteReason =
  /** manage: phase Failed (with per-node backoff). */
  | 'FailedPod'
  /** manage: phase Succeeded. */
  | 'SucceededPod'
  /** manage: more than one running pod on the node (the oldest is kept). */
  | 'ExcessPod'
  /** manage: the node no longer qualifies (untolerated NoExecute taint, selector/affinity no longer match). */
  | 'NodeNotEligible'
  /** manage: unscheduled pod pinned to a node that does not exist (PodGC cannot clean it). */
  | 'NodeGone'
  /** manage: lifecycle PreparingDelete and the hook released. */
  | 'PreparingDelete'
  /** rollingUpdate (no surge): old pod replaced within maxUnavailable. */
  | 'RollingUpdate'
  /** rollingUpdate: old pod updated in place outside the budget, as it stays Ready (a resize; inplace.ts). */
  | 'InPlaceResize'
  /** rollingUpdate / manage with surge: old pod replaced once the new pod on its node is available. */
  | 'SurgeReplaced'
  /** an old pod that is not ready/available is replaced without consuming the budget. */
  | 'OldPodUnavailable'
  /** surge: old pod on a node that no longer should run the daemon, removed once enough pods are available. */
  | 'NodeSunset'
  /** Its node asks for other per-node resources (overrides.ts) that cannot be resized in place: within maxUnavailable. */
  | 'ResourcesOverride';

export interface PodCreate {
  nodeName: string;
  revisionHash: string;
  /** The full manifest to POST (generateName, ownerReference, affinity pinned to the node, ...). */
  pod: Pod;
}

export interface PodDelete {
  podName: string;
  nodeName?: string;
  uid?: string;
  reason: DeleteReason;
}

export type PatchReason =
  /** pods/status: condition KruisePodReady True for a pod carrying the gate without the condition. */
  | 'KruisePodReady'
  /** metadata: lifecycle state PreparingDelete (preDelete hook holds the pod). */
  | 'PreparingDelete'
  /** pods/status: KruisePodReady False held by the preDelete hook (markPodNotReady). */
  | 'MarkPodNotReady'
  /** metadata: controller-revision-hash relabel after duplicate revisions were merged. */
  | 'RevisionRelabel'
  /** pods/status: InPlaceUpdateReady condition during/after an in-place update. */
  | 'InPlaceUpdateReady'
  /** metadata: the old pod's node pulled the new images ahead (image pre-download). */
  | 'ImagePreDownloaded'
  /** metadata: label advanced-daemonset.io/canary "true" set on a canary pod, or removed (null) after the canary. */
  | 'CanaryLabel'
  /** metadata: the per-node resources record (advanced-daemonset.io/resources-override), when no resize is needed. */
  | 'ResourcesOverride';

export interface PodPatch {
  podName: string;
  /** Patch the pods/status subresource rather than the pod. */
  subresource?: 'status';
  /** Content type: strategic merge (application/strategic-merge-patch+json). */
  patchType: 'strategic';
  patch: unknown;
  reason: PatchReason;
}

/** An in-place update: the pod keeps name, UID and node; see inplace.ts. */
export interface InPlaceUpdate {
  podName: string;
  nodeName?: string;
  fromHash: string;
  toHash: string;
  /**
   * 'update' (images, labels, annotations; the pod turns unready until the new images run), 'resize' (`patch` goes
   * to pods/resize: the new cpu and memory, strategic merge; the hash label stays until the kubelet reports it
   * done) or 'finish' (a resize is done: hash label and template metadata, the pod stays Ready). Default 'update'.
   */
  kind?: 'update' | 'resize' | 'finish';
  /**
   * Applied in order: first `statusPatch` on pods/status (InPlaceUpdateReady False, reason StartInPlaceUpdate),
   * then `patch` on the pod (images, hash label, template metadata, inplace-update-state annotation). Only 'update'
   * has one.
   */
  statusPatch?: unknown;
  /**
   * pods/status: InPlaceUpdateReady as it was before `statusPatch`, written (best effort) when `patch` fails, so a
   * refused update does not leave the pod NotReady (the next sync's refresh would set it True otherwise).
   */
  revertStatusPatch?: unknown;
  patch: unknown;
}

export interface PlanEvent {
  type: 'Normal' | 'Warning';
  reason: PlanEventReason;
  message: string;
  /** The object the event is about when it is not the DaemonSet (a DaemonSetSetting). */
  about?: KubeObject;
}

/** A DaemonSetSetting's status to write (status subresource), when it differs from the stored one. */
export interface SettingStatusWrite {
  setting: DaemonSetSetting;
  status: DaemonSetSettingStatus;
}

export interface RevisionPlan {
  /** Create first: the current revision when none matched the template. */
  create: ControllerRevision[];
  /** Full objects to PUT: hash label added, revision number bumped. */
  update: ControllerRevision[];
  /** Names to delete: merged duplicates, then trimmed history. */
  delete: string[];
}

/** Where the sync stopped (upstream's early returns), for logs and tests. */
export type PlanStage =
  /** DaemonSet being deleted: nothing, not even status. */
  | 'Deleting'
  /** Selector `{}` or invalid: SelectingAll warning only. */
  | 'InvalidSelector'
  /** Create/delete expectations unsatisfied: revisions + status (observedGeneration kept). */
  | 'ExpectationsPending'
  /** manage had creates/deletes/lifecycle patches: those + status (observedGeneration kept). */
  | 'Managed'
  /** Rollout frozen (isRolloutFrozen): no pod created, deleted or updated; history cleanup, status. */
  | 'Frozen'
  /** Full sync: rolling update, history cleanup, status with observedGeneration. */
  | 'Complete';

/**
 * The rest of a sync that stopped after manage (stage Managed), computed on the same state: rolling update,
 * history cleanup and the complete status. The rolling update leaves out every node manage creates, deletes or
 * patches a pod on: its plan for them would read the pods manage is replacing (e.g. surge a second new pod next to
 * the one manage creates for a failed pod); the next sync sees manage's result and goes on there. Upstream re-checks expectations after manage and goes on when they are
 * satisfied; that happens when every create and delete of manage failed (quota, admission), since failed requests
 * are "observed" at once. The shell then executes this part (and writes `status` instead of Plan.status);
 * otherwise it ignores it.
 */
export interface AfterManage {
  creates: PodCreate[];
  deletes: PodDelete[];
  podPatches: PodPatch[];
  inPlaceUpdates: InPlaceUpdate[];
  /** ControllerRevisions to delete (cleanupHistory). */
  revisionDeletes: string[];
  events: PlanEvent[];
  status: DaemonSetStatus;
  statusChanged: boolean;
  requeueAfterMs?: number;
}

export interface Plan {
  stage: PlanStage;
  /** Current revision hash (controller-revision-hash of new pods); '' when not computed. */
  hash: string;
  revisions: RevisionPlan;
  /**
   * Pods to create, at most burstReplicas; the shell sets expectations (creates, deletes) first and creates in
   * slowStartBatches (1, 2, 4, ...), stopping after a batch with failures.
   */
  creates: PodCreate[];
  /** Pods to delete (in parallel), at most burstReplicas. NotFound is success. */
  deletes: PodDelete[];
  podPatches: PodPatch[];
  inPlaceUpdates: InPlaceUpdate[];
  /** The full computed status; undefined = do not write. */
  status?: DaemonSetStatus;
  /** status differs from the object's: write it (UpdateStatus, retry on conflict). */
  statusChanged: boolean;
  /** Events decided by the planner (FailedDaemonPod, SelectingAll, ...); pod-control events are the shell's. */
  events: PlanEvent[];
  /** Requeue the DaemonSet after this delay (backoff, minReadySeconds), if set. */
  requeueAfterMs?: number;
  /** The failed-pod backoff state to keep for the next sync. */
  failedPodsBackoff: BackoffState;
  /** Stage Managed only: see AfterManage. */
  afterManage?: AfterManage;
  /**
   * Image pre-download pull pods to create and delete (not daemon pods: no expectations); their podPatches are
   * already in `podPatches`. Undefined when pre-download is off or the sync stopped before it.
   */
  imagePreDownload?: Pick<ImagePreDownloadPlan, 'creates' | 'deletes'>;
  /** Image pre-download with Kruise ImagePullJobs instead (options.imagePreDownload 'imagepulljob'). */
  imagePullJobs?: ImagePullJobPlan;
  /** The statuses of the DaemonSet's DaemonSetSettings that changed (setting-status.ts). */
  settingStatuses?: SettingStatusWrite[];
}

export type ImagePreDownloadMode = 'pods' | 'imagepulljob' | 'off';

export interface PlanOptions {
  /** --assign-pods-by-scheduler (default true). */
  assignPodsByScheduler?: boolean;
  /**
   * --image-predownload: pull new images ahead with pull pods ('pods'), with Kruise ImagePullJobs
   * ('imagepulljob'), or not ('off', the default here).
   */
  imagePreDownload?: ImagePreDownloadMode;
  /** --kruise-pod-ready-gate (default DEFAULT_KRUISE_POD_READY_GATE, pods.ts). */
  kruisePodReadyGate?: KruisePodReadyGateMode;
  /**
   * Resize pods in place through pods/resize (InPlaceWorkloadVerticalScaling, resize.ts) under InPlaceIfPossible;
   * off here, the controller turns it on when the gate is on and the cluster serves pods/resize.
   */
  inPlaceResize?: boolean;
  /**
   * spec.nodeReadiness: the apiserver refused the manager a node patch (403), so no readiness taint can be removed;
   * the NodeReadiness condition says so (status.ts).
   */
  nodeTaintsForbidden?: boolean;
}

/** `pods` of a snapshot as the earlier list `since` with some pods added, replaced or gone. */
export interface PodChanges {
  /** The earlier list's version (DaemonSetSnapshot.podsVersion), or, without one, its array. */
  since: object;
  /** By name: the pod's new object, or undefined when it is gone. */
  pods: ReadonlyMap<string, Pod | undefined>;
}

/**
 * `nodes` of a snapshot as the earlier list `since` with the nodes of some names added, replaced or gone, both lists
 * in name order (the informer's Indexer.listSorted and Indexer.changedKeysSince).
 */
export interface NodeChanges {
  /** The earlier list. */
  since: readonly Node[];
  /** The names of the nodes added, replaced or gone; a name may be listed more than once. */
  names: readonly string[];
}

/** What a snapshot tells of how its lists differ from an earlier snapshot's (the memo's shortcuts, memo.ts). */
export type SnapshotChanges = Pick<DaemonSetSnapshot, 'podChanges' | 'podsVersion' | 'nodeChanges'>;

/** Everything one sync reads, already in memory. */
export interface DaemonSetSnapshot {
  ds: DaemonSet;
  /** All nodes. */
  nodes: readonly Node[];
  /**
   * Optional: how `nodes` differs from an earlier snapshot's nodes, so a memo that planned that snapshot last takes in
   * the changed nodes alone rather than comparing every node (memo.ts).
   */
  nodeChanges?: NodeChanges;
  /** Pods this DaemonSet controls (after adoption/release), every state including terminating. */
  pods: readonly Pod[];
  /**
   * Optional: how `pods` differs from an earlier snapshot's pods, so a memo that planned that snapshot last takes in
   * the changed pods alone rather than comparing every pod (memo.ts).
   */
  podChanges?: PodChanges;
  /**
   * Optional: what `pods` holds, when its source changes that array in place from one sync to the next (the
   * controller's kept claim, which would otherwise copy every pod at each change): a new object whenever it does.
   * Without it, the array is its own version and is not changed once handed over.
   */
  podsVersion?: object;
  /** ControllerRevisions this DaemonSet controls (after adoption/release). */
  revisions: readonly ControllerRevision[];
  /** Optional: the namespace's other ControllerRevisions, to detect name collisions before creating. */
  foreignRevisions?: readonly ControllerRevision[];
  /** Wall clock, ms since the epoch. */
  now: number;
  /** Failed-pod backoff state from the previous sync of this DaemonSet (empty when absent). */
  failedPodsBackoff?: BackoffState;
  /**
   * Create/delete (and pod resourceVersion) expectations satisfied. False: only revisions and status are planned,
   * observedGeneration is not advanced. Default true.
   */
  expectationsSatisfied?: boolean;
  /**
   * Pods (by name) with a write of ours that their cached copy does not show yet: no readiness upkeep (KruisePodReady,
   * InPlaceUpdateReady) is planned from that older copy, which would repeat or undo the write. The shell's KruisePodReady
   * patch right after each create is one: it does not hold back the sync (expectationsSatisfied), as the write of
   * Kruise's separate pod-readiness controller does not hold back its DaemonSet controller. Default none.
   */
  podsAwaitingWrites?: ReadonlySet<string>;
  /** Image pre-download pull pods of this DaemonSet (label apps.kruise.io/image-predownload-daemonset-uid). */
  imagePullPods?: readonly Pod[];
  /**
   * The DaemonSetSettings of the namespace (those referencing this DaemonSet are picked by the planner, overrides.ts).
   * Default none.
   */
  settings?: readonly DaemonSetSetting[];
  options?: PlanOptions;
}

// ---- the results of the planning stages, read by the later ones through SyncContext ----

export interface StatusCounters {
  desiredNumberScheduled: number;
  currentNumberScheduled: number;
  numberMisscheduled: number;
  numberReady: number;
  numberAvailable: number;
  numberUnavailable: number;
  updatedNumberScheduled: number;
}

export interface CountersResult {
  counters: StatusCounters;
  requeueAfterMs?: number;
}

/**
 * The partition is at least the number of nodes selected by rollingUpdate.selector, so it keeps every selected node
 * not updated yet on the old revision (it counts within the selected nodes, see filterDaemonPodsNodeToUpdate).
 * Reported in the Progressing condition and an event, since Kruise, counting the partition over all nodes, may
 * update some of them.
 */
export interface SelectorPartitionHold {
  partition: number;
  /** Selected nodes not updated yet, all kept on the old revision by the partition. */
  held: number;
  /** Nodes selected by rollingUpdate.selector. */
  selected: number;
  /** Nodes taking part in the rolling update: what Kruise counts the partition over. */
  all: number;
}

/**
 * Why rollingUpdate.unhealthyNodes Ignore sets a node aside (unhealthy.ts): its Ready condition False (NotReady) or
 * Unknown, the unreachable taint, or a pod the scheduler cannot place (Unschedulable).
 */
export type SetAsideReason = 'NotReady' | 'Unknown' | 'Unreachable' | 'Unschedulable';

export interface NodesToUpdate {
  /**
   * filterDaemonPodsNodeToUpdate: the nodes the rolling update may touch, in processing order; read-only, as a memo
   * may hand the same list to later syncs (update.ts, keptNodesToUpdate).
   */
  readonly nodes: readonly string[];
  /** Set when a rollingUpdate.selector is given and the partition, at least the selected count, holds them all. */
  hold?: SelectorPartitionHold;
  /** rollingUpdate.waves: the current wave, while one is not done (waves.ts, gateWaves). */
  wave?: WaveProgress;
}

/** Where a rollout in waves stands (waves.ts). */
export interface WaveProgress {
  /** The current wave, from 0. */
  index: number;
  count: number;
  topologyKey: string;
  /** The wave's label value; absent for the nodes without the label (the last wave). */
  value?: string;
  /** Nodes of later waves still to update, held back until this wave is done. */
  held: number;
  /** Every node of the wave is updated and available; it waits for waves.availableSeconds. */
  waiting?: boolean;
  /** When the wait for availableSeconds ends, if a later wave waits on it. */
  requeueAfterMs?: number;
}

/** NodesToUpdate with the states of `nodes` (same order), for the passes that read their pods. */
export interface NodesToUpdateStates extends NodesToUpdate {
  readonly states: readonly NodeState[];
  /**
   * `states` are every node whose NodeState.updatePart is one of the buckets (updated, updating, to update), by
   * bucket then descending name (nothing held back): what update.ts brings up to date between syncs.
   */
  readonly complete?: boolean;
}

/** nodesToUpdate less the nodes no pass over them has work for (update.ts, busyNodesToUpdate). */
export interface BusyNodesToUpdate {
  /** The other states, in nodesToUpdate's order. */
  readonly states: readonly NodeState[];
  /** How many were left out: each has one pod, of its target revision, available. */
  readonly quiet: number;
}

export interface CanaryPlan {
  /** status.canary to write; undefined when there is no canary (nothing stored, nothing to write). */
  status?: CanaryStatus;
  /**
   * Per-node target revisions apply: the canary of the current revision is Observing, Paused or Failed. Otherwise
   * every node targets the current revision, as without a canary.
   */
  active: boolean;
  phase?: CanaryPhase;
  /** The canary nodes that exist. */
  nodes: ReadonlySet<string>;
  /** The revision hash the other nodes keep (and the canary nodes go back to when Failed). */
  stableHash: string;
  /** The DaemonSet with the stable revision's template, to build its pods. */
  stableDs?: DaemonSet;
  /**
   * The nodes the rolling update touches while active, each toward its target: the canary nodes (Observing: to the
   * current revision; Failed: back to the stable one); none while Paused.
   */
  rollingNodes: readonly string[];
  events: PlanEvent[];
  /** Canary label upkeep (PatchReason CanaryLabel). */
  podPatches: PodPatch[];
  requeueAfterMs?: number;
  /** Observing with every canary pod available: waiting on its clock or a person, not stuck (progress deadline). */
  waiting: boolean;
  /** Failed: every canary node runs an available pod of the stable revision again. */
  rolledBack?: boolean;
}

/**
 * Which revision each node runs this sync (targets.ts, the stage after the canary): the current one, unless an active
 * canary (Observing, Paused or Failed) holds nodes on its stable revision.
 */
export interface NodeTargets {
  /** The current revision hash. */
  hash: string;
  /** Absent when every node targets `hash`. */
  canary?: CanaryHold;
}

/** What an active canary holds, from its CanaryPlan. */
export interface CanaryHold {
  /** The canary nodes: they target the current revision, unless the canary failed. */
  nodes: ReadonlySet<string>;
  failed: boolean;
  /** The revision every other node targets (and the canary nodes too once the canary failed). */
  stableHash: string;
  /** The DaemonSet with the stable revision's template, to build its pods. */
  stableDs?: DaemonSet;
  /** The nodes the rolling update touches (CanaryPlan.rollingNodes). */
  rollingNodes: readonly string[];
}

export interface ImagePreDownloadPlan {
  /** Pull pods to create (full manifests). */
  creates: { nodeName: string; pod: Pod }[];
  /** Pull pods to delete: finished, or cancelled. */
  deletes: { podName: string; uid?: string; nodeName?: string; reason: 'Pulled' | 'PullFailed' | 'Cancelled' }[];
  /** Annotations on old daemon pods recording that their node has the new images. */
  podPatches: PodPatch[];
  events: PlanEvent[];
}

export interface ImagePullJobPlan {
  /** The current ControllerRevision, whose labels keep the state. */
  revisionName: string;
  /** ImagePullJobs to create (AlreadyExists counts as done). */
  creates: KubeObject[];
  /** Delete every ImagePullJob of this DaemonSet (label apps.kruise.io/image-predownload-daemonset-uid). */
  deleteAll: boolean;
  /** Labels to merge into the current ControllerRevision once the above succeeded. */
  revisionLabels?: Record<string, string>;
}
