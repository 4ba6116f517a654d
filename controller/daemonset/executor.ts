// Executes one sync's plan (src/daemonset/plan.ts) against the apiserver, in upstream's order
// (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/daemon_controller.go, syncDaemonSet):
// revisions, pod creates and deletes (syncNodes) with expectations and events, pod patches and in-place updates,
// history cleanup, planner events, status. It decides nothing the planner or a pure rule (statusWriteAction,
// inPlaceRetryWaitMs, slowStartBatches) does not decide.
import type { DaemonSet } from '../../src/api/types.ts';
import type { DaemonSetAccess } from './api-version.ts';
import { kruisePodReadyPatch } from '../../src/daemonset/pods.ts';
import { IMAGE_PULL_POD_DAEMONSET_UID_LABEL, RESIZE_REFUSED_ANNOTATION } from '../../src/daemonset/constants.ts';
import { slowStartBatches } from '../../src/daemonset/manage.ts';
import { revisionMatches } from '../../src/daemonset/history.ts';
import { statusWriteAction } from '../../src/daemonset/status.ts';
import {
  inPlaceFailureExpired,
  inPlaceRetryWaitMs,
  nextInPlaceFailure,
  type InPlaceFailure,
} from '../../src/daemonset/backoff.ts';
import {
  CANARY_FAILED_REASON,
  CANARY_PAUSED_REASON,
  CANARY_PROMOTED_REASON,
  CANARY_ROLLED_BACK_REASON,
  CANARY_STARTED_REASON,
  CREATED_IMAGE_PULL_JOB_REASON,
  FAILED_CREATE_IMAGE_PULL_JOB_REASON,
  FAILED_CREATE_REASON,
  FAILED_DELETE_REASON,
  FAILED_PRE_DOWNLOAD_IMAGE_REASON,
  FAILED_UPDATE_POD_IN_PLACE_REASON,
  SUCCESSFUL_CREATE_REASON,
  SUCCESSFUL_DELETE_REASON,
  SUCCESSFUL_UPDATE_POD_IN_PLACE_REASON,
  SUCCESSFUL_RESIZE_POD_IN_PLACE_REASON,
  RESIZE_INFEASIBLE_REASON,
  RESIZE_NOT_POSSIBLE_REASON,
} from '../../src/daemonset/events.ts';
import type {
  AfterManage,
  InPlaceUpdate,
  Plan,
  PodCreate,
  PodDelete,
  SettingStatusWrite,
} from '../../src/daemonset/plan-types.ts';
import {
  ApiError,
  isAbortError,
  isAlreadyExists,
  isConflict,
  isNotFound,
  WriteRefusedError,
} from '../../src/k8s/errors.ts';
import { resources, type ResourceType } from '../../src/k8s/resources.ts';
import { type KubeClient } from '../../src/k8s/client.ts';
import { objectKey, type ControllerRevision, type Pod } from '../../src/k8s/types.ts';
import { errorMessage as message, ignoreNotFound, newAggregate } from '../runtime/errors.ts';
import type { EventRecorder } from '../../src/k8s/events.ts';
import type { ResourceVersionExpectations, UIDTrackingControllerExpectations } from '../runtime/expectations.ts';
import { monotonic } from '../../src/k8s/clock.ts';
import type { Logger } from '../../src/k8s/log.ts';
import { slowStartBatch } from '../runtime/slowstart.ts';
import type { DaemonSetMetrics } from './metrics.ts';
import type { WorkQueue } from '../../src/k8s/workqueue.ts';

/** The part of a plan that touches pods and status: the plan itself, or its afterManage part. */
type PlanStep = Plan | AfterManage;

const CANARY_EVENT_REASONS: ReadonlySet<string> = new Set([
  CANARY_STARTED_REASON,
  CANARY_PAUSED_REASON,
  CANARY_PROMOTED_REASON,
  CANARY_FAILED_REASON,
  CANARY_ROLLED_BACK_REASON,
]);

