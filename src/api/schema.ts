// The apps.kruise.io DaemonSet schemas of both served versions (v1alpha1 and v1beta1), built from shared pieces: the
// one source of truth for the TypeScript types (types.ts), the CRD's openAPIV3Schema per version (crd.ts) and the
// ajv structural check (validation.ts). v1beta1 is v1alpha1 without the deprecated Surging type and the
// `rollingUpdate.type` alias, with `spec.scaleStrategy.partitionedScaling` and `status.updateRevision` in place of
// the progressive-create annotation and `status.daemonSetHash`
// (https://github.com/openkruise/kruise/blob/v1.9.0/apis/apps/v1beta1/daemonset_types.go).
// Every node is written so that it is already a valid Kubernetes *structural* schema once TypeBox's symbol
// keys are dropped: no patternProperties (so no Type.Record), no const (so enums are plain strings whose
// values are checked by the validating webhook, as Kruise does), IntOrString in the int-or-string form.
import { Type, type SchemaOptions, type Static, type TSchema } from '@sinclair/typebox';
import type { ObjectMeta, PodTemplateSpec } from '../k8s/types.ts';
import type { ServedVersion } from './constants.ts';

/** Kruise/k8s IntOrString: a JSON integer or a string ("N%"), in the form the structural-schema rules demand. */
export const IntOrStringSchema = (description: string) =>
  Type.Unsafe<number | string>({
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    'x-kubernetes-int-or-string': true,
    description,
  });

/** A string whose allowed values are checked by the webhook (the CRD stays permissive, as Kruise's does). */
const StringEnum = <const T extends readonly string[]>(_values: T, options: SchemaOptions) =>
  Type.Unsafe<T[number]>({ type: 'string', ...options });

/** map[string]string: additionalProperties with a schema is structural; patternProperties is not. */
const StringMap = (description: string) =>
  Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' }, description });

const Int32 = (description: string, options: SchemaOptions = {}) =>
  Type.Integer({ format: 'int32', description, ...options });

const StringList = (description: string) => Type.Array(Type.String(), { description });

export const UPDATE_STRATEGY_TYPES = ['RollingUpdate', 'OnDelete'] as const;
/** v1alpha1 accepts the deprecated `Surging`; the defaulter rewrites it to `Standard`. */
export const ROLLING_UPDATE_TYPES = ['Standard', 'Surging', 'InPlaceIfPossible'] as const;
/** v1beta1 has no Surging (Kruise's v1beta1 RollingUpdateType constants). */
export const ROLLING_UPDATE_TYPES_V1BETA1 = ['Standard', 'InPlaceIfPossible'] as const;
export const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

export const LabelSelectorRequirementSchema = Type.Object(
  {
    key: Type.String({ description: 'key is the label key that the selector applies to.' }),
    operator: StringEnum(SELECTOR_OPERATORS, {
      description:
        "operator represents a key's relationship to a set of values.\nValid operators are In, NotIn, Exists and DoesNotExist.",
    }),
    values: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'values is an array of string values. If the operator is In or NotIn,\nthe values array must be non-empty. If the operator is Exists or DoesNotExist,\nthe values array must be empty.',
        'x-kubernetes-list-type': 'atomic',
      }),
    ),
  },
  {
    description:
      'A label selector requirement is a selector that contains values, a key, and an operator that\nrelates the key and values.',
  },
);

/** metav1.LabelSelector; `description` says what it selects (pods or nodes). */
export const LabelSelectorSchema = (description: string) =>
  Type.Object(
    {
      matchExpressions: Type.Optional(
        Type.Array(LabelSelectorRequirementSchema, {
          description: 'matchExpressions is a list of label selector requirements. The requirements are ANDed.',
          'x-kubernetes-list-type': 'atomic',
        }),
      ),
      matchLabels: Type.Optional(
        StringMap(
          'matchLabels is a map of {key,value} pairs. A single {key,value} in the matchLabels\nmap is equivalent to an element of matchExpressions, whose key field is "key", the\noperator is "In", and the values array contains only "value". The requirements are ANDed.',
        ),
      ),
    },
    { description, 'x-kubernetes-map-type': 'atomic' },
  );

