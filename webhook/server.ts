// The running webhook: HTTPS admission server, plain-HTTP health and metrics servers, certificate reload and
// graceful shutdown. On stop() readiness goes false at once, the server keeps answering for the drain delay
// (the apiserver keeps using open connections to a terminating pod, kubernetes#127335), then closes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server as HttpsServer } from 'node:https';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { buildWebhookApp } from './app.ts';
import { webhookMetrics } from './metrics.ts';
import { loadKeyPair, watchKeyPair } from './tls.ts';

export interface WebhookServerOptions {
  /** Directory holding tls.crt and tls.key. */
  certDir: string;
  /** HTTPS port (default 9876; 0 picks a free one). */
  port?: number;
  host?: string;
  /** /healthz and /readyz over plain HTTP; undefined or null: not started (a host process serves its own). */
  healthPort?: number | null;
  /** /metrics over plain HTTP; undefined or null: not started. */
  metricsPort?: number | null;
  /** Where the webhook metrics are registered (default: a registry of its own, served on metricsPort). */
  registry?: Registry;
  logger: Logger;
  /** How long to keep serving after stop() before closing (default 5 s). */
  drainDelayMs?: number;
  /** Poll interval of the certificate files, on top of fs.watch (default 10 s). */
  certPollIntervalMs?: number;
}

export interface WebhookServer {
  /** Bound ports (useful with port 0). */
  port: number;
  healthPort?: number;
  metricsPort?: number;
  registry: Registry;
  /** True while serving and not draining. */
  ready(): boolean;
  /** Re-reads the certificate files now; true when a new pair was loaded. */
  reloadCertificates(): Promise<boolean>;
  /** Readiness false, drain, close. Idempotent; resolves when everything is closed. */
  stop(): Promise<void>;
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log = opts.logger;
  const host = opts.host ?? '0.0.0.0';
  const pair = await loadKeyPair(opts.certDir);
  const metrics = webhookMetrics(opts.registry);
  const app = buildWebhookApp({ logger: log, metrics, https: { cert: pair.cert, key: pair.key } });
  await app.listen({ port: opts.port ?? 9876, host });
  const httpsServer = app.server as unknown as HttpsServer;
  const port = (httpsServer.address() as AddressInfo).port;

  const certs = watchKeyPair({
    certDir: opts.certDir,
    logger: log,
    current: pair,
    ...(opts.certPollIntervalMs !== undefined ? { pollIntervalMs: opts.certPollIntervalMs } : {}),
    onChange: (next) => httpsServer.setSecureContext({ cert: next.cert, key: next.key }),
  });

  let draining = false;
  const ready = () => !draining;

  const extra: Server[] = [];
  const listenPlain = async (p: number, handler: Parameters<typeof createServer>[1]): Promise<number> => {
    const server = createServer(handler);
    extra.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, host, () => resolve());
    });
    return (server.address() as AddressInfo).port;
  };

  let healthPort: number | undefined;
  let metricsPort: number | undefined;
  try {
    if (opts.healthPort !== undefined && opts.healthPort !== null) {
      healthPort = await listenPlain(opts.healthPort, (req, res) => {
        const path = (req.url ?? '').split('?')[0];
        if (path === '/healthz' || path === '/livez') return void res.writeHead(200).end('ok');
        if (path === '/readyz')
          return void (ready() ? res.writeHead(200).end('ok') : res.writeHead(503).end('draining'));
        res.writeHead(404).end('not found');
      });
    }
    if (opts.metricsPort !== undefined && opts.metricsPort !== null) {
      metricsPort = await listenPlain(opts.metricsPort, (req, res) => {
        if ((req.url ?? '').split('?')[0] !== '/metrics') return void res.writeHead(404).end('not found');
        metrics.registry.metrics().then(
          (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
          (err: unknown) => {
            log.error({ err }, 'metrics collection failed');
            res.writeHead(500).end('metrics collection failed');
          },
        );
      });
    }
  } catch (err) {
    certs.close();
    await app.close();
    await Promise.all(extra.map((s) => new Promise((r) => s.close(r))));
    throw err;
  }
  log.info({ port, host, healthPort, metricsPort, certDir: opts.certDir }, 'webhook server listening');

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      draining = true;
      const drainDelayMs = opts.drainDelayMs ?? 5_000;
      log.info({ drainDelayMs }, 'webhook draining');
      await new Promise((r) => setTimeout(r, drainDelayMs));
      certs.close();
      await app.close();
      await Promise.all(extra.map((s) => new Promise((r) => s.close(r))));
      log.info('webhook server stopped');
    })();
    return stopping;
  };

  return {
    port,
    ...(healthPort !== undefined ? { healthPort } : {}),
    ...(metricsPort !== undefined ? { metricsPort } : {}),
    registry: metrics.registry,
    ready,
    reloadCertificates: () => certs.check(),
    stop,
  };
}
