/**
 * One HTTP exchange with a node: URL building, headers, JSON in and out, and the mapping of
 * non-2xx answers to `ApiError`. The typed helpers are thin layers over `send`; `send` is a thin
 * layer over `exchange`, which answers every status as it came (the tests' client uses it to
 * assert on error paths, raw bodies and the LIST verb).
 *
 *   const res = await send(opts, { method: 'GET', path: 'sys/health', accept: [429, 503] });
 *   const wire = await exchange(opts, { method: 'LIST', path: 'secret/metadata' }); // { status, headers, text }
 */
import type { ErrorBody, Query } from './types.js';
import { ApiError, ConnectionFailed, MalformedResponse } from './errors.js';
import { tlsFetch } from './transport.js';
import type { TlsOptions } from './transport.js';

export const Method = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', delete: 'DELETE' } as const;
export type Method = (typeof Method)[keyof typeof Method];

export interface ConnectionOptions {
  /** Base address, e.g. "http://127.0.0.1:8200"; a trailing slash is ignored. */
  readonly addr: string;
  readonly token?: string | undefined;
  readonly namespace?: string | undefined;
  /** Sent as X-Vault-Wrap-TTL: the node answers with a wrapping token instead of the data. */
  readonly wrapTtl?: string | undefined;
  /** CA and verification for https addresses (used when no fetchImpl is given). */
  readonly tls?: TlsOptions | undefined;
  /** Defaults to the global fetch for http and to `tlsFetch(tls)` for https addresses. */
  readonly fetchImpl?: typeof fetch | undefined;
}

export interface ApiRequest {
  readonly method: Method;
  /** With or without a leading "/" or "/v1/". */
  readonly path: string;
  readonly query?: Query | undefined;
  /** Serialised as JSON. Omitted on GET and DELETE when undefined. */
  readonly body?: unknown;
  /** Defaults to application/json; KV v2 patch needs application/merge-patch+json. */
  readonly contentType?: string | undefined;
  /** Non-2xx statuses that are answers rather than errors (sys/health uses several). */
  readonly accept?: readonly number[];
}

export interface ApiResponse {
  readonly status: number;
  /** Parsed JSON, or null for an empty body (204). */
  readonly body: unknown;
}

/** "/v1/" + the path, with each segment percent-encoded; the query drops undefined values. */
export function buildUrl(addr: string, path: string, query?: Query): string {
  // An absolute API path ('/v1/sys/mounts') is accepted as such; a relative one is a Vault path
  // as it is, so a mount named v1 stays reachable ('v1/data' is that mount's, not sys's).
  const trimmed = path.replace(/^\/v1\//, '').replace(/^\/+/, '');
  const encoded = trimmed
    .split('/')
    .map((segment) => encodeURIComponent(segment))
    .join('/');
  const url = new URL(`${addr.replace(/\/+$/, '')}/v1/${encoded}`);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return url.toString();
}

/** A request as it goes on the wire: any verb (LIST too), the body's exact bytes, extra headers. */
export interface WireRequest {
  readonly method: string;
  /** As for `ApiRequest`: segments are percent-encoded by `buildUrl`. */
  readonly path: string;
  readonly query?: Query | undefined;
  /** Added after the connection's token, namespace and wrap headers, and wins over them. */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** Sent as given; no body when undefined. */
  readonly body?: string | Uint8Array | undefined;
}

/** Whatever the node answered, any status: nothing is parsed or mapped. */
export interface WireResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly url: string;
  readonly text: string;
}

/**
 * One exchange, answered whatever its status: the layer under `send`. Throws only
 * `ConnectionFailed`, when no answer arrived.
 */
export async function exchange(conn: ConnectionOptions, req: WireRequest): Promise<WireResponse> {
  const url = buildUrl(conn.addr, req.path, req.query);
  const headers: Record<string, string> = {};
  if (conn.token) headers['X-Vault-Token'] = conn.token;
  if (conn.namespace) headers['X-Vault-Namespace'] = conn.namespace;
  if (conn.wrapTtl) headers['X-Vault-Wrap-TTL'] = conn.wrapTtl;
  Object.assign(headers, req.headers);
  const doFetch = conn.fetchImpl ?? (url.startsWith('https:') ? tlsFetch(conn.tls) : fetch);
  try {
    const res = await doFetch(url, { method: req.method, headers, body: req.body });
    return { status: res.status, headers: res.headers, url, text: await res.text() };
  } catch (e) {
    throw new ConnectionFailed(url, e);
  }
}

export async function send(conn: ConnectionOptions, req: ApiRequest): Promise<ApiResponse> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const hasBody = req.body !== undefined || req.method === Method.post || req.method === Method.put || req.method === Method.patch;
  if (hasBody) headers['Content-Type'] = req.contentType ?? 'application/json';
  const res = await exchange(conn, {
    method: req.method,
    path: req.path,
    query: req.query,
    headers,
    body: hasBody ? JSON.stringify(req.body ?? {}) : undefined,
  });
  const { url, text } = res;

  const ok = (res.status >= 200 && res.status < 300) || (req.accept ?? []).includes(res.status);
  if (!ok) {
    throw new ApiError({ status: res.status, method: req.method, url, errors: errorsOf(text) });
  }
  if (text.trim() === '') return { status: res.status, body: null };
  try {
    return { status: res.status, body: JSON.parse(text) as unknown };
  } catch (e) {
    throw new MalformedResponse(url, res.status, e instanceof Error ? e.message : String(e));
  }
}

/**
 * The `errors` array of an error body; a non-JSON body becomes its own single message. Vault's
 * envelope with an error status (its RespondWithStatusCode: a deleted KV version's 404) carries
 * no `errors`: its message is `data.error` if it has one, else none, as for a plain 404.
 */
function errorsOf(text: string): string[] {
  if (text.trim() === '') return [];
  try {
    const parsed = JSON.parse(text) as (Partial<ErrorBody> & { request_id?: unknown; data?: { error?: unknown } | null }) | null;
    const errors = parsed?.errors;
    if (Array.isArray(errors)) return errors.map(String);
    if (parsed !== null && typeof parsed === 'object' && 'request_id' in parsed && 'data' in parsed) {
      return typeof parsed.data?.error === 'string' ? [parsed.data.error] : [];
    }
    return [text.trim()];
  } catch {
    return [text.trim()];
  }
}
