// The webhook's start-up decision (certs/startup.ts): serve the cert dir's certificate at once,
// make a new one locally, or wait for the bootstrap. The behaviour with the apiserver down is
// shown in controller/webhook-host.test.ts and e2e/webhook/apiserver-down.e2e.ts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { issueMaterial, servingDnsNames, startupRetryDelayMs, writeCertDir } from './bootstrap.ts';
import { newServingCertificate } from './webhook-config.ts';
import { assessServingFiles, planWebhookStartup, readServingFiles, type ServingFiles } from './startup.ts';
import { tempDir } from '../src/testing/temp-dir.ts';

const day = 24 * 3600 * 1000;
const names = servingDnsNames('ads-webhook', 'kruise-system');
const none: ServingFiles = { certPem: '', keyPem: '', caBundlePem: '' };

async function selfSigned(now: Date, servingDays = 365): Promise<ServingFiles> {
  const m = await issueMaterial({ certPem: '', keyPem: '', caBundlePem: '', caKeyPem: '' }, 'renew-ca', {
    dnsNames: names,
    now,
    servingValidityDays: servingDays,
  });
  return { certPem: m.certPem, keyPem: m.keyPem, caBundlePem: m.caBundlePem };
}

async function local(hosts: string[], now: Date, validityDays = 365): Promise<ServingFiles> {
  const { ca, leaf } = await newServingCertificate(hosts, { validityDays, now });
  return { certPem: leaf.certPem, keyPem: leaf.keyPem, caBundlePem: ca.certPem };
}

describe('webhook start-up plan', () => {
  test('planWebhookStartup', async () => {
    const now = new Date();
    const cached = await selfSigned(now);
    const other = await selfSigned(now);
    const host = await local(['127.0.0.1'], now);
    const shortLived = await local(['127.0.0.1'], now, 20);
    const rows: {
      name: string;
      mode: 'self-signed' | 'webhook-host';
      files: ServingFiles;
      names: string[];
      at?: Date;
      serve: string;
      reason: RegExp;
    }[] = [
      {
        name: 'self-signed, the Secret cached from an earlier run: serve it now',
        mode: 'self-signed',
        files: cached,
        names,
        serve: 'cached',
        reason: /valid until/,
      },
      {
        name: 'self-signed, past 2/3 of its life but valid: still served (renewed in the background)',
        mode: 'self-signed',
        files: cached,
        names,
        at: new Date(now.getTime() + 300 * day),
        serve: 'cached',
        reason: /valid until/,
      },
      {
        name: 'self-signed, nothing in the cert dir: wait for the bootstrap',
        mode: 'self-signed',
        files: none,
        names,
        serve: 'after-bootstrap',
        reason: /no certificate/,
      },
      {
        name: 'self-signed, expired: wait for the bootstrap',
        mode: 'self-signed',
        files: cached,
        names,
        at: new Date(now.getTime() + 400 * day),
        serve: 'after-bootstrap',
        reason: /expired/,
      },
      {
        name: 'self-signed, for another Service: wait for the bootstrap',
        mode: 'self-signed',
        files: cached,
        names: servingDnsNames('other', 'kruise-system'),
        serve: 'after-bootstrap',
        reason: /lacks other\.kruise-system\.svc/,
      },
      {
        name: 'self-signed, key of another pair',
        mode: 'self-signed',
        files: { ...cached, keyPem: other.keyPem },
        names,
        serve: 'after-bootstrap',
        reason: /does not match/,
      },
      {
        name: 'self-signed, ca.crt of another CA',
        mode: 'self-signed',
        files: { ...cached, caBundlePem: other.caBundlePem },
        names,
        serve: 'after-bootstrap',
        reason: /not signed by a CA in ca\.crt/,
      },
      {
        name: 'self-signed, no ca.crt',
        mode: 'self-signed',
        files: { ...cached, caBundlePem: '' },
        names,
        serve: 'after-bootstrap',
        reason: /no CA bundle/,
      },
      {
        name: 'self-signed, garbage',
        mode: 'self-signed',
        files: { ...cached, certPem: 'garbage' },
        names,
        serve: 'after-bootstrap',
        reason: /unreadable/,
      },
      {
        name: 'webhook-host, certificate of an earlier run for the host: serve it',
        mode: 'webhook-host',
        files: host,
        names: ['127.0.0.1'],
        serve: 'cached',
        reason: /valid until/,
      },
      {
        name: 'webhook-host, nothing yet: make one locally (no apiserver needed)',
        mode: 'webhook-host',
        files: none,
        names: ['127.0.0.1'],
        serve: 'new-local',
        reason: /no certificate/,
      },
      {
        name: 'webhook-host, for another address',
        mode: 'webhook-host',
        files: host,
        names: ['10.0.0.7'],
        serve: 'new-local',
        reason: /lacks 10\.0\.0\.7/,
      },
      {
        name: 'webhook-host, expiring within 30 days',
        mode: 'webhook-host',
        files: shortLived,
        names: ['127.0.0.1'],
        serve: 'new-local',
        reason: /expires/,
      },
    ];
    for (const r of rows) {
      const plan = planWebhookStartup({ mode: r.mode, files: r.files, names: r.names, now: r.at ?? now });
      assert.equal(plan.serve, r.serve, r.name);
      assert.match(plan.reason, r.reason, r.name);
    }
  });

  test('assessServingFiles reports validity and the renewal time', async () => {
    const now = new Date();
    const verdict = assessServingFiles(await selfSigned(now, 30), names, now);
    assert.equal(verdict.usable, true);
    if (verdict.usable) {
      assert.ok(Math.abs(verdict.notAfter.getTime() - (now.getTime() + 30 * day)) < 2 * day);
      assert.ok(verdict.renewAt < verdict.notAfter);
    }
    const early = assessServingFiles(await selfSigned(new Date(now.getTime() + 5 * day)), names, now);
    assert.deepEqual(early.usable, false);
  });

  test('readServingFiles reads what writeCertDir wrote, and empty strings for a missing dir', async () => {
    const dir = tempDir('ads-startup-');
    assert.deepEqual(readServingFiles(join(dir, 'missing')), none);
    const m = await issueMaterial({ certPem: '', keyPem: '', caBundlePem: '', caKeyPem: '' }, 'renew-ca', {
      dnsNames: names,
      now: new Date(),
    });
    writeCertDir(dir, m);
    assert.deepEqual(readServingFiles(dir), { certPem: m.certPem, keyPem: m.keyPem, caBundlePem: m.caBundlePem });
  });

  test('start-up retries back off from 1 s to 30 s with jitter', () => {
    const rows = [
      { failures: 1, random: 0, want: 1000 },
      { failures: 2, random: 0, want: 2000 },
      { failures: 3, random: 0.5, want: 4400 },
      { failures: 5, random: 0, want: 16_000 },
      { failures: 6, random: 0, want: 30_000 },
      { failures: 60, random: 0.99, want: 30_000 },
    ];
    for (const r of rows) {
      assert.equal(startupRetryDelayMs(r.failures, { random: () => r.random }), r.want, `after ${r.failures} failures`);
    }
  });
});
