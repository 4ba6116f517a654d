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

/**
 * Why a node keeps an old revision: the partition, rollingUpdate.selector not matching the node, or a canary of the
 * update revision that has not been promoted (the node keeps the stable revision; while the canary is Paused or
 * Failed, its own nodes too).
 */
export type CellHold = 'partition' | 'selector' | 'canary' | 'wave';

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
  /** rollingUpdate.waves: the node's wave (its topologyKey label value; '' for the nodes without it). */
  wave?: string;
  /** A pod runs where the DaemonSet should no longer run (node gone, selector or taints changed). */
  misscheduled?: true;
  /** The node carries the DaemonSet's readiness taint (spec.nodeReadiness): it waits for its agents. */
  waiting?: true;
  /** Set aside by rollingUpdate.unhealthyNodes Ignore (src/daemonset/unhealthy.ts), and why. */
  setAside?: 'NotReady' | 'Unknown' | 'Unreachable' | 'Unschedulable';
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
  heldByCanary: number;
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
  /** rollingUpdate.waves: the current wave (1-based) and what it is, while one is under way. */
  wave?: { index: number; count: number; which: string; waiting: boolean };
  /** Nodes the DaemonSet neither targets nor has pods on (left off the map). */
  untargeted: number;
}

/**
 * The rollout's state, one word for the table and the detail alike (rollout.ts rolloutView): failed (a Failed
 * canary, ProgressDeadlineExceeded, an invalid rollingUpdate.selector), pending (a spec change not observed yet),
 * complete, held (done up to what the partition and rollingUpdate.selector allow: Progressing reason PartitionReached),
 * canary (Observing), canary-paused, paused (rollingUpdate.paused), progressing, ondelete.
 */
export type RolloutState =
  | 'failed'
  | 'pending'
  | 'complete'
  | 'held'
  | 'frozen'
  | 'canary'
  | 'canary-paused'
  | 'paused'
  | 'progressing'
  | 'ondelete';

export type BadgeTone = 'ok' | 'info' | 'warn' | 'bad';

export interface Badge {
  /** Stable, for the CSS and the tests: the state, or held-partition, held-selector, held-canary, paused, canary. */
  kind: string;
  text: string;
  /** The longer explanation (tooltip). */
  title: string;
  tone: BadgeTone;
}

/**
 * Progress against what the rollout may update now: `target` nodes of `desired` (the partition, rollingUpdate.selector
 * and an unpromoted canary keep the rest on their revision), counted as kubectl counts a partitioned StatefulSet.
 */
export interface RolloutProgress {
  /** status.updatedNumberScheduled. */
  updated: number;
  /** The nodes the rollout may update: desired less what partition, selector and canary hold. */
  target: number;
  /** status.desiredNumberScheduled. */
  desired: number;
  /** status.numberAvailable. */
  available: number;
  /** false when target is an estimate (rollingUpdate.selector, and the dashboard does not watch the nodes' pods). */
  exact: boolean;
  /** 0-100, updated of target. */
  percent: number;
  /** "141 / 226 allowed (of 500)", "3 / 3". */
  text: string;
}

