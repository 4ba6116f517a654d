// The results table: markdown for people (bench/README.md, the terminal), JSON for tools.
import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { repoRoot, versions } from '../e2e/cluster/binaries.ts';
import {
  floorSeconds,
  raceMedians,
  SETTLE_MS,
  writesNeeded,
  type ClusterBenchResult,
  type ControllerKind,
  type RaceRound,
} from './cluster.ts';
import { fmt, fmtRatio, median, ratio } from './lib/stats.ts';
import { scenarioTarget, scenarioText, type PlanningSample } from './planning.ts';
import type { WebhookRun } from './webhook.ts';
import type { WebhookMemoryResult } from './webhook-memory.ts';
import type { MemoryBenchResult } from './memory.ts';
import type { ScaleResult } from './scale.ts';
import type { SimulateResult } from './simulate.ts';
import type { KubeletBenchResult } from './kubelet.ts';

export interface Machine {
  cores: number;
  cpu: string;
  memoryGiB: number;
  node: string;
  kubernetes: string;
  kwok: string;
  date: string;
  commit: string;
  note?: string;
}

export interface BenchResults {
  machine: Machine;
  params: Record<string, unknown>;
  cluster?: ClusterBenchResult;
  webhook?: WebhookRun[];
  webhookMemory?: WebhookMemoryResult;
  memory?: MemoryBenchResult;
  scale?: ScaleResult;
  simulate?: SimulateResult;
  kubelet?: KubeletBenchResult;
  planning?: PlanningSample[];
  /** Parts that failed, with the reason. */
  errors?: string[];
}

export function machineFacts(note?: string): Machine {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
  } catch {
    /* not a git checkout */
  }
  return {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    kubernetes: versions.kubernetes,
    kwok: versions.kwok,
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit,
    ...(note ? { note } : {}),
  };
}

const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;

function raceTable(
  c: ClusterBenchResult,
  nodes: number,
  rounds: number,
  managerQps: unknown,
  managerArgs: string[],
  nativeQps: unknown,
  kwokPodParallelism: unknown,
): string[] {
  const native = raceMedians(c.race, 'native');
  const ours = raceMedians(c.race, 'ours');
  const line = (what: string, a: number, b: number, target = '') =>
    row([what, fmt(a), fmt(b), fmtRatio(ratio(b, a)), target]);
  return [
    `### 1. Rollout race: ${nodes} kwok nodes, median of ${rounds} round(s), one controller at a time`,
    '',
    `Same pod template, \`maxUnavailable: 10%\`; native = apps/v1 DaemonSet in kube-controller-manager (client QPS ${String(nativeQps)}), ours = apps.kruise.io DaemonSet with our manager (client QPS ${String(managerQps)}${managerArgs.length ? `, ${managerArgs.join(' ')}` : ', default flags otherwise'}; the production bundle with the heap flag the launcher sets under the chart's 512Mi limit). Requests and CPU are counted from the start of each step until ${SETTLE_MS / 1000} s after it was done (late status writes count). The fake kubelet (kwok) plays ${String(kwokPodParallelism)} pod stages at once, and each step starts once it has finished the previous one's.`,
    '',
    row(['measure', 'native (KCM)', 'ours', 'ours / native', 'target']),
    row(['---', '---:', '---:', '---:', '---']),
    line('(a) creation until every pod Ready, s', native.createSeconds, ours.createSeconds, '≤ 1.0x'),
    line(
      '(b) image rollout until updated = desired and all available, s',
      native.rolloutSeconds,
      ours.rolloutSeconds,
      '≤ 1.0x',
    ),
    line('(c) API requests during creation (audit log, by user agent)', native.createRequests, ours.createRequests),
    line('(c) API requests during rollout', native.rolloutRequests, ours.rolloutRequests),
    line(
      '(d) CPU seconds during creation (native: the whole KCM process)',
      native.createCpuSeconds,
      ours.createCpuSeconds,
    ),
    line(
      '(d) CPU seconds during rollout (native: the whole KCM process)',
      native.rolloutCpuSeconds,
      ours.rolloutCpuSeconds,
    ),
    row(['(d) peak RSS of our manager, MiB', 'n/a', fmt(ours.peakRssMiB), '', '≤ 150 MiB at 5k nodes']),
    ...(c.newNode || c.error
      ? []
      : ['', 'The rollout race and its ceiling alone (`--only race`): no new-node latency.']),
    '',
    ...floorTable(c.race),
    '',
    ...requestBreakdown(c.race),
    '',
    'Per round (s): ' +
      c.race
        .map((r) => `${r.controller}#${r.round + 1} create ${fmt(r.createSeconds)} rollout ${fmt(r.rolloutSeconds)}`)
        .join('; '),
  ];
}

