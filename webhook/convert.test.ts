// The conversion webhook (CONVERT_PATH) through `inject`: ConversionReview in, ConversionReview out with the uid,
// the objects in order and Success; one bad object fails the review with its index; malformed reviews get a
// Failure when their uid is known, else a 400 Status; the body limit; the pool for large reviews; metrics.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import {
  API_VERSION,
  API_VERSION_V1BETA1,
  CONVERT_PATH,
  PROGRESSIVE_CREATE_POD_ANNOTATION,
} from '../src/api/constants.ts';
import { convertDaemonSet } from '../src/api/conversion.ts';
import type { JsonObject } from '../src/api/defaults.ts';
import { daemonSetManifest } from '../src/api/testing/review-fixtures.ts';
import { sleep, until } from '../src/testing/wait.ts';
import { BODY_LIMIT, buildWebhookApp, CONVERT_ON_MAIN_THREAD_MAX_BYTES, RETRY_AFTER_SECONDS } from './app.ts';
import { handleConversionText } from './conversion.ts';
import { webhookMetrics } from './metrics.ts';
import type { AdmissionPool } from './pool.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const metrics = webhookMetrics();
const app = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics });
after(() => app.close());

const post = (payload: unknown, url = CONVERT_PATH) =>
  app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json' },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });

function conversionReview(
  objects: unknown,
  desiredAPIVersion: unknown = API_VERSION_V1BETA1,
  o: { uid?: unknown; apiVersion?: string } = {},
): JsonObject {
  return {
    apiVersion: o.apiVersion ?? 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid: 'uid' in o ? o.uid : 'c-1', desiredAPIVersion, objects },
  };
}

/** A v1alpha1 DaemonSet with what v1beta1 says differently: Surging, the progressive annotation, a hash. */
function alpha(name: string): JsonObject {
  const ds: any = daemonSetManifest(name);
  ds.metadata.annotations = { [PROGRESSIVE_CREATE_POD_ANNOTATION]: 'true' };
  ds.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Surging', maxSurge: 1 } };
  ds.status = { currentNumberScheduled: 1, numberMisscheduled: 0, desiredNumberScheduled: 1, numberReady: 1, updatedNumberScheduled: 1, daemonSetHash: 'h1' }; // prettier-ignore
  return ds;
}

