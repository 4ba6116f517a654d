import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../src/cli/command.ts';
import { certsCommand, validHost } from './command.ts';
import { tempDir } from '../src/testing/temp-dir.ts';

describe('validHost', () => {
  const cases: { host: string; ok: boolean }[] = [
    { host: '127.0.0.1', ok: true },
    { host: '::1', ok: true },
    { host: 'ads-webhook.kruise-system.svc', ok: true },
    { host: '*.example.com', ok: true },
    { host: 'localhost', ok: true },
    { host: 'Upper.example.com', ok: false },
    { host: 'bad host', ok: false },
    { host: '-lead.example.com', ok: false },
    { host: '', ok: false },
  ];
  for (const { host, ok } of cases) test(`${JSON.stringify(host)} → ${ok}`, () => assert.equal(validHost(host), ok));
});

describe('advanced-daemonset certs', () => {
  test('writes a CA and a serving certificate it signed, for every host; keys private', async () => {
    const out = join(tempDir('ads-certs-'), 'out');
    const write = () => certsCommand.run(['--out', out, '--host', '127.0.0.1', '--host', 'ads.ns.svc', '--days', '30']);
    const quiet = console.log;
    console.log = () => {};
    try {
      assert.equal(await write(), 0);
    } finally {
      console.log = quiet;
    }
    const ca = new X509Certificate(readFileSync(join(out, 'ca.crt')));
    const leaf = new X509Certificate(readFileSync(join(out, 'tls.crt')));
    assert.equal(ca.ca, true);
    assert.ok(leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
    assert.ok(leaf.checkPrivateKey(createPrivateKey(readFileSync(join(out, 'tls.key')))));
    assert.ok(ca.checkPrivateKey(createPrivateKey(readFileSync(join(out, 'ca.key')))));
    assert.equal(leaf.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(leaf.checkHost('ads.ns.svc'), 'ads.ns.svc');
    const days = (new Date(leaf.validTo).getTime() - new Date(leaf.validFrom).getTime()) / 86_400_000;
    assert.equal(Math.round(days), 30);
    for (const key of ['tls.key', 'ca.key']) assert.equal(statSync(join(out, key)).mode & 0o777, 0o600, key);
    await assert.rejects(
      write(),
      (e: unknown) => e instanceof UserError && /already exist; use --force/.test(e.message),
    );
  });

  test('--force overwrites files that were readable by others and leaves keys at 0600, certificates at 0644', async () => {
    const out = tempDir('ads-certs-force-');
    const run = (...extra: string[]) => certsCommand.run(['--out', out, '--host', '127.0.0.1', ...extra]);
    const quiet = console.log;
    console.log = () => {};
    try {
      assert.equal(await run(), 0);
      for (const f of ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']) chmodSync(join(out, f), 0o666);
      const before = readFileSync(join(out, 'tls.key'), 'utf8');
      assert.equal(await run('--force'), 0);
      assert.notEqual(readFileSync(join(out, 'tls.key'), 'utf8'), before, 'overwritten');
    } finally {
      console.log = quiet;
    }
    const modes = Object.fromEntries(
      ['ca.crt', 'ca.key', 'tls.crt', 'tls.key'].map((f) => [f, statSync(join(out, f)).mode & 0o777]),
    );
    assert.deepEqual(modes, { 'ca.crt': 0o644, 'ca.key': 0o600, 'tls.crt': 0o644, 'tls.key': 0o600 });
  });

  const refused: { argv: string[]; message: RegExp }[] = [
    { argv: ['--host', 'x'], message: /--out DIR is required/ },
    { argv: ['--out', '/tmp/x'], message: /at least one --host/ },
    { argv: ['--out', '/tmp/x', '--host', 'a b'], message: /not an IP address or DNS name: "a b"/ },
    { argv: ['--out', '/tmp/x', '--host', 'x', '--days', '0'], message: /need 1 <= --days/ },
    { argv: ['--out', '/tmp/x', '--host', 'x', '--nope'], message: /Unknown option '--nope'/ },
  ];
  for (const { argv, message } of refused) {
    test(`refuses ${argv.join(' ')}`, () =>
      assert.rejects(certsCommand.run(argv), (e: unknown) => e instanceof UserError && message.test(e.message)));
  }
});
