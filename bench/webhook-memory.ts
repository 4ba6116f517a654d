// The manager's memory under hostile admission load: a private cluster of N fake nodes (the controller's caches
// hold them all), our manager (the production bundle), then `concurrency` clients each sending maximum-size
// reviews back to back for `durationSeconds` straight to its webhook port. Each review is just under the body
// limit and made of trivial containers, the shape that costs the defaulting the most. The manager's RSS is
// sampled from /proc every 50 ms. Where the machine allows (root, cgroup v1), the manager runs under the chart's
// limits as in its pod (512Mi, and 2 CPUs: lib/container.ts), so that it derives its own limits from them and the
// kernel enforces them. Reported, never asserted (goal in bench/README.md).
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { clusterDown, clusterUp } from '../e2e/cluster/cluster.ts';
import { installCrd } from '../e2e/cluster/crd.ts';
import { startManager } from '../e2e/lib/manager.ts';
import { MUTATE_PATH } from '../src/api/constants.ts';
import { admissionReview } from '../src/api/testing/review-fixtures.ts';
import { BODY_LIMIT } from '../webhook/limits.ts';
import { containerLimitsUnsupported, withContainerLimits, type ContainerLimits } from './lib/container.ts';
import { rssMiB } from './lib/proc.ts';
import { MANAGER_HEAP_FLAGS } from './lib/programs.ts';
import { percentile, say } from './lib/stats.ts';
import { sleep } from '../src/testing/wait.ts';

export interface WebhookMemoryOptions {
  dir: string;
  nodes: number;
  concurrency: number;
  durationSeconds: number;
  /** Command line of our manager (lib/programs.ts). */
  managerCommand: string[];
  /** The container's limits the manager runs under, where the machine allows. */
  limits: ContainerLimits;
}

export interface WebhookMemoryResult {
  nodes: number;
  concurrency: number;
  durationSeconds: number;
  /** Heap flags the manager ran with. */
  heapFlags: string[];
  /** The container's limits it ran under, or why it ran without. */
  limits: ContainerLimits | { unsupported: string };
  /** Highest memory use of its cgroup (RSS and page cache), when it ran under limits. */
  cgroupPeakMiB?: number;
  /** Times the cgroup hit its memory limit. */
  cgroupLimitHits?: number;
  bodyBytes: number;
  /** RSS once the caches are loaded, before the load. */
  idleRssMiB: number;
  /** Highest sampled RSS during the load. */
  peakRssMiB: number;
  /** Answers by HTTP status (200 carries the refusal of the oversized patch). */
  statuses: Record<string, number>;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  /** Milliseconds the manager's /healthz took at most to answer during the load. */
  healthzMaxMs: number;
  /** Set when the manager exited during the load (e.g. it lost its lease while the event loop was busy). */
  managerExited?: { afterSeconds: number; code: number | null; lastLog: string };
}

/** An AdmissionReview of `bytes` or just under: a DaemonSet with as many minimal containers as fit. */
export function maxSizeReview(bytes: number): string {
  const object = {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: { name: 'big', namespace: 'bench' },
    spec: {
      selector: { matchLabels: { app: 'big' } },
      template: { metadata: { labels: { app: 'big' } }, spec: { containers: ['CONTAINERS'] } },
    },
  };
  const head = JSON.stringify(admissionReview(object, { uid: 'bench-max-size', name: 'big', namespace: 'bench' }));
  const [before, after] = head.split('"CONTAINERS"') as [string, string];
  const parts: string[] = [];
  let size = before.length + after.length;
  for (let i = 0; ; i++) {
    const c = `${i ? ',' : ''}{"name":"c${i}","image":"x"}`;
    if (size + c.length > bytes) break;
    parts.push(c);
    size += c.length;
  }
  return `${before}${parts.join('')}${after}`;
}

function post(agent: Agent, port: number, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: MUTATE_PATH,
        method: 'POST',
        agent,
        // The manager's self-made certificate for 127.0.0.1; what is measured is its memory, not trust.
        rejectUnauthorized: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function healthzMs(port: number): Promise<number> {
  const t = performance.now();
  await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.text());
  return performance.now() - t;
}

