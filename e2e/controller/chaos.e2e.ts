// Chaos run: rollouts on 100 fake nodes while the controller is killed (SIGKILL) 5 times at random moments and
// restarted right away, as a Deployment would, and kube-apiserver is stopped and started twice (same etcd). A
// sampler watches the pods throughout and checks at every event: unavailable nodes never above maxUnavailable, no
// node with more daemon pods than allowed (1, 2 with maxSurge), no pod held by a preDelete hook deleted; the
// rollouts complete and the status converges. The fault schedule comes from a seeded random (printed; set
// ADS_CHAOS_SEED to replay one).
//
// Two DaemonSets on the same nodes: `hooked` (maxUnavailable 10%, minReadySeconds, a preDelete label hook that
// this test releases like a user's controller would) and `surge` (maxSurge 10%, maxUnavailable 0).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { clientKubeconfig, processAlive, readState, startApiserver, stopApiserver } from '../cluster/cluster.ts';
import { apply, eventually, fixture, kubectl } from '../lib/kube.ts';
import { LIFECYCLE_STATE_LABEL, PREPARING_DELETE, Sampler } from '../lib/sampler.ts';
import {
  controllerArgs,
  adsManifest,
  describeOnPrivateCluster,
  imagePatch,
  patchAds,
  readLogLines,
  sleep,
  startProductProcess,
  waitRolledOut,
  type ManagedProcess,
} from '../lib/ads.ts';
import { seededRandom } from '../../src/testing/random.ts';

const NODES = 100;
const KILLS = 5;
const APISERVER_RESTARTS = 2;
const LEASE = 'chaos-e2e';
const HOOK = 'example.io/chaos-hold';

/**
 * Keeps one controller process running, as a Deployment's kubelet would: started again right after it exits,
 * whether it was killed or gave up its leadership (a lost lease exits the process).
 */
