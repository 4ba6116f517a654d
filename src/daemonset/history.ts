// ControllerRevision history (kruise daemonset_history.go, upstream pkg/controller/daemon/update.go):
// constructHistory, dedupCurHistories, snapshot (with hash-collision handling) and cleanupHistory, all pure.
import { isObject, setDefaultsPodTemplate } from '../api/defaults.ts';
import type { DaemonSet } from '../api/types.ts';
import type { ControllerRevision, Pod } from '../k8s/types.ts';
import { canonicalJson, computeHash, sortKeys } from '../k8s/hash.ts';
import { cloneJson } from '../k8s/json.ts';
import { CONTROLLER_REVISION_HASH_LABEL, DEFAULT_REVISION_HISTORY_LIMIT } from './constants.ts';
import { controllerRef, podRevisionHash } from './pods.ts';

/**
 * getPatch: the revision data, `{"spec":{"template":<template + "$patch":"replace">}}` (a strategic merge patch that
 * restores the template), keys sorted as Go marshals them (see sortKeys: other bytes break ownerReference patches).
 */
export function revisionData(ds: DaemonSet): { spec: { template: Record<string, unknown> } } {
  return sortKeys({ spec: { template: { ...ds.spec.template, $patch: 'replace' } } }) as {
    spec: { template: Record<string, unknown> };
  };
}

/**
 * Normal form for comparing and hashing revision data: nulls, empty objects and empty arrays dropped from objects at
 * every level (Go's marshalling emits `"creationTimestamp":null` and `"resources":{}`, drops empty omitempty fields),
 * then keys sorted. So a revision written by kruise-manager matches the same template here, and pods keep their
 * hash when this controller takes over.
 */
export function normalizeRevisionData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => normalizeRevisionData(v) ?? null);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const n = normalizeRevisionData(v);
      if (n === undefined || n === null) continue;
      if (Array.isArray(n) && n.length === 0) continue;
      if (typeof n === 'object' && !Array.isArray(n) && Object.keys(n).length === 0) continue;
      out[k] = n;
    }
    return out;
  }
  return value;
}

/**
 * Revision data with its template defaulted as kube-apiserver defaults an apps/v1 DaemonSet template (the defaulting
 * our webhook applies, src/api/defaults.ts). kruise-manager stores the template as the DaemonSet holds it, undefaulted
 * (getPatch: https://github.com/openkruise/kruise/blob/master/pkg/controller/daemonset/daemonset_history.go), while
 * templates written through our webhook are defaulted: compared as they are, the same template would differ after a
 * takeover. The input is not modified.
 */
export function defaultedRevisionData(data: unknown): unknown {
  const out = cloneJson(data);
  const spec = isObject(out) ? out.spec : undefined;
  const template = isObject(spec) ? spec.template : undefined;
  if (isObject(template)) setDefaultsPodTemplate(template);
  return out;
}

/**
 * The comparison key of revision data: defaulted, then in normal form. Cached per data object (informer objects are
 * never mutated, and every sync compares every owned revision).
 */
const matchKeys = new WeakMap<object, string>();
function matchKey(data: unknown): string {
  const cached = typeof data === 'object' && data !== null ? matchKeys.get(data) : undefined;
  if (cached !== undefined) return cached;
  const key = canonicalJson(normalizeRevisionData(defaultedRevisionData(data)));
  if (typeof data === 'object' && data !== null) matchKeys.set(data, key);
  return key;
}

/** The comparison key of a DaemonSet's template, cached per template object. */
const templateKeys = new WeakMap<object, string>();
function templateMatchKey(ds: DaemonSet): string {
  const template = ds.spec.template as object;
  let key = templateKeys.get(template);
  if (key === undefined) {
    key = matchKey(revisionData(ds));
    templateKeys.set(template, key);
  }
  return key;
}

/**
 * Match: the revision stores this DaemonSet's template, both defaulted (apps/v1 template defaults) and compared in
 * normal form. So a revision kruise-manager wrote (undefaulted) is current for the same template defaulted by our
 * webhook, and a rollback to a Kruise-era template reuses that revision.
 */
export function revisionMatches(ds: DaemonSet, revision: ControllerRevision): boolean {
  return matchKey(revision.data) === templateMatchKey(ds);
}

/** The revision hash of the template for a collisionCount (ComputeHash idea; see src/k8s/hash.ts). */
export function computeRevisionHash(ds: DaemonSet, collisionCount: number | undefined | null): string {
  return computeHash(normalizeRevisionData(revisionData(ds)), collisionCount);
}

export function revisionHashLabel(revision: ControllerRevision): string {
  return revision.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? '';
}

