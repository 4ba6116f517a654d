// Event reasons the DaemonSet controller records, in one place: the planner's (PlanEvent.reason) and the shell's
// pod-control ones. Values as upstream, so `kubectl describe ds` reads as it does for kruise-manager
// (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/daemon_controller.go, consts
// SelectingAllReason, FailedPlacementReason, FailedDaemonPodReason, SucceededDaemonPodReason;
// https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/controller_utils.go for the pod-control
// ones; https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_controller.go and
// daemonset_predownload_image.go for Kruise's).

// Decided by the planner (src/daemonset).
/** Warning: spec.selector is `{}`. */
export const SELECTING_ALL_REASON = 'SelectingAll';
/** Warning: spec.selector does not parse. */
export const INVALID_SELECTOR_REASON = 'InvalidSelector';
/** Warning: a daemon pod failed and is deleted (with per-node backoff). */
export const FAILED_DAEMON_POD_REASON = 'FailedDaemonPod';
/** Normal: a daemon pod succeeded and is deleted. */
export const SUCCEEDED_DAEMON_POD_REASON = 'SucceededDaemonPod';
/** Normal: a ControllerRevision name is taken by another template. */
export const HASH_COLLISION_REASON = 'HashCollision';
/** Warning: rollingUpdate cannot be applied (e.g. maxSurge and maxUnavailable both 0). */
export const INVALID_ROLLING_UPDATE_REASON = 'InvalidRollingUpdate';
/**
 * Normal: the partition keeps every node selected by rollingUpdate.selector on the old revision. Kruise has no such
 * event; it counts the partition over all nodes, so the same spec moves nodes there.
 */
export const PARTITION_HOLDS_SELECTED_NODES = 'PartitionHoldsSelectedNodes';
/** Normal: the rollout is frozen (annotation advanced-daemonset.io/rollout-frozen); also the Progressing reason. */
export const ROLLOUT_FROZEN_REASON = 'RolloutFrozen';
/** Warning: a pull pod of the image pre-download failed (planner) or could not be created (shell). */
export const FAILED_PRE_DOWNLOAD_IMAGE_REASON = 'FailedPreDownloadImage';
// In-place resource resize (resize.ts); ours: Kruise logs these and records nothing.
/** Warning: a pod's resources cannot change in place (the message has the field path); it is recreated. */
export const RESIZE_NOT_POSSIBLE_REASON = 'ResizeNotPossible';
/** Warning: the kubelet reports the pod's resize Infeasible on its node (its message); the pod is recreated. */
export const RESIZE_INFEASIBLE_REASON = 'ResizeInfeasible';
// Per-node resources (overrides.ts, setting-status.ts); ours, as EDS records none.
/** Warning: a node's resources annotation for the DaemonSet is not a ResourceRequirements; it is ignored. */
export const INVALID_RESOURCES_OVERRIDE_REASON = 'InvalidResourcesOverride';
/** Warning, on a DaemonSetSetting: another setting sets the same container on some nodes; says which one wins. */
export const SETTING_CONFLICT_REASON = 'SettingConflict';
/** Warning, on a DaemonSetSetting: it names a container the DaemonSet does not have. */
export const SETTING_UNKNOWN_CONTAINER_REASON = 'UnknownContainer';
// Canary (canary/plan.ts); the messages name the revision, the nodes or pod, and the reason.
/** Normal: a canary of a new revision started (or restarted on the same nodes for a newer template). */
export const CANARY_STARTED_REASON = 'CanaryStarted';
/** Warning (autoPause) or Normal (annotation): the canary is paused. */
export const CANARY_PAUSED_REASON = 'CanaryPaused';
/** Normal: the canary is promoted; the rolling update takes over. */
export const CANARY_PROMOTED_REASON = 'CanaryPromoted';
/** Warning: the canary failed; its nodes go back to the stable revision. */
export const CANARY_FAILED_REASON = 'CanaryFailed';
/** Normal: every canary node runs an available pod of the stable revision again. */
export const CANARY_ROLLED_BACK_REASON = 'CanaryRolledBack';

// Recorded by the shell (controller/daemonset/executor.ts) for the requests it makes.
export const SUCCESSFUL_CREATE_REASON = 'SuccessfulCreate';
export const FAILED_CREATE_REASON = 'FailedCreate';
export const SUCCESSFUL_DELETE_REASON = 'SuccessfulDelete';
export const FAILED_DELETE_REASON = 'FailedDelete';
export const SUCCESSFUL_UPDATE_POD_IN_PLACE_REASON = 'SuccessfulUpdatePodInPlace';
export const FAILED_UPDATE_POD_IN_PLACE_REASON = 'FailedUpdatePodInPlace';
/** Normal: pods/resize accepted the pod's new resources; the kubelet actuates them. */
export const SUCCESSFUL_RESIZE_POD_IN_PLACE_REASON = 'SuccessfulResizePodInPlace';
export const CREATED_IMAGE_PULL_JOB_REASON = 'CreatedImagePullJob';
export const FAILED_CREATE_IMAGE_PULL_JOB_REASON = 'FailedCreateImagePullJob';

/** Reasons the planner may put in a PlanEvent. */
export type PlanEventReason =
  | typeof SELECTING_ALL_REASON
  | typeof INVALID_SELECTOR_REASON
  | typeof FAILED_DAEMON_POD_REASON
  | typeof SUCCEEDED_DAEMON_POD_REASON
  | typeof HASH_COLLISION_REASON
  | typeof INVALID_ROLLING_UPDATE_REASON
  | typeof PARTITION_HOLDS_SELECTED_NODES
  | typeof ROLLOUT_FROZEN_REASON
  | typeof FAILED_PRE_DOWNLOAD_IMAGE_REASON
  | typeof RESIZE_NOT_POSSIBLE_REASON
  | typeof RESIZE_INFEASIBLE_REASON
  | typeof INVALID_RESOURCES_OVERRIDE_REASON
  | typeof SETTING_CONFLICT_REASON
  | typeof SETTING_UNKNOWN_CONTAINER_REASON
  | typeof CANARY_STARTED_REASON
  | typeof CANARY_PAUSED_REASON
  | typeof CANARY_PROMOTED_REASON
  | typeof CANARY_FAILED_REASON
  | typeof CANARY_ROLLED_BACK_REASON;

/** Every reason this controller records. */
export type EventReason =
  | PlanEventReason
  | typeof SUCCESSFUL_CREATE_REASON
  | typeof FAILED_CREATE_REASON
  | typeof SUCCESSFUL_DELETE_REASON
  | typeof FAILED_DELETE_REASON
  | typeof SUCCESSFUL_UPDATE_POD_IN_PLACE_REASON
  | typeof FAILED_UPDATE_POD_IN_PLACE_REASON
  | typeof SUCCESSFUL_RESIZE_POD_IN_PLACE_REASON
  | typeof CREATED_IMAGE_PULL_JOB_REASON
  | typeof FAILED_CREATE_IMAGE_PULL_JOB_REASON;
