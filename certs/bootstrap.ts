// The in-cluster `self-signed` certificate mode: the manager keeps a private CA and a serving
// certificate for its webhook Service in a Secret of its own namespace, writes them to its cert
// dir, and keeps caBundle of both webhook configurations, and of the CRD's conversion webhook, pointing at that CA. Every replica runs
// this; they converge on one certificate through the apiserver's optimistic concurrency (create
// fails with AlreadyExists, update with Conflict: the loser re-reads and adopts the winner's).
//
// As kruise-manager and cert-manager's dynamic serving: certificates are renewed at 2/3 of their
// lifetime. A renewed serving certificate is signed by the same CA, so caBundle does not change;
// when the CA itself is due, the new CA is added to caBundle *before* any replica serves a
// certificate it signed, and the old CA stays in the bundle until it expires.
import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import {
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAbortError, isAlreadyExists, isConflict, isNotFound } from '../src/k8s/errors.ts';
import { resources, type ResourceType } from '../src/k8s/resources.ts';
import { type KubeClient } from '../src/k8s/client.ts';
import type { KubeObject } from '../src/k8s/types.ts';
import { createCA, createLeaf, loadCA } from '../src/pki/pki.ts';

/** Enough of pino's Logger for this module (the manager passes its pino logger). */
export interface BootstrapLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface CertificateBootstrapOptions {
  client: KubeClient;
  /** Namespace of the Secret and of the webhook Service (the pod's namespace). */
  namespace: string;
  secretName: string;
  /** The Service in front of the webhook: the certificate is for <service>.<namespace>.svc. */
  serviceName: string;
  /** Where tls.crt, tls.key and ca.crt are written for the HTTPS server. */
  certDir: string;
  /** Base name of the configurations: <name>-mutating and <name>-validating. */
  webhookConfigurationName: string;
  /**
   * The CRD whose conversion webhook (spec.conversion.webhook.clientConfig) the same server answers, e.g.
   * daemonsets.apps.kruise.io: its caBundle is kept equal to the configurations'. Undefined: not touched.
   */
  crdName?: string;
  /** Stops the background renewal. */
  signal: AbortSignal;
  logger: BootstrapLogger;
  /** Makes new material: issueMaterial, by default in this process; the manager's in a child (certs/issuer.ts). */
  issueMaterial?: typeof issueMaterial;
  /** Called after the files in certDir changed (a renewal), e.g. to reload the TLS context. */
  onCertificateChanged?: (material: CertificateMaterial) => void;
  /** Lifetimes and how often the Secret and caBundle are re-checked. Defaults suit production. */
  caValidityDays?: number;
  servingValidityDays?: number;
  checkIntervalMs?: number;
  /** Clock, for tests. */
  now?: () => Date;
  /** The wait before the next first-sync attempt after `failures` failures; for tests. */
  retryDelayMs?: (failures: number) => number;
}

export const DEFAULT_CA_VALIDITY_DAYS = 3650;
export const DEFAULT_SERVING_VALIDITY_DAYS = 365;
export const DEFAULT_CHECK_INTERVAL_MS = 60_000;
/** Renew when this fraction of a certificate's lifetime has passed. */
export const RENEW_AT_FRACTION = 2 / 3;

/** Keys of the Secret (type kubernetes.io/tls, plus the CA and its key). */
export const SECRET_KEYS = { cert: 'tls.crt', key: 'tls.key', caBundle: 'ca.crt', caKey: 'ca.key' } as const;

/** PEM contents of the Secret: the serving pair, the CA bundle (current CA first) and the CA key. */
export interface CertificateMaterial {
  certPem: string;
  keyPem: string;
  caBundlePem: string;
  caKeyPem: string;
}

// ---------------------------------------------------------------------------------------------
// Pure parts

/** The names the apiserver may use for the webhook Service. */
export function servingDnsNames(serviceName: string, namespace: string): string[] {
  return [
    `${serviceName}.${namespace}.svc`,
    `${serviceName}.${namespace}.svc.cluster.local`,
    `${serviceName}.${namespace}`,
    serviceName,
  ];
}

