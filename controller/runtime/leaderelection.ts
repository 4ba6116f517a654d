// Lease-based leader election with client-go's algorithm (tools/leaderelection). Hand-written:
// client-node ships only the generated CoordinationV1Api, and the npm packages that exist are
// small, lightly used, and differ from client-go in the details that matter (judging expiry by
// the local observation time rather than the holder's clock; release on shutdown; renew deadline).
//
//   acquire: every retryPeriod (jittered), tryAcquireOrRenew until it succeeds
//   lead:    onStartedLeading(signal); every retryPeriod renew; if no renew succeeds within
//            renewDeadline, leadership is lost: the signal aborts
//   stop:    the signal aborts, we wait for onStartedLeading to return, then release the lease
//            (holderIdentity '' and leaseDurationSeconds 1, client-go's ReleaseOnCancel) so a
//            standby takes over at its next retry instead of after leaseDuration
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlreadyExists, isConflict, isNotFound, resources, type KubeClient } from '../../src/k8s/client.ts';
import type { Lease } from '../../src/k8s/types.ts';
import { defaultLogger, type Logger } from './log.ts';
import { leaderElectionMasterStatus } from './metrics.ts';

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
  /** Wall-clock milliseconds. Injectable for tests. */
  clock?: () => number;
}

/** client-go's JitterFactor for the acquire/renew loop. */
const JITTER_FACTOR = 1.2;

type LeaseSpec = NonNullable<Lease['spec']>;

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
  private readonly clock: () => number;
  /** The last lease spec we saw, and when we (by our clock) saw it change. */
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
    leaderElectionMasterStatus.set({ name: opts.name }, 0);
  }

  isLeader(): boolean {
    return this.leading;
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
      if (!leadership.signal.aborted) leadership.abort(new Error('leader election lost'));
      await work;
      this.setLeading(false);
      if (signal.aborted && (this.opts.releaseOnCancel ?? true)) await this.release();
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
      if (await this.tryAcquireOrRenew(signal)) {
        this.log.info('successfully acquired lease');
        return true;
      }
      if (!(await pause(jittered(this.retryPeriodMs), signal))) break;
    }
    return false;
  }

  /** Renews every retryPeriod; returns when a renewal cycle misses renewDeadline, or on abort. */
  private async renewLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (!(await pause(this.retryPeriodMs, signal))) return;
      const deadline = this.clock() + this.renewDeadlineMs;
      let renewed = false;
      while (!signal.aborted && this.clock() < deadline) {
        const attempt = AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, deadline - this.clock()))]);
        if (await this.tryAcquireOrRenew(attempt)) {
          renewed = true;
          break;
        }
        const wait = Math.min(this.retryPeriodMs, deadline - this.clock());
        if (wait > 0 && !(await pause(wait, signal))) return;
      }
      if (signal.aborted) return;
      if (!renewed) {
        this.log.error({ renewDeadlineMs: this.renewDeadlineMs }, 'failed to renew lease; leadership lost');
        return;
      }
    }
  }

  /**
   * One round of client-go's tryAcquireOrRenew: create the lease if missing; otherwise take it
   * when it is ours, free, or not renewed for leaseDuration as measured by *our* clock since we
   * last saw it change; write with the resourceVersion we read (a Conflict means someone else won).
   */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const { client, namespace, name } = this.opts;
    const now = this.clock();
    const durationSeconds = Math.round(this.leaseDurationMs / 1000);
    let current: Lease;
    try {
      current = await client.get<Lease>(resources.leases, { namespace, name }, { signal });
    } catch (err) {
      if (!isNotFound(err)) {
        this.log.warn({ err }, 'error retrieving lease');
        return false;
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
        this.observe(created, now);
        return true;
      } catch (createErr) {
        if (!isAlreadyExists(createErr)) this.log.warn({ err: createErr }, 'error creating lease');
        return false;
      }
    }

    const spec = current.spec ?? {};
    const raw = JSON.stringify(spec);
    if (raw !== this.observedRaw) this.observe(current, now);
    else this.observedLease = current;

    const holder = spec.holderIdentity ?? '';
    const leaseMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder && holder !== this.identity && this.observedTime + leaseMs > now) {
      return false; // held by someone else and not expired
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
      this.observe(updated, now);
      return true;
    } catch (err) {
      if (!isConflict(err)) this.log.warn({ err }, 'error updating lease');
      return false;
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
      const updated = await this.opts.client.update<Lease>(resources.leases, released, {
        signal: AbortSignal.timeout(this.renewDeadlineMs),
      });
      this.observe(updated, now);
      this.log.info('released leader lease');
    } catch (err) {
      this.log.warn({ err }, 'failed to release lease');
    }
  }

  private observe(lease: Lease, now: number): void {
    this.observedLease = lease;
    this.observedSpec = lease.spec ?? {};
    this.observedRaw = JSON.stringify(this.observedSpec);
    this.observedTime = now;
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
    leaderElectionMasterStatus.set({ name: this.opts.name }, leading ? 1 : 0);
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
