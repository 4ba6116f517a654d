// advanced-daemonset.io/v1alpha1 DaemonSetSetting: per-node container resources for one DaemonSet, as
// ExtendedDaemonSet's ExtendedDaemonsetSetting
// (https://github.com/DataDog/extendeddaemonset/blob/main/api/v1alpha1/extendeddaemonsetsetting_types.go), with
// status conditions in place of its status/error strings. The one source of its TypeScript type, its CRD
// (crd.ts, settingCrdObject) and the webhook's structural check, as schema.ts is for the DaemonSet.
import { Type, type Static } from '@sinclair/typebox';
import type { ObjectMeta } from '../k8s/types.ts';
import { LabelSelectorSchema, typeMetaFields, type CONDITION_STATUSES } from './schema.ts';

export const SETTING_API_GROUP = 'advanced-daemonset.io';
export const SETTING_VERSION = 'v1alpha1';
export const SETTING_API_VERSION = `${SETTING_API_GROUP}/${SETTING_VERSION}`;
export const SETTING_KIND = 'DaemonSetSetting';
export const SETTING_LIST_KIND = 'DaemonSetSettingList';
export const SETTING_PLURAL = 'daemonsetsettings';
export const SETTING_SINGULAR = 'daemonsetsetting';
export const SETTING_SHORT_NAMES = ['dss'] as const;
/** `daemonsetsettings.advanced-daemonset.io`: the CRD name. */
export const SETTING_RESOURCE = `${SETTING_PLURAL}.${SETTING_API_GROUP}`;
/** Webhook paths, on the same server as the DaemonSet's (as controller-runtime names them: group dots as dashes). */
export const SETTING_MUTATE_PATH = '/mutate-advanced-daemonset-io-daemonsetsetting';
export const SETTING_VALIDATE_PATH = '/validate-advanced-daemonset-io-daemonsetsetting';
/** What spec.reference may name: an Advanced DaemonSet (either served version) in the setting's namespace. */
export const SETTING_REFERENCE_KIND = 'DaemonSet';
export const SETTING_REFERENCE_API_VERSIONS = ['apps.kruise.io/v1alpha1', 'apps.kruise.io/v1beta1'] as const;
export const DEFAULT_SETTING_REFERENCE_API_VERSION = 'apps.kruise.io/v1beta1';

/** status.conditions types. */
export const SETTING_CONDITION_VALID = 'Valid';
export const SETTING_CONDITION_CONFLICTING = 'Conflicting';

const Quantity = Type.Unsafe<number | string>({
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  'x-kubernetes-int-or-string': true,
  pattern:
    '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
});

const ResourceList = (description: string) =>
  Type.Unsafe<Record<string, number | string>>({ type: 'object', additionalProperties: Quantity, description });

/** core/v1 ResourceRequirements without claims (a claim is not a per-node amount). */
export const ResourceRequirementsSchema = Type.Object(
  {
    limits: Type.Optional(
      ResourceList(
        'Limits describes the maximum amount of compute resources allowed.\nMore info: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/',
      ),
    ),
    requests: Type.Optional(
      ResourceList(
        'Requests describes the minimum amount of compute resources required.\nIf Requests is omitted for a container, it defaults to Limits if that is explicitly specified,\notherwise to an implementation-defined value.\nMore info: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/',
      ),
    ),
  },
  {
    description:
      'The resources the container gets on the matched nodes, in place of those of the pod template (the whole\nResourceRequirements: a resource left out here is not taken from the template).',
  },
);

export const SettingContainerSchema = Type.Object(
  {
    name: Type.String({ description: "The name of a container of the referenced DaemonSet's pod template." }),
    resources: ResourceRequirementsSchema,
  },
  { description: 'The resources of one container on the matched nodes.' },
);

