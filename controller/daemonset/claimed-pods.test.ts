// ClaimedPods against the claim it stands for: after any sequence of pod events (owner, labels, deletion, pull pods,
// other namespaces) and DaemonSet changes, the kept claim equals claimObjects over every candidate pod.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../../src/api/types.ts';
import type { Pod } from '../../src/k8s/types.ts';
import { claimObjects } from '../../src/daemonset/claim.ts';
import { IMAGE_PULL_POD_DAEMONSET_UID_LABEL } from '../../src/daemonset/constants.ts';
import { newDaemonSet, newPod } from '../../src/daemonset/test-fixtures.ts';
import { ClaimedPods, isPodToClaim } from './claimed-pods.ts';

/** A small deterministic PRNG (mulberry32), so a failure names its seed. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class World {
  readonly pods = new Map<string, Pod>();
  daemonSets: DaemonSet[];
  readonly claimed: ClaimedPods;

  constructor(daemonSets: DaemonSet[]) {
    this.daemonSets = daemonSets;
    this.claimed = new ClaimedPods({
      candidates: (ds) => [...this.pods.values()].filter((p) => isPodToClaim(ds, p)),
      get: (namespace, name) => this.pods.get(`${namespace}/${name}`),
    });
  }

  private ofNamespace(pod: Pod): DaemonSet[] {
    return this.daemonSets.filter((ds) => ds.metadata.namespace === pod.metadata.namespace);
  }

  put(pod: Pod): void {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const old = this.pods.get(key);
    this.pods.set(key, pod);
    if (old) this.claimed.podChanged(this.ofNamespace(pod), old, pod);
    else this.claimed.podChanged(this.ofNamespace(pod), pod);
  }

  remove(key: string): void {
    const old = this.pods.get(key);
    if (!old) return;
    this.pods.delete(key);
    this.claimed.podChanged(this.ofNamespace(old), old);
  }

  /** The owned list each DaemonSet's last claim handed out (a copy: the claim changes it in place), and its version. */
  private readonly lastOwned = new Map<string, { pods: readonly Pod[]; version: object }>();

  /** Claims every DaemonSet both ways and compares; the changes told are those from the last list. */
  check(msg: string): void {
    for (const ds of this.daemonSets) {
      const key = `${ds.metadata.namespace}/${ds.metadata.name}`;
      const fullBefore = this.claimed.stats.full;
      const kept = this.claimed.claim(key, ds);
      const last = this.lastOwned.get(key);
      if (kept.changes) {
        assert.equal(kept.changes.since, last?.version, `${msg}: changes of ${key} are from the last list`);
        assert.notEqual(kept.version, last?.version, `${msg}: a new version of ${key}'s list`);
        const applied = new Map((last?.pods ?? []).map((p) => [p.metadata.name, p]));
        for (const [name, pod] of kept.changes.pods) {
          if (pod) applied.set(name, pod);
          else applied.delete(name);
        }
        assert.deepEqual(
          new Set(applied.values()),
          new Set(kept.owned),
          `${msg}: the last list with the changes of ${key}`,
        );
      } else if (last && kept.version !== last.version) {
        assert.equal(
          this.claimed.stats.full,
          fullBefore + 1,
          `${msg}: a new version without changes is a claim from scratch`,
        );
      } else if (last) {
        assert.deepEqual(kept.owned, last.pods, `${msg}: the same version of ${key}'s list holds the same pods`);
      }
      this.lastOwned.set(key, { pods: [...kept.owned], version: kept.version });
      const full = claimObjects(
        ds,
        [...this.pods.values()].filter((p) => isPodToClaim(ds, p)),
      );
      const names = (pods: readonly Pod[]) => pods.map((p) => p.metadata.name).sort();
      assert.deepEqual(names(kept.owned), names(full.owned), `${msg}: owned of ${key}`);
      // The very objects of the cache, not copies: the planner's memo tells changes by identity.
      const byName = new Map(full.owned.map((p) => [p.metadata.name, p]));
      for (const p of kept.owned)
        assert.equal(p, byName.get(p.metadata.name), `${msg}: ${p.metadata.name} is the cached object`);
      assert.deepEqual(names(kept.adopt), names(full.adopt), `${msg}: adopt of ${key}`);
      assert.deepEqual(names(kept.release), names(full.release), `${msg}: release of ${key}`);
    }
  }
}

function daemonSet(name: string, namespace: string, labels: Record<string, string>): DaemonSet {
  const ds = newDaemonSet({ name });
  ds.metadata.namespace = namespace;
  ds.spec.selector = { matchLabels: labels };
  return ds;
}

