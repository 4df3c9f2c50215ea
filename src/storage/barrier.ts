/**
 * The encrypting barrier: the Store services use, over the commit path's raw (ciphertext) API.
 *
 *   const store = engine.secure(keyring);                 // keyring implements ValueCipher
 *   await store.commit([{ type: 'put', key: 'sys/policy/ops', value }]);
 *   await store.get('sys/policy/ops');                    // decrypted with AAD = the key
 *
 * Values are encrypted once, here, before they enter the commit path: WAL entries and replicas
 * carry the same ciphertext, so Merkle value hashes (SHA-256 of the ciphertext) agree on primary
 * and secondary. The AAD is the logical key, so a value moved to another key fails to decrypt.
 * A value that fails decryption fails the store closed, as a medium fault does (fault-guard.ts).
 */
import { ErrorCode, TesseraError, type StorageFailed } from '../core/errors.js';
import type { WalOp } from '../core/wal.js';
import { deepFreeze, type Decoder, type Op, type Store } from './store.js';

/** AES-256-GCM in production (the seal's Keyring); must throw if `ct` or `aad` was tampered with. */
export interface ValueCipher {
  encrypt(plain: Buffer, aad: Buffer): Buffer;
  decrypt(ct: Buffer, aad: Buffer): Buffer;
  /** Throws as `decrypt` would when the cipher may no longer be used (sealed); checked before a remembered decode is handed out. */
  assertLive?(): void;
}

/** A system record (`s/<name>`, stored raw) to write in the same batch as a commit; undefined deletes. */
export interface SystemWrite {
  readonly name: string;
  readonly value: Buffer | undefined;
}

/** The part of the engine the barrier needs; values here are ciphertext. */
export interface RawStore {
  readRaw(key: string): Promise<Buffer | undefined>;
  listKeys(prefix: string): Promise<string[]>;
  commitRaw(ops: readonly WalOp[], system?: readonly SystemWrite[]): Promise<void>;
  /** A stored value failed decryption: the store fails closed; returns what callers see. */
  valueRejected(cause: unknown): StorageFailed;
}

export function aadOf(key: string): Buffer {
  return Buffer.from(key, 'utf8');
}

export class BarrierStore implements Store {
  constructor(
    private readonly raw: RawStore,
    private readonly cipher: ValueCipher,
  ) {}

  /**
   * Decodes remembered by ciphertext: the raw store hands out the same Buffer for a key while its
   * durable value is unchanged (the read cache replaces it on every commit of the key), and a new
   * one otherwise, so an entry here can never outlive the value it was decoded from. Weak: an
   * entry goes when the cache lets its ciphertext go. One per unseal (the barrier is made then).
   */
  private readonly decoded = new WeakMap<Buffer, { readonly decode: Decoder<unknown>; readonly value: unknown }>();

  async get(key: string): Promise<Buffer | undefined> {
    const ct = await this.raw.readRaw(key);
    return ct === undefined ? undefined : this.open(key, ct);
  }

  async getDecoded<T>(key: string, decode: Decoder<T>): Promise<Readonly<T> | undefined> {
    const ct = await this.raw.readRaw(key);
    if (ct === undefined) return undefined;
    const known = this.decoded.get(ct);
    if (known !== undefined && known.decode === decode) {
      this.cipher.assertLive?.();
      return known.value as Readonly<T>;
    }
    const value = deepFreeze(decode(this.open(key, ct)));
    this.decoded.set(ct, { decode, value });
    return value;
  }

  private open(key: string, ct: Buffer): Buffer {
    try {
      return this.cipher.decrypt(ct, aadOf(key));
    } catch (e) {
      // The node's own state (sealed) passes through; anything else means the stored bytes are
      // not what was written (corruption LevelDB does not checksum): StorageFailed, fail closed.
      if (e instanceof TesseraError && e.code !== ErrorCode.internal) throw e;
      throw this.raw.valueRejected(e);
    }
  }

  list(prefix: string): Promise<string[]> {
    return this.raw.listKeys(prefix);
  }

  commit(ops: readonly Op[]): Promise<void> {
    return this.commitWithSystem(ops, []);
  }

  /** A commit whose batch also writes system records (e.g. the keyring at init), atomically. */
  async commitWithSystem(ops: readonly Op[], system: readonly SystemWrite[]): Promise<void> {
    await this.raw.commitRaw(this.encryptOps(ops), system);
  }

  /**
   * Commits values already encrypted by the caller (the keyring record, sealed under the first
   * term so every secondary can open it) with system records, in one batch.
   */
  async commitSealed(ops: readonly WalOp[], system: readonly SystemWrite[]): Promise<void> {
    await this.raw.commitRaw(ops, system);
  }

  /** Ops with their values encrypted for their keys: what applyEntries' extra node ops take. */
  encryptOps(ops: readonly Op[]): WalOp[] {
    return ops.map((op) =>
      op.type === 'put' ? { type: 'put', key: op.key, value: this.cipher.encrypt(op.value, aadOf(op.key)) } : { type: 'del', key: op.key },
    );
  }
}
