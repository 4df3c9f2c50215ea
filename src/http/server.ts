/**
 * The HTTP listener: the only module that imports express. It turns sockets into ApiRequests,
 * runs `dispatch`, and writes Vault's wire shapes. Nothing here logs a body, a token or a query.
 *
 *   const http = await startHttp({ services, routes, address: '127.0.0.1:0', logger });
 *   http.url // 'http://127.0.0.1:41234'
 *
 * Express is the shell the node's design names; routing is ours (routes as declarations), so
 * express sees one catch-all handler and the reply is written directly (JSON as
 * `application/json` exactly, as Vault sends it: hvac reads `errors` only for that exact type;
 * with a Content-Length, nothing on 204). Profiling under write
 * load put express's per-request prototype swapping at about a tenth of the event loop; see NOTES.md.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import express from 'express';
import type { Logger } from 'pino';
import { PayloadTooLarge, StandbyWriteRefused } from '../core/errors.js';
import { answerClientError, trackRequest } from './client-error.js';
import { dispatch, type Dispatched, type Services } from './dispatch.js';
import { expressHttpServer } from './express-server.js';
import { clientMethod, DEFAULT_TIMEOUTS, listAware, markResponded, type ConnectionTimeouts } from './list-method.js';
import { replyJson } from './json.js';
import { toApiRequest } from './request.js';
import type { Route } from './route.js';
import type { RawReply, RawRequest } from '../ha/index.js';
import { relayableHeaders, type StandbyGate } from './standby.js';
import { servedByStandby } from './standby-serves.js';
import { serveStatic, type StaticSite } from './static.js';
import { errorReply } from './status.js';

/** Vault answers JSON with exactly this type; hvac reads the `errors` list only when it matches. */
const JSON_TYPE = 'application/json';

export interface HttpOptions {
  readonly services: Services;
  readonly routes: readonly Route[];
  /** Pages outside `/v1/` (the dashboard at `/ui/`): static.ts. */
  readonly statics?: readonly StaticSite[];
  /** host:port; port 0 picks a free one. */
  readonly address: string;
  readonly logger: Logger;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** Vault's default max_request_size is 32 MiB. */
  readonly maxBodyBytes?: number;
  /** Deadlines for slow or silent clients on every connection; defaults in DEFAULT_TIMEOUTS. */
  readonly timeouts?: Partial<ConnectionTimeouts>;
  readonly onRequest?: (info: { method: string; route: string; status: number; seconds: number }) => void;
  /** An HA standby relays requests to the active node (src/http/standby.ts). */
  readonly standby?: StandbyGate;
}

export interface HttpServer {
  readonly url: string;
  readonly port: number;
  /**
   * Runs a request a standby relayed, as if its client had sent it here, and answers its bytes.
   * A streamed reply cannot be relayed: it answers 503 naming this node's address. `admit` runs
   * first; what it throws is answered as any error of the request, and nothing runs.
   */
  execute(req: RawRequest, admit?: () => void): Promise<RawReply>;
  close(): Promise<void>;
}

/** A bounded label for metrics: the first two path segments, never a secret's name. */
function routeLabel(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const rest = path.startsWith('/v1/') ? path.slice(4) : path;
  // The common case (no empty segment before the first or third): no split at all.
  const first = rest.indexOf('/');
  if (first > 0 && !rest.startsWith('sys/')) return rest.slice(0, first);
  const segs = rest.split('/').filter(Boolean);
  return segs[0] === 'sys' ? segs.slice(0, 3).join('/') : (segs[0] ?? '');
}

/**
 * A streamed reply (reply.ts `streamed`): headers at once (no length; no caching or proxy
 * buffering), then each chunk as the source yields it, waiting for the socket to drain. The
 * source's signal aborts when the client goes away or the listener closes; the response ends when
 * the source does. Runs detached from the request's bookkeeping (metrics count the open).
 */
function pump(res: http.ServerResponse, out: Dispatched & { stream: NonNullable<Dispatched['stream']> }, log: Logger): void {
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  res.statusCode = out.status;
  res.setHeader('Content-Type', out.contentType ?? 'application/octet-stream');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  void (async () => {
    try {
      for await (const chunk of out.stream(abort.signal)) {
        if (abort.signal.aborted) break;
        if (!res.write(chunk)) {
          await new Promise<void>((resolve) => {
            const done = (): void => {
              res.off('drain', done);
              abort.signal.removeEventListener('abort', done);
              resolve();
            };
            res.once('drain', done);
            abort.signal.addEventListener('abort', done);
          });
        }
      }
    } catch (e) {
      log.warn({ err: (e as Error).message }, 'streamed reply failed');
    } finally {
      if (!res.writableEnded) res.end();
    }
  })();
}

