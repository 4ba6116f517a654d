// The Mutating/ValidatingWebhookConfigurations that route apps.kruise.io DaemonSet and advanced-daemonset.io
// DaemonSetSetting admission to us, the CRD's conversion webhook (v1alpha1 <-> v1beta1, on the same server), and the bootstrap of a
// serving certificate for them. Out of cluster (`--webhook-host 127.0.0.1`), the apiserver reaches us by
// URL, as kruise-manager does with WEBHOOK_HOST and as envtest does: a Service reference would need
// kube-proxy, which a local control plane lacks.
import { mkdirSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { isIP } from 'node:net';
import type { KubeClient } from '../src/k8s/client.ts';
import type { ResourceType } from '../src/k8s/resources.ts';
import { ApiError, isConflict, isNotFound } from '../src/k8s/errors.ts';
import { resources } from '../src/k8s/resources.ts';
import type { KubeObject } from '../src/k8s/types.ts';
import { CONVERT_PATH, RESOURCE, SERVED_VERSIONS } from '../src/api/constants.ts';
import { crdObject } from '../src/api/crd.ts';
import {
  SETTING_API_GROUP,
  SETTING_MUTATE_PATH,
  SETTING_PLURAL,
  SETTING_VALIDATE_PATH,
  SETTING_VERSION,
} from '../src/api/setting.ts';
import { createCA, createLeaf, type KeyPairPem } from '../src/pki/pki.ts';
import { planWebhookStartup, readServingFiles } from './startup.ts';

export const MUTATE_PATH = '/mutate-apps-kruise-io-daemonset';
export const VALIDATE_PATH = '/validate-apps-kruise-io-daemonset';
export const DEFAULT_CONFIGURATION_NAME = 'advanced-daemonset';

export type WebhookEndpoint =
  | { url: string } // e.g. https://127.0.0.1:9876
  | { service: { namespace: string; name: string; port: number } };

export interface WebhookConfigurationOptions {
  /** Base name; "-mutating" / "-validating" are appended. */
  name?: string;
  endpoint: WebhookEndpoint;
  caBundle: string;
  timeoutSeconds?: number;
}

function clientConfig(endpoint: WebhookEndpoint, path: string, caBundle: string) {
  const caBundleB64 = Buffer.from(caBundle).toString('base64');
  if ('url' in endpoint) return { url: `${endpoint.url.replace(/\/$/, '')}${path}`, caBundle: caBundleB64 };
  return { service: { ...endpoint.service, path }, caBundle: caBundleB64 };
}

/**
 * Both configurations, each with a webhook for apps.kruise.io daemonsets and one for advanced-daemonset.io
 * daemonsetsettings (only those, only CREATE and UPDATE of the main resource: status writes are not admitted),
 * failing closed.
 */
export function webhookConfigurations(opts: WebhookConfigurationOptions): {
  mutating: KubeObject;
  validating: KubeObject;
} {
  const name = opts.name ?? DEFAULT_CONFIGURATION_NAME;
  const common = {
    admissionReviewVersions: ['v1', 'v1beta1'],
    sideEffects: 'None',
    failurePolicy: 'Fail',
    matchPolicy: 'Equivalent',
    timeoutSeconds: opts.timeoutSeconds ?? 10,
  };
  const rules = (apiGroup: string, apiVersions: string[], resource: string) => [
    {
      apiGroups: [apiGroup],
      apiVersions,
      resources: [resource],
      operations: ['CREATE', 'UPDATE'],
      scope: 'Namespaced',
    },
  ];
  // Both served versions: each is defaulted and validated by its own rules (webhook/admission.ts).
  const daemonSets = { ...common, rules: rules('apps.kruise.io', [...SERVED_VERSIONS], 'daemonsets') };
  const settings = { ...common, rules: rules(SETTING_API_GROUP, [SETTING_VERSION], SETTING_PLURAL) };
  return {
    mutating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: `${name}-mutating`, labels: { 'app.kubernetes.io/name': 'advanced-daemonset' } },
      webhooks: [
        {
          name: 'mdaemonset.apps.kruise.io',
          clientConfig: clientConfig(opts.endpoint, MUTATE_PATH, opts.caBundle),
          reinvocationPolicy: 'Never',
          ...daemonSets,
        },
        {
          name: 'mdaemonsetsetting.advanced-daemonset.io',
          clientConfig: clientConfig(opts.endpoint, SETTING_MUTATE_PATH, opts.caBundle),
          reinvocationPolicy: 'Never',
          ...settings,
        },
      ],
    },
    validating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: `${name}-validating`, labels: { 'app.kubernetes.io/name': 'advanced-daemonset' } },
      webhooks: [
        {
          name: 'vdaemonset.apps.kruise.io',
          clientConfig: clientConfig(opts.endpoint, VALIDATE_PATH, opts.caBundle),
          ...daemonSets,
        },
        {
          name: 'vdaemonsetsetting.advanced-daemonset.io',
          clientConfig: clientConfig(opts.endpoint, SETTING_VALIDATE_PATH, opts.caBundle),
          ...settings,
        },
      ],
    },
  };
}

