// The plain-HTTP server of the health and metrics ports (the manager's, the controller's and the standalone
// webhook's): small connection limits of its own and short timeouts, so that a probe always finds a connection.
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions as TlsOptions } from 'node:https';
import { limitConnections, PROBE_CONNECTION_LIMITS, PROBE_TIMEOUTS } from './connection-limits.ts';

/** With `tls`, HTTPS (the metrics port with --metrics-secure), with a handshake timeout as short as the headers'. */
export function createProbeHttpServer(handler: RequestListener, tls?: TlsOptions): Server {
  const options = {
    headersTimeout: PROBE_TIMEOUTS.headersTimeoutMs,
    requestTimeout: PROBE_TIMEOUTS.requestTimeoutMs,
    keepAliveTimeout: PROBE_TIMEOUTS.headersTimeoutMs,
    connectionsCheckingInterval: 1_000,
  };
  const server = tls
    ? createHttpsServer({ ...options, ...tls, handshakeTimeout: PROBE_TIMEOUTS.headersTimeoutMs }, handler)
    : createServer(options, handler);
  server.timeout = PROBE_TIMEOUTS.idleTimeoutMs;
  limitConnections(server, PROBE_CONNECTION_LIMITS);
  return server;
}