/** A Go duration string, as metav1.Duration ("90s", "10m", "1h30m"); parsed by duration.ts. */
const DurationString = (description: string) => Type.String({ description });

export const CANARY_VALIDATIONS = ['Auto', 'Manual'] as const;
/** rollingUpdate.unhealthyNodes: Count (upstream's rule, the default) or Ignore (docs/rollout-strategies.md). */
export const UNHEALTHY_NODES_POLICIES = ['Count', 'Ignore'] as const;
export const CANARY_PHASES = ['Observing', 'Paused', 'Failed', 'Promoted'] as const;

/** rollingUpdate.canary.autoPause (ExtendedDaemonSet's canary.autoPause). */
export const CanaryAutoPauseSchema = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: 'Pause the canary automatically when a canary pod is unhealthy. Defaults to true.' }),
    ),
    maxRestarts: Type.Optional(
      Int32(
        'Pause the canary when a container of a canary pod restarted more than this many times on the canary\nrevision. Defaults to 2.',
      ),
    ),
    maxStartupDuration: Type.Optional(
      DurationString(
        'Pause the canary when a canary pod is not ready this long after it started (created, or updated in\nplace), e.g. "5m". Unset: no limit.',
      ),
    ),
  },
  {
    description:
      'Automatic pause: a canary container that cannot start (ErrImagePull, ImagePullBackOff, InvalidImageName,\nCreateContainerConfigError, CreateContainerError, ...), restarts above maxRestarts, or a canary pod not\nready within maxStartupDuration pauses the canary until a person acts (see the annotations in\nrollingUpdate.canary).',
  },
);

/** rollingUpdate.canary.autoFail (ExtendedDaemonSet's canary.autoFail). */
export const CanaryAutoFailSchema = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: 'Fail the canary automatically when a canary pod keeps failing. Defaults to true.' }),
    ),
    maxRestarts: Type.Optional(
      Int32(
        'Fail the canary when a container of a canary pod restarted more than this many times on the canary\nrevision. Must be greater than autoPause.maxRestarts when both are enabled. Defaults to 5.',
      ),
    ),
    maxRestartsDuration: Type.Optional(
      DurationString(
        'Fail the canary when canary containers keep restarting for longer than this (from the first restart\nseen to the latest), e.g. "10m". Unset: no limit.',
      ),
    ),
    timeout: Type.Optional(
      DurationString(
        'Fail the canary when it is older than this without having been promoted, e.g. "1h". Must be greater\nthan duration. Unset: no limit.',
      ),
    ),
  },
  {
    description:
      'Automatic failure: the canary nodes go back to the stable revision, and the rollout is held until the\ntemplate changes (the spec is not rewritten).',
  },
);

/** rollingUpdate.canary: the same in both versions. */
export const CanarySchema = Type.Object(
  {
    nodes: Type.Optional(
      IntOrStringSchema(
        'How many nodes run the new revision first: an absolute number (ex: 3) or a percentage of the\ndesired nodes (ex: 10%), rounded up, at least 1. Defaults to 1.',
      ),
    ),
    nodeSelector: Type.Optional(
      LabelSelectorSchema(
        'Canary candidates: only nodes whose labels match are chosen as canary nodes (besides being eligible\nand matching rollingUpdate.selector). Unset: every eligible node.',
      ),
    ),
    spreadByNodeLabels: Type.Optional(
      Type.Array(Type.String(), {
        description:
          'Node label keys (ex: topology.kubernetes.io/zone) whose values the canary nodes are spread over,\nround-robin. Among candidates, nodes whose daemon pod restarted least go first.',
        'x-kubernetes-list-type': 'atomic',
      }),
    ),
    validation: Type.Optional(
      StringEnum(CANARY_VALIDATIONS, {
        description:
          'How the canary is promoted: Auto (after duration and noRestartsDuration) or Manual (when the\nannotation advanced-daemonset.io/canary-validated names the revision hash). Defaults to Auto.',
      }),
    ),
    duration: Type.Optional(
      DurationString(
        'Auto: promote once every canary pod has been available this long, e.g. "10m". Defaults to 10m.\nNot allowed with validation Manual.',
      ),
    ),
    noRestartsDuration: Type.Optional(
      DurationString(
        'Auto: and once no canary container has restarted for this long, e.g. "5m". Defaults to 5m.\nNot allowed with validation Manual.',
      ),
    ),
    autoPause: Type.Optional(CanaryAutoPauseSchema),
    autoFail: Type.Optional(CanaryAutoFailSchema),
  },
  {
    description:
      'Canary: a new revision first goes only to the canary nodes (with this rolling update strategy, within\nmaxUnavailable); the other nodes, and new ones, keep the stable revision until the canary is promoted;\nthen the rolling update goes on as without a canary (partition, selector, paused). Health is judged per\ncanary pod (autoPause, autoFail). Controls, as annotations on the DaemonSet:\nadvanced-daemonset.io/canary-validated: <revision hash> promotes, advanced-daemonset.io/canary-paused:\n"true" pauses (removing it resumes), advanced-daemonset.io/canary-resumed: <revision hash> resumes (also\na canary autoPause paused); a resume wins over autoPause until the canary ends;\nadvanced-daemonset.io/canary-failed: <revision hash> fails it ("true" fails any canary, until removed).\nProgress is in status.canary.',
  },
);

