// `kubectl ads dashboard`: a local web page of the Advanced DaemonSets' rollouts, live. It runs on the user's machine
// only (127.0.0.1; nothing new runs in the cluster) with the user's kubeconfig, and only reads (list and watch).
//
//   GET /                                        the page (assets.ts)
//   GET /api/daemonsets                          the DaemonSets in scope (ListView, JSON)
//   GET /api/stream                              the same, pushed on every change (server-sent events "list")
//   GET /api/daemonsets/:namespace/:name         one DaemonSet: row, node × revision map, events (DetailView)
//   GET /api/daemonsets/:namespace/:name/stream  the same, pushed on every change (server-sent events "detail")
import fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import sseModule, { type SSEPluginOptions } from '@fastify/sse';
import { resources } from '../../src/k8s/client.ts';
import { connect } from '../kubeconfig.ts';
import { PluginError } from '../errors.ts';
import pkg from '../../package.json' with { type: 'json' };
import { loadAssets, UI_SCRIPT, type Assets } from './assets.ts';
import { KubeSource, type DashboardSource } from './source.ts';

// The package's module.exports is the plugin wrapped by fastify-plugin (its hooks must reach our routes); its types
// describe that as the default export of an ES module, which TypeScript reads as the whole CommonJS module.
const sse = sseModule as unknown as FastifyPluginAsync<SSEPluginOptions>;

/** The default port (`--port` changes it; 0 takes any free one). */
export const DEFAULT_PORT = 8765;
const HOST = '127.0.0.1';

export interface DashboardOptions {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  allNamespaces?: boolean;
  port?: number;
  /** Aborting it stops the server and the watches; `closed` resolves then. */
  signal?: AbortSignal;
  log?: (line: string) => void;
}

interface Params {
  namespace: string;
  name: string;
}

/** Sent with every response of the dashboard (https://owasp.org/www-project-secure-headers/). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** The HTTP server over a source (a live cluster's, or a test's). Not listening yet. */
export async function createDashboardServer(source: DashboardSource, assets: Assets): Promise<FastifyInstance> {
  // forceCloseConnections: the event streams stay open until the page goes; close() must not wait for them.
  const app = fastify({ logger: false, forceCloseConnections: true });
  await app.register(sse, { heartbeatInterval: 15_000 });

  // The page shows cluster data to whoever can load it: only to this machine, and only under the names it is served
  // by here (a DNS name rebound to 127.0.0.1 by some web page does not get in).
  app.addHook('onRequest', async (req, reply) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (host !== HOST && host !== 'localhost' && host !== '[::1]') {
      await reply.code(403).type('text/plain').send(`kubectl ads dashboard: host "${host}" refused\n`);
    }
  });

  // What the page may load and who may frame it: its own script and event streams only, its stylesheet (which the
  // script puts in a <style> element), no frames, no plugins, no forms; and no content sniffing.
  app.addHook('onSend', async (_req, reply) => {
    void reply.headers(SECURITY_HEADERS);
  });

  app.get('/', async (_req, reply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(assets.html),
  );
  app.get(`/${UI_SCRIPT}`, async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(assets.script),
  );
  app.get('/api/daemonsets', async () => source.list());
  app.get<{ Params: Params }>('/api/daemonsets/:namespace/:name', async (req, reply) => {
    const view = await source.detail(req.params.namespace, req.params.name);
    if (!view.found && view.synced) reply.code(404);
    return view;
  });
  app.get('/api/stream', { sse: 'only' }, async (_req, reply) => {
    reply.sse.keepAlive();
    const stop = source.subscribeList((v) => void reply.sse.send({ event: 'list', data: v }).catch(() => undefined));
    reply.sse.onClose(stop);
  });
  app.get<{ Params: Params }>('/api/daemonsets/:namespace/:name/stream', { sse: 'only' }, async (req, reply) => {
    reply.sse.keepAlive();
    const { namespace, name } = req.params;
    const stop = source.subscribeDetail(
      namespace,
      name,
      (v) => void reply.sse.send({ event: 'detail', data: v }).catch(() => undefined),
    );
    reply.sse.onClose(stop);
  });
  app.addHook('onClose', async () => source.close());
  return app;
}

/**
 * Serves the dashboard until `signal` aborts. Fails before listening when the cluster cannot be read (no CRD,
 * no permission) or the port is taken, with the error for the user.
 */
export async function runDashboard(opts: DashboardOptions): Promise<{ url: string; closed: Promise<void> }> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const conn = connect({
    kubeconfig: opts.kubeconfig,
    context: opts.context,
    namespace: opts.namespace,
    userAgent: `kubectl-ads/${pkg.version} (dashboard)`,
  });
  const scope = opts.allNamespaces ? 'all namespaces' : `namespace ${conn.namespace}`;
  // One list first, so a missing CRD or permission is an error now rather than an empty page.
  await conn.client.list(resources.daemonSets, {
    namespace: opts.allNamespaces ? undefined : conn.namespace,
    limit: 1,
    signal: opts.signal,
  });
  const source = new KubeSource(
    conn.client,
    { namespace: conn.namespace, allNamespaces: opts.allNamespaces },
    { log: (line) => log(`dashboard: ${line}`) },
  );
  let app: FastifyInstance;
  try {
    app = await createDashboardServer(source, await loadAssets(`ads dashboard · ${conn.contextName ?? conn.server}`));
  } catch (err) {
    await source.close();
    conn.client.close();
    throw err;
  }
  const port = opts.port ?? DEFAULT_PORT;
  try {
    await app.listen({ host: HOST, port });
  } catch (err) {
    await app.close();
    conn.client.close();
    if ((err as { code?: string }).code === 'EADDRINUSE')
      throw new PluginError(`port ${port} on ${HOST} is in use: pass --port with another one (0 picks a free port)`);
    throw err;
  }
  const address = app.server.address();
  const url = `http://${HOST}:${typeof address === 'object' && address ? address.port : port}/`;
  log(`kubectl ads dashboard: ${scope} of ${conn.contextName ?? conn.server}, serving ${url} (Ctrl-C to stop)`);
  const closed = new Promise<void>((resolve) => {
    const stop = () => {
      app
        .close()
        .catch((err: unknown) => log(`dashboard: closing: ${(err as Error).message}`))
        .finally(() => {
          conn.client.close();
          resolve();
        });
    };
    if (opts.signal?.aborted) stop();
    else opts.signal?.addEventListener('abort', stop, { once: true });
  });
  return { url, closed };
}