/**
 * Each controller against the floor of its own writes: the writes a step needs (writesNeeded) at its client's QPS;
 * then its requests per pod by verb and resource in each step, medians over the rounds.
 */
function floorTable(rounds: RaceRound[]): string[] {
  const mine = (kind: ControllerKind) => rounds.filter((r) => r.controller === kind);
  const first = (kind: ControllerKind) => mine(kind)[0];
  const perPod = (kind: ControllerKind, step: 'create' | 'rollout', key: string) =>
    median(mine(kind).map((r) => ((step === 'create' ? r.createByVerb : r.rolloutByVerb)?.[key] ?? 0) / r.pods));
  const native = raceMedians(rounds, 'native');
  const ours = raceMedians(rounds, 'ours');
  const floorText = (kind: ControllerKind, step: 'create' | 'rollout') => {
    const r = first(kind);
    return r ? `${fmt(writesNeeded(r, step))} / ${r.qps} = ${fmt(floorSeconds(r, step))} s` : 'n/a';
  };
  const out = [
    row(['against the floor (writes needed / client QPS)', 'native', 'ours', 'target']),
    row(['---', '---:', '---:', '---']),
    row(['creation: floor', floorText('native', 'create'), floorText('ours', 'create'), '']),
    row([
      'creation: until every pod Ready / floor',
      fmtRatio(native.createFloorRatio),
      fmtRatio(ours.createFloorRatio),
      '≤ 1.15x',
    ]),
    row([
      "creation: until the controller's last pod write / floor",
      fmtRatio(native.createWritesRatio),
      fmtRatio(ours.createWritesRatio),
      '',
    ]),
    row(['rollout: floor', floorText('native', 'rollout'), floorText('ours', 'rollout'), '']),
    row([
      'rollout: until done / floor',
      fmtRatio(native.rolloutFloorRatio),
      fmtRatio(ours.rolloutFloorRatio),
      '≤ 1.15x',
    ]),
    row([
      "rollout: until the controller's last pod write / floor",
      fmtRatio(native.rolloutWritesRatio),
      fmtRatio(ours.rolloutWritesRatio),
      '',
    ]),
    ...(['create', 'rollout'] as const).map((step) => {
      const kubelet = (kind: ControllerKind) => {
        const counts = mine(kind).flatMap((r) => {
          const n = step === 'create' ? r.kubeletCreateStatusWrites : r.kubeletRolloutStatusWrites;
          return n === undefined ? [] : [n / r.pods];
        });
        return counts.length ? fmt(median(counts)) : 'n/a';
      };
      const label = step === 'create' ? 'creation' : 'rollout';
      return row([`${label}: the fake kubelet's pod status writes per pod`, kubelet('native'), kubelet('ours'), '']);
    }),
    ...(['create', 'rollout'] as const).map((step) => {
      const apiserverMs = (kind: ControllerKind) => {
        const all = mine(kind).flatMap((r) => {
          const ms = step === 'create' ? r.createPodWriteMs : r.rolloutPodWriteMs;
          return ms ? [ms] : [];
        });
        return all.length ? `${fmt(median(all.map((x) => x.p50)))} / ${fmt(median(all.map((x) => x.p99)))}` : 'n/a';
      };
      const label = step === 'create' ? 'creation' : 'rollout';
      return row([
        `${label}: the apiserver's time per pod write of the controller, p50 / p99 ms`,
        apiserverMs('native'),
        apiserverMs('ours'),
        '',
      ]);
    }),
  ];
  const keys = (step: 'create' | 'rollout') =>
    [...new Set(rounds.flatMap((r) => Object.keys((step === 'create' ? r.createByVerb : r.rolloutByVerb) ?? {})))].sort(
      (a, b) =>
        perPod('ours', step, b) + perPod('native', step, b) - perPod('ours', step, a) - perPod('native', step, a),
    );
  out.push(
    '',
    row(['requests per pod, by step, verb and resource (medians)', 'native', 'ours']),
    row(['---', '---:', '---:']),
  );
  for (const step of ['create', 'rollout'] as const) {
    const total = (kind: ControllerKind) =>
      median(mine(kind).map((r) => (step === 'create' ? r.createRequests : r.rolloutRequests) / r.pods));
    const label = step === 'create' ? 'creation' : 'rollout';
    out.push(row([`**${label}: all requests**`, fmt(total('native')), fmt(total('ours'))]));
    for (const k of keys(step).slice(0, 10))
      out.push(row([`${label}: \`${k}\``, fmt(perPod('native', step, k)), fmt(perPod('ours', step, k))]));
  }
  return out;
}

