// The conversion webhook for a private cluster whose tests run only a `controller` (no manager): the product's own
// webhook server (webhook/server.ts, the /convert route included) in the test process on 127.0.0.1, with a serving
// certificate of its own, registered on the CRD by URL as `manager --webhook-host` does (certs/webhook-config.ts).
// Without it, objects written in v1alpha1 would be stored in v1beta1 unconverted, and v1alpha1 reads of them would
// lose what only v1alpha1 spells (status.daemonSetHash among them).
import { join } from 'node:path';
import { pino } from 'pino';
import { ensureCrdConversion, ensureLocalServingCertificate } from '../../certs/webhook-config.ts';
import { KubeClient } from '../../src/k8s/client.ts';
import { loadKubeConfig } from '../../src/k8s/kubeconfig.ts';
import { startWebhookServer, type WebhookServer } from '../../webhook/server.ts';

export interface ConversionWebhook {
  server: WebhookServer;
  /** https://127.0.0.1:<port> */
  url: string;
  stop(): Promise<void>;
}

export async function startConversionWebhook(kubeconfig: string, dir: string): Promise<ConversionWebhook> {
  const certDir = join(dir, 'conversion-certs');
  const cert = await ensureLocalServingCertificate(certDir, ['127.0.0.1']);
  const server = await startWebhookServer({
    certDir,
    port: 0,
    host: '127.0.0.1',
    healthPort: null,
    metricsPort: null,
    drainDelayMs: 0,
    logger: pino({ level: 'warn' }),
  });
  const url = `https://127.0.0.1:${server.port}`;
  const client = KubeClient.fromKubeConfig(loadKubeConfig(kubeconfig));
  try {
    await ensureCrdConversion(client, { endpoint: { url }, caBundle: cert.caBundle });
  } finally {
    client.close();
  }
  return { server, url, stop: () => server.stop() };
}
