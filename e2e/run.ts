// `npm run test:e2e`: builds the control plane if needed, starts one local cluster for the whole
// run, runs every e2e/**/*.e2e.ts (and bench/smoke.e2e.ts, the benchmarks' smoke run, which lives beside what it
// runs since e2e/ never imports bench/) against it with node's test runner, and tears it down.
// Set ADS_E2E_KUBECONFIG to run against a cluster you already started (faster while iterating),
// and pass test-name filters through: `npm run test:e2e -- --test-name-pattern=rollback`.
// Naming e2e files runs only those: `npm run test:e2e -- e2e/controller/basics.e2e.ts`.
// Artefacts tests keep (screenshots) go to $ADS_E2E_ARTEFACTS, by default a new temporary directory named at the end.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { ensureBinaries, repoRoot } from './cluster/binaries.ts';
import { clusterDown, clusterUp, readState } from './cluster/cluster.ts';
import { installCrd, waitConversionWebhook } from './cluster/crd.ts';
import { startManager, type ManagerProcess } from './lib/manager.ts';

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
  // What tests keep for a person to look at (screenshots: e2e/lib/artefacts.ts), kept after the run.
  const artefacts = process.env.ADS_E2E_ARTEFACTS || mkdtempSync(join(tmpdir(), 'ads-e2e-artefacts-'));
  let code = 1;
  let manager: ManagerProcess | undefined;
  // The manager's dir (its log), removed after a run that passed, kept after one that failed, as the cluster's logs.
  const managerDir = mkdtempSync(join(tmpdir(), 'ads-e2e-manager-'));
  try {
    // The product under test: our CRD and one manager (webhook + controller) for the whole run.
    say('installing the CRD and starting the manager (webhook + controller, out of cluster)');
    await installCrd(kubeconfig);
    manager = await startManager({
      kubeconfig,
      dir: managerDir,
      // Image pre-download is behind its feature gate (off by default); on here, so every test runs with it.
      args: [
        '--log-level',
        process.env.ADS_E2E_MANAGER_LOG_LEVEL ?? 'debug',
        '--feature-gates',
        'PreDownloadImageForDaemonSetUpdate=true',
      ],
    });
    // The manager registers the CRD's conversion webhook by URL: every v1alpha1 write needs it from now on.
    await waitConversionWebhook(kubeconfig, `https://127.0.0.1:${manager.webhookPort}/convert`);
    say(`manager ready (log ${manager.log})`);
    say(`running ${files.length} e2e files: ${files.map((f) => relative(repoRoot, f)).join(', ')}`);
    code = await new Promise<number>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...extraArgs, ...files],
        {
          stdio: 'inherit',
          cwd: repoRoot,
          env: {
            ...process.env,
            KUBECONFIG: kubeconfig,
            ADS_E2E_CLUSTER_DIR: dir ?? '',
            ADS_E2E_ARTEFACTS: artefacts,
          },
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
    else if (code === 0) rmSync(managerDir, { recursive: true, force: true });
    if (readdirSync(artefacts).length > 0) say(`test artefacts (screenshots) kept in ${artefacts}`);
    else if (!process.env.ADS_E2E_ARTEFACTS) rmSync(artefacts, { recursive: true, force: true });
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