/** Where the requests went: creation + rollout, per round on average, the 12 largest kinds. */
function requestBreakdown(rounds: RaceRound[]): string[] {
  const perRound = (kind: ControllerKind) => {
    const mine = rounds.filter((r) => r.controller === kind);
    const sum: Record<string, number> = {};
    for (const r of mine)
      for (const [k, v] of Object.entries(r.requestsByVerb)) sum[k] = (sum[k] ?? 0) + v / mine.length;
    return sum;
  };
  const native = perRound('native');
  const ours = perRound('ours');
  const kinds = [...new Set([...Object.keys(native), ...Object.keys(ours)])]
    .sort((a, b) => (ours[b] ?? 0) + (native[b] ?? 0) - (ours[a] ?? 0) - (native[a] ?? 0))
    .slice(0, 12);
  return [
    row(['requests per round (creation + rollout), by verb and resource', 'native', 'ours']),
    row(['---', '---:', '---:']),
    ...kinds.map((k) => row([`\`${k}\``, fmt(native[k] ?? 0), fmt(ours[k] ?? 0)])),
  ];
}

function ceilingTable(c: ClusterBenchResult, nodes: number): string[] {
  if (!c.ceiling) return ['### 2. Ceiling', '', 'Not measured (the run stopped before).'];
  const native = raceMedians(c.race, 'native');
  const ours = raceMedians(c.race, 'ours');
  const gate = c.ceiling.readinessGate
    ? ', each pod with the `KruisePodReady` gate and its condition written right after the create, as ours'
    : '';
  const line = (what: string, ceiling: number, n: number, o: number) =>
    row([what, fmt(ceiling), fmt(n), fmt(o), fmtRatio(ratio(n, ceiling)), fmtRatio(ratio(o, ceiling)), '≤ 1.3x']);
  return [
    `### 2. Ceiling: a plain client with no rate limit (64 requests in flight), ${nodes} pods bound to their nodes${gate}`,
    '',
    row(['measure', 'ceiling', 'native', 'ours', 'native / ceiling', 'ours / ceiling', 'target (ours)']),
    row(['---', '---:', '---:', '---:', '---:', '---:', '---']),
    line('create every pod until Ready, s', c.ceiling.createSeconds, native.createSeconds, ours.createSeconds),
    line(
      'delete and re-create every pod (new image) until Ready, s',
      c.ceiling.replaceSeconds,
      native.rolloutSeconds,
      ours.rolloutSeconds,
    ),
    row([
      'API requests',
      fmt(c.ceiling.requests),
      fmt(native.createRequests + native.rolloutRequests),
      fmt(ours.createRequests + ours.rolloutRequests),
      '',
      '',
      '',
    ]),
  ];
}

