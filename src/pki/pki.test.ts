import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { createCA, createKeyPair, createLeaf, loadCA } from './pki.ts';

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
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(cert.checkHost('localhost'), 'localhost');
    assert.equal(cert.checkIP('10.1.1.1'), undefined);
    assert.ok(cert.checkPrivateKey((await import('node:crypto')).createPrivateKey(leaf.keyPem)));
  });

  test('a client leaf carries groups as O= and a reloaded CA signs verifiable leaves', async () => {
    const original = await createCA('ca');
    const ca = await loadCA(original.certPem, original.keyPem);
    const leaf = await createLeaf(ca, { commonName: 'admin', organizations: ['system:masters'], usage: 'client' });
    const cert = new X509Certificate(leaf.certPem);
    assert.match(cert.subject, /CN=admin/);
    assert.match(cert.subject, /O=system:masters/);
    assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
  });

  test('key pairs are PEM', async () => {
    const kp = await createKeyPair();
    assert.match(kp.publicPem, /^-----BEGIN PUBLIC KEY-----/);
    assert.match(kp.privatePem, /^-----BEGIN PRIVATE KEY-----/);
  });
});
