// The manager's certificates made in a child process: what comes back, that this process never loads the library
// that wrote them, and the errors a parent sees when the child fails, hangs or is missing.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { servingDnsNames, type CertificateMaterial } from './bootstrap.ts';
import { childProcessIssuer, IN_PROCESS_ISSUER } from './issuer.ts';
import { tempDir } from '../src/testing/temp-dir.ts';

const empty: CertificateMaterial = { certPem: '', keyPem: '', caBundlePem: '', caKeyPem: '' };

/** reflect-metadata, which @peculiar/x509 loads, puts Reflect.getMetadata on the global Reflect. */
const libraryLoaded = () => typeof (Reflect as { getMetadata?: unknown }).getMetadata === 'function';

// In this order: the first tests check that this process has not loaded the library, the last that it would have.
describe('certificates made in a child process', () => {
  const issuer = childProcessIssuer();

  test('a serving certificate for the hosts, and its CA, as PEM; the library never loaded here', async () => {
    const now = new Date('2026-11-30T00:00:00Z');
    const { ca, leaf } = await issuer.newServingCertificate(['127.0.0.1', 'localhost'], { validityDays: 30, now });
    const cert = new X509Certificate(leaf.certPem);
    assert.equal(cert.subjectAltName, 'DNS:localhost, IP Address:127.0.0.1');
    assert.ok(cert.checkIssued(new X509Certificate(ca.certPem)));
    assert.ok(cert.verify(new X509Certificate(ca.certPem).publicKey));
    // An hour before `now` (src/pki/pki.ts allows for clock skew): `now` reached the child as a Date.
    assert.equal(cert.validFrom, 'Nov 29 23:00:00 2026 GMT');
    assert.match(leaf.keyPem, /^-----BEGIN PRIVATE KEY-----/);
    assert.match(ca.keyPem, /^-----BEGIN PRIVATE KEY-----/);
    assert.equal(libraryLoaded(), false);
  });

  test("the webhook's material: a new CA, then a serving certificate it signs", async () => {
    const dnsNames = servingDnsNames('ads-webhook', 'kruise-system');
    const now = new Date();
    const m = await issuer.issueMaterial(empty, 'renew-ca', { dnsNames, now });
    const renewed = await issuer.issueMaterial(m, 'renew-serving', { dnsNames, now });
    assert.equal(renewed.caBundlePem, m.caBundlePem, 'the same CA');
    assert.notEqual(renewed.certPem, m.certPem);
    assert.ok(new X509Certificate(renewed.certPem).checkIssued(new X509Certificate(m.caBundlePem)));
    assert.equal(libraryLoaded(), false);
  });

  test("the child's error, by the function it ran", async () => {
    // A serving certificate with no CA to sign it.
    await assert.rejects(issuer.issueMaterial(empty, 'renew-serving', { dnsNames: ['x'], now: new Date() }), {
      message: /^making a certificate \(issueMaterial\): /,
    });
  });

  test('a child that does not answer in time is killed; one that is missing is named', async () => {
    const dir = tempDir('ads-issuer-');
    const hangs = join(dir, 'hangs.mjs');
    writeFileSync(hangs, 'setInterval(() => {}, 1000);\n');
    await assert.rejects(childProcessIssuer({ file: hangs, timeoutMs: 300 }).newServingCertificate(['a']), {
      message: 'making a certificate (newServingCertificate) took over 300 ms; the process was killed',
    });
    const exits = join(dir, 'exits.mjs');
    writeFileSync(exits, 'process.exit(3);\n');
    await assert.rejects(childProcessIssuer({ file: exits }).newServingCertificate(['a']), {
      message: 'making a certificate (newServingCertificate): the process exited (3) with no answer',
    });
    await assert.rejects(childProcessIssuer({ file: join(dir, 'missing.mjs') }).newServingCertificate(['a']), {
      message: `the certificate issuer ${join(dir, 'missing.mjs')} is missing (the build puts it beside the bundle)`,
    });
  });

  test('made in this process instead, the library is loaded (what the checks above look for)', async () => {
    await IN_PROCESS_ISSUER.newServingCertificate(['127.0.0.1']);
    assert.equal(libraryLoaded(), true);
  });
});