function newNodeTable(c: ClusterBenchResult): string[] {
  const n = c.newNode;
  if (!n) return ['### 3. New-node latency', '', 'Not measured (the run stopped before).'];
  return [
    `### 3. New-node latency: Node created → our pod exists`,
    '',
    `${n.daemonSets} DaemonSets on ${n.baseNodes} nodes, ${n.newNodes} nodes added at once; ${n.scope === 'new' ? 'the DaemonSets select only the added nodes (every sync still evaluates every node; the existing nodes run no pods of them)' : 'the DaemonSets run on every node'}. One sample per (node, DaemonSet).`,
    '',
    row([
      'samples',
      'p50, ms',
      'p99, ms',
      'max, ms',
      'target',
      `our peak RSS (${n.baseNodes + n.newNodes} nodes), MiB`,
    ]),
    row(['---:', '---:', '---:', '---:', '---', '---:']),
    row([n.samples, fmt(n.p50Ms), fmt(n.p99Ms), fmt(n.maxMs), '≤ 5 s (at 5k nodes)', fmt(n.peakRssMiB)]),
  ];
}

function webhookTable(runs: WebhookRun[]): string[] {
  const cap = runs.find((r) => r.maxInFlight !== undefined)?.maxInFlight;
  return [
    '### 4. Webhook: Fastify app over TLS, server pinned to one core, the load generator on the other',
    '',
    row([
      'webhook',
      'load',
      'reviews/s',
      'of the ceiling',
      'p50, ms',
      'p99, ms',
      'server core use',
      'errors',
      '429s',
      'target',
    ]),
    row(['---', '---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---']),
    ...runs.map((r) =>
      row([
        r.webhook === 'echo' ? 'ceiling: bare Fastify, same TLS, allows without looking' : r.webhook,
        r.mode === 'max'
          ? `max, ${r.connections} connections`
          : `fixed ${r.targetRate}/s, ${r.connections} connections`,
        fmt(r.requestsPerSecond),
        r.ofCeiling === undefined ? '' : `${r.ofCeiling.toFixed(2)}x`,
        fmt(r.p50Ms),
        fmt(r.p99Ms),
        `${Math.round(r.serverCoreUse * 100)}%`,
        r.errors + r.non2xx,
        r.tooMany,
        r.webhook === 'echo' ? '' : r.mode === 'max' ? '≥ 10k/s (≥ 0.65x the ceiling), p99 ≤ 5 ms' : 'p99 ≤ 2 ms',
      ]),
    ),
    '',
    `Max throughput: autocannon (closed loop; it reports latency in whole milliseconds), its p50 and p99 those of the saturating run. Fixed rate: requests started evenly spaced (open loop, bench/webhook-load.ts), latency in microseconds. The ceiling row is what HTTP, TLS and JSON alone allow on that core; "of the ceiling" is reviews/s over its max-throughput row of the same run. The connections are not limited to the app's cap on admission requests in flight (${cap ?? 'unknown'}), beyond which it answers 429 with Retry-After: 429s are counted apart from errors, and reviews/s counts admitted answers only.`,
  ];
}

