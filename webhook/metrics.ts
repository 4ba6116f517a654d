// Webhook metrics with controller-runtime's names (controller_runtime_webhook_*), so dashboards written for
// kruise-manager keep working, plus a `verdict` label (allowed/denied/patched/errored; for the conversion webhook,
// webhook="convert": converted/failed/errored), and the conversion webhook's objects by version and result.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface WebhookMetrics {
  registry: Registry;
  requests: Counter<'webhook' | 'code' | 'verdict'>;
  latency: Histogram<'webhook' | 'verdict'>;
  inFlight: Gauge<'webhook'>;
  /** Objects the conversion webhook was asked to convert, by source and target version and result. */
  conversions: Counter<'from_version' | 'to_version' | 'result'>;
  /** Unexpected errors in the conversion webhook: controller-runtime's name for its recovered panics. */
  conversionPanics: Counter;
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
  const conversions =
    existing<Counter<'from_version' | 'to_version' | 'result'>>(
      'controller_runtime_conversion_webhook_objects_total',
    ) ??
    new Counter({
      name: 'controller_runtime_conversion_webhook_objects_total',
      help: 'Total number of objects the conversion webhook was asked to convert, by source and target version and result (success, failure).',
      labelNames: ['from_version', 'to_version', 'result'],
      registers: [registry],
    });
  const conversionPanics =
    existing<Counter>('controller_runtime_conversion_webhook_panics_total') ??
    new Counter({
      name: 'controller_runtime_conversion_webhook_panics_total',
      help: 'Total number of conversion webhook panics',
      registers: [registry],
    });
  return { registry, requests, latency, inFlight, conversions, conversionPanics };
}
