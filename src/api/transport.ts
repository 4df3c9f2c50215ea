/**
 * A `fetch` for https addresses built on node:https, because the global fetch takes no CA or
 * verification options. It also tells a plain-HTTP port apart from a slow TLS server: an https
 * address pointed at an http listener fails fast with `PlainHttpServer` instead of hanging until a
 * connect timeout.
 *
 *   const fetchImpl = tlsFetch({ ca: [pem], insecure: false });
 *   const res = await fetchImpl('https://127.0.0.1:8200/v1/sys/health', { method: 'GET' });
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

export interface TlsOptions {
  /** PEM CA certificates to trust instead of the system roots; none means the system roots. */
  readonly ca?: readonly string[] | undefined;
  /** Skips certificate verification (VAULT_SKIP_VERIFY). Never for production. */
  readonly insecure?: boolean | undefined;
  /** How long a TLS handshake may stay silent before the port is probed for plain HTTP. */
  readonly probeAfterMs?: number | undefined;
}

/** An https address whose port answers plain HTTP. */
export class PlainHttpServer extends Error {
  readonly code = 'PLAIN_HTTP_SERVER';
  constructor(url: URL) {
    const plain = `http://${url.host}`;
    super(`server gave HTTP response to HTTPS client: ${url.host} speaks plain HTTP; use ${plain} or enable TLS on its listener`);
  }
}

/** OpenSSL's complaint when the first bytes back are not a TLS record (e.g. "HTTP/1.1 400"). */
const NOT_TLS = /wrong version number|packet length too long|unknown protocol/i;
/** Go's TLS listener answers a plain request with this 400: a TLS server after all. */
const GO_TLS_REPLY = 'Client sent an HTTP request to an HTTPS server';

export function tlsFetch(options: TlsOptions = {}): typeof fetch {
  const probeAfterMs = options.probeAfterMs ?? 750;
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = typeof init.body === 'string' || ArrayBuffer.isView(init.body) ? init.body : undefined;
    return new Promise<Response>((resolve, reject) => {
      let probe: NodeJS.Timeout | undefined;
      const fail = (e: unknown): void => {
        clearTimeout(probe);
        req.destroy();
        reject(e);
      };
      const req = httpsRequest(
        url,
        {
          method: init.method ?? 'GET',
          headers,
          agent: false,
          ...(options.ca && options.ca.length > 0 ? { ca: [...options.ca] } : {}),
          rejectUnauthorized: !options.insecure,
        },
        (res) => {
          clearTimeout(probe);
          void collect(res).then(resolve, reject);
        },
      );
      req.on('socket', (socket) => {
        const tlsSocket = socket as TLSSocket;
        const arm = (): void => {
          probe = setTimeout(() => {
            void speaksPlainHttp(url).then((plain) => {
              if (plain) fail(new PlainHttpServer(url));
            });
          }, probeAfterMs);
        };
        tlsSocket.once('connect', arm);
        tlsSocket.once('secureConnect', () => clearTimeout(probe));
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(probe);
        reject(NOT_TLS.test(e.message) ? new PlainHttpServer(url) : e);
      });
      req.end(body);
    });
  }) as typeof fetch;
}

async function collect(res: IncomingMessage): Promise<Response> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const status = res.statusCode ?? 0;
  const headers = new Headers();
  for (const [key, value] of Object.entries(res.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(key, v);
    else if (value !== undefined) headers.set(key, value);
  }
  const nullBody = status === 204 || status === 304 || chunks.length === 0;
  return new Response(nullBody ? null : Buffer.concat(chunks), { status, headers });
}

/** True when the port answers a plain HTTP request with HTTP (and not Go's TLS-port 400). */
function speaksPlainHttp(url: URL): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port || 443, path: '/v1/sys/health', method: 'GET', agent: false, timeout: 2000 },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve(!text.includes(GO_TLS_REPLY)));
        res.on('error', () => resolve(false));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
