/**
 * Planning one commit batch: the transactions' data ops with their leaf and page updates, their
 * chained WAL entries, and the page-flush decision, against the durable state.
 *
 *   const planned = await planCommit(backend, base, txns, { time, flushIntervalMs });
 *   await backend.batch([...planned.ops, ...tailOps], { sync: true });
 *   // once durable: planned.after is the index state, planned.guard the last WAL guard
 *
 * Flush policy (see merkle-store.ts for the journal): the first batch after open, and any batch
 * once `flushIntervalMs` has passed since the last flush, writes the records of every dirty page
 * (its own and those journalled before); every other batch journals the pages it touches. Under
 * write load (KV v2 writes touch two random pages each) that turns one 8 KiB record per touched
 * page per batch into at most one per page per interval; a flush never writes more records than
 * writing every batch's pages would have. The engine also flushes when it goes idle, on check()
 * and on close().
 */
import { encodeEntry, sealRecord, type Guard, type WalEntry, type WalOp } from '../core/wal.js';
import type { BatchOp, ReadView } from './backend.js';
import type { SystemWrite } from './barrier.js';
import { KeyClass, Keys, classify } from './keyspace.js';
import { BatchPlan, type DirtyPages, type Trees } from './merkle-store.js';
import type { TailItem } from './wal-tail.js';

/** The Merkle index in memory, and what the flush policy and batching remember between batches. */
export interface IndexState {
  readonly trees: Trees;
  /** Pages whose stored record is older than `trees`; the same set as the stored journal. */
  readonly dirty: DirtyPages;
  /** When page records were last flushed (ms, the engine's clock); -Infinity before the first. */
  readonly lastFlush: number;
  /** Transactions in the last commit batch (more than one: writers are concurrent). */
  readonly lastTxns: number;
}

export function initialIndex(trees: Trees, dirty: DirtyPages): IndexState {
  return { trees, dirty, lastFlush: Number.NEGATIVE_INFINITY, lastTxns: 0 };
}

export interface FinishOptions {
  /** Transactions sharing the batch. */
  readonly txns: number;
  readonly time: number;
  readonly flushIntervalMs: number;
}

/** The batch's ops (pages included or journalled per the flush policy) and the index state after it. */
export function finishPlan(plan: BatchPlan, base: IndexState, o: FinishOptions): { ops: BatchOp[]; bytes: number; pages: number; after: IndexState } {
  const flush = o.time - base.lastFlush >= o.flushIntervalMs;
  const { trees, ops, bytes, dirty, pages } = plan.finish(base.dirty, flush);
  return { ops, bytes, pages, after: { trees, dirty, lastFlush: flush ? o.time : base.lastFlush, lastTxns: o.txns } };
}

/** What planCommit builds on: the durable state. */
export interface CommitBase {
  readonly index: IndexState;
  /** The last WAL guard. */
  readonly guard: Guard;
  readonly epoch: number;
}

export interface CommitTxn {
  readonly ops: readonly WalOp[];
  readonly system: readonly SystemWrite[];
}

export interface PlannedCommit {
  readonly plan: BatchPlan;
  /** WAL entries of the batch, for the tail plan. */
  readonly items: TailItem[];
  /** Every op but the WAL tail's (retention deletes and meta), which go after them. */
  readonly ops: BatchOp[];
  readonly bytes: number;
  /** Merkle page records among `ops` (0 when the batch only journals them): the flush metric. */
  readonly pages: number;
  readonly after: IndexState;
  /** The last WAL guard once the batch is durable. */
  readonly guard: Guard;
}

export interface PlanOptions {
  readonly time: number;
  readonly flushIntervalMs: number;
  /** Page blocks to reuse (MerkleIndex.reuse). */
  readonly reuse?: () => Buffer | undefined;
}

/** Plans `txns` (each its own WAL entry, chained from `base.guard`) as one batch on `base`. */
export async function planCommit(view: ReadView, base: CommitBase, txns: readonly CommitTxn[], o: PlanOptions): Promise<PlannedCommit> {
  const plan = new BatchPlan(view, base.index.trees, o.reuse);
  await plan.prefetch(txns.flatMap((t) => t.ops.map((op) => op.key)));
  const items: TailItem[] = [];
  let prev = base.guard;
  for (const txn of txns) {
    for (const op of txn.ops) await plan.data(op);
    for (const s of txn.system) {
      const key = Keys.system(s.name);
      plan.raw(s.value === undefined ? { type: 'del', key } : { type: 'put', key, value: s.value });
    }
    // Node-class ops are written above but never replicate: no WAL entry, no Merkle leaf.
    const walOps = txn.ops.filter((op) => classify(op.key) !== KeyClass.node);
    if (walOps.length === 0) continue;
    const { entry, record } = sealRecord(prev.hash, { index: prev.index + 1n, epoch: base.epoch, time: o.time, ops: walOps });
    plan.raw({ type: 'put', key: Keys.wal(entry.index), value: record });
    items.push({ index: entry.index, size: record.length, hash: entry.hash, entry });
    prev = entry;
  }
  const { ops, bytes, pages, after } = finishPlan(plan, base.index, { txns: txns.length, time: o.time, flushIntervalMs: o.flushIntervalMs });
  return { plan, items, ops, bytes, pages, after, guard: { index: prev.index, hash: prev.hash } };
}

/** Bytes of keys and values, as the engine reports per batch. */
export function opBytes(ops: readonly BatchOp[]): number {
  return ops.reduce((n, op) => n + Buffer.byteLength(op.key) + (op.type === 'put' ? op.value.length : 0), 0);
}

/**
 * A plan applying entries that are already sealed (a secondary applying its primary's WAL, with
 * their stored records staged as they are) and then `extra` ops without WAL entries. `records`,
 * when given, are the entries' stored forms already encoded (verifiedRecords), one per entry.
 */
export async function planEntries(
  view: ReadView,
  trees: Trees,
  entries: readonly WalEntry[],
  extra: readonly WalOp[],
  records?: readonly Buffer[],
  reuse?: () => Buffer | undefined,
): Promise<{ plan: BatchPlan; items: TailItem[] }> {
  const plan = new BatchPlan(view, trees, reuse);
  await plan.prefetch([...entries.flatMap((e) => e.ops), ...extra].map((op) => op.key));
  const items: TailItem[] = [];
  for (const [i, e] of entries.entries()) {
    for (const op of e.ops) await plan.data(op);
    const record = records?.[i] ?? encodeEntry(e);
    plan.raw({ type: 'put', key: Keys.wal(e.index), value: record });
    items.push({ index: e.index, size: record.length, hash: e.hash, entry: e });
  }
  for (const op of extra) await plan.data(op);
  return { plan, items };
}
