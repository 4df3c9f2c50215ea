/**
 * Storage layout of tokens and wrapped responses. Every key is under `local/`: tokens belong to the
 * cluster that issued them (as in Vault) and are never replicated. No key or value holds a raw
 * token, only its SHA-256 hex digest.
 *
 *   const h = hashToken('hvs.abc...');
 *   await store.get(tokenKeys.entry(h));            // the entry JSON
 *   await store.list(tokenKeys.childrenOf(h));       // child hashes, for revoking a tree
 *   await store.commit(entryDeletion(h, revocationFacts(raw)));  // an entry and its index keys
 */
import { hash } from 'node:crypto';
import type { Op } from '../storage/store.js';
import { cubbyholeKey } from './cubbyhole.js';

export const TOKEN_ENTRY_PREFIX = 'local/token/id/';
export const TOKEN_ACCESSOR_PREFIX = 'local/token/accessor/';
export const TOKEN_PARENT_PREFIX = 'local/token/parent/';
export const WRAP_PREFIX = 'local/wrap/';

export const tokenKeys = {
  /** -> the token's entry JSON. */
  entry: (hash: string): string => TOKEN_ENTRY_PREFIX + hash,
  /** -> the token hash (utf-8), so an accessor finds its token without knowing it. */
  accessor: (accessor: string): string => TOKEN_ACCESSOR_PREFIX + accessor,
  /** -> '' ; one key per non-orphan child, listed when the parent's tree is revoked. */
  child: (parentHash: string, childHash: string): string => `${TOKEN_PARENT_PREFIX}${parentHash}/${childHash}`,
  childrenOf: (parentHash: string): string => `${TOKEN_PARENT_PREFIX}${parentHash}/`,
  /** -> the wrapped response of a response-wrapping token (see wrapping.ts). */
  wrap: (hash: string): string => WRAP_PREFIX + hash,
} as const;

/** The only form in which a token is ever stored or used as a key. */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Accessors are ours (24 base62 characters); anything else cannot name a stored key. */
export function isAccessor(s: string): boolean {
  return /^[0-9A-Za-z]{24}$/.test(s);
}

const HASH_RE = /^[0-9a-f]{64}$/;
export function isTokenHash(s: string): boolean {
  return HASH_RE.test(s);
}

/**
 * What revocation needs of a stored entry, read without trusting its shape: an entry that does not
 * decode must still be deletable, with whatever index keys can be found. `namespace` is undefined
 * when unreadable (only a root-namespace caller may then revoke it).
 */
export interface RevocationFacts {
  readonly accessor: string | undefined;
  /** Hash of the parent token; '' for an orphan or when unreadable. */
  readonly parent: string;
  readonly namespace: string | undefined;
}

export function revocationFacts(raw: Buffer): RevocationFacts {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return { accessor: undefined, parent: '', namespace: undefined };
  }
  const o: Record<string, unknown> = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : {};
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  return { accessor: str(o['accessor']), parent: str(o['parent']) ?? '', namespace: str(o['namespace_path']) };
}

/** The entry, its accessor index, its link under its parent, any wrapped response, and its cubbyhole. */
export function entryDeletion(hash: string, entry: Pick<RevocationFacts, 'accessor' | 'parent'>): Op[] {
  const ops: Op[] = [
    { type: 'del', key: tokenKeys.entry(hash) },
    { type: 'del', key: tokenKeys.wrap(hash) },
    { type: 'del', key: cubbyholeKey(hash) },
  ];
  if (entry.accessor !== undefined && isAccessor(entry.accessor)) ops.push({ type: 'del', key: tokenKeys.accessor(entry.accessor) });
  if (isTokenHash(entry.parent)) ops.push({ type: 'del', key: tokenKeys.child(entry.parent, hash) });
  return ops;
}

/** An entry whose namespace cannot be read is reachable from the root namespace only. */
export function factsInScope(facts: RevocationFacts, scope: string): boolean {
  return facts.namespace === undefined ? scope === '' : facts.namespace.startsWith(scope);
}
