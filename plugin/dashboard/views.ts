// What the dashboard sends to the page (JSON over server-sent events): the types the server (model.ts, source.ts)
// and the page (ui/) share. No imports, so the page's bundle and type check take nothing else along.

/** The revision of the pod a node runs: the update revision, an older one, or none (no live pod). */
export type CellRevision = 'new' | 'old' | 'none';

/**
 * What a node's cell shows, the first that applies: a pod in PreparingDelete (held by a lifecycle preDelete hook,
 * label lifecycle.apps.kruise.io/state), a terminating pod (deletionTimestamp set), no pod where one should run,
 * the live pod not available (not Ready for minReadySeconds, or in an in-place update), else available.
 */
export type CellState = 'preparing-delete' | 'terminating' | 'missing' | 'unavailable' | 'available';

/** Why a node keeps an old revision: the partition, or rollingUpdate.selector not matching the node. */
export type CellHold = 'partition' | 'selector';

export interface NodeCell {
  node: string;
  revision: CellRevision;
  /** The live pod's revision hash (a terminating pod's when there is no live one); '' without a pod. */
  hash: string;
  state: CellState;
  /** The pods on the node, live first. */
  pods: string[];
  /** Listed in status.canary.nodes. */
  canary?: true;
  hold?: CellHold;
  /** A pod runs where the DaemonSet should no longer run (node gone, selector or taints changed). */
  misscheduled?: true;
}

export interface RevisionCount {
  hash: string;
  /** ControllerRevision.revision, when the revision object is known. */
  number?: number;
  /** Live pods on it. */
  pods: number;
  current: boolean;
}

export interface NodeMapCounts {
  /** Cells (nodes the DaemonSet targets or has pods on). */
  nodes: number;
  new: number;
  old: number;
  none: number;
  available: number;
  unavailable: number;
  terminating: number;
  preparingDelete: number;
  missing: number;
  canary: number;
  heldByPartition: number;
  heldBySelector: number;
}

export interface NodeMap {
  updateRevision: string;
  /** Revisions with live pods, and the update revision: newest first. */
  revisions: RevisionCount[];
  /** In node name order. */
  cells: NodeCell[];
  counts: NodeMapCounts;
  strategy: string;
  /** The partition in nodes (a percentage resolved against the desired count); 0 when none. */
  partition: number;
  paused: boolean;
  /** rollingUpdate.selector as a label selector string; undefined when not set. */
  rolloutSelector?: string;
  /** status.canary, when the controller reports one. */
  canary?: { phase: string; nodes: number };
  /** Nodes the DaemonSet neither targets nor has pods on (left off the map). */
  untargeted: number;
}

/** One line of the DaemonSet list: the rollout's progress from the status the controller writes. */
export interface DaemonSetRow {
  namespace: string;
  name: string;
  strategy: string;
  desired: number;
  current: number;
  updated: number;
  ready: number;
  available: number;
  unavailable: number;
  /** rollingUpdate.partition as written ('-' when not set). */
  partition: string;
  paused: boolean;
  /** status.canary.phase, '-' without a canary. */
  canary: string;
  updateRevision: string;
  /** status.observedGeneration caught up with metadata.generation. */
  observed: boolean;
  /** Observed, and every desired node runs an available pod of the update revision. */
  complete: boolean;
}

export interface EventRow {
  type: string;
  reason: string;
  message: string;
  count: number;
  /** When last seen, ms since the epoch (0 when the event carries no time). */
  last: number;
  from: string;
}

/** The list of DaemonSets in scope. */
export interface ListView {
  /** "all namespaces" or "namespace <name>". */
  scope: string;
  /** The apiserver the dashboard reads. */
  server: string;
  synced: boolean;
  daemonSets: DaemonSetRow[];
}

/** One DaemonSet: its row, node map and events; `found` false when it is not (or no longer) there. */
export interface DetailView {
  namespace: string;
  name: string;
  synced: boolean;
  found: boolean;
  row?: DaemonSetRow;
  map?: NodeMap;
  events: EventRow[];
}
