// Lease-based leader election with client-go's algorithm (tools/leaderelection). Hand-written:
// client-node ships only the generated CoordinationV1Api, and the npm packages that exist are
// small, lightly used, and differ from client-go in the details that matter (judging expiry by
// the local observation time rather than the holder's clock; release on shutdown; renew deadline).
//
//   acquire: every retryPeriod (jittered), tryAcquireOrRenew until it succeeds
//   lead:    onStartedLeading(signal); every retryPeriod renew; leadership is lost, and the signal
//            aborts, once renewDeadline has passed since the last successful renewal began, or as
//            soon as the Lease shows another holder
//   fence:   fence() says whether a write may go out now: only while leading and before that
//            deadline, by our monotonic clock. Others take the lease leaseDuration after they saw our
//            last renewal, which began before it landed, so renewDeadline < leaseDuration leaves a
//            margin for a write already on the wire. The Kubernetes API has no fencing tokens, so this
//            client-side check (made right before each write is sent) is the guard there is. A leader's
//            own renewals pass it too: one begun before a freeze is not sent after the deadline.
//   stop:    the signal aborts, we wait for onStartedLeading to return, then release the lease
//            (holderIdentity '' and leaseDurationSeconds 1, client-go's ReleaseOnCancel) so a
//            standby takes over at its next retry instead of after leaseDuration. When leadership
//            is lost instead, run() returns at once without waiting for in-flight work, so the
//            process can exit as controller-runtime's manager does ("leader election lost").
//   clocks:  durations (expiry, deadlines) on the monotonic clock, which a wall-clock step cannot
//            move; wall time only for the Lease's own acquireTime and renewTime.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { followSignals, type KubeClient } from './client.ts';
import { WriteRefusedError, isAlreadyExists, isConflict, isNotFound } from './errors.ts';
import { resources } from './resources.ts';
import type { Lease } from './types.ts';
import { monotonic, type Clock } from './clock.ts';
import { defaultLogger, type Logger } from './log.ts';

/**
 * Whether an elector leads its lease, as client-go's leaderelection.MetricsProvider (tools/leaderelection/metrics.go):
 * the package records, the process exports. controller/runtime/metrics.ts sets the Prometheus one
 * (leader_election_master_status), as controller-runtime's pkg/metrics/leaderelection.go does in its init().
 */
export interface LeaderElectionMetricsProvider {
  on(name: string): void;
  off(name: string): void;
}

const noMetrics: LeaderElectionMetricsProvider = { on() {}, off() {} };
let metricsProvider = noMetrics;

/** Sets the provider of electors made from now on (client-go's leaderelection.SetProvider). */
export function setLeaderElectionMetricsProvider(provider: LeaderElectionMetricsProvider): void {
  metricsProvider = provider;
}

export interface LeaderCallbacks {
  /** Runs while we lead. `signal` aborts when leadership ends; return once work has stopped. */
  onStartedLeading(signal: AbortSignal): Promise<void> | void;
  /** Leadership ended (lost, or released on shutdown). */
  onStoppedLeading?(): void;
  /** The observed leader changed (including to ourselves). */
  onNewLeader?(identity: string): void;
}

export interface LeaderElectionOptions {
  client: KubeClient;
  namespace: string;
  /** Lease name, e.g. "advanced-daemonset-controller". */
  name: string;
  /** Default `<hostname>_<uuid>`, as controller-runtime. */
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Release the lease when stopped (default true). */
  releaseOnCancel?: boolean;
  callbacks: LeaderCallbacks;
  logger?: Logger;
  /** Wall-clock milliseconds, for the Lease's timestamps only. Injectable for tests. */
  clock?: Clock;
  /** Monotonic milliseconds, for every duration. Injectable for tests. */
  monotonicClock?: Clock;
}

/** client-go's JitterFactor for the acquire/renew loop. */
const JITTER_FACTOR = 1.2;

