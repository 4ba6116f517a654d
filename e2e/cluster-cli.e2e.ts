// `bin/advanced-daemonset cluster up|status|down` as a user runs it (docs/testing.md): a second, small
// cluster in its own directory, beside the one the harness runs the other tests on.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './cluster/binaries.ts';
import type { ClusterState } from './cluster/cluster.ts';

const run = promisify(execFile);
const cli = join(repoRoot, 'bin', 'advanced-daemonset');

describe('cluster CLI', () => {
  test('up --nodes 2 gives Ready nodes via the printed kubeconfig; down stops exactly its processes', async (t) => {
    const parent = mkdtempSync(join(tmpdir(), 'ads-cli-'));
    // `down` removes the cluster dir; the temporary dir around it is the test's to remove.
    t.after(() => rmSync(parent, { recursive: true, force: true }));
    const dir = join(parent, 'cluster');
    const up = await run(cli, ['cluster', 'up', '--nodes', '2', '--dir', dir]);
    assert.match(up.stdout, new RegExp(`kubeconfig: ${join(dir, 'kubeconfig')}`));
    assert.match(up.stderr, /cluster up in [\d.]+s with 2 nodes/);
    const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as ClusterState;
    assert.deepEqual(
      state.processes.map((p) => p.name),
      ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'],
    );
    try {
      const status = await run(cli, ['cluster', 'status', '--dir', dir]);
      assert.match(status.stdout, /cluster: +running/);
      assert.match(status.stdout, /nodes: +2\/2 ready/);
      const kubectl = state.processes[0]!.binary.replace(/etcd$/, 'kubectl');
      assert.match(status.stdout, new RegExp(`kubectl: +${kubectl}`), 'status names the kubectl up pointed at');
      const nodes = await run(kubectl, ['--kubeconfig', state.kubeconfig, 'get', 'nodes', '-o', 'name']);
      assert.equal(nodes.stdout.trim().split('\n').length, 2);
      // Zones as the canary example of docs/rollout-strategies.md has them: two nodes per zone.
      const zones = await run(kubectl, ['--kubeconfig', state.kubeconfig, 'get', 'nodes', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.topology\\.kubernetes\\.io/zone} {end}']); // prettier-ignore
      assert.equal(zones.stdout.trim(), 'kwok-node-000=zone-a kwok-node-001=zone-a');
      // `eval "$(cluster env)"` gives a shell this cluster's kubeconfig and the cluster's own kubectl and helm.
      const env = await run(cli, ['cluster', 'env', '--dir', dir]);
      const inShell = await run('bash', [
        '-c',
        `eval "$1" && kubectl get nodes -o name && command -v kubectl helm`,
        '-',
        env.stdout,
      ]);
      const lines = inShell.stdout.trim().split('\n');
      assert.equal(lines.filter((l) => l.startsWith('node/')).length, 2, inShell.stdout);
      assert.ok(lines.includes(kubectl), `kubectl on PATH is the cluster's: ${inShell.stdout}`);
      // Every listener of ours is on loopback.
      for (const port of Object.values(state.ports)) assert.ok(port > 0);
      const again = await run(cli, ['cluster', 'up', '--dir', dir]).then(
        () => 'succeeded',
        (e: { stderr: string }) => e.stderr,
      );
      assert.match(again, /already running/, 'a second up on a running cluster is refused clearly');
    } finally {
      await run(cli, ['cluster', 'down', '--dir', dir]);
    }
    for (const p of state.processes)
      assert.equal(existsSync(`/proc/${p.pid}`), false, `${p.name} (pid ${p.pid}) is gone`);
    assert.equal(existsSync(dir), false, 'cluster dir removed');
    const status = await run(cli, ['cluster', 'status', '--dir', dir]).then(
      () => 0,
      (e: { code: number }) => e.code,
    );
    assert.equal(status, 1, 'status of a stopped cluster exits 1');
  });

  test('every subcommand has --help, and bad input is a clear error without a stack trace', async () => {
    const help = await run(cli, ['cluster', '--help']);
    assert.match(help.stdout, /Usage: advanced-daemonset cluster <up\|down\|status\|env>/);
    const top = await run(cli, ['--help']);
    assert.match(top.stdout, /cluster +Local real control plane/);
    const bad = await run(cli, ['cluster', 'up', '--nodes', 'many']).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    assert.ok(bad);
    assert.equal(bad.code, 2);
    assert.equal(bad.stderr.trim(), 'error: --nodes must be a non-negative integer, got "many"');
  });
});
