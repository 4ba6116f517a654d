// The controller shell: its event handlers called directly (what each one queues and observes, as upstream's
// TestUpdateNode), one sync at a time against the in-process fake apiserver counting the creates, deletes and events
// it sends (upstream's expectSyncDaemonSets), and what the real apiserver cannot show on demand: the moment
// leadership ends in the middle of a sync. The two-replica takeover with SIGSTOP runs on the real control plane
// (e2e/controller/leader-fencing.e2e.ts).
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { KubeClient } from '../../src/k8s/client.ts';
import type { ControllerRevision, KubeObject, Node, Pod } from '../../src/k8s/types.ts';
import type { DaemonSet } from '../../src/api/types.ts';
import { toInternal, toV1beta1 } from '../../src/api/conversion.ts';
import { PROGRESSIVE_CREATE_POD_ANNOTATION } from '../../src/api/constants.ts';
import {
  CANARY_FAILED_REASON,
  CANARY_PROMOTED_REASON,
  CANARY_ROLLED_BACK_REASON,
  CANARY_STARTED_REASON,
  FAILED_CREATE_REASON,
  FAILED_DAEMON_POD_REASON,
  SUCCESSFUL_CREATE_REASON,
  SUCCESSFUL_DELETE_REASON,
} from '../../src/daemonset/events.ts';
import { CANARY_POD_LABEL, CANARY_VALIDATED_ANNOTATION } from '../../src/daemonset/constants.ts';
import { CONTROLLER_REVISION_HASH_LABEL as HASH_LABEL } from '../../src/api/constants.ts';
import { isImagePullPod as isPullPod } from '../../src/daemonset/predownload.ts';
import { addNodes, newDaemonSet, newNode, newPod } from '../../src/daemonset/test-fixtures.ts';
import { EventRecorder, type EventRecorderOptions } from '../../src/k8s/events.ts';
import { DeletedFinalStateUnknown } from '../../src/k8s/informer.ts';
import { FakeApiServer, type RequestRecord } from '../../src/k8s/testing/fake-apiserver.ts';
import type { ReconcileResult } from '../runtime/workers.ts';
import { DaemonSetController } from './controller.ts';
import { sleep, until } from '../../src/testing/wait.ts';

const logger = pino({ level: process.env.DEBUG_LOG ?? 'silent' });
/** The controller reads and writes v1beta1, the storage version (the fake apiserver keeps each version apart). */
const DAEMONSETS = 'apps.kruise.io/v1beta1/daemonsets';
const NODES = 'core/v1/nodes';
const PODS = 'core/v1/pods';
const EVENTS = 'core/v1/events';

const isWrite = (r: RequestRecord) => r.method !== 'GET';

/**
 * A fake apiserver for the tests of the calling describe: started before them, its DaemonSets and nodes removed and
 * `stops` aborted after each (each test starts from its own DaemonSet and nodes), stopped after them all.
 */
function withFakeApiServer() {
  const env = {
    server: new FakeApiServer(),
    client: undefined as unknown as KubeClient,
    stops: [] as AbortController[],
  };
  before(async () => {
    await env.server.start();
    env.client = new KubeClient(env.server.restConfig(), { qps: 0 });
  });
  afterEach(() => {
    for (const s of env.stops.splice(0)) s.abort();
    env.server.hook = undefined;
    for (const c of [DAEMONSETS, NODES]) {
      for (const o of env.server.objects(c)) env.server.remove(c, o.metadata.namespace, o.metadata.name!);
    }
  });
  after(async () => {
    env.client.close();
    await env.server.stop();
  });
  return env;
}

