// The plain-HTTP server of the health and metrics ports (the manager's, the controller's and the standalone
// webhook's): small connection limits of its own and short timeouts, so that a probe always finds a connection.
import { createServer, type RequestListener, type Server } from 'node:http';
import { limitConnections, PROBE_CONNECTION_LIMITS, PROBE_TIMEOUTS } from './connection-limits.ts';

export function createProbeHttpServer(handler: RequestListener): Server {
  const server = createServer(
    {
      headersTimeout: PROBE_TIMEOUTS.headersTimeoutMs,
      requestTimeout: PROBE_TIMEOUTS.requestTimeoutMs,
      keepAliveTimeout: PROBE_TIMEOUTS.headersTimeoutMs,
      connectionsCheckingInterval: 1_000,
    },
    handler,
  );
  server.timeout = PROBE_TIMEOUTS.idleTimeoutMs;
  limitConnections(server, PROBE_CONNECTION_LIMITS);
  return server;
}
