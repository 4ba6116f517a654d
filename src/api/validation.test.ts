// Table tests of the validating webhook's rules (docs/kruise-rules.md#validation; Kruise's cases in
// https://github.com/openkruise/kruise/blob/master/pkg/webhook/daemonset/validating/daemonset_validation_test.go):
// each case asserts the exact field errors, in the apiserver's text format, of one invalid (or valid) manifest.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultDaemonSet, type JsonObject } from './defaults.ts';
import { errorString, invalidStatus } from './field.ts';
import { PERCENT_ERR } from './names.ts';
import { SPEC_UPDATE_FORBIDDEN, validateDaemonSet, validateDaemonSetUpdate } from './validation.ts';
import { daemonSetManifest } from './testing/review-fixtures.ts';

const RU = 'spec.updateStrategy.rollingUpdate';

/** A minimal manifest as a user writes it (not defaulted). */
const manifest = (): JsonObject => daemonSetManifest();

// Loose accessors for editing fixtures in table rows.
/* eslint-disable @typescript-eslint/no-explicit-any */
type Edit = (ds: any) => void;

/** The manifest as it reaches the validating webhook: after the mutating webhook, then `edit`. */
function defaulted(edit: Edit = () => {}): JsonObject {
  const ds = defaultDaemonSet(manifest());
  edit(ds);
  return ds;
}

/** The manifest edited before defaulting (what the user sent), then defaulted. */
function sent(edit: Edit): JsonObject {
  const m = manifest();
  edit(m);
  return defaultDaemonSet(m);
}

/** The defaulted manifest with `fields` set in spec.updateStrategy.rollingUpdate. */
const withRollingUpdate = (fields: JsonObject): JsonObject =>
  defaulted((d) => Object.assign(d.spec.updateStrategy.rollingUpdate, fields));

const messages = (ds: JsonObject) => validateDaemonSet(ds).map(errorString);

