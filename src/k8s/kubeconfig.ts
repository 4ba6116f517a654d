// From a kubeconfig (or the in-cluster service account) to a KubeClient: the one loader of the manager and of the
// kubectl plugin, as client-go's tools/clientcmd (loader.go, client_config.go) and rest.InClusterConfig
// (https://github.com/kubernetes/client-go/tree/master/tools/clientcmd, rest/config.go).
//
// Which files, in which order, upstream has two rules, and so do we:
// - loadKubeConfig, the manager's (controller-runtime's pkg/client/config.GetConfig): --kubeconfig, else
//   $KUBECONFIG, else the in-cluster service account, else ~/.kube/config.
// - loadKubectlConfig, the plugin's (kubectl's ClientConfigLoadingRules.Load and DirectClientConfig): --kubeconfig
//   (which must exist), else $KUBECONFIG, else ~/.kube/config, else in a pod the service account; --context picks
//   the context, -n the namespace.
// Both merge a $KUBECONFIG list as clientcmd does: duplicates dropped, files that do not exist skipped; for each
// cluster, user and context NAME the first file that defines it wins (the whole entry); current-context comes from
// the first file that sets it; relative paths in a file (certificate-authority, client-certificate, client-key,
// tokenFile, an exec command with a slash) are relative to that file (ResolveLocalPaths). client-node's
// KubeConfig.loadFromDefault differs on all three merge points (a later file's current-context wins, a name defined
// twice throws "Duplicate cluster", a missing file throws), so the merge is done here.
//
// The credentials of the common cases are read here: in a pod, the service account (CA, token file re-read as it
// rotates); a user with a client certificate, a token (or token file) or basic auth. Everything else (exec and
// auth-provider plugins, impersonation, proxies) goes to client-node's KubeConfig, imported only then: loading
// client-node costs about 80 MiB of memory and a second of start-up, more than the rest of the manager together,
// and a controller in a pod never needs it.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, sep } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import type https from 'node:https';
import { KubeClient, type KubeClientOptions, type RestConfig } from './client.ts';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** A kubeconfig that cannot be used, in kubectl's words where kubectl has some; the message is for the user. */
export class KubeconfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeconfigError';
  }
}

/** What a command needs of its kubeconfig: where the apiserver is, credentials (resolved lazily), the namespace. */
export interface LoadedKubeConfig {
  /** The apiserver URL, e.g. https://127.0.0.1:6443. */
  server: string;
  /** The current context's namespace, or the service account's in a pod. */
  namespace?: string;
  /** Credentials; a promise because plugins (and client-node, when needed) resolve asynchronously. */
  restConfig: Promise<RestConfig>;
}

type Yaml = Record<string, unknown>;

const obj = (v: unknown): Yaml => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Yaml) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const named = (list: unknown, name: string): Yaml | undefined => {
  const entry = (Array.isArray(list) ? list : []).find((e) => obj(e).name === name);
  return entry === undefined ? undefined : obj(entry);
};

/** User fields read here; a user with any other field set goes to client-node. */
const SIMPLE_USER_FIELDS = new Set([
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'token',
  'tokenFile',
  'username',
  'password',
]);
/** Cluster fields read here (extensions are informational). */
const SIMPLE_CLUSTER_FIELDS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'extensions',
]);

/**
 * Loads a kubeconfig in controller-runtime's order (pkg/client/config.GetConfig): an explicit path (the
 * --kubeconfig flag), then $KUBECONFIG, then the in-cluster service account, then ~/.kube/config. (client-node's
 * loadFromDefault prefers ~/.kube/config over the in-cluster config, the wrong way round in a pod.) Throws a
 * KubeconfigError with a message for the user when nothing usable is found.
 */
