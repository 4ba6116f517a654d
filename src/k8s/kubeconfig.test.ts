import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { createCA, createLeaf } from '../pki/pki.ts';
import { isForbidden } from './errors.ts';
import { KubeClient } from './client.ts';
import {
  createKubeClient,
  currentNamespace,
  KubeconfigError,
  kubeconfigPrecedence,
  loadKubeConfig,
  loadKubectlConfig,
  mergeKubeconfigs,
  selectContext,
  type KubeconfigSource,
} from './kubeconfig.ts';
import { resources } from './resources.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

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

function kubeconfigYaml(server: string, cluster: Record<string, string | boolean>, user: Record<string, string>) {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server, ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'kruise-system' } }],
    'current-context': 'ctx',
  });
}

describe('createKubeClient from a kubeconfig file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
  const servers: (http.Server | https.Server)[] = [];
  after(() => {
    for (const s of servers) s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const listen = async (server: http.Server | https.Server) => {
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return (server.address() as AddressInfo).port;
  };

  let ca: Awaited<ReturnType<typeof createCA>>;
  before(async () => {
    ca = await createCA('test-ca');
  });

  test('TLS: trusts the CA from the kubeconfig and presents the client certificate', async () => {
    const serving = await createLeaf(ca, { commonName: 'apiserver', ipAddresses: ['127.0.0.1'], usage: 'server' });
    const clientCert = await createLeaf(ca, {
      commonName: 'admin',
      organizations: ['system:masters'],
      usage: 'client',
    });
    const port = await listen(
      https.createServer(
        { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true },
        (req, res) => {
          const peer = (req.socket as TLSSocket).getPeerCertificate();
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(
            JSON.stringify({
              kind: 'NodeList',
              metadata: { resourceVersion: '1' },
              items: [{ metadata: { name: peer.subject.CN } }],
            }),
          );
        },
      ),
    );
    const file = join(dir, 'tls.yaml');
    writeFileSync(
      file,
      kubeconfigYaml(
        `https://127.0.0.1:${port}`,
        { 'certificate-authority-data': b64(ca.certPem) },
        { 'client-certificate-data': b64(clientCert.certPem), 'client-key-data': b64(clientCert.keyPem) },
      ),
    );
    const client = createKubeClient({ kubeconfig: file });
    const list = await client.list(resources.nodes);
    assert.equal(list.items[0]?.metadata.name, 'admin');
    client.close();
  });

  test('bearer token over plain http (as behind kubectl proxy), errors keep their reason', async () => {
    let auth: string | undefined;
    const port = await listen(
      http.createServer((req, res) => {
        auth = req.headers.authorization;
        res.writeHead(403, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403, message: 'no' }));
      }),
    );
    const file = join(dir, 'token.yaml');
    writeFileSync(file, kubeconfigYaml(`http://127.0.0.1:${port}`, {}, { token: 'secret-token' }));
    const client = createKubeClient({ kubeconfig: file });
    await assert.rejects(client.get(resources.nodes, { name: 'n1' }), isForbidden);
    assert.equal(auth, 'Bearer secret-token');
    client.close();
  });
});

