// handleAdmissionReview and the two handlers as pure functions: every malformed body gets a 400 or an
// errored review, never an exception.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  handleAdmissionReview,
  handleAdmissionText,
  mutateDaemonSet,
  mutateDaemonSetSetting,
  validateDaemonSetAdmission,
  validateDaemonSetSettingAdmission,
} from './admission.ts';
import fastJsonPatch from 'fast-json-patch';
import { defaultDaemonSet } from '../src/api/defaults.ts';
import { SPEC_UPDATE_FORBIDDEN_V1BETA1 } from '../src/api/validation.ts';
import { defaultDaemonSetSetting } from '../src/api/setting-defaults.ts';
import {
  admissionReview,
  daemonSetManifest,
  daemonSetManifestV1beta1,
  settingManifest,
  settingReview,
} from '../src/api/testing/review-fixtures.ts';

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
            rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' },
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
    {
      name: 'an unhealthyNodes policy neither Count nor Ignore',
      edit: (d) => (d.spec.updateStrategy.rollingUpdate.unhealthyNodes = 'Skip'),
      fields: [`${RU}.unhealthyNodes`],
      message: `DaemonSet.apps.kruise.io "x" is invalid: ${RU}.unhealthyNodes: Unsupported value: "Skip": supported values: "Count", "Ignore"`,
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

describe('DaemonSetSetting reviews: the same envelope checks, its own defaults and rules', () => {
  const UID = '705ab4f5-6393-11e8-b7cc-42010a800002';
  const handlers = [
    ['mutate', mutateDaemonSetSetting],
    ['validate', validateDaemonSetSettingAdmission],
  ] as const;
  const setting = (edit: (s: any) => void = () => {}): any => {
    const s: any = defaultDaemonSetSetting(settingManifest());
    edit(s);
    return s;
  };
  const responseOf = (out: any) => out.body.response;

  const errored: { name: string; body: unknown; message: string }[] = [
    { name: 'a DaemonSet review at a setting webhook', body: admissionReview(daemonSetManifest()), message: 'unsupported kind: apps.kruise.io/v1alpha1, Kind=DaemonSet' },
    { name: 'an unknown version', body: settingReview(settingManifest(), { version: 'v1beta1' }), message: 'unsupported version: v1beta1' },
    { name: 'object apiVersion other than request.kind', body: settingReview({ ...settingManifest(), apiVersion: 'advanced-daemonset.io/v2' }, { version: 'v1alpha1' }), message: 'request.object apiVersion "advanced-daemonset.io/v2" does not match request.kind advanced-daemonset.io/v1alpha1' },
    { name: 'an undecodable object', body: settingReview('not an object', { version: 'v1alpha1' }), message: 'request.object is not a JSON object' },
    { name: 'UPDATE without oldObject', body: settingReview(settingManifest(), { operation: 'UPDATE' }), message: 'request.oldObject is not a JSON object' },
  ]; // prettier-ignore
  for (const [name, handler] of handlers)
    for (const c of errored)
      test(`${c.name} → errored review, code 400 (${name})`, () => {
        const out = handleAdmissionReview(c.body, handler);
        assert.equal(out.httpStatus, 200);
        assert.equal(out.verdict, 'errored');
        assert.deepEqual(responseOf(out), {
          uid: UID,
          allowed: false,
          status: { metadata: {}, status: 'Failure', code: 400, reason: 'BadRequest', message: c.message },
        });
      });

  test('a setting review at a DaemonSet webhook is refused too', () => {
    for (const handler of [mutateDaemonSet, validateDaemonSetAdmission])
      assert.equal(
        responseOf(handleAdmissionReview(settingReview(settingManifest()), handler)).status.message,
        'unsupported kind: advanced-daemonset.io/v1alpha1, Kind=DaemonSetSetting',
      );
  });

  test('mutate: spec.reference kind and apiVersion as a JSON patch that applies; none when set', () => {
    const out: any = handleAdmissionReview(settingReview(settingManifest()), mutateDaemonSetSetting);
    assert.equal(out.verdict, 'patched');
    const patch = JSON.parse(Buffer.from(responseOf(out).patch, 'base64').toString());
    assert.deepEqual(patch, [
      { op: 'add', path: '/spec/reference/kind', value: 'DaemonSet' },
      { op: 'add', path: '/spec/reference/apiVersion', value: 'apps.kruise.io/v1beta1' },
    ]);
    const applied = fastJsonPatch.applyPatch(settingManifest(), patch as any, true).newDocument;
    assert.deepEqual(applied, setting());
    const again = handleAdmissionReview(settingReview(setting()), mutateDaemonSetSetting);
    assert.deepEqual(responseOf(again), { uid: UID, allowed: true });
  });

  test('validate: denied with 422 Invalid naming DaemonSetSetting.advanced-daemonset.io, one cause per error', () => {
    const s = setting((x) => {
      x.spec.containers.push({ name: 'c', resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } });
    });
    const out = handleAdmissionReview(settingReview(s), validateDaemonSetSettingAdmission);
    assert.equal(out.verdict, 'denied');
    const status = responseOf(out).status;
    assert.equal(status.code, 422);
    assert.equal(status.reason, 'Invalid');
    assert.deepEqual(status.details.kind, 'DaemonSetSetting');
    assert.deepEqual(status.details.group, 'advanced-daemonset.io');
    assert.equal(
      status.message,
      'DaemonSetSetting.advanced-daemonset.io "x" is invalid: [spec.containers[1].name: Duplicate value: "c", spec.containers[1].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1]',
    );
    assert.deepEqual(
      status.details.causes.map((c: any) => c.field),
      ['spec.containers[1].name', 'spec.containers[1].resources.requests'],
    );
    assert.equal(handleAdmissionReview(settingReview(setting()), validateDaemonSetSettingAdmission).verdict, 'allowed');
  });

  test('validate UPDATE: spec.reference may not change; containers may', () => {
    const old = setting();
    const moved = setting((x) => (x.spec.reference.name = 'other'));
    const out = handleAdmissionReview(
      settingReview(moved, { operation: 'UPDATE', oldObject: old }),
      validateDaemonSetSettingAdmission,
    );
    assert.equal(
      responseOf(out).status.message,
      'DaemonSetSetting.advanced-daemonset.io "x" is invalid: spec.reference: Invalid value: {"apiVersion":"apps.kruise.io/v1beta1","kind":"DaemonSet","name":"other"}: field is immutable',
    );
    const resized = setting((x) => (x.spec.containers[0].resources = { limits: { cpu: '4' } }));
    const ok = handleAdmissionReview(
      settingReview(resized, { operation: 'UPDATE', oldObject: old }),
      validateDaemonSetSettingAdmission,
    );
    assert.equal(ok.verdict, 'allowed');
  });

  test('DELETE and status subresource updates are admitted as they are', () => {
    for (const review of [
      settingReview(null, { operation: 'DELETE', oldObject: setting(), version: 'v1alpha1' }),
      settingReview(
        setting((x) => (x.status = { nodes: -1 })),
        { operation: 'UPDATE', subResource: 'status', oldObject: setting() },
      ),
    ])
      // prettier-ignore
      for (const [, handler] of handlers)
        assert.deepEqual(responseOf(handleAdmissionReview(review, handler)), { uid: UID, allowed: true });
  });

  const hostile: { name: string; text: (s: any) => string; field: string; message: RegExp }[] = [
    {
      name: 'containers that is not an array',
      text: (s) => JSON.stringify({ ...s, spec: { ...s.spec, containers: { name: 'c' } } }),
      field: 'spec.containers',
      message: /spec\.containers in body must be of type array: "object"/,
    },
    {
      name: 'a null element in containers',
      text: (s) => JSON.stringify(s).replace('"containers":[', '"containers":[null,'),
      field: 'spec.containers[0]',
      message: /must be of type object: "null"/,
    },
    {
      name: 'a quantity of the wrong type',
      text: (s) => JSON.stringify(s).replace('"cpu":"1"', '"cpu":{"a":1}'),
      field: 'spec.containers[0].resources.requests.cpu',
      message: /must be of type integer,string: "object"/,
    },
    {
      name: 'a reference nested 5,000 levels deep',
      text: (s) => JSON.stringify(s).replace('"name":"agent"', `"name":"agent","x":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`),
      field: `spec.reference.x.${Array(97).fill('a').join('.')}`,
      message: /must not be nested more than 100 levels deep/,
    },
  ]; // prettier-ignore
  for (const [name, handler] of handlers)
    for (const row of hostile)
      test(`hostile: ${row.name} → 400 naming the field, never an exception (${name})`, () => {
        const object = JSON.parse(row.text(settingManifest()));
        const out = handleAdmissionReview(settingReview(object), handler);
        assert.equal(out.cause, undefined);
        assert.equal(out.verdict, 'denied');
        const status = responseOf(out).status;
        assert.equal(status.code, 400);
        assert.equal(status.reason, 'BadRequest');
        assert.match(status.message, row.message);
        assert.match(status.message, /^DaemonSetSetting\.advanced-daemonset\.io "x" is invalid: /);
        assert.equal(status.details.causes[0].field, row.field);
      });

  test('an UPDATE whose stored setting is nested too deep is refused, naming oldObject', () => {
    const old = JSON.parse(
      JSON.stringify(setting()).replace('"containers":[', `"x":${'['.repeat(500)}${']'.repeat(500)},"containers":[`),
    );
    const out = handleAdmissionReview(
      settingReview(setting(), { operation: 'UPDATE', oldObject: old }),
      validateDaemonSetSettingAdmission,
    );
    assert.equal(responseOf(out).status.code, 400);
    assert.match(responseOf(out).status.details.causes[0].field, /^oldObject\.spec\.x\[0\]\[0\]/);
  });
});

