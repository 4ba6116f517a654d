import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey, webcrypto } from 'node:crypto';
// The library pki.ts writes with, here as a reader of every field (Node's X509Certificate is the independent one).
import * as x509 from '@peculiar/x509';
import { createCA, createKeyPair, createLeaf, ipAddressBytes, loadCA } from './pki.ts';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** A CA and its key as this module wrote them before it used @peculiar/x509 (its own DER), as Secrets hold them. */
const EARLIER_CA = [
  '-----BEGIN CERTIFICATE-----',
  'MIIBjzCCATagAwIBAgIQZXsBTaRgVuDXLXcWqnvBvzAKBggqhkjOPQQDAjAoMSYw',
  'JAYDVQQDDB1hZHZhbmNlZC1kYWVtb25zZXQtd2ViaG9vay1jYTAeFw0yNjExMjcy',
  'MzAwMDBaFw0zNjExMjQyMzAwMDBaMCgxJjAkBgNVBAMMHWFkdmFuY2VkLWRhZW1v',
  'bnNldC13ZWJob29rLWNhMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEgLbqVodZ',
  '+ZiXNghw7r+rD/0v9VcI5iCX8zE0x2CJB50fyHTzmXuDIzP9dZ+V6wg/wgAZWfNg',
  'Me9aLyXs8Q+1P6NCMEAwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYw',
  'HQYDVR0OBBYEFJjAcPrVO9gA2ILHhha4/ZOzjA8HMAoGCCqGSM49BAMCA0cAMEQC',
  'IE+2L8XtDOAhxB4sCyG0GHfEbl1Q3/mdb4YHsfiuTaIMAiBNaRc4yPFnw6DfNK9V',
  'D3sr8x37EIzV9rjA7naZc73KBg==',
  '-----END CERTIFICATE-----',
].join('\n');
const EARLIER_CA_KEY = [
  '-----BEGIN PRIVATE KEY-----',
  'MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgXcIAp1Sf8npqkqrq',
  'MoFCNGxz/yxV5Y4g27y51qEL806hRANCAASAtupWh1n5mJc2CHDuv6sP/S/1Vwjm',
  'IJfzMTTHYIkHnR/IdPOZe4MjM/11n5XrCD/CABlZ82Ax71ovJezxD7U/',
  '-----END PRIVATE KEY-----',
].join('\n');

const hex = (b: ArrayBuffer | Buffer) => Buffer.from(b instanceof ArrayBuffer ? new Uint8Array(b) : b).toString('hex');

