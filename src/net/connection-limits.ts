// Connection limits of a listening server, in all and per client address, so that one client cannot take every
// connection of a port: Node's server.maxConnections (like Go's netutil.LimitListener) caps the total only, and 512
// raw TCP connections from one address then locked every other client out of the webhook port until they timed out.
// Health and metrics ports get small limits of their own (PROBE_CONNECTION_LIMITS), plus idle timeouts, so that a
// probe always finds a connection.
import type { Server } from 'node:net';

export interface ConnectionLimits {
  /** Open connections at most; more are closed as they arrive. */
  maxConnections: number;
  /** Open connections from one client address at most; more from it are closed as they arrive. */
  maxConnectionsPerClient: number;
}

/**
 * The health and metrics ports': the kubelet probes from its node's address a few times a minute and Prometheus
 * scrapes from one address, each with one connection at a time.
 */
export const PROBE_CONNECTION_LIMITS: ConnectionLimits = { maxConnections: 64, maxConnectionsPerClient: 8 };

/** Idle and slow-request timeouts of the health and metrics ports: probes and scrapes are small and quick. */
export const PROBE_TIMEOUTS = { headersTimeoutMs: 5_000, requestTimeoutMs: 5_000, idleTimeoutMs: 30_000 };

/**
 * Applies `limits` to `server` (before or after it listens); returns the open connections by client address, for
 * tests and diagnostics.
 */
export function limitConnections(server: Server, limits: ConnectionLimits): () => ReadonlyMap<string, number> {
  server.maxConnections = limits.maxConnections;
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const client = socket.remoteAddress ?? '';
    const n = (open.get(client) ?? 0) + 1;
    if (n > limits.maxConnectionsPerClient) return void socket.destroy();
    open.set(client, n);
    socket.once('close', () => {
      const left = (open.get(client) ?? 1) - 1;
      if (left > 0) open.set(client, left);
      else open.delete(client);
    });
  });
  return () => open;
}