function webhookMemoryTable(w: WebhookMemoryResult): string[] {
  const answers = Object.entries(w.statuses)
    .map(([code, n]) => `${n} × ${code}`)
    .join(', ');
  return [
    `### 4b. Webhook under hostile load: our manager's memory with the caches of ${w.nodes} nodes, ${w.concurrency} clients sending maximum-size reviews for ${w.durationSeconds} s (${'unsupported' in w.limits ? `${w.heapFlags.join(' ') || 'no heap flag'}, as under the chart's 512Mi limit; no cgroup: ${w.limits.unsupported}` : `in a cgroup of ${fmt(w.limits.memoryBytes / 1048576)} MiB and ${w.limits.cpus} CPUs, the chart's limit`})`,
    '',
    row([
      'review, MiB',
      'RSS idle, MiB',
      'peak RSS, MiB',
      'cgroup peak, MiB',
      'answers',
      'errors',
      'p50, ms',
      'p99, ms',
      '/healthz max, ms',
      'target',
    ]),
    row(['---:', '---:', '---:', '---:', '---', '---:', '---:', '---:', '---:', '---']),
    row([
      fmt(w.bodyBytes / 1048576),
      fmt(w.idleRssMiB),
      fmt(w.peakRssMiB),
      w.cgroupPeakMiB === undefined ? '-' : `${fmt(w.cgroupPeakMiB)} (limit hit ${w.cgroupLimitHits ?? 0} times)`,
      answers,
      w.errors,
      fmt(w.p50Ms),
      fmt(w.p99Ms),
      fmt(w.healthzMaxMs),
      'peak ≤ 256 MiB at 1,000 nodes',
    ]),
    ...(w.managerExited
      ? [
          '',
          `**The manager exited ${fmt(w.managerExited.afterSeconds)} s into the load** (code ${w.managerExited.code}): ${w.managerExited.lastLog}`,
        ]
      : []),
    '',
    "Each review is a DaemonSet of as many minimal containers as fit under the body limit: the most defaulting work per byte. 200 answers carry a refusal: of its oversized patch, or (defaulting it needs about 110 MiB of heap) of the admission thread's memory limit, the thread being replaced; 429 answers are the concurrency or request-bytes limit (docs/api.md, admission webhook). The cgroup's peak counts page cache too.",
  ];
}

/** Which pods of ours carry the KruisePodReady gate, from our manager's extra flags. */
function readinessGateMode(managerArgs: readonly string[]): string {
  const mode = /--kruise-pod-ready-gate[= ](\S+)/.exec(managerArgs.join(' '))?.[1];
  return mode ? `--kruise-pod-ready-gate ${mode}` : 'the `KruisePodReady` gate on every pod, the default';
}

function kubeletTable(k: KubeletBenchResult): string[] {
  const [native, ours] = (['native', 'ours'] as const).map((c) => k.rows.find((r) => r.controller === c));
  const cells = (f: (r: NonNullable<typeof native>) => string) => [native ? f(native) : 'n/a', ours ? f(ours) : 'n/a'];
  return [
    `### 10. A real kubelet: status writes per daemon pod on one real node (kubelet, containerd, runc), each pod deleted and re-created ${k.recreations} times by its controller, the two by turns (ours: ${readinessGateMode(k.managerArgs)})`,
    '',
    row(['measure', 'native (KCM)', 'ours']),
    row(['---', '---:', '---:']),
    row(['pods counted (created, Ready, deleted)', ...cells((r) => String(r.pods))]),
    row([
      "the kubelet's `pods/status` writes per pod, create until delete",
      ...cells((r) => fmt(r.kubeletUntilDelete)),
    ]),
    row(["the kubelet's `pods/status` writes per pod, after the delete", ...cells((r) => fmt(r.kubeletAfterDelete))]),
    row(["the controller's `pods/status` writes per pod", ...cells((r) => fmt(r.controllerStatusWrites))]),
    row([
      "pods whose `KruisePodReady` condition was written before the kubelet's first status write: the kubelet's writes until delete per pod",
      'n/a',
      ours
        ? `${ours.conditionFirst}: ${fmt(ours.kubeletUntilDeleteConditionFirst)}; the other ${ours.conditionLater}: ${fmt(ours.kubeletUntilDeleteConditionLater)}`
        : 'n/a',
    ]),
    row(['previous pod deleted → the new one Ready, median s', ...cells((r) => fmt(r.replacedSeconds))]),
    '',
    `Node ${k.node}. Writes from the apiserver's audit log, by pod name: the kubelet's (user \`system:node:${k.node}\`) and every other client's to \`pods/status\` (for ours, our manager's condition). The race's fake kubelet (kwok) plays a pod's stages again for each event of a bound Pending pod; this shows what a kubelet writes.`,
  ];
}

