/**
 * An HA standby's read cache, kept as current as the shared database: before the standby answers
 * a request, one read (one round trip on PostgreSQL) takes the WAL meta, the install mark and the
 * WAL entries after the last one followed; every key those entries wrote takes its new value in
 * the cache. What no entry names clears the whole cache: the install mark moved (a Merkle sync's
 * install, or a wipe replacing the WAL), entries trimmed before they were read, or the first
 * follow. The Merkle index and the WAL tail are the engine's business (follow()); this touches
 * only the cache.
 *
 *   const reads = new ReadFollower(backend, cache);
 *   const f = await reads.follow();   // f.known ? f.keys changed : anything may have
 */
import { decodeEntry, decodeMeta } from '../core/wal.js';
import type { ReadView } from './backend.js';
import { Keys, dirEnd } from './keyspace.js';
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

/** Entries read in the same round trip as the meta; more than this since the last follow reset the cache instead. */
const ENTRIES_AT_ONCE = 1000;

const ABSENT = Buffer.alloc(0);

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

  async follow(): Promise<Followed> {
    const seen = this.seen;
    const { values, rows } = await readWithEntries(this.view, [Keys.walMeta, Keys.installMark], seen === undefined ? undefined : Keys.wal(seen.index + 1n));
    const mark = values[1] ?? ABSENT;
    const last = values[0] === undefined ? 0n : decodeMeta(values[0]).last;
    const reset = (): Followed => {
      this.cache.clear();
      this.seen = { index: last, mark };
      return { entries: 0, keys: [], known: false };
    };
    if (seen === undefined || !mark.equals(seen.mark) || last < seen.index) return reset();
    if (last === seen.index) return { entries: 0, keys: [], known: true };
    // The entries after the one last followed, each in order; a gap (trimmed before it was read,
    // or more than one round trip holds) leaves keys changed that no entry here names.
    const keys: string[] = [];
    let expect = seen.index + 1n;
    const ops = [];
    for (const [key, record] of rows) {
      const index = Keys.walIndexOf(key);
      // Committed after the meta was read (a view that reads them apart): the next follow takes it.
      if (index > last) break;
      if (index !== expect) return reset();
      ops.push(decodeEntry(record).ops);
      expect++;
    }
    if (expect !== last + 1n) return reset();
    for (const entry of ops) {
      this.cache.applied(entry);
      for (const op of entry) keys.push(op.key);
    }
    this.seen = { index: last, mark };
    return { entries: ops.length, keys, known: true };
  }
}

/** `keys`' values and the WAL entries from `from` on, read together (one round trip where the view allows). */
async function readWithEntries(view: ReadView, keys: readonly string[], from: string | undefined): Promise<{ values: Array<Buffer | undefined>; rows: Array<[string, Buffer]> }> {
  const range = from === undefined ? undefined : { gte: from, lt: dirEnd(Keys.walPrefix), limit: ENTRIES_AT_ONCE };
  if (view.getManyWithRange !== undefined) return view.getManyWithRange(keys, range);
  // Elsewhere (LevelDB, memory) reads are local: the values first, then the range, so the
  // entries read reach at least the meta's last one (those past it wait for the next follow).
  const values = await Promise.all(keys.map((k) => view.get(k)));
  const rows: Array<[string, Buffer]> = [];
  if (range !== undefined) for await (const row of view.iterate(range)) rows.push(row);
  return { values, rows };
}