export function maxRevision(revisions: readonly ControllerRevision[]): number {
  return revisions.reduce((m, r) => Math.max(m, r.revision ?? 0), 0);
}

function byRevisionThenName(a: ControllerRevision, b: ControllerRevision): number {
  if (a.revision !== b.revision) return a.revision - b.revision;
  const an = a.metadata.name ?? '';
  const bn = b.metadata.name ?? '';
  return an < bn ? -1 : an > bn ? 1 : 0;
}

export interface PodRelabel {
  podName: string;
  /** The hash label value the pod must carry. */
  hash: string;
}

export interface HistoryResult {
  /** The current revision: existing (maybe with a bumped number) or the one planned in `create`. */
  current: ControllerRevision;
  /** Its controller-revision-hash label: the hash new pods carry. */
  hash: string;
  /** Owned revisions other than the current one (and other than deleted duplicates). */
  old: ControllerRevision[];
  /** status.collisionCount after collision handling (unchanged unless a collision was found). */
  collisionCount: number | undefined;
  create?: ControllerRevision;
  /** Revisions to update (full objects): hash label added to label-less ones, revision number bumped. */
  update: ControllerRevision[];
  /** Duplicate current revisions to delete. */
  delete: string[];
  /** Pods of deleted duplicate revisions, relabelled to the kept revision's hash. */
  podRelabels: PodRelabel[];
  /** Human-readable notes for events/logs (collisions). */
  notes: string[];
}

/**
 * constructHistory:
 * - revisions without the hash label get it, set to their own name;
 * - revisions whose data matches the template are "current", the others "old";
 * - no current one: snapshot a new revision `<ds>-<hash>` numbered max(old)+1; if that name is taken by a
 *   revision with other data, bump collisionCount and rehash (upstream does this over several syncs through a
 *   failed create; knowing the names, we do it at once; the bumped count goes into status);
 * - several current ones: keep the highest revision, delete the others, relabel their pods (upstream relabels every
 *   pod whose hash differs, turning old pods into "updated" ones; only the duplicates' pods are relabelled here);
 * - the current revision's number is bumped to max(old)+1 when lower: a rollback to an earlier template reuses
 *   that revision (and its hash, so pods still on it are not restarted).
 *
 * `owned` are the revisions this DaemonSet controls; `foreign` optionally the other revisions of the namespace, so a
 * name collision with them is seen before the create fails.
 */
export function constructHistory(
  ds: DaemonSet,
  owned: readonly ControllerRevision[],
  pods: readonly Pod[],
  foreign: readonly ControllerRevision[] = [],
): HistoryResult {
  const { current, old, labelled } = labelAndSplit(ds, owned);
  const update = new Map(labelled.map((r) => [r.metadata.name ?? '', r]));
  const nextRevision = maxRevision(old) + 1;
  const storedCollisionCount = ds.status?.collisionCount ?? undefined;
  if (current.length === 0) {
    const made = newCurrentRevision(ds, [...owned, ...foreign], storedCollisionCount, nextRevision);
    return {
      current: made.revision,
      hash: revisionHashLabel(made.revision),
      old,
      collisionCount: made.collisionCount,
      ...(made.create ? { create: made.create } : {}),
      update: [...update.values()],
      delete: [],
      podRelabels: [],
      notes: made.notes,
    };
  }
  const kept = dedupCurrent(current, pods, nextRevision);
  for (const name of kept.delete) update.delete(name);
  if (kept.bumped) update.set(kept.bumped.metadata.name ?? '', kept.bumped);
  return {
    current: kept.revision,
    hash: revisionHashLabel(kept.revision),
    old,
    collisionCount: storedCollisionCount,
    update: [...update.values()],
    delete: kept.delete,
    podRelabels: kept.podRelabels,
    notes: [],
  };
}

/**
 * The owned revisions in revision order, those without the hash label given it (set to their own name: `labelled`,
 * to update), split into those whose data matches the template (`current`) and the others (`old`).
 */
function labelAndSplit(
  ds: DaemonSet,
  owned: readonly ControllerRevision[],
): { current: ControllerRevision[]; old: ControllerRevision[]; labelled: ControllerRevision[] } {
  const current: ControllerRevision[] = [];
  const old: ControllerRevision[] = [];
  const labelled: ControllerRevision[] = [];
  for (const r0 of [...owned].sort(byRevisionThenName)) {
    let r = r0;
    if (!r.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL]) {
      r = {
        ...r,
        metadata: {
          ...r.metadata,
          labels: { ...(r.metadata.labels ?? {}), [CONTROLLER_REVISION_HASH_LABEL]: r.metadata.name ?? '' },
        },
      };
      labelled.push(r);
    }
    (revisionMatches(ds, r) ? current : old).push(r);
  }
  return { current, old, labelled };
}