function memoryTable(m: MemoryBenchResult): string[] {
  const goal = m.nodes >= 5000 ? '≤ 150 MiB at 5,000 nodes and pods' : '≤ 120 MiB at 1,000 nodes and pods';
  const c = m.cached;
  return [
    `### 6. Memory: our manager with ${m.nodes.toLocaleString('en-US')} nodes and ${m.pods.toLocaleString('en-US')} pods cached (${m.trimmed ? 'trimmed caches' : 'whole objects cached'}${m.nodeFlags.length ? `, ${m.nodeFlags.join(' ')}` : ''}; ${readinessGateMode(m.managerArgs)})`,
    '',
    row(['part', 'seconds', 'CPU seconds', 'RSS at the end, MiB', 'peak RSS, MiB', 'heap used / total, MiB', 'target']),
    row(['---', '---:', '---:', '---:', '---:', '---:', '---']),
    row([
      `a first manager creates a pod on every node${m.creation.readyPods < m.pods ? ` (${m.creation.readyPods} Ready; ${m.creation.readyNodes} nodes Ready: a loaded cluster)` : ''}`,
      fmt(m.creation.seconds),
      '',
      '',
      fmt(m.creation.peakRssMiB),
      '',
      '',
    ]),
    row([
      `a fresh manager: caches synced, then ${c.steadySeconds} s steady`,
      fmt(c.syncSeconds),
      fmt(c.cpuSeconds),
      fmt(c.rssMiB),
      fmt(c.peakRssMiB),
      c.heapUsedMiB === undefined ? '' : `${fmt(c.heapUsedMiB)} / ${fmt(c.heapTotalMiB)}`,
      goal,
    ]),
    row([
      `the same manager rolls every pod to a new image (maxUnavailable 10%)${m.rollout && !m.rollout.done ? ': not done, figures up to then' : ''}`,
      fmt(m.rollout?.seconds),
      fmt(m.rollout?.cpuSeconds),
      '',
      fmt(m.rollout?.peakRssMiB),
      '',
      goal,
    ]),
    '',
    "Peak RSS is the manager's VmHWM at the end of each part (the fresh manager's includes its start and its lists); CPU seconds are its utime + stime from its start to the end of the steady part, then over the rollout. It runs the production bundle with the heap flag the launcher sets under the chart's 512Mi limit.",
  ];
}

function simulateTable(s: SimulateResult): string[] {
  const n = s.nodes.toLocaleString('en-US');
  const c = s.coldStart;
  const r = s.replica;
  const lines = [
    `### 8. Simulated cluster: ${n} nodes, ${s.daemonSets} DaemonSets on every node, ${s.pods.toLocaleString('en-US')} pods`,
    '',
    `Our controller (the production bundle, \`${s.heapFlag}\` as under a ${s.memoryLimitMiB} MiB limit, QPS ${s.qps}, burst ${s.burst}, ${s.workers} workers) against a simulated apiserver; pod JSON ${s.podJsonBytes} B, node JSON ${s.nodeJsonBytes} B.`,
    '',
    row(['measure', 'figure', 'goal']),
    row(['---', '---:', '---']),
    row(['cold start: caches synced (list of everything), s', fmt(c.cacheSyncSeconds), '']),
    row(['cold start: first sync of every DaemonSet, s', fmt(c.firstSyncAllSeconds), '']),
    row(['CPU seconds of the cold start', fmt(c.cpuSeconds), '']),
    row(['RSS with everything cached (VmRSS / VmHWM), MiB', `${fmt(c.rssMiB)} / ${fmt(c.peakRssMiB)}`, '≤ 2,048']),
    row([
      'V8 heap used, MiB; per cached pod (an upper bound), B',
      `${fmt(c.heapUsedMiB)}; ${fmt(c.heapBytesPerPod)}`,
      '≤ 1,536 B',
    ]),
    row([
      `steady sync of one DaemonSet (${s.steady.syncs} syncs): mean, ms; share ≤ 5 ms; ≤ 10 ms`,
      `${fmt(s.steady.meanMs)}; ${Math.round(s.steady.within5msShare * 100)}%; ${Math.round(s.steady.within10msShare * 100)}%`,
      '≤ 5 ms',
    ]),
    row([
      `node added → its ${s.daemonSets} pod creates (${s.nodeAdded.samples}/${s.nodeAdded.expected} nodes): p50 / p95 / max, ms`,
      `${fmt(s.nodeAdded.p50Ms)} / ${fmt(s.nodeAdded.p95Ms)} / ${fmt(s.nodeAdded.maxMs)}`,
      'p95 ≤ 100 ms',
    ]),
    row(['sync time while nodes were added (mean), ms', fmt(s.nodeAdded.syncMeanMs), '']),
  ];
  if (r)
    lines.push(
      row(['second replica: caches synced, s', fmt(r.cacheSyncSeconds), '']),
      row(['second replica: RSS warm (VmRSS / VmHWM), MiB', `${fmt(r.rssMiB)} / ${fmt(r.peakRssMiB)}`, '']),
      row(['failover (leader SIGKILLed): standby holds the Lease after, s', fmt(r.leaseAcquiredSeconds), '']),
      row(['failover: every DaemonSet synced by the standby after, s', fmt(r.allSyncedSeconds), '']),
      row([
        'longest gap between Lease renewals: leader while the standby listed; standby after taking over, s',
        `${fmt(r.leaderMaxRenewGapSeconds)}; ${fmt(r.standbyMaxRenewGapSeconds)}`,
        '< 10 (renew deadline)',
      ]),
    );
  if (r?.standbyExitedAfterTakeover) lines.push('', '**The standby lost its Lease after taking over (it exited).**');
  if (r?.leaderExitedBeforeKill)
    lines.push('', '**The leader had exited on its own before it was killed (it lost its Lease): no failover timed.**');
  return lines;
}

