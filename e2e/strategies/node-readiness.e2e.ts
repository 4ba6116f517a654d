// e2e of nodes that wait for their agents (spec.nodeReadiness; docs/rollout-strategies.md, "Nodes that wait for their
// agents") on kwok nodes: the readiness taint stays until the pod of every DaemonSet naming it is Ready, another
// writer's taint is never touched, a node no such DaemonSet should run on keeps its taint (with a Warning), and mode
// Continuous puts the taint back while the pod stays not Ready. The manager of the e2e run may patch nodes (the chart's
// RBAC for it, a value off by default, is checked in test/chart).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apply, eventually, kubectl, kubectlJson } from '../lib/kube.ts';
import { adsManifest, adsPods, getAds, patchAds, waitRolledOut } from '../lib/ads.ts';
import { fixture } from './lib.ts';

interface NodeJson {
  metadata: { name: string };
  spec?: { taints?: { key: string; effect: string; value?: string }[] };
}
interface EventJson {
  reason: string;
  type: string;
  message?: string;
  involvedObject: { kind: string; name: string };
}

describe('nodes that wait for their agents, on kwok nodes', { timeout: 300_000 }, () => {
  // Nodes 0-2 run the agents; node 3 carries the taint too but no agent selects it.
  const f = fixture('readiness', 4, (i): Record<string, string> => (i < 3 ? { agents: 'yes' } : {}));
  const key = () => `example.com/${f.group}`;
  const taintsOf = async (node: string) =>
    ((await kubectlJson<NodeJson>(['get', 'node', node])).spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);
  const agent = (name: string, image: string, readiness: Record<string, unknown>) => {
    const m = adsManifest({ name, namespace: f.ns, group: f.group, image, nodeSelector: { agents: 'yes' } }) as {
      spec: Record<string, unknown>;
    };
    m.spec.nodeReadiness = readiness;
    return m;
  };
  const nodeEvents = async (reason: string) =>
    (
      await kubectlJson<{ items: EventJson[] }>(['get', 'events', '-A', '--field-selector', `reason=${reason}`])
    ).items.filter(
      (e) => e.involvedObject.kind === 'Node' && f.nodes.includes(e.involvedObject.name) && e.message?.includes(key()),
    );

  test('the taint stays until both DaemonSets naming it are Ready; then it goes, other taints stay', async () => {
    await kubectl(['taint', 'node', ...f.nodes, `${key()}=:NoSchedule`]);
    await kubectl(['taint', 'node', f.nodes[0]!, 'example.com/other-writer=x:PreferNoSchedule']);
    // The crash-looping one first: the agent's pods turn Ready within a second, and with it alone the taint would go.
    await apply(agent('slow', 'busybox-crashloop:1', { taint: { key: key() } }));
    await apply(agent('agent', 'busybox:1.36', { taint: { key: key() } }));
    const stored = await getAds(f.ns, 'agent');
    const tolerations = (stored.spec as { template: { spec: { tolerations?: unknown[] } } }).template.spec.tolerations;
    assert.deepEqual(tolerations, [{ key: key(), operator: 'Exists', effect: 'NoSchedule' }], 'the webhook added the toleration');
    await waitRolledOut(f.ns, 'agent', 3, 60_000);
    // The agent's pods are Ready on every node; the crash-looping one's never are: the taint must stay.
    const waiting = await eventually('slow reports the nodes waiting for it', async () => {
      const c = (await getAds(f.ns, 'slow')).status?.conditions?.find((x) => x.type === 'NodeReadiness');
      return c?.reason === 'NodesWaiting' && c;
    });
    assert.match(waiting.message ?? '', new RegExp(`^3 nodes carry ${key()}:NoSchedule and wait for this DaemonSet's pods: `));
    const agentCondition = (await getAds(f.ns, 'agent')).status?.conditions?.find((x) => x.type === 'NodeReadiness');
    assert.equal(agentCondition?.status, 'True', 'agent waits for nothing: its pods are Ready');
    await new Promise((r) => setTimeout(r, 3000));
    for (const n of f.nodes) assert.ok((await taintsOf(n)).includes(`${key()}:NoSchedule`), `${n} keeps the taint`);

    await patchAds(f.ns, 'slow', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] } } } });
    await eventually('the taint is gone from the agents’ nodes', async () => {
      for (const n of f.nodes.slice(0, 3)) if ((await taintsOf(n)).includes(`${key()}:NoSchedule`)) return false;
      return true;
    }, { timeoutMs: 90_000 });
    assert.deepEqual(await taintsOf(f.nodes[0]!), ['example.com/other-writer:PreferNoSchedule'], 'the other writer’s taint stays');
    assert.ok((await taintsOf(f.nodes[3]!)).includes(`${key()}:NoSchedule`), 'node 3, which runs no agent, keeps it');
    const removed = await eventually('a NodeReadinessTaintRemoved event per node', async () => {
      const evs = await nodeEvents('NodeReadinessTaintRemoved');
      return new Set(evs.map((e) => e.involvedObject.name)).size === 3 && evs;
    });
    assert.match(removed[0]!.message ?? '', /the pods of .*\/agent, .*\/slow|the pods of .*\/slow, .*\/agent/);
    const kept = await eventually('a NodeReadinessTaintKept Warning on node 3', async () =>
      (await nodeEvents('NodeReadinessTaintKept')).find((e) => e.involvedObject.name === f.nodes[3] && e.type === 'Warning'),
    );
    assert.match(kept.message ?? '', /none of the DaemonSets that clear it should run here/);
    process.stderr.write(`✔ node readiness: taint kept while one of two agents was unready, removed from 3 nodes once both were Ready; ${kept.message}\n`);
  }); // prettier-ignore

  test('Continuous: a pod not Ready for unreadySeconds puts the taint back on its node only; Ready again removes it', async () => {
    const cont = `example.com/${f.group}-continuous`;
    await apply(agent('watchful', 'busybox:1.36', { taint: { key: cont }, mode: 'Continuous', unreadySeconds: 2 }));
    await waitRolledOut(f.ns, 'watchful', 3, 60_000);
    for (const n of f.nodes.slice(0, 3)) assert.ok(!(await taintsOf(n)).includes(`${cont}:NoSchedule`));
    await patchAds(f.ns, 'watchful', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox-crashloop:1' }] } } } });
    // maxUnavailable 1: one pod is replaced by a crash-looping one, and the rollout stops there (it never turns Ready).
    const broken = await eventually('a crash-looping pod of the new revision', async () => {
      const pods = await adsPods(f.ns, 'watchful');
      return pods.find((p) => p.spec.containers[0]?.image === 'busybox-crashloop:1' && p.spec.nodeName)?.spec.nodeName;
    });
    await eventually(`the taint is back on ${broken}`, async () => (await taintsOf(broken)).includes(`${cont}:NoSchedule`), { timeoutMs: 60_000 });
    for (const n of f.nodes.slice(0, 3).filter((n) => n !== broken))
      assert.ok(!(await taintsOf(n)).includes(`${cont}:NoSchedule`), `${n}, whose pod stays Ready, stays untainted`);
    const added = await nodeEvents('NodeReadinessTaintAdded');
    assert.ok(added.some((e) => e.involvedObject.name === broken && e.message?.includes(cont) && /has not been Ready for \d+s \(unreadySeconds 2\)/.test(e.message)));
    await patchAds(f.ns, 'watchful', { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] } } } });
    await eventually('removed again once Ready', async () => !(await taintsOf(broken)).includes(`${cont}:NoSchedule`), { timeoutMs: 90_000 });
    await waitRolledOut(f.ns, 'watchful', 3, 60_000);
    assert.equal((await adsPods(f.ns, 'watchful')).length, 3);
  }); // prettier-ignore
});
