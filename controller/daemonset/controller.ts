// The DaemonSet controller's imperative shell: event handlers map objects to DaemonSet keys;
// reconcile reads the caches into a snapshot, asks the pure planner (src/daemonset/plan.ts) what
// to do, and hands the plan to the executor (executor.ts). It decides nothing itself. Shapes and
// names as upstream's https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/daemon_controller.go.
import type { DaemonSet } from '../../src/api/types.ts';
import type { DaemonSetSetting } from '../../src/api/setting.ts';
import { nodeOverridesChanged } from '../../src/daemonset/overrides.ts';
import { missingDaemonSetStatus } from '../../src/daemonset/setting-status.ts';
import { daemonSetAccess, type DaemonSetAccess } from './api-version.ts';
import type { ServedVersion } from '../../src/api/constants.ts';
import { adoptPatch, claimObjects, releasePatch } from '../../src/daemonset/claim.ts';
import { cachedNode, cachedPod, withoutManagedFields } from '../../src/daemonset/cache-shapes.ts';
import { getControllerOf } from '../../src/daemonset/pods.ts';
import { imagePullPodDaemonSetUID } from '../../src/daemonset/predownload.ts';
import { nodeAddAffects, nodeUpdateAffects } from '../../src/daemonset/eligibility.ts';
import { planDaemonSet } from '../../src/daemonset/plan.ts';
import { PlanMemo } from '../../src/daemonset/memo.ts';
import { minDelay } from '../../src/daemonset/context.ts';
import { STATUS_PROGRESS_INTERVAL_MS } from '../../src/daemonset/status.ts';
import type { DaemonSetSnapshot, ImagePreDownloadMode, SettingStatusWrite } from '../../src/daemonset/plan-types.ts';
import { DEFAULT_KRUISE_POD_READY_GATE, type KruisePodReadyGateMode } from '../../src/daemonset/pods.ts';
import type { BackoffState } from '../../src/daemonset/backoff.ts';
import { labelSelectorMatches } from '../../src/k8s/labels.ts';
import { isNotFound } from '../../src/k8s/errors.ts';
import { resources } from '../../src/k8s/resources.ts';
import { type KubeClient, type RequestScope } from '../../src/k8s/client.ts';
import { objectKey, type ControllerRevision, type KubeObject, type Node, type Pod } from '../../src/k8s/types.ts';
import { ignoreNotFound } from '../runtime/errors.ts';
import type { EventRecorder } from '../../src/k8s/events.ts';
import { ResourceVersionExpectations, UIDTrackingControllerExpectations } from '../runtime/expectations.ts';
import {
  deletedObject,
  Informer,
  indexByController,
  indexByNamespace,
  NAMESPACE_INDEX,
  orphanIndexValue,
  type DeletedFinalStateUnknown,
  type IndexFunc,
  waitForCacheSync,
} from '../../src/k8s/informer.ts';
import type { Logger } from '../../src/k8s/log.ts';
import { WorkQueue } from '../../src/k8s/workqueue.ts';
import { runWorkers, type ReconcileResult } from '../runtime/workers.ts';
import { ClaimedPods, isPodToClaim, type PodClaim } from './claimed-pods.ts';
import { pullPodsKey, SyncExecutor } from './executor.ts';
import { indexByNode, NODE_INDEX, NodeReadinessController } from './node-readiness.ts';
import { DaemonSetMetrics } from './metrics.ts';

export const CONTROLLER_NAME = 'daemonset';
const CONTROLLER_INDEX = 'controller';
const IMAGE_PULL_INDEX = 'imagePullDaemonSetUID';
/** Pre-download pull pods by the UID of the DaemonSet they pull for (they have no controller: predownload.ts). */
const indexImagePullPods: IndexFunc<Pod> = (pod) => {
  const uid = imagePullPodDaemonSetUID(pod);
  return uid !== undefined ? [uid] : [];
};