function scaleTable(s: ScaleResult): string[] {
  const n = s.nodes.toLocaleString('en-US');
  const ours = s.sides.find((x) => x.controller === 'ours');
  const heap = ours?.heapUsedIdleMiB === undefined ? '' : `; V8 heap used at idle ${fmt(ours.heapUsedIdleMiB)} MiB`;
  return [
    `### 7. Scale: ${s.newNodes} nodes added at once to ${n} nodes running ${s.daemonSets} converged DaemonSets`,
    '',
    row([
      'controller',
      'daemon pods at the burst',
      'samples',
      'p50, ms',
      'p99, ms',
      'max, ms',
      'RSS idle after convergence, MiB',
      'RSS peak in the burst, MiB',
      'peak RSS (VmHWM), MiB',
      '1-min load',
      'target',
    ]),
    row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---']),
    ...s.sides.map((x) =>
      row([
        x.controller === 'ours' ? 'ours (our manager)' : 'native (KCM; RSS of the whole process)',
        `${x.pods.toLocaleString('en-US')} (${x.readyAtBurst.toLocaleString('en-US')} Ready)`,
        `${x.samples}/${x.expected}${x.unexpected ? ` (+${x.unexpected} unexpected)` : ''}`,
        fmt(x.p50Ms),
        fmt(x.p99Ms),
        fmt(x.maxMs),
        fmt(x.rssIdleMiB),
        fmt(x.rssBurstPeakMiB),
        fmt(x.rssPeakMiB),
        fmt(x.load1AtBurst),
        x.controller === 'ours' ? `p99 ≤ 5 s${s.nodes >= 5000 ? ', RSS ≤ 150 MiB' : ''}` : '',
      ]),
    ),
    ...(s.error ? ['', `**Stopped early:** ${s.error}`] : []),
    '',
    `One sample per (added node, DaemonSet that should run there): from the Node create returning to the pod's ADDED event in the benchmark's own pod watch, both read on the benchmark process's monotonic clock (performance.now(); creationTimestamp has 1 s resolution). All ${s.newNodes} creates are sent together. The DaemonSets vary placement (nodeSelector, node affinity, tolerations of a NoExecute infra taint) and strategy (Standard, InPlaceIfPossible, maxSurge, a partition of 100% holding an image update; native: OnDelete and Standard instead), bench/scale.ts. Our manager: client QPS ${s.managerQps}, burst ${s.managerBurst} (the KCM's: 100, 200), \`--kruise-pod-ready-gate when-needed --leader-elect false\` (as the KCM here)${s.managerArgs.length ? ` ${s.managerArgs.join(' ')}` : ''}, ${s.heapFlags.join(' ') || 'no heap flag'} (the chart's 512Mi limit); RSS sampled from /proc every 200 ms${heap}. Converged in (s): ${s.sides.map((x) => `${x.controller} ${fmt(x.convergeSeconds)}`).join(', ')}; p99 from the create being sent (ms): ${s.sides.map((x) => `${x.controller} ${fmt(x.p99FromSentMs)}`).join(', ')}; slowest Node create (ms): ${s.sides.map((x) => `${x.controller} ${fmt(x.slowestCreateMs)}`).join(', ')}. Load at the start: ${s.loadAtStart.map((l) => l.toFixed(1)).join(' / ')}.`,
  ];
}

