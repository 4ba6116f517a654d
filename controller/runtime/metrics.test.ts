// The Prometheus side of the client package's metrics: what src/k8s reports through its providers reaches the
// registry under client-go's names.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/k8s/workqueue.ts';
import { registry } from './metrics.ts';

describe('client metrics in the registry', () => {
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
});