class Supervisor {
  current: ManagedProcess | undefined;
  starts = 0;
  exits: { code: number | null; signal: string | null; at: number }[] = [];
  private stopping = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly args: string[],
    private readonly dir: string,
  ) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopping) {
        this.starts++;
        const p = startProductProcess(
          `chaos-${this.starts}`,
          this.args,
          join(this.dir, `controller-${this.starts}.log`),
        );
        this.current = p;
        const exit = await p.exit;
        this.exits.push({ ...exit, at: Date.now() });
        if (!this.stopping) await sleep(200);
      }
    })();
  }

  /** Resolves once the running incarnation holds the Lease (its log says so). */
  async leading(timeoutMs = 90_000): Promise<ManagedProcess> {
    return eventually(
      'the controller to hold the Lease',
      async () => {
        const p = this.current;
        return (
          p &&
          p.child.exitCode === null &&
          p.child.signalCode === null &&
          readLogLines(p.logFile).some((l) => l.msg === 'successfully acquired lease') &&
          p
        );
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const p = this.current;
    if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await this.loop;
  }
}

describeOnPrivateCluster('chaos: kills and apiserver restarts during rollouts', { timeout: 360_000 }, (cluster) => {
  const f = fixture('chaos', NODES);

  test('the limits hold at every event and the rollouts complete', async () => {
    const seed = Number(process.env.ADS_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    process.stderr.write(`chaos seed: ${seed} (replay with ADS_CHAOS_SEED=${seed})\n`);
    const random = seededRandom(seed);
    const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo));
    const t0 = Date.now();

    const kubeconfig = await clientKubeconfig(cluster.clusterDir, 'chaos-manager');
    const supervisor = new Supervisor(controllerArgs(kubeconfig, LEASE, 6), cluster.dir);
    const samplers: Sampler[] = [];
    let apiserverDown = false;
    let stopReleasing = false;
    let releaser: Promise<void> | undefined;
    try {
      supervisor.start();
      await supervisor.leading();

      // No webhook on this cluster: the manifests carry the defaults the webhook would add.
      const hooked = adsManifest({
        name: 'hooked',
        namespace: f.ns,
        group: f.group,
        minReadySeconds: 2,
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: '10%' },
        },
        revisionHistoryLimit: 10,
      });
      (hooked.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels[HOOK] =
        'true';
      hooked.spec = {
        ...(hooked.spec as object),
        burstReplicas: 250,
        lifecycle: { preDelete: { labelsHandler: { [HOOK]: 'true' } } },
      };
      const surge = adsManifest({
        name: 'surge',
        namespace: f.ns,
        group: f.group,
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 0, maxSurge: '10%' },
        },
        revisionHistoryLimit: 10,
      });
      (surge.spec as Record<string, unknown>).burstReplicas = 250;
      await apply(hooked);
      await apply(surge);
      await Promise.all([waitRolledOut(f.ns, 'hooked', NODES, 180_000), waitRolledOut(f.ns, 'surge', NODES, 180_000)]);

      const nodeSelector = `e2e-group=${f.group}`;
      samplers.push(
        await Sampler.start({
          namespace: f.ns,
          name: 'hooked',
          nodeSelector,
          // 10% of 100, rounded up as upstream's GetScaledValueFromIntOrPercent does.
          maxUnavailable: Math.ceil(NODES * 0.1),
          maxPodsPerNode: 1,
          minReadySeconds: 2,
          preDeleteHook: { [HOOK]: 'true' },
        }),
        await Sampler.start({ namespace: f.ns, name: 'surge', nodeSelector, maxUnavailable: 0, maxPodsPerNode: 2 }),
      );
      for (const s of samplers) s.arm();

      // The user's controller behind the hook: releases each held pod after a while (set to false; a deleted pod
      // that still carried `true` would be a violation the sampler reports).
      const heldSince = new Map<string, { at: number; after: number }>();
      releaser = (async () => {
        while (!stopReleasing) {
          for (const p of samplers[0]!.list()) {
            if (p.metadata.labels?.[LIFECYCLE_STATE_LABEL] !== PREPARING_DELETE || p.metadata.labels?.[HOOK] !== 'true')
              continue;
            const h = heldSince.get(p.metadata.uid) ?? { at: Date.now(), after: between(200, 1500) };
            heldSince.set(p.metadata.uid, h);
            if (Date.now() - h.at < h.after || apiserverDown) continue;
            await kubectl(['label', 'pod', p.metadata.name, '-n', f.ns, `${HOOK}=false`, '--overwrite']).catch(
              () => undefined,
            );
          }
          await sleep(200);
        }
      })();

      // The faults, in a seeded order, while rollouts run.
      const faults = [
        ...Array<'kill'>(KILLS).fill('kill'),
        ...Array<'apiserver'>(APISERVER_RESTARTS).fill('apiserver'),
      ];
      for (let i = faults.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [faults[i], faults[j]] = [faults[j]!, faults[i]!];
      }
      let kills = 0;
      let restarts = 0;
      const log: string[] = [];
      const chaos = (async () => {
        for (const fault of faults) {
          // A random moment once the current incarnation leads (it acts only then).
          await supervisor.leading();
          await sleep(between(1000, 6000));
          if (fault === 'kill') {
            const p = supervisor.current!;
            p.child.kill('SIGKILL');
            kills++;
            log.push(`${((Date.now() - t0) / 1000).toFixed(1)}s kill ${p.name}`);
          } else {
            apiserverDown = true;
            log.push(`${((Date.now() - t0) / 1000).toFixed(1)}s apiserver stop`);
            await stopApiserver(cluster.clusterDir);
            await sleep(between(1000, 5000));
            await startApiserver(cluster.clusterDir);
            apiserverDown = false;
            restarts++;
            log.push(`${((Date.now() - t0) / 1000).toFixed(1)}s apiserver ready`);
          }
        }
      })();
      let chaosDone = false;
      const chaosEnded = chaos.finally(() => (chaosDone = true));
      chaosEnded.catch(() => undefined); // awaited below; this only keeps a rejection from going unhandled meanwhile

      // Rollouts until the faults are over (at least one; each a new image on both DaemonSets).
      let rollouts = 0;
      do {
        rollouts++;
        const image = `busybox:1.${37 + rollouts}`;
        for (const ds of ['hooked', 'surge'])
          await eventually(
            `image ${image} set on ${ds}`,
            async () => (await patchAds(f.ns, ds, imagePatch(image)), true),
            {
              timeoutMs: 60_000,
            },
          );
        await Promise.race([
          Promise.all([waitRolledOut(f.ns, 'hooked', NODES, 240_000), waitRolledOut(f.ns, 'surge', NODES, 240_000)]),
          chaos.then(() => new Promise(() => {})), // a failing fault schedule fails the test
        ]);
      } while (!chaosDone && rollouts < 6);
      await chaosEnded;
      // Converged after the last fault: the status is current and complete.
      const [a, b] = await Promise.all([
        waitRolledOut(f.ns, 'hooked', NODES, 120_000),
        waitRolledOut(f.ns, 'surge', NODES, 120_000),
      ]);
      await sleep(1000);
      stopReleasing = true;
      await releaser;

      const figures = samplers.map((s) => s.stop());
      const duration = ((Date.now() - t0) / 1000).toFixed(0);
      process.stderr.write(`chaos schedule (seed ${seed}): ${log.join('; ')}\n`);
      process.stderr.write(
        `chaos figures: seed=${seed} hooked[${samplers[0]!.summary()}] surge[${samplers[1]!.summary()}] ` +
          `kills=${kills} apiserverRestarts=${restarts} controllerStarts=${supervisor.starts} rollouts=${rollouts} duration=${duration}s\n`,
      );

      assert.equal(kills, KILLS, 'the controller was killed 5 times');
      assert.equal(restarts, APISERVER_RESTARTS, 'kube-apiserver was restarted twice');
      for (const [i, fig] of figures.entries()) {
        assert.deepEqual(fig.violations, [], `${['hooked', 'surge'][i]}: the sampler saw no violation (seed ${seed})`);
        assert.ok(fig.samples > NODES, `${['hooked', 'surge'][i]}: the sampler sampled the rollouts`);
        // Status never went back (observedGeneration, conditions): checked on every status version seen.
        assert.ok(fig.statusSamples > 10, `${['hooked', 'surge'][i]}: the sampler followed the status`);
      }
      assert.ok(
        figures[0]!.maxUnavailableSeen > 0,
        'hooked: the rollouts made nodes unavailable (the limit was exercised)',
      );
      assert.ok(figures[0]!.preDeleteHeldSeen > 0, 'hooked: pods were held by the preDelete hook');
      assert.ok(
        figures[1]!.maxPodsPerNodeSeen === 2,
        'surge: nodes ran an old and a new pod (the surge was exercised)',
      );
      for (const ds of [a, b]) {
        const s = ds.status!;
        assert.equal(s.observedGeneration, ds.metadata.generation, `${ds.metadata.name}: observedGeneration current`);
        assert.equal(s.desiredNumberScheduled, NODES);
        assert.equal(s.updatedNumberScheduled, NODES);
        assert.equal(s.numberAvailable, NODES);
      }
    } finally {
      stopReleasing = true;
      await releaser;
      for (const s of samplers) s.stop();
      await supervisor.stop();
      // Never leave the cluster without its apiserver: the fixture's cleanup and `cluster down` need it.
      const api = readState(cluster.clusterDir)?.processes.find((p) => p.name === 'kube-apiserver');
      if (api && !processAlive(api)) await startApiserver(cluster.clusterDir);
    }
  });
});
