// `kubectl ads dashboard`: a local web page of the Advanced DaemonSets' rollouts, live, with the rollout's verbs as
// buttons. It runs on the user's machine only (127.0.0.1; nothing new runs in the cluster) with the user's
// kubeconfig: it reads (list and watch), and writes only when the user confirms an action in the page, with the
// user's own rights (a Forbidden is the apiserver's, shown as such).
//
//   GET  /                                                the page (assets.ts), carrying this run's action token
//   GET  /api/daemonsets                                  the DaemonSets in scope (ListView, JSON)
//   GET  /api/stream                                      the same, pushed on every change (server-sent events "list")
//   GET  /api/daemonsets/:namespace/:name[?groupBy=L]     one DaemonSet: row, node map, timeline... (DetailView)
//   GET  /api/daemonsets/:namespace/:name/stream[?groupBy=L]  the same, pushed on every change (events "detail")
//   POST /api/daemonsets/:namespace/:name/actions/:action pause, resume, partition, partition-step, canary-promote,
//        canary-pause, canary-resume, canary-fail, undo (actions.ts: kubectl ads's own commands). Needs the token
//        in X-ADS-Token and no foreign Origin; GET there is 405 and changes nothing.
//
// Why a token: a web page the user visits elsewhere can send a POST to 127.0.0.1 (a "simple" cross-site request
// needs no CORS preflight), but cannot read this page to learn the token; the Origin check refuses such a request
// even before that, and the Host check refuses DNS rebinding
// (https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fastify, {
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import sseModule, { type SSEPluginOptions } from '@fastify/sse';
import { resources } from '../../src/k8s/resources.ts';
import { connect } from '../connect.ts';
import { PluginError } from '../errors.ts';
import pkg from '../../package.json' with { type: 'json' };
import { actionErrorResponse, KubeActions, parseActionRequest, type DashboardActions } from './actions.ts';
import { loadAssets, TOKEN_PLACEHOLDER, UI_SCRIPT, type Assets } from './assets.ts';
import { KubeSource, type DashboardSource, type DetailOptions } from './source.ts';
import { TOKEN_HEADER, type ActionResult } from './views.ts';

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
  /** No actions: the page only shows (the dashboard as it was before it had buttons). */
  readOnly?: boolean;
  /** Aborting it stops the server and the watches; `closed` resolves then. */
  signal?: AbortSignal;
  log?: (line: string) => void;
}

interface Params {
  namespace: string;
  name: string;
}

interface ActionParams extends Params {
  action: string;
}

interface DetailQuery {
  groupBy?: string;
}

export interface DashboardServerOptions {
  /** Runs the actions; without it the dashboard is read-only (POSTs are refused, the page shows no buttons). */
  actions?: DashboardActions;
  /** The session's token (tests pass one); a random one otherwise. */
  token?: string;
  /** Where unexpected failures are logged (stack included; the page gets a plain message). */
  log?: (line: string) => void;
}

/** A token for one run of the dashboard: 256 random bits. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Compares in constant time (hashes first, so the lengths match). */
function sameToken(given: string, want: string): boolean {
  const h = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(h(given), h(want));
}

const detailOptions = (q: DetailQuery | undefined): DetailOptions =>
  typeof q?.groupBy === 'string' && q.groupBy !== '' ? { groupBy: q.groupBy } : {};

