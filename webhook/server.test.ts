// The running server in-process: HTTPS from a cert dir, reload when the files change, plain-HTTP health and
// metrics, and the stop sequence (readiness false, keep serving for the drain delay, then close).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import { newServingCertificate } from '../certs/webhook-config.ts';
import { MUTATE_PATH } from '../src/api/constants.ts';
import { startWebhookServer, type WebhookServer } from './server.ts';
import { admissionReview, daemonSetManifest } from '../src/api/testing/review-fixtures.ts';
import { until } from '../src/testing/wait.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const logger = pino({ level: 'silent' });

async function writePair(dir: string): Promise<{ ca: string; cert: string }> {
  const { ca, leaf } = await newServingCertificate(['127.0.0.1']);
  writeFileSync(join(dir, 'tls.key'), leaf.keyPem);
  writeFileSync(join(dir, 'tls.crt'), leaf.certPem);
  return { ca: ca.certPem, cert: leaf.certPem };
}

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

/** POSTs a review over HTTPS on a fresh connection; returns status, body and the served certificate. */
function postReview(port: number, ca: string, body: unknown): Promise<{ status: number; json: any; served: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port, path: `${MUTATE_PATH}?timeout=10s`, method: 'POST', ca, agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        const served = (res.socket as any).getPeerCertificate().fingerprint256 as string;
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined, served }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
} // prettier-ignore

const get = async (port: number, path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, text: await res.text() };
};

describe('webhook server', () => {
  let dir: string;
  let first: { ca: string; cert: string };
  /** The pair being served (changes in the reload test). */
  let current: { ca: string; cert: string };
  let server: WebhookServer;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ads-webhook-test-'));
    first = current = await writePair(dir);
    server = await startWebhookServer({
      certDir: dir,
      port: 0,
      host: '127.0.0.1',
      healthPort: 0,
      metricsPort: 0,
      logger,
      drainDelayMs: 300,
      certPollIntervalMs: 200,
    });
  });
  after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('serves reviews over HTTPS with the certificate from the cert dir', async () => {
    const res = await postReview(server.port, first.ca, admissionReview(daemonSetManifest(), { uid: 'tls-1' }));
    assert.equal(res.status, 200);
    assert.equal(res.json.response.uid, 'tls-1');
    assert.equal(res.json.response.allowed, true);
    assert.equal(res.served, fingerprint(first.cert));
  });

  test('/healthz and /readyz on the health port; /metrics on the metrics port', async () => {
    assert.deepEqual(await get(server.healthPort!, '/healthz'), { status: 200, text: 'ok' });
    assert.deepEqual(await get(server.healthPort!, '/readyz'), { status: 200, text: 'ok' });
    assert.equal((await get(server.healthPort!, '/metrics')).status, 404);
    const metrics = await get(server.metricsPort!, '/metrics');
    assert.equal(metrics.status, 200);
    assert.match(
      metrics.text,
      /controller_runtime_webhook_requests_total\{webhook="mutate-apps-kruise-io-daemonset",code="200",verdict="patched"\} 1/,
    );
    assert.match(
      metrics.text,
      /controller_runtime_webhook_latency_seconds_count\{webhook="mutate-apps-kruise-io-daemonset",verdict="patched"\} 1/,
    );
  });

  test('a half-written rotation (key and cert that do not match) keeps the old pair', async () => {
    const { leaf } = await newServingCertificate(['127.0.0.1']);
    const oldKey = readFileSync(join(dir, 'tls.key'));
    writeFileSync(join(dir, 'tls.crt'), leaf.certPem); // key not yet replaced
    assert.equal(await server.reloadCertificates(), false);
    const res = await postReview(server.port, first.ca, admissionReview(daemonSetManifest()));
    assert.equal(res.served, fingerprint(first.cert));
    writeFileSync(join(dir, 'tls.crt'), first.cert);
    writeFileSync(join(dir, 'tls.key'), oldKey);
  });

  test('new files in the cert dir are picked up without a restart', async () => {
    const second = (current = await writePair(dir));
    await until('the new certificate to be served', async () => {
      const res = await postReview(server.port, second.ca, admissionReview(daemonSetManifest())).catch(() => undefined);
      return res?.served === fingerprint(second.cert);
    });
  });

  test('stop: readiness false at once, still serving while draining, then closed', async () => {
    const stopped = server.stop();
    assert.equal(server.ready(), false);
    assert.equal((await get(server.healthPort!, '/readyz')).status, 503);
    assert.equal((await get(server.healthPort!, '/healthz')).status, 200, 'alive while draining');
    const during = await postReview(server.port, current.ca, admissionReview(daemonSetManifest(), { uid: 'drain' }));
    assert.equal(during.status, 200, 'reviews still answered while draining');
    assert.equal(during.json.response.uid, 'drain');
    await stopped;
    await assert.rejects(fetch(`http://127.0.0.1:${server.healthPort}/healthz`));
    const after = await postReview(server.port, '', {}).catch((e: Error) => e);
    assert.ok(after instanceof Error && /ECONNREFUSED/.test(after.message), String(after));
    assert.equal(server.stop(), stopped, 'stop is idempotent');
  });
});
