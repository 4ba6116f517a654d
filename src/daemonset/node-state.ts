// What one sync knows about each node: its eligibility, its daemon pods and the few facts the planner reads from
// each pod's status. Built once per node per sync, or, with a PlanMemo (memo.ts), kept between syncs for the nodes
// whose object and pods are the same objects as before. Only facts that do not depend on the clock are kept: whether
// a pod is available is judged at every sync from its Ready time (factsAvailable).
import type { Node, Pod } from '../k8s/types.ts';
import { getPodCondition, getPodReadyCondition, hasReadinessGate, parseTime } from '../k8s/pod.ts';
import { IN_PLACE_UPDATE_READY } from './constants.ts';
import type { NodeEligibility } from './eligibility.ts';
import { isPodPreDeleting, podRevisionHash } from './pods.ts';

/** The facts of one pod the sync-wide passes read (status counters, rolling update, Progressing). */
export interface PodFacts {
  readonly pod: Pod;
  /** deletionTimestamp set. */
  readonly terminating: boolean;
  /** controller-revision-hash label ('' when absent). */
  readonly hash: string;
  /** Condition Ready True (isPodReady). */
  readonly ready: boolean;
  /** lastTransitionTime of the Ready condition, as written (parsed by readySince only when minReadySeconds is set). */
  readonly readyTime: string | undefined;
  /** readySince's cache: undefined until parsed, null when it does not parse. */
  readyMs?: number | null;
  /** Has the InPlaceUpdateReady gate and that condition is present and not True (an in-place update in flight). */
  readonly inPlaceHeld: boolean;
  /** Lifecycle state PreparingDelete (isPodPreDeleting). */
  readonly preDeleting: boolean;
}

const TERMINATING = 1;
const READY = 2;
const IN_PLACE_HELD = 4;
const PRE_DELETING = 8;

/**
 * PodFacts with its four booleans as bits of one number, read through getters: 64 B where an object of eight
 * fields took 88 (a heap snapshot at 5,000 nodes and 20 DaemonSets), in each of the 1.3 million pods a memo keeps at
 * 65,000 nodes (bench/README.md section 8), as the memo's PodSlot keeps its upkeep.
 */
class PackedPodFacts implements PodFacts {
  readyMs: number | null | undefined = undefined;
  constructor(
    readonly pod: Pod,
    readonly hash: string,
    readonly readyTime: string | undefined,
    private readonly bits: number,
  ) {}
  get terminating(): boolean {
    return (this.bits & TERMINATING) !== 0;
  }
  get ready(): boolean {
    return (this.bits & READY) !== 0;
  }
  get inPlaceHeld(): boolean {
    return (this.bits & IN_PLACE_HELD) !== 0;
  }
  get preDeleting(): boolean {
    return (this.bits & PRE_DELETING) !== 0;
  }
}

export function podFacts(pod: Pod): PodFacts {
  const ready = getPodReadyCondition(pod);
  const inPlace = hasReadinessGate(pod, IN_PLACE_UPDATE_READY)
    ? getPodCondition(pod, IN_PLACE_UPDATE_READY)
    : undefined;
  const bits =
    (pod.metadata.deletionTimestamp ? TERMINATING : 0) |
    (ready?.status === 'True' ? READY : 0) |
    (inPlace !== undefined && inPlace.status !== 'True' ? IN_PLACE_HELD : 0) |
    (isPodPreDeleting(pod) ? PRE_DELETING : 0);
  return new PackedPodFacts(pod, podRevisionHash(pod), ready?.lastTransitionTime, bits);
}

/** The Ready condition's lastTransitionTime in ms, when it parses. */
function readySince(f: PodFacts): number | undefined {
  if (f.readyMs === undefined) f.readyMs = parseTime(f.readyTime) ?? null;
  return f.readyMs ?? undefined;
}

/** isPodAvailable (k8s/pod.ts) on facts: Ready, for more than minReadySeconds before `now`. */
export function factsAvailable(f: PodFacts, minReadySeconds: number, now: number): boolean {
  if (!f.ready) return false;
  if (minReadySeconds <= 0) return true;
  const since = readySince(f);
  return since !== undefined && since + minReadySeconds * 1000 < now;
}

/** isDaemonPodAvailable (status.ts) on facts: available, and no in-place update in flight. */
export function factsDaemonAvailable(f: PodFacts, minReadySeconds: number, now: number): boolean {
  return !f.inPlaceHeld && factsAvailable(f, minReadySeconds, now);
}

/** podAvailableWaitingTimeMs (k8s/pod.ts) on facts. */
export function factsWaitingTimeMs(f: PodFacts, minReadySeconds: number, now: number): number {
  if (!f.ready || minReadySeconds <= 0) return 0;
  const since = readySince(f);
  if (since === undefined) return minReadySeconds * 1000;
  const remaining = since + minReadySeconds * 1000 - now;
  return remaining >= 0 ? remaining + 1 : 0;
}

/** Upstream's isPodNilOrPreDeleting, on facts: no pod, or one whose lifecycle state is PreparingDelete. */
export function factsNilOrPreDeleting(f: PodFacts | undefined): boolean {
  return f === undefined || f.preDeleting;
}

/**
 * findUpdatedPodsOnNode (UpdatedPodsOnNode, pods.ts) as the facts of the pods it picks; the pods are their `pod`.
 * Kept in the fields of every node state of every DaemonSet rather than an object of its own (48 B in each state
 * with pods, a heap snapshot of the 5,000-node scale run, bench/README.md section 7).
 */
