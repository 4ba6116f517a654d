// The product where users run it: the image built here (npm run image) and pushed to the local registry, the Helm
// chart installed with its defaults but for the image repository, its two manager pods scheduled on a real node and
// run by containerd and runc, certificates bootstrapped from inside the pod, the apiserver reaching the webhook
// through its Service. Then what a cluster does to the manager: its leader's pod deleted in the middle of a rollout,
// a `helm upgrade` to a new tag while DaemonSets are written every 200 ms, `helm uninstall`; and last `cluster down`,
// after which nothing of the node is left on this host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { chartDir, helmOk } from '../../test/chart/helm.ts';
import type { KubeClient } from '../../src/k8s/client.ts';
import { resources } from '../../src/k8s/resources.ts';
import type { KubeObject } from '../../src/k8s/types.ts';
import { createKubeClient } from '../../src/k8s/kubeconfig.ts';
import { retagImage } from '../../hack/image/manager.ts';
import { clusterDown } from '../cluster/cluster.ts';
import { pushTestDaemonImages } from '../../hack/image/daemon.ts';
import { REAL_NODE_LABEL, leftovers } from '../cluster/real-node.ts';
import {
  ADS,
  ADS_V1BETA1,
  PodWatch,
  adsManifest,
  adsPods,
  eventsFor,
  getAds,
  hashOf,
  imagePatch,
  patchAds,
  waitRolledOut,
  type AdsJson,
} from '../lib/ads.ts';
import { KubectlError, apply, eventually, kubectl, kubectlJson, podReady, type PodJson } from '../lib/kube.ts';
import { Sampler } from '../lib/sampler.ts';
import { getSecureMetrics } from '../metrics/scrape.ts';
import { startManager } from '../lib/manager.ts';
import { SnippetSession } from '../lib/snippets.ts';
import { repoRoot } from '../cluster/binaries.ts';
import { documentSnippets, sessionSnippets } from '../../test/readme/snippets.ts';
import { AdsWatch, canaryOf, conditionStatus, containerStatus } from '../canary/lib.ts';
import {
  FAKE_NODE_TOLERATION,
  createTaintedFakeNodes,
  cgroupLimits,
  criContainerPid,
  criContainers,
  criImageId,
  criImages,
  attachRealNodeCluster,
  describeOnRealNodeCluster,
  type RealNodeCluster,
} from './lib.ts';

const RELEASE = 'ads';
const NS = 'kruise-system';
const FULLNAME = `${RELEASE}-advanced-daemonset`;
const LEASE = `${FULLNAME}-controller`;
const SELECTOR = `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/name=advanced-daemonset`;
const TEST_NS = 'real-chart';

interface LeaseJson {
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number };
}

const helm = (c: RealNodeCluster, args: string[]) => helmOk([...args, '--kubeconfig', c.kubeconfig]);

/** The manager's pods; with `terminating`, those being deleted too. */
async function managerPods(terminating = false): Promise<PodJson[]> {
  const list = await kubectlJson<{ items: PodJson[] }>(['get', 'pods', '-n', NS, '-l', SELECTOR]);
  return list.items.filter((p) => terminating || !p.metadata.deletionTimestamp);
}

async function leaseHolder(): Promise<string> {
  const lease = await kubectlJson<LeaseJson>(['get', 'lease', LEASE, '-n', NS]);
  return lease.spec?.holderIdentity ?? '';
}

/** The pod a holder identity names (`<hostname>_<uuid>`, the hostname being the pod's name). */
const holderPod = (identity: string) => identity.split('_')[0] ?? '';

/**
 * `leader_election_master_status` as each manager pod's /metrics reports it, scraped at its pod IP over HTTPS (the
 * chart's metrics.secure) with the token of a ServiceAccount bound to the chart's metrics-reader ClusterRole.
 */
async function leaderMetrics(pods: PodJson[], token: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const p of pods) {
    const { status, body } = await getSecureMetrics(p.status!.podIP!, 8080, token);
    if (status !== 200) throw new Error(`/metrics of ${p.metadata.name}: ${status} ${body}`);
    const m = /^leader_election_master_status\{[^}]*\} (\d+)/m.exec(body);
    out.set(p.metadata.name, m ? Number(m[1]) : -1);
  }
  return out;
}

const readmeBlocks = sessionSnippets(
  documentSnippets((f) => readFileSync(join(repoRoot, f), 'utf8')),
  'real-node',
);

/** The test daemon's images (hack/image/daemon.ts), pushed to the cluster registry. */
let daemon: Record<'v1' | 'v2' | 'v3' | 'crashloop', string>;

interface DaemonSetManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec: {
    selector: unknown;
    template: { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> };
    updateStrategy: { type: string; rollingUpdate: Record<string, unknown> };
    lifecycle?: unknown;
  };
}

/**
 * A v1beta1 DaemonSet of the test daemon on the real node (and, with `group`, on that group's fake nodes too), with a
 * readiness probe the daemon answers, so Ready is the kubelet's verdict on a real process.
 */
function daemonSet(
  name: string,
  image: string,
  rollingUpdate: Record<string, unknown>,
  group?: string,
): DaemonSetManifest {
  const terms = [{ matchExpressions: [{ key: REAL_NODE_LABEL, operator: 'In', values: ['true'] }] }];
  if (group) terms.push({ matchExpressions: [{ key: 'e2e-group', operator: 'In', values: [group] }] });
  return {
    apiVersion: 'apps.kruise.io/v1beta1',
    kind: 'DaemonSet',
    metadata: { name, namespace: TEST_NS },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
          tolerations: [FAKE_NODE_TOLERATION],
          terminationGracePeriodSeconds: 2,
          containers: [
            {
              name: 'daemon',
              image,
              readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
            },
          ],
        },
      },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate },
    },
  };
}