/** Upstream's SlowStartInitialBatchSize: creates go out in batches of 1, 2, 4, ... (slowStartBatches). */
const SLOW_START_INITIAL_BATCH = 1;

/** What the executor shares with the controller. */
export interface SyncExecutorOptions {
  /** The client of the current leadership (runWorkers scopes it: its signal, the Lease fence before every write). */
  client: () => KubeClient;
  /** Aborts when this replica stops leading: no slow-start batch begins after that. */
  workSignal: () => AbortSignal | undefined;
  recorder: EventRecorder;
  expectations: UIDTrackingControllerExpectations;
  podVersions: ResourceVersionExpectations;
  statusVersions: ResourceVersionExpectations;
  /**
   * The KruisePodReady True patch sent right after each create (markKruisePodReady). Apart from podVersions: it holds
   * back no sync, only the planning of the same write again (awaitingReadinessWrite, podsAwaitingWrites).
   */
  readinessWrites: ResourceVersionExpectations;
  /** For in-place updates in backoff: the DaemonSet is requeued when the backoff ends. */
  queue: WorkQueue;
  /** Counts the daemon pod creates, deletes and in-place updates by result (not the image pull pods). */
  metrics?: DaemonSetMetrics;
  /** The version DaemonSet status is written in (the informer's). */
  daemonSets: DaemonSetAccess;
}

/**
 * Error lists below hold one entry per request that may have failed; `undefined` is no error (as a nil error in a
 * Go slice handed to utilerrors.NewAggregate), so `errors.push(ignoreNotFound(err))` needs no branch.
 */
/** What the failure event of a refused resize ends with once the pod is marked for a recreate. */
const RECREATE_INSTEAD = '; the pod is recreated instead';

export class SyncExecutor {
  /** Pods (namespace/name) whose in-place update failed: not retried before their backoff ends. */
  private readonly inPlaceFailures = new Map<string, InPlaceFailure>();
  /** When each DaemonSet's status was last written by this process (statusWriteAction). */
  private readonly lastStatusWrite = new Map<string, number>();
  /** KruisePodReady patches right after a create still in flight, by pod key; the patch of each. */
  private readonly readinessInFlight = new Map<string, Promise<void>>();

  constructor(private readonly o: SyncExecutorOptions) {}

  private get client(): KubeClient {
    return this.o.client();
  }

  /** Drops what is kept for a DaemonSet that is gone. */
  forget(key: string): void {
    this.lastStatusWrite.delete(key);
  }

  /** Whether our KruisePodReady patch right after this pod's create is in flight, or newer than this cached copy. */
  awaitingReadinessWrite(pod: Pod): boolean {
    // Asked for every pod of every sync: the key is made only while some patch is in flight.
    return (
      (this.readinessInFlight.size > 0 && this.readinessInFlight.has(objectKey(pod))) ||
      !this.o.readinessWrites.isSatisfied(pod).satisfied
    );
  }

  /** Whether any KruisePodReady patch is in flight or not yet in the cache (awaitingReadinessWrite of no pod is true else). */
  anyReadinessWriteAwaited(): boolean {
    return this.readinessInFlight.size > 0 || this.o.readinessWrites.size > 0;
  }

  /** The keys (namespace/name) of the pods awaitingReadinessWrite may be true of; of any other it is false. */
  *readinessAwaitedKeys(): IterableIterator<string> {
    yield* this.readinessInFlight.keys();
    yield* this.o.readinessWrites.objectKeys();
  }

  /** Resolves when the KruisePodReady patches in flight now have been answered (tests; they never reject). */
  async readinessWritesSettled(): Promise<void> {
    await Promise.all(this.readinessInFlight.values());
  }

