// Expectations: what the controller has asked the apiserver for and not yet seen in its
// informer caches. Without them informer lag makes a controller act twice: it creates a pod,
// reconciles again before the pod's ADDED event arrives, sees no pod, and creates another.
//
// Ports of client-go's pkg/controller ControllerExpectations / UIDTrackingControllerExpectations
// (controller_utils.go) and Kruise's ResourceVersionExpectation (pkg/util/expectations). No JS
// library implements them; they are small, synchronous and pure apart from an injectable clock.
import { objectKey, type ObjectMeta } from '../../src/k8s/types.ts';
import { monotonic, type Clock } from '../../src/k8s/clock.ts';

/** client-go's ExpectationsTimeout and Kruise's ExpectationTimeout: 5 minutes. */
export const EXPECTATIONS_TIMEOUT_MS = 5 * 60 * 1000;

interface ControlleeExpectations {
  add: number;
  del: number;
  timestamp: number;
}

/**
 * Per controller key (e.g. "ns/ds-name"): how many creations and deletions are still
 * unobserved. satisfiedExpectations() says whether the cache is trustworthy enough to run
 * manage(); expectations older than the TTL count as satisfied, so a lost watch event delays a
 * controller by at most 5 minutes instead of wedging it.
 */
export class ControllerExpectations {
  protected readonly store = new Map<string, ControlleeExpectations>();

  constructor(
    protected readonly clock: Clock = monotonic,
    readonly ttlMs: number = EXPECTATIONS_TIMEOUT_MS,
  ) {}

  getExpectations(key: string): { add: number; del: number; timestamp: number } | undefined {
    const e = this.store.get(key);
    return e ? { ...e } : undefined;
  }

  /**
   * True when manage() may run: no record (a new controller, or expectations were deleted),
   * all expected events observed, or the record expired.
   */
  satisfiedExpectations(key: string): boolean {
    const e = this.store.get(key);
    if (!e) return true;
    if (e.add <= 0 && e.del <= 0) return true;
    return this.isExpired(e);
  }

  /** How long ago the current expectations were set; undefined if none. */
  expectationAgeMs(key: string): number | undefined {
    const e = this.store.get(key);
    return e ? this.clock() - e.timestamp : undefined;
  }

  setExpectations(key: string, add: number, del: number): void {
    this.store.set(key, { add, del, timestamp: this.clock() });
  }

  expectCreations(key: string, adds: number): void {
    this.setExpectations(key, adds, 0);
  }

  expectDeletions(key: string, dels: number): void {
    this.setExpectations(key, 0, dels);
  }

  /** Adds to the existing counts without resetting the timestamp (client-go's RaiseExpectations). */
  raiseExpectations(key: string, add: number, del: number): void {
    const e = this.store.get(key);
    if (!e) return;
    e.add += add;
    e.del += del;
  }

  lowerExpectations(key: string, add: number, del: number): void {
    const e = this.store.get(key);
    if (!e) return;
    e.add -= add;
    e.del -= del;
  }

  /** The informer saw one of the pods we created (or a create failed and will never be seen). */
  creationObserved(key: string): void {
    this.lowerExpectations(key, 1, 0);
  }

  /** The informer saw one of the pods we deleted go away (or a delete failed). */
  deletionObserved(key: string): void {
    this.lowerExpectations(key, 0, 1);
  }

  /** Forget the controller (it was deleted). */
  deleteExpectations(key: string): void {
    this.store.delete(key);
  }

  protected isExpired(e: ControlleeExpectations): boolean {
    return this.clock() - e.timestamp > this.ttlMs;
  }
}

/**
 * Deletions tracked by pod key, so a pod's DELETED event (or a tombstone after a relist)
 * lowers the count exactly once even if the same deletion is observed twice: client-go's
 * UIDTrackingControllerExpectations (named for UIDs; it stores pod keys).
 */
export class UIDTrackingControllerExpectations extends ControllerExpectations {
  private readonly uids = new Map<string, Set<string>>();

  getUIDs(key: string): ReadonlySet<string> | undefined {
    return this.uids.get(key);
  }

  /** Records that `deletedKeys` are being deleted for controller `key`. */
  expectDeletionsOf(key: string, deletedKeys: string[]): void {
    const set = new Set(deletedKeys);
    this.uids.set(key, set);
    this.expectDeletions(key, set.size);
  }

  /** The pod `deleteKey` is gone (or its delete failed). Counts once per pod. */
  deletionObservedOf(key: string, deleteKey: string): void {
    const set = this.uids.get(key);
    if (set?.delete(deleteKey)) this.deletionObserved(key);
  }

