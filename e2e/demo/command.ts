// `advanced-daemonset demo`: the README's first command. A local real control plane with fake
// nodes, the CRD, the manager (webhook + controller, out of cluster), an example Advanced
// DaemonSet, then an image rollout shown as it progresses. Ctrl-C tears everything down.
import { join } from 'node:path';
import {
  flagsHelp,
  intFlag,
  defineCommand,
  stringWithDefault,
  switchFlag,
  UserError,
  type Flags,
} from '../../src/cli/command.ts';
import { ensureBinaries, repoRoot, cacheDir } from '../cluster/binaries.ts';
import { clusterDown, clusterUp, kubectl, processAlive, readState } from '../cluster/cluster.ts';
import { startManager, type ManagerProcess } from '../lib/manager.ts';
import { ProgressPrinter, progressLine, type RolloutCounts } from './progress.ts';
import { sleep } from '../../src/testing/wait.ts';

const flags = {
  nodes: intFlag('fake nodes', 10),
  dir: stringWithDefault('demo directory', join(cacheDir(), 'demo'), 'DIR'),
  exit: switchFlag('tear down and exit when the demo is done instead of waiting for Ctrl-C'),
} satisfies Flags;

const usage = `Usage: advanced-daemonset demo [flags]

Brings up a local control plane with fake nodes, installs the CRD, starts the manager
(webhook + controller) and applies an example Advanced DaemonSet; then rolls a new image out as
a canary on two labelled nodes (rollingUpdate.selector) and to the rest with a partition
stepping down, showing each step until it is done. The cluster stays up until Ctrl-C, which tears it all down.

Flags:
${flagsHelp(flags)}
`;

const CRD = join(repoRoot, 'charts', 'advanced-daemonset', 'crds', 'apps.kruise.io_daemonsets.yaml');

const CANARY_LABEL = 'demo.advanced-daemonset.io/canary';

function exampleDaemonSet(image: string, rollingUpdate: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: { name: 'node-agent', namespace: 'demo' },
    spec: {
      selector: { matchLabels: { app: 'node-agent' } },
      minReadySeconds: 1,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2, ...rollingUpdate } },
      template: {
        metadata: { labels: { app: 'node-agent' } },
        spec: { containers: [{ name: 'agent', image }] },
      },
    },
  };
}

/** The partitions the demo steps through after the canary: about half, a quarter, then none. */
export function partitionSteps(nodes: number): number[] {
  const steps = [Math.floor(nodes / 2), Math.floor(nodes / 4)].filter((p) => p > 0 && p < nodes - 2);
  return [...new Set(steps), 0];
}

interface DsStatus {
  metadata: { generation: number };
  status?: {
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
  };
}

/** Shows progress until `updated` pods (default: every desired one) run the current revision and all are available. */
async function waitRollout(kc: string, label: string, updated?: number, timeoutMs = 300_000): Promise<void> {
  const printer = new ProgressPrinter();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ds = JSON.parse(
      (await kubectl(kc, ['get', 'daemonsets.apps.kruise.io', 'node-agent', '-n', 'demo', '-o', 'json'])).stdout,
    ) as DsStatus;
    const s = ds.status ?? {};
    const c: RolloutCounts = {
      desired: s.desiredNumberScheduled ?? 0,
      updated: s.updatedNumberScheduled ?? 0,
      ready: s.numberReady ?? 0,
      available: s.numberAvailable ?? 0,
    };
    printer.update(progressLine(label, c));
    const done =
      s.observedGeneration === ds.metadata.generation &&
      c.desired > 0 &&
      c.updated === (updated ?? c.desired) &&
      c.available === c.desired;
    if (done) {
      printer.done();
      return;
    }
    if (Date.now() > deadline) {
      printer.done();
      throw new UserError(`rollout did not finish within ${timeoutMs / 1000}s (see the manager log)`);
    }
    await sleep(500);
  }
}