export interface DaemonSetControllerOptions {
  client: KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  workers?: number;
  /** Informer tuning for tests (watch timeouts, inactivity watchdog). */
  informerOverrides?: { inactivityTimeoutMs?: number };
  /**
   * Pull new images ahead of a rollout with short-lived pull pods ('pods', the default), with Kruise
   * ImagePullJobs ('imagepulljob', needs that CRD), or not ('off').
   */
  imagePreDownload?: ImagePreDownloadMode;
  /** Which new pods get the KruisePodReady gate (default 'always'; plan-types.ts). */
  kruisePodReadyGate?: KruisePodReadyGateMode;
  /** The version DaemonSets are read and written in (default v1beta1; api-version.ts). */
  apiVersion?: ServedVersion;
  /**
   * Resize pods in place through pods/resize (InPlaceWorkloadVerticalScaling) where the cluster serves it: checked
   * by resolveInPlaceResize() before the workers start. Default false.
   */
  inPlaceResize?: boolean;
  /**
   * Cache nodes and pods as the controller reads them and drop managedFields (src/daemonset/cache-shapes.ts);
   * default true. False only for the benchmark's before/after (bench/memory.ts).
   */
  trimCache?: boolean;
}

type MaybeTombstone<T> = T | DeletedFinalStateUnknown<T>;

export class DaemonSetController {
  readonly daemonSets: Informer<DaemonSet>;
  readonly pods: Informer<Pod>;
  readonly nodes: Informer<Node>;
  readonly revisions: Informer<ControllerRevision>;
  readonly queue = new WorkQueue({ name: CONTROLLER_NAME });
  /** Pod creations/deletions in flight per DaemonSet key, so informer lag never doubles a create or delete. */
  readonly expectations = new UIDTrackingControllerExpectations();
  /** Pods we patched: do not plan on a cached copy older than our write (Kruise's RV expectations). */
  readonly podVersions = new ResourceVersionExpectations();
  /** Our last status write of each DaemonSet: no sync plans on a cached copy older than it (status never goes back). */
  readonly statusVersions = new ResourceVersionExpectations();
  /** KruisePodReady True written right after each create: not planned again until the cache shows it (executor.ts). */
  readonly readinessWrites = new ResourceVersionExpectations();
  private readonly failedPodsBackoff = new Map<string, BackoffState>();
  /**
   * Each DaemonSet's planner memo (src/daemonset/memo.ts): a sync re-evaluates only the nodes whose object or pods
   * changed since the last one. It finds changes by object identity, which holds because cached objects are replaced,
   * never modified (Indexer; nothing in this controller or the executor writes to them). Beside it, the node list its
   * last sync planned, from which the node store tells the next sync which nodes changed (Indexer.changedKeysSince).
   */
  private readonly planMemos = new Map<string, { memo: PlanMemo; nodes?: readonly Node[] }>();
  /** Each DaemonSet's claim of its pods, brought up to date from the pod events since its last sync. */
  private readonly claimedPods = new ClaimedPods({
    candidates: (ds) => this.podsToClaim(ds),
    get: (namespace, name) => this.pods.store.getByName(namespace, name),
  });
  /** Per-DaemonSet rollout gauges and pod operation counters (kruise_daemonset_*). */
  readonly metrics = new DaemonSetMetrics();
  /** Informers read through `baseClient`; reconciles go through `client`, scoped to the leadership by runWorkers. */
  private readonly baseClient: KubeClient;
  private client: KubeClient;
  /** Aborts when this replica stops leading: no slow-start batch begins after that. */
  private workSignal: AbortSignal | undefined;
  /** Public for tests (readinessWritesSettled). */
  readonly executor: SyncExecutor;
  private readonly log: Logger;
  private readonly workers: number;
  private readonly imagePreDownload: ImagePreDownloadMode;
  private readonly kruisePodReadyGate: KruisePodReadyGateMode;
  private inPlaceResize: boolean;
  private readonly access: DaemonSetAccess;
  /**
   * DaemonSetSettings (per-node resources, src/daemonset/overrides.ts), watched when the apiserver serves them: a
   * cluster whose chart predates the CRD runs without (settingsServed, asked once through discovery).
   */
  readonly settings: Informer<DaemonSetSetting>;
  /** spec.nodeReadiness: removes (and puts back) the readiness taints of nodes, on the same caches. */
  readonly nodeReadiness: NodeReadinessController;
  private settingsServed: Promise<boolean> | undefined;

