// The controller shell against the in-process fake apiserver, for what the real one cannot show on demand: the
// moment leadership ends in the middle of a sync. The two-replica takeover with SIGSTOP runs on the real control
// plane (e2e/controller/leader-fencing.e2e.ts).
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { KubeClient } from '../../src/k8s/client.ts';
import type { KubeObject } from '../../src/k8s/types.ts';
import type { DaemonSet } from '../../src/api/types.ts';
import { addNodes, newDaemonSet } from '../../src/daemonset/test-fixtures.ts';
import { EventRecorder } from '../runtime/events.ts';
import { FakeApiServer, type RequestRecord } from '../runtime/testing/fake-apiserver.ts';
import { DaemonSetController } from './controller.ts';

const logger = pino({ level: process.env.DEBUG_LOG ?? 'silent' });
const DAEMONSETS = 'apps.kruise.io/v1alpha1/daemonsets';
const NODES = 'core/v1/nodes';
const PODS = 'core/v1/pods';

const isWrite = (r: RequestRecord) => r.method !== 'GET';

async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('DaemonSetController: one writer', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  const stops: AbortController[] = [];
  before(async () => {
    await server.start();
    client = new KubeClient(server.restConfig(), { qps: 0 });
  });
  afterEach(() => {
    for (const s of stops.splice(0)) s.abort();
    server.hook = undefined;
    // Each test starts from its own DaemonSet and nodes.
    for (const c of [DAEMONSETS, NODES]) {
      for (const o of server.objects(c)) server.remove(c, o.metadata.namespace, o.metadata.name!);
    }
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  /** A controller with synced caches whose every write (events too) passes `fence`, as run.ts wires it. */
  async function startController(name: string, nodes: number, fence: () => string | undefined) {
    const ds = newDaemonSet({ name, strategy: 'RollingUpdate' });
    ds.metadata.namespace = name;
    server.upsert(DAEMONSETS, ds as unknown as KubeObject);
    for (const node of addNodes(nodes, {}, 0)) server.upsert(NODES, { ...node, metadata: { ...node.metadata } });
    const controller = new DaemonSetController({
      client,
      recorder: new EventRecorder({ client: client.withScope({ beforeWrite: fence }), logger }),
      logger,
      workers: 1,
    });
    const informers = new AbortController();
    stops.push(informers);
    controller.startInformers(informers.signal);
    assert.equal(await controller.waitForCacheSync(informers.signal), true);
    const leading = new AbortController();
    stops.push(leading);
    const workers = controller.runWorkers(leading.signal, fence);
    return { controller, key: `${name}/${name}`, leading, workers };
  }

  test('while the fence is closed no request that writes reaches the apiserver; once open the sync goes on', async () => {
    let fence: string | undefined = 'lease default/ads last renewed 12000 ms ago (renew deadline 10000 ms)';
    const before = server.requests.length;
    const { controller, key, leading, workers } = await startController('fenced', 4, () => fence);
    // The sync ran and failed on its refused writes: requeued with backoff.
    await until('a refused sync', () => controller.queue.numRequeues(key) > 0);
    assert.deepEqual(server.requests.slice(before).filter(isWrite), [], 'nothing written');
    fence = undefined;
    controller.queue.add(key);
    await until('4 pods', () => server.objects(PODS, 'fenced').length === 4);
    leading.abort();
    await workers;
  });

  test('a status computed from an older copy never replaces a newer one (resourceVersion precondition)', async () => {
    const { controller, key, leading, workers } = await startController('stale', 2, () => undefined);
    const stored = () => server.get(DAEMONSETS, 'stale', 'stale') as unknown as DaemonSet;
    await until('2 pods and their status', () => stored().status?.desiredNumberScheduled === 2);
    // A newer writer (the next leader, on a newer spec) writes observedGeneration 2; our cache never hears of it.
    const newer = structuredClone(stored());
    newer.metadata.generation = 2;
    newer.status = { ...newer.status!, observedGeneration: 2, desiredNumberScheduled: 2 };
    server.upsertSilently(DAEMONSETS, newer as unknown as KubeObject);
    const before = server.requests.length;
    controller.queue.add(key);
    // Our copy (generation 1) plans a status write; it is refused with a Conflict and not retried blindly.
    await until('our status write', () =>
      server.requests.slice(before).some((r) => r.method === 'PATCH' && r.path.endsWith('/daemonsets/stale/status')),
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(stored().status?.observedGeneration, 2, 'the newer status stands');
    leading.abort();
    await workers;
  });

  test('leadership ending during a slow-start create stops it: no request is sent after the abort', async () => {
    const state: { leading?: AbortController; abortedAt: number } = { abortedAt: Infinity };
    // Pod creates take 100 ms; leadership ends while the second batch (2 pods) is in flight.
    const isCreate = (q: RequestRecord) => q.method === 'POST' && q.path === '/api/v1/namespaces/interrupted/pods';
    server.hook = (r, res) => {
      if (!isCreate(r)) return false;
      const creates = server.requests.filter(isCreate).length;
      if (creates === 3 && state.leading) {
        state.abortedAt = server.requests.length;
        state.leading.abort(new Error('leader election lost'));
      }
      setTimeout(() => {
        res.writeHead(201, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            ...(r.body as object),
            metadata: { ...(r.body as KubeObject).metadata, name: `p${creates}` },
          }),
        );
      }, 100);
      return true;
    };
    const started = await startController('interrupted', 16, () =>
      state.leading?.signal.aborted ? 'not the leader' : undefined,
    );
    state.leading = started.leading;
    await started.workers; // resolves: the in-flight reconcile ends with its requests aborted
    assert.equal(server.requests.filter(isCreate).length, 3, 'batches of 1 and 2, then none: 16 planned');
    assert.deepEqual(
      server.requests.slice(state.abortedAt).filter(isWrite),
      [],
      'no write after leadership ended (not the rest of the batch, not status, not events)',
    );
  });
});
