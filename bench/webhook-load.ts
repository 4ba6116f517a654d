// The load generator, in its own process (pinned to the other core), against one webhook path.
// Argument: a JSON object of options (LoadOptions); prints a LoadSummary as JSON.
// - Max throughput: autocannon (closed loop, N connections each with one request in flight).
// - Fixed rate: an open loop written here, because autocannon's overallRate sends each second's requests in a
//   burst (so its p99 measures the burst's queue, tens of ms, not the server) and rounds latency to whole ms.
//   Requests are started evenly spaced, each at its own time, over keep-alive connections; latency is from
//   starting a request (connection queue included) to the end of its response, in microseconds.
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { percentile } from './lib/stats.ts';
import { sleep } from '../src/testing/wait.ts';

/** What this load generator is given (as one JSON argument). */
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

export interface LoadSummary {
  requests: number;
  /** Of the recorded requests. */
  durationSeconds: number;
  /** Of the whole run, warm-up included (what the server's CPU time is divided by). */
  wallSeconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Connection errors and timeouts. */
  errors: number;
  /** Answers not 2xx, the 429s excepted. */
  non2xx: number;
  /** 429 Too Many Requests: the server's cap on admission requests in flight refused these. */
  tooMany: number;
  /**
   * Fixed rate only: this process's own delays, which the latencies include. Its event loop's p99 and largest delay
   * over the recorded part, ms, and how long its threads waited for their core (Linux run-queue wait), ms: a
   * request cannot start or be timed while the loop is stalled.
   */
  clientLagP99Ms?: number;
  clientLagMaxMs?: number;
  clientRunQueueWaitMs?: number;
}

/**
 * How long all threads of process `pid` have waited, runnable, for a core (ms; Linux schedstat's run-queue wait,
 * /proc/PID/task/TID/schedstat): on a shared machine, time a process was ready but another ran. NaN when unreadable.
 */
export function runQueueWaitMs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
      } catch {
        // The thread ended meanwhile.
      }
    }
    return ns / 1e6;
  } catch {
    return NaN;
  }
}

async function maxThroughput(o: LoadOptions): Promise<LoadSummary> {
  const r = await autocannon({
    url: o.url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: o.body,
    connections: o.connections,
    duration: o.durationSeconds,
    tlsOptions: { ca: o.ca },
  });
  return {
    requests: r.requests.total,
    durationSeconds: r.duration,
    wallSeconds: r.duration,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx - (r.statusCodeStats['429']?.count ?? 0),
    tooMany: r.statusCodeStats['429']?.count ?? 0,
  };
}

async function fixedRate(o: LoadOptions, rate: number): Promise<LoadSummary> {
  const url = new URL(o.url);
  const agent = new Agent({ keepAlive: true, maxSockets: o.connections, ca: o.ca });
  const latenciesMs: number[] = [];
  let errors = 0;
  let non2xx = 0;
  let tooMany = 0;
  let inFlight = 0;
  const send = (record: boolean) => {
    inFlight++;
    const start = process.hrtime.bigint();
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(o.body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          if (record) latenciesMs.push(Number(process.hrtime.bigint() - start) / 1e6);
          if (record && res.statusCode === 429) tooMany++;
          else if (record && (res.statusCode ?? 0) >= 300) non2xx++;
          inFlight--;
        });
      },
    );
    // No Nagle: a request split over two TCP segments would otherwise wait for a delayed ACK (~40 ms).
    req.on('socket', (socket) => socket.setNoDelay(true));
    req.on('error', () => {
      if (record) errors++;
      inFlight--;
    });
    req.end(o.body);
  };
  // The first second is warm-up, not recorded: TLS handshakes of new connections and this process's JIT would
  // otherwise be the slowest 1% of the run.
  const warmup = Math.round(rate);
  const total = warmup + Math.round(rate * o.durationSeconds);
  const intervalMs = 1000 / rate;
  const t0 = performance.now();
  let recordFrom = t0;
  let sent = 0;
  const lag = monitorEventLoopDelay({ resolution: 1 });
  let wait0 = 0;
  // Start each request at its time, checking the clock once per turn of the event loop (setImmediate: responses
  // are read in between). Not a timer: Node's timers count whole milliseconds (libuv's loop time), so a 1 ms
  // interval fired every 1-2 ms and started the requests in pairs, the second queued behind the first at the
  // single-threaded server (bench/history.md, section 4). This process has its core to itself, so keeping it busy
  // takes nothing from the server.
  await new Promise<void>((resolve) => {
    const turn = () => {
      const due = Math.min(total, Math.floor((performance.now() - t0) / intervalMs) + 1);
      while (sent < due) {
        send(sent >= warmup);
        sent++;
        if (sent === warmup) {
          recordFrom = performance.now();
          lag.enable();
          wait0 = runQueueWaitMs(process.pid);
        }
      }
      if (sent >= total) resolve();
      else setImmediate(turn);
    };
    turn();
  });
  const deadline = performance.now() + 10_000;
  while (inFlight > 0 && performance.now() < deadline) await sleep(5);
  const end = performance.now();
  lag.disable();
  const waited = runQueueWaitMs(process.pid) - wait0;
  agent.destroy();
  return {
    requests: latenciesMs.length,
    durationSeconds: (end - recordFrom) / 1000,
    wallSeconds: (end - t0) / 1000,
    p50Ms: percentile(latenciesMs, 50),
    p99Ms: percentile(latenciesMs, 99),
    errors: errors + inFlight,
    non2xx,
    tooMany,
    clientLagP99Ms: lag.percentile(99) / 1e6,
    clientLagMaxMs: lag.max / 1e6,
    clientRunQueueWaitMs: waited,
  };
}

// Run as a program (webhook.ts imports runQueueWaitMs from here too).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const o = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
  const summary = o.overallRate ? await fixedRate(o, o.overallRate) : await maxThroughput(o);
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}