/**
 * rollingUpdate.priorityStrategy: Kruise's UpdatePriorityStrategy
 * (https://github.com/openkruise/kruise/blob/master/apis/apps/pub/update_priority.go), read on node labels.
 */
export const UpdatePriorityStrategySchema = Type.Object(
  {
    weightPriority: Type.Optional(
      Type.Array(
        Type.Object(
          {
            weight: Int32('Weight of the nodes matchSelector selects, in the range 0-100.'),
            matchSelector: LabelSelectorSchema('Selects nodes by their labels (not empty).'),
          },
          { description: 'A weight given to the nodes matchSelector selects.' },
        ),
        {
          description:
            'Weight priority terms: a node weighs the sum of the weights of the terms whose matchSelector selects\nit; heavier nodes (and waves) are updated first.',
          'x-kubernetes-list-type': 'atomic',
        },
      ),
    ),
    orderPriority: Type.Optional(
      Type.Array(
        Type.Object(
          { orderedKey: Type.String({ description: 'A node label key (ex: topology.kubernetes.io/zone).' }) },
          { description: 'Order nodes by the value of a node label.' },
        ),
        {
          description:
            'Order priority terms: nodes with the first key come first, ordered by its value, higher first (the\nlast integer in the value, as Kruise, then the value as text); then nodes with the second key, and so\non; nodes with none of the keys last. Only one of weightPriority and orderPriority may be set.',
          'x-kubernetes-list-type': 'atomic',
        },
      ),
    ),
  },
  {
    description:
      "The order in which nodes are updated, by node labels, as Kruise CloneSet's priorityStrategy orders pods;\nties keep the default order (descending node name). With waves it orders the waves too (by their\nhighest-priority node). The partition keeps the lowest-priority nodes old.",
  },
);

/** rollingUpdate.waves: the rollout goes one topology domain (zone) at a time. */
export const RolloutWavesSchema = Type.Object(
  {
    topologyKey: Type.String({
      description:
        'The node label key whose values make the waves (ex: topology.kubernetes.io/zone). Nodes without the\nlabel form the last wave.',
    }),
    availableSeconds: Type.Optional(
      Int32(
        'How long every updated pod of a wave must have been available (after minReadySeconds) before the next\nwave starts. Defaults to 0.',
      ),
    ),
  },
  {
    description:
      'Rollout in waves: nodes are grouped by the value of topologyKey, and only the nodes of one wave are\nupdated at a time (within maxUnavailable); the next wave starts once every node of the wave runs an\navailable pod of the new revision, for availableSeconds. Waves go by label value, ascending, unless\npriorityStrategy orders them. The partition counts over all nodes (it holds the last waves); a canary runs\nbefore the waves.',
  },
);

