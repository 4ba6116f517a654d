// handleAdmissionReview and the two handlers as pure functions: every malformed body gets a 400 or an
// errored review, never an exception.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { handleAdmissionReview, mutateDaemonSet, validateDaemonSetAdmission } from './admission.ts';
import fastJsonPatch from 'fast-json-patch';
import { defaultDaemonSet } from '../src/api/defaults.ts';
import { SPEC_UPDATE_FORBIDDEN_V1BETA1 } from '../src/api/validation.ts';
import { admissionReview, daemonSetManifest, daemonSetManifestV1beta1 } from '../src/api/testing/review-fixtures.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

describe('handleAdmissionReview: bodies that are not a usable AdmissionReview', () => {
  const cases: { name: string; body: unknown; message: string }[] = [
    { name: 'an array', body: [1], message: 'request body is not a JSON object' },
    { name: 'a string', body: 'hello', message: 'request body is not a JSON object' },
    { name: 'another kind', body: { apiVersion: 'v1', kind: 'Pod' }, message: 'expected kind AdmissionReview, got "Pod"' },
    {
      name: 'an unknown AdmissionReview version',
      body: { ...admissionReview({}), apiVersion: 'admission.k8s.io/v2' },
      message: 'unsupported AdmissionReview apiVersion "admission.k8s.io/v2"',
    },
    {
      name: 'no request',
      body: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
      message: 'AdmissionReview has no request or no request.uid',
    },
    {
      name: 'no kind in the request',
      body: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u', operation: 'CREATE' } },
      message: 'AdmissionReview request has no kind or operation',
    },
    {
      name: 'an operation the apiserver never sends',
      body: { ...admissionReview(daemonSetManifest()), request: { ...(admissionReview(daemonSetManifest()).request as object), operation: 'EXPLODE' } },
      message: 'unknown request.operation "EXPLODE": expected one of CREATE, UPDATE, DELETE, CONNECT',
    },
  ]; // prettier-ignore
  for (const c of cases)
    test(`${c.name} → 400`, () => {
      const out = handleAdmissionReview(c.body, mutateDaemonSet);
      assert.equal(out.httpStatus, 400);
      assert.deepEqual(out.body, { message: c.message });
      assert.equal(out.verdict, 'errored');
    });
});

describe('handleAdmissionReview: reviews the webhook cannot handle get an errored review, uid echoed', () => {
  const cases: { name: string; body: unknown; code: number; message: string }[] = [
    {
      name: 'unknown version (Kruise: "unsupported version")',
      body: admissionReview({ ...daemonSetManifest(), apiVersion: 'apps.kruise.io/v2' }),
      code: 400,
      message: 'unsupported version: v2',
    },
    {
      name: 'object apiVersion other than request.kind',
      body: admissionReview(daemonSetManifest(), { version: 'v1beta1' }),
      code: 400,
      message: 'request.object apiVersion "apps.kruise.io/v1alpha1" does not match request.kind apps.kruise.io/v1beta1',
    },
    {
      name: 'oldObject apiVersion other than request.kind',
      body: admissionReview(daemonSetManifestV1beta1(), { operation: 'UPDATE', oldObject: daemonSetManifest() }),
      code: 400,
      message:
        'request.oldObject apiVersion "apps.kruise.io/v1alpha1" does not match request.kind apps.kruise.io/v1beta1',
    },
    {
      name: 'unknown kind',
      body: admissionReview({}, { group: 'apps', version: 'v1', kind: 'Deployment' }),
      code: 400,
      message: 'unsupported kind: apps/v1, Kind=Deployment',
    },
    {
      name: 'undecodable object',
      body: admissionReview('not an object'),
      code: 400,
      message: 'request.object is not a JSON object',
    },
    {
      name: 'UPDATE without oldObject',
      body: admissionReview(daemonSetManifest(), { operation: 'UPDATE' }),
      code: 400,
      message: 'request.oldObject is not a JSON object',
    },
  ];
  for (const handler of [mutateDaemonSet, validateDaemonSetAdmission])
    for (const c of cases)
      test(`${c.name} (${handler === mutateDaemonSet ? 'mutate' : 'validate'})`, () => {
        const out = handleAdmissionReview(c.body, handler);
        assert.equal(out.httpStatus, 200);
        const response = (out.body as any).response;
        assert.equal(response.uid, '705ab4f5-6393-11e8-b7cc-42010a800002');
        assert.equal(response.allowed, false);
        assert.deepEqual(response.status, {
          metadata: {},
          status: 'Failure',
          code: c.code,
          reason: 'BadRequest',
          message: c.message,
        });
        assert.equal(out.verdict, 'errored');
      });

  test('a handler that throws gives a 500 errored review without details, and the cause for the log', () => {
    const boom = new Error('boom');
    const out = handleAdmissionReview(admissionReview(daemonSetManifest()), () => {
      throw boom;
    });
    assert.equal(out.httpStatus, 200);
    assert.equal((out.body as any).response.status.code, 500);
    assert.equal((out.body as any).response.status.message, 'internal error while handling the admission request');
    assert.equal(out.cause, boom);
  });
});