  override deleteExpectations(key: string): void {
    super.deleteExpectations(key);
    this.uids.delete(key);
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * Compares resourceVersions as Kruise does (isResourceVersionNewer): they are etcd revisions,
 * decimal integers, even though the API calls them opaque. An empty or unparsable expected
 * version counts as satisfied; an unparsable observed one does not.
 */
export function isResourceVersionNewer(expected: string | undefined, observed: string | undefined): boolean {
  if (!expected || !/^\d+$/.test(expected)) return true;
  if (!observed || !/^\d+$/.test(observed)) return false;
  return BigInt(observed) >= BigInt(expected);
}

type VersionedMeta = Pick<ObjectMeta, 'uid' | 'resourceVersion' | 'namespace' | 'name'>;
type Versioned = { metadata: VersionedMeta } | VersionedMeta;

const metaOf = (obj: Versioned): VersionedMeta =>
  'metadata' in obj && obj.metadata && typeof obj.metadata === 'object'
    ? (obj.metadata as VersionedMeta)
    : (obj as VersionedMeta);

/** The common answer, one object for all: a sync asks for every pod it plans. */
const SATISFIED = Object.freeze({ satisfied: true, unsatisfiedForMs: 0, timedOut: false });

/**
 * After we write an object (e.g. patch a pod), do not act on a cached copy older than what we
 * wrote: Kruise's ResourceVersionExpectation, keyed by UID. Call expect() with the object the
 * apiserver returned, observe() from the informer's update handler (or with the cached copy
 * before reading it), and isSatisfied() before acting on the cached copy.
 */
export class ResourceVersionExpectations {
  private readonly versions = new Map<string, { resourceVersion: string; since: number; key: string }>();

  constructor(
    private readonly clock: Clock = monotonic,
    readonly ttlMs: number = EXPECTATIONS_TIMEOUT_MS,
  ) {}

  /** We wrote this object and the apiserver answered with this resourceVersion. */
  expect(obj: Versioned): void {
    const metadata = metaOf(obj);
    const { uid, resourceVersion } = metadata;
    if (!uid || !resourceVersion) return;
    const existing = this.versions.get(uid);
    if (isResourceVersionNewer(existing?.resourceVersion, resourceVersion)) {
      this.versions.set(uid, { resourceVersion, since: existing?.since ?? this.clock(), key: objectKey({ metadata }) });
    }
  }

  /**
   * The keys (namespace/name) of the objects with an expectation: a caller with many objects asks isSatisfied of
   * these only (any other is satisfied).
   */
  *objectKeys(): IterableIterator<string> {
    for (const v of this.versions.values()) yield v.key;
  }

  /** The cache holds this version: clears the expectation when it is at least the expected one. */
  observe(obj: Versioned): void {
    const { uid, resourceVersion } = metaOf(obj);
    if (!uid) return;
    const existing = this.versions.get(uid);
    if (existing && isResourceVersionNewer(existing.resourceVersion, resourceVersion)) this.versions.delete(uid);
  }

  /**
   * Whether this cached copy is at least as new as our last write. When unsatisfied,
   * `unsatisfiedForMs` says for how long; past the TTL the expectation is dropped and the
   * answer is `satisfied: true, timedOut: true` (Kruise logs and carries on at that point).
   * The caller should requeue after `ttlMs - unsatisfiedForMs` at the latest.
   */
  isSatisfied(obj: Versioned): Readonly<{ satisfied: boolean; unsatisfiedForMs: number; timedOut: boolean }> {
    const { uid, resourceVersion } = metaOf(obj);
    if (!uid) return SATISFIED;
    const existing = this.versions.get(uid);
    if (!existing) return SATISFIED;
    if (isResourceVersionNewer(existing.resourceVersion, resourceVersion)) {
      this.versions.delete(uid);
      return SATISFIED;
    }
    const unsatisfiedForMs = this.clock() - existing.since;
    if (unsatisfiedForMs >= this.ttlMs) {
      this.versions.delete(uid);
      return { satisfied: true, unsatisfiedForMs, timedOut: true };
    }
    return { satisfied: false, unsatisfiedForMs, timedOut: false };
  }

  /** Forget the object (it was deleted). */
  delete(obj: Versioned): void {
    const { uid } = metaOf(obj);
    if (uid) this.versions.delete(uid);
  }

  /** Number of objects with outstanding expectations (for tests and debugging). */
  get size(): number {
    return this.versions.size;
  }
}
