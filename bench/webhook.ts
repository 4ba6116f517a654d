// Webhook throughput and latency: the Fastify app over TLS in its own process pinned to one core,
// a load generator in another process pinned to the other core; mutate, validate and a bare-Fastify ceiling.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import fastJsonPatch from 'fast-json-patch';
import { createCA, createLeaf } from '../src/pki/pki.ts';
import { repoRoot } from '../e2e/cluster/binaries.ts';
import { MUTATE_PATH, VALIDATE_PATH } from '../src/api/constants.ts';
import { admissionReview } from '../src/api/testing/review-fixtures.ts';
import { handleAdmissionReview, mutateDaemonSet } from '../webhook/admission.ts';
import { cpuSeconds } from './lib/proc.ts';
import { runQueueWaitMs } from './webhook-load.ts';
import { NODE } from './lib/programs.ts';
import type { LoadOptions, LoadSummary } from './webhook-load.ts';
import { median, say } from './lib/stats.ts';

const run = promisify(execFile);
const TSX = `file://${join(repoRoot, 'node_modules', 'tsx', 'dist', 'loader.mjs')}`;

export interface WebhookRun {
  /** echo: the ceiling, a bare Fastify over the same TLS answering allowed without looking (webhook-server.ts). */
  webhook: 'mutate' | 'validate' | 'echo';
  mode: 'max' | 'fixed';
  connections: number;
  targetRate?: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** Answers not 2xx, the 429s excepted. */
  non2xx: number;
  /** 429s: the server's cap on admission requests in flight (webhook/limits.ts) refused these. */
  tooMany: number;
  /** Max throughput, mutate and validate: requests/s over the ceiling's (the bare server's) in the same run. */
  ofCeiling?: number;
  /** The app's cap on admission requests in flight (the ceiling has none). */
  maxInFlight?: number;
  /** Share of its one core the server used (1 = saturated). */
  serverCoreUse: number;
  /** 1-minute load average as the run started: the machine may be shared, and the server's core with it. */
  loadAverage?: number;
  /** How long the server's threads waited, runnable, for their core during the run, ms (Linux run-queue wait). */
  serverRunQueueWaitMs?: number;
  /** Fixed rate: the load generator's own event-loop delay (p99) and run-queue wait, ms, which latencies include. */
  clientLagP99Ms?: number;
  clientRunQueueWaitMs?: number;
  /** Fixed rate: each of the FIXED_RATE_RUNS runs; the figures above are their medians (errors: their sum). */
  runs?: FixedRateRun[];
}

export interface FixedRateRun {
  p50Ms: number;
  p99Ms: number;
  loadAverage: number;
  serverCoreUse: number;
  serverRunQueueWaitMs: number;
  clientLagP99Ms?: number;
  clientRunQueueWaitMs?: number;
}

/**
 * Fixed-rate runs per webhook, one after the other on the same server: the row reports their medians. On a machine
 * shared with other work one run's p99 can be another process's time slice on the server's core (4-16 ms where
 * the server needs well under 1 ms), so a single run says little.
 */
export const FIXED_RATE_RUNS = 3;

export interface WebhookBenchOptions {
  dir: string;
  durationSeconds: number;
  fixedRate: number;
  maxConnections: number;
  /** Command line of bench/webhook-server.ts (lib/programs.ts). */
  server: string[];
}

/** A node agent as people write them: probes, env, mounts, tolerations, resources (about 2.6 KB). */
function daemonSet(): Record<string, unknown> {
  return {
    apiVersion: 'apps.kruise.io/v1alpha1',
    kind: 'DaemonSet',
    metadata: { name: 'node-exporter', namespace: 'monitoring', labels: { 'app.kubernetes.io/name': 'node-exporter' } },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': 'node-exporter' } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%', partition: 0 } },
      template: {
        metadata: {
          labels: { 'app.kubernetes.io/name': 'node-exporter', 'app.kubernetes.io/version': '1.8.2' },
          annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9100' },
        },
        spec: {
          hostNetwork: true,
          hostPID: true,
          serviceAccountName: 'node-exporter',
          priorityClassName: 'system-node-critical',
          securityContext: { runAsNonRoot: true, runAsUser: 65534, fsGroup: 65534 },
          tolerations: [{ operator: 'Exists' }],
          nodeSelector: { 'kubernetes.io/os': 'linux' },
          containers: [
            {
              name: 'node-exporter',
              image: 'quay.io/prometheus/node-exporter:v1.8.2',
              args: [
                '--path.procfs=/host/proc',
                '--path.sysfs=/host/sys',
                '--path.rootfs=/host/root',
                '--web.listen-address=0.0.0.0:9100',
                '--collector.filesystem.mount-points-exclude=^/(dev|proc|sys|var/lib/docker/.+)($|/)',
              ],
              env: [
                { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
              ],
              ports: [{ name: 'metrics', containerPort: 9100, protocol: 'TCP' }],
              resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '250m', memory: '180Mi' } },
              livenessProbe: { httpGet: { path: '/', port: 9100 }, initialDelaySeconds: 5, periodSeconds: 10 },
              readinessProbe: { httpGet: { path: '/', port: 9100 }, periodSeconds: 10 },
              securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
              volumeMounts: [
                { name: 'proc', mountPath: '/host/proc', readOnly: true },
                { name: 'sys', mountPath: '/host/sys', readOnly: true },
                { name: 'root', mountPath: '/host/root', readOnly: true, mountPropagation: 'HostToContainer' },
              ],
            },
            {
              name: 'kube-rbac-proxy',
              image: 'quay.io/brancz/kube-rbac-proxy:v0.18.1',
              args: ['--secure-listen-address=[$(IP)]:9101', '--upstream=http://127.0.0.1:9100/'],
              env: [{ name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
              ports: [{ name: 'https', containerPort: 9101 }],
              resources: { requests: { cpu: '10m', memory: '20Mi' }, limits: { memory: '40Mi' } },
            },
          ],
          volumes: [
            { name: 'proc', hostPath: { path: '/proc' } },
            { name: 'sys', hostPath: { path: '/sys' } },
            { name: 'root', hostPath: { path: '/' } },
          ],
        },
      },
    },
  };
}

