// Helpers of the canary e2e files: container states (the fields the failure images of e2e/cluster/kwok-stages.yaml
// drive: restartCount, state.waiting.reason, lastState.terminated.exitCode), a per-pod history kept from a pod watch,
// and the canary contract's names (docs/rollout-strategies.md, "Canary with health gates").
import { spawn, type ChildProcess } from 'node:child_process';
import { binaries } from '../cluster/binaries.ts';
import {
  ADS,
  HASH_LABEL,
  JsonStreamSplitter,
  PodWatch,
  eventsFor,
  getAds,
  type AdsJson,
  type EventJson,
} from '../lib/ads.ts';
import { eventually, kubeconfig, kubectl, podReady, type PodJson } from '../lib/kube.ts';
import { Sampler, targetNode } from '../lib/sampler.ts';

/** Images the kwok stages fail (e2e/cluster/kwok-stages.yaml): any name containing the word. */
export const CRASHLOOP_IMAGE = 'example.com/agent-crashloop:2';
export const BAD_IMAGE = 'example.com/agent-badimage:2';

export interface ContainerStateJson {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: { exitCode?: number; reason?: string; startedAt?: string; finishedAt?: string };
}

export interface ContainerStatusJson {
  name: string;
  image: string;
  imageID?: string;
  containerID?: string;
  ready: boolean;
  restartCount: number;
  state?: ContainerStateJson;
  lastState?: ContainerStateJson;
}

export function containerStatus(p: PodJson, name: string): ContainerStatusJson | undefined {
  return (p.status?.containerStatuses as ContainerStatusJson[] | undefined)?.find((c) => c.name === name);
}

export function conditionStatus(p: PodJson, type: string): string | undefined {
  return p.status?.conditions?.find((c) => c.type === type)?.status;
}

/** The image a pod's container `name` is specified with. */
export function specImage(p: PodJson, name = 'c'): string | undefined {
  return p.spec.containers.find((c) => c.name === name)?.image;
}

/** What a watch saw of one pod over its life. */
export interface PodRecord {
  name: string;
  /** The node the pod is for (spec.nodeName, or its node affinity before binding). */
  node?: string;
  /** Every image its container `c` was specified with (in-place updates change it). */
  images: Set<string>;
  /** Every revision (controller-revision-hash) it carried. */
  hashes: Set<string>;
  /** metadata.creationTimestamp, ms (apiserver clock). */
  created?: number;
  /** It carried the canary pod label (advanced-daemonset.io/canary: "true") at some point. */
  canaryLabelSeen: boolean;
  phases: Set<string>;
  /** Images container `c` ran (status image) while the pod was Ready. */
  readyWith: Set<string>;
  containersReadySeen: boolean;
  /** Container `c`'s waiting reasons, in the order first seen. */
  waitingReasons: string[];
  /** Container `c`'s restartCount at each change, with the local time it was seen. */
  restarts: { count: number; at: number }[];
  /** restartCount went down at some point (never should). */
  restartsWentBack: boolean;
  lastExitCode?: number;
}

/**
 * Per-pod history from every state a watch delivers (feed it each watch event): the never-claims of the tests are
 * checked on all of them, not on poll instants.
 */
export class PodHistory {
  readonly pods = new Map<string, PodRecord>();

  record(p: PodJson, at = Date.now()): void {
    const uid = p.metadata.uid;
    let r = this.pods.get(uid);
    if (!r) {
      r = {
        name: p.metadata.name,
        images: new Set(),
        hashes: new Set(),
        canaryLabelSeen: false,
        phases: new Set(),
        readyWith: new Set(),
        containersReadySeen: false,
        waitingReasons: [],
        restarts: [],
        restartsWentBack: false,
      };
      this.pods.set(uid, r);
    }
    // The node it is for even before the scheduler binds it (daemon pods are pinned by node affinity).
    r.node ??= targetNode(p);
    const image = specImage(p);
    if (image) r.images.add(image);
    const hash = p.metadata.labels?.[HASH_LABEL];
    if (hash) r.hashes.add(hash);
    if (p.metadata.creationTimestamp) r.created = Date.parse(p.metadata.creationTimestamp);
    if (p.metadata.labels?.[CANARY_POD_LABEL] === 'true') r.canaryLabelSeen = true;
    if (p.status?.phase) r.phases.add(p.status.phase);
    const running = containerStatus(p, 'c')?.image;
    if (podReady(p) && running) r.readyWith.add(running);
    if (conditionStatus(p, 'ContainersReady') === 'True') r.containersReadySeen = true;
    const c = containerStatus(p, 'c');
    if (!c) return;
    const reason = c.state?.waiting?.reason;
    if (reason && !r.waitingReasons.includes(reason)) r.waitingReasons.push(reason);
    const last = r.restarts.at(-1);
    if (last === undefined || last.count !== c.restartCount) {
      if (last !== undefined && c.restartCount < last.count) r.restartsWentBack = true;
      r.restarts.push({ count: c.restartCount, at });
    }
    if (c.lastState?.terminated?.exitCode !== undefined) r.lastExitCode = c.lastState.terminated.exitCode;
  }

