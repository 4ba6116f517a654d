// TypeScript types of apps.kruise.io/v1alpha1 DaemonSet, derived from the one schema in schema.ts.
import type { Static } from '@sinclair/typebox';
import type { ObjectMeta } from '../k8s/types.ts';
import type {
  DaemonSetConditionSchema,
  DaemonSetSchema,
  DaemonSetSpecSchema,
  DaemonSetStatusSchema,
  DaemonSetUpdateStrategySchema,
  LifecycleHookSchema,
  LifecycleSchema,
  RollingUpdateDaemonSetSchema,
  LabelSelectorSchema,
  ROLLING_UPDATE_TYPES,
  UPDATE_STRATEGY_TYPES,
} from './schema.ts';

export { API_GROUP, API_VERSION, KIND, VERSION, PLURAL, RESOURCE } from './constants.ts';

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

/** The whole object. metadata is ObjectMeta from k8s/types.ts (the CRD only says `type: object`). */
export type DaemonSet = Omit<Static<typeof DaemonSetSchema>, 'metadata'> & { metadata: ObjectMeta };
