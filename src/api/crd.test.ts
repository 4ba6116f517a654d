// The committed CRD must be what the generator makes from schema.ts; the CRD itself must have what kubectl and
// Kruise users rely on (structural schema with descriptions, preserved pod template, status subresource, short
// names, printer columns; docs/kruise-rules.md#api), in both served versions, with v1beta1 stored by default and
// conversion through the webhook when it is given one (as Kruise 1.9's CRD:
// https://github.com/openkruise/kruise/blob/v1.9.0/apis/apps/v1beta1/daemonset_types.go).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SERVED_VERSIONS, STORAGE_VERSION, type ServedVersion } from './constants.ts';
import { crdObject, openAPIV3Schema, settingCrdObject, settingOpenAPIV3Schema, unwrapDescription } from './crd.ts';
import { CRD_PATH, renderCrdYaml, renderSettingCrdYaml, SETTING_CRD_PATH } from './gen-crd.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const versionsOf = (crd: any): any[] => crd.spec.versions;
const versionNamed = (crd: any, name: string): any => versionsOf(crd).find((v) => v.name === name);
const rollingUpdateOf = (version: (typeof SERVED_VERSIONS)[number]): any =>
  (openAPIV3Schema(version) as any).properties.spec.properties.updateStrategy.properties.rollingUpdate;

describe('unwrapDescription: kubectl explain wraps descriptions itself', () => {
  const rows: [string, string, string][] = [
    ['a wrapped paragraph: one line', 'Partition keeps\nthe lowest nodes\nold.', 'Partition keeps the lowest nodes old.'],
    ['paragraphs stay apart', 'One.\n\nTwo\nlines.', 'One.\n\nTwo lines.'],
    ['list items keep their lines', 'Modes:\n- Standard\n- Surging\n1. first', 'Modes:\n- Standard\n- Surging\n1. first'],
  ]; // prettier-ignore
  for (const [name, text, want] of rows) test(name, () => assert.equal(unwrapDescription(text), want));
  test('no description of the served schemas keeps a line break inside a paragraph', () => {
    for (const version of SERVED_VERSIONS) {
      const all = JSON.stringify(openAPIV3Schema(version)).match(/"description":"(?:[^"\\]|\\.)*"/g) ?? [];
      assert.ok(all.length > 50, `${version}: ${all.length} descriptions`);
      for (const d of all)
        assert.equal(unwrapDescription(JSON.parse(`{${d}}`).description), JSON.parse(`{${d}}`).description, d);
    }
  });
});

/** The fields of a schema without a description (kubectl explain would print nothing for them); metadata aside. */
function undescribed(schema: unknown): string[] {
  const missing: string[] = [];
  const walk = (node: any, at: string) => {
    for (const [name, child] of Object.entries<any>(node.properties ?? {})) {
      if (!child.description && name !== 'metadata') missing.push(`${at}.${name}`);
      walk(child, `${at}.${name}`);
    }
    if (node.items) walk(node.items, `${at}[]`);
  };
  walk(schema, '');
  return missing;
}

/**
 * What makes a schema not structural: a node without a type (but int-or-string), forbidden keywords, anyOf (allowed
 * only in the int-or-string form, with no types or descriptions inside).
 */
