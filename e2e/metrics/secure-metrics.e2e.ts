// e2e: /metrics behind authentication and authorization (--metrics-secure, on in the chart), against the real
// apiserver's TokenReview and SubjectAccessReview: HTTPS only; no token or a token the apiserver does not accept
// → 401; a service account without the right → 403; one bound to a ClusterRole that may get the non-resource URL
// /metrics (the chart's metrics-reader role) → the metrics.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { kubectl } from '../lib/kube.ts';
import { describeOnPrivateCluster } from '../lib/ads.ts';
import { startManager, type ManagerProcess } from '../lib/manager.ts';
import { getSecureMetrics } from './scrape.ts';

describeOnPrivateCluster(
  'secure metrics: HTTPS, TokenReview and SubjectAccessReview',
  { timeout: 300_000 },
  (cluster) => {
    let manager: ManagerProcess | undefined;
    before(async () => {
      manager = await startManager({
        kubeconfig: cluster.kubeconfig,
        dir: join(cluster.dir, 'manager'),
        args: ['--metrics-secure=true'],
        timeoutMs: 120_000,
      });
      await kubectl(['create', 'serviceaccount', 'scraper', '-n', 'default']);
      await kubectl(['create', 'serviceaccount', 'nobody', '-n', 'default']);
      await kubectl(['create', 'clusterrole', 'metrics-reader', '--verb=get', '--non-resource-url=/metrics']);
      await kubectl(['create', 'clusterrolebinding', 'scraper-metrics', '--clusterrole=metrics-reader', '--serviceaccount=default:scraper']); // prettier-ignore
    });
    after(async () => {
      await manager?.stop();
    });

    test('only a token whose user may get /metrics reads them', async () => {
      const port = manager!.metricsPort;
      const token = async (sa: string) => (await kubectl(['create', 'token', sa, '-n', 'default'])).trim();
      const none = await getSecureMetrics('127.0.0.1', port);
      assert.equal(none.status, 401, none.body);
      assert.match(none.body, /a bearer token is required/);
      const forged = await getSecureMetrics('127.0.0.1', port, 'not-a-token');
      assert.equal(forged.status, 401, forged.body);
      assert.match(forged.body, /the token was not accepted/);
      const nobody = await getSecureMetrics('127.0.0.1', port, await token('nobody'));
      assert.equal(nobody.status, 403, nobody.body);
      assert.match(nobody.body, /user "system:serviceaccount:default:nobody" cannot get path "\/metrics"/);
      const scraper = await getSecureMetrics('127.0.0.1', port, await token('scraper'));
      assert.equal(scraper.status, 200, scraper.body.slice(0, 300));
      assert.match(scraper.body, /^leader_election_master_status\{name="[^"]+"\} [01]$/m);
      // Plain HTTP is not served on that port.
      await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) }));
    });
  },
);
