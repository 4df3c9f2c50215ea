/**
 * The token store's view of its stored records: reads of entries (whole, live, or only what
 * revocation needs), the accessor index, and the locked walk of a token's tree of children.
 *
 *   const records = new TokenRecords(store, { now, locks });
 *   const entry = await records.readLive(hash);          // undefined if unknown or expired
 *   const tree = await records.lockTree(hash, false, scope);
 *   try { await store.commit(tree.ops); } finally { tree.release(); }
 *
 * Reading is all it does: it never commits. `lockTree` takes the same per-token locks TokenStore
 * takes (one KeyedMutex shared by both), always from ancestor to descendant, so the store's
 * deadlock-freedom argument (tokens.ts) holds across both files. Key layout: token-keys.ts.
 */
import type { KeyedMutex } from '../core/keyed-mutex.js';
import { getDecoded, type Op, type Store } from '../storage/store.js';
import { decodeEntry, isExpired, type TokenEntryView } from './token-entry.js';
import { entryDeletion, factsInScope, isAccessor, isTokenHash, revocationFacts, tokenKeys, type RevocationFacts } from './token-keys.js';

/** A locked tree of tokens: what revoking it deletes, and how to let go of its locks. */
export interface LockedTree {
  /** The entry at the top of the tree as stored (live or expired), if any and well-formed. */
  readonly root: TokenEntryView | undefined;
  /** Whether anything was stored at the top of the tree, well-formed or not. */
  readonly found: boolean;
  /** Deletes every entry, index key and wrapped response of the tree. */
  readonly ops: readonly Op[];
  release(): void;
}

export class TokenRecords {
  readonly #store: Store;
  readonly #now: () => number;
  readonly #locks: KeyedMutex;

  constructor(store: Store, o: { readonly now: () => number; readonly locks: KeyedMutex }) {
    this.#store = store;
    this.#now = o.now;
    this.#locks = o.locks;
  }

  /** The stored entry of `hash`, live or expired; throws if it is malformed. */
  async read(hash: string): Promise<TokenEntryView | undefined> {
    // Every request authenticates through here: decrypted and decoded once per stored version.
    const entry = await getDecoded(this.#store, tokenKeys.entry(hash), decodeEntry);
    return entry === undefined ? undefined : { ...entry, hash };
  }

  /** What revocation needs of the stored entry, whatever its shape; undefined if nothing is stored. */
  async readFacts(hash: string): Promise<RevocationFacts | undefined> {
    const raw = await this.#store.get(tokenKeys.entry(hash));
    return raw === undefined ? undefined : revocationFacts(raw);
  }

  async readLive(hash: string): Promise<TokenEntryView | undefined> {
    const entry = await this.read(hash);
    return entry === undefined || isExpired(entry, this.#now()) ? undefined : entry;
  }

  async hashOfAccessor(accessor: string): Promise<string | undefined> {
    if (!isAccessor(accessor)) return undefined;
    const raw = await this.#store.get(tokenKeys.accessor(accessor));
    return raw === undefined ? undefined : raw.toString('utf8');
  }

  /**
   * Locks `hash` (unless the caller already holds it) and every descendant, top-down, and returns
   * the ops deleting them all; no ops when the top entry is not of `scope` or below. Entries are
   * read for their index keys only (revocationFacts), so no stored record can make this throw.
   * The caller commits, then releases.
   */
  async lockTree(hash: string, rootHeld: boolean, scope = ''): Promise<LockedTree> {
    const releases: Array<() => void> = [];
    const ops = new Map<string, Op>();
    const seen = new Set<string>();
    let root: TokenEntryView | undefined;
    let found = false;
    const visit = async (h: string, isRoot: boolean): Promise<void> => {
      if (seen.has(h)) return; // only a corrupt store could hold a cycle
      seen.add(h);
      if (!(isRoot && rootHeld)) releases.push(await this.#locks.acquire(h));
      const facts = await this.readFacts(h);
      if (isRoot) {
        if (facts === undefined ? scope !== '' : !factsInScope(facts, scope)) return;
        found = facts !== undefined;
        root = await this.read(h).catch(() => undefined);
      }
      if (facts !== undefined) for (const op of entryDeletion(h, facts)) ops.set(op.key, op);
      for (const child of await this.#store.list(tokenKeys.childrenOf(h))) {
        const link = tokenKeys.child(h, child);
        ops.set(link, { type: 'del', key: link });
        if (isTokenHash(child)) await visit(child, false);
      }
    };
    const release = (): void => {
      for (const r of releases.splice(0).reverse()) r();
    };
    try {
      await visit(hash, true);
    } catch (e) {
      release();
      throw e;
    }
    return { root, found, ops: [...ops.values()], release };
  }
}
