// Table tests of the validating webhook's rules (docs/kruise-rules.md#validation; Kruise's cases in
// https://github.com/openkruise/kruise/blob/master/pkg/webhook/daemonset/validating/daemonset_validation_test.go):
// each case asserts the exact field errors, in the apiserver's text format, of one invalid (or valid) manifest,
// in each served version (v1beta1 as Kruise 1.9's v1beta1 functions: no Surging, scaleStrategy).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SERVED_VERSIONS, type ServedVersion } from './constants.ts';
import { defaultDaemonSet, type JsonObject } from './defaults.ts';
import { MAX_REPORTED_ERRORS, errorString, invalidStatus } from './field.ts';
import { PERCENT_ERR } from './names.ts';
import {
  SPEC_UPDATE_FORBIDDEN,
  SPEC_UPDATE_FORBIDDEN_V1BETA1,
  validateDaemonSet,
  validateDaemonSetUpdate,
} from './validation.ts';
import { daemonSetManifest, daemonSetManifestV1beta1 } from './testing/review-fixtures.ts';

const RU = 'spec.updateStrategy.rollingUpdate';

// Loose accessors for editing fixtures in table rows.
/* eslint-disable @typescript-eslint/no-explicit-any */
type Edit = (ds: any) => void;

/** Manifests of one version, as they reach the validating webhook. */
interface Fixtures {
  version: ServedVersion;
  /** The manifest as it reaches the validating webhook: after the mutating webhook, then `edit`. */
  defaulted(edit?: Edit): JsonObject;
  /** The manifest edited before defaulting (what the user sent), then defaulted. */
  sent(edit: Edit): JsonObject;
  /** The defaulted manifest with `fields` set in spec.updateStrategy.rollingUpdate. */
  withRollingUpdate(fields: JsonObject): JsonObject;
}

function fixtures(version: ServedVersion): Fixtures {
  /** A minimal manifest as a user writes it (not defaulted). */
  const manifest = (): JsonObject => (version === 'v1beta1' ? daemonSetManifestV1beta1() : daemonSetManifest());
  const defaulted = (edit: Edit = () => {}): JsonObject => {
    const ds = defaultDaemonSet(manifest(), undefined, version);
    edit(ds);
    return ds;
  };
  return {
    version,
    defaulted,
    sent: (edit) => {
      const m = manifest();
      edit(m);
      return defaultDaemonSet(m, undefined, version);
    },
    withRollingUpdate: (fields) => defaulted((d) => Object.assign(d.spec.updateStrategy.rollingUpdate, fields)),
  };
}

const V1ALPHA1 = fixtures('v1alpha1');
const ALL = SERVED_VERSIONS.map(fixtures);
const { defaulted, sent, withRollingUpdate } = V1ALPHA1;

const messages = (ds: JsonObject, version: ServedVersion = 'v1alpha1') =>
  validateDaemonSet(ds, version).map(errorString);