describe('ClaimedPods', () => {
  const a = daemonSet('a', 'default', { app: 'a' });
  const b = daemonSet('b', 'default', { app: 'b' });
  const c = daemonSet('c', 'other', { app: 'a' });

  test('an orphan to adopt is offered again at every sync until adopted, with no event between', () => {
    const w = new World([a]);
    w.check('start');
    const orphan = newPod(a, 'n1', { name: 'orphan', labels: { app: 'a' } });
    orphan.metadata.ownerReferences = [];
    w.put(orphan);
    assert.deepEqual(
      w.claimed.claim('default/a', a).adopt.map((p) => p.metadata.name),
      ['orphan'],
    );
    assert.deepEqual(
      w.claimed.claim('default/a', a).adopt.map((p) => p.metadata.name),
      ['orphan'],
    );
    w.put({ ...orphan, metadata: { ...orphan.metadata, ownerReferences: newPod(a, 'n1').metadata.ownerReferences } });
    const after = w.claimed.claim('default/a', a);
    assert.deepEqual(after.adopt, []);
    assert.deepEqual(
      after.owned.map((p) => p.metadata.name),
      ['orphan'],
    );
  });

  test('a sync with no pod event hands out the same version; the walk is made once per DaemonSet', () => {
    const w = new World([a]);
    for (let i = 0; i < 5; i++) w.put(newPod(a, `n${i}`, { name: `p${i}`, labels: { app: 'a' } }));
    const first = w.claimed.claim('default/a', a);
    const again = w.claimed.claim('default/a', a);
    assert.equal(again.owned, first.owned);
    assert.equal(again.version, first.version);
    assert.equal(w.claimed.stats.full, 1);
    const p2 = w.pods.get('default/p2') as Pod;
    const updated = { ...p2, status: { phase: 'Running' as const } };
    w.put(updated);
    const next = w.claimed.claim('default/a', a);
    const second = next.owned;
    // The same array, changed in place, under a new version.
    assert.equal(second, first.owned);
    assert.notEqual(next.version, first.version);
    assert.equal(second[2], updated);
    // An updated pod keeps its place.
    assert.deepEqual(
      second.map((p) => p.metadata.name),
      ['p0', 'p1', 'p2', 'p3', 'p4'],
    );
    assert.equal(w.claimed.stats.full, 1);
    assert.equal(w.claimed.stats.podsRechecked, 1);
  });

  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    test(`random pod events and DaemonSet changes, seed ${seed}: the kept claim is the full claim`, () => {
      const rand = prng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
      const w = new World([a, b, c]);
      const owners = [a, b, c, daemonSet('gone', 'default', { app: 'a' }), undefined];
      for (let step = 0; step < 300; step++) {
        const events = 1 + Math.floor(rand() * 4);
        for (let e = 0; e < events; e++) {
          const name = `p${Math.floor(rand() * 30)}`;
          const namespace = rand() < 0.8 ? 'default' : 'other';
          const key = `${namespace}/${name}`;
          const r = rand();
          if (r < 0.15) {
            w.remove(key);
            continue;
          }
          const owner = pick(owners);
          const pod = newPod(owner ?? a, 'n1', { name, labels: { app: pick(['a', 'b', 'x']) } });
          pod.metadata.namespace = namespace;
          if (!owner) pod.metadata.ownerReferences = [];
          else if (rand() < 0.1) (pod.metadata.ownerReferences ?? [])[0]!.controller = false;
          if (rand() < 0.1) pod.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
          if (rand() < 0.05) pod.metadata.labels![IMAGE_PULL_POD_DAEMONSET_UID_LABEL] = 'a-uid';
          w.put(pod);
        }
        // Now and then a DaemonSet is replaced by an object with another selector, or starts being deleted.
        if (rand() < 0.05) {
          const i = Math.floor(rand() * w.daemonSets.length);
          const ds = structuredClone(w.daemonSets[i] as DaemonSet);
          if (rand() < 0.5) ds.spec.selector = { matchLabels: { app: pick(['a', 'b', 'x']) } };
          else ds.metadata.deletionTimestamp = rand() < 0.5 ? '2024-01-01T00:00:00Z' : undefined;
          w.daemonSets[i] = ds;
        }
        if (rand() < 0.7) w.check(`seed ${seed}, step ${step}`);
      }
      w.check(`seed ${seed}, end`);
      assert.ok(w.claimed.stats.podsRechecked > 0);
    });
  }

  test('forget drops the kept claim: the next claim walks again', () => {
    const w = new World([a]);
    w.claimed.claim('default/a', a);
    w.claimed.forget('default/a');
    w.claimed.claim('default/a', a);
    assert.equal(w.claimed.stats.full, 2);
  });
});
