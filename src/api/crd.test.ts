// The committed CRD must be what the generator makes from schema.ts; the CRD itself must have what kubectl and
// Kruise users rely on (structural schema with descriptions, preserved pod template, status subresource, short
// names, printer columns; docs/kruise-rules.md#api).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { crdObject, openAPIV3Schema } from './crd.ts';
import { CRD_PATH, renderCrdYaml } from './gen-crd.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

describe('CRD', () => {
  test('the committed chart CRD is not stale (run `npm run gen:crd` after editing src/api/schema.ts)', () => {
    assert.equal(readFileSync(CRD_PATH, 'utf8'), renderCrdYaml(), `${CRD_PATH} differs from the generator`);
  });

  test('names, scope, status subresource and short names', () => {
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
    assert.deepEqual(crd.spec.versions[0].subresources, { status: {} });
  });

  test('printer columns, CONTAINERS and IMAGES only at -o wide', () => {
    const cols: any[] = (crdObject() as any).spec.versions[0].additionalPrinterColumns;
    assert.deepEqual(
      cols.map((c) => [c.name, c.jsonPath, c.priority ?? 0]),
      [
        ['DESIRED', '.status.desiredNumberScheduled', 0],
        ['CURRENT', '.status.currentNumberScheduled', 0],
        ['READY', '.status.numberReady', 0],
        ['UP-TO-DATE', '.status.updatedNumberScheduled', 0],
        ['AVAILABLE', '.status.numberAvailable', 0],
        ['AGE', '.metadata.creationTimestamp', 0],
        ['CONTAINERS', '.spec.template.spec.containers[*].name', 1],
        ['IMAGES', '.spec.template.spec.containers[*].image', 1],
      ],
    );
  });

  test('structural: every node has a type (or int-or-string / preserve-unknown-fields) and no forbidden keywords', () => {
    const problems: string[] = [];
    const walk = (node: any, at: string) => {
      if (!node['x-kubernetes-int-or-string'] && !node.type) problems.push(`${at}: no type`);
      for (const k of ['$id', '$schema', 'patternProperties', 'const', 'additionalItems'])
        if (k in node) problems.push(`${at}: ${k}`);
      for (const [name, child] of Object.entries(node.properties ?? {})) walk(child, `${at}.${name}`);
      if (node.items) walk(node.items, `${at}[]`);
      if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${at}{}`);
    };
    walk(openAPIV3Schema(), '');
    assert.deepEqual(problems, []);
  });

  test('descriptions for kubectl explain; pod template preserved as Kruise does', () => {
    const spec: any = (openAPIV3Schema() as any).properties.spec;
    const partition = spec.properties.updateStrategy.properties.rollingUpdate.properties.partition;
    assert.match(partition.description, /remain at the old revision/);
    assert.equal(partition['x-kubernetes-int-or-string'], true);
    assert.equal(spec.properties.template['x-kubernetes-preserve-unknown-fields'], true);
    assert.deepEqual(spec.required, ['selector', 'template']);
    const missing: string[] = [];
    const walk = (node: any, at: string) => {
      for (const [name, child] of Object.entries<any>(node.properties ?? {})) {
        if (!child.description && name !== 'metadata') missing.push(`${at}.${name}`);
        walk(child, `${at}.${name}`);
      }
    };
    walk(openAPIV3Schema(), '');
    assert.deepEqual(missing, [], 'every field has a description');
  });

  test('status has daemonSetHash and collisionCount', () => {
    const status: any = (openAPIV3Schema() as any).properties.status;
    assert.equal(status.properties.daemonSetHash.type, 'string');
    assert.equal(status.properties.collisionCount.format, 'int32');
  });
});
