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
export const STORAGE_VERSION = V1BETA1;
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

// Labels and annotations.
/** Pod and ControllerRevision label: the bare revision hash. */
export const CONTROLLER_REVISION_HASH_LABEL = 'controller-revision-hash';
export const POD_TEMPLATE_GENERATION_LABEL = 'pod-template-generation';
export const DEPRECATED_TEMPLATE_GENERATION_ANNOTATION = 'deprecated.daemonset.template.generation';
/** v1alpha1 stand-in for v1beta1 scaleStrategy.partitionedScaling ("true"). */
export const PROGRESSIVE_CREATE_POD_ANNOTATION = 'daemonset.kruise.io/progressive-create-pod';
export const IMAGE_PREDOWNLOAD_PARALLELISM_ANNOTATION = 'apps.kruise.io/image-predownload-parallelism';
export const IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS_ANNOTATION = 'apps.kruise.io/image-predownload-timeout-seconds';
export const IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS_ANNOTATION =
  'apps.kruise.io/image-predownload-min-updated-ready-pods';
/** ControllerRevision label (the doubled "pre-" is Kruise's spelling). */
export const IMAGE_PREDOWNLOAD_CREATED_LABEL = 'apps.kruise.io/pre-predownload-created';
export const IMAGE_PREDOWNLOAD_IGNORED_LABEL = 'apps.kruise.io/image-predownload-ignored';

export const LIFECYCLE_STATE_LABEL = 'lifecycle.apps.kruise.io/state';
export const LIFECYCLE_TIMESTAMP_ANNOTATION = 'lifecycle.apps.kruise.io/timestamp';

export const INPLACE_UPDATE_STATE_ANNOTATION = 'apps.kruise.io/inplace-update-state';
/** Older key, still read. */
export const INPLACE_UPDATE_STATE_ANNOTATION_OLD = 'inplace-update-state';
export const INPLACE_UPDATE_GRACE_ANNOTATION = 'apps.kruise.io/inplace-update-grace';
export const RUNTIME_CONTAINERS_META_ANNOTATION = 'apps.kruise.io/runtime-containers-meta';

// Pod readiness gates / conditions.
export const KRUISE_POD_READY = 'KruisePodReady';
export const IN_PLACE_UPDATE_READY = 'InPlaceUpdateReady';
