// e2e: a CRD that serves only v1alpha1 (chart value crd.servedVersions: [v1alpha1], with storageVersion v1alpha1),
// for clusters whose tools know only v1alpha1. kubectl-kruise 1.2.2 resolves `daemonsets.apps.kruise.io` through
// discovery's preferred version and has only v1alpha1 types registered, so it fails once v1beta1 is served; it cannot
// be built here (the Go module proxy refuses openkruise's modules), so this checks what it relies on: discovery
// prefers (and lists only) v1alpha1, and the resource reads as v1alpha1. The manager runs with
// --daemonset-api-version v1alpha1 (as the chart sets it then) and rolls a DaemonSet out, status and all.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { installCrd } from '../cluster/crd.ts';
import { KubectlError, apply, createTestNodes, kubectl } from '../lib/kube.ts';
import {
  adsManifest,
  describeOnPrivateCluster,
  getAds,
  imagePatch,
  kubectlAds,
  patchAds,
  waitRolledOut,
} from '../lib/ads.ts';
import { startManager, type ManagerProcess } from '../lib/manager.ts';

describeOnPrivateCluster('a CRD that serves only v1alpha1', { timeout: 300_000, crd: false }, (cluster) => {
  let manager: ManagerProcess;
  let nodes: string[];
  before(async () => {
    await installCrd(cluster.kubeconfig, { storageVersion: 'v1alpha1', servedVersions: ['v1alpha1'] });
    manager = await startManager({
      kubeconfig: cluster.kubeconfig,
      dir: join(cluster.dir, 'manager'),
      args: ['--daemonset-api-version', 'v1alpha1'],
      timeoutMs: 120_000,
    });
    nodes = await createTestNodes('alpha', 3);
  });

  test('discovery prefers and lists only v1alpha1; a v1beta1 read is refused', async () => {
    const group = JSON.parse(await kubectl(['get', '--raw', '/apis/apps.kruise.io'])) as {
      versions: { version: string }[];
      preferredVersion: { version: string };
    };
    assert.equal(group.preferredVersion.version, 'v1alpha1');
    assert.deepEqual(
      group.versions.map((v) => v.version),
      ['v1alpha1'],
    );
    await assert.rejects(kubectl(['get', 'daemonsets.v1beta1.apps.kruise.io', '-A']), KubectlError);
  });

  test('the manager reads and writes v1alpha1: a DaemonSet rolls out and rolls an image; kubectl ads status agrees', async () => {
    await apply(adsManifest({ name: 'agent', namespace: 'default', group: 'alpha' }));
    const ds = await waitRolledOut('default', 'agent', nodes.length);
    assert.equal(ds.apiVersion, 'apps.kruise.io/v1alpha1', 'the unqualified resource reads as v1alpha1');
    await patchAds('default', 'agent', imagePatch('busybox:1.37'));
    const after = await waitRolledOut('default', 'agent', nodes.length);
    assert.notEqual(after.status?.daemonSetHash, ds.status?.daemonSetHash, 'a new revision rolled out');
    assert.equal((await getAds('default', 'agent')).status?.updatedNumberScheduled, nodes.length);
    // The plugin reads v1alpha1, served in both modes (exit 0 when complete; a non-zero exit throws).
    assert.match(await kubectlAds(['status', 'agent', '-n', 'default', '--watch=false']), /successfully rolled out/);
    assert.equal(await manager.stop(), 0);
  });
});