  /** Runs a plan; returns how long a deferred progress-only status write waits, if one was deferred. */
  async execute(ds: DaemonSet, key: string, plan: Plan, log: Logger): Promise<number | undefined> {
    const namespace = ds.metadata.namespace ?? '';
    const errors: unknown[] = [];

    // 1. Revisions first: new pods carry the current hash, which must name an existing revision.
    for (const rev of plan.revisions.create) await this.createRevision(ds, rev);
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
    if (plan.afterManage && this.o.expectations.satisfiedExpectations(key)) {
      step = plan.afterManage;
      errors.push(...(await this.executePods(ds, key, step, log)));
    }

    errors.push(...(await this.writeSettingStatuses(plan.settingStatuses ?? [])));

    // History cleanup after the pods moved on.
    const revisionDeletes = step === plan ? plan.revisions.delete : plan.afterManage!.revisionDeletes;
    for (const name of revisionDeletes) {
      await this.client.delete(resources.controllerRevisions, { namespace, name }).catch((err: unknown) => {
        errors.push(ignoreNotFound(err));
      });
    }

    for (const e of [...plan.events, ...(step === plan ? [] : step.events)]) {
      // A canary's steps are the rollout's milestones, a handful per revision: they get a spam-filter bucket of their
      // own (a rollout's pod creates and deletes use up the object's burst of 25 at once), and a log line too.
      // Why a pod is recreated rather than resized (one per pod) get one too: the recreates' own events would
      // otherwise use up the burst before them.
      const canary = CANARY_EVENT_REASONS.has(e.reason);
      const resize = e.reason === RESIZE_NOT_POSSIBLE_REASON || e.reason === RESIZE_INFEASIBLE_REASON;
      const spamGroup = canary ? 'canary' : resize ? 'resize' : undefined;
      this.o.recorder.event(e.about ?? ds, e.type, e.reason, e.message, spamGroup ? { spamGroup } : {});
      if (spamGroup) log[e.type === 'Warning' ? 'warn' : 'info']({ reason: e.reason }, e.message);
    }

    // Status last, by the status-write rule.
    const lastWrite = this.lastStatusWrite.get(key);
    const write = statusWriteAction({
      stored: ds.status,
      status: step.status,
      statusChanged: step.statusChanged,
      actedOnPods: [plan, step].some((s) => s.creates.length + s.deletes.length + s.inPlaceUpdates.length > 0),
      sinceLastWriteMs: lastWrite === undefined ? undefined : monotonic() - lastWrite,
    });
    if (write.action === 'write') errors.push(await this.writeStatus(ds, key, step, log));

    const aggregate = newAggregate(errors, `sync of ${key}`);
    if (aggregate) throw aggregate;
    return write.action === 'defer' ? write.afterMs : undefined;
  }

  /**
   * A revision of the same name may exist already: the same template (e.g. written by kruise-manager before us) or
   * a hash collision. On a collision raise collisionCount so the next sync hashes differently.
   */
  private async createRevision(ds: DaemonSet, rev: ControllerRevision): Promise<void> {
    const namespace = ds.metadata.namespace ?? '';
    try {
      await this.client.create(resources.controllerRevisions, rev, { namespace });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await this.client.get<ControllerRevision>(resources.controllerRevisions, {
        namespace,
        name: rev.metadata.name!,
      });
      if (!revisionMatches(ds, existing)) {
        await this.client.patchStatus(
          this.o.daemonSets.type,
          { namespace, name: ds.metadata.name! },
          { status: { collisionCount: (ds.status?.collisionCount ?? 0) + 1 } },
          { type: 'merge' },
        );
        throw new Error(`hash collision on ControllerRevision ${rev.metadata.name}; collisionCount raised`);
      }
    }
  }

  /**
   * The statuses of the DaemonSet's settings that changed, each over the copy planned on (a Conflict means a newer
   * setting, whose event requeues the DaemonSet); returns the errors.
   */
  private async writeSettingStatuses(writes: readonly SettingStatusWrite[]): Promise<unknown[]> {
    return Promise.all(
      writes.map(async ({ setting, status }) => {
        try {
          await this.client.patchStatus(
            resources.daemonSetSettings,
            { namespace: setting.metadata.namespace ?? '', name: setting.metadata.name! },
            { metadata: { resourceVersion: setting.metadata.resourceVersion }, status },
            { type: 'merge' },
          );
          return undefined;
        } catch (err) {
          return isConflict(err) ? undefined : ignoreNotFound(err);
        }
      }),
    );
  }

