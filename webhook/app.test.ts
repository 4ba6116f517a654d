// The Fastify app through `inject` (no sockets): routing, body parsing and limits, the review round trip,
// metrics by path and verdict.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fastJsonPatch from 'fast-json-patch';
import { pino } from 'pino';
import { MUTATE_PATH, VALIDATE_PATH } from '../src/api/constants.ts';
import { defaultDaemonSet } from '../src/api/defaults.ts';
import { BODY_LIMIT, buildWebhookApp, KEEP_ALIVE_TIMEOUT_MS } from './app.ts';
import { webhookMetrics } from './metrics.ts';
import { admissionReview, daemonSetManifest } from './review-fixtures.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const metrics = webhookMetrics();
const app = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics });
after(() => app.close());

const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });

const decodePatch = (response: any) => JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));

describe('webhook app', () => {
  test('mutate v1: uid echoed, JSONPatch that yields every default', async () => {
    const ds = daemonSetManifest();
    const res = await post(MUTATE_PATH, admissionReview(ds, { uid: 'uid-1' }));
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.apiVersion, 'admission.k8s.io/v1');
    assert.equal(body.kind, 'AdmissionReview');
    assert.equal(body.response.uid, 'uid-1');
    assert.equal(body.response.allowed, true);
    assert.equal(body.response.patchType, 'JSONPatch');
    const patched = fastJsonPatch.applyPatch(structuredClone(ds), decodePatch(body.response)).newDocument;
    assert.deepEqual(patched, defaultDaemonSet(ds));
  });

  test('v1beta1 reviews are answered as v1beta1', async () => {
    const res = await post(
      MUTATE_PATH,
      admissionReview(daemonSetManifest(), { apiVersion: 'admission.k8s.io/v1beta1', uid: 'b' }),
    );
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().apiVersion, 'admission.k8s.io/v1beta1');
    assert.equal(res.json().response.uid, 'b');
  });

  test('no patch when nothing changes', async () => {
    const res = await post(MUTATE_PATH, admissionReview(defaultDaemonSet(daemonSetManifest())));
    assert.deepEqual(res.json().response, { uid: '705ab4f5-6393-11e8-b7cc-42010a800002', allowed: true });
  });

  test('unknown fields survive the patch', async () => {
    const ds: any = daemonSetManifest();
    ds.spec.somethingNew = { a: 1 };
    ds.metadata.annotations = { keep: 'me' };
    const res = await post(MUTATE_PATH, admissionReview(ds));
    const patch = decodePatch(res.json().response);
    assert.ok(
      patch.every((op: any) => op.op === 'add'),
      JSON.stringify(patch),
    );
    const patched: any = fastJsonPatch.applyPatch(structuredClone(ds), patch).newDocument;
    assert.deepEqual(patched.spec.somethingNew, { a: 1 });
    assert.deepEqual(patched.metadata.annotations, { keep: 'me' });
  });

  test('?timeout= is ignored', async () => {
    const res = await post(`${VALIDATE_PATH}?timeout=10s`, admissionReview(defaultDaemonSet(daemonSetManifest())));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().response.allowed, true);
  });

  test('validate: rejection is allowed false, 422 Invalid with causes', async () => {
    const ds: any = defaultDaemonSet(daemonSetManifest());
    ds.spec.updateStrategy.rollingUpdate = { rollingUpdateType: 'InPlaceIfPossible', maxSurge: 1, maxUnavailable: 0 };
    const res = await post(VALIDATE_PATH, admissionReview(ds));
    const response = res.json().response;
    assert.equal(res.statusCode, 200);
    assert.equal(response.allowed, false);
    assert.equal(response.status.code, 422);
    assert.equal(response.status.reason, 'Invalid');
    assert.equal(
      response.status.message,
      'DaemonSet.apps.kruise.io "x" is invalid: spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "1": must be 0 for InPlaceIfPossible type',
    );
    assert.deepEqual(response.status.details.causes, [
      {
        reason: 'FieldValueInvalid',
        message: 'Invalid value: "1": must be 0 for InPlaceIfPossible type',
        field: 'spec.updateStrategy.rollingUpdate.maxSurge',
      },
    ]);
  });

  test('any content type is read as JSON', async () => {
    const res = await post(VALIDATE_PATH, admissionReview(defaultDaemonSet(daemonSetManifest())), {
      'content-type': 'text/plain',
    });
    assert.equal(res.json().response.allowed, true);
  });

  const bad: { name: string; payload: string; status: number; message: string }[] = [
    { name: 'not JSON', payload: '{"apiVersion":', status: 400, message: 'request body is not valid JSON' },
    { name: 'empty body', payload: '', status: 400, message: 'request body is empty' },
    { name: 'not an AdmissionReview', payload: '{"kind":"Pod"}', status: 400, message: 'expected kind AdmissionReview, got "Pod"' },
    { name: 'JSON null', payload: 'null', status: 400, message: 'request body is not a JSON object' },
  ]; // prettier-ignore
  for (const c of bad)
    test(`${c.name} → ${c.status} with a message, no stack`, async () => {
      const res = await post(MUTATE_PATH, c.payload);
      assert.equal(res.statusCode, c.status);
      assert.deepEqual(res.json(), { message: c.message });
    });

  test('unknown kind or version → errored review (code 400), not a crash', async () => {
    const res = await post(VALIDATE_PATH, admissionReview(daemonSetManifest(), { version: 'v9' }));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().response.status.code, 400);
    assert.equal(res.json().response.status.message, 'unsupported version: v9');
  });

  test(`bodies beyond ${BODY_LIMIT} bytes → 413`, async () => {
    const ds: any = daemonSetManifest();
    ds.metadata.annotations = { big: 'x'.repeat(BODY_LIMIT) };
    const res = await post(MUTATE_PATH, admissionReview(ds));
    assert.equal(res.statusCode, 413);
    assert.ok(!res.body.includes('    at '), 'no stack trace');
  });

  test('a body just under the limit is served', async () => {
    const ds: any = daemonSetManifest();
    ds.metadata.annotations = { big: 'x'.repeat(BODY_LIMIT - 4096) };
    const res = await post(MUTATE_PATH, admissionReview(ds));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().response.allowed, true);
  });

  test('unknown path → 404; GET on a webhook path → 404', async () => {
    assert.equal((await post('/mutate-something-else', admissionReview({}))).statusCode, 404);
    assert.equal((await app.inject({ method: 'GET', url: MUTATE_PATH })).statusCode, 404);
  });

  test('keep-alive timeout above the apiserver idle timeout (90 s)', () => {
    assert.ok(KEEP_ALIVE_TIMEOUT_MS >= 90_000);
    assert.equal(app.initialConfig.keepAliveTimeout, KEEP_ALIVE_TIMEOUT_MS);
  });

  test('metrics: requests by webhook, code and verdict; latency histogram by webhook and verdict', async () => {
    const fresh = webhookMetrics();
    const own = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics: fresh });
    try {
      const send = (url: string, payload: unknown) =>
        own.inject({
          method: 'POST',
          url,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        });
      const invalid: any = defaultDaemonSet(daemonSetManifest());
      invalid.spec.minReadySeconds = -1;
      await send(MUTATE_PATH, admissionReview(daemonSetManifest())); // patched
      await send(MUTATE_PATH, admissionReview(defaultDaemonSet(daemonSetManifest()))); // allowed
      await send(VALIDATE_PATH, admissionReview(invalid)); // denied
      await send(VALIDATE_PATH, admissionReview(invalid)); // denied
      await send(VALIDATE_PATH, { kind: 'Nope' }); // errored, 400
      const text = await fresh.registry.metrics();
      const line = (re: RegExp) => text.split('\n').find((l) => re.test(l));
      const value = (re: RegExp) => Number(line(re)?.split(' ').pop());
      assert.equal(
        value(
          /^controller_runtime_webhook_requests_total\{webhook="mutate-apps-kruise-io-daemonset",code="200",verdict="patched"\}/,
        ),
        1,
      );
      assert.equal(
        value(
          /^controller_runtime_webhook_requests_total\{webhook="mutate-apps-kruise-io-daemonset",code="200",verdict="allowed"\}/,
        ),
        1,
      );
      assert.equal(
        value(
          /^controller_runtime_webhook_requests_total\{webhook="validate-apps-kruise-io-daemonset",code="200",verdict="denied"\}/,
        ),
        2,
      );
      assert.equal(
        value(
          /^controller_runtime_webhook_requests_total\{webhook="validate-apps-kruise-io-daemonset",code="400",verdict="errored"\}/,
        ),
        1,
      );
      assert.equal(
        value(
          /^controller_runtime_webhook_latency_seconds_count\{webhook="validate-apps-kruise-io-daemonset",verdict="denied"\}/,
        ),
        2,
      );
      assert.ok(
        line(
          /^controller_runtime_webhook_latency_seconds_bucket\{le="0.005",webhook="mutate-apps-kruise-io-daemonset",verdict="patched"\}/,
        ),
        text,
      );
      assert.equal(
        value(/^controller_runtime_webhook_requests_in_flight\{webhook="validate-apps-kruise-io-daemonset"\}/),
        0,
      );
    } finally {
      await own.close();
    }
  });
});
