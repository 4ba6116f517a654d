// kubectl's kubeconfig rules (clientcmd loader.go): precedence, the merge of a $KUBECONFIG list (first definition of
// a name wins, first current-context wins, missing files skipped), relative paths, --context, the namespace.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { connect, kubeconfigPrecedence, mergeKubeconfigs, selectContext, type KubeconfigSource } from './kubeconfig.ts';
import { PluginError } from './errors.ts';

const config = (o: {
  clusters?: [string, Record<string, unknown>][];
  users?: [string, Record<string, unknown>][];
  contexts?: [string, Record<string, unknown>][];
  current?: string;
}) => ({
  apiVersion: 'v1',
  kind: 'Config',
  clusters: (o.clusters ?? []).map(([name, cluster]) => ({ name, cluster })),
  users: (o.users ?? []).map(([name, user]) => ({ name, user })),
  contexts: (o.contexts ?? []).map(([name, context]) => ({ name, context })),
  ...(o.current !== undefined ? { 'current-context': o.current } : {}),
});

describe('kubeconfigPrecedence', () => {
  const cases: { name: string; explicit?: string; env?: string; want: string[]; explicitWanted: boolean }[] = [
    { name: '--kubeconfig alone, $KUBECONFIG ignored', explicit: '/x', env: '/a', want: ['/x'], explicitWanted: true },
    {
      name: '$KUBECONFIG list, duplicates and empties dropped',
      env: `/a${delimiter}${delimiter}/b${delimiter}/a`,
      want: ['/a', '/b'],
      explicitWanted: false,
    },
    { name: 'no $KUBECONFIG: ~/.kube/config', want: ['/home/u/.kube/config'], explicitWanted: false },
    { name: 'empty $KUBECONFIG: ~/.kube/config', env: '', want: ['/home/u/.kube/config'], explicitWanted: false },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = kubeconfigPrecedence({ explicit: c.explicit, env: c.env, home: '/home/u' });
      assert.deepEqual(r, { paths: c.want, explicit: c.explicitWanted });
    });
});

describe('mergeKubeconfigs (clientcmd: the first file to define a name wins, whole entry)', () => {
  const first: KubeconfigSource = {
    path: '/etc/kube/first',
    doc: config({
      clusters: [['shared', { server: 'https://first', 'certificate-authority': 'ca.crt' }]],
      users: [['u', { 'client-certificate': 'certs/u.crt', 'client-key': '/abs/u.key', token: 't1' }]],
      contexts: [['a', { cluster: 'shared', user: 'u' }]],
    }),
  };
  const second: KubeconfigSource = {
    path: '/home/me/second',
    doc: config({
      clusters: [
        ['shared', { server: 'https://second' }],
        ['own', { server: 'https://own' }],
      ],
      users: [
        ['u', { token: 't2' }],
        ['e', { exec: { command: './bin/get-token', args: ['x'] } }],
        ['p', { exec: { command: 'aws' } }],
      ],
      contexts: [
        ['a', { cluster: 'own', user: 'e', namespace: 'ignored' }],
        ['b', { cluster: 'own', user: 'e', namespace: 'team' }],
      ],
      current: 'b',
    }),
  };
  const third: KubeconfigSource = { path: '/x/third', doc: config({ current: 'a' }) };

  const m = mergeKubeconfigs([first, second, third]);
  const cases: { name: string; got: () => unknown; want: unknown }[] = [
    {
      name: 'a cluster defined twice comes from the first file',
      got: () => m.clusters.get('shared')?.server,
      want: 'https://first',
    },
    { name: 'names only in a later file are added', got: () => m.clusters.get('own')?.server, want: 'https://own' },
    {
      name: 'a user defined twice is the first whole entry (no field merge)',
      got: () => m.users.get('u'),
      want: { 'client-certificate': '/etc/kube/certs/u.crt', 'client-key': '/abs/u.key', token: 't1' },
    },
    {
      name: 'a context defined twice comes from the first file',
      got: () => m.contexts.get('a'),
      want: { cluster: 'shared', user: 'u' },
    },
    { name: 'current-context: the first file that sets it (not the last)', got: () => m.currentContext, want: 'b' },
    {
      name: 'certificate-authority relative to its own file',
      got: () => m.clusters.get('shared')?.['certificate-authority'],
      want: '/etc/kube/ca.crt',
    },
    {
      name: 'an exec command with a slash is relative to its file',
      got: () => (m.users.get('e')?.exec as { command: string }).command,
      want: '/home/me/bin/get-token',
    },
    {
      name: 'an exec command without a slash is looked up on PATH',
      got: () => (m.users.get('p')?.exec as { command: string }).command,
      want: 'aws',
    },
  ];
  for (const c of cases) test(c.name, () => assert.deepEqual(c.got(), c.want));
});

