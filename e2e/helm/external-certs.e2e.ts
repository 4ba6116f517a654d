// certificates.mode=external on the control plane: a CA and serving certificate made with
// `bin/advanced-daemonset certs`, stored by the user as a Secret, and a chart install that takes
// caBundle from the Secret's ca.crt (Helm lookup) and mounts the Secret, with no Secret rights.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../cluster/binaries.ts';
import { createNamespace, deleteNamespace, kubectl, kubectlJson, uniqueName } from '../lib/kube.ts';
import { canI, install, release, SHARED_CLUSTER_VALUES, uninstall, webhookConfiguration, type Release } from './lib.ts';

interface DeploymentJson {
  spec: { template: { spec: { volumes: { name: string; secret?: { secretName: string } }[] } } };
}

describe('external certificates from `advanced-daemonset certs`', () => {
  let ns: string;
  let r: Release;
  const out = join(mkdtempSync(join(tmpdir(), 'ads-ext-certs-')), 'certs');
  const secret = 'my-webhook-tls';

  before(async () => {
    ns = await createNamespace('e2e-helm-ext');
    r = release(uniqueName('hx'), ns);
  });

  after(async () => {
    if (r) await uninstall(r);
    if (ns) await deleteNamespace(ns);
    rmSync(dirname(out), { recursive: true, force: true });
  });

  test('install takes caBundle from the Secret and mounts it; the ServiceAccount cannot read Secrets', async () => {
    await promisify(execFile)(join(repoRoot, 'bin', 'advanced-daemonset'), [
      'certs',
      '--out',
      out,
      '--host',
      `${r.fullname}-webhook.${ns}.svc`,
    ]);
    const file = (name: string) => join(out, name);
    await kubectl([
      'create',
      'secret',
      'generic',
      secret,
      '-n',
      ns,
      '--type=kubernetes.io/tls',
      `--from-file=tls.crt=${file('tls.crt')}`,
      `--from-file=tls.key=${file('tls.key')}`,
      `--from-file=ca.crt=${file('ca.crt')}`,
    ]);
    await install(r, [
      ...SHARED_CLUSTER_VALUES,
      '--set',
      'certificates.mode=external',
      '--set',
      `certificates.secretName=${secret}`,
    ]);

    const caBundle = readFileSync(file('ca.crt')).toString('base64');
    for (const kind of ['mutating', 'validating'] as const) {
      assert.equal((await webhookConfiguration(kind, r)).webhooks[0]!.clientConfig.caBundle, caBundle, kind);
    }
    const d = await kubectlJson<DeploymentJson>(['get', 'deployment', r.fullname, '-n', ns]);
    assert.equal(d.spec.template.spec.volumes.find((v) => v.name === 'certs')?.secret?.secretName, secret);
    assert.equal(await canI(r.user, ['get', `secrets/${secret}`, '-n', ns]), false, 'no Secret rights');
    assert.equal(await canI(r.user, ['create', 'secrets', '-n', ns]), false, 'no Secret rights');
  });
});