  constructor(opts: DaemonSetControllerOptions) {
    this.imagePreDownload = opts.imagePreDownload ?? 'pods';
    this.kruisePodReadyGate = opts.kruisePodReadyGate ?? DEFAULT_KRUISE_POD_READY_GATE;
    this.inPlaceResize = opts.inPlaceResize ?? false;
    this.access = daemonSetAccess(opts.apiVersion);
    this.baseClient = opts.client;
    this.client = opts.client;
    this.log = opts.logger.child({ controller: CONTROLLER_NAME });
    this.workers = opts.workers ?? 3;
    this.executor = new SyncExecutor({
      client: () => this.client,
      workSignal: () => this.workSignal,
      recorder: opts.recorder,
      expectations: this.expectations,
      podVersions: this.podVersions,
      statusVersions: this.statusVersions,
      readinessWrites: this.readinessWrites,
      queue: this.queue,
      metrics: this.metrics,
      daemonSets: this.access,
    });
    const common = { client: opts.client, logger: opts.logger, ...opts.informerOverrides };
    // Objects are trimmed as they are decoded, before they are stored (cache-shapes.ts).
    const trim = opts.trimCache !== false;
    // Each object becomes the internal model in the cache (api-version.ts); status writes convert back (executor.ts).
    const access = this.access;
    // By namespace: the DaemonSets a pod's or a setting's namespace holds, a DaemonSet's revisions and settings.
    // Pods and nodes are read by controller, node and image-pull index only.
    const byNamespace = { [NAMESPACE_INDEX]: indexByNamespace };
    this.daemonSets = new Informer<DaemonSet>({
      ...common,
      name: 'daemonsets',
      type: access.type,
      indexers: byNamespace,
      transform: trim ? (obj) => access.toInternal(withoutManagedFields(obj)) : (obj) => access.toInternal(obj),
    });
    this.pods = new Informer<Pod>({
      ...common,
      name: 'pods',
      type: resources.pods,
      indexers: {
        [CONTROLLER_INDEX]: indexByController,
        [IMAGE_PULL_INDEX]: indexImagePullPods,
        [NODE_INDEX]: indexByNode,
      },
      ...(trim ? { transform: cachedPod } : {}),
    });
    this.nodes = new Informer<Node>({
      ...common,
      name: 'nodes',
      type: resources.nodes,
      ...(trim ? { transform: cachedNode } : {}),
    });
    this.revisions = new Informer<ControllerRevision>({
      ...common,
      name: 'controllerrevisions',
      type: resources.controllerRevisions,
      indexers: byNamespace,
      ...(trim ? { transform: withoutManagedFields } : {}),
    });
    this.settings = new Informer<DaemonSetSetting>({
      ...common,
      name: 'daemonsetsettings',
      type: resources.daemonSetSettings,
      indexers: byNamespace,
      ...(trim ? { transform: withoutManagedFields } : {}),
    });
    this.nodeReadiness = new NodeReadinessController({
      nodes: this.nodes,
      pods: this.pods,
      daemonSets: this.daemonSets,
      client: () => this.client,
      recorder: opts.recorder,
      logger: opts.logger,
      metrics: this.metrics,
      // The DaemonSets' NodeReadiness condition says whether the manager may patch nodes.
      onForbiddenChange: () => this.enqueueIf((ds) => ds.spec.nodeReadiness !== undefined),
    });
    this.registerHandlers();
  }

  // ------------------------------------------------------------------------------------------
  // Event handlers: map objects to keys and enqueue them, and observe expectations; nothing else happens here.

  private registerHandlers(): void {
    this.daemonSets.addEventHandler({
      onAdd: (ds) => this.addDaemonSet(ds),
      onUpdate: (old, cur) => this.updateDaemonSet(old, cur),
      onDelete: (obj) => this.deleteDaemonSet(obj),
    });
    this.pods.addEventHandler({
      onAdd: (pod) => this.addPod(pod),
      onUpdate: (old, cur) => this.updatePod(old, cur),
      onDelete: (obj) => this.deletePod(obj),
    });
    this.nodes.addEventHandler({
      onAdd: (node) => this.addNode(node),
      onUpdate: (old, cur) => this.updateNode(old, cur),
      onDelete: () => this.deleteNode(),
    });
    this.revisions.addEventHandler({
      onAdd: (rev) => this.addHistory(rev),
      onUpdate: (old, cur) => this.updateHistory(old, cur),
      onDelete: (obj) => this.deleteHistory(obj),
    });
    this.settings.addEventHandler({
      onAdd: (s) => this.enqueueReferenced(s),
      onUpdate: (old, cur) => {
        if (old.spec.reference.name !== cur.spec.reference.name) this.enqueueReferenced(old);
        this.enqueueReferenced(cur);
      },
      onDelete: (obj) => this.enqueueReferenced(deletedObject(obj)),
    });
  }

