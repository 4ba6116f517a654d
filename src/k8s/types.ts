// Plain-JSON shapes of the core Kubernetes objects the product reads and writes.
// They describe objects exactly as the apiserver sends them (timestamps are RFC 3339 strings,
// unknown fields pass through), which is why we do not use client-node's class models:
// those need ObjectSerializer round trips and turn timestamps into Dates.
// Only fields the code touches are listed; the index signatures keep everything else.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface NodeSelector {
  nodeSelectorTerms: NodeSelectorTerm[];
}

export interface Affinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector;
    preferredDuringSchedulingIgnoredDuringExecution?: unknown[];
  };
  podAffinity?: unknown;
  podAntiAffinity?: unknown;
}

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded?: string;
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: TaintEffect | '';
  tolerationSeconds?: number;
}

export interface Container {
  name: string;
  image?: string;
  [key: string]: unknown;
}

export interface PodSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: Affinity;
  tolerations?: Toleration[];
  containers: Container[];
  initContainers?: Container[];
  readinessGates?: { conditionType: string }[];
  restartPolicy?: string;
  [key: string]: unknown;
}

export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec: PodSpec;
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastProbeTime?: string | null;
}

export interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  ready: boolean;
  restartCount: number;
  started?: boolean;
  state?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface PodStatus {
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  conditions?: PodCondition[];
  containerStatuses?: ContainerStatus[];
  podIP?: string;
  startTime?: string;
  [key: string]: unknown;
}

export interface Pod extends KubeObject {
  spec: PodSpec;
  status?: PodStatus;
}

export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  [key: string]: unknown;
}

export interface Node extends KubeObject {
  spec?: { taints?: Taint[]; unschedulable?: boolean; [key: string]: unknown };
  status?: { conditions?: NodeCondition[]; [key: string]: unknown };
}

export interface ControllerRevision extends KubeObject {
  data?: unknown;
  revision: number;
}

export interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** Namespace/name key, as client-go's MetaNamespaceKeyFunc. */
export function objectKey(obj: { metadata: ObjectMeta }): string {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name ?? ''}` : (name ?? '');
}
