// The self-signed certificate mode (certs/bootstrap.ts) against the chart's own Secret and
// webhook configurations, as the chart's ServiceAccount (a real token, so RBAC applies): two
// replicas starting together converge on one certificate, caBundle lands in both
// configurations, a serving certificate past 2/3 of its life is renewed under the same CA, a
// deleted Secret is recreated, caBundle drift is repaired, and `helm upgrade` keeps it all.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  materialFromSecret,
  runCertificateBootstrap,
  secretData,
  servingDnsNames,
  splitPemBundle,
  type BootstrapLogger,
  type CertificateMaterial,
} from '../../certs/bootstrap.ts';
import { createLeaf, loadCA } from '../../src/pki/pki.ts';
import type { KubeClient } from '../../src/k8s/client.ts';
import type { KubeObject } from '../../src/k8s/types.ts';
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlJson, uniqueName } from '../lib/kube.ts';
import {
  chartDir,
  clientFor,
  e2eValues,
  helmCluster,
  install,
  release,
  serviceAccountKubeconfig,
  SHARED_CLUSTER_VALUES,
  uninstall,
  webhookConfiguration,
  type Release,
} from './lib.ts';

const day = 24 * 3600 * 1000;

class RecordingLogger implements BootstrapLogger {
  readonly lines: string[] = [];
  info(obj: object, msg?: string) {
    this.lines.push(`info ${msg ?? ''} ${JSON.stringify(obj)}`);
  }
  warn(obj: object, msg?: string) {
    this.lines.push(`warn ${msg ?? ''} ${JSON.stringify(obj)}`);
  }
  error(obj: object, msg?: string) {
    const o = obj as { err?: Error };
    this.lines.push(`error ${msg ?? ''} ${o.err?.message ?? JSON.stringify(obj)}`);
  }
}

