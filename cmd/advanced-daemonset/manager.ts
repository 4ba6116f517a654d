// `advanced-daemonset controller` and `advanced-daemonset manager` (controller + webhook in one process, the default
// in a deployment, as kruise-manager): the one place that turns flags into options and wires the components, each
// started by its own function (controller/run.ts startController, webhook-host.ts startManagedWebhook, the probe and
// metrics servers of controller/runtime), none of which knows its siblings. controller-runtime's manager.New plays
// this part in Go (https://github.com/kubernetes-sigs/controller-runtime/blob/main/pkg/manager/manager.go).
import { DEFAULT_KRUISE_POD_READY_GATE } from '../../src/daemonset/pods.ts';
import { hostname } from 'node:os';
import { pino, type Logger } from 'pino';
import {
  boolFlag,
  durationFlag,
  enumFlag,
  flagsHelp,
  intFlag,
  defineCommand,
  stringFlag,
  stringWithDefault,
  UserError,
  type Flags,
  type FlagValues,
} from '../../src/cli/command.ts';
import { healthPortFlag, logLevelFlag, metricsPortFlag } from '../../src/cli/common-flags.ts';
import { parseFeatureGates, type FeatureGates } from '../../src/cli/feature-gates.ts';
import { CERT_MODES } from '../../certs/modes.ts';
import { childProcessIssuer, type CertificateIssuer } from '../../certs/issuer.ts';
import type { KubeClient } from '../../src/k8s/client.ts';
import { currentNamespace, loadKubeConfig } from '../../src/k8s/kubeconfig.ts';
import { startController, type ControllerRunOptions } from '../../controller/run.ts';
import { enableProcessMetrics, registry } from '../../controller/runtime/metrics.ts';
import { startMetricsServer, startProbeServer, type RunningServer } from '../../controller/runtime/probes.ts';
import { delegatingAuthorizer } from '../../controller/runtime/metrics-auth.ts';
import { startManagedWebhook, type ManagedWebhook, type ManagedWebhookOptions } from './webhook-host.ts';
import { limitFlags, prefixed, webhookLimitsOf, webhookPortFlag } from '../../webhook/command.ts';

export const controllerFlags = {
  kubeconfig: stringFlag('kubeconfig', { arg: 'FILE', defaultHelp: '$KUBECONFIG, in-cluster, ~/.kube/config' }),
  workers: intFlag('concurrent DaemonSet reconciles', 3),
  'kube-api-qps': intFlag('client-side QPS to the apiserver', 30),
  'kube-api-burst': intFlag('client-side burst', 50),
  'leader-elect': boolFlag('Lease leader election', true),
  'leader-election-namespace': stringFlag('namespace of the Lease', { arg: 'NS', defaultHelp: "the pod's namespace" }),
  'leader-election-id': stringWithDefault('name of the Lease', 'advanced-daemonset-controller', 'NAME'),
  'lease-duration': durationFlag('how long a Lease is held without renewal', 15_000),
  'renew-deadline': durationFlag('how long the leader tries to renew before it gives up', 10_000),
  'retry-period': durationFlag('how often candidates try to acquire or renew', 2_000),
  'health-port': healthPortFlag,
  'metrics-port': metricsPortFlag,
  'health-probe-bind-address': stringFlag(
    "HOST:PORT for /healthz and /readyz instead of --health-port on all addresses, e.g. 127.0.0.1:8081, [::1]:8081 or :8081 (as controller-runtime's flag)",
    { arg: 'ADDR' },
  ),
  'metrics-bind-address': stringFlag(
    'HOST:PORT for /metrics instead of --metrics-port on all addresses, e.g. 127.0.0.1:8080 to keep metrics off the pod network',
    { arg: 'ADDR' },
  ),
  'metrics-secure': boolFlag(
    "serve /metrics over HTTPS (a self-signed certificate) and only to clients whose bearer token may get the path /metrics (TokenReview and SubjectAccessReview, as controller-runtime's secure metrics); on in the chart",
    false,
  ),
  'log-level': logLevelFlag,
  'feature-gates': {
    arg: 'GATES',
    help: "Name=true|false,... of Kruise's DaemonSet gates (unknown names are refused); PreDownloadImageForDaemonSetUpdate=true turns image pre-download on (default off, as Kruise); the others change nothing yet",
    default: parseFeatureGates(undefined),
    defaultHelp: '',
    parse(raw, flag) {
      try {
        return parseFeatureGates(raw);
      } catch (err) {
        throw new UserError(`--${flag}: ${(err as Error).message}`, 2);
      }
    },
  },
  'image-predownload': enumFlag(
    ['pods', 'imagepulljob', 'off'],
    "with that gate on: pods pulls a rollout's new images ahead on nodes still running old pods with short-lived pull pods (docs/rollout-strategies.md: image pre-download); imagepulljob creates Kruise ImagePullJobs instead (needs that CRD and kruise-daemon); off",
    'pods',
  ),
  'kruise-pod-ready-gate': enumFlag(
    ['always', 'when-needed'],
    'always: the KruisePodReady readiness gate on every pod, as Kruise, set True right after the create (one status write per pod); when-needed: only on pods of DaemonSets with lifecycle.preDelete.markPodNotReady, one write per pod fewer for very large clusters, but pods created without the gate cannot be made NotReady later (markPodNotReady turned on afterwards, ContainerRecreateRequest unreadyGracePeriodSeconds)',
    DEFAULT_KRUISE_POD_READY_GATE,
  ),
  'daemonset-api-version': enumFlag(
    ['v1beta1', 'v1alpha1'],
    'the apps.kruise.io version the controller lists, watches and writes DaemonSets in: v1beta1, the storage version; v1alpha1 when the CRD serves only v1alpha1 (chart value crd.servedVersions)',
    'v1beta1',
  ),
} satisfies Flags;