describe('handlers', () => {
  test('DELETE and status subresource updates are admitted as they are', () => {
    for (const review of [
      admissionReview(null, { operation: 'DELETE', oldObject: daemonSetManifest() }),
      admissionReview(daemonSetManifest(), {
        operation: 'UPDATE',
        subResource: 'status',
        oldObject: daemonSetManifest(),
      }),
    ])
      for (const handler of [mutateDaemonSet, validateDaemonSetAdmission]) {
        const out = handleAdmissionReview(review, handler);
        assert.deepEqual((out.body as any).response, { uid: '705ab4f5-6393-11e8-b7cc-42010a800002', allowed: true });
      }
  });

  test('validate: denied with 422 Invalid, one cause per field error, verdict denied', () => {
    const ds: any = daemonSetManifest();
    ds.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } };
    ds.spec.minReadySeconds = -1;
    const out = handleAdmissionReview(admissionReview(ds), validateDaemonSetAdmission);
    const status = (out.body as any).response.status;
    assert.equal(out.verdict, 'denied');
    assert.equal(status.code, 422);
    assert.equal(status.reason, 'Invalid');
    assert.equal(
      status.message,
      'DaemonSet.apps.kruise.io "x" is invalid: [spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0, spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "1": may not be set when maxUnavailable is non-zero]',
    );
    assert.deepEqual(
      status.details.causes.map((c: any) => c.field),
      ['spec.minReadySeconds', 'spec.updateStrategy.rollingUpdate.maxSurge'],
    );
  });

  test('validate UPDATE: a selector change is refused', () => {
    const old: any = daemonSetManifest();
    const next: any = daemonSetManifest();
    next.spec.selector.matchExpressions = [{ key: 'tier', operator: 'DoesNotExist' }];
    const out = handleAdmissionReview(
      admissionReview(next, { operation: 'UPDATE', oldObject: old }),
      validateDaemonSetAdmission,
    );
    const response = (out.body as any).response;
    assert.equal(response.allowed, false);
    assert.equal(response.status.code, 422);
    assert.match(response.status.message, /spec: Forbidden: updates to daemonset spec for fields other than/);
  });
});