async function secretMaterial(r: Release): Promise<{ material: CertificateMaterial; secret: KubeObject }> {
  const secret = await kubectlJson<KubeObject>(['get', 'secret', `${r.fullname}-webhook-certs`, '-n', r.namespace]);
  return { material: materialFromSecret(secret), secret };
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const ISSUED = 'issued webhook serving certificate';

describe('self-signed certificate bootstrap on the chart (as its ServiceAccount)', () => {
  let ns: string;
  let r: Release;
  let client: KubeClient;
  const stop = new AbortController();
  /** Cert dirs of the two replicas and the ServiceAccount kubeconfig (a token): removed after. */
  const tmp = mkdtempSync(join(tmpdir(), 'ads-e2e-helm-certs-'));
  const replicas = [
    { dir: join(tmp, 'a'), log: new RecordingLogger(), changes: 0 },
    { dir: join(tmp, 'b'), log: new RecordingLogger(), changes: 0 },
  ];
  const certFile = (i: number) => readFileSync(join(replicas[i]!.dir, 'tls.crt'), 'utf8');
  /** How many certificates the replicas wrote to the Secret so far (losers of a race write none). */
  const issued = () => replicas.flatMap((rep) => rep.log.lines.filter((l) => l.includes(ISSUED))).length;

  before(async () => {
    ns = await createNamespace('e2e-helm-certs');
    r = release(uniqueName('hc'), ns);
    await install(r, SHARED_CLUSTER_VALUES);
    for (const rep of replicas) mkdirSync(rep.dir);
    client = clientFor(await serviceAccountKubeconfig(r, tmp));
  });

  after(async () => {
    stop.abort();
    client?.close();
    if (r) await uninstall(r);
    if (ns) await deleteNamespace(ns);
    rmSync(tmp, { recursive: true, force: true });
  });

  test('two replicas starting together converge on one certificate and set caBundle on both configurations', async () => {
    // The chart renders a throwaway certificate and no CA (no empty kubernetes.io/tls Secret, which the apiserver
    // warns about): the replicas make their own CA.
    const rendered = await secretMaterial(r);
    assert.equal(rendered.material.caBundlePem, '', 'the chart renders no CA');
    assert.equal(rendered.material.caKeyPem, '', 'nor its key');
    const placeholder = rendered.material.certPem;
    assert.match(placeholder, /^-----BEGIN CERTIFICATE-----/, 'a throwaway certificate');

    const results = await Promise.all(
      replicas.map((rep) =>
        runCertificateBootstrap({
          client,
          namespace: ns,
          secretName: `${r.fullname}-webhook-certs`,
          serviceName: `${r.fullname}-webhook`,
          certDir: rep.dir,
          webhookConfigurationName: r.fullname,
          signal: stop.signal,
          logger: rep.log,
          checkIntervalMs: 500,
          onCertificateChanged: () => rep.changes++,
        }),
      ),
    );
    assert.equal(results[0]!.caBundle, results[1]!.caBundle, 'one CA');
    assert.equal(certFile(0), certFile(1), 'one serving certificate in both cert dirs');

    const { material, secret } = await secretMaterial(r);
    assert.equal((secret as { type?: string }).type, 'kubernetes.io/tls');
    assert.equal(material.certPem, certFile(0));
    assert.notEqual(material.certPem, placeholder, 'the throwaway certificate replaced');
    assert.equal(material.caBundlePem, results[0]!.caBundle);
    const leaf = new X509Certificate(material.certPem);
    for (const name of [`${r.fullname}-webhook.${ns}.svc`, `${r.fullname}-webhook.${ns}.svc.cluster.local`]) {
      assert.equal(leaf.checkHost(name), name, `certificate valid for ${name}`);
    }
    assert.ok(leaf.verify(splitPemBundle(material.caBundlePem)[0]!.publicKey));
    assert.equal(readFileSync(join(replicas[0]!.dir, 'ca.crt'), 'utf8'), material.caBundlePem);

    // The apiserver may briefly hold both candidates' CAs while they race; it settles on the winner's.
    await eventually('caBundle of both configurations equal to the Secret CA', async () => {
      for (const kind of ['mutating', 'validating'] as const) {
        const c = await webhookConfiguration(kind, r);
        if (c.webhooks[0]!.clientConfig.caBundle !== b64(material.caBundlePem)) return false;
        assert.equal(c.webhooks[0]!.clientConfig.service?.name, `${r.fullname}-webhook`, 'still the Service reference');
      }
      return true;
    });
    assert.equal(issued(), 1, 'exactly one replica wrote a certificate; the other adopted it');
    const errors = replicas.flatMap((rep) => rep.log.lines.filter((l) => l.startsWith('error')));
    assert.deepEqual(errors, [], 'no errors (RBAC allowed everything the bootstrap did)');
  });

  test('a serving certificate past 2/3 of its life is renewed under the same CA; caBundle does not change', async () => {
    const { material, secret } = await secretMaterial(r);
    const ca = await loadCA(splitPemBundle(material.caBundlePem)[0]!.toString(), material.caKeyPem);
    const old = await createLeaf(ca, {
      commonName: 'old',
      dnsNames: servingDnsNames(`${r.fullname}-webhook`, ns),
      usage: 'server',
      validityDays: 365,
      now: new Date(Date.now() - 300 * day),
    });
    const issuedBefore = issued();
    const planted = { ...material, certPem: old.certPem, keyPem: old.keyPem };
    await kubectl(
      ['replace', '-f', '-'],
      JSON.stringify({
        ...secret,
        data: secretData(planted),
        metadata: { ...secret.metadata, managedFields: undefined },
      }),
    );
    const renewed = await eventually('a renewed serving certificate in the Secret and both cert dirs', async () => {
      const now = (await secretMaterial(r)).material;
      if (now.certPem === old.certPem || now.certPem === material.certPem) return false;
      return certFile(0) === now.certPem && certFile(1) === now.certPem && now;
    });
    assert.equal(renewed.caBundlePem, material.caBundlePem, 'same CA');
    assert.equal(issued(), issuedBefore + 1, 'renewed once, by one replica');
    const leaf = new X509Certificate(renewed.certPem);
    assert.ok(new Date(leaf.validFrom).getTime() > Date.now() - 2 * 3600 * 1000, 'a new certificate');
    for (const kind of ['mutating', 'validating'] as const) {
      assert.equal((await webhookConfiguration(kind, r)).webhooks[0]!.clientConfig.caBundle, b64(material.caBundlePem));
    }
    assert.ok(
      replicas.every((rep) => rep.changes >= 1),
      'onCertificateChanged called in both replicas',
    );
  });

  test('caBundle removed from a configuration is put back', async () => {
    const { material } = await secretMaterial(r);
    await kubectl([
      'patch',
      'validatingwebhookconfiguration',
      `${r.fullname}-validating`,
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/webhooks/0/clientConfig/caBundle"}]',
    ]);
    await eventually('caBundle restored', async () => {
      const c = await webhookConfiguration('validating', r);
      return c.webhooks[0]!.clientConfig.caBundle === b64(material.caBundlePem);
    });
  });

  test('helm upgrade keeps the certificate Secret and caBundle (carried over with lookup)', async () => {
    const prior = (await secretMaterial(r)).material;
    await helmCluster([
      'upgrade',
      r.name,
      chartDir,
      '--namespace',
      ns,
      ...e2eValues(ns),
      ...SHARED_CLUSTER_VALUES,
      '--set',
      'webhook.timeoutSeconds=25',
    ]);
    const kept = (await secretMaterial(r)).material;
    assert.deepEqual(kept, prior, 'Secret data unchanged by the upgrade');
    for (const kind of ['mutating', 'validating'] as const) {
      const c = await webhookConfiguration(kind, r);
      assert.equal(c.webhooks[0]!.timeoutSeconds, 25, 'the upgrade applied');
      assert.equal(c.webhooks[0]!.clientConfig.caBundle, b64(prior.caBundlePem), 'caBundle survived the upgrade');
    }
  });

  test('a deleted Secret is recreated once, by one replica, and caBundle follows the new CA', async () => {
    const prior = (await secretMaterial(r)).material;
    const issuedBefore = issued();
    await kubectl(['delete', 'secret', `${r.fullname}-webhook-certs`, '-n', ns]);
    const next = await eventually('a new Secret with a new CA in both cert dirs', async () => {
      const m = (await secretMaterial(r).catch(() => undefined))?.material;
      if (!m || !m.certPem || m.caBundlePem === prior.caBundlePem) return false;
      return certFile(0) === m.certPem && certFile(1) === m.certPem && m;
    });
    await eventually('caBundle of both configurations trimmed to the new Secret CA', async () => {
      for (const kind of ['mutating', 'validating'] as const) {
        const c = await webhookConfiguration(kind, r);
        if (c.webhooks[0]!.clientConfig.caBundle !== b64(next.caBundlePem)) return false;
      }
      return true;
    });
    assert.equal(issued(), issuedBefore + 1, 'recreated once, by one replica');
    const errors = replicas.flatMap((rep) => rep.log.lines.filter((l) => l.startsWith('error')));
    assert.deepEqual(errors, []);
  });

  test('helm uninstall removes the certificate Secret with the release', async () => {
    stop.abort();
    await uninstall(r);
    const left = await kubectl(['get', 'secret', `${r.fullname}-webhook-certs`, '-n', ns, '--ignore-not-found']);
    assert.equal(left.trim(), '');
  });
});