/** The rolling update fields both versions share. */
const rollingUpdateFields = {
  maxUnavailable: Type.Optional(
    IntOrStringSchema(
      'The maximum number of DaemonSet pods that can be unavailable during the\nupdate. Value can be an absolute number (ex: 5) or a percentage of total\nnumber of DaemonSet pods at the start of the update (ex: 10%). Absolute\nnumber is calculated from percentage by rounding up.\nThis cannot be 0 if MaxSurge is 0.\nDefault value is 1.',
    ),
  ),
  maxSurge: Type.Optional(
    IntOrStringSchema(
      'The maximum number of nodes with an existing available DaemonSet pod that\ncan have an updated DaemonSet pod during an update.\nValue can be an absolute number (ex: 5) or a percentage of desired pods (ex: 10%).\nThis can not be 0 if MaxUnavailable is 0, and must be 0 when MaxUnavailable is not 0\nor the type is InPlaceIfPossible.\nAbsolute number is calculated from percentage by rounding up.\nDefault value is 0.',
    ),
  ),
  selector: Type.Optional(
    LabelSelectorSchema(
      'A label query over nodes that are managed by the daemon set RollingUpdate.\nOnly pods on nodes whose labels match are updated; pods on other nodes keep\ntheir current revision until the selector changes.',
    ),
  ),
  partition: Type.Optional(
    IntOrStringSchema(
      'The number of DaemonSet pods (nodes) that remain at the old revision during the update.\nValue can be an absolute number (ex: 5) or a percentage of status.desiredNumberScheduled (ex: 10%),\nrounded down. Must be >= 0 and at most 100%.\nDefault value is 0 (every pod is updated). Nodes are chosen in descending node-name order.',
    ),
  ),
  paused: Type.Optional(
    Type.Boolean({
      description:
        'Indicates that the rolling update is paused: the controller keeps creating and deleting pods\nfor node changes but does not update existing pods to the new revision.',
    }),
  ),
  canary: Type.Optional(CanarySchema),
  priorityStrategy: Type.Optional(UpdatePriorityStrategySchema),
  waves: Type.Optional(RolloutWavesSchema),
  unhealthyNodes: Type.Optional(
    StringEnum(UNHEALTHY_NODES_POLICIES, {
      description:
        'What the rolling update does with nodes that cannot take the new revision: Count (default, as\nupstream) counts them against maxUnavailable/maxSurge, so a few broken nodes may stall the rollout;\nIgnore sets aside nodes that were not Ready (Ready False or Unknown, or tainted unreachable) before\ngetting the new revision and nodes whose pod is Unschedulable: they use no budget and the rollout\ngoes on past them (listed in the NodesSetAside condition). A node that turns not Ready after it got\nthe new revision still counts, as a failure of that revision.',
    }),
  ),
};

const ROLLING_UPDATE_DESCRIPTION = 'Rolling update config params. Present only if type = "RollingUpdate".';
const ROLLING_UPDATE_TYPE_KINDS =
  'Type is to specify which kind of rollingUpdate: Standard (delete the old pod, then create the new one, or\nsurge first when maxSurge > 0), InPlaceIfPossible (update the pod in place when only images, labels or\nannotations changed, else recreate).';

export const RollingUpdateDaemonSetSchema = Type.Object(
  {
    rollingUpdateType: Type.Optional(
      StringEnum(ROLLING_UPDATE_TYPES, {
        description: `${ROLLING_UPDATE_TYPE_KINDS} Deprecated Surging is rewritten to Standard. Defaults to Standard.`,
      }),
    ),
    type: Type.Optional(
      StringEnum(ROLLING_UPDATE_TYPES, {
        description:
          'Deprecated spelling of rollingUpdateType that OpenKruise articles use (`type: Surging`). The webhook\nmoves it to rollingUpdateType; it is never stored.',
      }),
    ),
    ...rollingUpdateFields,
  },
  { description: ROLLING_UPDATE_DESCRIPTION },
);

