// `advanced-daemonset webhook`: the admission webhook alone (no controller), for running it as its own
// Deployment or out of cluster.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { durationFlag, intFlag, parseCommandArgs, UserError, type Command } from '../src/cli/command.ts';
import { defaultWebhookLimits, type WebhookLimits } from './limits.ts';
import { startWebhookServer } from './server.ts';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

const limits = defaultWebhookLimits();

const usage = `Usage: advanced-daemonset webhook --cert-dir DIR [flags]

Serves the mutating and validating admission webhooks of apps.kruise.io/v1alpha1 DaemonSet over HTTPS:
  /mutate-apps-kruise-io-daemonset    defaults (Kruise's, plus apps/v1 pod-template defaults)
  /validate-apps-kruise-io-daemonset  validation (422 Invalid with one cause per field error)

Flags:
  --cert-dir DIR        directory holding tls.crt and tls.key; reloaded when they change (required)
  --port N              HTTPS port (default 9876)
  --host HOST           address to listen on (default 0.0.0.0)
  --health-port N       plain HTTP /healthz and /readyz (default 8081)
  --metrics-port N      plain HTTP /metrics (default 8080)
  --drain D             keep serving this long after SIGTERM before closing (default 5s)
  --max-in-flight N     admission requests handled at once; more get 429 with Retry-After
                        (default ${limits.maxInFlight}: 4 per core)
  --max-connections N   open connections at most; more are closed as they arrive (default ${limits.maxConnections})
  --connection-timeout D
                        close a connection idle this long, handshaken or not (default ${limits.connectionTimeoutMs / 1000}s)
  --log-level LEVEL     trace|debug|info|warn|error|fatal (default info)
  -h, --help            show this help
`;

export const webhookCommand: Command = {
  name: 'webhook',
  summary: 'Run the admission webhook (defaulting and validation) over HTTPS',
  usage,
  async run(argv) {
    const parsed = parseCommandArgs({ name: 'webhook', usage }, argv, {
      'cert-dir': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'health-port': { type: 'string' },
      'metrics-port': { type: 'string' },
      drain: { type: 'string' },
      'max-in-flight': { type: 'string' },
      'max-connections': { type: 'string' },
      'connection-timeout': { type: 'string' },
      'log-level': { type: 'string' },
    });
    if (!parsed) return 0;
    const v = parsed.values;
    const certDir = v['cert-dir'];
    if (!certDir) throw new UserError('webhook: --cert-dir is required\nRun with --help for usage.', 2);
    for (const file of ['tls.crt', 'tls.key'])
      if (!existsSync(join(certDir, file))) throw new UserError(`webhook: ${join(certDir, file)} does not exist`);
    const level = v['log-level'] ?? 'info';
    if (!LOG_LEVELS.includes(level))
      throw new UserError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got "${level}"`, 2);
    const logger = pino({ level });

    const serverLimits = limitFlags(v);
    let server;
    try {
      server = await startWebhookServer({
        certDir,
        port: intFlag('port', v.port, 9876),
        host: v.host ?? '0.0.0.0',
        healthPort: intFlag('health-port', v['health-port'], 8081),
        metricsPort: intFlag('metrics-port', v['metrics-port'], 8080),
        drainDelayMs: durationFlag('drain', v.drain, 5_000),
        limits: serverLimits,
        logger,
      });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EADDRINUSE') throw new UserError(`webhook: address in use (${e.message})`);
      if (e.code === 'EACCES') throw new UserError(`webhook: permission denied (${e.message})`);
      if (/key|cert|PEM|asn1/i.test(e.message ?? ''))
        throw new UserError(`webhook: cannot use the certificate in ${certDir}: ${e.message}`);
      throw err;
    }
    await new Promise<void>((resolve) => {
      const onSignal = (signal: NodeJS.Signals) => {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
        logger.info({ signal }, 'shutting down');
        resolve();
      };
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
    });
    await server.stop();
    return 0;
  },
};

/**
 * The limit flags (`--max-in-flight`, `--max-connections`, `--connection-timeout`; the manager's have the
 * `webhook-` prefix) as WebhookLimits.
 */
export function limitFlags(v: Partial<Record<string, string | boolean>>, prefix = ''): Partial<WebhookLimits> {
  const d = defaultWebhookLimits();
  const name = (flag: string) => `${prefix}${flag}`;
  const str = (flag: string) => {
    const value = v[name(flag)];
    return typeof value === 'string' ? value : undefined;
  };
  const int = (flag: string, fallback: number) => positive(name(flag), intFlag(name(flag), str(flag), fallback));
  return {
    maxInFlight: int('max-in-flight', d.maxInFlight),
    maxConnections: int('max-connections', d.maxConnections),
    connectionTimeoutMs: positive(
      name('connection-timeout'),
      durationFlag(name('connection-timeout'), str('connection-timeout'), d.connectionTimeoutMs),
    ),
  };
}

/** 0 would mean "no limit" to Node for some of these and "refuse everything" for others: neither is wanted. */
function positive(name: string, n: number): number {
  if (n <= 0) throw new UserError(`--${name} must be greater than 0`, 2);
  return n;
}
