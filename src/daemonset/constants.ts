// Keys and values the planner reads and writes (docs/kruise-rules.md#labels-and-annotations). The API's names come from
// src/api/constants.ts; only planner-specific ones are defined here.
export {
  API_VERSION as DAEMONSET_API_VERSION,
  KIND as DAEMONSET_KIND,
  CONTROLLER_REVISION_HASH_LABEL,
  POD_TEMPLATE_GENERATION_LABEL,
  DEPRECATED_TEMPLATE_GENERATION_ANNOTATION,
  PROGRESSIVE_CREATE_POD_ANNOTATION,
  KRUISE_POD_READY,
  IN_PLACE_UPDATE_READY,
  LIFECYCLE_STATE_LABEL,
  LIFECYCLE_TIMESTAMP_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION_OLD,
  RESIZE_REFUSED_ANNOTATION,
  NODE_RESOURCES_ANNOTATION_PREFIX,
  EDS_NODE_RESOURCES_ANNOTATION_PREFIX,
  RESOURCES_OVERRIDE_ANNOTATION,
  DEFAULT_BURST_REPLICAS,
  DEFAULT_REVISION_HISTORY_LIMIT,
  IMAGE_PREDOWNLOAD_PARALLELISM_ANNOTATION,
  IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS_ANNOTATION,
  IMAGE_PREDOWNLOAD_CREATED_LABEL,
  IMAGE_PREDOWNLOAD_IGNORED_LABEL,
  CANARY_POD_LABEL,
  CANARY_VALIDATED_ANNOTATION,
  CANARY_PAUSED_ANNOTATION,
  CANARY_RESUMED_ANNOTATION,
  CANARY_FAILED_ANNOTATION,
  DEFAULT_CANARY_NODES,
  DEFAULT_CANARY_VALIDATION,
  DEFAULT_CANARY_DURATION,
  DEFAULT_CANARY_NO_RESTARTS_DURATION,
  DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS,
  DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS,
} from '../api/constants.ts';

export const LIFECYCLE_STATE_PREPARING_DELETE = 'PreparingDelete';
/** spec.schedulerName when pods are bound by the controller (--assign-pods-by-scheduler=false). */
export const DAEMONSET_CONTROLLER_SCHEDULER = 'kubernetes.io/daemonset-controller';

// Image pre-download by pull pods (predownload.ts); our own keys, Kruise uses ImagePullJobs instead.
/** Pull-pod label: UID of the DaemonSet it pulls for (a pull pod is never one of its daemon pods). */
export const IMAGE_PULL_POD_DAEMONSET_UID_LABEL = 'apps.kruise.io/image-predownload-daemonset-uid';
/** Pull-pod label: the revision hash whose images it pulls. */
export const IMAGE_PULL_POD_REVISION_LABEL = 'apps.kruise.io/image-predownload-revision';
/** Old daemon pod annotation: its node already pulled the images of this revision hash. */
export const IMAGE_PREDOWNLOADED_ANNOTATION = 'apps.kruise.io/image-predownloaded';
