import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { crdConversion, ensureLocalServingCertificate, webhookConfigurations } from './webhook-config.ts';
import { assertDaemonSetSettingWebhookPolicy, assertDaemonSetWebhookPolicy } from './testing/webhook-policy.ts';
import { tempDir } from '../src/testing/temp-dir.ts';

describe('webhook configurations', () => {
  test('url endpoints get the path appended, scoped to apps.kruise.io daemonsets, failing closed', () => {
    const { mutating, validating } = webhookConfigurations({
      endpoint: { url: 'https://127.0.0.1:9443/' },
      caBundle: 'CA',
    });
    const m = (mutating.webhooks as Record<string, unknown>[])[0]!;
    const v = (validating.webhooks as Record<string, unknown>[])[0]!;
    assert.deepEqual(m.clientConfig, {
      url: 'https://127.0.0.1:9443/mutate-apps-kruise-io-daemonset',
      caBundle: 'Q0E=',
    });
    assert.deepEqual(
      (v.clientConfig as { url: string }).url,
      'https://127.0.0.1:9443/validate-apps-kruise-io-daemonset',
    );
    for (const w of [m, v]) {
      assertDaemonSetWebhookPolicy(w);
    }
  });

  test('a second webhook in each: DaemonSetSetting at its own paths, with the same policy and timeout', () => {
    const { mutating, validating } = webhookConfigurations({
      endpoint: { url: 'https://127.0.0.1:9443' },
      caBundle: 'CA',
      timeoutSeconds: 30,
    });
    const hooks = (c: typeof mutating) => c.webhooks as Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.deepEqual(
      [...hooks(mutating), ...hooks(validating)].map((w) => [w.name, w.clientConfig.url]),
      [
        ['mdaemonset.apps.kruise.io', 'https://127.0.0.1:9443/mutate-apps-kruise-io-daemonset'],
        ['mdaemonsetsetting.advanced-daemonset.io', 'https://127.0.0.1:9443/mutate-advanced-daemonset-io-daemonsetsetting'],
        ['vdaemonset.apps.kruise.io', 'https://127.0.0.1:9443/validate-apps-kruise-io-daemonset'],
        ['vdaemonsetsetting.advanced-daemonset.io', 'https://127.0.0.1:9443/validate-advanced-daemonset-io-daemonsetsetting'],
      ],
    ); // prettier-ignore
    for (const c of [mutating, validating]) {
      const [daemonSet, setting] = hooks(c);
      assertDaemonSetSettingWebhookPolicy(setting!);
      // Everything but the name, the path and the rules is the DaemonSet webhook's.
      const rest = ({ name: _n, clientConfig: _c, rules: _r, ...w }: Record<string, unknown>) => w;
      assert.deepEqual(rest(setting!), rest(daemonSet!));
      assert.equal(setting!.timeoutSeconds, 30);
      assert.equal(setting!.clientConfig.caBundle, 'Q0E=');
    }
  });

  test('service endpoints carry the path on the service reference', () => {
    const { mutating } = webhookConfigurations({
      endpoint: { service: { namespace: 'kruise-system', name: 'ads-webhook', port: 443 } },
      caBundle: 'CA',
      timeoutSeconds: 30,
    });
    const m = (mutating.webhooks as Record<string, unknown>[])[0]!;
    assert.deepEqual(m.clientConfig, {
      service: { namespace: 'kruise-system', name: 'ads-webhook', port: 443, path: '/mutate-apps-kruise-io-daemonset' },
      caBundle: 'Q0E=',
    });
    assert.equal(m.timeoutSeconds, 30);
  });
});

describe('CRD conversion webhook', () => {
  test('points at /convert by URL or on the Service reference, ConversionReview v1, with the caBundle', () => {
    assert.deepEqual(crdConversion({ url: 'https://127.0.0.1:9443' }, 'CA'), {
      strategy: 'Webhook',
      webhook: {
        conversionReviewVersions: ['v1'],
        clientConfig: { url: 'https://127.0.0.1:9443/convert', caBundle: 'Q0E=' },
      },
    });
    assert.deepEqual(crdConversion({ service: { namespace: 'kruise-system', name: 'ads-webhook', port: 443 } }, 'CA'), {
      strategy: 'Webhook',
      webhook: {
        conversionReviewVersions: ['v1'],
        clientConfig: {
          service: { namespace: 'kruise-system', name: 'ads-webhook', port: 443, path: '/convert' },
          caBundle: 'Q0E=',
        },
      },
    });
  });
});

describe('local serving certificate', () => {
  test('is written once, valid for the hosts, reused while fresh and renewed near expiry', async () => {
    const dir = tempDir('ads-certs-');
    const first = await ensureLocalServingCertificate(dir, ['127.0.0.1', 'localhost']);
    const cert = new X509Certificate(readFileSync(join(dir, 'tls.crt')));
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(cert.checkHost('localhost'), 'localhost');
    assert.ok(cert.verify(new X509Certificate(first.caBundle).publicKey));
    assert.equal(statSync(join(dir, 'tls.key')).mode & 0o777, 0o600);

    const again = await ensureLocalServingCertificate(dir, ['127.0.0.1']);
    assert.equal(again.caBundle, first.caBundle, 'a fresh certificate is reused');

    const later = new Date(Date.now() + 340 * 24 * 3600 * 1000);
    const renewed = await ensureLocalServingCertificate(dir, ['127.0.0.1'], { now: later });
    assert.notEqual(renewed.caBundle, first.caBundle, 'renewed within 30 days of expiry');
  });
});
