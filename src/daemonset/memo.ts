// PlanMemo: what planDaemonSet keeps between syncs of one DaemonSet, so a sync re-evaluates only the nodes whose
// object or daemon pods changed since the last one (docs/architecture.md#one-sync). The shell owns one per
// DaemonSet and drops it with the DaemonSet; a memo handed the wrong DaemonSet or another scheduling template resets
// itself, so passing one is never wrong, only faster.
//
// What is kept: per node that takes part (it should run the daemon pod, or has daemon pods), its eligibility
// (nodeShouldRunDaemonPod) and its daemon pods, sorted, with their facts (node-state.ts); per pod, its facts and
// target node. A node that takes no part has no state: every pass over the states skips such a node anyway, and a
// DaemonSet with a nodeSelector takes part on a few of the cluster's nodes (at 5,000 nodes and 20 DaemonSets, 83,000
// of the 100,000 states the memos kept were such nodes', 10 MiB of heap; bench/README.md section 8). Changes are
// found by object identity: the snapshot's nodes and pods are the informer's objects, which are replaced, never
// modified, when the apiserver reports a change (the shell must not modify them either, or these keys lie); pods are
// told apart by name, unique in their namespace. The node list itself is compared as a whole first: the same array
// as the last sync's means no node changed, as the informer's Indexer.listSorted hands out a new array after every
// change and never changes one it handed out; a new array told as changes from the last one (NodeChanges, from
// Indexer.changedKeysSince) is taken in by those names. Nothing here depends on the clock: whether a pod is
// available, a backoff expired or a canary is due is judged at every sync. Everything a sync derives from all nodes
// (counters, the rolling update, conditions) is still computed at every sync, from these per-node records.
import type { DaemonSet } from '../api/types.ts';
import type { Node, Pod, Toleration } from '../k8s/types.ts';
import type { NodeChanges, SnapshotChanges } from './plan-types.ts';
import { compareByCreationTimestampAndPhase } from '../k8s/pod.ts';
import { canonicalJson } from '../k8s/hash.ts';
import { getTargetNodeName } from '../k8s/scheduling.ts';
import { lowerBound } from '../k8s/sorted.ts';
import { CANARY_POD_LABEL } from './constants.ts';
import { nodeShouldRunDaemonPod, type NodeEligibility } from './eligibility.ts';
import { inPlaceRefreshPatch } from './inplace.ts';
import {
  forgetKeptParts,
  newNodeState,
  podFacts,
  podsOfState,
  refreshNodeState,
  setNodePods,
  type NodeState,
  type PodFacts,
} from './node-state.ts';
import { hasNodeResourcesAnnotation, hasResourcesOverrideRecord } from './overrides.ts';
import { kruisePodReadyPatch } from './pods.ts';

const NOT_RUN: NodeEligibility = Object.freeze({ shouldRun: false, shouldContinueRunning: false });

interface PodSlot {
  facts: PodFacts;
  /** The node the pod is grouped under (getNodesToDaemonPods), undefined when it is left out. */
  target: string | undefined;
  /**
   * What the sync-wide per-pod upkeep has to do for this pod, as bits (UPKEEP_*): one number rather than four
   * booleans, 24 B less in each of the 1.3 million slots of a 65,000-node cluster with 20 DaemonSets.
   */
  upkeep: number;
  /** The sync that last saw the pod. */
  seen: number;
}

/** The readiness-gate upkeep (plan.ts readinessPatches) has something to do for this pod. */
const UPKEEP_KRUISE_READY = 1;
const UPKEEP_IN_PLACE_REFRESH = 2;
/** The pod carries the canary label. */
const UPKEEP_CANARY_LABEL = 4;
/** The pod records the per-node resources it was made with (overrides.ts). */
const UPKEEP_RESOURCES_RECORD = 8;

function upkeepOf(pod: Pod): number {
  return (
    (kruisePodReadyPatch(pod, 0) !== undefined ? UPKEEP_KRUISE_READY : 0) |
    (inPlaceRefreshPatch(pod, 0) !== undefined ? UPKEEP_IN_PLACE_REFRESH : 0) |
    (pod.metadata.labels?.[CANARY_POD_LABEL] !== undefined ? UPKEEP_CANARY_LABEL : 0) |
    (hasResourcesOverrideRecord(pod) ? UPKEEP_RESOURCES_RECORD : 0)
  );
}

