// Canary node tables: how many, which ones, and the stable revision the other nodes keep.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ControllerRevision, Pod } from '../../k8s/types.ts';
import { CONTROLLER_REVISION_HASH_LABEL } from '../constants.ts';
import { newDaemonSet, newPod } from '../test-fixtures.ts';
import { canaryNodeCount, selectCanaryNodes, stableRevisionHash, type CanaryCandidate } from './nodes.ts';

describe('canaryNodeCount: int or "N%" of desired, rounded up, at least 1', () => {
  const rows: { nodes: number | string; desired: number; want: number }[] = [
    { nodes: 3, desired: 10, want: 3 },
    { nodes: '10%', desired: 10, want: 1 },
    { nodes: '10%', desired: 11, want: 2 },
    { nodes: '25%', desired: 10, want: 3 },
    { nodes: '1%', desired: 0, want: 1 },
    { nodes: 0, desired: 5, want: 1 },
    { nodes: 'x', desired: 5, want: 1 },
  ];
  for (const r of rows) {
    test(`${r.nodes} of ${r.desired} -> ${r.want}`, () => assert.equal(canaryNodeCount(r.nodes, r.desired), r.want));
  }
});

describe('selectCanaryNodes', () => {
  const cand = (name: string, restarts = 0, zone = ''): CanaryCandidate => ({
    name,
    restarts,
    spreadKey: JSON.stringify(zone ? [zone] : []),
  });
  const rows: { name: string; candidates: CanaryCandidate[]; count: number; previous?: string[]; want: string[] }[] = [
    {
      name: 'fewest restarts first, then by name',
      candidates: [cand('a', 3), cand('b', 0), cand('c', 1), cand('d', 0)],
      count: 2,
      want: ['b', 'd'],
    },
    {
      name: 'round-robin over zones: one per zone before a second in any',
      candidates: [cand('a1', 0, 'a'), cand('a2', 0, 'a'), cand('a3', 0, 'a'), cand('b1', 5, 'b'), cand('c1', 1, 'c')],
      count: 3,
      want: ['a1', 'b1', 'c1'],
    },
    {
      name: 'the second round goes to the groups with the better candidates',
      candidates: [cand('a1', 0, 'a'), cand('a2', 0, 'a'), cand('b1', 2, 'b'), cand('b2', 9, 'b')],
      count: 3,
      want: ['a1', 'a2', 'b1'],
    },
    {
      name: 'previous nodes are kept (stable across syncs), even with more restarts',
      candidates: [cand('a', 7), cand('b', 0), cand('c', 0)],
      count: 2,
      previous: ['a', 'c'],
      want: ['a', 'c'],
    },
    {
      name: 'a previous node gone (or no longer a candidate) is replaced, spreading against the kept ones',
      candidates: [cand('a1', 0, 'a'), cand('a2', 0, 'a'), cand('b1', 0, 'b'), cand('b2', 0, 'b')],
      count: 2,
      previous: ['a1', 'gone'],
      want: ['a1', 'b1'],
    },
    {
      name: 'never shrinks: more previous nodes than count are kept',
      candidates: [cand('a'), cand('b'), cand('c')],
      count: 1,
      previous: ['b', 'c'],
      want: ['b', 'c'],
    },
    { name: 'fewer candidates than count', candidates: [cand('a')], count: 3, want: ['a'] },
    { name: 'no candidate', candidates: [], count: 3, want: [] },
  ];
  for (const r of rows) {
    test(r.name, () => assert.deepEqual(selectCanaryNodes(r.candidates, r.count, r.previous), r.want));
  }
});

describe('stableRevisionHash', () => {
  const ds = newDaemonSet();
  const rev = (hash: string, revision: number) =>
    ({
      metadata: { name: `foo-${hash}`, labels: { [CONTROLLER_REVISION_HASH_LABEL]: hash } },
      revision,
    }) as ControllerRevision;
  const revisions = new Map([
    ['r1', rev('r1', 1)],
    ['r2', rev('r2', 2)],
    ['r3', rev('r3', 3)],
  ]);
  const pods = (hashes: string[], extra: Partial<Parameters<typeof newPod>[2]> = {}) =>
    hashes.map((h, i) => newPod(ds, `n${i}`, { hash: h, ...extra }));
  const rows: { name: string; pods: Pod[]; want: string | undefined }[] = [
    { name: 'the revision most pods run', pods: pods(['r1', 'r2', 'r2', 'r3']), want: 'r2' },
    { name: 'ties go to the newer revision', pods: pods(['r1', 'r2']), want: 'r2' },
    { name: 'the current revision does not count', pods: pods(['r3', 'r3', 'r1']), want: 'r1' },
    { name: 'every pod on the current revision: none', pods: pods(['r3']), want: undefined },
    { name: 'no pods: none (a new DaemonSet)', pods: [], want: undefined },
    { name: 'a revision without ControllerRevision does not count', pods: pods(['gone', 'gone', 'r1']), want: 'r1' },
    { name: 'terminating pods do not count', pods: pods(['r1', 'r1'], { deleting: true }), want: undefined },
  ];
  for (const r of rows) test(r.name, () => assert.equal(stableRevisionHash(r.pods, 'r3', revisions), r.want));
});
