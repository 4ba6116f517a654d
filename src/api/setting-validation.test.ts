// Table tests of DaemonSetSetting defaulting and validation (setting-defaults.ts, setting-validation.ts): each case
// asserts the exact field errors, in the apiserver's text format, of one manifest. The resource rules are the
// apiserver's for a pod's containers (ValidateResourceRequirements in
// https://github.com/kubernetes/kubernetes/blob/master/pkg/apis/core/validation/validation.go), so a setting is
// refused with the message the pod it makes would get.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fastJsonPatch from 'fast-json-patch';
import type { JsonObject } from './defaults.ts';
import { errorString, invalidStatus } from './field.ts';
import { defaultDaemonSetSetting, settingDefaultingPatch } from './setting-defaults.ts';
import { settingShapeErrors, validateDaemonSetSetting, validateDaemonSetSettingUpdate } from './setting-validation.ts';
import { settingManifest } from './testing/review-fixtures.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Edit = (s: any) => void;

/** The manifest as it reaches the validating webhook: defaulted, then `edit`. */
const defaulted = (edit: Edit = () => {}): JsonObject => {
  const s = defaultDaemonSetSetting(structuredClone(settingManifest()));
  edit(s);
  return s;
};
const messages = (s: JsonObject) => validateDaemonSetSetting(s).map(errorString);
const C0 = 'spec.containers[0]';

describe('DaemonSetSetting defaulting: spec.reference kind and apiVersion', () => {
  const cases: { name: string; reference: unknown; want: unknown }[] = [
    { name: 'both unset', reference: { name: 'a' }, want: { name: 'a', kind: 'DaemonSet', apiVersion: 'apps.kruise.io/v1beta1' } },
    { name: 'empty strings and null are unset', reference: { name: 'a', kind: '', apiVersion: null }, want: { name: 'a', kind: 'DaemonSet', apiVersion: 'apps.kruise.io/v1beta1' } },
    { name: 'set values are kept (v1alpha1)', reference: { name: 'a', kind: 'DaemonSet', apiVersion: 'apps.kruise.io/v1alpha1' }, want: { name: 'a', kind: 'DaemonSet', apiVersion: 'apps.kruise.io/v1alpha1' } },
    { name: 'a wrong kind is kept for validation to refuse', reference: { name: 'a', kind: 'Deployment' }, want: { name: 'a', kind: 'Deployment', apiVersion: 'apps.kruise.io/v1beta1' } },
    { name: 'a wrong type is left alone', reference: { name: 'a', kind: 5 }, want: { name: 'a', kind: 5, apiVersion: 'apps.kruise.io/v1beta1' } },
    { name: 'no reference: nothing made up', reference: undefined, want: undefined },
    { name: 'a reference that is no object: left alone', reference: 'agent', want: 'agent' },
  ]; // prettier-ignore
  for (const c of cases)
    test(c.name, () => {
      const obj: any = settingManifest();
      obj.spec.reference = c.reference;
      const before = structuredClone(obj);
      const out: any = defaultDaemonSetSetting(obj);
      assert.deepEqual(out.spec.reference, c.want);
      assert.deepEqual(obj, before, 'the input is not modified');
      // The patch applies to the object as sent and gives the defaulted one.
      const patched = fastJsonPatch.applyPatch(structuredClone(obj), settingDefaultingPatch(obj), true).newDocument;
      assert.deepEqual(patched, out);
    });

  test('the patch adds the two fields only; none when nothing is missing', () => {
    assert.deepEqual(settingDefaultingPatch(settingManifest()), [
      { op: 'add', path: '/spec/reference/kind', value: 'DaemonSet' },
      { op: 'add', path: '/spec/reference/apiVersion', value: 'apps.kruise.io/v1beta1' },
    ]);
    assert.deepEqual(settingDefaultingPatch(defaulted()), []);
    assert.deepEqual(settingDefaultingPatch({ metadata: { name: 'x' } }), []);
  });

  test('__proto__ keys are plain data: kept as they are, never in the patch', () => {
    const obj = JSON.parse(
      JSON.stringify(settingManifest()).replace('"name":"agent"', '"name":"agent","__proto__":{"kind":"Evil"}'),
    );
    const patch = settingDefaultingPatch(obj);
    assert.deepEqual(
      patch.map((op) => op.path),
      ['/spec/reference/kind', '/spec/reference/apiVersion'],
    );
    assert.equal((defaultDaemonSetSetting(obj) as any).spec.reference.kind, 'DaemonSet');
  });
});

