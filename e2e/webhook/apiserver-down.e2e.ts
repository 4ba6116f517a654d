// The webhook starts while the apiserver is down (cmd/advanced-daemonset/webhook-host.ts, certs/startup.ts):
// a manager in `--webhook-host 127.0.0.1` mode bootstraps once (certificate in its cert dir,
// webhook configurations registered), is stopped; the apiserver is stopped; the manager starts
// again and serves admission at once over TLS with the earlier certificate while the apiserver
// is down, retrying the registration; the apiserver comes back and the registration completes,
// with caBundle the CA of that certificate and the URL of the new process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect } from 'node:tls';
import { join } from 'node:path';
import { startApiserver, stopApiserver } from '../cluster/cluster.ts';
import {
  adsManifest,
  describeOnPrivateCluster,
  readLogLines,
  startProductProcess,
  type ManagedProcess,
} from '../lib/ads.ts';
import { eventually, kubectlJson } from '../lib/kube.ts';
import { managerArgs } from '../lib/manager.ts';
import { admissionReview } from '../../src/api/testing/review-fixtures.ts';

interface WebhookConfigurationJson {
  webhooks: { clientConfig: { url?: string; caBundle?: string } }[];
}

const NAME = 'ads-startup';
const BOOTSTRAPPED = 'webhook bootstrap complete';

describeOnPrivateCluster('webhook start-up with the apiserver down', { timeout: 600_000 }, (cluster) => {
  const certDir = () => join(cluster.dir, 'certs');
  const args = () => [
    ...managerArgs(cluster.kubeconfig, certDir()),
    ...['--leader-election-id', NAME, '--webhook-configuration-name', NAME],
    // The first run's registration outlives it (as after a crash), for the second run to find and update.
    '--webhook-keep-registration=true',
  ];
  const logged = (p: ManagedProcess, msg: string) => readLogLines(p.logFile).find((l) => l.msg === msg);
  const waitLogged = (p: ManagedProcess, msg: string, timeoutMs = 60_000) =>
    eventually(
      `"${msg}" in ${p.logFile}`,
      async () => {
        if (p.child.exitCode !== null) {
          throw new Error(`${p.name} exited ${p.child.exitCode}: ${readFileSync(p.logFile, 'utf8').slice(-2000)}`);
        }
        return logged(p, msg);
      },
      { timeoutMs, intervalMs: 200 },
    );
  const stopProcess = async (p: ManagedProcess) => {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
    return p.exit;
  };
  const configuration = (kind: 'mutating' | 'validating') =>
    kubectlJson<WebhookConfigurationJson>(['get', `${kind}webhookconfiguration`, `${NAME}-${kind}`]);

  test('serves the earlier certificate at once, and registers once the apiserver is back', async () => {
    // 1. A first run bootstraps: a certificate in the cert dir, the configurations registered.
    const first = startProductProcess('first', args(), join(cluster.dir, 'first.log'));
    try {
      await waitLogged(first, BOOTSTRAPPED);
    } finally {
      await stopProcess(first);
    }
    const earlier = new X509Certificate(readFileSync(join(certDir(), 'tls.crt')));
    const ca = readFileSync(join(certDir(), 'ca.crt'), 'utf8');
    assert.equal((await configuration('validating')).webhooks[0]?.clientConfig.caBundle, b64(ca));

    // 2. The apiserver goes down; the manager starts again.
    await stopApiserver(cluster.clusterDir);
    let second: ManagedProcess | undefined;
    let apiserverUp = false;
    try {
      second = startProductProcess('second', args(), join(cluster.dir, 'second.log'));
      const started = (await waitLogged(second, 'manager started', 30_000)) as {
        webhookPort?: number;
        healthPort?: number;
      };
      const port = started.webhookPort!;
      assert.ok(port > 0, 'the webhook port is bound');

      // TLS with the certificate of the first run, verified against its CA as the apiserver does.
      const peer = await handshake(port, ca);
      assert.equal(peer.fingerprint256, earlier.fingerprint256, 'the earlier certificate is served');
      // It answers admission: a valid DaemonSet is allowed and defaulted.
      const review = await admit(port, ca);
      assert.equal(review.response?.allowed, true, JSON.stringify(review));
      assert.equal(review.response?.uid, 'apiserver-down');
      assert.ok(review.response?.patch, 'the mutating webhook returns its defaults');
      // The manager is alive.
      const healthz = await fetch(`http://127.0.0.1:${started.healthPort}/healthz`);
      assert.equal(healthz.status, 200);
      // Registration is retried, not given up: still not done, the process still running.
      await eventually('a logged registration retry', async () =>
        readLogLines(second!.logFile).some((l) => /register webhook configurations failed; retrying/.test(l.msg ?? '')),
      );
      assert.equal(logged(second, BOOTSTRAPPED), undefined, 'no bootstrap without the apiserver');
      assert.equal(second.child.exitCode, null, 'still running');

      // 3. The apiserver comes back: the bootstrap completes.
      await startApiserver(cluster.clusterDir);
      apiserverUp = true;
      await waitLogged(second, BOOTSTRAPPED, 90_000);
      for (const kind of ['mutating', 'validating'] as const) {
        const c = await configuration(kind);
        assert.equal(c.webhooks[0]?.clientConfig.caBundle, b64(ca), `${kind}: caBundle is the CA of the certificate`);
        assert.match(c.webhooks[0]?.clientConfig.url ?? '', new RegExp(`^https://127\\.0\\.0\\.1:${port}/`));
      }
      // Still the same certificate on the wire after the bootstrap.
      assert.equal((await handshake(port, ca)).fingerprint256, earlier.fingerprint256);
    } finally {
      if (!apiserverUp) await startApiserver(cluster.clusterDir);
      if (second) await stopProcess(second);
    }
  });
});

const b64 = (s: string) => Buffer.from(s).toString('base64');

function handshake(port: number, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, timeout: 5000 }, () => {
      const raw = socket.getPeerX509Certificate();
      socket.end();
      if (!raw) reject(new Error('no peer certificate'));
      else resolve(raw);
    });
    socket.on('error', reject);
    socket.on('timeout', () => socket.destroy(new Error('TLS handshake timed out')));
  });
}

interface ReviewJson {
  response?: { uid?: string; allowed?: boolean; patch?: string; status?: unknown };
}

function admit(port: number, ca: string): Promise<ReviewJson> {
  const object = adsManifest({ name: 'down', namespace: 'default', group: 'none' });
  const body = JSON.stringify(admissionReview(object, { uid: 'apiserver-down', name: 'down', namespace: 'default' }));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        ca,
        method: 'POST',
        path: '/mutate-apps-kruise-io-daemonset',
        headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
        timeout: 5000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            resolve(JSON.parse(text) as ReviewJson);
          } catch (err) {
            reject(new Error(`${res.statusCode}: ${text}: ${(err as Error).message}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('admission request timed out')));
    req.end(body);
  });
}
