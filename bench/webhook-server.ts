// The webhook under load: the production Fastify app (buildWebhookApp) over TLS, alone in its
// process so it can be pinned to one core. Prints {"port":N,"maxInFlight":M} once listening (M, the app's cap on
// admission requests in flight, for the report); SIGTERM ends it.
// With `echo` as second argument, the ceiling instead: a bare Fastify over the same TLS that parses the
// AdmissionReview and allows it without looking (what HTTP, TLS and JSON cost on this core).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fastify } from 'fastify';
import { pino } from 'pino';
import { buildWebhookApp } from '../webhook/app.ts';
import { webhookLimits } from '../webhook/limits.ts';

const certDir = process.argv[2];
if (!certDir) {
  process.stderr.write('usage: webhook-server.ts CERT_DIR\n');
  process.exit(2);
}
const https = { cert: readFileSync(join(certDir, 'tls.crt')), key: readFileSync(join(certDir, 'tls.key')) };
const app =
  process.argv[3] === 'echo'
    ? echoApp()
    : buildWebhookApp({
        // As in production, admitted requests log nothing; stdout carries only the port line.
        logger: pino({ level: 'warn' }, pino.destination(2)),
        https,
      });

function echoApp() {
  const echo = fastify({ https });
  echo.post('/*', async (req) => {
    const review = req.body as { apiVersion?: string; request?: { uid?: string } };
    return {
      apiVersion: review.apiVersion,
      kind: 'AdmissionReview',
      response: { uid: review.request?.uid, allowed: true },
    };
  });
  return echo;
}
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;
// The default buildWebhookApp used (webhook/limits.ts, MAX_IN_FLIGHT); the ceiling has no cap.
const maxInFlight = process.argv[3] === 'echo' ? undefined : webhookLimits().maxInFlight;
process.stdout.write(`${JSON.stringify({ port, ...(maxInFlight ? { maxInFlight } : {}) })}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