  /** A setting wakes the DaemonSet it references (its key, whether or not that DaemonSet exists). */
  private enqueueReferenced(s: DaemonSetSetting): void {
    this.queue.add(`${s.metadata.namespace ?? ''}/${s.spec.reference.name}`);
  }

  addDaemonSet(ds: DaemonSet): void {
    this.enqueueDaemonSet(ds);
    this.nodeReadiness.daemonSetChanged(ds);
  }

  updateDaemonSet(old: DaemonSet, cur: DaemonSet): void {
    this.statusVersions.observe(cur);
    this.enqueueDaemonSet(cur);
    if (JSON.stringify(old.spec.nodeReadiness) !== JSON.stringify(cur.spec.nodeReadiness)) {
      this.nodeReadiness.daemonSetChanged(old);
      this.nodeReadiness.daemonSetChanged(cur);
    }
  }

  deleteDaemonSet(obj: MaybeTombstone<DaemonSet>): void {
    const ds = deletedObject(obj);
    this.nodeReadiness.daemonSetChanged(ds);
    const key = objectKey(ds);
    this.statusVersions.delete(ds);
    this.forget(key);
    this.queue.add(key);
  }

  addPod(pod: Pod): void {
    this.podClaimChanged(pod);
    if (this.pullPodEvent(pod, pod.metadata.deletionTimestamp ? 'deleted' : 'added')) return;
    this.nodeReadiness.podChanged(pod);
    if (pod.metadata.deletionTimestamp) {
      // Seen first already terminating (e.g. after a relist): count it as observed deleted.
      this.podDeleted(pod);
      return;
    }
    const ds = this.resolveControllerRef(pod);
    if (ds) {
      this.expectations.creationObserved(objectKey(ds));
      this.enqueueDaemonSet(ds);
    } else {
      this.enqueueMatching(pod);
    }
  }

  updatePod(old: Pod, cur: Pod): void {
    if (cur.metadata.resourceVersion === old.metadata.resourceVersion) return;
    this.podClaimChanged(old, cur);
    if (this.pullPodEvent(cur, cur.metadata.deletionTimestamp ? 'deleted' : 'updated')) return;
    this.nodeReadiness.podChanged(cur);
    this.podVersions.observe(cur);
    this.readinessWrites.observe(cur);
    if (cur.metadata.deletionTimestamp) this.podDeleted(cur);
    const oldOwner = this.resolveControllerRef(old);
    const curOwner = this.resolveControllerRef(cur);
    if (oldOwner && oldOwner !== curOwner) this.enqueueDaemonSet(oldOwner);
    if (curOwner) this.enqueueDaemonSet(curOwner);
    else if (labelsChanged(old, cur) || oldOwner) this.enqueueMatching(cur);
  }

  deletePod(obj: MaybeTombstone<Pod>): void {
    const pod = deletedObject(obj);
    this.podClaimChanged(pod);
    if (this.pullPodEvent(pod, 'deleted')) return;
    this.nodeReadiness.podChanged(pod);
    this.podVersions.delete(pod);
    this.readinessWrites.delete(pod);
    this.podDeleted(pod);
  }

  // Heartbeats are most node events: only DaemonSets whose eligibility (or update-selector
  // match) on that node changes are enqueued, as kruise's nodeEventHandler.
  addNode(node: Node): void {
    this.enqueueIf((ds) => nodeAddAffects(node, ds));
    this.nodeReadiness.nodeChanged(node);
  }

  updateNode(old: Node, cur: Node): void {
    this.nodeReadiness.nodeChanged(cur);
    // Per-node resources: the node's annotations for a DaemonSet, or its labels where a setting may select it.
    const relabelled = labelsChanged(old, cur);
    this.enqueueIf(
      (ds) =>
        nodeUpdateAffects(old, cur, ds) || nodeOverridesChanged(old, cur, ds) || (relabelled && this.hasSettings(ds)),
    );
  }

  private hasSettings(ds: DaemonSet): boolean {
    return this.settings.store
      .byIndex(NAMESPACE_INDEX, ds.metadata.namespace ?? '')
      .some((s) => s.spec.reference.name === ds.metadata.name);
  }

  deleteNode(): void {
    this.enqueueAll();
  }

