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
  const log = opts.logger.child({ component: 'webhook' });
  const stopped = new AbortController();
  const background = AbortSignal.any([signal, stopped.signal]);
  let server: WebhookServer | undefined;
  let stopping = false;
  const startServer = async () => {
    const s = await startWebhookServer({
      certDir: opts.certDir,
      port: opts.port,
      host: opts.host ?? '0.0.0.0',
      // The manager serves one /healthz, /readyz and /metrics for both halves.
      healthPort: null,
      metricsPort: null,
      registry,
      logger: log,
      drainDelayMs: opts.drainMs,
      ...(opts.limits ? { limits: opts.limits } : {}),
    });
    if (stopping) await s.stop();
    else {
      server = s;
      // The port is known only now (0 picks a free one); in self-signed mode without a certificate this comes
      // after the bootstrap, later than 'manager started'.
      log.info({ webhookPort: s.port }, 'webhook serving');
    }
    return s;
  };
  const managed = (bootstrapped: Promise<void>, unregister?: () => Promise<void>): ManagedWebhook => {
    // Nobody has to await it; a rejection (stopped first) must not be unhandled.
    bootstrapped.catch(() => {});
    return {
      get port() {
        return server?.port ?? opts.port;
      },
      ready: () => !stopping && (server?.ready() ?? false),
      bootstrapped,
      stop: async () => {
        stopping = true;
        stopped.abort();
        await server?.stop();
        await unregister?.();
      },
    };
  };

  if (opts.host) {
    const host = opts.host;
    const cert = await ensureLocalServingCertificate(opts.certDir, [host]);
    log.info(
      { certDir: opts.certDir, reused: cert.reused, ...(cert.reason ? { reason: cert.reason } : {}) },
      cert.reused ? 'serving the certificate of the cert dir' : 'made a new serving certificate',
    );
    const s = await startServer();
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
    const unregister = async () => {
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
    };
    return managed(bootstrapped, unregister);
  }

  if (opts.certMode !== 'self-signed') {
    // cert-manager / external: the certificate is mounted; nothing here needs the apiserver.
    await startServer();
    return managed(Promise.resolve());
  }

  const plan = planWebhookStartup({
    mode: 'self-signed',
    files: readServingFiles(opts.certDir),
    names: servingDnsNames(opts.serviceName, opts.namespace),
    now: new Date(),
  });
  log.info({ certDir: opts.certDir, plan: plan.serve, reason: plan.reason }, 'webhook start-up');
  // Files first, then the server: it loads them at start and reloads them on renewal.
  if (plan.serve === 'cached') await startServer();
  const bootstrapped = runCertificateBootstrap({
    client: opts.client,
    namespace: opts.namespace,
    secretName: opts.certSecretName,
    serviceName: opts.serviceName,
    certDir: opts.certDir,
    webhookConfigurationName: opts.configurationName,
    crdName: RESOURCE,
    signal: background,
    logger: opts.logger.child({ component: 'certificates' }),
    ...(opts.retryDelayMs ? { retryDelayMs: opts.retryDelayMs } : {}),
    onCertificateChanged: () => void server?.reloadCertificates(),
  }).then(async () => {
    if (server) {
      // The Secret may hold another certificate than the cached files (renewed meanwhile).
      if (await server.reloadCertificates()) log.info('serving the certificate of the Secret');
    } else if (!stopping) {
      await startServer();
    }
    log.info({ mode: 'self-signed' }, 'webhook bootstrap complete');
  });
  return managed(bootstrapped);
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
