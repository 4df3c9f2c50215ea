/**
 * Secondary side of activation: turns an activation token into its bundle. A JWT is redeemed once
 * at the primary's API (`sys/wrapping/unwrap`), trusting `ca_file`/`ca_path` or the system roots;
 * a sealed token is opened with the key pair from `secondary/generate-public-key`, without any
 * call to the primary.
 *
 *   const bundle = await redeem({ token, primaryApiAddr: '', caFile: '', caPath: '', boxKey });
 */
import { readdir, readFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { InvalidRequest, Unavailable } from '../core/errors.js';
import { isJwt, openSealed, peekJwt, type BoxKeyPair } from './activation-token.js';
import { parseBundle, type Bundle } from './bundle.js';
import { retrying } from './retrying.js';

export interface RedeemRequest {
  readonly token: string;
  readonly primaryApiAddr: string;
  readonly caFile: string;
  readonly caPath: string;
  readonly boxKey: BoxKeyPair | undefined;
  readonly timeoutMs?: number;
  /**
   * How long a 503 from the primary, or a refused connection, is retried (REDEEM_RETRY_MS unless
   * given). Both mean nothing was done there: a primary cluster between two active nodes (an HA
   * failover or a lease renewal missed under load), a sealed node, a node restarting.
   */
  readonly retryForMs?: number;
}

/** How long redeem retries a primary that answers 503 or refuses the connection: an HA failover's few seconds, with room. */
export const REDEEM_RETRY_MS = 15_000;

async function trustedCas(caFile: string, caPath: string): Promise<string[] | undefined> {
  const out: string[] = [];
  try {
    if (caFile !== '') out.push(await readFile(caFile, 'utf8'));
    if (caPath !== '') {
      for (const name of (await readdir(caPath)).sort()) {
        if (/\.(pem|crt)$/i.test(name)) out.push(await readFile(join(caPath, name), 'utf8'));
      }
    }
  } catch (e) {
    throw new InvalidRequest(`cannot read ca_file/ca_path: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  return out.length > 0 ? out : undefined;
}

function post(url: URL, body: string, ca: string[] | undefined, timeoutMs: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const opts = { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, timeout: timeoutMs, ...(ca ? { ca } : {}) };
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

export async function redeem(r: RedeemRequest): Promise<Bundle> {
  const token = r.token.trim();
  if (!isJwt(token)) {
    if (!r.boxKey) throw new InvalidRequest('the token is not a wrapping JWT, and this cluster has no key from secondary/generate-public-key to open a sealed token');
    let bytes: Uint8Array;
    try {
      bytes = openSealed(token, r.boxKey);
    } catch {
      throw new InvalidRequest('the sealed activation token cannot be opened with this cluster\'s public key');
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(bytes).toString('utf8'));
    } catch {
      throw new InvalidRequest('the sealed activation token does not hold a bundle');
    }
    return parseBundle(parsed);
  }
  const claims = peekJwt(token);
  const addr = r.primaryApiAddr !== '' ? r.primaryApiAddr : claims.addr ?? '';
  let url: URL;
  try {
    url = new URL('/v1/sys/wrapping/unwrap', addr);
  } catch {
    throw new InvalidRequest(`the primary API address "${addr.slice(0, 200)}" is not a URL; give primary_api_addr`);
  }
  const ca = await trustedCas(r.caFile, r.caPath);
  let answered503 = false;
  const retryable = (e: unknown): boolean => {
    if (!(e instanceof PrimaryUnavailable) || !e.retryable) return false;
    answered503 ||= e.status === 503;
    return true;
  };
  try {
    return parseBundle(await retrying(r.retryForMs ?? REDEEM_RETRY_MS, () => unwrapOnce(url, token, ca, r.timeoutMs ?? 10_000), retryable));
  } catch (e) {
    // A 503 can also mean the outcome was unknown (a relay lost its answer): the token may be spent.
    if (answered503 && e instanceof InvalidRequest) {
      throw new InvalidRequest(`${e.message} (an earlier attempt was answered 503: if the primary applied it after all, the token is spent; ask the primary for a new one)`);
    }
    throw e;
  }
}

/** The primary could not redeem the token; `retryable` when that did nothing there (a 503, a refused connection). */
class PrimaryUnavailable extends Unavailable {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * One `sys/wrapping/unwrap` at the primary: the bundle's data. Only a 4xx is the primary refusing
 * the token (InvalidRequest); any other failure is the primary being unavailable
 * (PrimaryUnavailable), never a refusal.
 */
async function unwrapOnce(url: URL, token: string, ca: string[] | undefined, timeoutMs: number): Promise<unknown> {
  let res: { status: number; text: string };
  try {
    res = await post(url, JSON.stringify({ token }), ca, timeoutMs);
  } catch (e) {
    const refused = (e as NodeJS.ErrnoException).code === 'ECONNREFUSED';
    throw new PrimaryUnavailable(`cannot reach the primary at ${url.origin} to redeem the activation token: ${(e as Error).message}; nothing was changed here`, refused);
  }
  let body: { data?: unknown; errors?: string[] } = {};
  try {
    body = JSON.parse(res.text) as typeof body;
  } catch {
    // reported below
  }
  if (res.status === 200) return body.data;
  const why = Array.isArray(body.errors) && body.errors.length > 0 ? body.errors.join('; ').slice(0, 500) : `HTTP ${res.status}`;
  if (res.status >= 400 && res.status < 500) throw new InvalidRequest(`the primary refused the activation token: ${why}`);
  throw new PrimaryUnavailable(`the primary at ${url.origin} could not redeem the activation token (HTTP ${res.status}: ${why}); nothing was changed here: retry when it answers`, res.status === 503, res.status);
}