  addHistory(rev: ControllerRevision): void {
    this.enqueueHistoryOwner(rev);
  }

  updateHistory(_old: ControllerRevision, cur: ControllerRevision): void {
    this.enqueueHistoryOwner(cur);
  }

  deleteHistory(obj: MaybeTombstone<ControllerRevision>): void {
    this.enqueueHistoryOwner(deletedObject(obj));
  }

  /** A revision wakes the DaemonSet that owns it, or, an orphan, those that may adopt it. */
  private enqueueHistoryOwner(rev: ControllerRevision): void {
    const ds = this.resolveControllerRef(rev);
    if (ds) this.enqueueDaemonSet(ds);
    else this.enqueueMatching(rev);
  }

  /** Tells the kept claims (ClaimedPods) of the DaemonSets that may claim the pod that it changed. */
  private podClaimChanged(...states: Pod[]): void {
    const namespace = states[0]?.metadata.namespace ?? '';
    this.claimedPods.podChanged(this.daemonSets.store.byIndex(NAMESPACE_INDEX, namespace), ...states);
  }

  private podDeleted(pod: Pod): void {
    const ds = this.resolveControllerRef(pod);
    if (!ds) return;
    const key = objectKey(ds);
    this.expectations.deletionObservedOf(key, objectKey(pod));
    this.queue.add(key);
  }

  /**
   * Image pre-download pull pods are not daemon pods: their changes only count against the pull-pod
   * expectations and wake the DaemonSet they pull for. Returns whether `pod` is one.
   */
  private pullPodEvent(pod: Pod, what: 'added' | 'updated' | 'deleted'): boolean {
    const uid = imagePullPodDaemonSetUID(pod);
    if (uid === undefined) return false;
    const ref = pod.metadata.ownerReferences?.find((r) => r.kind === 'DaemonSet' && r.uid === uid);
    const ds = ref && this.daemonSets.store.getByName(pod.metadata.namespace, ref.name);
    if (!ds || ds.metadata.uid !== uid) return true;
    const key = objectKey(ds);
    if (what === 'added') this.expectations.creationObserved(pullPodsKey(key));
    if (what === 'deleted') this.expectations.deletionObservedOf(pullPodsKey(key), objectKey(pod));
    this.queue.add(key);
    return true;
  }

  /** The DaemonSet (ours) that controls obj, if it still exists with that UID. */
  private resolveControllerRef(obj: KubeObject): DaemonSet | undefined {
    const ref = getControllerOf(obj);
    if (!ref || ref.kind !== 'DaemonSet' || !ref.apiVersion.startsWith('apps.kruise.io/')) return undefined;
    const ds = this.daemonSets.store.getByName(obj.metadata.namespace, ref.name);
    if (!ds || ds.metadata.uid !== ref.uid) return undefined;
    return ds;
  }

  private enqueueDaemonSet(ds: DaemonSet): void {
    this.queue.add(objectKey(ds));
  }

  private enqueueIf(affects: (ds: DaemonSet) => boolean): void {
    for (const ds of this.daemonSets.store.list()) if (affects(ds)) this.enqueueDaemonSet(ds);
  }

  /** Orphans: every DaemonSet in the namespace whose selector matches may adopt it. */
  private enqueueMatching(obj: KubeObject): void {
    for (const ds of this.daemonSets.store.byIndex(NAMESPACE_INDEX, obj.metadata.namespace ?? '')) {
      if (labelSelectorMatches(ds.spec.selector, obj.metadata.labels)) this.enqueueDaemonSet(ds);
    }
  }

  private enqueueAll(): void {
    for (const key of this.daemonSets.store.listKeys()) this.queue.add(key);
  }

  /** Drops what is kept between syncs for a DaemonSet that is gone. */
  private forget(key: string): void {
    this.expectations.deleteExpectations(key);
    this.expectations.deleteExpectations(pullPodsKey(key));
    this.failedPodsBackoff.delete(key);
    this.planMemos.delete(key);
    this.claimedPods.forget(key);
    this.metrics.forget(key);
  }

  // ------------------------------------------------------------------------------------------
  // Run

  /** Starts the informers (also used by followers, so a new leader starts warm). */
  startInformers(signal: AbortSignal): Promise<void>[] {
    const informers = [this.daemonSets, this.pods, this.nodes, this.revisions].map((i) => i.run(signal));
    this.settingsServed = this.resolveSettings(signal);
    const settings = this.settingsServed.then((served) => (served ? this.settings.run(signal) : undefined));
    return [...informers, settings];
  }

