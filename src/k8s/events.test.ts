import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { KubeClient } from './client.ts';
import type { KubeObject } from './types.ts';
import { EventRecorder, type CoreEvent } from './events.ts';
import { FakeApiServer, startForSuite } from './testing/fake-apiserver.ts';

const ds: KubeObject = {
  apiVersion: 'apps.kruise.io/v1alpha1',
  kind: 'DaemonSet',
  metadata: { name: 'ds', namespace: 'ns', uid: 'ds-uid', resourceVersion: '7' },
};

describe('EventRecorder', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  startForSuite(server, (c) => (client = c));

  const eventWrites = () => server.requests.filter((r) => r.path.startsWith('/api/v1/namespaces/ns/events'));

  test('writes core/v1 Events as client-go does, and patches count for repeats', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const recorder = new EventRecorder({ client, host: 'node-a', clock: () => now, logger: pino({ level: 'silent' }) });
    recorder.event(ds, 'Normal', 'SuccessfulCreate', 'Created pod: ds-abcde');
    await recorder.flush();
    const [create] = eventWrites();
    assert.equal(create?.method, 'POST');
    const ev = create?.body as CoreEvent;
    assert.match(ev.metadata.name ?? '', /^ds\.[0-9a-f]+$/);
    assert.deepEqual(ev.involvedObject, {
      apiVersion: 'apps.kruise.io/v1alpha1',
      kind: 'DaemonSet',
      namespace: 'ns',
      name: 'ds',
      uid: 'ds-uid',
      resourceVersion: '7',
    });
    assert.deepEqual(ev.source, { component: 'daemonset-controller', host: 'node-a' });
    assert.equal(ev.type, 'Normal');
    assert.equal(ev.count, 1);
    assert.equal(ev.firstTimestamp, '2026-01-01T00:00:00Z');

    now += 60_000;
    recorder.event(ds, 'Normal', 'SuccessfulCreate', 'Created pod: ds-abcde');
    await recorder.flush();
    const patch = eventWrites().at(-1);
    assert.equal(patch?.method, 'PATCH');
    assert.equal(patch?.contentType, 'application/strategic-merge-patch+json');
    assert.equal(patch?.path, `/api/v1/namespaces/ns/events/${ev.metadata.name}`);
    assert.deepEqual(patch?.body, {
      count: 2,
      lastTimestamp: '2026-01-01T00:01:00Z',
      message: 'Created pod: ds-abcde',
    });

    // A different message is a different event; so is the same one after the 10 min window.
    recorder.event(ds, 'Warning', 'FailedCreate', 'Error creating: quota');
    now += 11 * 60_000;
    recorder.event(ds, 'Normal', 'SuccessfulCreate', 'Created pod: ds-abcde');
    await recorder.close();
    assert.deepEqual(
      eventWrites().map((r) => r.method),
      ['POST', 'PATCH', 'POST', 'POST'],
    );
    recorder.event(ds, 'Normal', 'Ignored', 'after close');
    await recorder.flush();
    assert.equal(eventWrites().length, 4);
  });

  test('write errors are logged, not thrown; the spam filter caps a burst per object', async () => {
    const logs: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (s: string) => void logs.push(s) });
    const recorder = new EventRecorder({ client, logger, spamBurst: 3 });
    server.hook = (r, res) => {
      if (r.method === 'POST') {
        res.writeHead(403, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'events is forbidden' }));
        return true;
      }
      return false;
    };
    const before = server.requests.length;
    for (let i = 0; i < 10; i++) recorder.event(ds, 'Warning', 'FailedDaemonPod', `attempt ${i}`);
    await recorder.flush();
    server.hook = undefined;
    assert.equal(server.requests.length - before, 3);
    assert.equal(logs.filter((l) => /failed to write event/.test(l) && /Forbidden/.test(l)).length, 3);
  });

  test('a spamGroup has a bucket of its own per object: its events pass after routine ones used the burst up', async () => {
    const recorder = new EventRecorder({ client, logger: pino({ level: 'silent' }), spamBurst: 3 });
    const reasons = () => eventWrites().map((r) => (r.body as CoreEvent).reason);
    const before = eventWrites().length;
    for (let i = 0; i < 5; i++) recorder.event(ds, 'Normal', 'SuccessfulCreate', `Created pod: ds-${i}`);
    for (let i = 0; i < 5; i++) recorder.event(ds, 'Normal', 'CanaryStarted', `canary ${i}`, { spamGroup: 'canary' });
    await recorder.flush();
    assert.deepEqual(reasons().slice(before), [
      ...Array<string>(3).fill('SuccessfulCreate'),
      ...Array<string>(3).fill('CanaryStarted'),
    ]);
  });
});