describe('validateDaemonSetSetting: the rules, with the apiserver texts', () => {
  const QUALIFIED =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  const LABEL =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  const SUBDOMAIN =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  const resources =
    (r: unknown): Edit =>
    (s) =>
      (s.spec.containers[0].resources = r);
  const cases: { name: string; edit?: Edit; want: string[] }[] = [
    { name: 'the minimal manifest, defaulted, is valid', want: [] },
    { name: 'reference v1alpha1 is valid', edit: (s) => (s.spec.reference.apiVersion = 'apps.kruise.io/v1alpha1'), want: [] },
    { name: 'no nodeSelector (every node) is valid', edit: (s) => delete s.spec.nodeSelector, want: [] },
    { name: 'empty resources (none at all on those nodes) are valid', edit: resources({}), want: [] },
    { name: 'domain-prefixed, kubernetes.io and hugepages resources are valid', edit: resources({ limits: { 'example.com/gpu': 2, 'hugepages-2Mi': '64Mi', memory: '1Gi', 'kubernetes.io/something': '1' }, requests: { 'example.com/gpu': '2', 'hugepages-2Mi': '64Mi' } }), want: [] },
    // spec.reference
    { name: 'reference without a name', edit: (s) => delete s.spec.reference.name, want: ['spec.reference.name: Required value'] },
    { name: 'reference with an empty name', edit: (s) => (s.spec.reference.name = ''), want: ['spec.reference.name: Required value'] },
    { name: 'reference name not a DNS-1123 subdomain', edit: (s) => (s.spec.reference.name = 'Agent_1'), want: [`spec.reference.name: Invalid value: "Agent_1": ${SUBDOMAIN}`] },
    { name: 'reference to a Deployment', edit: (s) => (s.spec.reference.kind = 'Deployment'), want: ['spec.reference.kind: Unsupported value: "Deployment": supported values: "DaemonSet"'] },
    { name: 'reference to apps/v1', edit: (s) => (s.spec.reference.apiVersion = 'apps/v1'), want: ['spec.reference.apiVersion: Unsupported value: "apps/v1": supported values: "apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"'] },
    { name: 'no reference', edit: (s) => delete s.spec.reference, want: ['spec.reference: Required value'] },
    // spec.nodeSelector
    { name: 'nodeSelector with a bad operator', edit: (s) => (s.spec.nodeSelector = { matchExpressions: [{ key: 'a', operator: 'Near' }] }), want: ['spec.nodeSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator'] },
    { name: 'nodeSelector In without values', edit: (s) => (s.spec.nodeSelector = { matchExpressions: [{ key: 'a', operator: 'In' }] }), want: ["spec.nodeSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"] },
    { name: 'nodeSelector with a bad label key', edit: (s) => (s.spec.nodeSelector = { matchLabels: { 'a b': 'x' } }), want: [`spec.nodeSelector.matchLabels: Invalid value: "a b": ${QUALIFIED}`] },
    // spec.containers
    { name: 'no containers', edit: (s) => delete s.spec.containers, want: ['spec.containers: Required value'] },
    { name: 'an empty containers list', edit: (s) => (s.spec.containers = []), want: ['spec.containers: Required value'] },
    { name: 'a container without a name', edit: (s) => (s.spec.containers[0].name = ''), want: [`${C0}.name: Required value`] },
    { name: 'a container name not a DNS-1123 label', edit: (s) => (s.spec.containers[0].name = 'Agent'), want: [`${C0}.name: Invalid value: "Agent": ${LABEL}`] },
    { name: 'a container twice', edit: (s) => s.spec.containers.push({ name: 'c', resources: {} }), want: ['spec.containers[1].name: Duplicate value: "c"'] },
    // resources
    { name: 'requests above limits (the apiserver text)', edit: resources({ requests: { cpu: '2' }, limits: { cpu: '1' } }), want: [`${C0}.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`] },
    { name: 'a negative limit', edit: resources({ limits: { memory: '-1Gi' } }), want: [`${C0}.resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0`] },
    { name: 'a negative request, as a number', edit: resources({ requests: { cpu: -1 } }), want: [`${C0}.resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`] },
    { name: 'a quantity that does not parse: the schema pattern, once', edit: resources({ limits: { cpu: 'lots' } }), want: [`${C0}.resources.limits.cpu: Invalid value: "lots": ${C0}.resources.limits.cpu in body should match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'`] },
    { name: 'a resource no container has', edit: resources({ limits: { pods: '1' } }), want: [`${C0}.resources.limits[pods]: Invalid value: "pods": must be a standard resource for containers`] },
    { name: 'an unknown bare resource name', edit: resources({ requests: { gpu: '1' } }), want: [`${C0}.resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified`, `${C0}.resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers`] },
    { name: 'a resource name that is no qualified name', edit: resources({ limits: { 'a b': '1' } }), want: [`${C0}.resources.limits[a b]: Invalid value: "a b": ${QUALIFIED}`] },
    { name: 'an extended resource requested below its limit', edit: resources({ requests: { 'example.com/gpu': '1' }, limits: { 'example.com/gpu': '2' } }), want: [`${C0}.resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2`] },
    { name: 'an extended resource requested without a limit', edit: resources({ requests: { 'example.com/gpu': '1' } }), want: [`${C0}.resources.limits: Required value: Limit must be set for non overcommitable resources`] },
    { name: 'a fraction of an extended resource', edit: resources({ limits: { 'example.com/gpu': '500m' } }), want: [`${C0}.resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer`] },
    { name: 'huge pages alone', edit: resources({ limits: { 'hugepages-2Mi': '64Mi' } }), want: [`${C0}.resources: Forbidden: HugePages require cpu or memory`] },
    // metadata and structure
    { name: 'a name that is no DNS-1123 subdomain', edit: (s) => (s.metadata.name = 'X'), want: [`metadata.name: Invalid value: "X": ${SUBDOMAIN}`] },
    { name: 'no spec', edit: (s) => delete s.spec, want: ['spec: Required value'] },
    { name: 'a field of the wrong type is a structural error with kube-openapi text', edit: (s) => (s.spec.containers[0].name = 5), want: [`${C0}.name: Invalid value: "integer": ${C0}.name in body must be of type string: "integer"`] },
  ]; // prettier-ignore
  for (const c of cases)
    test(c.name, () => {
      assert.deepEqual(messages(defaulted(c.edit)), c.want);
    });

  test('several errors at once, in the Invalid status of the apiserver', () => {
    const s = defaulted((x) => {
      x.spec.reference.kind = 'Deployment';
      x.spec.containers[0].resources = { requests: { cpu: '2' }, limits: { cpu: '1' } };
    });
    const status = invalidStatus('advanced-daemonset.io', 'DaemonSetSetting', 'x', validateDaemonSetSetting(s));
    assert.equal(
      status.message,
      'DaemonSetSetting.advanced-daemonset.io "x" is invalid: [spec.reference.kind: Unsupported value: "Deployment": supported values: "DaemonSet", spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1]',
    );
    assert.deepEqual(
      status.details?.causes?.map((c) => [c.reason, c.field]),
      [
        ['FieldValueNotSupported', 'spec.reference.kind'],
        ['FieldValueInvalid', 'spec.containers[0].resources.requests'],
      ],
    );
  });

  test('status is not checked (the status subresource is not admitted, and the apiserver resets it on create)', () => {
    assert.deepEqual(messages(defaulted((s) => (s.status = { nodes: 'many', conditions: 'none' }))), []);
  });
});