  async waitForCacheSync(signal: AbortSignal): Promise<boolean> {
    const synced = await waitForCacheSync(signal, this.daemonSets, this.pods, this.nodes, this.revisions);
    if (!synced || !(await this.settingsServed)) return synced;
    return this.settings.waitForCacheSync(signal);
  }

  /** Whether the apiserver serves DaemonSetSettings (the chart's CRD), asked once through discovery. */
  private async resolveSettings(signal: AbortSignal): Promise<boolean> {
    const { group, version, resource } = resources.daemonSetSettings;
    try {
      const served = (await this.baseClient.serverResources({ group, version }, { signal })).includes(resource);
      if (!served) this.log.warn(`${resource}.${group} is not served: pods get no per-node resources from settings`);
      return served;
    } catch (err) {
      if (!isNotFound(err)) this.log.warn({ err }, `discovery of ${resource}.${group} failed: running without`);
      else this.log.warn(`${resource}.${group} is not served: pods get no per-node resources from settings`);
      return false;
    }
  }

  /**
   * Keeps in-place resize on only if the apiserver serves pods/resize (Kubernetes 1.33 and later; GA in 1.35), asked
   * once through discovery: resource changes then recreate pods, as without the gate. Call before runWorkers.
   */
  async resolveInPlaceResize(signal: AbortSignal): Promise<boolean> {
    if (!this.inPlaceResize) return false;
    try {
      const served = (await this.baseClient.serverResources({ group: '', version: 'v1' }, { signal })).includes(
        'pods/resize',
      );
      this.inPlaceResize = served;
      if (served) this.log.info('in-place resize on: the apiserver serves pods/resize');
      else
        this.log.warn('in-place resize off: the apiserver does not serve pods/resize; resource changes recreate pods');
    } catch (err) {
      this.inPlaceResize = false;
      this.log.warn({ err }, 'in-place resize off: discovery of pods/resize failed; resource changes recreate pods');
    }
    return this.inPlaceResize;
  }

  /** Runs the workers until signal aborts. Call after waitForCacheSync, as the leader. */
  async runWorkers(signal: AbortSignal, writeFence: Omit<RequestScope, 'signal'> = {}): Promise<void> {
    // Every request a reconcile makes carries the leadership's signal (aborted the moment it ends), and every
    // write is checked against the Lease right before it is sent: one writer at a time.
    this.client = this.baseClient.withScope({ ...writeFence, signal });
    this.workSignal = signal;
    this.enqueueAll();
    try {
      await Promise.all([
        runWorkers(this.queue, this.workers, (key) => this.reconcile(key), {
          controller: CONTROLLER_NAME,
          signal,
          logger: this.log,
        }),
        this.nodeReadiness.run(signal),
      ]);
    } finally {
      // Only the leader reports per-DaemonSet gauges.
      this.metrics.resetGauges();
    }
  }

  // ------------------------------------------------------------------------------------------
  // Reconcile

