// The Prometheus side of the client package's metrics: what src/k8s reports through its providers reaches the
// registry under client-go's names.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { KubeClient } from '../../src/k8s/client.ts';
import { LeaderElector } from '../../src/k8s/leaderelection.ts';
import { Reflector } from '../../src/k8s/reflector.ts';
import { resources } from '../../src/k8s/resources.ts';
import { FakeApiServer, startForSuite } from '../../src/k8s/testing/fake-apiserver.ts';
import type { Pod } from '../../src/k8s/types.ts';
import { WorkQueue } from '../../src/k8s/workqueue.ts';
import { until } from '../../src/testing/wait.ts';
import { registry } from './metrics.ts';

describe('client metrics in the registry', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  startForSuite(server, (c) => (client = c));

  test('named queues export workqueue metrics', async () => {
    const q = new WorkQueue({
      name: 'metrics-test',
      rateLimiter: { when: () => 0, numRequeues: () => 0, forget: () => {} },
    });
    q.add('a');
    const item = await q.get();
    assert.equal(item.shutdown, false);
    const text = await registry.metrics();
    assert.match(text, /workqueue_adds_total\{name="metrics-test"\} 1/);
    assert.match(text, /workqueue_longest_running_processor_seconds\{name="metrics-test"\} \d/);
    q.done('a');
    q.shutDown();
  });

  test('reflectors export their lists, watches and the time of the last event', async () => {
    const pods: Pod[] = [];
    const reflector = new Reflector<Pod>(
      { name: 'metrics-pods', client, type: resources.pods, namespace: 'ns', logger: pino({ level: 'silent' }) },
      {
        replace: (items) => {
          pods.splice(0, pods.length, ...items);
        },
        upsert: (p) => pods.push(p),
        remove() {},
        current: () => undefined,
      },
    );
    const stop = new AbortController();
    const running = reflector.run(stop.signal);
    try {
      await until('a watch', () => server.watchCount === 1, 5_000);
      server.upsert('core/v1/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns' } });
      await until('the event', () => pods.length === 1, 5_000);
      const text = await registry.metrics();
      assert.match(text, /reflector_lists_total\{name="metrics-pods"\} 1/);
      assert.match(text, /reflector_watches_total\{name="metrics-pods"\} 1/);
      assert.match(text, /reflector_last_event_timestamp_seconds\{name="metrics-pods"\} \d{10}/);
    } finally {
      stop.abort();
      await running;
    }
  });
});

describe('leader election in the registry', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  startForSuite(server, (c) => (client = c));

  test('leader_election_master_status is 1 while leading, 0 once released', async () => {
    const elector = new LeaderElector({
      client,
      namespace: 'kube-system',
      name: 'metrics-lease',
      leaseDurationMs: 1000,
      renewDeadlineMs: 400,
      retryPeriodMs: 100,
      logger: pino({ level: 'silent' }),
      callbacks: {
        onStartedLeading: (signal) => new Promise<void>((r) => signal.addEventListener('abort', () => r())),
      },
    });
    const status = async () =>
      /leader_election_master_status\{name="metrics-lease"\} (\d)/.exec(await registry.metrics())?.[1];
    assert.equal(await status(), '0');
    const stop = new AbortController();
    const running = elector.run(stop.signal);
    await until('leading', () => elector.isLeader(), 5_000);
    assert.equal(await status(), '1');
    stop.abort();
    await running;
    assert.equal(await status(), '0');
  });
});
