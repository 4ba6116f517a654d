import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../api/types.ts';
import type { Node } from '../k8s/types.ts';
import { adoptPatch, claimObjects, releasePatch } from './claim.ts';
import { nodeUpdateAffects, shouldIgnoreNodeUpdate } from './eligibility.ts';
import { slowStartBatches } from './manage.ts';
import { FOO_CONTROLLER_REF, newDaemonSet, newNode, newPod } from './test-fixtures.ts';

describe('claimObjects (adopt / release)', () => {
  const ds = newDaemonSet();
  const other = { ...newDaemonSet({ name: 'bar' }) } as DaemonSet;
  const owned = newPod(ds, 'n', { name: 'owned' });
  const ownedNoMatch = newPod(ds, 'n', { name: 'owned-nomatch' });
  ownedNoMatch.metadata.labels = { name: 'something-else' };
  const orphan = {
    ...newPod(ds, 'n', { name: 'orphan' }),
    metadata: { ...newPod(ds, 'n', { name: 'orphan' }).metadata, ownerReferences: [] },
  };
  const orphanDeleting = {
    ...orphan,
    metadata: { ...orphan.metadata, name: 'orphan-deleting', deletionTimestamp: '2024-01-01T00:00:00Z' },
  };
  const orphanOtherNs = { ...orphan, metadata: { ...orphan.metadata, name: 'orphan-other-ns', namespace: 'other' } };
  const othersPod = newPod(other, 'n', { name: 'others' });
  const all = [owned, ownedNoMatch, orphan, orphanDeleting, orphanOtherNs, othersPod];
  const names = (l: { metadata: { name?: string } }[]) => l.map((o) => o.metadata.name);

  test('owned+matching kept, owned+not matching released, matching live orphans in the namespace adopted', () => {
    const r = claimObjects(ds, all);
    assert.deepEqual([names(r.owned), names(r.adopt), names(r.release)], [['owned'], ['orphan'], ['owned-nomatch']]);
  });
  test('a DaemonSet being deleted neither adopts nor releases', () => {
    const deleting = { ...ds, metadata: { ...ds.metadata, deletionTimestamp: '2024-01-01T00:00:00Z' } } as DaemonSet;
    const r = claimObjects(deleting, all);
    assert.deepEqual([names(r.owned), r.adopt.length, r.release.length], [['owned'], 0, 0]);
  });
  test('an empty selector adopts nothing', () => {
    const empty = { ...ds, spec: { ...ds.spec, selector: {} } } as DaemonSet;
    assert.equal(claimObjects(empty, all).adopt.length, 0);
  });
  test('patches: controllerRef with blockOwnerDeletion; release by uid', () => {
    assert.deepEqual(adoptPatch(ds, orphan), {
      metadata: {
        ownerReferences: [FOO_CONTROLLER_REF],
        uid: orphan.metadata.uid,
      },
    });
    assert.deepEqual(releasePatch(ds, owned), {
      metadata: { ownerReferences: [{ $patch: 'delete', uid: 'foo-uid' }], uid: owned.metadata.uid },
    });
  });
});

describe('slowStartBatches', () => {
  const rows: { n: number; want: number[] }[] = [
    { n: 0, want: [] },
    { n: 1, want: [1] },
    { n: 3, want: [1, 2] },
    { n: 10, want: [1, 2, 4, 3] },
    { n: 250, want: [1, 2, 4, 8, 16, 32, 64, 123] },
  ];
  for (const { n, want } of rows) test(`${n} -> ${want.join(',')}`, () => assert.deepEqual(slowStartBatches(n), want));
});

describe('node event decisions', () => {
  const ds = newDaemonSet({ templateSpec: { nodeSelector: { color: 'blue' } } });
  const withConds = (n: Node, conds: [string, 'True' | 'False'][], rv = '1'): Node => ({
    ...n,
    metadata: { ...n.metadata, resourceVersion: rv },
    status: { conditions: conds.map(([type, status]) => ({ type, status, lastHeartbeatTime: rv })) },
  });
  test('heartbeat-only updates are ignored; a True-condition change is not', () => {
    const a = withConds(newNode('n', { color: 'blue' }), [['Ready', 'True']], '1');
    assert.equal(shouldIgnoreNodeUpdate(a, withConds(newNode('n', { color: 'blue' }), [['Ready', 'True']], '2')), true);
    assert.equal(
      shouldIgnoreNodeUpdate(a, withConds(newNode('n', { color: 'blue' }), [['Ready', 'False']], '2')),
      false,
    );
  });
  test('relabel in and out of the nodeSelector affects the DaemonSet; an unrelated label does not', () => {
    const blue = newNode('n', { color: 'blue' });
    assert.equal(nodeUpdateAffects(newNode('n', {}), blue, ds), true);
    assert.equal(nodeUpdateAffects(blue, newNode('n', { color: 'green' }), ds), true);
    assert.equal(nodeUpdateAffects(blue, newNode('n', { color: 'blue', x: 'y' }), ds), false);
  });
  test('a NoExecute taint (shouldContinueRunning flips) affects it', () => {
    const blue = newNode('n', { color: 'blue' });
    assert.equal(
      nodeUpdateAffects(blue, newNode('n', { color: 'blue' }, [{ key: 'k', effect: 'NoExecute' }]), ds),
      true,
    );
  });
});
