// Certificate authority and leaf certificates, generated in process (no openssl needed) with @peculiar/x509
// (https://github.com/PeculiarVentures/x509) on Node's WebCrypto. ECDSA P-256 keys: fast to generate and accepted
// everywhere we use them (kube-apiserver serving/client certs, service-account signing, webhook serving).
//
// The library is imported when a certificate is made, not with this module: its ASN.1 schemas, tsyringe and
// reflect-metadata stay in the heap for as long as the process runs (bench/history.md, "The code the manager
// loads"), and a manager whose certificate is already in its Secret or cert dir makes none. Measured on the bundle
// (dist/main.mjs on Node 24, after two full collections): `--help` holds 13.3 MiB of heap with the hand-written
// DER and with the library; `certs --out DIR --host 127.0.0.1`, which makes a CA and a leaf, 13.4 MiB before and
// 16.9 MiB after: the library's share, for the life of a process that made a certificate (the manager at 1,000
// nodes, bench/README.md section 6: 105 MiB of RSS cached against 101 MiB). Running it on a worker thread that ended
// when idle was worse: the thread's isolate counts while it runs and its memory is not all returned (123 MiB peak,
// 108 MiB cached). The manager runs it in a child process that exits once the certificate is made (certs/issuer.ts).
// src/pki/pki.test.ts reads every field back with Node's X509Certificate, and every control plane the tests start
// (etcd, kube-apiserver and the rest, whose Go x509 parser rejects any DER that is not minimal) runs on these
// certificates.
import { createPrivateKey, generateKeyPairSync, webcrypto, type KeyObject } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
// Types only (erased): the module itself is imported by x509() below.
import type * as X509Module from '@peculiar/x509';

type X509 = typeof X509Module;

let library: Promise<X509> | undefined;

/** @peculiar/x509, imported at the first certificate made (the header says why), on Node's WebCrypto. */
function x509(): Promise<X509> {
  library ??= import('@peculiar/x509').then((lib) => {
    lib.cryptoProvider.set(webcrypto as unknown as Parameters<X509['cryptoProvider']['set']>[0]);
    return lib;
  });
  return library;
}

const keyAlgorithm = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' } as const;
const dayMs = 24 * 3600 * 1000;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends KeyPairPem {
  /** The CA certificate's subject as DER: a leaf's issuer must be these bytes exactly (Go's x509 chains by them). */
  subject: Buffer;
  /** The CA's key identifier, which a leaf names in its authority key identifier. */
  keyId: Buffer;
  signingKey: webcrypto.CryptoKey;
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

/**
 * CN first, then one O= per organization, each in an RDN of its own, as `CN=a, O=b` reads; UTF8String as RFC 5280
 * (section 4.1.2.6) asks of new certificates, and as CAs already in Secrets were written.
 */
function name(lib: X509, commonName: string, organizations: string[] = []): InstanceType<X509['Name']> {
  return new lib.Name([
    { CN: [{ utf8String: commonName }] },
    ...organizations.map((o) => ({ O: [{ utf8String: o }] })),
  ]);
}

/** To the second: DER times have no fraction (RFC 5280, section 4.1.2.5); one hour back for clock skew. */
function validity(now: Date | undefined, days: number): { notBefore: Date; notAfter: Date } {
  const start = Math.floor(((now ?? new Date()).getTime() - 3600 * 1000) / 1000) * 1000;
  return { notBefore: new Date(start), notAfter: new Date(start + days * dayMs) };
}

/**
 * A random positive 16-byte serial (RFC 5280, section 4.1.2.2), in hex: the top bit clear, the next one set, so it
 * is positive and its DER keeps all 16 bytes.
 */
function serialNumber(): string {
  const b = webcrypto.getRandomValues(new Uint8Array(16));
  b[0] = (b[0]! & 0x7f) | 0x40;
  return Buffer.from(b).toString('hex');
}

async function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(keyAlgorithm, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;
}

export async function createCA(commonName: string, validityDays = 3650, now?: Date): Promise<CertificateAuthority> {
  const lib = await x509();
  const keys = await newKeys();
  const ski = await lib.SubjectKeyIdentifierExtension.create(keys.publicKey);
  const cert = await lib.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: name(lib, commonName),
    keys,
    signingAlgorithm,
    ...validity(now, validityDays),
    extensions: [
      new lib.BasicConstraintsExtension(true, undefined, true),
      new lib.KeyUsagesExtension(lib.KeyUsageFlags.keyCertSign | lib.KeyUsageFlags.cRLSign, true),
      ski,
    ],
  });
  return {
    certPem: cert.toString('pem'),
    keyPem: await privateKeyPem(keys.privateKey),
    subject: Buffer.from(cert.subjectName.toArrayBuffer()),
    keyId: Buffer.from(ski.keyId, 'hex'),
    signingKey: keys.privateKey,
  };
}

