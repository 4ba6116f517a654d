// Names of the API and the label/annotation/condition keys (docs/kruise-rules.md#labels-and-annotations).

export const API_GROUP = 'apps.kruise.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = 'apps.kruise.io/v1alpha1';
/** v1beta1: served next to v1alpha1 and the storage version, as in Kruise 1.9
 * (https://github.com/openkruise/kruise/blob/v1.9.0/apis/apps/v1beta1/daemonset_types.go). */
export const V1BETA1 = 'v1beta1';
export const API_VERSION_V1BETA1 = 'apps.kruise.io/v1beta1';
/** The versions the CRD serves, oldest first. */
export const SERVED_VERSIONS = [VERSION, V1BETA1] as const;
export type ServedVersion = (typeof SERVED_VERSIONS)[number];
export const isServedVersion = (v: unknown): v is ServedVersion => SERVED_VERSIONS.includes(v as ServedVersion);
/** The CRD's default storage version (Kruise 1.9 stores v1beta1). */
export const STORAGE_VERSION: ServedVersion = 'v1beta1';
export const KIND = 'DaemonSet';
export const LIST_KIND = 'DaemonSetList';
export const PLURAL = 'daemonsets';
export const SINGULAR = 'daemonset';
export const SHORT_NAMES = ['daemon', 'ads'] as const;
/** `daemonsets.apps.kruise.io`: the CRD name. */
export const RESOURCE = `${PLURAL}.${API_GROUP}`;

/** Webhook paths, as kruise-manager serves them. */
export const MUTATE_PATH = '/mutate-apps-kruise-io-daemonset';
export const VALIDATE_PATH = '/validate-apps-kruise-io-daemonset';
/** CRD conversion webhook path (ConversionReview), on the same server as admission. */
export const CONVERT_PATH = '/convert';

// Defaults (SetDefaultsDaemonSet).
export const DEFAULT_BURST_REPLICAS = 250;
export const DEFAULT_REVISION_HISTORY_LIMIT = 10;
/** spec.progressDeadlineSeconds, as apps/v1 Deployment's default (not Kruise: it has no such field). */
export const DEFAULT_PROGRESS_DEADLINE_SECONDS = 600;
// rollingUpdate.canary, as ExtendedDaemonSet's defaults
// (https://github.com/DataDog/extendeddaemonset/blob/main/api/v1alpha1/extendeddaemonset_default.go).
export const DEFAULT_CANARY_NODES = 1;
export const DEFAULT_CANARY_VALIDATION = 'Auto';
/** rollingUpdate.unhealthyNodes: upstream's rule, every node counts against the budget. */
export const DEFAULT_UNHEALTHY_NODES = 'Count';
export const DEFAULT_CANARY_DURATION = '10m';
export const DEFAULT_CANARY_NO_RESTARTS_DURATION = '5m';
export const DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS = 2;
export const DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS = 5;
/** spec.nodeReadiness.unreadySeconds under mode Continuous. */
export const DEFAULT_NODE_READINESS_UNREADY_SECONDS = 30;

// Labels and annotations.
/** Pod and ControllerRevision label: the bare revision hash. */
export const CONTROLLER_REVISION_HASH_LABEL = 'controller-revision-hash';
export const POD_TEMPLATE_GENERATION_LABEL = 'pod-template-generation';
export const DEPRECATED_TEMPLATE_GENERATION_ANNOTATION = 'deprecated.daemonset.template.generation';
/** v1alpha1 stand-in for v1beta1 scaleStrategy.partitionedScaling ("true"). */
export const PROGRESSIVE_CREATE_POD_ANNOTATION = 'daemonset.kruise.io/progressive-create-pod';
export const IMAGE_PREDOWNLOAD_PARALLELISM_ANNOTATION = 'apps.kruise.io/image-predownload-parallelism';
export const IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS_ANNOTATION = 'apps.kruise.io/image-predownload-timeout-seconds';
/** ControllerRevision label (the doubled "pre-" is Kruise's spelling). */
export const IMAGE_PREDOWNLOAD_CREATED_LABEL = 'apps.kruise.io/pre-predownload-created';
export const IMAGE_PREDOWNLOAD_IGNORED_LABEL = 'apps.kruise.io/image-predownload-ignored';