  /** Nodes on which some pod ever carried revision `hash`. */
  nodesWithHash(hash: string): Set<string> {
    const out = new Set<string>();
    for (const r of this.pods.values()) if (r.node && r.hashes.has(hash)) out.add(r.node);
    return out;
  }

  byName(name: string): PodRecord | undefined {
    return [...this.pods.values()].find((r) => r.name === name);
  }

  /** Nodes on which some pod was ever specified with an image for which `bad` holds. */
  nodesThatRan(bad: (image: string) => boolean): Set<string> {
    const out = new Set<string>();
    for (const r of this.pods.values()) if (r.node && [...r.images].some(bad)) out.add(r.node);
    return out;
  }
}

// ------------------------------------------------------------------------------------------------
// The canary contract (docs/rollout-strategies.md, "Canary with health gates"): names as the tests rely on them, spelled out here
// rather than imported from src/, so a renamed constant there fails these tests.

export const CANARY_POD_LABEL = 'advanced-daemonset.io/canary';
export const CANARY_VALIDATED_ANNOTATION = 'advanced-daemonset.io/canary-validated';
export const CANARY_PAUSED_ANNOTATION = 'advanced-daemonset.io/canary-paused';
export const CANARY_FAILED_ANNOTATION = 'advanced-daemonset.io/canary-failed';
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

export interface CanaryStatusJson {
  revision: string;
  stableRevision: string;
  nodes: string[];
  phase: 'Observing' | 'Paused' | 'Failed' | 'Promoted';
  reason?: string;
  message?: string;
  since?: string;
  startTime?: string;
}

export function canaryOf(ds: AdsJson): CanaryStatusJson | undefined {
  return (ds.status as { canary?: CanaryStatusJson } | undefined)?.canary;
}

/** A RollingUpdate strategy with `canary` (maxUnavailable 1 unless `rollingUpdate` says otherwise). */
export function canaryStrategy(canary: Record<string, unknown>, rollingUpdate: Record<string, unknown> = {}) {
  return { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, ...rollingUpdate, canary } };
}

