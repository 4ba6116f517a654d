// Certificate authority and leaf certificates, generated in process (no openssl needed) with @peculiar/x509
// (https://github.com/PeculiarVentures/x509) on Node's WebCrypto. ECDSA P-256 keys: fast to generate and accepted
// everywhere we use them (kube-apiserver serving/client certs, service-account signing, webhook serving).
//
// The library runs in a worker thread (pki-worker.ts, x509.ts), started when a certificate is made and ended once
// none has been asked for POOL_IDLE_MS: imported on the main thread, its ASN.1 schemas, tsyringe and
// reflect-metadata would stay in the heap for as long as the process runs (bench/history.md, "The code the manager
// loads"). Measured on the bundle (dist/main.mjs on Node 24, after two full collections): `certs --out DIR --host
// 127.0.0.1`, which makes a CA and a leaf, held 13.4 MiB of heap with the hand-written DER and 16.9 MiB with the
// library imported in process; and the manager at 1,000 nodes (bench/README.md, section 6), which makes its
// serving certificate at start, 4 MiB more RSS.
// src/pki/pki.test.ts reads every field back with Node's X509Certificate, and every control plane the tests start
// (etcd, kube-apiserver and the rest, whose Go x509 parser rejects any DER that is not minimal) runs on these
// certificates.
import { createPrivateKey, generateKeyPairSync, type KeyObject, type webcrypto } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { PkiOperation, PKI_OPERATIONS } from './pki-worker.ts';
export { ipAddressBytes } from './ip.ts';
import type { KeyPairPem, LeafOptions } from './x509.ts';
export type { KeyPairPem, LeafOptions } from './x509.ts';

export interface CertificateAuthority extends KeyPairPem {
  /** The CA certificate's subject as DER: a leaf's issuer must be these bytes exactly (Go's x509 chains by them). */
  subject: Buffer;
  /** The CA's key identifier, which a leaf names in its authority key identifier. */
  keyId: Buffer;
  signingKey: webcrypto.CryptoKey;
}

/**
 * The worker's entry beside this module: src/pki/pki-worker.ts when run from source (tsx, which worker threads
 * inherit through execArgv), pki-worker.mjs beside the bundle (hack/bundle.ts builds it next to every bundle that
 * includes this module).
 */
const here = fileURLToPath(import.meta.url);
export const PKI_WORKER_FILE = join(dirname(here), here.endsWith('.ts') ? 'pki-worker.ts' : 'pki-worker.mjs');

/** The worker ends after this long without a request; a burst of certificates (a cluster's PKI) shares one. */
const POOL_IDLE_MS = 2_000;

interface PkiThread {
  worker: Worker;
  pending: Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>;
  idle?: NodeJS.Timeout;
}
let thread: PkiThread | undefined;
let nextId = 0;

function startThread(): PkiThread {
  const t: PkiThread = { worker: new Worker(PKI_WORKER_FILE), pending: new Map() };
  const fail = (err: Error) => {
    for (const p of t.pending.values()) p.reject(err);
    t.pending.clear();
    if (thread === t) thread = undefined;
  };
  t.worker.on('message', (m: { id: number; result?: unknown; error?: string }) => {
    const p = t.pending.get(m.id);
    t.pending.delete(m.id);
    if (m.error !== undefined) p?.reject(new Error(m.error));
    else p?.resolve(m.result);
    if (t.pending.size > 0) return;
    // Idle: the process may exit meanwhile, and the thread ends after POOL_IDLE_MS.
    t.worker.unref();
    t.idle = setTimeout(() => {
      if (thread === t) thread = undefined;
      void t.worker.terminate();
    }, POOL_IDLE_MS).unref();
  });
  t.worker.on('error', fail);
  t.worker.on('exit', (code) => fail(new Error(`certificate: the certificate thread exited (code ${code})`)));
  return t;
}

/** Runs one certificate operation on the worker thread. */
function inThread<K extends PkiOperation>(
  op: K,
  ...args: Parameters<(typeof PKI_OPERATIONS)[K]>
): ReturnType<(typeof PKI_OPERATIONS)[K]> {
  const t = (thread ??= startThread());
  clearTimeout(t.idle);
  t.worker.ref();
  const id = nextId++;
  return new Promise<unknown>((resolve, reject) => {
    t.pending.set(id, { resolve, reject });
    t.worker.postMessage({ id, op, args });
  }) as ReturnType<(typeof PKI_OPERATIONS)[K]>;
}

const keyAlgorithm = { name: 'ECDSA', namedCurve: 'P-256' } as const;

/** The CA's key as the CryptoKey callers sign with (node:crypto alone). */
function signingKeyOf(keyPem: string): webcrypto.CryptoKey {
  const key = createPrivateKey(keyPem);
  if (key.asymmetricKeyType !== 'ec') throw new Error('certificate: the CA key must be an ECDSA P-256 key');
  return key.toCryptoKey(keyAlgorithm, false, ['sign']);
}

export async function createCA(commonName: string, validityDays = 3650, now?: Date): Promise<CertificateAuthority> {
  const ca = await inThread('generateCA', commonName, validityDays, now);
  return { ...ca, subject: Buffer.from(ca.subject), keyId: Buffer.from(ca.keyId), signingKey: signingKeyOf(ca.keyPem) };
}

/** Loads a CA written earlier by createCA, to sign more leaves with it. */
export async function loadCA(certPem: string, keyPem: string): Promise<CertificateAuthority> {
  const signingKey = signingKeyOf(keyPem);
  const { subject, keyId } = await inThread('readCA', certPem);
  return { certPem, keyPem, subject: Buffer.from(subject), keyId: Buffer.from(keyId), signingKey };
}

export function createLeaf(ca: CertificateAuthority, opts: LeafOptions): Promise<KeyPairPem> {
  return inThread('generateLeaf', { keyPem: ca.keyPem, subject: ca.subject, keyId: ca.keyId }, opts);
}

/** A bare key pair (PEM), e.g. for service-account token signing: node:crypto alone, no certificate library. */
export async function createKeyPair(): Promise<{ publicPem: string; privatePem: string }> {
  const keys: { publicKey: KeyObject; privateKey: KeyObject } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    publicPem: keys.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    privatePem: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

/**
 * Writes `data` to `file` and leaves it at `mode`. writeFileSync's mode applies only when it creates the file (and
 * is reduced by the umask): an existing file, say a key that was 0644, would keep its permissions when
 * overwritten. The file is created at mode, so a new key is never readable by others, not even for a moment.
 */
export function writeFileWithMode(file: string, data: string | Uint8Array, mode: number): void {
  writeFileSync(file, data, { mode });
  chmodSync(file, mode);
}
