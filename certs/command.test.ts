import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UserError } from '../src/cli/command.ts';
import { certsCommand, validHost } from './command.ts';

describe('validHost', () => {
  const cases: [string, boolean][] = [
    ['127.0.0.1', true],
    ['::1', true],
    ['ads-webhook.kruise-system.svc', true],
    ['*.example.com', true],
    ['localhost', true],
    ['Upper.example.com', false],
    ['bad host', false],
    ['-lead.example.com', false],
    ['', false],
  ];
  for (const [host, ok] of cases) test(`${JSON.stringify(host)} → ${ok}`, () => assert.equal(validHost(host), ok));
});

describe('advanced-daemonset certs', () => {
  test('writes a CA and a serving certificate it signed, for every host; keys private', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'ads-certs-')), 'out');
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

  const refused: [string[], RegExp][] = [
    [['--host', 'x'], /--out DIR is required/],
    [['--out', '/tmp/x'], /at least one --host/],
    [['--out', '/tmp/x', '--host', 'a b'], /not an IP address or DNS name: "a b"/],
    [['--out', '/tmp/x', '--host', 'x', '--days', '0'], /need 1 <= --days/],
    [['--out', '/tmp/x', '--host', 'x', '--nope'], /Unknown option '--nope'/],
  ];
  for (const [argv, message] of refused) {
    test(`refuses ${argv.join(' ')}`, () =>
      assert.rejects(certsCommand.run(argv), (e: unknown) => e instanceof UserError && message.test(e.message)));
  }
});