/**
 * Loads a CA written earlier by createCA (this one, or an earlier version, which wrote the same fields), to sign
 * more leaves with it: its subject as encoded, and its subject key identifier (or, if it has none, one computed
 * from its key as createCA does).
 */
export async function loadCA(certPem: string, keyPem: string): Promise<CertificateAuthority> {
  const lib = await x509();
  const cert = new lib.X509Certificate(certPem);
  const keyId =
    cert.getExtension(lib.SubjectKeyIdentifierExtension)?.keyId ??
    (await lib.SubjectKeyIdentifierExtension.create(await cert.publicKey.export())).keyId;
  const key = createPrivateKey(keyPem);
  if (key.asymmetricKeyType !== 'ec') throw new Error('certificate: the CA key must be an ECDSA P-256 key');
  return {
    certPem,
    keyPem,
    subject: Buffer.from(cert.subjectName.toArrayBuffer()),
    keyId: Buffer.from(keyId, 'hex'),
    signingKey: key.toCryptoKey(keyAlgorithm, false, ['sign']),
  };
}

export async function createLeaf(ca: CertificateAuthority, opts: LeafOptions): Promise<KeyPairPem> {
  const lib = await x509();
  const keys = await newKeys();
  const ekus: string[] = [];
  if (opts.usage !== 'client') ekus.push(lib.ExtendedKeyUsage.serverAuth);
  if (opts.usage !== 'server') ekus.push(lib.ExtendedKeyUsage.clientAuth);
  const sans = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(opts.ipAddresses ?? []).map((ip) => ({ type: 'ip' as const, value: ipText(ip) })),
  ];
  const extensions: InstanceType<X509['Extension']>[] = [
    new lib.BasicConstraintsExtension(false, undefined, true),
    new lib.KeyUsagesExtension(lib.KeyUsageFlags.digitalSignature | lib.KeyUsageFlags.keyEncipherment, true),
    new lib.ExtendedKeyUsageExtension(ekus),
    new lib.AuthorityKeyIdentifierExtension(ca.keyId.toString('hex')),
  ];
  if (sans.length > 0) extensions.push(new lib.SubjectAlternativeNameExtension(sans));
  const cert = await lib.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: name(lib, opts.commonName, opts.organizations),
    issuer: new lib.Name(ca.subject),
    publicKey: keys.publicKey,
    signingKey: ca.signingKey,
    signingAlgorithm,
    ...validity(opts.now, opts.validityDays ?? 365),
    extensions,
  });
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

/** An IPv4 or IPv6 address as the 4 or 16 bytes of a subject alternative name (RFC 5280, section 4.2.1.6). */
export function ipAddressBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`certificate: ${JSON.stringify(ip)} is not an IP address`);
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const left = groups(head);
  const right = groups(tail);
  const all =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/**
 * An IP address as the library's parser reads it right: dotted IPv4, or IPv6 as eight hexadecimal groups. It reads
 * the groups of an IPv6 address with parseInt(group, 16), so an embedded IPv4 (`::ffff:10.0.0.1`) would come out
 * wrong (parseIPv6 in @peculiar/asn1-x509's ip_converter.js).
 */
function ipText(ip: string): string {
  const bytes = ipAddressBytes(ip);
  if (bytes.length === 4) return [...bytes].join('.');
  return Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16)).join(':');
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
