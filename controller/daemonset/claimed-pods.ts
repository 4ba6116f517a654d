// ClaimedPods: each DaemonSet's claim of its pods (claimObjects over its own pods and the orphans of its namespace),
// kept between its syncs and brought up to date from the pods that changed since, rather than recomputed over every
// pod at every sync. At 20,000 nodes the walk of the controller index and claimObjects over a DaemonSet's 20,000 pods
// were 40% of a steady sync's 20 ms (V8 profile of `npm run bench -- --only simulate --sim-nodes 20000`,
// bench/README.md section 8); a sync now looks at the pods whose events arrived since the last one.
//
// The claim of one pod depends on the pod and on the DaemonSet's UID, namespace, selector and deletion alone, so the
// kept result stays exact as long as every pod event reaches `changed` for each DaemonSet whose candidates held the
// pod before or after the event (the controller's handlers do, from the same index values the full walk reads), and
// a DaemonSet whose UID, selector or deletion changed is claimed from scratch. Upstream claims at every sync
// (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/daemon_controller.go getDaemonPods);
// orphans still to adopt and pods still to release are looked at again at every sync, as there.
import type { DaemonSet } from '../../src/api/types.ts';
import { claimObjects } from '../../src/daemonset/claim.ts';
import { isImagePullPod } from '../../src/daemonset/predownload.ts';
import { indexByController, orphanIndexValue } from '../../src/k8s/informer.ts';
import { objectKey, type Pod } from '../../src/k8s/types.ts';
import type { PodChanges } from '../../src/daemonset/plan-types.ts';

/** What a DaemonSet's claim is computed from (a full walk) and how a pod is looked up (by namespace/name). */
export interface ClaimSource {
  /** Every pod the DaemonSet may claim: its own and, unless it is being deleted, its namespace's orphans. */
  candidates(ds: DaemonSet): Pod[];
  /** The cached pod of that namespace and name. */
  get(namespace: string, name: string): Pod | undefined;
}

/** claimObjects' result; `owned` read-only. */
export interface PodClaim {
  /** Changed in place by the next claim of the same DaemonSet (not a copy each time): `version` tells its content. */
  owned: readonly Pod[];
  /** A new object whenever `owned` changes (DaemonSetSnapshot.podsVersion). */
  version: object;
  adopt: Pod[];
  release: Pod[];
  /** How `owned` differs from the list the previous claim handed out, when it does (the planner's memo reads it). */
  changes?: PodChanges;
}

interface Claim {
  /** What the claim of one pod reads of the DaemonSet; another value, and the claim is made from scratch. */
  key: string;
  owned: Map<string, Pod>;
  /** `owned`'s values, in its order, changed in place with it; handed out read-only. */
  list: Pod[];
  /** Its version: a new object at each change. */
  version: object;
  /** Pods whose events arrived since the last sync, by name. */
  changed: Set<string>;
  /** Orphans to adopt and pods to release found by the last sync: looked at again by the next. */
  pending: Set<string>;
}

/**
 * The most changed pods a claim makes in its list in place, each found by a scan of the list (25 µs in 65,000 pods);
 * with more, the list is copied from the map (3 ms at 65,000 pods, and an array of 512 KiB, too large for the young
 * generation, that only a full collection frees). Copied at every change, the lists were 27% of the syncs after
 * nodes joined a simulated 65,000-node cluster (V8 profile, bench/README.md section 8).
 */
const MAX_IN_PLACE = 32;

export class ClaimedPods {
  private readonly claims = new Map<string, Claim>();
  /** Claims made from scratch, and pods looked at again (tests and benchmarks). */
  readonly stats = { full: 0, podsRechecked: 0 };

  constructor(private readonly source: ClaimSource) {}

  /**
   * A pod changed: `states` are its object before and after an update, or its one object (added, deleted), and
   * `daemonSets` those of its namespace. The claims of the DaemonSets whose candidates hold one of the states hear of
   * it: its controller's, or, for an orphan, every one of the namespace.
   */
  podChanged(daemonSets: readonly DaemonSet[], ...states: Pod[]): void {
    const namespace = states[0]?.metadata.namespace ?? '';
    const name = states[0]?.metadata.name ?? '';
    const values = new Set(states.flatMap(indexByController));
    const orphan = values.has(orphanIndexValue(namespace));
    for (const ds of daemonSets) {
      if (orphan || values.has(ds.metadata.uid ?? '')) this.claims.get(objectKey(ds))?.changed.add(name);
    }
  }

