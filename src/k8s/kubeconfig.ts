// From a kubeconfig (or the in-cluster service account) to a KubeClient.
//
// The common cases are read here: in a pod, the service account (CA, token file re-read as it rotates); a kubeconfig
// file whose user has a client certificate, a token (or token file) or basic auth. Everything else (exec and
// auth-provider plugins, impersonation, proxies, several files in $KUBECONFIG to merge) goes to client-node's
// KubeConfig, imported only then: loading client-node costs about 80 MiB of memory and a second of start-up, more
// than the rest of the manager together, and a controller in a pod never needs it.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import type https from 'node:https';
import { KubeClient, type KubeClientOptions, type RestConfig } from './client.ts';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

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
 * loadFromDefault prefers ~/.kube/config over the in-cluster config, the wrong way round in a pod.) Throws an
 * Error with a message for the user when nothing usable is found.
 */
export function loadKubeConfig(path?: string, serviceAccountDir = SERVICE_ACCOUNT_DIR): LoadedKubeConfig {
  if (path) return fromFile(path);
  const env = process.env.KUBECONFIG;
  if (env) {
    const files = env.split(delimiter).filter(Boolean);
    if (files.length === 1) return fromFile(files[0] as string);
    return viaClientNode((kc) => kc.loadFromDefault(), `$KUBECONFIG (${env})`);
  }
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (host && port) return inCluster(host, port, serviceAccountDir);
  const home = join(homedir(), '.kube', 'config');
  if (existsSync(home)) return fromFile(home);
  throw new Error('no kubeconfig found: pass --kubeconfig, set $KUBECONFIG, or run in a cluster');
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
    throw new Error(`kubeconfig ${file}: ${(err as Error).message}`);
  }
  return fromDocument(doc, file, dirname(file), (kc) => kc.loadFromFile(file));
}

/**
 * A kubeconfig already parsed (and merged, with absolute paths: the kubectl plugin merges $KUBECONFIG's files as
 * kubectl does and picks --context itself, plugin/kubeconfig.ts); `origin` names it in errors.
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
  if (!context || !cluster || !server) throw new Error(`kubeconfig ${file} has no current context or cluster`);
  const userName = str(context.user);
  const user = userName ? obj(named(doc.users, userName)?.user) : {};
  const namespace = str(context.namespace);
  const simple =
    Object.keys(user).every((k) => SIMPLE_USER_FIELDS.has(k)) &&
    Object.keys(cluster).every((k) => SIMPLE_CLUSTER_FIELDS.has(k));
  if (!simple) return { ...viaClientNode(loadIntoClientNode, file), server, ...(namespace ? { namespace } : {}) };

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

/** client-node's KubeConfig, loaded on demand, for what fromFile does not read (plugins, merging, proxies). */
function viaClientNode(load: (kc: KubeConfig) => void, what: string): LoadedKubeConfig {
  let server = '';
  let namespace: string | undefined;
  const restConfig = import('@kubernetes/client-node').then(({ KubeConfig }) => {
    const kc = new KubeConfig();
    load(kc);
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error(`kubeconfig ${what} has no current context or cluster`);
    server = cluster.server;
    namespace = kc.getContextObject(kc.getCurrentContext())?.namespace;
    return restConfigFromKubeConfig(kc);
  });
  // Known once client-node has loaded the file (the client waits for restConfig before any request).
  return {
    get server() {
      return server;
    },
    get namespace() {
      return namespace;
    },
    restConfig,
  };
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