function planningTable(samples: PlanningSample[]): string[] {
  return [
    '### 5. Planning: one `planDaemonSet` for one DaemonSet, in process (full, and with its memo after one change)',
    '',
    row(['nodes', 'scenario', 'median, ms', 'p99, ms', 'CPU median, ms', 'plans timed', 'plan', 'target']),
    row(['---:', '---', '---:', '---:', '---:', '---:', '---', '---']),
    ...samples.map((s) =>
      row([
        s.nodes,
        `${s.scenario}: ${scenarioText[s.scenario]}`,
        fmt(s.medianMs),
        fmt(s.p99Ms),
        s.cpuMedianMs !== undefined ? fmt(s.cpuMedianMs) : 'n/a',
        s.iterations,
        `${s.stage}, ${s.creates} creates, ${s.deletes} deletes`,
        s.nodes === 5000 ? scenarioTarget[s.scenario] : '',
      ]),
    ),
  ];
}

export function renderMarkdown(r: BenchResults): string {
  const m = r.machine;
  const p = r.params as {
    nodes: number;
    rounds: number;
    managerQps: unknown;
    managerArgs?: string[];
    controlPlaneQps?: number;
    kwokPodParallelism?: number;
    raceOnly?: boolean;
  };
  const out = [
    `## Results (${m.date}, commit ${m.commit})`,
    '',
    row(['cores', 'CPU', 'memory', 'Node', 'Kubernetes', 'kwok']),
    row(['---:', '---', '---:', '---', '---', '---']),
    row([m.cores, m.cpu, `${m.memoryGiB} GiB`, m.node, m.kubernetes, m.kwok]),
    '',
    ...(m.note ? [`Note: ${m.note}`, ''] : []),
  ];
  if (r.cluster?.error) out.push(`**The cluster benchmarks stopped early:** ${r.cluster.error}`, '');
  for (const e of r.errors ?? []) out.push(`**Not measured:** ${e}`, '');
  if (r.cluster) {
    out.push(
      ...raceTable(
        r.cluster,
        p.nodes,
        p.rounds,
        p.managerQps,
        p.managerArgs ?? [],
        p.controlPlaneQps ?? 100,
        p.kwokPodParallelism ?? 4,
      ),
      '',
    );
    if (r.cluster.ceiling || r.cluster.newNode || r.cluster.error) out.push(...ceilingTable(r.cluster, p.nodes), '');
    if (r.cluster.newNode || (r.cluster.error && !p.raceOnly)) {
      out.push(...newNodeTable(r.cluster), '');
    }
  }
  if (r.webhook) out.push(...webhookTable(r.webhook), '');
  if (r.webhookMemory) out.push(...webhookMemoryTable(r.webhookMemory), '');
  if (r.planning) out.push(...planningTable(r.planning), '');
  if (r.memory) out.push(...memoryTable(r.memory), '');
  if (r.scale) out.push(...scaleTable(r.scale), '');
  if (r.simulate) out.push(...simulateTable(r.simulate), '');
  if (r.kubelet) out.push(...kubeletTable(r.kubelet), '');
  return out.join('\n');
}
