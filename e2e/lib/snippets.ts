// Runs README blocks (test/readme/snippets.ts says which) as a reader would type them into one shell: in order, in
// one working directory, each seeing what the earlier ones exported (`export PATH=...`, `eval "$(... cluster env)"`).
// Each block runs under `set -euo pipefail`, so any failing command fails it, with its output in the error.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../cluster/binaries.ts';
import { until } from '../../src/testing/wait.ts';
import type { Snippet } from '../../test/readme/snippets.ts';

export interface SnippetResult {
  code: number | null;
  /** stdout and stderr as they came; and stderr alone. */
  output: string;
  stderr: string;
  seconds: number;
}

export class SnippetSession {
  env: NodeJS.ProcessEnv;
  private readonly background: ChildProcess[] = [];
  private readonly envFile: string;
  /** How many blocks and command lines ran, for the test's report. */
  readonly ran = { blocks: 0, commands: 0 };

  /**
   * `dir` becomes the working directory: it links every top-level entry of the repository (bin/, charts/, docs/, ...)
   * so that relative paths work as written, while the files a block makes (certificates, packed tarballs) land here.
   */
  constructor(
    readonly dir: string,
    env: NodeJS.ProcessEnv,
  ) {
    mkdirSync(dir, { recursive: true });
    for (const entry of readdirSync(repoRoot)) {
      if (entry === '.git') continue;
      symlinkSync(join(repoRoot, entry), join(dir, entry));
    }
    this.envFile = join(dir, '.snippet-env');
    this.env = { ...env };
  }

  /** Runs a `run` block to its end (or `save`s it); throws with the block's output when it fails. */
  async run(s: Snippet, timeoutMs = 10 * 60_000): Promise<SnippetResult> {
    if (s.mode === 'save') {
      writeFileSync(join(this.dir, s.arg!), `${s.text}\n`);
      this.ran.blocks++;
      return { code: 0, output: '', stderr: '', seconds: 0 };
    }
    const started = Date.now();
    const child = this.spawn(`${s.text}\nenv -0 > ${JSON.stringify(this.envFile)}\n`);
    const out = capture(child);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    clearTimeout(timer);
    const seconds = (Date.now() - started) / 1000;
    if (code !== 0) {
      throw new Error(
        `${where(s)}: the block exited ${code} after ${seconds.toFixed(1)}s:\n${s.text}\n---\n${out.output}`,
      );
    }
    this.env = Object.fromEntries(
      readFileSync(this.envFile, 'utf8')
        .split('\0')
        .filter((kv) => kv.includes('='))
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    this.count(s);
    return { code, output: out.output, stderr: out.stderr, seconds };
  }

  /** Starts a `start` block in the background and waits until its ready command succeeds. */
  async start(s: Snippet, timeoutMs = 120_000): Promise<void> {
    const child = this.spawn(s.text);
    const out = capture(child);
    let exited: number | null | undefined;
    child.on('close', (c) => (exited = c));
    this.background.push(child);
    const state = await until(
      `${where(s)}: ready (${s.ready})`,
      async () => (exited !== undefined ? 'exited' : (await this.probe(s.ready!)) === 0 && 'ready'),
      { timeoutMs, intervalMs: 500 },
    );
    if (state === 'exited') throw new Error(`${where(s)}: exited ${exited} before ready:\n${out.output}`);
    this.count(s);
  }

  /** Whether a background block is still running. */
  get running(): boolean {
    return this.background.some((c) => c.exitCode === null && c.signalCode === null);
  }

  /** SIGTERM (what Ctrl-C's SIGINT does for the manager) to every background block's processes; waits until gone. */
  async stop(): Promise<void> {
    await Promise.all(
      this.background.splice(0).map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.on('close', () => resolve());
            // Its process group (spawned detached): the shell and the command it runs.
            process.kill(-child.pid!, 'SIGTERM');
          }),
      ),
    );
  }

  /** Runs `cmd` in the session (not a README block); its exit code. */
  probe(cmd: string): Promise<number | null> {
    return new Promise((resolve) => {
      const p = spawn('bash', ['-c', cmd], { cwd: this.dir, env: this.env, stdio: 'ignore' });
      p.on('close', (c) => resolve(c));
    });
  }

  private spawn(script: string): ChildProcess {
    return spawn('bash', ['-c', `set -euo pipefail\n${script}`], {
      cwd: this.dir,
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
  }

  private count(s: Snippet): void {
    this.ran.blocks++;
    // Command lines: not blank, not a comment, not a continuation of the line before.
    const lines = s.text.split('\n');
    this.ran.commands += lines.filter(
      (l, i) => l.trim() !== '' && !l.trim().startsWith('#') && !(lines[i - 1] ?? '').trimEnd().endsWith('\\'),
    ).length;
  }
}

/** Where a block stands, as `file:line`. */
const where = (s: Snippet) => `${s.file ?? 'README.md'}:${s.line}`;

/** What a process prints: stdout and stderr as they came, and stderr alone. */
function capture(child: ChildProcess): { readonly output: string; readonly stderr: string } {
  const out = { output: '', stderr: '' };
  child.stdout!.on('data', (c: Buffer) => (out.output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => {
    out.output += c.toString();
    out.stderr += c.toString();
  });
  return out;
}
