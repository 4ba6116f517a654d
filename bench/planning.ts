// Planning cost: one full planDaemonSet (history, eligibility, manage, rolling update, status) for
// one DaemonSet, in process, on growing node counts. Inputs are the planner's own test fixtures.
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
  const nodes = addNodes(n, { type: 'kwok' });
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
