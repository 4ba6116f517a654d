// Webhook throughput and latency: the Fastify app over TLS in its own process pinned to one core,
// a load generator in another process pinned to the other core; mutate, validate and a bare-Fastify ceiling.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
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
import { NODE } from './lib/programs.ts';
import type { LoadSummary } from './webhook-load.ts';
import { say } from './lib/stats.ts';

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
  /** 429s from the server's in-flight cap (none expected: the connections are sized to it). */
  tooMany: number;
  /** Share of its one core the server used (1 = saturated). */
  serverCoreUse: number;
}

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

/** What webhook-load.ts is given (as one JSON argument). */
export interface LoadOptions {
  url: string;
  body: string;
  /** PEM CA that signed the server's certificate. */
  ca: string;
  connections: number;
  durationSeconds: number;
  /** Requests per second for the whole run; absent: as fast as the server answers. */
  overallRate?: number;
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
  // The app answers 429 (with Retry-After, which the apiserver's client waits out) beyond its cap on admission
  // requests in flight (webhook/limits.ts: 4 per core, at least 4; the server sees one core). A closed loop of
  // more connections than that measures how fast it refuses, not how fast it admits: every run, the ceiling's
  // too, uses at most that many connections, and 429s are counted apart from the other non-2xx.
  let cap: number | undefined;
  const fit = (connections: number) => Math.min(connections, cap ?? connections);
  for (const webhook of ['mutate', 'validate', 'echo'] as const) {
    const server = await startServer(o.server, certDir, webhook === 'echo');
    cap ??= server.maxInFlight;
    try {
      const payload = body[webhook === 'echo' ? 'validate' : webhook];
      // A wrong verdict would measure an error path: check one answer first.
      const answer = await post(server.port, paths[webhook], payload, ca.certPem);
      const response = (JSON.parse(answer.text) as { response?: { allowed?: boolean; patch?: string } }).response;
      if (answer.status !== 200 || !response?.allowed || (webhook === 'mutate') !== Boolean(response.patch))
        throw new Error(`webhook ${webhook} did not answer as expected (HTTP ${answer.status}): ${answer.text}`);
      // Warm-up (not measured): the JIT and TLS session state settle before the numbers count.
      const target = { url: `https://127.0.0.1:${server.port}${paths[webhook]}`, body: payload, ca: ca.certPem };
      await load({ ...target, connections: fit(o.maxConnections), durationSeconds: Math.min(3, o.durationSeconds) });
      for (const mode of ['max', 'fixed'] as const) {
        const connections = fit(mode === 'max' ? o.maxConnections : 10);
        const rate = mode === 'fixed' ? o.fixedRate : undefined;
        say(
          `webhook: ${webhook}, ${mode === 'max' ? `max throughput, ${connections} connections` : `${rate} requests/s`}, ${o.durationSeconds}s`,
        );
        const cpu0 = cpuSeconds(server.child.pid ?? 0);
        const r = await load({
          ...target,
          connections,
          durationSeconds: o.durationSeconds,
          ...(rate ? { overallRate: rate } : {}),
        });
        const cpu1 = cpuSeconds(server.child.pid ?? 0);
        runs.push({
          webhook,
          mode,
          connections,
          ...(rate ? { targetRate: rate } : {}),
          // Admitted answers only: a 429 or another refusal is no throughput.
          requestsPerSecond: (r.requests - r.tooMany - r.non2xx) / r.durationSeconds,
          p50Ms: r.p50Ms,
          p99Ms: r.p99Ms,
          errors: r.errors,
          non2xx: r.non2xx,
          tooMany: r.tooMany,
          serverCoreUse: (cpu1 - cpu0) / r.wallSeconds,
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
  return runs;
}