/** Pods for which the sync-wide per-pod upkeep has something to do; the planner skips it while these are 0. */
export interface PodUpkeepCounts {
  /** kruisePodReadyPatch would patch. */
  kruiseReady: number;
  /** inPlaceRefreshPatch would patch. */
  inPlaceRefresh: number;
  /** The pod carries the canary label. */
  canaryLabel: number;
  /** The pod records per-node resources it was given (override-update.ts). */
  resourcesRecord: number;
}

/** A name lookup of pods (SyncContext.podsByName). */
export interface PodLookup {
  get(name: string): Pod | undefined;
}

/** What newSyncContext takes from the memo for one sync. */
export interface MemoView {
  nodes: readonly Node[];
  states: NodeState[];
  stateByName: Pick<ReadonlyMap<string, NodeState>, 'get'>;
  ghosts: NodeState[];
  nodeByName: ReadonlyMap<string, Node>;
  eligibility: ReadonlyMap<string, NodeEligibility>;
  nodeToDaemonPods: ReadonlyMap<string, Pod[]>;
  desired: number;
  podsByName: PodLookup;
  upkeep: PodUpkeepCounts;
  /** The nodes holding a per-node resources annotation (of any DaemonSet): most clusters have none. */
  resourceAnnotated: ReadonlySet<Node>;
  /** Which states changed from one sync to another, for values derived from all of them (StateChanges). */
  changes: StateChanges;
}

/**
 * For a value derived from every node state that a later sync may keep when the states it changed leave the value as
 * it was (update.ts, nodesToUpdate): the position of this sync in the memo's log of changed states, the states
 * changed after a position, and where such values are kept between syncs.
 */
export interface StateChanges {
  /** The position after the changes brought in by this sync. */
  readonly seq: number;
  /**
   * The states whose node or pods changed after position `seq` (a state may be listed more than once); undefined when
   * that is no longer known (the log was trimmed, or the memo reset): the value must be computed again.
   */
  since(seq: number): readonly NodeState[] | undefined;
  /** Values kept between syncs, by name; the memo empties it when it resets. */
  readonly kept: Map<string, unknown>;
  /** Counts a use of the kept value `name` instead of computing it again (tests and benchmarks). */
  reused(name: string): void;
}

/** One DaemonSet's planner memo; see the file comment. Opaque to the shell: create it, pass it, drop it. */
export class PlanMemo {
  /** DaemonSet uid and the template fields eligibility reads: another key, and everything is recomputed. */
  private key: string | undefined;
  private sync = 0;
  /** Whether the last sync's nodes came in name order (then `nodes` is their very array). */
  private inputSorted = false;
  /** The node array handed over by the last sync (not a copy), and how many of its nodes should run the daemon. */
  private lastNodes: readonly Node[] | undefined;
  /** The version of the pods of the last sync (DaemonSetSnapshot.podsVersion: their array, without one). */
  private lastPods: object | undefined;
  private desired = 0;
  /**
   * The nodes in name order: the array handed over by the last sync itself when it came in that order, never changed
   * here (each DaemonSet's memo held a copy of its own, or two, 0.5 MiB each at 65,000 nodes, spliced at every node
   * that joined), else a sorted copy.
   */
  private nodes: readonly Node[] = [];
  /**
   * The states of the nodes that take part, in name order: made when a node should run the daemon pod or a pod points
   * to it, dropped when the node list is made again (updateNodes) and the node takes no part any more.
   */
  private states: NodeState[] = [];
  /** The DaemonSet and tolerations of the sync being brought in (a pod may point to a node that had no state). */
  private ds: DaemonSet | undefined;
  private tolerations: readonly Toleration[] = [];
  /**
   * The ghosts (node names pods point to that no node has) by name. A node's state is found in `states`, in name
   * order, by binary search (stateOf): a map of every state took 229 KiB in each DaemonSet's memo at 5,000 nodes
   * (heap snapshot of the 5,000-node scale run), 35 MiB of heap in all at 65,000 nodes and 20 DaemonSets
   * (bench/README.md section 8).
   */
  private readonly ghostByName = new Map<string, NodeState>();
  private ghosts: NodeState[] = [];
  private readonly stateByName = { get: (name: string) => this.stateOf(name) };
  // The context's maps, read through the nodes and states rather than kept beside them (each map would cost as much
  // as the states again). A node without a state neither should run the daemon pod nor has one: whether one may
  // continue to run there is moot.
  private readonly nodeByName = new NodeView<Node>(this, (node) => node);
  private readonly eligibility = new NodeView<NodeEligibility>(this, (_, s) => s?.eligibility ?? NOT_RUN);
  private readonly nodeToDaemonPods = new StateView<Pod[]>(this, podsOfState);
  /** Pods by name, and in the order of the last sync's snapshot. */
  private readonly slots = new Map<string, PodSlot>();
  private readonly order: PodSlot[] = [];
  private readonly upkeep: PodUpkeepCounts = { kruiseReady: 0, inPlaceRefresh: 0, canaryLabel: 0, resourcesRecord: 0 };
  /**
   * Nodes with a per-node resources annotation, kept as nodes change, so a sync need not look at every node's
   * annotations to learn that none has one (a pass over 1,000 nodes at every sync was 3.5% of the manager's CPU in
   * the rollout race).
   */
  private readonly resourceAnnotated = new Set<Node>();
  private readonly podsByName: PodLookup = { get: (name) => this.slots.get(name)?.facts.pod };
  /** Nodes whose pods changed in this sync, with their new list (unsorted until the end). */
  private touched = new Map<NodeState, PodFacts[]>();
  private ghostsChanged = false;
  private readonly changes = new ChangeLog();
  /** Syncs planned with this memo, and how many node states they recomputed (for tests and benchmarks). */
  readonly stats = { syncs: 0, resets: 0, nodesEvaluated: 0, podsChanged: 0, nodesInserted: 0, nodeListsCompared: 0 };