/** When a certificate should be replaced: at RENEW_AT_FRACTION of its lifetime. */
export function renewalTime(cert: Pick<X509Certificate, 'validFrom' | 'validTo'>): Date {
  const from = new Date(cert.validFrom).getTime();
  const to = new Date(cert.validTo).getTime();
  return new Date(from + (to - from) * RENEW_AT_FRACTION);
}

/** Splits a PEM bundle into its certificates (unparsable blocks are dropped). */
export function splitPemBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const out: X509Certificate[] = [];
  for (const b of blocks) {
    try {
      out.push(new X509Certificate(b));
    } catch {
      // skip
    }
  }
  return out;
}

const decode = (v: string | undefined) => (v ? Buffer.from(v, 'base64').toString('utf8') : '');

/** Reads the Secret's data (base64) into PEM strings; empty strings for missing keys. */
export function materialFromSecret(secret: KubeObject | undefined): CertificateMaterial {
  const data = ((secret as { data?: Record<string, string> } | undefined)?.data ?? {}) as Record<string, string>;
  return {
    certPem: decode(data[SECRET_KEYS.cert]),
    keyPem: decode(data[SECRET_KEYS.key]),
    caBundlePem: decode(data[SECRET_KEYS.caBundle]),
    caKeyPem: decode(data[SECRET_KEYS.caKey]),
  };
}

export function secretData(m: CertificateMaterial): Record<string, string> {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return {
    [SECRET_KEYS.cert]: b64(m.certPem),
    [SECRET_KEYS.key]: b64(m.keyPem),
    [SECRET_KEYS.caBundle]: b64(m.caBundlePem),
    [SECRET_KEYS.caKey]: b64(m.caKeyPem),
  };
}

export type Assessment =
  | { state: 'valid'; renewAt: Date }
  /** The CA is fine; only a new serving certificate is needed. */
  | { state: 'renew-serving'; reason: string }
  /** A new CA (and serving certificate) is needed. */
  | { state: 'renew-ca'; reason: string };

/**
 * Decides what the Secret's material needs at `now`: nothing, a new serving certificate
 * (signed by the same CA, so caBundle stays), or a new CA.
 */
export function assessMaterial(m: CertificateMaterial, dnsNames: string[], now: Date): Assessment {
  const ca = splitPemBundle(m.caBundlePem)[0];
  if (!ca || !m.caKeyPem) return { state: 'renew-ca', reason: 'no CA' };
  try {
    if (!ca.checkPrivateKey(createPrivateKey(m.caKeyPem))) return { state: 'renew-ca', reason: 'CA key mismatch' };
  } catch {
    return { state: 'renew-ca', reason: 'CA key unreadable' };
  }
  if (!ca.ca) return { state: 'renew-ca', reason: 'CA certificate is not a CA' };
  if (now >= renewalTime(ca)) return { state: 'renew-ca', reason: `CA due for renewal (expires ${ca.validTo})` };

  if (!m.certPem || !m.keyPem) return { state: 'renew-serving', reason: 'no serving certificate' };
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(m.certPem);
    if (!leaf.checkPrivateKey(createPrivateKey(m.keyPem))) {
      return { state: 'renew-serving', reason: 'serving key mismatch' };
    }
  } catch {
    return { state: 'renew-serving', reason: 'serving certificate unreadable' };
  }
  if (!leaf.checkIssued(ca) || !leaf.verify(ca.publicKey)) {
    return { state: 'renew-serving', reason: 'serving certificate not signed by the current CA' };
  }
  const missing = dnsNames.filter((n) => leaf.checkHost(n, { wildcards: false, subject: 'never' }) === undefined);
  if (missing.length > 0) return { state: 'renew-serving', reason: `serving certificate lacks ${missing.join(', ')}` };
  if (now < new Date(leaf.validFrom)) return { state: 'renew-serving', reason: 'serving certificate not yet valid' };
  const renewAt = renewalTime(leaf);
  if (now >= renewAt) return { state: 'renew-serving', reason: `serving certificate due (expires ${leaf.validTo})` };
  return { state: 'valid', renewAt };
}

export interface IssueOptions {
  dnsNames: string[];
  now: Date;
  caValidityDays?: number;
  servingValidityDays?: number;
}

