// The plugin's connection to a cluster: the kubeconfig, the context and the namespace as kubectl reads them
// (src/k8s/kubeconfig.ts, loadKubectlConfig), and a client on it. A kubeconfig that cannot be used is a PluginError,
// so the user reads kubectl's words and no stack trace.
import { KubeClient } from '../src/k8s/client.ts';
import { KubeconfigError, loadKubectlConfig, type KubectlConfig } from '../src/k8s/kubeconfig.ts';
import { PluginError } from './errors.ts';

/** What a command talks to. */
export interface ClusterConnection {
  client: KubeClient;
  /** -n, else the context's namespace, else "default". */
  namespace: string;
  /** The context used (undefined in a pod without a kubeconfig). */
  contextName?: string;
  server: string;
}

export interface ConnectOptions {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  userAgent?: string;
  /** Defaults: process.env.KUBECONFIG, os.homedir(). */
  env?: string;
  home?: string;
}

/** Reads the kubeconfig(s) as kubectl does and returns a client for the chosen context (no request made yet). */
export function connect(opts: ConnectOptions): ClusterConnection {
  const { userAgent, ...choice } = opts;
  let config: KubectlConfig;
  try {
    config = loadKubectlConfig(choice);
  } catch (err) {
    if (err instanceof KubeconfigError) throw new PluginError(err.message);
    throw err;
  }
  return {
    client: KubeClient.fromKubeConfig(config.loaded, { userAgent, requestTimeoutMs: 30_000 }),
    namespace: config.namespace,
    ...(config.contextName !== undefined ? { contextName: config.contextName } : {}),
    server: config.loaded.server,
  };
}
