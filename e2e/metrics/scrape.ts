// Reads a manager's /metrics (the Prometheus text format, version 0.0.4) into samples and metric family types.
import { request } from 'node:https';
import type { Exposition } from '../../test/chart/promql.ts';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape extends Exposition {
  samples: Sample[];
  /** Local time (ms) the request was sent and the answer read: the values were computed in between. */
  sentAt: number;
  readAt: number;
}

function parseValue(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

/** `{a="x",b="y\"z"}` from `i` (at the `{`): the labels and the index after the `}`. */
function parseLabels(line: string, i: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  i++; // {
  while (line[i] !== '}') {
    if (line[i] === ',' || line[i] === ' ') {
      i++;
      continue;
    }
    const eq = line.indexOf('=', i);
    const key = line.slice(i, eq).trim();
    i = eq + 2; // ="
    let value = '';
    for (; line[i] !== '"'; i++) {
      if (i >= line.length) throw new Error(`unterminated label value in: ${line}`);
      if (line[i] === '\\') {
        i++;
        value += line[i] === 'n' ? '\n' : line[i];
      } else value += line[i];
    }
    labels[key] = value;
    i++; // closing quote
  }
  return { labels, end: i + 1 };
}

export function parseExposition(text: string): Pick<Scrape, 'samples' | 'sampleNames' | 'types'> {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (m) types.set(m[1]!, m[2]!);
      continue;
    }
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    if (brace !== -1 && brace < space) {
      const name = line.slice(0, brace);
      const { labels, end } = parseLabels(line, brace);
      samples.push({ name, labels, value: parseValue(line.slice(end).trim().split(' ')[0]!) });
    } else {
      samples.push({ name: line.slice(0, space), labels: {}, value: parseValue(line.slice(space + 1).split(' ')[0]!) });
    }
  }
  return { samples, sampleNames: new Set(samples.map((s) => s.name)), types };
}

export async function scrape(port: number): Promise<Scrape> {
  const sentAt = Date.now();
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  const readAt = Date.now();
  if (!res.ok) throw new Error(`GET /metrics on port ${port}: HTTP ${res.status}: ${text.slice(0, 500)}`);
  return { ...parseExposition(text), sentAt, readAt };
}

/**
 * One DaemonSet's series whose name starts with `prefix`, keyed `<name without prefix>{<other labels>}` (the
 * namespace and daemonset labels left out, the others sorted), e.g. `status_condition{condition="Available",status="true"}`.
 */
export function daemonSetSeries(s: Scrape, prefix: string, namespace: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const x of s.samples) {
    if (!x.name.startsWith(prefix) || x.labels.namespace !== namespace || x.labels.daemonset !== name) continue;
    const rest = Object.entries(x.labels)
      .filter(([k]) => k !== 'namespace' && k !== 'daemonset')
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}="${v}"`)
      .join(',');
    out.set(`${x.name.slice(prefix.length)}${rest ? `{${rest}}` : ''}`, x.value);
  }
  return out;
}

/**
 * GET /metrics of a manager run with --metrics-secure: over HTTPS, its self-signed certificate not verified (as the
 * chart's ServiceMonitor is told to accept it), with `token` as the bearer token when given.
 */
export function getSecureMetrics(
  host: string,
  port: number,
  token?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host, port, path: '/metrics', rejectUnauthorized: false, timeout: 5000, headers: token ? { authorization: `Bearer ${token}` } : {} }, // prettier-ignore
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET https://${host}:${port}/metrics: timed out`)));
    req.on('error', reject);
    req.end();
  });
}
