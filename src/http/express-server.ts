/**
 * The HTTP server of an express app, with its requests and responses born with the app's own
 * prototypes. Express gives both a prototype of its own on every request (app.handle:
 * `Object.setPrototypeOf(req, app.request)` and the same for `res`). On V8 that change of an
 * existing object's prototype is costly far beyond the call: measured on the express no-op floor
 * (scripts/bench-floor-server.mjs, Node 20, 16 connections), a third of each request's allocation
 * then outlives two scavenges and is promoted, and a request costs 221-303 us of CPU against
 * 79-88 us when the objects are constructed with those prototypes (`express` and
 * `express-tessera` modes). Here node:http constructs them from classes whose prototypes *are*
 * `app.request` and `app.response` (the chain express builds: the app's object, express's
 * request or response, node's IncomingMessage or ServerResponse), so express's own
 * setPrototypeOf finds them set and changes nothing; everything else express does is unchanged.
 *
 *   const server = expressHttpServer(app);   // as http.createServer(app)
 */
import http from 'node:http';
import type { Express } from 'express';

export function expressHttpServer(app: Express): http.Server {
  class Request extends http.IncomingMessage {}
  class Response extends http.ServerResponse {}
  for (const [cls, current] of [[Request, app.request], [Response, app.response]] as const) {
    // What express made: Object.create(express's request or response, { app }).
    Object.setPrototypeOf(cls.prototype, Object.getPrototypeOf(current) as object);
    Object.defineProperty(cls.prototype, 'app', { configurable: true, enumerable: true, writable: true, value: app });
  }
  app.request = Request.prototype as unknown as Express['request'];
  app.response = Response.prototype as unknown as Express['response'];
  return http.createServer({ IncomingMessage: Request, ServerResponse: Response }, app as unknown as http.RequestListener<typeof Request, typeof Response>);
}
