import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { createCA, createLeaf } from '../../certs/pki.ts';
import { isForbidden } from './client.ts';
import { createKubeClient } from './kubeconfig.ts';
import { resources } from './client.ts';

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