describe('validateDaemonSet: the Kruise webhook test cases and rules', () => {
  /** `want` in every version, unless `v1beta1` says what v1beta1 answers instead; `only` limits a row to one. */
  const cases: {
    name: string;
    ds: (f: Fixtures) => JsonObject;
    want: string[];
    v1beta1?: string[];
    only?: ServedVersion;
  }[] = [
    { name: 'valid Standard rolling update accepted', ds: (f) => f.defaulted(), want: [] },
    {
      name: 'valid InPlaceIfPossible accepted',
      ds: (f) => f.sent((d) => (d.spec.updateStrategy = { rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible' } })),
      want: [],
    },
    {
      name: 'valid surge (maxSurge 1, maxUnavailable 0) accepted',
      ds: (f) => f.sent((d) => (d.spec.updateStrategy = { rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } })),
      want: [],
    },
    { name: 'OnDelete accepted', ds: (f) => f.sent((d) => (d.spec.updateStrategy = { type: 'OnDelete' })), want: [] },
    {
      name: 'OnDelete with garbage rollingUpdate accepted (nothing else checked)',
      ds: (f) =>
        f.sent(
          (d) => (d.spec.updateStrategy = { type: 'OnDelete', rollingUpdate: { maxSurge: 5, maxUnavailable: 5 } }),
        ),
      want: [],
    },
    {
      name: 'partition 5 accepted',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.partition = 5)),
      want: [],
    },
    {
      name: 'partition 100% accepted',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.partition = '100%')),
      want: [],
    },
    {
      name: 'rollingUpdate.selector accepted when it parses',
      ds: (f) =>
        f.defaulted(
          (d) =>
            (d.spec.updateStrategy.rollingUpdate.selector = {
              matchLabels: { 'topology.kubernetes.io/zone': 'a' },
              matchExpressions: [{ key: 'canary', operator: 'Exists' }],
            }),
        ),
      want: [],
    },
    {
      name: 'rollingUpdate.selector validated as spec.selector is (Kruise does not)',
      ds: (f) =>
        f.defaulted(
          (d) =>
            (d.spec.updateStrategy.rollingUpdate.selector = {
              matchLabels: { 'bad key!': 'x' },
              matchExpressions: [
                { key: 'zone', operator: 'Foo' },
                { key: 'zone', operator: 'In' },
              ],
            }),
        ),
      want: [
        `spec.updateStrategy.rollingUpdate.selector.matchLabels: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
        'spec.updateStrategy.rollingUpdate.selector.matchExpressions[0].operator: Invalid value: "Foo": not a valid selector operator',
        "spec.updateStrategy.rollingUpdate.selector.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
      ],
    },
    {
      name: 'burstReplicas as a percentage accepted',
      ds: (f) => f.defaulted((d) => (d.spec.burstReplicas = '50%')),
      want: [],
    },
    {
      name: 'selector that does not match the template labels',
      ds: (f) => f.defaulted((d) => (d.spec.selector = { matchLabels: { app: 'other' } })),
      want: ['spec.template.metadata.labels: Invalid value: {"app":"x"}: `selector` does not match template `labels`'],
    },
    {
      name: 'nil selector fails the match',
      ds: (f) => f.defaulted((d) => delete d.spec.selector),
      want: [
        'spec.selector: Required value',
        'spec.template.metadata.labels: Invalid value: {"app":"x"}: `selector` does not match template `labels`',
      ],
    },
    {
      name: 'empty selector',
      ds: (f) => f.defaulted((d) => (d.spec.selector = {})),
      want: ['spec.selector: Invalid value: {}: empty selector is invalid for daemonset'],
    },
    {
      name: 'selector matchExpressions In without values',
      ds: (f) =>
        f.defaulted((d) => (d.spec.selector = { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] })),
      want: [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
      ],
    },
    {
      name: 'RollingUpdate without rollingUpdate',
      ds: (f) => f.defaulted((d) => delete d.spec.updateStrategy.rollingUpdate),
      want: ['spec.updateStrategy.rollingUpdate: Required value'],
    },
    {
      name: 'unknown update strategy type',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.type = 'Recreate')),
      want: ['spec.updateStrategy.type: Unsupported value: "Recreate": supported values: "RollingUpdate", "OnDelete"'],
    },
    {
      name: 'unknown rollingUpdateType (path not doubled)',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.rollingUpdateType = 'Fast')),
      want: [
        `${RU}.rollingUpdateType: Unsupported value: "Fast": supported values: "Standard", "Surging", "InPlaceIfPossible"`,
      ],
      v1beta1: [
        `${RU}.rollingUpdateType: Unsupported value: "Fast": supported values: "Standard", "InPlaceIfPossible"`,
      ],
    },
    {
      name: 'unknown unhealthyNodes policy',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.unhealthyNodes = 'Skip')),
      want: [`${RU}.unhealthyNodes: Unsupported value: "Skip": supported values: "Count", "Ignore"`],
    },
    {
      name: 'unhealthyNodes Ignore and Count are valid',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.unhealthyNodes = 'Ignore')),
      want: [],
    },
    {
      name: 'maxSurge and maxUnavailable both non-zero',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.maxSurge = 1)),
      want: [`${RU}.maxSurge: Invalid value: "1": may not be set when maxUnavailable is non-zero`],
    },
    {
      name: 'maxSurge and maxUnavailable both zero',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.maxUnavailable = 0)),
      want: [`${RU}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0`],
    },
    {
      name: 'both zero as percentages',
      ds: (f) => f.withRollingUpdate({ maxUnavailable: '0%', maxSurge: '0%' }),
      want: [`${RU}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0`],
    },
    {
      name: 'InPlaceIfPossible with non-zero maxSurge',
      ds: (f) =>
        f.withRollingUpdate({
          rollingUpdateType: 'InPlaceIfPossible',
          maxSurge: 1,
          maxUnavailable: 0,
        }),
      want: [`${RU}.maxSurge: Invalid value: "1": must be 0 for InPlaceIfPossible type`],
    },
    {
      name: 'Surging with non-zero maxUnavailable (reachable when the mutating webhook is bypassed)',
      ds: (f) =>
        f.withRollingUpdate({
          rollingUpdateType: 'Surging',
          maxUnavailable: 1,
          maxSurge: 0,
        }),
      want: [`${RU}.maxUnavailable: Invalid value: "1": must be 0 for Surging type`],
      // v1beta1 has no Surging: Kruise's NotSupported with its two types, whatever maxUnavailable is.
      v1beta1: [
        `${RU}.rollingUpdateType: Unsupported value: "Surging": supported values: "Standard", "InPlaceIfPossible"`,
      ],
    },
    {
      name: 'Surging as a user sends it: rewritten to Standard in v1alpha1, refused in v1beta1',
      ds: (f) => f.sent((d) => (d.spec.updateStrategy = { rollingUpdate: { rollingUpdateType: 'Surging' } })),
      want: [],
      v1beta1: [
        `${RU}.rollingUpdateType: Unsupported value: "Surging": supported values: "Standard", "InPlaceIfPossible"`,
      ],
    },
    {
      name: 'Surging with maxSurge, as Kruise 1.8 users wrote it: refused in v1beta1',
      ds: (f) =>
        f.sent((d) => (d.spec.updateStrategy = { rollingUpdate: { rollingUpdateType: 'Surging', maxSurge: '10%' } })),
      want: [],
      v1beta1: [
        `${RU}.rollingUpdateType: Unsupported value: "Surging": supported values: "Standard", "InPlaceIfPossible"`,
      ],
    },
    {
      name: 'rollingUpdate.type alias disagreeing with rollingUpdateType',
      ds: (f) =>
        f.withRollingUpdate({
          type: 'InPlaceIfPossible',
          rollingUpdateType: 'Standard',
          maxUnavailable: 1,
          maxSurge: 0,
        }),
      want: [`${RU}.type: Invalid value: "InPlaceIfPossible": conflicts with rollingUpdateType "Standard"`],
      // Not a v1beta1 field: the apiserver prunes it before admission; validation does not read it.
      v1beta1: [],
    },
    {
      name: 'maxUnavailable 150%',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.maxUnavailable = '150%')),
      want: [`${RU}.maxUnavailable: Invalid value: "150%": must not be greater than 100%`],
    },
    {
      name: 'negative partition',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.partition = -1)),
      want: [`${RU}.partition: Invalid value: "-1": must be greater than or equal to 0`],
    },
    {
      name: 'partition above 100%',
      ds: (f) => f.defaulted((d) => (d.spec.updateStrategy.rollingUpdate.partition = '101%')),
      want: [`${RU}.partition: Invalid value: "101%": must not be greater than 100%`],
    },
    {
      name: 'v1beta1 partitionedScaling with a percent partition accepted',
      only: 'v1beta1',
      ds: (f) =>
        f.sent((d) => {
          d.spec.scaleStrategy = { partitionedScaling: true };
          d.spec.updateStrategy = { rollingUpdate: { partition: '50%' } };
        }),
      want: [],
    },
    {
      name: 'v1beta1 empty scaleStrategy and partitionedScaling false accepted',
      only: 'v1beta1',
      ds: (f) => f.sent((d) => (d.spec.scaleStrategy = { partitionedScaling: false })),
      want: [],
    },
    {
      name: 'partitionedScaling not a boolean: a structural error in v1beta1, an unknown (pruned) field in v1alpha1',
      ds: (f) => f.defaulted((d) => (d.spec.scaleStrategy = { partitionedScaling: 'yes' })),
      want: [],
      v1beta1: [
        'spec.scaleStrategy.partitionedScaling: Invalid value: "string": spec.scaleStrategy.partitionedScaling in body must be of type boolean: "string"',
      ],
    },
    {
      name: 'scaleStrategy not an object in v1beta1',
      only: 'v1beta1',
      ds: (f) => f.defaulted((d) => (d.spec.scaleStrategy = true)),
      want: [
        'spec.scaleStrategy: Invalid value: "boolean": spec.scaleStrategy in body must be of type object: "boolean"',
      ],
    },
    {
      name: 'restartPolicy OnFailure',
      ds: (f) => f.sent((d) => (d.spec.template.spec.restartPolicy = 'OnFailure')),
      want: ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'],
    },
    {
      name: 'activeDeadlineSeconds',
      ds: (f) => f.sent((d) => (d.spec.template.spec.activeDeadlineSeconds = 10)),
      want: [
        'spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported',
      ],
    },
    {
      name: 'lifecycle.inPlaceUpdate',
      ds: (f) => f.sent((d) => (d.spec.lifecycle = { inPlaceUpdate: { labelsHandler: { a: 'b' } } })),
      want: ['spec.lifecycle.inPlaceUpdate: Forbidden: inPlaceUpdate hook has not supported yet'],
    },
    {
      name: 'lifecycle.preDelete and preNormal accepted',
      ds: (f) =>
        f.sent(
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
      ds: (f) => f.defaulted((d) => (d.spec.minReadySeconds = -1)),
      want: ['spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0'],
    },
    {
      name: 'negative revisionHistoryLimit',
      ds: (f) => f.defaulted((d) => (d.spec.revisionHistoryLimit = -1)),
      want: ['spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0'],
    },
    {
      name: 'several errors are all listed',
      ds: (f) =>
        f.defaulted((d) => {
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
  for (const f of ALL)
    for (const c of cases) {
      if (c.only && c.only !== f.version) continue;
      const want = f.version === 'v1beta1' ? (c.v1beta1 ?? c.want) : c.want;
      test(`${f.version}: ${c.name}`, () => assert.deepEqual(messages(c.ds(f), f.version), want));
    }
});

describe('validateDaemonSet: rollingUpdate.priorityStrategy (Kruise rules) and rollingUpdate.waves', () => {
  const P = `${RU}.priorityStrategy`;
  const W = `${RU}.waves`;
  const zone = { matchLabels: { 'topology.kubernetes.io/zone': 'a' } };
  const cases: { name: string; ru: JsonObject; want: string[] }[] = [
    {
      name: 'weightPriority and waves: accepted',
      ru: {
        priorityStrategy: { weightPriority: [{ weight: 100, matchSelector: zone }, { weight: 0, matchSelector: zone }] },
        waves: { topologyKey: 'topology.kubernetes.io/zone', availableSeconds: 60 },
      },
      want: [],
    },
    { name: 'orderPriority: accepted', ru: { priorityStrategy: { orderPriority: [{ orderedKey: 'rack' }] } }, want: [] },
    {
      name: 'both kinds of terms',
      ru: { priorityStrategy: { weightPriority: [{ weight: 1, matchSelector: zone }], orderPriority: [{ orderedKey: 'rack' }] } },
      want: [`${P}.orderPriority: Forbidden: only one of weightPriority and orderPriority can be used`],
    },
    {
      name: 'weights out of 0-100',
      ru: { priorityStrategy: { weightPriority: [{ weight: 101, matchSelector: zone }, { weight: -1, matchSelector: zone }] } },
      want: [
        `${P}.weightPriority[0].weight: Invalid value: 101: must be in the range 0-100`,
        `${P}.weightPriority[1].weight: Invalid value: -1: must be in the range 0-100`,
      ],
    },
    {
      name: 'empty and invalid matchSelector',
      ru: {
        priorityStrategy: {
          weightPriority: [
            { weight: 1, matchSelector: {} },
            { weight: 1, matchSelector: { matchExpressions: [{ key: 'zone', operator: 'In' }] } },
          ],
        },
      },
      want: [
        `${P}.weightPriority[0].matchSelector: Invalid value: {}: selector can not be empty`,
        `${P}.weightPriority[1].matchSelector.matchExpressions[0].values: Required value: must be specified when \`operator\` is 'In' or 'NotIn'`,
      ],
    },
    {
      name: 'weight and matchSelector required',
      ru: { priorityStrategy: { weightPriority: [{}] } },
      want: [`${P}.weightPriority[0].weight: Required value`, `${P}.weightPriority[0].matchSelector: Required value`],
    },
    {
      name: 'orderedKey not a label key',
      ru: { priorityStrategy: { orderPriority: [{ orderedKey: 'bad key' }] } },
      want: [
        `${P}.orderPriority[0].orderedKey: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
      ],
    },
    { name: 'waves without topologyKey', ru: { waves: { availableSeconds: 1 } }, want: [`${W}.topologyKey: Required value`] },
    {
      name: 'waves: topologyKey not a label key, negative availableSeconds',
      ru: { waves: { topologyKey: 'a/b/c', availableSeconds: -1 } },
      want: [
        `${W}.topologyKey: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
        `${W}.availableSeconds: Invalid value: -1: must be greater than or equal to 0`,
      ],
    },
    {
      name: 'waves: availableSeconds not below progressDeadlineSeconds (600 by default)',
      ru: { waves: { topologyKey: 'zone', availableSeconds: 600 } },
      want: [`${W}.availableSeconds: Invalid value: 600: must be less than spec.progressDeadlineSeconds (600)`],
    },
  ]; // prettier-ignore
  for (const f of ALL)
    for (const c of cases)
      test(`${f.version}: ${c.name}`, () => {
        assert.deepEqual(messages(f.withRollingUpdate(c.ru), f.version), c.want);
      });
});