/**
 * `spec.conversion` of the DaemonSet CRD (src/api/crd.ts builds it): the apiserver converts between v1alpha1 and
 * v1beta1 through our /convert (ConversionReview v1), as Kruise's CRD does through kruise-manager
 * (https://github.com/openkruise/kruise/blob/v1.9.0/config/crd/patches/webhook_in_daemonsets.yaml).
 */
export function crdConversion(endpoint: WebhookEndpoint, caBundle: string): Record<string, unknown> {
  const crd = crdObject({ conversion: clientConfig(endpoint, CONVERT_PATH, caBundle) }) as {
    spec: { conversion: Record<string, unknown> };
  };
  return crd.spec.conversion;
}

/**
 * Points the CRD's conversion at `endpoint` with `caBundle` (one JSON patch: `add` replaces spec.conversion whole,
 * so a `service` reference left by the chart never sits next to the `url`). The CRD must exist.
 */
export async function ensureCrdConversion(
  client: KubeClient,
  opts: { endpoint: WebhookEndpoint; caBundle: string; crdName?: string },
): Promise<void> {
  await client.patch(
    resources.customResourceDefinitions,
    { name: opts.crdName ?? RESOURCE },
    [{ op: 'add', path: '/spec/conversion', value: crdConversion(opts.endpoint, opts.caBundle) }],
    { type: 'json' },
  );
}

