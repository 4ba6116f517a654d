// The Fastify app through `inject` (no sockets): routing, body parsing and limits, the review round trip,
// metrics by path and verdict.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fastJsonPatch from 'fast-json-patch';
import { pino } from 'pino';
import { CONVERT_PATH, MUTATE_PATH, VALIDATE_PATH } from '../src/api/constants.ts';
import { defaultDaemonSet } from '../src/api/defaults.ts';
import { PassThrough } from 'node:stream';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ADMISSION_ON_MAIN_THREAD_MAX_BYTES,
  BODY_LIMIT,
  buildWebhookApp,
  KEEP_ALIVE_TIMEOUT_MS,
  RETRY_AFTER_SECONDS,
} from './app.ts';
import type { AdmissionPool } from './pool.ts';
import { MAX_PATCH_BYTES } from './limits.ts';
import { webhookMetrics } from './metrics.ts';
import {
  admissionReview,
  daemonSetManifest,
  reviewOfSize,
  settingManifest,
  settingReview,
} from '../src/api/testing/review-fixtures.ts';
import { SETTING_MUTATE_PATH, SETTING_VALIDATE_PATH } from '../src/api/setting.ts';
import { defaultDaemonSetSetting } from '../src/api/setting-defaults.ts';
import { sleep, until } from '../src/testing/wait.ts';

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
    // A metav1.Status, so the apiserver's client shows this message rather than a generic one.
    const status = res.json();
    assert.equal(status.kind, 'Status');
    assert.equal(status.code, 413);
    assert.equal(status.reason, 'RequestEntityTooLarge');
    assert.match(status.message, /request body of \d+ bytes is larger than the webhook's limit of 3\.5 MiB/);
  });

  test('the body limit is two etcd-sized objects (2 x 1.5 MiB) plus an envelope: 3.5 MiB', () => {
    assert.equal(BODY_LIMIT, 3.5 * 1024 * 1024);
  });

  test('a body just over the limit sent without a content-length (chunked) → 413 too', async () => {
    const body = new PassThrough();
    const pending = app.inject({ method: 'POST', url: MUTATE_PATH, headers: { 'content-type': 'application/json' }, payload: body });
    const chunk = 'x'.repeat(256 * 1024);
    for (let sent = 0; sent <= BODY_LIMIT; sent += chunk.length) body.write(chunk);
    body.end();
    const res = await pending;
    assert.equal(res.statusCode, 413);
  }); // prettier-ignore

  test('a body just under the limit is served', async () => {
    const ds: any = daemonSetManifest();
    ds.metadata.annotations = { big: 'x'.repeat(BODY_LIMIT - 4096) };
    const res = await post(MUTATE_PATH, admissionReview(ds));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().response.allowed, true);
  });

  const manyContainers = (n: number) => {
    const ds: any = daemonSetManifest();
    ds.spec.template.spec.containers = Array.from({ length: n }, (_, i) => ({ name: `c${i}`, image: 'x' }));
    return ds;
  };

  test(`a defaulting patch beyond ${MAX_PATCH_BYTES} bytes → refused review (allowed false, code 400, uid), no patch`, async () => {
    const res = await post(MUTATE_PATH, admissionReview(manyContainers(5_000), { uid: 'huge' }));
    assert.equal(res.statusCode, 200);
    assert.ok(res.body.length < 4096, `answer of ${res.body.length} bytes`);
    const response = res.json().response;
    assert.equal(response.uid, 'huge');
    assert.equal(response.allowed, false);
    assert.equal(response.patch, undefined);
    assert.equal(response.status.code, 400);
    assert.match(response.status.message, /defaulting patch .* larger than the webhook's limit of 1 MiB/);
  }); // prettier-ignore

  test('a large patch under the limit is still served whole', async () => {
    const ds = manyContainers(1_500);
    const res = await post(MUTATE_PATH, admissionReview(ds));
    const response = res.json().response;
    assert.equal(response.allowed, true);
    const patch = Buffer.from(response.patch, 'base64');
    assert.ok(patch.length > 256 * 1024 && patch.length <= MAX_PATCH_BYTES, `patch of ${patch.length} bytes`);
    assert.deepEqual(fastJsonPatch.applyPatch(structuredClone(ds), JSON.parse(patch.toString())).newDocument, defaultDaemonSet(ds));
  }); // prettier-ignore

  test('beyond maxInFlight requests being handled: 429 with Retry-After at once, as a Status; bodies still arriving hold no slot; conversions have their own', async () => {
    const fresh = webhookMetrics();
    // A pool whose reviews are answered only when the test says so: they are being handled until then.
    const waiting: (() => void)[] = [];
    const holding: AdmissionPool = {
      settings: { threads: 1, heapMiB: 64 },
      review: () =>
        new Promise((resolve) =>
          waiting.push(() => resolve({ httpStatus: 200, body: { message: 'held' }, verdict: 'allowed', text: '{"held":true}' })),
        ),
      convert: async () => 'full',
      threads: () => 0,
      close: async () => {},
    };
    const own = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics: fresh, limits: { maxInFlight: 2 }, admissionPool: holding });
    try {
      const body = JSON.stringify(admissionReview(daemonSetManifest(), { uid: 'small' }));
      const send = (url: string, payload: string | PassThrough = body) =>
        own.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload });
      // Eight requests whose bodies are still arriving: no slot is taken, a review is served beside them.
      const streams = Array.from({ length: 8 }, () => new PassThrough());
      const slow = streams.map((p) => send(MUTATE_PATH, p));
      for (const st of streams) st.write(body.slice(0, 10));
      await sleep(50);
      assert.equal((await send(VALIDATE_PATH)).statusCode, 200, 'served while eight bodies are still arriving');
      // Two large reviews being handled (in the pool) hold both slots.
      const big = reviewOfSize(ADMISSION_ON_MAIN_THREAD_MAX_BYTES, 'big');
      const held = [send(MUTATE_PATH, big), send(VALIDATE_PATH, big)];
      await until('both reviews in the pool', () => waiting.length === 2, 5_000);
      const refused = await send(VALIDATE_PATH);
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.headers['retry-after'], String(RETRY_AFTER_SECONDS));
      const status = refused.json();
      assert.equal(status.kind, 'Status');
      assert.equal(status.reason, 'TooManyRequests');
      assert.deepEqual(status.details, { retryAfterSeconds: RETRY_AFTER_SECONDS });
      assert.match(status.message, /too many requests: 2 admission requests are in progress/);
      // Conversions have a cap of their own: a small one is served while admission is full.
      const review = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'c', desiredAPIVersion: 'apps.kruise.io/v1beta1', objects: [] } };
      assert.equal((await send(CONVERT_PATH, JSON.stringify(review))).statusCode, 200, 'conversion served');
      // Health of other paths is not counted: a 404 is still a 404.
      assert.equal((await own.inject({ method: 'GET', url: '/nope' })).statusCode, 404);
      for (const release of waiting.splice(0)) release();
      for (const r of await Promise.all(held)) assert.equal(r.body, '{"held":true}');
      assert.equal((await send(VALIDATE_PATH)).statusCode, 200, 'slots freed once the responses closed');
      // Their bodies complete one after another: each is served (at once, they would be 8 requests in progress).
      for (const [i, st] of streams.entries()) {
        st.end(body.slice(10));
        const r = await slow[i]!;
        assert.equal(r.json().response?.uid, 'small', r.body);
      }
      const text = await fresh.registry.metrics();
      assert.match(text, /controller_runtime_webhook_requests_total\{webhook="validate-apps-kruise-io-daemonset",code="429",verdict="errored"\} 1/);
      assert.match(text, /controller_runtime_webhook_requests_in_flight\{webhook="validate-apps-kruise-io-daemonset"\} 0/);
      assert.match(text, /controller_runtime_webhook_requests_in_flight\{webhook="mutate-apps-kruise-io-daemonset"\} 0/);
    } finally {
      await own.close();
    }
  }); // prettier-ignore

  test('a full admission pool queue (maxPoolQueue): 429 with Retry-After that names the queue; small reviews still served', async () => {
    const fresh = webhookMetrics();
    const full: AdmissionPool = {
      settings: { threads: 1, heapMiB: 64 },
      review: async () => 'full',
      convert: async () => 'full',
      threads: () => 0,
      close: async () => {},
    };
    const own = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics: fresh, limits: { maxPoolQueue: 3 }, admissionPool: full });
    try {
      const send = (url: string, payload: string) => own.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload });
      const refused = await send(MUTATE_PATH, reviewOfSize(ADMISSION_ON_MAIN_THREAD_MAX_BYTES, 'big'));
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.headers['retry-after'], String(RETRY_AFTER_SECONDS));
      const status = refused.json();
      assert.equal(status.reason, 'TooManyRequests');
      assert.match(status.message, /too many requests: 3 large admission or conversion requests are waiting for an admission thread/);
      // Its body was read: the connection is kept.
      assert.notEqual(refused.headers.connection, 'close');
      const small = await send(MUTATE_PATH, JSON.stringify(admissionReview(daemonSetManifest(), { uid: 'small' })));
      assert.equal(small.statusCode, 200);
      assert.equal(small.json().response?.uid, 'small');
    } finally {
      await own.close();
    }
  }); // prettier-ignore

  test('beyond maxBytesInFlight request bytes held, in all or from one client: 429 before the body is read', async () => {
    const KiB = 1024;
    const fresh = webhookMetrics();
    const own = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics: fresh, limits: { maxBytesInFlight: 1536 * KiB, maxBytesInFlightPerClient: 1024 * KiB } }); // prettier-ignore
    try {
      const small = JSON.stringify(admissionReview(daemonSetManifest(), { uid: 'small' }));
      // A review padded to 600 KiB with spaces, declared by its Content-Length, sent in two parts.
      const large = small + ' '.repeat(600 * KiB - small.length);
      // Over real connections, from distinct loopback addresses: an injected request is dispatched only once its
      // whole payload is there.
      await own.listen({ host: '127.0.0.1', port: 0 });
      const port = (own.server.address() as AddressInfo).port;
      const started = (from: string, text = large) => {
        const req = httpRequest({ host: '127.0.0.1', port, localAddress: from, method: 'POST', path: VALIDATE_PATH, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } }); // prettier-ignore
        const reply = new Promise<{ statusCode: number; headers: IncomingHttpHeaders; body: string }>(
          (resolve, reject) => {
            req.on('response', (res) => {
              let body = '';
              res.setEncoding('utf8').on('data', (c: string) => (body += c));
              res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body }));
            });
            req.on('error', reject);
          },
        );
        req.write(text.slice(0, 10));
        return { reply, end: () => req.end(text.slice(10)) };
      };
      const send = async (from: string, text = large) => {
        const r = started(from, text);
        r.end();
        return r.reply;
      };
      const a1 = started('127.0.0.11');
      const b1 = started('127.0.0.12');
      await sleep(100);
      // 127.0.0.11 holds 600 KiB of its 1 MiB: a second such request from it is refused, from 127.0.0.13 too (the
      // total would pass 1.5 MiB), but a small one from 127.0.0.13 fits.
      for (const [from, why] of [
        ['127.0.0.11', 'per client'],
        ['127.0.0.13', 'in all'],
      ] as const) {
        const refused = await send(from);
        assert.equal(refused.statusCode, 429, why);
        assert.equal(refused.headers['retry-after'], String(RETRY_AFTER_SECONDS));
        assert.match(JSON.parse(refused.body).message, /too many request bytes: 600 KiB more would exceed the 1.5 MiB the webhook holds at once \(1 MiB per client\)/); // prettier-ignore
      }
      assert.equal((await send('127.0.0.13', small)).statusCode, 200, 'a small review fits');
      a1.end();
      b1.end();
      for (const r of await Promise.all([a1.reply, b1.reply]))
        assert.equal(JSON.parse(r.body).response?.uid, 'small', r.body);
      // Released once the responses closed.
      const later = await send('127.0.0.13');
      assert.equal(JSON.parse(later.body).response?.uid, 'small', 'served once the bytes were released');
      const text = await fresh.registry.metrics();
      assert.match(
        text,
        /controller_runtime_webhook_requests_total\{webhook="validate-apps-kruise-io-daemonset",code="429",verdict="errored"\} 2/,
      );
      assert.match(
        text,
        /controller_runtime_webhook_requests_in_flight\{webhook="validate-apps-kruise-io-daemonset"\} 0/,
      );
    } finally {
      await own.close();
    }
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