describe('selectContext', () => {
  const merged = mergeKubeconfigs([
    {
      path: '/k',
      doc: config({
        clusters: [
          ['c', { server: 'https://c' }],
          ['noserver', {}],
        ],
        users: [['u', { token: 't' }]],
        contexts: [
          ['ctx', { cluster: 'c', user: 'u', namespace: 'team' }],
          ['plain', { cluster: 'c', user: 'u' }],
          ['dangling', { cluster: 'gone', user: 'u' }],
          ['empty', { cluster: 'noserver', user: 'u' }],
        ],
        current: 'ctx',
      }),
    },
  ]);
  test('the current context, its namespace, and a one-context kubeconfig', () => {
    const s = selectContext(merged);
    assert.equal(s.contextName, 'ctx');
    assert.equal(s.namespace, 'team');
    assert.equal(s.server, 'https://c');
    assert.deepEqual(s.doc.contexts, [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'team' } }]);
    assert.equal(s.doc['current-context'], 'ctx');
  });
  test('--context overrides current-context', () => assert.equal(selectContext(merged, 'plain').namespace, undefined));
  const errors: { name: string; override?: string; merged?: typeof merged; message: RegExp }[] = [
    {
      name: 'unknown --context: kubectl wording',
      override: 'nope',
      message: /^context was not found for specified context: nope$/,
    },
    {
      name: 'a context whose cluster is missing',
      override: 'dangling',
      message: /cluster "gone" of context "dangling" was not found/,
    },
    { name: 'a cluster without server', override: 'empty', message: /cluster "noserver" has no server defined/ },
    { name: 'no current-context and no --context', merged: mergeKubeconfigs([]), message: /no context chosen/ },
  ];
  for (const c of errors)
    test(`error: ${c.name}`, () =>
      assert.throws(
        () => selectContext(c.merged ?? merged, c.override),
        (e: unknown) => e instanceof PluginError && c.message.test(e.message),
      ));
});

describe('connect (files on disk)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ads-plugin-kubeconfig-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'home', '.kube'), { recursive: true });
  const write = (name: string, doc: unknown) => {
    const p = join(dir, name);
    writeFileSync(p, JSON.stringify(doc));
    return p;
  };
  const a = write(
    'a',
    config({
      clusters: [['c', { server: 'https://127.0.0.1:1' }]],
      users: [['u', { token: 't' }]],
      contexts: [['x', { cluster: 'c', user: 'u', namespace: 'from-a' }]],
    }),
  );
  const b = write(
    'b',
    config({
      clusters: [['c2', { server: 'https://127.0.0.1:2' }]],
      users: [['u', { token: 'other' }]],
      contexts: [['y', { cluster: 'c2', user: 'u' }]],
      current: 'y',
    }),
  );
  const home = join(dir, 'home');

  test('$KUBECONFIG with a missing file: skipped; contexts from both files; current-context from the first setting it', () => {
    const conn = connect({ env: [join(dir, 'missing'), a, b].join(delimiter), home });
    assert.equal(conn.contextName, 'y');
    assert.equal(conn.server, 'https://127.0.0.1:2');
    assert.equal(conn.namespace, 'default', 'no namespace in the context: "default"');
    conn.client.close();
  });
  test('--context picks a context of another file, with its namespace; -n wins over it', () => {
    const c1 = connect({ env: [a, b].join(delimiter), home, context: 'x' });
    assert.equal(c1.namespace, 'from-a');
    assert.equal(c1.server, 'https://127.0.0.1:1');
    const c2 = connect({ env: [a, b].join(delimiter), home, context: 'x', namespace: 'given' });
    assert.equal(c2.namespace, 'given');
    c1.client.close();
    c2.client.close();
  });
  test('--kubeconfig that does not exist: an error (kubectl: stat ...)', () => {
    assert.throws(
      () => connect({ kubeconfig: join(dir, 'nope'), home }),
      /^PluginError: stat .*nope: no such file or directory$/,
    );
  });
  test('nothing anywhere: invalid configuration', () => {
    const saved = process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_HOST;
    try {
      assert.throws(
        () => connect({ env: undefined, home: join(dir, 'nohome') }),
        /invalid configuration: no configuration has been provided/,
      );
    } finally {
      if (saved !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved;
    }
  });
  test('a file that does not parse: named in the error', () => {
    const bad = join(dir, 'bad');
    writeFileSync(bad, 'clusters: [\n');
    assert.throws(() => connect({ kubeconfig: bad, home }), /error loading config file ".*bad"/);
  });
});

describe('connect: an exec-credential user from a merged $KUBECONFIG (client-node), relative command path', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ads-plugin-exec-'));
  let server: http.Server;
  after(() => {
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the token the exec plugin prints reaches the apiserver', async () => {
    const seen: string[] = [];
    server = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"kind":"APIVersions","versions":["v1"]}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    mkdirSync(join(dir, 'bin'));
    const plugin = join(dir, 'bin', 'token');
    writeFileSync(
      plugin,
      '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"from-exec"}}\'\n',
    );
    chmodSync(plugin, 0o755);
    const first = join(dir, 'first');
    writeFileSync(first, JSON.stringify(config({ current: 'exec' })));
    const second = join(dir, 'second');
    writeFileSync(
      second,
      JSON.stringify(
        config({
          clusters: [['local', { server: `http://127.0.0.1:${port}` }]],
          users: [['e', { exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: './bin/token' } }]],
          contexts: [['exec', { cluster: 'local', user: 'e' }]],
        }),
      ),
    );
    const conn = connect({ env: [first, second].join(delimiter), home: dir });
    try {
      await conn.client.get(
        { group: '', version: 'v1', resource: 'namespaces', namespaced: false, kind: 'Namespace' },
        { name: 'x' },
      );
    } finally {
      conn.client.close();
    }
    assert.deepEqual(seen, ['Bearer from-exec']);
  });
});