/** Creates the object, or replaces the existing one's content keeping its resourceVersion. */
async function createOrUpdate(client: KubeClient, type: ResourceType, obj: KubeObject): Promise<void> {
  const name = obj.metadata.name!;
  try {
    const current = await client.get<KubeObject>(type, { name });
    await client.update(type, {
      ...obj,
      metadata: { ...obj.metadata, resourceVersion: current.metadata.resourceVersion },
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await client.create(type, obj);
  }
}

export async function ensureWebhookConfigurations(
  client: KubeClient,
  opts: WebhookConfigurationOptions,
): Promise<void> {
  const { mutating, validating } = webhookConfigurations(opts);
  await createOrUpdate(client, resources.mutatingWebhookConfigurations, mutating);
  await createOrUpdate(client, resources.validatingWebhookConfigurations, validating);
}

/**
 * Undoes what an out-of-cluster manager registered at `url` (ensureWebhookConfigurations, ensureCrdConversion):
 * deletes both webhook configurations and sets the CRD's conversion back to None, each only while it still points
 * at `url`, so a registration another manager or a Helm release made since is left alone (a delete with a
 * resourceVersion precondition, a JSON patch that tests the URL). Left behind, fail-closed webhooks that nothing
 * serves refuse every DaemonSet write ("connection refused"). Returns what it removed.
 */
export async function removeWebhookRegistration(
  client: KubeClient,
  opts: { name?: string; url: string; crdName?: string; signal?: AbortSignal },
): Promise<string[]> {
  const { signal } = opts;
  const base = opts.url.replace(/\/$/, '');
  const ours = (u: unknown) => typeof u === 'string' && u.startsWith(`${base}/`);
  const removed: string[] = [];
  const { mutating, validating } = webhookConfigurations({ name: opts.name, endpoint: { url: base }, caBundle: '' });
  for (const [type, name] of [
    [resources.mutatingWebhookConfigurations, mutating.metadata.name!],
    [resources.validatingWebhookConfigurations, validating.metadata.name!],
  ] as const) {
    const current = await client.getIfExists<KubeObject & { webhooks?: { clientConfig?: { url?: string } }[] }>(
      type,
      { name },
      { signal },
    );
    if (!current?.webhooks?.length || !current.webhooks.every((w) => ours(w.clientConfig?.url))) continue;
    try {
      await client.delete(
        type,
        { name },
        { preconditions: { resourceVersion: current.metadata.resourceVersion! }, signal },
      );
      removed.push(`${type.kind}/${name}`);
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
  const crdName = opts.crdName ?? RESOURCE;
  const crd = await client.getIfExists<
    KubeObject & { spec?: { conversion?: { webhook?: { clientConfig?: { url?: string } } } } }
  >(resources.customResourceDefinitions, { name: crdName }, { signal });
  const url = crd?.spec?.conversion?.webhook?.clientConfig?.url;
  if (ours(url)) {
    try {
      await client.patch(
        resources.customResourceDefinitions,
        { name: crdName },
        [
          { op: 'test', path: '/spec/conversion/webhook/clientConfig/url', value: url },
          { op: 'replace', path: '/spec/conversion', value: { strategy: 'None' } },
        ],
        { type: 'json', signal },
      );
      removed.push(`CustomResourceDefinition/${crdName} conversion webhook`);
    } catch (err) {
      // The test failed (422): another registration since; or the CRD is gone.
      if (!isNotFound(err) && !(err instanceof ApiError && err.code === 422)) throw err;
    }
  }
  return removed;
}

/**
 * A new private CA and a serving certificate it signed for `hosts` (IP addresses or DNS names), as PEM: what a child
 * process can send back (certs/issuer.ts).
 */
export async function newServingCertificate(
  hosts: string[],
  { validityDays = 365, caValidityDays = 3650, now = new Date() } = {},
): Promise<{ ca: KeyPairPem; leaf: KeyPairPem }> {
  const ca = await createCA('advanced-daemonset-webhook-ca', caValidityDays, now);
  const leaf = await createLeaf(ca, {
    commonName: hosts[0] ?? 'advanced-daemonset-webhook',
    usage: 'server',
    ipAddresses: hosts.filter((h) => isIP(h) !== 0),
    dnsNames: hosts.filter((h) => isIP(h) === 0),
    validityDays,
    now,
  });
  return { ca: { certPem: ca.certPem, keyPem: ca.keyPem }, leaf };
}

export interface ServingCertificate {
  certDir: string;
  caBundle: string;
  /** The cert dir's certificate was kept; otherwise a new one was made, for `reason`. */
  reused: boolean;
  reason?: string;
}

/**
 * Writes tls.crt, tls.key and ca.crt for `hosts` (IPs or DNS names) into certDir, unless the
 * certificate there covers them, matches its key and ca.crt, and is still valid for more than
 * `renewBeforeDays` (planWebhookStartup). Needs no apiserver. Files are replaced atomically
 * (write then rename), so a server watching the dir never reads half a key pair.
 */
export async function ensureLocalServingCertificate(
  certDir: string,
  hosts: string[],
  {
    validityDays = 365,
    renewBeforeDays = 30,
    now = new Date(),
    // By default in this process; the manager's in a child (certs/issuer.ts).
    newServingCertificate: make = newServingCertificate,
  } = {},
): Promise<ServingCertificate> {
  mkdirSync(certDir, { recursive: true });
  const crt = join(certDir, 'tls.crt');
  const caFile = join(certDir, 'ca.crt');
  const files = readServingFiles(certDir);
  const plan = planWebhookStartup({
    mode: 'webhook-host',
    files,
    names: hosts,
    now,
    renewBeforeMs: renewBeforeDays * 24 * 3600 * 1000,
  });
  if (plan.serve === 'cached') return { certDir, caBundle: files.caBundlePem, reused: true };
  const { ca, leaf } = await make(hosts, { validityDays, caValidityDays: validityDays * 10, now });
  const write = (file: string, data: string, mode = 0o644) => {
    writeFileSync(`${file}.tmp`, data, { mode });
    renameSync(`${file}.tmp`, file);
  };
  write(caFile, ca.certPem);
  write(join(certDir, 'tls.key'), leaf.keyPem, 0o600);
  write(crt, leaf.certPem);
  return { certDir, caBundle: ca.certPem, reused: false, reason: plan.reason };
}
