import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { createCA, createLeaf } from '../pki/pki.ts';
import { isForbidden } from './errors.ts';
import { createKubeClient, currentNamespace, loadKubeConfig } from './kubeconfig.ts';
import { resources } from './resources.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

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
