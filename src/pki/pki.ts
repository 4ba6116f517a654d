// Certificate authority and leaf certificates, generated in process with @peculiar/x509 on
// WebCrypto (no openssl needed). ECDSA P-256 keys: fast to generate and accepted everywhere we
// use them (kube-apiserver serving/client certs, service-account signing, webhook serving).
import { webcrypto } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const keyAlgorithm = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' } as const;
const dayMs = 24 * 3600 * 1000;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends KeyPairPem {
  /** Parsed, for signing leaves. */
  cert: x509.X509Certificate;
  signingKey: CryptoKey;
}

export interface LeafOptions {
  commonName: string;
  /** Subject O= entries; for client certs these are the Kubernetes groups (e.g. system:masters). */
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'server-client';
  validityDays?: number;
  /** Start of validity; defaults to one hour ago to tolerate clock skew. */
  now?: Date;
}

async function newKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(keyAlgorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

function dn(commonName: string, organizations: string[] = []): string {
  // RFC 4514 escaping for the characters that may appear in Kubernetes user and group names.
  const esc = (s: string) => s.replace(/([,+"\\<>;=])/g, '\\$1');
  return [`CN=${esc(commonName)}`, ...organizations.map((o) => `O=${esc(o)}`)].join(', ');
}

function validity(now: Date | undefined, days: number) {
  const start = new Date((now ?? new Date()).getTime() - 3600 * 1000);
  return { notBefore: start, notAfter: new Date(start.getTime() + days * dayMs) };
}

function serial(): string {
  // Positive 16-byte serial (first bit cleared), as RFC 5280 asks.
  const b = webcrypto.getRandomValues(new Uint8Array(16));
  b[0] = b[0]! & 0x7f;
  return Buffer.from(b).toString('hex');
}

export async function createCA(commonName: string, validityDays = 3650, now?: Date): Promise<CertificateAuthority> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: dn(commonName),
    keys,
    signingAlgorithm,
    ...validity(now, validityDays),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    cert,
    signingKey: keys.privateKey,
    certPem: cert.toString('pem'),
    keyPem: await privateKeyPem(keys.privateKey),
  };
}

/** Loads a CA written earlier by createCA, to sign more leaves with it. */
export async function loadCA(certPem: string, keyPem: string): Promise<CertificateAuthority> {
  const cert = new x509.X509Certificate(certPem);
  const der = x509.PemConverter.decodeFirst(keyPem);
  const signingKey = await webcrypto.subtle.importKey('pkcs8', der, keyAlgorithm, true, ['sign']);
  return { cert, signingKey, certPem, keyPem };
}

export async function createLeaf(ca: CertificateAuthority, opts: LeafOptions): Promise<KeyPairPem> {
  const keys = await newKeys();
  const ekus: string[] = [];
  if (opts.usage !== 'client') ekus.push(x509.ExtendedKeyUsage.serverAuth);
  if (opts.usage !== 'server') ekus.push(x509.ExtendedKeyUsage.clientAuth);
  const sans = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(opts.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension(ekus),
    await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
  ];
  if (sans.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(sans));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: dn(opts.commonName, opts.organizations),
    issuer: ca.cert.subject,
    publicKey: keys.publicKey,
    signingKey: ca.signingKey,
    signingAlgorithm,
    ...validity(opts.now, opts.validityDays ?? 365),
    extensions,
  });
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

/** A bare key pair (PEM), e.g. for service-account token signing. */
export async function createKeyPair(): Promise<{ publicPem: string; privatePem: string }> {
  const keys = await newKeys();
  const spki = await webcrypto.subtle.exportKey('spki', keys.publicKey);
  return { publicPem: x509.PemConverter.encode(spki, 'PUBLIC KEY'), privatePem: await privateKeyPem(keys.privateKey) };
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