export function loadKubeConfig(path?: string, serviceAccountDir = SERVICE_ACCOUNT_DIR): LoadedKubeConfig {
  if (path) return fromFile(path);
  const env = process.env.KUBECONFIG;
  if (env) {
    const { paths } = kubeconfigPrecedence({ env, home: homedir() });
    if (paths.length === 1) return fromFile(paths[0] as string);
    const sources = readKubeconfigs(paths, false);
    if (sources.length === 0) throw noConfiguration(paths);
    return kubeConfigFromDocument(selectContext(mergeKubeconfigs(sources)).doc, paths.join(delimiter));
  }
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (host && port) return inCluster(host, port, serviceAccountDir);
  const home = join(homedir(), '.kube', 'config');
  if (existsSync(home)) return fromFile(home);
  throw new KubeconfigError('no kubeconfig found: pass --kubeconfig, set $KUBECONFIG, or run in a cluster');
}

// ---------------------------------------------------------------------------------------------
// kubectl's rules (clientcmd's loader.go): which files, their merge, the context

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

/**
 * Reads and parses `paths` (kubeconfigPrecedence's) as clientcmd's Load does: a file that does not exist is skipped,
 * unless it was given explicitly (--kubeconfig); one that does not parse is an error naming it.
 */
export function readKubeconfigs(paths: readonly string[], explicit: boolean): KubeconfigSource[] {
  const sources: KubeconfigSource[] = [];
  for (const path of paths) {
    if (!existsSync(path)) {
      if (explicit) throw new KubeconfigError(`stat ${path}: no such file or directory`);
      continue;
    }
    try {
      sources.push({ path, doc: parseYaml(readFileSync(path, 'utf8')) as unknown });
    } catch (err) {
      throw new KubeconfigError(`error loading config file "${path}": ${(err as Error).message}`);
    }
  }
  return sources;
}

