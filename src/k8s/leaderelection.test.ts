// Leader election against the in-process fake apiserver, for what a real apiserver will not do
// on demand: two candidates racing for the same resourceVersion (a Lease conflict), and renewals
// failing. The two-manager takeover on the real control plane is an e2e test.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { KubeClient } from './client.ts';
import type { Lease } from './types.ts';
import { LeaderElector, setLeaderElectionMetricsProvider, type LeaderElectionOptions } from './leaderelection.ts';
import { FakeApiServer, startForSuite } from './testing/fake-apiserver.ts';
import { sleep, until as waitUntil } from '../testing/wait.ts';

const LEASES = 'coordination.k8s.io/v1/leases';
const logger = pino({ level: 'silent' });
const timing = { leaseDurationMs: 1000, renewDeadlineMs: 400, retryPeriodMs: 100 };
/** What the electors report through the metrics provider, by lease name (1 leading, 0 not). */
const leading = new Map<string, number>();
setLeaderElectionMetricsProvider({ on: (name) => leading.set(name, 1), off: (name) => leading.set(name, 0) });

/** Waits for `cond`; this file's waits are bounded at 1800 ms unless a test says otherwise. */
const until = (what: string, cond: () => boolean, timeoutMs = 1800) => waitUntil(what, cond, timeoutMs);