describe('webhook app: the DaemonSetSetting webhooks, on the same server and limits', () => {
  test('mutate: the reference defaults as a JSONPatch, uid echoed', async () => {
    const res = await post(SETTING_MUTATE_PATH, settingReview(settingManifest(), { uid: 's-1' }));
    assert.equal(res.statusCode, 200);
    const response = res.json().response;
    assert.equal(response.uid, 's-1');
    assert.equal(response.patchType, 'JSONPatch');
    const patched = fastJsonPatch.applyPatch(settingManifest(), decodePatch(response)).newDocument;
    assert.deepEqual(patched, defaultDaemonSetSetting(settingManifest()));
  });

  test('validate: 422 Invalid with field paths, as the apiserver words it', async () => {
    const s: any = defaultDaemonSetSetting(settingManifest());
    s.spec.containers[0].resources = { requests: { cpu: '2' }, limits: { cpu: '1' } };
    const res = await post(`${SETTING_VALIDATE_PATH}?timeout=10s`, settingReview(s));
    const response = res.json().response;
    assert.equal(response.allowed, false);
    assert.equal(response.status.code, 422);
    assert.equal(
      response.status.message,
      'DaemonSetSetting.advanced-daemonset.io "x" is invalid: spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
    );
  });

  test('a DaemonSet review sent to a setting path is an errored review, not a crash (and the reverse)', async () => {
    const wrong = await post(SETTING_VALIDATE_PATH, admissionReview(daemonSetManifest()));
    assert.equal(wrong.json().response.status.message, 'unsupported kind: apps.kruise.io/v1alpha1, Kind=DaemonSet');
    const reverse = await post(VALIDATE_PATH, settingReview(settingManifest()));
    assert.equal(reverse.json().response.status.code, 400);
  });

  const bad: { name: string; payload: string; message: string }[] = [
    { name: 'not JSON', payload: '{"apiVersion":', message: 'request body is not valid JSON' },
    { name: 'empty body', payload: '', message: 'request body is empty' },
    { name: 'not an AdmissionReview', payload: '{"kind":"Pod"}', message: 'expected kind AdmissionReview, got "Pod"' },
  ]; // prettier-ignore
  for (const path of [SETTING_MUTATE_PATH, SETTING_VALIDATE_PATH])
    for (const c of bad)
      test(`${path}: ${c.name} → 400 with a message, no stack`, async () => {
        const res = await post(path, c.payload);
        assert.equal(res.statusCode, 400);
        assert.deepEqual(res.json(), { message: c.message });
      });

  test(`bodies beyond ${BODY_LIMIT} bytes → 413, as a Status`, async () => {
    const s: any = settingManifest();
    s.metadata.annotations = { big: 'x'.repeat(BODY_LIMIT) };
    const res = await post(SETTING_MUTATE_PATH, settingReview(s));
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().reason, 'RequestEntityTooLarge');
  });

  test('a large review is handled in the admission pool, both paths', async () => {
    const s: any = defaultDaemonSetSetting(settingManifest());
    s.metadata.annotations = { big: 'x'.repeat(ADMISSION_ON_MAIN_THREAD_MAX_BYTES * 2) };
    const allowed = await post(SETTING_MUTATE_PATH, settingReview(s, { uid: 'pooled' }));
    assert.deepEqual(allowed.json().response, { uid: 'pooled', allowed: true });
    s.spec.reference.kind = 'Deployment';
    const denied = await post(SETTING_VALIDATE_PATH, settingReview(s, { uid: 'pooled-2' }));
    assert.equal(denied.json().response.uid, 'pooled-2');
    assert.match(denied.json().response.status.message, /spec\.reference\.kind: Unsupported value: "Deployment"/);
  });

  test('metrics: the setting paths have their own webhook label', async () => {
    const fresh = webhookMetrics();
    const own = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics: fresh });
    try {
      const send = (url: string, payload: unknown) =>
        own.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
      await send(SETTING_MUTATE_PATH, settingReview(settingManifest()));
      await send(SETTING_VALIDATE_PATH, settingReview(settingManifest()));
      const text = await fresh.registry.metrics();
      assert.match(text, /^controller_runtime_webhook_requests_total\{webhook="mutate-advanced-daemonset-io-daemonsetsetting",code="200",verdict="patched"\} 1$/m);
      assert.match(text, /^controller_runtime_webhook_requests_total\{webhook="validate-advanced-daemonset-io-daemonsetsetting",code="200",verdict="allowed"\} 1$/m);
      assert.match(text, /^controller_runtime_webhook_requests_in_flight\{webhook="validate-advanced-daemonset-io-daemonsetsetting"\} 0$/m);
    } finally {
      await own.close();
    }
  }); // prettier-ignore
});