describe('hostile objects: a 400 naming the field, never an exception', () => {
  const parse = (ds: unknown) => JSON.parse(JSON.stringify(ds));
  const rows: { name: string; text: (ds: any) => string; field: string; message: RegExp }[] = [
    {
      name: 'matchExpressions that is not an array',
      text: (ds) => JSON.stringify({ ...ds, spec: { ...ds.spec, selector: { matchExpressions: { key: 'a' } } } }),
      field: 'spec.selector.matchExpressions',
      message: /spec\.selector\.matchExpressions in body must be of type array: "object"/,
    },
    {
      name: 'a null element in containers',
      text: (ds) => JSON.stringify(ds).replace('"containers":[', '"containers":[null,'),
      field: 'spec.template.spec.containers[0]',
      message: /must be of type object: "null"/,
    },
    {
      name: 'a string where the pod spec is expected',
      text: (ds) => JSON.stringify({ ...ds, spec: { ...ds.spec, template: { spec: 'x' } } }),
      field: 'spec.template.spec',
      message: /spec\.template\.spec in body must be of type object: "string"/,
    },
    {
      name: 'a template nested 5,000 levels deep',
      text: (ds) =>
        JSON.stringify(ds).replace(
          '"containers":[',
          `"extra":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)},"containers":[`,
        ),
      field: `spec.template.spec.extra.${Array(96).fill('a').join('.')}`,
      message: /must not be nested more than 100 levels deep/,
    },
  ];
  for (const handler of [mutateDaemonSet, validateDaemonSetAdmission])
    for (const row of rows)
      test(`${row.name} (${handler === mutateDaemonSet ? 'mutate' : 'validate'})`, () => {
        const object = JSON.parse(row.text(parse(daemonSetManifest())));
        const out = handleAdmissionReview(admissionReview(object), handler);
        assert.equal(out.cause, undefined);
        assert.equal(out.verdict, 'denied');
        const status = (out.body as any).response.status;
        assert.equal(status.code, 400);
        assert.equal(status.reason, 'BadRequest');
        assert.match(status.message, row.message);
        assert.match(status.message, /^DaemonSet\.apps\.kruise\.io "x" is invalid: /);
        assert.equal(status.details.causes[0].field, row.field);
      });

  test('an UPDATE whose stored object is nested too deep is refused, naming oldObject', () => {
    const old = JSON.parse(
      JSON.stringify(daemonSetManifest()).replace(
        '"containers":[',
        `"x":${'['.repeat(500)}${']'.repeat(500)},"containers":[`,
      ),
    );
    const out = handleAdmissionReview(
      admissionReview(daemonSetManifest(), { operation: 'UPDATE', oldObject: old }),
      validateDaemonSetAdmission,
    );
    const status = (out.body as any).response.status;
    assert.equal(status.code, 400);
    assert.match(status.details.causes[0].field, /^oldObject\.spec\.template\.spec\.x\[0\]\[0\]/);
  });

  test('request.kind of the wrong types, or with a throwing toString, is a 400 errored review', () => {
    const review: any = admissionReview(daemonSetManifest());
    review.request.kind = { group: { toString: 1 }, version: 'v1alpha1', kind: 'DaemonSet' };
    review.request.name = { toString: 1 };
    const out = handleAdmissionReview(review, validateDaemonSetAdmission);
    assert.equal(out.cause, undefined);
    assert.equal((out.body as any).response.status.code, 400);
    assert.equal(out.key, 'ns/x');
  });

  test('a deep or huge kind in the envelope is named by its type in the 400', () => {
    const out = handleAdmissionReview(
      JSON.parse(`{"apiVersion":"admission.k8s.io/v1","kind":${'['.repeat(100_000)}${']'.repeat(100_000)}}`),
      mutateDaemonSet,
    );
    assert.equal(out.httpStatus, 400);
    assert.equal(out.message, 'expected kind AdmissionReview, got array');
  });

  test('__proto__ keys are plain data: defaulting is unchanged by them and the patch keeps them', () => {
    const text = JSON.stringify(daemonSetManifest()).replace(
      '"image":"nginx:1.27"',
      '"image":"nginx:1.27","__proto__":{"imagePullPolicy":"Never","resources":{"limits":{"cpu":"1"}}}',
    );
    const plain = handleAdmissionReview(admissionReview(daemonSetManifest()), mutateDaemonSet);
    const hostile = handleAdmissionReview(admissionReview(JSON.parse(text)), mutateDaemonSet);
    const patchOf = (out: any) => JSON.parse(Buffer.from(out.body.response.patch, 'base64').toString());
    assert.deepEqual(patchOf(hostile), patchOf(plain));
    assert.ok(!JSON.stringify(patchOf(hostile)).includes('__proto__'));
    const validated = handleAdmissionReview(admissionReview(JSON.parse(text)), validateDaemonSetAdmission);
    assert.equal(validated.cause, undefined);
  });
});

