// Certificate authority and leaf certificates, generated in process with node:crypto (no openssl needed). ECDSA
// P-256 keys: fast to generate and accepted everywhere we use them (kube-apiserver serving/client certs,
// service-account signing, webhook serving).
//
// Node signs and parses certificates but has no API that makes one, so the certificate's body (RFC 5280, section
// 4.1: https://www.rfc-editor.org/rfc/rfc5280#section-4.1) is written here in DER: sequences, integers, object
// identifiers, strings and times. A library that does this (@peculiar/x509 with its ASN.1 schemas, which this module
// used before) held 2.6 MiB of heap and 3 MiB of RSS in the manager for as long as it ran, for the two certificates
// it signs at start (bench/README.md, section 6). src/pki/pki.test.ts reads every field back with Node's
// X509Certificate and with @peculiar/x509 (a development dependency), and every control plane the tests start
// (etcd, kube-apiserver and the rest, whose Go x509 parser rejects any DER that is not minimal) runs on these
// certificates.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  sign,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';

const dayMs = 24 * 3600 * 1000;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

export interface CertificateAuthority extends KeyPairPem {
  /** The CA certificate's subject as DER: a leaf's issuer must be these bytes exactly. */
  subject: Buffer;
  /** The CA's key identifier, which a leaf names in its authority key identifier. */
  keyId: Buffer;
  signingKey: KeyObject;
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

// --- DER (ITU-T X.690, section 10) -------------------------------------------------------------------------------

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let header: number[];
  if (n < 0x80) header = [tag, n];
  else if (n < 0x100) header = [tag, 0x81, n];
  else if (n < 0x10000) header = [tag, 0x82, n >> 8, n & 0xff];
  else header = [tag, 0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from(header), content]);
}

const sequence = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const octetString = (b: Buffer) => tlv(0x04, b);
const utf8String = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const booleanTrue = () => tlv(0x01, Buffer.from([0xff]));
/** [n] EXPLICIT: the tagged value inside. */
const explicit = (n: number, inner: Buffer) => tlv(0xa0 | n, inner);
/** [n] IMPLICIT of a primitive type: the value's own tag replaced. */
const implicit = (n: number, content: Buffer) => tlv(0x80 | n, content);

/** A non-negative INTEGER in its shortest form (DER): no leading zero byte unless the next byte's top bit is set. */
function integer(value: Buffer | number): Buffer {
  let b = typeof value === 'number' ? Buffer.from([value]) : value;
  let i = 0;
  while (i < b.length - 1 && b[i] === 0 && (b[i + 1]! & 0x80) === 0) i++;
  b = b.subarray(i);
  return tlv(0x02, (b[0]! & 0x80) !== 0 ? Buffer.concat([Buffer.from([0]), b]) : b);
}