describe('pki', () => {
  test('a server leaf is signed by its CA and carries the SANs', async () => {
    const ca = await createCA('test-ca');
    const leaf = await createLeaf(ca, {
      commonName: 'webhook',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    const cert = new X509Certificate(leaf.certPem);
    assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
    assert.ok(cert.checkIssued(new X509Certificate(ca.certPem)));
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(cert.checkHost('localhost'), 'localhost');
    assert.equal(cert.checkIP('10.1.1.1'), undefined);
    assert.ok(cert.checkPrivateKey(createPrivateKey(leaf.keyPem)));
  });

  test('a client leaf carries groups as O= and a reloaded CA signs verifiable leaves', async () => {
    const original = await createCA('ca');
    const ca = await loadCA(original.certPem, original.keyPem);
    assert.ok(ca.subject.equals(original.subject));
    assert.ok(ca.keyId.equals(original.keyId));
    const leaf = await createLeaf(ca, { commonName: 'admin', organizations: ['system:masters'], usage: 'client' });
    const cert = new X509Certificate(leaf.certPem);
    assert.match(cert.subject, /CN=admin/);
    assert.match(cert.subject, /O=system:masters/);
    assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
  });

  test('every field as another reader sees it: the CA', async () => {
    const now = new Date('2026-03-01T12:00:00Z');
    const ca = await createCA('advanced-daemonset-webhook-ca', 3650, now);
    const cert = new x509.X509Certificate(ca.certPem);
    assert.equal(cert.subject, 'CN=advanced-daemonset-webhook-ca');
    assert.equal(cert.issuer, cert.subject);
    assert.equal(cert.notBefore.toISOString(), '2026-03-01T11:00:00.000Z');
    assert.equal(cert.notAfter.toISOString(), '2036-02-27T11:00:00.000Z');
    const algorithm = cert.signatureAlgorithm as unknown as { name: string; hash: { name: string } };
    assert.deepEqual([algorithm.name, algorithm.hash.name], ['ECDSA', 'SHA-256']);
    assert.equal(cert.serialNumber.length, 32, 'a positive 16-byte serial');
    assert.ok(/^[4-7]/.test(cert.serialNumber));
    const basic = cert.getExtension(x509.BasicConstraintsExtension);
    assert.ok(basic?.ca && basic.critical);
    assert.equal(basic.pathLength, undefined);
    const usage = cert.getExtension(x509.KeyUsagesExtension);
    assert.ok(usage?.critical);
    assert.equal(usage.usages, x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    const ski = cert.getExtension(x509.SubjectKeyIdentifierExtension);
    assert.equal(ski?.keyId, hex(ca.keyId));
    // The same identifier as the library computes from the key (RFC 5280 4.2.1.2, method 1).
    const computed = await x509.SubjectKeyIdentifierExtension.create(await cert.publicKey.export());
    assert.equal(computed.keyId, ski.keyId);
    assert.ok(await cert.verify({ signatureOnly: true }));
    const node = new X509Certificate(ca.certPem);
    assert.equal(node.ca, true);
    assert.ok(node.checkIssued(node));
  });

  test('every field as another reader sees it: a leaf with DNS, IPv4 and IPv6 names', async () => {
    const ca = await createCA('ca');
    const now = new Date('2026-03-01T12:00:00Z');
    const leaf = await createLeaf(ca, {
      commonName: 'system:kube-controller-manager',
      organizations: ['system:masters', 'a,b+c'],
      dnsNames: ['advanced-daemonset-webhook.kruise-system.svc', 'localhost'],
      ipAddresses: ['127.0.0.1', '10.96.0.1', '::1', 'fd00::a:1', '::ffff:10.0.0.1'],
      usage: 'server-client',
      validityDays: 30,
      now,
    });
    const cert = new x509.X509Certificate(leaf.certPem);
    assert.equal(cert.subject, 'CN=system:kube-controller-manager, O=system:masters, O=a\\,b\\+c');
    assert.equal(cert.issuer, 'CN=ca');
    assert.equal(cert.notAfter.toISOString(), '2026-03-31T11:00:00.000Z');
    const basic = cert.getExtension(x509.BasicConstraintsExtension);
    assert.ok(basic && basic.critical && !basic.ca);
    const usage = cert.getExtension(x509.KeyUsagesExtension);
    assert.ok(usage?.critical);
    assert.equal(usage.usages, x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment);
    const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
    assert.deepEqual([...(eku?.usages ?? [])], [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]);
    assert.equal(eku?.critical, false);
    const aki = cert.getExtension(x509.AuthorityKeyIdentifierExtension);
    assert.equal(aki?.keyId, hex(ca.keyId));
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
    assert.deepEqual(
      san?.names.toJSON().map((n) => `${n.type}:${n.value}`),
      [
        'dns:advanced-daemonset-webhook.kruise-system.svc',
        'dns:localhost',
        'ip:127.0.0.1',
        'ip:10.96.0.1',
        'ip:::1',
        'ip:fd00::a:1',
        'ip:::ffff:a00:1',
      ],
    );
    const caKey = await new x509.X509Certificate(ca.certPem).publicKey.export();
    assert.ok(await cert.verify({ publicKey: caKey, signatureOnly: true }));
    const node = new X509Certificate(leaf.certPem);
    assert.equal(node.ca, false);
    assert.equal(node.checkIP('::1'), '::1');
    assert.equal(node.checkIP('fd00::a:1'), 'fd00::a:1');
    assert.deepEqual(node.keyUsage, ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    // The issuer is the CA's subject byte for byte (Go's x509 finds a parent by these bytes; OpenSSL's checkIssued
    // compares a canonical form), in UTF8String (tag 0x0c after the commonName OID 2.5.4.3).
    assert.ok(node.raw.includes(ca.subject), "the CA's subject bytes as the issuer");
    assert.ok(ca.subject.includes(Buffer.from([0x06, 0x03, 0x55, 0x04, 0x03, 0x0c])), 'CN as UTF8String');
  });

  test('validity past 2049 is a GeneralizedTime (a UTCTime would read 2065 as 1965)', async () => {
    const ca = await createCA('long', 40 * 365, new Date('2026-01-01T00:00:00Z'));
    const notAfter = new Date(Date.parse('2026-01-01T00:00:00Z') - 3600_000 + 40 * 365 * 86400_000).toISOString();
    assert.equal(notAfter.slice(0, 4), '2065');
    assert.equal(new Date(new X509Certificate(ca.certPem).validTo).toISOString(), notAfter);
    assert.equal(new x509.X509Certificate(ca.certPem).notAfter.toISOString(), notAfter);
  });

  test('a CA with a PrintableString subject (as the library writes from a string) signs leaves that chain to it', async () => {
    const alg = { name: 'ECDSA', namedCurve: 'P-256' };
    const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const old = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: 'CN=advanced-daemonset-webhook-ca',
      keys: keys as unknown as Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'],
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      notBefore: new Date(Date.now() - 3600_000),
      notAfter: new Date(Date.now() + 86400_000),
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
    const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
    const ca = await loadCA(old.toString('pem'), keyPem);
    assert.equal(hex(ca.keyId), old.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId);
    const leaf = await createLeaf(ca, { commonName: 'webhook', dnsNames: ['localhost'], usage: 'server' });
    const cert = new X509Certificate(leaf.certPem);
    assert.ok(cert.checkIssued(new X509Certificate(old.toString('pem'))));
    assert.ok(ca.subject.includes(Buffer.from([0x06, 0x03, 0x55, 0x04, 0x03, 0x13])), 'CN as PrintableString');
    assert.ok(cert.raw.includes(ca.subject), "the CA's subject bytes as the issuer, not re-encoded");
    assert.ok(cert.verify(new X509Certificate(old.toString('pem')).publicKey));
    assert.equal(
      new x509.X509Certificate(leaf.certPem).getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId,
      hex(ca.keyId),
    );
  });

  test('a CA written by the earlier DER code signs leaves that chain to it, issuer bytes unchanged', async () => {
    const ca = await loadCA(`${EARLIER_CA}\n`, `${EARLIER_CA_KEY}\n`);
    const earlier = new X509Certificate(EARLIER_CA);
    assert.equal(
      hex(ca.keyId),
      new x509.X509Certificate(EARLIER_CA).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
    const leaf = await createLeaf(ca, { commonName: 'webhook', dnsNames: ['localhost'], usage: 'server' });
    const cert = new X509Certificate(leaf.certPem);
    assert.ok(cert.checkIssued(earlier));
    assert.ok(cert.verify(earlier.publicKey));
    assert.ok(cert.raw.includes(ca.subject) && earlier.raw.includes(ca.subject));
  });

  test('IP addresses as SAN bytes', () => {
    assert.equal(ipAddressBytes('10.96.0.1').toString('hex'), '0a600001');
    assert.equal(ipAddressBytes('::1').toString('hex'), '00000000000000000000000000000001');
    assert.equal(ipAddressBytes('::').toString('hex'), '0'.repeat(32));
    assert.equal(ipAddressBytes('fd00::a:1').toString('hex'), 'fd00' + '0000'.repeat(5) + '000a0001');
    assert.equal(ipAddressBytes('2001:db8:0:0:1:0:0:1').toString('hex'), '20010db8000000000001000000000001');
    assert.equal(ipAddressBytes('1::').toString('hex'), '00010000000000000000000000000000');
    assert.equal(ipAddressBytes('::ffff:10.0.0.1').toString('hex'), '00000000000000000000ffff0a000001');
    assert.throws(() => ipAddressBytes('example.com'), /not an IP address/);
  });

  test('key pairs are PEM', async () => {
    const kp = await createKeyPair();
    assert.match(kp.publicPem, /^-----BEGIN PUBLIC KEY-----/);
    assert.match(kp.privatePem, /^-----BEGIN PRIVATE KEY-----/);
  });
});
