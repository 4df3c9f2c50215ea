/**
 * Replication helpers for in-process nodes (test/support/in-process.ts), for either kind (default
 * DR): status, waiting for sync, activation tokens and DR operation tokens, as an operator would
 * obtain them over HTTP.
 *
 *   await inSync(primary, secondary, { streaming: true });
 *   await inSync(primary, perfSecondary, { kind: 'performance' });
 *   const t = await drOperationToken(secondary, primary.unsealKeys.slice(0, 2));
 */
import { decodeOtp } from '../../src/replication/operation-token.js';
import { eventually } from '../harness/eventually.js';
import type { TestNode } from './in-process.js';

export type Kind = 'dr' | 'performance';
export const DR = 'sys/replication/dr';
export const PERF = 'sys/replication/performance';
export const OP = `${DR}/secondary/generate-operation-token`;
export const base = (kind: Kind): string => `sys/replication/${kind}`;

export async function replStatus(n: TestNode, kind: Kind): Promise<any> {
  const r = await n.call('GET', `${base(kind)}/status`, undefined, { token: null });
  expect(r.status).toBe(200);
  return r.body.data;
}

export async function drStatus(n: TestNode): Promise<any> {
  return replStatus(n, 'dr');
}

/**
 * Waits until `b` holds `a`'s history; returns b's status. DR: the same WAL position and Merkle
 * root (an exact standby). Performance: `b` applied `a`'s last index (its own WAL and local class
 * differ by design).
 */
export async function inSync(a: TestNode, b: TestNode, opts: { streaming?: boolean; kind?: Kind } = {}): Promise<any> {
  const kind = opts.kind ?? 'dr';
  return eventually(async () => {
    const [sa, sb] = [await replStatus(a, kind), await replStatus(b, kind)];
    if (opts.streaming || kind === 'performance') expect(sb.state).toBe('stream-wals');
    if (kind === 'dr') {
      expect(sb.last_wal).toBe(sa.last_wal);
      expect(sb.merkle_root).toBe(sa.merkle_root);
    } else {
      expect(sb.last_remote_wal).toBe(sa.last_wal);
    }
    return sb;
  }, { timeoutMs: 15_000, intervalMs: 50 });
}

/** A wrapped activation token (the JWT) for `id`, issued by primary `p`. */
export async function secondaryToken(p: TestNode, id: string, ttl?: string, kind: Kind = 'dr'): Promise<string> {
  const r = await p.call('POST', `${base(kind)}/primary/secondary-token`, { id, ...(ttl ? { ttl } : {}) });
  expect(r.status).toBe(200);
  return r.body.wrap_info.token;
}

/** Runs a whole generate-operation-token attempt on `n` with `keys`; returns the decoded token. */
export async function drOperationToken(n: TestNode, keys: string[]): Promise<string> {
  const start = await n.call('POST', `${OP}/attempt`, {}, { token: null });
  expect(start.status).toBe(200);
  let last: any;
  for (const key of keys) last = (await n.call('POST', `${OP}/update`, { key, nonce: start.body.nonce }, { token: null })).body;
  expect(last.complete).toBe(true);
  return decodeOtp(last.encoded_token, start.body.otp);
}

/** Enables `kind` (default DR) on `p`, activates `s` as its secondary `id`, and waits until they are in sync. */
export async function activatePair(p: TestNode, s: TestNode, id: string, kind: Kind = 'dr'): Promise<void> {
  expect((await p.call('POST', `${base(kind)}/primary/enable`, {})).status).toBe(204);
  const r = await s.call('POST', `${base(kind)}/secondary/enable`, { token: await secondaryToken(p, id, undefined, kind) });
  expect({ status: r.status, body: r.body }).toEqual({ status: 204, body: undefined });
  await inSync(p, s, { kind });
}
