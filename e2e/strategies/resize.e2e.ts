// e2e of in-place resource resize (InPlaceWorkloadVerticalScaling; docs/rollout-strategies.md, "In-place resource
// resize") on kwok nodes, whose pod-resize stage (e2e/cluster/kwok-stages.yaml) reports a resize as the kubelet does
// with resizePolicy NotRequired. The real kubelet's side (cgroup limits, Infeasible) is in e2e/realnode/.
// (a) a cpu/memory-only change resizes every pod in place at once: same UIDs, no restart, no pod ever unavailable;
// (b) a change of the QoS class recreates the pods within maxUnavailable, with the field path in an event.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, type PodJson } from '../lib/kube.ts';
import { adsPods, eventsFor, patchAds, waitRolledOut } from '../lib/ads.ts';
import {
  armedSampler,
  fixture,
  inPlaceWithResources,
  layout,
  rolledOutDaemonSet,
  waitLayout,
  waitNewRevision,
} from './lib.ts';

interface Resources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

const burstable = (cpu: string, memory = '64Mi'): Resources => ({
  requests: { cpu, memory: '32Mi' },
  limits: { memory },
});

/** A merge patch replaces the containers list: the image is sent again. */
const resourcesPatch = (resources: Resources) => ({
  spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:1.36', resources }] } } },
});

const specResources = (p: PodJson) => (p.spec.containers[0] as { resources?: Resources }).resources;
const statusResources = (p: PodJson) =>
  (p.status?.containerStatuses?.[0] as { resources?: Resources } | undefined)?.resources;
const restarts = (p: PodJson) => p.status?.containerStatuses?.[0]?.restartCount;

describe('in-place resource resize on kwok nodes', { timeout: 300_000 }, () => {
  const f = fixture('resize', 6);
  const name = 'resize';

  test('(a) cpu and memory only: every pod resized in place at once, UIDs kept, no restart, none unavailable', async () => {
    const { hash: v1, pods: initial } = await rolledOutDaemonSet(f, name, inPlaceWithResources(burstable('100m')));
    const sampler = await armedSampler(f, name);
    const started = Date.now();
    await patchAds(f.ns, name, resourcesPatch(burstable('250m', '96Mi')));
    const v2 = (await waitNewRevision(f.ns, name, v1)).status!.daemonSetHash!;
    await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
    const resized = await waitLayout(f.ns, name, layout(f.nodes, v2));
    const seconds = (Date.now() - started) / 1000;
    const figures = sampler.stop();
    for (const [node, p] of resized) {
      const before = initial.get(node)!;
      assert.equal(p.metadata.uid, before.metadata.uid, `pod on ${node} kept (same UID)`);
      assert.equal(restarts(p), restarts(before), `no container restart on ${node}`);
      assert.deepEqual(specResources(p), burstable('250m', '96Mi'), `the pod on ${node} holds the new resources`);
      assert.deepEqual(statusResources(p), burstable('250m', '96Mi'), `and its status reports them (${node})`);
    }
    assert.deepEqual(figures.violations, [], 'the sampler saw no violation');
    assert.equal(figures.maxUnavailableSeen, 0, 'no pod was ever unavailable: a resize keeps the pod Ready');
    const events = await eventually('a SuccessfulResizePodInPlace event per pod', async () => {
      const evs = (await eventsFor(f.ns, name)).filter((e) => e.reason === 'SuccessfulResizePodInPlace');
      return [...initial.values()].every((p) => evs.some((e) => e.message?.includes(`pod ${p.metadata.name} `))) && evs;
    });
    process.stderr.write(
      `✔ resize: ${resized.size} pods resized in place in ${seconds.toFixed(1)}s (${figures.samples} samples, ` +
        `0 unavailable, UIDs and restart counts kept, ${events.length} SuccessfulResizePodInPlace events)\n`,
    );
  });

  test('(b) a QoS class change recreates the pods within maxUnavailable, saying why with the field path', async () => {
    const before = new Map((await adsPods(f.ns, name)).map((p) => [p.spec.nodeName ?? '', p]));
    const v2 = before.values().next().value!.metadata.labels!['controller-revision-hash']!;
    const sampler = await armedSampler(f, name);
    // Requests equal to limits for cpu and memory: Burstable becomes Guaranteed.
    const guaranteed = { requests: { cpu: '250m', memory: '96Mi' }, limits: { cpu: '250m', memory: '96Mi' } };
    await patchAds(f.ns, name, resourcesPatch(guaranteed));
    const v3 = (await waitNewRevision(f.ns, name, v2)).status!.daemonSetHash!;
    await waitRolledOut(f.ns, name, f.nodes.length, 180_000);
    const recreated = await waitLayout(f.ns, name, layout(f.nodes, v3));
    const figures = sampler.stop();
    for (const [node, p] of recreated) {
      assert.notEqual(p.metadata.uid, before.get(node)?.metadata.uid, `pod on ${node} recreated (new UID)`);
      assert.deepEqual(specResources(p), guaranteed, `the new pod on ${node} has the Guaranteed resources`);
    }
    assert.deepEqual(figures.violations, [], 'never more than maxUnavailable (1) unavailable');
    assert.equal(figures.maxUnavailableSeen, 1, 'the pods were recreated one at a time');
    const why = await eventually('a ResizeNotPossible event per pod, with the field path', async () => {
      const evs = (await eventsFor(f.ns, name)).filter((e) => e.reason === 'ResizeNotPossible');
      return (
        [...before.values()].every((p) => evs.some((e) => e.message?.startsWith(`pod ${p.metadata.name} `))) && evs
      );
    });
    for (const e of why)
      assert.match(
        e.message ?? '',
        /is recreated: .*spec\.template\.spec\.containers: the pod's QoS class would change from Burstable to Guaranteed$/,
      );
    process.stderr.write(
      `✔ resize: a QoS change recreated ${recreated.size} pods one at a time (${figures.samples} samples); ` +
        `event: ${why[0]!.message}\n`,
    );
  });
});
