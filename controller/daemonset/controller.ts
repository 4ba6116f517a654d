// The DaemonSet controller's imperative shell: event handlers map objects to DaemonSet keys;
// reconcile reads the caches into a snapshot, asks the pure planner (src/daemonset/plan.ts) what
// to do, and executes the plan with expectations and events. It decides nothing itself.
import type { DaemonSet } from '../../src/api/types.ts';
import { adoptPatch, claimObjects, releasePatch } from '../../src/daemonset/claim.ts';
import { getControllerOf, kruisePodReadyPatch } from '../../src/daemonset/pods.ts';
import { IMAGE_PULL_POD_DAEMONSET_UID_LABEL } from '../../src/daemonset/constants.ts';
import { isImagePullPod } from '../../src/daemonset/predownload.ts';
import { nodeAddAffects, nodeUpdateAffects } from '../../src/daemonset/eligibility.ts';
import { planDaemonSet } from '../../src/daemonset/plan.ts';
import { minDelay } from '../../src/daemonset/context.ts';
import { isStatusMilestone } from '../../src/daemonset/status.ts';
import type {
  AfterManage,
  ImagePreDownloadMode,
  KruisePodReadyGateMode,
  Plan,
  PodCreate,
  PodDelete,
} from '../../src/daemonset/plan-types.ts';
import { revisionMatches } from '../../src/daemonset/history.ts';
import type { BackoffState } from '../../src/daemonset/backoff.ts';
import { labelSelectorMatches } from '../../src/k8s/labels.ts';
import {
  isAlreadyExists,
  isConflict,
  isNotFound,
  resources,
  type KubeClient,
  type ResourceType,
} from '../../src/k8s/client.ts';
import { objectKey, type ControllerRevision, type KubeObject, type Node, type Pod } from '../../src/k8s/types.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { ResourceVersionExpectations, UIDTrackingControllerExpectations } from '../runtime/expectations.ts';
import { deletedObject, Informer, indexByControllerUID, type DeletedFinalStateUnknown } from '../runtime/informer.ts';
import type { Logger } from '../runtime/log.ts';
import { WorkQueue, runWorkers, type ReconcileResult } from '../runtime/workqueue.ts';

export const CONTROLLER_NAME = 'daemonset';
const CONTROLLER_UID_INDEX = 'controllerUID';

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
}

type MaybeTombstone<T> = T | DeletedFinalStateUnknown<T>;
/** The part of a plan that touches pods and status: the plan itself, or its afterManage part. */
type PlanStep = Plan | AfterManage;

/**
 * Caps per sync as upstream: the planner already limits creates and deletes to burstReplicas;
 * creates go out in slow-start batches (1, 2, 4, ...), stopping at the first failing batch so
 * a quota or admission problem costs one request, not hundreds.
 */
const SLOW_START_INITIAL_BATCH = 1;

/**
 * A sync that only observed progress (pods turning Ready or available: counters moving) writes status at most once
 * per DaemonSet in this interval. A sync that created, deleted or updated pods, and any milestone (isStatusMilestone:
 * generation observed, conditions flipping, ...), writes at once. A rollout of 1,000 pods otherwise writes status
 * after nearly every pod event, and those writes share the client's QPS with pod creates.
 */
const STATUS_PROGRESS_INTERVAL_MS = 1000;

