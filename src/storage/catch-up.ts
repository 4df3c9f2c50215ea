/**
 * Bringing an engine's in-memory WAL tail and Merkle trees up to what storage holds by reading
 * only what changed since they were loaded: the WAL entries after the tail's last one, and the
 * leaves of the subpages their keys fall in (leaves are written with their data in every commit;
 * page records may lag behind in the journal). An HA standby keeps its engine warm this way while
 * another node writes the shared database, so becoming active reads a second of entries and their
 * subpages' leaves instead of the whole tail and every page record (8 KiB each, 512).
 *
 *   const r = await catchUp(backend, { tail, trees, dirty });
 *   if (r === undefined || !r.verified) ...   // a full load (engine.ts loadState) instead
 *
 * Correct by construction only while nobody else writes (activation: the lease is ours and the
 * fence stops the previous holder). `verified` says the computed roots equal the roots storage
 * holds, which are written with every commit: equal roots mean equal pages (SHA-256), so a leaf
 * changed outside the WAL (a reindex, a Merkle sync's install) or a read that raced a commit can
 * never pass unnoticed. A standby following a live writer adopts unverified results: every
 * subpage a later entry touches is computed again from storage, and activation verifies.
 */
import { HASH_LEN, PAGE_BYTES, emptyTree, leafHash, locate, pageHash, subtreeRoot, TREES, xorInto, type Tree, type TreeState } from '../core/merkle.js';
import { decodeEntry, decodeMeta, storedHash } from '../core/wal.js';
import type { ReadView } from './backend.js';
import { Keys, classify, treeOf } from './keyspace.js';
import { decodeDirty, readLeaves, type DirtyPages, type Trees } from './merkle-store.js';
import { WalTail, type TailItem } from './wal-tail.js';

const EMPTY_ROOT = emptyTree().root;

/** Subpage leaf reads in flight at once (PostgreSQL: each a query on the pool). */
const READS_IN_FLIGHT = 8;

/** `fn` over `items`, at most `limit` at a time; results in the items' order. */
async function inParallel<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export interface LoadedState {
  readonly tail: WalTail;
  readonly trees: Trees;
  readonly dirty: DirtyPages;
}

export interface CaughtUp extends LoadedState {
  /** The computed roots equal the stored ones. */
  readonly verified: boolean;
  /** WAL entries read. */
  readonly entries: number;
  /** Subpages computed again from their leaves. */
  readonly subpages: number;
}

/**
 * `prev` brought up to storage, or undefined when the WAL no longer continues it (trimmed past
 * its last entry, replaced by a reconcile or a wipe, or behind it): then only a full load will do.
 */
export async function catchUp(view: ReadView, prev: LoadedState): Promise<CaughtUp | undefined> {
  const rawMeta = await view.get(Keys.walMeta);
  if (rawMeta === undefined) return undefined;
  const meta = decodeMeta(rawMeta);
  const from = prev.tail.meta.last;
  if (from > meta.last || from < meta.first - 1n || prev.tail.meta.first > meta.first) return undefined;
  // The previous last entry must still be storage's: a replaced WAL has other hashes.
  const mine = prev.tail.hashAt(from);
  const theirs = from === meta.first - 1n ? meta.baseHash : await view.get(Keys.wal(from)).then((r) => (r === undefined ? undefined : storedHash(r)));
  if (mine === undefined || theirs === undefined || !mine.equals(theirs)) return undefined;

  /** Per tree, page -> the subpages written since `prev`. */
  const touched = { 1: new Map<number, Set<number>>(), 2: new Map<number, Set<number>>() };
  const appended: TailItem[] = [];
  if (from < meta.last) {
    let expect = from + 1n;
    for await (const [key, record] of view.iterate({ gte: Keys.wal(expect), lte: Keys.wal(meta.last) })) {
      if (Keys.walIndexOf(key) !== expect) return undefined;
      const entry = decodeEntry(record);
      appended.push({ index: expect, size: record.length, hash: storedHash(record) });
      for (const op of entry.ops) {
        const tree = treeOf(classify(op.key));
        if (tree === undefined) continue;
        const loc = locate(op.key);
        const subpages = touched[tree].get(loc.page) ?? new Set<number>();
        subpages.add(loc.subpage);
        touched[tree].set(loc.page, subpages);
      }
      expect++;
    }
    if (expect !== meta.last + 1n) return undefined;
  }
  let subpages = 0;
  let verified = true;
  const trees: Record<Tree, TreeState> = { 1: prev.trees[1], 2: prev.trees[2] };
  for (const t of TREES) {
    if (touched[t].size > 0) {
      const blocks = [...prev.trees[t].pages];
      const hashes = [...prev.trees[t].pageHashes];
      // Leaves are written with their data in every commit (page records may lag: the journal).
      const wanted = [...touched[t]].flatMap(([p, sps]) => [...sps].map((sp) => ({ p, sp })));
      const leaves = await inParallel(wanted, READS_IN_FLIGHT, ({ p, sp }) => readLeaves(view, t, p, sp));
      const copies = new Map<number, Buffer>();
      for (const [i, { p, sp }] of wanted.entries()) {
        let block = copies.get(p);
        if (block === undefined) copies.set(p, (block = Buffer.from(blocks[p] ?? Buffer.alloc(PAGE_BYTES))));
        block.fill(0, sp * HASH_LEN, (sp + 1) * HASH_LEN);
        for (const leaf of leaves[i]!) xorInto(block, leafHash(leaf.key, leaf.valueHash), sp * HASH_LEN);
        subpages++;
      }
      for (const [p, block] of copies) {
        blocks[p] = block;
        hashes[p] = pageHash(block);
      }
      trees[t] = { pages: blocks, pageHashes: hashes, root: subtreeRoot(hashes) };
    }
    const stored = (await view.get(Keys.treeRoot(t))) ?? EMPTY_ROOT;
    if (!trees[t].root.equals(stored)) verified = false;
  }
  // Which stored page records are older than the pages (memory is current either way).
  const dirty = decodeDirty(await view.get(Keys.dirtyPages));
  return { tail: WalTail.extended(prev.tail, meta, appended), trees, dirty, verified, entries: appended.length, subpages };
}
