/**
 * The retained WAL tail in memory: per entry its stored size and chained hash, plus the meta
 * record. Changes are planned first (producing the batch ops) and applied only once that batch is
 * durable, so a failed batch leaves the tail as it was.
 *
 *   const tail = await WalTail.load(snapshot);
 *   const plan = tail.plan([{ index, size, hash }], { maxEntries, maxBytes }, epoch);
 *   await backend.batch([...otherOps, ...plan.ops], { sync: true });
 *   tail.apply(plan);
 */
import { Internal } from '../core/errors.js';
import { WalNotRetained, decodeEntry, decodeMeta, encodeMeta, genesisMeta, storedHash, type Guard, type WalEntry, type WalMeta } from '../core/wal.js';
import type { BatchOp, ReadView } from './backend.js';
import { Keys } from './keyspace.js';

/** The chained hash is a WAL record's last bytes (core/wal.ts storedHash). */
const HASH_BYTES = 32;

export interface WalBounds {
  /** Retain at most this many entries (at least 1: the last entry is never deleted). */
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** Entries from this index on are kept past the two bounds above (wal-holds.ts)... */
  readonly keepFrom?: bigint;
  /** ...while the tail holds at most this many bytes. */
  readonly holdMaxBytes?: number;
}

export interface TailItem {
  readonly index: bigint;
  readonly size: number;
  readonly hash: Buffer;
  /** The decoded entry, when the committer has it: kept among the recent entries `read` serves. */
  readonly entry?: WalEntry;
}

/** How many of the newest entries (and bytes of their records) `read` serves from memory. */
export const RECENT_ENTRIES = 4096;
export const RECENT_BYTES = 16 << 20;

export interface TailPlan {
  readonly meta: WalMeta;
  readonly appended: readonly TailItem[];
  readonly dropped: number;
  /** Deletes of dropped entries and the meta put; entry puts are the caller's. */
  readonly ops: readonly BatchOp[];
  readonly reset: boolean;
}

export class WalTail {
  private items: TailItem[] = [];
  private head = 0;
  /**
   * The newest committed entries, decoded, contiguous: a stream of a secondary that keeps up
   * reads them here instead of iterating storage for what was just written. Bounded by
   * RECENT_ENTRIES and RECENT_BYTES; entries below the retained range are never served (read
   * checks the bound first).
   */
  private recent: { readonly entry: WalEntry; readonly size: number }[] = [];
  private recentHead = 0;
  private recentBytes = 0;

  private constructor(private current: WalMeta) {}

  /**
   * Reads the meta record and each retained entry's size and hash: through the view's
   * `iterateTails` when it has one (PostgreSQL: the entries' last 32 bytes, not their bodies),
   * else by reading the entries whole. `view` must be consistent (a snapshot): on a shared
   * database (HA) the active node trims and appends while a standby opens or reloads, and a meta
   * and a scan read apart need not agree. In one view, an entry missing is a damaged WAL.
   */
  static async load(view: ReadView): Promise<WalTail> {
    const raw = await view.get(Keys.walMeta);
    const tail = new WalTail(raw === undefined ? genesisMeta() : decodeMeta(raw));
    const m = tail.current;
    if (m.first > m.last) return tail;
    let expect = m.first;
    let bytes = 0;
    const range = { gte: Keys.wal(m.first), lte: Keys.wal(m.last) };
    const tails = view.iterateTails;
    const rows: AsyncIterable<{ key: string; size: number; hash: Buffer }> =
      tails !== undefined
        ? (async function* () {
            for await (const t of tails.call(view, range, HASH_BYTES)) yield { key: t.key, size: t.size, hash: storedHash(t.tail) };
          })()
        : (async function* () {
            for await (const [key, v] of view.iterate(range)) yield { key, size: v.length, hash: storedHash(v) };
          })();
    for await (const r of rows) {
      const index = Keys.walIndexOf(r.key);
      if (index !== expect) throw new Internal(`WAL entry ${expect} is missing`);
      tail.items.push({ index, size: r.size, hash: r.hash });
      bytes += r.size;
      expect++;
    }
    if (expect !== m.last + 1n) throw new Internal(`WAL entries ${expect}..${m.last} are missing`);
    if (!tail.items.at(-1)?.hash.equals(m.lastHash)) throw new Internal('WAL meta disagrees with the last entry');
    tail.current = { ...m, bytes };
    return tail;
  }

