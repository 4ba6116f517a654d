// The storage migration, run by the leader (at once, then whenever the CRD shows it is due): every DaemonSet stored
// in a version other than the
// CRD's storage version (v1alpha1 objects from before v1beta1 was served, or the other version after
// `crd.storageVersion` changed) is rewritten in the storage version, then the CRD's status.storedVersions is set
// to that version alone, as the Kubernetes documentation prescribes before a version may stop being served
// (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#upgrade-existing-objects-to-a-new-stored-version)
// and as kube-storage-version-migrator does (https://github.com/kubernetes-sigs/kube-storage-version-migrator).
//
// A rewrite is a no-op update: the object as read in the storage version, PUT back with its resourceVersion. The
// apiserver encodes it in the storage version; for an object already stored so the bytes are equal and it writes
// nothing (etcd3 store's GuaranteedUpdate skips an unchanged object:
// https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go).
// So the migration is idempotent: a run cut short (leadership lost, a crash) is simply run again. A Conflict means
// someone wrote the object meanwhile, which stored it in the storage version too; it is read again and rewritten
// anyway (cheap, and exact). When storedVersions is already [storage version], nothing is listed at all.
//
// An object the apiserver refuses to rewrite (a 4xx other than Conflict and Too Many Requests: admission refuses
// what it holds, say) is skipped, with a Warning event on it, a metric and a Warning log, and the rest go on; the
// CRD's storedVersions is then left as it is (not every object is in the storage version) and the run is tried
// again at the next look (recheckIntervalMs). Anything else (the apiserver or the conversion webhook unreachable)
// fails the whole run, which is retried with backoff.
import { setTimeout as sleep } from 'node:timers/promises';
import { API_GROUP, KIND, PLURAL, RESOURCE } from '../src/api/constants.ts';
import { isAbortError, isConflict, isNotFound } from '../src/k8s/errors.ts';
import { resources, type ResourceType } from '../src/k8s/resources.ts';
import { type KubeClient } from '../src/k8s/client.ts';
import { ApiError } from '../src/k8s/errors.ts';
import { objectKey, type KubeObject } from '../src/k8s/types.ts';
import type { EventRecorder } from '../src/k8s/events.ts';
import { storageMigrationSkipped } from './runtime/metrics.ts';
import { errorMessage } from './runtime/errors.ts';
import { monotonic } from '../src/k8s/clock.ts';
import type { Logger } from '../src/k8s/log.ts';

/** The part of a CustomResourceDefinition the migration reads. */
export interface CrdVersions {
  metadata: { resourceVersion?: string };
  spec: { versions: { name: string; storage?: boolean }[]; conversion?: { strategy?: string } };
  status?: { storedVersions?: string[] };
}

export type StorageMigrationPlan =
  | { action: 'skip'; storageVersion: string; storedVersions: string[] }
  | { action: 'migrate'; storageVersion: string; storedVersions: string[] }
  /** Not yet: the objects would be rewritten unconverted. */
  | { action: 'wait'; storageVersion: string; storedVersions: string[]; reason: string };

/**
 * Whether the stored objects need rewriting: not when status.storedVersions already lists the storage version alone
 * (every object was written in it since the storage version was set, or migrated). Not yet while the CRD converts
 * without a webhook (strategy None, e.g. applied by hand before a `--webhook-host` manager registered its URL): the
 * apiserver would then only relabel the apiVersion, and a rewrite would store v1alpha1-only data (Surging, the
 * progressive-create annotation, daemonSetHash) as v1beta1, where it means nothing or is pruned. Throws for a CRD
 * without exactly one storage version (the apiserver refuses such a CRD; the message says what was read).
 */
export function planStorageMigration(crd: CrdVersions): StorageMigrationPlan {
  const storage = crd.spec.versions.filter((v) => v.storage === true).map((v) => v.name);
  if (storage.length !== 1) {
    throw new Error(`CRD ${RESOURCE} has ${storage.length} storage versions (${storage.join(', ') || 'none'})`);
  }
  const storageVersion = storage[0]!;
  const storedVersions = crd.status?.storedVersions ?? [];
  if (storedVersions.length === 1 && storedVersions[0] === storageVersion) {
    return { action: 'skip', storageVersion, storedVersions };
  }
  const strategy = crd.spec.conversion?.strategy ?? 'None';
  if (strategy !== 'Webhook') {
    const reason = `the CRD converts with strategy ${strategy}, not through the conversion webhook`;
    return { action: 'wait', storageVersion, storedVersions, reason };
  }
  return { action: 'migrate', storageVersion, storedVersions };
}

