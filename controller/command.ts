// `advanced-daemonset controller` and `advanced-daemonset manager` (controller + webhook in one
// process, the default in a deployment, as kruise-manager).
import { hostname } from 'node:os';
import { pino, type Logger } from 'pino';
import { boolFlag, durationFlag, intFlag, parseCommandArgs, UserError, type Command } from '../src/cli/command.ts';
import { parseFeatureGates, type FeatureGates } from '../src/cli/feature-gates.ts';
import { CERT_MODES, type CertMode } from '../certs/modes.ts';
import { currentNamespace, loadKubeConfig } from '../src/k8s/kubeconfig.ts';
import { startController, type ControllerRunOptions } from './run.ts';
import type { ImagePreDownloadMode, KruisePodReadyGateMode } from '../src/daemonset/plan-types.ts';
import { enableProcessMetrics, registry } from './runtime/metrics.ts';
import { startMetricsServer, startProbeServer, type RunningServer } from './runtime/probes.ts';
import { startManagedWebhook, type ManagedWebhook } from './webhook-host.ts';
import { limitFlags } from '../webhook/command.ts';

const controllerFlags = `  --kubeconfig FILE                  kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  --workers N                        concurrent DaemonSet reconciles (default 3)
  --kube-api-qps N                   client-side QPS to the apiserver (default 30)
  --kube-api-burst N                 client-side burst (default 50)
  --leader-elect true|false          Lease leader election (default true)
  --leader-election-namespace NS     namespace of the Lease (default: the pod's namespace)
  --leader-election-id NAME          name of the Lease (default advanced-daemonset-controller)
  --lease-duration D                 (default 15s)
  --renew-deadline D                 (default 10s)
  --retry-period D                   (default 2s)
  --health-port N                    /healthz and /readyz (default 8081; 0 picks a free port)
  --metrics-port N                   /metrics (default 8080; 0 picks a free port)
  --health-probe-bind-address ADDR   HOST:PORT for /healthz and /readyz instead of --health-port on all
                                     addresses, e.g. 127.0.0.1:8081, [::1]:8081 or :8081 (as
                                     controller-runtime's flag)
  --metrics-bind-address ADDR        HOST:PORT for /metrics instead of --metrics-port on all addresses,
                                     e.g. 127.0.0.1:8080 to keep metrics off the pod network
  --log-level LEVEL                  trace|debug|info|warn|error (default info)
  --feature-gates GATES              Name=true|false,... of Kruise's DaemonSet gates (unknown names are
                                     refused); PreDownloadImageForDaemonSetUpdate=true turns image
                                     pre-download on (default off, as Kruise); the others change nothing yet
  --image-predownload MODE           with that gate on: pods (default) pulls a rollout's new images ahead
                                     on nodes still running old pods with short-lived pull pods (README:
                                     image pre-download); imagepulljob creates Kruise ImagePullJobs instead
                                     (needs that CRD and kruise-daemon); off
  --kruise-pod-ready-gate MODE       always (default): the KruisePodReady readiness gate on every pod,
                                     as Kruise, set True right after the create (one status write per
                                     pod); when-needed: only on pods of DaemonSets with
                                     lifecycle.preDelete.markPodNotReady, one write per pod fewer for
                                     very large clusters, but pods created without the gate cannot be
                                     made NotReady later (markPodNotReady turned on afterwards,
                                     ContainerRecreateRequest unreadyGracePeriodSeconds)`;

