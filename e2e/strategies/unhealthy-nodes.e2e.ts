// e2e of rollingUpdate.unhealthyNodes (src/daemonset/unhealthy.ts, docs/rollout-strategies.md): two of six kwok nodes
// stopped (the test label advanced-daemonset.io/test-not-ready, e2e/cluster/kwok-stages.yaml) before a template
// change. With Ignore and maxUnavailable 1 the rollout completes on the four healthy nodes, never more than one of
// them without an available pod (sampled), and the status names the two; with Count (upstream's rule) it stalls;
// removing the label lets them update.
// e2e/cluster/kwok-stages.yaml removes a deleted pod at once; a stopped kubelet never confirms a deletion, so the
// Count case holds the pods on the stopped nodes with a finalizer, as the stall of
// https://github.com/kubernetes/kubernetes/issues/73011 shows it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, kubectl } from '../lib/kube.ts';
import { adsPods, getAds, hashOf, imagePatch, patchAds } from '../lib/ads.ts';
import { Sampler } from '../lib/sampler.ts';
import { sleep } from '../../src/testing/wait.ts';
import { fixture, rolledOutDaemonSet, waitLayout, layout } from './lib.ts';

const NOT_READY_LABEL = 'advanced-daemonset.io/test-not-ready';
const FINALIZER = 'advanced-daemonset.io/test-kubelet-stopped';

async function stopNodes(nodes: string[]): Promise<void> {
  await kubectl(['label', 'node', ...nodes, `${NOT_READY_LABEL}=true`, '--overwrite']);
  await eventually(`nodes ${nodes.join(', ')} NotReady`, async () => {
    const out = await kubectl([
      'get',
      'node',
      ...nodes,
      '-o',
      'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}{"\\n"}{end}',
    ]);
    return out
      .trim()
      .split('\n')
      .every((l) => l === 'False/KubeletNotReady');
  });
}

async function startNodes(nodes: string[]): Promise<void> {
  await kubectl(['label', 'node', ...nodes, `${NOT_READY_LABEL}-`]);
}

const conditionOf = (ds: Awaited<ReturnType<typeof getAds>>, type: string) =>
  (ds.status?.conditions as { type: string; status: string; reason?: string; message?: string }[] | undefined)?.find(
    (c) => c.type === type,
  );

