// Webhook metrics with controller-runtime's names (controller_runtime_webhook_*), so dashboards written for
// kruise-manager keep working, plus a `verdict` label (allowed/denied/patched/errored).
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface WebhookMetrics {
  registry: Registry;
  requests: Counter<'webhook' | 'code' | 'verdict'>;
  latency: Histogram<'webhook' | 'verdict'>;
  inFlight: Gauge<'webhook'>;
}

// controller-runtime's default buckets (prometheus.DefBuckets).
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The webhook metrics in `registry`; registering twice in one registry returns the existing ones. */
export function webhookMetrics(registry: Registry = new Registry()): WebhookMetrics {
  const existing = <T>(name: string) => registry.getSingleMetric(name) as T | undefined;
  const requests =
    existing<Counter<'webhook' | 'code' | 'verdict'>>('controller_runtime_webhook_requests_total') ??
    new Counter({
      name: 'controller_runtime_webhook_requests_total',
      help: 'Total number of admission requests by HTTP status code.',
      labelNames: ['webhook', 'code', 'verdict'],
      registers: [registry],
    });
  const latency =
    existing<Histogram<'webhook' | 'verdict'>>('controller_runtime_webhook_latency_seconds') ??
    new Histogram({
      name: 'controller_runtime_webhook_latency_seconds',
      help: 'Histogram of the latency of processing admission requests',
      labelNames: ['webhook', 'verdict'],
      buckets: BUCKETS,
      registers: [registry],
    });
  const inFlight =
    existing<Gauge<'webhook'>>('controller_runtime_webhook_requests_in_flight') ??
    new Gauge({
      name: 'controller_runtime_webhook_requests_in_flight',
      help: 'Current number of admission requests being served.',
      labelNames: ['webhook'],
      registers: [registry],
    });
  return { registry, requests, latency, inFlight };
}
