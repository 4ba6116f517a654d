import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Node } from '../../src/k8s/types.ts';
import { taintsPatch } from './node-readiness.ts';

test('taintsPatch tests the taints it read, or the resourceVersion of a node that had none', () => {
  const taint = { key: 'example.com/agent-not-ready', effect: 'NoSchedule' as const };
  const other = { key: 'example.com/other', effect: 'PreferNoSchedule' as const };
  const node: Node = { metadata: { name: 'n', resourceVersion: '42' }, spec: { taints: [taint, other] } };
  assert.deepEqual(taintsPatch(node, [other]), [
    { op: 'test', path: '/spec/taints', value: [taint, other] },
    { op: 'add', path: '/spec/taints', value: [other] },
  ]);
  const bare: Node = { metadata: { name: 'n', resourceVersion: '42' }, spec: {} };
  assert.deepEqual(taintsPatch(bare, [taint]), [
    { op: 'test', path: '/metadata/resourceVersion', value: '42' },
    { op: 'add', path: '/spec/taints', value: [taint] },
  ]);
});
