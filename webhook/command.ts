// `advanced-daemonset webhook`: the admission webhook alone (no controller), for running it as its own
// Deployment or out of cluster.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import {
  durationFlag,
  flagsHelp,
  intFlag,
  defineCommand,
  stringFlag,
  stringWithDefault,
  UserError,
  type Flag,
  type Flags,
  type FlagValues,
} from '../src/cli/command.ts';
import { healthPortFlag, logLevelFlag, metricsPortFlag, WEBHOOK_PORT } from '../src/cli/common-flags.ts';
import { defaultWebhookLimits, type WebhookLimits } from './limits.ts';
import { startWebhookServer } from './server.ts';

const limits = defaultWebhookLimits();

/** 0 would mean "no limit" to Node for some of these and "refuse everything" for others: neither is wanted. */
function positive<T extends Flag<number>>(flag: T): T {
  return {
    ...flag,
    parse(raw, name) {
      const n = flag.parse(raw, name);
      if (n <= 0) throw new UserError(`--${name} must be greater than 0`, 2);
      return n;
    },
  };
}

/** The admission limits a command line can set: `webhook` has them as is, `manager` with a `webhook-` prefix. */
export const limitFlags = {
  'max-in-flight': positive(
    intFlag('admission requests handled at once; more get 429 with Retry-After', limits.maxInFlight, {
      defaultHelp: `${limits.maxInFlight}, as many as one client's connections`,
    }),
  ),
  'max-connections': positive(
    intFlag('open connections at most; more are closed as they arrive', limits.maxConnections),
  ),
  'connection-timeout': positive(
    durationFlag('close a connection idle this long, handshaken or not', limits.connectionTimeoutMs),
  ),
};

/** The webhook's HTTPS port, under one name in every command. */
export const webhookPortFlag = intFlag('HTTPS port; 0 picks a free port', WEBHOOK_PORT);

/** `flags` with `prefix` before every name (the manager's `--webhook-…` flags). */
export function prefixed<P extends string, F extends Flags>(
  prefix: P,
  flags: F,
): { [K in keyof F & string as `${P}${K}`]: F[K] } {
  return Object.fromEntries(Object.entries(flags).map(([k, f]) => [`${prefix}${k}`, f])) as never;
}

/** The limits out of parsed flags (`prefix` as given to prefixed()). */
export function webhookLimitsOf(
  v: Record<string, unknown>,
  prefix = '',
): Pick<WebhookLimits, 'maxInFlight' | 'maxConnections' | 'connectionTimeoutMs'> {
  return {
    maxInFlight: v[`${prefix}max-in-flight`] as number,
    maxConnections: v[`${prefix}max-connections`] as number,
    connectionTimeoutMs: v[`${prefix}connection-timeout`] as number,
  };
}

const flags = {
  'cert-dir': stringFlag('directory holding tls.crt and tls.key; reloaded when they change (required)', {
    arg: 'DIR',
  }),
  'webhook-port': { ...webhookPortFlag, deprecatedAlias: 'port' },
  host: stringWithDefault('address to listen on', '0.0.0.0', 'HOST'),
  'health-port': healthPortFlag,
  'metrics-port': metricsPortFlag,
  drain: durationFlag('keep serving this long after SIGTERM before closing', 5_000),
  ...limitFlags,
  'log-level': logLevelFlag,
} satisfies Flags;

const usage = `Usage: advanced-daemonset webhook --cert-dir DIR [flags]

Serves the mutating and validating admission webhooks of apps.kruise.io/v1alpha1 DaemonSet over HTTPS:
  /mutate-apps-kruise-io-daemonset    defaults (Kruise's, plus apps/v1 pod-template defaults)
  /validate-apps-kruise-io-daemonset  validation (422 Invalid with one cause per field error)
and those of advanced-daemonset.io/v1alpha1 DaemonSetSetting:
  /mutate-advanced-daemonset-io-daemonsetsetting    defaults (spec.reference kind and apiVersion)
  /validate-advanced-daemonset-io-daemonsetsetting  validation (422 Invalid with one cause per field error)

Flags:
${flagsHelp(flags)}
`;

export const webhookCommand = defineCommand({
  name: 'webhook',
  summary: 'Run the admission webhook (defaulting and validation) over HTTPS',
  usage,
  flags,
  run: ({ values }) => runWebhook(values),
});

async function runWebhook(v: FlagValues<typeof flags>): Promise<number> {
  const certDir = v['cert-dir'];
  if (!certDir) throw new UserError('webhook: --cert-dir is required\nRun with --help for usage.', 2);
  for (const file of ['tls.crt', 'tls.key'])
    if (!existsSync(join(certDir, file))) throw new UserError(`webhook: ${join(certDir, file)} does not exist`);
  const logger = pino({ level: v['log-level'] });
  let server;
  try {
    server = await startWebhookServer({
      certDir,
      port: v['webhook-port'],
      host: v.host,
      healthPort: v['health-port'],
      metricsPort: v['metrics-port'],
      drainDelayMs: v.drain,
      limits: webhookLimitsOf(v),
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
}
