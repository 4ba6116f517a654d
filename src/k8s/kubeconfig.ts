// From a kubeconfig (or the in-cluster service account) to a KubeClient. client-node does the
// parsing and credential resolution; importing this module loads it (about a second), which is
// why client.ts itself does not.
import { existsSync, readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient, restConfigFromKubeConfig, type KubeClientOptions, type RestConfig } from './client.ts';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * Loads a kubeconfig in controller-runtime's order (pkg/client/config.GetConfig): an explicit
 * path (the --kubeconfig flag), then $KUBECONFIG, then the in-cluster service account, then
 * ~/.kube/config. client-node's loadFromDefault prefers ~/.kube/config over the in-cluster
 * config, which is the wrong way round for a controller running in a pod.
 */
export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new KubeConfig();
  if (path) {
    kc.loadFromFile(path);
  } else if (!process.env.KUBECONFIG && process.env.KUBERNETES_SERVICE_HOST && process.env.KUBERNETES_SERVICE_PORT) {
    kc.loadFromCluster();
  } else {
    kc.loadFromDefault();
  }
  if (!kc.getCurrentCluster()) {
    throw new Error(
      path
        ? `kubeconfig ${path} has no current context or cluster`
        : 'no kubeconfig found: pass --kubeconfig, set $KUBECONFIG, or run in a cluster',
    );
  }
  return kc;
}

/** loadKubeConfig + restConfigFromKubeConfig (for code that wants the resolved credentials). */
export async function loadRestConfig(path?: string): Promise<RestConfig> {
  return restConfigFromKubeConfig(loadKubeConfig(path));
}

/** The one-liner for commands: `createKubeClient({ kubeconfig: flags.kubeconfig, qps, burst })`. */
export function createKubeClient(opts: KubeClientOptions & { kubeconfig?: string } = {}): KubeClient {
  const { kubeconfig, ...clientOpts } = opts;
  return KubeClient.fromKubeConfig(loadKubeConfig(kubeconfig), clientOpts);
}

/**
 * The namespace the process runs in: $POD_NAMESPACE (downward API), else the service account's
 * namespace, else the kubeconfig context's, else "default".
 */
export function currentNamespace(kc?: KubeConfig): string {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  const file = `${SERVICE_ACCOUNT_DIR}/namespace`;
  if (existsSync(file)) {
    const ns = readFileSync(file, 'utf8').trim();
    if (ns) return ns;
  }
  const ctx = kc?.getContextObject(kc.getCurrentContext());
  return ctx?.namespace ?? 'default';
}
