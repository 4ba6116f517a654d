// The part of autocannon's API the webhook benchmark uses (the package ships no types).
declare module 'autocannon' {
  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
  }
  export interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    /** Responses by HTTP status code. */
    statusCodeStats: Record<string, { count: number }>;
    duration: number;
  }
  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    duration?: number;
    overallRate?: number;
    tlsOptions?: Record<string, unknown>;
  }
  export default function autocannon(opts: Options): Promise<Result>;
}
