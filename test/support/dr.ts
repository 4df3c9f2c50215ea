/**
 * DR helpers for in-process nodes (test/support/in-process.ts): status, waiting for sync,
 * activation tokens and DR operation tokens, as an operator would obtain them over HTTP.
 *
 *   await inSync(primary, secondary, { streaming: true });
 *   const t = await drOperationToken(secondary, primary.unsealKeys.slice(0, 2));
 */
import { decodeOtp } from '../../src/replication/operation-token.js';
import { eventually } from '../harness/eventually.js';
import type { TestNode } from './in-process.js';

export const DR = 'sys/replication/dr';
export const OP = `${DR}/secondary/generate-operation-token`;

export async function drStatus(n: TestNode): Promise<any> {
  const r = await n.call('GET', `${DR}/status`, undefined, { token: null });
  expect(r.status).toBe(200);
  return r.body.data;
}

/** Waits until `b` holds exactly `a`'s history (same WAL position and Merkle root); returns b's status. */
export async function inSync(a: TestNode, b: TestNode, opts: { streaming?: boolean } = {}): Promise<any> {
  return eventually(async () => {
    const [sa, sb] = [await drStatus(a), await drStatus(b)];
    if (opts.streaming) expect(sb.state).toBe('stream-wals');
    expect(sb.last_wal).toBe(sa.last_wal);
    expect(sb.merkle_root).toBe(sa.merkle_root);
    return sb;
  }, { timeoutMs: 15_000, intervalMs: 50 });
}

/** A wrapped activation token (the JWT) for `id`, issued by primary `p`. */
export async function secondaryToken(p: TestNode, id: string, ttl?: string): Promise<string> {
  const r = await p.call('POST', `${DR}/primary/secondary-token`, { id, ...(ttl ? { ttl } : {}) });
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

/** Enables DR on `p`, activates `s` as its secondary `id`, and waits until they are in sync. */
export async function activatePair(p: TestNode, s: TestNode, id: string): Promise<void> {
  expect((await p.call('POST', `${DR}/primary/enable`, {})).status).toBe(204);
  expect((await s.call('POST', `${DR}/secondary/enable`, { token: await secondaryToken(p, id) })).status).toBe(204);
  await inSync(p, s);
}