  /** Settings whose DaemonSet is gone: Valid False (DaemonSetNotFound), where not said yet. Errors are logged. */
  async writeMissingDaemonSetSettings(writes: readonly SettingStatusWrite[], log: Logger): Promise<void> {
    for (const err of await this.writeSettingStatuses(writes)) {
      if (err) log.warn({ err }, 'writing the status of a DaemonSetSetting failed');
    }
  }

  /** Writes the step's status over the copy this sync planned on; returns the error, if any. */
  private async writeStatus(ds: DaemonSet, key: string, step: PlanStep, log: Logger): Promise<unknown> {
    this.lastStatusWrite.set(key, monotonic());
    try {
      // Only over the copy this sync planned on (resourceVersion precondition, as upstream's UpdateStatus): a
      // status never replaces a newer one, whoever wrote it. Written in the version the informer reads.
      const written = await this.client.patchStatus<DaemonSet>(
        this.o.daemonSets.type,
        { namespace: ds.metadata.namespace ?? '', name: ds.metadata.name! },
        {
          metadata: { resourceVersion: ds.metadata.resourceVersion },
          status: step.status && this.o.daemonSets.statusOut(step.status),
        },
        { type: 'merge' },
      );
      this.o.statusVersions.expect(written);
      return undefined;
    } catch (err) {
      // Conflict: the DaemonSet changed since this sync's copy; its update event requeues the key.
      if (!isConflict(err)) return ignoreNotFound(err);
      log.debug({ err: message(err) }, 'status not written: the DaemonSet changed');
      return undefined;
    }
  }

  /** Creates, deletes, pod patches and in-place updates of one plan step; returns the errors. */
  private async executePods(ds: DaemonSet, key: string, step: PlanStep, log: Logger): Promise<unknown[]> {
    const namespace = ds.metadata.namespace ?? '';
    this.expectCreatesAndDeletes(key, namespace, step);
    const [createErrors, deleteErrors] = await Promise.all([
      this.createPods(ds, key, step.creates, log),
      this.deletePods(ds, key, step.deletes, log),
    ]);

    // Pod patches (readiness conditions, lifecycle labels) and in-place updates. The cache must
    // show what we wrote before the planner looks at these pods again.
    const patchErrors = await Promise.all(
      step.podPatches.map(async (p) => {
        try {
          const patched = await this.client.patch<Pod>(resources.pods, { namespace, name: p.podName }, p.patch, {
            type: p.patchType,
            ...(p.subresource ? { subresource: p.subresource } : {}),
          });
          this.o.podVersions.expect(patched);
          return undefined;
        } catch (err) {
          return ignoreNotFound(err);
        }
      }),
    );
    const inPlaceErrors = await Promise.all(step.inPlaceUpdates.map((u) => this.updatePodInPlace(ds, key, u, log)));
    return [...createErrors, ...deleteErrors, ...patchErrors, ...inPlaceErrors];
  }

  /**
   * Expectations before any request, so watch events racing the responses are counted. expectDeletionsOf resets the
   * counts, so creations are raised on top of it.
   */
  private expectCreatesAndDeletes(
    key: string,
    namespace: string,
    step: { creates: readonly unknown[]; deletes: readonly { podName: string }[] },
  ): void {
    if (step.creates.length === 0 && step.deletes.length === 0) return;
    this.o.expectations.expectDeletionsOf(
      key,
      step.deletes.map((d) => `${namespace}/${d.podName}`),
    );
    this.o.expectations.raiseExpectations(key, step.creates.length, 0);
  }

