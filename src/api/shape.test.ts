// The shape checks in front of defaulting and validation: nesting depth measured with bounded recursion, JSON types of
// the schemaless pod template from core/v1's models, and the committed shape table kept up to date.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { errorString } from './field.ts';
import { POD_SHAPES_PATH, podShapes } from './gen-pod-shapes.ts';
import { POD_SHAPES } from './pod-shapes.generated.ts';
import { FieldPath } from './field.ts';
import { MAX_NESTING_DEPTH, nestingError, typedShapeErrors } from './shape.ts';
import { shapeErrors } from './validation.ts';
import { daemonSetManifest, daemonSetManifestV1beta1 } from './testing/review-fixtures.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

/** {a: {a: ... 'x'}} with `levels` objects. */
function nested(levels: number, key = 'a'): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < levels; i++) v = { [key]: v };
  return v;
}

describe('nestingError', () => {
  test('the committed shape table is not stale (run `npm run gen:pod-shapes` after upgrading client-node)', () => {
    assert.ok(readFileSync(POD_SHAPES_PATH, 'utf8').includes('export const POD_SHAPES'));
    assert.deepEqual(POD_SHAPES, podShapes());
  });

  const rows = [
    { name: 'a scalar', value: 5, error: undefined },
    { name: `${MAX_NESTING_DEPTH} levels`, value: nested(MAX_NESTING_DEPTH), error: undefined },
    {
      name: `${MAX_NESTING_DEPTH + 1} levels`,
      value: nested(MAX_NESTING_DEPTH + 1),
      error: `${Array(MAX_NESTING_DEPTH).fill('a').join('.')}: Forbidden: must not be nested more than 100 levels deep (the limit of this webhook; no Kubernetes object comes near it)`,
    },
  ];
  for (const row of rows)
    test(row.name, () => {
      const err = nestingError(row.value);
      assert.equal(err && errorString(err), row.error);
    });

  test('arrays count as levels; the path names indexes; long paths are cut', () => {
    let v: unknown = 1;
    for (let i = 0; i < 150; i++) v = [v];
    const err = nestingError({ spec: { list: v } }, '');
    assert.ok(err);
    assert.match(err.field, /^spec\.list\[0\]\[0\]/);
    const long = nestingError({ spec: nested(200, 'level') }, 'oldObject');
    assert.ok(long);
    assert.ok(long.field.startsWith('oldObject.spec.level.level'));
    assert.ok(long.field.endsWith('...') && long.field.length <= 260, long.field);
  });

  test('the first value past the limit is named, in the order of the keys', () => {
    const err = nestingError({ shallow: nested(MAX_NESTING_DEPTH - 1), deep: nested(MAX_NESTING_DEPTH + 5, 'b') });
    assert.equal(
      err?.field,
      `deep.${Array(MAX_NESTING_DEPTH - 1)
        .fill('b')
        .join('.')}`,
    );
  });

  test('a million levels are measured in at most 100 levels of recursion', () => {
    const text = `${'{"a":['.repeat(1_000_000)}1${']}'.repeat(1_000_000)}`;
    const err = nestingError(JSON.parse(text));
    assert.ok(err);
    assert.equal(err.type, 'FieldValueForbidden');
  });
});

