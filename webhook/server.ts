// The running webhook: HTTPS admission server, plain-HTTP health and metrics servers, certificate reload and
// graceful shutdown. On stop() readiness goes false at once, the server keeps answering for the drain delay
// (the apiserver keeps using open connections to a terminating pod, kubernetes#127335), then closes.
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Server as HttpsServer } from 'node:https';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { WEBHOOK_PORT } from '../src/cli/common-flags.ts';
import { buildWebhookApp } from './app.ts';
import type { WebhookLimits } from './limits.ts';
import { createProbeHttpServer } from '../src/net/probe-server.ts';
import { webhookMetrics } from './metrics.ts';
import { loadKeyPair, secureContextOptions, watchKeyPair } from './tls.ts';

export interface WebhookServerOptions {
  /** Directory holding tls.crt and tls.key. */
  certDir: string;
  /** HTTPS port (default WEBHOOK_PORT; 0 picks a free one). */
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
  /** Overrides of the defaults of limits.ts (body size, concurrency, connections, timeouts). */
  limits?: Partial<WebhookLimits>;
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
  /** Open connections of the HTTPS server. */
  connections(): Promise<number>;
  /** Readiness false, drain, close. Idempotent; resolves when everything is closed. */
  stop(): Promise<void>;
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log = opts.logger;
  const host = opts.host ?? '0.0.0.0';
  const pair = await loadKeyPair(opts.certDir);
  const metrics = webhookMetrics(opts.registry);
  const app = buildWebhookApp({
    logger: log,
    metrics,
    https: { cert: pair.cert, key: pair.key },
    ...(opts.limits ? { limits: opts.limits } : {}),
  });
  const httpsServer = app.server as unknown as HttpsServer;
  const connections = trackConnections(httpsServer);
  await app.listen({ port: opts.port ?? WEBHOOK_PORT, host });
  const port = (httpsServer.address() as AddressInfo).port;

  const certs = watchKeyPair({
    certDir: opts.certDir,
    logger: log,
    current: pair,
    ...(opts.certPollIntervalMs !== undefined ? { pollIntervalMs: opts.certPollIntervalMs } : {}),
    // With the TLS policy again: setSecureContext takes the options it is given, not the server's.
    onChange: (next) => httpsServer.setSecureContext(secureContextOptions(next)),
  });

  let draining = false;
  const ready = () => !draining;

  let plain: PlainServers;
  try {
    plain = await listenPlainServers(opts, host, ready, metrics.registry);
  } catch (err) {
    certs.close();
    await app.close();
    throw err;
  }
  const { healthPort, metricsPort } = plain;
  log.info({ port, host, healthPort, metricsPort, certDir: opts.certDir }, 'webhook server listening');

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      draining = true;
      // Every answer from now on closes its connection (Connection: close): a client that sent a request during
      // the drain then opens its next one elsewhere, rather than reusing this one just as it is closed below (a
      // request written into a connection being closed gets "connection reset by peer", and the apiserver does
      // not retry a POST).
      connections.closeAfterEachResponse();
      const drainDelayMs = opts.drainDelayMs ?? 5_000;
      log.info({ drainDelayMs }, 'webhook draining');
      await new Promise((r) => setTimeout(r, drainDelayMs));
      certs.close();
      const closed = app.close();
      // server.close() waits for every connection; one that never sent a request (or is between two) would
      // hold it until its idle timeout. Those go now; one still answering goes once its response is sent.
      connections.closeWhenIdle();
      await closed;
      await plain.close();
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
    connections: () =>
      new Promise<number>((resolve, reject) =>
        httpsServer.getConnections((err, count) => (err ? reject(err) : resolve(count))),
      ),
    stop,
  };
}

interface PlainServers {
  healthPort?: number;
  metricsPort?: number;
  /** Closes both at once: probes and scrapes keep nothing worth finishing. */
  close(): Promise<void>;
}

/** The plain-HTTP /healthz + /readyz and /metrics servers, each only when its port is given. */
async function listenPlainServers(
  opts: WebhookServerOptions,
  host: string,
  ready: () => boolean,
  registry: Registry,
): Promise<PlainServers> {
  const servers: Server[] = [];
  const close = () =>
    Promise.all(
      servers.map((s) => {
        const done = new Promise<void>((r) => s.close(() => r()));
        s.closeAllConnections();
        return done;
      }),
    ).then(() => undefined);
  const listen = async (p: number, handler: RequestListener): Promise<number> => {
    // Limits of their own, not the HTTPS port's: a flood there must not take the probes' connections.
    const server = createProbeHttpServer(handler);
    servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, host, () => resolve());
    });
    return (server.address() as AddressInfo).port;
  };
  try {
    const healthPort =
      opts.healthPort === undefined || opts.healthPort === null
        ? undefined
        : await listen(opts.healthPort, (req, res) => {
            const path = (req.url ?? '').split('?')[0];
            if (path === '/healthz' || path === '/livez') return void res.writeHead(200).end('ok');
            if (path === '/readyz')
              return void (ready() ? res.writeHead(200).end('ok') : res.writeHead(503).end('draining'));
            res.writeHead(404).end('not found');
          });
    const metricsPort =
      opts.metricsPort === undefined || opts.metricsPort === null
        ? undefined
        : await listen(opts.metricsPort, (req, res) => {
            if ((req.url ?? '').split('?')[0] !== '/metrics') return void res.writeHead(404).end('not found');
            registry.metrics().then(
              (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
              (err: unknown) => {
                opts.logger.error({ err }, 'metrics collection failed');
                res.writeHead(500).end('metrics collection failed');
              },
            );
          });
    return {
      ...(healthPort !== undefined ? { healthPort } : {}),
      ...(metricsPort !== undefined ? { metricsPort } : {}),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * The server's sockets and which of them are answering a request, so that stop() can close the idle ones at
 * once and each busy one as soon as its response is sent (Node's closeIdleConnections() misses connections
 * that completed the TLS handshake and never sent a request).
 */
function trackConnections(server: HttpsServer): { closeWhenIdle(): void; closeAfterEachResponse(): void } {
  const sockets = new Set<Socket>();
  const busy = new Map<Socket, number>();
  let closing = false;
  let keepAlive = true;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // The raw TCP socket under the TLS one: the one 'connection' reported.
    const socket = ((req.socket as unknown as { _parent?: Socket })._parent ?? req.socket) as Socket;
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    // Node then answers with Connection: close and ends the connection after the response.
    if (!keepAlive) res.shouldKeepAlive = false;
    res.once('close', () => {
      const n = (busy.get(socket) ?? 1) - 1;
      if (n > 0) return void busy.set(socket, n);
      busy.delete(socket);
      if (closing) socket.destroy();
    });
  });
  return {
    closeAfterEachResponse() {
      keepAlive = false;
    },
    closeWhenIdle() {
      closing = true;
      for (const socket of sockets) if (!busy.has(socket)) socket.destroy();
    },
  };
}
