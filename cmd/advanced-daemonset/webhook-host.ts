// The webhook half of the manager: certificate, server, and (out of cluster) registration.
// In a cluster the certificate comes from the chart's certificate mode; out of cluster
// (`--webhook-host 127.0.0.1`) the manager makes its own and registers the webhook
// configurations, and the CRD's conversion webhook, by URL, as kruise-manager does with WEBHOOK_HOST.
//
// Where the manager makes its own certificate (self-signed, webhook-host), start-up never waits
// for the apiserver (certs/startup.ts): the server starts at once with the certificate the cert
// dir holds from an earlier run, and the steps that need the apiserver (the Secret, caBundle,
// registering the configurations) run in the background, retried with backoff until they are
// done. A self-signed manager with no usable certificate at all starts its server once the
// bootstrap got one; until then it is not ready, and it does not exit.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { runCertificateBootstrap, servingDnsNames, startupRetryDelayMs } from '../../certs/bootstrap.ts';
import { IN_PROCESS_ISSUER, type CertificateIssuer } from '../../certs/issuer.ts';
import type { CertMode } from '../../certs/modes.ts';
import { planWebhookStartup, readServingFiles } from '../../certs/startup.ts';
import { RESOURCE } from '../../src/api/constants.ts';
import {
  ensureCrdConversion,
  ensureLocalServingCertificate,
  ensureWebhookConfigurations,
  removeWebhookRegistration,
} from '../../certs/webhook-config.ts';
import { isAbortError } from '../../src/k8s/errors.ts';
import { type KubeClient } from '../../src/k8s/client.ts';
import type { WebhookLimits } from '../../webhook/limits.ts';
import { startWebhookServer, type WebhookServer } from '../../webhook/server.ts';
import { registry } from '../../controller/runtime/metrics.ts';

export interface ManagedWebhookOptions {
  certDir: string;
  port: number;
  /** Out-of-cluster host (IP or DNS name) the apiserver reaches us at; undefined in a cluster. */
  host?: string;
  /**
   * With `host`: leave the webhook configurations and the CRD's conversion URL registered when stopping. By default
   * they are removed, since fail-closed webhooks that nothing serves refuse every DaemonSet write.
   */
  keepRegistration?: boolean;
  configurationName: string;
  timeoutSeconds: number;
  drainMs: number;
  /** Overrides of the webhook server's limits (webhook/limits.ts). */
  limits?: Partial<WebhookLimits>;
  /** In a cluster: self-signed keeps its own certificate in a Secret; other modes read certDir. */
  certMode: CertMode;
  certSecretName: string;
  serviceName: string;
  /** The pod's namespace: of the Secret and the Service. */
  namespace: string;
  client: KubeClient;
  logger: Logger;
  /** Makes the serving certificates; default: in this process (the manager's: a child process, certs/issuer.ts). */
  issuer?: CertificateIssuer;
  /** The wait before the next attempt of a start-up step after `failures` failures; for tests. */
  retryDelayMs?: (failures: number) => number;
}

export interface ManagedWebhook {
  /** The bound HTTPS port once serving; the configured one before. */
  readonly port: number;
  /** Serving and not draining. */
  ready(): boolean;
  /** Resolves when the steps that need the apiserver are done (rejects only when stopped first). */
  bootstrapped: Promise<void>;
  stop(): Promise<void>;
}

export async function startManagedWebhook(opts: ManagedWebhookOptions, signal: AbortSignal): Promise<ManagedWebhook> {
  const run = new WebhookRun(opts, signal);
  if (opts.host) return startOutOfCluster(opts, opts.host, run);
  if (opts.certMode !== 'self-signed') {
    // cert-manager / external: the certificate is mounted; nothing here needs the apiserver.
    await run.startServer();
    return run.managed(Promise.resolve());
  }
  return startSelfSigned(opts, run);
}

/** One webhook server's life: started once its certificate is there, stopped (and unregistered) by stop(). */
class WebhookRun {
  readonly log: Logger;
  /** Aborts when the manager stops or the webhook is stopped: ends the background registration and bootstrap. */
  readonly background: AbortSignal;
  server: WebhookServer | undefined;
  stopping = false;
  private readonly stopped = new AbortController();

  constructor(
    private readonly opts: ManagedWebhookOptions,
    signal: AbortSignal,
  ) {
    this.log = opts.logger.child({ component: 'webhook' });
    this.background = AbortSignal.any([signal, this.stopped.signal]);
  }

  async startServer(): Promise<WebhookServer> {
    const opts = this.opts;
    const s = await startWebhookServer({
      certDir: opts.certDir,
      port: opts.port,
      host: opts.host ?? '0.0.0.0',
      // The manager serves one /healthz, /readyz and /metrics for both halves.
      healthPort: null,
      metricsPort: null,
      registry,
      logger: this.log,
      drainDelayMs: opts.drainMs,
      ...(opts.limits ? { limits: opts.limits } : {}),
    });
    if (this.stopping) await s.stop();
    else {
      this.server = s;
      // The port is known only now (0 picks a free one); in self-signed mode without a certificate this comes
      // after the bootstrap, later than 'manager started'.
      this.log.info({ webhookPort: s.port }, 'webhook serving');
    }
    return s;
  }

  managed(bootstrapped: Promise<void>, unregister?: () => Promise<void>): ManagedWebhook {
    // Nobody has to await it; a rejection (stopped first) must not be unhandled.
    bootstrapped.catch(() => {});
    const port = () => this.server?.port ?? this.opts.port;
    return {
      get port() {
        return port();
      },
      ready: () => !this.stopping && (this.server?.ready() ?? false),
      bootstrapped,
      stop: async () => {
        this.stopping = true;
        this.stopped.abort();
        await this.server?.stop();
        await unregister?.();
      },
    };
  }
}

