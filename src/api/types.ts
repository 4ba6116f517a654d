// TypeScript types of apps.kruise.io DaemonSet, derived from the schemas in schema.ts. `DaemonSet` is v1alpha1, the
// controller's internal model; `DaemonSetV1beta1` is the v1beta1 (storage) shape, converted to and from the
// internal model by src/api/conversion.ts.
import type { Static } from '@sinclair/typebox';
import type { ObjectMeta } from '../k8s/types.ts';
import type {
  CanarySchema,
  CanaryStatusSchema,
  CANARY_PHASES,
  CANARY_VALIDATIONS,
  DaemonSetConditionSchema,
  DaemonSetSchema,
  DaemonSetStatusSchema,
  DaemonSetStatusV1beta1Schema,
  DaemonSetV1beta1Schema,
  RolloutWavesSchema,
  UpdatePriorityStrategySchema,
} from './schema.ts';

export type DaemonSetStatus = Static<typeof DaemonSetStatusSchema>;
export type DaemonSetCondition = Static<typeof DaemonSetConditionSchema>;
/** rollingUpdate.canary and status.canary: the same in both versions. */
export type Canary = Static<typeof CanarySchema>;
export type CanaryValidation = (typeof CANARY_VALIDATIONS)[number];
export type CanaryStatus = Static<typeof CanaryStatusSchema>;
export type CanaryPhase = (typeof CANARY_PHASES)[number];
/** rollingUpdate.priorityStrategy and rollingUpdate.waves: the same in both versions. */
export type UpdatePriorityStrategy = Static<typeof UpdatePriorityStrategySchema>;
export type RolloutWaves = Static<typeof RolloutWavesSchema>;

/** The whole object. metadata is ObjectMeta from k8s/types.ts (the CRD only says `type: object`). */
export type DaemonSet = Omit<Static<typeof DaemonSetSchema>, 'metadata'> & { metadata: ObjectMeta };

// v1beta1. Lifecycle, conditions and selectors are the same types in both versions.
export type DaemonSetStatusV1beta1 = Static<typeof DaemonSetStatusV1beta1Schema>;

/** The whole v1beta1 object, metadata as in `DaemonSet`. */
export type DaemonSetV1beta1 = Omit<Static<typeof DaemonSetV1beta1Schema>, 'metadata'> & { metadata: ObjectMeta };