describe('validateDaemonSetSettingUpdate: spec.reference is immutable', () => {
  const update = (edit: Edit, old: JsonObject = defaulted()) =>
    validateDaemonSetSettingUpdate(defaulted(edit), old).map(errorString);
  const cases: { name: string; edit: Edit; old?: JsonObject; want: string[] }[] = [
    { name: 'containers and nodeSelector may change', edit: (s) => { s.spec.nodeSelector = {}; s.spec.containers[0].resources = { limits: { cpu: '4' } }; }, want: [] },
    { name: 'another DaemonSet', edit: (s) => (s.spec.reference.name = 'other'), want: ['spec.reference: Invalid value: {"apiVersion":"apps.kruise.io/v1beta1","kind":"DaemonSet","name":"other"}: field is immutable'] },
    { name: 'another apiVersion of the same DaemonSet', edit: (s) => (s.spec.reference.apiVersion = 'apps.kruise.io/v1alpha1'), want: ['spec.reference: Invalid value: {"apiVersion":"apps.kruise.io/v1alpha1","kind":"DaemonSet","name":"agent"}: field is immutable'] },
    { name: 'the defaults left out of an applied manifest are no change', edit: (s) => (s.spec.reference = { name: 'agent' }), want: [] },
    { name: 'a stored object without the defaults is compared with them', edit: () => {}, old: settingManifest(), want: [] },
    { name: 'invalid and changed: both reported', edit: (s) => (s.spec.reference.name = 'Other'), want: [
      `spec.reference.name: Invalid value: "Other": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
      'spec.reference: Invalid value: {"apiVersion":"apps.kruise.io/v1beta1","kind":"DaemonSet","name":"Other"}: field is immutable',
    ] },
  ]; // prettier-ignore
  for (const c of cases) test(c.name, () => assert.deepEqual(update(c.edit, c.old), c.want));
});

describe('settingShapeErrors: what makes a setting unreadable', () => {
  const cases: { name: string; edit: Edit; want: string[] }[] = [
    { name: 'a well-formed manifest has none', edit: () => {}, want: [] },
    { name: 'containers that is no list', edit: (s) => (s.spec.containers = { name: 'c' }), want: ['spec.containers: Invalid value: "object": spec.containers in body must be of type array: "object"'] },
    { name: 'a null container', edit: (s) => s.spec.containers.push(null), want: ['spec.containers[1]: Invalid value: "null": spec.containers[1] in body must be of type object: "null"'] },
    { name: 'a quantity of the wrong type', edit: (s) => (s.spec.containers[0].resources.limits = { cpu: true }), want: [`${C0}.resources.limits.cpu: Invalid value: "boolean": ${C0}.resources.limits.cpu in body must be of type integer,string: "boolean"`] },
    { name: 'a reference that is a string', edit: (s) => (s.spec.reference = 'agent'), want: ['spec.reference: Invalid value: "string": spec.reference in body must be of type object: "string"'] },
    { name: 'labels of the wrong type', edit: (s) => (s.metadata.labels = ['a']), want: ['metadata.labels: Invalid value: "array": metadata.labels in body must be of type object: "array"'] },
  ]; // prettier-ignore
  for (const c of cases)
    test(c.name, () => {
      const s: any = settingManifest();
      c.edit(s);
      assert.deepEqual(settingShapeErrors(s).map(errorString), c.want);
    });

  test('nesting beyond 100 levels is reported alone, at the path of the value past the limit', () => {
    const s = JSON.parse(
      JSON.stringify(settingManifest()).replace(
        '"containers":[',
        `"x":${'['.repeat(500)}${']'.repeat(500)},"containers":[`,
      ),
    );
    const errs = settingShapeErrors(s);
    assert.equal(errs.length, 1);
    assert.match(
      errorString(errs[0]!),
      /^spec\.x\[0\](\[0\])+.*: Forbidden: must not be nested more than 100 levels deep/,
    );
  });
});