/** The wait before attempt `failures` + 1 of the whole migration: 2 s doubling to 5 min. */
export function storageMigrationRetryDelayMs(failures: number): number {
  return Math.min(300_000, 2_000 * 2 ** Math.max(0, Math.min(failures - 1, 10)));
}

export interface StorageMigrationOptions {
  /** The leader's client: requests carry its signal and writes pass the Lease fence. */
  client: KubeClient;
  logger: Logger;
  /** Ends the migration (leadership lost, shutdown); the next leader runs it again. */
  signal: AbortSignal;
  crdName?: string;
  retryDelayMs?: (failures: number) => number;
  /** How often progress is logged while rewriting (default 5 s). */
  progressIntervalMs?: number;
  /** runStorageMigration: how often the CRD is looked at again once a run is done or not needed (default 60 s). */
  recheckIntervalMs?: number;
  /** Warning events on the objects that cannot be rewritten. */
  recorder?: EventRecorder;
}

export type StorageMigrationResult =
  | { action: 'skip'; storageVersion: string }
  | { action: 'migrated'; storageVersion: string; rewritten: number; from: string[] }
  /** Some objects could not be rewritten (skipped, by key); storedVersions is left as it was. */
  | { action: 'incomplete'; storageVersion: string; rewritten: number; skipped: string[] };

/**
 * For the leader, until `signal` aborts (then it rejects with the signal's reason): migrateStorage, then a look at the
 * CRD every `recheckIntervalMs`, migrating again when its storage version changed (a `helm upgrade` of
 * `crd.storageVersion` alone changes the CRD, not the Deployment, so no new leader comes to run it).
 */
export async function runStorageMigration(opts: StorageMigrationOptions): Promise<never> {
  for (let checks = 0; ; checks++) {
    // "not needed" at info once per leadership; the periodic looks after that at debug.
    await migrateStorage(opts, checks === 0 ? 'info' : 'debug');
    await sleep(opts.recheckIntervalMs ?? 60_000, undefined, { signal: opts.signal });
  }
}

/**
 * Runs the migration until it is done or not needed; failures (the conversion webhook not reachable yet, RBAC, an
 * object the validating webhook refuses) are logged and the whole run retried with backoff. Rejects only with the
 * signal's reason.
 */
export async function migrateStorage(
  opts: StorageMigrationOptions,
  skipLogLevel: 'info' | 'debug' = 'info',
): Promise<StorageMigrationResult> {
  const log = opts.logger.child({ component: 'storage-migration' });
  const retryDelayMs = opts.retryDelayMs ?? storageMigrationRetryDelayMs;
  for (let failures = 0; ;) {
    opts.signal.throwIfAborted();
    try {
      return await migrateOnce(opts, log, skipLogLevel);
    } catch (err) {
      if (opts.signal.aborted || isAbortError(err)) throw opts.signal.reason ?? err;
      failures++;
      const retryInMs = retryDelayMs(failures);
      log.warn({ err: errorMessage(err), attempt: failures, retryInMs }, 'storage migration failed; retrying');
      await sleep(retryInMs, undefined, { signal: opts.signal });
    }
  }
}

