// The certificate library's side of src/pki/pki.ts: @peculiar/x509 (https://github.com/PeculiarVentures/x509) on
// Node's WebCrypto, with plain data in and out. It runs in a worker thread (pki-worker.ts, started by pki.ts), so
// the library never enters the main thread's heap (pki.ts says why).
import { createPrivateKey, webcrypto } from 'node:crypto';
import type * as X509Module from '@peculiar/x509';
import { ipAddressBytes } from './ip.ts';

type X509 = typeof X509Module;

let library: Promise<X509> | undefined;

/** @peculiar/x509, imported at the first certificate made, on Node's WebCrypto. */
function x509(): Promise<X509> {
  library ??= import('@peculiar/x509').then((lib) => {
    lib.cryptoProvider.set(webcrypto as unknown as Parameters<X509['cryptoProvider']['set']>[0]);
    return lib;
  });
  return library;
}

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
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

/** A CA as the worker hands it back (Buffers arrive as Uint8Arrays). */
export interface CAFields extends KeyPairPem {
  subject: Uint8Array;
  keyId: Uint8Array;
}

const keyAlgorithm = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signingAlgorithm = { name: 'ECDSA', hash: 'SHA-256' } as const;
const dayMs = 24 * 3600 * 1000;

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

/** A new self-signed CA, with what a leaf it signs must name: its subject as DER, its key identifier. */
export async function generateCA(commonName: string, validityDays: number, now?: Date): Promise<CAFields> {
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
  };
}

/**
 * The subject (as encoded) and subject key identifier of a CA written earlier by generateCA (this one, or an earlier
 * version, which wrote the same fields), or, if it has none, one computed from its key as generateCA does.
 */
export async function readCA(certPem: string): Promise<Pick<CAFields, 'subject' | 'keyId'>> {
  const lib = await x509();
  const cert = new lib.X509Certificate(certPem);
  const keyId =
    cert.getExtension(lib.SubjectKeyIdentifierExtension)?.keyId ??
    (await lib.SubjectKeyIdentifierExtension.create(await cert.publicKey.export())).keyId;
  return { subject: Buffer.from(cert.subjectName.toArrayBuffer()), keyId: Buffer.from(keyId, 'hex') };
}

/** A leaf signed by `ca` (its key as PEM: a CryptoKey does not cross to a worker thread). */
export async function generateLeaf(
  ca: Pick<CAFields, 'keyPem' | 'subject' | 'keyId'>,
  opts: LeafOptions,
): Promise<KeyPairPem> {
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
    new lib.AuthorityKeyIdentifierExtension(Buffer.from(ca.keyId).toString('hex')),
  ];
  if (sans.length > 0) extensions.push(new lib.SubjectAlternativeNameExtension(sans));
  const cert = await lib.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: name(lib, opts.commonName, opts.organizations),
    issuer: new lib.Name(Buffer.from(ca.subject)),
    publicKey: keys.publicKey,
    signingKey: createPrivateKey(ca.keyPem).toCryptoKey(keyAlgorithm, false, ['sign']),
    signingAlgorithm,
    ...validity(opts.now, opts.validityDays ?? 365),
    extensions,
  });
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
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