/**
 * New material for an assessment that asked for it. A serving renewal keeps the CA bundle; a CA
 * renewal puts the new CA first and keeps the previous CAs that have not expired, so replicas
 * still serving the old certificate stay trusted.
 */
export async function issueMaterial(
  previous: CertificateMaterial,
  what: 'renew-serving' | 'renew-ca',
  opts: IssueOptions,
): Promise<CertificateMaterial> {
  let caBundlePem: string;
  let caKeyPem: string;
  if (what === 'renew-ca') {
    const ca = await createCA(
      'advanced-daemonset-webhook-ca',
      opts.caValidityDays ?? DEFAULT_CA_VALIDITY_DAYS,
      opts.now,
    );
    const kept = splitPemBundle(previous.caBundlePem).filter((c) => new Date(c.validTo) > opts.now && c.ca);
    caBundlePem = joinPem([ca.certPem, ...kept.map((c) => c.toString())]);
    caKeyPem = ca.keyPem;
  } else {
    caBundlePem = previous.caBundlePem;
    caKeyPem = previous.caKeyPem;
  }
  const caPem = splitPemBundle(caBundlePem)[0]!.toString();
  const signer = await loadCA(caPem, caKeyPem);
  const leaf = await createLeaf(signer, {
    commonName: opts.dnsNames[0] ?? 'advanced-daemonset-webhook',
    dnsNames: opts.dnsNames,
    usage: 'server',
    validityDays: opts.servingValidityDays ?? DEFAULT_SERVING_VALIDITY_DAYS,
    now: opts.now,
  });
  return { certPem: leaf.certPem, keyPem: leaf.keyPem, caBundlePem, caKeyPem };
}

function joinPem(pems: string[]): string {
  return pems.map((p) => (p.endsWith('\n') ? p : `${p}\n`)).join('');
}

/**
 * A CA bundle holding every certificate of `a` then those of `b` not already in it (by
 * fingerprint), minus expired ones: used while a new CA takes over, so caBundle trusts both.
 */
export function mergeCaBundles(a: string, b: string, now: Date): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const c of [...splitPemBundle(a), ...splitPemBundle(b)]) {
    if (seen.has(c.fingerprint256) || new Date(c.validTo) <= now) continue;
    seen.add(c.fingerprint256);
    out.push(c.toString());
  }
  return joinPem(out);
}

/** The configuration with every webhook's caBundle set, or undefined if it already was. */
export function withCaBundle(config: KubeObject, caBundleB64: string): KubeObject | undefined {
  const webhooks = (config as { webhooks?: { clientConfig?: { caBundle?: string } }[] }).webhooks ?? [];
  if (webhooks.every((w) => w.clientConfig?.caBundle === caBundleB64)) return undefined;
  return {
    ...config,
    webhooks: webhooks.map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle: caBundleB64 } })),
  } as KubeObject;
}

interface CrdConversionShape {
  spec?: { conversion?: { strategy?: string; webhook?: { clientConfig?: { caBundle?: string } } } };
}

/**
 * The CRD with its conversion webhook's caBundle set, or undefined if it already was or the CRD converts without a
 * webhook (strategy None: the apiserver refuses a webhook there, and nothing would call us).
 */
export function withConversionCaBundle(crd: KubeObject, caBundleB64: string): KubeObject | undefined {
  const conversion = (crd as CrdConversionShape).spec?.conversion;
  if (conversion?.strategy !== 'Webhook' || !conversion.webhook?.clientConfig) return undefined;
  if (conversion.webhook.clientConfig.caBundle === caBundleB64) return undefined;
  const spec = (crd as unknown as { spec: Record<string, unknown> }).spec;
  return {
    ...crd,
    spec: {
      ...spec,
      conversion: {
        ...conversion,
        webhook: { ...conversion.webhook, clientConfig: { ...conversion.webhook.clientConfig, caBundle: caBundleB64 } },
      },
    },
  } as KubeObject;
}

/** The caBundle (PEM) of the CRD's conversion webhook, or ''. */
export function conversionCaBundleOf(crd: KubeObject): string {
  return decode((crd as CrdConversionShape).spec?.conversion?.webhook?.clientConfig?.caBundle);
}

