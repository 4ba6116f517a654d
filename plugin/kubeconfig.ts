// Which kubeconfig, which context, which namespace: kubectl's rules (k8s.io/client-go/tools/clientcmd, loader.go
// ClientConfigLoadingRules.Load and ResolveLocalPaths:
// https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/client-go/tools/clientcmd/loader.go).
//
// - `--kubeconfig PATH`: that file only, and it must exist.
// - else $KUBECONFIG, a list (`:` on Linux and macOS), duplicates dropped, files that do not exist skipped; the
//   files are merged: for each cluster, user and context NAME the first file that defines it wins (the whole entry),
//   and current-context comes from the first file that sets it.
// - else ~/.kube/config; else, in a pod, the service account.
// - Relative paths in a file (certificate-authority, client-certificate, client-key, tokenFile, an exec command
//   with a slash) are relative to that file.
// - `--context` picks the context; the namespace is `-n`, else the context's, else "default".
//
// client-node's KubeConfig.loadFromDefault differs on all three merge points (a later file's current-context wins,
// a name defined twice throws "Duplicate cluster", a missing file throws), so the merge is done here; the chosen
// context then goes to src/k8s/kubeconfig.ts (which hands exec and auth-provider users to client-node).
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { KubeClient } from '../src/k8s/client.ts';
import { kubeConfigFromDocument, loadKubeConfig, currentNamespace } from '../src/k8s/kubeconfig.ts';
import { PluginError } from './errors.ts';

type Yaml = Record<string, unknown>;

const obj = (v: unknown): Yaml => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Yaml) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** One kubeconfig file, parsed. */
export interface KubeconfigSource {
  path: string;
  doc: unknown;
}

/** The files kubectl would read, in precedence order, and whether they came from --kubeconfig. */
export function kubeconfigPrecedence(opts: { explicit?: string; env?: string; home: string }): {
  paths: string[];
  explicit: boolean;
} {
  if (opts.explicit) return { paths: [opts.explicit], explicit: true };
  if (opts.env) {
    const paths = [...new Set(opts.env.split(delimiter).filter(Boolean))];
    if (paths.length > 0) return { paths, explicit: false };
  }
  return { paths: [join(opts.home, '.kube', 'config')], explicit: false };
}

export interface MergedKubeconfig {
  clusters: Map<string, Yaml>;
  users: Map<string, Yaml>;
  contexts: Map<string, Yaml>;
  currentContext?: string;
}

const resolveFrom = (base: string, p: unknown): unknown =>
  typeof p === 'string' && p !== '' && !isAbsolute(p) ? join(base, p) : p;

/** ResolveLocalPaths for one cluster entry's `cluster` or one user entry's `user`, relative to `base`. */
function resolvePaths(kind: 'cluster' | 'user', body: Yaml, base: string): Yaml {
  const out = { ...body };
  if (kind === 'cluster') out['certificate-authority'] = resolveFrom(base, out['certificate-authority']);
  else {
    for (const k of ['client-certificate', 'client-key', 'tokenFile']) out[k] = resolveFrom(base, out[k]);
    const exec = obj(out.exec);
    if (typeof exec.command === 'string' && exec.command.includes(sep))
      out.exec = { ...exec, command: resolveFrom(base, exec.command) };
  }
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

/** The merge of `sources` (precedence order) as clientcmd's Load does it: first definition of a name wins. */
export function mergeKubeconfigs(sources: readonly KubeconfigSource[]): MergedKubeconfig {
  const merged: MergedKubeconfig = { clusters: new Map(), users: new Map(), contexts: new Map() };
  for (const { path, doc } of sources) {
    const d = obj(doc);
    const base = dirname(path);
    const add = (list: unknown, into: Map<string, Yaml>, kind: 'cluster' | 'user' | 'context') => {
      for (const e of Array.isArray(list) ? list : []) {
        const name = str(obj(e).name);
        if (name === undefined || into.has(name)) continue;
        const body = obj(obj(e)[kind]);
        into.set(name, kind === 'context' ? body : resolvePaths(kind, body, base));
      }
    };
    add(d.clusters, merged.clusters, 'cluster');
    add(d.users, merged.users, 'user');
    add(d.contexts, merged.contexts, 'context');
    merged.currentContext ??= str(d['current-context']);
  }
  return merged;
}

export interface SelectedContext {
  contextName: string;
  /** The context's namespace, if it sets one. */
  namespace?: string;
  server: string;
  /** A kubeconfig holding just this context, its cluster and its user (absolute paths). */
  doc: Yaml;
}

/** The context to use (`override` is --context), with its cluster and user, or a PluginError as kubectl words it. */
export function selectContext(merged: MergedKubeconfig, override?: string): SelectedContext {
  const contextName = override || merged.currentContext;
  if (!contextName)
    throw new PluginError(
      'invalid configuration: no context chosen: the kubeconfig sets no current-context; pass --context',
    );
  const context = merged.contexts.get(contextName);
  if (!context) throw new PluginError(`context was not found for specified context: ${contextName}`);
  const clusterName = str(context.cluster);
  const cluster = clusterName ? merged.clusters.get(clusterName) : undefined;
  if (!clusterName || !cluster)
    throw new PluginError(
      `invalid configuration: cluster ${clusterName ? `"${clusterName}" ` : ''}of context "${contextName}" was not found`,
    );
  const server = str(cluster.server);
  if (!server) throw new PluginError(`invalid configuration: cluster "${clusterName}" has no server defined`);
  const userName = str(context.user);
  const user = userName ? (merged.users.get(userName) ?? {}) : {};
  const namespace = str(context.namespace);
  return {
    contextName,
    ...(namespace ? { namespace } : {}),
    server,
    doc: {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: clusterName, cluster }],
      users: [{ name: userName ?? '', user }],
      contexts: [{ name: contextName, context }],
      'current-context': contextName,
    },
  };
}

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
  const env = 'env' in opts ? opts.env : process.env.KUBECONFIG;
  const { paths, explicit } = kubeconfigPrecedence({ explicit: opts.kubeconfig, env, home: opts.home ?? homedir() });
  const sources: KubeconfigSource[] = [];
  for (const path of paths) {
    if (!existsSync(path)) {
      if (explicit) throw new PluginError(`stat ${path}: no such file or directory`);
      continue;
    }
    try {
      sources.push({ path, doc: parseYaml(readFileSync(path, 'utf8')) as unknown });
    } catch (err) {
      throw new PluginError(`error loading config file "${path}": ${(err as Error).message}`);
    }
  }
  const clientOpts = { userAgent: opts.userAgent, requestTimeoutMs: 30_000 };
  if (sources.length === 0) {
    // kubectl in a pod without a kubeconfig uses the service account (rest.InClusterConfig).
    if (!env && process.env.KUBERNETES_SERVICE_HOST && process.env.KUBERNETES_SERVICE_PORT) {
      const loaded = loadKubeConfig();
      return {
        client: KubeClient.fromKubeConfig(loaded, clientOpts),
        namespace: opts.namespace || currentNamespace(loaded),
        server: loaded.server,
      };
    }
    throw new PluginError(
      `invalid configuration: no configuration has been provided (no file at ${paths.join(', ')}); ` +
        'pass --kubeconfig or set KUBECONFIG',
    );
  }
  const selected = selectContext(mergeKubeconfigs(sources), opts.context);
  const loaded = kubeConfigFromDocument(selected.doc, sources.map((s) => s.path).join(delimiter));
  return {
    client: KubeClient.fromKubeConfig(loaded, clientOpts),
    namespace: opts.namespace || selected.namespace || 'default',
    contextName: selected.contextName,
    server: selected.server,
  };
}
