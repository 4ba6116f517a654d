// A connection the client opened and has not used yet is idle, not slow.
//
// Node's HTTP server starts a connection's header and request timers when it accepts the connection, not with
// the first byte of a request: the parser is initialised with the connection's start time and counted as a
// request in progress (`Parser::Initialize` in https://github.com/nodejs/node/blob/v24.x/src/node_http_parser.cc,
// checked by `checkConnections` in https://github.com/nodejs/node/blob/v24.x/lib/_http_server.js). Once
// `headersTimeout` (10 s) has passed, the next check writes an unsolicited "408 Request Timeout" on it and closes
// it. Go's transport, the apiserver's webhook client, keeps such connections: when a connection it dialed for
// one request is ready after another connection already answered that request, it goes to the idle pool unused
// (`dialConnFor` and `putOrCloseIdleConn` in https://github.com/golang/go/blob/master/src/net/http/transport.go)
// and may be picked for up to 90 s (IdleConnTimeout). A request sent on it as the 408 arrives reads the 408 as its
// answer: "conversion webhook ... failed: the server responded with the status code 408", seen on a loaded test
// machine. Such a connection is left to the idle bound (`server.timeout`, 125 s, above the client's 90 s);
// Node arms the header and request timers again when a request begins on it (`on_message_begin`), so a
// request that starts and stalls still gets its 408 after 10 s.
import type { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';

type ClientErrorListener = (err: NodeJS.ErrnoException, socket: Socket) => void;

/**
 * Wraps the server's `clientError` listeners (Fastify's answer a client error with 408, 431 or 400 and close the
 * connection) so that a request timeout on a connection that has not received a byte is ignored. On a server with
 * no listener of its own, every other error closes the connection (without the status line Node would write first).
 */
export function leaveUnusedConnectionsIdle(server: EventEmitter): void {
  const listeners = server.listeners('clientError') as ClientErrorListener[];
  server.removeAllListeners('clientError');
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // bytesRead: what the HTTP parser was given, decrypted on a TLS socket; 0 while no request has begun.
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.bytesRead === 0) return;
    if (listeners.length === 0) return void socket.destroy(err);
    for (const listener of listeners) listener.call(server, err, socket);
  });
}