  /** How many times the value kept between syncs as `name` was used again (StateChanges; tests and benchmarks). */
  keptReused(name: string): number {
    return this.changes.reuses.get(name) ?? 0;
  }

  /** Brings the memo up to this snapshot; returns what the sync context reads. */
  update(
    ds: DaemonSet,
    nodes: readonly Node[],
    pods: readonly Pod[],
    tolerations: readonly Toleration[],
    isSorted: (nodes: readonly Node[]) => boolean,
    byName: (a: Node, b: Node) => number,
    { podChanges, podsVersion = pods, nodeChanges }: SnapshotChanges = {},
  ): MemoView {
    const key = memoKey(ds);
    if (key !== this.key) this.reset(key);
    this.ds = ds;
    this.tolerations = tolerations;
    this.stats.syncs++;
    const sync = ++this.sync;
    // As with the nodes below: the same version of the pods as the last sync's (the same array, unless one that
    // changes in place says otherwise) holds the same pods; pods told as changes from that one are brought in by
    // their changes alone.
    if (podChanges !== undefined && podChanges.since === this.lastPods && podsVersion !== this.lastPods) {
      this.applyPodChanges(podChanges.pods, sync);
    } else if (podsVersion !== this.lastPods) {
      this.updatePods(pods, sync);
    }
    this.lastPods = podsVersion;
    // The very array of the last sync: the informer hands out the same one while no node changed, and never changes
    // one it handed out (Indexer.listSorted), so there is nothing to compare, node by node, nor to count again.
    if (nodes !== this.lastNodes) {
      // `desired` is kept up to date by the node changes themselves (setNode, and nodes gone in updateNodes). Counted
      // here over every node, it made this method's own time 1.6 ms in each sync after a node joined at 65,000 nodes;
      // 0.04 ms without it (V8 profiles, bench/README.md section 8).
      const told =
        nodeChanges !== undefined &&
        nodeChanges.since === this.lastNodes &&
        this.inputSorted &&
        this.applyNodeChanges(ds, nodes, nodeChanges, tolerations);
      if (!told) this.updateNodes(ds, nodes, tolerations, isSorted, byName);
      this.lastNodes = nodes;
    }
    this.finishTouched();
    if (this.ghostsChanged) {
      this.ghosts = [...this.ghostByName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      this.ghostsChanged = false;
    }
    const desired = this.desired;
    this.ds = undefined;
    return {
      nodes: this.nodes,
      states: this.states,
      stateByName: this.stateByName,
      ghosts: this.ghosts,
      nodeByName: this.nodeByName,
      eligibility: this.eligibility,
      nodeToDaemonPods: this.nodeToDaemonPods,
      desired,
      podsByName: this.podsByName,
      upkeep: this.upkeep,
      resourceAnnotated: this.resourceAnnotated,
      changes: this.changes,
    };
  }

  private reset(key: string): void {
    this.key = key;
    this.stats.resets++;
    this.inputSorted = false;
    this.lastNodes = undefined;
    this.lastPods = undefined;
    this.desired = 0;
    this.nodes = [];
    this.states = [];
    this.ghostByName.clear();
    this.ghosts = [];
    this.slots.clear();
    this.order.length = 0;
    this.upkeep.kruiseReady = 0;
    this.upkeep.inPlaceRefresh = 0;
    this.upkeep.canaryLabel = 0;
    this.upkeep.resourcesRecord = 0;
    this.resourceAnnotated.clear();
    this.changes.reset();
  }

  // ---- pods ----

  /**
   * Finds the pods added, changed (another object under the same name) and gone since the last sync. The snapshot
   * mostly lists pods in the same order as before (an updated pod may move to the end, a deleted one leaves a gap),
   * so each pod is first compared with the one at its place (or the next one), and looked up by name only when
   * neither is it.
   */
  private updatePods(pods: readonly Pod[], sync: number): void {
    // Rewritten in place: slot i is written after every read at i or later (skipped only grows).
    const prev = this.order;
    const order = prev;
    let skipped = 0;
    for (let i = 0; i < pods.length; i++) {
      const pod = pods[i] as Pod;
      let slot = prev[i + skipped];
      if (slot === undefined || slot.facts.pod !== pod) {
        const next = prev[i + skipped + 1];
        if (next !== undefined && next.facts.pod === pod) {
          skipped++;
          slot = next;
        } else {
          const name = pod.metadata.name ?? '';
          slot = this.slots.get(name);
          if (slot === undefined) {
            slot = this.newSlot(pod);
            this.slots.set(name, slot);
          } else if (slot.facts.pod !== pod) {
            this.changeSlot(slot, pod);
          }
        }
      }
      slot.seen = sync;
      order[i] = slot;
    }
    order.length = pods.length;
    // Each pod has its own slot (names are unique in a namespace): more slots than pods means some pods are gone.
    if (this.slots.size > pods.length) {
      for (const [name, slot] of this.slots) {
        if (slot.seen === sync) continue;
        this.stats.podsChanged++;
        this.unlink(slot);
        this.count(slot, -1);
        this.slots.delete(name);
      }
    }
  }

  /** Brings in pods added, replaced or gone (PodChanges) since the last sync's snapshot. */
  private applyPodChanges(changes: ReadonlyMap<string, Pod | undefined>, sync: number): void {
    for (const [name, pod] of changes) {
      const slot = this.slots.get(name);
      if (pod === undefined) {
        if (slot === undefined) continue;
        this.stats.podsChanged++;
        this.unlink(slot);
        this.count(slot, -1);
        this.slots.delete(name);
        // updatePods' order must hold no slot that is gone: the next pass finds every pod by name instead.
        this.order.length = 0;
      } else if (slot === undefined) {
        const added = this.newSlot(pod);
        added.seen = sync;
        this.slots.set(name, added);
      } else if (slot.facts.pod !== pod) {
        this.changeSlot(slot, pod);
      }
    }
  }

  private newSlot(pod: Pod): PodSlot {
    const slot: PodSlot = {
      facts: podFacts(pod),
      target: groupTarget(pod),
      upkeep: upkeepOf(pod),
      seen: 0,
    };
    this.count(slot, 1);
    this.link(slot);
    return slot;
  }

  private changeSlot(slot: PodSlot, pod: Pod): void {
    this.unlink(slot);
    this.count(slot, -1);
    slot.facts = podFacts(pod);
    slot.target = groupTarget(pod);
    slot.upkeep = upkeepOf(pod);
    this.count(slot, 1);
    this.link(slot);
  }

  private count(slot: PodSlot, n: number): void {
    if (n > 0) this.stats.podsChanged++;
    const bits = slot.upkeep;
    if (bits & UPKEEP_KRUISE_READY) this.upkeep.kruiseReady += n;
    if (bits & UPKEEP_IN_PLACE_REFRESH) this.upkeep.inPlaceRefresh += n;
    if (bits & UPKEEP_CANARY_LABEL) this.upkeep.canaryLabel += n;
    if (bits & UPKEEP_RESOURCES_RECORD) this.upkeep.resourcesRecord += n;
  }

  /** The pod list of `s` being rebuilt in this sync. */
  private touch(s: NodeState): PodFacts[] {
    let list = this.touched.get(s);
    if (list === undefined) {
      list = [...s.facts];
      this.touched.set(s, list);
    }
    return list;
  }

  private unlink(slot: PodSlot): void {
    if (slot.target === undefined) return;
    const s = this.stateOf(slot.target);
    if (s === undefined) return;
    const list = this.touch(s);
    const i = list.indexOf(slot.facts);
    if (i >= 0) list.splice(i, 1);
  }

  private link(slot: PodSlot): void {
    if (slot.target === undefined) return;
    let s = this.stateOf(slot.target);
    if (s === undefined) {
      const node = this.nodeOf(slot.target);
      s = newNodeState(slot.target, undefined, NOT_RUN, undefined);
      if (node !== undefined) {
        // A node of the last sync's list that took no part: it has a daemon pod now.
        this.setNode(s, node, this.ds as DaemonSet, this.tolerations);
        this.insertState(s);
      } else {
        // A node name no node has (yet): a ghost, until a node of that name shows up.
        this.ghostByName.set(slot.target, s);
        this.ghostsChanged = true;
      }
    }
    this.touch(s).push(slot.facts);
  }

  /** Sorts the touched nodes' pods as getNodesToDaemonPods does; ghosts left without pods go. */
  private finishTouched(): void {
    for (const [s, list] of this.touched) {
      this.stats.nodesEvaluated++;
      this.changes.add(s, this.states.length);
      if (list.length > 1) list.sort((a, b) => compareByCreationTimestampAndPhase(a.pod, b.pod));
      if (list.length === 0) {
        setNodePods(s, list);
        if (s.node === undefined) {
          this.ghostByName.delete(s.name);
          this.ghostsChanged = true;
        }
      } else {
        // A copy: `list` grew by push, and V8 gives a pushed-to array room for 17 elements (152 B, where one pod
        // needs 24 B); kept on every node state of every DaemonSet, that slack was 145 B per cached daemon pod
        // (heap snapshot at 10,000 nodes and 20 DaemonSets, bench/README.md section 8).
        setNodePods(s, list.slice());
      }
    }
    this.touched = new Map();
  }

  // ---- nodes ----

  private updateNodes(
    ds: DaemonSet,
    nodes: readonly Node[],
    tolerations: readonly Toleration[],
    isSorted: (nodes: readonly Node[]) => boolean,
    byName: (a: Node, b: Node) => number,
  ): void {
    this.stats.nodeListsCompared++;
    const prev = this.nodes;
    // The usual sync: the same nodes in the same places, some of them new objects (a label, taint or status change).
    if (this.inputSorted && nodes.length === prev.length) {
      let samePlaces = true;
      for (let i = 0; i < nodes.length; i++) {
        const node = nodes[i] as Node;
        const before = prev[i] as Node;
        if (node === before) continue;
        if (node.metadata.name !== before.metadata.name) {
          samePlaces = false;
          break;
        }
        this.nodeChanged(before, node, ds, tolerations);
      }
      if (samePlaces) {
        this.nodes = nodes;
        return;
      }
    }
    if (this.inputSorted && nodes.length > prev.length && this.insertNodes(ds, nodes, tolerations)) {
      this.nodes = nodes;
      return;
    }
    // Nodes removed or reordered: rebuild the list, keeping the states of nodes that stayed and take part.
    this.inputSorted = isSorted(nodes);
    const sorted = this.inputSorted ? nodes : [...nodes].sort(byName);
    // Made at the size of the list and cut to what it holds, as V8 gives an array grown by push room for up to half as
    // many again: where every node takes part (65,000 nodes, 20 DaemonSets), that room would be kept by every memo.
    const states = new Array<NodeState>(sorted.length);
    let taking = 0;
    const present = new Set<NodeState>();
    for (const node of sorted) {
      const name = node.metadata.name ?? '';
      let s = this.stateOf(name);
      if (s === undefined) {
        const before = nodeNamed(prev, name);
        // No state: the node took no part in the last list, and is the same object, or takes none now.
        if (before === node || (s = this.wake(before, node, ds, tolerations)) === undefined) continue;
      } else {
        if (s.node === undefined && this.ghostByName.delete(name)) this.ghostsChanged = true;
        if (s.node !== node) this.setNode(s, node, ds, tolerations);
        present.add(s);
        // Dropped once it takes no part (a node that no longer should run the daemon pod, its pods gone).
        if (!s.shouldRun && s.facts.length === 0 && !this.touched.has(s)) continue;
      }
      states[taking++] = s;
    }
    states.length = taking;
    for (const s of this.states) {
      if (present.has(s)) continue;
      // A node that is gone: its pods (if any) now point to no node.
      if (s.node !== undefined) this.resourceAnnotated.delete(s.node);
      if (s.shouldRun) this.desired--;
      s.node = undefined;
      s.eligibility = NOT_RUN;
      refreshNodeState(s);
      forgetKeptParts(s);
      this.changes.add(s, this.states.length);
      this.stats.nodesEvaluated++;
      // Kept as a ghost while pods point to it; else it goes with the old list of states.
      if (s.facts.length > 0 || this.touched.has(s)) {
        this.ghostByName.set(s.name, s);
        this.ghostsChanged = true;
      }
    }
    // Gone nodes that had no state (most clusters have no annotated node: nothing to look at).
    for (const n of this.resourceAnnotated) {
      if (nodeNamed(sorted, n.metadata.name ?? '') !== n) this.resourceAnnotated.delete(n);
    }
    this.nodes = sorted;
    this.states = states;
  }

  /**
   * Nodes told as changed since the last sync's list (NodeChanges): each name is found in both lists by binary search,
   * and its state set, made or left without one, where updateNodes compares the lists node by node (1.2 ms in each of
   * the 20 syncs after a node joined at 65,000 nodes, bench/README.md section 8). Returns false, having changed
   * nothing, when the lists' lengths do not agree with the changes, as when a node is gone (updateNodes then makes the
   * lists again, so the values kept for this list of states are computed again; nodes leave far more rarely than they
   * join or change).
   */
  private applyNodeChanges(
    ds: DaemonSet,
    nodes: readonly Node[],
    changes: NodeChanges,
    tolerations: readonly Toleration[],
  ): boolean {
    const prev = this.nodes;
    const present: [Node | undefined, Node][] = [];
    const joining = new Set<string>();
    for (const name of changes.names) {
      const node = nodeNamed(nodes, name);
      if (node === undefined) continue;
      const before = nodeNamed(prev, name);
      if (before === undefined) joining.add(name);
      present.push([before, node]);
    }
    // A node gone makes the last list longer than this one less the nodes joining.
    if (prev.length + joining.size !== nodes.length) return false;
    for (const [before, node] of present) if (before !== node) this.nodeChanged(before, node, ds, tolerations);
    this.nodes = nodes;
    return true;
  }

  /**
   * Nodes added, none gone, still in name order (nodes joining): the states of those that take part are put in at
   * their places, in the same array, where a rebuild passed over every node with a lookup each (at 20,000 nodes 44% of
   * a sync's time after a node was added). Values kept between syncs hear of the new states as changes
   * (StateChanges), so no other state is looked at again. Returns false, having changed nothing, when `nodes` is not
   * such a list.
   */
  private insertNodes(ds: DaemonSet, nodes: readonly Node[], tolerations: readonly Toleration[]): boolean {
    const prev = this.nodes;
    const added: Node[] = [];
    const replaced: [Node, Node][] = [];
    let j = 0;
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i] as Node;
      const before = prev[j];
      if (node === before) {
        j++;
        continue;
      }
      const name = node.metadata.name ?? '';
      if (before !== undefined && name === before.metadata.name) {
        replaced.push([before, node]);
        j++;
        continue;
      }
      // A new node: before the next old one, after the node before it; else a node is gone or out of order.
      if (before !== undefined && !(name < (before.metadata.name ?? ''))) return false;
      if (i > 0 && !(((nodes[i - 1] as Node).metadata.name ?? '') < name)) return false;
      added.push(node);
    }
    if (j !== prev.length) return false;
    for (const [before, node] of replaced) this.nodeChanged(before, node, ds, tolerations);
    for (const node of added) this.nodeChanged(undefined, node, ds, tolerations);
    return true;
  }

  /**
   * A node joined (`before` undefined) or changed (`before`: its object in the last list): its state set; or, for a
   * node that had none, one made and put in at its place when the node takes part now.
   */
  private nodeChanged(before: Node | undefined, node: Node, ds: DaemonSet, tolerations: readonly Toleration[]): void {
    const name = node.metadata.name ?? '';
    const s = this.stateOf(name);
    if (s === undefined) {
      const woken = this.wake(before, node, ds, tolerations);
      if (woken !== undefined) this.insertState(woken);
    } else if (s.node === undefined) {
      // A ghost: pods pointed to the name before the node joined.
      if (this.ghostByName.delete(name)) this.ghostsChanged = true;
      this.setNode(s, node, ds, tolerations);
      this.insertState(s);
    } else {
      this.setNode(s, node, ds, tolerations);
    }
  }

  /**
   * A node without a state (`before`: its object in the last list, if any): evaluated, and a state made for it (not
   * yet in the list) when it should run the daemon pod; else it still has none.
   */
  private wake(
    before: Node | undefined,
    node: Node,
    ds: DaemonSet,
    tolerations: readonly Toleration[],
  ): NodeState | undefined {
    const eligibility = nodeShouldRunDaemonPod(node, ds, tolerations);
    if (before !== undefined) this.resourceAnnotated.delete(before);
    if (!eligibility.shouldRun) {
      this.stats.nodesEvaluated++;
      if (hasNodeResourcesAnnotation(node)) this.resourceAnnotated.add(node);
      return undefined;
    }
    const s = newNodeState(node.metadata.name ?? '', undefined, NOT_RUN, undefined);
    this.setNode(s, node, ds, tolerations, eligibility);
    return s;
  }

  /** Puts `s` in the list of states at its place (a node that takes part now). */
  private insertState(s: NodeState): void {
    this.stats.nodesInserted++;
    this.states.splice(
      lowerBound(this.states, (x) => x.name < s.name),
      0,
      s,
    );
  }

  private setNode(
    s: NodeState,
    node: Node,
    ds: DaemonSet,
    tolerations: readonly Toleration[],
    eligibility: NodeEligibility = nodeShouldRunDaemonPod(node, ds, tolerations),
  ): void {
    this.stats.nodesEvaluated++;
    this.changes.add(s, this.states.length);
    if (s.node !== undefined) this.resourceAnnotated.delete(s.node);
    if (hasNodeResourcesAnnotation(node)) this.resourceAnnotated.add(node);
    if (s.shouldRun) this.desired--;
    s.node = node;
    s.eligibility = eligibility;
    refreshNodeState(s);
    if (s.shouldRun) this.desired++;
  }

  /** The node `name` of the list of the last sync brought in (of this sync, once it is). */
  nodeOf(name: string): Node | undefined {
    return nodeNamed(this.nodes, name);
  }

  /** The nodes, in name order (NodeView). */
  nodeList(): readonly Node[] {
    return this.nodes;
  }

  /** The states of the nodes, in name order, then those of the ghosts (StateView). */
  *allStates(): IterableIterator<NodeState> {
    yield* this.states;
    yield* this.ghosts;
  }

  /** The state of `name` (node or ghost). */
  stateOf(name: string): NodeState | undefined {
    // lowerBound (k8s/sorted.ts) written out: it takes a closure, which this, called for every pod linked, would make.
    const states = this.states;
    let lo = 0;
    let hi = states.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((states[mid] as NodeState).name < name) lo = mid + 1;
      else hi = mid;
    }
    const s = states[lo];
    return s !== undefined && s.name === name ? s : this.ghostByName.get(name);
  }
}

