// How the webhook starts when it makes its own certificate (`--cert-mode self-signed` in a
// cluster, `--webhook-host` out of cluster): it serves at once with the certificate its cert dir
// already holds, and does the rest (the Secret, caBundle, registering the configurations) in the
// background, retrying with backoff, so an apiserver that is down or slow at start-up does not
// keep the admission webhook from answering, nor crash the manager. kruise-manager instead gives
// its webhook controller 20 s to initialise and exits otherwise
// (https://github.com/openkruise/kruise/blob/master/pkg/webhook/server.go, Initialize).
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { renewalTime, splitPemBundle } from './bootstrap.ts';

/** What a cert dir holds, as PEM ('' for a missing file). */
export interface ServingFiles {
  certPem: string;
  keyPem: string;
  caBundlePem: string;
}

export function readServingFiles(certDir: string): ServingFiles {
  const read = (name: string) => {
    try {
      return readFileSync(join(certDir, name), 'utf8');
    } catch {
      return '';
    }
  };
  return { certPem: read('tls.crt'), keyPem: read('tls.key'), caBundlePem: read('ca.crt') };
}

export type ServingFilesVerdict = { usable: true; notAfter: Date; renewAt: Date } | { usable: false; reason: string };

/**
 * Whether the files can be served right now for `names` (DNS names or IP addresses): a
 * certificate and its key, valid at `now`, for every name, signed by a CA in ca.crt (which
 * the webhook configurations' caBundle is made from).
 */
export function assessServingFiles(files: ServingFiles, names: string[], now: Date): ServingFilesVerdict {
  if (!files.certPem || !files.keyPem) return { usable: false, reason: 'no certificate in the cert dir' };
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(files.certPem);
    if (!leaf.checkPrivateKey(createPrivateKey(files.keyPem))) {
      return { usable: false, reason: 'tls.key does not match tls.crt' };
    }
  } catch (err) {
    return { usable: false, reason: `certificate or key unreadable: ${(err as Error).message}` };
  }
  if (now < new Date(leaf.validFrom)) return { usable: false, reason: `not valid before ${leaf.validFrom}` };
  if (now >= new Date(leaf.validTo)) return { usable: false, reason: `expired ${leaf.validTo}` };
  const missing = names.filter((n) =>
    isIP(n) !== 0
      ? leaf.checkIP(n) === undefined
      : leaf.checkHost(n, { wildcards: false, subject: 'never' }) === undefined,
  );
  if (missing.length > 0) return { usable: false, reason: `certificate lacks ${missing.join(', ')}` };
  const cas = splitPemBundle(files.caBundlePem);
  if (cas.length === 0) return { usable: false, reason: 'no CA bundle (ca.crt)' };
  if (!cas.some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey))) {
    return { usable: false, reason: 'certificate not signed by a CA in ca.crt' };
  }
  return { usable: true, notAfter: new Date(leaf.validTo), renewAt: renewalTime(leaf) };
}

export type WebhookStartupMode = 'self-signed' | 'webhook-host';

export type WebhookStartupPlan =
  /** Serve the cert dir's files now; the rest of the bootstrap runs in the background. */
  | { serve: 'cached'; reason: string }
  /** webhook-host: make a new certificate locally (no apiserver needed), then serve it. */
  | { serve: 'new-local'; reason: string }
  /**
   * self-signed without a usable certificate: the certificate comes from the Secret, so the
   * server starts once the bootstrap reached the apiserver; not ready until then.
   */
  | { serve: 'after-bootstrap'; reason: string };

export interface WebhookStartupInput {
  mode: WebhookStartupMode;
  files: ServingFiles;
  /** The names the certificate must cover: the Service's DNS names, or the --webhook-host. */
  names: string[];
  now: Date;
  /** webhook-host: a certificate expiring within this is replaced at start (default 30 days). */
  renewBeforeMs?: number;
}

const day = 24 * 3600 * 1000;

/** What the webhook does at start-up with the certificate it finds (pure). */
export function planWebhookStartup(input: WebhookStartupInput): WebhookStartupPlan {
  const verdict = assessServingFiles(input.files, input.names, input.now);
  if (input.mode === 'self-signed') {
    // A certificate due for renewal is still served: the background bootstrap renews it.
    if (verdict.usable)
      return { serve: 'cached', reason: `cached certificate valid until ${verdict.notAfter.toISOString()}` };
    return { serve: 'after-bootstrap', reason: verdict.reason };
  }
  if (!verdict.usable) return { serve: 'new-local', reason: verdict.reason };
  const renewBeforeMs = input.renewBeforeMs ?? 30 * day;
  if (verdict.notAfter.getTime() - input.now.getTime() <= renewBeforeMs) {
    return { serve: 'new-local', reason: `certificate expires ${verdict.notAfter.toISOString()}` };
  }
  return { serve: 'cached', reason: `cached certificate valid until ${verdict.notAfter.toISOString()}` };
}