/** Changes only the daemon container's resources (a JSON patch: a merge patch would replace the containers list). */
async function setResources(name: string, value: unknown): Promise<void> {
  await kubectl([
    ...['patch', ADS_V1BETA1, name, '-n', TEST_NS, '--type', 'json', '-p'],
    JSON.stringify([{ op: 'add', path: '/spec/template/spec/containers/0/resources', value }]),
  ]);
}

/** Changes only the daemon container's image (a merge patch would replace the containers list). */
async function setImage(name: string, image: string): Promise<void> {
  await kubectl([
    ...['patch', ADS_V1BETA1, name, '-n', TEST_NS, '--type', 'json', '-p'],
    JSON.stringify([{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: image }]),
  ]);
}

describeOnRealNodeCluster('the Helm chart on a real node', { timeout: 30 * 60_000 }, (c) => {
  // The README's "On the local cluster, in two commands", run as written (e2e/lib/snippets.ts) in one shell session.
  const [upBlock, installBlock] = readmeBlocks;
  let session: SnippetSession;

  test("the README's first command: cluster up --real-nodes 1, cluster env, npm run image", async () => {
    // The user's environment (CA bundles, npm's settings: the image build installs production dependencies), with
    // the cluster's directory of this suite's own.
    session = new SnippetSession(join(c.dir, 'work'), { ...process.env, ADS_CLUSTER_DIR: c.clusterDir });
    const r = await session.run(upBlock!);
    attachRealNodeCluster(c);
    assert.match(
      r.output,
      new RegExp(`${c.registry}/advanced-daemonset:0\\.1\\.0`),
      'npm run image printed the reference',
    );
    daemon = await pushTestDaemonImages(c.registry);
    process.stderr.write(
      `cluster with real node ${c.node.name} up, image built and pushed in ${r.seconds.toFixed(0)}s\n`,
    );
  });

  test('an out-of-cluster manager first: writes work through it; on SIGTERM it takes its registration back', async () => {
    // The README's "Running the manager": the CRD applied by hand (no Helm ownership), the webhook on this machine.
    await session.probe(
      'helm template ads charts/advanced-daemonset --kube-version 1.25 --show-only templates/crd.yaml | kubectl apply --server-side -f -',
    );
    await kubectl(['get', 'crd', 'daemonsets.apps.kruise.io']);
    const manager = await startManager({ kubeconfig: c.kubeconfig, dir: join(c.dir, 'out-of-cluster') });
    try {
      await kubectl(['create', 'namespace', 'before-helm']);
      await apply(adsManifest({ name: 'first', namespace: 'before-helm', group: 'none' }));
      await kubectl(['get', 'daemonsets.v1beta1.apps.kruise.io', 'first', '-n', 'before-helm']);
    } finally {
      assert.equal(await manager.stop(), 0, 'the manager exits 0 on SIGTERM');
    }
    for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
      assert.deepEqual(
        (await kubectlJson<{ items: KubeObject[] }>(['get', kind])).items.map((o) => o.metadata.name),
        [],
        `no ${kind} left`,
      );
    }
    await apply(adsManifest({ name: 'second', namespace: 'before-helm', group: 'none' }));
  });

  test("the README's second command: helm install adopts that CRD; both replicas Ready on the real node", async () => {
    const r = await session.run(installBlock!);
    // A clean install prints no warning (an empty kubernetes.io/tls Secret made the apiserver warn "tls: failed to
    // find any PEM data in certificate input").
    assert.doesNotMatch(r.stderr, /warning/i, r.stderr);
    assert.doesNotMatch(r.output, /WARNING/, 'NOTES: the out-of-cluster manager took its configurations back');
    const crd = await kubectlJson<KubeObject>(['get', 'crd', 'daemonsets.apps.kruise.io']);
    assert.equal(crd.metadata.labels?.['app.kubernetes.io/managed-by'], 'Helm', "the CRD is the release's now");
    assert.equal(crd.metadata.annotations?.['meta.helm.sh/release-name'], RELEASE);
    // What NOTES.txt tells the user to check, run as printed.
    const notes = await helm(c, ['get', 'notes', RELEASE, '-n', NS]);
    const checks = notes.split('\n').filter((l) => /^ {2}kubectl /.test(l));
    assert.ok(checks.length >= 3, `NOTES.txt has its check commands:\n${notes}`);
    for (const cmd of checks) assert.equal(await session.probe(cmd.trim()), 0, `NOTES.txt: ${cmd.trim()}`);
    // The DaemonSets written through the out-of-cluster manager read in the other version through the chart's webhook.
    await kubectl(['get', 'daemonsets.v1alpha1.apps.kruise.io', 'first', 'second', '-n', 'before-helm']);
    const pods = await managerPods();
    assert.equal(pods.length, 2, 'the chart runs 2 replicas');
    for (const p of pods) {
      assert.equal(p.spec.nodeName, c.node.name, `${p.metadata.name} is scheduled on the real node`);
      assert.ok(podReady(p), `${p.metadata.name} is Ready`);
      const running = (await criContainers(c.node, NS, p.metadata.name)).filter((x) => x.state === 'CONTAINER_RUNNING');
      assert.deepEqual(
        running.map((x) => x.metadata.name),
        ['manager'],
        `containerd runs the manager container of ${p.metadata.name}`,
      );
      // The image's launcher sized the heap from the chart's 512Mi limit (60%) and became the manager (same pid),
      // which runs as the image's non-root user.
      const pid = await criContainerPid(c.node, running[0]!.id);
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      assert.ok(cmdline.includes('--max-old-space-size=307'), `heap flag from the limit: ${cmdline.join(' ')}`);
      assert.ok(
        cmdline.some((a) => a.endsWith('/app/dist/main.mjs')),
        `the launcher became main.mjs: ${cmdline.join(' ')}`,
      );
      assert.match(readFileSync(`/proc/${pid}/status`, 'utf8'), /^Uid:\s+65532\s/m, 'runs as uid 65532');
    }
    process.stderr.write(`helm install --atomic: both replicas Ready in ${r.seconds.toFixed(0)}s\n`);
  });

  test('the pods bootstrapped the certificate: Secret filled, caBundle in both webhooks and the CRD conversion', async () => {
    const secret = await kubectlJson<{ data: Record<string, string> }>([
      ...['get', 'secret', `${FULLNAME}-webhook-certs`, '-n', NS],
    ]);
    for (const k of ['tls.crt', 'tls.key', 'ca.crt']) assert.ok(secret.data[k], `the Secret holds ${k}`);
    const ca = secret.data['ca.crt'];
    await eventually('caBundle injected everywhere', async () => {
      const m = await kubectlJson<{ webhooks: { clientConfig: { caBundle?: string } }[] }>([
        ...['get', 'mutatingwebhookconfiguration', `${FULLNAME}-mutating`],
      ]);
      const v = await kubectlJson<{ webhooks: { clientConfig: { caBundle?: string } }[] }>([
        ...['get', 'validatingwebhookconfiguration', `${FULLNAME}-validating`],
      ]);
      const crd = await kubectlJson<{
        spec: { conversion?: { webhook?: { clientConfig?: { caBundle?: string; service?: { name: string } } } } };
      }>(['get', 'crd', 'daemonsets.apps.kruise.io']);
      const cc = crd.spec.conversion?.webhook?.clientConfig;
      return (
        [...m.webhooks, ...v.webhooks].every((w) => w.clientConfig.caBundle === ca) &&
        cc?.caBundle === ca &&
        cc?.service?.name === `${FULLNAME}-webhook`
      );
    });
  });

  test('the apiserver reaches the webhook through its Service: defaults, refusals with field paths, conversion', async () => {
    await kubectl(['create', 'namespace', TEST_NS]);
    const base = {
      metadata: { name: 'defaulted', namespace: TEST_NS },
      spec: {
        selector: { matchLabels: { app: 'defaulted' } },
        template: {
          metadata: { labels: { app: 'defaulted' } },
          spec: { nodeSelector: { 'no-such-node': 'true' }, containers: [{ name: 'c', image: 'busybox:1.36' }] },
        },
      },
    };
    await apply({ apiVersion: 'apps.kruise.io/v1beta1', kind: 'DaemonSet', ...base });
    const ds = await kubectlJson<AdsJson & { spec: Record<string, unknown> }>([
      'get',
      ADS_V1BETA1,
      'defaulted',
      '-n',
      TEST_NS,
    ]);
    assert.deepEqual(
      (ds.spec.updateStrategy as { type: string }).type,
      'RollingUpdate',
      'the mutating webhook filled in updateStrategy',
    );
    assert.equal(ds.spec.revisionHistoryLimit, 10, 'and revisionHistoryLimit');

    const invalid = structuredClone(base);
    invalid.metadata.name = 'invalid';
    const err = await apply({
      apiVersion: 'apps.kruise.io/v1beta1',
      kind: 'DaemonSet',
      ...invalid,
      spec: {
        ...invalid.spec,
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxSurge: 1 },
        },
      },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof KubectlError, 'maxSurge with InPlaceIfPossible is refused');
    // The validating webhook's field error (the CRD's schema cannot express this rule), as the apiserver words it.
    assert.match(
      err.stderr,
      /The DaemonSet "invalid" is invalid: spec\.updateStrategy\.rollingUpdate\.maxSurge: Invalid value: "1": must be 0 for InPlaceIfPossible/,
    );
    await assert.rejects(kubectl(['get', ADS_V1BETA1, 'invalid', '-n', TEST_NS]), /NotFound|not found/);

    await apply({
      apiVersion: 'apps.kruise.io/v1alpha1',
      kind: 'DaemonSet',
      ...base,
      metadata: { name: 'alpha', namespace: TEST_NS },
    });
    const asBeta = await kubectlJson<{ apiVersion: string }>(['get', ADS_V1BETA1, 'alpha', '-n', TEST_NS]);
    const asAlpha = await kubectlJson<{ apiVersion: string }>(['get', ADS, 'alpha', '-n', TEST_NS]);
    assert.equal(asBeta.apiVersion, 'apps.kruise.io/v1beta1');
    assert.equal(asAlpha.apiVersion, 'apps.kruise.io/v1alpha1', 'read back in v1alpha1 through the conversion webhook');
    await kubectl(['delete', ADS_V1BETA1, 'defaulted', 'alpha', '-n', TEST_NS]);
  });

  test('exactly one replica leads: the Lease names it, and only its /metrics says so', async () => {
    const pods = await managerPods();
    const holder = await eventually('a Lease holder', async () => holderPod(await leaseHolder()) || false);
    assert.ok(
      pods.some((p) => p.metadata.name === holder),
      `the holder ${holder} is one of ${pods.map((p) => p.metadata.name).join(', ')}`,
    );
    // /metrics needs a token whose user may get it (metrics.secure): none is refused, a bound ServiceAccount's read.
    const anonymous = await getSecureMetrics(pods[0]!.status!.podIP!, 8080);
    assert.equal(anonymous.status, 401, anonymous.body);
    await kubectl(['create', 'serviceaccount', 'scraper', '-n', NS]);
    await kubectl(['create', 'clusterrolebinding', 'e2e-metrics-scraper', `--clusterrole=${FULLNAME}-metrics-reader`, `--serviceaccount=${NS}:scraper`]); // prettier-ignore
    const token = (await kubectl(['create', 'token', 'scraper', '-n', NS])).trim();
    const metrics = await eventually('both replicas report leader_election_master_status', async () => {
      const m = await leaderMetrics(pods, token);
      return [...m.values()].every((v) => v >= 0) && m;
    });
    assert.deepEqual(
      [...metrics].filter(([, v]) => v === 1).map(([n]) => n),
      [holder],
      `leader_election_master_status by pod: ${JSON.stringify([...metrics])}`,
    );
  });

  test('the PodDisruptionBudget lets one replica be evicted at a time', async () => {
    const [a, b] = await managerPods();
    assert.ok(a && b);
    const evict = (pod: string) =>
      kubectl(
        ['create', '--raw', `/api/v1/namespaces/${NS}/pods/${pod}/eviction`, '-f', '-'],
        JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: pod, namespace: NS } }),
      );
    await eventually('the disruption controller allows one disruption', async () => {
      const pdb = await kubectlJson<{ status?: { disruptionsAllowed?: number } }>(['get', 'pdb', FULLNAME, '-n', NS]);
      return pdb.status?.disruptionsAllowed === 1;
    });
    await evict(a.metadata.name);
    await assert.rejects(evict(b.metadata.name), /disruption budget/, 'the second eviction is refused');
    await eventually(
      'two Ready replicas again',
      async () => {
        const pods = await managerPods();
        return pods.length === 2 && pods.every(podReady);
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
  });

  test('deleting the leader pod mid-rollout: the other replica takes over, and the rollout on fake nodes completes safely', async () => {
    const nodes = await createTaintedFakeNodes('takeover', 6);
    const name = 'takeover';
    const manifest = adsManifest({
      name,
      namespace: TEST_NS,
      group: 'takeover',
      image: 'busybox:1.36',
      tolerations: [FAKE_NODE_TOLERATION],
      minReadySeconds: 2,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
    });
    await apply(manifest);
    await waitRolledOut(TEST_NS, name, nodes.length, 120_000);
    const sampler = await Sampler.start({
      namespace: TEST_NS,
      name,
      nodeSelector: 'e2e-group=takeover',
      maxUnavailable: 1,
      maxPodsPerNode: 1,
      minReadySeconds: 2,
    });
    try {
      sampler.arm();
      await patchAds(TEST_NS, name, imagePatch('busybox:1.37'));
      await eventually('the rollout under way', async () => {
        const ds = await kubectlJson<AdsJson>(['get', ADS_V1BETA1, name, '-n', TEST_NS]);
        return (ds.status?.updatedNumberScheduled ?? 0) >= 1;
      });
      // A replica evicted just before may have released the Lease, not yet taken again: wait for a holder.
      const lease = await eventually('a Lease holder among the manager pods', async () => {
        const l = await kubectlJson<LeaseJson>(['get', 'lease', LEASE, '-n', NS]);
        const pods = (await managerPods()).map((p) => p.metadata.name);
        return pods.includes(holderPod(l.spec?.holderIdentity ?? '')) && l;
      });
      const leader = holderPod(lease.spec?.holderIdentity ?? '');
      const deleted = Date.now();
      await kubectl(['delete', 'pod', leader, '-n', NS, '--wait=false']);
      const next = await eventually(
        'another replica holds the Lease',
        async () => {
          // '' while the deleted leader's lease is released and not yet taken.
          const h = holderPod(await leaseHolder());
          return h !== '' && h !== leader ? h : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      const takeoverS = (Date.now() - deleted) / 1000;
      const leaseS = lease.spec?.leaseDurationSeconds ?? 15;
      process.stderr.write(
        `leader ${leader} deleted: ${next} took over in ${takeoverS.toFixed(1)}s (lease ${leaseS}s)\n`,
      );
      assert.ok(takeoverS <= leaseS + 5, `took over in ${takeoverS}s, within the lease duration (${leaseS}s) + 5s`);
      const done = await waitRolledOut(TEST_NS, name, nodes.length, 180_000);
      assert.equal(done.status?.updatedNumberScheduled, nodes.length);
    } finally {
      const figures = sampler.stop();
      process.stderr.write(`takeover rollout: ${sampler.summary()}\n`);
      assert.deepEqual(figures.violations, [], 'never more than maxUnavailable, never two pods on a node');
    }
  });

  test('helm upgrade to a new tag while a DaemonSet is written every 200 ms: no admission fails', async () => {
    await retagImage(`${c.registry}/advanced-daemonset:0.1.0`, '0.1.1');
    const client: KubeClient = createKubeClient({
      kubeconfig: c.kubeconfig,
      qps: 0,
      userAgent: 'ads-e2e-prober',
      maxRetries: 0,
    });
    const counts = { writes: 0, failed: 0, errors: [] as string[] };
    let stop = false;
    const prober = (async () => {
      const obj = {
        apiVersion: 'apps.kruise.io/v1beta1',
        kind: 'DaemonSet',
        metadata: { name: 'probe', namespace: TEST_NS, annotations: { probe: '0' } },
        spec: {
          selector: { matchLabels: { app: 'probe' } },
          template: {
            metadata: { labels: { app: 'probe' } },
            spec: { nodeSelector: { 'no-such-node': 'true' }, containers: [{ name: 'c', image: 'busybox:1.36' }] },
          },
        },
      };
      while (!stop) {
        const next = Date.now() + 200;
        obj.metadata.annotations.probe = String(counts.writes);
        counts.writes++;
        try {
          await client.patch<KubeObject>(resources.daemonSetsV1beta1, { namespace: TEST_NS, name: 'probe' }, obj, {
            type: 'apply',
            fieldManager: 'ads-e2e-prober',
            force: true,
          });
        } catch (err) {
          counts.failed++;
          if (counts.errors.length < 5) counts.errors.push((err as Error).message);
        }
        await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
      }
    })();
    const before = (await managerPods()).map((p) => p.metadata.name).sort();
    const started = Date.now();
    try {
      await helm(c, [
        ...['upgrade', RELEASE, chartDir, '--namespace', NS, '--reuse-values'],
        // Image pre-download on too, for the daemon pod tests below (the gate is off by default).
        ...['--set', 'image.tag=0.1.1', '--set', 'featureGates=PreDownloadImageForDaemonSetUpdate=true'],
        ...['--wait', '--timeout', '5m'],
      ]);
      // The old pods' drain: until every old pod is gone (terminating ones included), writes may still meet them.
      await eventually(
        'the old replicas gone',
        async () => (await managerPods(true)).every((p) => !before.includes(p.metadata.name)),
        { timeoutMs: 120_000, intervalMs: 500 },
      );
      await new Promise((r) => setTimeout(r, 2000));
    } finally {
      stop = true;
      await prober;
      client.close();
    }
    const pods = await managerPods();
    process.stderr.write(
      `helm upgrade to 0.1.1 in ${((Date.now() - started) / 1000).toFixed(0)}s: prober ${counts.writes} writes, ` +
        `${counts.failed} failed${counts.errors.length ? `: ${counts.errors.join(' | ')}` : ''}\n`,
    );
    assert.equal(pods.length, 2);
    for (const p of pods) {
      assert.equal(p.spec.containers[0]?.image, `${c.registry}/advanced-daemonset:0.1.1`);
      assert.equal(p.spec.nodeName, c.node.name);
    }
    assert.ok(counts.writes >= 50, `the prober wrote throughout the upgrade (${counts.writes} writes)`);
    assert.equal(counts.failed, 0, `no failed admission: ${counts.errors.join(' | ')}`);
  });

  // ----------------------------------------------------------------------------------------------
  // Daemon pods on the real kubelet, reconciled by the chart's manager (upgraded above, pre-download on).

  test('InPlaceIfPossible: the kubelet restarts the container with the new image, same pod; done only once reported', async (t) => {
    const name = 'inplace';
    await apply(daemonSet(name, daemon.v1, { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1 }));
    await waitRolledOut(TEST_NS, name, 1, 120_000);
    const [before] = await adsPods(TEST_NS, name);
    assert.ok(before);
    const st0 = containerStatus(before, 'daemon')!;
    assert.equal(before.spec.nodeName, c.node.name);
    const reported: { at: number; image: string; ready: boolean; inPlaceReady?: string; uid: string }[] = [];
    const watch = await PodWatch.start(TEST_NS, `app=${name}`, (w) => {
      for (const p of w.list()) {
        const st = containerStatus(p, 'daemon');
        reported.push({
          at: Date.now(),
          image: st?.image ?? '',
          ready: podReady(p),
          inPlaceReady: conditionStatus(p, 'InPlaceUpdateReady'),
          uid: p.metadata.uid,
        });
      }
    });
    const dsWatch = new AdsWatch(TEST_NS, name);
    t.after(() => {
      watch.stop();
      dsWatch.stop();
    });
    await setImage(name, daemon.v2);
    const after = await eventually(
      'the pod reports the new image, Ready',
      async () => {
        const [p] = await adsPods(TEST_NS, name);
        const st = p && containerStatus(p, 'daemon');
        return p && st?.image === daemon.v2 && podReady(p) && conditionStatus(p, 'InPlaceUpdateReady') === 'True' && p;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const st1 = containerStatus(after, 'daemon')!;
    assert.equal(after.metadata.uid, before.metadata.uid, 'the same pod (UID kept)');
    assert.equal(st1.restartCount, st0.restartCount + 1, 'the kubelet restarted the container once');
    assert.notEqual(st1.containerID, st0.containerID, 'a new container');
    assert.notEqual(st1.imageID, st0.imageID, 'of another image');
    const running = (await criContainers(c.node, TEST_NS, after.metadata.name)).filter(
      (x) => x.state === 'CONTAINER_RUNNING',
    );
    assert.deepEqual(
      running.map((x) => x.image.image),
      [await criImageId(c.node, daemon.v2)],
      'containerd runs the new image',
    );
    const done = await waitRolledOut(TEST_NS, name, 1, 60_000);
    const firstReported = reported.find((r) => r.image === daemon.v2)!.at;
    const sawUnready = reported.some((r) => r.inPlaceReady === 'False' && !r.ready);
    assert.ok(sawUnready, 'the pod was NotReady with InPlaceUpdateReady False during the update');
    const completeEarly = dsWatch.samples.filter(
      (s) =>
        s.at < firstReported &&
        (s.observedGeneration ?? 0) >= done.metadata.generation! &&
        s.updatedNumberScheduled === 1 &&
        s.numberAvailable === 1,
    );
    assert.deepEqual(
      completeEarly,
      [],
      'no status counted the node updated and available before the kubelet reported the image',
    );
  });

  test('in-place resize: the kubelet changes the cgroup limits of the running container; same pod, no restart', async () => {
    // The chart's manager, with its ClusterRole (patch on pods/resize): resources first, then the revision label.
    const name = 'resize';
    const manifest = daemonSet(name, daemon.v1, { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1 });
    const container = (manifest.spec.template.spec.containers as Record<string, unknown>[])[0]!;
    container.resources = { requests: { cpu: '50m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } };
    await apply(manifest);
    const rolled = await waitRolledOut(TEST_NS, name, 1, 120_000);
    const [before] = await adsPods(TEST_NS, name);
    assert.ok(before);
    const st0 = containerStatus(before, 'daemon')!;
    const pidOf = async (pod: PodJson) => {
      const [running] = (await criContainers(c.node, TEST_NS, pod.metadata.name)).filter(
        (x) => x.state === 'CONTAINER_RUNNING' && x.metadata.name === 'daemon',
      );
      return criContainerPid(c.node, running!.id);
    };
    const limits0 = cgroupLimits(await pidOf(before));
    assert.deepEqual(limits0, { cpuQuotaUs: 20_000, memoryBytes: 64 * 2 ** 20 }, 'the cgroup holds the first limits');
    const resized = { requests: { cpu: '100m', memory: '48Mi' }, limits: { cpu: '300m', memory: '96Mi' } };
    await setResources(name, resized);
    const after = await eventually(
      'the pod takes the new revision once its status reports the new resources',
      async () => {
        const [p] = await adsPods(TEST_NS, name);
        const hash = p?.metadata.labels?.['controller-revision-hash'];
        return p && hash !== rolled.status?.daemonSetHash && podReady(p) && p;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const st1 = containerStatus(after, 'daemon') as typeof st0 & { resources?: unknown };
    assert.equal(after.metadata.uid, before.metadata.uid, 'the same pod (UID kept)');
    assert.equal(st1.restartCount, st0.restartCount, 'no container restart');
    assert.equal(st1.containerID, st0.containerID, 'the same container');
    assert.deepEqual(st1.resources, resized, 'the kubelet reports the new resources');
    const limits1 = cgroupLimits(await pidOf(after));
    assert.deepEqual(limits1, { cpuQuotaUs: 30_000, memoryBytes: 96 * 2 ** 20 }, 'the kernel enforces the new limits');
    await waitRolledOut(TEST_NS, name, 1, 60_000);
    process.stderr.write(
      `✔ real node: resized in place, cgroup cpu quota ${limits0.cpuQuotaUs} -> ${limits1.cpuQuotaUs} us, memory ` +
        `${limits0.memoryBytes / 2 ** 20} -> ${limits1.memoryBytes / 2 ** 20} MiB, restartCount ${st1.restartCount}, ` +
        `container ${(st1.containerID ?? '').slice(0, 25)}... kept\n`,
    );
  });

  test('per-node resources: a node annotation resizes the pod in place on the real node, then back; no new revision', async () => {
    const name = 'resize';
    const [before] = await adsPods(TEST_NS, name);
    assert.ok(before);
    const hash = before.metadata.labels?.['controller-revision-hash'];
    const pidOf = async (pod: PodJson) => {
      const [running] = (await criContainers(c.node, TEST_NS, pod.metadata.name)).filter(
        (x) => x.state === 'CONTAINER_RUNNING' && x.metadata.name === 'daemon',
      );
      return criContainerPid(c.node, running!.id);
    };
    const key = `resources.advanced-daemonset.io/${TEST_NS}.${name}.daemon`;
    const perNode = { requests: { cpu: '100m', memory: '48Mi' }, limits: { cpu: '400m', memory: '128Mi' } };
    const resizedTo = async (want: unknown, source: string) =>
      eventually(
        `the pod reports ${JSON.stringify(want)} (${source})`,
        async () => {
          const [p] = await adsPods(TEST_NS, name);
          const st = p && (containerStatus(p, 'daemon') as { resources?: unknown } | undefined);
          const record = p?.metadata.annotations?.['advanced-daemonset.io/resources-override'];
          const recorded = record ? (JSON.parse(record) as { containers: { daemon?: { source: string } } }).containers.daemon?.source : 'template';
          return p && podReady(p) && isDeepStrictEqual(st?.resources, want) && recorded === source && p;
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
    await kubectl(['annotate', 'node', c.node.name, `${key}=${JSON.stringify(perNode)}`]);
    const annotated = await resizedTo(perNode, 'Node');
    const limits1 = cgroupLimits(await pidOf(annotated));
    assert.deepEqual(limits1, { cpuQuotaUs: 40_000, memoryBytes: 128 * 2 ** 20 }, 'the kernel enforces the node’s limits');
    await kubectl(['annotate', 'node', c.node.name, `${key}-`]);
    const back = await resizedTo({ requests: { cpu: '100m', memory: '48Mi' }, limits: { cpu: '300m', memory: '96Mi' } }, 'template');
    const limits2 = cgroupLimits(await pidOf(back));
    assert.deepEqual(limits2, { cpuQuotaUs: 30_000, memoryBytes: 96 * 2 ** 20 }, 'back to the template’s limits');
    for (const p of [annotated, back]) {
      assert.equal(p.metadata.uid, before.metadata.uid, 'the same pod (UID kept)');
      assert.equal(p.metadata.labels?.['controller-revision-hash'], hash, 'the same revision');
      assert.equal(containerStatus(p, 'daemon')?.restartCount, containerStatus(before, 'daemon')?.restartCount, 'no restart');
    }
    process.stderr.write(
      `✔ real node: a node annotation resized the pod in place (cgroup cpu quota 30000 -> ${limits1.cpuQuotaUs} -> ` +
        `${limits2.cpuQuotaUs} us, memory 96 -> ${limits1.memoryBytes / 2 ** 20} -> ${limits2.memoryBytes / 2 ** 20} MiB), same revision\n`,
    );
  }); // prettier-ignore

  test('a resize the real node cannot fit: the pod is recreated, the refusal quoted in an event', async () => {
    const name = 'resize';
    const [before] = await adsPods(TEST_NS, name);
    assert.ok(before);
    // More cpu than the node has: the apiserver refuses the pods/resize (node allocatable; an older one would accept
    // it and the kubelet answer PodResizePending Infeasible): either way the pod is recreated, saying why.
    await setResources(name, { requests: { cpu: '64', memory: '48Mi' }, limits: { cpu: '64', memory: '96Mi' } });
    const event = await eventually(
      'a ResizeInfeasible event',
      async () => (await eventsFor(TEST_NS, name)).find((e) => e.reason === 'ResizeInfeasible'),
      { timeoutMs: 90_000 },
    );
    assert.match(
      event.message ?? '',
      new RegExp(`^pod ${before.metadata.name} on node ${c.node.name} is recreated: its resize cannot be made: .*cpu`),
    );
    const replaced = await eventually('the pod recreated: a new pod waits for a node with 64 cpus', async () => {
      const pods = await adsPods(TEST_NS, name);
      return (
        pods.length === 1 &&
        pods[0]!.metadata.uid !== before.metadata.uid &&
        pods[0]!.status?.phase === 'Pending' &&
        pods[0]!
      );
    });
    // Back to what fits: the pending pod is replaced and the rollout completes.
    await setResources(name, { requests: { cpu: '100m', memory: '48Mi' }, limits: { cpu: '300m', memory: '96Mi' } });
    await waitRolledOut(TEST_NS, name, 1, 120_000);
    await kubectl(['delete', ADS_V1BETA1, name, '-n', TEST_NS, '--wait=false']);
    process.stderr.write(
      `✔ real node: Infeasible resize recreated ${before.metadata.name} as ${replaced.metadata.name} (Pending); event: ${event.message}\n`,
    );
  });

  test('preDelete with markPodNotReady: the kubelet turns the pod NotReady through KruisePodReady before it is deleted', async () => {
    const name = 'predelete';
    const hook = 'example.io/block-deleting';
    const m = daemonSet(name, daemon.v1, { maxUnavailable: 1 });
    m.spec.template.metadata.labels[hook] = 'true';
    m.spec.lifecycle = { preDelete: { labelsHandler: { [hook]: 'true' }, markPodNotReady: true } };
    await apply(m);
    await waitRolledOut(TEST_NS, name, 1, 120_000);
    const [pod] = await adsPods(TEST_NS, name);
    assert.ok(pod && podReady(pod));
    // An env change cannot be done in place: the pod must be deleted, and the hook holds it.
    await kubectl([
      ...['patch', ADS_V1BETA1, name, '-n', TEST_NS, '--type', 'json', '-p'],
      JSON.stringify([{ op: 'add', path: '/spec/template/spec/containers/0/env', value: [{ name: 'X', value: '1' }] }]),
    ]);
    const held = await eventually(
      'the pod PreparingDelete and NotReady (the kubelet read the KruisePodReady gate)',
      async () => {
        const [p] = await adsPods(TEST_NS, name);
        return (
          p &&
          p.metadata.uid === pod.metadata.uid &&
          p.metadata.labels?.['lifecycle.apps.kruise.io/state'] === 'PreparingDelete' &&
          conditionStatus(p, 'KruisePodReady') === 'False' &&
          conditionStatus(p, 'Ready') === 'False' &&
          !p.metadata.deletionTimestamp &&
          p
        );
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const running = (await criContainers(c.node, TEST_NS, held.metadata.name)).filter(
      (x) => x.state === 'CONTAINER_RUNNING',
    );
    assert.equal(running.length, 1, 'its container still runs: NotReady, not stopped');
    await kubectl(['label', 'pod', held.metadata.name, '-n', TEST_NS, `${hook}=false`, '--overwrite']);
    await eventually(
      'the held pod deleted and replaced by a Ready pod of the new revision',
      async () => {
        const ps = await adsPods(TEST_NS, name);
        return ps.length === 1 && ps[0]!.metadata.uid !== pod.metadata.uid && podReady(ps[0]!);
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
  });

  test('image pre-download: the new image is in containerd on the node before the update reaches it; no pull pod left', async () => {
    const name = 'predl';
    const m = daemonSet(name, daemon.v1, { maxUnavailable: 1, partition: 1 });
    await apply(m);
    await waitRolledOut(TEST_NS, name, 1, 120_000);
    const [pod] = await adsPods(TEST_NS, name);
    assert.ok(!(await criImages(c.node)).includes(daemon.v3), `${daemon.v3} is not on the node yet`);
    await setImage(name, daemon.v3);
    // partition 1 of 1 node: the node keeps its pod, and a pull pod pulls the new image there ahead.
    await eventually(
      'the new image pulled into containerd on the node',
      async () => (await criImages(c.node)).includes(daemon.v3),
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    const [kept] = await adsPods(TEST_NS, name);
    assert.equal(kept?.metadata.uid, pod?.metadata.uid, 'the partition still holds the node: same pod');
    assert.equal(containerStatus(kept!, 'daemon')?.image, daemon.v1, 'still running the old image');
    const uid = (await kubectlJson<KubeObject>(['get', ADS_V1BETA1, name, '-n', TEST_NS])).metadata.uid;
    await eventually(
      'every pull pod gone',
      async () =>
        (
          await kubectlJson<{ items: PodJson[] }>([
            'get',
            'pods',
            '-n',
            TEST_NS,
            '-l',
            `apps.kruise.io/image-predownload-daemonset-uid=${uid}`,
          ])
        ).items.length === 0,
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    await kubectl([
      ...['patch', ADS_V1BETA1, name, '-n', TEST_NS, '--type', 'merge', '-p'],
      JSON.stringify({ spec: { updateStrategy: { rollingUpdate: { partition: 0 } } } }),
    ]);
    const done = await waitRolledOut(TEST_NS, name, 1, 120_000);
    assert.equal(done.status?.updatedNumberScheduled, 1);
  });

  test('a daemon that really crash-loops: the canary pauses, fails and rolls back on the real node; fake nodes kept', async (t) => {
    const name = 'canary';
    const group = 'canary';
    const fakes = await createTaintedFakeNodes(group, 2);
    const m = daemonSet(
      name,
      daemon.v1,
      { maxUnavailable: 1, selector: { matchLabels: { [REAL_NODE_LABEL]: 'true' } } },
      group,
    );
    m.spec.updateStrategy.rollingUpdate.canary = {
      nodes: 1,
      duration: '5s',
      noRestartsDuration: '2s',
      autoPause: { enabled: true, maxRestarts: 1 },
      autoFail: { enabled: true, maxRestarts: 3 },
    };
    await apply(m);
    const ds1 = await waitRolledOut(TEST_NS, name, 1 + fakes.length, 120_000);
    const stable = ds1.status!.daemonSetHash!;
    const fakePods = new Map(
      (await adsPods(TEST_NS, name))
        .filter((p) => fakes.includes(p.spec.nodeName!))
        .map((p) => [p.spec.nodeName!, p.metadata.uid]),
    );
    const dsWatch = new AdsWatch(TEST_NS, name);
    t.after(() => dsWatch.stop());
    await dsWatch.ready;
    await setImage(name, daemon.crashloop);
    const bad = await eventually('a new revision', async () => {
      const hash = (await getAds(TEST_NS, name)).status?.daemonSetHash;
      return hash !== stable && hash;
    });
    const failed = await eventually(
      'the canary Failed',
      async () => {
        const canary = canaryOf(await getAds(TEST_NS, name));
        return canary?.revision === bad && canary.phase === 'Failed' && canary;
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    assert.deepEqual(failed.nodes, [c.node.name], 'the canary ran on the real node');
    assert.deepEqual(
      await dsWatch.phasesThrough(bad, 'Failed'),
      ['Observing', 'Paused', 'Failed'],
      'observed, paused, then failed',
    );
    const back = await eventually(
      'the real node back on the stable revision, Ready',
      async () => {
        const p = (await adsPods(TEST_NS, name)).find((x) => x.spec.nodeName === c.node.name);
        return p && hashOf(p) === stable && podReady(p) && p;
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    assert.equal(containerStatus(back, 'daemon')?.image, daemon.v1);
    const crashes = (
      await kubectlJson<{ items: { reason: string; involvedObject: { name: string } }[] }>([
        ...['get', 'events', '-n', TEST_NS, '--field-selector', 'reason=BackOff'],
      ])
    ).items.length;
    assert.ok(crashes >= 1, 'the kubelet reported back-off restarting the crashing container');
    for (const [node, uid] of fakePods) {
      const p = (await adsPods(TEST_NS, name)).find((x) => x.spec.nodeName === node);
      assert.equal(p?.metadata.uid, uid, `the fake node ${node} kept its pod`);
    }
  });

  test('helm uninstall leaves no webhook configuration, Lease, Secret, Service or RBAC object; the CRD stays', async () => {
    await kubectl(['delete', 'namespace', TEST_NS, '--wait=true', '--timeout=120s']);
    await helm(c, ['uninstall', RELEASE, '--namespace', NS, '--wait', '--timeout', '3m']);
    const names = async (args: string[]) =>
      (await kubectlJson<{ items: KubeObject[] }>(['get', ...args])).items
        .map((o) => o.metadata.name)
        .filter((n) => n?.startsWith(RELEASE));
    await eventually('the manager pods gone', async () => (await managerPods()).length === 0, {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    assert.deepEqual(await names(['mutatingwebhookconfigurations']), []);
    assert.deepEqual(await names(['validatingwebhookconfigurations']), []);
    assert.deepEqual(await names(['clusterroles']), []);
    assert.deepEqual(await names(['clusterrolebindings']), []);
    for (const kind of [
      'leases',
      'secrets',
      'services',
      'roles',
      'rolebindings',
      'serviceaccounts',
      'deployments',
      'poddisruptionbudgets',
    ]) {
      assert.deepEqual(await names([kind, '-n', NS]), [], `no ${kind} of the release left in ${NS}`);
    }
    await kubectl(['get', 'crd', 'daemonsets.apps.kruise.io']);
  });

  test('helm install under another release name takes over the CRD the first one kept; writes and reads work', async () => {
    const other = 'ads-again';
    const otherNs = 'ads-again-system';
    const r = await session.run({
      ...installBlock!,
      text: installBlock!.text.replaceAll('helm install ads ', `helm install ${other} `).replaceAll(NS, otherNs),
    });
    assert.doesNotMatch(r.stderr, /warning/i, r.stderr);
    const crd = await kubectlJson<KubeObject & { spec: { conversion: { webhook: { clientConfig: unknown } } } }>([
      ...['get', 'crd', 'daemonsets.apps.kruise.io'],
    ]);
    assert.equal(crd.metadata.annotations?.['meta.helm.sh/release-name'], other);
    const { service } = crd.spec.conversion.webhook.clientConfig as { service?: { name: string; namespace: string } };
    assert.deepEqual(
      [service?.name, service?.namespace],
      [`${other}-advanced-daemonset-webhook`, otherNs],
      "the conversion webhook is the new release's Service",
    );
    await apply(adsManifest({ name: 'third', namespace: 'before-helm', group: 'none' }));
    await kubectl(['get', 'daemonsets.v1alpha1.apps.kruise.io', 'first', 'second', 'third', '-n', 'before-helm']);
    await kubectl(['get', 'daemonsets.v1beta1.apps.kruise.io', 'first', 'second', 'third', '-n', 'before-helm']);
    await helm(c, ['uninstall', other, '--namespace', otherNs, '--wait', '--timeout', '3m']);
  });

  test('cluster down removes everything the real node made', async () => {
    const node = c.node;
    await clusterDown({ dir: c.clusterDir, progress: () => {} });
    assert.deepEqual(await leftovers(node), []);
    assert.equal(existsSync(c.clusterDir), false);
  });
});