/** v1beta1: Standard or InPlaceIfPossible only, and no `type` alias. */
export const RollingUpdateDaemonSetV1beta1Schema = Type.Object(
  {
    rollingUpdateType: Type.Optional(
      StringEnum(ROLLING_UPDATE_TYPES_V1BETA1, {
        description: `${ROLLING_UPDATE_TYPE_KINDS} Defaults to Standard.`,
      }),
    ),
    ...rollingUpdateFields,
  },
  { description: ROLLING_UPDATE_DESCRIPTION },
);

const UPDATE_STRATEGY_DESCRIPTION = 'An update strategy to replace existing DaemonSet pods with new pods.';
const updateStrategyType = StringEnum(UPDATE_STRATEGY_TYPES, {
  description: 'Type of daemon set update. Can be "RollingUpdate" or "OnDelete". Default is RollingUpdate.',
});

export const DaemonSetUpdateStrategySchema = Type.Object(
  {
    type: Type.Optional(updateStrategyType),
    rollingUpdate: Type.Optional(RollingUpdateDaemonSetSchema),
  },
  { description: UPDATE_STRATEGY_DESCRIPTION },
);

export const DaemonSetUpdateStrategyV1beta1Schema = Type.Object(
  {
    type: Type.Optional(updateStrategyType),
    rollingUpdate: Type.Optional(RollingUpdateDaemonSetV1beta1Schema),
  },
  { description: UPDATE_STRATEGY_DESCRIPTION },
);

/** v1beta1 only: the field that replaces the `daemonset.kruise.io/progressive-create-pod` annotation. */
export const DaemonSetScaleStrategyV1beta1Schema = Type.Object(
  {
    partitionedScaling: Type.Optional(
      Type.Boolean({
        description:
          'PartitionedScaling indicates daemon pods created in manage phase will be controlled by partition.\nIf set to true, the creation will be controlled by partition and only some of daemon pods\nwill be created. Otherwise daemon pods will be created on every node that need to start a daemon pod.\nDefault is false.',
      }),
    ),
  },
  {
    description:
      'ScaleStrategy indicates the DaemonSetScaleStrategy that will be\nemployed to create Pods in the DaemonSet.',
  },
);

export const LifecycleHookSchema = (description: string) =>
  Type.Object(
    {
      labelsHandler: Type.Optional(
        StringMap('The pod is hooked while any of these labels is present with the given value.'),
      ),
      finalizersHandler: Type.Optional(StringList('The pod is hooked while any of these finalizers is present on it.')),
      markPodNotReady: Type.Optional(
        Type.Boolean({
          description:
            "MarkPodNotReady = true means:\n- Pod will be set to 'NotReady' at preparingDelete/preparingUpdate state.\n- Pod will be restored to 'Ready' at Updated state if it was set to 'NotReady' at preparingUpdate state.\nCurrently, MarkPodNotReady only takes effect on InPlaceUpdate & PreDelete hook.\nDefault to false.",
        }),
      ),
    },
    { description },
  );

export const LifecycleSchema = Type.Object(
  {
    preDelete: Type.Optional(LifecycleHookSchema('PreDelete is the hook before Pod to be deleted.')),
    inPlaceUpdate: Type.Optional(
      LifecycleHookSchema(
        'InPlaceUpdate is the hook before Pod to update and after Pod has been updated.\nNot supported by Advanced DaemonSet: setting it is rejected.',
      ),
    ),
    preNormal: Type.Optional(
      LifecycleHookSchema(
        'PreNormal is the hook after Pod to be created and ready to be Normal.\nAccepted but ignored by Advanced DaemonSet.',
      ),
    ),
  },
  {
    description:
      'Lifecycle defines the lifecycle hooks for Pods pre-delete, in-place update.\nCurrently, we only support pre-delete hook for Advanced DaemonSet.',
  },
);

/** The pod template is schemaless in the CRD, as in Kruise: validated by the webhook, stored as written. */
export const PodTemplateSpecSchema = Type.Unsafe<PodTemplateSpec>({
  type: 'object',
  'x-kubernetes-preserve-unknown-fields': true,
  description:
    "An object that describes the pod that will be created.\nThe DaemonSet will create exactly one copy of this pod on every node\nthat matches the template's node selector (or on every node if no node\nselector is specified).\nMore info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#pod-template",
});

