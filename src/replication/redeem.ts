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

export interface RedeemRequest {
  readonly token: string;
  readonly primaryApiAddr: string;
  readonly caFile: string;
  readonly caPath: string;
  readonly boxKey: BoxKeyPair | undefined;
  readonly timeoutMs?: number;
}

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
  let res: { status: number; text: string };
  try {
    res = await post(url, JSON.stringify({ token }), ca, r.timeoutMs ?? 10_000);
  } catch (e) {
    throw new Unavailable(`cannot reach the primary at ${url.origin} to redeem the activation token: ${(e as Error).message}`);
  }
  let body: { data?: unknown; errors?: string[] } = {};
  try {
    body = JSON.parse(res.text) as typeof body;
  } catch {
    // reported below
  }
  if (res.status !== 200) {
    const why = Array.isArray(body.errors) && body.errors.length > 0 ? body.errors.join('; ') : `HTTP ${res.status}`;
    throw new InvalidRequest(`the primary refused the activation token: ${why}`);
  }
  return parseBundle(body.data);
}