const webhookFlags = `  --cert-dir DIR                     tls.crt and tls.key (default /tmp/k8s-webhook-server/serving-certs)
  --webhook-port N                   HTTPS port (default 9876; 0 picks a free port)
  --webhook-host HOST                out of cluster: serve on HOST, generate a certificate for it and
                                     register the webhook configurations with url https://HOST:PORT
  --webhook-configuration-name NAME  base name of the webhook configurations (default advanced-daemonset)
  --webhook-timeout-seconds N        timeoutSeconds of the registered configurations (default 10)
  --webhook-drain D                  keep serving this long after SIGTERM (default 5s)
  --webhook-max-in-flight N          admission requests handled at once; more get 429 with Retry-After
                                     (default 4 per core, at least 4)
  --webhook-max-connections N        open webhook connections at most (default 512)
  --webhook-connection-timeout D     close a webhook connection idle this long (default 125s)
  --cert-mode MODE                   in a cluster: self-signed (keep a CA and serving certificate in
                                     --cert-secret-name, renew them, patch caBundle into the webhook
                                     configurations), or cert-manager|external (serve the tls.crt and
                                     tls.key mounted in --cert-dir) (default external)
  --cert-secret-name NAME            self-signed: the Secret in the pod's namespace
                                     (default advanced-daemonset-webhook-certs)
  --webhook-service-name NAME        self-signed: the Service the certificate is for
                                     (default advanced-daemonset-webhook)`;

export const controllerOptions = {
  kubeconfig: { type: 'string' },
  workers: { type: 'string' },
  'kube-api-qps': { type: 'string' },
  'kube-api-burst': { type: 'string' },
  'leader-elect': { type: 'string' },
  'leader-election-namespace': { type: 'string' },
  'leader-election-id': { type: 'string' },
  'lease-duration': { type: 'string' },
  'renew-deadline': { type: 'string' },
  'retry-period': { type: 'string' },
  'health-port': { type: 'string' },
  'metrics-port': { type: 'string' },
  'health-probe-bind-address': { type: 'string' },
  'metrics-bind-address': { type: 'string' },
  'log-level': { type: 'string' },
  'feature-gates': { type: 'string' },
  'image-predownload': { type: 'string' },
  'kruise-pod-ready-gate': { type: 'string' },
} as const;

export const webhookOptions = {
  'cert-dir': { type: 'string' },
  'webhook-port': { type: 'string' },
  'webhook-host': { type: 'string' },
  'webhook-configuration-name': { type: 'string' },
  'webhook-timeout-seconds': { type: 'string' },
  'webhook-drain': { type: 'string' },
  'webhook-max-in-flight': { type: 'string' },
  'webhook-max-connections': { type: 'string' },
  'webhook-connection-timeout': { type: 'string' },
  'cert-mode': { type: 'string' },
  'cert-secret-name': { type: 'string' },
  'webhook-service-name': { type: 'string' },
} as const;

type Values = Partial<Record<keyof typeof controllerOptions | keyof typeof webhookOptions, string>>;

export interface BindAddress {
  host: string;
  port: number;
}

/**
 * Where a server listens: `--<name>-bind-address HOST:PORT` (controller-runtime's flags; an empty host, as in
 * ":8080", is every address), else every address on `--<name>-port` (the older flag, kept). Both at once is
 * refused, since one would silently win.
 */
export function bindAddressFlag(
  flag: string,
  address: string | undefined,
  portFlag: string,
  port: string | undefined,
  defaultPort: number,
): BindAddress {
  if (address === undefined) return { host: '0.0.0.0', port: intFlag(portFlag, port, defaultPort) };
  if (port !== undefined) throw new UserError(`--${flag} and --${portFlag} cannot both be set`, 2);
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(address);
  const portNumber = Number(m?.[3]);
  if (!m || portNumber > 65535)
    throw new UserError(`--${flag} must be HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080 or :8080), got "${address}"`, 2);
  const host = m[1] ?? m[2] ?? '';
  return { host: host === '' ? '0.0.0.0' : host, port: portNumber };
}

function logger(level = 'info'): Logger {
  const levels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
  if (!levels.includes(level))
    throw new UserError(`--log-level must be one of ${levels.join(', ')}, got "${level}"`, 2);
  return pino({ level, base: { pid: process.pid, host: hostname() } });
}

