// Starts `bin/advanced-daemonset manager` out of cluster against a local cluster: the process
// the e2e suite and the demo run (webhook on 127.0.0.1 with its own certificate, controller
// with leader election). Ports are picked by the manager (0) and read back from its log.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../cluster/binaries.ts';
import { sleep } from '../../src/testing/wait.ts';
import { readLogLines } from './log.ts';

export interface ManagerProcess {
  child: ChildProcess;
  log: string;
  healthPort: number;
  metricsPort: number;
  webhookPort: number;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartManagerOptions {
  kubeconfig: string;
  dir: string;
  /** Extra flags, e.g. ['--leader-election-id', 'x', '--webhook-host', ''] */
  args?: string[];
  /** Register webhook configurations for 127.0.0.1 (default true). */
  webhook?: boolean;
  timeoutMs?: number;
  /**
   * The program and its leading arguments; default bin/advanced-daemonset (TypeScript through tsx). The benchmark
   * runs the production bundle: [node, ...NODE_RUNTIME_FLAGS, 'dist/main.mjs'] (bench/lib/programs.ts).
   */
  command?: string[];
}

function startedLine(log: string): { healthPort: number; metricsPort: number; webhookPort?: number } | undefined {
  const rec = readLogLines(log).find(
    (r) =>
      (r.msg === 'manager started' || r.msg === 'controller started') &&
      typeof r.healthPort === 'number' &&
      r.healthPort > 0,
  ) as { healthPort: number; metricsPort?: number; webhookPort?: number } | undefined;
  return rec
    ? { healthPort: rec.healthPort, metricsPort: rec.metricsPort ?? 0, webhookPort: rec.webhookPort }
    : undefined;
}

/**
 * `manager` out of cluster: certificates in `certDir`, ephemeral ports (read back from the log), the Lease in
 * default, and with `webhook` (default true) the webhook on 127.0.0.1 with configurations registered for it.
 */
export function managerArgs(kubeconfig: string, certDir: string, webhook = true): string[] {
  return [
    'manager',
    ...['--kubeconfig', kubeconfig, '--cert-dir', certDir],
    ...['--webhook-port', '0', '--health-port', '0', '--metrics-port', '0'],
    ...['--leader-election-namespace', 'default'],
    ...(webhook ? ['--webhook-host', '127.0.0.1'] : []),
  ];
}

export async function startManager(opts: StartManagerOptions): Promise<ManagerProcess> {
  mkdirSync(opts.dir, { recursive: true });
  const log = join(opts.dir, 'manager.log');
  const fd = openSync(log, 'w');
  const args = [...managerArgs(opts.kubeconfig, join(opts.dir, 'certs'), opts.webhook !== false), ...(opts.args ?? [])];
  const [program, ...leading] = opts.command ?? [join(repoRoot, 'bin', 'advanced-daemonset')];
  const child = spawn(program as string, [...leading, ...args], { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(
        `manager exited with code ${child.exitCode}; log ${log}:\n${readFileSync(log, 'utf8').slice(-3000)}`,
      );
    }
    const started = startedLine(log);
    if (started) {
      const ready = await fetch(`http://127.0.0.1:${started.healthPort}/readyz`, {
        signal: AbortSignal.timeout(1000),
      }).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) {
        return {
          child,
          log,
          healthPort: started.healthPort,
          metricsPort: started.metricsPort,
          webhookPort: started.webhookPort ?? 0,
          async stop(signal: NodeJS.Signals = 'SIGTERM') {
            if (child.exitCode === null) child.kill(signal);
            return exited;
          },
        };
      }
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(
        `manager not ready within ${(opts.timeoutMs ?? 60_000) / 1000}s; log ${log}:\n${readFileSync(log, 'utf8').slice(-3000)}`,
      );
    }
    await sleep(200);
  }
}
