// `npm run test:e2e`: builds the control plane if needed, starts one local cluster for the whole
// run, runs every e2e/**/*.e2e.ts (and bench/smoke.e2e.ts, the benchmarks' smoke run, which lives beside what it
// runs since e2e/ never imports bench/) against it with node's test runner, and tears it down.
// Set ADS_E2E_KUBECONFIG to run against a cluster you already started (faster while iterating),
// and pass test-name filters through: `npm run test:e2e -- --test-name-pattern=rollback`.
// Naming e2e files runs only those: `npm run test:e2e -- e2e/controller/basics.e2e.ts`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { ensureBinaries, repoRoot } from './cluster/binaries.ts';
import { clusterDown, clusterUp, kubectl, readState } from './cluster/cluster.ts';
import { startManager, type ManagerProcess } from './lib/manager.ts';

const CRD = join(repoRoot, 'charts', 'advanced-daemonset', 'crds', 'apps.kruise.io_daemonsets.yaml');

function findTests(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) return findTests(p);
    return p.endsWith('.e2e.ts') ? [p] : [];
  });
}

const say = (l: string) => process.stderr.write(`[e2e] ${l}\n`);

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const named = args.filter((a) => a.endsWith('.e2e.ts')).map((a) => resolve(repoRoot, a));
  const extraArgs = args.filter((a) => !a.endsWith('.e2e.ts'));
  const files = named.length > 0 ? named : ['e2e', 'bench'].flatMap((d) => findTests(join(repoRoot, d))).sort();
  let kubeconfig = process.env.ADS_E2E_KUBECONFIG;
  let dir: string | undefined;
  if (!kubeconfig) {
    say('checking control-plane binaries (a cold build takes many minutes)');
    await ensureBinaries();
    dir = mkdtempSync(join(tmpdir(), 'ads-e2e-'));
    const state = await clusterUp({ dir, nodes: 0, progress: (l) => say(l) });
    kubeconfig = state.kubeconfig;
  }
  let code = 1;
  let manager: ManagerProcess | undefined;
  try {
    // The product under test: our CRD and one manager (webhook + controller) for the whole run.
    say('installing the CRD and starting the manager (webhook + controller, out of cluster)');
    await kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', CRD]);
    await kubectl(kubeconfig, [
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/daemonsets.apps.kruise.io',
    ]);
    manager = await startManager({
      kubeconfig,
      dir: mkdtempSync(join(tmpdir(), 'ads-e2e-manager-')),
      // Image pre-download is behind its feature gate (off by default); on here, so every test runs with it.
      args: [
        '--log-level',
        process.env.ADS_E2E_MANAGER_LOG_LEVEL ?? 'debug',
        '--feature-gates',
        'PreDownloadImageForDaemonSetUpdate=true',
      ],
    });
    say(`manager ready (log ${manager.log})`);
    say(`running ${files.length} e2e files: ${files.map((f) => relative(repoRoot, f)).join(', ')}`);
    code = await new Promise<number>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...extraArgs, ...files],
        {
          stdio: 'inherit',
          cwd: repoRoot,
          env: { ...process.env, KUBECONFIG: kubeconfig, ADS_E2E_CLUSTER_DIR: dir ?? '' },
        },
      );
      child.on('error', reject);
      child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
    });
  } finally {
    const managerExit = await manager?.stop();
    if (manager && managerExit !== 0) {
      say(`manager exited with ${managerExit} on SIGTERM (expected 0); log ${manager.log}`);
      if (code === 0) code = 1;
    }
    if (code !== 0 && manager) say(`manager log: ${manager.log}`);
    if (dir) {
      if (code !== 0) {
        const state = readState(dir);
        say(`e2e failed; component logs kept in ${join(dir, 'logs')}`);
        for (const p of state?.processes ?? []) say(`  ${p.name}: ${p.log}`);
      }
      await clusterDown({ dir, progress: (l) => say(l), keepDir: code !== 0 });
    }
  }
  return code;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    say(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