export const NODE_READINESS_MODES = ['Bootstrap', 'Continuous'] as const;
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

/**
 * spec.nodeReadiness: the startup taint the DaemonSet's pods clear, so that a node takes other workloads only once its
 * agents run (what uswitch/nidhogg and kubernetes-sigs/node-readiness-controller do beside the DaemonSet controller;
 * Cilium's node.cilium.io/agent-not-ready is removed by the agent itself). Ours (Kruise has no such field).
 */
export const NodeReadinessSchema = Type.Object(
  {
    taint: Type.Object(
      {
        key: Type.String({ description: 'The taint key, e.g. example.com/agent-not-ready (a qualified name).' }),
        value: Type.Optional(
          Type.String({ description: 'The taint value the controller puts back (Continuous); any value is removed.' }),
        ),
        effect: Type.Optional(
          StringEnum(TAINT_EFFECTS, {
            description:
              'NoSchedule (the default), PreferNoSchedule or NoExecute. Only the taint with this key and effect is\nremoved or put back; NoExecute is put back only when written here.',
          }),
        ),
      },
      {
        description:
          "The taint nodes start with (a node pool's startup taint, e.g. Karpenter startupTaints or a kubelet\n--register-with-taints). The webhook adds a toleration of it to the pod template.",
      },
    ),
    mode: Type.Optional(
      StringEnum(NODE_READINESS_MODES, {
        description:
          'Bootstrap (the default): the taint is removed once, when the pods of every DaemonSet naming it that\nshould run on the node have been Ready for their minReadySeconds. Continuous: also put back while\nthe pod stays not Ready for unreadySeconds.',
      }),
    ),
    unreadySeconds: Type.Optional(
      Int32(
        'Continuous: how long the pod may stay not Ready (or the node without it) before the taint is put back.\nDefaults to 30.',
      ),
    ),
  },
  {
    description:
      "Nodes wait for this DaemonSet: the taint named here keeps other workloads off a node until the\nDaemonSet's pod there is Ready (with several DaemonSets naming the same key, until all of them are).\nThe manager needs patch on nodes for it (chart value nodeReadiness.manageTaints).",
  },
);

/** The spec fields both versions share (all but updateStrategy and scaleStrategy). */
const specFields = {
  selector: LabelSelectorSchema(
    "A label query over pods that are managed by the daemon set.\nMust match in order to be controlled.\nIt must match the pod template's labels.\nMore info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
  ),
  template: PodTemplateSpecSchema,
  minReadySeconds: Type.Optional(
    Int32(
      'The minimum number of seconds for which a newly created DaemonSet pod should\nbe ready without any of its container crashing, for it to be considered\navailable. Defaults to 0 (pod will be considered available as soon as it\nis ready).',
    ),
  ),
  burstReplicas: Type.Optional(
    IntOrStringSchema(
      'BurstReplicas is a rate limiter for booting pods on a lot of pods: the maximum number of pod\ncreations, deletions and in-place updates in one sync. Value can be an absolute number or a\npercentage of status.desiredNumberScheduled, rounded down.\nThe default value is 250.',
    ),
  ),
  revisionHistoryLimit: Type.Optional(
    Int32(
      'The number of old history to retain to allow rollback.\nThis is a pointer to distinguish between explicit zero and not specified.\nDefaults to 10.',
    ),
  ),
  lifecycle: Type.Optional(LifecycleSchema),
  nodeReadiness: Type.Optional(NodeReadinessSchema),
  progressDeadlineSeconds: Type.Optional(
    Int32(
      'The maximum time in seconds for a rollout (canary or not) to make progress before the Progressing\ncondition turns False with reason ProgressDeadlineExceeded, as for a Deployment. Progress: more nodes\nupdated, ready or available, fewer old pods, a new revision or generation, a canary changing phase.\nOnly the condition changes; the rollout goes on. Must be greater than minReadySeconds. Defaults to 600s.',
    ),
  ),
};

const SPEC_DESCRIPTION = 'DaemonSetSpec defines the desired state of DaemonSet';