/**
 * "true": the rollout is frozen, as ExtendedDaemonSet's extendeddaemonset.datadoghq.com/rollout-frozen: no daemon pod of
 * the DaemonSet is created, deleted or updated in place (new nodes included, failed pods left) until it is removed.
 * rollingUpdate.paused, next to it, only stops updates.
 */
export const ROLLOUT_FROZEN_ANNOTATION = 'advanced-daemonset.io/rollout-frozen';
/**
 * On a pod whose pods/resize the apiserver refused (403, 422: e.g. "node didn't have enough allocatable resources"),
 * JSON {revision, message}: the resize to that revision cannot be made, so the pod is recreated instead (inplace.ts).
 */
export const RESIZE_REFUSED_ANNOTATION = 'advanced-daemonset.io/resize-refused';

// Per-node resources (src/api/setting.ts, src/daemonset/overrides.ts).
/**
 * Node annotation prefix: `<prefix><namespace>.<daemonset>.<container>` holds a JSON ResourceRequirements that the
 * container of that DaemonSet's pod on the node gets, in place of the template's and of any DaemonSetSetting's.
 */
export const NODE_RESOURCES_ANNOTATION_PREFIX = 'resources.advanced-daemonset.io/';
/**
 * ExtendedDaemonSet's prefix for the same (ExtendedDaemonSetRessourceNodeAnnotationKey,
 * https://github.com/DataDog/extendeddaemonset/blob/main/api/v1alpha1/const.go): read too, so the annotations of a
 * cluster moving from EDS keep working; ours wins where both name a container.
 */
export const EDS_NODE_RESOURCES_ANNOTATION_PREFIX = 'resources.extendeddaemonset.datadoghq.com/';
/**
 * Pod annotation: JSON {hash, containers: {<name>: {source, resources}}}, the per-node resources the pod was given
 * (source `Node` for a node annotation, `DaemonSetSetting/<name>`), absent when every container has the template's.
 */
export const RESOURCES_OVERRIDE_ANNOTATION = 'advanced-daemonset.io/resources-override';

// Canary (rollingUpdate.canary): our own keys. The controls are annotations on the DaemonSet, so `kubectl annotate`
// works and the spec stays owned by whoever applies it.
/** Pod label, "true" on the canary pods while the canary runs (removed when it is promoted or fails). */
export const CANARY_POD_LABEL = 'advanced-daemonset.io/canary';
/** DaemonSet annotation: the revision hash to promote now (it must name the canary's revision). */
export const CANARY_VALIDATED_ANNOTATION = 'advanced-daemonset.io/canary-validated';
/**
 * DaemonSet annotation: "true" pauses the canary; removing it (or any other value) resumes it, and that resume wins
 * over autoPause until the canary ends (so "true", then removed, resumes a canary autoPause paused).
 */
export const CANARY_PAUSED_ANNOTATION = 'advanced-daemonset.io/canary-paused';
/**
 * DaemonSet annotation: a revision hash; resumes the canary of that revision (paused by autoPause or by hand) and
 * turns autoPause off until that canary ends. A hash of another revision is ignored, so a leftover one is harmless.
 */
export const CANARY_RESUMED_ANNOTATION = 'advanced-daemonset.io/canary-resumed';
/**
 * DaemonSet annotation: a revision hash fails the canary of that revision now; "true" fails whichever canary runs,
 * and stays in force (every later canary fails at its first sync) until it is removed.
 */
export const CANARY_FAILED_ANNOTATION = 'advanced-daemonset.io/canary-failed';

export const LIFECYCLE_STATE_LABEL = 'lifecycle.apps.kruise.io/state';
export const LIFECYCLE_TIMESTAMP_ANNOTATION = 'lifecycle.apps.kruise.io/timestamp';

export const INPLACE_UPDATE_STATE_ANNOTATION = 'apps.kruise.io/inplace-update-state';
/** Older key, still read. */
export const INPLACE_UPDATE_STATE_ANNOTATION_OLD = 'inplace-update-state';

// Pod readiness gates / conditions.
export const KRUISE_POD_READY = 'KruisePodReady';
export const IN_PLACE_UPDATE_READY = 'InPlaceUpdateReady';