function structuralProblems(schema: unknown): string[] {
  const problems: string[] = [];
  const walk = (node: any, at: string) => {
    if (!node['x-kubernetes-int-or-string'] && !node.type) problems.push(`${at}: no type`);
    for (const k of ['$id', '$schema', 'patternProperties', 'const', 'additionalItems'])
      if (k in node) problems.push(`${at}: ${k}`);
    if (node.anyOf && !node['x-kubernetes-int-or-string']) problems.push(`${at}: anyOf`);
    for (const [name, child] of Object.entries(node.properties ?? {})) walk(child, `${at}.${name}`);
    if (node.items) walk(node.items, `${at}[]`);
    if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${at}{}`);
  };
  walk(schema, '');
  return problems;
}

describe('CRD', () => {
  test('the committed chart CRD is not stale (run `npm run gen:crd` after editing src/api/schema.ts)', () => {
    assert.equal(readFileSync(CRD_PATH, 'utf8'), renderCrdYaml(), `${CRD_PATH} differs from the generator`);
  });

  test('names, scope and short names', () => {
    const crd: any = crdObject();
    assert.equal(crd.metadata.name, 'daemonsets.apps.kruise.io');
    assert.deepEqual(crd.spec.names, {
      kind: 'DaemonSet',
      listKind: 'DaemonSetList',
      plural: 'daemonsets',
      singular: 'daemonset',
      shortNames: ['daemon', 'ads'],
    });
    assert.equal(crd.spec.scope, 'Namespaced');
  });

  test('serves v1alpha1 and v1beta1, each with the status subresource; v1beta1 is stored by default', () => {
    const crd: any = crdObject();
    assert.deepEqual(SERVED_VERSIONS, ['v1alpha1', 'v1beta1']);
    assert.equal(STORAGE_VERSION, 'v1beta1');
    assert.deepEqual(
      versionsOf(crd).map((v) => [v.name, v.served, v.storage, v.subresources]),
      [
        ['v1alpha1', true, false, { status: {} }],
        ['v1beta1', true, true, { status: {} }],
      ],
    );
  });

  test('storageVersion v1alpha1 keeps v1alpha1 as the one storage version', () => {
    const crd: any = crdObject({ storageVersion: 'v1alpha1' });
    assert.deepEqual(
      versionsOf(crd).map((v) => [v.name, v.storage]),
      [
        ['v1alpha1', true],
        ['v1beta1', false],
      ],
    );
    assert.throws(() => crdObject({ storageVersion: 'v2' as any }), /storage version v2 is not served/);
  });

  test('conversion: None without a client config, Webhook (ConversionReview v1) with one', () => {
    assert.deepEqual((crdObject() as any).spec.conversion, { strategy: 'None' });
    const rows = [
      { service: { namespace: 'kruise-system', name: 'advanced-daemonset-webhook', path: '/convert', port: 443 }, caBundle: 'Q0E=' },
      { url: 'https://127.0.0.1:9443/convert', caBundle: 'Q0E=' },
    ]; // prettier-ignore
    for (const clientConfig of rows)
      assert.deepEqual((crdObject({ conversion: clientConfig }) as any).spec.conversion, {
        strategy: 'Webhook',
        webhook: { conversionReviewVersions: ['v1'], clientConfig },
      });
  });

  test('printer columns, the same in both versions, CONTAINERS, IMAGES, SELECTOR and CANARY only at -o wide', () => {
    for (const version of versionsOf(crdObject()))
      assert.deepEqual(
        version.additionalPrinterColumns.map((c: any) => [c.name, c.jsonPath, c.priority ?? 0]),
        [
          ['DESIRED', '.status.desiredNumberScheduled', 0],
          ['CURRENT', '.status.currentNumberScheduled', 0],
          ['READY', '.status.numberReady', 0],
          ['UP-TO-DATE', '.status.updatedNumberScheduled', 0],
          ['AVAILABLE', '.status.numberAvailable', 0],
          ['AGE', '.metadata.creationTimestamp', 0],
          ['CONTAINERS', '.spec.template.spec.containers[*].name', 1],
          ['IMAGES', '.spec.template.spec.containers[*].image', 1],
          ['SELECTOR', '.spec.selector', 1],
          ['CANARY', '.status.canary.phase', 1],
        ],
        version.name,
      );
  });

  for (const version of SERVED_VERSIONS) {
    test(`${version} structural: every node has a type (or int-or-string / preserve-unknown-fields) and no forbidden keywords`, () => {
      assert.deepEqual(structuralProblems(openAPIV3Schema(version)), []);
    });

    test(`${version} descriptions on every field for kubectl explain; pod template preserved as Kruise does`, () => {
      const spec: any = (openAPIV3Schema(version) as any).properties.spec;
      const partition = spec.properties.updateStrategy.properties.rollingUpdate.properties.partition;
      assert.match(partition.description, /remain at the old revision/);
      assert.equal(partition['x-kubernetes-int-or-string'], true);
      assert.equal(spec.properties.template['x-kubernetes-preserve-unknown-fields'], true);
      assert.deepEqual(spec.required, ['selector', 'template']);
      assert.deepEqual(undescribed(openAPIV3Schema(version)), [], 'every field has a description');
    });

    test(`${version} in the CRD is openAPIV3Schema('${version}')`, () => {
      assert.deepEqual(versionNamed(crdObject(), version).schema.openAPIV3Schema, openAPIV3Schema(version));
    });
  }

  test('openAPIV3Schema() without a version is v1alpha1 (the internal model)', () => {
    assert.deepEqual(openAPIV3Schema(), openAPIV3Schema('v1alpha1'));
  });

  test('v1alpha1: rollingUpdate.type alias, status.daemonSetHash (required) and collisionCount', () => {
    const ru = rollingUpdateOf('v1alpha1');
    assert.equal(ru.properties.type.type, 'string');
    assert.match(ru.properties.rollingUpdateType.description, /Deprecated Surging is rewritten to Standard/);
    const status: any = (openAPIV3Schema('v1alpha1') as any).properties.status;
    assert.equal(status.properties.daemonSetHash.type, 'string');
    assert.ok(status.required.includes('daemonSetHash'));
    assert.equal(status.properties.updateRevision, undefined);
    assert.equal(status.properties.collisionCount.format, 'int32');
    assert.equal((openAPIV3Schema('v1alpha1') as any).properties.spec.properties.scaleStrategy, undefined);
  });

  test('canary, progressDeadlineSeconds and status.canary: the same schema in both versions, described for kubectl explain', () => {
    const pick = (version: ServedVersion) => {
      const root: any = openAPIV3Schema(version);
      return {
        canary: root.properties.spec.properties.updateStrategy.properties.rollingUpdate.properties.canary,
        deadline: root.properties.spec.properties.progressDeadlineSeconds,
        status: root.properties.status.properties.canary,
        lastUpdateTime: root.properties.status.properties.conditions.items.properties.lastUpdateTime,
      };
    };
    const a = pick('v1alpha1');
    assert.deepEqual(a, pick('v1beta1'));
    assert.deepEqual(Object.keys(a.canary.properties).sort(), [
      'autoFail',
      'autoPause',
      'duration',
      'noRestartsDuration',
      'nodeSelector',
      'nodes',
      'spreadByNodeLabels',
      'validation',
    ]);
    assert.equal(a.canary.properties.nodes['x-kubernetes-int-or-string'], true);
    assert.deepEqual(Object.keys(a.canary.properties.autoFail.properties).sort(), [
      'enabled',
      'maxRestarts',
      'maxRestartsDuration',
      'timeout',
    ]);
    assert.deepEqual(a.deadline.format, 'int32');
    assert.deepEqual(a.status.required, ['revision', 'stableRevision', 'nodes', 'phase']);
    assert.equal(a.lastUpdateTime.format, 'date-time');
    const undescribed: string[] = [];
    const walk = (node: any, at: string) => {
      if (!node.description) undescribed.push(at);
      for (const [k, v] of Object.entries(node.properties ?? {})) walk(v, `${at}.${k}`);
      if (node.items?.properties) walk(node.items, `${at}[]`);
    };
    walk(a.canary, 'canary');
    walk(a.status, 'status.canary');
    assert.deepEqual(undescribed, []);
  });

  test('v1beta1: no Surging and no rollingUpdate.type, scaleStrategy.partitionedScaling, status.updateRevision', () => {
    const ru = rollingUpdateOf('v1beta1');
    assert.equal(ru.properties.type, undefined);
    assert.deepEqual(Object.keys(ru.properties).sort(), [
      'canary',
      'maxSurge',
      'maxUnavailable',
      'partition',
      'paused',
      'priorityStrategy',
      'rollingUpdateType',
      'selector',
      'unhealthyNodes',
      'waves',
    ]);
    assert.doesNotMatch(ru.properties.rollingUpdateType.description, /Surging/);
    for (const k of ['maxSurge', 'maxUnavailable', 'partition'])
      assert.equal(ru.properties[k]['x-kubernetes-int-or-string'], true, k);
    const spec: any = (openAPIV3Schema('v1beta1') as any).properties.spec;
    assert.deepEqual(Object.keys(spec.properties).sort(), [
      'burstReplicas',
      'lifecycle',
      'minReadySeconds',
      'nodeReadiness',
      'progressDeadlineSeconds',
      'revisionHistoryLimit',
      'scaleStrategy',
      'selector',
      'template',
      'updateStrategy',
    ]);
    const partitionedScaling = spec.properties.scaleStrategy.properties.partitionedScaling;
    assert.equal(partitionedScaling.type, 'boolean');
    // Kruise's own description of the field.
    assert.match(
      partitionedScaling.description,
      /^PartitionedScaling indicates daemon pods created in manage phase will be controlled by partition\./,
    );
    const status: any = (openAPIV3Schema('v1beta1') as any).properties.status;
    assert.equal(status.properties.daemonSetHash, undefined);
    assert.equal(status.properties.updateRevision.type, 'string');
    assert.deepEqual(status.required, [
      'currentNumberScheduled',
      'numberMisscheduled',
      'desiredNumberScheduled',
      'numberReady',
      'updatedNumberScheduled',
    ]);
  });
});

describe('DaemonSetSetting CRD', () => {
  test('the committed chart template is not stale (run `npm run gen:crd` after editing src/api/setting.ts)', () => {
    assert.equal(
      readFileSync(SETTING_CRD_PATH, 'utf8'),
      renderSettingCrdYaml(),
      `${SETTING_CRD_PATH} differs from the generator`,
    );
  });

  test('the chart template is guarded by crd.create and kept on helm uninstall', () => {
    const text = renderSettingCrdYaml();
    assert.match(text, /^\{\{- if \.Values\.crd\.create \}\}$/m);
    assert.match(text, /^ {4}helm\.sh\/resource-policy: keep$/m);
    assert.match(text, /\{\{- end \}\}\n$/);
  });

  test('names, scope, short name; one version, stored, with the status subresource and no conversion', () => {
    const crd: any = settingCrdObject();
    assert.equal(crd.metadata.name, 'daemonsetsettings.advanced-daemonset.io');
    assert.equal(crd.spec.group, 'advanced-daemonset.io');
    assert.deepEqual(crd.spec.names, {
      kind: 'DaemonSetSetting',
      listKind: 'DaemonSetSettingList',
      plural: 'daemonsetsettings',
      singular: 'daemonsetsetting',
      shortNames: ['dss'],
    });
    assert.equal(crd.spec.scope, 'Namespaced');
    assert.deepEqual(crd.spec.conversion, { strategy: 'None' });
    assert.deepEqual(
      versionsOf(crd).map((v) => [v.name, v.served, v.storage, v.subresources]),
      [['v1alpha1', true, true, { status: {} }]],
    );
    assert.deepEqual(versionsOf(crd)[0].schema.openAPIV3Schema, settingOpenAPIV3Schema());
  });

  test('printer columns: REFERENCE, NODES, VALID, AGE; CONFLICTING at -o wide', () => {
    assert.deepEqual(
      versionsOf(settingCrdObject())[0].additionalPrinterColumns.map((c: any) => [c.name, c.type, c.jsonPath, c.priority ?? 0]),
      [
        ['REFERENCE', 'string', '.spec.reference.name', 0],
        ['NODES', 'integer', '.status.nodes', 0],
        ['VALID', 'string', '.status.conditions[?(@.type=="Valid")].status', 0],
        ['AGE', 'date', '.metadata.creationTimestamp', 0],
        ['CONFLICTING', 'string', '.status.conditions[?(@.type=="Conflicting")].status', 1],
      ],
    );
  }); // prettier-ignore

  test('structural, every field described (for kubectl explain), descriptions unwrapped', () => {
    const schema: any = settingOpenAPIV3Schema();
    assert.deepEqual(structuralProblems(schema), []);
    assert.deepEqual(undescribed(schema), []);
    for (const d of JSON.stringify(schema).match(/"description":"(?:[^"\\]|\\.)*"/g) ?? [])
      assert.equal(unwrapDescription(JSON.parse(`{${d}}`).description), JSON.parse(`{${d}}`).description, d);
  });

  test('spec: reference.name required, containers a map list keyed by name, quantities int-or-string', () => {
    const spec: any = (settingOpenAPIV3Schema() as any).properties.spec;
    assert.deepEqual((settingOpenAPIV3Schema() as any).required, ['spec']);
    assert.deepEqual(spec.required, ['reference']);
    assert.deepEqual(spec.properties.reference.required, ['name']);
    assert.deepEqual(Object.keys(spec.properties.reference.properties).sort(), ['apiVersion', 'kind', 'name']);
    const containers = spec.properties.containers;
    assert.equal(containers['x-kubernetes-list-type'], 'map');
    assert.deepEqual(containers['x-kubernetes-list-map-keys'], ['name']);
    assert.deepEqual(containers.items.required, ['name', 'resources']);
    const limit = containers.items.properties.resources.properties.limits.additionalProperties;
    assert.equal(limit['x-kubernetes-int-or-string'], true);
    assert.deepEqual(Object.keys(spec.properties.nodeSelector.properties).sort(), ['matchExpressions', 'matchLabels']);
  });
});