export const webhookFlags = {
  'cert-dir': stringWithDefault('tls.crt and tls.key', '/tmp/k8s-webhook-server/serving-certs', 'DIR'),
  'webhook-port': webhookPortFlag,
  'webhook-host': stringFlag(
    'out of cluster: serve on HOST, generate a certificate for it and register the webhook configurations with url https://HOST:PORT',
    { arg: 'HOST' },
  ),
  'webhook-keep-registration': boolFlag(
    'with --webhook-host: leave the webhook configurations and the CRD conversion URL registered on exit (by default they are removed, since fail-closed webhooks nothing serves refuse every DaemonSet write)',
    false,
  ),
  'webhook-configuration-name': stringWithDefault(
    'base name of the webhook configurations',
    'advanced-daemonset',
    'NAME',
  ),
  'webhook-timeout-seconds': intFlag('timeoutSeconds of the registered configurations', 10),
  'webhook-drain': durationFlag('keep serving this long after SIGTERM', 5_000),
  ...prefixed('webhook-', limitFlags),
  'cert-mode': enumFlag(
    CERT_MODES,
    'in a cluster: self-signed (keep a CA and serving certificate in --cert-secret-name, renew them, patch caBundle into the webhook configurations), or cert-manager|external (serve the tls.crt and tls.key mounted in --cert-dir)',
    'external',
  ),
  'cert-secret-name': stringWithDefault(
    "self-signed: the Secret in the pod's namespace",
    'advanced-daemonset-webhook-certs',
    'NAME',
  ),
  'webhook-service-name': stringWithDefault(
    'self-signed: the Service the certificate is for',
    'advanced-daemonset-webhook',
    'NAME',
  ),
} satisfies Flags;

export const managerFlags = { ...controllerFlags, ...webhookFlags } satisfies Flags;

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
  port: number,
  portGiven: boolean,
): BindAddress {
  if (address === undefined) return { host: '0.0.0.0', port };
  if (portGiven) throw new UserError(`--${flag} and --${portFlag} cannot both be set`, 2);
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(address);
  const portNumber = Number(m?.[3]);
  if (!m || portNumber > 65535)
    throw new UserError(`--${flag} must be HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080 or :8080), got "${address}"`, 2);
  const host = m[1] ?? m[2] ?? '';
  return { host: host === '' ? '0.0.0.0' : host, port: portNumber };
}

function controllerRunOptions(
  v: FlagValues<typeof controllerFlags>,
  log: Logger,
  gates: FeatureGates,
): ControllerRunOptions {
  return {
    kubeconfig: v.kubeconfig,
    workers: Math.max(1, v.workers),
    qps: v['kube-api-qps'],
    burst: v['kube-api-burst'],
    leaderElect: v['leader-elect'],
    leaderElectionNamespace: v['leader-election-namespace'],
    leaderElectionId: v['leader-election-id'],
    leaseDurationMs: v['lease-duration'],
    renewDeadlineMs: v['renew-deadline'],
    retryPeriodMs: v['retry-period'],
    // Behind Kruise's alpha gate, off by default: it puts extra (pull) pods into users' namespaces.
    imagePreDownload: gates.PreDownloadImageForDaemonSetUpdate ? v['image-predownload'] : 'off',
    kruisePodReadyGate: v['kruise-pod-ready-gate'],
    inPlaceResize: gates.InPlaceWorkloadVerticalScaling,
    daemonSetApiVersion: v['daemonset-api-version'],
    logger: log,
  };
}

/** The managed webhook's options (cmd/advanced-daemonset/webhook-host.ts) from the webhook's flags. */
function managedWebhookOptions(
  w: FlagValues<typeof webhookFlags>,
  v: FlagValues<typeof controllerFlags>,
  client: KubeClient,
  log: Logger,
  issuer: CertificateIssuer,
): ManagedWebhookOptions {
  return {
    certDir: w['cert-dir'],
    port: w['webhook-port'],
    host: w['webhook-host'],
    keepRegistration: w['webhook-keep-registration'],
    configurationName: w['webhook-configuration-name'],
    timeoutSeconds: w['webhook-timeout-seconds'],
    drainMs: w['webhook-drain'],
    limits: webhookLimitsOf(w, 'webhook-'),
    certMode: w['cert-mode'],
    certSecretName: w['cert-secret-name'],
    serviceName: w['webhook-service-name'],
    namespace: currentNamespace(loadKubeConfig(v.kubeconfig)),
    client,
    logger: log,
    issuer,
  };
}

