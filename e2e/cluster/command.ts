import { flagsHelp, intFlag, defineCommand, stringWithDefault, UserError, type Flags } from '../../src/cli/command.ts';
import { join } from 'node:path';
import { cacheDir, ensureBinaries, versions } from './binaries.ts';
import { clusterDown, clusterStatus, clusterUp, defaultClusterDir } from './cluster.ts';

const flags = {
  nodes: intFlag("fake nodes to create with 'up'", 3),
  dir: {
    ...stringWithDefault('cluster directory', defaultClusterDir(), 'DIR'),
    defaultHelp: `$ADS_CLUSTER_DIR or ${join(cacheDir(), 'cluster')}`,
  },
} satisfies Flags;

const usage = `Usage: advanced-daemonset cluster <up|down|status> [flags]

A local Kubernetes control plane of real upstream components as processes on 127.0.0.1:
etcd, kube-apiserver, kube-controller-manager, kube-scheduler (Kubernetes ${versions.kubernetes})
and kwok ${versions.kwok} for fake nodes. The binaries are built from the Go module proxy on
first use and cached (see README: caches); a cold build takes many minutes.

Subcommands:
  up       start the control plane and create fake nodes; prints the kubeconfig path
  down     stop exactly the processes 'up' started and remove the cluster directory
  status   show the recorded processes, ready nodes and the kubeconfig path

Flags:
${flagsHelp(flags)}
`;

export const clusterCommand = defineCommand({
  name: 'cluster',
  summary: 'Local real control plane (etcd, apiserver, scheduler, KCM, kwok): up | down | status',
  usage,
  flags,
  positionals: true,
  async run(parsed) {
    const [sub, ...extra] = parsed.positionals;
    if (extra.length > 0)
      throw new UserError(`cluster: unexpected argument "${extra[0]}"\nRun with --help for usage.`, 2);
    const { nodes, dir } = parsed.values;
    const say = (l: string) => process.stderr.write(`${l}\n`);
    switch (sub) {
      case 'up': {
        say(
          'checking control-plane binaries (built from the Go module proxy on first use; a cold build takes many minutes)',
        );
        await ensureBinaries();
        const controller = new AbortController();
        // Ctrl-C while starting: stop what was started rather than leave stray processes.
        const onSigint = () => controller.abort();
        process.once('SIGINT', onSigint);
        try {
          const state = await Promise.race([
            clusterUp({ dir, nodes, progress: say }),
            new Promise<never>((_, reject) =>
              controller.signal.addEventListener('abort', () => reject(new UserError('interrupted', 130))),
            ),
          ]);
          console.log(`kubeconfig: ${state.kubeconfig}`);
          console.log(`try: KUBECONFIG=${state.kubeconfig} ${'kubectl'} get nodes   (kubectl: see 'cluster status')`);
          return 0;
        } catch (err) {
          if (controller.signal.aborted) await clusterDown({ dir, progress: say });
          throw err;
        } finally {
          process.off('SIGINT', onSigint);
        }
      }
      case 'down':
        await clusterDown({ dir, progress: say });
        return 0;
      case 'status': {
        const st = await clusterStatus(dir);
        if (!st.state) {
          console.log(`no cluster in ${dir} (start one with 'advanced-daemonset cluster up')`);
          return 1;
        }
        const allAlive = st.running.every((r) => r.alive);
        console.log(`cluster:    ${allAlive ? 'running' : 'DEGRADED (some processes are gone)'}`);
        console.log(`apiserver:  ${st.state.server} (Kubernetes ${st.state.kubernetesVersion})`);
        console.log(`kubeconfig: ${st.state.kubeconfig}`);
        if (st.nodes) console.log(`nodes:      ${st.nodes.ready}/${st.nodes.total} ready`);
        for (const r of st.running)
          console.log(`  ${r.name.padEnd(24)} pid ${String(r.pid).padEnd(8)} ${r.alive ? 'running' : 'exited'}`);
        return allAlive ? 0 : 1;
      }
      default:
        throw new UserError(
          `cluster: expected up, down or status${sub ? `, got "${sub}"` : ''}\nRun with --help for usage.`,
          2,
        );
    }
  },
});
