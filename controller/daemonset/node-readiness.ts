// The node side of spec.nodeReadiness (src/daemonset/node-readiness.ts decides): a queue of node names, woken by the
// nodes, daemon pods and DaemonSets that concern a readiness taint, and a reconcile that patches the node's taints.
// It reads the DaemonSet controller's caches (the same informers, no second copy of the pods) and runs under the same
// leadership. The patch tests the taints it read (JSON patch `test`, or the resourceVersion when the node had none),
// so a taint another writer added meanwhile is never dropped: the test fails, the key is retried on a fresh copy.
import type { DaemonSet } from '../../src/api/types.ts';
import type { KubeClient } from '../../src/k8s/client.ts';
import { ApiError, isNotFound } from '../../src/k8s/errors.ts';
import type { EventRecorder } from '../../src/k8s/events.ts';
import type { Informer } from '../../src/k8s/informer.ts';
import type { Logger } from '../../src/k8s/log.ts';
import { parseTime } from '../../src/k8s/pod.ts';
import { resources } from '../../src/k8s/resources.ts';
import { getTargetNodeName } from '../../src/k8s/scheduling.ts';
import type { Node, Pod } from '../../src/k8s/types.ts';
import { WorkQueue } from '../../src/k8s/workqueue.ts';
import { getControllerOf } from '../../src/daemonset/pods.ts';
import { nodeHasTaint, planNodeReadiness, readinessTaintOf } from '../../src/daemonset/node-readiness.ts';
import { runWorkers, type ReconcileResult } from '../runtime/workers.ts';
import type { DaemonSetMetrics } from './metrics.ts';

export const NODE_READINESS_CONTROLLER = 'daemonset-node-readiness';
/** Pod informer index: pods by the node they are for (spec.nodeName, else the daemon pod's node affinity). */
export const NODE_INDEX = 'node';
export const indexByNode = (pod: Pod): string[] => {
  const name = getTargetNodeName(pod.spec);
  return name ? [name] : [];
};

export interface NodeReadinessOptions {
  nodes: Informer<Node>;
  pods: Informer<Pod>;
  daemonSets: Informer<DaemonSet>;
  client: () => KubeClient;
  recorder: EventRecorder;
  logger: Logger;
  metrics: DaemonSetMetrics;
  /** Called when the manager turns out not to be allowed to patch nodes, or allowed again. */
  onForbiddenChange: () => void;
}

export class NodeReadinessController {
  readonly queue = new WorkQueue({ name: NODE_READINESS_CONTROLLER });
  /** The apiserver refused our last node patch (403): the DaemonSets' NodeReadiness condition says so. */
  forbidden = false;
  private readonly log: Logger;
  /**
   * Nodes told once that no DaemonSet will clear their taint (NodeReadinessTaintKept): the node is looked at again at
   * every heartbeat, and the same Warning each time would only use up the event spam filter's burst.
   */
  private readonly keptSaid = new Set<string>();

  constructor(private readonly o: NodeReadinessOptions) {
    this.log = o.logger.child({ controller: NODE_READINESS_CONTROLLER });
    o.metrics.nodeReadinessTaintedNodes(() => this.taintedNodes());
  }

  /** DaemonSets with spec.nodeReadiness, from the cache. */
  private readinessDaemonSets(): DaemonSet[] {
    return this.o.daemonSets.store.list().filter((ds) => readinessTaintOf(ds) !== undefined);
  }

  // Event handlers: enqueue node names only.

  /** A node added or changed: looked at when some DaemonSet names a readiness taint. */
  nodeChanged(node: Node): void {
    if (this.readinessDaemonSets().length > 0) this.queue.add(node.metadata.name ?? '');
  }

  /** A daemon pod of a DaemonSet with spec.nodeReadiness changed: its node. */
  podChanged(pod: Pod): void {
    const ref = getControllerOf(pod);
    if (ref?.kind !== 'DaemonSet') return;
    const ds = this.o.daemonSets.store.getByName(pod.metadata.namespace, ref.name);
    if (!ds || !readinessTaintOf(ds)) return;
    const node = getTargetNodeName(pod.spec);
    if (node) this.queue.add(node);
  }

  /** A DaemonSet with spec.nodeReadiness added, changed or deleted: the nodes that carry its taint. */
  daemonSetChanged(ds: DaemonSet): void {
    const t = readinessTaintOf(ds);
    if (!t) return;
    const continuous = ds.spec.nodeReadiness?.mode === 'Continuous';
    for (const node of this.o.nodes.store.list()) {
      if (continuous || nodeHasTaint(node, t)) this.queue.add(node.metadata.name ?? '');
    }
  }

