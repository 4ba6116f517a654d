// e2e: NOTES.txt says exactly what to run when an out-of-cluster manager (--webhook-host) left its webhook
// configurations behind. The harness's own manager runs out of cluster here, registered by URL under the default
// name, so `helm install --dry-run=server` (which renders NOTES with lookups against the cluster) sees them as it
// would after such a manager was killed; with another configuration name there is nothing to warn about.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chartDir, helmCluster } from './lib.ts';
import { kubectlJson } from '../lib/kube.ts';

test('helm install names the leftover webhook configurations of an out-of-cluster manager and how to delete them', async () => {
  const m = await kubectlJson<{ webhooks: { clientConfig: { url?: string } }[] }>([
    ...['get', 'mutatingwebhookconfiguration', 'advanced-daemonset-mutating'],
  ]);
  assert.ok(m.webhooks[0]?.clientConfig.url, 'the harness manager registered by URL');
  const out = await helmCluster([
    ...['install', 'notes-check', chartDir, '--namespace', 'default', '--dry-run=server'],
    ...['--set', 'crd.create=false'],
  ]);
  assert.match(out, /WARNING: an out-of-cluster manager \(--webhook-host\) left its webhook configurations behind/);
  assert.match(out, /^ {2}kubectl delete mutatingwebhookconfiguration advanced-daemonset-mutating$/m);
  assert.match(out, /^ {2}kubectl delete validatingwebhookconfiguration advanced-daemonset-validating$/m);
  // A release whose own configurations have those names takes them over (--take-ownership): no warning about itself.
  const own = await helmCluster([
    ...['install', 'advanced-daemonset', chartDir, '--namespace', 'default', '--dry-run=server', '--take-ownership'],
    ...['--set', 'crd.create=false', '--set', 'fullnameOverride=advanced-daemonset'],
  ]);
  assert.match(own, /^NOTES:/m, 'the NOTES were rendered');
  assert.doesNotMatch(own, /WARNING: an out-of-cluster manager/);
});
