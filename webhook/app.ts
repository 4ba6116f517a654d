// The Fastify app of the admission webhook, built without listening so tests can use `app.inject`.
// Pitfalls handled here (ecosystem-aesthetics-perf.md §1.2, §2.4): any content type is parsed as JSON (the
// apiserver always sends JSON; a 415 would only confuse), 7 MiB body limit (413 beyond, the apiserver's own
// request limit is 3 MiB per object, doubled by oldObject), `?timeout=` ignored, keep-alive longer than the
// apiserver's 90 s idle timeout, no stack trace ever sent.
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import { fastify, LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { MUTATE_PATH, VALIDATE_PATH } from '../src/api/constants.ts';
import {
  handleAdmissionReview,
  mutateDaemonSet,
  validateDaemonSetAdmission,
  type AdmissionHandler,
  type Verdict,
} from './admission.ts';
import { webhookMetrics, type WebhookMetrics } from './metrics.ts';

export const BODY_LIMIT = 7 * 1024 * 1024;
/** Longer than the apiserver's idle-connection timeout (90 s), so the server never closes a connection the
 * apiserver is about to reuse. */
export const KEEP_ALIVE_TIMEOUT_MS = 120_000;

export interface WebhookAppOptions {
  logger: Logger;
  metrics?: WebhookMetrics;
  /** TLS key/cert: an HTTPS server. Omitted: plain HTTP (tests, inject). */
  https?: HttpsServerOptions;
  bodyLimit?: number;
}

const WEBHOOKS: Record<string, { name: string; handler: AdmissionHandler }> = {
  [MUTATE_PATH]: { name: 'mutate-apps-kruise-io-daemonset', handler: mutateDaemonSet },
  [VALIDATE_PATH]: { name: 'validate-apps-kruise-io-daemonset', handler: validateDaemonSetAdmission },
};

interface Timing {
  start: bigint;
  webhook?: string;
  verdict?: Verdict;
}
const timings = new WeakMap<FastifyRequest, Timing>();

export function buildWebhookApp(opts: WebhookAppOptions): FastifyInstance {
  const log = opts.logger;
  const metrics = opts.metrics ?? webhookMetrics();
  const bodyLimit = opts.bodyLimit ?? BODY_LIMIT;
  const app = fastify({
    loggerInstance: log,
    // One log line per admission (with key and uid) comes from the handler; Fastify's own would double it.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // Slowloris guard, as cert-manager's ReadHeaderTimeout.
    requestTimeout: 60_000,
    return503OnClosing: true,
    ...(opts.https ? { https: opts.https } : {}),
  }) as unknown as FastifyInstance;

  // Every body is JSON, whatever the content type says; errors become 400 through the error handler.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(httpError(400, 'request body is empty'), undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(httpError(400, 'request body is not valid JSON'), undefined);
    }
  });

  app.addHook('onRequest', async (req) => {
    const path = req.url.split('?')[0] ?? '';
    const webhook = WEBHOOKS[path]?.name;
    timings.set(req, { start: process.hrtime.bigint(), ...(webhook ? { webhook } : {}) });
    if (webhook) metrics.inFlight.inc({ webhook });
  });

  app.addHook('onResponse', async (req, reply) => {
    const t = timings.get(req);
    if (!t?.webhook) return;
    const verdict = t.verdict ?? 'errored';
    const seconds = Number(process.hrtime.bigint() - t.start) / 1e9;
    metrics.inFlight.dec({ webhook: t.webhook });
    metrics.requests.inc({ webhook: t.webhook, code: String(reply.statusCode), verdict });
    metrics.latency.observe({ webhook: t.webhook, verdict }, seconds);
  });

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    if (status >= 500) req.log.error({ err, url: req.url }, 'webhook request failed');
    else req.log.warn({ url: req.url, status, reason: err.message }, 'bad webhook request');
    const message = status >= 500 ? 'internal error' : err.message;
    void reply.code(status).send({ message });
  });

  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ message: `no webhook at ${req.url.split('?')[0] ?? ''}` });
  });

  for (const [path, { name, handler }] of Object.entries(WEBHOOKS)) {
    app.post(path, async (req, reply) => {
      const outcome = handleAdmissionReview(req.body, handler);
      const t = timings.get(req);
      if (t) t.verdict = outcome.verdict;
      const fields = {
        webhook: name,
        key: outcome.key,
        uid: outcome.uid,
        operation: outcome.operation,
        verdict: outcome.verdict,
        ...(outcome.message ? { message: outcome.message } : {}),
      };
      if (outcome.cause) req.log.error({ ...fields, err: outcome.cause }, 'admission handler failed');
      else if (outcome.verdict === 'denied' || outcome.verdict === 'errored') req.log.info(fields, 'admission');
      else req.log.debug(fields, 'admission');
      return reply.code(outcome.httpStatus).send(outcome.body);
    });
  }
  return app;
}

function httpError(statusCode: number, message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode });
}