function objectIdentifier(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) base128.unshift(0x80 | (v & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A BIT STRING of named bits (bit 0 is the first byte's top bit), trailing zero bits dropped as DER wants. */
function namedBits(bits: number[]): Buffer {
  const last = Math.max(...bits);
  const bytes = Buffer.alloc((last >> 3) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  return tlv(0x03, Buffer.concat([Buffer.from([7 - (last & 7)]), bytes]));
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280, section 4.1.2.5), to the second, in UTC. */
function time(d: Date): Buffer {
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '');
  const year = d.getUTCFullYear();
  return year >= 1950 && year < 2050
    ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii'))
    : tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

/** One element of DER: its tag, and where its content starts and ends in `der`. */
interface Element {
  tag: number;
  start: number;
  end: number;
  /** The whole element (tag, length and content). */
  raw: Buffer;
}

function readElement(der: Buffer, at: number): Element {
  const tag = der[at]!;
  let len = der[at + 1]!;
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[start + i]!;
    start += n;
  }
  if (start + len > der.length) throw new Error('certificate: truncated DER');
  return { tag, start, end: start + len, raw: der.subarray(at, start + len) };
}

/** The elements inside a constructed element. */
function children(der: Buffer, parent: Element): Element[] {
  const out: Element[] = [];
  for (let at = parent.start; at < parent.end;) {
    const e = readElement(der, at);
    out.push(e);
    at = e.end;
  }
  return out;
}

// --- X.509 -------------------------------------------------------------------------------------------------------

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** KeyUsage's named bits (RFC 5280, section 4.2.1.3). */
const KEY_USAGE = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

const signatureAlgorithm = () => sequence(objectIdentifier(OID.ecdsaWithSha256));

/** CN first, then one O= per organization, each in a set of its own, as `CN=a, O=b` reads. */
function name(commonName: string, organizations: string[] = []): Buffer {
  const attribute = (oid: string, value: string) => set(sequence(objectIdentifier(oid), utf8String(value)));
  return sequence(attribute(OID.commonName, commonName), ...organizations.map((o) => attribute(OID.organization, o)));
}

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return sequence(objectIdentifier(oid), ...(critical ? [booleanTrue()] : []), octetString(value));
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

/** RFC 5280, section 4.2.1.2, method (1): SHA-1 of the subjectPublicKey bits. */
function keyIdentifier(publicKey: KeyObject): Buffer {
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const [, bits] = children(spki, readElement(spki, 0));
  return createHash('sha1')
    .update(spki.subarray(bits!.start + 1, bits!.end)) // after the unused-bits byte
    .digest();
}

/** A random positive 16-byte serial (RFC 5280, section 4.1.2.2): the top bit clear, the next one set, so it is
 * positive and its DER keeps all 16 bytes. */
function serialNumber(): Buffer {
  const b = randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x40;
  return b;
}

function validity(now: Date | undefined, days: number): Buffer {
  const start = new Date((now ?? new Date()).getTime() - 3600 * 1000);
  return sequence(time(start), time(new Date(start.getTime() + days * dayMs)));
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

interface CertificateFields {
  issuer: Buffer;
  subject: Buffer;
  validity: Buffer;
  publicKey: KeyObject;
  extensions: Buffer[];
  signingKey: KeyObject;
}

/** Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue } (RFC 5280, section 4.1). */
function certificate(f: CertificateFields): Buffer {
  const tbs = sequence(
    explicit(0, integer(2)), // v3
    integer(serialNumber()),
    signatureAlgorithm(),
    f.issuer,
    f.validity,
    f.subject,
    f.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...f.extensions)),
  );
  // ECDSA-Sig-Value in DER, as the signature of ecdsa-with-SHA256 is (RFC 5758, section 3.2).
  const signature = sign('sha256', tbs, { key: f.signingKey, dsaEncoding: 'der' });
  return sequence(tbs, signatureAlgorithm(), tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
}

function newKeys(): { publicKey: KeyObject; privateKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

const privateKeyPem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }) as string;

export async function createCA(commonName: string, validityDays = 3650, now?: Date): Promise<CertificateAuthority> {
  const keys = newKeys();
  const subject = name(commonName);
  const keyId = keyIdentifier(keys.publicKey);
  const der = certificate({
    issuer: subject,
    subject,
    validity: validity(now, validityDays),
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    extensions: [
      extension(OID.basicConstraints, true, sequence(booleanTrue())),
      extension(OID.keyUsage, true, namedBits([KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign])),
      extension(OID.subjectKeyIdentifier, false, octetString(keyId)),
    ],
  });
  return {
    certPem: pem('CERTIFICATE', der),
    keyPem: privateKeyPem(keys.privateKey),
    subject,
    keyId,
    signingKey: keys.privateKey,
  };
}

/**
 * Loads a CA written earlier by createCA (this one, or its earlier version on @peculiar/x509, which wrote the same
 * fields), to sign more leaves with it: its subject as encoded, and its subject key identifier (or, if it has none,
 * one computed from its key as createCA does).
 */
export async function loadCA(certPem: string, keyPem: string): Promise<CertificateAuthority> {
  const der = new X509Certificate(certPem).raw;
  const [tbs] = children(der, readElement(der, 0));
  if (!tbs) throw new Error('certificate: no TBSCertificate');
  const fields = children(der, tbs);
  const v = fields[0]?.tag === 0xa0 ? 1 : 0; // [0] version, absent in v1 certificates
  const subject = fields[v + 4];
  const spki = fields[v + 5];
  if (!subject || !spki) throw new Error('certificate: TBSCertificate too short');
  let keyId: Buffer | undefined;
  const extensions = fields.find((f) => f.tag === 0xa3);
  if (extensions) {
    const [list] = children(der, extensions);
    for (const ext of list ? children(der, list) : []) {
      const [oid, ...rest] = children(der, ext);
      if (oid && oid.raw.equals(objectIdentifier(OID.subjectKeyIdentifier))) {
        const value = rest[rest.length - 1]!; // OCTET STRING holding the DER of the KeyIdentifier
        const inner = readElement(der, value.start);
        keyId = Buffer.from(der.subarray(inner.start, inner.end));
      }
    }
  }
  const signingKey = createPrivateKey(keyPem);
  if (signingKey.asymmetricKeyType !== 'ec') throw new Error('certificate: the CA key must be an ECDSA P-256 key');
  return {
    certPem,
    keyPem,
    subject: Buffer.from(subject.raw),
    keyId: keyId ?? keyIdentifier(createPublicKey({ key: Buffer.from(spki.raw), format: 'der', type: 'spki' })),
    signingKey,
  };
}

export async function createLeaf(ca: CertificateAuthority, opts: LeafOptions): Promise<KeyPairPem> {
  const keys = newKeys();
  const ekus: string[] = [];
  if (opts.usage !== 'client') ekus.push(OID.serverAuth);
  if (opts.usage !== 'server') ekus.push(OID.clientAuth);
  const sans = [
    ...(opts.dnsNames ?? []).map((d) => implicit(2, Buffer.from(d, 'ascii'))), // dNSName [2] IA5String
    ...(opts.ipAddresses ?? []).map((ip) => implicit(7, ipAddressBytes(ip))), // iPAddress [7] OCTET STRING
  ];
  const extensions = [
    extension(OID.basicConstraints, true, sequence()), // cA FALSE, the default, is left out in DER
    extension(OID.keyUsage, true, namedBits([KEY_USAGE.digitalSignature, KEY_USAGE.keyEncipherment])),
    extension(OID.extKeyUsage, false, sequence(...ekus.map(objectIdentifier))),
    extension(OID.authorityKeyIdentifier, false, sequence(implicit(0, ca.keyId))),
  ];
  if (sans.length > 0) extensions.push(extension(OID.subjectAltName, false, sequence(...sans)));
  const der = certificate({
    issuer: ca.subject,
    subject: name(opts.commonName, opts.organizations),
    validity: validity(opts.now, opts.validityDays ?? 365),
    publicKey: keys.publicKey,
    signingKey: ca.signingKey,
    extensions,
  });
  return { certPem: pem('CERTIFICATE', der), keyPem: privateKeyPem(keys.privateKey) };
}

/** A bare key pair (PEM), e.g. for service-account token signing. */
export async function createKeyPair(): Promise<{ publicPem: string; privatePem: string }> {
  const keys = newKeys();
  return {
    publicPem: keys.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    privatePem: privateKeyPem(keys.privateKey),
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
