// The webhook under load: the production Fastify app (buildWebhookApp) over TLS, alone in its
// process so it can be pinned to one core. Prints {"port":N} once listening; SIGTERM ends it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildWebhookApp } from '../webhook/app.ts';

const certDir = process.argv[2];
if (!certDir) {
  process.stderr.write('usage: webhook-server.ts CERT_DIR\n');
  process.exit(2);
}
const app = buildWebhookApp({
  // As in production, admitted requests log nothing; stdout carries only the port line.
  logger: pino({ level: 'warn' }, pino.destination(2)),
  https: { cert: readFileSync(join(certDir, 'tls.crt')), key: readFileSync(join(certDir, 'tls.key')) },
});
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
