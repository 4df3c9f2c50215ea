/**
 * Batch tokens (Vault's `hvb.` tokens): never stored. Everything a batch token is (policies,
 * namespace, TTL, creation time, parent) travels inside the token, sealed with AES-256-GCM under
 * a key held in replicated storage, so every cluster holding the replicated data (a DR secondary
 * above all) verifies a token its primary made without ever having seen it.
 *
 *   const batch = new BatchTokens(store, { now, random, parentLive: (h) => ... });
 *   const { token, entry } = await batch.mint(draft);    // 'hvb.' + base64url(v1 || salt || nonce || sealed || tag)
 *   await batch.verify(token);                           // the entry, or undefined if forged/expired/denied
 *   await batch.deny(token);                             // onto the replicated deny list until it expires
 *
 * Contracts:
 * - The key (`core/token/batch/key`, replicated class, barrier-encrypted like every value) is
 *   made on the first mint, once: creation is serialized in memory and re-read under the lock, so
 *   two concurrent first mints cannot each commit a key (one process owns a data directory).
 *   It is never rotated or deleted here; a wipe (secondary activation) replaces it with the
 *   primary's, which is what a secondary should verify with.
 * - Verification reads only replicated data (the key, the deny list) and, for a non-orphan, the
 *   parent's entry: a non-orphan batch token lives only while its parent does (as in Vault).
 * - The deny list holds `core/token/batch/revoked/<sha256 of token>` -> its expiry; entries past
 *   it are pruned in the same commit as the next denial (an expired token is refused anyway).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { Internal, ReplicatedWriteRefused, Unavailable } from '../core/errors.js';
import { KeyedMutex } from '../core/keyed-mutex.js';
import type { Op, Store } from '../storage/store.js';
import { isExpired } from './token-entry.js';
import type { TokenEntry, TokenEntryView } from './token-entry.js';
import type { TokenDraft } from './token-create.js';
import { entryFromDraft } from './token-create.js';
import { hashToken } from './token-keys.js';

export const BATCH_TOKEN_PREFIX = 'hvb.';
export const BATCH_KEY_RECORD = 'core/token/batch/key';
export const BATCH_DENY_PREFIX = 'core/token/batch/revoked/';

const FORMAT_VERSION = 1;
/** Each token is sealed under its own key, HKDF(stored key, salt): no GCM nonce budget to watch. */
const SALT_BYTES = 16;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Binds the ciphertext to its purpose: no other sealed blob of ours opens as a batch token. */
const AAD = Buffer.from('tessera batch token v1', 'utf8');
/** Far above any real token (policies and meta); anything longer is not ours and is not decoded. */
const MAX_TOKEN_CHARS = 16 * 1024;

/** What a batch token carries (short names keep tokens short). */
const Claims = z.object({
  p: z.array(z.string()),
  ns: z.string(),
  ct: z.number().int(),
  ttl: z.number().int().nonnegative(),
  ex: z.number().int(),
  par: z.string(),
  dn: z.string(),
  m: z.record(z.string(), z.string()).nullable(),
  path: z.string(),
});
type Claims = z.infer<typeof Claims>;

const KeyRecord = z.object({ version: z.literal(1), key: z.string(), created_at: z.number().int() });
const DenyRecord = z.object({ expire_time: z.number().int() });

export interface BatchTokensOptions {
  readonly now: () => number;
  readonly random?: (size: number) => Buffer;
  /** Whether the (service) token with this hash is live: a non-orphan lives only while it does. */
  readonly parentLive: (parentHash: string) => Promise<boolean>;
}

export function isBatchToken(token: string): boolean {
  return token.startsWith(BATCH_TOKEN_PREFIX);
}

export class BatchTokens {
  readonly #store: Store;
  readonly #o: BatchTokensOptions;
  readonly #random: (size: number) => Buffer;
  readonly #lock = new KeyedMutex();

  constructor(store: Store, opts: BatchTokensOptions) {
    this.#store = store;
    this.#o = opts;
    this.#random = opts.random ?? randomBytes;
  }

  /** Seals `draft` (already checked by childDraft and batchRules) into a token; stores nothing but, once, the key. */
  async mint(draft: TokenDraft): Promise<{ token: string; entry: TokenEntryView }> {
    const nowMs = this.#o.now();
    const entry: TokenEntry = { ...entryFromDraft(draft, nowMs, ''), type: 'batch', renewable: false, num_uses: 0 };
    const claims: Claims = {
      p: [...entry.policies],
      ns: entry.namespace_path,
      ct: entry.creation_time,
      ttl: entry.ttl,
      ex: entry.expire_time ?? 0,
      par: entry.parent,
      dn: entry.display_name,
      m: entry.meta,
      path: entry.path,
    };
    const key = await this.#key(true);
    const salt = this.#random(SALT_BYTES);
    const nonce = this.#random(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', tokenKey(key as Buffer, salt), nonce);
    cipher.setAAD(AAD);
    const sealed = Buffer.concat([cipher.update(JSON.stringify(claims), 'utf8'), cipher.final()]);
    const blob = Buffer.concat([Buffer.from([FORMAT_VERSION]), salt, nonce, sealed, cipher.getAuthTag()]);
    const token = BATCH_TOKEN_PREFIX + blob.toString('base64url');
    return { token, entry: { ...entry, hash: hashToken(token) } };
  }