type LeaseSpec = NonNullable<Lease['spec']>;

/** One acquire-or-renew round: ours now, someone else's (not expired), or not known (an error, a conflict). */
type AttemptResult = 'held' | 'heldByOther' | 'failed';

/** A Kubernetes MicroTime: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  readonly identity: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly log: Logger;
  /** opts.client, its writes fenced while we lead (fence()): see the constructor. */
  private readonly client: KubeClient;
  private readonly metrics = metricsProvider;
  private readonly clock: Clock;
  private readonly monotonic: Clock;
  /** Monotonic time at which the last successful acquire or renew began: the fence runs from it. */
  private renewedAt = -Infinity;
  /** The last lease spec we saw, and when we (by our monotonic clock) saw it change. */
  private observedSpec: LeaseSpec | undefined;
  private observedRaw = '';
  private observedTime = 0;
  private observedLease: Lease | undefined;
  private reportedLeader: string | undefined;
  private leading = false;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.identity = opts.identity ?? `${hostname()}_${randomUUID()}`;
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (this.leaseDurationMs <= this.renewDeadlineMs)
      throw new Error('leaseDuration must be greater than renewDeadline');
    if (this.renewDeadlineMs <= JITTER_FACTOR * this.retryPeriodMs) {
      throw new Error('renewDeadline must be greater than retryPeriod*1.2');
    }
    this.log = (opts.logger ?? defaultLogger()).child({
      lease: `${opts.namespace}/${opts.name}`,
      identity: this.identity,
    });
    this.clock = opts.clock ?? Date.now;
    this.monotonic = opts.monotonicClock ?? monotonic;
    // A leader's renewal passes the fence right before it is sent, as the writes the leadership guards do: the renew
    // loop checks the deadline when a round begins, and a process frozen (SIGSTOP, a paused VM) after that check
    // would otherwise send the renewal when it resumes, after another candidate took the Lease. The update carries
    // the resourceVersion it read, so the apiserver refuses it then (409), but "one writer at a time" means nothing
    // is sent at all (e2e/controller/leader-fencing.e2e.ts). Campaigning and releasing are not fenced.
    this.client = opts.client.withScope({
      beforeWrite: () => (this.leading ? this.fence() : undefined),
      onLateWrite: ({ verb, path, pausedMs }) =>
        this.log.error(
          { write: `${verb} ${path}`, pausedMs: Math.round(pausedMs) },
          'a lease renewal may have reached the apiserver after its renew deadline: the process was paused while sending it',
        ),
    });
    this.metrics.off(opts.name);
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Why a write must not go out now, or undefined while we lead and our last successful renewal began less than
   * renewDeadline ago (by the monotonic clock). Called right before each write is sent.
   */
  fence(): string | undefined {
    if (!this.leading) return `not the leader of lease ${this.opts.namespace}/${this.opts.name}`;
    const sinceRenew = this.monotonic() - this.renewedAt;
    if (sinceRenew >= this.renewDeadlineMs) {
      return `lease ${this.opts.namespace}/${this.opts.name} last renewed ${Math.round(sinceRenew)} ms ago (renew deadline ${this.renewDeadlineMs} ms)`;
    }
    return undefined;
  }

  /** The holder we last observed ('' when the lease is free or unknown). */
  getLeader(): string {
    return this.observedSpec?.holderIdentity ?? '';
  }

  /**
   * Campaigns until leading, leads until the lease is lost or `signal` aborts, then returns.
   * Resolves (never rejects) in every case; `isLeader()` is false afterwards. Run it again to
   * re-campaign, or exit the process as controller-runtime does when leadership is lost.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (!(await this.acquire(signal))) return;
    const leadership = new AbortController();
    const stopLeading = () => leadership.abort(signal.reason);
    signal.addEventListener('abort', stopLeading, { once: true });
    this.setLeading(true);
    const work = Promise.resolve()
      .then(() => this.opts.callbacks.onStartedLeading(leadership.signal))
      .catch((err: unknown) => this.log.error({ err }, 'onStartedLeading failed'));
    try {
      await this.renewLoop(leadership.signal);
    } finally {
      signal.removeEventListener('abort', stopLeading);
      // No write passes the fence from here on, whatever the in-flight work does next.
      this.setLeading(false);
      if (!leadership.signal.aborted) leadership.abort(new Error('leader election lost'));
      if (signal.aborted) {
        await work;
        if (this.opts.releaseOnCancel ?? true) await this.release();
      }
      try {
        this.opts.callbacks.onStoppedLeading?.();
      } catch (err) {
        this.log.error({ err }, 'onStoppedLeading failed');
      }
    }
  }

  private async acquire(signal: AbortSignal): Promise<boolean> {
    this.log.info('attempting to acquire leader lease');
    while (!signal.aborted) {
      if ((await this.tryAcquireOrRenew(signal)) === 'held') {
        this.log.info('successfully acquired lease');
        return true;
      }
      if (!(await pause(jittered(this.retryPeriodMs), signal))) break;
    }
    return false;
  }

  /**
   * Renews every retryPeriod; returns on abort, when renewDeadline passes since the last successful renewal began
   * (the moment fence() closes), or as soon as the Lease shows another holder.
   */
  private async renewLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (!(await pause(this.retryPeriodMs, signal))) return;
      let result: AttemptResult = 'failed';
      for (;;) {
        const left = this.renewedAt + this.renewDeadlineMs - this.monotonic();
        if (signal.aborted || left <= 0) break;
        // As each API request's deadline (followSignals): released when the attempt ends, so a renew every
        // retryPeriod leaves no timer or combined signal behind on the long-lived leadership signal.
        const deadline = followSignals([signal], Math.max(1, Math.ceil(left)));
        try {
          result = await this.tryAcquireOrRenew(deadline.signal);
        } finally {
          deadline.release();
        }
        if (result !== 'failed') break;
        const wait = Math.min(this.retryPeriodMs, this.renewedAt + this.renewDeadlineMs - this.monotonic());
        if (wait > 0 && !(await pause(wait, signal))) return;
      }
      if (signal.aborted) return;
      if (result === 'heldByOther') {
        this.log.error({ leader: this.getLeader() }, 'leader election lost: the lease has another holder');
        return;
      }
      if (result !== 'held') {
        this.log.error(
          { renewDeadlineMs: this.renewDeadlineMs, sinceRenewMs: Math.round(this.monotonic() - this.renewedAt) },
          'leader election lost: failed to renew the lease within the renew deadline',
        );
        return;
      }
    }
  }

  /**
   * One round of client-go's tryAcquireOrRenew (https://github.com/kubernetes/client-go/blob/master/tools/leaderelection/leaderelection.go):
   * the leader's optimistic renewal first; else create the lease if missing; otherwise take it
   * when it is ours, free, or not renewed for leaseDuration as measured by *our* clock since we
   * last saw it change; write with the resourceVersion we read (a Conflict means someone else won).
   */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<AttemptResult> {
    const { namespace, name } = this.opts;
    const client = this.client;
    const now = this.clock();
    const began = this.monotonic();
    const durationSeconds = Math.round(this.leaseDurationMs / 1000);
    // client-go's fast path: the leader, its last observation still valid, renews the lease as it last saw it: one
    // request instead of a read and a write. Written with that resourceVersion, so if anyone wrote the lease since,
    // it is a Conflict; any failure falls back to reading the lease.
    const observed = this.observedLease;
    const observedMs = (observed?.spec?.leaseDurationSeconds ?? 0) * 1000;
    if (observed?.spec?.holderIdentity === this.identity && this.observedTime + observedMs > began) {
      const renewal: Lease = {
        ...observed,
        spec: { ...observed.spec, leaseDurationSeconds: durationSeconds, renewTime: microTime(now) },
      };
      try {
        const updated = await client.update<Lease>(resources.leases, renewal, { signal });
        this.observe(updated, began);
        this.renewedAt = began;
        return 'held';
      } catch (err) {
        // Refused by the fence: the renew deadline has passed, and no other write would go out either.
        if (signal.aborted || err instanceof WriteRefusedError) return 'failed';
        this.log.debug({ err }, 'optimistic lease renewal failed; reading the lease');
      }
    }
    let current: Lease;
    try {
      current = await client.get<Lease>(resources.leases, { namespace, name }, { signal });
    } catch (err) {
      if (!isNotFound(err)) {
        this.log.warn({ err }, 'error retrieving lease');
        return 'failed';
      }
      const lease: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { namespace, name },
        spec: {
          holderIdentity: this.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      };
      try {
        const created = await client.create<Lease>(resources.leases, lease, { signal });
        this.observe(created, began);
        this.renewedAt = began;
        return 'held';
      } catch (createErr) {
        if (!isAlreadyExists(createErr)) this.log.warn({ err: createErr }, 'error creating lease');
        return 'failed';
      }
    }

    const spec = current.spec ?? {};
    const raw = JSON.stringify(spec);
    if (raw !== this.observedRaw) this.observe(current, began);
    else this.observedLease = current;

    const holder = spec.holderIdentity ?? '';
    const leaseMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder && holder !== this.identity && this.observedTime + leaseMs > this.monotonic()) {
      return 'heldByOther'; // and not expired
    }

    const ours = holder === this.identity;
    const next: Lease = {
      ...current,
      spec: {
        ...spec,
        holderIdentity: this.identity,
        leaseDurationSeconds: durationSeconds,
        renewTime: microTime(now),
        acquireTime: ours && spec.acquireTime ? spec.acquireTime : microTime(now),
        leaseTransitions: ours ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      const updated = await client.update<Lease>(resources.leases, next, { signal });
      this.observe(updated, began);
      this.renewedAt = began;
      return 'held';
    } catch (err) {
      if (!isConflict(err)) this.log.warn({ err }, 'error updating lease');
      return 'failed';
    }
  }

  /** Gives the lease up: holder '' and a 1 s duration, so standbys take over at their next retry. */
  private async release(): Promise<void> {
    const lease = this.observedLease;
    if (!lease || lease.spec?.holderIdentity !== this.identity) return;
    const now = this.clock();
    const released: Lease = {
      ...lease,
      spec: {
        ...lease.spec,
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: microTime(now),
        renewTime: microTime(now),
        leaseTransitions: lease.spec.leaseTransitions ?? 0,
      },
    };
    try {
      const updated = await this.client.update<Lease>(resources.leases, released, {
        signal: AbortSignal.timeout(this.renewDeadlineMs),
      });
      this.observe(updated, this.monotonic());
      this.log.info('released leader lease');
    } catch (err) {
      this.log.warn({ err }, 'failed to release lease');
    }
  }

  /** `at`: monotonic time of the observation. */
  private observe(lease: Lease, at: number): void {
    this.observedLease = lease;
    this.observedSpec = lease.spec ?? {};
    this.observedRaw = JSON.stringify(this.observedSpec);
    this.observedTime = at;
    const holder = this.observedSpec.holderIdentity ?? '';
    if (holder && holder !== this.reportedLeader) {
      this.reportedLeader = holder;
      if (holder !== this.identity) this.log.info({ leader: holder }, 'new leader elected');
      try {
        this.opts.callbacks.onNewLeader?.(holder);
      } catch (err) {
        this.log.error({ err }, 'onNewLeader failed');
      }
    }
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    if (leading) this.metrics.on(this.opts.name);
    else this.metrics.off(this.opts.name);
  }
}

/** client-go's wait.Jitter: d + rand·factor·d. */
function jittered(ms: number): number {
  return ms + Math.random() * JITTER_FACTOR * ms;
}

async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
