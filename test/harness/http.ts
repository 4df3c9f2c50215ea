/**
 * The tests' one HTTP client. `vault()` speaks Vault's wire through src/api's transport
 * (`exchange`: the same URL building and fetch the product's TesseraClient uses), but answers
 * every status as `{ status, body, text, headers }` so tests assert on error paths too. It sends
 * any verb (LIST), exact body bytes (`raw`), extra headers, and `path?query` as written.
 * `rawRequest()` sends exactly the method, path and bytes given over node:http (fetch would
 * normalise `..` and `//`, and refuses some methods), for malformed-input tests.
 *
 *   const v = vault(node.apiAddr, rootToken);
 *   await v.put('secret/data/app', { data: { password: 'x' } }); // { status: 200, body: {...} }
 *   (await v.get('secret/data/app')).body.data.data.password;    // 'x'
 *   await v.request('PUT', 'kv/x', { raw: '{"v":' });              // bytes as given
 *   await rawRequest(node.apiAddr, { method: 'PUT', path: '/v1/secret/../sys/mounts/x', body: '{' });
 */
import http from 'node:http';
import { exchange } from '../../src/api/request.js';

/**
 * Parsed JSON, the text when the body is not JSON, or null when there is no body. `any` on
 * purpose: tests index into Vault's JSON freely and assert on what they find.
 */
export type Body = any;

export interface Reply {
  readonly status: number;
  readonly body: Body;
  /** The body as received (metrics, or asserting that a secret is absent from it). */
  readonly text: string;
  readonly headers: Headers;
  /** "METHOD path on apiAddr", for error messages. */
  readonly request?: string;
}

export interface RequestOptions {
  readonly headers?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string>>;
}

export interface SendOptions extends RequestOptions {
  /** Sent as JSON (Content-Type application/json unless a header says otherwise). */
  readonly body?: unknown;
  /** Sent byte for byte instead of `body`. */
  readonly raw?: string | Uint8Array;
}

export interface VaultHttp {
  get(path: string, opts?: RequestOptions): Promise<Reply>;
  put(path: string, body?: unknown, opts?: RequestOptions): Promise<Reply>;
  post(path: string, body?: unknown, opts?: RequestOptions): Promise<Reply>;
  patch(path: string, body?: unknown, opts?: RequestOptions): Promise<Reply>;
  delete(path: string, opts?: RequestOptions): Promise<Reply>;
  /** GET with ?list=true, as Vault's Go client sends a LIST; `request('LIST', ...)` sends the verb itself. */
  list(path: string, opts?: RequestOptions): Promise<Reply>;
  request(method: string, path: string, opts?: SendOptions): Promise<Reply>;
}

function parse(text: string): Body {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export interface VaultOptions {
  /**
   * Send over node:http on this (keep-alive) agent instead of src/api's fetch transport: for
   * benchmarks whose load generators and lag probes each hold one connection.
   */
  readonly agent?: http.Agent;
}

/** `path` is relative to /v1/ (no leading slash needed); a `?query` in it is sent as the query. */
/** How long `vault()` waits for an answer: the Vault client's default timeout. */
const REQUEST_DEADLINE_MS = 60_000;

export function vault(apiAddr: string, token?: string, options: VaultOptions = {}): VaultHttp {
  const overAgent = async (agent: http.Agent, method: string, path: string, query: Record<string, string>, headers: Record<string, string>, body: string | Uint8Array | undefined): Promise<Reply> => {
    const qs = new URLSearchParams(query).toString();
    const res = await rawRequest(apiAddr, {
      method,
      path: `${path}${qs === '' ? '' : `?${qs}`}`,
      headers: { ...(token !== undefined && token !== '' ? { 'X-Vault-Token': token } : {}), ...headers },
      ...(body !== undefined ? { body: Buffer.from(body) } : {}),
      agent,
    });
    const h = new Headers();
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
    return { status: res.status, body: parse(res.text), text: res.text, headers: h };
  };
  const request = async (method: string, path: string, opts: SendOptions = {}): Promise<Reply> => {
    const q = path.indexOf('?');
    const query: Record<string, string> = q < 0 ? {} : Object.fromEntries(new URLSearchParams(path.slice(q + 1)));
    const headers: Record<string, string> = { ...opts.headers };
    let body: string | Uint8Array | undefined = opts.raw;
    if (body === undefined && opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      if (!Object.keys(headers).some((k) => k.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
    }
    // An absolute API path, so a Vault path that starts with v1 (a mount named v1) stays one.
    const apiPath = `/v1/${(q < 0 ? path : path.slice(0, q)).replace(/^\/+/, '')}`;
    if (options.agent !== undefined) return { ...(await overAgent(options.agent, method, apiPath, { ...query, ...opts.query }, headers, body)), request: `${method} ${path} on ${apiAddr}` };
    // A deadline, as rawRequest's: a request a node never answers fails naming itself rather
    // than holding the test until jest's timeout.
    const fetchImpl: typeof fetch = (url, init) => fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) });
    const res = await exchange({ addr: apiAddr, token, fetchImpl }, { method, path: apiPath, query: { ...query, ...opts.query }, headers, body });
    return { status: res.status, body: parse(res.text), text: res.text, headers: res.headers, request: `${method} ${path} on ${apiAddr}` };
  };
  return {
    get: (path, opts) => request('GET', path, opts),
    put: (path, body, opts) => request('PUT', path, { ...opts, body }),
    post: (path, body, opts) => request('POST', path, { ...opts, body }),
    patch: (path, body, opts) => request('PATCH', path, { ...opts, body }),
    delete: (path, opts) => request('DELETE', path, opts),
    list: (path, opts) => request('GET', path, { ...opts, query: { ...opts?.query, list: 'true' } }),
    request,
  };
}

/**
 * The body of `reply` when its status is one of `ok` (200 or 204 unless given); throws otherwise.
 * For scripts and set-up steps that need a call to succeed:
 *
 *   const init = await must(vault(addr).put('sys/init', { secret_shares: 1, secret_threshold: 1 }), [200]);
 */
export async function must(reply: Reply | Promise<Reply>, ok: readonly number[] = [200, 204]): Promise<Body> {
  const r = await reply;
  if (!ok.includes(r.status)) throw new Error(`${r.request ?? 'the request'} answered ${r.status}: ${r.text.slice(0, 300)}`);
  return r.body;
}

export interface RawRequest {
  readonly method: string;
  /** Sent verbatim, e.g. '/v1//sys/mounts'. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /** A keep-alive agent to reuse connections across many requests. */
  readonly agent?: http.Agent;
  readonly timeoutMs?: number;
}

export interface RawReply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

export function rawRequest(apiAddr: string, r: RawRequest): Promise<RawReply> {
  const base = new URL(apiAddr);
  return new Promise<RawReply>((resolve, reject) => {
    const headers: Record<string, string | number> = { ...r.headers };
    if (r.body !== undefined) headers['Content-Length'] = Buffer.byteLength(r.body);
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method: r.method,
        path: r.path,
        headers,
        ...(r.agent !== undefined ? { agent: r.agent } : {}),
        timeout: r.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${r.method} ${r.path}: no answer within ${r.timeoutMs ?? 30_000} ms`)));
    req.on('error', reject);
    req.end(r.body);
  });
}

/** The value of an unlabelled sample `name` in Prometheus text (`sys/metrics?format=prometheus`); NaN when absent. */
export function metricSample(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}