export const demoCommand = defineCommand({
  name: 'demo',
  summary: 'Local cluster + manager + an Advanced DaemonSet rolling out a new image',
  usage,
  flags,
  async run(parsed) {
    const { nodes, dir } = parsed.values;
    const clusterDir = join(dir, 'cluster');
    const say = (l: string) => process.stdout.write(`${l}\n`);

    say('== 1/6 local control plane (the first run builds it from the Go module proxy: many minutes)');
    await ensureBinaries();
    const existing = readState(clusterDir);
    if (existing?.processes.every(processAlive)) await clusterDown({ dir: clusterDir, progress: () => {} });
    const state = await clusterUp({ dir: clusterDir, nodes, progress: (l) => say(`   ${l}`) });
    const kc = state.kubeconfig;

    let manager: ManagerProcess | undefined;
    const teardown = async () => {
      await manager?.stop();
      await clusterDown({ dir: clusterDir, progress: (l) => say(`   ${l}`) });
    };
    let interrupted = false;
    const onSignal = () => {
      interrupted = true;
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const checkInterrupt = () => {
      if (interrupted) throw new UserError('interrupted', 130);
    };

    try {
      say('== 2/6 CRD apps.kruise.io/v1alpha1 DaemonSet');
      await kubectl(kc, ['apply', '--server-side', '-f', CRD]);
      await kubectl(kc, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/daemonsets.apps.kruise.io']);

      say('== 3/6 manager (webhook + controller), out of cluster on 127.0.0.1');
      manager = await startManager({ kubeconfig: kc, dir: join(dir, 'manager') });
      say(`   manager ready (log: ${manager.log})`);
      checkInterrupt();

      say('== 4/6 an Advanced DaemonSet (only apiVersion differs from apps/v1), defaulted by the webhook');
      await kubectl(kc, ['create', 'namespace', 'demo']).catch(() => undefined);
      await kubectl(kc, ['apply', '-f', '-'], JSON.stringify(exampleDaemonSet('nginx:1.27')));
      const strategy = (
        await kubectl(kc, ['get', 'ads', 'node-agent', '-n', 'demo', '-o', 'jsonpath={.spec.updateStrategy}'])
      ).stdout;
      say(`   defaulted updateStrategy: ${strategy}`);
      await waitRollout(kc, '   creating ');
      checkInterrupt();

      const nodeNames = (await kubectl(kc, ['get', 'nodes', '-o', 'jsonpath={.items[*].metadata.name}'])).stdout
        .trim()
        .split(/\s+/)
        .sort();
      const canaries = nodeNames.slice(-2);
      say(`== 5/6 canary: label ${canaries.join(', ')} ${CANARY_LABEL}=true, roll nginx:1.28 to them only`);
      say('   (rollingUpdate.selector matches node labels; the other nodes keep nginx:1.27)');
      await kubectl(kc, ['label', 'node', ...canaries, `${CANARY_LABEL}=true`, '--overwrite']);
      await kubectl(
        kc,
        ['apply', '-f', '-'],
        JSON.stringify(exampleDaemonSet('nginx:1.28', { selector: { matchLabels: { [CANARY_LABEL]: 'true' } } })),
      );
      await waitRollout(kc, '   canary   ', canaries.length);
      checkInterrupt();

      say('== 6/6 the rest: selector removed, partition stepping down (partition = nodes kept on nginx:1.27)');
      for (const partition of partitionSteps(nodeNames.length)) {
        await kubectl(kc, ['apply', '-f', '-'], JSON.stringify(exampleDaemonSet('nginx:1.28', { partition })));
        await waitRollout(kc, `   partition ${String(partition).padEnd(3)}`, nodeNames.length - partition);
        checkInterrupt();
      }
      say((await kubectl(kc, ['get', 'ads', '-n', 'demo', '-o', 'wide'])).stdout.trimEnd());
      say('demo done.');
      if (parsed.values.exit) return 0;
      say(`the cluster keeps running: KUBECONFIG=${kc}; press Ctrl-C to tear everything down`);
      while (!interrupted) await sleep(200);
      return 0;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await teardown();
    }
  },
});