  async reconcile(key: string): Promise<ReconcileResult | void> {
    const ds = this.daemonSets.store.get(key);
    if (!ds) {
      this.forget(key);
      this.executor.forget(key);
      await this.executor.writeMissingDaemonSetSettings(this.settingsReferencing(key), this.log);
      return;
    }
    const log = this.log.child({ daemonset: key });
    const namespace = ds.metadata.namespace ?? '';
    const ownStatus = this.statusVersions.isSatisfied(ds);
    if (!ownStatus.satisfied) {
      // The cache has not caught up with our last status write: a status computed from this older copy could
      // carry an older observedGeneration or conditions over it. The update event that brings it requeues the key.
      log.debug({ resourceVersion: ds.metadata.resourceVersion }, 'waiting for the cache to show our status write');
      return { requeueAfterMs: STATUS_PROGRESS_INTERVAL_MS };
    }

    const inNamespace = (p: Pod) => p.metadata.namespace === namespace;
    const imagePullPods = this.pods.store.byIndex(IMAGE_PULL_INDEX, ds.metadata.uid ?? '').filter(inNamespace);
    const podClaim = this.claimedPods.claim(key, ds);
    const pods = await this.claim(ds, podClaim, resources.pods, log);
    const allRevisions = this.revisions.store.byIndex(NAMESPACE_INDEX, namespace);
    const revisions = await this.claim(ds, claimObjects(ds, allRevisions), resources.controllerRevisions, log);
    const ownedNames = new Set(revisions.map((r) => r.metadata.name));
    // A pod whose cached copy is older than our last write to it holds back the sync (podVersions), except for the
    // KruisePodReady patch right after its create; either way no readiness upkeep is planned from that copy.
    let podVersionsSatisfied = true;
    const podsAwaitingWrites = new Set<string>();
    for (const p of this.podsWithWritesAwaited(key, namespace, pods, podClaim)) {
      const current = this.podVersions.isSatisfied(p).satisfied;
      podVersionsSatisfied &&= current;
      if (!current || this.executor.awaitingReadinessWrite(p)) podsAwaitingWrites.add(p.metadata.name ?? '');
    }

    let planned = this.planMemos.get(key);
    if (!planned) this.planMemos.set(key, (planned = { memo: new PlanMemo() }));
    const nodes = this.nodes.store.listSorted();
    const lastNodes = planned.nodes;
    // A node's key in the store is its name. The same list as the last sync's: no node changed, nothing to ask.
    const changedNodes =
      lastNodes !== undefined && lastNodes !== nodes ? this.nodes.store.changedKeysSince(lastNodes) : undefined;
    const snapshot: DaemonSetSnapshot = {
      ds,
      nodes,
      ...(lastNodes !== undefined && changedNodes !== undefined
        ? { nodeChanges: { since: lastNodes, names: changedNodes } }
        : {}),
      pods,
      // Unless adoption added pods to the claimed list.
      ...(pods === podClaim.owned ? { podsVersion: podClaim.version, podChanges: podClaim.changes } : {}),
      revisions,
      foreignRevisions: allRevisions.filter((r) => !ownedNames.has(r.metadata.name)),
      now: Date.now(),
      failedPodsBackoff: this.failedPodsBackoff.get(key) ?? {},
      expectationsSatisfied: this.expectations.satisfiedExpectations(key) && podVersionsSatisfied,
      podsAwaitingWrites,
      // Pull pods in flight not yet in the cache: plan no pre-download until they are, or the parallelism
      // would be exceeded.
      imagePullPods,
      settings: this.settings.store.byIndex(NAMESPACE_INDEX, namespace),
      options: {
        imagePreDownload: this.expectations.satisfiedExpectations(pullPodsKey(key)) ? this.imagePreDownload : 'off',
        kruisePodReadyGate: this.kruisePodReadyGate,
        inPlaceResize: this.inPlaceResize,
        nodeTaintsForbidden: this.nodeReadiness.forbidden,
      },
    };
    const plan = planDaemonSet(snapshot, planned.memo);
    planned.nodes = nodes;
    this.failedPodsBackoff.set(key, plan.failedPodsBackoff);
    this.metrics.observe(ds, plan);
    log.debug(
      {
        stage: plan.stage,
        creates: plan.creates.length,
        deletes: plan.deletes.length,
        patches: plan.podPatches.length,
      },
      'planned sync',
    );
    const statusDeferredMs = await this.executor.execute(ds, key, plan, log);
    const requeueAfterMs = minDelay(plan.requeueAfterMs, statusDeferredMs);
    return requeueAfterMs !== undefined ? { requeueAfterMs } : undefined;
  }

  /** The statuses to write on the settings that reference the DaemonSet `key` (namespace/name), which is gone. */
  private settingsReferencing(key: string): SettingStatusWrite[] {
    const [namespace = '', name] = key.split('/');
    const now = Date.now();
    return this.settings.store.byIndex(NAMESPACE_INDEX, namespace).flatMap((setting) => {
      const status = setting.spec.reference.name === name ? missingDaemonSetStatus(setting, now) : undefined;
      return status ? [{ setting, status }] : [];
    });
  }