describe('DaemonSetController: one writer', { timeout: 60_000 }, () => {
  const env = withFakeApiServer();
  const { server, stops } = env;

  /** A controller with synced caches whose every write (events too) passes `fence`, as run.ts wires it. */
  async function startController(name: string, nodes: number, fence: () => string | undefined) {
    const ds = newDaemonSet({ name, strategy: 'RollingUpdate' });
    ds.metadata.namespace = name;
    server.upsert(DAEMONSETS, toV1beta1(ds) as unknown as KubeObject);
    for (const node of addNodes(nodes, {}, 0)) server.upsert(NODES, { ...node, metadata: { ...node.metadata } });
    const controller = new DaemonSetController({
      client: env.client,
      recorder: new EventRecorder({ client: env.client.withScope({ beforeWrite: fence }), logger }),
      logger,
      workers: 1,
    });
    const informers = new AbortController();
    stops.push(informers);
    controller.startInformers(informers.signal);
    assert.equal(await controller.waitForCacheSync(informers.signal), true);
    const leading = new AbortController();
    stops.push(leading);
    const workers = controller.runWorkers(leading.signal, { beforeWrite: fence });
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
    const stored = () => toInternal(server.get(DAEMONSETS, 'stale', 'stale'));
    await until('2 pods and their status', () => stored().status?.desiredNumberScheduled === 2);
    // Settled (no request for 200 ms, nothing queued): else the status write awaited below could be one left from
    // this first round, written before the newer copy, rather than one planned from our stale copy.
    await until('the controller to settle', async () => {
      const seen = server.requests.length;
      await sleep(200);
      return server.requests.length === seen && controller.queue.len() === 0;
    });
    // A newer writer (the next leader, on a newer spec) writes observedGeneration 2; our cache never hears of it.
    const newer = structuredClone(stored());
    newer.metadata.generation = 2;
    newer.status = { ...newer.status!, observedGeneration: 2, desiredNumberScheduled: 2 };
    server.upsertSilently(DAEMONSETS, toV1beta1(newer) as unknown as KubeObject);
    const before = server.requests.length;
    // A third node: our copy (generation 1) plans a pod for it and a status write (3 desired)...
    for (const node of addNodes(1, {}, 2)) server.upsert(NODES, node);
    controller.queue.add(key);
    // ...which is refused with a Conflict and not retried blindly.
    await until('our status write', () =>
      server.requests.slice(before).some((r) => r.method === 'PATCH' && r.path.endsWith('/daemonsets/stale/status')),
    );
    await sleep(50);
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

describe('DaemonSetController handlers: what each event queues and observes', () => {
  // Handlers read only the caches: no request is made (the client points nowhere).
  const client = new KubeClient({ server: 'http://127.0.0.1:9' }, { qps: 0 });
  after(() => client.close());

  function newController(...daemonSets: DaemonSet[]) {
    const controller = new DaemonSetController({
      client,
      recorder: new EventRecorder({ client, logger }),
      logger,
      workers: 1,
    });
    for (const ds of daemonSets) controller.daemonSets.store.set(`${ds.metadata.namespace}/${ds.metadata.name}`, ds);
    return controller;
  }

  /** The keys waiting in the queue, taken out of it. */
  async function queued(controller: DaemonSetController): Promise<string[]> {
    const keys: string[] = [];
    while (controller.queue.len() > 0) {
      const item = await controller.queue.get();
      if (item.shutdown) break;
      keys.push(item.key);
      controller.queue.done(item.key);
    }
    return keys.sort();
  }

  const foo = newDaemonSet({ name: 'foo' });
  const bar = newDaemonSet({ name: 'bar' });
  const blue = newDaemonSet({ name: 'blue', templateSpec: { nodeSelector: { color: 'blue' } } });
  const withRV = <T extends KubeObject>(o: T, resourceVersion: string): T => ({
    ...o,
    metadata: { ...o.metadata, resourceVersion },
  });
  const orphan = (pod: Pod): Pod => ({ ...pod, metadata: { ...pod.metadata, ownerReferences: [] } });
  const revision = (owner?: DaemonSet): ControllerRevision => ({
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name: 'rev-1',
      namespace: 'default',
      labels: { name: 'simple-daemon', type: 'production' },
      ...(owner
        ? {
            ownerReferences: [
              {
                apiVersion: 'apps.kruise.io/v1alpha1',
                kind: 'DaemonSet',
                name: owner.metadata.name!,
                uid: owner.metadata.uid!,
                controller: true,
              },
            ],
          }
        : {}),
    },
    revision: 1,
  });

  test('addDaemonSet, updateDaemonSet: the DaemonSet is queued', async () => {
    const c = newController(foo);
    c.addDaemonSet(foo);
    assert.deepEqual(await queued(c), ['default/foo']);
    c.updateDaemonSet(foo, withRV(foo, '7'));
    assert.deepEqual(await queued(c), ['default/foo']);
  });

  test('deleteDaemonSet (also a tombstone): queued, and its expectations dropped', async () => {
    const c = newController(foo);
    c.expectations.expectCreations('default/foo', 3);
    assert.notEqual(c.expectations.getExpectations('default/foo'), undefined);
    c.deleteDaemonSet(new DeletedFinalStateUnknown('default/foo', foo));
    assert.deepEqual(await queued(c), ['default/foo']);
    assert.equal(c.expectations.getExpectations('default/foo'), undefined);
  });

  test('addPod of an owned pod: its creation is observed and the owner queued', async () => {
    const c = newController(foo, bar);
    c.expectations.expectCreations('default/foo', 1);
    assert.equal(c.expectations.satisfiedExpectations('default/foo'), false);
    c.addPod(newPod(foo, 'node-0'));
    assert.deepEqual(await queued(c), ['default/foo']);
    assert.equal(c.expectations.satisfiedExpectations('default/foo'), true);
  });

  test('addPod of an orphan: every DaemonSet whose selector matches it is queued (to adopt it)', async () => {
    const other = newDaemonSet({ name: 'other' });
    other.spec.selector = { matchLabels: { name: 'other' } };
    const c = newController(foo, bar, other);
    c.addPod(orphan(newPod(foo, 'node-0')));
    assert.deepEqual(await queued(c), ['default/bar', 'default/foo']);
  });

  test('addPod of a pod of a DaemonSet replaced under the same name (UID differs): treated as an orphan', async () => {
    const c = newController(foo);
    const stale = newPod({ ...foo, metadata: { ...foo.metadata, uid: 'old-uid' } }, 'node-0');
    c.expectations.expectCreations('default/foo', 1);
    c.addPod(stale);
    assert.deepEqual(await queued(c), ['default/foo']);
    assert.equal(c.expectations.satisfiedExpectations('default/foo'), false, 'not counted as our create');
  });

  test('addPod of a pod already terminating: counted as observed deleted', async () => {
    const c = newController(foo);
    const pod = newPod(foo, 'node-0', { deleting: true });
    c.expectations.expectDeletionsOf('default/foo', [`default/${pod.metadata.name}`]);
    assert.equal(c.expectations.satisfiedExpectations('default/foo'), false);
    c.addPod(pod);
    assert.deepEqual(await queued(c), ['default/foo']);
    assert.equal(c.expectations.satisfiedExpectations('default/foo'), true);
  });

  test('updatePod: a resync (same resourceVersion) queues nothing; a change queues the owner', async () => {
    const c = newController(foo);
    const pod = withRV(newPod(foo, 'node-0'), '5');
    c.updatePod(pod, pod);
    assert.deepEqual(await queued(c), []);
    c.updatePod(pod, withRV(pod, '6'));
    assert.deepEqual(await queued(c), ['default/foo']);
  });

  test('updatePod: a pod changing controller queues both; an orphan whose labels changed queues the matching', async () => {
    const c = newController(foo, bar);
    const pod = withRV(newPod(foo, 'node-0'), '5');
    c.updatePod(pod, withRV(newPod(bar, 'node-0', { name: pod.metadata.name }), '6'));
    assert.deepEqual(await queued(c), ['default/bar', 'default/foo']);
    const o = withRV(orphan(newPod(foo, 'node-0', { labels: { name: 'elsewhere' } })), '5');
    const relabelled = withRV(orphan(newPod(foo, 'node-0', { name: o.metadata.name })), '6');
    c.updatePod(o, relabelled);
    assert.deepEqual(await queued(c), ['default/bar', 'default/foo']);
    c.updatePod(relabelled, withRV(relabelled, '7'));
    assert.deepEqual(await queued(c), [], 'an orphan whose labels did not change is nobody’s news');
  });

  test('updatePod to terminating, deletePod (also a tombstone): the deletion is observed and the owner queued', async () => {
    const c = newController(foo);
    const a = withRV(newPod(foo, 'node-0'), '5');
    const b = withRV(newPod(foo, 'node-1'), '5');
    c.expectations.expectDeletionsOf('default/foo', [`default/${a.metadata.name}`, `default/${b.metadata.name}`]);
    c.updatePod(a, withRV(newPod(foo, 'node-0', { name: a.metadata.name, deleting: true }), '6'));
    assert.deepEqual(await queued(c), ['default/foo']);
    assert.equal(c.expectations.satisfiedExpectations('default/foo'), false, 'one deletion still expected');
    c.deletePod(new DeletedFinalStateUnknown(`default/${b.metadata.name}`, b));
    assert.deepEqual(await queued(c), ['default/foo']);
    assert.equal(c.expectations.satisfiedExpectations('default/foo'), true);
  });

  test('addNode: only the DaemonSets that should run on the node are queued', async () => {
    const c = newController(foo, blue);
    c.addNode(newNode('red-node', { color: 'red' }));
    assert.deepEqual(await queued(c), ['default/foo']);
    c.addNode(newNode('blue-node', { color: 'blue' }));
    assert.deepEqual(await queued(c), ['default/blue', 'default/foo']);
  });

  test('updateNode (TestUpdateNode): a heartbeat queues nothing; a label change queues the DaemonSets it affects', async () => {
    const c = newController(foo, blue);
    const node: Node = { ...newNode('n1', { color: 'red' }), status: { conditions: [] } };
    const heartbeat = (n: Node, at: string): Node => ({
      ...withRV(n, at),
      status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: at }] },
    });
    c.updateNode(heartbeat(node, '1'), heartbeat(node, '2'));
    assert.deepEqual(await queued(c), []);
    c.updateNode(heartbeat(node, '2'), heartbeat(newNode('n1', { color: 'blue' }), '3'));
    assert.deepEqual(await queued(c), ['default/blue']);
  });

  test('deleteNode: every DaemonSet is queued', async () => {
    const c = newController(foo, blue);
    c.deleteNode();
    assert.deepEqual(await queued(c), ['default/blue', 'default/foo']);
  });

  test('addHistory, updateHistory, deleteHistory: the owner is queued; an orphan queues the matching', async () => {
    const c = newController(foo, bar);
    const owned = revision(foo);
    c.addHistory(owned);
    assert.deepEqual(await queued(c), ['default/foo']);
    c.updateHistory(owned, withRV(owned, '9'));
    assert.deepEqual(await queued(c), ['default/foo']);
    c.deleteHistory(new DeletedFinalStateUnknown('default/rev-1', owned));
    assert.deepEqual(await queued(c), ['default/foo']);
    c.addHistory(revision());
    assert.deepEqual(await queued(c), ['default/bar', 'default/foo']);
  });
});

