// API requests per controller, by user agent, from the apiserver's audit log: apiserver metrics
// carry no user-agent label, and the KCM's own rest_client metrics mix all of its controllers.
import { closeSync, createReadStream, openSync, readSync, statSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** Metadata level for everything but kwok's node heartbeats (nodes/status), which would dwarf the rest. */
const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    resources:
      - group: ""
        resources: ["nodes/status"]
  - level: Metadata
`;

/** Writes the policy and returns the kube-apiserver flags that turn the audit log on. */
export function auditApiserverArgs(policyPath: string, logPath: string): string[] {
  writeFileSync(policyPath, POLICY);
  return [
    `--audit-policy-file=${policyPath}`,
    `--audit-log-path=${logPath}`,
    '--audit-log-format=json',
    '--audit-log-maxsize=0',
  ];
}

export interface AuditWindow {
  /** Counts requests whose user agent contains this. */
  userAgent: string;
  start: number;
  end: number;
  count: number;
  byVerb: Record<string, number>;
  /** When the last write to pods (any subresource) in the window was received, ms; undefined without any. */
  lastPodWriteAt?: number;
  /**
   * The apiserver's time on each write to pods in the window, received to response complete, ms: whether the
   * controller's writes wait on the apiserver rather than on its own rate limiter.
   */
  podWriteMs: number[];
}

interface AuditEvent {
  stage?: string;
  verb?: string;
  userAgent?: string;
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
  objectRef?: { resource?: string; subresource?: string };
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/**
 * One pass over the log: each request once (a watch at ResponseStarted, anything else at
 * ResponseComplete), into every window whose user agent and time range it falls in.
 */
export async function countRequests(logPath: string, windows: AuditWindow[]): Promise<void> {
  if (windows.length === 0) return;
  const agents = [...new Set(windows.map((w) => w.userAgent))];
  const lines = createInterface({ input: createReadStream(logPath, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    if (!agents.some((a) => line.includes(a))) continue;
    let e: AuditEvent;
    try {
      e = JSON.parse(line) as AuditEvent;
    } catch {
      continue; // a line being written as we read
    }
    const counted = e.stage === 'ResponseStarted' || (e.stage === 'ResponseComplete' && e.verb !== 'watch');
    if (!counted || !e.userAgent || !e.requestReceivedTimestamp) continue;
    const t = Date.parse(e.requestReceivedTimestamp);
    for (const w of windows) {
      if (t < w.start || t > w.end || !e.userAgent.includes(w.userAgent)) continue;
      w.count++;
      const resource = [e.objectRef?.resource, e.objectRef?.subresource].filter(Boolean).join('/');
      const key = `${e.verb} ${resource}`;
      w.byVerb[key] = (w.byVerb[key] ?? 0) + 1;
      if (e.objectRef?.resource === 'pods' && WRITE_VERBS.has(e.verb ?? '')) {
        w.lastPodWriteAt = Math.max(w.lastPodWriteAt ?? t, t);
        if (e.stageTimestamp) w.podWriteMs.push(microsBetween(e.requestReceivedTimestamp, e.stageTimestamp) / 1000);
      }
    }
  }
}

export function auditWindow(userAgent: string, start: number, end: number): AuditWindow {
  return { userAgent, start, end, count: 0, byVerb: {}, podWriteMs: [] };
}

/**
 * Microseconds from one audit timestamp to a later one. The audit log writes microseconds
 * ("2026-11-27T10:29:01.123456Z"), which Date.parse would cut to milliseconds.
 */
export function microsBetween(from: string, to: string): number {
  const micros = (ts: string) => {
    const m = /\.(\d{1,6})Z$/.exec(ts);
    const whole = Date.parse(m ? ts.slice(0, m.index) + 'Z' : ts);
    return whole * 1000 + (m ? Number(m[1]!.padEnd(6, '0')) : 0);
  };
  return micros(to) - micros(from);
}

/**
 * Waits until no pod request of `userAgent` has reached the apiserver for `quietMs` (reading the log as it grows),
 * at most `timeoutMs`; returns how long it waited, ms. The fake kubelet works through its queue of pod stages at its
 * own pace: after a step of 1,000 pods it was still deleting the previous controller's pods 55 s into the next
 * controller's creation (each answered 404), which then waited behind them. Each step starts once it is quiet.
 */
export async function waitQuiet(
  logPath: string,
  userAgent: string,
  quietMs: number,
  timeoutMs: number,
): Promise<number> {
  const start = Date.now();
  let offset = statSync(logPath).size;
  let last = start;
  let rest = '';
  while (Date.now() - last < quietMs && Date.now() - start < timeoutMs) {
    await new Promise((r) => setTimeout(r, 250));
    const size = statSync(logPath).size;
    if (size <= offset) continue;
    const fd = openSync(logPath, 'r');
    try {
      const buf = Buffer.alloc(size - offset);
      readSync(fd, buf, 0, buf.length, offset);
      offset = size;
      const lines = (rest + buf.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      if (lines.some((l) => l.includes(userAgent) && l.includes('"resource":"pods"'))) last = Date.now();
    } finally {
      closeSync(fd);
    }
  }
  return Date.now() - start;
}