  /**
   * `prev`'s items that storage still retains (from `meta.first`) followed by `appended`, which
   * continue it to `meta.last` (catch-up.ts checked the chain's joint).
   */
  static extended(prev: WalTail, meta: WalMeta, appended: readonly TailItem[]): WalTail {
    const tail = new WalTail(meta);
    let bytes = 0;
    for (let i = prev.head; i < prev.items.length; i++) {
      const it = prev.items[i]!;
      if (it.index < meta.first) continue;
      tail.items.push({ index: it.index, size: it.size, hash: it.hash });
      bytes += it.size;
    }
    for (const a of appended) {
      tail.items.push(a);
      bytes += a.size;
    }
    const firstIndex = tail.items[0]?.index;
    if (meta.first <= meta.last && (firstIndex !== meta.first || tail.items.length !== Number(meta.last - meta.first + 1n))) {
      throw new Internal(`WAL tail catch-up does not cover ${meta.first}..${meta.last}`);
    }
    tail.current = { ...meta, bytes };
    return tail;
  }

  get meta(): WalMeta {
    return this.current;
  }

  guard(): Guard {
    return { index: this.current.last, hash: Buffer.from(this.current.lastHash) };
  }

  count(): number {
    return this.items.length - this.head;
  }

  /** The hash of entry `index` if it is retained or is the guard just before the first retained. */
  hashAt(index: bigint): Buffer | undefined {
    const m = this.current;
    if (index === m.first - 1n) return Buffer.from(m.baseHash);
    if (index < m.first || index > m.last) return undefined;
    const item = this.items[this.head + Number(index - m.first)];
    return item === undefined ? undefined : Buffer.from(item.hash);
  }

  /** Appends `appended` (contiguous from last + 1), then drops the oldest beyond `bounds`. */
  plan(appended: readonly TailItem[], bounds: WalBounds, epoch = this.current.epoch): TailPlan {
    const m = this.current;
    let count = this.count() + appended.length;
    let bytes = m.bytes + appended.reduce((n, a) => n + a.size, 0);
    let first = m.first;
    let baseHash = m.baseHash;
    const ops: BatchOp[] = [];
    let dropped = 0;
    const held = (index: bigint): boolean => bounds.keepFrom !== undefined && index >= bounds.keepFrom && bytes <= (bounds.holdMaxBytes ?? Infinity);
    while (count > 1 && (count > bounds.maxEntries || bytes > bounds.maxBytes) && !held(first)) {
      const item = first <= m.last ? this.items[this.head + Number(first - m.first)] : appended[Number(first - m.last - 1n)];
      if (item === undefined) throw new Internal(`WAL tail has no entry ${first}`);
      ops.push({ type: 'del', key: Keys.wal(first) });
      bytes -= item.size;
      baseHash = item.hash;
      first++;
      count--;
      dropped++;
    }
    const last = appended.at(-1);
    const meta: WalMeta = {
      first,
      last: last?.index ?? m.last,
      lastHash: last?.hash ?? m.lastHash,
      baseHash,
      bytes,
      epoch,
    };
    ops.push({ type: 'put', key: Keys.walMeta, value: encodeMeta(meta) });
    return { meta, appended, dropped, ops, reset: false };
  }