/** kubectl's error when no file of `paths` exists (and no service account stands in). */
function noConfiguration(paths: readonly string[]): KubeconfigError {
  return new KubeconfigError(
    `invalid configuration: no configuration has been provided (no file at ${paths.join(', ')}); ` +
      'pass --kubeconfig or set KUBECONFIG',
  );
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

/** The context to use (`override` is --context), with its cluster and user, or a KubeconfigError as kubectl words it. */
export function selectContext(merged: MergedKubeconfig, override?: string): SelectedContext {
  const contextName = override || merged.currentContext;
  if (!contextName)
    throw new KubeconfigError(
      'invalid configuration: no context chosen: the kubeconfig sets no current-context; pass --context',
    );
  const context = merged.contexts.get(contextName);
  if (!context) throw new KubeconfigError(`context was not found for specified context: ${contextName}`);
  const clusterName = str(context.cluster);
  const cluster = clusterName ? merged.clusters.get(clusterName) : undefined;
  if (!clusterName || !cluster)
    throw new KubeconfigError(
      `invalid configuration: cluster ${clusterName ? `"${clusterName}" ` : ''}of context "${contextName}" was not found`,
    );
  const server = str(cluster.server);
  if (!server) throw new KubeconfigError(`invalid configuration: cluster "${clusterName}" has no server defined`);
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

/** What a kubectl-like command talks to: loadKubectlConfig's answer. */
export interface KubectlConfig {
  loaded: LoadedKubeConfig;
  /** -n, else the context's namespace (in a pod without a kubeconfig: currentNamespace), else "default". */
  namespace: string;
  /** The context used (undefined in a pod without a kubeconfig). */
  contextName?: string;
}

/** kubectl's flags that choose the kubeconfig (clientcmd's ExplicitPath and ConfigOverrides). */
export interface KubectlConfigOptions {
  /** --kubeconfig: that file only, and it must exist. */
  kubeconfig?: string;
  /** --context */
  context?: string;
  /** -n */
  namespace?: string;
  /** Defaults: process.env.KUBECONFIG, os.homedir(). */
  env?: string;
  home?: string;
}

/** Reads the kubeconfig(s) as kubectl does (the header's rules); no request is made. */
export function loadKubectlConfig(opts: KubectlConfigOptions = {}): KubectlConfig {
  const env = 'env' in opts ? opts.env : process.env.KUBECONFIG;
  const { paths, explicit } = kubeconfigPrecedence({ explicit: opts.kubeconfig, env, home: opts.home ?? homedir() });
  const sources = readKubeconfigs(paths, explicit);
  if (sources.length === 0) {
    // kubectl in a pod without a kubeconfig uses the service account (rest.InClusterConfig).
    const host = process.env.KUBERNETES_SERVICE_HOST;
    const port = process.env.KUBERNETES_SERVICE_PORT;
    if (!env && host && port) {
      const loaded = inCluster(host, port, SERVICE_ACCOUNT_DIR);
      return { loaded, namespace: opts.namespace || currentNamespace(loaded) };
    }
    throw noConfiguration(paths);
  }
  const selected = selectContext(mergeKubeconfigs(sources), opts.context);
  return {
    loaded: kubeConfigFromDocument(selected.doc, sources.map((s) => s.path).join(delimiter)),
    namespace: opts.namespace || selected.namespace || 'default',
    contextName: selected.contextName,
  };
}

/** The Authorization header of a bearer token kept in a file, read again at each call (tokens there rotate). */
function bearerFromFile(file: string): () => Record<string, string> {
  return () => ({ Authorization: `Bearer ${readFileSync(file, 'utf8').trim()}` });
}

/** The Authorization header of basic auth, from "user:password". */
function basicAuthorization(userPassword: string): Record<string, string> {
  return { Authorization: `Basic ${Buffer.from(userPassword).toString('base64')}` };
}

/** The service account of the pod (rest.InClusterConfig): the token file is re-read as it rotates. */
function inCluster(host: string, port: string, dir: string): LoadedKubeConfig {
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const readToken = bearerFromFile(join(dir, 'token'));
  const namespaceFile = join(dir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() || undefined : undefined;
  const restConfig = Promise.resolve().then((): RestConfig => ({
    server,
    ca: readFileSync(join(dir, 'ca.crt')),
    headers: readToken(),
    refreshHeaders: async () => readToken(),
  }));
  return { server, ...(namespace ? { namespace } : {}), restConfig };
}

function fromFile(file: string): LoadedKubeConfig {
  let doc: Yaml;
  try {
    doc = obj(parseYaml(readFileSync(file, 'utf8')));
  } catch (err) {
    throw new KubeconfigError(`kubeconfig ${file}: ${(err as Error).message}`);
  }
  return fromDocument(doc, file, dirname(file), (kc) => kc.loadFromFile(file));
}

/**
 * A kubeconfig already parsed (and merged, with absolute paths: selectContext's one-context document); `origin`
 * names it in errors.
 */
export function kubeConfigFromDocument(doc: unknown, origin: string): LoadedKubeConfig {
  return fromDocument(obj(doc), origin, process.cwd(), (kc) => kc.loadFromString(JSON.stringify(doc)));
}

function fromDocument(
  doc: Yaml,
  file: string,
  baseDir: string,
  loadIntoClientNode: (kc: KubeConfig) => void,
): LoadedKubeConfig {
  const contextName = str(doc['current-context']);
  const context = contextName ? obj(named(doc.contexts, contextName)?.context) : undefined;
  const clusterName = context ? str(context.cluster) : undefined;
  const cluster = clusterName ? obj(named(doc.clusters, clusterName)?.cluster) : undefined;
  const server = cluster ? str(cluster.server) : undefined;
  if (!context || !cluster || !server)
    throw new KubeconfigError(`kubeconfig ${file} has no current context or cluster`);
  const userName = str(context.user);
  const user = userName ? obj(named(doc.users, userName)?.user) : {};
  const namespace = str(context.namespace);
  const simple =
    Object.keys(user).every((k) => SIMPLE_USER_FIELDS.has(k)) &&
    Object.keys(cluster).every((k) => SIMPLE_CLUSTER_FIELDS.has(k));
  if (!simple) return { server, ...(namespace ? { namespace } : {}), restConfig: viaClientNode(loadIntoClientNode) };

  // Relative paths in a kubeconfig are relative to the file (clientcmd's ResolvePaths).
  const resolve = (p: string) => (isAbsolute(p) ? p : join(baseDir, p));
  const pem = (data: unknown, path: unknown): Buffer | undefined => {
    if (str(data)) return Buffer.from(data as string, 'base64');
    if (str(path)) return readFileSync(resolve(path as string));
    return undefined;
  };
  const restConfig = Promise.resolve().then((): RestConfig => {
    const config: RestConfig = { server, headers: {} };
    // A token wins over a token file, and both over basic auth (clientcmd's order).
    if (str(user.token)) config.headers = { Authorization: `Bearer ${user.token as string}` };
    else if (str(user.tokenFile)) {
      const readToken = bearerFromFile(resolve(user.tokenFile as string));
      config.headers = readToken();
      config.refreshHeaders = async () => readToken();
    } else if (str(user.username)) config.headers = basicAuthorization(`${user.username}:${str(user.password) ?? ''}`);
    const ca = pem(cluster['certificate-authority-data'], cluster['certificate-authority']);
    const cert = pem(user['client-certificate-data'], user['client-certificate']);
    const key = pem(user['client-key-data'], user['client-key']);
    if (ca) config.ca = ca;
    if (cert) config.cert = cert;
    if (key) config.key = key;
    if (cluster['insecure-skip-tls-verify'] === true) config.insecureSkipTLSVerify = true;
    if (str(cluster['tls-server-name'])) config.tlsServerName = cluster['tls-server-name'] as string;
    return config;
  });
  return { server, ...(namespace ? { namespace } : {}), restConfig };
}

/**
 * The credentials of the current context through client-node's KubeConfig, loaded on demand, for what fromDocument
 * does not read (plugins, impersonation, proxies).
 */
function viaClientNode(load: (kc: KubeConfig) => void): Promise<RestConfig> {
  return import('@kubernetes/client-node').then(({ KubeConfig }) => {
    const kc = new KubeConfig();
    load(kc);
    return restConfigFromKubeConfig(kc);
  });
}

/**
 * Resolves the current context of `kc` into a RestConfig, through client-node's own
 * credential code (tokens, token files, exec plugins, client certificates, CA, basic auth,
 * impersonation). Static credentials are read once; exec plugins and token files (in-cluster
 * projected tokens rotate) become `refreshHeaders`, which the client calls at most every 10 s
 * and after a 401.
 */
async function restConfigFromKubeConfig(kc: KubeConfig): Promise<RestConfig> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const user = kc.getCurrentUser();
  const opts = await httpsOptions(kc, cluster.server);
  const config: RestConfig = {
    server: cluster.server,
    ca: opts.ca as string | Buffer | undefined,
    cert: opts.cert as string | Buffer | undefined,
    key: opts.key as string | Buffer | undefined,
    insecureSkipTLSVerify: cluster.skipTLSVerify || opts.rejectUnauthorized === false,
    tlsServerName: cluster.tlsServerName,
    headers: headersFrom(opts),
  };
  if (user?.exec || user?.authProvider) {
    config.refreshHeaders = async () => headersFrom(await httpsOptions(kc, cluster.server));
  }
  return config;
}

async function httpsOptions(kc: KubeConfig, server: string): Promise<https.RequestOptions> {
  const opts: https.RequestOptions = {};
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (err) {
    // client-node refuses plain http unless skip-tls-verify is set, after it has filled in the
    // credentials. kubectl accepts it (e.g. `kubectl proxy` on http://127.0.0.1:8001); so do we.
    if (!server.startsWith('http:')) throw err;
  }
  return opts;
}

function headersFrom(opts: https.RequestOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v);
  if (opts.auth) Object.assign(headers, basicAuthorization(opts.auth));
  return headers;
}

/** The one-liner for commands: `createKubeClient({ kubeconfig: flags.kubeconfig, qps, burst })`. */
export function createKubeClient(opts: KubeClientOptions & { kubeconfig?: string } = {}): KubeClient {
  const { kubeconfig, ...clientOpts } = opts;
  return KubeClient.fromKubeConfig(loadKubeConfig(kubeconfig), clientOpts);
}

/**
 * The namespace the process runs in: $POD_NAMESPACE (downward API), else the service account's namespace, else the
 * kubeconfig context's, else "default".
 */
export function currentNamespace(kc?: LoadedKubeConfig): string {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  const file = `${SERVICE_ACCOUNT_DIR}/namespace`;
  if (existsSync(file)) {
    const ns = readFileSync(file, 'utf8').trim();
    if (ns) return ns;
  }
  return kc?.namespace ?? 'default';
}
