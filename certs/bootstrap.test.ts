// The pure parts of the self-signed certificate mode. The apiserver side (Secret races,
// caBundle injection, RBAC) is proven in e2e/helm/cert-bootstrap.e2e.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { lstatSync, readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  assessMaterial,
  caBundleOf,
  issueMaterial,
  materialFromSecret,
  mergeCaBundles,
  renewalTime,
  secretData,
  servingDnsNames,
  splitPemBundle,
  withCaBundle,
  withConversionCaBundle,
  conversionCaBundleOf,
  writeCertDir,
  type CertificateMaterial,
} from './bootstrap.ts';
import type { KubeObject } from '../src/k8s/types.ts';
import { tempDir } from '../src/testing/temp-dir.ts';

const day = 24 * 3600 * 1000;
const names = servingDnsNames('ads-webhook', 'kruise-system');
const empty: CertificateMaterial = { certPem: '', keyPem: '', caBundlePem: '', caKeyPem: '' };

async function fresh(now = new Date(), opts: { caDays?: number; servingDays?: number } = {}) {
  return issueMaterial(empty, 'renew-ca', {
    dnsNames: names,
    now,
    caValidityDays: opts.caDays,
    servingValidityDays: opts.servingDays,
  });
}

describe('certificate bootstrap: pure parts', () => {
  test('serving names cover the Service as the apiserver resolves it', () => {
    assert.deepEqual(names, [
      'ads-webhook.kruise-system.svc',
      'ads-webhook.kruise-system.svc.cluster.local',
      'ads-webhook.kruise-system',
      'ads-webhook',
    ]);
  });

  test('renewal is due at 2/3 of the lifetime', () => {
    const at = renewalTime({ validFrom: '2026-01-01T00:00:00Z', validTo: '2026-01-31T00:00:00Z' });
    assert.equal(at.toISOString(), '2026-01-21T00:00:00.000Z');
  });

  test('an empty Secret (as the chart renders it) needs a CA', () => {
    assert.equal(assessMaterial(empty, names, new Date()).state, 'renew-ca');
    assert.deepEqual(materialFromSecret({ metadata: {}, data: { 'tls.crt': '', 'tls.key': '' } } as KubeObject), empty);
    assert.deepEqual(materialFromSecret(undefined), empty);
  });

  test('fresh material is valid for the Service names and round-trips through Secret data', async () => {
    const now = new Date();
    const m = await fresh(now);
    const verdict = assessMaterial(m, names, now);
    assert.equal(verdict.state, 'valid');
    const leaf = new X509Certificate(m.certPem);
    for (const n of names) assert.equal(leaf.checkHost(n), n);
    assert.ok(leaf.verify(splitPemBundle(m.caBundlePem)[0]!.publicKey));
    if (verdict.state === 'valid') {
      const expected = renewalTime(leaf).getTime();
      assert.equal(verdict.renewAt.getTime(), expected);
      assert.ok(verdict.renewAt.getTime() > now.getTime() + 200 * day, 'a one-year certificate renews after ~8 months');
    }
    const data = secretData(m);
    assert.deepEqual(Object.keys(data).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    assert.deepEqual(materialFromSecret({ metadata: {}, data } as KubeObject), m);
  });

  test('a serving certificate past 2/3 of its life is renewed under the same CA (caBundle unchanged)', async () => {
    const now = new Date();
    const m = await fresh(now);
    const later = new Date(now.getTime() + 250 * day);
    const verdict = assessMaterial(m, names, later);
    assert.equal(verdict.state, 'renew-serving');
    const renewed = await issueMaterial(m, 'renew-serving', { dnsNames: names, now: later });
    assert.equal(renewed.caBundlePem, m.caBundlePem);
    assert.equal(renewed.caKeyPem, m.caKeyPem);
    assert.notEqual(renewed.certPem, m.certPem);
    assert.equal(assessMaterial(renewed, names, later).state, 'valid');
  });

  test('a CA past 2/3 of its life is replaced; the old CA stays in the bundle until it expires', async () => {
    const now = new Date();
    const m = await fresh(now, { caDays: 30, servingDays: 10 });
    const later = new Date(now.getTime() + 21 * day);
    assert.equal(assessMaterial(m, names, later).state, 'renew-ca');
    const renewed = await issueMaterial(m, 'renew-ca', { dnsNames: names, now: later });
    const bundle = splitPemBundle(renewed.caBundlePem);
    assert.equal(bundle.length, 2);
    assert.equal(bundle[1]!.fingerprint256, splitPemBundle(m.caBundlePem)[0]!.fingerprint256, 'old CA kept second');
    assert.ok(new X509Certificate(renewed.certPem).verify(bundle[0]!.publicKey), 'new leaf signed by the new CA');
    assert.equal(assessMaterial(renewed, names, later).state, 'valid');

    const afterOldExpiry = new Date(now.getTime() + 40 * day);
    const again = await issueMaterial(renewed, 'renew-ca', { dnsNames: names, now: afterOldExpiry });
    assert.equal(splitPemBundle(again.caBundlePem).length, 2, 'the expired CA is dropped, the previous one kept');
  });

  test('wrong names, a foreign signer or a mismatched key force a new serving certificate', async () => {
    const now = new Date();
    const m = await fresh(now);
    assert.match(
      (assessMaterial(m, servingDnsNames('other', 'kruise-system'), now) as { reason: string }).reason,
      /lacks other\.kruise-system\.svc/,
    );
    const other = await fresh(now);
    assert.equal(
      assessMaterial({ ...m, certPem: other.certPem, keyPem: other.keyPem }, names, now).state,
      'renew-serving',
    );
    assert.equal(assessMaterial({ ...m, keyPem: other.keyPem }, names, now).state, 'renew-serving');
    assert.equal(assessMaterial({ ...m, caKeyPem: other.caKeyPem }, names, now).state, 'renew-ca');
    assert.equal(assessMaterial({ ...m, certPem: 'garbage' }, names, now).state, 'renew-serving');
  });

  test('caBundle merging keeps both CAs during a rotation, once each, and drops expired ones', async () => {
    const now = new Date();
    const a = await fresh(now);
    const b = await fresh(now);
    const merged = mergeCaBundles(a.caBundlePem, `${b.caBundlePem}${a.caBundlePem}`, now);
    assert.equal(splitPemBundle(merged).length, 2);
    assert.equal(splitPemBundle(mergeCaBundles(a.caBundlePem, '', new Date(now.getTime() + 4000 * day))).length, 0);
  });

  test('withCaBundle sets every webhook and reports no change when already set', () => {
    const config = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'x', resourceVersion: '7' },
      webhooks: [
        { name: 'a', clientConfig: { service: { name: 's', namespace: 'n' } } },
        { name: 'b', clientConfig: { service: { name: 's', namespace: 'n' }, caBundle: 'T0xE' } },
      ],
    } as unknown as KubeObject;
    const updated = withCaBundle(config, 'TkVX')!;
    assert.ok(updated);
    const hooks = (updated as unknown as { webhooks: { clientConfig: Record<string, unknown> }[] }).webhooks;
    assert.deepEqual(
      hooks.map((w) => w.clientConfig.caBundle),
      ['TkVX', 'TkVX'],
    );
    assert.deepEqual(hooks[0]!.clientConfig.service, { name: 's', namespace: 'n' });
    assert.equal(updated.metadata.resourceVersion, '7', 'the update carries the resourceVersion it read');
    assert.equal(withCaBundle(updated, 'TkVX'), undefined);
    assert.equal(caBundleOf(updated), 'NEW');
  });

  test('the CRD conversion webhook gets the same caBundle; a CRD converting without a webhook is left alone', () => {
    const crd = (strategy: string, clientConfig?: Record<string, unknown>) =>
      ({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'daemonsets.apps.kruise.io', resourceVersion: '3' },
        spec: {
          group: 'apps.kruise.io',
          conversion: {
            strategy,
            ...(clientConfig ? { webhook: { conversionReviewVersions: ['v1'], clientConfig } } : {}),
          },
        },
      }) as unknown as KubeObject;
    const service = { service: { name: 's', namespace: 'n', path: '/convert', port: 443 } };
    const updated = withConversionCaBundle(crd('Webhook', service), 'TkVX')!;
    assert.deepEqual((updated as unknown as { spec: { conversion: unknown } }).spec.conversion, {
      strategy: 'Webhook',
      webhook: { conversionReviewVersions: ['v1'], clientConfig: { ...service, caBundle: 'TkVX' } },
    });
    assert.equal(updated.metadata.resourceVersion, '3', 'the update carries the resourceVersion it read');
    assert.equal(conversionCaBundleOf(updated), 'NEW');
    assert.equal(withConversionCaBundle(updated, 'TkVX'), undefined, 'already set: no write');
    assert.equal(withConversionCaBundle(crd('None'), 'TkVX'), undefined, 'strategy None: nothing calls us');
  });

  test('the cert dir is written atomically through ..data symlinks, the key private, old versions removed', async () => {
    const dir = tempDir('ads-bootstrap-');
    const m = await fresh();
    assert.equal(writeCertDir(dir, m), true);
    for (const f of ['tls.crt', 'tls.key', 'ca.crt']) {
      assert.ok(lstatSync(join(dir, f)).isSymbolicLink());
      assert.equal(readlinkSync(join(dir, f)), join('..data', f));
    }
    assert.equal(readFileSync(join(dir, 'tls.crt'), 'utf8'), m.certPem);
    assert.equal(readFileSync(join(dir, 'ca.crt'), 'utf8'), m.caBundlePem);
    assert.equal(statSync(join(dir, 'tls.key')).mode & 0o777, 0o600);
    assert.equal(writeCertDir(dir, m), false, 'unchanged material is not rewritten');

    const n = await issueMaterial(m, 'renew-serving', { dnsNames: names, now: new Date() });
    assert.equal(writeCertDir(dir, n), true);
    assert.equal(readFileSync(join(dir, 'tls.key'), 'utf8'), n.keyPem);
    const versions = readdirSync(dir).filter((e) => e.startsWith('..') && e !== '..data');
    assert.equal(versions.length, 1, `one version directory left, got ${versions.join(', ')}`);
  });
});