export interface RolloutView {
  state: RolloutState;
  /** kubectl ads status's line (plugin/status.ts rolloutStatus), kubectl's wording where it has one. */
  message: string;
  /** The state's badge first, then what holds the rollout, paused, the canary phase. */
  badges: Badge[];
  progress: RolloutProgress;
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
  /** spec.updateStrategy.rollingUpdate.canary is set (the canary actions apply). */
  hasCanary: boolean;
  /** The one state computation the table and the detail share. */
  rollout: RolloutView;
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

/** A condition of status.conditions as shown. */
export interface ConditionView {
  type: string;
  status: string;
  reason: string;
  message: string;
  /** ms since the epoch, 0 when absent. */
  lastTransitionTime: number;
}

export type TimelineKind = 'revision' | 'progressing' | 'canary' | 'updated' | 'spec' | 'observed';

/** One step of the rollout as the dashboard saw the object change (timeline.ts). */
export interface TimelineEntry {
  /** ms since the epoch. */
  at: number;
  kind: TimelineKind;
  text: string;
  /** The condition's or the canary's reason, when there is one. */
  reason?: string;
  /** Seen changing by the dashboard (true), or read from a timestamp the object carries (false). */
  observed: boolean;
}

/** Rate, elapsed time and ETA of the rollout (timeline.ts rolloutPace). */
export interface RolloutPace {
  /** When the rollout of the update revision started (ms since the epoch), and how that is known. */
  startedAt?: number;
  startedFrom?: 'observed' | 'revision';
  elapsedMs?: number;
  /** Nodes updated per minute over the last `windowMs` (or since first seen, when shorter); undefined before 15 s. */
  perMinute?: number;
  windowMs: number;
  /** To the allowed target at that rate; 0 when reached; undefined when there is no rate or nothing moves. */
  etaMs?: number;
  /** Why there is no ETA ("paused", "canary waits for promotion", "no progress in the window"...). */
  etaNote?: string;
}

/** Nodes grouped by the value of one node label, e.g. topology.kubernetes.io/zone. */
export interface NodeGroupRow {
  /** The label value; '' for nodes without the label. */
  value: string;
  nodes: number;
  new: number;
  old: number;
  /** Nodes without a live pod. */
  none: number;
  /** Cells not available (unavailable, terminating, PreparingDelete, missing). */
  unavailable: number;
  held: number;
}

export interface NodeGroups {
  key: string;
  /** Label keys present on the DaemonSet's nodes, to group by (sorted; the zone key first). */
  keys: string[];
  rows: NodeGroupRow[];
  /** How many values were folded into `other` (too many to list: a label with a value per node). */
  folded: number;
  other?: NodeGroupRow;
}

/** One ControllerRevision of the DaemonSet, newest first. */
export interface RevisionRow {
  number: number;
  hash: string;
  /** "container=image", init containers first. */
  images: string[];
  changeCause: string;
  /** The update revision (status.daemonSetHash / updateRevision): what new pods get. */
  update: boolean;
  /** The revision `undo` goes back to (the previous one). */
  undoTarget: boolean;
  /** The canary's stable revision. */
  stable: boolean;
  /** Live pods on it. */
  pods: number;
}

/** A pod on a canary node (status.canary.nodes). */
export interface CanaryPodRow {
  pod: string;
  node: string;
  revision: CellRevision;
  ready: boolean;
  /** Sum of containerStatuses[].restartCount. */
  restarts: number;
  /** A waiting or terminated container's reason (CrashLoopBackOff, ErrImagePull...), '' when none. */
  reason: string;
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
  /** status.conditions Progressing. */
  progressing?: ConditionView;
  /** Oldest first. */
  timeline?: TimelineEntry[];
  pace?: RolloutPace;
  groups?: NodeGroups;
  revisionRows?: RevisionRow[];
  canaryPods?: CanaryPodRow[];
  /** Actions are enabled (not --read-only). */
  actions?: boolean;
}

/** What the page may ask (POST /api/daemonsets/:namespace/:name/actions/:action). */
export const ACTIONS = [
  'pause',
  'resume',
  'partition',
  'partition-step',
  'canary-promote',
  'canary-pause',
  'canary-resume',
  'canary-fail',
  'undo',
] as const;
export type ActionName = (typeof ACTIONS)[number];

/** The body of an action: `value` for partition (N or N%), `step` for partition-step, `toRevision` for undo. */
export interface ActionBody {
  value?: string;
  step?: number | string;
  toRevision?: number | string;
}

/** The answer to an action: what kubectl ads printed (its stdout line, and warnings from stderr). */
export interface ActionResult {
  ok: boolean;
  message: string;
  warnings?: string[];
}

/** The HTTP header that carries the session's token, and the <meta> name the page reads it from. */
export const TOKEN_HEADER = 'x-ads-token';
export const TOKEN_META = 'ads-token';
