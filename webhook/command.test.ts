// `advanced-daemonset webhook` as a user runs it: flags, clear errors, and SIGTERM (readiness false during the
// drain, then a clean exit).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureLocalServingCertificate } from '../certs/webhook-config.ts';
import { sleep } from '../src/testing/wait.ts';

const BIN = fileURLToPath(new URL('../bin/advanced-daemonset', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function status(url: string): Promise<number> {
  try {
    return (await fetch(url)).status;
  } catch {
    return 0;
  }
}

describe('advanced-daemonset webhook', { timeout: 60_000 }, () => {
  test('usage errors are clear messages, no stack trace', () => {
    const noDir = spawnSync(BIN, ['webhook'], { encoding: 'utf8' });
    assert.equal(noDir.status, 2);
    assert.match(noDir.stderr, /--cert-dir is required/);
    const missing = spawnSync(BIN, ['webhook', '--cert-dir', '/nonexistent'], { encoding: 'utf8' });
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /\/nonexistent\/tls.crt does not exist/);
    for (const r of [noDir, missing]) assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  test('serves with --cert-dir --port --health-port --metrics-port; SIGTERM drains then exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ads-webhook-cmd-'));
    try {
      await ensureLocalServingCertificate(dir, ['127.0.0.1']);
      const [port, health, metrics] = [await freePort(), await freePort(), await freePort()];
      const child = spawn(
        BIN,
        ['webhook', '--cert-dir', dir, '--host', '127.0.0.1', '--port', String(port), '--health-port', String(health), '--metrics-port', String(metrics), '--drain', '1s'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      ); // prettier-ignore
      let logs = '';
      child.stdout.on('data', (c) => (logs += c));
      child.stderr.on('data', (c) => (logs += c));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const deadline = Date.now() + 30_000;
      while ((await status(`http://127.0.0.1:${health}/readyz`)) !== 200) {
        assert.ok(Date.now() < deadline, `webhook did not become ready: ${logs}`);
        await sleep(100);
      }
      assert.equal(await status(`http://127.0.0.1:${metrics}/metrics`), 200);
      child.kill('SIGTERM');
      let sawDraining = false;
      while (child.exitCode === null) {
        if ((await status(`http://127.0.0.1:${health}/readyz`)) === 503) sawDraining = true;
        await sleep(50);
      }
      assert.equal(await exited, 0, logs);
      assert.ok(sawDraining, 'readyz answered 503 while draining');
      const lines = logs
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { msg: string });
      assert.deepEqual(
        lines.map((l) => l.msg).filter((m) => /listening|draining|stopped/.test(m) && !m.startsWith('Server')),
        ['webhook server listening', 'webhook draining', 'webhook server stopped'],
        'pino JSON log lines',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('limit flags: listed in --help; 0 refused; --connection-timeout closes a silent TLS connection', async () => {
    const help = spawnSync(BIN, ['webhook', '--help'], { encoding: 'utf8' });
    for (const flag of ['--max-in-flight', '--max-connections', '--connection-timeout']) assert.match(help.stdout, new RegExp(flag));
    const dir = mkdtempSync(join(tmpdir(), 'ads-webhook-cmd-'));
    try {
      const { caBundle } = await ensureLocalServingCertificate(dir, ['127.0.0.1']);
      const zero = spawnSync(BIN, ['webhook', '--cert-dir', dir, '--max-in-flight', '0'], { encoding: 'utf8' });
      assert.equal(zero.status, 2);
      assert.match(zero.stderr, /--max-in-flight must be greater than 0/);
      const [port, health] = [await freePort(), await freePort()];
      const child = spawn(
        BIN,
        ['webhook', '--cert-dir', dir, '--host', '127.0.0.1', '--port', String(port), '--health-port', String(health), '--metrics-port', String(await freePort()), '--drain', '0s', '--connection-timeout', '1s'],
        { stdio: ['ignore', 'ignore', 'ignore'] },
      );
      try {
        const deadline = Date.now() + 30_000;
        while ((await status(`http://127.0.0.1:${health}/readyz`)) !== 200) {
          assert.ok(Date.now() < deadline, 'webhook did not become ready');
          await sleep(100);
        }
        const started = Date.now();
        const closedAfter = await new Promise<number>((resolve, reject) => {
          const s = tlsConnect({ host: '127.0.0.1', port, ca: caBundle }, () => {});
          s.on('error', reject);
          s.on('close', () => resolve(Date.now() - started));
        });
        assert.ok(closedAfter >= 900 && closedAfter < 5_000, `closed after ${closedAfter} ms`);
      } finally {
        child.kill('SIGTERM');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }); // prettier-ignore
});