  /**
   * The entry `token` carries if it is one of ours, unaltered, unexpired, not denied and (for a
   * non-orphan) its parent is live; undefined otherwise. Reads only; never throws on bad input.
   */
  async verify(token: string): Promise<TokenEntryView | undefined> {
    if (!isBatchToken(token) || token.length > MAX_TOKEN_CHARS) return undefined;
    const claims = await this.#open(token.slice(BATCH_TOKEN_PREFIX.length));
    if (claims === undefined) return undefined;
    const entry: TokenEntry = {
      accessor: '',
      policies: claims.p,
      ttl: claims.ttl,
      creation_time: claims.ct,
      expire_time: claims.ex === 0 ? null : claims.ex,
      num_uses: 0,
      parent: claims.par,
      namespace_path: claims.ns,
      display_name: claims.dn,
      meta: claims.m,
      orphan: claims.par === '',
      type: 'batch',
      path: claims.path,
      explicit_max_ttl: 0,
      renewable: false,
    };
    if (isExpired(entry, this.#o.now())) return undefined;
    const hash = hashToken(token);
    if ((await this.#store.get(BATCH_DENY_PREFIX + hash)) !== undefined) return undefined;
    if (entry.parent !== '' && !(await this.#o.parentLive(entry.parent))) return undefined;
    return { ...entry, hash };
  }

  /**
   * Puts `token` on the replicated deny list until it expires (pruning entries already past
   * theirs in the same commit). False, and nothing written, when it does not verify (a forged,
   * expired or already denied token needs no entry).
   */
  async deny(token: string, scope = ''): Promise<boolean> {
    const entry = await this.verify(token);
    if (entry === undefined || !entry.namespace_path.startsWith(scope)) return false;
    const ops: Op[] = await this.#expiredDenials();
    // A token without expiry (ttl 0 is never minted, but a claim could hold it) is denied for good.
    const value = Buffer.from(JSON.stringify({ expire_time: entry.expire_time ?? Number.MAX_SAFE_INTEGER }), 'utf8');
    ops.push({ type: 'put', key: BATCH_DENY_PREFIX + entry.hash, value });
    await this.#store.commit(ops);
    return true;
  }

  /** Removes deny-list entries whose token has expired; how many went. */
  async prune(): Promise<number> {
    const ops = await this.#expiredDenials();
    if (ops.length > 0) await this.#store.commit(ops);
    return ops.length;
  }

  async #expiredDenials(): Promise<Op[]> {
    const nowMs = this.#o.now();
    const ops: Op[] = [];
    for (const name of await this.#store.list(BATCH_DENY_PREFIX)) {
      const raw = await this.#store.get(BATCH_DENY_PREFIX + name);
      if (raw === undefined) continue;
      const parsed = safeJson(DenyRecord, raw);
      // A malformed entry is kept: it can only refuse a token, never admit one.
      if (parsed !== undefined && nowMs >= parsed.expire_time * 1000) ops.push({ type: 'del', key: BATCH_DENY_PREFIX + name });
    }
    return ops;
  }

  async #open(text: string): Promise<Claims | undefined> {
    if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
    const blob = Buffer.from(text, 'base64url');
    const head = 1 + SALT_BYTES + NONCE_BYTES;
    if (blob.length < head + TAG_BYTES + 2 || blob[0] !== FORMAT_VERSION) return undefined;
    const key = await this.#key(false);
    if (key === undefined) return undefined;
    const salt = blob.subarray(1, 1 + SALT_BYTES);
    const nonce = blob.subarray(1 + SALT_BYTES, head);
    const tag = blob.subarray(blob.length - TAG_BYTES);
    const sealed = blob.subarray(head, blob.length - TAG_BYTES);
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', tokenKey(key, salt), nonce);
      decipher.setAAD(AAD);
      decipher.setAuthTag(tag);
      plain = Buffer.concat([decipher.update(sealed), decipher.final()]);
    } catch {
      return undefined; // altered, or sealed under another key
    }
    return safeJson(Claims, plain);
  }

  /**
   * Makes the key now if there is none, so that the clusters replicating from this one (a
   * performance secondary above all, which may not write it) can mint batch tokens with it.
   */
  async ensureKey(): Promise<void> {
    await this.#key(true);
  }

  /** The key; with `create`, made and committed on first use (one creator at a time). */
  async #key(create: boolean): Promise<Buffer | undefined> {
    const known = await this.#readKey();
    if (known !== undefined || !create) return known;
    return this.#lock.run(BATCH_KEY_RECORD, async () => {
      const again = await this.#readKey();
      if (again !== undefined) return again;
      const key = this.#random(32);
      const record = { version: 1, key: key.toString('base64'), created_at: Math.floor(this.#o.now() / 1000) };
      try {
        await this.#store.commit([{ type: 'put', key: BATCH_KEY_RECORD, value: Buffer.from(JSON.stringify(record), 'utf8') }]);
      } catch (e) {
        // A performance secondary verifies and mints with its primary's key; it never makes one.
        if (!(e instanceof ReplicatedWriteRefused)) throw e;
        throw new Unavailable('this performance secondary does not hold the batch token key yet: its primary makes it when it becomes a performance primary, or with its first batch token; create one batch token on the primary, then retry once this secondary is in sync', { cause: e });
      }
      return key;
    });
  }

  async #readKey(): Promise<Buffer | undefined> {
    const raw = await this.#store.get(BATCH_KEY_RECORD);
    if (raw === undefined) return undefined;
    const record = safeJson(KeyRecord, raw);
    const key = record === undefined ? undefined : Buffer.from(record.key, 'base64');
    if (key === undefined || key.length !== 32) throw new Internal('stored batch token key is malformed');
    return key;
  }
}

function tokenKey(key: Buffer, salt: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', key, salt, AAD, 32));
}

function safeJson<T>(schema: z.ZodType<T>, raw: Buffer): T | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(raw.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
