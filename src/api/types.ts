// TypeScript types of apps.kruise.io DaemonSet, derived from the schemas in schema.ts. `DaemonSet` is v1alpha1, the
// controller's internal model; `DaemonSetV1beta1` is the v1beta1 (storage) shape, converted to and from the
// internal model by src/api/conversion.ts.
import type { Static } from '@sinclair/typebox';
import type { ObjectMeta } from '../k8s/types.ts';
import type {
  CanaryAutoFailSchema,
  CanaryAutoPauseSchema,
  CanarySchema,
  CanaryStatusSchema,
  CANARY_PHASES,
  CANARY_VALIDATIONS,
  DaemonSetConditionSchema,
  DaemonSetScaleStrategyV1beta1Schema,
  DaemonSetSchema,
  DaemonSetSpecSchema,
  DaemonSetSpecV1beta1Schema,
  DaemonSetStatusSchema,
  DaemonSetStatusV1beta1Schema,
  DaemonSetUpdateStrategySchema,
  DaemonSetUpdateStrategyV1beta1Schema,
  DaemonSetV1beta1Schema,
  LifecycleHookSchema,
  LifecycleSchema,
  RollingUpdateDaemonSetSchema,
  RollingUpdateDaemonSetV1beta1Schema,
  LabelSelectorSchema,
  ROLLING_UPDATE_TYPES,
  ROLLING_UPDATE_TYPES_V1BETA1,
  UPDATE_STRATEGY_TYPES,
} from './schema.ts';

export { type ServedVersion } from './constants.ts';

export type IntOrString = number | string;
export type DaemonSetSpec = Static<typeof DaemonSetSpecSchema>;
export type DaemonSetStatus = Static<typeof DaemonSetStatusSchema>;
export type DaemonSetUpdateStrategy = Static<typeof DaemonSetUpdateStrategySchema>;
export type DaemonSetUpdateStrategyType = (typeof UPDATE_STRATEGY_TYPES)[number];
export type RollingUpdateDaemonSet = Static<typeof RollingUpdateDaemonSetSchema>;
export type RollingUpdateType = (typeof ROLLING_UPDATE_TYPES)[number];
export type Lifecycle = Static<typeof LifecycleSchema>;
export type LifecycleHook = Static<ReturnType<typeof LifecycleHookSchema>>;
export type DaemonSetCondition = Static<typeof DaemonSetConditionSchema>;
export type DaemonSetLabelSelector = Static<ReturnType<typeof LabelSelectorSchema>>;
/** rollingUpdate.canary and status.canary: the same in both versions. */
export type Canary = Static<typeof CanarySchema>;
export type CanaryAutoPause = Static<typeof CanaryAutoPauseSchema>;
export type CanaryAutoFail = Static<typeof CanaryAutoFailSchema>;
export type CanaryValidation = (typeof CANARY_VALIDATIONS)[number];
export type CanaryStatus = Static<typeof CanaryStatusSchema>;
export type CanaryPhase = (typeof CANARY_PHASES)[number];

/** The whole object. metadata is ObjectMeta from k8s/types.ts (the CRD only says `type: object`). */
export type DaemonSet = Omit<Static<typeof DaemonSetSchema>, 'metadata'> & { metadata: ObjectMeta };

// v1beta1. Lifecycle, conditions and selectors are the same types in both versions.
export type DaemonSetSpecV1beta1 = Static<typeof DaemonSetSpecV1beta1Schema>;
export type DaemonSetStatusV1beta1 = Static<typeof DaemonSetStatusV1beta1Schema>;
export type DaemonSetUpdateStrategyV1beta1 = Static<typeof DaemonSetUpdateStrategyV1beta1Schema>;
export type RollingUpdateDaemonSetV1beta1 = Static<typeof RollingUpdateDaemonSetV1beta1Schema>;
export type RollingUpdateTypeV1beta1 = (typeof ROLLING_UPDATE_TYPES_V1BETA1)[number];
export type DaemonSetScaleStrategyV1beta1 = Static<typeof DaemonSetScaleStrategyV1beta1Schema>;

/** The whole v1beta1 object, metadata as in `DaemonSet`. */
export type DaemonSetV1beta1 = Omit<Static<typeof DaemonSetV1beta1Schema>, 'metadata'> & { metadata: ObjectMeta };