describe('shapeErrors', () => {
  const p = (f: (d: any) => void) => {
    const ds: any = daemonSetManifest();
    f(ds);
    return shapeErrors(ds).map(errorString);
  };
  const rows: { name: string; set: (d: any) => void; errors: string[] }[] = [
    { name: 'a valid object', set: () => {}, errors: [] },
    {
      name: 'matchExpressions not an array',
      set: (d) => (d.spec.selector.matchExpressions = 'x'),
      errors: [
        'spec.selector.matchExpressions: Invalid value: "string": spec.selector.matchExpressions in body must be of type array: "string"',
      ],
    },
    {
      name: 'a null selector requirement',
      set: (d) => (d.spec.selector.matchExpressions = [null]),
      errors: [
        'spec.selector.matchExpressions[0]: Invalid value: "null": spec.selector.matchExpressions[0] in body must be of type object: "null"',
      ],
    },
    {
      name: 'a null field is absent (the apiserver prunes it)',
      set: (d) => (d.spec.minReadySeconds = null),
      errors: [],
    },
    {
      name: 'a null container',
      set: (d) => d.spec.template.spec.containers.push(null),
      errors: [
        'spec.template.spec.containers[1]: Invalid value: "null": spec.template.spec.containers[1] in body must be of type object: "null"',
      ],
    },
    {
      name: 'a string for the pod spec',
      set: (d) => (d.spec.template.spec = 'x'),
      errors: [
        'spec.template.spec: Invalid value: "string": spec.template.spec in body must be of type object: "string"',
      ],
    },
    {
      name: 'wrong types deep in the template, quantities as numbers allowed',
      set: (d) => {
        const c = d.spec.template.spec.containers[0];
        c.resources = { limits: { cpu: 1, memory: true } };
        c.ports = [{ containerPort: 1.5 }, { containerPort: 2 ** 40 }];
        c.env = [{ name: 'A', value: 5 }];
        c.livenessProbe = { httpGet: { port: 'http' }, periodSeconds: '10' };
      },
      errors: [
        'spec.template.spec.containers[0].env[0].value: Invalid value: "integer": spec.template.spec.containers[0].env[0].value in body must be of type string: "integer"',
        'spec.template.spec.containers[0].livenessProbe.periodSeconds: Invalid value: "string": spec.template.spec.containers[0].livenessProbe.periodSeconds in body must be of type integer: "string"',
        'spec.template.spec.containers[0].ports[0].containerPort: Invalid value: "number": spec.template.spec.containers[0].ports[0].containerPort in body must be of type integer: "number"',
        'spec.template.spec.containers[0].ports[1].containerPort: Invalid value: 1099511627776: spec.template.spec.containers[0].ports[1].containerPort in body must be of type int32: "1099511627776"',
        'spec.template.spec.containers[0].resources.limits[memory]: Invalid value: "boolean": spec.template.spec.containers[0].resources.limits[memory] in body must be of type number,string: "boolean"',
      ],
    },
    {
      name: 'template labels of the wrong type',
      set: (d) => (d.spec.template.metadata.labels = { app: 'x', n: 5 }),
      errors: [
        'spec.template.metadata.labels[n]: Invalid value: "integer": spec.template.metadata.labels[n] in body must be of type string: "integer"',
      ],
    },
    {
      name: 'unknown fields of any shape, __proto__ and constructor included, are not checked',
      set: (d) => {
        const c = d.spec.template.spec.containers[0];
        Object.defineProperty(c, '__proto__', { value: { image: 5 }, enumerable: true, writable: true });
        c.constructor = [null];
        d.spec.template.spec.somethingNew = [null, 1];
      },
      errors: [],
    },
    {
      name: 'too deep: reported alone',
      set: (d) => {
        d.spec.template.spec.containers = 'x';
        d.spec.template.spec.extra = nested(200);
      },
      errors: [
        `spec.template.spec.extra.${Array(96).fill('a').join('.')}: Forbidden: must not be nested more than 100 levels deep (the limit of this webhook; no Kubernetes object comes near it)`,
      ],
    },
  ];
  for (const row of rows)
    test(row.name, () => {
      assert.deepEqual(p(row.set).sort(), [...row.errors].sort());
    });

  // The same rows read as v1beta1 (the JSON types of both versions' shared fields are the same), plus the fields
  // only v1beta1 has.
  const v1beta1Rows: { name: string; set: (d: any) => void; errors: string[] }[] = [
    ...rows,
    {
      name: 'scaleStrategy.partitionedScaling and status.updateRevision accepted',
      set: (d) => {
        d.spec.scaleStrategy = { partitionedScaling: true };
        d.spec.updateStrategy = { rollingUpdate: { partition: '10%', rollingUpdateType: 'InPlaceIfPossible' } };
        d.status = { updateRevision: 'abc', currentNumberScheduled: 0 };
      },
      errors: [],
    },
    {
      name: 'partitionedScaling not a boolean',
      set: (d) => (d.spec.scaleStrategy = { partitionedScaling: 'true' }),
      errors: [
        'spec.scaleStrategy.partitionedScaling: Invalid value: "string": spec.scaleStrategy.partitionedScaling in body must be of type boolean: "string"',
      ],
    },
    {
      name: 'scaleStrategy not an object',
      set: (d) => (d.spec.scaleStrategy = ['x']),
      errors: [
        'spec.scaleStrategy: Invalid value: "array": spec.scaleStrategy in body must be of type object: "array"',
      ],
    },
    {
      name: 'partition neither an integer nor a string',
      set: (d) => (d.spec.updateStrategy = { rollingUpdate: { partition: true } }),
      errors: [
        'spec.updateStrategy.rollingUpdate.partition: Invalid value: "boolean": spec.updateStrategy.rollingUpdate.partition in body must be of type integer,string: "boolean"',
      ],
    },
  ];
  for (const row of v1beta1Rows)
    test(`v1beta1: ${row.name}`, () => {
      const ds: any = daemonSetManifestV1beta1();
      row.set(ds);
      assert.deepEqual(shapeErrors(ds, 'v1beta1').map(errorString).sort(), [...row.errors].sort());
    });

  test('a v1beta1-only field in a v1alpha1 object is an unknown field, not checked (the apiserver prunes it)', () => {
    assert.deepEqual(
      p((d) => (d.spec.scaleStrategy = { partitionedScaling: 'true' })),
      [],
    );
  });

  test('typedShapeErrors refuses a type it does not know (a programming error)', () => {
    assert.throws(() => typedShapeErrors({}, 'V1Nope', FieldPath.root('x')), /no shape for V1Nope/);
  });
});