/** Backoff of a pod's failed in-place update (per pod and revision): 1 s, doubling, at most 5 min. */
const IN_PLACE_RETRY_BASE_MS = 1000;
const IN_PLACE_RETRY_MAX_MS = 5 * 60 * 1000;

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
  private readonly failedPodsBackoff = new Map<string, BackoffState>();
  /** Pods (namespace/name) whose in-place update to `toHash` failed: not retried before `retryAt`. */
  private readonly inPlaceFailures = new Map<string, { toHash: string; failures: number; retryAt: number }>();
  /** When each DaemonSet's status was last written (STATUS_PROGRESS_INTERVAL_MS). */
  private readonly lastStatusWrite = new Map<string, number>();
  /** Informers read through `baseClient`; reconciles go through `client`, scoped to the leadership by runWorkers. */
  private readonly baseClient: KubeClient;
  private client: KubeClient;
  /** Aborts when this replica stops leading: no slow-start batch begins after that. */
  private workSignal: AbortSignal | undefined;
  private readonly recorder: EventRecorder;
  private readonly log: Logger;
  private readonly workers: number;
  private readonly imagePreDownload: ImagePreDownloadMode;
  private readonly kruisePodReadyGate: KruisePodReadyGateMode;

  constructor(opts: DaemonSetControllerOptions) {
    this.imagePreDownload = opts.imagePreDownload ?? 'pods';
    this.kruisePodReadyGate = opts.kruisePodReadyGate ?? 'always';
    this.baseClient = opts.client;
    this.client = opts.client;
    this.recorder = opts.recorder;
    this.log = opts.logger.child({ controller: CONTROLLER_NAME });
    this.workers = opts.workers ?? 3;
    const common = { client: opts.client, logger: opts.logger, ...opts.informerOverrides };
    this.daemonSets = new Informer<DaemonSet>({ ...common, name: 'daemonsets', type: resources.daemonSets });
    this.pods = new Informer<Pod>({
      ...common,
      name: 'pods',
      type: resources.pods,
      indexers: { [CONTROLLER_UID_INDEX]: indexByControllerUID },
    });
    this.nodes = new Informer<Node>({ ...common, name: 'nodes', type: resources.nodes });
    this.revisions = new Informer<ControllerRevision>({
      ...common,
      name: 'controllerrevisions',
      type: resources.controllerRevisions,
    });
    this.registerHandlers();
  }

  // ------------------------------------------------------------------------------------------
  // Event handlers: map to keys and enqueue; nothing else happens here.

  private registerHandlers(): void {
    const enqueueDs = (ds: MaybeTombstone<DaemonSet>) => this.queue.add(objectKey(deletedObject(ds)));
    this.daemonSets.addEventHandler({
      onAdd: enqueueDs,
      onUpdate: (_old, cur) => {
        this.statusVersions.observe(cur);
        enqueueDs(cur);
      },
      onDelete: (ds) => {
        const key = objectKey(deletedObject(ds));
        this.statusVersions.delete(deletedObject(ds));
        this.expectations.deleteExpectations(key);
        this.expectations.deleteExpectations(pullPodsKey(key));
        this.failedPodsBackoff.delete(key);
        this.queue.add(key);
      },
    });

    this.pods.addEventHandler({
      onAdd: (pod) => {
        if (this.pullPodEvent(pod, pod.metadata.deletionTimestamp ? 'deleted' : 'added')) return;
        if (pod.metadata.deletionTimestamp) {
          // Seen first already terminating (e.g. after a relist): count it as observed deleted.
          this.podDeleted(pod);
          return;
        }
        const owner = this.ownerKey(pod);
        if (owner) {
          this.expectations.creationObserved(owner);
          this.queue.add(owner);
        } else {
          this.enqueueMatching(pod);
        }
      },
      onUpdate: (old, cur) => {
        if (cur.metadata.resourceVersion === old.metadata.resourceVersion) return;
        if (this.pullPodEvent(cur, cur.metadata.deletionTimestamp ? 'deleted' : 'updated')) return;
        this.podVersions.observe(cur);
        if (cur.metadata.deletionTimestamp) this.podDeleted(cur);
        const oldOwner = this.ownerKey(old);
        const curOwner = this.ownerKey(cur);
        if (oldOwner && oldOwner !== curOwner) this.queue.add(oldOwner);
        if (curOwner) this.queue.add(curOwner);
        else if (labelsChanged(old, cur) || oldOwner) this.enqueueMatching(cur);
      },
      onDelete: (pod) => {
        if (this.pullPodEvent(deletedObject(pod), 'deleted')) return;
        this.podVersions.delete(deletedObject(pod));
        this.podDeleted(deletedObject(pod));
      },
    });

    // Heartbeats are most node events: only DaemonSets whose eligibility (or update-selector
    // match) on that node changes are enqueued, as kruise's nodeEventHandler.
    const enqueueIf = (affects: (ds: DaemonSet) => boolean) => {
      for (const ds of this.daemonSets.store.list()) if (affects(ds)) this.queue.add(objectKey(ds));
    };
    this.nodes.addEventHandler({
      onAdd: (node) => enqueueIf((ds) => nodeAddAffects(node, ds)),
      onUpdate: (old, cur) => enqueueIf((ds) => nodeUpdateAffects(old, cur, ds)),
      onDelete: () => this.enqueueAll(),
    });

    const enqueueRevisionOwner = (rev: MaybeTombstone<ControllerRevision>) => {
      const r = deletedObject(rev);
      const owner = this.ownerKey(r);
      if (owner) this.queue.add(owner);
      else this.enqueueMatching(r);
    };
    this.revisions.addEventHandler({
      onAdd: enqueueRevisionOwner,
      onUpdate: (_o, cur) => enqueueRevisionOwner(cur),
      onDelete: enqueueRevisionOwner,
    });
  }

  private podDeleted(pod: Pod): void {
    const owner = this.ownerKey(pod);
    if (!owner) return;
    this.expectations.deletionObservedOf(owner, objectKey(pod));
    this.queue.add(owner);
  }

  /**
   * Image pre-download pull pods are not daemon pods: their changes only count against the pull-pod
   * expectations and wake the DaemonSet they pull for. Returns whether `pod` is one.
   */
  private pullPodEvent(pod: Pod, what: 'added' | 'updated' | 'deleted'): boolean {
    if (!isImagePullPod(pod)) return false;
    const uid = pod.metadata.labels?.[IMAGE_PULL_POD_DAEMONSET_UID_LABEL];
    const ref = pod.metadata.ownerReferences?.find((r) => r.kind === 'DaemonSet' && r.uid === uid);
    const ds = ref && this.daemonSets.store.getByName(pod.metadata.namespace, ref.name);
    if (!ds || ds.metadata.uid !== uid) return true;
    const key = objectKey(ds);
    if (what === 'added') this.expectations.creationObserved(pullPodsKey(key));
    if (what === 'deleted') this.expectations.deletionObservedOf(pullPodsKey(key), objectKey(pod));
    this.queue.add(key);
    return true;
  }

  /** Key of the DaemonSet (ours) that controls obj, if it still exists with that UID. */
  private ownerKey(obj: KubeObject): string | undefined {
    const ref = getControllerOf(obj);
    if (!ref || ref.kind !== 'DaemonSet' || !ref.apiVersion.startsWith('apps.kruise.io/')) return undefined;
    const ds = this.daemonSets.store.getByName(obj.metadata.namespace, ref.name);
    if (!ds || ds.metadata.uid !== ref.uid) return undefined;
    return objectKey(ds);
  }

  /** Orphans: every DaemonSet in the namespace whose selector matches may adopt it. */
  private enqueueMatching(obj: KubeObject): void {
    for (const ds of this.daemonSets.store.byIndex('namespace', obj.metadata.namespace ?? '')) {
      if (labelSelectorMatches(ds.spec.selector, obj.metadata.labels)) this.queue.add(objectKey(ds));
    }
  }

  private enqueueAll(): void {
    for (const key of this.daemonSets.store.listKeys()) this.queue.add(key);
  }

  // ------------------------------------------------------------------------------------------
  // Run

  /** Starts the informers (also used by followers, so a new leader starts warm). */
  startInformers(signal: AbortSignal): Promise<void>[] {
    return [this.daemonSets, this.pods, this.nodes, this.revisions].map((i) => i.run(signal));
  }

  async waitForCacheSync(signal: AbortSignal): Promise<boolean> {
    const synced = await Promise.all(
      [this.daemonSets, this.pods, this.nodes, this.revisions].map((i) => i.waitForCacheSync(signal)),
    );
    return synced.every(Boolean);
  }

  /** Runs the workers until signal aborts. Call after waitForCacheSync, as the leader. */
  async runWorkers(signal: AbortSignal, writeFence?: () => string | undefined): Promise<void> {
    // Every request a reconcile makes carries the leadership's signal (aborted the moment it ends), and every
    // write is checked against the Lease right before it is sent: one writer at a time.
    this.client = this.baseClient.withScope({ signal, beforeWrite: writeFence });
    this.workSignal = signal;
    this.enqueueAll();
    await runWorkers(this.queue, this.workers, (key) => this.reconcile(key), {
      controller: CONTROLLER_NAME,
      signal,
      logger: this.log,
    });
  }

  // ------------------------------------------------------------------------------------------
  // Reconcile

  async reconcile(key: string): Promise<ReconcileResult | void> {
    const ds = this.daemonSets.store.get(key);
    if (!ds) {
      this.expectations.deleteExpectations(key);
      this.expectations.deleteExpectations(pullPodsKey(key));
      this.failedPodsBackoff.delete(key);
      this.lastStatusWrite.delete(key);
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

    const namespacePods = this.pods.store.byIndex('namespace', namespace);
    const imagePullPods = namespacePods.filter(
      (p) => p.metadata.labels?.[IMAGE_PULL_POD_DAEMONSET_UID_LABEL] === ds.metadata.uid,
    );
    const daemonPodCandidates = namespacePods.filter((p) => !isImagePullPod(p));
    const pods = await this.claim(ds, daemonPodCandidates, resources.pods, log);
    const allRevisions = this.revisions.store.byIndex('namespace', namespace);
    const revisions = await this.claim(ds, allRevisions, resources.controllerRevisions, log);
    const ownedNames = new Set(revisions.map((r) => r.metadata.name));
    const podVersionsSatisfied = pods.every((p) => this.podVersions.isSatisfied(p).satisfied);

    const plan = planDaemonSet({
      ds,
      nodes: this.nodes.store.listSorted(),
      pods,
      revisions,
      foreignRevisions: allRevisions.filter((r) => !ownedNames.has(r.metadata.name)),
      now: Date.now(),
      failedPodsBackoff: this.failedPodsBackoff.get(key) ?? {},
      expectationsSatisfied: this.expectations.satisfiedExpectations(key) && podVersionsSatisfied,
      // Pull pods in flight not yet in the cache: plan no pre-download until they are, or the parallelism
      // would be exceeded.
      imagePullPods,
      options: {
        imagePreDownload: this.expectations.satisfiedExpectations(pullPodsKey(key)) ? this.imagePreDownload : 'off',
        kruisePodReadyGate: this.kruisePodReadyGate,
      },
    });
    this.failedPodsBackoff.set(key, plan.failedPodsBackoff);
    log.debug(
      {
        stage: plan.stage,
        creates: plan.creates.length,
        deletes: plan.deletes.length,
        patches: plan.podPatches.length,
      },
      'planned sync',
    );
    const statusDeferredMs = await this.execute(ds, key, plan, log);
    const requeueAfterMs = minDelay(plan.requeueAfterMs, statusDeferredMs);
    return requeueAfterMs !== undefined ? { requeueAfterMs } : undefined;
  }

  /** Adopts matching orphans and releases owned objects that stopped matching (upstream ClaimPods). */
  private async claim<T extends KubeObject>(
    ds: DaemonSet,
    candidates: T[],
    type: typeof resources.pods | typeof resources.controllerRevisions,
    log: Logger,
  ): Promise<T[]> {
    const claimed = claimObjects(ds, candidates);
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
          if (isNotFound(err)) return undefined; // gone meanwhile: nothing to adopt
          throw err;
        }
      }),
    );
    await Promise.all(
      release.map(async (o) => {
        try {
          await this.client.patch(type, target(o), releasePatch(ds, o), { type: 'strategic' });
          log.info({ kind: type.kind, name: o.metadata.name }, 'released object that no longer matches the selector');
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }),
    );
    return [...owned, ...adopted.filter((o): o is Awaited<T> => o !== undefined)] as T[];
  }

  /**
   * Upstream's RecheckDeletionTimestamp: the cache may lag, so before adopting read the
   * DaemonSet from the apiserver; never adopt for one that is gone, replaced or being deleted.
   */
  private async canAdopt(ds: DaemonSet): Promise<boolean> {
    try {
      const fresh = await this.client.get<DaemonSet>(resources.daemonSets, {
        namespace: ds.metadata.namespace,
        name: ds.metadata.name!,
      });
      return fresh.metadata.uid === ds.metadata.uid && !fresh.metadata.deletionTimestamp;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Runs a plan; returns how long a deferred progress-only status write waits, if one was deferred. */
  private async execute(ds: DaemonSet, key: string, plan: Plan, log: Logger): Promise<number | undefined> {
    const namespace = ds.metadata.namespace ?? '';
    const errors: unknown[] = [];

    // 1. Revisions first: new pods carry the current hash, which must name an existing revision.
    for (const rev of plan.revisions.create) {
      try {
        await this.client.create(resources.controllerRevisions, rev, { namespace });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        // Same name: the same template (e.g. written by kruise-manager before us) or a hash
        // collision. On a collision raise collisionCount so the next sync hashes differently.
        const existing = await this.client.get<ControllerRevision>(resources.controllerRevisions, {
          namespace,
          name: rev.metadata.name!,
        });
        if (!revisionMatches(ds, existing)) {
          await this.client.patchStatus(
            resources.daemonSets,
            { namespace, name: ds.metadata.name! },
            { status: { collisionCount: (ds.status?.collisionCount ?? 0) + 1 } },
            { type: 'merge' },
          );
          throw new Error(`hash collision on ControllerRevision ${rev.metadata.name}; collisionCount raised`);
        }
      }
    }
    for (const rev of plan.revisions.update) {
      await this.client.update(resources.controllerRevisions, rev);
    }

    let step: PlanStep = plan;
    errors.push(...(await this.executePods(ds, key, step, log)));
    errors.push(...(await this.executeImagePreDownload(ds, plan, log)));
    errors.push(...(await this.executeImagePullJobs(ds, plan)));
    // Upstream goes on with the rolling update in the same sync when manage's requests all
    // failed (their expectations are then already observed); otherwise a persistent quota
    // error on a few nodes would stall the whole rollout.
    if (plan.afterManage && this.expectations.satisfiedExpectations(key)) {
      step = plan.afterManage;
      errors.push(...(await this.executePods(ds, key, step, log)));
    }

    // History cleanup after the pods moved on.
    const revisionDeletes = step === plan ? plan.revisions.delete : plan.afterManage!.revisionDeletes;
    for (const name of revisionDeletes) {
      try {
        await this.client.delete(resources.controllerRevisions, { namespace, name });
      } catch (err) {
        if (!isNotFound(err)) errors.push(err);
      }
    }

    for (const e of [...plan.events, ...(step === plan ? [] : step.events)]) {
      this.recorder.event(ds, e.type, e.reason, e.message);
    }

    // Status last, only when it changed; progress alone at most once per STATUS_PROGRESS_INTERVAL_MS.
    let statusDeferredMs: number | undefined;
    const sinceLastWrite = Date.now() - (this.lastStatusWrite.get(key) ?? 0);
    const actedOnPods = [plan, step].some((s) => s.creates.length + s.deletes.length + s.inPlaceUpdates.length > 0);
    if (
      step.statusChanged &&
      step.status &&
      !actedOnPods &&
      !isStatusMilestone(ds.status, step.status) &&
      sinceLastWrite < STATUS_PROGRESS_INTERVAL_MS
    ) {
      statusDeferredMs = STATUS_PROGRESS_INTERVAL_MS - sinceLastWrite;
    } else if (step.statusChanged && step.status) {
      this.lastStatusWrite.set(key, Date.now());
      try {
        // Only over the copy this sync planned on (resourceVersion precondition, as upstream's UpdateStatus): a
        // status never replaces a newer one, whoever wrote it.
        const written = await this.client.patchStatus<DaemonSet>(
          resources.daemonSets,
          { namespace, name: ds.metadata.name! },
          { metadata: { resourceVersion: ds.metadata.resourceVersion }, status: step.status },
          { type: 'merge' },
        );
        this.statusVersions.expect(written);
      } catch (err) {
        // Conflict: the DaemonSet changed since this sync's copy; its update event requeues the key.
        if (isConflict(err)) log.debug({ err: message(err) }, 'status not written: the DaemonSet changed');
        else if (!isNotFound(err)) errors.push(err);
      }
    }

    if (errors.length > 0) {
      throw new AggregateError(
        errors,
        `sync of ${key} had ${errors.length} error(s): ${errors.map(message).join('; ')}`,
      );
    }
    return statusDeferredMs;
  }

  /** Creates, deletes, pod patches and in-place updates of one plan step; returns the errors. */
  private async executePods(ds: DaemonSet, key: string, step: PlanStep, log: Logger): Promise<unknown[]> {
    const namespace = ds.metadata.namespace ?? '';
    const errors: unknown[] = [];
    // Expectations before any request, so watch events racing the responses are counted.
    if (step.creates.length > 0 || step.deletes.length > 0) {
      // expectDeletionsOf resets the counts, so creations are raised on top of it.
      this.expectations.expectDeletionsOf(
        key,
        step.deletes.map((d) => `${namespace}/${d.podName}`),
      );
      this.expectations.raiseExpectations(key, step.creates.length, 0);
    }
    const [createErrors, deleteErrors] = await Promise.all([
      this.createPods(ds, key, step.creates, log),
      this.deletePods(ds, key, step.deletes, log),
    ]);
    errors.push(...createErrors, ...deleteErrors);

    // Pod patches (readiness conditions, lifecycle labels) and in-place updates. The cache must
    // show what we wrote before the planner looks at these pods again.
    await Promise.all(
      step.podPatches.map(async (p) => {
        try {
          const patched = await this.client.patch<Pod>(resources.pods, { namespace, name: p.podName }, p.patch, {
            type: p.patchType,
            ...(p.subresource ? { subresource: p.subresource } : {}),
          });
          this.podVersions.expect(patched);
        } catch (err) {
          if (!isNotFound(err)) errors.push(err);
        }
      }),
    );
    await Promise.all(
      step.inPlaceUpdates.map(async (u) => {
        const podKey = `${namespace}/${u.podName}`;
        // A pod whose update to this revision was just refused waits out its backoff: retried at once, every
        // attempt would flip it NotReady and back, and the pod events of those writes would requeue at once.
        const failed = this.inPlaceFailures.get(podKey);
        if (failed?.toHash === u.toHash && Date.now() < failed.retryAt) {
          log.debug({ pod: u.podName, retryAt: failed.retryAt }, 'in-place update backing off after a failure');
          this.queue.addAfter(key, failed.retryAt - Date.now());
          return;
        }
        let conditionWritten = false;
        try {
          await this.client.patch(resources.pods, { namespace, name: u.podName }, u.statusPatch, {
            type: 'strategic',
            subresource: 'status',
          });
          conditionWritten = true;
          const patched = await this.client.patch<Pod>(resources.pods, { namespace, name: u.podName }, u.patch, {
            type: 'strategic',
          });
          this.podVersions.expect(patched);
          this.inPlaceFailures.delete(podKey);
          this.recorder.event(
            ds,
            'Normal',
            'SuccessfulUpdatePodInPlace',
            `successfully update pod ${u.podName} in-place`,
          );
        } catch (err) {
          if (isNotFound(err)) return;
          // Half applied (InPlaceUpdateReady False, pod unchanged, e.g. an admission controller refused the
          // image change): put the condition back, best effort; if that fails too, the next sync's refresh
          // sets it True (no update in flight), as Kruise's inplaceupdate Refresh.
          let outcome = '';
          if (conditionWritten) {
            try {
              const reverted = await this.client.patch<Pod>(
                resources.pods,
                { namespace, name: u.podName },
                u.revertStatusPatch,
                { type: 'strategic', subresource: 'status' },
              );
              this.podVersions.expect(reverted);
              outcome = '; pod left unchanged, its InPlaceUpdateReady condition restored';
            } catch (revertErr) {
              outcome = `; restoring its InPlaceUpdateReady condition failed too (${message(revertErr)}), the next sync sets it True`;
            }
          }
          const failures = (failed?.toHash === u.toHash ? failed.failures : 0) + 1;
          const retryInMs = Math.min(IN_PLACE_RETRY_BASE_MS * 2 ** (failures - 1), IN_PLACE_RETRY_MAX_MS);
          for (const [k, f] of this.inPlaceFailures) {
            if (f.retryAt + IN_PLACE_RETRY_MAX_MS < Date.now()) this.inPlaceFailures.delete(k); // pods long gone
          }
          this.inPlaceFailures.set(podKey, { toHash: u.toHash, failures, retryAt: Date.now() + retryInMs });
          this.recorder.event(
            ds,
            'Warning',
            'FailedUpdatePodInPlace',
            `failed to update pod ${u.podName} in-place(revision ${ds.metadata.name}-${u.toHash}): ${message(err)}${outcome}; retrying in ${Math.round(retryInMs / 1000)}s`,
          );
          errors.push(err);
        }
      }),
    );
    return errors;
  }

  /** Pull pods of the image pre-download: plain creates and deletes (no expectations: not daemon pods). */
  private async executeImagePreDownload(ds: DaemonSet, plan: Plan, log: Logger): Promise<unknown[]> {
    const namespace = ds.metadata.namespace ?? '';
    const pre = plan.imagePreDownload;
    if (!pre) return [];
    const key = pullPodsKey(objectKey(ds));
    if (pre.creates.length > 0 || pre.deletes.length > 0) {
      this.expectations.expectDeletionsOf(
        key,
        pre.deletes.map((d) => `${namespace}/${d.podName}`),
      );
      this.expectations.raiseExpectations(key, pre.creates.length, 0);
    }
    // Finished and cancelled pulls go first, so no more than `parallelism` pull pods ever exist at once.
    const deleted = await Promise.all(
      pre.deletes.map(async (d) => {
        try {
          await this.client.delete(
            resources.pods,
            { namespace, name: d.podName },
            d.uid ? { preconditions: { uid: d.uid } } : {},
          );
          log.info({ pod: d.podName, node: d.nodeName, reason: d.reason }, 'deleted pull pod');
          return undefined;
        } catch (err) {
          this.expectations.deletionObservedOf(key, `${namespace}/${d.podName}`);
          return isNotFound(err) ? undefined : err;
        }
      }),
    );
    const created = await Promise.all(
      pre.creates.map(async (c) => {
        try {
          const created = await this.client.create<Pod>(resources.pods, c.pod, { namespace });
          log.info({ pod: created.metadata.name, node: c.nodeName, hash: plan.hash }, 'pre-downloading images');
          return undefined;
        } catch (err) {
          this.expectations.creationObserved(key);
          this.recorder.event(ds, 'Warning', 'FailedPreDownloadImage', `Error creating pull pod: ${message(err)}`);
          return err;
        }
      }),
    );
    const results = [...deleted, ...created];
    return results.filter((e) => e !== undefined);
  }

  /** ImagePullJob mode: create the revision's jobs, or delete them all after the rollout; then label the revision. */
  private async executeImagePullJobs(ds: DaemonSet, plan: Plan): Promise<unknown[]> {
    const jobs = plan.imagePullJobs;
    if (!jobs) return [];
    const namespace = ds.metadata.namespace ?? '';
    const errors: unknown[] = [];
    for (const job of jobs.creates) {
      const image = (job as { spec?: { image?: string } }).spec?.image;
      try {
        await this.client.create(IMAGE_PULL_JOBS, job, { namespace });
        this.recorder.event(
          ds,
          'Normal',
          'CreatedImagePullJob',
          `created ImagePullJob ${job.metadata.name} for image: ${image}`,
        );
      } catch (err) {
        if (isAlreadyExists(err)) continue;
        errors.push(err);
        this.recorder.event(
          ds,
          'Warning',
          'FailedCreateImagePullJob',
          `failed to create ImagePullJob ${job.metadata.name} for image: ${image}: ${message(err)}`,
        );
      }
    }
    if (jobs.deleteAll) {
      try {
        const list = await this.client.list(IMAGE_PULL_JOBS, {
          namespace,
          labelSelector: `${IMAGE_PULL_POD_DAEMONSET_UID_LABEL}=${ds.metadata.uid}`,
        });
        for (const job of list.items) {
          await this.client.delete(IMAGE_PULL_JOBS, { namespace, name: job.metadata.name! }).catch((err: unknown) => {
            if (!isNotFound(err)) errors.push(err);
          });
        }
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length === 0 && jobs.revisionLabels) {
      try {
        await this.client.patch(
          resources.controllerRevisions,
          { namespace, name: jobs.revisionName },
          { metadata: { labels: jobs.revisionLabels } },
          { type: 'merge' },
        );
      } catch (err) {
        if (!isNotFound(err)) errors.push(err);
      }
    }
    return errors;
  }

  private async createPods(ds: DaemonSet, key: string, creates: PodCreate[], log: Logger): Promise<unknown[]> {
    const namespace = ds.metadata.namespace ?? '';
    const errors: unknown[] = [];
    const readinessPatches: Promise<void>[] = [];
    let remaining = creates;
    let batch = Math.min(remaining.length, SLOW_START_INITIAL_BATCH);
    while (batch > 0) {
      if (this.workSignal?.aborted) {
        // Leadership ended between batches: none of the rest is sent, so none will be observed.
        for (let i = 0; i < remaining.length; i++) this.expectations.creationObserved(key);
        errors.push(this.workSignal.reason);
        break;
      }
      const current = remaining.slice(0, batch);
      remaining = remaining.slice(batch);
      const results = await Promise.all(
        current.map(async (c) => {
          try {
            const created = await this.client.create<Pod>(resources.pods, c.pod, { namespace });
            this.recorder.event(ds, 'Normal', 'SuccessfulCreate', `Created pod: ${created.metadata.name}`);
            readinessPatches.push(this.markKruisePodReady(created, namespace, log));
            return undefined;
          } catch (err) {
            // The create did not happen: no watch event will lower the expectation for it.
            this.expectations.creationObserved(key);
            this.recorder.event(ds, 'Warning', 'FailedCreate', `Error creating: ${message(err)}`);
            log.warn({ node: c.nodeName, err: message(err) }, 'pod create failed');
            return err;
          }
        }),
      );
      const failed = results.filter((e) => e !== undefined);
      if (failed.length > 0) {
        errors.push(...failed);
        // Skipped creates will not be observed either.
        for (let i = 0; i < remaining.length; i++) this.expectations.creationObserved(key);
        break;
      }
      batch = Math.min(remaining.length, batch * 2);
    }
    await Promise.all(readinessPatches);
    return errors;
  }

  /**
   * The KruisePodReady rule (kruisePodReadyPatch, which the planner also applies at every sync) applied to a pod
   * right after its create, as Kruise's pod-readiness controller does per pod. Left to the next sync, every new
   * pod stays NotReady for its whole create batch plus a resync: the benchmark showed creation at 2x native for
   * that. Best effort: if this fails, the next sync plans the patch again.
   */
  private async markKruisePodReady(pod: Pod, namespace: string, log: Logger): Promise<void> {
    const patch = kruisePodReadyPatch(pod, Date.now());
    if (!patch) return;
    try {
      const patched = await this.client.patch<Pod>(
        resources.pods,
        { namespace, name: pod.metadata.name ?? '' },
        patch,
        {
          type: 'strategic',
          subresource: 'status',
        },
      );
      this.podVersions.expect(patched);
    } catch (err) {
      if (!isNotFound(err)) log.warn({ pod: pod.metadata.name, err: message(err) }, 'could not set KruisePodReady');
    }
  }

  private async deletePods(ds: DaemonSet, key: string, deletes: PodDelete[], log: Logger): Promise<unknown[]> {
    const namespace = ds.metadata.namespace ?? '';
    const results = await Promise.all(
      deletes.map(async (d) => {
        try {
          await this.client.delete(
            resources.pods,
            { namespace, name: d.podName },
            d.uid ? { preconditions: { uid: d.uid } } : {},
          );
          this.recorder.event(ds, 'Normal', 'SuccessfulDelete', `Deleted pod: ${d.podName}`);
          log.info({ pod: d.podName, node: d.nodeName, reason: d.reason }, 'deleted pod');
          return undefined;
        } catch (err) {
          this.expectations.deletionObservedOf(key, `${namespace}/${d.podName}`);
          if (isNotFound(err)) return undefined;
          this.recorder.event(ds, 'Warning', 'FailedDelete', `Error deleting: ${message(err)}`);
          return err;
        }
      }),
    );
    return results.filter((e) => e !== undefined);
  }
}

/** Kruise's ImagePullJob (only used with --image-predownload imagepulljob). */
const IMAGE_PULL_JOBS: ResourceType = {
  group: 'apps.kruise.io',
  version: 'v1alpha1',
  resource: 'imagepulljobs',
  namespaced: true,
  kind: 'ImagePullJob',
};

/** Expectations key of a DaemonSet's image pre-download pull pods (separate from its daemon pods'). */
function pullPodsKey(key: string): string {
  return `${key}#image-predownload`;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function labelsChanged(a: KubeObject, b: KubeObject): boolean {
  return JSON.stringify(a.metadata.labels ?? {}) !== JSON.stringify(b.metadata.labels ?? {});
}