/** Sent with every response of the dashboard (https://owasp.org/www-project-secure-headers/). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** The HTTP server over a source (a live cluster's, or a test's). Not listening yet. */
export async function createDashboardServer(
  source: DashboardSource,
  assets: Assets,
  opts: DashboardServerOptions = {},
): Promise<FastifyInstance> {
  const token = opts.token ?? newToken();
  const { actions } = opts;
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // The page learns the token from itself (a <meta> tag); a read-only dashboard hands out none.
  const html = assets.html.replaceAll(TOKEN_PLACEHOLDER, actions ? token : '');
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
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html),
  );
  app.get(`/${UI_SCRIPT}`, async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(assets.script),
  );
  app.get('/api/daemonsets', async () => source.list());
  app.get<{ Params: Params; Querystring: DetailQuery }>('/api/daemonsets/:namespace/:name', async (req, reply) => {
    const view = await source.detail(req.params.namespace, req.params.name, detailOptions(req.query));
    if (!view.found && view.synced) reply.code(404);
    return view;
  });
  app.get('/api/stream', { sse: 'only' }, async (_req, reply) => {
    reply.sse.keepAlive();
    const stop = source.subscribeList((v) => void reply.sse.send({ event: 'list', data: v }).catch(() => undefined));
    reply.sse.onClose(stop);
  });
  app.get<{ Params: Params; Querystring: DetailQuery }>(
    '/api/daemonsets/:namespace/:name/stream',
    { sse: 'only' },
    async (req, reply) => {
      reply.sse.keepAlive();
      const { namespace, name } = req.params;
      const stop = source.subscribeDetail(
        namespace,
        name,
        (v) => void reply.sse.send({ event: 'detail', data: v }).catch(() => undefined),
        detailOptions(req.query),
      );
      reply.sse.onClose(stop);
    },
  );

  const refuse = (reply: FastifyReply, status: number, message: string) =>
    reply
      .code(status)
      .type('application/json; charset=utf-8')
      .send({ ok: false, message } satisfies ActionResult);
  const actionPath = '/api/daemonsets/:namespace/:name/actions/:action';
  // Before the body is read: a foreign Origin, no token or a wrong one is refused whatever it carries.
  const guard = async (req: FastifyRequest, reply: FastifyReply) => {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${req.headers.host ?? ''}`)
      return refuse(
        reply,
        403,
        `kubectl ads dashboard: origin "${origin}" refused: actions come from the dashboard's own page`,
      );
    if (!actions) return refuse(reply, 403, 'kubectl ads dashboard runs with --read-only: actions are off');
    const given = req.headers[TOKEN_HEADER];
    if (typeof given !== 'string' || given === '' || !sameToken(given, token))
      return refuse(
        reply,
        403,
        `kubectl ads dashboard: missing or wrong ${TOKEN_HEADER} header: reload the page (each run of the dashboard has its own token)`,
      );
    // JSON only: a form or text/plain POST is what a cross-site page can send without a preflight.
    const type = req.headers['content-type'];
    if (type !== undefined && !/^application\/json\s*(;|$)/i.test(type))
      return refuse(reply, 415, `error: the request body must be application/json, not ${type}`);
  };
  app.post<{ Params: ActionParams; Body: unknown }>(actionPath, { onRequest: guard }, async (req, reply) => {
    const { namespace, name, action } = req.params;
    const parsed = parseActionRequest(action, namespace, name, req.body);
    if (!parsed.ok) return refuse(reply, 400, `error: ${parsed.message}`);
    if (!source.has(namespace, name))
      return refuse(reply, 404, `error: ${namespace}/${name} is not an Advanced DaemonSet this dashboard shows`);
    try {
      const out = await actions!.run(parsed.value);
      log(`dashboard: ${parsed.value.command}: ${out.message}`);
      return { ok: true, message: out.message, warnings: out.warnings } satisfies ActionResult;
    } catch (err) {
      const { status, message } = actionErrorResponse(err);
      log(
        `dashboard: ${parsed.value.command}: ${status >= 500 && err instanceof Error ? (err.stack ?? err.message) : message}`,
      );
      return refuse(reply, status, message);
    }
  });
  // An action is never a GET (a link, a prefetch, an <img> must not change anything).
  app.get(actionPath, async (_req, reply) =>
    reply
      .code(405)
      .header('allow', 'POST')
      .send({ ok: false, message: 'actions are POST only' } satisfies ActionResult),
  );
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
    app = await createDashboardServer(source, await loadAssets(`ads dashboard · ${conn.contextName ?? conn.server}`), {
      ...(opts.readOnly ? {} : { actions: new KubeActions(conn) }),
      log,
    });
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
  log(
    `kubectl ads dashboard: ${scope} of ${conn.contextName ?? conn.server}, serving ${url} (Ctrl-C to stop)` +
      (opts.readOnly ? ', read-only' : ''),
  );
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