// expectSyncDaemonSets: the creates, deletes and events one sync sends.
describe('DaemonSetController syncs', { timeout: 60_000 }, () => {
  const env = withFakeApiServer();
  const { server, stops } = env;

  interface Harness {
    controller: DaemonSetController;
    recorder: EventRecorder;
    key: string;
    namespace: string;
  }

  /** A controller with synced caches (no workers: each test runs the syncs itself) and a DaemonSet on `nodes`. */
  async function setup(
    ds: DaemonSet,
    nodes: number,
    recorderOptions: Partial<EventRecorderOptions> = {},
  ): Promise<Harness> {
    const namespace = ds.metadata.name!;
    ds.metadata.namespace = namespace;
    server.upsert(DAEMONSETS, toV1beta1(ds) as unknown as KubeObject);
    for (const node of addNodes(nodes, {}, 0)) server.upsert(NODES, node);
    const recorder = new EventRecorder({ client: env.client, logger, ...recorderOptions });
    const controller = new DaemonSetController({ client: env.client, recorder, logger, workers: 1 });
    const informers = new AbortController();
    stops.push(informers);
    controller.startInformers(informers.signal);
    assert.equal(await controller.waitForCacheSync(informers.signal), true);
    return { controller, recorder, key: `${namespace}/${namespace}`, namespace };
  }

  /** Daemon pods only: a rollout also creates image pre-download pull pods (imagePreDownload 'pods', the default). */
  const daemonPods = (h: Harness) => (server.objects(PODS, h.namespace) as Pod[]).filter((p) => !isPullPod(p));
  /** The controller's cached pods of the harness's namespace (the pod cache has no namespace index). */
  const cachedPods = (h: Harness) => h.controller.pods.store.list().filter((p) => p.metadata.namespace === h.namespace);
  /** The nodes of the daemon pods, sorted. */
  const podNodes = (h: Harness) =>
    daemonPods(h)
      .map((p) => podNode(p))
      .sort();

  /** Waits until the caches show every pod create and delete and the status write the controller expects. */
  async function settled(h: Harness): Promise<void> {
    await until('expectations satisfied', () => h.controller.expectations.satisfiedExpectations(h.key));
    await until('the cache shows our status write', () => {
      const ds = h.controller.daemonSets.store.get(h.key);
      return ds !== undefined && h.controller.statusVersions.isSatisfied(ds).satisfied;
    });
    await until('the pod cache caught up', () => cachedPods(h).length === server.objects(PODS, h.namespace).length);
  }

  /**
   * Runs one sync of `h.key` and checks the daemon pod creates and deletes it sent (attempted, as upstream's
   * fakePodControl counts them; pull pods not counted) and the events it recorded, read from the fake apiserver's request log. Returns the sync's result
   * or error and the events' reasons.
   */
  async function expectSyncDaemonSets(
    h: Harness,
    want: { creates: number; deletes: number; events: number },
  ): Promise<{ result?: ReconcileResult | void; error?: unknown; reasons: string[] }> {
    const from = server.requests.length;
    let result: ReconcileResult | void = undefined;
    let error: unknown;
    try {
      result = await h.controller.reconcile(h.key);
    } catch (err) {
      error = err;
    }
    await h.recorder.flush();
    const sent = server.requests.slice(from);
    const podsPath = `/api/v1/namespaces/${h.namespace}/pods`;
    const eventsPath = `/api/v1/namespaces/${h.namespace}/events`;
    const creates = sent.filter((r) => r.method === 'POST' && r.path === podsPath && !isPullPod(r.body as Pod)).length;
    const deletes = sent.filter(
      (r) => r.method === 'DELETE' && r.path.startsWith(`${podsPath}/`) && !r.path.includes('-predownload-'),
    ).length;
    const events = sent.filter((r) => r.path.startsWith(eventsPath) && (r.method === 'POST' || r.method === 'PATCH'));
    // A repeated event is a PATCH of the first one's count (the recorder's dedup): its reason is the stored one's.
    const reasons = events.map(
      (r) =>
        (r.body as { reason?: string }).reason ??
        (server.get(EVENTS, h.namespace, r.path.split('/').pop()!) as unknown as { reason: string }).reason,
    );
    assert.deepEqual(
      { creates, deletes, events: events.length },
      want,
      `sync of ${h.key}: events ${reasons.join(', ')}; error ${String(error)}`,
    );
    return { result, error, reasons };
  }

  test('v1beta1 in and out: partitionedScaling limits the first pods as the annotation does; status says updateRevision', async () => {
    // Written in v1beta1 (a v1beta1 manifest): the field, no annotation.
    const ds = newDaemonSet({ name: 'beta', strategy: 'RollingUpdate', rollingUpdate: { partition: 2 } });
    const v1beta1 = toV1beta1(ds) as unknown as { spec: Record<string, unknown> };
    v1beta1.spec.scaleStrategy = { partitionedScaling: true };
    const h = await setup(toInternal(v1beta1), 5);
    const stored = () =>
      server.get(DAEMONSETS, h.namespace, 'beta') as unknown as {
        metadata: { annotations?: Record<string, string> };
        spec: { scaleStrategy?: unknown };
        status?: Record<string, unknown>;
      };
    assert.deepEqual(stored().spec.scaleStrategy, { partitionedScaling: true });
    assert.equal(
      stored().metadata.annotations?.[PROGRESSIVE_CREATE_POD_ANNOTATION],
      undefined,
      'stored as v1beta1 says it',
    );
    // The cache holds the internal model, where the v1alpha1 annotation stands for the field.
    const cached = h.controller.daemonSets.store.get(h.key)!;
    assert.equal(cached.apiVersion, 'apps.kruise.io/v1alpha1');
    assert.equal(cached.metadata.annotations?.[PROGRESSIVE_CREATE_POD_ANNOTATION], 'true');
    // Progressive creation: the 2 nodes of the partition get no first pod.
    await expectSyncDaemonSets(h, { creates: 3, deletes: 0, events: 3 });
    await settled(h);
    const status = stored().status!;
    assert.match(String(status.updateRevision), /^[a-z0-9]+$/, 'the status write is v1beta1');
    assert.equal(status.daemonSetHash, undefined);
    assert.equal(h.controller.daemonSets.store.get(h.key)!.status?.daemonSetHash, status.updateRevision);
  });

  test('a new DaemonSet on 5 nodes: 5 creates, 5 SuccessfulCreate events, then nothing more to do', async () => {
    const h = await setup(newDaemonSet({ name: 'fresh' }), 5);
    const { reasons } = await expectSyncDaemonSets(h, { creates: 5, deletes: 0, events: 5 });
    assert.deepEqual(new Set(reasons), new Set([SUCCESSFUL_CREATE_REASON]));
    assert.deepEqual(podNodes(h), ['node-0', 'node-1', 'node-2', 'node-3', 'node-4']);
    await settled(h);
    await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 0 });
  });

  test('claims: a matching orphan adopted and counted; a pod of another controller in the namespace neither counted nor claimed; while the DaemonSet is being deleted, no orphan adopted', async () => {
    const ds = newDaemonSet({ name: 'claiming' });
    const h = await setup(ds, 3);
    const inNamespace = (p: Pod, ownerReferences = p.metadata.ownerReferences): Pod =>
      ({ ...p, metadata: { ...p.metadata, namespace: h.namespace, ownerReferences } }) as Pod;
    const orphan = server.upsert(PODS, inNamespace(newPod(ds, 'node-0'), []));
    const foreign = server.upsert(PODS, inNamespace(newPod(newDaemonSet({ name: 'other' }), 'node-1')));
    await until('the cache sees both pods', () =>
      [orphan, foreign].every((p) => h.controller.pods.store.has(`${h.namespace}/${p.metadata.name}`)),
    );
    const from = server.requests.length;
    // node-0's orphan is adopted and counted; node-1's pod of another controller is not ours: a pod is created there.
    await expectSyncDaemonSets(h, { creates: 2, deletes: 0, events: 2 });
    const podPatches = (since: number) =>
      server.requests
        .slice(since)
        .filter((r) => r.method === 'PATCH' && r.path.includes('/pods/') && !r.path.endsWith('/status'))
        .map((r) => r.path.split('/').pop());
    assert.deepEqual(podPatches(from), [orphan.metadata.name], 'the orphan adopted, the foreign pod left alone');
    assert.equal(
      server.get(PODS, h.namespace, foreign.metadata.name!)?.metadata.ownerReferences?.[0]?.uid,
      'other-uid',
      'the foreign pod keeps its controller',
    );
    await settled(h);

    const deleting = server.get(DAEMONSETS, h.namespace, h.namespace)!;
    server.upsert(DAEMONSETS, {
      ...deleting,
      metadata: { ...deleting.metadata, deletionTimestamp: new Date().toISOString(), finalizers: ['test/hold'] },
    });
    await until(
      'the cache sees the deletion',
      () => !!h.controller.daemonSets.store.get(h.key)?.metadata.deletionTimestamp,
    );
    const late = server.upsert(PODS, inNamespace(newPod(ds, 'node-2', { name: 'late-orphan' }), []));
    await until('the cache sees the late orphan', () =>
      h.controller.pods.store.has(`${h.namespace}/${late.metadata.name}`),
    );
    const beforeDeleting = server.requests.length;
    await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 0 });
    assert.deepEqual(podPatches(beforeDeleting), [], 'no orphan adopted by a DaemonSet being deleted');
  });

  test('KruisePodReady (the default gate): one patch per pod right after its create, which holds back neither the sync nor the next one, and is never sent twice', async () => {
    // burstReplicas 2 on 4 nodes: two creating syncs. Every pods/status patch is held unanswered until released.
    const h = await setup(newDaemonSet({ name: 'gated', burstReplicas: 2 }), 4);
    const readinessPatches = () =>
      server.requests.filter(
        (r) => r.method === 'PATCH' && r.path.startsWith(`/api/v1/namespaces/${h.namespace}/pods/`),
      );
    const held: (() => void)[] = [];
    server.hook = (r, res) => {
      if (r.method !== 'PATCH' || !r.path.endsWith('/status') || !r.path.includes('/pods/')) return false;
      held.push(() => {
        // Applied when answered, as the apiserver would have: the condition added to the pod's conditions.
        const name = r.path.split('/')[6]!;
        const pod = server.get(PODS, h.namespace, name) as Pod;
        const added = (r.body as { status: { conditions: NonNullable<Pod['status']>['conditions'] } }).status
          .conditions!;
        const stored = server.upsert(PODS, {
          ...pod,
          status: { ...pod.status, conditions: [...(pod.status?.conditions ?? []), ...added] },
        } as KubeObject);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(stored));
      });
      return true;
    };
    // The sync returns with its two patches unanswered.
    await expectSyncDaemonSets(h, { creates: 2, deletes: 0, events: 2 });
    await until('both patches sent', () => readinessPatches().length === 2);
    // The creates are in the cache: the next sync creates the other two, and plans no patch for the first two.
    await settled(h);
    await expectSyncDaemonSets(h, { creates: 2, deletes: 0, events: 2 });
    await until('four patches sent', () => readinessPatches().length === 4);
    const sent = readinessPatches().map((r) => r.path);
    assert.equal(new Set(sent).size, 4, `one per pod: ${sent.join(', ')}`);
    // A sync while all four are still in flight plans none of them again.
    await settled(h);
    await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 0 });
    assert.equal(readinessPatches().length, 4, 'none planned again while in flight');
    for (const answer of held.splice(0)) answer();
    server.hook = undefined;
    await h.controller.executor.readinessWritesSettled();
    await until('the cache shows every KruisePodReady', () =>
      cachedPods(h).every((p) => p.status?.conditions?.some((c) => c.type === 'KruisePodReady' && c.status === 'True')),
    );
    await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 0 });
    assert.equal(readinessPatches().length, 4, 'once set, never again');
  });

  test('KruisePodReady: a patch right after the create that fails is planned again by the next sync', async () => {
    const h = await setup(newDaemonSet({ name: 'regated' }), 2);
    const readinessPatches = () =>
      server.requests.filter(
        (r) => r.method === 'PATCH' && r.path.startsWith(`/api/v1/namespaces/${h.namespace}/pods/`),
      );
    let refused = 0;
    server.hook = (r, res) => {
      if (r.method !== 'PATCH' || !r.path.endsWith('/status') || refused >= 2) return false;
      refused++;
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'InternalError', code: 500, message: 'etcd' }),
      );
      return true;
    };
    await expectSyncDaemonSets(h, { creates: 2, deletes: 0, events: 2 });
    await h.controller.executor.readinessWritesSettled();
    assert.equal(readinessPatches().length, 2);
    await settled(h);
    await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 0 });
    await until('patched again', () => readinessPatches().length === 4);
    await until('the cache shows every KruisePodReady', () =>
      cachedPods(h).every((p) => p.status?.conditions?.some((c) => c.type === 'KruisePodReady' && c.status === 'True')),
    );
  });

  test('a failed pod is deleted (FailedDaemonPod), and replaced by the next sync', async () => {
    const h = await setup(newDaemonSet({ name: 'failing' }), 2);
    await expectSyncDaemonSets(h, { creates: 2, deletes: 0, events: 2 });
    await settled(h);
    const victim = daemonPods(h).find((p) => podNode(p) === 'node-1')!;
    const failed = server.upsert(PODS, { ...victim, status: { ...victim.status, phase: 'Failed' } } as KubeObject);
    await until(
      'the cache sees the failure',
      () =>
        h.controller.pods.store.get(`${h.namespace}/${victim.metadata.name}`)?.metadata.resourceVersion ===
        failed.metadata.resourceVersion,
    );
    const { reasons } = await expectSyncDaemonSets(h, { creates: 0, deletes: 1, events: 2 });
    assert.deepEqual(reasons.sort(), [FAILED_DAEMON_POD_REASON, SUCCESSFUL_DELETE_REASON]);
    await settled(h);
    // As upstream, the replacement comes with the next sync (the per-node backoff delays deleting a pod that keeps
    // failing, not creating its replacement).
    await expectSyncDaemonSets(h, { creates: 1, deletes: 0, events: 1 });
    assert.deepEqual(podNodes(h), ['node-0', 'node-1']);
  });

  test('a node removed: its pod, pinned to a node that no longer exists, is deleted', async () => {
    const h = await setup(newDaemonSet({ name: 'shrinking' }), 3);
    await expectSyncDaemonSets(h, { creates: 3, deletes: 0, events: 3 });
    await settled(h);
    server.remove(NODES, undefined, 'node-2');
    await until('the cache sees the node gone', () => h.controller.nodes.store.get('node-2') === undefined);
    const { reasons } = await expectSyncDaemonSets(h, { creates: 0, deletes: 1, events: 1 });
    assert.deepEqual(reasons, [SUCCESSFUL_DELETE_REASON]);
    await settled(h);
    assert.deepEqual(podNodes(h), ['node-0', 'node-1']);
  });

  test('a rolling update step (maxUnavailable 1): one old pod deleted, then its replacement created', async () => {
    const h = await setup(newDaemonSet({ name: 'rolling', strategy: 'RollingUpdate' }), 3);
    await expectSyncDaemonSets(h, { creates: 3, deletes: 0, events: 3 });
    await settled(h);
    // The pods run and are ready (no kubelet here), and the template changes.
    await runPods(h);
    await changeDaemonSet(h, newImage('foo/bar:v2'));
    const { reasons } = await expectSyncDaemonSets(h, { creates: 0, deletes: 1, events: 1 });
    assert.deepEqual(reasons, [SUCCESSFUL_DELETE_REASON]);
    await settled(h);
    await expectSyncDaemonSets(h, { creates: 1, deletes: 0, events: 1 });
    const images = daemonPods(h)
      .map((p) => p.spec!.containers[0]!.image)
      .sort();
    assert.deepEqual(images, ['foo/bar', 'foo/bar', 'foo/bar:v2']);
  });

  test('creates refused by a quota (403) stop the slow start at the first failing batch', async () => {
    const h = await setup(newDaemonSet({ name: 'quota' }), 10);
    // The first create is admitted, every later one refused: batch 1 (1 pod) succeeds, batch 2 (2 pods) fails,
    // batches 3 and 4 (4 and 3 pods) are never sent.
    let admitted = 0;
    server.hook = (r, res) => {
      if (r.method !== 'POST' || r.path !== `/api/v1/namespaces/${h.namespace}/pods` || admitted++ < 1) return false;
      res.writeHead(403, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'Forbidden',
          code: 403,
          message: 'pods "x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1',
        }),
      );
      return true;
    };
    const { error, reasons } = await expectSyncDaemonSets(h, { creates: 3, deletes: 0, events: 3 });
    assert.ok(error instanceof AggregateError && error.errors.length === 2, String(error));
    assert.deepEqual(reasons.sort(), [FAILED_CREATE_REASON, FAILED_CREATE_REASON, SUCCESSFUL_CREATE_REASON]);
    // The 2 refused and the 7 never sent are not waited for: only the one create made is still expected.
    await settled(h);
    assert.equal(daemonPods(h).length, 1);
    // The next sync starts over with a batch of 1.
    await expectSyncDaemonSets(h, { creates: 1, deletes: 0, events: 1 });
  });

  // ---- canary (src/daemonset/canary/ decides; the shell creates, deletes, patches the canary label, records the
  // events and requeues for the planner's next moment)

  /** Every daemon pod bound to its node, Running and Ready since `since` (no kubelet here); waits for the cache. */
  async function runPods(h: Harness, since = Date.now() - 60_000, status: Partial<Pod['status']> = {}): Promise<void> {
    const at = new Date(since).toISOString().replace(/\.\d+Z$/, 'Z');
    const written = daemonPods(h).map((pod) =>
      server.upsert(PODS, {
        ...pod,
        spec: { ...pod.spec, nodeName: podNode(pod) },
        status: {
          ...pod.status,
          phase: 'Running',
          conditions: [
            ...(pod.status?.conditions ?? []).filter((c) => c.type !== 'Ready'),
            { type: 'Ready', status: 'True', lastTransitionTime: at },
          ],
          ...status,
        },
      } as KubeObject),
    );
    await until('the cache sees the pods running', () =>
      written.every(
        (w) =>
          h.controller.pods.store.get(`${h.namespace}/${w.metadata.name}`)?.metadata.resourceVersion ===
          w.metadata.resourceVersion,
      ),
    );
  }

  /** Writes a change of the stored DaemonSet; waits for the cache to show it. */
  async function changeDaemonSet(h: Harness, change: (ds: DaemonSet) => void): Promise<void> {
    const ds = structuredClone(toInternal(server.get(DAEMONSETS, h.namespace, h.namespace)));
    change(ds);
    const stored = server.upsert(DAEMONSETS, toV1beta1(ds) as unknown as KubeObject);
    await until(
      'the cache sees the DaemonSet change',
      () => h.controller.daemonSets.store.get(h.key)?.metadata.resourceVersion === stored.metadata.resourceVersion,
    );
  }

  const newImage = (image: string) => (ds: DaemonSet) => {
    ds.metadata.generation = (ds.metadata.generation ?? 1) + 1;
    ds.spec.template.spec!.containers[0]!.image = image;
  };

  /** A DaemonSet with `canary` rolled out on 3 nodes (pods running), then given image foo/bar:v2. */
  async function canaryOnNewTemplate(name: string, canary: Record<string, unknown>): Promise<Harness> {
    const h = await setup(newDaemonSet({ name, strategy: 'RollingUpdate', rollingUpdate: { canary } }), 3);
    await expectSyncDaemonSets(h, { creates: 3, deletes: 0, events: 3 });
    await settled(h);
    await runPods(h);
    await changeDaemonSet(h, newImage('foo/bar:v2'));
    // The canary starts on one node: its old pod goes first (recreate, within maxUnavailable 1).
    const { reasons } = await expectSyncDaemonSets(h, { creates: 0, deletes: 1, events: 2 });
    assert.deepEqual(reasons.sort(), [CANARY_STARTED_REASON, SUCCESSFUL_DELETE_REASON]);
    await settled(h);
    await expectSyncDaemonSets(h, { creates: 1, deletes: 0, events: 1 });
    await settled(h);
    return h;
  }

  const canaryPodOf = (h: Harness) => daemonPods(h).find((p) => p.spec!.containers[0]!.image === 'foo/bar:v2');
  const canaryOf = (h: Harness) => h.controller.daemonSets.store.get(h.key)!.status!.canary!;
  /** The PATCHes of pod `name` sent since request `from`, by body. */
  const podPatches = (h: Harness, name: string, from: number) =>
    server.requests
      .slice(from)
      .filter((r) => r.method === 'PATCH' && r.path === `/api/v1/namespaces/${h.namespace}/pods/${name}`)
      .map((r) => r.body);

  test('canary: its pod is created labelled, the label is put back when lost; the validated annotation promotes it (CanaryPromoted), the label goes and the rollout goes on', async () => {
    const h = await canaryOnNewTemplate('canary-manual', { nodes: 1, validation: 'Manual' });
    const pod = canaryPodOf(h)!;
    assert.equal(pod.metadata.labels?.[CANARY_POD_LABEL], 'true', 'the canary pod is created labelled');
    await runPods(h);
    const v2 = canaryOf(h).revision;
    assert.equal(pod.metadata.labels?.[HASH_LABEL], v2);

    // Someone removes the label: the next sync puts it back (a pod patch), and does nothing else.
    const unlabelled = structuredClone(server.get(PODS, h.namespace, pod.metadata.name!)) as Pod;
    delete unlabelled.metadata.labels![CANARY_POD_LABEL];
    const written = server.upsert(PODS, unlabelled as KubeObject);
    await until(
      'the cache sees the label gone',
      () =>
        h.controller.pods.store.get(`${h.namespace}/${pod.metadata.name}`)?.metadata.resourceVersion ===
        written.metadata.resourceVersion,
    );
    let from = server.requests.length;
    await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 0 });
    assert.deepEqual(podPatches(h, pod.metadata.name!, from), [
      { metadata: { labels: { [CANARY_POD_LABEL]: 'true' } } },
    ]);
    assert.equal(
      (server.get(PODS, h.namespace, pod.metadata.name!) as Pod).metadata.labels?.[CANARY_POD_LABEL],
      'true',
    );
    await settled(h);

    // Promoted by the annotation: the event, the label removed, and the rolling update deletes the next old pod.
    await changeDaemonSet(h, (ds) => {
      ds.metadata.annotations = { ...ds.metadata.annotations, [CANARY_VALIDATED_ANNOTATION]: v2 };
    });
    from = server.requests.length;
    const { reasons } = await expectSyncDaemonSets(h, { creates: 0, deletes: 1, events: 2 });
    assert.deepEqual(reasons.sort(), [CANARY_PROMOTED_REASON, SUCCESSFUL_DELETE_REASON]);
    assert.deepEqual(podPatches(h, pod.metadata.name!, from), [{ metadata: { labels: { [CANARY_POD_LABEL]: null } } }]);
    assert.equal(
      (server.get(PODS, h.namespace, pod.metadata.name!) as Pod).metadata.labels?.[CANARY_POD_LABEL],
      undefined,
    );
    await settled(h);
    assert.equal(canaryOf(h).phase, 'Promoted');
  });

  test("canary events are not drowned by the rollout's pod events: they have a spam-filter bucket of their own", async () => {
    // A burst of 3 per object: the 3 creates use it up, so the delete that starts the canary is dropped, not its event.
    const ds = newDaemonSet({
      name: 'canary-spam',
      strategy: 'RollingUpdate',
      rollingUpdate: { canary: { nodes: 1 } },
    });
    const h = await setup(ds, 3, { spamBurst: 3 });
    await expectSyncDaemonSets(h, { creates: 3, deletes: 0, events: 3 });
    await settled(h);
    await runPods(h);
    await changeDaemonSet(h, newImage('foo/bar:v2'));
    const { reasons } = await expectSyncDaemonSets(h, { creates: 0, deletes: 1, events: 1 });
    assert.deepEqual(reasons, [CANARY_STARTED_REASON]);
  });

  test('canary, Auto: once its pod is available the sync is requeued for the promotion time, and nothing else is done', async () => {
    const h = await canaryOnNewTemplate('canary-auto', { nodes: 1, duration: '5m', noRestartsDuration: '1m' });
    await runPods(h, Date.now());
    // The first sync on the ready pod writes status; the next one has only the canary's clock to wait for.
    await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 0 });
    await settled(h);
    const { result } = await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 0 });
    const requeue = (result as ReconcileResult | undefined)?.requeueAfterMs;
    assert.ok(
      requeue !== undefined && requeue > 290_000 && requeue <= 300_000,
      `requeued for the end of the 5m duration: ${requeue} ms`,
    );
    assert.equal(canaryOf(h).phase, 'Observing');
  });

  test('canary failing (restarts over autoFail.maxRestarts): CanaryFailed, its node goes back to the stable revision (a pod of the old template, unlabelled), then CanaryRolledBack', async () => {
    const h = await canaryOnNewTemplate('canary-fail', {
      nodes: 1,
      autoPause: { enabled: true, maxRestarts: 1 },
      autoFail: { enabled: true, maxRestarts: 2 },
    });
    const v1 = daemonPods(h).find((p) => p.spec!.containers[0]!.image === 'foo/bar')!.metadata.labels![HASH_LABEL];
    const crashed = new Date(Date.now() - 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    const pod = canaryPodOf(h)!;
    await runPods(h, Date.now(), {
      containerStatuses: [
        {
          name: 'foo',
          image: 'foo/bar:v2',
          imageID: '',
          ready: false,
          restartCount: 3,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
          lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: crashed } },
        },
      ],
    } as Partial<Pod['status']>);
    const { reasons } = await expectSyncDaemonSets(h, { creates: 0, deletes: 1, events: 2 });
    assert.deepEqual(reasons.sort(), [CANARY_FAILED_REASON, SUCCESSFUL_DELETE_REASON]);
    assert.equal(
      server.objects(PODS, h.namespace).some((p) => p.metadata.name === pod.metadata.name),
      false,
    );
    await settled(h);
    assert.deepEqual([canaryOf(h).phase, canaryOf(h).reason], ['Failed', 'CrashLoopBackOff']);
    await expectSyncDaemonSets(h, { creates: 1, deletes: 0, events: 1 });
    await settled(h);
    const back = daemonPods(h).find((p) => podNode(p) === podNode(pod))!;
    assert.equal(back.spec!.containers[0]!.image, 'foo/bar', 'built from the stable revision');
    assert.equal(back.metadata.labels?.[HASH_LABEL], v1);
    assert.equal(back.metadata.labels?.[CANARY_POD_LABEL], undefined, 'not a canary pod');
    await runPods(h);
    const rolledBack = await expectSyncDaemonSets(h, { creates: 0, deletes: 0, events: 1 });
    assert.deepEqual(rolledBack.reasons, [CANARY_ROLLED_BACK_REASON]);
  });
});

/** The node a daemon pod is pinned to (its matchFields affinity), bound or not. */
function podNode(pod: Pod): string | undefined {
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  return pod.spec?.nodeName ?? terms?.[0]?.matchFields?.[0]?.values?.[0];
}
