/**
 * The HTTP request as the rest of the node sees it: no express types past this point.
 *
 *   const req = toApiRequest({ method: 'GET', url: '/v1/secret/data/a?version=2', headers, body });
 *   req.operation === 'read'; req.path === 'secret/data/a'; req.query.version === '2'
 */
import { InvalidRequest, UnsupportedOperation } from '../core/errors.js';
import { parseDuration } from '../core/duration.js';
import type { Operation } from '../vault/logical.js';
import type { ForwardRequest } from '../replication/index.js';

export interface ApiRequest {
  readonly id: string;
  readonly method: string;
  readonly operation: Operation;
  /** After `/v1/`, without leading or trailing slash; never contains `..` or empty segments. */
  readonly path: string;
  /** Whether the raw path ended with '/' (lists and mount paths care). */
  readonly trailingSlash: boolean;
  /** From X-Vault-Namespace, normalised to `a/b/` or `''` for the root namespace. */
  readonly namespace: string;
  readonly query: Readonly<Record<string, string>>;
  readonly body: Readonly<Record<string, unknown>>;
  readonly token: string | undefined;
  /** Seconds, from X-Vault-Wrap-TTL. */
  readonly wrapTTL: number | undefined;
  readonly remoteAddress: string;
  /** From Last-Event-ID: where a server-sent event stream's client left off (absent elsewhere). */
  readonly lastEventId?: string;
}

export interface RawRequest {
  readonly id: string;
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly rawBody: Buffer | undefined;
  readonly remoteAddress: string;
}

const METHOD_OPERATION: Readonly<Record<string, Operation>> = {
  GET: 'read',
  HEAD: 'read',
  POST: 'update',
  PUT: 'update',
  DELETE: 'delete',
  LIST: 'list',
  PATCH: 'patch',
};

function header(headers: RawRequest['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** `a/b` or `/a/b/` -> `a/b/`; '' or '/' or 'root' -> ''. Rejects `..` and empty segments. */
export function normaliseNamespace(raw: string | undefined): string {
  if (raw === undefined) return '';
  const trimmed = raw.trim().replace(/^\/+|\/+$/g, '');
  if (trimmed === '' || trimmed === 'root') return '';
  validateSegments(trimmed, 'namespace');
  return `${trimmed}/`;
}

function validateSegments(path: string, what: string): void {
  // The common path: no empty, `.` or `..` segment can be in it (not empty, no `//`, no `.` at
  // all, no slash at either end).
  if (path !== '' && !path.startsWith('/') && !path.endsWith('/') && !path.includes('//') && !path.includes('.')) return;
  for (const seg of path.split('/')) {
    if (seg === '') throw new InvalidRequest(`invalid ${what}: empty path segment`);
    if (seg === '..' || seg === '.') throw new InvalidRequest(`invalid ${what}: relative segment "${seg}"`);
  }
}

/**
 * Deepest nesting a JSON body may have. Bodies are stored and answered with JSON.stringify and
 * walked by recursive code, so a 20 KB value nested 10,000 deep overflowed the stack (a 500); no
 * real request needs more than a few levels.
 */
export const MAX_JSON_DEPTH = 128;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether `raw` nests objects/arrays deeper than `max`, scanning bytes outside strings once. */
export function jsonTooDeep(raw: Buffer, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) depth--;
  }
  return false;
}

function parseBody(raw: Buffer | undefined): Record<string, unknown> {
  if (raw === undefined || raw.length === 0) return {};
  if (jsonTooDeep(raw, MAX_JSON_DEPTH)) throw new InvalidRequest(`failed to parse JSON input: nested deeper than ${MAX_JSON_DEPTH} levels`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new InvalidRequest('failed to parse JSON input: malformed JSON body');
  }
  if (parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidRequest('failed to parse JSON input: body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/**
 * The `list` query flag as Vault reads it (http/logical.go: strconv.ParseBool): hvac's generic
 * `list()` sends `list=True`. Anything Go does not take as a bool is a 400, as in Vault.
 */
function listFlag(value: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new InvalidRequest(`invalid value for the list parameter: "${value.slice(0, 16)}"`);
}

export function toApiRequest(raw: RawRequest): ApiRequest {
  // Not `new URL()`: it would resolve `..` and hide it from the check below.
  const q = raw.url.indexOf('?');
  const rawPath = q === -1 ? raw.url : raw.url.slice(0, q);
  if (!rawPath.startsWith('/v1/')) throw new InvalidRequest('paths must start with /v1/');
  let decoded = rawPath.slice(4);
  if (decoded.includes('%')) {
    try {
      decoded = decodeURIComponent(decoded);
    } catch {
      throw new InvalidRequest('invalid percent-encoding in path');
    }
  }
  const trailingSlash = decoded.endsWith('/');
  const path = trailingSlash ? decoded.replace(/\/+$/, '') : decoded;
  if (path === '') throw new InvalidRequest('missing request path');
  validateSegments(path, 'path');
  const query: Record<string, string> = {};
  if (q !== -1) for (const [k, v] of new URLSearchParams(raw.url.slice(q + 1))) query[k] = v;

  const method = raw.method.toUpperCase();
  let operation = METHOD_OPERATION[method];
  if (operation === undefined) throw new UnsupportedOperation(`unsupported method ${method.slice(0, 16)}`);
  if (method === 'GET' && query.list !== undefined && query.list !== '' && listFlag(query.list)) operation = 'list';

  const authz = header(raw.headers, 'authorization');
  const bearer = authz?.startsWith('Bearer ') ? authz.slice(7).trim() : undefined;
  const token = header(raw.headers, 'x-vault-token') || bearer || undefined;
  const wrap = header(raw.headers, 'x-vault-wrap-ttl');
  const lastEventId = header(raw.headers, 'last-event-id');

  return {
    id: raw.id,
    method,
    operation,
    path,
    trailingSlash,
    namespace: normaliseNamespace(header(raw.headers, 'x-vault-namespace')),
    query,
    body: operation === 'read' || operation === 'list' ? {} : parseBody(raw.rawBody),
    token,
    wrapTTL: wrap === undefined || wrap === '' ? undefined : parseDuration(wrap, 'X-Vault-Wrap-TTL'),
    remoteAddress: raw.remoteAddress,
    ...(lastEventId !== undefined ? { lastEventId } : {}),
  };
}

/** Operations a secondary forwards: writes only (reads are served where they arrive). */
const FORWARDED_OPERATIONS: ReadonlySet<string> = new Set<Operation>(['create', 'update', 'delete', 'patch']);

/**
 * A write forwarded by a performance secondary, as an ApiRequest of this node: checked again as a
 * client's would be (path, namespace, operation); no token (the secondary authorized it) and no
 * wrapping (the secondary wraps with its own tokens).
 */
export function forwardedApiRequest(fwd: ForwardRequest, secondaryId: string): ApiRequest {
  if (!FORWARDED_OPERATIONS.has(fwd.operation)) throw new InvalidRequest(`operation "${fwd.operation.slice(0, 16)}" is not forwarded`);
  const path = fwd.path.replace(/\/+$/, '');
  if (path === '') throw new InvalidRequest('missing request path');
  validateSegments(path, 'path');
  return {
    id: fwd.requestId,
    method: fwd.method,
    operation: fwd.operation as Operation,
    path,
    trailingSlash: fwd.trailingSlash,
    namespace: normaliseNamespace(fwd.namespace),
    query: { ...fwd.query },
    body: { ...fwd.body },
    token: undefined,
    wrapTTL: undefined,
    remoteAddress: `cluster:${secondaryId}`,
  };
}
