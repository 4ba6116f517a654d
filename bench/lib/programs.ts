// What the benchmark runs: our code as the production bundle (hack/bundle.ts, as the image runs it), not
// through tsx, on the Node 24 that `npm ci` installs. Bundles are built once per run into dist/ (inside the
// repository, so that their imports of npm packages resolve to node_modules).
import { join } from 'node:path';
import { bundle, NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS, PRODUCT_ENTRY, repoRoot } from '../../hack/bundle.ts';
import { heapFlags } from '../../src/cli/heap.ts';

export const NODE = join(repoRoot, 'node_modules', '.bin', 'node');

/** The chart's default memory limit (charts/advanced-daemonset/values.yaml). */
const CHART_MEMORY_LIMIT = 512 * 1024 * 1024;
/**
 * The heap flag the image's launcher (src/cli/heap.ts) adds under that limit. Every part runs our manager with it:
 * this machine has no such limit, and without it V8 sizes the old generation, and how far it lets garbage grow
 * before collecting, from the machine's memory, so the manager's RSS would not be the one it has in the chart.
 */
export const MANAGER_HEAP_FLAGS = heapFlags([], undefined, CHART_MEMORY_LIMIT);

export interface Programs {
  /** Command line of our manager (with MANAGER_HEAP_FLAGS), without the `manager` command and its flags. */
  manager: string[];
  /** Command line of the webhook under load (bench/webhook-server.ts), without its arguments. */
  webhookServer: string[];
  /** Command line of the planning benchmark's child (bench/planning.ts), without its argument. */
  planning: string[];
}

/**
 * Builds the bundles. With `cpuProfileDir`, each of our processes writes a V8 CPU profile there when it
 * exits (node --cpu-prof), to open in Chrome DevTools or `npx speedscope`.
 */
export async function buildPrograms(cpuProfileDir?: string): Promise<Programs> {
  // The image's environment too (NODE_RUNTIME_ENV), for every process started from here on: ours read it, and the
  // cluster's Go programs do not allocate through glibc's malloc.
  for (const [k, v] of Object.entries(NODE_RUNTIME_ENV)) process.env[k] ??= v;
  // ADS_BENCH_MANAGER_BUNDLE: a manager bundle built earlier (e.g. of the code before a change, for a before/after
  // on the same machine state); the rest is built as usual.
  const prebuilt = process.env.ADS_BENCH_MANAGER_BUNDLE;
  const manager = prebuilt ?? join(repoRoot, 'dist', 'main.mjs');
  const webhookServer = join(repoRoot, 'dist', 'bench', 'webhook-server.mjs');
  const planning = join(repoRoot, 'dist', 'bench', 'planning.mjs');
  if (!prebuilt) await bundle(PRODUCT_ENTRY, manager);
  await bundle('bench/webhook-server.ts', webhookServer);
  await bundle('bench/planning.ts', planning);
  const node = [NODE, ...NODE_RUNTIME_FLAGS, ...(cpuProfileDir ? ['--cpu-prof', '--cpu-prof-dir', cpuProfileDir] : [])];
  return {
    manager: [...node, ...MANAGER_HEAP_FLAGS, manager],
    webhookServer: [...node, webhookServer],
    planning: [...node, planning],
  };
}