export async function runWebhookMemoryBench(o: WebhookMemoryOptions): Promise<WebhookMemoryResult> {
  const clusterDir = join(o.dir, 'webhook-memory-cluster');
  say(`webhook memory: starting a private cluster with ${o.nodes} fake nodes`);
  const state = await clusterUp({ dir: clusterDir, nodes: o.nodes, progress: (l) => say(l) });
  try {
    await installCrd(state.kubeconfig);
    const unsupported = containerLimitsUnsupported();
    const limited = unsupported
      ? undefined
      : withContainerLimits(`ads-bench-${process.pid}`, o.limits, o.managerCommand);
    if (unsupported) say(`webhook memory: the manager runs without a container's limits (${unsupported})`);
    const manager = await startManager({
      kubeconfig: state.kubeconfig,
      dir: join(o.dir, 'webhook-memory-manager'),
      // With the launcher's heap flag for the chart's 512Mi limit (lib/programs.ts).
      command: limited?.command ?? o.managerCommand,
      args: ['--log-level', 'info', '--webhook-drain', '0s'],
    }).catch((err: unknown) => {
      limited?.remove();
      throw err;
    });
    try {
      const pid = manager.child.pid ?? 0;
      // Caches loaded (a manager's /readyz does not wait for them: cmd/advanced-daemonset/manager.ts).
      for (let i = 0; !readFileSync(manager.log, 'utf8').includes('"msg":"caches synced"'); i++) {
        if (i > 600) throw new Error('the manager did not sync its caches in 60 s');
        await sleep(100);
      }
      await sleep(2_000);
      const idleRssMiB = rssMiB(pid);
      const body = maxSizeReview(BODY_LIMIT - 1024);
      say(
        `webhook memory: manager RSS ${idleRssMiB.toFixed(0)} MiB with caches loaded; ${o.concurrency} clients send ${(body.length / 1048576).toFixed(2)} MiB reviews for ${o.durationSeconds} s`,
      );
      let peakRssMiB = idleRssMiB;
      const sample = () => {
        const rss = rssMiB(pid);
        if (Number.isFinite(rss)) peakRssMiB = Math.max(peakRssMiB, rss);
      };
      const sampler = setInterval(sample, 50);
      let healthzMaxMs = 0;
      const prober = setInterval(
        () =>
          void healthzMs(manager.healthPort).then(
            (ms) => (healthzMaxMs = Math.max(healthzMaxMs, ms)),
            () => {}, // gone: managerExited says so
          ),
        250,
      );
      const loadStart = Date.now();
      let managerExited: WebhookMemoryResult['managerExited'];
      manager.child.once('exit', (code) => {
        const log = readFileSync(manager.log, 'utf8').trim().split('\n');
        const errorLine = log.reverse().find((l) => /"level":(50|60)/.test(l)) ?? log[0] ?? '';
        const msg = (/"msg":"([^"]*)"/.exec(errorLine) ?? [])[1] ?? errorLine.slice(0, 200);
        managerExited = { afterSeconds: (Date.now() - loadStart) / 1000, code, lastLog: msg };
      });
      const statuses: Record<string, number> = {};
      const latencies: number[] = [];
      let errors = 0;
      const end = Date.now() + o.durationSeconds * 1000;
      try {
        await Promise.all(
          Array.from({ length: o.concurrency }, async () => {
            const agent = new Agent({ keepAlive: true, maxSockets: 1 });
            while (Date.now() < end && !managerExited) {
              const t = performance.now();
              try {
                const status = await post(agent, manager.webhookPort, body);
                statuses[status] = (statuses[status] ?? 0) + 1;
                latencies.push(performance.now() - t);
              } catch {
                errors++;
                await sleep(100);
              }
            }
            agent.destroy();
          }),
        );
      } finally {
        clearInterval(sampler);
        clearInterval(prober);
      }
      sample();
      latencies.sort((a, b) => a - b);
      const result: WebhookMemoryResult = {
        nodes: o.nodes,
        concurrency: o.concurrency,
        durationSeconds: o.durationSeconds,
        heapFlags: MANAGER_HEAP_FLAGS,
        limits: unsupported ? { unsupported } : o.limits,
        ...(limited ? { cgroupPeakMiB: limited.peakBytes() / 1048576, cgroupLimitHits: limited.failures() } : {}),
        bodyBytes: body.length,
        idleRssMiB,
        peakRssMiB,
        statuses,
        errors,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        healthzMaxMs,
        ...(managerExited ? { managerExited } : {}),
      };
      if (managerExited)
        say(`webhook memory: the manager exited after ${managerExited.afterSeconds} s: ${managerExited.lastLog}`);
      say(
        `webhook memory: peak RSS ${peakRssMiB.toFixed(0)} MiB (idle ${idleRssMiB.toFixed(0)}), answers ${JSON.stringify(statuses)}, errors ${errors}, p50 ${result.p50Ms.toFixed(0)} ms, /healthz at most ${healthzMaxMs.toFixed(0)} ms`,
      );
      return result;
    } finally {
      await manager.stop();
      limited?.remove();
    }
  } finally {
    await clusterDown({ dir: clusterDir, progress: (l) => say(l) });
  }
}