/**
 * The StateChanges of one memo. The log is dropped once it holds more entries than a quarter of the nodes (at least
 * 256): a value checked against that many changes costs about as much as computing it again.
 */
class ChangeLog implements StateChanges {
  private log: NodeState[] = [];
  private base = 0;
  readonly kept = new Map<string, unknown>();
  readonly reuses = new Map<string, number>();

  get seq(): number {
    return this.base + this.log.length;
  }

  since(seq: number): readonly NodeState[] | undefined {
    return seq < this.base || seq > this.seq ? undefined : this.log.slice(seq - this.base);
  }

  add(s: NodeState, nodes: number): void {
    this.log.push(s);
    if (this.log.length > Math.max(256, nodes / 4)) {
      this.base += this.log.length;
      this.log = [];
    }
  }

  reused(name: string): void {
    this.reuses.set(name, (this.reuses.get(name) ?? 0) + 1);
  }

  /** Forgets every position and kept value. */
  reset(): void {
    this.base += this.log.length + 1;
    this.log = [];
    this.kept.clear();
  }
}

/** The node `name` in `nodes` (in name order), by binary search. */
function nodeNamed(nodes: readonly Node[], name: string): Node | undefined {
  const node = nodes[lowerBound(nodes, (n) => (n.metadata.name ?? '') < name)];
  return node !== undefined && node.metadata.name === name ? node : undefined;
}

