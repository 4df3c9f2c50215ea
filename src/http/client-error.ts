/**
 * What the listener says when Node's HTTP parser refuses bytes on a connection, and when.
 *
 * A request Node's parser refuses (a byte not allowed in the request line or a header, a broken
 * head, headers too large) never reaches a route; Node's own answer is a bare 400 with no body.
 * Vault's shape instead: a JSON `{"errors": [...]}` with 400 (431 for oversized headers, 408 for
 * Node's own request deadline), then the connection is closed as the parser's state is unknown.
 *
 * Requests received whole before the refused bytes (one socket write of a valid POST followed by
 * garbage, or pipelining) are still running: each gets its own real answer first, and the parser
 * error is answered only after the last of them, so a client never reads "400" for a request
 * that was executed. If one of those answers closes the connection (HTTP/1.0), the parser error
 * goes unanswered.
 *
 *   httpServer.on('request', trackRequest);
 *   httpServer.on('clientError', answerClientError);
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';

/** Per connection, the requests whose responses have not closed yet. */
const inFlight = new WeakMap<object, Set<{ readonly req: http.IncomingMessage; readonly res: http.ServerResponse }>>();
const refused = new WeakSet<object>();

/** The server's 'request' listener: counts a request until its response has closed. */
export function trackRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
  let open = inFlight.get(req.socket);
  if (open === undefined) {
    open = new Set();
    inFlight.set(req.socket, open);
  }
  const entry = { req, res };
  const set = open;
  set.add(entry);
  res.once('close', () => set.delete(entry));
}

/**
 * Runs `run` once every request received whole on `socket` has been answered. A request whose
 * body the parser never completed is the refused one: its answer is the parser error.
 */
function whenAnswered(socket: object, run: () => void): void {
  const pending = [...(inFlight.get(socket) ?? [])].filter((e) => e.req.complete).map((e) => e.res);
  if (pending.length === 0) {
    run();
    return;
  }
  let left = pending.length;
  for (const res of pending) {
    res.once('close', () => {
      if (--left === 0) run();
    });
  }
}

export function answerClientError(err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  // Node reports every later chunk on a refused connection again: one answer is enough.
  if (refused.has(socket)) return;
  refused.add(socket);
  const [status, reason] =
    err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'Request Timeout'] : [400, 'Bad Request'];
  const body = JSON.stringify({ errors: [`malformed HTTP request: ${reason.toLowerCase()}`] });
  // An answer to HEAD has no body (the client would take one for its next answer); the request line is in rawPacket.
  const head = err.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
  whenAnswered(socket, () => {
    if (!socket.writable) return;
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${head ? '' : body}`);
  });
}
