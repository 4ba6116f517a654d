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
import { ensureBinaries, cacheDir } from '../cluster/binaries.ts';
import { clusterDown, clusterUp, kubectl, processAlive, readState } from '../cluster/cluster.ts';
import { installCrd, waitConversionWebhook } from '../cluster/crd.ts';
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
stepping down; then a canary with health gates (rollingUpdate.canary): a crashing image is paused,
failed and rolled back on its canary nodes only, and a good one is promoted after its duration and
rolled out. Each step is shown until it is done. The cluster stays up until Ctrl-C, which tears it
all down.

Flags:
${flagsHelp(flags)}
`;

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

/**
 * rollingUpdate.canary of the health-gated step: 2 canary nodes, promoted once their pods have been available for 5 s
 * (no restart for 2 s); paused after a second container restart, failed after a fourth.
 */
export const DEMO_CANARY = {
  nodes: 2,
  duration: '5s',
  noRestartsDuration: '2s',
  autoPause: { enabled: true, maxRestarts: 1 },
  autoFail: { enabled: true, maxRestarts: 3 },
};

/**
 * An image the demo cluster's fake nodes crash-loop (any image name containing `crashloop`:
 * e2e/cluster/kwok-stages.yaml).
 */
const CRASHING_IMAGE = 'nginx:1.29-crashloop';

/** The partitions the demo steps through after the canary: about half, a quarter, then none. */
export function partitionSteps(nodes: number): number[] {
  const steps = [Math.floor(nodes / 2), Math.floor(nodes / 4)].filter((p) => p > 0 && p < nodes - 2);
  return [...new Set(steps), 0];
}

interface CanaryJson {
  revision: string;
  stableRevision: string;
  nodes: string[];
  phase: string;
  reason?: string;
  message?: string;
}

interface DsStatus {
  metadata: { generation: number };
  status?: {
    canary?: CanaryJson;
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
  };
}

async function getDemoDaemonSet(kc: string): Promise<DsStatus> {
  return JSON.parse(
    (await kubectl(kc, ['get', 'daemonsets.apps.kruise.io', 'node-agent', '-n', 'demo', '-o', 'json'])).stdout,
  ) as DsStatus;
}

/** Shows progress until `updated` pods (default: every desired one) run the current revision and all are available. */
async function waitRollout(kc: string, label: string, updated?: number, timeoutMs = 300_000): Promise<void> {
  const printer = new ProgressPrinter();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ds = await getDemoDaemonSet(kc);
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

/** One line per canary phase: "Paused (CrashLoopBackOff): pod ... restarted 2 times ...". */
export function canaryLine(c: CanaryJson, width = 150): string {
  const text = `   canary ${c.phase.padEnd(9)} ${c.reason ? `(${c.reason}) ` : ''}${c.message ?? ''}`;
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}

/**
 * Shows the canary of the current revision, a line per change of phase or reason, until `done` holds for the
 * DaemonSet (the spec update observed); returns the canary.
 */
async function waitCanary(
  kc: string,
  done: (c: CanaryJson, s: NonNullable<DsStatus['status']>) => boolean,
  timeoutMs = 180_000,
): Promise<CanaryJson> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const ds = await getDemoDaemonSet(kc);
    const s = ds.status ?? {};
    const c = s.canary;
    if (c && s.observedGeneration === ds.metadata.generation) {
      const key = `${c.revision}/${c.phase}/${c.reason ?? ''}`;
      if (key !== last) process.stdout.write(`${canaryLine(c)}\n`);
      last = key;
      if (done(c, s)) return c;
    }
    if (Date.now() > deadline) {
      throw new UserError(`the canary did not get there within ${timeoutMs / 1000}s (see the manager log)`);
    }
    await sleep(500);
  }
}

/** The demo DaemonSet's live pods: node -> pod UID. */
async function podUidsByNode(kc: string): Promise<Map<string, string>> {
  const list = JSON.parse(
    (await kubectl(kc, ['get', 'pods', '-n', 'demo', '-l', 'app=node-agent', '-o', 'json'])).stdout,
  ) as { items: { metadata: { uid: string; deletionTimestamp?: string }; spec: { nodeName?: string } }[] };
  const out = new Map<string, string>();
  for (const p of list.items)
    if (!p.metadata.deletionTimestamp && p.spec.nodeName) out.set(p.spec.nodeName, p.metadata.uid);
  return out;
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

    say('== 1/8 local control plane (the first run builds it from the Go module proxy: many minutes)');
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
      say('== 2/8 CRD apps.kruise.io DaemonSet (v1alpha1 and v1beta1, stored as v1beta1)');
      await installCrd(kc);

      say('== 3/8 manager (webhook + controller), out of cluster on 127.0.0.1');
      manager = await startManager({ kubeconfig: kc, dir: join(dir, 'manager') });
      // It registers the conversion webhook (v1alpha1 <-> v1beta1) by URL; the v1alpha1 manifest below needs it.
      await waitConversionWebhook(kc, `https://127.0.0.1:${manager.webhookPort}/convert`);
      say(`   manager ready (log: ${manager.log})`);
      checkInterrupt();

      say('== 4/8 an Advanced DaemonSet (only apiVersion differs from apps/v1), defaulted by the webhook');
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
      say(`== 5/8 canary: label ${canaries.join(', ')} ${CANARY_LABEL}=true, roll nginx:1.28 to them only`);
      say('   (rollingUpdate.selector matches node labels; the other nodes keep nginx:1.27)');
      await kubectl(kc, ['label', 'node', ...canaries, `${CANARY_LABEL}=true`, '--overwrite']);
      await kubectl(
        kc,
        ['apply', '-f', '-'],
        JSON.stringify(exampleDaemonSet('nginx:1.28', { selector: { matchLabels: { [CANARY_LABEL]: 'true' } } })),
      );
      await waitRollout(kc, '   canary   ', canaries.length);
      checkInterrupt();

      say('== 6/8 the rest: selector removed, partition stepping down (partition = nodes kept on nginx:1.27)');
      for (const partition of partitionSteps(nodeNames.length)) {
        await kubectl(kc, ['apply', '-f', '-'], JSON.stringify(exampleDaemonSet('nginx:1.28', { partition })));
        await waitRollout(kc, `   partition ${String(partition).padEnd(3)}`, nodeNames.length - partition);
        checkInterrupt();
      }

      say(`== 7/8 canary with health gates: ${CRASHING_IMAGE} (it crash-loops) on ${DEMO_CANARY.nodes} canary nodes`);
      say(`   rollingUpdate.canary: ${JSON.stringify(DEMO_CANARY)}`);
      const before = await podUidsByNode(kc);
      await kubectl(
        kc,
        ['apply', '-f', '-'],
        JSON.stringify(exampleDaemonSet(CRASHING_IMAGE, { canary: DEMO_CANARY })),
      );
      const failed = await waitCanary(
        kc,
        (c, s) =>
          c.phase === 'Failed' && s.updatedNumberScheduled === 0 && s.numberAvailable === s.desiredNumberScheduled,
      );
      const after = await podUidsByNode(kc);
      const kept = [...before].filter(([node, uid]) => !failed.nodes.includes(node) && after.get(node) === uid);
      say(
        `   rolled back: ${failed.nodes.join(', ')} run nginx:1.28 again (revision ${failed.stableRevision}); ` +
          `the other ${kept.length} nodes kept their pods throughout`,
      );
      say('   held until the template changes; by hand, kubectl annotate ads/node-agent -n demo ...');
      say('     advanced-daemonset.io/canary-validated=<revision>  promotes now');
      say('     advanced-daemonset.io/canary-paused=true           pauses (removing it resumes)');
      say('     advanced-daemonset.io/canary-failed=true           fails now');
      checkInterrupt();

      say(
        '== 8/8 a fixed image, nginx:1.29: the canary restarts on the same nodes, is promoted after 5s, then the rest',
      );
      await kubectl(kc, ['apply', '-f', '-'], JSON.stringify(exampleDaemonSet('nginx:1.29', { canary: DEMO_CANARY })));
      await waitCanary(kc, (c) => c.phase === 'Promoted');
      await waitRollout(kc, '   rollout  ');
      checkInterrupt();
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
