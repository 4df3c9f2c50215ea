/**
 * Service tokens over the Store: create, look up, spend a use, revoke (with the tree of children),
 * tidy. Only SHA-256 digests of tokens are stored (layout in token-keys.ts).
 *
 *   const tokens = new TokenStore(store, { now: () => clock.ms, random: (n) => randomBytes(n) });
 *   const { token } = await tokens.createRoot();
 *   const caller = await tokens.validateForUse(token);            // PermissionDenied if not live
 *   const auth = await tokens.create(caller, { policies: ['app'], ttl: '1h' }, '');
 *   await tokens.revoke(token);                                    // also revokes auth.client_token
 *   await tokens.revoke(other, 'nsx/');                             // no-op unless `other` is of nsx/ or below
 *
 * Scope: lookups and revocations take the namespace the request acts in (`scope`, '' = root); a
 * token of another namespace than `scope` or one below it is treated exactly as an unknown token,
 * so a child namespace can neither act on its parents' tokens nor learn that they exist.
 *
 * Batch tokens (`hvb.`, `type: 'batch'` on create) are minted, verified and revoked by
 * `this.batch` (batch-tokens.ts): lookup, validateForUse, revoke and revokeOrphan route a batch
 * token there, so callers treat both types alike; nothing of a batch token is stored here.
 *
 * TTLs of created tokens are bounded by the system limits (`limits`, token-create.ts). Revocation
 * never depends on a stored entry being well-formed: it deletes what it can find of it.
 *
 * Concurrency: every read-modify-write of an entry runs under that token's in-memory lock. Locks
 * are always taken from ancestor to descendant (a tree is walked top-down, token-records.ts), which
 * rules out deadlock; creating a child holds the parent's lock, so a tree being revoked cannot gain
 * children.
 */
import { randomBytes } from 'node:crypto';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import type { TesseraError } from '../core/errors.js';
import type { Op, Store } from '../storage/store.js';
import { DEFAULT_TTL_LIMITS, childDraft, entryFromDraft } from './token-create.js';
import type { CreateTokenOptions, CreateTokenRequest, TokenDraft, TtlLimits } from './token-create.js';
import { authBlock, encodeEntry, isExpired, lookupData, randomBase62, sanitizePolicies } from './token-entry.js';
import type { AuthBlock, TokenEntry, TokenEntryView } from './token-entry.js';
import { TOKEN_ENTRY_PREFIX, entryDeletion, factsInScope, hashToken, isTokenHash, tokenKeys } from './token-keys.js';
import { KeyedMutex } from '../core/keyed-mutex.js';
import { BatchTokens, isBatchToken } from './batch-tokens.js';
import { TokenRecords } from './token-records.js';
import { renewal } from './token-renew.js';
import { TokenRoles } from './token-roles.js';

export { hashToken } from './token-keys.js';
export { DEFAULT_POLICY, ROOT_POLICY, WRAPPING_POLICY, lookupData, sanitizePolicies } from './token-entry.js';
export type { AuthBlock, TokenEntry, TokenEntryView } from './token-entry.js';
export type { CreateTokenOptions, CreateTokenRequest, TtlLimits } from './token-create.js';
export { DEFAULT_TTL_LIMITS } from './token-create.js';

export interface TokenStoreOptions {
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
  /** Cryptographically random bytes. */
  readonly random?: (size: number) => Buffer;
  /** System TTL bounds for created tokens; Vault's 768h/768h unless given. */
  readonly limits?: TtlLimits;
}

/** A created token's auth block and the warnings for the response (TTLs that were capped). */
export interface Created {
  readonly auth: AuthBlock;
  readonly warnings: readonly string[];
}

/** An orphan token minted by a trusted service (wrapping, DR operation tokens), not by a request. */
export interface IssueSpec {
  readonly id?: string;
  readonly policies: readonly string[];
  /** Seconds; 0 or absent = no expiry. */
  readonly ttl?: number;
  /** 0 or absent = unlimited. */
  readonly num_uses?: number;
  readonly namespace_path?: string;
  readonly display_name?: string;
  readonly meta?: Readonly<Record<string, string>> | null;
  readonly path: string;
  readonly renewable?: boolean;
}

export interface Issued {
  readonly token: string;
  readonly entry: TokenEntryView;
}

/** Ops committed atomically with a new token; sees the token so it can derive keys from it. */
export type ExtraOps = (minted: { readonly token: string; readonly hash: string }) => readonly Op[];

/** What `redeem`'s callback hands back: its result, and ops to commit with the token's deletion. */
export interface Redemption<T> {
  readonly value: T;
  readonly ops?: readonly Op[];
}

const EMPTY = Buffer.alloc(0);
const TOKEN_LENGTH = 24;