/** Methods that never commit (a read that does, e.g. a token's last use, is rare). */
const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'LIST']);

/** Writes a reply relayed (or made) as bytes; its status. */
function sendRaw(res: http.ServerResponse, reply: RawReply): number {
  res.writeHead(reply.status, { ...reply.headers, 'content-length': String(reply.body.length) });
  res.end(reply.body);
  return reply.status;
}

/** Writes a reply as express's res.json / res.send / res.end did. */
function send(res: http.ServerResponse, out: Dispatched): void {
  res.statusCode = out.status;
  if (out.body === undefined || out.status === 204 || out.status === 304) {
    res.end();
    return;
  }
  let body: string | Buffer;
  let type: string;
  if (out.contentType === undefined) {
    body = replyJson(out.body) ?? '';
    type = JSON_TYPE;
  } else if (Buffer.isBuffer(out.body)) {
    body = out.body;
    type = out.contentType;
  } else {
    body = typeof out.body === 'string' ? out.body : JSON.stringify(out.body) ?? '';
    type = /;\s*charset=/i.test(out.contentType) ? out.contentType : `${out.contentType}; charset=utf-8`;
  }
  res.setHeader('Content-Type', type);
  res.setHeader('Content-Length', typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  res.end(body);
}

/** A reply as `send` would write it, as bytes with its headers. */
function bytesOf(out: Dispatched): RawReply {
  if (out.body === undefined || out.status === 204 || out.status === 304) return { status: out.status, headers: {}, body: Buffer.alloc(0) };
  if (out.contentType === undefined) {
    return { status: out.status, headers: { 'content-type': JSON_TYPE }, body: Buffer.from(replyJson(out.body) ?? '') };
  }
  if (Buffer.isBuffer(out.body)) return { status: out.status, headers: { 'content-type': out.contentType }, body: out.body };
  const text = typeof out.body === 'string' ? out.body : JSON.stringify(out.body) ?? '';
  const type = /;\s*charset=/i.test(out.contentType) ? out.contentType : `${out.contentType}; charset=utf-8`;
  return { status: out.status, headers: { 'content-type': type }, body: Buffer.from(text) };
}

export async function startHttp(opts: HttpOptions): Promise<HttpServer> {
  const limit = opts.maxBodyBytes ?? 32 * 1024 * 1024;
  let urlOf = (): string => opts.address;

  const timeouts: ConnectionTimeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };

  /** One `/v1/` request: dispatched (or diverted by an HA standby) and answered; its status. */
  const answerApi = async (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    r: { id: string; method: string; url: string; tooLarge: boolean; chunks: Buffer[] },
  ): Promise<number> => {
    try {
      if (r.tooLarge) throw new PayloadTooLarge(`request body larger than ${limit} bytes`);
      const rawBody = r.chunks.length === 0 ? undefined : r.chunks.length === 1 ? r.chunks[0] : Buffer.concat(r.chunks);
      const remoteAddress = req.socket.remoteAddress ?? '';
      // A LIST is relayed as LIST: the marker that says so here means nothing on the active node.
      const method = clientMethod(r.method, req.headers);
      const standby = opts.standby;
      const raw: RawRequest | undefined = standby === undefined ? undefined : { method, url: r.url, headers: relayableHeaders(req.headers), body: rawBody, remoteAddress };
      const diverted = raw === undefined ? undefined : standby?.divert(raw, () => servedByStandby(opts.routes, method, r.url));
      const reply = diverted === undefined ? undefined : await diverted;
      if (reply !== undefined) return sendRaw(res, reply);
      const api = toApiRequest({ id: r.id, method, url: r.url, headers: req.headers, rawBody, remoteAddress });
      let out: Dispatched;
      try {
        out = await dispatch(opts.services, opts.routes, api);
      } catch (e) {
        // A standby answering what looked like a read reached a write: nothing was written here,
        // and the active node runs the request whole.
        if (!(e instanceof StandbyWriteRefused) || standby === undefined || raw === undefined) throw e;
        return sendRaw(res, await standby.relay(raw));
      }
      // A write's answer waits for the event loop's check phase, where Node flushes HTTP/2: the
      // replication stream's frames for what it committed (sent from the commit's continuation)
      // leave before the client hears of the commit, as PostgreSQL wakes its WAL senders first.
      if (!READ_METHODS.has(method)) await new Promise<void>((resolve) => setImmediate(resolve));
      if (out.stream) pump(res, { ...out, stream: out.stream }, opts.logger);
      else send(res, out);
      return out.status;
    } catch (e) {
      const reply = errorReply(e);
      if (reply.internal) opts.logger.error({ req_id: r.id, err: e }, 'internal error');
      send(res, { status: reply.status, body: reply.body });
      return reply.status;
    }
  };

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    res.once('finish', () => markResponded(req.socket));
    const started = process.hrtime.bigint();
    const id = randomUUID();
    const url = req.url ?? '';
    const method = req.method ?? '';
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) tooLarge = true;
      else chunks.push(c);
    });
    req.on('end', () => {
      void (async () => {
        const page = serveStatic(opts.statics ?? [], method, url);
        let status: number;
        if (page !== undefined) {
          status = page.status;
          res.writeHead(page.status, page.headers);
          res.end(page.body);
        } else {
          status = await answerApi(req, res, { id, method, url, tooLarge, chunks });
        }
        const debug = opts.logger.isLevelEnabled('debug');
        if (opts.onRequest === undefined && !debug) return;
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        const route = routeLabel(url);
        opts.onRequest?.({ method, route, status, seconds });
        if (debug) opts.logger.debug({ req_id: id, method, route, status, ms: Math.round(seconds * 1e4) / 10 }, 'request');
      })();
    });
  };

  /** A relayed request, run as if sent here; its reply as bytes. */
  const execute = async (raw: RawRequest, admit?: () => void): Promise<RawReply> => {
    let out: Dispatched;
    try {
      admit?.();
      if (raw.body !== undefined && raw.body.length > limit) throw new PayloadTooLarge(`request body larger than ${limit} bytes`);
      const api = toApiRequest({ id: randomUUID(), method: raw.method, url: raw.url, headers: raw.headers, rawBody: raw.body, remoteAddress: raw.remoteAddress });
      out = await dispatch(opts.services, opts.routes, api);
    } catch (e) {
      const reply = errorReply(e);
      if (reply.internal) opts.logger.error({ err: e }, 'internal error in a relayed request');
      out = { status: reply.status, body: reply.body };
    }
    if (out.stream) {
      return bytesOf({ status: 503, body: { errors: [`a streamed reply cannot be relayed by a standby: connect to the active node (${urlOf()}) directly`] } });
    }
    return bytesOf(out);
  };

  const [host, portText] = splitHostPort(opts.address);
  // The HTTP server never listens itself: every connection passes through listAware() so that
  // the LIST method of Vault clients survives Node's HTTP parser.
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(handle);
  const httpServer = expressHttpServer(app);
  // listAware() owns the deadlines; Node's own are set to match, as a second line.
  httpServer.headersTimeout = timeouts.headersMs;
  httpServer.requestTimeout = timeouts.headersMs + timeouts.bodyMs;
  httpServer.keepAliveTimeout = timeouts.idleMs;
  httpServer.on('request', trackRequest);
  httpServer.on('clientError', answerClientError);
  const server: net.Server = opts.tls
    ? tls.createServer(
        { cert: readFileSync(opts.tls.certFile), key: readFileSync(opts.tls.keyFile), handshakeTimeout: timeouts.headersMs },
        (s) => {
          s.setNoDelay(true);
          httpServer.emit('connection', listAware(s, timeouts));
        },
      )
    : net.createServer((s) => {
        s.setNoDelay(true);
        httpServer.emit('connection', listAware(s, timeouts));
      });
  const sockets = new Set<net.Socket>();
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(portText), host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const scheme = opts.tls ? 'https' : 'http';
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  urlOf = () => url;
  return {
    url,
    port,
    execute,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export function splitHostPort(address: string): [string, string] {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address);
  if (!m) throw new Error(`invalid address "${address}": expected host:port`);
  return [m[1] as string, m[2] as string];
}
