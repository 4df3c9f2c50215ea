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
import type { Op, Store } from './store.js';

/** AES-256-GCM in production (the seal's Keyring); must throw if `ct` or `aad` was tampered with. */
export interface ValueCipher {
  encrypt(plain: Buffer, aad: Buffer): Buffer;
  decrypt(ct: Buffer, aad: Buffer): Buffer;
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

  async get(key: string): Promise<Buffer | undefined> {
    const ct = await this.raw.readRaw(key);
    if (ct === undefined) return undefined;
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

  /** Ops with their values encrypted for their keys: what applyEntries' extra node ops take. */
  encryptOps(ops: readonly Op[]): WalOp[] {
    return ops.map((op) =>
      op.type === 'put' ? { type: 'put', key: op.key, value: this.cipher.encrypt(op.value, aadOf(op.key)) } : { type: 'del', key: op.key },
    );
  }
}