async function migrateOnce(
  opts: StorageMigrationOptions,
  log: Logger,
  skipLogLevel: 'info' | 'debug',
): Promise<StorageMigrationResult> {
  const { client, signal } = opts;
  const crdName = opts.crdName ?? RESOURCE;
  const crd = await client.get<KubeObject & CrdVersions>(
    resources.customResourceDefinitions,
    { name: crdName },
    {
      signal,
    },
  );
  const plan = planStorageMigration(crd);
  if (plan.action === 'skip') {
    log[skipLogLevel]({ crd: crdName, storageVersion: plan.storageVersion }, 'storage migration not needed');
    return { action: 'skip', storageVersion: plan.storageVersion };
  }
  // Retried with the failures' backoff: a manager registers its conversion webhook within seconds of starting.
  if (plan.action === 'wait') throw new Error(`storage migration waits: ${plan.reason}`);
  const type: ResourceType = {
    group: API_GROUP,
    version: plan.storageVersion,
    resource: PLURAL,
    namespaced: true,
    kind: KIND,
  };
  const started = monotonic();
  // Listing in the storage version converts objects stored in another one through the conversion webhook.
  const list = await client.listAll<KubeObject>(type, { signal });
  const total = list.items.length;
  log.info(
    { crd: crdName, storageVersion: plan.storageVersion, storedVersions: plan.storedVersions, total },
    'storage migration started',
  );
  let rewritten = 0;
  const skipped: string[] = [];
  let lastProgress = monotonic();
  for (const item of list.items) {
    try {
      await rewrite(client, type, item, signal);
      rewritten++;
    } catch (err) {
      const cause = err instanceof Error ? err.cause : undefined;
      if (!refused(cause)) throw err;
      const key = objectKey(item);
      skipped.push(key);
      storageMigrationSkipped.inc();
      const reason = errorMessage(cause);
      log.warn({ key, storageVersion: plan.storageVersion, err: reason }, 'storage migration skipped an object');
      opts.recorder?.event(
        { ...item, apiVersion: `${type.group}/${type.version}`, kind: type.kind },
        'Warning',
        'StorageMigrationFailed',
        `cannot be rewritten in ${plan.storageVersion}: ${reason}`,
      );
    }
    if (monotonic() - lastProgress >= (opts.progressIntervalMs ?? 5_000)) {
      lastProgress = monotonic();
      log.info({ rewritten, total }, 'storage migration progress');
    }
  }
  if (skipped.length > 0) {
    log.warn(
      { crd: crdName, storageVersion: plan.storageVersion, rewritten, total, skipped },
      'storage migration incomplete: storedVersions left as it is; the skipped objects are tried again later',
    );
    return { action: 'incomplete', storageVersion: plan.storageVersion, rewritten, skipped };
  }
  // Only now, and only over the CRD as read at the start: had the storage version changed meanwhile, objects written
  // since would be in another version, and the precondition fails (Conflict: the next attempt starts over).
  await client.patchStatus(
    resources.customResourceDefinitions,
    { name: crdName },
    { metadata: { resourceVersion: crd.metadata.resourceVersion }, status: { storedVersions: [plan.storageVersion] } },
    { type: 'merge', signal },
  );
  log.info(
    {
      crd: crdName,
      storageVersion: plan.storageVersion,
      rewritten,
      total,
      storedVersions: [plan.storageVersion],
      previousStoredVersions: plan.storedVersions,
      ms: Math.round(monotonic() - started),
    },
    'storage migration done',
  );
  return { action: 'migrated', storageVersion: plan.storageVersion, rewritten, from: plan.storedVersions };
}

/** An answer that says this object cannot be written as it is: a 4xx other than Conflict and 429. */
function refused(err: unknown): boolean {
  return err instanceof ApiError && err.code >= 400 && err.code < 500 && err.code !== 409 && err.code !== 429;
}

/** PUTs `obj` back unchanged; on a Conflict reads it again (up to 5 times); a deleted object needs nothing. */
async function rewrite(client: KubeClient, type: ResourceType, obj: KubeObject, signal: AbortSignal): Promise<void> {
  let current = obj;
  for (let attempt = 1; ; attempt++) {
    try {
      await client.update(
        type,
        { ...current, apiVersion: `${type.group}/${type.version}`, kind: type.kind },
        { signal },
      );
      return;
    } catch (err) {
      if (isNotFound(err)) return;
      if (!isConflict(err) || attempt >= 5) {
        throw new Error(`rewriting DaemonSet ${objectKey(current)} in ${type.version}: ${errorMessage(err)}`, {
          cause: err,
        });
      }
    }
    try {
      current = await client.get<KubeObject>(
        type,
        { namespace: obj.metadata.namespace, name: obj.metadata.name! },
        {
          signal,
        },
      );
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }
}