/** Waits until the DaemonSet's status.canary satisfies `ok`; returns both. */
export async function waitCanary(
  ns: string,
  name: string,
  what: string,
  ok: (c: CanaryStatusJson, ds: AdsJson) => boolean,
  timeoutMs = 90_000,
): Promise<{ ds: AdsJson; canary: CanaryStatusJson }> {
  let last: unknown;
  try {
    return await eventually(
      `${name}: ${what}`,
      async () => {
        const ds = await getAds(ns, name);
        const canary = canaryOf(ds);
        last = { canary, conditions: ds.status?.conditions };
        return canary !== undefined && ok(canary, ds) && { ds, canary };
      },
      { timeoutMs },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  last status: ${JSON.stringify(last)}`, { cause: err });
  }
}

/** `kubectl annotate` of the DaemonSet (null removes the annotation). */
export async function annotateAds(ns: string, name: string, annotations: Record<string, string | null>): Promise<void> {
  const args = Object.entries(annotations).map(([k, v]) => (v === null ? `${k}-` : `${k}=${v}`));
  await kubectl(['annotate', ADS, name, '-n', ns, '--overwrite', ...args]);
}

/** Waits for an event of the DaemonSet with `reason` (and a message matching `message`); returns it. */
export async function waitEvent(ns: string, name: string, reason: string, message?: RegExp): Promise<EventJson> {
  let seen: EventJson[] = [];
  try {
    return await eventually(`event ${reason} of ${name}${message ? ` matching ${String(message)}` : ''}`, async () => {
      seen = await eventsFor(ns, name);
      return seen.find((e) => e.reason === reason && (!message || message.test(e.message)));
    });
  } catch (err) {
    const events = seen.map((e) => `${e.reason}: ${e.message}`).join('\n    ');
    throw new Error(`${(err as Error).message}\n  events:\n    ${events}`, { cause: err });
  }
}

/** What a watch of the DaemonSet saw: every canary phase (reason) and Progressing condition, in order. */
export interface AdsSample {
  at: number;
  generation?: number;
  observedGeneration?: number;
  updatedNumberScheduled?: number;
  numberAvailable?: number;
  canary?: CanaryStatusJson;
  progressing?: {
    status: string;
    reason?: string;
    message?: string;
    lastTransitionTime?: string;
    lastUpdateTime?: string;
  };
}

/**
 * `kubectl get <ads> NAME --watch -o json`: every version of the DaemonSet the apiserver sent, so a short-lived phase
 * (a canary paused for a few seconds before it fails) is seen however loaded the machine is.
 */
export class AdsWatch {
  readonly samples: AdsSample[] = [];
  private readonly child: ChildProcess;
  private stderr = '';
  private exited: string | undefined;
  private stopping = false;
  private listed!: () => void;
  /** Resolves once kubectl printed the object as it is now (the watch's first list): changes after it are seen. */
  readonly ready = new Promise<void>((resolve) => (this.listed = resolve));

  constructor(ns: string, name: string) {
    const args = ['get', ADS, '-n', ns, '--field-selector', `metadata.name=${name}`, '--watch', '-o', 'json'];
    this.child = spawn(binaries().kubectl, ['--kubeconfig', kubeconfig(), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const splitter = new JsonStreamSplitter();
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      for (const v of splitter.push(chunk)) {
        // A list first (the object as it is now), then one object per change.
        const items = (v as { items?: AdsJson[] }).items ?? [v as AdsJson];
        for (const ds of items) this.add(ds);
        this.listed();
      }
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (c: string) => (this.stderr += c));
    this.child.on('exit', (code, signal) => {
      if (!this.stopping) this.exited = `kubectl watch exited (code ${code}, signal ${signal}): ${this.stderr}`;
    });
  }

  private add(ds: AdsJson): void {
    const p = ds.status?.conditions?.find((c) => c.type === 'Progressing');
    const canary = canaryOf(ds);
    this.samples.push({
      at: Date.now(),
      generation: ds.metadata.generation,
      observedGeneration: ds.status?.observedGeneration,
      updatedNumberScheduled: ds.status?.updatedNumberScheduled,
      numberAvailable: ds.status?.numberAvailable,
      ...(canary ? { canary } : {}),
      ...(p ? { progressing: p } : {}),
    });
  }

  assertAlive(): void {
    if (this.exited) throw new Error(this.exited);
  }

  /** The canary phases of `revision` seen, in order, each once per stretch ("Observing", "Paused", ...). */
  phases(revision: string): string[] {
    this.assertAlive();
    const out: string[] = [];
    for (const s of this.samples) {
      if (s.canary?.revision !== revision) continue;
      if (out.at(-1) !== s.canary.phase) out.push(s.canary.phase);
    }
    return out;
  }

  /**
   * phases(revision) once the latest this watch has seen is `last`: a poll can read the object's newest state before the watch
   * delivers the same change, so a test that waited on a poll waits here for the watch to catch up.
   */
  async phasesThrough(revision: string, last: string, timeoutMs = 30_000): Promise<string[]> {
    await eventually(
      `the DaemonSet watch to see the ${last} canary of ${revision}`,
      async () => this.phases(revision).at(-1) === last,
      { timeoutMs, intervalMs: 200 },
    );
    return this.phases(revision);
  }

  /** The Progressing reasons seen, in order, each once per stretch ("Updating", "CanaryObserving", ...). */
  progressingReasons(): string[] {
    this.assertAlive();
    const out: string[] = [];
    for (const s of this.samples) {
      const r = s.progressing && `${s.progressing.status}/${s.progressing.reason ?? ''}`;
      if (r && out.at(-1) !== r) out.push(r);
    }
    return out;
  }

  stop(): void {
    this.stopping = true;
    this.child.kill('SIGTERM');
  }
}

/**
 * The watches a canary test keeps for its whole length: the safety sampler (maxUnavailable, one pod per node; armed at
 * once, so call it on a rolled-out DaemonSet), every pod state (PodHistory) and every DaemonSet version (AdsWatch).
 */
export interface CanaryWatches {
  sampler: Sampler;
  history: PodHistory;
  pods: PodWatch;
  ds: AdsWatch;
  stop(): void;
}

export async function startCanaryWatches(
  f: { ns: string; group: string },
  name: string,
  maxUnavailable = 1,
): Promise<CanaryWatches> {
  const sampler = await Sampler.start({
    namespace: f.ns,
    name,
    nodeSelector: `e2e-group=${f.group}`,
    maxUnavailable,
    maxPodsPerNode: 1,
  });
  sampler.arm();
  const history = new PodHistory();
  const pods = await PodWatch.start(f.ns, `app=${name}`, (_w, ev) => history.record(ev.pod, ev.at));
  for (const p of pods.list()) history.record(p);
  const ds = new AdsWatch(f.ns, name);
  // Before the caller changes the object: a change made before kubectl's first list would be missed, and the
  // first sample would already show it (seen as "True/Updating -> False/ProgressDeadlineExceeded" on a busy machine).
  let listed = false;
  void ds.ready.then(() => (listed = true));
  await eventually(`the watch of ${name} listed`, async () => listed, { timeoutMs: 30_000, intervalMs: 20 });
  return {
    sampler,
    history,
    pods,
    ds,
    stop() {
      sampler.stop();
      pods.stop();
      ds.stop();
    },
  };
}
