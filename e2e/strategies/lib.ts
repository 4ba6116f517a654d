// Helpers shared by the rollout-strategy e2e files (docs/kruise-rules.md): a per-describe fixture (own namespace, own
// labelled fake nodes), waiting for an exact node -> revision layout, and holding a layout still.
import { spawn, type ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import { apply, eventually, kubeconfig, podReady, type PodJson } from '../lib/kube.ts';
import { sleep } from '../../src/testing/wait.ts';
import { Sampler } from '../lib/sampler.ts';

import type { Fixture } from '../lib/kube.ts';
export { fixture, type Fixture } from '../lib/kube.ts';
import { binaries } from '../cluster/binaries.ts';
import {
  JsonStreamSplitter,
  adsManifest,
  adsPods,
  describePods,
  getAds,
  hashOf,
  terminating,
  waitRolledOut,
  type AdsJson,
  type AdsOptions,
} from '../lib/ads.ts';

/**
 * Waits until each node of `want` runs exactly one Ready, non-terminating pod carrying the wanted revision hash,
 * and no other pod of the DaemonSet exists (none terminating, none elsewhere). Returns the pods by node.
 */
export async function waitLayout(
  ns: string,
  name: string,
  want: Record<string, string>,
  timeoutMs = 90_000,
): Promise<Map<string, PodJson>> {
  let seen: PodJson[] = [];
  try {
    return await eventually(
      `pods of ${name} laid out as ${JSON.stringify(want)}`,
      async () => {
        const pods = (seen = await adsPods(ns, name));
        if (pods.length !== Object.keys(want).length) return false;
        const m = new Map<string, PodJson>();
        for (const p of pods) {
          const n = p.spec.nodeName ?? '';
          if (terminating(p) || !podReady(p) || want[n] === undefined || hashOf(p) !== want[n] || m.has(n)) {
            return false;
          }
          m.set(n, p);
        }
        return m;
      },
      { timeoutMs },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  pods: ${describePods(seen)}`, { cause: err });
  }
}

/** `nodes` mapped to `hash` (for waitLayout). */
export function layout(nodes: string[], hash: string, into: Record<string, string> = {}): Record<string, string> {
  for (const n of nodes) into[n] = hash;
  return into;
}

/**
 * Waits until the controller observed the current generation and reports a revision other than `oldHash`;
 * returns the DaemonSet (its status.daemonSetHash is the new revision).
 */
export async function waitNewRevision(ns: string, name: string, oldHash: string): Promise<AdsJson> {
  return eventually(`${name} to observe its new generation with a new revision`, async () => {
    const ds = await getAds(ns, name);
    const hash = ds.status?.daemonSetHash;
    return ds.status?.observedGeneration === ds.metadata.generation && !!hash && hash !== oldHash && ds;
  });
}

/** Waits until the controller observed the current generation; returns the DaemonSet. */
export async function waitObserved(ns: string, name: string): Promise<AdsJson> {
  return eventually(`${name} to observe its current generation`, async () => {
    const ds = await getAds(ns, name);
    return ds.status?.observedGeneration === ds.metadata.generation && ds;
  });
}

/**
 * Lets the controller run for `ms`, then asserts the DaemonSet's pods are exactly `pods` (same UIDs, same
 * revision, none terminating): nothing was replaced, created or deleted meanwhile.
 */
export async function assertUnchanged(
  ns: string,
  name: string,
  pods: Map<string, PodJson>,
  why: string,
  ms = 4000,
): Promise<void> {
  await sleep(ms);
  const now = await adsPods(ns, name);
  assert.deepEqual(
    now
      .map((p) => `${p.spec.nodeName}:${p.metadata.uid}:${hashOf(p)}:${terminating(p) ? 'terminating' : 'live'}`)
      .sort(),
    [...pods.values()].map((p) => `${p.spec.nodeName}:${p.metadata.uid}:${hashOf(p)}:live`).sort(),
    `${why}: after ${ms / 1000}s the pods are the same (UID, revision), none terminating`,
  );
}

/** Asserts that the pods of `nodes` in `after` are the very pods of `before` (same UID). */
export function assertSamePods(
  before: Map<string, PodJson>,
  after: Map<string, PodJson>,
  nodes: string[],
  why: string,
): void {
  for (const n of nodes) {
    assert.equal(after.get(n)?.metadata.uid, before.get(n)?.metadata.uid, `${why}: pod on ${n} kept (same UID)`);
  }
}

export interface RvEvent {
  /** `pod` or the watched resource's name. */
  source: string;
  type: string;
  rv: number;
  name: string;
}

/**
 * `kubectl get <resource> --watch --output-watch-events -o json` recording each event with its object's
 * resourceVersion. resourceVersions come from one etcd revision counter, so events of different resources can be
 * ordered against each other: what the apiserver did first.
 */
export class RvWatch {
  readonly events: RvEvent[] = [];
  private readonly child: ChildProcess;
  private constructor(source: string, args: string[]) {
    this.child = spawn(
      binaries().kubectl,
      ['--kubeconfig', kubeconfig(), 'get', ...args, '--watch', '--output-watch-events', '-o', 'json'],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    const splitter = new JsonStreamSplitter();
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      for (const v of splitter.push(chunk)) {
        const ev = v as { type: string; object: { metadata: { name: string; resourceVersion: string } } };
        this.events.push({
          source,
          type: ev.type,
          rv: Number(ev.object.metadata.resourceVersion),
          name: ev.object.metadata.name,
        });
      }
    });
  }

  /** Starts the watch and waits until it delivered its initial list (at least `initial` events). */
  static async start(source: string, args: string[], initial = 0): Promise<RvWatch> {
    const w = new RvWatch(source, args);
    await sleep(1000);
    await eventually(`watch of ${source} to list ${initial} objects`, async () => w.events.length >= initial);
    return w;
  }

  stop(): void {
    this.child.kill('SIGTERM');
  }
}

export interface StrategyDaemonSet {
  /** Extra fields of adsManifest (image defaults to busybox:1.36). */
  options?: Partial<Omit<AdsOptions, 'name' | 'namespace' | 'group'>>;
  annotations?: Record<string, string>;
  /** Last changes to the manifest (extra spec fields, template metadata). */
  mutate?: (manifest: { metadata: Record<string, unknown>; spec: Record<string, unknown> }) => void;
}

/** Samples the pods of `name` on the fixture's nodes from now on, checking maxUnavailable 1 (it is rolled out). */
export async function armedSampler(f: Fixture, name: string): Promise<Sampler> {
  const sampler = await Sampler.start({
    namespace: f.ns,
    name,
    nodeSelector: `e2e-group=${f.group}`,
    maxUnavailable: 1,
    maxPodsPerNode: 1,
  });
  sampler.arm();
  return sampler;
}

/** InPlaceIfPossible with maxUnavailable 1, the container holding `resources`: what the resize tests start from. */
export function inPlaceWithResources(resources: unknown): StrategyDaemonSet {
  return {
    options: {
      updateStrategy: {
        type: 'RollingUpdate',
        rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1 },
      },
    },
    mutate: (m) => {
      const spec = (m.spec.template as { spec: { containers: Record<string, unknown>[] } }).spec;
      spec.containers[0]!.resources = resources;
    },
  };
}

/** The Advanced DaemonSet `name` on the fixture's nodes (busybox:1.36), as applied. */
export async function applyDaemonSet(f: Fixture, name: string, o: StrategyDaemonSet = {}): Promise<void> {
  const manifest = adsManifest({ name, namespace: f.ns, group: f.group, image: 'busybox:1.36', ...o.options }) as {
    metadata: Record<string, unknown>;
    spec: Record<string, unknown>;
  };
  if (o.annotations) manifest.metadata.annotations = o.annotations;
  o.mutate?.(manifest);
  await apply(manifest);
}

/**
 * applyDaemonSet, then waits until it rolled out on every fixture node; returns the DaemonSet, its revision hash
 * and its pods by node.
 */
export async function rolledOutDaemonSet(
  f: Fixture,
  name: string,
  o: StrategyDaemonSet = {},
): Promise<{ ds: AdsJson; hash: string; pods: Map<string, PodJson> }> {
  await applyDaemonSet(f, name, o);
  const ds = await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
  const hash = ds.status!.daemonSetHash!;
  return { ds, hash, pods: await waitLayout(f.ns, name, layout(f.nodes, hash)) };
}
