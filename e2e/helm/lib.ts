// Helpers for the Helm e2e tests: install the chart into a test namespace (its webhooks limited
// to that namespace, its pods kept off the fake nodes), and act as the chart's ServiceAccount
// with a real token, so RBAC is checked by the apiserver exactly as in a cluster.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { KubeClient } from '../../src/k8s/client.ts';
import { loadKubeConfig } from '../../src/k8s/kubeconfig.ts';
import { chartDir, helm, helmOk } from '../../test/chart/helm.ts';
import { binaries } from '../cluster/binaries.ts';
import { kubeconfig, kubectl, kubectlJson } from '../lib/kube.ts';

export { chartDir, helm, helmOk };

/** helm with the harness's kubeconfig. */
export function helmCluster(args: string[]): Promise<string> {
  return helmOk([...args, '--kubeconfig', kubeconfig()]);
}

export interface Release {
  name: string;
  namespace: string;
  /** Object name prefix (<release>-advanced-daemonset). */
  fullname: string;
  serviceAccount: string;
  /** system:serviceaccount:<ns>:<sa> */
  user: string;
}

export function release(name: string, namespace: string): Release {
  const fullname = `${name}-advanced-daemonset`;
  return {
    name,
    namespace,
    fullname,
    serviceAccount: fullname,
    user: `system:serviceaccount:${namespace}:${fullname}`,
  };
}

/**
 * Values every e2e install uses: the webhooks only see the test namespace (other tests in the
 * same cluster are not routed to a Service without endpoints), and the Deployment's pods
 * cannot land on kwok nodes (there is no kubelet or image; they stay Pending).
 */
export function e2eValues(namespace: string): string[] {
  return [
    '--set-json',
    `webhook.namespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"${namespace}"}}`,
    '--set-json',
    'nodeSelector={"ads-e2e/no-such-node":"true"}',
  ];
}

/**
 * On the shared cluster the harness owns the CRD (e2e/run.ts, with its manager's conversion webhook): a release
 * there leaves it alone, or it would take it over and point its conversion at a Service without endpoints.
 */
export const SHARED_CLUSTER_VALUES = ['--set', 'crd.create=false'];

export async function install(r: Release, extra: string[] = []): Promise<string> {
  return helmCluster(['install', r.name, chartDir, '--namespace', r.namespace, ...e2eValues(r.namespace), ...extra]);
}

export async function uninstall(r: Release): Promise<void> {
  const res = await helm(['uninstall', r.name, '--namespace', r.namespace, '--wait', '--kubeconfig', kubeconfig()]);
  if (res.code !== 0 && !/not found/.test(res.stderr)) throw new Error(`helm uninstall failed: ${res.stderr}`);
}

/**
 * A kubeconfig that authenticates as the release's ServiceAccount with a bound token
 * (`kubectl create token`), written as `dir`/sa.kubeconfig (the caller removes `dir`).
 */
export async function serviceAccountKubeconfig(r: Release, dir: string): Promise<string> {
  const token = (await kubectl(['create', 'token', r.serviceAccount, '-n', r.namespace, '--duration', '2h'])).trim();
  const admin = parse(readFileSync(kubeconfig(), 'utf8')) as {
    clusters: { name: string }[];
    contexts: { name: string; context: Record<string, string> }[];
  };
  const cluster = admin.clusters[0]!;
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [cluster],
    users: [{ name: r.serviceAccount, user: { token } }],
    contexts: [{ name: 'sa', context: { cluster: cluster.name, user: r.serviceAccount, namespace: r.namespace } }],
    'current-context': 'sa',
  };
  const file = join(dir, 'sa.kubeconfig');
  writeFileSync(file, stringify(config), { mode: 0o600 });
  return file;
}

export function clientFor(kubeconfigFile: string): KubeClient {
  return KubeClient.fromKubeConfig(loadKubeConfig(kubeconfigFile));
}

/**
 * `kubectl auth can-i` as `user`: true for "yes", false for "no". kubectl answers "no" (and
 * warns) to a resource type the server does not have, so a warning fails the check instead:
 * a misspelt question must not pass as a refusal.
 */
export function canI(user: string, args: string[]): Promise<boolean> {
  const argv = ['--kubeconfig', kubeconfig(), 'auth', 'can-i', ...args, `--as=${user}`];
  return new Promise((resolve, reject) => {
    execFile(binaries().kubectl, argv, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      if (stderr.trim() !== '' || (code !== 0 && code !== 1)) {
        reject(new Error(`kubectl ${argv.slice(2).join(' ')}: exit ${String(code)}: ${stderr.trim()}`));
      } else resolve(stdout.trim() === 'yes');
    });
  });
}

/** data (base64 values) of the release's certificate Secret; {} while it has none. */
export async function certSecretData(r: Release): Promise<Record<string, string>> {
  const secret = await kubectlJson<{ data?: Record<string, string> }>([
    'get',
    'secret',
    `${r.fullname}-webhook-certs`,
    '-n',
    r.namespace,
  ]);
  return secret.data ?? {};
}

interface WebhookConfigurationJson {
  metadata: { name: string; annotations?: Record<string, string> };
  webhooks: {
    name: string;
    timeoutSeconds: number;
    clientConfig: { caBundle?: string; url?: string; service?: { name: string; namespace: string; path: string } };
  }[];
}

export async function webhookConfiguration(
  kind: 'mutating' | 'validating',
  r: Release,
): Promise<WebhookConfigurationJson> {
  const out = await kubectl(['get', `${kind}webhookconfiguration`, `${r.fullname}-${kind}`, '-o', 'json']);
  return JSON.parse(out) as WebhookConfigurationJson;
}
