// `npm run bench` at a tiny size (bench/README.md), so the benchmarks cannot rot: 20 nodes, one round,
// in a private cluster of its own (beside the harness's), short webhook runs and small plans, and the simulated
// cluster (`--only simulate`) at 50 nodes, and where a real node runs (always under CI=true) the kubelet part with
// each pod re-created twice.
// It checks that every part it runs produced numbers (its section of the table and its figures), never how good
// they are.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../e2e/cluster/binaries.ts';
import type { BenchResults } from './report.ts';
import { realNodeSkip } from '../e2e/realnode/lib.ts';

const run = promisify(execFile);

/** The real-node part where real nodes run (always under CI=true: there a missing prerequisite fails the run). */
const kubelet = realNodeSkip() === undefined;

const finite = (what: string, x: number | undefined) =>
  assert.ok(typeof x === 'number' && Number.isFinite(x) && x >= 0, `${what} is not a number: ${x}`);

describe('benchmarks smoke run', () => {
  test(
    'npm run bench at 20 nodes and 1 round writes a table with every part it runs',
    // Four private clusters (webhook memory, the race, memory, scale), each started and filled, and a fifth with a
    // real node where one runs: it took over 8 min on a loaded 2-core machine (about 5 min in CI with the real node);
    // the limit only catches a hang.
    { timeout: 900_000 },
    async (t) => {
      const out = mkdtempSync(join(tmpdir(), 'ads-bench-smoke-'));
      t.after(() => rmSync(out, { recursive: true, force: true }));
      const { stdout } = await run(
        process.execPath,
        [
          '--import',
          'tsx',
          join(repoRoot, 'bench', 'run.ts'),
          ...['--nodes', '20', '--rounds', '1', '--new-node-base', '20', '--new-nodes', '5'],
          ...['--new-node-daemonsets', '2', '--webhook-seconds', '1', '--planning-sizes', '100,1000'],
          ...['--planning-ms', '50', '--memory-steady-seconds', '2', '--out', out],
          ...['--scale-daemonsets', '3', '--scale-new-nodes', '5', '--scale-idle-seconds', '1'],
          // The default parts and the simulated cluster, at 50 nodes.
          ...['--only', `planning,webhook,webhook-memory,cluster,memory,scale,simulate${kubelet ? ',kubelet' : ''}`],
          ...['--kubelet-recreations', '2'],
          ...['--sim-nodes', '50', '--sim-daemonsets', '3', '--sim-added-nodes', '3', '--sim-steady-syncs', '5'],
          ...['--sim-memory-limit', '512'],
        ],
        { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 },
      );
      for (const heading of [
        '### 1. Rollout race',
        '### 2. Ceiling',
        '### 3. New-node latency',
        '### 4. Webhook',
        '### 5. Planning',
        '### 6. Memory',
        '### 7. Scale',
        '### 8. Simulated cluster',
        ...(kubelet ? ['### 10. A real kubelet'] : []),
      ])
        assert.ok(stdout.includes(heading), `the table has no "${heading}" section:\n${stdout}`);
      assert.equal(readFileSync(join(out, 'results.md'), 'utf8').trim(), stdout.trim());

      const r = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as BenchResults;
      assert.equal(r.errors, undefined);
      assert.equal(r.cluster?.error, undefined);
      assert.equal(r.machine.cores > 0 && r.machine.node.startsWith('v') && r.machine.kubernetes.startsWith('v'), true);
      const race = r.cluster?.race ?? [];
      assert.deepEqual(race.map((x) => x.controller).sort(), ['native', 'ours']);
      for (const x of race) {
        for (const k of ['createSeconds', 'rolloutSeconds', 'createCpuSeconds', 'rolloutCpuSeconds'] as const)
          finite(`${x.controller} ${k}`, x[k]);
        assert.ok(
          x.createRequests > 0 && x.rolloutRequests > 0,
          `${x.controller} made no API requests in the audit log`,
        );
      }
      finite('our peak RSS', race.find((x) => x.controller === 'ours')?.peakRssMiB);
      finite('ceiling create', r.cluster?.ceiling?.createSeconds);
      finite('ceiling replace', r.cluster?.ceiling?.replaceSeconds);
      assert.equal(r.cluster?.newNode?.samples, 10);
      finite('new-node p99', r.cluster?.newNode?.p99Ms);
      finite('our peak RSS in the new-node part', r.cluster?.newNode?.peakRssMiB);
      assert.deepEqual(
        r.webhook?.map((w) => `${w.webhook}/${w.mode}`),
        ['mutate/max', 'mutate/fixed', 'validate/max', 'validate/fixed', 'echo/max', 'echo/fixed'],
      );
      // Fewer connections (50) than the app's cap on admission requests in flight (128): the load gets no 429
      // (counted apart) and no other refusal or error.
      for (const w of r.webhook ?? [])
        assert.ok(w.requestsPerSecond > 0 && w.errors + w.non2xx + w.tooMany === 0, JSON.stringify(w));
      finite('memory: creation peak RSS', r.memory?.creation.peakRssMiB);
      finite('memory: cached peak RSS', r.memory?.cached.peakRssMiB);
      finite('memory: rollout peak RSS', r.memory?.rollout?.peakRssMiB);
      assert.equal(r.memory?.trimmed, true);
      // Two sizes, each with the full computation (create, steady, rollout) and the memo's two syncs.
      assert.equal(r.planning?.length, 10);
      for (const p of r.planning ?? []) finite(`planning ${p.nodes} ${p.scenario}`, p.medianMs);
      assert.equal(r.scale?.error, undefined);
      assert.deepEqual(
        r.scale?.sides.map((x) => x.controller),
        ['ours', 'native'],
      );
      for (const x of r.scale?.sides ?? []) {
        assert.ok(x.expected > 0 && x.samples === x.expected && x.unexpected === 0, JSON.stringify(x));
        for (const k of ['p50Ms', 'p99Ms', 'maxMs', 'rssIdleMiB', 'rssBurstPeakMiB'] as const)
          finite(`scale ${x.controller} ${k}`, x[k]);
      }
      finite('our peak RSS in the scale part', r.scale?.sides[0]?.rssPeakMiB);
      const sim = r.simulate;
      assert.equal(sim?.pods, 150);
      for (const [k, x] of Object.entries({ ...sim?.coldStart, ...sim?.replica }))
        if (typeof x !== 'boolean') finite(`simulate ${k}`, x);
      assert.equal(sim?.replica?.leaderExitedBeforeKill, false);
      assert.equal(sim?.replica?.standbyExitedAfterTakeover, false);
      assert.ok(sim && sim.steady.syncs > 0 && sim.nodeAdded.samples === 3, JSON.stringify(sim));
      finite('simulate steady sync', sim?.steady.meanMs);
      finite('simulate node added p95', sim?.nodeAdded.p95Ms);
      if (kubelet) {
        assert.deepEqual(
          r.kubelet?.rows.map((x) => [x.controller, x.pods]),
          [
            ['native', 2],
            ['ours', 2],
          ],
        );
        for (const x of r.kubelet?.rows ?? []) {
          // Every pod that became Ready was written Running and Ready by the kubelet; ours also by our manager.
          assert.ok(x.kubeletUntilDelete >= 1, JSON.stringify(x));
          assert.equal(x.controllerStatusWrites, x.controller === 'ours' ? 1 : 0, JSON.stringify(x));
          finite(`kubelet ${x.controller} replaced`, x.replacedSeconds);
        }
      }
    },
  );
});
