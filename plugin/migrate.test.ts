// planMigration as a table: what an apps/v1 DaemonSet becomes, and when taking it over would not keep every pod.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../src/api/types.ts';
import { defaultDaemonSet, type JsonObject } from '../src/api/defaults.ts';
import { revisionData } from '../src/daemonset/history.ts';
import type { ControllerRevision, Pod } from '../src/k8s/types.ts';
import { advancedDaemonSetFor, planMigration, type NativeDaemonSet } from './migrate.ts';

const native = (edit: (n: NativeDaemonSet) => void = () => {}): NativeDaemonSet => {
  const n: NativeDaemonSet = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {
      name: 'agent',
      namespace: 'ops',
      uid: 'u-native',
      generation: 2,
      labels: { team: 'infra' },
      annotations: {
        'deprecated.daemonset.template.generation': '2',
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
        owner: 'infra@example.com',
      },
    },
    spec: {
      selector: { matchLabels: { app: 'agent' } },
      template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'a', image: 'agent:1' }] } },
      minReadySeconds: 5,
      revisionHistoryLimit: 4,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%', maxSurge: 0 } },
    },
    status: { observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 2 },
  };
  edit(n);
  return n;
};
const defaulted = (n: NativeDaemonSet) => defaultDaemonSet(advancedDaemonSetFor(n) as unknown as JsonObject) as unknown as DaemonSet; // prettier-ignore
const revision = (ds: DaemonSet, name = 'rev-a'): ControllerRevision => ({
  apiVersion: 'apps/v1',
  kind: 'ControllerRevision',
  metadata: { name, labels: { 'controller-revision-hash': name } },
  data: revisionData(ds),
  revision: 2,
});
const pod = (name: string, hash = 'rev-a'): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, uid: `u-${name}`, labels: { app: 'agent', 'controller-revision-hash': hash } },
  spec: { nodeName: `node-${name}`, containers: [] },
});

describe('advancedDaemonSetFor: the same name, labels, selector, template and budget', () => {
  test('RollingUpdate: Standard with the native maxUnavailable and maxSurge; its own annotations dropped', () => {
    const ds = advancedDaemonSetFor(native());
    assert.equal(ds.apiVersion, 'apps.kruise.io/v1alpha1');
    assert.deepEqual(ds.metadata, { name: 'agent', namespace: 'ops', labels: { team: 'infra' }, annotations: { owner: 'infra@example.com' } }); // prettier-ignore
    assert.deepEqual(ds.spec.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: '10%', maxSurge: 0 } }); // prettier-ignore
    assert.equal(ds.spec.minReadySeconds, 5);
    assert.equal(ds.spec.revisionHistoryLimit, 4);
    assert.deepEqual(ds.spec.template, native().spec.template);
  });
  test('OnDelete stays OnDelete; v1beta1 on request', () => {
    const ds = advancedDaemonSetFor(native((n) => (n.spec.updateStrategy = { type: 'OnDelete' })), 'apps.kruise.io/v1beta1'); // prettier-ignore
    assert.deepEqual(ds.spec.updateStrategy, { type: 'OnDelete' });
    assert.equal(ds.apiVersion, 'apps.kruise.io/v1beta1');
  });
});

describe('planMigration: refused when a pod would not be kept', () => {
  const rows: { name: string; n: NativeDaemonSet; revisions?: (d: DaemonSet) => ControllerRevision[]; pods?: Pod[]; refusals: RegExp[] }[] = [
    { name: 'settled, the revision matches, every pod on it: no refusal', n: native(), refusals: [] },
    {
      name: 'a rollout still running',
      n: native((n) => (n.status = { observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 1 })),
      refusals: [/^ops\/agent: daemonset.apps\/agent is rolling out \(1 of 2 pods updated\)/],
    },
    {
      name: 'a generation not yet observed',
      n: native((n) => (n.metadata.generation = 3)),
      refusals: [/is rolling out/],
    },
    {
      name: 'no revision holds the template (the controller would hash it anew)',
      n: native(),
      revisions: (d) => [revision({ ...d, spec: { ...d.spec, template: { ...d.spec.template, metadata: { labels: { app: 'other' } } } } })],
      refusals: [/no ControllerRevision of daemonset.apps\/agent holds its template/],
    },
    {
      name: 'a pod of an older revision',
      n: native(),
      pods: [pod('a'), pod('b', 'rev-old')],
      refusals: [/1 pod\(s\) do not run revision rev-a \(b\): they would be replaced/],
    },
  ]; // prettier-ignore
  for (const r of rows)
    test(r.name, () => {
      const d = defaulted(r.n);
      const plan = planMigration(r.n, d, r.revisions?.(d) ?? [revision(d)], r.pods ?? [pod('a'), pod('b')]);
      assert.equal(plan.refusals.length, r.refusals.length, plan.refusals.join('\n'));
      r.refusals.forEach((re, i) => assert.match(plan.refusals[i]!, re));
      assert.equal(plan.steps.length, 3);
      assert.match(plan.steps[0]!, /propagationPolicy Orphan: its 2 pod\(s\) and 1 ControllerRevision\(s\) stay/);
      assert.deepEqual(
        plan.pods.map((p) => p.uid),
        ['u-a', r.pods ? 'u-b' : 'u-b'],
      );
    });
});
