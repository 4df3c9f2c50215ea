/**
 * The one key and value contract of every storage engine: the longest logical key and the
 * largest stored value (ciphertext) a write may carry, the same on LevelDB and PostgreSQL, checked
 * at the engine's entry before a write joins a group-commit batch (StorageEngine.commitRaw), so a
 * write no engine may take is refused alone with a 400 and never reaches a batch its neighbours
 * share.
 *
 *   assertWithinContract(ops);                 // throws KeyTooLarge / ValueTooLarge (400)
 *   assertWithinContract(ops, { maxKeyBytes: 64, maxValueBytes: 1024 });
 *
 * Why these numbers: the key limit is what a PostgreSQL btree entry holds with room to spare (an
 * entry holds at most 2704 bytes; the longest stored key is a Merkle leaf's, the logical key plus
 * 11 bytes of `m/<tree>/l/<page><sub>/`), and well under what LevelDB takes; the value limit is
 * above anything a request of Vault's default `max_request_size` (32 MiB) can produce, and far
 * under PostgreSQL's 1 GB per field and the replication channel's 64 MiB message (MAX_MESSAGE_BYTES),
 * so a WAL entry of one such value streams to a secondary. The texts are Vault's physical-layer errors (sdk/physical
 * ErrKeyTooLarge / ErrValueTooLarge) with the sizes, as its integrated storage words them.
 *
 * Entries a primary already committed are not checked again where they are applied (a secondary's
 * applyEntries, a Merkle sync's install, a performance secondary's upstream commits): a secondary
 * applies whatever its primary holds, and the PostgreSQL schema (postgres.ts) holds a key of any
 * length, so data written before this contract existed cannot wedge one.
 */
import { ErrorCode, TesseraError } from '../core/errors.js';
import type { WalOp } from '../core/wal.js';

/** Longest logical key, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 2048;
/** Largest stored value (the ciphertext the barrier writes), in bytes: 40 MiB. */
export const MAX_VALUE_BYTES = 40 * 1024 * 1024;

export interface WriteLimits {
  readonly maxKeyBytes: number;
  readonly maxValueBytes: number;
}

export const WRITE_LIMITS: WriteLimits = { maxKeyBytes: MAX_KEY_BYTES, maxValueBytes: MAX_VALUE_BYTES };

/** 400: a key longer than the contract allows; the key itself is not echoed (it may be long). */
export class KeyTooLarge extends TesseraError {
  constructor(
    readonly bytes: number,
    readonly max: number,
  ) {
    super(ErrorCode.invalidRequest, `put failed due to key being too large; got ${bytes} bytes, max: ${max} bytes`);
  }
}

/** 400: a value larger than the contract allows. */
export class ValueTooLarge extends TesseraError {
  constructor(
    readonly bytes: number,
    readonly max: number,
  ) {
    super(ErrorCode.invalidRequest, `put failed due to value being too large; got ${bytes} bytes, max: ${max} bytes`);
  }
}

/**
 * Throws KeyTooLarge or ValueTooLarge for the first put past `limits`. Deletes pass whatever their
 * key: a key stored before the contract existed can always be deleted.
 */
export function assertWithinContract(ops: readonly WalOp[], limits: WriteLimits = WRITE_LIMITS): void {
  for (const op of ops) {
    if (op.type !== 'put') continue;
    const keyBytes = Buffer.byteLength(op.key, 'utf8');
    if (keyBytes > limits.maxKeyBytes) throw new KeyTooLarge(keyBytes, limits.maxKeyBytes);
    if (op.value.length > limits.maxValueBytes) throw new ValueTooLarge(op.value.length, limits.maxValueBytes);
  }
}
