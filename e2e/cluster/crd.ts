// The DaemonSet CRD on a local cluster, as src/api/crd.ts builds it (the chart renders the same object as
// templates/crd.yaml, test/chart checks they are equal): both versions served, v1beta1 stored, and no conversion
// webhook until a manager started with --webhook-host registers its URL (cmd/advanced-daemonset/webhook-host.ts), or a test
// registers one (e2e/lib/conversion.ts). Next to it the DaemonSetSetting CRD (settingCrdObject(), the chart's
// templates/crd-daemonsetsetting.yaml), which has one version and nothing to convert. Used by the e2e harness, the
// demo and the benchmarks.
import { crdObject, settingCrdObject, type ConversionClientConfig, type CrdOptions } from '../../src/api/crd.ts';
import { API_VERSION, KIND, RESOURCE } from '../../src/api/constants.ts';
import { SETTING_RESOURCE } from '../../src/api/setting.ts';
import { until } from '../../src/testing/wait.ts';
import { kubectl } from './cluster.ts';

/**
 * `kubectl apply --server-side` of both CRDs, then waits until both are Established. A conversion webhook already
 * registered on an existing DaemonSet CRD is kept unless `opts.conversion` says otherwise (a reused cluster, whose
 * manager set its URL: applying strategy None next to that webhook would be refused).
 */
export async function installCrd(kubeconfig: string, opts: CrdOptions = {}): Promise<void> {
  const existing = await getCrd(kubeconfig).catch(() => undefined);
  const registered = existing?.spec.conversion?.strategy === 'Webhook' ? existing.spec.conversion.webhook : undefined;
  const conversion = opts.conversion ?? registered?.clientConfig;
  const crd = crdObject({ ...opts, ...(conversion ? { conversion } : {}) });
  const list = { apiVersion: 'v1', kind: 'List', items: [crd, settingCrdObject()] };
  await kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', '-'], JSON.stringify(list));
  await waitEstablished(kubeconfig);
  await waitEstablished(kubeconfig, 60_000, SETTING_RESOURCE);
}

/**
 * Waits until the CRD (the DaemonSet one unless named) is Established (polled: `kubectl wait
 * --for=condition=Established` fails at once when it finds the CRD before the apiserver wrote any status condition).
 */
export async function waitEstablished(kubeconfig: string, timeoutMs = 60_000, name = RESOURCE): Promise<void> {
  await until(
    `${name} Established`,
    async () =>
      (await getCrd(kubeconfig, name)).status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'),
    { timeoutMs, intervalMs: 200 },
  );
}

interface CrdJson {
  spec: { conversion?: { strategy?: string; webhook?: { clientConfig?: ConversionClientConfig } } };
  status?: { storedVersions?: string[]; conditions?: { type: string; status: string }[] };
}

export async function getCrd(kubeconfig: string, name = RESOURCE): Promise<CrdJson> {
  return JSON.parse((await kubectl(kubeconfig, ['get', 'crd', name, '-o', 'json'])).stdout) as CrdJson;
}

/**
 * Waits until the CRD converts through a webhook at `url` (a manager's --webhook-host registration is done: until
 * then an object written in v1alpha1 would be stored without conversion), and until the apiserver converts through
 * it. The apiserver rebuilds a CRD's storage after it sees the CRD change, not with the write: for a moment after
 * the new URL is in the CRD, it may still call the URL before it (a manager stopped since: "connection refused"). A
 * server-side dry run of a v1alpha1 DaemonSet, converted to the stored version as a create is, passes once it does.
 */
export async function waitConversionWebhook(kubeconfig: string, url: string, timeoutMs = 60_000): Promise<void> {
  await until(
    `the conversion webhook of ${RESOURCE} registered at ${url}`,
    async () => {
      const conversion = (await getCrd(kubeconfig)).spec.conversion;
      const config = conversion?.strategy === 'Webhook' ? conversion.webhook?.clientConfig : undefined;
      return config?.url === url && Boolean(config.caBundle);
    },
    { timeoutMs, intervalMs: 200 },
  );
  // A refusal is thrown, and `until` names the last one when it gives up.
  await until(
    `a dry-run create of a ${API_VERSION} DaemonSet converted through ${url}`,
    async () => {
      await kubectl(kubeconfig, ['create', '--dry-run=server', '-o', 'name', '-f', '-'], JSON.stringify(PROBE));
      return true;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/** The object of waitConversionWebhook's dry run: valid, never stored. */
const PROBE = {
  apiVersion: API_VERSION,
  kind: KIND,
  metadata: { name: 'conversion-probe', namespace: 'default' },
  spec: {
    selector: { matchLabels: { app: 'conversion-probe' } },
    template: {
      metadata: { labels: { app: 'conversion-probe' } },
      spec: { containers: [{ name: 'probe', image: 'registry.example/probe:1' }] },
    },
  },
};