  /** Deletes every retained entry and restarts the tail at `guard` (no entries retained). */
  planReset(guard: Guard, epoch = this.current.epoch): TailPlan {
    const m = this.current;
    const ops: BatchOp[] = [];
    for (let i = m.first; i <= m.last; i++) ops.push({ type: 'del', key: Keys.wal(i) });
    const meta: WalMeta = { first: guard.index + 1n, last: guard.index, lastHash: guard.hash, baseHash: guard.hash, bytes: 0, epoch };
    ops.push({ type: 'put', key: Keys.walMeta, value: encodeMeta(meta) });
    return { meta, appended: [], dropped: 0, ops, reset: true };
  }

  /**
   * Entries from `from` on, at most `maxEntries` and (beyond the first) `maxBytes` of stored
   * records; [] when `from` is past the last index. WalNotRetained when `from` was deleted.
   */
  async read(view: ReadView, from: bigint, maxEntries: number, maxBytes: number): Promise<WalEntry[]> {
    const { first, last } = this.current;
    if (from < first) throw new WalNotRetained(from, first);
    if (from > last || maxEntries < 1) return [];
    const memory = this.fromMemory(from, maxEntries, maxBytes);
    if (memory !== undefined) return memory;
    const out: WalEntry[] = [];
    let bytes = 0;
    for await (const [k, v] of view.iterate({ gte: Keys.wal(from), lte: Keys.wal(last), limit: maxEntries })) {
      const index = Keys.walIndexOf(k);
      // GC may run between the bound check and the read: a missing first entry is "not retained",
      // and a later gap ends the answer so it is always contiguous.
      if (index !== from + BigInt(out.length)) {
        if (out.length === 0) throw new WalNotRetained(from, this.current.first);
        break;
      }
      if (out.length > 0 && bytes + v.length > maxBytes) break;
      bytes += v.length;
      out.push(decodeEntry(v));
    }
    if (out.length === 0) throw new WalNotRetained(from, this.current.first);
    return out;
  }

  /** Entries from `from` when every one asked for is among the recent ones; else undefined. */
  private fromMemory(from: bigint, maxEntries: number, maxBytes: number): WalEntry[] | undefined {
    const first = this.recent[this.recentHead]?.entry;
    if (first === undefined || from < first.index) return undefined;
    const out: WalEntry[] = [];
    let bytes = 0;
    for (let i = this.recentHead + Number(from - first.index); i < this.recent.length && out.length < maxEntries; i++) {
      const { entry, size } = this.recent[i] as { entry: WalEntry; size: number };
      if (out.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      out.push(entry);
    }
    return out.length > 0 ? out : undefined;
  }

  private remember(appended: readonly TailItem[]): void {
    for (const item of appended) {
      const last = this.recent.at(-1)?.entry;
      // A gap (an item without its entry) restarts the run: what is kept stays contiguous.
      if (item.entry === undefined || (last !== undefined && last.index + 1n !== item.index)) this.forgetRecent();
      if (item.entry === undefined) continue;
      this.recent.push({ entry: item.entry, size: item.size });
      this.recentBytes += item.size;
    }
    while (this.recent.length - this.recentHead > RECENT_ENTRIES || (this.recentBytes > RECENT_BYTES && this.recent.length - this.recentHead > 1)) {
      this.recentBytes -= this.recent[this.recentHead]?.size ?? 0;
      this.recentHead++;
    }
    if (this.recentHead > 1024 && this.recentHead * 2 > this.recent.length) {
      this.recent = this.recent.slice(this.recentHead);
      this.recentHead = 0;
    }
  }

  private forgetRecent(): void {
    this.recent = [];
    this.recentHead = 0;
    this.recentBytes = 0;
  }

  /** Call only after the plan's batch is durable. */
  apply(plan: TailPlan): void {
    if (plan.reset) this.forgetRecent();
    this.remember(plan.appended);
    if (plan.reset) {
      this.items = [];
      this.head = 0;
    } else {
      for (const item of plan.appended) this.items.push(item);
      this.head += plan.dropped;
      if (this.head > 1024 && this.head * 2 > this.items.length) {
        this.items = this.items.slice(this.head);
        this.head = 0;
      }
    }
    this.current = plan.meta;
  }
}