/**
 * No revision matches the template: snapshot a new one `<ds>-<hash>` numbered `nextRevision`. If that name is taken
 * by a revision with other data, bump collisionCount and rehash (upstream does this over several syncs through a
 * failed create; knowing the names, we do it at once); a revision of ours with our data under that name is used.
 */
function newCurrentRevision(
  ds: DaemonSet,
  known: readonly ControllerRevision[],
  storedCollisionCount: number | undefined,
  nextRevision: number,
): { revision: ControllerRevision; create?: ControllerRevision; collisionCount: number | undefined; notes: string[] } {
  const taken = new Map<string, ControllerRevision>();
  for (const r of known) taken.set(r.metadata.name ?? '', r);
  const notes: string[] = [];
  let collisionCount = storedCollisionCount;
  let hash = computeRevisionHash(ds, collisionCount);
  let name = `${ds.metadata.name ?? ''}-${hash}`;
  let existing = taken.get(name);
  // A foreign revision with our data under our name: use it, as upstream does after AlreadyExists.
  for (let i = 0; existing && !revisionMatches(ds, existing) && i < 1000; i++) {
    collisionCount = (collisionCount ?? 0) + 1;
    notes.push(`hash collision on ControllerRevision ${name}: collisionCount bumped to ${collisionCount}`);
    hash = computeRevisionHash(ds, collisionCount);
    name = `${ds.metadata.name ?? ''}-${hash}`;
    existing = taken.get(name);
  }
  if (existing) return { revision: existing, collisionCount, notes };
  const labels = { ...(ds.spec.template.metadata?.labels ?? {}), [CONTROLLER_REVISION_HASH_LABEL]: hash };
  const create: ControllerRevision = {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name,
      namespace: ds.metadata.namespace,
      labels,
      annotations: { ...(ds.metadata.annotations ?? {}) },
      ownerReferences: [controllerRef(ds)],
    },
    data: revisionData(ds),
    revision: nextRevision,
  };
  return { revision: create, create, collisionCount, notes };
}

/**
 * dedupCurHistories: of several revisions matching the template keep the highest (the last one on ties, as `>=`
 * upstream), delete the others and relabel their pods; the kept one is renumbered `nextRevision` when lower
 * (`bumped`, to update).
 */
function dedupCurrent(
  current: readonly ControllerRevision[],
  pods: readonly Pod[],
  nextRevision: number,
): { revision: ControllerRevision; bumped?: ControllerRevision; delete: string[]; podRelabels: PodRelabel[] } {
  let keep = current[0] as ControllerRevision;
  for (const r of current) if (r.revision >= keep.revision) keep = r;
  const keepHash = revisionHashLabel(keep);
  const del: string[] = [];
  const dupHashes = new Set<string>();
  for (const r of current) {
    if (r === keep) continue;
    del.push(r.metadata.name ?? '');
    const h = revisionHashLabel(r);
    if (h !== keepHash) dupHashes.add(h);
  }
  const podRelabels: PodRelabel[] = [];
  if (dupHashes.size > 0) {
    for (const pod of pods) {
      if (dupHashes.has(podRevisionHash(pod))) podRelabels.push({ podName: pod.metadata.name ?? '', hash: keepHash });
    }
  }
  if (keep.revision >= nextRevision) return { revision: keep, delete: del, podRelabels };
  const bumped = { ...keep, revision: nextRevision };
  return { revision: bumped, bumped, delete: del, podRelabels };
}

/**
 * cleanupHistory: when there are more old revisions than revisionHistoryLimit (default 10), delete the excess,
 * lowest revision first, skipping any revision whose hash a live pod still carries (terminating and terminal pods
 * included) or that is in `keepHashes` (a canary's stable revision). The current revision is never in `old`, so it is
 * never deleted.
 */
export function cleanupHistory(
  ds: DaemonSet,
  old: readonly ControllerRevision[],
  pods: readonly Pod[],
  keepHashes: ReadonlySet<string> = new Set(),
): string[] {
  const toKeep = ds.spec.revisionHistoryLimit ?? DEFAULT_REVISION_HISTORY_LIMIT;
  let toKill = old.length - toKeep;
  if (toKill <= 0) return [];
  const liveHashes = new Set<string>(keepHashes);
  for (const pod of pods) {
    const h = podRevisionHash(pod);
    if (h) liveHashes.add(h);
  }
  const out: string[] = [];
  for (const r of [...old].sort(byRevisionThenName)) {
    if (toKill <= 0) break;
    if (liveHashes.has(revisionHashLabel(r))) continue;
    out.push(r.metadata.name ?? '');
    toKill--;
  }
  return out;
}