describe('rollingUpdate.unhealthyNodes', { timeout: 420_000 }, () => {
  const f = fixture('unhealthy', 6);

  test('Ignore: two NotReady nodes are set aside; the four others update within maxUnavailable 1', async (t) => {
    const name = 'ignore';
    const { hash: oldHash } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, unhealthyNodes: 'Ignore' } },
      },
    });
    const broken = [f.nodes[1]!, f.nodes[4]!];
    const healthy = f.nodes.filter((n) => !broken.includes(n));
    t.after(() => startNodes(broken));
    await stopNodes(broken);
    const sampler = await Sampler.start({
      namespace: f.ns,
      name,
      nodeSelector: `e2e-group=${f.group},!${NOT_READY_LABEL}`,
      maxUnavailable: 1,
      maxPodsPerNode: 1,
    });
    sampler.arm();
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    // The stopped nodes also carry the not-ready NoSchedule taint (node lifecycle controller): no longer desired,
    // so the rollout may read complete; the set-aside nodes are in NodesSetAside.
    const ds = await eventually(
      'the healthy nodes updated and both stopped nodes set aside',
      async () => {
        const d = await getAds(f.ns, name);
        const h = d.status?.daemonSetHash;
        const pods = await adsPods(f.ns, name);
        const updated = pods.filter(
          (p) =>
            healthy.includes(p.spec.nodeName ?? '') &&
            hashOf(p) === h &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        const aside = conditionOf(d, 'NodesSetAside');
        // The status is written after the pods change (a progress-only write may wait): Progressing says it last.
        const settled = ['NodesSetAside', 'RolloutComplete'].includes(conditionOf(d, 'Progressing')?.reason ?? '');
        return (
          h !== oldHash &&
          updated.length === healthy.length &&
          aside?.status === 'True' &&
          broken.every((n) => aside.message?.includes(n)) &&
          settled &&
          d
        );
      },
      { timeoutMs: 150_000 },
    );
    const figures = sampler.stop();
    const newHash = ds.status!.daemonSetHash!;
    assert.notEqual(newHash, oldHash);
    const pods = await adsPods(f.ns, name);
    const byNode = new Map(pods.map((p) => [p.spec.nodeName ?? '', hashOf(p)]));
    for (const n of healthy) assert.equal(byNode.get(n), newHash, `${n} updated`);
    for (const n of broken) assert.equal(byNode.get(n), oldHash, `${n} set aside on the old revision`);
    const aside = conditionOf(ds, 'NodesSetAside');
    assert.equal(aside?.status, 'True');
    assert.equal(aside?.reason, 'NotReady');
    for (const n of broken) assert.ok(aside?.message?.includes(`${n} (NotReady)`), aside?.message);
    assert.ok(['NodesSetAside', 'RolloutComplete'].includes(conditionOf(ds, 'Progressing')?.reason ?? ''));
    assert.deepEqual(figures.violations, [], 'the sampler saw no violation among the healthy nodes');
    assert.ok(figures.maxUnavailableSeen <= 1);
    const status = await kubectl(['ads', 'status', name, '-n', f.ns]).catch(() => '');
    if (status) assert.match(status, /set aside/);

    // The nodes come back: they take the new revision, and the rollout completes.
    await startNodes(broken);
    await waitLayout(f.ns, name, layout(f.nodes, newHash), 150_000);
    const done = await eventually('NodesSetAside False', async () => {
      const d = await getAds(f.ns, name);
      return conditionOf(d, 'NodesSetAside')?.status === 'False' && d;
    });
    assert.equal(conditionOf(done, 'NodesSetAside')?.reason, 'NoNodesSetAside');
    process.stderr.write(
      `✔ unhealthyNodes Ignore: 4 of 6 updated past 2 NotReady nodes (${figures.samples} samples, max ${figures.maxUnavailableSeen} unavailable), then all 6\n`,
    );
  });

  test('Count (default): the two NotReady nodes hold the budget and the rollout stalls', async (t) => {
    const name = 'count';
    const { hash: oldHash } = await rolledOutDaemonSet(f, name, {
      options: { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } } },
    });
    const broken = [f.nodes[1]!, f.nodes[4]!];
    t.after(() => startNodes(broken));
    await stopNodes(broken);
    // A stopped kubelet never confirms a deletion: the pods stay Terminating (kwok would remove them at once).
    const held = (await adsPods(f.ns, name)).filter((p) => broken.includes(p.spec.nodeName ?? ''));
    const finalizers = (value: string[] | null) =>
      Promise.all(
        held.map((p) =>
          kubectl([
            'patch',
            'pod',
            p.metadata.name!,
            '-n',
            f.ns,
            '--type=merge',
            '-p',
            JSON.stringify({ metadata: { finalizers: value } }),
          ]),
        ),
      );
    t.after(() => finalizers(null).catch(() => []));
    await finalizers([FINALIZER]);
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const ds = await eventually('the new revision observed', async () => {
      const d = await getAds(f.ns, name);
      return (
        d.status?.daemonSetHash !== oldHash && (d.status?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) && d
      );
    });
    const newHash = ds.status!.daemonSetHash!;
    // Stalled: once the rollout reaches a stopped node, its old pod stays Terminating and holds the budget.
    const healthy = f.nodes.filter((n) => !broken.includes(n));
    const updatedHealthy = async () =>
      (await adsPods(f.ns, name)).filter((p) => healthy.includes(p.spec.nodeName ?? '') && hashOf(p) === newHash)
        .length;
    await sleep(20_000);
    const first = await updatedHealthy();
    await sleep(15_000);
    const second = await updatedHealthy();
    assert.equal(second, first, 'no progress over 15 s');
    assert.ok(second < healthy.length, `stalled: ${second} of ${healthy.length} healthy nodes updated`);
    const after = await getAds(f.ns, name);
    assert.equal(conditionOf(after, 'Progressing')?.reason, 'Updating');
    assert.equal(conditionOf(after, 'NodesSetAside'), undefined);
    await finalizers(null);
    await startNodes(broken);
    await waitLayout(f.ns, name, layout(f.nodes, newHash), 150_000);
  });
});