function controllerRunOptions(v: Values, log: Logger, gates: FeatureGates): ControllerRunOptions {
  const preDownload = imagePreDownloadFlag(v['image-predownload']);
  return {
    kubeconfig: v.kubeconfig,
    workers: Math.max(1, intFlag('workers', v.workers, 3)),
    qps: intFlag('kube-api-qps', v['kube-api-qps'], 30),
    burst: intFlag('kube-api-burst', v['kube-api-burst'], 50),
    leaderElect: boolFlag('leader-elect', v['leader-elect'], true),
    leaderElectionNamespace: v['leader-election-namespace'],
    leaderElectionId: v['leader-election-id'] ?? 'advanced-daemonset-controller',
    leaseDurationMs: durationFlag('lease-duration', v['lease-duration'], 15_000),
    renewDeadlineMs: durationFlag('renew-deadline', v['renew-deadline'], 10_000),
    retryPeriodMs: durationFlag('retry-period', v['retry-period'], 2_000),
    // Behind Kruise's alpha gate, off by default: it puts extra (pull) pods into users' namespaces.
    imagePreDownload: gates.PreDownloadImageForDaemonSetUpdate ? preDownload : 'off',
    kruisePodReadyGate: kruisePodReadyGateFlag(v['kruise-pod-ready-gate']),
    logger: log,
  };
}

function imagePreDownloadFlag(value: string | undefined): ImagePreDownloadMode {
  const mode = value ?? 'pods';
  if (mode !== 'pods' && mode !== 'imagepulljob' && mode !== 'off')
    throw new UserError(`--image-predownload must be pods, imagepulljob or off, got "${mode}"`, 2);
  return mode;
}

function kruisePodReadyGateFlag(value: string | undefined): KruisePodReadyGateMode {
  const mode = value ?? 'always';
  if (mode !== 'always' && mode !== 'when-needed')
    throw new UserError(`--kruise-pod-ready-gate must be always or when-needed, got "${mode}"`, 2);
  return mode;
}

function featureGates(value: string | undefined): FeatureGates {
  try {
    return parseFeatureGates(value);
  } catch (err) {
    throw new UserError(`--feature-gates: ${(err as Error).message}`, 2);
  }
}

function certMode(v: Values): CertMode {
  const mode = v['cert-mode'] ?? 'external';
  if (!(CERT_MODES as readonly string[]).includes(mode))
    throw new UserError(`--cert-mode must be one of ${CERT_MODES.join(', ')}, got "${mode}"`, 2);
  if (mode === 'self-signed' && v['webhook-host'])
    throw new UserError(
      '--webhook-host makes its own certificate; it cannot be combined with --cert-mode self-signed',
      2,
    );
  return mode as CertMode;
}