describe('validateDaemonSet: rollingUpdate.canary (ExtendedDaemonSet rules) and progressDeadlineSeconds', () => {
  const C = `${RU}.canary`;
  /** A canary as sent (not defaulted: the rules read unset values as their defaults); same in both versions. */
  const cases: { name: string; canary?: JsonObject; edit?: Edit; sentCanary?: JsonObject; want: string[] }[] = [
    { name: 'canary {} as defaulted: accepted', sentCanary: {}, want: [] },
    {
      name: 'the issue example: accepted',
      sentCanary: {
        nodes: 3,
        nodeSelector: { matchLabels: { pool: 'general' } },
        spreadByNodeLabels: ['topology.kubernetes.io/zone'],
        validation: 'Auto',
        duration: '10m',
        noRestartsDuration: '5m',
        autoPause: { enabled: true, maxRestarts: 2, maxStartupDuration: '5m' },
        autoFail: { enabled: true, maxRestarts: 5, maxRestartsDuration: '10m', timeout: '1h' },
      },
      want: [],
    },
    { name: 'Manual with a timeout: accepted', sentCanary: { validation: 'Manual', autoFail: { timeout: '1m' } }, want: [] },
    {
      name: 'autoFail.maxRestarts not above autoPause.maxRestarts',
      canary: { autoPause: { maxRestarts: 3 }, autoFail: { maxRestarts: 3 } },
      want: [`${C}.autoFail.maxRestarts: Invalid value: 3: must be greater than autoPause.maxRestarts (3)`],
    },
    {
      name: 'autoFail.maxRestarts against the default autoPause.maxRestarts',
      canary: { autoFail: { maxRestarts: 1 } },
      want: [`${C}.autoFail.maxRestarts: Invalid value: 1: must be greater than autoPause.maxRestarts (2)`],
    },
    { name: 'maxRestarts order ignored with autoPause disabled', canary: { autoPause: { enabled: false }, autoFail: { maxRestarts: 1 } }, want: [] },
    {
      name: 'timeout not above duration',
      canary: { duration: '1h', autoFail: { timeout: '60m' } },
      want: [`${C}.autoFail.timeout: Invalid value: "60m": must be greater than duration (1h)`],
    },
    {
      name: 'timeout not above the default duration',
      canary: { autoFail: { timeout: '5m' } },
      want: [`${C}.autoFail.timeout: Invalid value: "5m": must be greater than duration (10m)`],
    },
    {
      name: 'no duration nor noRestartsDuration in Manual mode',
      canary: { validation: 'Manual', duration: '10m', noRestartsDuration: '5m' },
      want: [
        `${C}.duration: Forbidden: may not be set when validation is Manual`,
        `${C}.noRestartsDuration: Forbidden: may not be set when validation is Manual`,
      ],
    },
    {
      name: 'durations must parse and not be negative',
      canary: { duration: '10', noRestartsDuration: '-1m', autoPause: { maxStartupDuration: '1d' }, autoFail: { maxRestartsDuration: 'x' } },
      want: [
        `${C}.duration: Invalid value: "10": time: missing unit in duration "10"`,
        `${C}.noRestartsDuration: Invalid value: "-1m": must be greater than or equal to 0`,
        `${C}.autoPause.maxStartupDuration: Invalid value: "1d": time: unknown unit "d" in duration "1d"`,
        `${C}.autoFail.maxRestartsDuration: Invalid value: "x": time: invalid duration "x"`,
      ],
    },
    {
      name: 'validation Auto or Manual',
      canary: { validation: 'Sometimes' },
      want: [`${C}.validation: Unsupported value: "Sometimes": supported values: "Auto", "Manual"`],
    },
    { name: 'nodes 0', canary: { nodes: 0 }, want: [`${C}.nodes: Invalid value: "0": must be greater than 0`] },
    { name: 'nodes 0%', canary: { nodes: '0%' }, want: [`${C}.nodes: Invalid value: "0%": must be greater than 0`] },
    { name: 'nodes 101%', canary: { nodes: '101%' }, want: [`${C}.nodes: Invalid value: "101%": must not be greater than 100%`] },
    {
      name: 'negative maxRestarts',
      canary: { autoPause: { maxRestarts: -1 }, autoFail: { maxRestarts: 5 } },
      want: [`${C}.autoPause.maxRestarts: Invalid value: -1: must be greater than or equal to 0`],
    },
    {
      name: 'spreadByNodeLabels: label keys, no duplicates',
      canary: { spreadByNodeLabels: ['zone', 'bad key', 'zone'] },
      want: [
        `${C}.spreadByNodeLabels[1]: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
        `${C}.spreadByNodeLabels[2]: Duplicate value: "zone"`,
      ],
    },
    {
      name: 'nodeSelector as a label selector',
      canary: { nodeSelector: { matchExpressions: [{ key: 'pool', operator: 'In' }] } },
      want: [`${C}.nodeSelector.matchExpressions[0].values: Required value: must be specified when \`operator\` is 'In' or 'NotIn'`],
    },
    {
      name: 'progressDeadlineSeconds not above minReadySeconds (as a Deployment)',
      edit: (d) => {
        d.spec.minReadySeconds = 30;
        d.spec.progressDeadlineSeconds = 30;
      },
      want: ['spec.progressDeadlineSeconds: Invalid value: 30: must be greater than minReadySeconds'],
    },
    {
      name: 'negative progressDeadlineSeconds',
      edit: (d) => (d.spec.progressDeadlineSeconds = -1),
      want: ['spec.progressDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0'],
    },
    {
      name: 'a manifest with minReadySeconds 600 (no default deadline) stays valid',
      edit: (d) => (d.spec.minReadySeconds = 600),
      want: [],
    },
  ]; // prettier-ignore
  for (const f of ALL)
    for (const c of cases)
      test(`${f.version}: ${c.name}`, () => {
        const ds =
          c.sentCanary !== undefined
            ? f.sent((d) => (d.spec.updateStrategy = { rollingUpdate: { canary: c.sentCanary } }))
            : c.canary
              ? f.withRollingUpdate({ canary: c.canary })
              : c.edit
                ? f.sent(c.edit)
                : f.defaulted();
        assert.deepEqual(messages(ds, f.version), c.want);
      });
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
  for (const fx of ALL)
    for (const f of fields)
      for (const v of values)
        test(`${fx.version}: ${f.name} ${JSON.stringify(v.value)}`, () => {
          const ds = fx.defaulted((d) => f.set(d, v.value));
          assert.deepEqual(messages(ds, fx.version), [`${f.path}: Invalid value: "${String(v.value)}": ${v.detail}`]);
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
  test('a conversion stash that would not convert cleanly is refused, naming what it would set', () => {
    const key = 'conversion.advanced-daemonset.io/v1beta1';
    const forged = JSON.stringify({
      fields: [{ path: ['spec', 'updateStrategy', 'rollingUpdate', 'rollingUpdateType'], value: 'Evil' }],
    });
    const ds = defaulted((d) => (d.metadata.annotations = { [key]: forged }));
    assert.deepEqual(messages(ds), [
      `metadata.annotations[${key}]: Invalid value: "(stash)": would set spec.updateStrategy.rollingUpdate.rollingUpdateType, which must be one of Standard, InPlaceIfPossible, not "Evil"`,
    ]);
    // One the conversion itself made (Surging, kept for the way back to v1alpha1) is fine in v1beta1.
    const made = JSON.stringify({
      fields: [{ path: ['spec', 'updateStrategy', 'rollingUpdate', 'rollingUpdateType'], value: 'Surging' }],
    });
    const beta = fixtures('v1beta1').defaulted(
      (d) => (d.metadata.annotations = { 'conversion.advanced-daemonset.io/v1alpha1': made }),
    );
    assert.deepEqual(messages(beta, 'v1beta1'), []);
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
  test('many errors: the first MAX_REPORTED_ERRORS distinct ones, then how many more', () => {
    const ds = defaulted((d) => {
      // 250 containers with neither name nor image: 500 errors.
      d.spec.template.spec.containers = Array.from({ length: 250 }, () => ({}));
    });
    const errors = validateDaemonSet(ds);
    assert.equal(errors.length, 500);
    const status = invalidStatus('apps.kruise.io', 'DaemonSet', 'x', errors);
    assert.equal(status.details?.causes?.length, MAX_REPORTED_ERRORS);
    assert.deepEqual(status.details?.causes?.slice(0, 2), [
      { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.template.spec.containers[0].name' },
      { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.template.spec.containers[0].image' },
    ]);
    assert.ok(
      status.message.endsWith('spec.template.spec.containers[49].image: Required value, and 400 more errors]'),
      status.message.slice(-200),
    );
  });
  test('duplicates: dropped from the message, one cause each (as NewInvalid)', () => {
    const one = { type: 'FieldValueRequired', field: 'spec.x', detail: '' } as const;
    const status = invalidStatus('apps.kruise.io', 'DaemonSet', 'x', [one, one, one]);
    assert.equal(status.message, 'DaemonSet.apps.kruise.io "x" is invalid: spec.x: Required value');
    assert.equal(status.details?.causes?.length, 3);
  });
});

describe('validateDaemonSetUpdate: only spec.selector is immutable', () => {
  /** `want` in every version, unless `v1beta1` says what v1beta1 answers instead. */
  const cases: { name: string; edit: Edit; want: string[]; v1beta1?: string[]; only?: ServedVersion }[] = [
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
      v1beta1: [`spec: Forbidden: ${SPEC_UPDATE_FORBIDDEN_V1BETA1}`],
    },
    {
      name: 'progressDeadlineSeconds and the canary may change',
      edit: (d) => {
        d.spec.progressDeadlineSeconds = 120;
        d.spec.updateStrategy.rollingUpdate.canary = { nodes: 2 };
      },
      want: [],
    },
    {
      name: 'v1beta1 scaleStrategy change allowed (mutable in Kruise 1.9)',
      only: 'v1beta1',
      edit: (d) => (d.spec.scaleStrategy = { partitionedScaling: true }),
      want: [],
    },
    {
      name: 'the new object is fully validated too',
      edit: (d) => (d.spec.updateStrategy.rollingUpdate.partition = -1),
      want: [`${RU}.partition: Invalid value: "-1": must be greater than or equal to 0`],
    },
  ];
  for (const f of ALL)
    for (const c of cases) {
      if (c.only && c.only !== f.version) continue;
      const want = f.version === 'v1beta1' ? (c.v1beta1 ?? c.want) : c.want;
      test(`${f.version}: ${c.name}`, () => {
        const next = f.defaulted();
        c.edit(next);
        assert.deepEqual(validateDaemonSetUpdate(next, f.defaulted(), f.version).map(errorString), want);
      });
    }
  for (const f of ALL)
    test(`${f.version}: progressDeadlineSeconds added to an object stored without it (the mutating webhook does so)`, () => {
      const old = f.defaulted((d) => delete d.spec.progressDeadlineSeconds);
      const next = f.defaulted();
      assert.equal((next.spec as any).progressDeadlineSeconds, 600);
      assert.deepEqual(validateDaemonSetUpdate(next, old, f.version).map(errorString), []);
    });
  test("the forbidden text is Kruise's v1alpha1 text, two spaces after 'lifecycle',", () => {
    assert.match(SPEC_UPDATE_FORBIDDEN, /'lifecycle', {2}'updateStrategy'/);
  });
  test("the v1beta1 forbidden text is Kruise's v1beta1 text: scaleStrategy listed, one space throughout", () => {
    assert.equal(
      SPEC_UPDATE_FORBIDDEN_V1BETA1,
      "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden",
    );
  });
  test('a v1beta1 selector change from an object with partitionedScaling is still refused', () => {
    const fx = fixtures('v1beta1');
    const old = fx.sent((d) => (d.spec.scaleStrategy = { partitionedScaling: true }));
    const next = structuredClone(old) as any;
    next.spec.selector = { matchLabels: { app: 'x', tier: 'web' } };
    next.spec.template.metadata.labels.tier = 'web';
    next.spec.scaleStrategy = {};
    assert.deepEqual(validateDaemonSetUpdate(next, old, 'v1beta1').map(errorString), [
      `spec: Forbidden: ${SPEC_UPDATE_FORBIDDEN_V1BETA1}`,
    ]);
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