describe('loadKubeConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-load-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('paths relative to the kubeconfig file; token file; namespace and server of the current context', async () => {
    writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
    writeFileSync(join(dir, 'token'), 'file-token\n');
    const file = join(dir, 'relative.yaml');
    writeFileSync(
      file,
      kubeconfigYaml(
        'https://10.0.0.1:6443',
        { 'certificate-authority': 'ca.crt', 'tls-server-name': 'api' },
        {
          tokenFile: 'token',
        },
      ),
    );
    const kc = loadKubeConfig(file);
    assert.equal(kc.server, 'https://10.0.0.1:6443');
    assert.equal(kc.namespace, 'kruise-system');
    assert.equal(currentNamespace(kc), 'kruise-system');
    const rc = await kc.restConfig;
    assert.equal(String(rc.ca), 'CA PEM');
    assert.equal(rc.tlsServerName, 'api');
    assert.deepEqual(rc.headers, { Authorization: 'Bearer file-token' });
    writeFileSync(join(dir, 'token'), 'rotated-token\n');
    assert.deepEqual(await rc.refreshHeaders?.(), { Authorization: 'Bearer rotated-token' }, 'token file re-read');
  });

  test('basic auth and insecure-skip-tls-verify', async () => {
    const file = join(dir, 'basic.yaml');
    writeFileSync(
      file,
      kubeconfigYaml('https://10.0.0.1:6443', { 'insecure-skip-tls-verify': true }, { username: 'u', password: 'p' }),
    );
    const rc = await loadKubeConfig(file).restConfig;
    assert.equal(rc.insecureSkipTLSVerify, true);
    assert.deepEqual(rc.headers, { Authorization: `Basic ${b64('u:p')}` });
  });

  test('an exec plugin goes through client-node, loaded only then', async () => {
    const plugin = join(dir, 'plugin.sh');
    writeFileSync(
      plugin,
      `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const file = join(dir, 'exec.yaml');
    const doc = JSON.parse(kubeconfigYaml('https://10.0.0.2:6443', {}, {}));
    doc.users[0].user = {
      exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' },
    };
    writeFileSync(file, JSON.stringify(doc));
    const kc = loadKubeConfig(file);
    assert.equal(kc.server, 'https://10.0.0.2:6443', 'known before client-node has loaded');
    const rc = await kc.restConfig;
    assert.equal(rc.headers?.Authorization, 'Bearer exec-token');
    assert.ok(rc.refreshHeaders, 'plugin credentials are refreshed');
  });

  test('in a pod: the service account, its token re-read as it rotates', async () => {
    const sa = join(dir, 'sa');
    rmSync(sa, { recursive: true, force: true });
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), 'SA CA');
    writeFileSync(join(sa, 'token'), 'one');
    writeFileSync(join(sa, 'namespace'), 'kruise-system\n');
    const saved = { ...process.env };
    try {
      delete process.env.KUBECONFIG;
      process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
      process.env.KUBERNETES_SERVICE_PORT = '443';
      const kc = loadKubeConfig(undefined, sa);
      assert.equal(kc.server, 'https://[fd00::1]:443');
      assert.equal(kc.namespace, 'kruise-system');
      const rc = await kc.restConfig;
      assert.equal(String(rc.ca), 'SA CA');
      assert.deepEqual(rc.headers, { Authorization: 'Bearer one' });
      writeFileSync(join(sa, 'token'), 'two');
      assert.deepEqual(await rc.refreshHeaders?.(), { Authorization: 'Bearer two' });
    } finally {
      process.env = saved;
    }
  });

  test('a kubeconfig without a current context is refused with its path', () => {
    const file = join(dir, 'empty.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: Config\n');
    assert.throws(() => loadKubeConfig(file), { message: `kubeconfig ${file} has no current context or cluster` });
  });
});

describe('loadKubeConfig: several files in $KUBECONFIG, merged as clientcmd does', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-merge-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a missing file skipped, the first current-context and the first definition of a name win', async () => {
    const first = join(dir, 'first');
    writeFileSync(
      first,
      JSON.stringify(
        config({
          clusters: [['c', { server: 'https://10.0.0.1:6443', 'certificate-authority': 'ca.crt' }]],
          contexts: [['one', { cluster: 'c', user: 'u', namespace: 'kruise-system' }]],
          current: 'one',
        }),
      ),
    );
    writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
    const second = join(dir, 'second');
    writeFileSync(
      second,
      JSON.stringify(
        config({
          clusters: [['c', { server: 'https://10.0.0.2:6443' }]],
          users: [['u', { token: 't' }]],
          contexts: [['two', { cluster: 'c', user: 'u' }]],
          current: 'two',
        }),
      ),
    );
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = [join(dir, 'missing'), first, second].join(delimiter);
    try {
      const kc = loadKubeConfig();
      assert.equal(kc.server, 'https://10.0.0.1:6443');
      assert.equal(kc.namespace, 'kruise-system');
      const rc = await kc.restConfig;
      assert.equal(String(rc.ca), 'CA PEM', 'relative to the file that names it');
      assert.deepEqual(rc.headers, { Authorization: 'Bearer t' });
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });
});

// kubectl's kubeconfig rules (clientcmd loader.go): precedence, the merge of a $KUBECONFIG list (first definition of
// a name wins, first current-context wins, missing files skipped), relative paths, --context, the namespace.
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
        (e: unknown) => e instanceof KubeconfigError && c.message.test(e.message),
      ));
});

describe('loadKubectlConfig (files on disk)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubectl-config-'));
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
    const c = loadKubectlConfig({ env: [join(dir, 'missing'), a, b].join(delimiter), home });
    assert.equal(c.contextName, 'y');
    assert.equal(c.loaded.server, 'https://127.0.0.1:2');
    assert.equal(c.namespace, 'default', 'no namespace in the context: "default"');
  });
  test('--context picks a context of another file, with its namespace; -n wins over it', () => {
    const c1 = loadKubectlConfig({ env: [a, b].join(delimiter), home, context: 'x' });
    assert.equal(c1.namespace, 'from-a');
    assert.equal(c1.loaded.server, 'https://127.0.0.1:1');
    const c2 = loadKubectlConfig({ env: [a, b].join(delimiter), home, context: 'x', namespace: 'given' });
    assert.equal(c2.namespace, 'given');
  });
  test('--kubeconfig that does not exist: an error (kubectl: stat ...)', () => {
    assert.throws(
      () => loadKubectlConfig({ kubeconfig: join(dir, 'nope'), home }),
      /^KubeconfigError: stat .*nope: no such file or directory$/,
    );
  });
  test('nothing anywhere: invalid configuration', () => {
    const saved = process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_HOST;
    try {
      assert.throws(
        () => loadKubectlConfig({ env: undefined, home: join(dir, 'nohome') }),
        /invalid configuration: no configuration has been provided/,
      );
    } finally {
      if (saved !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved;
    }
  });
  test('a file that does not parse: named in the error', () => {
    const bad = join(dir, 'bad');
    writeFileSync(bad, 'clusters: [\n');
    assert.throws(() => loadKubectlConfig({ kubeconfig: bad, home }), /error loading config file ".*bad"/);
  });
});

describe('loadKubectlConfig: an exec-credential user from a merged $KUBECONFIG (client-node), relative command path', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubectl-exec-'));
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
    const client = KubeClient.fromKubeConfig(
      loadKubectlConfig({ env: [first, second].join(delimiter), home: dir }).loaded,
    );
    try {
      await client.get(
        { group: '', version: 'v1', resource: 'namespaces', namespaced: false, kind: 'Namespace' },
        { name: 'x' },
      );
    } finally {
      client.close();
    }
    assert.deepEqual(seen, ['Bearer from-exec']);
  });
});