export interface UpdatedPodFacts {
  readonly newFacts?: PodFacts | undefined;
  readonly oldFacts?: PodFacts | undefined;
  /** False when there is more than one new or more than one old non-terminating pod (manage prunes those). */
  readonly ok: boolean;
}

/** findUpdatedPodsOnNode (pods.ts) on the state's facts: the single new and single old non-terminating pod. */
function findUpdatedFacts(s: NodeState, hash: string): void {
  s.updHash = hash;
  s.newFacts = s.oldFacts = undefined;
  s.ok = false;
  let newFacts: PodFacts | undefined;
  let oldFacts: PodFacts | undefined;
  for (const f of s.facts) {
    if (f.terminating) continue;
    if (f.hash === hash) {
      if (newFacts) return;
      newFacts = f;
    } else {
      if (oldFacts) return;
      oldFacts = f;
    }
  }
  s.newFacts = newFacts;
  s.oldFacts = oldFacts;
  s.ok = true;
}

/** One node of the sync, or a node name daemon pods point to that no node has (`node` undefined). */
export interface NodeState {
  readonly name: string;
  node: Node | undefined;
  /** nodeShouldRunDaemonPod; (false, false) for a node that does not exist. */
  eligibility: NodeEligibility;
  /**
   * The facts of the node's daemon pods, in getNodesToDaemonPods' order (their pods: podsOfState). Not kept beside
   * them as an array of pods too: a memo keeps a state for every node for each DaemonSet, and without that array the
   * heap at 65,000 nodes and 20 DaemonSets went from 1,678 to 1,557 MiB (bench/README.md section 8).
   */
  facts: readonly PodFacts[];
  /** One settled pod that may stay: manage has nothing to decide here (podsShouldBeOnNode). */
  settled: boolean;
  /** eligibility.shouldRun and facts[0], copied here: the passes over every node then read one object per node. */
  shouldRun: boolean;
  first: PodFacts | undefined;
  /** findUpdatedPodsOnNode for `updHash` (undefined: not computed since the pods changed): updatedPodsOf. */
  updHash: string | undefined;
  newFacts: PodFacts | undefined;
  oldFacts: PodFacts | undefined;
  ok: boolean;
  /** The node's part in the nodesToUpdate a memo keeps (update.ts, keptNodesToUpdate), when it was computed. */
  updatePart: number;
  /** The node's part in the counters a memo keeps (status.ts, keptCounters), when they were counted. */
  countsPart: number;
}

const NO_FACTS: readonly PodFacts[] = Object.freeze([]);

/** Not terminating, not terminal, not PreparingDelete: a pod podsShouldBeOnNode keeps as it is when it is alone. */
export function isSettledPod(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return !pod.metadata.deletionTimestamp && phase !== 'Failed' && phase !== 'Succeeded' && !isPodPreDeleting(pod);
}

/** Sets what depends on eligibility and pods (call after changing either). */
export function refreshNodeState(s: NodeState): void {
  s.settled = s.eligibility.shouldContinueRunning && s.facts.length === 1 && isSettledPod((s.facts[0] as PodFacts).pod);
  s.shouldRun = s.eligibility.shouldRun;
  s.first = s.facts[0];
}

/** A fresh state; `facts` default to podFacts of each pod. */
export function newNodeState(
  name: string,
  node: Node | undefined,
  eligibility: NodeEligibility,
  pods: Pod[] | undefined,
  facts: readonly PodFacts[] = pods ? pods.map(podFacts) : NO_FACTS,
): NodeState {
  // Every field set here, so that all states share one shape.
  const s: NodeState = {
    name,
    node,
    eligibility,
    facts: pods ? facts : NO_FACTS,
    settled: false,
    shouldRun: false,
    first: undefined,
    updHash: undefined,
    newFacts: undefined,
    oldFacts: undefined,
    ok: false,
    updatePart: -1,
    countsPart: 0,
  };
  refreshNodeState(s);
  return s;
}

/**
 * A node that is gone: its parts in the values kept between syncs are forgotten, as those values no longer count it;
 * should a node of that name come back into the same list, it is then told apart as a change (update.ts, status.ts).
 */
export function forgetKeptParts(s: NodeState): void {
  s.updatePart = -1;
  s.countsPart = 0;
}

/** As nodeToDaemonPods.get(s.name): undefined when no daemon pod targets the node; a new array at each call. */
export function podsOfState(s: NodeState): Pod[] | undefined {
  return s.facts.length === 0 ? undefined : s.facts.map((f) => f.pod);
}

/** Sets the facts of the node's pods (none: `[]`): the per-hash cache goes. */
export function setNodePods(s: NodeState, facts: readonly PodFacts[]): void {
  s.facts = facts.length === 0 ? NO_FACTS : facts;
  // The answer for the pods before goes, and with it what it held of them.
  s.updHash = s.newFacts = s.oldFacts = undefined;
  refreshNodeState(s);
}

/**
 * findUpdatedPodsOnNode(podsOfState(s), hash), kept on the state until its pods change. The answer is the state
 * itself: read it before asking the same state for another hash.
 */
export function updatedPodsOf(s: NodeState, hash: string): UpdatedPodFacts {
  if (s.updHash !== hash) findUpdatedFacts(s, hash);
  return s;
}