/**
 * Out of cluster (--webhook-host): a certificate of its own for the host, then the webhook configurations and the
 * CRD's conversion registered by URL (retried until done); taken back on stop unless --webhook-keep-registration.
 */
async function startOutOfCluster(opts: ManagedWebhookOptions, host: string, run: WebhookRun): Promise<ManagedWebhook> {
  const { log, background } = run;
  const cert = await ensureLocalServingCertificate(opts.certDir, [host], {
    newServingCertificate: (opts.issuer ?? IN_PROCESS_ISSUER).newServingCertificate,
  });
  log.info(
    { certDir: opts.certDir, reused: cert.reused, ...(cert.reason ? { reason: cert.reason } : {}) },
    cert.reused ? 'serving the certificate of the cert dir' : 'made a new serving certificate',
  );
  const s = await run.startServer();
  const url = `https://${host.includes(':') ? `[${host}]` : host}:${s.port}`;
  const bootstrapped = retryUntilDone(
    'register webhook configurations',
    () =>
      ensureWebhookConfigurations(opts.client, {
        name: opts.configurationName,
        endpoint: { url },
        caBundle: cert.caBundle,
        timeoutSeconds: opts.timeoutSeconds,
      }),
    { log, signal: background, retryDelayMs: opts.retryDelayMs },
  )
    .then(() => {
      log.info({ url, configuration: opts.configurationName }, 'webhook configurations registered');
      // The CRD must exist (it is applied before the manager runs); until it does, this is retried.
      return retryUntilDone(
        'register the CRD conversion webhook',
        () => ensureCrdConversion(opts.client, { endpoint: { url }, caBundle: cert.caBundle }),
        { log, signal: background, retryDelayMs: opts.retryDelayMs },
      );
    })
    .then(() => {
      log.info({ url, crd: RESOURCE }, 'CRD conversion webhook registered');
      log.info({ mode: 'webhook-host' }, 'webhook bootstrap complete');
    });
  return run.managed(bootstrapped, () => unregister(opts, url, log));
}

/** Takes back what startOutOfCluster registered for `url`, within 10 s; logs what to delete when it cannot. */
async function unregister(opts: ManagedWebhookOptions, url: string, log: Logger): Promise<void> {
  if (opts.keepRegistration) {
    log.info({ url }, 'webhook configurations and CRD conversion URL kept (--webhook-keep-registration)');
    return;
  }
  try {
    // Bounded: with the apiserver unreachable, exiting matters more (the log then says what to delete).
    const removed = await removeWebhookRegistration(opts.client, {
      name: opts.configurationName,
      url,
      signal: AbortSignal.timeout(10_000),
    });
    log.info({ url, removed }, 'webhook registration removed');
  } catch (err) {
    log.error(
      { err, url },
      `could not remove the webhook registration: delete the webhook configurations ${opts.configurationName}-mutating and -validating`,
    );
  }
}

/**
 * In the chart's self-signed mode: serve the certificate files left from before at once when they are still good,
 * and run the certificate bootstrap (the Secret, caBundle injection, renewal), starting the server once it has one.
 */
function startSelfSigned(opts: ManagedWebhookOptions, run: WebhookRun): Promise<ManagedWebhook> {
  const { log } = run;
  const plan = planWebhookStartup({
    mode: 'self-signed',
    files: readServingFiles(opts.certDir),
    names: servingDnsNames(opts.serviceName, opts.namespace),
    now: new Date(),
  });
  log.info({ certDir: opts.certDir, plan: plan.serve, reason: plan.reason }, 'webhook start-up');
  // Files first, then the server: it loads them at start and reloads them on renewal.
  const served = plan.serve === 'cached' ? run.startServer() : Promise.resolve(undefined);
  return served.then(() => {
    const bootstrapped = runCertificateBootstrap({
      client: opts.client,
      namespace: opts.namespace,
      secretName: opts.certSecretName,
      serviceName: opts.serviceName,
      certDir: opts.certDir,
      webhookConfigurationName: opts.configurationName,
      crdName: RESOURCE,
      signal: run.background,
      logger: opts.logger.child({ component: 'certificates' }),
      issueMaterial: (opts.issuer ?? IN_PROCESS_ISSUER).issueMaterial,
      ...(opts.retryDelayMs ? { retryDelayMs: opts.retryDelayMs } : {}),
      onCertificateChanged: () => void run.server?.reloadCertificates(),
    }).then(async () => {
      if (run.server) {
        // The Secret may hold another certificate than the cached files (renewed meanwhile).
        if (await run.server.reloadCertificates()) log.info('serving the certificate of the Secret');
      } else if (!run.stopping) {
        await run.startServer();
      }
      log.info({ mode: 'self-signed' }, 'webhook bootstrap complete');
    });
    return run.managed(bootstrapped);
  });
}

/**
 * Runs `step` until it succeeds, logging each failure with the wait before the next attempt
 * (startupRetryDelayMs). Rejects only when `signal` aborts.
 */
async function retryUntilDone(
  what: string,
  step: () => Promise<void>,
  {
    log,
    signal,
    retryDelayMs = startupRetryDelayMs,
  }: { log: Logger; signal: AbortSignal; retryDelayMs?: (failures: number) => number },
): Promise<void> {
  for (let failures = 0; ;) {
    signal.throwIfAborted();
    try {
      await step();
      return;
    } catch (err) {
      if (signal.aborted || isAbortError(err)) throw signal.reason ?? err;
      failures++;
      const retryInMs = retryDelayMs(failures);
      log.warn({ err, attempt: failures, retryInMs }, `${what} failed; retrying`);
      await sleep(retryInMs, undefined, { signal });
    }
  }
}