  /**
   * One in-place update: InPlaceUpdateReady False, then the pod patch. A refused patch (e.g. an admission controller
   * refused the image change) puts the condition back and backs off (inPlaceRetryWaitMs). Returns the error.
   */
  private async updatePodInPlace(ds: DaemonSet, key: string, u: InPlaceUpdate, log: Logger): Promise<unknown> {
    const namespace = ds.metadata.namespace ?? '';
    const podKey = `${namespace}/${u.podName}`;
    const failed = this.inPlaceFailures.get(podKey);
    const waitMs = inPlaceRetryWaitMs(failed, u.toHash, monotonic());
    if (waitMs > 0) {
      log.debug({ pod: u.podName, retryAt: failed?.retryAt }, 'in-place update backing off after a failure');
      this.o.queue.addAfter(key, waitMs);
      return undefined;
    }
    let conditionWritten = false;
    const operation = u.kind === 'resize' ? 'resize' : 'inplace_update';
    try {
      if (u.statusPatch !== undefined) {
        await this.client.patch(resources.pods, { namespace, name: u.podName }, u.statusPatch, {
          type: 'strategic',
          subresource: 'status',
        });
        conditionWritten = true;
      }
      // A resize goes to pods/resize, which drops every other change (https://kubernetes.io/docs/tasks/configure-pod-container/resize-container-resources/).
      const patched = await this.client.patch<Pod>(resources.pods, { namespace, name: u.podName }, u.patch, {
        type: 'strategic',
        ...(u.kind === 'resize' ? { subresource: 'resize' } : {}),
      });
      this.o.podVersions.expect(patched);
      this.inPlaceFailures.delete(podKey);
      this.o.metrics?.podOperation(ds, operation, 'success');
      if (u.kind === 'resize')
        this.o.recorder.event(
          ds,
          'Normal',
          SUCCESSFUL_RESIZE_POD_IN_PLACE_REASON,
          `resized pod ${u.podName} in place (revision ${ds.metadata.name}-${u.toHash}); the kubelet applies the new resources`,
        );
      else
        this.o.recorder.event(
          ds,
          'Normal',
          SUCCESSFUL_UPDATE_POD_IN_PLACE_REASON,
          `successfully update pod ${u.podName} in-place`,
        );
      return undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined; // the pod is gone: nothing to put back or retry (nor to count)
      this.o.metrics?.podOperation(ds, operation, 'error');
      // Half applied (InPlaceUpdateReady False, pod unchanged): put the condition back, best effort; if that fails
      // too, the next sync's refresh sets it True (no update in flight), as Kruise's inplaceupdate Refresh.
      let outcome = '';
      if (conditionWritten && u.revertStatusPatch !== undefined) {
        try {
          const reverted = await this.client.patch<Pod>(
            resources.pods,
            { namespace, name: u.podName },
            u.revertStatusPatch,
            { type: 'strategic', subresource: 'status' },
          );
          this.o.podVersions.expect(reverted);
          outcome = '; pod left unchanged, its InPlaceUpdateReady condition restored';
        } catch (revertErr) {
          outcome = `; restoring its InPlaceUpdateReady condition failed too (${message(revertErr)}), the next sync sets it True`;
        }
      }
      // The apiserver refused the resize itself (403, 422: the node's allocatable, the QoS class, RBAC): it will
      // refuse it again, so the pod says so and the planner recreates it instead (inplace.ts, inPlaceStep).
      if (u.kind === 'resize' && err instanceof ApiError && (err.code === 403 || err.code === 422))
        outcome = await this.recordResizeRefused(namespace, u, err);
      const now = monotonic();
      const next = nextInPlaceFailure(failed, u.toHash, now);
      for (const [k, f] of this.inPlaceFailures) if (inPlaceFailureExpired(f, now)) this.inPlaceFailures.delete(k);
      this.inPlaceFailures.set(podKey, next);
      this.o.recorder.event(
        ds,
        'Warning',
        FAILED_UPDATE_POD_IN_PLACE_REASON,
        `failed to update pod ${u.podName} in-place(revision ${ds.metadata.name}-${u.toHash}): ${message(err)}${outcome}` +
          (outcome === RECREATE_INSTEAD ? '' : `; retrying in ${Math.round((next.retryAt - now) / 1000)}s`),
      );
      return err;
    }
  }