  async run(signal: AbortSignal): Promise<void> {
    for (const ds of this.readinessDaemonSets()) this.daemonSetChanged(ds);
    await runWorkers(this.queue, 1, (name) => this.reconcile(name), {
      controller: NODE_READINESS_CONTROLLER,
      signal,
      logger: this.log,
    });
  }

  async reconcile(name: string): Promise<ReconcileResult | void> {
    const node = this.o.nodes.store.get(name);
    if (!node || node.metadata.deletionTimestamp) {
      for (const k of this.keptSaid) if (k.startsWith(`${name}\u0000`)) this.keptSaid.delete(k);
      return;
    }
    const daemonSets = this.readinessDaemonSets();
    if (daemonSets.length === 0) return;
    const onNode = this.o.pods.store.byIndex(NODE_INDEX, name);
    const podOn = (ds: DaemonSet) =>
      onNode.find((p) => !p.metadata.deletionTimestamp && getControllerOf(p)?.uid === ds.metadata.uid);
    const now = Date.now();
    const plan = planNodeReadiness(node, daemonSets, podOn, now);
    for (const e of plan.events) {
      if (e.reason === 'NodeReadinessTaintKept') {
        if (this.keptSaid.has(`${name}\u0000${e.message}`)) continue;
        this.keptSaid.add(`${name}\u0000${e.message}`);
      }
      this.o.recorder.event(node, e.type, e.reason, e.message);
    }
    if (plan.taints) {
      try {
        await this.o.client().patch(resources.nodes, { name }, taintsPatch(node, plan.taints), { type: 'json' });
      } catch (err) {
        if (isNotFound(err)) return;
        if (err instanceof ApiError && err.code === 403) {
          this.log.warn(
            { node: name, err },
            'may not patch nodes: readiness taints stay (chart value nodeReadiness.manageTaints)',
          );
          this.setForbidden(true);
          return { requeueAfterMs: FORBIDDEN_RETRY_MS };
        }
        // 422 from a failed `test`: the node changed since the cache's copy; its update event brings it back.
        if (err instanceof ApiError && (err.code === 422 || err.code === 409)) return { requeue: true };
        throw err;
      }
      this.setForbidden(false);
      const created = parseTime(node.metadata.creationTimestamp);
      for (const t of plan.removed) {
        this.log.info({ node: name, taint: `${t.key}:${t.effect}` }, 'readiness taint removed');
        if (created !== undefined) this.o.metrics.nodeReadinessTaintRemoved(t.key, (now - created) / 1000);
      }
      for (const t of plan.added)
        this.log.info({ node: name, taint: `${t.key}:${t.effect}` }, 'readiness taint put back');
    }
    return plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : undefined;
  }

  private setForbidden(forbidden: boolean): void {
    if (this.forbidden === forbidden) return;
    this.forbidden = forbidden;
    this.o.onForbiddenChange();
  }

  /** Per readiness taint key, how many cached nodes carry it (the tainted-nodes gauge, read at scrape time). */
  private taintedNodes(): Map<string, number> {
    const out = new Map<string, number>();
    const taints = this.readinessDaemonSets().flatMap((ds) => readinessTaintOf(ds) ?? []);
    if (taints.length === 0) return out;
    for (const t of taints) out.set(t.key, 0);
    for (const node of this.o.nodes.store.list()) {
      for (const key of new Set(taints.filter((t) => nodeHasTaint(node, t)).map((t) => t.key)))
        out.set(key, (out.get(key) ?? 0) + 1);
    }
    return out;
  }
}

/** How soon a node whose patch was forbidden is tried again (an operator may grant the right meanwhile). */
const FORBIDDEN_RETRY_MS = 60_000;

/**
 * A JSON patch from the node's taints as cached to `taints`: `test` the taints read (or, when the node had none, its
 * resourceVersion), then set them. Another writer's change in between fails the test (422) instead of being lost.
 */
export function taintsPatch(node: Node, taints: unknown[]): unknown[] {
  const current = node.spec?.taints;
  const guard =
    current && current.length > 0
      ? { op: 'test', path: '/spec/taints', value: current }
      : { op: 'test', path: '/metadata/resourceVersion', value: node.metadata.resourceVersion };
  return [guard, { op: 'add', path: '/spec/taints', value: taints }];
}