/** The caBundle (PEM) currently in the configuration's first webhook, or ''. */
export function caBundleOf(config: KubeObject): string {
  const webhooks = (config as { webhooks?: { clientConfig?: { caBundle?: string } }[] }).webhooks ?? [];
  return decode(webhooks[0]?.clientConfig?.caBundle);
}

// ---------------------------------------------------------------------------------------------
// The cert dir

/**
 * Writes tls.crt, tls.key and ca.crt as a Secret volume does (kubelet's AtomicWriter): the files
 * go into a fresh hidden directory, `..data` is switched to it with one rename, and the visible
 * names are symlinks through `..data`. A reader never sees a certificate with the other key.
 * Returns false when the files already held this material.
 */
export function writeCertDir(certDir: string, m: CertificateMaterial): boolean {
  const files: Record<string, { data: string; mode: number }> = {
    'tls.crt': { data: m.certPem, mode: 0o644 },
    'tls.key': { data: m.keyPem, mode: 0o600 },
    'ca.crt': { data: m.caBundlePem, mode: 0o644 },
  };
  const current = (name: string) => {
    try {
      return readFileSync(join(certDir, name), 'utf8');
    } catch {
      return undefined;
    }
  };
  if (Object.entries(files).every(([name, f]) => current(name) === f.data)) return false;

  mkdirSync(certDir, { recursive: true });
  const version = `..${new Date().toISOString().replace(/[:.]/g, '_')}.${randomBytes(4).toString('hex')}`;
  mkdirSync(join(certDir, version), { mode: 0o755 });
  for (const [name, f] of Object.entries(files)) writeFileSync(join(certDir, version, name), f.data, { mode: f.mode });
  const swapLink = (link: string, target: string) => {
    const tmp = `${link}.${randomBytes(4).toString('hex')}.tmp`;
    symlinkSync(target, tmp);
    renameSync(tmp, link);
  };
  let previous: string | undefined;
  try {
    previous = readlinkSync(join(certDir, '..data'));
  } catch {
    previous = undefined;
  }
  swapLink(join(certDir, '..data'), version);
  for (const name of Object.keys(files)) {
    let target: string | undefined;
    try {
      target = readlinkSync(join(certDir, name));
    } catch {
      target = undefined;
    }
    if (target !== join('..data', name)) swapLink(join(certDir, name), join('..data', name));
  }
  // Older versions (and leftovers of an interrupted write) go; the one just replaced too.
  for (const entry of readdirSync(certDir)) {
    if (
      entry.startsWith('..') &&
      entry !== '..data' &&
      entry !== version &&
      (entry === previous || entry.startsWith('..2'))
    ) {
      rmSync(join(certDir, entry), { recursive: true, force: true });
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Against the apiserver

interface Context {
  opts: CertificateBootstrapOptions;
  dnsNames: string[];
  now: () => Date;
}

function secretObject(ctx: Context, m: CertificateMaterial, base?: KubeObject): KubeObject {
  const { namespace, secretName } = ctx.opts;
  const metadata = base?.metadata ?? { name: secretName, namespace };
  return {
    ...(base ?? {}),
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      ...metadata,
      name: secretName,
      namespace,
      labels: { 'app.kubernetes.io/name': 'advanced-daemonset', ...(metadata.labels ?? {}) },
    },
    type: 'kubernetes.io/tls',
    data: { ...((base as { data?: Record<string, string> } | undefined)?.data ?? {}), ...secretData(m) },
  } as KubeObject;
}

function readSecret(ctx: Context): Promise<KubeObject | undefined> {
  return ctx.opts.client.getIfExists(resources.secrets, { namespace: ctx.opts.namespace, name: ctx.opts.secretName });
}

/**
 * One reconcile of the Secret: returns its material once it is valid, issuing a new certificate
 * (or CA) when needed. Writes are guarded (create / update with resourceVersion); on a lost race
 * it re-reads and adopts what the other replica wrote.
 */
async function ensureSecret(ctx: Context): Promise<CertificateMaterial> {
  const log = ctx.opts.logger;
  for (let attempt = 0; ; attempt++) {
    if (attempt >= 10) throw new Error(`secret ${ctx.opts.namespace}/${ctx.opts.secretName}: too many write conflicts`);
    ctx.opts.signal.throwIfAborted();
    const secret = await readSecret(ctx);
    const current = materialFromSecret(secret);
    const now = ctx.now();
    const verdict = assessMaterial(current, ctx.dnsNames, now);
    if (verdict.state === 'valid') return current;
    if (secret && (secret as { type?: string }).type !== 'kubernetes.io/tls') {
      throw new Error(
        `secret ${ctx.opts.namespace}/${ctx.opts.secretName} has type ${(secret as { type?: string }).type}, ` +
          'not kubernetes.io/tls; delete it so the manager can create its own',
      );
    }
    const next = await (ctx.opts.issueMaterial ?? issueMaterial)(current, verdict.state, {
      dnsNames: ctx.dnsNames,
      now,
      caValidityDays: ctx.opts.caValidityDays,
      servingValidityDays: ctx.opts.servingValidityDays,
    });
    if (verdict.state === 'renew-ca') {
      // Trust the new CA before anyone serves a certificate it signed (a lost race adds a CA
      // that is never used; the steady-state sync trims caBundle back to the Secret's bundle).
      await syncCaBundles(ctx, next.caBundlePem, { union: true });
    }
    try {
      if (secret) {
        await ctx.opts.client.update(resources.secrets, secretObject(ctx, next, secret));
      } else {
        await ctx.opts.client.create(resources.secrets, secretObject(ctx, next));
      }
      log.info(
        { secret: `${ctx.opts.namespace}/${ctx.opts.secretName}`, reason: verdict.reason, renewed: verdict.state },
        'issued webhook serving certificate',
      );
      return next;
    } catch (err) {
      if (isConflict(err) || isAlreadyExists(err)) {
        // Another replica won: read again and adopt its certificate.
        log.info({ secret: ctx.opts.secretName }, 'certificate written by another replica; adopting it');
        continue;
      }
      throw err;
    }
  }
}

/** Where caBundle lives: the two webhook configurations, and the CRD's conversion webhook when named. */
interface CaBundleTarget {
  type: ResourceType;
  name: string;
  current: (obj: KubeObject) => string;
  withCaBundle: (obj: KubeObject, caBundleB64: string) => KubeObject | undefined;
}

const caBundleTargets = (opts: CertificateBootstrapOptions): CaBundleTarget[] => [
  ...[resources.mutatingWebhookConfigurations, resources.validatingWebhookConfigurations].map((type) => ({
    type,
    name: `${opts.webhookConfigurationName}-${type === resources.mutatingWebhookConfigurations ? 'mutating' : 'validating'}`,
    current: caBundleOf,
    withCaBundle,
  })),
  ...(opts.crdName
    ? [
        {
          type: resources.customResourceDefinitions,
          name: opts.crdName,
          current: conversionCaBundleOf,
          withCaBundle: withConversionCaBundle,
        },
      ]
    : []),
];

/**
 * Sets caBundle on every webhook of both configurations and on the CRD's conversion webhook: to
 * `caBundlePem`, or with `union` to what they already trust plus `caBundlePem`. A missing object is
 * reported, not fatal (the chart creates them; the next sync retries). Returns how many were changed.
 */
async function syncCaBundles(
  ctx: Context,
  caBundlePem: string,
  { union = false }: { union?: boolean } = {},
): Promise<number> {
  let changed = 0;
  for (const target of caBundleTargets(ctx.opts)) {
    const { type, name } = target;
    for (let attempt = 0; ; attempt++) {
      let config: KubeObject;
      try {
        config = await ctx.opts.client.get(type, { name });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        ctx.opts.logger.warn({ [type.resource]: name }, `${type.kind} not found; caBundle not set`);
        break;
      }
      const pem = union ? mergeCaBundles(caBundlePem, target.current(config), ctx.now()) : caBundlePem;
      const updated = target.withCaBundle(config, Buffer.from(pem).toString('base64'));
      if (!updated) break;
      try {
        await ctx.opts.client.update(type, updated);
        changed++;
        ctx.opts.logger.info({ [type.resource]: name }, 'caBundle updated');
        break;
      } catch (err) {
        if (isConflict(err) && attempt < 5) continue;
        throw err;
      }
    }
  }
  return changed;
}

/** Secret → files → caBundle, once. Returns the material in force and when to look again. */
async function syncOnce(ctx: Context): Promise<{ material: CertificateMaterial; changedFiles: boolean }> {
  const material = await ensureSecret(ctx);
  const changedFiles = writeCertDir(ctx.opts.certDir, material);
  await syncCaBundles(ctx, material.caBundlePem);
  return { material, changedFiles };
}

/**
 * The wait before attempt `failures` + 1 of a start-up step that needs the apiserver: 1 s
 * doubling to `maxMs` (30 s), times a random factor in [1, 1.2) so replicas do not retry in step.
 */
export function startupRetryDelayMs(failures: number, { maxMs = 30_000, random = Math.random } = {}): number {
  const base = Math.min(maxMs, 1000 * 2 ** Math.max(0, Math.min(failures - 1, 10)));
  return Math.min(maxMs, Math.round(base * (1 + 0.2 * random())));
}

function nextDelay(ctx: Context, material: CertificateMaterial, interval: number): number {
  const verdict = assessMaterial(material, ctx.dnsNames, ctx.now());
  const untilRenewal = verdict.state === 'valid' ? verdict.renewAt.getTime() - ctx.now().getTime() : 0;
  // Jitter keeps replicas from reading and writing in lockstep.
  const jittered = interval * (0.9 + Math.random() * 0.2);
  return Math.max(0, Math.min(jittered, untilRenewal + Math.random() * 1000));
}

/**
 * The self-signed mode, for the manager: makes sure the Secret holds a valid CA and serving
 * certificate (issuing them if needed), writes them to `certDir`, sets caBundle on both
 * webhook configurations, and resolves with the CA bundle once that is done. Until then every
 * failure (the apiserver unreachable, RBAC, a foreign Secret) is logged and retried with backoff
 * (startupRetryDelayMs): it rejects only when `signal` aborts, so a caller that serves a cached
 * certificate meanwhile keeps serving. Then it keeps checking in the background (every
 * `checkIntervalMs`, and at the renewal time) until `signal` aborts: renewals, another
 * replica's renewal, and caBundle drift (e.g. `helm upgrade --force`) are all picked up.
 * Background failures are logged and retried with backoff.
 */
export async function runCertificateBootstrap(opts: CertificateBootstrapOptions): Promise<{ caBundle: string }> {
  const ctx: Context = {
    opts,
    dnsNames: servingDnsNames(opts.serviceName, opts.namespace),
    now: opts.now ?? (() => new Date()),
  };
  const interval = opts.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS;
  let material: CertificateMaterial;
  for (let failures = 0; ;) {
    opts.signal.throwIfAborted();
    try {
      ({ material } = await syncOnce(ctx));
      break;
    } catch (err) {
      if (opts.signal.aborted) throw opts.signal.reason;
      failures++;
      const retryInMs = (opts.retryDelayMs ?? startupRetryDelayMs)(failures);
      opts.logger.warn(
        { err, attempt: failures, retryInMs, secret: `${opts.namespace}/${opts.secretName}` },
        'certificate bootstrap failed; retrying',
      );
      await sleep(retryInMs, undefined, { signal: opts.signal });
    }
  }
  opts.logger.info(
    { certDir: opts.certDir, dnsNames: ctx.dnsNames, notAfter: new X509Certificate(material.certPem).validTo },
    'webhook serving certificate ready',
  );

  void (async () => {
    let failures = 0;
    let delay = nextDelay(ctx, material, interval);
    while (!opts.signal.aborted) {
      try {
        await sleep(delay, undefined, { signal: opts.signal });
      } catch {
        return; // aborted
      }
      try {
        const result = await syncOnce(ctx);
        material = result.material;
        failures = 0;
        if (result.changedFiles) {
          opts.logger.info(
            { notAfter: new X509Certificate(material.certPem).validTo },
            'webhook serving certificate changed on disk',
          );
          opts.onCertificateChanged?.(material);
        }
        delay = nextDelay(ctx, material, interval);
      } catch (err) {
        if (opts.signal.aborted || isAbortError(err)) return;
        failures++;
        delay = Math.min(interval, 1000 * 2 ** Math.min(failures, 6));
        opts.logger.error({ err, retryInMs: delay }, 'certificate sync failed');
      }
    }
  })();

  return { caBundle: material.caBundlePem };
}