export const DaemonSetSpecSchema = Type.Object(
  { ...specFields, updateStrategy: Type.Optional(DaemonSetUpdateStrategySchema) },
  { description: SPEC_DESCRIPTION },
);

export const DaemonSetSpecV1beta1Schema = Type.Object(
  {
    ...specFields,
    updateStrategy: Type.Optional(DaemonSetUpdateStrategyV1beta1Schema),
    scaleStrategy: Type.Optional(DaemonSetScaleStrategyV1beta1Schema),
  },
  { description: SPEC_DESCRIPTION },
);

export const DaemonSetConditionSchema = Type.Object(
  {
    type: Type.String({ description: 'Type of DaemonSet condition.' }),
    status: StringEnum(CONDITION_STATUSES, { description: 'Status of the condition, one of True, False, Unknown.' }),
    lastTransitionTime: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Last time the condition transitioned from one status to another.',
      }),
    ),
    reason: Type.Optional(Type.String({ description: "The reason for the condition's last transition." })),
    message: Type.Optional(
      Type.String({ description: 'A human readable message indicating details about the transition.' }),
    ),
    lastUpdateTime: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          'Progressing, with progressDeadlineSeconds: the last time the rollout made progress (as a\nDeployment condition).',
      }),
    ),
  },
  { description: 'DaemonSetCondition describes the state of a DaemonSet at a certain point.' },
);

/**
 * status.canary: the same in both versions. The controller writes every field, '' and false included: status is
 * stored with a JSON merge patch, which keeps a field it leaves out from the previous canary.
 */
export const CanaryStatusSchema = Type.Object(
  {
    revision: Type.String({ description: 'The revision (controller-revision-hash) under canary.' }),
    stableRevision: Type.String({
      description:
        'The revision (hash) the other nodes keep until promotion, and the canary nodes go back to when the\ncanary fails.',
    }),
    nodes: Type.Array(Type.String(), {
      description: 'The canary nodes, by name (kept across syncs and for a newer template).',
      'x-kubernetes-list-type': 'atomic',
    }),
    phase: StringEnum(CANARY_PHASES, {
      description:
        'Observing (the canary runs), Paused (by autoPause or the canary-paused annotation), Failed (the canary\nnodes went back to stableRevision; held until the template changes or rollingUpdate.canary is removed) or\nPromoted (the rolling update took over).',
    }),
    reason: Type.Optional(
      Type.String({
        description:
          'Why the canary is in its phase: Started, Restarted, Resumed; a container reason (ErrImagePull,\nCrashLoopBackOff, ...), SlowStartTimeoutExceeded, ManualPause; RestartsTimeoutExceeded, TimeoutExceeded,\nManualFail; Validated, ManualValidation, StableRevision, CanaryRemoved.',
      }),
    ),
    message: Type.Optional(
      Type.String({ description: 'A human readable message, naming the pod and container when one is at fault.' }),
    ),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'When the canary entered its phase.' })),
    startTime: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'When the canary of this revision started (autoFail.timeout counts from here).',
      }),
    ),
    resumed: Type.Optional(
      Type.Boolean({ description: 'A person resumed the canary: autoPause no longer applies to it.' }),
    ),
    restartingSince: Type.Optional(
      Type.String({
        description:
          'The first canary container restart seen, RFC 3339 (autoFail.maxRestartsDuration counts from here);\nempty when none.',
      }),
    ),
  },
  { description: 'The canary of the latest revision (rollingUpdate.canary).' },
);

