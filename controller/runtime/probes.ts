// Plain-HTTP health and metrics endpoints, as controller-runtime's manager serves them
// (health probe address :8081, metrics :8080). Port 0 picks a free port; the bound port is
// returned so out-of-cluster runs and tests can find it. Connection limits and timeouts of their own
// (src/net/probe-server.ts): a probe always finds a connection. Metrics optionally over HTTPS, to authenticated and
// authorized clients only (metrics-auth.ts), as controller-runtime's secure metrics server.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { createProbeHttpServer } from '../../src/net/probe-server.ts';
import type { RequestAuthorizer } from './metrics-auth.ts';

export interface ProbeServerOptions {
  host?: string;
  port: number;
  /** Liveness: the process can make progress. */
  healthz: () => boolean;
  /** Readiness: ready to serve (webhook certificate loaded, caches synced, not draining). */
  readyz: () => boolean;
  /** Serve /metrics here too (when the metrics port is the same, or for the standalone webhook). */
  registry?: Registry;
}

export interface RunningServer {
  port: number;
  close(): Promise<void>;
}

function listen(server: http.Server, host: string, port: number): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () => new Promise((r) => server.close(() => r())),
      });
    });
  });
}

async function serveMetrics(registry: Registry, res: http.ServerResponse): Promise<void> {
  try {
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType }).end(body);
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics: ${(err as Error).message}\n`);
  }
}

export function startProbeServer(opts: ProbeServerOptions): Promise<RunningServer> {
  const server = createProbeHttpServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const check =
      path === '/healthz' || path === '/livez' ? opts.healthz : path === '/readyz' ? opts.readyz : undefined;
    if (check) {
      const ok = check();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'not ready\n');
    } else if (path === '/metrics' && opts.registry) {
      void serveMetrics(opts.registry, res);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  return listen(server, opts.host ?? '0.0.0.0', opts.port);
}

/** HTTPS, and who may read: --metrics-secure (metrics-auth.ts). */
export interface SecureMetrics {
  tls: { cert: string; key: string };
  authorizer: RequestAuthorizer;
}

export function startMetricsServer(
  registry: Registry,
  port: number,
  host = '0.0.0.0',
  secure?: SecureMetrics,
): Promise<RunningServer> {
  const server = createProbeHttpServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    if (!secure) return void serveMetrics(registry, res);
    void secure.authorizer.authorize(req.headers.authorization, path, req.method ?? 'GET').then((d) => {
      if (d.allowed) void serveMetrics(registry, res);
      else res.writeHead(d.code, { 'content-type': 'text/plain' }).end(`${d.message}\n`);
    });
  }, secure?.tls);
  return listen(server, host, port);
}
