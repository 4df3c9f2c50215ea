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
 * - The keys (`core/token/batch/key`, replicated class, barrier-encrypted like every value) form a
 *   ring: the newest seals, every retained one opens (a token names its key's id). The first key is
 *   made on the first mint; a mint finding the newest older than `rotateEveryMs` (24 h) adds a new
 *   one, and a key is dropped once every token it can have sealed has expired (its successor's age
 *   passed `retainMs`, the longest token TTL). Creation and rotation are serialized in memory and
 *   re-read under the lock (one process owns a data directory). A rotation that cannot be written
 *   (a performance secondary, which never writes replicated keys) seals under the current key.
 *   A wipe (secondary activation) replaces the ring with the primary's, which is what a secondary
 *   should verify with. Tokens of the first format (no key id) open with the ring's first key.
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

/** Format 1: no key id (sealed under the first key, id 0). Format 2: a 4-byte key id follows. */
const FORMAT_V1 = 1;
const FORMAT_VERSION = 2;
const KEY_ID_BYTES = 4;
const DAY_MS = 24 * 3600 * 1000;
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

const KeyRecordV1 = z.object({ version: z.literal(1), key: z.string(), created_at: z.number().int() });
const RingKey = z.object({ id: z.number().int().nonnegative(), key: z.string(), created_at: z.number().int() });
const KeyRing = z.object({ version: z.literal(2), keys: z.array(RingKey).min(1) });
interface Key { readonly id: number; readonly key: Buffer; readonly createdAtMs: number }
const DenyRecord = z.object({ expire_time: z.number().int() });

export interface BatchTokensOptions {
  readonly now: () => number;
  readonly random?: (size: number) => Buffer;
  /** Whether the (service) token with this hash is live: a non-orphan lives only while it does. */
  readonly parentLive: (parentHash: string) => Promise<boolean>;
  /** How old the newest key may get before a mint adds another (default 24 h). */
  readonly rotateEveryMs?: number;
  /** How long a key is kept after its successor was made: the longest token TTL (default 768 h). */
  readonly retainMs?: number;
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
    const key = await this.#sealingKey();
    const salt = this.#random(SALT_BYTES);
    const nonce = this.#random(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', tokenKey(key.key, salt), nonce);
    cipher.setAAD(AAD);
    const sealed = Buffer.concat([cipher.update(JSON.stringify(claims), 'utf8'), cipher.final()]);
    const id = Buffer.alloc(KEY_ID_BYTES);
    id.writeUInt32BE(key.id);
    const blob = Buffer.concat([Buffer.from([FORMAT_VERSION]), id, salt, nonce, sealed, cipher.getAuthTag()]);
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
    const at = blob[0] === FORMAT_VERSION ? 1 + KEY_ID_BYTES : blob[0] === FORMAT_V1 ? 1 : undefined;
    if (at === undefined) return undefined;
    const head = at + SALT_BYTES + NONCE_BYTES;
    if (blob.length < head + TAG_BYTES + 2) return undefined;
    const id = at === 1 ? 0 : blob.readUInt32BE(1);
    const key = (await this.#readRing()).find((k) => k.id === id)?.key;
    if (key === undefined) return undefined;
    const salt = blob.subarray(at, at + SALT_BYTES);
    const nonce = blob.subarray(at + SALT_BYTES, head);
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
    await this.#sealingKey();
  }

  /**
   * The key to seal with: the newest of the ring, made first if there is none, and a new one
   * added when the newest is older than the rotation period (dropping keys past retention).
   */
  async #sealingKey(): Promise<Key> {
    const due = (ring: readonly Key[]): boolean => ring.length === 0 || this.#o.now() - ring.at(-1)!.createdAtMs >= (this.#o.rotateEveryMs ?? DAY_MS);
    const known = await this.#readRing();
    if (!due(known)) return known.at(-1)!;
    return this.#lock.run(BATCH_KEY_RECORD, async () => {
      const ring = await this.#readRing();
      if (!due(ring)) return ring.at(-1)!;
      const nowMs = this.#o.now();
      const retainMs = this.#o.retainMs ?? 768 * 3600 * 1000;
      // A key stays while a token it sealed may be unexpired: until its successor is retainMs old.
      const kept = ring.filter((k, i) => i === ring.length - 1 || nowMs - ring[i + 1]!.createdAtMs < retainMs);
      const fresh: Key = { id: ring.length === 0 ? 1 : ring.at(-1)!.id + 1, key: this.#random(32), createdAtMs: nowMs };
      const record = { version: 2, keys: [...kept, fresh].map((k) => ({ id: k.id, key: k.key.toString('base64'), created_at: Math.floor(k.createdAtMs / 1000) })) };
      try {
        await this.#store.commit([{ type: 'put', key: BATCH_KEY_RECORD, value: Buffer.from(JSON.stringify(record), 'utf8') }]);
      } catch (e) {
        // Rotation is not a reason to refuse a token: seal under the current key if there is one.
        if (ring.length > 0) return ring.at(-1)!;
        // A performance secondary verifies and mints with its primary's key; it never makes one.
        if (!(e instanceof ReplicatedWriteRefused)) throw e;
        throw new Unavailable('this performance secondary does not hold the batch token key yet: its primary makes it when it becomes a performance primary, or with its first batch token; create one batch token on the primary, then retry once this secondary is in sync', { cause: e });
      }
      return fresh;
    });
  }

  /** The retained keys, oldest first; a first-format record is the ring of its one key, id 0. */
  async #readRing(): Promise<Key[]> {
    const raw = await this.#store.get(BATCH_KEY_RECORD);
    if (raw === undefined) return [];
    const ring = safeJson(KeyRing, raw);
    const v1 = ring === undefined ? safeJson(KeyRecordV1, raw) : undefined;
    const keys = ring?.keys ?? (v1 ? [{ id: 0, key: v1.key, created_at: v1.created_at }] : []);
    const out = keys.map((k) => ({ id: k.id, key: Buffer.from(k.key, 'base64'), createdAtMs: k.created_at * 1000 }));
    if (out.length === 0 || out.some((k) => k.key.length !== 32)) throw new Internal('stored batch token key is malformed');
    return out;
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