/** The status fields both versions share (all but the revision hash's name). */
const statusFields = {
  currentNumberScheduled: Int32(
    'The number of nodes that are running at least 1\ndaemon pod and are supposed to run the daemon pod.',
  ),
  numberMisscheduled: Int32(
    'The number of nodes that are running the daemon pod, but are\nnot supposed to run the daemon pod.',
  ),
  desiredNumberScheduled: Int32(
    'The total number of nodes that should be running the daemon\npod (including nodes correctly running the daemon pod).',
  ),
  numberReady: Int32(
    'The number of nodes that should be running the daemon pod and have one\nor more of the daemon pod running and ready.',
  ),
  observedGeneration: Type.Optional(
    Type.Integer({
      format: 'int64',
      description: 'The most recent generation observed by the daemon set controller.',
    }),
  ),
  updatedNumberScheduled: Int32('The total number of nodes that are running updated daemon pod'),
  numberAvailable: Type.Optional(
    Int32(
      'The number of nodes that should be running the\ndaemon pod and have one or more of the daemon pod running and\navailable (ready for at least spec.minReadySeconds)',
    ),
  ),
  numberUnavailable: Type.Optional(
    Int32(
      'The number of nodes that should be running the\ndaemon pod and have none of the daemon pod running and available\n(ready for at least spec.minReadySeconds)',
    ),
  ),
  collisionCount: Type.Optional(
    Int32(
      'Count of hash collisions for the DaemonSet. The DaemonSet controller\nuses this field as a collision avoidance mechanism when it needs to\ncreate the name for the newest ControllerRevision.',
    ),
  ),
  conditions: Type.Optional(
    Type.Array(DaemonSetConditionSchema, {
      description: "Represents the latest available observations of a DaemonSet's current state.",
    }),
  ),
  canary: Type.Optional(CanaryStatusSchema),
};

const STATUS_DESCRIPTION = 'DaemonSetStatus defines the observed state of DaemonSet';

export const DaemonSetStatusSchema = Type.Object(
  {
    ...statusFields,
    daemonSetHash: Type.String({
      description:
        'DaemonSetHash is the controller-revision-hash, which represents the latest version of the DaemonSet.',
    }),
  },
  { description: STATUS_DESCRIPTION },
);

/** v1beta1: `updateRevision` (optional, as Kruise's `omitempty`) instead of the required `daemonSetHash`. */
export const DaemonSetStatusV1beta1Schema = Type.Object(
  {
    ...statusFields,
    updateRevision: Type.Optional(
      Type.String({
        description:
          'UpdateRevision is the controller-revision-hash, which represents the latest version of the DaemonSet.',
      }),
    ),
  },
  { description: STATUS_DESCRIPTION },
);

/** ObjectMeta is validated by the apiserver itself; a CRD may only say `type: object` here. */
const ObjectMetaSchema = Type.Unsafe<ObjectMeta>({ type: 'object' });

/** apiVersion, kind and metadata, as every kind of ours has them. */
export const typeMetaFields = {
  apiVersion: Type.Optional(
    Type.String({
      description:
        'APIVersion defines the versioned schema of this representation of an object.\nServers should convert recognized schemas to the latest internal value, and\nmay reject unrecognized values.\nMore info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources',
    }),
  ),
  kind: Type.Optional(
    Type.String({
      description:
        'Kind is a string value representing the REST resource this object represents.\nServers may infer this from the endpoint the client submits requests to.\nCannot be updated.\nIn CamelCase.\nMore info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds',
    }),
  ),
  metadata: ObjectMetaSchema,
};

const DAEMONSET_DESCRIPTION =
  'DaemonSet (Advanced DaemonSet) runs one pod per eligible node, like apps/v1 DaemonSet, with\npartitioned, paused, node-selected, surging and in-place rolling updates and lifecycle hooks.';

/** apps.kruise.io/v1alpha1 DaemonSet: the controller's internal model. */
export const DaemonSetSchema = Type.Object(
  { ...typeMetaFields, spec: DaemonSetSpecSchema, status: Type.Optional(DaemonSetStatusSchema) },
  { description: DAEMONSET_DESCRIPTION },
);

/** apps.kruise.io/v1beta1 DaemonSet: the storage version. */
export const DaemonSetV1beta1Schema = Type.Object(
  { ...typeMetaFields, spec: DaemonSetSpecV1beta1Schema, status: Type.Optional(DaemonSetStatusV1beta1Schema) },
  { description: DAEMONSET_DESCRIPTION },
);

export type DaemonSetSchemaType = Static<typeof DaemonSetSchema>;

/** The schema of a served version. */
export const DAEMONSET_SCHEMAS: Readonly<Record<ServedVersion, TSchema>> = {
  v1alpha1: DaemonSetSchema,
  v1beta1: DaemonSetV1beta1Schema,
};
