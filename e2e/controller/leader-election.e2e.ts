// e2e: two controllers with Lease leader election. Only the Lease holder reconciles;
// killing it (SIGKILL: no release, as a crashed or partitioned replica) lets the other take over
// once the lease expires, and the survivor carries on with the work.
//
// This file runs on a private cluster of its own: the harness's manager reconciles every
// DaemonSet of the shared cluster, so there "which replica did the work" could not be told apart.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { apply, eventually, fixture, kubectlJson } from '../lib/kube.ts';
import {
  controllerArgs,
  adsManifest,
  adsPods,
  getAds,
  imagePatch,
  patchAds,
  describeOnPrivateCluster,
  readLogLines,
  startProductProcess,
  waitOnePodPerNode,
  waitRolledOut,
  type ManagedProcess,
} from '../lib/ads.ts';

const LEASE = 'le-e2e';

interface LeaseJson {
  spec?: { holderIdentity?: string; leaseTransitions?: number };
}

/** The identity a controller logged when it acquired the lease, if it did. */
function acquiredAs(p: ManagedProcess): string | undefined {
  const line = readLogLines(p.logFile).find((l) => l.msg === 'successfully acquired lease');
  return line?.identity as string | undefined;
}

/** The identity a controller runs under (logged with every lease message). */
function identityOf(p: ManagedProcess): string | undefined {
  return readLogLines(p.logFile).find((l) => l.lease === `default/${LEASE}`)?.identity as string | undefined;
}

/** Syncs of `key` a controller planned (its debug log). */
function syncsOf(p: ManagedProcess, key: string): number {
  return readLogLines(p.logFile).filter((l) => l.msg === 'planned sync' && l.daemonset === key).length;
}

const holder = async () =>
  (await kubectlJson<LeaseJson>(['get', 'lease', LEASE, '-n', 'default'])).spec?.holderIdentity;

describeOnPrivateCluster('leader election between two controllers', { timeout: 300_000 }, (cluster) => {
  const f = fixture('le', 3);
  const controllers: ManagedProcess[] = [];
  let leader: ManagedProcess;
  let follower: ManagedProcess;
  const name = 'elected';
  let key: string;

  before(async () => {
    key = `${f.ns}/${name}`;
    for (const id of ['a', 'b']) {
      controllers.push(
        startProductProcess(
          id,
          // Short lease so the takeover after a crash is quick.
          controllerArgs(cluster.kubeconfig, LEASE, 6),
          join(cluster.dir, `controller-${id}.log`),
        ),
      );
    }
  });

  after(async () => {
    for (const c of controllers) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await Promise.all(controllers.map((c) => c.exit));
  });

  test('exactly one controller holds the lease, and only it reconciles', async () => {
    await eventually('both controllers to sync their caches and join the election', async () =>
      controllers.every(
        (c) => identityOf(c) !== undefined && readLogLines(c.logFile).some((l) => l.msg === 'caches synced'),
      ),
    );
    const id = await eventually('one controller to hold the lease', async () => {
      const h = await holder().catch(() => undefined);
      return h && controllers.some((c) => acquiredAs(c) === h) && h;
    });
    leader = controllers.find((c) => acquiredAs(c) === id)!;
    follower = controllers.find((c) => c !== leader)!;
    assert.ok(identityOf(follower), 'the follower takes part in the election');
    assert.notEqual(identityOf(follower), id);

    // No webhook on this cluster: the manifest carries the defaults the webhook would add.
    const ds = adsManifest({
      name,
      namespace: f.ns,
      group: f.group,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1 } },
      revisionHistoryLimit: 10,
    });
    (ds.spec as Record<string, unknown>).burstReplicas = 250;
    await apply(ds);
    await waitOnePodPerNode(f.ns, name, f.nodes);
    await waitRolledOut(f.ns, name, f.nodes.length);

    assert.ok(syncsOf(leader, key) > 0, 'the leader reconciled the DaemonSet');
    assert.equal(syncsOf(follower, key), 0, 'the follower planned no sync');
    assert.equal(
      readLogLines(follower.logFile).some((l) => l.msg === 'starting workers'),
      false,
      'the follower started no workers',
    );
    assert.equal(acquiredAs(follower), undefined, 'the follower never acquired the lease');
  });

  test('killing the leader lets the other take over, and it carries on with the rollout', async () => {
    assert.ok(leader && follower, 'the first test elected a leader');
    const before = await adsPods(f.ns, name);
    leader.child.kill('SIGKILL');
    await leader.exit;
    const followerId = identityOf(follower)!;
    await eventually(
      'the follower to take over the lease',
      async () => (await holder()) === followerId && acquiredAs(follower) === followerId,
      { timeoutMs: 60_000 },
    );
    // The workers start after the Lease is logged as acquired (the in-place resize check comes first), so wait.
    await eventually('the new leader to start its workers', async () =>
      readLogLines(follower.logFile).some((l) => l.msg === 'starting workers'),
    );

    // Work that only a live leader can do: a rolling update to a new image.
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const rolled = await waitRolledOut(f.ns, name, f.nodes.length, 120_000);
    const after = await waitOnePodPerNode(f.ns, name, f.nodes, { hash: rolled.status!.daemonSetHash! });
    for (const p of after.values()) assert.equal(p.spec.containers[0]!.image, 'busybox:1.37');
    assert.equal(
      [...after.values()].filter((p) => before.some((o) => o.metadata.uid === p.metadata.uid)).length,
      0,
      'every pod was replaced by the new leader',
    );
    assert.ok(syncsOf(follower, key) > 0, 'the new leader reconciled the DaemonSet');
    const ds = await getAds(f.ns, name);
    assert.equal(ds.status?.observedGeneration, ds.metadata.generation);
  });
});
