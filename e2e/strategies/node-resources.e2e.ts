// e2e of per-node resources (docs/rollout-strategies.md, "Per-node resources") on kwok nodes, whose pod-resize stage
// (e2e/cluster/kwok-stages.yaml) reports a resize as the kubelet does. The real kubelet's side is in e2e/realnode/.
// (c) pods get their node's resources at creation: a DaemonSetSetting by node label, our node annotation and EDS's
//     key; each pod records its source, and one revision holds every shape;
// (d) changing a setting resizes in place only the pods of the nodes it selects: same UIDs, no new revision, no
//     other pod written, none unavailable, also while a partition holds every node;
// (e) a second setting for the same nodes and container: the older wins, both say so in status.conditions, with a
//     Warning event on each; `kubectl get dss` prints the reference and the nodes matched.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apply, eventually, kubectl, kubectlJson, type PodJson } from '../lib/kube.ts';
import { adsPods, getAds, patchAds, waitRolledOut } from '../lib/ads.ts';
import { armedSampler, fixture, inPlaceWithResources, rolledOutDaemonSet } from './lib.ts';

interface Resources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}
const burstable = (cpu: string): Resources => ({ requests: { cpu, memory: '32Mi' }, limits: { memory: '64Mi' } });
const cpuOf = (p: PodJson) => (p.spec.containers[0] as { resources?: Resources }).resources?.requests?.cpu;
const statusCpuOf = (p: PodJson) =>
  (p.status?.containerStatuses?.[0] as { resources?: Resources } | undefined)?.resources?.requests?.cpu;
const sourceOf = (p: PodJson) => {
  const raw = p.metadata.annotations?.['advanced-daemonset.io/resources-override'];
  if (!raw) return 'template';
  const rec = JSON.parse(raw) as { containers: Record<string, { source: string }> };
  return rec.containers.c?.source;
};