describe('LeaderElector', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  startForSuite(server, (c) => (client = c));

  const lease = (name: string) => server.get(LEASES, 'kube-system', name) as Lease | undefined;
  /** An elector for lease kube-system/`name` with this file's timing, as identity "me" unless `o` says otherwise. */
  const newElector = (name: string, o: Omit<LeaderElectionOptions, 'client' | 'namespace' | 'name'>) =>
    new LeaderElector({ client, namespace: 'kube-system', name, identity: 'me', ...timing, logger, ...o });

  test('racing candidates: one leads; on shutdown it releases and the other takes over', async () => {
    // A free lease: both candidates PUT with the same resourceVersion, one gets a Conflict.
    server.upsert(LEASES, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'race', namespace: 'kube-system' },
      spec: { holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 3 },
    });
    let leaders = 0;
    let maxLeaders = 0;
    const stopped: string[] = [];
    const newLeaders: string[] = [];
    const make = (identity: string) =>
      newElector('race', {
        identity,
        callbacks: {
          onStartedLeading: async (signal) => {
            leaders++;
            maxLeaders = Math.max(maxLeaders, leaders);
            await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
            leaders--;
          },
          onStoppedLeading: () => stopped.push(identity),
          onNewLeader: (id) => newLeaders.push(`${identity} sees ${id}`),
        },
      });
    const a = make('a');
    const b = make('b');
    const stopA = new AbortController();
    const stopB = new AbortController();
    const runA = a.run(stopA.signal);
    const runB = b.run(stopB.signal);
    await until('a leader', () => a.isLeader() || b.isLeader());
    await sleep(250); // a few renew rounds
    assert.equal(maxLeaders, 1);
    const [first, second, stopFirst, runFirst] = a.isLeader() ? [a, b, stopA, runA] : [b, a, stopB, runB];
    assert.equal(lease('race')?.spec?.holderIdentity, first.identity);
    assert.equal(lease('race')?.spec?.leaseTransitions, 4);
    assert.equal(second.getLeader(), first.identity);
    assert.ok(
      server.requests.some((r) => r.method === 'PUT'),
      'acquired by update',
    );
    assert.equal(leading.get('race'), 1, 'reported as leading');

    const released = Date.now();
    stopFirst.abort();
    await runFirst;
    assert.deepEqual(stopped, [first.identity]);
    assert.equal(first.isLeader(), false);
    // Released, so the standby takes over at its next retry, well before leaseDuration.
    await until('takeover', () => second.isLeader(), 900);
    assert.ok(Date.now() - released < 900);
    assert.equal(maxLeaders, 1);
    assert.equal(lease('race')?.spec?.holderIdentity, second.identity);
    assert.equal(lease('race')?.spec?.leaseTransitions, 5);
    assert.ok(newLeaders.includes(`${second.identity} sees ${first.identity}`));

    (second === a ? stopA : stopB).abort();
    await Promise.all([runA, runB]);
    assert.equal(lease('race')?.spec?.holderIdentity, '');
    assert.equal(lease('race')?.spec?.leaseDurationSeconds, 1);
  });

  test('a lease held by someone else is taken only after leaseDuration of our own observation', async () => {
    server.upsert(LEASES, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'ghost', namespace: 'kube-system' },
      // A renewTime far in the future must not matter: expiry is judged by our clock.
      spec: {
        holderIdentity: 'ghost',
        leaseDurationSeconds: 1,
        renewTime: '2999-01-01T00:00:00.000000Z',
        leaseTransitions: 0,
      },
    });
    const elector = newElector('ghost', {
      callbacks: { onStartedLeading: () => {} },
    });
    const ac = new AbortController();
    const started = Date.now();
    const run = elector.run(ac.signal);
    await until('acquired', () => elector.isLeader());
    assert.ok(Date.now() - started >= 1000, 'waited for the lease to expire');
    assert.equal(lease('ghost')?.spec?.leaseTransitions, 1);
    ac.abort();
    await run;
  });

  test('renewals failing past renewDeadline lose leadership (no release)', async () => {
    let stoppedCalled = false;
    let leaderSignal: AbortSignal | undefined;
    const elector = newElector('flaky', {
      callbacks: {
        onStartedLeading: (signal) => {
          leaderSignal = signal;
        },
        onStoppedLeading: () => (stoppedCalled = true),
      },
    });
    const ac = new AbortController();
    const run = elector.run(ac.signal);
    await until('leading', () => elector.isLeader());
    assert.ok(lease('flaky'), 'created the lease');
    server.hook = (r, res) => {
      if (r.method === 'PUT' && r.path.includes('/leases/')) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 500, reason: 'InternalError', message: 'etcd down' }));
        return true;
      }
      return false;
    };
    const failedAt = Date.now();
    await run; // returns by itself: leadership lost
    server.hook = undefined;
    assert.equal(ac.signal.aborted, false);
    assert.equal(elector.isLeader(), false);
    assert.equal(stoppedCalled, true);
    assert.equal(leaderSignal?.aborted, true);
    const lostAfter = Date.now() - failedAt;
    assert.ok(lostAfter >= 300 && lostAfter < 1000, `lost after ${lostAfter} ms`);
    assert.equal(lease('flaky')?.spec?.holderIdentity, 'me', 'not released: we could not write');
  });

  test("a leader renews with one request each time, no read (client-go's optimistic renewal)", async () => {
    const elector = newElector('cheap', { callbacks: { onStartedLeading: () => {} } });
    const ac = new AbortController();
    const run = elector.run(ac.signal);
    await until('leading', () => elector.isLeader());
    const from = server.requests.length;
    const renewTime = () => lease('cheap')?.spec?.renewTime;
    const first = renewTime();
    await until('several renewals', () => server.requests.slice(from).filter((r) => r.method === 'PUT').length >= 4);
    const sent = server.requests.slice(from).filter((r) => r.path.endsWith('/leases/cheap'));
    assert.deepEqual(new Set(sent.map((r) => r.method)), new Set(['PUT']), 'no GET while the lease is ours');
    assert.notEqual(renewTime(), first, 'renewed');
    assert.equal(elector.fence(), undefined);
    ac.abort();
    await run;
  });

  test('fence: open while renewals land; closed once renewDeadline passes by the monotonic clock (a frozen process)', async () => {
    let skewMs = 0; // added to the monotonic clock: a SIGSTOP'd process finds it far ahead when resumed
    let leaderSignal: AbortSignal | undefined;
    const elector = newElector('frozen', {
      monotonicClock: () => performance.now() + skewMs,
      callbacks: { onStartedLeading: (signal) => void (leaderSignal = signal) },
    });
    assert.match(elector.fence() ?? '', /not the leader of lease kube-system\/frozen/);
    const ac = new AbortController();
    const run = elector.run(ac.signal);
    await until('leading', () => elector.isLeader());
    // Several renewals: the fence stays open all along.
    for (let i = 0; i < 5; i++) {
      assert.equal(elector.fence(), undefined);
      await sleep(100);
    }
    skewMs = 10_000;
    assert.match(elector.fence() ?? '', /last renewed \d+ ms ago \(renew deadline 400 ms\)/, 'closed at once');
    await run; // and leadership ends at the renew loop's next turn, without another renewal
    assert.equal(ac.signal.aborted, false);
    assert.equal(leaderSignal?.aborted, true);
    assert.match(elector.fence() ?? '', /not the leader/);
  });

  /**
   * An elector for lease `name` whose monotonic clock jumps 10 s ahead (a process frozen, then resumed) at the
   * `freezeAtCheck`-th fence check of the next lease write once `armed()` is called: its client's own check runs
   * right before the elector's fence each time (withScope: the outer scope first).
   */
  const freezingElector = (name: string, freezeAtCheck: number, log: pino.Logger) => {
    let skewMs = 0;
    let checks = -1;
    const freezing = client.withScope({
      beforeWrite: () => {
        if (checks >= 0 && ++checks === freezeAtCheck) skewMs = 10_000;
        return undefined;
      },
    });
    const elector = new LeaderElector({
      client: freezing,
      namespace: 'kube-system',
      name,
      identity: 'me',
      ...timing,
      logger: log,
      monotonicClock: () => performance.now() + skewMs,
      callbacks: { onStartedLeading: () => {} },
    });
    return { elector, arm: () => (checks = 0) };
  };
  const leaseRequests = (name: string, from: number) =>
    server.requests.slice(from).filter((r) => r.path.endsWith(`/leases/${name}`));

  test('a renewal begun before a freeze is not sent after the renew deadline; leadership is lost', async () => {
    // Frozen after the renew loop found the deadline ahead, before the request's first check: on resuming, the
    // renewal must not go out (another candidate may hold the Lease by then).
    const { elector, arm } = freezingElector('paused', 1, logger);
    const run = elector.run(new AbortController().signal);
    await until('leading', () => elector.isLeader());
    const renewed = lease('paused')?.spec?.renewTime;
    const from = server.requests.length;
    arm();
    await run;
    assert.deepEqual(
      leaseRequests('paused', from).map((r) => r.method),
      [],
      'nothing sent once the fence closed: neither the renewal nor a read of the lease',
    );
    assert.equal(lease('paused')?.spec?.renewTime, renewed, 'not renewed');
    assert.equal(lease('paused')?.spec?.holderIdentity, 'me', 'not released either: leadership was lost');
    assert.match(elector.fence() ?? '', /not the leader/);
  });

  test('a renewal sent as the fence closed is logged as an error with the write and the pause', async () => {
    // Frozen right after the request's check on the socket (HTTP/1.1: before the request, on the socket, after the
    // send): the renewal went out, and the check after the send finds the fence closed.
    const lines: { level: number; msg: string; write?: string; pausedMs?: number }[] = [];
    const log = pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { elector, arm } = freezingElector('late', 3, log);
    const run = elector.run(new AbortController().signal);
    await until('leading', () => elector.isLeader());
    const from = server.requests.length;
    arm();
    await run;
    assert.deepEqual(
      leaseRequests('late', from).map((r) => r.method),
      ['PUT'],
      'the renewal went out',
    );
    const late = lines.filter((l) => l.write !== undefined);
    assert.deepEqual(
      late.map((l) => [l.msg, l.write]),
      [
        [
          'a lease renewal may have reached the apiserver after its renew deadline: the process was paused while sending it',
          'update /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/late',
        ],
      ],
    );
    assert.equal(typeof late[0]?.pausedMs, 'number');
    assert.ok(
      lines.some((l) => /^leader election lost/.test(l.msg)),
      'and leadership is lost: the renewal began before the freeze',
    );
  });

  test('a lease taken by another holder ends leadership at the next renewal, not after renewDeadline', async () => {
    const elector = newElector('stolen', {
      callbacks: { onStartedLeading: () => {} },
    });
    const run = elector.run(new AbortController().signal);
    await until('leading', () => elector.isLeader());
    const current = lease('stolen')!;
    server.upsert(LEASES, { ...current, spec: { ...current.spec, holderIdentity: 'other' } });
    const takenAt = performance.now();
    await run;
    const lostAfter = performance.now() - takenAt;
    assert.ok(lostAfter < timing.renewDeadlineMs, `lost after ${Math.round(lostAfter)} ms`);
    assert.equal(elector.fence() !== undefined, true);
    assert.equal(lease('stolen')?.spec?.holderIdentity, 'other', 'never written back');
  });

  test('lost leadership returns at once without waiting for in-flight work; shutdown waits for it', async () => {
    const work: { signal?: AbortSignal; finish?: () => void } = {};
    const make = (name: string) =>
      newElector(name, {
        callbacks: {
          // In-flight work that ignores the abort for a while (a reconcile between two awaits).
          onStartedLeading: (signal) =>
            new Promise<void>((resolve) => {
              work.signal = signal;
              work.finish = resolve;
            }),
        },
      });
    const lost = make('lost-fast');
    const run = lost.run(new AbortController().signal);
    await until('leading', () => lost.isLeader());
    const current = lease('lost-fast')!;
    server.upsert(LEASES, { ...current, spec: { ...current.spec, holderIdentity: 'other' } });
    await run; // resolves although the work never finished
    assert.equal(work.signal?.aborted, true);
    work.finish?.();

    const stopping = make('graceful');
    const ac = new AbortController();
    let returned = false;
    const run2 = stopping.run(ac.signal).then(() => (returned = true));
    await until('leading', () => stopping.isLeader());
    ac.abort();
    await sleep(50);
    assert.equal(returned, false, 'a shutdown waits for the work');
    assert.equal(stopping.fence() !== undefined, true, 'and no write passes meanwhile');
    work.finish?.();
    await run2;
    assert.equal(lease('graceful')?.spec?.holderIdentity, '', 'then releases');
  });

  test('a wall-clock jump changes nothing: durations are monotonic', async () => {
    let jumpMs = 0;
    const elector = newElector('walljump', {
      clock: () => Date.now() + jumpMs,
      callbacks: { onStartedLeading: () => {} },
    });
    const ac = new AbortController();
    const run = elector.run(ac.signal);
    await until('leading', () => elector.isLeader());
    jumpMs = 3_600_000; // NTP steps the wall clock an hour ahead
    const renewTime = () => Date.parse(lease('walljump')?.spec?.renewTime ?? '');
    await until('a renewal with the new wall time', () => renewTime() > Date.now() + 3_000_000);
    assert.equal(elector.isLeader(), true);
    assert.equal(elector.fence(), undefined);
    ac.abort();
    await run;
  });
});