/**
 * --metrics-secure: a self-signed certificate, as controller-runtime's when no certificate directory is given
 * (scrapers skip verification, as the chart's ServiceMonitor does, and authenticate with their token: what matters
 * is the token's privacy), and TokenReview + SubjectAccessReview for each scraper.
 */
async function secureMetricsOptions(client: KubeClient, log: Logger, issuer: CertificateIssuer) {
  const { leaf } = await issuer.newServingCertificate([hostname(), 'localhost', '127.0.0.1']);
  return { tls: { cert: leaf.certPem, key: leaf.keyPem }, authorizer: delegatingAuthorizer(client, log) };
}

/** What ends the process: a signal, the controller stopping, or its leadership lost. */
function shutdownReason(
  stop: AbortController,
  controller: { done: Promise<{ lostLeadership: boolean }> },
  log: Logger,
): Promise<'signal' | 'lost-leadership' | 'stopped'> {
  return Promise.race([
    onShutdownSignal(stop, log).then(() => 'signal' as const),
    controller.done.then((d) => (d.lostLeadership ? ('lost-leadership' as const) : ('stopped' as const))),
  ]);
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

async function runProcess(
  v: FlagValues<typeof controllerFlags>,
  given: ReadonlySet<string>,
  w?: FlagValues<typeof webhookFlags>,
): Promise<number> {
  const withWebhook = w !== undefined;
  const log = pino({ level: v['log-level'], base: { pid: process.pid, host: hostname() } });
  const gates = v['feature-gates'];
  const opts = controllerRunOptions(v, log, gates);
  if (w?.['cert-mode'] === 'self-signed' && w['webhook-host'])
    throw new UserError(
      '--webhook-host makes its own certificate; it cannot be combined with --cert-mode self-signed',
      2,
    );
  const healthAddress = bindAddressFlag(
    'health-probe-bind-address',
    v['health-probe-bind-address'],
    'health-port',
    v['health-port'],
    given.has('health-port'),
  );
  const metricsAddress = bindAddressFlag(
    'metrics-bind-address',
    v['metrics-bind-address'],
    'metrics-port',
    v['metrics-port'],
    given.has('metrics-port'),
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
    // Certificates are made in child processes, so the manager never loads the library that writes them.
    const issuer = childProcessIssuer();
    if (w) {
      webhook = await startManagedWebhook(managedWebhookOptions(w, v, controller.client, log, issuer), stop.signal);
    }
    const health = await startProbeServer({
      host: healthAddress.host,
      port: healthAddress.port,
      healthz: () => true,
      // Followers are ready too: they serve webhooks and keep warm caches. A process that serves the webhook is ready
      // once it serves, without waiting for its caches: the DaemonSet informer lists v1beta1, and objects stored in
      // v1alpha1 (before an upgrade's storage migration, or with crd.storageVersion v1alpha1) are converted by this
      // very webhook, which the apiserver reaches through the Service only at Ready pods. Waiting for the caches
      // would leave every replica unready for good once none is ready.
      readyz: () => !draining && (webhook ? webhook.ready() : controller!.synced()),
    });
    servers.push(health);
    const secureMetrics = v['metrics-secure'] ? await secureMetricsOptions(controller.client, log, issuer) : undefined;
    servers.push(await startMetricsServer(registry, metricsAddress.port, metricsAddress.host, secureMetrics));
    log.info(
      { healthPort: health.port, metricsPort: servers[1]!.port, webhookPort: webhook?.port },
      withWebhook ? 'manager started' : 'controller started',
    );

    if ((await shutdownReason(stop, controller, log)) === 'lost-leadership') {
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
${flagsHelp(controllerFlags)}
`;

export const controllerCommand = defineCommand({
  name: 'controller',
  summary: 'Run the DaemonSet controller only',
  usage: controllerUsage,
  flags: controllerFlags,
  run: ({ values, given }) => runProcess(values, given),
});

const managerUsage = `Usage: advanced-daemonset manager [flags]

Runs the admission webhook and the controller in one process (the default in a deployment).
All replicas serve the webhook; only the leader reconciles.

Controller flags:
${flagsHelp(controllerFlags, false)}

Webhook flags:
${flagsHelp(webhookFlags)}
`;

export const managerCommand = defineCommand({
  name: 'manager',
  summary: 'Run webhook and controller in one process (the deployment default)',
  usage: managerUsage,
  flags: managerFlags,
  run: ({ values, given }) => runProcess(values, given, values),
});