interface SettingJson {
  metadata: { name: string };
  status?: { nodes?: number; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

const setting = (ns: string, name: string, cpu: string, group: string) => ({
  apiVersion: 'advanced-daemonset.io/v1alpha1',
  kind: 'DaemonSetSetting',
  metadata: { name, namespace: ns },
  spec: {
    reference: { name: 'agents' },
    nodeSelector: { matchLabels: { pool: 'big', 'e2e-group': group } },
    containers: [{ name: 'c', resources: burstable(cpu) }],
  },
});

describe('per-node resources on kwok nodes', { timeout: 300_000 }, () => {
  // node 0 and 1 in pool "big"; node 2 annotated with our key, node 3 with EDS's; 4 and 5 keep the template.
  const f = fixture('noderes', 6, (i): Record<string, string> => (i < 2 ? { pool: 'big' } : {}));
  const name = 'agents';
  const cpuByNode = async () =>
    Object.fromEntries(
      (await adsPods(f.ns, name)).map((p) => [f.nodes.indexOf(p.spec.nodeName ?? ''), cpuOf(p)] as const),
    );

  test('(c) pods get their node’s resources at creation, from a setting, our annotation or EDS’s; one revision', async () => {
    await apply(setting(f.ns, 'big', '300m', f.group));
    await kubectl(['annotate', 'node', f.nodes[2]!, `resources.advanced-daemonset.io/${f.ns}.${name}.c=${JSON.stringify(burstable('400m'))}`]);
    await kubectl(['annotate', 'node', f.nodes[3]!, `resources.extendeddaemonset.datadoghq.com/${f.ns}.${name}.c=${JSON.stringify(burstable('500m'))}`]);
    const { pods } = await rolledOutDaemonSet(f, name, inPlaceWithResources(burstable('100m')));
    const byIndex = (i: number) => pods.get(f.nodes[i]!)!;
    assert.deepEqual(
      f.nodes.map((_, i) => [cpuOf(byIndex(i)), sourceOf(byIndex(i))]),
      [['300m', 'DaemonSetSetting/big'], ['300m', 'DaemonSetSetting/big'], ['400m', 'Node'], ['500m', 'Node'], ['100m', 'template'], ['100m', 'template']],
    );
    const revisions = await kubectlJson<{ items: unknown[] }>(['get', 'controllerrevisions', '-n', f.ns, '-o', 'json']);
    assert.equal(revisions.items.length, 1, 'one revision for every shape');
    const dss = await eventually('the setting reports its nodes', async () => {
      const s = await kubectlJson<SettingJson>(['get', 'dss', 'big', '-n', f.ns, '-o', 'json']);
      return s.status?.nodes === 2 && s;
    });
    assert.equal(dss.status?.conditions?.find((c) => c.type === 'Valid')?.status, 'True');
  }); // prettier-ignore

  test('(d) a setting changed: only its nodes’ pods resized in place; same UIDs, no revision, none unavailable', async () => {
    const before = new Map((await adsPods(f.ns, name)).map((p) => [p.spec.nodeName ?? '', p]));
    const hash = (await getAds(f.ns, name)).status!.daemonSetHash!;
    // A partition that holds every node: per-node resources are not a template change, and do not wait for it.
    await patchAds(f.ns, name, { spec: { updateStrategy: { rollingUpdate: { partition: 6 } } } });
    const sampler = await armedSampler(f, name);
    await apply(setting(f.ns, 'big', '350m', f.group));
    const resized = await eventually('the pods of pool big report 350m', async () => {
      const pods = await adsPods(f.ns, name);
      const big = pods.filter((p) => [f.nodes[0], f.nodes[1]].includes(p.spec.nodeName));
      return big.length === 2 && big.every((p) => statusCpuOf(p) === '350m' && sourceOf(p) === 'DaemonSetSetting/big') && pods;
    }, { timeoutMs: 60_000 });
    const figures = sampler.stop();
    for (const p of resized) {
      const node = p.spec.nodeName ?? '';
      const old = before.get(node)!;
      assert.equal(p.metadata.uid, old.metadata.uid, `pod on ${node} kept`);
      assert.equal(p.metadata.labels?.['controller-revision-hash'], hash, `pod on ${node} on the same revision`);
      if (![f.nodes[0], f.nodes[1]].includes(node))
        assert.equal(p.metadata.resourceVersion, old.metadata.resourceVersion, `pod on ${node} not written`);
    }
    assert.deepEqual(await cpuByNode(), { 0: '350m', 1: '350m', 2: '400m', 3: '500m', 4: '100m', 5: '100m' });
    assert.equal((await getAds(f.ns, name)).status!.daemonSetHash, hash, 'no new revision');
    assert.deepEqual(figures.violations, [], 'the sampler saw no violation');
    assert.equal(figures.maxUnavailableSeen, 0, 'no pod was ever unavailable');
    await waitRolledOut(f.ns, name, f.nodes.length, 60_000);
    process.stderr.write(`✔ node resources: a setting change resized 2 of 6 pods in place (${figures.samples} samples, 0 unavailable)\n`);
  }); // prettier-ignore

  test('(e) two settings for the same nodes: the older wins, both say so, with a Warning each; kubectl get dss', async () => {
    await apply(setting(f.ns, 'big-too', '900m', f.group));
    const conditions = await eventually('both settings report the conflict', async () => {
      const list = await kubectlJson<{ items: SettingJson[] }>(['get', 'dss', '-n', f.ns, '-o', 'json']);
      const reason = (n: string) =>
        list.items.find((s) => s.metadata.name === n)?.status?.conditions?.find((c) => c.type === 'Conflicting');
      const [older, newer] = [reason('big'), reason('big-too')];
      return older?.reason === 'Preferred' && newer?.reason === 'Overridden' && { older, newer };
    });
    assert.match(conditions.newer.message ?? '', /^DaemonSetSetting big on 2 nodes \(.+\) set the same containers and win \(the oldest setting wins, then the first by name\)$/);
    const warnings = await eventually('a SettingConflict Warning on each setting', async () => {
      const evs = await kubectlJson<{ items: { reason: string; type: string; involvedObject: { name: string; kind: string } }[] }>(['get', 'events', '-n', f.ns, '-o', 'json']);
      const on = evs.items.filter((e) => e.reason === 'SettingConflict' && e.type === 'Warning' && e.involvedObject.kind === 'DaemonSetSetting');
      const names = new Set(on.map((e) => e.involvedObject.name));
      return names.has('big') && names.has('big-too') && on;
    });
    assert.ok(warnings.length >= 2);
    assert.deepEqual(await cpuByNode(), { 0: '350m', 1: '350m', 2: '400m', 3: '500m', 4: '100m', 5: '100m' }, 'the older setting still applies');
    const columns = (await kubectl(['get', 'dss', '-n', f.ns])).split('\n')[0]!.split(/\s{2,}/);
    assert.deepEqual(columns.slice(0, 3), ['NAME', 'REFERENCE', 'NODES']);
  }); // prettier-ignore
});
