// Planning cost: one full planDaemonSet (history, eligibility, manage, rolling update, status) for
// one DaemonSet, in process, on growing node counts. Inputs are the planner's own test fixtures.
// It runs in a child process from the production bundle (runPlanningBenchInChild), so the code timed is
// the code that ships, not tsx's output, and the benchmark's own state shares no heap with it.
import { spawn } from 'node:child_process';
import { cmp } from '../src/daemonset/context.ts';
import { planDaemonSet } from '../src/daemonset/plan.ts';
import type { DaemonSetSnapshot } from '../src/daemonset/plan-types.ts';
import { addNodes, newDaemonSet, newPod, T0 } from '../src/daemonset/test-fixtures.ts';
import { percentile, say } from './lib/stats.ts';

export type PlanScenario = 'create' | 'steady' | 'rollout';

export interface PlanningSample {
  nodes: number;
  scenario: PlanScenario;
  iterations: number;
  medianMs: number;
  p99Ms: number;
  /** What the plan did, so a reader can see the scenario is the one described. */
  stage: string;
  creates: number;
  deletes: number;
}

const SCENARIOS: Record<PlanScenario, string> = {
  create: 'new DaemonSet, no pods yet (creates up to burstReplicas)',
  steady: 'every pod current and Ready (nothing to do, status only)',
  rollout: 'every pod of the old revision (rolling update deletes 10%)',
};
export const scenarioText = SCENARIOS;

/** The three snapshots for `n` nodes: pods pinned to each node, Ready long enough to be available. */
function snapshots(n: number): Record<PlanScenario, DaemonSetSnapshot> {
  const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } });
  // In name order, as the controller's node cache hands them over (Indexer.listSorted).
  const nodes = addNodes(n, { type: 'kwok' }).sort((a, b) => cmp(a.metadata.name ?? '', b.metadata.name ?? ''));
  const first = planDaemonSet({ ds, nodes, pods: [], revisions: [], now: T0 });
  const revisions = first.revisions.create;
  const pods = (hash: string) => nodes.map((node) => newPod(ds, node.metadata.name ?? '', { hash, ready: true }));
  const now = T0 + 60_000;
  return {
    create: { ds, nodes, pods: [], revisions, now },
    steady: { ds, nodes, pods: pods(first.hash), revisions, now },
    rollout: { ds, nodes, pods: pods('old-revision'), revisions, now },
  };
}

/** Times planDaemonSet until `budgetMs` has passed (and at least 10 runs), after a warm-up. */
function measure(
  snapshot: DaemonSetSnapshot,
  budgetMs: number,
): { times: number[]; stage: string; creates: number; deletes: number } {
  let plan = planDaemonSet(snapshot);
  for (let i = 0; i < 5; i++) plan = planDaemonSet(snapshot);
  const times: number[] = [];
  const end = performance.now() + budgetMs;
  while (times.length < 10 || performance.now() < end) {
    const t = performance.now();
    plan = planDaemonSet(snapshot);
    times.push(performance.now() - t);
  }
  return { times, stage: plan.stage, creates: plan.creates.length, deletes: plan.deletes.length };
}

/** runPlanningBench in `command` (lib/programs.ts: this file, bundled); progress lines pass through to stderr. */
export async function runPlanningBenchInChild(
  command: string[],
  sizes: number[],
  budgetMs: number,
): Promise<PlanningSample[]> {
  const [program, ...args] = command as [string, ...string[]];
  const child = spawn(program, [...args, JSON.stringify({ sizes, budgetMs })], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`planning benchmark process exited with code ${code}`);
  return JSON.parse(stdout) as PlanningSample[];
}

export function runPlanningBench(sizes: number[], budgetMs: number): PlanningSample[] {
  const out: PlanningSample[] = [];
  for (const n of sizes) {
    const snaps = snapshots(n);
    for (const scenario of Object.keys(SCENARIOS) as PlanScenario[]) {
      const m = measure(snaps[scenario], budgetMs);
      const sample: PlanningSample = {
        nodes: n,
        scenario,
        iterations: m.times.length,
        medianMs: percentile(m.times, 50),
        p99Ms: percentile(m.times, 99),
        stage: m.stage,
        creates: m.creates,
        deletes: m.deletes,
      };
      say(
        `planning ${n} nodes, ${scenario}: median ${sample.medianMs.toFixed(2)} ms over ${sample.iterations} plans (stage ${sample.stage}, ${sample.creates} creates, ${sample.deletes} deletes)`,
      );
      out.push(sample);
    }
  }
  return out;
}

// The child: `node planning.mjs '{"sizes":[...],"budgetMs":N}'` prints the samples as JSON.
if (import.meta.url.endsWith('/planning.mjs') && process.argv[2]) {
  const { sizes, budgetMs } = JSON.parse(process.argv[2]) as { sizes: number[]; budgetMs: number };
  process.stdout.write(`${JSON.stringify(runPlanningBench(sizes, budgetMs))}\n`);
}