  /**
   * The pods a sync may claim: its own and, unless the DaemonSet is being deleted (then claimObjects adopts none),
   * the orphans of its namespace; never pull pods. Upstream's getDaemonPods claims every pod of the namespace, and
   * claimObjects passes over those of other controllers: leaving them out changes no claim, only the cost, which
   * grew with every pod of the namespace (16,673 pods walked per sync of each of 20 DaemonSets at 5,000 nodes,
   * bench/README.md section 7).
   */
  private podsToClaim(ds: DaemonSet): Pod[] {
    const namespace = ds.metadata.namespace ?? '';
    const pods: Pod[] = [];
    // The index gives the candidates by controller; isPodToClaim is the rule, the one ClaimedPods applies to a pod.
    const add = (p: Pod) => {
      if (isPodToClaim(ds, p)) pods.push(p);
    };
    this.pods.store.forEachInIndex(CONTROLLER_INDEX, ds.metadata.uid ?? '', add);
    if (!ds.metadata.deletionTimestamp)
      this.pods.store.forEachInIndex(CONTROLLER_INDEX, orphanIndexValue(namespace), add);
    return pods;
  }

  /**
   * Adopts matching orphans and releases owned objects that stopped matching (upstream ClaimPods); returns the owned
   * objects, the adopted ones added (`claimed.owned` is left as it is).
   */
  /**
   * The pods of `pods` a write of ours may still be awaited for (podVersions, the KruisePodReady patches); of any
   * other both are satisfied. Most syncs await none. While some are (each node added creates a pod of every
   * DaemonSet and patches it), the pods are found from the awaited keys rather than by asking about each pod of the
   * DaemonSet: that was 37% of the syncs after nodes were added at 65,000 nodes (V8 profile, bench/README.md
   * section 8).
   */
  private podsWithWritesAwaited(key: string, namespace: string, pods: readonly Pod[], claim: PodClaim): readonly Pod[] {
    if (this.podVersions.size === 0 && !this.executor.anyReadinessWriteAwaited()) return [];
    // Adoption added pods to the claimed ones: ask about each.
    if (pods !== claim.owned) return pods;
    const found = new Set<Pod>();
    const prefix = `${namespace}/`;
    for (const keys of [this.podVersions.objectKeys(), this.executor.readinessAwaitedKeys()]) {
      for (const k of keys) {
        const p = k.startsWith(prefix) ? this.claimedPods.ownedPod(key, k.slice(prefix.length)) : undefined;
        if (p) found.add(p);
      }
    }
    return [...found];
  }

  private async claim<T extends KubeObject>(
    ds: DaemonSet,
    claimed: { owned: readonly T[]; adopt: T[]; release: T[] },
    type: typeof resources.pods | typeof resources.controllerRevisions,
    log: Logger,
  ): Promise<readonly T[]> {
    const { owned, release } = claimed;
    let { adopt } = claimed;
    const target = (o: KubeObject) => ({ namespace: o.metadata.namespace, name: o.metadata.name! });
    if (adopt.length > 0 && !(await this.canAdopt(ds))) adopt = [];
    const adopted = await Promise.all(
      adopt.map(async (o) => {
        try {
          const patched = await this.client.patch<T>(type, target(o), adoptPatch(ds, o), { type: 'strategic' });
          log.info({ kind: type.kind, name: o.metadata.name }, 'adopted orphan');
          return patched;
        } catch (err) {
          if (ignoreNotFound(err)) throw err;
          return undefined; // gone meanwhile: nothing to adopt
        }
      }),
    );
    await Promise.all(
      release.map(async (o) => {
        try {
          await this.client.patch(type, target(o), releasePatch(ds, o), { type: 'strategic' });
          log.info({ kind: type.kind, name: o.metadata.name }, 'released object that no longer matches the selector');
        } catch (err) {
          if (ignoreNotFound(err)) throw err;
        }
      }),
    );
    const added = adopted.filter((o) => o !== undefined);
    return added.length > 0 ? [...owned, ...added] : owned;
  }

  /**
   * Upstream's RecheckDeletionTimestamp: the cache may lag, so before adopting read the
   * DaemonSet from the apiserver; never adopt for one that is gone, replaced or being deleted.
   */
  private async canAdopt(ds: DaemonSet): Promise<boolean> {
    try {
      const fresh = await this.client.get<DaemonSet>(this.access.type, {
        namespace: ds.metadata.namespace,
        name: ds.metadata.name!,
      });
      return fresh.metadata.uid === ds.metadata.uid && !fresh.metadata.deletionTimestamp;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

function labelsChanged(a: KubeObject, b: KubeObject): boolean {
  return JSON.stringify(a.metadata.labels ?? {}) !== JSON.stringify(b.metadata.labels ?? {});
}
