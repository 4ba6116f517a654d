import { flagsHelp, intFlag, defineCommand, stringWithDefault, UserError, type Flags } from '../../src/cli/command.ts';
import { dirname, join } from 'node:path';
import { binaries, cacheDir, ensureBinaries, ensureNodeBinaries, versions } from './binaries.ts';
import { clusterDown, clusterStatus, clusterUp, defaultClusterDir } from './cluster.ts';
import { FAKE_NODE_TAINT, realNodeUnsupported } from './real-node.ts';

const flags = {
  nodes: intFlag("fake nodes to create with 'up'", 3),
  'real-nodes': intFlag(
    "real nodes to add with 'up': a kubelet with containerd and runc each, pulling from a registry on 127.0.0.1 " +
      `(Linux, root); with any, the fake nodes are tainted ${FAKE_NODE_TAINT.key}=${FAKE_NODE_TAINT.value}:${FAKE_NODE_TAINT.effect}`,
    0,
  ),
  dir: {
    ...stringWithDefault('cluster directory', defaultClusterDir(), 'DIR'),
    defaultHelp: `$ADS_CLUSTER_DIR or ${join(cacheDir(), 'cluster')}`,
  },
} satisfies Flags;

const usage = `Usage: advanced-daemonset cluster <up|down|status|env> [flags]

A local Kubernetes control plane of real upstream components as processes on 127.0.0.1:
etcd, kube-apiserver, kube-controller-manager, kube-scheduler (Kubernetes ${versions.kubernetes})
and kwok ${versions.kwok} for fake nodes; with --real-nodes, real nodes (kubelet, containerd
${versions.containerd}, runc) and an image registry on 127.0.0.1. The binaries are built from the Go module
proxy on first use and cached (see README: caches); a cold build takes many minutes.

Subcommands:
  up       start the control plane and create fake nodes; prints the kubeconfig path
  down     stop exactly the processes 'up' started and remove the cluster directory
  status   show the recorded processes, ready nodes and the kubeconfig path
  env      print shell exports for this cluster: KUBECONFIG, PATH with its kubectl and helm, ADS_REGISTRY
           (use: eval "$(advanced-daemonset cluster env)")

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
    const { nodes, dir, 'real-nodes': realNodes } = parsed.values;
    const say = (l: string) => process.stderr.write(`${l}\n`);
    switch (sub) {
      case 'up': {
        say(
          'checking control-plane binaries (built from the Go module proxy on first use; a cold build takes many minutes)',
        );
        if (realNodes > 0) {
          // The host first (no point building what cannot run), then what the build made.
          const unfit = (binaries?: boolean) => {
            const why = realNodeUnsupported({ binaries });
            if (why) throw new UserError(`cluster up --real-nodes: ${why}`, 2);
          };
          unfit(false);
          await ensureNodeBinaries();
          unfit();
        } else {
          await ensureBinaries();
        }
        const controller = new AbortController();
        // Ctrl-C while starting: stop what was started rather than leave stray processes.
        const onSigint = () => controller.abort();
        process.once('SIGINT', onSigint);
        try {
          const state = await Promise.race([
            clusterUp({ dir, nodes, realNodes, progress: say }),
            new Promise<never>((_, reject) =>
              controller.signal.addEventListener('abort', () => reject(new UserError('interrupted', 130))),
            ),
          ]);
          console.log(`kubeconfig: ${state.kubeconfig}`);
          if (state.registry) console.log(`registry:   ${state.registry}`);
          console.log(`try: KUBECONFIG=${state.kubeconfig} ${binaries().kubectl} get nodes`);
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
        console.log(`kubectl:    ${binaries().kubectl}`);
        if (st.state.registry)
          console.log(`registry:   ${st.state.registry} (images for the real nodes: npm run image)`);
        if (st.nodes) console.log(`nodes:      ${st.nodes.ready}/${st.nodes.total} ready`);
        for (const r of st.state.realNodes ?? [])
          console.log(`  real node ${r.name}: ${r.ip}, pods in ${r.subnet}, bridge ${r.bridge}`);
        for (const r of st.running)
          console.log(`  ${r.name.padEnd(24)} pid ${String(r.pid).padEnd(8)} ${r.alive ? 'running' : 'exited'}`);
        return allAlive ? 0 : 1;
      }
      case 'env': {
        const st = await clusterStatus(dir);
        if (!st.state) throw new UserError(`no cluster in ${dir} (start one with 'advanced-daemonset cluster up')`);
        const q = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
        const bin = binaries();
        console.log(`export ADS_CLUSTER_DIR=${q(dir)}`);
        console.log(`export KUBECONFIG=${q(st.state.kubeconfig)}`);
        console.log(`export PATH=${q(`${dirname(bin.kubectl)}:${dirname(bin.helm)}`)}:"$PATH"`);
        if (st.state.registry) console.log(`export ADS_REGISTRY=${q(st.state.registry)}`);
        return 0;
      }
      default:
        throw new UserError(
          `cluster: expected up, down, status or env${sub ? `, got "${sub}"` : ''}\nRun with --help for usage.`,
          2,
        );
    }
  },
});
