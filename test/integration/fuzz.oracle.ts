/**
 * The fuzz suite's oracle (fuzz.test.ts): what an answer to a generated request must look like,
 * which accepted requests may change state, and how a failing request is printed for replay. Pure:
 * it judges answers, it never sends.
 *
 *   const v = violation(r, answer);     // undefined, or what is wrong ("status 500", ...)
 *   if (mayChange(r, answer)) ...       // wait for the secondaries, then take a new baseline
 *   throw new Error(`${v}: ${describeRequest(r)}`);
 */
import type { FuzzRequest } from './fuzz.arbitraries.js';

/**
 * The only 503s allowed, each for a documented reason: sealed and not initialised (Vault's own;
 * not expected here, every node is initialised and unsealed), and a performance secondary refusing
 * a write of replicated data that it does not forward (REPLICATION.md 8: logins and requests
 * without a client token). Anything else is a defect, including a failed forward: the primary is
 * up and connected throughout. A DR secondary refuses with 400, never 503; there are no standbys.
 */
export const ALLOWED_503: readonly RegExp[] = [
  /^\{"errors":\["Vault is sealed"\]\}$/,
  /^\{"errors":\["Vault is not initialized"\]\}$/,
  /^\{"errors":\["this cluster is a performance secondary: only its primary[^"]* writes replicated data, and this request is not one it forwards/,
];

export interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

/** The parser's answer to the bytes after a request: only ever after the request's own answer. */
export const MALFORMED = { status: 400, contentType: 'application/json', text: '{"errors":["malformed HTTP request: bad request"]}' };

/** The request as JSON, with a binary body as base64 so that it can be replayed. */
export function describeRequest(r: FuzzRequest): string {
  return JSON.stringify({ ...r, body: Buffer.isBuffer(r.body) ? `base64:${r.body.toString('base64')}` : r.body }).replace(/(.)\1{40,}/g, (m, c: string) => `${c}<x${m.length}>`);
}

/**
 * sys/health answers its documented non-2xx codes (429 standby, 472 DR secondary, 473 performance
 * standby) with the health status itself, as Vault does: that is not an error reply.
 */
export function healthCode(r: FuzzRequest, a: Answer): boolean {
  if (![429, 472, 473].includes(a.status) || !/^\/v1\/(.*\/)?sys\/health\/?(\?|$)/.test(r.path)) return false;
  try {
    return typeof (JSON.parse(a.text) as { initialized?: unknown }).initialized === 'boolean';
  } catch {
    return false;
  }
}

/** What is wrong with an answer, or undefined. */
export function violation(r: FuzzRequest, a: Answer): string | undefined {
  if (a.status >= 500 && !(a.status === 503 && ALLOWED_503.some((m) => m.test(a.text)))) return `status ${a.status}`;
  if (r.mustRefuse && a.status < 400) return `accepted (${a.status}) a request generated to be refused`;
  if (a.status >= 400 && r.method !== 'HEAD' && !healthCode(r, a)) {
    if (!a.contentType.startsWith('application/json')) return `error with content type "${a.contentType}"`;
    let body: unknown;
    try {
      body = JSON.parse(a.text);
    } catch {
      return 'error body is not JSON';
    }
    const errors = (body as { errors?: unknown }).errors;
    const keys = body !== null && typeof body === 'object' ? Object.keys(body) : [];
    // Vault's RespondWithStatusCode: a 404 that answers its envelope (a deleted KV version, an unknown approle accessor).
    if (a.status === 404 && keys.includes('request_id') && keys.includes('data') && errors === undefined) return undefined;
    // Vault answers a read of nothing with 404 {"errors": []}; any other error names itself.
    if (keys.length !== 1 || !Array.isArray(errors) || (errors.length === 0 && a.status !== 404) || !errors.every((e) => typeof e === 'string')) return 'error body is not {"errors": [string, ...]}';
  }
  return undefined;
}

/** An accepted request that may legitimately change state: anything but a plain read (a wrapped read creates a token). */
export function mayChange(r: FuzzRequest, a: Answer): boolean {
  if (a.status >= 400) return false;
  return !['GET', 'LIST', 'HEAD'].includes(r.method) || r.headers['X-Vault-Wrap-TTL'] !== undefined;
}

/** Maps `items` through `f` with at most `limit` calls in flight; results in input order. */
export async function pool<T, R>(items: readonly T[], limit: number, f: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!);
    }
  }));
  return out;
}
