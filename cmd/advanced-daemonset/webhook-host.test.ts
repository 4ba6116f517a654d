// The self-signed webhook starting while the apiserver is unreachable, against the in-process
// fake apiserver (stopped, then started on the same port: a refused connection on demand). The
// webhook-host mode is shown against a real control plane in e2e/webhook/apiserver-down.e2e.ts.
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { pino } from 'pino';
import { issueMaterial, secretData, servingDnsNames, writeCertDir } from '../../certs/bootstrap.ts';
import type { KubeClient } from '../../src/k8s/client.ts';
import type { KubeObject } from '../../src/k8s/types.ts';
import { FakeApiServer, startForSuite } from '../../src/k8s/testing/fake-apiserver.ts';
import { startManagedWebhook, type ManagedWebhook } from './webhook-host.ts';
import { sleep, until } from '../../src/testing/wait.ts';
import { tempDir } from '../../src/testing/temp-dir.ts';

const NS = 'kruise-system';
const SERVICE = 'ads-webhook';
const SECRET = 'ads-webhook-certs';
const SECRETS = 'core/v1/secrets';
const MUTATING = 'admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
const VALIDATING = 'admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
const CRDS = 'apiextensions.k8s.io/v1/customresourcedefinitions';

/** The DaemonSet CRD as the chart renders it in self-signed mode before the manager ran: no caBundle. */
function crd(): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'daemonsets.apps.kruise.io' },
    spec: {
      group: 'apps.kruise.io',
      conversion: {
        strategy: 'Webhook',
        webhook: {
          conversionReviewVersions: ['v1'],
          clientConfig: { service: { name: SERVICE, namespace: NS, path: '/convert', port: 443 } },
        },
      },
    },
  } as unknown as KubeObject;
}

function configuration(name: string): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks: [{ name: 'x.apps.kruise.io', clientConfig: { service: { name: SERVICE, namespace: NS } } }],
  } as unknown as KubeObject;
}

function peerCertificate(port: number, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: `${SERVICE}.${NS}.svc` }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.end();
      if (cert) resolve(cert);
      else reject(new Error('no peer certificate'));
    });
    socket.on('error', reject);
  });
}

describe('self-signed webhook start-up with the apiserver unreachable', () => {
  const server = new FakeApiServer();
  let client: KubeClient;
  let port: number;
  const lines: { msg?: string; level: number }[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  let webhook: ManagedWebhook | undefined;
  let stop: AbortController;

  startForSuite(server, (c) => {
    client = c;
    port = server.port;
  });
  afterEach(async () => {
    await webhook?.stop();
    stop.abort();
    lines.length = 0;
  });

  const start = (certDir: string) => {
    stop = new AbortController();
    return startManagedWebhook(
      {
        certDir,
        port: 0,
        configurationName: 'ads',
        timeoutSeconds: 10,
        drainMs: 0,
        certMode: 'self-signed',
        certSecretName: SECRET,
        serviceName: SERVICE,
        namespace: NS,
        client,
        logger,
        retryDelayMs: () => 30,
      },
      stop.signal,
    );
  };
  const retries = () => lines.filter((l) => l.msg === 'certificate bootstrap failed; retrying').length;

  test('serves the cached certificate at once and completes the bootstrap when the apiserver is back', async () => {
    const material = await issueMaterial({ certPem: '', keyPem: '', caBundlePem: '', caKeyPem: '' }, 'renew-ca', {
      dnsNames: servingDnsNames(SERVICE, NS),
      now: new Date(),
    });
    const dir = tempDir('ads-webhook-host-');
    writeCertDir(dir, material); // what an earlier run left
    server.upsert(SECRETS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: SECRET, namespace: NS },
      type: 'kubernetes.io/tls',
      data: secretData(material),
    } as unknown as KubeObject);
    server.upsert(MUTATING, configuration('ads-mutating'));
    server.upsert(VALIDATING, configuration('ads-validating'));
    server.upsert(CRDS, crd());
    await server.stop();

    const began = Date.now();
    webhook = await start(dir);
    assert.ok(Date.now() - began < 2000, 'start-up does not wait for the apiserver');
    assert.equal(webhook.ready(), true);
    const served = await peerCertificate(webhook.port, material.caBundlePem);
    assert.equal(served.fingerprint256, new X509Certificate(material.certPem).fingerprint256);
    await until('a few retries', () => retries() >= 3);
    assert.equal(webhook.ready(), true, 'still serving while retrying');

    await server.start(port);
    await webhook.bootstrapped;
    assert.ok(lines.some((l) => l.msg === 'webhook bootstrap complete'));
    const b64 = Buffer.from(material.caBundlePem).toString('base64');
    for (const { collection, name } of [
      { collection: MUTATING, name: 'ads-mutating' },
      { collection: VALIDATING, name: 'ads-validating' },
    ] as const) {
      const c = server.get(collection, undefined, name) as unknown as {
        webhooks: { clientConfig: { caBundle?: string } }[];
      };
      assert.equal(c.webhooks[0]?.clientConfig.caBundle, b64, `${name}: caBundle patched`);
    }
    const conversion = (server.get(CRDS, undefined, 'daemonsets.apps.kruise.io') as unknown as ReturnType<typeof crd>)
      .spec as { conversion: { webhook: { clientConfig: Record<string, unknown> } } };
    assert.deepEqual(
      conversion.conversion.webhook.clientConfig,
      { service: { name: SERVICE, namespace: NS, path: '/convert', port: 443 }, caBundle: b64 },
      'the CRD conversion webhook trusts the same CA, its Service reference kept',
    );
    assert.equal(
      (await peerCertificate(webhook.port, material.caBundlePem)).fingerprint256,
      served.fingerprint256,
      'the Secret held the cached certificate: unchanged',
    );
  });

  test('with no certificate at all it keeps retrying, not ready, and serves once the bootstrap got one', async () => {
    server.removeSilently(SECRETS, NS, SECRET);
    await server.stop();
    const dir = tempDir('ads-webhook-host-');
    webhook = await start(dir);
    assert.equal(webhook.ready(), false);
    await until('a few retries', () => retries() >= 3);
    assert.equal(webhook.ready(), false, 'not ready while there is no certificate');

    await server.start(port);
    await webhook.bootstrapped;
    assert.equal(webhook.ready(), true);
    const secret = server.get(SECRETS, NS, SECRET) as unknown as { data: Record<string, string> };
    const certPem = Buffer.from(secret.data['tls.crt']!, 'base64').toString();
    const caPem = Buffer.from(secret.data['ca.crt']!, 'base64').toString();
    assert.equal(readFileSync(join(dir, 'tls.crt'), 'utf8'), certPem);
    const served = await peerCertificate(webhook.port, caPem);
    assert.equal(served.fingerprint256, new X509Certificate(certPem).fingerprint256);
  });

  test('stopping before the bootstrap completes ends the retries', async () => {
    await server.stop();
    const dir = tempDir('ads-webhook-host-');
    webhook = await start(dir);
    await until('a retry', () => retries() >= 1);
    await webhook.stop();
    await assert.rejects(webhook.bootstrapped);
    const after = retries();
    await sleep(150);
    assert.equal(retries(), after, 'no retry after stop');
    webhook = undefined;
    await server.start(port);
  });
});