/** The node getNodesToDaemonPods groups a pod under: none for a terminal pod being deleted or an unpinned pod. */
function groupTarget(pod: Pod): string | undefined {
  const phase = pod.status?.phase;
  if (pod.metadata.deletionTimestamp && (phase === 'Succeeded' || phase === 'Failed')) return undefined;
  return getTargetNodeName(pod.spec) || undefined;
}

/** The DaemonSet and the template fields nodeShouldRunDaemonPod reads (templateTolerations included). */
function memoKey(ds: DaemonSet): string {
  const spec = ds.spec.template.spec;
  return `${ds.metadata.uid ?? ''}\n${canonicalJson([
    spec.nodeName ?? null,
    spec.nodeSelector ?? null,
    spec.affinity ?? null,
    spec.tolerations ?? null,
    (spec as { hostNetwork?: unknown }).hostNetwork ?? null,
  ])}`;
}

/** A read-only map made of `get` and `entries`, for the memo's views of its nodes and states. */
abstract class MapView<V> implements ReadonlyMap<string, V> {
  abstract get(name: string): V | undefined;
  abstract entries(): MapIterator<[string, V]>;

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  get size(): number {
    let n = 0;
    for (const _ of this.entries()) n++;
    return n;
  }

  *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  forEach(fn: (value: V, key: string, map: ReadonlyMap<string, V>) => void): void {
    for (const [k, v] of this.entries()) fn(v, k, this);
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }
}