  /** RESIZE_REFUSED_ANNOTATION on the pod; returns what the failure event adds (RECREATE_INSTEAD once marked). */
  private async recordResizeRefused(namespace: string, u: InPlaceUpdate, err: ApiError): Promise<string> {
    const value = JSON.stringify({ revision: u.toHash, message: err.status?.message ?? err.message });
    try {
      const patched = await this.client.patch<Pod>(
        resources.pods,
        { namespace, name: u.podName },
        { metadata: { annotations: { [RESIZE_REFUSED_ANNOTATION]: value } } },
        { type: 'merge' },
      );
      this.o.podVersions.expect(patched);
      return RECREATE_INSTEAD;
    } catch (annotateErr) {
      return `; marking it for a recreate failed too (${message(annotateErr)})`;
    }
  }

  /** Pull pods of the image pre-download: plain creates and deletes, counted under their own expectations key. */
  private async executeImagePreDownload(ds: DaemonSet, plan: Plan, log: Logger): Promise<unknown[]> {
    const namespace = ds.metadata.namespace ?? '';
    const pre = plan.imagePreDownload;
    if (!pre) return [];
    const key = pullPodsKey(objectKey(ds));
    this.expectCreatesAndDeletes(key, namespace, pre);
    // Finished and cancelled pulls go first, so no more than `parallelism` pull pods ever exist at once.
    const deleted = await Promise.all(
      pre.deletes.map(async (d) => {
        try {
          await this.deletePod(namespace, d);
          log.info({ pod: d.podName, node: d.nodeName, reason: d.reason }, 'deleted pull pod');
          return undefined;
        } catch (err) {
          this.o.expectations.deletionObservedOf(key, `${namespace}/${d.podName}`);
          return ignoreNotFound(err);
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
          this.o.expectations.creationObserved(key);
          this.o.recorder.event(
            ds,
            'Warning',
            FAILED_PRE_DOWNLOAD_IMAGE_REASON,
            `Error creating pull pod: ${message(err)}`,
          );
          return err;
        }
      }),
    );
    return [...deleted, ...created];
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
        this.o.recorder.event(
          ds,
          'Normal',
          CREATED_IMAGE_PULL_JOB_REASON,
          `created ImagePullJob ${job.metadata.name} for image: ${image}`,
        );
      } catch (err) {
        if (isAlreadyExists(err)) continue;
        errors.push(err);
        this.o.recorder.event(
          ds,
          'Warning',
          FAILED_CREATE_IMAGE_PULL_JOB_REASON,
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
            errors.push(ignoreNotFound(err));
          });
        }
      } catch (err) {
        errors.push(err);
      }
    }
    if (!errors.some((e) => e !== undefined) && jobs.revisionLabels) {
      await this.client
        .patch(
          resources.controllerRevisions,
          { namespace, name: jobs.revisionName },
          { metadata: { labels: jobs.revisionLabels } },
          { type: 'merge' },
        )
        .catch((err: unknown) => errors.push(ignoreNotFound(err)));
    }
    return errors;
  }

  /**
   * Creates in slow-start batches (slowStartBatch): stops at the first failing batch, and before a batch once the
   * leadership ended. A create that was not made (failed or never sent) will never be observed by a watch event, so
   * its expectation is lowered here.
   */
  private async createPods(ds: DaemonSet, key: string, creates: PodCreate[], log: Logger): Promise<unknown[]> {
    const namespace = ds.metadata.namespace ?? '';
    const { errors, notStarted } = await slowStartBatch(
      creates,
      slowStartBatches(creates.length, SLOW_START_INITIAL_BATCH),
      async (c) => {
        try {
          const created = await this.client.create<Pod>(resources.pods, c.pod, { namespace });
          this.o.metrics?.podOperation(ds, 'create', 'success');
          this.o.recorder.event(ds, 'Normal', SUCCESSFUL_CREATE_REASON, `Created pod: ${created.metadata.name}`);
          this.markKruisePodReady(created, namespace, log);
        } catch (err) {
          this.o.expectations.creationObserved(key);
          this.o.metrics?.podOperation(ds, 'create', 'error');
          this.o.recorder.event(ds, 'Warning', FAILED_CREATE_REASON, `Error creating: ${message(err)}`);
          log.warn({ node: c.nodeName, err: message(err) }, 'pod create failed');
          throw err;
        }
      },
      this.o.workSignal(),
    );
    for (let i = 0; i < notStarted; i++) this.o.expectations.creationObserved(key);
    return errors;
  }

  /**
   * The KruisePodReady rule (kruisePodReadyPatch, which the planner also applies at every sync) applied to a pod
   * right after its create, as Kruise's pod-readiness controller does per pod. Left to the next sync, every new
   * pod stays NotReady for its whole create batch plus a resync: the benchmark showed creation at 2x native for
   * that. Nothing waits for it, as Kruise's DaemonSet controller does not wait for its pod-readiness controller:
   * not the next slow-start batch, not the end of the sync, not the next sync (it is in readinessWrites, not in
   * podVersions); while it is in flight or not yet in the cache, no sync plans it again (podsAwaitingWrites). Best
   * effort: if it fails, the next sync plans it again.
   */
  private markKruisePodReady(pod: Pod, namespace: string, log: Logger): void {
    const patch = kruisePodReadyPatch(pod, Date.now());
    if (!patch) return;
    const podKey = objectKey(pod);
    // Only the name goes into the closure below, so the created pod (the whole decoded answer, managedFields and all)
    // is not kept for as long as the patch is in flight.
    const name = pod.metadata.name ?? '';
    const sent = (async () => {
      try {
        const patched = await this.client.patch<Pod>(
          resources.pods,
          { namespace, name },
          patch,
          // Ahead of the create batch's queued creates (RequestThrottle), so it reaches the pod before the kubelet
          // starts it and the kubelet writes the pod's status once, Ready, instead of twice.
          { type: 'strategic', subresource: 'status', priority: 'high' },
        );
        this.o.readinessWrites.expect(patched);
      } catch (err) {
        // Gone, or this replica stopped leading (the request aborted, or refused by the write fence): nothing to say.
        const stopped = this.o.workSignal()?.aborted || isAbortError(err) || err instanceof WriteRefusedError;
        if (ignoreNotFound(err) && !stopped) log.warn({ pod: name, err: message(err) }, 'could not set KruisePodReady');
      } finally {
        this.readinessInFlight.delete(podKey);
      }
    })();
    this.readinessInFlight.set(podKey, sent);
  }

  private async deletePods(ds: DaemonSet, key: string, deletes: PodDelete[], log: Logger): Promise<unknown[]> {
    const namespace = ds.metadata.namespace ?? '';
    return Promise.all(
      deletes.map(async (d) => {
        try {
          await this.deletePod(namespace, d);
          this.o.metrics?.podOperation(ds, 'delete', 'success');
          this.o.recorder.event(ds, 'Normal', SUCCESSFUL_DELETE_REASON, `Deleted pod: ${d.podName}`);
          log.info({ pod: d.podName, node: d.nodeName, reason: d.reason }, 'deleted pod');
          return undefined;
        } catch (err) {
          // The delete did not happen (or the pod was gone): no watch event will lower the expectation for it.
          this.o.expectations.deletionObservedOf(key, `${namespace}/${d.podName}`);
          const failed = ignoreNotFound(err);
          // NotFound: the pod is gone, which is what the delete was for (not an error in upstream's syncNodes either).
          this.o.metrics?.podOperation(ds, 'delete', failed ? 'error' : 'success');
          if (failed) this.o.recorder.event(ds, 'Warning', FAILED_DELETE_REASON, `Error deleting: ${message(failed)}`);
          return failed;
        }
      }),
    );
  }

  /** Deletes a pod, only the one the plan saw when it knows its UID. */
  private deletePod(namespace: string, d: { podName: string; uid?: string }): Promise<unknown> {
    return this.client.delete(
      resources.pods,
      { namespace, name: d.podName },
      d.uid ? { preconditions: { uid: d.uid } } : {},
    );
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
export function pullPodsKey(key: string): string {
  return `${key}#image-predownload`;
}
