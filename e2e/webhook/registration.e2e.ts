// e2e: an out-of-cluster manager (--webhook-host) takes back what it registered when it stops: its fail-closed
// webhook configurations would otherwise refuse every DaemonSet write ("connection refused") and the CRD's
// conversion URL would fail every read in the version not stored. With --webhook-keep-registration=true they stay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { apply, eventually, kubectl, kubectlJson } from '../lib/kube.ts';
import { adsManifest, describeOnPrivateCluster } from '../lib/ads.ts';
import { startManager } from '../lib/manager.ts';

interface Configuration {
  webhooks: { clientConfig: { url?: string } }[];
}
interface Crd {
  spec: { conversion?: { strategy?: string; webhook?: { clientConfig?: { url?: string } } } };
}

/** The mutating configuration's URL, or undefined when there is none. */
async function registeredUrl(): Promise<string | undefined> {
  const list = await kubectlJson<{ items: Configuration[] }>([
    'get',
    'mutatingwebhookconfigurations',
    '--field-selector',
    'metadata.name=advanced-daemonset-mutating',
  ]);
  return list.items[0]?.webhooks[0]?.clientConfig.url;
}
const conversion = async () => (await kubectlJson<Crd>(['get', 'crd', 'daemonsets.apps.kruise.io'])).spec.conversion;

describeOnPrivateCluster(
  'the out-of-cluster manager takes back its registration on exit',
  { timeout: 300_000 },
  (cluster) => {
    test('removed on SIGTERM: DaemonSet writes then work without it; kept with --webhook-keep-registration=true', async () => {
      const run = async (dir: string, args: string[] = []) => {
        const manager = await startManager({ kubeconfig: cluster.kubeconfig, dir: join(cluster.dir, dir), args, timeoutMs: 120_000 }); // prettier-ignore
        const url = await eventually('the manager registered its webhooks', registeredUrl);
        assert.match(url, new RegExp(`^https://127\\.0\\.0\\.1:${manager.webhookPort}/`));
        await eventually('the CRD converts through it', async () => (await conversion())?.webhook?.clientConfig?.url?.startsWith(`https://127.0.0.1:${manager.webhookPort}/`)); // prettier-ignore
        assert.equal(await manager.stop(), 0);
        return manager;
      };
      await run('first');
      assert.equal(await registeredUrl(), undefined, 'no webhook configuration left');
      assert.deepEqual(await conversion(), { strategy: 'None' });
      const list = await kubectlJson<{ items: unknown[] }>(['get', 'validatingwebhookconfigurations', '--field-selector', 'metadata.name=advanced-daemonset-validating']); // prettier-ignore
      assert.equal(list.items.length, 0);
      // Writes and reads of both versions work with nothing serving.
      await apply(adsManifest({ name: 'after-exit', namespace: 'default', group: 'none' }));
      await kubectl(['get', 'daemonsets.v1alpha1.apps.kruise.io/after-exit', '-n', 'default']);
      await kubectl(['get', 'daemonsets.v1beta1.apps.kruise.io/after-exit', '-n', 'default']);

      const kept = await run('second', ['--webhook-keep-registration=true']);
      assert.match((await registeredUrl()) ?? '', new RegExp(`^https://127\\.0\\.0\\.1:${kept.webhookPort}/`), 'kept');
      assert.equal((await conversion())?.strategy, 'Webhook');
    });
  },
);