describe('conversion webhook', () => {
  test('a forged stash: the review succeeds, the value is left out, and the outcome says so for the log', () => {
    const forged: any = daemonSetManifest('forged');
    forged.metadata.annotations = {
      'conversion.advanced-daemonset.io/v1beta1': JSON.stringify({
        fields: [{ path: ['spec', 'updateStrategy', 'rollingUpdate', 'rollingUpdateType'], value: 'Evil' }],
      }),
    };
    forged.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: {} };
    const outcome = handleConversionText(JSON.stringify(conversionReview([forged])));
    assert.equal(outcome.verdict, 'converted');
    const [out] = JSON.parse(outcome.text).response.convertedObjects;
    assert.equal(out.spec.updateStrategy.rollingUpdate.rollingUpdateType, undefined, 'not restored');
    assert.deepEqual(outcome.stashWarnings, [
      {
        object: 'ns/forged',
        annotation: 'conversion.advanced-daemonset.io/v1beta1',
        field: 'spec.updateStrategy.rollingUpdate.rollingUpdateType',
        message: 'must be one of Standard, InPlaceIfPossible, not "Evil"',
      },
    ]);
  });

  test('v1alpha1 -> v1beta1: uid, apiVersion, objects in order, Success', async () => {
    const objects = [alpha('a'), alpha('b'), convertDaemonSet(alpha('c'), API_VERSION_V1BETA1)];
    const res = await post(conversionReview(objects));
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /application\/json/);
    const body = res.json();
    assert.equal(body.apiVersion, 'apiextensions.k8s.io/v1');
    assert.equal(body.kind, 'ConversionReview');
    assert.equal(body.request, undefined);
    assert.equal(body.response.uid, 'c-1');
    assert.deepEqual(body.response.result, { metadata: {}, status: 'Success' });
    const converted = body.response.convertedObjects;
    assert.deepEqual(
      converted.map((o: any) => [o.apiVersion, o.metadata.name]),
      [
        [API_VERSION_V1BETA1, 'a'],
        [API_VERSION_V1BETA1, 'b'],
        [API_VERSION_V1BETA1, 'c'],
      ],
    );
    assert.deepEqual(converted[0].spec.scaleStrategy, { partitionedScaling: true });
    assert.equal(converted[0].spec.updateStrategy.rollingUpdate.rollingUpdateType, 'Standard');
    assert.equal(converted[0].status.updateRevision, 'h1');
    // And back: the very objects that were sent.
    const back = (await post(conversionReview(converted, API_VERSION))).json();
    assert.deepEqual(back.response.convertedObjects, [alpha('a'), alpha('b'), alpha('c')]);
  });

  test('a ConversionReview of apiextensions.k8s.io/v1beta1 is answered in that version', async () => {
    const res = await post(conversionReview([alpha('a')], API_VERSION_V1BETA1, { apiVersion: 'apiextensions.k8s.io/v1beta1' }));
    assert.equal(res.json().apiVersion, 'apiextensions.k8s.io/v1beta1');
    assert.equal(res.json().response.result.status, 'Success');
  }); // prettier-ignore

  test('no objects: Success with none', async () => {
    const body = (await post(conversionReview([]))).json();
    assert.deepEqual(body.response, { uid: 'c-1', convertedObjects: [], result: { metadata: {}, status: 'Success' } });
  });

  test('one bad object fails the review with its index, name and reason', async () => {
    const bad: any = alpha('bad');
    bad.spec.updateStrategy.rollingUpdate = 'Surging';
    const res = await post(conversionReview([alpha('a'), bad, alpha('c')]));
    assert.equal(res.statusCode, 200);
    const response = res.json().response;
    assert.equal(response.uid, 'c-1');
    assert.equal(response.convertedObjects, undefined);
    assert.equal(response.result.status, 'Failure');
    assert.equal(
      response.result.message,
      'request.objects[1] (ns/bad): spec.updateStrategy.rollingUpdate: must be an object, not "Surging"',
    );
  });

  const failures: { name: string; review: unknown; message: RegExp }[] = [
    { name: 'unknown desiredAPIVersion', review: conversionReview([alpha('a')], 'apps.kruise.io/v2'), message: /request\.desiredAPIVersion: Unsupported value: "apps.kruise.io\/v2"/ },
    { name: 'desiredAPIVersion null', review: conversionReview([alpha('a')], null), message: /Unsupported value: null/ },
    { name: 'desiredAPIVersion missing', review: { ...conversionReview([]), request: { uid: 'c-1', objects: [] } }, message: /Unsupported value: undefined/ },
    { name: 'objects not an array', review: conversionReview({ a: 1 }), message: /request\.objects must be an array, not object/ },
    { name: 'objects missing', review: conversionReview(undefined), message: /request\.objects must be an array, not undefined/ },
    { name: 'an object of another kind', review: conversionReview([{ ...alpha('a'), kind: 'Deployment' }]), message: /^request\.objects\[0\] \(ns\/a\): kind: Unsupported value: "Deployment"/ },
    { name: 'an object that is no object', review: conversionReview([alpha('a'), 7]), message: /^request\.objects\[1\]: the object must be a JSON object, not integer/ },
    { name: 'an object nested too deep', review: conversionReview([{ ...alpha('a'), spec: deep(150) }]), message: /^request\.objects\[0\] \(ns\/a\): spec\.a\.a.*must not be nested more than 100 levels/ },
    { name: 'kind not ConversionReview, uid known', review: { ...conversionReview([]), kind: 'AdmissionReview' }, message: /expected kind ConversionReview, got "AdmissionReview"/ },
    { name: 'unknown ConversionReview apiVersion, uid known', review: { ...conversionReview([]), apiVersion: 'apiextensions.k8s.io/v2' }, message: /unsupported ConversionReview apiVersion "apiextensions.k8s.io\/v2"/ },
  ]; // prettier-ignore
  for (const row of failures) {
    test(`Failure with the uid: ${row.name}`, async () => {
      const res = await post(row.review);
      assert.equal(res.statusCode, 200);
      const body = res.json();
      assert.equal(body.kind, 'ConversionReview');
      assert.match(body.apiVersion, /^apiextensions\.k8s\.io\/v1(beta1)?$/);
      assert.equal(body.response.uid, 'c-1');
      assert.equal(body.response.result.status, 'Failure');
      assert.match(body.response.result.message, row.message);
    });
  }

  const badRequests: { name: string; body: string; message: RegExp }[] = [
    { name: 'empty body', body: '', message: /request body is empty/ },
    { name: 'not JSON', body: '{"kind":', message: /not valid JSON/ },
    { name: 'JSON but not an object', body: '[1]', message: /not a JSON object, but array/ },
    { name: 'no request', body: JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview' }), message: /no request/ },
    { name: 'request null', body: JSON.stringify({ ...conversionReview([]), request: null }), message: /no request/ },
    { name: 'no uid', body: JSON.stringify(conversionReview([], API_VERSION, { uid: undefined })), message: /no request\.uid/ },
    { name: 'uid a number', body: JSON.stringify(conversionReview([], API_VERSION, { uid: 5 })), message: /no request\.uid/ },
    { name: 'another kind without a uid', body: JSON.stringify({ kind: 'Nope' }), message: /expected kind ConversionReview, got "Nope"/ },
  ]; // prettier-ignore
  for (const row of badRequests) {
    test(`400 with a Status: ${row.name}`, async () => {
      const res = await post(row.body);
      assert.equal(res.statusCode, 400);
      const status = res.json();
      assert.equal(status.kind, 'Status');
      assert.equal(status.status, 'Failure');
      assert.equal(status.code, 400);
      assert.equal(status.reason, 'BadRequest');
      assert.match(status.message, row.message);
    });
  }

  test('a large review (converted in the admission pool) gets the answer the main thread would give', async () => {
    const objects = Array.from({ length: 40 }, (_, i) => {
      const ds: any = alpha(`big-${i}`);
      ds.metadata.annotations.padding = 'x'.repeat(4096);
      return ds;
    });
    const text = JSON.stringify(conversionReview(objects));
    assert.ok(Buffer.byteLength(text) >= CONVERT_ON_MAIN_THREAD_MAX_BYTES);
    const res = await post(text);
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, handleConversionText(text).text);
    assert.equal(res.json().response.convertedObjects.length, 40);
    // A bad object in a large review: the same Failure.
    const bad = structuredClone(objects);
    bad[39].spec = 'x';
    const badText = JSON.stringify(conversionReview(bad));
    const failed = await post(badText);
    assert.equal(failed.body, handleConversionText(badText).text);
    assert.match(
      failed.json().response.result.message,
      /^request\.objects\[39\] \(ns\/big-39\): spec: must be an object/,
    );
  });

  test('a review that makes the pool thread exceed its heap: 413 naming the limit, and the next is served', async () => {
    const own = buildWebhookApp({ logger: pino({ level: 'silent' }), pool: { threads: 1, heapMiB: 32 } });
    try {
      const hostile: any = alpha('hostile');
      // A million empty containers: about 76 MiB of heap once parsed.
      hostile.spec.template.spec.containers = Array.from({ length: 1_100_000 }, () => ({}));
      const text = JSON.stringify(conversionReview([hostile]));
      assert.ok(text.length < BODY_LIMIT);
      const send = (payload: string) =>
        own.inject({ method: 'POST', url: CONVERT_PATH, headers: { 'content-type': 'application/json' }, payload });
      const refused = await send(text);
      assert.equal(refused.statusCode, 413);
      assert.equal(refused.json().kind, 'Status');
      assert.match(refused.json().message, /more memory than the webhook's limit of 32 MiB/);
      const next = await send(JSON.stringify(conversionReview([alpha('a')])));
      assert.equal(next.json().response.result.status, 'Success');
    } finally {
      await own.close();
    }
  });

  test('a review of the largest body is served; a larger one gets 413', async () => {
    const ds: any = alpha('max');
    ds.metadata.annotations.padding = 'x'.repeat(BODY_LIMIT - 8192);
    const res = await post(conversionReview([ds]));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().response.result.status, 'Success');
    ds.metadata.annotations.padding = 'x'.repeat(BODY_LIMIT);
    const over = await post(conversionReview([ds]));
    assert.equal(over.statusCode, 413);
    assert.equal(over.json().reason, 'RequestEntityTooLarge');
  });

  test('counts against its own in-flight cap, once its body is in: 429 with Retry-After beyond it', async () => {
    // A pool whose conversions are answered only when the test says so: they are being handled until then.
    const waiting: (() => void)[] = [];
    const holding: AdmissionPool = {
      settings: { threads: 1, heapMiB: 64 },
      review: async () => 'full',
      convert: (raw) => new Promise((resolve) => waiting.push(() => resolve(handleConversionText(raw.toString('utf8'))))),
      threads: () => 0,
      close: async () => {},
    };
    const own = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics: webhookMetrics(), limits: { maxInFlight: 1 }, admissionPool: holding });
    try {
      const big: any = alpha('big');
      big.metadata.annotations.pad = 'p'.repeat(CONVERT_ON_MAIN_THREAD_MAX_BYTES);
      const send = (payload: string | PassThrough) => own.inject({ method: 'POST', url: CONVERT_PATH, headers: { 'content-type': 'application/json' }, payload });
      const small = JSON.stringify(conversionReview([alpha('a')]));
      // A body still arriving holds no slot.
      const stream = new PassThrough();
      const arriving = send(stream);
      stream.write(small.slice(0, 10));
      await sleep(50);
      assert.equal((await send(small)).statusCode, 200, 'served beside a body still arriving');
      // One being converted (in the pool) holds the only slot.
      const held = send(JSON.stringify(conversionReview([big])));
      await until('the conversion in the pool', () => waiting.length === 1, 5_000);
      const refused = await send(small);
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.headers['retry-after'], String(RETRY_AFTER_SECONDS));
      assert.match(refused.json().message, /too many requests: 1 conversion requests are in progress/);
      waiting.shift()!();
      assert.equal((await held).json().response.result.status, 'Success');
      stream.end(small.slice(10));
      assert.equal((await arriving).json().response.result.status, 'Success');
    } finally {
      await own.close();
    }
  }); // prettier-ignore

  test('metrics: requests by verdict (webhook="convert"), objects by versions and result', async () => {
    const fresh = webhookMetrics();
    const own = buildWebhookApp({ logger: pino({ level: 'silent' }), metrics: fresh });
    try {
      const send = (payload: unknown) =>
        own.inject({ method: 'POST', url: CONVERT_PATH, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
      await send(conversionReview([alpha('a'), alpha('b')])); // converted: 2 v1alpha1 -> v1beta1
      await send(conversionReview([convertDaemonSet(alpha('c'), API_VERSION_V1BETA1)], API_VERSION)); // converted
      await send(conversionReview([alpha('a'), { ...alpha('b'), spec: 1 }])); // failed at [1]
      await send({ kind: 'Nope' }); // errored, 400
      const text = await fresh.registry.metrics();
      const value = (re: RegExp) => Number(text.split('\n').find((l) => re.test(l))?.split(' ').pop());
      assert.equal(value(/^controller_runtime_webhook_requests_total\{webhook="convert",code="200",verdict="converted"\}/), 2);
      assert.equal(value(/^controller_runtime_webhook_requests_total\{webhook="convert",code="200",verdict="failed"\}/), 1);
      assert.equal(value(/^controller_runtime_webhook_requests_total\{webhook="convert",code="400",verdict="errored"\}/), 1);
      assert.equal(value(/^controller_runtime_webhook_latency_seconds_count\{webhook="convert",verdict="converted"\}/), 2);
      assert.equal(value(/^controller_runtime_conversion_webhook_objects_total\{from_version="v1alpha1",to_version="v1beta1",result="success"\}/), 2);
      assert.equal(value(/^controller_runtime_conversion_webhook_objects_total\{from_version="v1beta1",to_version="v1alpha1",result="success"\}/), 1);
      assert.equal(value(/^controller_runtime_conversion_webhook_objects_total\{from_version="v1alpha1",to_version="v1beta1",result="failure"\}/), 1);
      assert.equal(value(/^controller_runtime_conversion_webhook_panics_total/), 0);
      assert.equal(value(/^controller_runtime_webhook_requests_in_flight\{webhook="convert"\}/), 0);
    } finally {
      await own.close();
    }
  }); // prettier-ignore
});

function deep(depth: number): JsonObject {
  let v: JsonObject = { leaf: 1 };
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}