function review(object: unknown): string {
  return JSON.stringify(admissionReview(object, { name: 'node-exporter', namespace: 'monitoring' }));
}

/** Mutate gets the object as written; validate gets it after defaulting, as the apiserver sends it. */
export function bodies(): Record<'mutate' | 'validate', string> {
  const raw = daemonSet();
  const mutated = handleAdmissionReview(JSON.parse(review(raw)), mutateDaemonSet);
  const patch = (mutated.body as { response?: { patch?: string } }).response?.patch;
  const defaulted = patch
    ? fastJsonPatch.applyPatch(structuredClone(raw), JSON.parse(Buffer.from(patch, 'base64').toString('utf8')))
        .newDocument
    : raw;
  return { mutate: review(raw), validate: review(defaulted) };
}

function post(port: number, path: string, body: string, ca: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', ca, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function startServer(
  server: string[],
  certDir: string,
  echo = false,
): Promise<{ child: ChildProcess; port: number; maxInFlight?: number }> {
  const child = spawn('taskset', ['-c', '0', ...server, certDir, ...(echo ? ['echo'] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const first = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`webhook server exited with ${code} before listening`)));
    child.once('error', reject);
  });
  return { child, ...(JSON.parse(first) as { port: number; maxInFlight?: number }) };
}

async function load(opts: LoadOptions): Promise<LoadSummary> {
  const { stdout } = await run(
    'taskset',
    ['-c', '1', NODE, '--import', TSX, join(repoRoot, 'bench', 'webhook-load.ts'), JSON.stringify(opts)],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as LoadSummary;
}

export async function runWebhookBench(o: WebhookBenchOptions): Promise<WebhookRun[]> {
  const certDir = join(o.dir, 'webhook-certs');
  mkdirSync(certDir, { recursive: true });
  const ca = await createCA('ads-bench-ca');
  const leaf = await createLeaf(ca, { commonName: '127.0.0.1', usage: 'server', ipAddresses: ['127.0.0.1'] });
  writeFileSync(join(certDir, 'tls.crt'), leaf.certPem);
  writeFileSync(join(certDir, 'tls.key'), leaf.keyPem);
  const body = bodies();
  say(`webhook: AdmissionReview bodies ${body.mutate.length} B (mutate) and ${body.validate.length} B (validate)`);
  const runs: WebhookRun[] = [];
  const paths = { mutate: MUTATE_PATH, validate: VALIDATE_PATH, echo: VALIDATE_PATH } as const;
  // The max-throughput run uses o.maxConnections (default 50) whatever the app's cap on admission requests in
  // flight (webhook/limits.ts), so that the one core, not the cap, is what limits it: a 429 (with Retry-After,
  // which the apiserver's client waits out) is counted apart from the other non-2xx, and not as throughput.
  for (const webhook of ['mutate', 'validate', 'echo'] as const) {
    const server = await startServer(o.server, certDir, webhook === 'echo');
    try {
      const payload = body[webhook === 'echo' ? 'validate' : webhook];
      // A wrong verdict would measure an error path: check one answer first.
      const answer = await post(server.port, paths[webhook], payload, ca.certPem);
      const response = (JSON.parse(answer.text) as { response?: { allowed?: boolean; patch?: string } }).response;
      if (answer.status !== 200 || !response?.allowed || (webhook === 'mutate') !== Boolean(response.patch))
        throw new Error(`webhook ${webhook} did not answer as expected (HTTP ${answer.status}): ${answer.text}`);
      // Warm-up (not measured): the JIT and TLS session state settle before the numbers count.
      const target = { url: `https://127.0.0.1:${server.port}${paths[webhook]}`, body: payload, ca: ca.certPem };
      await load({ ...target, connections: o.maxConnections, durationSeconds: Math.min(3, o.durationSeconds) });
      for (const mode of ['max', 'fixed'] as const) {
        const connections = mode === 'max' ? o.maxConnections : 10;
        const rate = mode === 'fixed' ? o.fixedRate : undefined;
        say(
          `webhook: ${webhook}, ${mode === 'max' ? `max throughput, ${connections} connections` : `${rate} requests/s`}, ${o.durationSeconds}s`,
        );
        const pid = server.child.pid ?? 0;
        const measured: { r: LoadSummary; fixed: FixedRateRun }[] = [];
        for (let i = 0; i < (mode === 'fixed' ? FIXED_RATE_RUNS : 1); i++) {
          const loadAverage = loadavg()[0] ?? NaN;
          const cpu0 = cpuSeconds(pid);
          const wait0 = runQueueWaitMs(pid);
          const r = await load({
            ...target,
            connections,
            durationSeconds: o.durationSeconds,
            ...(rate ? { overallRate: rate } : {}),
          });
          const fixed: FixedRateRun = {
            p50Ms: r.p50Ms,
            p99Ms: r.p99Ms,
            loadAverage,
            serverCoreUse: (cpuSeconds(pid) - cpu0) / r.wallSeconds,
            serverRunQueueWaitMs: runQueueWaitMs(pid) - wait0,
            ...(r.clientLagP99Ms !== undefined ? { clientLagP99Ms: r.clientLagP99Ms } : {}),
            ...(r.clientRunQueueWaitMs !== undefined ? { clientRunQueueWaitMs: r.clientRunQueueWaitMs } : {}),
          };
          measured.push({ r, fixed });
          if (mode === 'fixed')
            say(
              `  run ${i + 1}: p50 ${fixed.p50Ms.toFixed(3)} ms, p99 ${fixed.p99Ms.toFixed(3)} ms, load ${loadAverage.toFixed(2)}, server waited ${fixed.serverRunQueueWaitMs.toFixed(0)} ms for its core`,
            );
        }
        const med = (f: (m: (typeof measured)[number]) => number | undefined) => {
          const xs = measured.map(f).filter((x): x is number => x !== undefined);
          return xs.length ? median(xs) : undefined;
        };
        const sum = (f: (r: LoadSummary) => number) => measured.reduce((a, m) => a + f(m.r), 0);
        const clientLagP99Ms = med((m) => m.fixed.clientLagP99Ms);
        const clientRunQueueWaitMs = med((m) => m.fixed.clientRunQueueWaitMs);
        runs.push({
          webhook,
          mode,
          connections,
          ...(rate ? { targetRate: rate } : {}),
          // Admitted answers only: a 429 or another refusal is no throughput.
          requestsPerSecond: med((m) => (m.r.requests - m.r.tooMany - m.r.non2xx) / m.r.durationSeconds)!,
          p50Ms: med((m) => m.r.p50Ms)!,
          p99Ms: med((m) => m.r.p99Ms)!,
          errors: sum((r) => r.errors),
          non2xx: sum((r) => r.non2xx),
          tooMany: sum((r) => r.tooMany),
          serverCoreUse: med((m) => m.fixed.serverCoreUse)!,
          loadAverage: med((m) => m.fixed.loadAverage)!,
          serverRunQueueWaitMs: med((m) => m.fixed.serverRunQueueWaitMs)!,
          ...(clientLagP99Ms !== undefined ? { clientLagP99Ms } : {}),
          ...(clientRunQueueWaitMs !== undefined ? { clientRunQueueWaitMs } : {}),
          ...(mode === 'fixed' ? { runs: measured.map((m) => m.fixed) } : {}),
          ...(server.maxInFlight !== undefined ? { maxInFlight: server.maxInFlight } : {}),
        });
        const last = runs[runs.length - 1]!;
        say(
          `  ${Math.round(last.requestsPerSecond)} req/s, p50 ${last.p50Ms} ms, p99 ${last.p99Ms} ms, server core ${(last.serverCoreUse * 100).toFixed(0)}%, ${last.tooMany} × 429`,
        );
      }
    } finally {
      server.child.kill('SIGTERM');
    }
  }
  const ceiling = runs.find((r) => r.webhook === 'echo' && r.mode === 'max')?.requestsPerSecond;
  for (const r of runs)
    if (r.webhook !== 'echo' && r.mode === 'max' && ceiling) {
      r.ofCeiling = r.requestsPerSecond / ceiling;
      say(`webhook: ${r.webhook} at max throughput: ${r.ofCeiling.toFixed(2)}x the bare server's`);
    }
  return runs;
}
