// Planning cost: one planDaemonSet (history, eligibility, manage, rolling update, status) for one DaemonSet, in
// process, on growing node counts: the full computation, and the sync after one change with the DaemonSet's PlanMemo
// (src/daemonset/memo.ts) as the controller keeps it. Inputs are the planner's own test fixtures.
// It runs in a child process from the production bundle (runPlanningBenchInChild), so the code timed is
// the code that ships, not tsx's output, and the benchmark's own state shares no heap with it.
import { spawn } from 'node:child_process';
import { cmp } from '../src/daemonset/context.ts';
import { PlanMemo } from '../src/daemonset/memo.ts';
import { planDaemonSet } from '../src/daemonset/plan.ts';
import type { DaemonSetSnapshot } from '../src/daemonset/plan-types.ts';
import type { Node, Pod } from '../src/k8s/types.ts';
import { addNodes, newDaemonSet, newPod, T0 } from '../src/daemonset/test-fixtures.ts';
import { percentile, say } from './lib/stats.ts';

export type PlanScenario = 'create' | 'steady' | 'rollout' | 'steady-memo' | 'rollout-memo';

export interface PlanningSample {
  nodes: number;
  scenario: PlanScenario;
  iterations: number;
  medianMs: number;
  p99Ms: number;
  /**
   * Median CPU time of one plan (process.cpuUsage: user + system): on a shared machine, wall time also counts the
   * time other processes held the core.
   */
  cpuMedianMs?: number;
  /** What the plan did, so a reader can see the scenario is the one described. */
  stage: string;
  creates: number;
  deletes: number;
}

const SCENARIOS: Record<PlanScenario, string> = {
  create: 'new DaemonSet, no pods yet (creates up to burstReplicas)',
  steady: 'every pod current and Ready (nothing to do, status only)',
  rollout: 'every pod of the old revision (rolling update deletes 10%)',
  'steady-memo': 'steady, with the PlanMemo of the previous sync; one pod or node changed since',
  'rollout-memo': 'rollout, with the PlanMemo of the previous sync; one pod or node changed since',
};
export const scenarioText = SCENARIOS;

/** The goals at 5,000 nodes (bench/README.md), per scenario. */
export const scenarioTarget: Record<PlanScenario, string> = {
  create: '≤ 5 ms',
  steady: '≤ 5 ms',
  rollout: '≤ 5 ms',
  'steady-memo': '≤ 1 ms',
  'rollout-memo': '≤ 2 ms',
};

/** The snapshots for `n` nodes: pods pinned to each node, Ready long enough to be available. */
function snapshots(n: number): Record<PlanScenario, DaemonSetSnapshot> {
  const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } });
  // In name order, as the controller's node cache hands them over (Indexer.listSorted).
  const nodes = addNodes(n, { type: 'kwok' }).sort((a, b) => cmp(a.metadata.name ?? '', b.metadata.name ?? ''));
  const first = planDaemonSet({ ds, nodes, pods: [], revisions: [], now: T0 });
  const revisions = first.revisions.create;
  const pods = (hash: string) => nodes.map((node) => newPod(ds, node.metadata.name ?? '', { hash, ready: true }));
  const now = T0 + 60_000;
  const steady = { ds, nodes, pods: pods(first.hash), revisions, now };
  const rollout = { ds, nodes, pods: pods('old-revision'), revisions, now };
  return {
    create: { ds, nodes, pods: [], revisions, now },
    steady,
    rollout,
    'steady-memo': steady,
    'rollout-memo': rollout,
  };
}

/**
 * The snapshot of the next sync with a memo: one change since the previous one, as the informers hand it over. Turn by
 * turn: a pod's new object (a status update; the pod index lists it last from then on), or a node's new object (a
 * label added), so that both kinds of change are found and re-evaluated. The scenario stays the same.
 */
function nextChange(snapshot: DaemonSetSnapshot, i: number): DaemonSetSnapshot {
  if (i % 2 === 0) {
    const pods = [...snapshot.pods];
    const [pod] = pods.splice((i * 7919) % pods.length, 1) as [Pod];
    pods.push({ ...pod, metadata: { ...pod.metadata, resourceVersion: String(i) } });
    return { ...snapshot, pods };
  }
  const nodes = [...snapshot.nodes];
  const at = (i * 104729) % nodes.length;
  const node = nodes[at] as Node;
  nodes[at] = { ...node, metadata: { ...node.metadata, labels: { ...node.metadata.labels, touched: String(i) } } };
  return { ...snapshot, nodes };
}

/**
 * Times planDaemonSet until `budgetMs` has passed (and at least 10 runs), after a warm-up. With `memo`, each sync
 * plans the next snapshot (nextChange, built before the clock starts) with the memo the previous sync left.
 */
function measure(
  snapshot: DaemonSetSnapshot,
  budgetMs: number,
  memo?: PlanMemo,
): { times: number[]; cpu: number[]; stage: string; creates: number; deletes: number } {
  let snap = snapshot;
  let i = 0;
  const next = () => (memo ? (snap = nextChange(snap, i++)) : snap);
  let plan = planDaemonSet(next(), memo);
  for (let w = 0; w < 5; w++) plan = planDaemonSet(next(), memo);
  const times: number[] = [];
  const cpu: number[] = [];
  const end = performance.now() + budgetMs;
  while (times.length < 10 || performance.now() < end) {
    const input = next();
    const c = process.cpuUsage();
    const t = performance.now();
    plan = planDaemonSet(input, memo);
    times.push(performance.now() - t);
    const used = process.cpuUsage(c);
    cpu.push((used.user + used.system) / 1000);
  }
  return { times, cpu, stage: plan.stage, creates: plan.creates.length, deletes: plan.deletes.length };
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
      const m = measure(snaps[scenario], budgetMs, scenario.endsWith('-memo') ? new PlanMemo() : undefined);
      const sample: PlanningSample = {
        nodes: n,
        scenario,
        iterations: m.times.length,
        medianMs: percentile(m.times, 50),
        p99Ms: percentile(m.times, 99),
        cpuMedianMs: percentile(m.cpu, 50),
        stage: m.stage,
        creates: m.creates,
        deletes: m.deletes,
      };
      say(
        `planning ${n} nodes, ${scenario}: median ${sample.medianMs.toFixed(2)} ms (CPU ${(sample.cpuMedianMs ?? 0).toFixed(2)} ms) over ${sample.iterations} plans (stage ${sample.stage}, ${sample.creates} creates, ${sample.deletes} deletes)`,
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