export class TokenStore {
  readonly #store: Store;
  readonly #now: () => number;
  readonly #random: (size: number) => Buffer;
  readonly #limits: TtlLimits;
  readonly #locks = new KeyedMutex();
  /** Reads of stored entries and the locked tree walk, under the same locks (token-records.ts). */
  readonly #records: TokenRecords;
  /** Hashes being minted right now: two creates with the same chosen id must not both pass. */
  readonly #minting = new Set<string>();
  /** `hvb.` tokens: sealed, never stored; lookups and revocations of one are routed there. */
  readonly batch: BatchTokens;
  /** Token roles (`auth/token/roles/:name`), per namespace. */
  readonly roles: TokenRoles;

  constructor(store: Store, opts: TokenStoreOptions = {}) {
    this.#store = store;
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? randomBytes;
    this.#limits = opts.limits ?? DEFAULT_TTL_LIMITS;
    this.#records = new TokenRecords(store, { now: this.#now, locks: this.#locks });
    this.roles = new TokenRoles(store);
    this.batch = new BatchTokens(store, {
      now: this.#now,
      random: this.#random,
      parentLive: async (hash) => isTokenHash(hash) && (await this.#records.readLive(hash)) !== undefined,
      // No batch token outlives the longest TTL, so no key needs to outlive it either.
      retainMs: this.#limits.maxTtl * 1000,
    });
  }

  /** A root token: policies ['root'], no TTL, orphan. `id` is `-dev-root-token-id`'s choice. */
  async createRoot(opts: { id?: string } = {}): Promise<{ token: string; accessor: string }> {
    const issued = await this.#mint({
      type: 'service',
      id: opts.id === '' ? undefined : opts.id,
      policies: ['root'],
      ttl: 0,
      explicit_max_ttl: 0,
      period: 0,
      num_uses: 0,
      parent: '',
      namespace_path: '',
      display_name: 'root',
      meta: null,
      orphan: true,
      path: 'auth/token/root',
      renewable: false,
      expireCap: null,
      warnings: [],
    });
    return { token: issued.token, accessor: issued.entry.accessor };
  }

  /**
   * `auth/token/create` on behalf of `parent` (as validated for this request) in namespace `ns`.
   * The parent is re-read under its lock: a parent revoked meanwhile gets PermissionDenied. Rule
   * violations (policy subset, orphan or id without privilege, ...) are InvalidRequest, as in Vault.
   */
  async create(
    parent: TokenEntryView,
    req: CreateTokenRequest,
    ns: string,
    opts: CreateTokenOptions = {},
  ): Promise<AuthBlock> {
    return (await this.createWithWarnings(parent, req, ns, opts)).auth;
  }

  /** `create`, with the warnings Vault puts in the response when it capped a TTL. */
  async createWithWarnings(
    parent: TokenEntryView,
    req: CreateTokenRequest,
    ns: string,
    opts: CreateTokenOptions = {},
  ): Promise<Created> {
    // A batch parent has no stored entry to re-read; childDraft refuses it with Vault's words.
    if (parent.type === 'batch') childDraft(parent, req, ns, opts, this.#limits);
    const build = async (): Promise<Created> => {
      const live = await this.#records.readLive(parent.hash);
      if (live === undefined) throw new PermissionDenied();
      const draft = childDraft(live, req, ns, opts, this.#limits);
      const issued = draft.type === 'batch' ? await this.batch.mint(draft) : await this.#mint(draft);
      return { auth: authBlock(issued.token, issued.entry), warnings: draft.warnings };
    };
    return req.no_parent === true ? build() : this.#locks.run(parent.hash, build);
  }

  /** Mints an orphan token for a trusted service; `extra` ops land in the same commit. */
  async issue(spec: IssueSpec, extra?: ExtraOps): Promise<Issued> {
    const ttl = spec.ttl ?? 0;
    const uses = spec.num_uses ?? 0;
    if (!Number.isSafeInteger(ttl) || ttl < 0) throw new InvalidRequest('ttl must be a non-negative integer');
    if (!Number.isSafeInteger(uses) || uses < 0) throw new InvalidRequest('num_uses must be a non-negative integer');
    return this.#mint(
      {
        type: 'service',
        id: spec.id === '' ? undefined : spec.id,
        policies: sanitizePolicies(spec.policies, false),
        ttl,
        explicit_max_ttl: 0,
        period: 0,
        num_uses: uses,
        parent: '',
        namespace_path: spec.namespace_path ?? '',
        display_name: spec.display_name ?? '',
        meta: spec.meta ?? null,
        orphan: true,
        path: spec.path,
        renewable: (spec.renewable ?? false) && ttl > 0,
        expireCap: null,
        warnings: [],
      },
      extra,
    );
  }

  /** The live entry of `token` if of `scope` or below; undefined if not, unknown, revoked or expired. Spends nothing. */
  async lookup(token: string, scope = ''): Promise<TokenEntryView | undefined> {
    if (isBatchToken(token)) return inScope(await this.batch.verify(token), scope);
    return inScope(await this.#records.readLive(hashToken(token)), scope);
  }

  async lookupByAccessor(accessor: string, scope = ''): Promise<TokenEntryView | undefined> {
    const hash = await this.#records.hashOfAccessor(accessor);
    return hash === undefined ? undefined : inScope(await this.#records.readLive(hash), scope);
  }

  /** Vault's lookup data for `entry`; pass the token as `id` only for lookup and lookup-self. */
  lookupResponse(entry: TokenEntry, id = ''): Record<string, unknown> {
    return lookupData(entry, this.#now(), id);
  }

  /**
   * Authorises one use of `token`: PermissionDenied if it is unknown, revoked or expired. A
   * use-limited token loses one use atomically; the use that reaches 0 is allowed and revokes it
   * (and its tree) before this returns, so concurrent callers never overspend.
   */
  async validateForUse(token: string): Promise<TokenEntryView> {
    if (isBatchToken(token)) {
      const entry = await this.batch.verify(token);
      if (entry === undefined) throw new PermissionDenied();
      return entry;
    }
    const hash = hashToken(token);
    const seen = await this.#records.readLive(hash);
    if (seen === undefined) throw new PermissionDenied();
    // Nothing updates num_uses of an unlimited token, so it needs no lock.
    if (seen.num_uses === 0) return seen;
    return this.#locks.run(hash, async () => {
      const entry = await this.#records.readLive(hash);
      if (entry === undefined) throw new PermissionDenied();
      if (entry.num_uses > 1) {
        const next: TokenEntry = { ...withoutHash(entry), num_uses: entry.num_uses - 1 };
        await this.#store.commit([{ type: 'put', key: tokenKeys.entry(hash), value: encodeEntry(next) }]);
        return { ...next, hash };
      }
      const tree = await this.#records.lockTree(hash, true);
      try {
        await this.#store.commit(tree.ops);
      } finally {
        tree.release();
      }
      return { ...entry, num_uses: -1 };
    });
  }

  /**
   * Revokes `token` and, recursively, its non-orphan children in one commit; nothing if the token
   * is not of `scope` or below. Children are always of their parent's namespace or below.
   */
  revoke(token: string, scope = ''): Promise<boolean> {
    // A batch token has no tree: it goes onto the replicated deny list until it expires.
    if (isBatchToken(token)) return this.batch.deny(token, scope);
    return this.revokeTree(hashToken(token), scope);
  }

  async revokeAccessor(accessor: string, scope = ''): Promise<boolean> {
    const hash = await this.#records.hashOfAccessor(accessor);
    return hash === undefined ? false : this.revokeTree(hash, scope);
  }

  /** True if a stored entry (live, expired, or malformed) was removed. */
  async revokeTree(hash: string, scope = ''): Promise<boolean> {
    if (!isTokenHash(hash)) return false;
    const tree = await this.#records.lockTree(hash, false, scope);
    try {
      if (tree.ops.length > 0) await this.#store.commit(tree.ops);
      return tree.found;
    } finally {
      tree.release();
    }
  }

  /** Vault's revoke-orphan: revokes only `token` (if of `scope` or below); its children become orphans. */
  async revokeOrphan(token: string, scope = ''): Promise<boolean> {
    if (isBatchToken(token)) return this.batch.deny(token, scope);
    const hash = hashToken(token);
    const releases = [await this.#locks.acquire(hash)];
    try {
      const facts = await this.#records.readFacts(hash);
      if (facts === undefined || !factsInScope(facts, scope)) return false;
      const ops: Op[] = [...entryDeletion(hash, facts)];
      for (const child of await this.#store.list(tokenKeys.childrenOf(hash))) {
        ops.push({ type: 'del', key: tokenKeys.child(hash, child) });
        if (!isTokenHash(child)) continue;
        releases.push(await this.#locks.acquire(child));
        const c = await this.#records.read(child).catch(() => undefined); // a malformed child just loses its link
        if (c === undefined) continue;
        const orphaned: TokenEntry = { ...withoutHash(c), parent: '', orphan: true };
        ops.push({ type: 'put', key: tokenKeys.entry(child), value: encodeEntry(orphaned) });
      }
      await this.#store.commit(ops);
      return true;
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  /**
   * Spends `token` whole: under its lock `take` sees the live entry, and the token's deletion is
   * committed together with the ops `take` returns. Nothing is committed if the token is not live
   * (`notLive()` is thrown) or `take` throws. Response unwrapping is built on this.
   */
  async redeem<T>(
    token: string,
    take: (entry: TokenEntryView) => Promise<Redemption<T>>,
    notLive: () => TesseraError = () => new PermissionDenied(),
  ): Promise<T> {
    const tree = await this.#records.lockTree(hashToken(token), false);
    try {
      const root = tree.root;
      if (root === undefined || isExpired(root, this.#now())) throw notLive();
      const { value, ops = [] } = await take(root);
      await this.#store.commit([...tree.ops, ...ops]);
      return value;
    } finally {
      tree.release();
    }
  }

  /**
   * Renews a live service token of `scope` or below (`auth/token/renew*`), by `increment` seconds
   * (0: its creation TTL or period) under the rules of token-renew.ts. A token of another
   * namespace is answered exactly as an unknown one: "token not found". The answer is Vault's
   * `auth` block with the new `lease_duration`; `client_token` is the token given, '' by accessor.
   */
  async renew(token: { readonly token: string } | { readonly accessor: string }, increment: number, scope = ''): Promise<Created> {
    const notFound = (): InvalidRequest => new InvalidRequest('token not found');
    const presented = 'token' in token ? token.token : '';
    if ('token' in token && isBatchToken(token.token)) {
      if ((await this.lookup(token.token, scope)) === undefined) throw notFound();
      throw new InvalidRequest('batch tokens cannot be renewed');
    }
    const hash = 'token' in token ? hashToken(token.token) : await this.#records.hashOfAccessor(token.accessor);
    if (hash === undefined || !isTokenHash(hash)) throw notFound();
    return this.#locks.run(hash, async () => {
      const entry = inScope(await this.#records.readLive(hash), scope);
      if (entry === undefined) throw notFound();
      const parent = entry.parent === '' ? undefined : await this.#records.readLive(entry.parent);
      const next = renewal(entry, increment, this.#now(), this.#limits, parent?.expire_time ?? null);
      const renewed: TokenEntry = { ...withoutHash(entry), expire_time: next.expire_time, last_renewal_time: Math.floor(this.#now() / 1000) };
      await this.#store.commit([{ type: 'put', key: tokenKeys.entry(hash), value: encodeEntry(renewed) }]);
      return { auth: { ...authBlock(presented, renewed), lease_duration: next.ttl }, warnings: next.warnings };
    });
  }

  /** Revokes every expired token with its tree (children never outlive parents); returns how many tokens went. */
  async tidy(): Promise<number> {
    let revoked = 0;
    for (const hash of await this.#store.list(TOKEN_ENTRY_PREFIX)) {
      if (!isTokenHash(hash)) continue;
      const seen = await this.#records.read(hash).catch(() => undefined); // malformed: not known to be expired
      if (seen === undefined || !isExpired(seen, this.#now())) continue;
      const tree = await this.#records.lockTree(hash, false);
      try {
        if (tree.root === undefined) continue;
        await this.#store.commit(tree.ops);
        revoked += tree.ops.filter((op) => op.key.startsWith(TOKEN_ENTRY_PREFIX)).length;
      } finally {
        tree.release();
      }
    }
    return revoked;
  }

  async #mint(draft: TokenDraft, extra?: ExtraOps): Promise<Issued> {
    const token = draft.id ?? `hvs.${randomBase62(TOKEN_LENGTH, this.#random)}`;
    const hash = hashToken(token);
    const duplicate = (): InvalidRequest => new InvalidRequest('cannot create a token with a duplicate ID');
    if (this.#minting.has(hash)) throw duplicate();
    this.#minting.add(hash);
    try {
      if ((await this.#store.get(tokenKeys.entry(hash))) !== undefined) throw duplicate();
      const entry = entryFromDraft(draft, this.#now(), randomBase62(TOKEN_LENGTH, this.#random));
      const ops: Op[] = [
        { type: 'put', key: tokenKeys.entry(hash), value: encodeEntry(entry) },
        { type: 'put', key: tokenKeys.accessor(entry.accessor), value: Buffer.from(hash, 'utf8') },
      ];
      if (draft.parent !== '') ops.push({ type: 'put', key: tokenKeys.child(draft.parent, hash), value: EMPTY });
      if (extra !== undefined) ops.push(...extra({ token, hash }));
      await this.#store.commit(ops);
      return { token, entry: { ...entry, hash } };
    } finally {
      this.#minting.delete(hash);
    }
  }
}

function withoutHash(view: TokenEntryView): TokenEntry {
  const { hash: _hash, ...entry } = view;
  return entry;
}

/** Namespaces are `a/b/` or '' (root); `scope` reaches its own tokens and those below it. */
function inScope(entry: TokenEntryView | undefined, scope: string): TokenEntryView | undefined {
  return entry !== undefined && entry.namespace_path.startsWith(scope) ? entry : undefined;
}
