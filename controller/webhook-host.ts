// The webhook half of the manager: certificate, server, and (out of cluster) registration.
// In a cluster the certificate comes from the chart's certificate mode; out of cluster
// (`--webhook-host 127.0.0.1`) the manager makes its own and registers the webhook
// configurations by URL, as kruise-manager does with WEBHOOK_HOST.
import type { Logger } from 'pino';
import { runCertificateBootstrap } from '../certs/bootstrap.ts';
import type { CertMode } from '../certs/modes.ts';
import { ensureLocalServingCertificate, ensureWebhookConfigurations } from '../certs/webhook-config.ts';
import type { KubeClient } from '../src/k8s/client.ts';
import { startWebhookServer } from '../webhook/server.ts';
import { registry } from './runtime/metrics.ts';

export interface ManagedWebhookOptions {
  certDir: string;
  port: number;
  /** Out-of-cluster host (IP or DNS name) the apiserver reaches us at; undefined in a cluster. */
  host?: string;
  configurationName: string;
  timeoutSeconds: number;
  drainMs: number;
  /** In a cluster: self-signed keeps its own certificate in a Secret; other modes read certDir. */
  certMode: CertMode;
  certSecretName: string;
  serviceName: string;
  /** The pod's namespace: of the Secret and the Service. */
  namespace: string;
  client: KubeClient;
  logger: Logger;
}

export interface ManagedWebhook {
  port: number;
  ready(): boolean;
  stop(): Promise<void>;
}

export async function startManagedWebhook(opts: ManagedWebhookOptions, signal: AbortSignal): Promise<ManagedWebhook> {
  const log = opts.logger.child({ component: 'webhook' });
  let caBundle: string | undefined;
  if (opts.host) {
    ({ caBundle } = await ensureLocalServingCertificate(opts.certDir, [opts.host]));
  } else if (opts.certMode === 'self-signed') {
    // Files first, then the server: it loads them at start and reloads them on renewal.
    await runCertificateBootstrap({
      client: opts.client,
      namespace: opts.namespace,
      secretName: opts.certSecretName,
      serviceName: opts.serviceName,
      certDir: opts.certDir,
      webhookConfigurationName: opts.configurationName,
      signal,
      logger: opts.logger.child({ component: 'certificates' }),
    });
  }
  const server = await startWebhookServer({
    certDir: opts.certDir,
    port: opts.port,
    host: opts.host ?? '0.0.0.0',
    // The manager serves one /healthz, /readyz and /metrics for both halves.
    healthPort: null,
    metricsPort: null,
    registry,
    logger: log,
    drainDelayMs: opts.drainMs,
  });
  if (opts.host && caBundle) {
    const url = `https://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${server.port}`;
    await ensureWebhookConfigurations(opts.client, {
      name: opts.configurationName,
      endpoint: { url },
      caBundle,
      timeoutSeconds: opts.timeoutSeconds,
    });
    log.info({ url, configuration: opts.configurationName }, 'webhook configurations registered');
  }
  return { port: server.port, ready: () => server.ready(), stop: () => server.stop() };
}
