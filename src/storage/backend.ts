/**
 * The physical storage engine: an ordered byte store with atomic batches, range iteration and
 * point-in-time snapshots. Everything above it (barrier, commit log, WAL, Merkle index) is written
 * against this interface only; `test/storage/backend-contract.ts` is the one suite every
 * implementation passes.
 *
 *   const b = await openLevelBackend({ path: dir });
 *   await b.batch([{ type: 'put', key: 'a', value: Buffer.from('1') }], { sync: true });
 *   for await (const [k, v] of b.iterate({ gte: 'a', lt: 'b' })) { ... }
 *
 * Keys are strings compared by their UTF-8 bytes (LevelDB's order); values are Buffers.
 *
 * Failures: a `batch` that rejects may or may not have reached the medium. A read that rejects
 * because the medium failed (I/O error, corruption) rejects with `BackendFault`; any other read
 * error is a usage error (e.g. a closed handle). The engine fails closed on both kinds of fault.
 */
import { ErrorCode, Internal, TesseraError } from '../core/errors.js';

/**
 * The medium failed: an I/O error or corruption reported by the store itself. `detail` is the
 * store's own status text (LevelDB's, e.g. "Corruption: block checksum mismatch: .../000005.ldb").
 */
export class BackendFault extends Internal {
  readonly detail: string;
  constructor(message: string, detail: string, options?: { cause?: unknown }) {
    super(`${message}: ${detail}`, options);
    this.detail = detail;
  }
}
/**
 * The batch's guard said no (the HA fence: this node no longer holds the active lease): the
 * transaction was rolled back and nothing of the batch was written. Not a storage fault: the
 * medium is fine and memory still matches it, so the engine does not fail closed on it.
 */
export class BatchRefused extends TesseraError {
  constructor(readonly reason: string) {
    super(ErrorCode.unavailable, `nothing was written: ${reason}`);
  }
}

/**
 * The store refused the batch for the data it carries (PostgreSQL: a data exception, an integrity
 * violation or a program limit, SQLSTATE classes 22, 23 and 54), and rolled it back: nothing of it
 * was written and the store itself is fine, so this is no storage fault. 400: the engine retries
 * the batch's transactions one by one, and only the write the store refuses fails.
 */
export class WriteRefused extends TesseraError {
  constructor(readonly reason: string) {
    super(ErrorCode.invalidRequest, `put failed: the storage refused the write: ${reason}`);
  }
}

export type BatchOp =
  | { readonly type: 'put'; readonly key: string; readonly value: Buffer }
  | { readonly type: 'del'; readonly key: string };

export interface RangeOptions {
  readonly gte?: string;
  readonly gt?: string;
  readonly lt?: string;
  readonly lte?: string;
  readonly limit?: number;
  readonly reverse?: boolean;
}

/** A consistent read view; must be closed. */
export interface ReadView {
  get(key: string): Promise<Buffer | undefined>;
  /**
   * Optional: the values of `keys` (in their order) in one round trip, where a read is one
   * (PostgreSQL). Callers fall back to `get` per key where it is absent.
   */
  getMany?(keys: readonly string[]): Promise<Array<Buffer | undefined>>;
  iterate(range: RangeOptions): AsyncIterable<[string, Buffer]>;
  /**
   * Optional: each value in `range` as its size and last `tailBytes` bytes, without reading the
   * rest over the wire (PostgreSQL). Callers fall back to `iterate` where it is absent.
   */
  iterateTails?(range: KeyInterval, tailBytes: number): AsyncIterable<ValueTail>;
}

export interface Snapshot extends ReadView {
  close(): Promise<void>;
}

/** The keys from `gte` to `lte`, both included. */
export interface KeyInterval {
  readonly gte: string;
  readonly lte: string;
}

/** One stored value as its length and its last bytes: what a WAL tail needs of each entry. */
export interface ValueTail {
  readonly key: string;
  readonly size: number;
  /** The last `tailBytes` bytes of the value (all of it when shorter). */
  readonly tail: Buffer;
}

export interface Backend extends ReadView {
  /**
   * Applies every op or none. With `sync: true` the batch is on stable storage (fsync) before the
   * promise resolves: callers acknowledge durable writes only after that.
   */
  batch(ops: readonly BatchOp[], options: { sync: boolean }): Promise<void>;
  /** A view that later writes do not change. */
  snapshot(): Promise<Snapshot>;
  close(): Promise<void>;
}

/**
 * The smallest key greater than every key that starts with `prefix` (UTF-8 byte order): the last
 * code point incremented, skipping the surrogate range. `prefix + '\uffff'` would miss keys with
 * astral characters after the prefix.
 */
export function prefixEnd(prefix: string): string {
  const cps = [...prefix];
  while (cps.length > 0) {
    const cp = (cps.pop() as string).codePointAt(0) as number;
    if (cp < 0x10ffff) {
      const next = cp + 1 === 0xd800 ? 0xe000 : cp + 1;
      return cps.join('') + String.fromCodePoint(next);
    }
  }
  return '\u{10ffff}'.repeat(64);
}