describe('v1beta1 reviews: defaulting and validation of the version the object is sent in', () => {
  const UID = '705ab4f5-6393-11e8-b7cc-42010a800002';
  const RU = 'spec.updateStrategy.rollingUpdate';
  const SURGING_REFUSED = `${RU}.rollingUpdateType: Unsupported value: "Surging": supported values: "Standard", "InPlaceIfPossible"`;
  const v1beta1 = (edit: (d: any) => void = () => {}): any => {
    const ds: any = daemonSetManifestV1beta1();
    edit(ds);
    return ds;
  };
  const patchOf = (out: any) => JSON.parse(Buffer.from(out.body.response.patch, 'base64').toString());
  const byPath = (ops: any[]) => [...ops].sort((a, b) => a.path.localeCompare(b.path));

  test('the review names v1beta1 (request.kind follows the object)', () => {
    const review: any = admissionReview(v1beta1());
    assert.deepEqual(review.request.kind, { group: 'apps.kruise.io', version: 'v1beta1', kind: 'DaemonSet' });
  });

  test('mutate: the v1beta1 defaults as a JSON patch on the object as sent, which applies', () => {
    const ds = v1beta1((d) => (d.spec.scaleStrategy = { partitionedScaling: true }));
    const out: any = handleAdmissionReview(admissionReview(ds), mutateDaemonSet);
    assert.equal(out.verdict, 'patched');
    assert.equal(out.body.response.uid, UID);
    assert.equal(out.body.response.patchType, 'JSONPatch');
    const patch = patchOf(out);
    assert.deepEqual(
      byPath(patch.filter((op: any) => !op.path.startsWith('/spec/template'))),
      byPath([
        { op: 'add', path: '/spec/burstReplicas', value: 250 },
        {
          op: 'add',
          path: '/spec/updateStrategy',
          value: {
            type: 'RollingUpdate',
            rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0 },
          },
        },
        { op: 'add', path: '/spec/revisionHistoryLimit', value: 10 },
        { op: 'add', path: '/spec/progressDeadlineSeconds', value: 600 },
      ]),
    );
    const patched: any = fastJsonPatch.applyPatch(structuredClone(ds), patch, true).newDocument;
    assert.equal(patched.apiVersion, 'apps.kruise.io/v1beta1');
    assert.deepEqual(patched.spec.scaleStrategy, { partitionedScaling: true });
    assert.deepEqual(patched, defaultDaemonSet(ds, undefined, 'v1beta1'));
  });

  test('mutate: Surging is not rewritten in v1beta1 (the validating webhook refuses it)', () => {
    const ds = v1beta1(
      (d) => (d.spec.updateStrategy = { rollingUpdate: { rollingUpdateType: 'Surging', maxSurge: 1 } }),
    );
    const patch = patchOf(handleAdmissionReview(admissionReview(ds), mutateDaemonSet));
    assert.ok(!patch.some((op: any) => op.path.includes('rollingUpdateType')), JSON.stringify(patch));
    // The same object sent as v1alpha1 is rewritten, as before.
    const asV1alpha1 = patchOf(
      handleAdmissionReview(admissionReview({ ...ds, apiVersion: 'apps.kruise.io/v1alpha1' }), mutateDaemonSet),
    );
    assert.ok(
      asV1alpha1.some(
        (op: any) => op.path === '/spec/updateStrategy/rollingUpdate/rollingUpdateType' && op.value === 'Standard',
      ),
      JSON.stringify(asV1alpha1),
    );
  });

  test('validate: a defaulted v1beta1 object with partitionedScaling and a percent partition is allowed', () => {
    const ds = defaultDaemonSet(
      v1beta1((d) => {
        d.spec.scaleStrategy = { partitionedScaling: true };
        d.spec.updateStrategy = { rollingUpdate: { partition: '30%', rollingUpdateType: 'InPlaceIfPossible' } };
      }),
      undefined,
      'v1beta1',
    );
    const out: any = handleAdmissionReview(admissionReview(ds), validateDaemonSetAdmission);
    assert.deepEqual(out.body.response, { uid: UID, allowed: true });
  });

  const refusals: { name: string; edit: (d: any) => void; fields: string[]; message: string }[] = [
    {
      name: "Surging, with Kruise's v1beta1 list of types",
      edit: (d) => (d.spec.updateStrategy.rollingUpdate.rollingUpdateType = 'Surging'),
      fields: [`${RU}.rollingUpdateType`],
      message: `DaemonSet.apps.kruise.io "x" is invalid: ${SURGING_REFUSED}`,
    },
    {
      name: 'a partition above 100%',
      edit: (d) => (d.spec.updateStrategy.rollingUpdate.partition = '150%'),
      fields: [`${RU}.partition`],
      message: `DaemonSet.apps.kruise.io "x" is invalid: ${RU}.partition: Invalid value: "150%": must not be greater than 100%`,
    },
    {
      name: 'a negative partition and InPlaceIfPossible with maxSurge',
      edit: (d) =>
        Object.assign(d.spec.updateStrategy.rollingUpdate, {
          partition: -1,
          rollingUpdateType: 'InPlaceIfPossible',
          maxSurge: 1,
          maxUnavailable: 0,
        }),
      fields: [`${RU}.maxSurge`, `${RU}.partition`],
      message: `DaemonSet.apps.kruise.io "x" is invalid: [${RU}.maxSurge: Invalid value: "1": must be 0 for InPlaceIfPossible type, ${RU}.partition: Invalid value: "-1": must be greater than or equal to 0]`,
    },
  ];
  for (const row of refusals)
    test(`validate: ${row.name} → 422 Invalid with the field paths`, () => {
      const ds: any = defaultDaemonSet(v1beta1(), undefined, 'v1beta1');
      row.edit(ds);
      const out: any = handleAdmissionReview(admissionReview(ds), validateDaemonSetAdmission);
      assert.equal(out.verdict, 'denied');
      const status = out.body.response.status;
      assert.equal(status.code, 422);
      assert.equal(status.reason, 'Invalid');
      assert.equal(status.message, row.message);
      assert.deepEqual(
        status.details.causes.map((c: any) => c.field),
        row.fields,
      );
    });

  test('mutate and validate: partitionedScaling of the wrong type is a 400 naming the field (v1beta1 schema)', () => {
    const ds = v1beta1((d) => (d.spec.scaleStrategy = { partitionedScaling: 'true' }));
    for (const handler of [mutateDaemonSet, validateDaemonSetAdmission]) {
      const out: any = handleAdmissionReview(admissionReview(ds), handler);
      const status = out.body.response.status;
      assert.equal(status.code, 400);
      assert.equal(status.reason, 'BadRequest');
      assert.equal(status.details.causes[0].field, 'spec.scaleStrategy.partitionedScaling');
      assert.match(status.message, /must be of type boolean: "string"/);
    }
    // In a v1alpha1 review scaleStrategy is no field (the apiserver prunes it): not this webhook's to refuse.
    const asV1alpha1 = { ...ds, apiVersion: 'apps.kruise.io/v1alpha1' };
    const out: any = handleAdmissionReview(admissionReview(defaultDaemonSet(asV1alpha1)), validateDaemonSetAdmission);
    assert.equal(out.body.response.allowed, true);
  });

  test("validate UPDATE: scaleStrategy may change; a selector change gets Kruise's v1beta1 text", () => {
    const old = defaultDaemonSet(v1beta1(), undefined, 'v1beta1');
    const scaled: any = structuredClone(old);
    scaled.spec.scaleStrategy = { partitionedScaling: true };
    const allowedOut: any = handleAdmissionReview(
      admissionReview(scaled, { operation: 'UPDATE', oldObject: old }),
      validateDaemonSetAdmission,
    );
    assert.deepEqual(allowedOut.body.response, { uid: UID, allowed: true });
    const reselected: any = structuredClone(old);
    reselected.spec.selector.matchExpressions = [{ key: 'tier', operator: 'DoesNotExist' }];
    const out: any = handleAdmissionReview(
      admissionReview(reselected, { operation: 'UPDATE', oldObject: old }),
      validateDaemonSetAdmission,
    );
    const status = out.body.response.status;
    assert.equal(status.code, 422);
    assert.equal(
      status.message,
      `DaemonSet.apps.kruise.io "x" is invalid: spec: Forbidden: ${SPEC_UPDATE_FORBIDDEN_V1BETA1}`,
    );
  });

  test('status subresource and DELETE reviews in v1beta1 are admitted as they are', () => {
    for (const review of [
      admissionReview(null, { operation: 'DELETE', oldObject: v1beta1(), version: 'v1beta1' }),
      admissionReview(v1beta1(), { operation: 'UPDATE', subResource: 'status', oldObject: v1beta1() }),
    ])
      for (const handler of [mutateDaemonSet, validateDaemonSetAdmission])
        assert.deepEqual((handleAdmissionReview(review, handler).body as any).response, { uid: UID, allowed: true });
  });
});
