// The chart on a real control plane, end to end: `helm install` (the CRD template first) creates
// every object; two managers (the chart's 2 replicas) run out of cluster with the chart's own
// Deployment args and the chart's ServiceAccount identity (a bound token from the TokenRequest
// API), so every request they make is authorized by the chart's RBAC: they converge on one
// certificate, fill caBundle in both webhook configurations and in the CRD's conversion webhook,
// answer admission over TLS that verifies against that caBundle for the Service's DNS name, and
// the Lease holder runs the core controller flow (one Ready pod per node, an image rollout) in
// v1beta1, the storage version, which needs no conversion (the Service has no reachable endpoint
// here). `kubectl auth can-i` shows what the ServiceAccount may not do. Then `helm upgrade` and
// `helm uninstall` (CRD kept).
//
// This file runs on a private cluster of its own: the harness's manager reconciles every
// DaemonSet of the shared cluster and would fight the managers under test.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { checkServerIdentity } from 'node:tls';
import { join } from 'node:path';
import {
  ADS_V1BETA1,
  adsManifest,
  adsPods,
  getAds,
  describeOnPrivateCluster,
  imagePatch,
  patchAds,
  readLogLines,
  startProductProcess,
  waitOnePodPerNode,
  waitRolledOut,
  type ManagedProcess,
} from '../lib/ads.ts';
import { apply, createNamespace, createTestNodes, eventually, kubectl, kubectlJson, uniqueName } from '../lib/kube.ts';
import {
  canI,
  certSecretData,
  chartDir,
  e2eValues,
  helmCluster,
  install,
  release,
  serviceAccountKubeconfig,
  uninstall,
  webhookConfiguration,
  type Release,
} from './lib.ts';
import { admissionReview } from '../../src/api/testing/review-fixtures.ts';

interface DeploymentJson {
  spec: { replicas: number; template: { spec: { containers: { args: string[] }[] } } };
}

/** Flags whose values only make sense in a pod; replaced for a process on this machine. */
const LOCAL_FLAGS = ['cert-dir', 'health-port', 'metrics-port', 'webhook-port', 'webhook-drain'];

/** The manager's args exactly as the installed Deployment runs them, but for local ports and dirs. */
async function chartManagerArgs(r: Release, certDir: string): Promise<string[]> {
  const d = await kubectlJson<DeploymentJson>(['get', 'deployment', r.fullname, '-n', r.namespace]);
  const args = d.spec.template.spec.containers[0]!.args;
  return [
    ...args.filter((a) => !LOCAL_FLAGS.some((f) => a.startsWith(`--${f}=`))),
    `--cert-dir=${certDir}`,
    '--health-port=0',
    '--metrics-port=0',
    '--webhook-port=0',
    '--webhook-drain=1s',
  ];
}

interface AdmissionReviewJson {
  response?: { uid?: string; allowed?: boolean; patch?: string };
}