export const SettingReferenceSchema = Type.Object(
  {
    kind: Type.Optional(Type.String({ description: 'Kind of the referent: DaemonSet (the default).' })),
    name: Type.String({ description: 'Name of the referent, an Advanced DaemonSet in the same namespace.' }),
    apiVersion: Type.Optional(
      Type.String({
        description:
          'API version of the referent: apps.kruise.io/v1alpha1 or apps.kruise.io/v1beta1 (the default); both\nname the same DaemonSet.',
      }),
    ),
  },
  {
    description:
      'The DaemonSet whose pods get these resources (autoscaling/v1 CrossVersionObjectReference, as\nExtendedDaemonsetSetting).',
  },
);

export const DaemonSetSettingSpecSchema = Type.Object(
  {
    reference: SettingReferenceSchema,
    nodeSelector: Type.Optional(
      LabelSelectorSchema(
        'The nodes whose pods get these resources. An empty or missing selector matches every node.\nWhere several settings of one DaemonSet match a node and set the same container, the oldest\nwins (then the first by name), and both report it in status.conditions.',
      ),
    ),
    containers: Type.Optional(
      Type.Array(SettingContainerSchema, {
        description: 'Per container, the resources on the matched nodes. Containers not listed keep the template.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
  },
  {
    description:
      "DaemonSetSettingSpec: the resources of the referenced DaemonSet's containers on the nodes the selector\nmatches. A node annotation resources.advanced-daemonset.io/<namespace>.<daemonset>.<container> wins over it.",
  },
);

export const SettingConditionSchema = Type.Object(
  {
    type: Type.String({ description: 'Valid or Conflicting.' }),
    status: Type.Unsafe<(typeof CONDITION_STATUSES)[number]>({
      type: 'string',
      description: 'Status of the condition, one of True, False, Unknown.',
    }),
    reason: Type.Optional(Type.String({ description: "The reason for the condition's last transition." })),
    message: Type.Optional(Type.String({ description: 'A human readable message.' })),
    lastTransitionTime: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'Last time the condition transitioned from one status to another.',
      }),
    ),
    observedGeneration: Type.Optional(
      Type.Integer({ format: 'int64', description: 'The generation of the setting the condition was set from.' }),
    ),
  },
  { description: 'A condition of a DaemonSetSetting.' },
);

export const DaemonSetSettingStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(
      Type.Integer({ format: 'int64', description: 'The generation of the setting the status was computed from.' }),
    ),
    nodes: Type.Optional(
      Type.Integer({
        format: 'int32',
        description:
          'How many nodes that run the DaemonSet the selector matches (whether this setting or another wins\nthere).',
      }),
    ),
    conditions: Type.Optional(
      Type.Array(SettingConditionSchema, {
        description:
          'Valid: the DaemonSet exists and has every container named (False: DaemonSetNotFound,\nUnknownContainer). Conflicting: another setting of the same DaemonSet sets the same container on\nsome node (reason Overridden when the other one wins there, Preferred when this one does).',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    ),
  },
  { description: 'DaemonSetSettingStatus: written by the DaemonSet controller.' },
);

export const DaemonSetSettingSchema = Type.Object(
  {
    ...typeMetaFields,
    spec: DaemonSetSettingSpecSchema,
    status: Type.Optional(DaemonSetSettingStatusSchema),
  },
  {
    description:
      "DaemonSetSetting gives the containers of an Advanced DaemonSet other resources on some nodes (a node\ngroup with more memory, say), as ExtendedDaemonSet's ExtendedDaemonsetSetting. The resources are applied\nwhen a pod is created and changed in place (pods/resize) or by recreating the pod when the setting\nchanges; they are not part of the revision.",
  },
);

export type ResourceRequirements = Static<typeof ResourceRequirementsSchema>;
export type DaemonSetSettingSpec = Static<typeof DaemonSetSettingSpecSchema>;
export type DaemonSetSettingStatus = Static<typeof DaemonSetSettingStatusSchema>;
export type SettingCondition = Static<typeof SettingConditionSchema>;
export type DaemonSetSetting = Omit<Static<typeof DaemonSetSettingSchema>, 'metadata'> & { metadata: ObjectMeta };