/**
 * A read-only map over the memo's states, ghosts included: `pick` gives the value of a state, undefined for none.
 * Iterates in name order (nodes, then ghosts).
 */
class StateView<V> extends MapView<V> {
  constructor(
    private readonly memo: PlanMemo,
    private readonly pick: (s: NodeState) => V | undefined,
  ) {
    super();
  }

  get(name: string): V | undefined {
    const s = this.memo.stateOf(name);
    return s === undefined ? undefined : this.pick(s);
  }

  *entries(): MapIterator<[string, V]> {
    for (const s of this.memo.allStates()) {
      const v = this.pick(s);
      if (v !== undefined) yield [s.name, v];
    }
  }
}

/**
 * A read-only map over the memo's nodes, every node of the list: `pick` gives the value of a node from it and its
 * state (undefined for a node that takes no part). Iterates in name order.
 */
class NodeView<V> extends MapView<V> {
  constructor(
    private readonly memo: PlanMemo,
    private readonly pick: (node: Node, s: NodeState | undefined) => V,
  ) {
    super();
  }

  get(name: string): V | undefined {
    // A node that takes part is found with its state, in one search; only the others are looked for in the node list.
    const s = this.memo.stateOf(name);
    if (s?.node !== undefined) return this.pick(s.node, s);
    const node = this.memo.nodeOf(name);
    return node === undefined ? undefined : this.pick(node, undefined);
  }

  override get size(): number {
    return this.memo.nodeList().length;
  }

  *entries(): MapIterator<[string, V]> {
    for (const node of this.memo.nodeList()) {
      const name = node.metadata.name ?? '';
      yield [name, this.pick(node, this.memo.stateOf(name))];
    }
  }
}
