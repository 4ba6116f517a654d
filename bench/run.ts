// `npm run bench [-- flags]`: runs the eight benchmarks (planning, webhook, webhook memory, rollout race, ceiling,
// new-node latency, the manager's memory, new nodes at scale), writes results.md and results.json and prints the
// table. --help lists flags.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBinaries, ensureNodeBinaries, repoRoot } from '../e2e/cluster/binaries.ts';
import { runClusterBench } from './cluster.ts';
import { buildPrograms } from './lib/programs.ts';
import { say } from './lib/stats.ts';
import { runPlanningBenchInChild } from './planning.ts';
import { machineFacts, renderMarkdown, type BenchResults } from './report.ts';
import { runWebhookBench } from './webhook.ts';
import { runWebhookMemoryBench } from './webhook-memory.ts';
import { runMemoryBench } from './memory.ts';
import { runScaleBench, type ScaleController } from './scale.ts';
import { runSimulateBench } from './simulate.ts';
import { runKubeletBench } from './kubelet.ts';
import { realNodeUnsupported } from '../e2e/cluster/real-node.ts';

const HELP = `npm run bench -- [flags]

  --nodes N               fake nodes of the rollout race, the ceiling, the memory and the scale parts (default 1000)
  --rounds N              rounds of the race, each native then ours (default 3)
  --new-node-base N       cluster size for new-node latency (default 2000)
  --new-nodes N           nodes added (default 50)
  --new-node-daemonsets N DaemonSets (default 20)
  --new-node-scope S      new: the DaemonSets select only the added nodes; all: every node (default new)
  --control-plane-qps N   --kube-api-qps of the cluster's kube-controller-manager (so native's) and kube-scheduler
                          (default 100); with --manager-qps the same, the race at the apiserver's ceiling
  --control-plane-burst N their --kube-api-burst (default 200)
  --kwok-pod-parallelism N pod stages the fake kubelet plays at once: race, ceiling and scale (default 4, kwok's own)
  --manager-qps N         our manager's --kube-api-qps (default 100, the KCM's in this cluster)
  --manager-burst N       our manager's --kube-api-burst (default 200)
  --manager-args="FLAGS"  more flags for our manager, space-separated, with = (default none)
  --webhook-seconds N     duration of each webhook load run (default 10)
  --webhook-rate N        fixed-rate run, requests/s (default 1000)
  --webhook-connections N connections of the max-throughput run (default 50)
  --webhook-memory-nodes N fake nodes of the webhook-memory part (default 1000)
  --webhook-memory-seconds N  duration of its load (default 30)
  --webhook-memory-clients N  clients sending maximum-size reviews at once (default 64)
  --memory-untrimmed      memory part: the manager caches whole objects (the figures before trimming)
  --memory-node-flags="FLAGS"  memory part: Node/V8 flags added to the manager's, space-separated (default none)
  --memory-steady-seconds N    memory part: how long the fresh manager stays before its rollout (default 30)
  --memory-rollout-seconds N   memory part: figures of the rollout taken when done or after this (default 900)
  --scale-daemonsets N    scale part (on --nodes nodes): converged DaemonSets (default 20)
  --scale-new-nodes N     scale part: nodes added at once (default 50)
  --scale-idle-seconds N  scale part: quiet time after convergence before the idle RSS is read (default 30)
  --scale-controllers L   scale part: ours,native or one of them (default ours,native)
  --sim-nodes N           simulate part: nodes of the simulated cluster (default 65000)
  --sim-daemonsets N      simulate part: DaemonSets, each on every node (default 20)
  --sim-added-nodes N     simulate part: nodes added one at a time (default 50)
  --sim-steady-syncs N    simulate part: steady syncs measured (default 100)
  --sim-memory-limit MiB  simulate part: the memory limit the managers' heap flag is set from (default 4096)
  --sim-workers N         simulate part: the managers' --workers (default 3, the product's)
  --sim-no-failover       simulate part: no second replica, no failover
  --kubelet-recreations N kubelet part: times each controller's pod on the real node is deleted (default 20)
  --planning-sizes LIST   node counts of the planning benchmark (default 1000,5000,10000)
  --planning-ms N         time per planning measurement (default 1000)
  --only LIST             some of planning,webhook,webhook-memory,cluster,race,memory,scale,kubelet,simulate
                          (default all but race and simulate; race: the rollout race of the cluster part alone;
                          kubelet: status writes per pod on one real node, left out where none can run (root,
                          e2e/hack/install-node-packages.sh); simulate: a simulated 65,000-node cluster)
  --out DIR               where results.md and results.json go (default bench/results)
  --note TEXT             a line printed under the machine facts (e.g. "machine shared with ...")
  --keep                  keep the scratch directory (manager logs, audit log)
  --cpu-prof DIR          our manager and webhook server write V8 CPU profiles into DIR
  --help`;

