// connect: the kubeconfig as kubectl reads it (src/k8s/kubeconfig.ts, whose tests cover the rules) and a client on
// it; a kubeconfig that cannot be used is a PluginError in kubectl's words.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { connect } from './connect.ts';

describe('connect', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ads-plugin-connect-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'config');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'from-x' } }],
      'current-context': 'x',
    }),
  );

  test('the context, its server and namespace; -n wins over it', () => {
    const c1 = connect({ env: [join(dir, 'missing'), file].join(delimiter), home: dir });
    assert.deepEqual([c1.contextName, c1.server, c1.namespace], ['x', 'https://127.0.0.1:1', 'from-x']);
    const c2 = connect({ kubeconfig: file, home: dir, namespace: 'given' });
    assert.equal(c2.namespace, 'given');
    c1.client.close();
    c2.client.close();
  });

  const refused: { name: string; opts: Parameters<typeof connect>[0]; message: RegExp }[] = [
    {
      name: '--kubeconfig that does not exist (kubectl: stat ...)',
      opts: { kubeconfig: join(dir, 'nope'), home: dir },
      message: /^PluginError: stat .*nope: no such file or directory$/,
    },
    {
      name: 'an unknown --context',
      opts: { kubeconfig: file, context: 'nope' },
      message: /^PluginError: context was not found/,
    },
  ];
  for (const c of refused) test(`refused: ${c.name}`, () => assert.throws(() => connect(c.opts), c.message));
});