describe('validateDaemonSet: the Kruise webhook test cases and rules', () => {
  const cases: { name: string; ds: () => JsonObject; want: string[] }[] = [
    { name: 'valid Standard rolling update accepted', ds: () => defaulted(), want: [] },
    {
      name: 'valid InPlaceIfPossible accepted',
      ds: () => sent((d) => (d.spec.updateStrategy = { rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible' } })),
      want: [],
    },
    {
      name: 'valid surge (maxSurge 1, maxUnavailable 0) accepted',
      ds: () => sent((d) => (d.spec.updateStrategy = { rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } })),
      want: [],
    },
    { name: 'OnDelete accepted', ds: () => sent((d) => (d.spec.updateStrategy = { type: 'OnDelete' })), want: [] },
    {
      name: 'OnDelete with garbage rollingUpdate accepted (nothing else checked)',
      ds: () =>
        sent((d) => (d.spec.updateStrategy = { type: 'OnDelete', rollingUpdate: { maxSurge: 5, maxUnavailable: 5 } })),
      want: [],
    },
    {
      name: 'partition 5 accepted',
      ds: () => defaulted((d) => (d.spec.updateStrategy.rollingUpdate.partition = 5)),
      want: [],
    },
    {
      name: 'partition 100% accepted',
      ds: () => defaulted((d) => (d.spec.updateStrategy.rollingUpdate.partition = '100%')),
      want: [],
    },
    {
      name: 'burstReplicas as a percentage accepted',
      ds: () => defaulted((d) => (d.spec.burstReplicas = '50%')),
      want: [],
    },
    {
      name: 'selector that does not match the template labels',
      ds: () => defaulted((d) => (d.spec.selector = { matchLabels: { app: 'other' } })),
      want: ['spec.template.metadata.labels: Invalid value: {"app":"x"}: `selector` does not match template `labels`'],
    },
    {
      name: 'nil selector fails the match',
      ds: () => defaulted((d) => delete d.spec.selector),
      want: [
        'spec.selector: Required value',
        'spec.template.metadata.labels: Invalid value: {"app":"x"}: `selector` does not match template `labels`',
      ],
    },
    {
      name: 'empty selector',
      ds: () => defaulted((d) => (d.spec.selector = {})),
      want: ['spec.selector: Invalid value: {}: empty selector is invalid for daemonset'],
    },
    {
      name: 'selector matchExpressions In without values',
      ds: () =>
        defaulted((d) => (d.spec.selector = { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] })),
      want: [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
      ],
    },
    {
      name: 'RollingUpdate without rollingUpdate',
      ds: () => defaulted((d) => delete d.spec.updateStrategy.rollingUpdate),
      want: ['spec.updateStrategy.rollingUpdate: Required value'],
    },
    {
      name: 'unknown update strategy type',
      ds: () => defaulted((d) => (d.spec.updateStrategy.type = 'Recreate')),
      want: ['spec.updateStrategy.type: Unsupported value: "Recreate": supported values: "RollingUpdate", "OnDelete"'],
    },
    {
      name: 'unknown rollingUpdateType (path not doubled)',
      ds: () => defaulted((d) => (d.spec.updateStrategy.rollingUpdate.rollingUpdateType = 'Fast')),
      want: [
        `${RU}.rollingUpdateType: Unsupported value: "Fast": supported values: "Standard", "Surging", "InPlaceIfPossible"`,
      ],
    },
    {
      name: 'maxSurge and maxUnavailable both non-zero',
      ds: () => defaulted((d) => (d.spec.updateStrategy.rollingUpdate.maxSurge = 1)),
      want: [`${RU}.maxSurge: Invalid value: "1": may not be set when maxUnavailable is non-zero`],
    },
    {
      name: 'maxSurge and maxUnavailable both zero',
      ds: () => defaulted((d) => (d.spec.updateStrategy.rollingUpdate.maxUnavailable = 0)),
      want: [`${RU}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0`],
    },
    {
      name: 'both zero as percentages',
      ds: () => withRollingUpdate({ maxUnavailable: '0%', maxSurge: '0%' }),
      want: [`${RU}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0`],
    },
    {
      name: 'InPlaceIfPossible with non-zero maxSurge',
      ds: () =>
        withRollingUpdate({
          rollingUpdateType: 'InPlaceIfPossible',
          maxSurge: 1,
          maxUnavailable: 0,
        }),
      want: [`${RU}.maxSurge: Invalid value: "1": must be 0 for InPlaceIfPossible type`],
    },
    {
      name: 'Surging with non-zero maxUnavailable (reachable when the mutating webhook is bypassed)',
      ds: () =>
        withRollingUpdate({
          rollingUpdateType: 'Surging',
          maxUnavailable: 1,
          maxSurge: 0,
        }),
      want: [`${RU}.maxUnavailable: Invalid value: "1": must be 0 for Surging type`],
    },
    {
      name: 'rollingUpdate.type alias disagreeing with rollingUpdateType',
      ds: () =>
        withRollingUpdate({ type: 'InPlaceIfPossible', rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0 }),
      want: [`${RU}.type: Invalid value: "InPlaceIfPossible": conflicts with rollingUpdateType "Standard"`],
    },
    {
      name: 'maxUnavailable 150%',
      ds: () => defaulted((d) => (d.spec.updateStrategy.rollingUpdate.maxUnavailable = '150%')),
      want: [`${RU}.maxUnavailable: Invalid value: "150%": must not be greater than 100%`],
    },
    {
      name: 'negative partition',
      ds: () => defaulted((d) => (d.spec.updateStrategy.rollingUpdate.partition = -1)),
      want: [`${RU}.partition: Invalid value: "-1": must be greater than or equal to 0`],
    },
    {
      name: 'partition above 100%',
      ds: () => defaulted((d) => (d.spec.updateStrategy.rollingUpdate.partition = '101%')),
      want: [`${RU}.partition: Invalid value: "101%": must not be greater than 100%`],
    },
    {
      name: 'restartPolicy OnFailure',
      ds: () => sent((d) => (d.spec.template.spec.restartPolicy = 'OnFailure')),
      want: ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'],
    },
    {
      name: 'activeDeadlineSeconds',
      ds: () => sent((d) => (d.spec.template.spec.activeDeadlineSeconds = 10)),
      want: [
        'spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported',
      ],
    },
    {
      name: 'lifecycle.inPlaceUpdate',
      ds: () => sent((d) => (d.spec.lifecycle = { inPlaceUpdate: { labelsHandler: { a: 'b' } } })),
      want: ['spec.lifecycle.inPlaceUpdate: Forbidden: inPlaceUpdate hook has not supported yet'],
    },
    {
      name: 'lifecycle.preDelete and preNormal accepted',
      ds: () =>
        sent(
          (d) =>
            (d.spec.lifecycle = {
              preDelete: { labelsHandler: { hold: 'true' }, finalizersHandler: ['x/y'], markPodNotReady: true },
              preNormal: { labelsHandler: { a: 'b' } },
            }),
        ),
      want: [],
    },
    {
      name: 'negative minReadySeconds',
      ds: () => defaulted((d) => (d.spec.minReadySeconds = -1)),
      want: ['spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0'],
    },
    {
      name: 'negative revisionHistoryLimit',
      ds: () => defaulted((d) => (d.spec.revisionHistoryLimit = -1)),
      want: ['spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0'],
    },
    {
      name: 'several errors are all listed',
      ds: () =>
        defaulted((d) => {
          d.spec.minReadySeconds = -1;
          d.spec.updateStrategy.rollingUpdate.partition = '-5%';
          d.spec.template.spec.activeDeadlineSeconds = 1;
        }),
      want: [
        'spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported',
        'spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0',
        `${RU}.partition: Invalid value: "-5%": ${PERCENT_ERR}`,
      ],
    },
  ];
  for (const c of cases) test(c.name, () => assert.deepEqual(messages(c.ds()), c.want));
});

describe('validateDaemonSet: malformed IntOrString values are rejected (stricter than Kruise)', () => {
  const fields: { name: string; path: string; set: (d: any, v: unknown) => void }[] = [
    { name: 'maxSurge', path: `${RU}.maxSurge`, set: (d, v) => Object.assign(d.spec.updateStrategy.rollingUpdate, { maxSurge: v, maxUnavailable: 0 }) },
    { name: 'maxUnavailable', path: `${RU}.maxUnavailable`, set: (d, v) => (d.spec.updateStrategy.rollingUpdate.maxUnavailable = v) },
    { name: 'partition', path: `${RU}.partition`, set: (d, v) => (d.spec.updateStrategy.rollingUpdate.partition = v) },
    { name: 'burstReplicas', path: 'spec.burstReplicas', set: (d, v) => (d.spec.burstReplicas = v) },
  ]; // prettier-ignore
  const values: { value: unknown; detail: string }[] = [
    { value: 'abc', detail: PERCENT_ERR },
    { value: '-1', detail: PERCENT_ERR },
    { value: '5', detail: PERCENT_ERR },
    { value: '-1%', detail: PERCENT_ERR },
    { value: '1.5%', detail: PERCENT_ERR },
    { value: '101%', detail: 'must not be greater than 100%' },
    { value: -1, detail: 'must be greater than or equal to 0' },
  ];
  for (const f of fields)
    for (const v of values)
      test(`${f.name} ${JSON.stringify(v.value)}`, () => {
        const ds = defaulted((d) => f.set(d, v.value));
        assert.deepEqual(messages(ds), [`${f.path}: Invalid value: "${String(v.value)}": ${v.detail}`]);
      });
  test('a non-integer number is reported once, by the structural schema', () => {
    const ds = defaulted((d) => (d.spec.burstReplicas = 1.5));
    assert.deepEqual(messages(ds), [
      // The bad value is the JSON type, as kube-openapi's InvalidType reports it.
      'spec.burstReplicas: Invalid value: "number": spec.burstReplicas in body must be of type integer,string: "number"',
    ]);
  });
});

describe('validateDaemonSet: pod template checks a user gets from apps/v1', () => {
  const T = 'spec.template.spec';
  const cases: { name: string; edit: Edit; want: string[] }[] = [
    { name: 'no containers', edit: (d) => (d.spec.template.spec.containers = []), want: [`${T}.containers: Required value`] },
    {
      name: 'container name not a DNS-1123 label',
      edit: (d) => (d.spec.template.spec.containers[0].name = 'Web_1'),
      want: [
        `${T}.containers[0].name: Invalid value: "Web_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
      ],
    },
    {
      name: 'duplicate container names (init and regular share one namespace)',
      edit: (d) => {
        d.spec.template.spec.initContainers = [{ name: 'c', image: 'busybox:1.36' }];
      },
      want: [`${T}.containers[0].name: Duplicate value: "c"`],
    },
    { name: 'missing name', edit: (d) => delete d.spec.template.spec.containers[0].name, want: [`${T}.containers[0].name: Required value`] },
    { name: 'missing image', edit: (d) => delete d.spec.template.spec.containers[0].image, want: [`${T}.containers[0].image: Required value`] },
    {
      name: 'image with surrounding whitespace',
      edit: (d) => (d.spec.template.spec.containers[0].image = ' nginx'),
      want: [`${T}.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace`],
    },
    {
      name: 'invalid template label key and value',
      edit: (d) => (d.spec.template.metadata.labels = { app: 'x', 'bad key': 'v', ok: 'bad value' }),
      want: [
        "spec.template.metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "spec.template.metadata.labels: Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
      ],
    },
    {
      name: 'unparseable resource quantity',
      edit: (d) => (d.spec.template.spec.containers[0].resources = { limits: { cpu: 'lots' } }),
      want: [`${T}.containers[0].resources.limits[cpu]: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`],
    },
    {
      name: 'requests above limits',
      edit: (d) => (d.spec.template.spec.containers[0].resources = { limits: { cpu: '500m' }, requests: { cpu: '1' } }),
      want: [`${T}.containers[0].resources.requests: Invalid value: "1": must be less than or equal to cpu limit of 500m`],
    },
    {
      name: 'negative quantity',
      edit: (d) => (d.spec.template.spec.containers[0].resources = { requests: { memory: '-1Gi' } }),
      want: [`${T}.containers[0].resources.requests[memory]: Invalid value: "-1Gi": must be greater than or equal to 0`],
    },
    {
      name: 'port out of range and bad protocol',
      edit: (d) => (d.spec.template.spec.containers[0].ports = [{ containerPort: 70000, protocol: 'HTTP' }]),
      want: [
        `${T}.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`,
        `${T}.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`,
      ],
    },
    {
      name: 'volume mount of an unknown volume',
      edit: (d) => (d.spec.template.spec.containers[0].volumeMounts = [{ name: 'data', mountPath: '/data' }]),
      want: [`${T}.containers[0].volumeMounts[0].name: Not found: "data"`],
    },
    {
      name: 'bad imagePullPolicy and dnsPolicy',
      edit: (d) => {
        d.spec.template.spec.containers[0].imagePullPolicy = 'Sometimes';
        d.spec.template.spec.dnsPolicy = 'Google';
      },
      want: [
        `${T}.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
        `${T}.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`,
      ],
    },
  ]; // prettier-ignore
  for (const c of cases) test(c.name, () => assert.deepEqual(messages(sent(c.edit)), c.want));
});

describe('validateDaemonSet: metadata and structure', () => {
  test('name must be a DNS-1123 subdomain', () => {
    const ds = defaulted((d) => (d.metadata.name = 'Bad_Name'));
    assert.deepEqual(messages(ds), [
      "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]);
  });
  test('a field of the wrong type is a structural error with kube-openapi text', () => {
    const ds = defaulted((d) => (d.spec.minReadySeconds = 'soon'));
    assert.deepEqual(messages(ds), [
      'spec.minReadySeconds: Invalid value: "string": spec.minReadySeconds in body must be of type integer: "string"',
    ]);
  });
  test('missing template', () => {
    const ds = defaulted((d) => delete d.spec.template);
    assert.ok(messages(ds).includes('spec.template: Required value'), messages(ds).join('\n'));
  });
});

describe('invalidStatus: the apiserver rejection format', () => {
  test('one error: bare message, 422 Invalid, one cause', () => {
    const ds = withRollingUpdate({
      rollingUpdateType: 'InPlaceIfPossible',
      maxSurge: 1,
      maxUnavailable: 0,
    });
    const status = invalidStatus('apps.kruise.io', 'DaemonSet', 'x', validateDaemonSet(ds));
    assert.deepEqual(status, {
      metadata: {},
      status: 'Failure',
      message:
        'DaemonSet.apps.kruise.io "x" is invalid: spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "1": must be 0 for InPlaceIfPossible type',
      reason: 'Invalid',
      details: {
        name: 'x',
        group: 'apps.kruise.io',
        kind: 'DaemonSet',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: 'Invalid value: "1": must be 0 for InPlaceIfPossible type',
            field: 'spec.updateStrategy.rollingUpdate.maxSurge',
          },
        ],
      },
      code: 422,
    });
  });
  test('several errors: bracketed list, one cause per field error', () => {
    const ds = defaulted((d) => {
      d.spec.minReadySeconds = -1;
      d.spec.revisionHistoryLimit = -2;
    });
    const status = invalidStatus('apps.kruise.io', 'DaemonSet', 'x', validateDaemonSet(ds));
    assert.equal(
      status.message,
      'DaemonSet.apps.kruise.io "x" is invalid: [spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0, spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0]',
    );
    assert.deepEqual(
      status.details?.causes?.map((c) => [c.reason, c.field]),
      [
        ['FieldValueInvalid', 'spec.minReadySeconds'],
        ['FieldValueInvalid', 'spec.revisionHistoryLimit'],
      ],
    );
  });
});

describe('validateDaemonSetUpdate: only spec.selector is immutable', () => {
  const old = () => defaulted();
  const cases: { name: string; edit: Edit; want: string[] }[] = [
    { name: 'burstReplicas change allowed', edit: (d) => (d.spec.burstReplicas = 10), want: [] },
    { name: 'partition change allowed', edit: (d) => (d.spec.updateStrategy.rollingUpdate.partition = 2), want: [] },
    {
      name: 'template change allowed',
      edit: (d) => (d.spec.template.spec.containers[0].image = 'nginx:1.28'),
      want: [],
    },
    {
      name: 'mutable fields together allowed',
      edit: (d) => {
        d.spec.minReadySeconds = 5;
        d.spec.revisionHistoryLimit = 3;
        d.spec.updateStrategy = { type: 'OnDelete' };
        d.spec.lifecycle = { preDelete: { finalizersHandler: ['a/b'] } };
      },
      want: [],
    },
    {
      name: 'selector change rejected',
      edit: (d) => {
        d.spec.selector = { matchLabels: { app: 'x', tier: 'web' } };
        d.spec.template.metadata.labels.tier = 'web';
      },
      want: [`spec: Forbidden: ${SPEC_UPDATE_FORBIDDEN}`],
    },
    {
      name: 'the new object is fully validated too',
      edit: (d) => (d.spec.updateStrategy.rollingUpdate.partition = -1),
      want: [`${RU}.partition: Invalid value: "-1": must be greater than or equal to 0`],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const next = old();
      c.edit(next);
      assert.deepEqual(validateDaemonSetUpdate(next, old()).map(errorString), c.want);
    });
  test("the forbidden text is Kruise's v1alpha1 text, two spaces after 'lifecycle',", () => {
    assert.match(SPEC_UPDATE_FORBIDDEN, /'lifecycle', {2}'updateStrategy'/);
  });
});

describe('hostile values: plain data and bounded work, never an exception', () => {
  test('a malformed selector (shapeErrors refuses it in the webhook) does not throw here either', () => {
    for (const selector of [{ matchExpressions: 'x' }, { matchExpressions: [null] }, { matchLabels: 'x' }])
      assert.doesNotThrow(() => validateDaemonSet(defaulted((d) => (d.spec.selector = selector))));
  });
  test('a value with a throwing toString in a message', () => {
    const ds = sent((d) => (d.spec.updateStrategy = { rollingUpdate: { type: { toString: 1 } } }));
    assert.ok(messages(ds).some((m) => m.includes('spec.updateStrategy.rollingUpdate')));
  });
  test('requests and limits with exponents beyond BigInt range compare by magnitude', () => {
    const ds = defaulted((d) => {
      d.spec.template.spec.containers[0].resources = {
        requests: { cpu: '1.5e2000000000', memory: '1e-2000000000' },
        limits: { cpu: '1', memory: '1' },
      };
    });
    const started = Date.now();
    assert.deepEqual(
      messages(ds).filter((m) => m.includes('resources.requests')),
      [
        'spec.template.spec.containers[0].resources.requests: Invalid value: "150e1999999998": must be less than or equal to cpu limit of 1',
      ],
    );
    assert.ok(Date.now() - started < 1000);
  });
  test('UPDATE: a `constructor` or `__proto__` key present on one side only is a change, absent on both is none', () => {
    const old = defaulted();
    const same = JSON.parse(JSON.stringify(old));
    assert.deepEqual(validateDaemonSetUpdate(same, old), []);
    const withConstructor = JSON.parse(JSON.stringify(old).replace('"selector":', '"constructor":{"a":1},"selector":'));
    assert.match(validateDaemonSetUpdate(withConstructor, old).map(errorString).join(), /spec: Forbidden/);
    const nullConstructor = JSON.parse(JSON.stringify(old).replace('"selector":', '"constructor":null,"selector":'));
    assert.deepEqual(validateDaemonSetUpdate(nullConstructor, old), []);
  });
});