const PARTS = [
  'planning',
  'webhook',
  'webhook-memory',
  'cluster',
  'race',
  'memory',
  'scale',
  'kubelet',
  'simulate',
] as const;
/** `race` is part of `cluster`: run alone only when asked; `simulate` (65,000 nodes, about 20 minutes) too. */
const DEFAULT_PARTS = PARTS.filter((p) => p !== 'race' && p !== 'simulate');

function int(name: string, value: string | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got "${value}"`);
  return n;
}

function scaleControllers(value: string | undefined): ScaleController[] {
  const list = (value ?? 'ours,native').split(',').filter(Boolean);
  if (list.length === 0 || list.some((c) => c !== 'ours' && c !== 'native') || new Set(list).size !== list.length)
    throw new Error(`--scale-controllers must be ours,native or one of them, got "${value}"`);
  return list as ScaleController[];
}

async function main(): Promise<number> {
  const { values: v } = parseArgs({
    options: {
      nodes: { type: 'string' },
      rounds: { type: 'string' },
      'new-node-base': { type: 'string' },
      'new-nodes': { type: 'string' },
      'new-node-daemonsets': { type: 'string' },
      'new-node-scope': { type: 'string' },
      'control-plane-qps': { type: 'string' },
      'control-plane-burst': { type: 'string' },
      'kwok-pod-parallelism': { type: 'string' },
      'manager-qps': { type: 'string' },
      'manager-burst': { type: 'string' },
      'manager-args': { type: 'string' },
      'webhook-seconds': { type: 'string' },
      'webhook-rate': { type: 'string' },
      'webhook-connections': { type: 'string' },
      'webhook-memory-nodes': { type: 'string' },
      'webhook-memory-seconds': { type: 'string' },
      'webhook-memory-clients': { type: 'string' },
      'memory-untrimmed': { type: 'boolean' },
      'memory-node-flags': { type: 'string' },
      'memory-steady-seconds': { type: 'string' },
      'memory-rollout-seconds': { type: 'string' },
      'scale-daemonsets': { type: 'string' },
      'scale-new-nodes': { type: 'string' },
      'scale-idle-seconds': { type: 'string' },
      'scale-controllers': { type: 'string' },
      'sim-nodes': { type: 'string' },
      'sim-daemonsets': { type: 'string' },
      'sim-added-nodes': { type: 'string' },
      'sim-steady-syncs': { type: 'string' },
      'sim-memory-limit': { type: 'string' },
      'sim-workers': { type: 'string' },
      'sim-no-failover': { type: 'boolean' },
      'kubelet-recreations': { type: 'string' },
      'planning-sizes': { type: 'string' },
      'planning-ms': { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string' },
      note: { type: 'string' },
      keep: { type: 'boolean' },
      'cpu-prof': { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (v.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  // By default the real-node part runs where a real node can (root, the Debian packages); named, it runs or fails.
  const noRealNode = realNodeUnsupported({ binaries: false });
  const defaults = noRealNode ? DEFAULT_PARTS.filter((p) => p !== 'kubelet') : DEFAULT_PARTS;
  if (!v.only && noRealNode) say(`the kubelet part is left out: ${noRealNode} (--only kubelet runs it, or fails)`);
  const only = (v.only ?? defaults.join(',')).split(',').filter(Boolean);
  for (const part of only)
    if (!(PARTS as readonly string[]).includes(part))
      throw new Error(`--only: unknown part "${part}" (${PARTS.join(', ')})`);
  const scope = v['new-node-scope'] ?? 'new';
  if (scope !== 'new' && scope !== 'all') throw new Error(`--new-node-scope must be new or all, got "${scope}"`);
  const params = {
    nodes: int('nodes', v.nodes, 1000),
    /** The race and its ceiling without the new-node latency (`--only race`). */
    raceOnly: !only.includes('cluster'),
    rounds: int('rounds', v.rounds, 3),
    newNodeBase: int('new-node-base', v['new-node-base'], 2000),
    newNodes: int('new-nodes', v['new-nodes'], 50),
    newNodeDaemonSets: int('new-node-daemonsets', v['new-node-daemonsets'], 20),
    newNodeScope: scope as 'new' | 'all',
    controlPlaneQps: int('control-plane-qps', v['control-plane-qps'], 100),
    controlPlaneBurst: int('control-plane-burst', v['control-plane-burst'], 200),
    kwokPodParallelism: int('kwok-pod-parallelism', v['kwok-pod-parallelism'], 4),
    managerQps: int('manager-qps', v['manager-qps'], 100),
    managerBurst: int('manager-burst', v['manager-burst'], 200),
    managerArgs: (v['manager-args'] ?? '').split(/\s+/).filter(Boolean),
    webhookSeconds: int('webhook-seconds', v['webhook-seconds'], 10),
    webhookRate: int('webhook-rate', v['webhook-rate'], 1000),
    webhookConnections: int('webhook-connections', v['webhook-connections'], 50),
    webhookMemoryNodes: int('webhook-memory-nodes', v['webhook-memory-nodes'], 1000),
    webhookMemorySeconds: int('webhook-memory-seconds', v['webhook-memory-seconds'], 30),
    webhookMemoryClients: int('webhook-memory-clients', v['webhook-memory-clients'], 64),
    memoryUntrimmed: v['memory-untrimmed'] === true,
    memoryNodeFlags: (v['memory-node-flags'] ?? '').split(/\s+/).filter(Boolean),
    memorySteadySeconds: int('memory-steady-seconds', v['memory-steady-seconds'], 30),
    memoryRolloutSeconds: int('memory-rollout-seconds', v['memory-rollout-seconds'], 900),
    scaleDaemonSets: int('scale-daemonsets', v['scale-daemonsets'], 20),
    scaleNewNodes: int('scale-new-nodes', v['scale-new-nodes'], 50),
    scaleIdleSeconds: int('scale-idle-seconds', v['scale-idle-seconds'], 30, 0),
    scaleControllers: scaleControllers(v['scale-controllers']),
    simNodes: int('sim-nodes', v['sim-nodes'], 65_000),
    simDaemonSets: int('sim-daemonsets', v['sim-daemonsets'], 20),
    simAddedNodes: int('sim-added-nodes', v['sim-added-nodes'], 50),
    simSteadySyncs: int('sim-steady-syncs', v['sim-steady-syncs'], 100),
    simMemoryLimitMiB: int('sim-memory-limit', v['sim-memory-limit'], 4096),
    simWorkers: int('sim-workers', v['sim-workers'], 3),
    simFailover: v['sim-no-failover'] !== true,
    kubeletRecreations: int('kubelet-recreations', v['kubelet-recreations'], 20),
    planningSizes: (v['planning-sizes'] ?? '1000,5000,10000').split(',').map((s) => int('planning-sizes', s, 0)),
    planningMs: int('planning-ms', v['planning-ms'], 1000),
    only,
  };
  const out = resolve(v.out ?? join(repoRoot, 'bench', 'results'));
  const work = mkdtempSync(join(tmpdir(), 'ads-bench-'));
  const results: BenchResults = { machine: machineFacts(v.note), params };
  say(`scratch directory ${work}`);
  // Built from the Go module proxy on first use, then cached; the real node's (kubelet, containerd) only for it.
  const clusterBinaries = async ({ node = false } = {}) => {
    say(`checking control-plane${node ? ' and node' : ''} binaries (a cold build takes many minutes)`);
    await ensureBinaries();
    if (node) await ensureNodeBinaries();
  };
  // Each part on its own: a failure is reported in the table and the other parts still run.
  const part = async (name: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      const reason = `${name}: ${err instanceof Error ? err.message : String(err)}`;
      say(`error in ${reason}`);
      (results.errors ??= []).push(reason);
    }
  };
  try {
    const programs = await buildPrograms(v['cpu-prof'] ? resolve(v['cpu-prof']) : undefined);
    say(`our processes run the production bundle ${programs.manager.at(-1)}`);
    if (only.includes('planning'))
      await part('planning', async () => {
        say(`planning: ${params.planningSizes.join(', ')} nodes`);
        results.planning = await runPlanningBenchInChild(programs.planning, params.planningSizes, params.planningMs);
      });
    if (only.includes('webhook'))
      await part('webhook', async () => {
        results.webhook = await runWebhookBench({
          server: programs.webhookServer,
          dir: work,
          durationSeconds: params.webhookSeconds,
          fixedRate: params.webhookRate,
          maxConnections: params.webhookConnections,
        });
      });
    if (only.includes('webhook-memory'))
      await part('webhook-memory', async () => {
        await clusterBinaries();
        results.webhookMemory = await runWebhookMemoryBench({
          dir: work,
          nodes: params.webhookMemoryNodes,
          concurrency: params.webhookMemoryClients,
          durationSeconds: params.webhookMemorySeconds,
          managerCommand: programs.manager,
          // The chart's memory limit, and 2 CPUs (the chart sets none: a node's 2 cores).
          limits: { memoryBytes: 512 * 1024 * 1024, cpus: 2 },
        });
      });
    if (only.includes('cluster') || only.includes('race'))
      await part('cluster', async () => {
        await clusterBinaries();
        results.cluster = await runClusterBench({
          dir: work,
          ...params,
          managerCommand: programs.manager,
        });
      });
    if (only.includes('memory'))
      await part('memory', async () => {
        await clusterBinaries();
        results.memory = await runMemoryBench({
          dir: work,
          nodes: params.nodes,
          managerCommand: programs.manager,
          managerQps: params.managerQps,
          managerBurst: params.managerBurst,
          managerArgs: params.managerArgs,
          nodeFlags: params.memoryNodeFlags,
          untrimmed: params.memoryUntrimmed,
          steadySeconds: params.memorySteadySeconds,
          rolloutTimeoutSeconds: params.memoryRolloutSeconds,
        });
      });
    if (only.includes('scale'))
      await part('scale', async () => {
        await clusterBinaries();
        results.scale = await runScaleBench({
          dir: work,
          nodes: params.nodes,
          daemonSets: params.scaleDaemonSets,
          newNodes: params.scaleNewNodes,
          idleSeconds: params.scaleIdleSeconds,
          controllers: params.scaleControllers,
          managerCommand: programs.manager,
          managerQps: params.managerQps,
          managerBurst: params.managerBurst,
          managerArgs: params.managerArgs,
          kwokPodParallelism: params.kwokPodParallelism,
        });
      });
    if (only.includes('kubelet'))
      await part('kubelet', async () => {
        await clusterBinaries({ node: true });
        results.kubelet = await runKubeletBench({
          dir: work,
          recreations: params.kubeletRecreations,
          managerCommand: programs.manager,
          managerArgs: params.managerArgs,
        });
      });
    if (only.includes('simulate'))
      await part('simulate', async () => {
        results.simulate = await runSimulateBench({
          dir: work,
          nodes: params.simNodes,
          daemonSets: params.simDaemonSets,
          addedNodes: params.simAddedNodes,
          steadySyncs: params.simSteadySyncs,
          memoryLimitMiB: params.simMemoryLimitMiB,
          managerCommand: programs.manager,
          managerQps: params.managerQps,
          managerBurst: params.managerBurst,
          workers: params.simWorkers,
          failover: params.simFailover,
        });
      });
  } finally {
    if (v.keep) say(`scratch directory kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
  const markdown = renderMarkdown(results);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'results.md'), `${markdown}\n`);
  writeFileSync(join(out, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${markdown}\n`);
  say(`wrote ${join(out, 'results.md')} and ${join(out, 'results.json')}`);
  return results.errors || results.cluster?.error || results.scale?.error ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    say(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
