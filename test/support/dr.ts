/**
 * Replication helpers for in-process nodes (test/support/in-process.ts), for either kind (default
 * DR): the same helpers the process tests use (test/harness/dr.ts), reached through each node's
 * API address and root token, so the suite has one set.
 *
 *   await inSync(primary, secondary, { streaming: true });
 *   await inSync(primary, perfSecondary, { kind: 'performance' });
 *   const t = await drOperationToken(secondary, primary.unsealKeys.slice(0, 2));
 *
 * Activation is `joinSecondary` (test/harness/cluster.ts), the one path `startCluster` takes too.
 */
import * as repl from '../harness/dr.js';
import type { TestNode } from './in-process.js';

export { DR, PERF, type Kind } from '../harness/dr.js';
export const OP = `${repl.DR}/secondary/generate-operation-token`;
export const base = repl.replicationBase;

export function replStatus(n: TestNode, kind: repl.Kind): Promise<any> {
  return repl.replStatus(n.apiAddr, kind);
}

export function drStatus(n: TestNode): Promise<any> {
  return repl.drStatus(n.apiAddr);
}

/**
 * Waits until `b` holds `a`'s history; returns b's status. DR: the same WAL position and Merkle
 * root (an exact standby). Performance: `b` applied `a`'s last index (its own WAL and local class
 * differ by design).
 */
export async function inSync(a: TestNode, b: TestNode, opts: { streaming?: boolean; kind?: repl.Kind } = {}): Promise<any> {
  return (await repl.waitInSync(a.apiAddr, b.apiAddr, 15_000, opts.kind ?? 'dr', opts.streaming === true)).secondary;
}

/** A wrapped activation token (the JWT) for `id`, issued by primary `p`. */
export function secondaryToken(p: TestNode, id: string, ttl?: string, kind: repl.Kind = 'dr'): Promise<string> {
  return repl.secondaryToken(p.apiAddr, p.rootToken, id, ttl, kind);
}

/** Runs a whole generate-operation-token attempt on `n` with `keys`; returns the decoded token. */
export function drOperationToken(n: TestNode, keys: string[]): Promise<string> {
  return repl.drOperationToken(n.apiAddr, keys);
}