/** POSTs a mutating AdmissionReview to the manager's webhook, verifying TLS for `serverName` against `caPem`. */
async function admissionOverTls(manager: ManagedProcess, serverName: string, caPem: string) {
  // Logged once the HTTPS server listens: in self-signed mode that is after the certificate bootstrap.
  const started = await eventually('the webhook serving line', async () =>
    readLogLines(manager.logFile).find((l) => l.msg === 'webhook serving'),
  );
  const body = JSON.stringify(
    admissionReview(adsManifest({ name: 'probe', namespace: 'default', group: 'none' }), {
      uid: 'chart-e2e',
      name: 'probe',
      namespace: 'default',
    }),
  );
  return new Promise<AdmissionReviewJson>((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: started.webhookPort as number,
        servername: serverName,
        ca: caPem,
        // Default identity check, but for the name the apiserver uses rather than 127.0.0.1.
        checkServerIdentity: (_host, cert) => checkServerIdentity(serverName, cert),
        method: 'POST',
        path: '/mutate-apps-kruise-io-daemonset',
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`webhook answered ${res.statusCode}: ${text}`));
          else resolve(JSON.parse(text) as AdmissionReviewJson);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface CrdJson {
  metadata: { annotations?: Record<string, string> };
  spec: { conversion: { strategy: string; webhook?: { clientConfig?: { caBundle?: string; service?: unknown } } } };
  status?: { storedVersions?: string[] };
}
const crdJson = () => kubectlJson<CrdJson>(['get', 'crd', 'daemonsets.apps.kruise.io']);

const exists = async (args: string[]) =>
  (await kubectl(['get', ...args, '--ignore-not-found', '-o', 'name'])).trim() !== '';

describeOnPrivateCluster(
  'the chart on a private control plane, the manager as its ServiceAccount',
  // The chart installs the CRD itself.
  { timeout: 400_000, crd: false },
  (cluster) => {
    const dir = cluster.dir;
    const group = uniqueName('hl');
    let r: Release;
    let ns: string;
    let nodes: string[];
    /** Two replicas, as the chart's Deployment runs. */
    const managers: ManagedProcess[] = [];
    const ds = 'agent';

    /** Every object the chart renders with default values, as `kubectl get` arguments. */
    const chartObjects = () => [
      ['serviceaccount', r.fullname, '-n', r.namespace],
      ['clusterrole', r.fullname],
      ['clusterrolebinding', r.fullname],
      ['role', r.fullname, '-n', r.namespace],
      ['rolebinding', r.fullname, '-n', r.namespace],
      ['secret', `${r.fullname}-webhook-certs`, '-n', r.namespace],
      ['service', `${r.fullname}-webhook`, '-n', r.namespace],
      ['deployment', r.fullname, '-n', r.namespace],
      ['poddisruptionbudget', r.fullname, '-n', r.namespace],
      ['mutatingwebhookconfiguration', `${r.fullname}-mutating`],
      ['validatingwebhookconfiguration', `${r.fullname}-validating`],
    ];

    before(async () => {
      r = release('ads', await createNamespace('ads-system'));
      ns = await createNamespace('e2e-helm-flow');
      nodes = await createTestNodes(group, 3);
    });

    after(async () => {
      for (const m of managers) if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGKILL');
      await Promise.all(managers.map((m) => m.exit));
    });

    test('helm install creates the CRD (a template, converting through the webhook Service) and every object of the chart', async () => {
      assert.equal(await exists(['crd', 'daemonsets.apps.kruise.io']), false, 'a cluster without the CRD');
      await install(r);
      const crd = await crdJson();
      assert.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
      assert.deepEqual(crd.spec.conversion.webhook?.clientConfig, {
        service: { namespace: r.namespace, name: `${r.fullname}-webhook`, path: '/convert', port: 443 },
      });
      assert.deepEqual(crd.status?.storedVersions, ['v1beta1'], 'stored as v1beta1 from the start');
      for (const args of chartObjects()) assert.equal(await exists(args), true, `${args.join(' ')} exists`);
      for (const kind of ['mutating', 'validating'] as const) {
        const c = await webhookConfiguration(kind, r);
        assert.equal(c.webhooks[0]!.clientConfig.caBundle, undefined, 'no caBundle before the manager runs');
        assert.equal(c.webhooks[0]!.clientConfig.service?.name, `${r.fullname}-webhook`);
      }
    });

    test('two managers with the chart args and ServiceAccount token share one certificate, fill caBundle and run the core flow', async () => {
      const saKubeconfig = await serviceAccountKubeconfig(r, dir);
      for (const id of ['a', 'b']) {
        const args = await chartManagerArgs(r, join(dir, `certs-${id}`));
        assert.ok(args.includes('--cert-mode=self-signed'), args.join(' '));
        managers.push(startProductProcess(id, [...args, '--kubeconfig', saKubeconfig], join(dir, `manager-${id}.log`)));
      }

      // Certificates: the Secret the chart rendered empty is filled; caBundle is its CA in both configurations.
      const caBundle = await eventually('the certificate Secret filled by the manager', async () => {
        const data = await certSecretData(r);
        // Empty strings (the chart renders the Secret empty) count as not yet.
        return (data['tls.crt'] && data['ca.crt']) || undefined;
      });
      await eventually('caBundle of both webhook configurations equal to the Secret CA', async () => {
        for (const kind of ['mutating', 'validating'] as const) {
          const got = (await webhookConfiguration(kind, r)).webhooks[0]!.clientConfig.caBundle;
          if (got !== caBundle)
            throw new Error(`${kind} caBundle ${got?.slice(0, 60)}..., Secret ${caBundle.slice(0, 60)}...`);
        }
        return true;
      });
      await eventually('the CRD conversion webhook trusting the same CA', async () => {
        const got = (await crdJson()).spec.conversion.webhook?.clientConfig?.caBundle;
        if (got !== caBundle)
          throw new Error(`CRD caBundle ${got?.slice(0, 60)}..., Secret ${caBundle.slice(0, 60)}...`);
        return true;
      });
      // Both replicas serve the one certificate in the Secret; exactly one of them wrote it.
      const tlsCrt = Buffer.from((await certSecretData(r))['tls.crt']!, 'base64').toString('utf8');
      const certFile = (id: string) => {
        try {
          return readFileSync(join(dir, `certs-${id}`, 'tls.crt'), 'utf8');
        } catch {
          return undefined;
        }
      };
      await eventually('both cert dirs to hold the Secret certificate', async () =>
        ['a', 'b'].every((id) => certFile(id) === tlsCrt),
      );
      const issued = managers.flatMap((m) =>
        readLogLines(m.logFile).filter((l) => l.msg === 'issued webhook serving certificate'),
      );
      assert.equal(issued.length, 1, 'one replica issued the certificate, the other adopted it');
      // The apiserver would call <service>.<namespace>.svc and trust only caBundle: each replica's
      // webhook answers an AdmissionReview over TLS verified exactly so.
      for (const m of managers) {
        const review = await admissionOverTls(
          m,
          `${r.fullname}-webhook.${r.namespace}.svc`,
          Buffer.from(caBundle, 'base64').toString('utf8'),
        );
        assert.equal(review.response?.uid, 'chart-e2e');
        assert.equal(review.response?.allowed, true, JSON.stringify(review.response));
      }

      const holder = await eventually('one manager to hold the chart Lease', async () => {
        const lease = await kubectlJson<{ spec?: { holderIdentity?: string } }>([
          'get',
          'lease',
          `${r.fullname}-controller`,
          '-n',
          r.namespace,
        ]).catch(() => undefined);
        return lease?.spec?.holderIdentity;
      });
      const leaders = managers.filter((m) =>
        readLogLines(m.logFile).some((l) => l.msg === 'successfully acquired lease' && l.identity === holder),
      );
      assert.equal(leaders.length, 1, `exactly one manager acquired the lease (${holder})`);

      // The storage migration: nothing to rewrite on a CRD created with v1beta1 storage.
      await eventually('the leader to skip the storage migration', async () =>
        readLogLines(leaders[0]!.logFile).some((l) => l.msg === 'storage migration not needed'),
      );

      // The core flow, in v1beta1. The chart's webhooks only see its own namespace here and the CRD's conversion
      // webhook, behind the same Service, has no reachable endpoint on this cluster: the manifest carries the
      // webhook's defaults, and is written and read in the storage version, which needs no conversion.
      const manifest = adsManifest({
        name: ds,
        namespace: ns,
        group,
        image: 'nginx:1.27',
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1 } },
        revisionHistoryLimit: 10,
      });
      (manifest.spec as Record<string, unknown>).burstReplicas = 250;
      await apply({ ...manifest, apiVersion: 'apps.kruise.io/v1beta1' });
      await waitOnePodPerNode(ns, ds, nodes);
      await waitRolledOut(ns, ds, nodes.length, undefined, ADS_V1BETA1);

      await patchAds(ns, ds, imagePatch('nginx:1.28'), ADS_V1BETA1);
      await waitRolledOut(ns, ds, nodes.length, undefined, ADS_V1BETA1);
      await waitOnePodPerNode(ns, ds, nodes);
      const images = (await adsPods(ns, ds)).map((p) => p.spec.containers[0]!.image);
      assert.deepEqual(images, ['nginx:1.28', 'nginx:1.28', 'nginx:1.28']);

      for (const m of managers) {
        const denied = readLogLines(m.logFile).filter((l) => /forbidden/i.test(JSON.stringify(l)));
        assert.deepEqual(denied, [], `no request of manager ${m.name} was refused by RBAC`);
        assert.equal(m.child.exitCode, null, `manager ${m.name} is still running`);
      }
    });

    test('kubectl auth can-i: the ServiceAccount may do what the manager needs and nothing more', async () => {
      // -A for cluster-scoped resources: kubectl warns about a namespace otherwise, and canI fails on warnings.
      const other = 'default';
      const allowed: string[][] = [
        ['list', 'daemonsets.apps.kruise.io', '-A'],
        ['patch', 'daemonsets.apps.kruise.io', '--subresource=status', '-n', ns],
        ['create', 'pods', '-n', ns],
        ['delete', 'pods', '-n', ns],
        ['watch', 'nodes', '-A'],
        ['create', 'controllerrevisions.apps', '-n', ns],
        ['update', `leases.coordination.k8s.io/${r.fullname}-controller`, '-n', r.namespace],
        ['update', `secrets/${r.fullname}-webhook-certs`, '-n', r.namespace],
        ['patch', `validatingwebhookconfigurations/${r.fullname}-validating`, '-A'],
        // The storage migration's no-op rewrite, the conversion caBundle and storedVersions.
        ['update', 'daemonsets.apps.kruise.io', '-n', ns],
        ['patch', 'customresourcedefinitions/daemonsets.apps.kruise.io', '-A'],
        ['patch', 'customresourcedefinitions/daemonsets.apps.kruise.io', '--subresource=status', '-A'],
        // Per-node resources: read, and their status written.
        ['watch', 'daemonsetsettings.advanced-daemonset.io', '-A'],
        ['patch', 'daemonsetsettings.advanced-daemonset.io', '--subresource=status', '-n', ns],
      ];
      const refused: string[][] = [
        ['delete', 'nodes', '-A'],
        ['update', 'nodes', '-A'],
        // Node writes only with nodeReadiness.manageTaints (spec.nodeReadiness), off by default.
        ['patch', 'nodes', '-A'],
        ['get', 'secrets', '-A'],
        ['list', 'secrets', '-n', r.namespace],
        ['get', 'secrets/some-other-secret', '-n', r.namespace],
        ['get', 'secrets', '-n', other],
        ['create', 'pods', '--subresource=exec', '-n', ns],
        ['create', 'pods', '--subresource=eviction', '-n', ns],
        ['delete', 'daemonsets.apps.kruise.io', '-n', ns],
        // A setting's spec is its author's.
        ['update', 'daemonsetsettings.advanced-daemonset.io', '-n', ns],
        ['delete', 'daemonsetsettings.advanced-daemonset.io', '-n', ns],
        ['create', 'daemonsets.apps', '-n', ns],
        ['patch', 'customresourcedefinitions/clonesets.apps.kruise.io', '-A'],
        ['patch', 'customresourcedefinitions/clonesets.apps.kruise.io', '--subresource=status', '-A'],
        ['get', 'configmaps', '-n', r.namespace],
        ['update', 'leases.coordination.k8s.io/kube-scheduler', '-n', 'kube-system'],
        ['create', 'leases.coordination.k8s.io', '-n', other],
        ['update', 'mutatingwebhookconfigurations/someone-elses', '-A'],
        ['create', 'validatingwebhookconfigurations', '-A'],
        ['delete', 'customresourcedefinitions', '-A'],
        ['create', 'clusterrolebindings', '-A'],
        ['escalate', 'clusterroles', '-A'],
        ['impersonate', 'serviceaccounts'],
        ['create', 'serviceaccounts', '--subresource=token', '-n', r.namespace],
      ];
      for (const args of allowed) assert.equal(await canI(r.user, args), true, `may ${args.join(' ')}`);
      for (const args of refused) assert.equal(await canI(r.user, args), false, `may not ${args.join(' ')}`);
    });

    test('spec.nodeReadiness without nodeReadiness.manageTaints: the taint stays and the DaemonSet says why', async () => {
      const key = `example.com/${group}`;
      await kubectl(['taint', 'node', nodes[0]!, `${key}=:PreferNoSchedule`]);
      const name = `${ds}-waits`;
      const manifest = adsManifest({
        name,
        namespace: ns,
        group,
        image: 'nginx:1.27',
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1 } },
        revisionHistoryLimit: 10,
      }) as { spec: Record<string, unknown> };
      // The webhook's defaults, written out (its configuration does not reach this namespace here).
      manifest.spec.burstReplicas = 250;
      manifest.spec.nodeReadiness = { taint: { key, effect: 'PreferNoSchedule' }, mode: 'Bootstrap' };
      await apply({ ...manifest, apiVersion: 'apps.kruise.io/v1beta1' });
      await waitRolledOut(ns, name, nodes.length, undefined, ADS_V1BETA1);
      const condition = await eventually('NodeReadiness False, NodeWritesForbidden', async () => {
        const c = (await getAds(ns, name, ADS_V1BETA1)).status?.conditions?.find((x) => x.type === 'NodeReadiness');
        return c?.reason === 'NodeWritesForbidden' && c;
      });
      assert.match(condition.message ?? '', /nodeReadiness\.manageTaints=true/);
      const taints = await kubectlJson<{ spec: { taints?: { key: string }[] } }>(['get', 'node', nodes[0]!]);
      assert.ok(
        taints.spec.taints?.some((t) => t.key === key),
        'the taint stays',
      );
      for (const m of managers) assert.equal(m.child.exitCode, null, `manager ${m.name} is still running`);
      await kubectl(['delete', ADS_V1BETA1, name, '-n', ns, '--wait=false']);
      await kubectl(['taint', 'node', nodes[0]!, `${key}:PreferNoSchedule-`]);
    });

    test('helm upgrade with changed values reaches the Deployment and webhooks; the certificate survives', async () => {
      const secretBefore = await certSecretData(r);
      await helmCluster([
        'upgrade',
        r.name,
        chartDir,
        '--namespace',
        r.namespace,
        ...e2eValues(r.namespace),
        '--set',
        'replicas=3',
        '--set',
        'logLevel=debug',
        '--set',
        'webhook.timeoutSeconds=25',
      ]);
      const d = await kubectlJson<DeploymentJson>(['get', 'deployment', r.fullname, '-n', r.namespace]);
      assert.equal(d.spec.replicas, 3);
      assert.ok(d.spec.template.spec.containers[0]!.args.includes('--log-level=debug'));
      assert.ok(d.spec.template.spec.containers[0]!.args.includes('--webhook-timeout-seconds=25'));
      const secretAfter = await certSecretData(r);
      for (const kind of ['mutating', 'validating'] as const) {
        const c = await webhookConfiguration(kind, r);
        assert.equal(c.webhooks[0]!.timeoutSeconds, 25);
        assert.equal(c.webhooks[0]!.clientConfig.caBundle, secretAfter['ca.crt'], 'caBundle kept by the upgrade');
      }
      assert.deepEqual(secretAfter, secretBefore, 'the certificate Secret is unchanged');
      assert.ok(secretAfter['ca.crt'], 'and not empty');
      const revision = JSON.parse(await helmCluster(['history', r.name, '-n', r.namespace, '-o', 'json'])) as unknown[];
      assert.equal(revision.length, 2);
    });

    test('helm uninstall removes every object of the chart but keeps the CRD and the DaemonSets', async () => {
      for (const m of managers) m.child.kill('SIGTERM');
      for (const m of managers) {
        assert.deepEqual(await m.exit, { code: 0, signal: null }, `manager ${m.name} shuts down cleanly`);
      }
      await uninstall(r);
      for (const args of chartObjects()) assert.equal(await exists(args), false, `${args.join(' ')} removed`);
      assert.equal(await exists(['crd', 'daemonsets.apps.kruise.io']), true, 'the CRD stays');
      assert.equal(await exists(['daemonsets.apps.kruise.io', ds, '-n', ns]), true, 'and so do the DaemonSets');
    });
  },
);