/** Resolves on the first SIGTERM/SIGINT; aborts `controller` then. */
function onShutdownSignal(controller: AbortController, log: Logger): Promise<void> {
  return new Promise((resolve) => {
    const handler = (sig: NodeJS.Signals) => {
      log.info({ signal: sig }, 'shutting down');
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
      resolve();
    };
    process.once('SIGTERM', handler);
    process.once('SIGINT', handler);
    controller.signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

async function runProcess(v: Values, withWebhook: boolean): Promise<number> {
  const log = logger(v['log-level']);
  const gates = featureGates(v['feature-gates']);
  const opts = controllerRunOptions(v, log, gates);
  const mode = withWebhook ? certMode(v) : undefined;
  const healthAddress = bindAddressFlag(
    'health-probe-bind-address',
    v['health-probe-bind-address'],
    'health-port',
    v['health-port'],
    8081,
  );
  const metricsAddress = bindAddressFlag(
    'metrics-bind-address',
    v['metrics-bind-address'],
    'metrics-port',
    v['metrics-port'],
    8080,
  );
  log.info({ featureGates: gates }, 'feature gates');
  enableProcessMetrics();
  const stop = new AbortController();
  const servers: RunningServer[] = [];
  let webhook: ManagedWebhook | undefined;
  let controller: ReturnType<typeof startController> | undefined;
  let draining = false;
  try {
    controller = startController(opts, stop.signal);
    if (withWebhook) {
      webhook = await startManagedWebhook(
        {
          certDir: v['cert-dir'] ?? '/tmp/k8s-webhook-server/serving-certs',
          port: intFlag('webhook-port', v['webhook-port'], 9876),
          host: v['webhook-host'],
          configurationName: v['webhook-configuration-name'] ?? 'advanced-daemonset',
          timeoutSeconds: intFlag('webhook-timeout-seconds', v['webhook-timeout-seconds'], 10),
          drainMs: durationFlag('webhook-drain', v['webhook-drain'], 5_000),
          limits: limitFlags(v, 'webhook-'),
          certMode: mode!,
          certSecretName: v['cert-secret-name'] ?? 'advanced-daemonset-webhook-certs',
          serviceName: v['webhook-service-name'] ?? 'advanced-daemonset-webhook',
          namespace: currentNamespace(loadKubeConfig(v.kubeconfig)),
          client: controller.client,
          logger: log,
        },
        stop.signal,
      );
    }
    const health = await startProbeServer({
      host: healthAddress.host,
      port: healthAddress.port,
      healthz: () => true,
      // Followers are ready too: they serve webhooks and keep warm caches.
      readyz: () => !draining && controller!.synced() && (webhook?.ready() ?? true),
    });
    servers.push(health);
    servers.push(await startMetricsServer(registry, metricsAddress.port, metricsAddress.host));
    log.info(
      { healthPort: health.port, metricsPort: servers[1]!.port, webhookPort: webhook?.port },
      withWebhook ? 'manager started' : 'controller started',
    );

    const reason = await Promise.race([
      onShutdownSignal(stop, log).then(() => 'signal' as const),
      controller.done.then((d) => (d.lostLeadership ? ('lost-leadership' as const) : ('stopped' as const))),
    ]);
    if (reason === 'lost-leadership') {
      // controller-runtime skips the graceful shutdown here (its manager sets gracefulShutdownTimeout to 0 and
      // returns "leader election lost"): in-flight reconciles are not waited for. Their requests were aborted and
      // their writes are refused by the Lease fence; the Deployment restarts this replica as a standby.
      // https://github.com/kubernetes-sigs/controller-runtime/blob/main/pkg/manager/internal.go
      log.error('leader election lost; exiting at once');
      process.exit(1);
    }
    draining = true;
    // Webhook first: it drains while the apiserver stops sending to a not-ready endpoint.
    await webhook?.stop();
    stop.abort();
    await controller.done;
    return 0;
  } catch (err) {
    stop.abort();
    if (err instanceof UserError) throw err;
    throw new UserError(`${withWebhook ? 'manager' : 'controller'} failed to start: ${(err as Error).message}`);
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
}

const controllerUsage = `Usage: advanced-daemonset controller [flags]

Runs the Advanced DaemonSet controller (apps.kruise.io/v1alpha1 DaemonSets). With leader
election only the Lease holder reconciles; every replica keeps warm caches.

Flags:
${controllerFlags}
  -h, --help
`;

export const controllerCommand: Command = {
  name: 'controller',
  summary: 'Run the DaemonSet controller only',
  usage: controllerUsage,
  async run(argv) {
    const parsed = parseCommandArgs({ name: 'controller', usage: controllerUsage }, argv, controllerOptions);
    if (!parsed) return 0;
    return runProcess(parsed.values as Values, false);
  },
};

const managerUsage = `Usage: advanced-daemonset manager [flags]

Runs the admission webhook and the controller in one process (the default in a deployment).
All replicas serve the webhook; only the leader reconciles.

Controller flags:
${controllerFlags}

Webhook flags:
${webhookFlags}
  -h, --help
`;

export const managerCommand: Command = {
  name: 'manager',
  summary: 'Run webhook and controller in one process (the deployment default)',
  usage: managerUsage,
  async run(argv) {
    const parsed = parseCommandArgs({ name: 'manager', usage: managerUsage }, argv, {
      ...controllerOptions,
      ...webhookOptions,
    });
    if (!parsed) return 0;
    return runProcess(parsed.values as Values, true);
  },
};