describe('handleAdmissionText: the answer as sent', () => {
  // The patch's base64 is put into the text rather than serialised with the review: the text must be the review's
  // JSON all the same, whatever the strings before the patch hold.
  for (const uid of ['705ab4f5-6393-11e8-b7cc-42010a800002', 'a","patch":"","b', 'quote " backslash \\ \u2028 é'])
    test(`is JSON.stringify of the review, uid ${JSON.stringify(uid)}`, () => {
      const out = handleAdmissionText(JSON.stringify(admissionReview(daemonSetManifest(), { uid })), mutateDaemonSet);
      assert.equal(out.verdict, 'patched');
      assert.equal(out.text, JSON.stringify(out.body));
      const sent = JSON.parse(out.text);
      assert.equal(sent.response.uid, uid);
      assert.ok(
        fastJsonPatch.validate(JSON.parse(Buffer.from(sent.response.patch, 'base64').toString('utf8'))) === undefined,
      );
    });

  test('an answer without a patch is JSON.stringify of the review too', () => {
    const out = handleAdmissionText(
      JSON.stringify(admissionReview(defaultDaemonSet(daemonSetManifest()))),
      validateDaemonSetAdmission,
    );
    assert.equal(out.text, JSON.stringify(out.body));
    assert.equal(JSON.parse(out.text).response.allowed, true);
  });
});