  /** The claim of `ds` (its key `key`) on the cache as it is now; `owned` is shared with later syncs. */
  claim(key: string, ds: DaemonSet): PodClaim {
    const claimKey = claimKeyOf(ds);
    const claim = this.claims.get(key);
    if (claim === undefined || claim.key !== claimKey) return this.fromScratch(key, claimKey, ds);
    const namespace = ds.metadata.namespace ?? '';
    const adopt: Pod[] = [];
    const release: Pod[] = [];
    const changed = new Map<string, Pod | undefined>();
    for (const name of claim.pending) claim.changed.add(name);
    claim.pending.clear();
    // A few changes are made in the list in place; more, and it is made again from the map.
    const inPlace = claim.changed.size <= MAX_IN_PLACE;
    for (const name of claim.changed) {
      this.stats.podsRechecked++;
      const pod = this.source.get(namespace, name);
      const one = pod !== undefined && isPodToClaim(ds, pod) ? claimObjects(ds, [pod]) : undefined;
      const owned = one?.owned[0];
      const before = claim.owned.get(name);
      if (owned !== undefined) {
        // Set in place: the pod keeps its position, so the planner's memo finds it where it was.
        if (before === owned) continue;
        changed.set(name, owned);
        claim.owned.set(name, owned);
        if (!inPlace) continue;
        if (before === undefined) claim.list.push(owned);
        else claim.list[claim.list.indexOf(before)] = owned;
        continue;
      }
      if (before !== undefined) {
        claim.owned.delete(name);
        changed.set(name, undefined);
        if (inPlace) claim.list.splice(claim.list.indexOf(before), 1);
      }
      for (const p of one?.adopt ?? []) adopt.push(p);
      for (const p of one?.release ?? []) release.push(p);
    }
    claim.changed.clear();
    for (const p of [...adopt, ...release]) claim.pending.add(p.metadata.name ?? '');
    if (changed.size === 0) return { owned: claim.list, version: claim.version, adopt, release };
    if (!inPlace) claim.list = [...claim.owned.values()];
    const since = claim.version;
    claim.version = {};
    return { owned: claim.list, version: claim.version, adopt, release, changes: { since, pods: changed } };
  }

  /** The pod of that name the last claim of `key` handed out as owned. */
  ownedPod(key: string, name: string): Pod | undefined {
    return this.claims.get(key)?.owned.get(name);
  }

  /** Drops what is kept for a DaemonSet that is gone. */
  forget(key: string): void {
    this.claims.delete(key);
  }

  private fromScratch(key: string, claimKey: string, ds: DaemonSet): PodClaim {
    this.stats.full++;
    const result = claimObjects(ds, this.source.candidates(ds));
    const owned = new Map<string, Pod>();
    for (const p of result.owned) owned.set(p.metadata.name ?? '', p);
    const pending = new Set<string>();
    for (const p of [...result.adopt, ...result.release]) pending.add(p.metadata.name ?? '');
    const list = [...owned.values()];
    const version = {};
    this.claims.set(key, { key: claimKey, owned, list, version, changed: new Set(), pending });
    return { owned: list, version, adopt: result.adopt, release: result.release };
  }
}

/**
 * Whether `pod` is a candidate of `ds`: in its namespace, not an image pull pod, and controlled by it or, unless the
 * DaemonSet is being deleted, an orphan (the controller's podsToClaim, for one pod).
 */
export function isPodToClaim(ds: DaemonSet, pod: Pod): boolean {
  const namespace = ds.metadata.namespace ?? '';
  if (pod.metadata.namespace !== namespace || isImagePullPod(pod)) return false;
  const value = indexByController(pod)[0];
  return value === ds.metadata.uid || (!ds.metadata.deletionTimestamp && value === orphanIndexValue(namespace));
}

/** What claimObjects reads of the DaemonSet. */
function claimKeyOf(ds: DaemonSet): string {
  const m = ds.metadata;
  return JSON.stringify([m.uid, m.namespace, !!m.deletionTimestamp, ds.spec.selector]);
}
