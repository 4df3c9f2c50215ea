/**
 * An HA standby's read cache, kept as current as the shared database: before the standby answers
 * a request, one range read (one round trip on PostgreSQL) takes the WAL entries after the last
 * one followed, the install mark and the WAL meta; every key those entries wrote takes its new value in
 * the cache. What no entry names clears the whole cache: the install mark moved (a Merkle sync's
 * install, or a wipe replacing the WAL), entries trimmed before they were read, or the first
 * follow. The Merkle index and the WAL tail are the engine's business (follow()); this touches
 * only the cache.
 *
 *   const reads = new ReadFollower(backend, cache);
 *   const f = await reads.follow();   // f.known ? f.keys changed : anything may have
 */
import type { PushedWal } from '../core/ha/read-lease.js';
import { decodeEntry, decodeMeta } from '../core/wal.js';
import type { BatchOp, ReadView } from './backend.js';
import { Keys } from './keyspace.js';
import type { ReadCache } from './read-cache.js';

/**
 * What a follow found: the keys the new entries wrote, or `known` false when keys changed that no
 * entry names: then every cached value went, and whatever a caller derived from storage must be
 * read again.
 */
export interface Followed {
  readonly entries: number;
  readonly keys: readonly string[];
  readonly known: boolean;
}

const ABSENT: Buffer = Buffer.alloc(0);

export type { PushedWal };

/** Batches whose entries weigh more are pushed as a count only (the standby reads them). */
export const PUSH_MAX_BYTES = 256 << 10;

/**
 * The entries of a batch the active node committed, when a standby can take them as they are: the
 * batch moved no install mark (an install or a wipe changes keys no entry names), its entries are
 * consecutive and end at the WAL meta's new last index, and they weigh at most PUSH_MAX_BYTES.
 */
export function pushedWal(ops: readonly BatchOp[]): PushedWal | undefined {
  const entries: Array<[bigint, Buffer]> = [];
  let last: bigint | undefined;
  let bytes = 0;
  for (const op of ops) {
    if (op.key === Keys.installMark) return undefined;
    if (op.type !== 'put') continue;
    if (op.key === Keys.walMeta) last = decodeMeta(op.value).last;
    else if (op.key.startsWith(Keys.walPrefix)) {
      bytes += op.value.length;
      if (bytes > PUSH_MAX_BYTES) return undefined;
      entries.push([Keys.walIndexOf(op.key), op.value]);
    }
  }
  if (entries.length === 0 || last === undefined) return undefined;
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const first = entries[0]![0];
  for (let i = 0; i < entries.length; i++) if (entries[i]![0] !== first + BigInt(i)) return undefined;
  if (first + BigInt(entries.length) - 1n !== last) return undefined;
  return { first, last, records: entries.map((e) => e[1]) };
}

export class ReadFollower {
  /** The last WAL index whose entry the cache took, and the install mark then. */
  private seen: { readonly index: bigint; readonly mark: Buffer } | undefined;

  constructor(
    private readonly view: ReadView,
    private readonly cache: ReadCache,
  ) {}

  /** The next follow starts over: the cache holds values this follower never saw written. */
  forget(): void {
    this.seen = undefined;
  }

  /**
   * Takes the entries the active node pushed when they follow on from the last one taken (the
   * same install mark: the pusher sends none across a mark's move); undefined when they do not
   * (a follow() sorts it out). The caller never runs this beside a follow().
   */
  applyPushed(wal: PushedWal): Followed | undefined {
    const seen = this.seen;
    if (seen === undefined || wal.first !== seen.index + 1n || wal.last !== wal.first + BigInt(wal.records.length) - 1n) return undefined;
    const ops = wal.records.map((r) => decodeEntry(r).ops);
    const keys: string[] = [];
    for (const entry of ops) {
      this.cache.applied(entry);
      for (const op of entry) keys.push(op.key);
    }
    this.seen = { index: wal.last, mark: seen.mark };
    return { entries: ops.length, keys, known: true };
  }

  async follow(): Promise<Followed> {
    const seen = this.seen;
    // One range in key order: the entries after the last one taken ('w/...'), the install mark
    // ('wi'), the meta ('wm'); one statement on PostgreSQL while it fits a page.
    const entries: Array<[bigint, Buffer]> = [];
    let mark: Buffer = ABSENT;
    let meta: Buffer | undefined;
    for await (const [key, value] of this.view.iterate({ gte: seen === undefined ? Keys.installMark : Keys.wal(seen.index + 1n), lte: Keys.walMeta })) {
      if (key === Keys.walMeta) meta = value;
      else if (key === Keys.installMark) mark = value;
      else if (key.startsWith(Keys.walPrefix)) entries.push([Keys.walIndexOf(key), value]);
    }
    const last = meta === undefined ? 0n : decodeMeta(meta).last;
    const reset = (): Followed => {
      this.cache.clear();
      this.seen = { index: last, mark };
      return { entries: 0, keys: [], known: false };
    };
    if (seen === undefined || !mark.equals(seen.mark) || last < seen.index) return reset();
    if (last === seen.index) return { entries: 0, keys: [], known: true };
    // The entries after the one last taken, each in order; a gap (trimmed before it was read, or
    // pages read apart while the writer went on) leaves keys changed that no entry here names.
    let expect = seen.index + 1n;
    const ops = [];
    for (const [index, record] of entries) {
      // Committed after the meta was read (a later page): the next follow takes it.
      if (index > last) break;
      if (index !== expect) return reset();
      ops.push(decodeEntry(record).ops);
      expect++;
    }
    if (expect !== last + 1n) return reset();
    const keys: string[] = [];
    for (const entry of ops) {
      this.cache.applied(entry);
      for (const op of entry) keys.push(op.key);
    }
    this.seen = { index: last, mark };
    return { entries: ops.length, keys, known: true };
  }
}
