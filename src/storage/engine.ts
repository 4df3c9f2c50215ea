/**
 * The one commit path: data, WAL entry and Merkle update in one fsynced batch, with group commit.
 *
 *   const engine = await StorageEngine.open(backend, { walMaxEntries: 100_000, walMaxBytes: 256 << 20 });
 *   const store = engine.secure(keyring);                     // the Store services use
 *   await store.commit([{ type: 'put', key: 'sys/policy/ops', value }]);
 *   engine.onCommit((last) => streamer.wake(last));           // what DR replication follows
 *
 * Every state-changing operation runs as one job on a serial chain, so exactly one batch is in
 * flight. Transactions that arrive while a batch is being written queue up and the next job takes
 * them all (each with its own WAL index, chained): concurrent writers share one fsync.
 * In-memory state moves only once a batch is durable. The engine does not own the backend:
 * close() drains the engine, the caller closes the backend.
 *
 * Merkle page records are flushed from dirty pages (policy in commit-plan.ts). check() and
 * close() flush first; pages a crash left journalled are rebuilt from their leaves on open.
 *
 * Fail closed: every backend call goes through a FaultGuard. After the first storage fault (a
 * failed batch, an I/O error or corruption on a read) `failure()` is set for good, every write,
 * check and reindex rejects with it (StorageFailed, 503), and reads keep being served where the
 * medium still answers. Recovery is a restart of the node (see fault-guard.ts).
 */
import { InvalidRequest, Unavailable, type StorageFailed } from '../core/errors.js';
import type { CorruptionReport, Tree } from '../core/merkle.js';
import { genesisGuard, verifyChain, type Guard, type WalEntry, type WalOp } from '../core/wal.js';
import type { Backend, BatchOp, ReadView } from './backend.js';
import { FaultGuard } from './fault-guard.js';
import { BarrierStore, type RawStore, type SystemWrite, type ValueCipher } from './barrier.js';
import {
  finishPlan,
  initialIndex,
  opBytes,
  planCommit,
  planEntries,
  type CommitTxn,
  type IndexState,
} from './commit-plan.js';
import { KeyClass, Keys, assertClass, assertLogicalKey, classify, listChildren } from './keyspace.js';
import { checkIndex, rebuildIndex, type ReindexOptions } from './merkle-check.js';
import {
  BatchPlan,
  dirtyFlushOps,
  emptyTrees,
  flushOps,
  isClean,
  keysIn,
  loadTrees,
  noDirtyPages,
  readLeaves,
  type DirtyPages,
  type Leaf,
  type Trees,
} from './merkle-store.js';
import { PinnedSnapshot, readValue, treeHashes, type MerkleView } from './merkle-view.js';
import { ReadCache } from './read-cache.js';
import { HOLD_BYTES_FACTOR, WalHolds, type WalHold } from './wal-holds.js';
import { WalTail, type TailPlan, type WalBounds } from './wal-tail.js';

export interface EngineOptions {
  readonly walMaxEntries: number;
  readonly walMaxBytes: number;
  readonly now?: () => number;
  /** Called after each durable commit batch (for metrics). */
  readonly onBatch?: (info: { txns: number; ops: number; bytes: number; merklePages: number }) => void;
  /** Longest a dirty page record waits under load before a batch flushes it (default 1000 ms). */
  readonly pageFlushIntervalMs?: number;
}

export interface ReindexRequest extends ReindexOptions {
  /**
   * Return before the page records and roots are written; they are flushed by a later job on the
   * chain (`flushed` settles when done). If the process dies before that, the stored index is only
   * partly rebuilt: check() reports it and reindex must be run again.
   */
  readonly skipFlush?: boolean;
}

interface Txn extends CommitTxn {
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

const noop = (): void => {};

export class StorageEngine implements RawStore, MerkleView {
  private chain: Promise<void> = Promise.resolve();
  private pending: Txn[] = [];
  private scheduled = false;
  private closed = false;
  private readonly listeners = new Set<(lastIndex: bigint) => void>();
  private readonly now: () => number;
  /** Live values by logical key; every batch's data ops pass through it once durable. */
  private readonly cache = new ReadCache();
  /** The durable Merkle index and flush-policy memory. */
  private index: IndexState;
  private idleFlush: NodeJS.Timeout | undefined;
  /** Set while writes of tree-class keys are refused (a primary draining for demote). */
  private writeFence: { readonly refusal: () => Error; readonly passes: ReadonlySet<string> } | undefined;
  /** Set on a performance secondary: replicated-class keys change only from upstream. */
  private replicatedGuard: (() => Error) | undefined;

  private constructor(
    private readonly backend: FaultGuard,
    private readonly opts: EngineOptions,
    private readonly tail: WalTail,
    trees: Trees,
    dirty: DirtyPages,
  ) {
    this.now = opts.now ?? Date.now;
    this.index = initialIndex(trees, dirty);
  }

  /**
   * Loads the WAL tail (sizes and hashes of retained entries) and every page record into memory;
   * pages a crash left journalled are rebuilt from their leaves.
   */
  static async open(backend: Backend, opts: EngineOptions): Promise<StorageEngine> {
    if (!(opts.walMaxEntries >= 1) || !(opts.walMaxBytes >= 1)) throw new InvalidRequest('WAL bounds must be at least 1');
    const guarded = new FaultGuard(backend);
    const tail = await WalTail.load(guarded);
    const { trees, dirty } = await loadTrees(guarded);
    return new StorageEngine(guarded, opts, tail, trees, dirty);
  }

  secure(cipher: ValueCipher): BarrierStore {
    return new BarrierStore(this, cipher);
  }

  // ---- system records (raw, outside WAL and Merkle) ----

  getSystem(name: string): Promise<Buffer | undefined> {
    return this.backend.get(Keys.system(name));
  }

  async putSystem(name: string, value: Buffer | undefined): Promise<void> {
    await this.commitRaw([], [{ name, value }]);
  }

  // ---- the commit path ----

  /**
   * Ops carry ciphertext; the barrier is the caller in production. Resolves once durable.
   * `upstream`: the ops come from this node's replication primary (a performance secondary
   * re-committing what it received), the only writes `guardReplicated` lets through.
   */
  async commitRaw(ops: readonly WalOp[], system: readonly SystemWrite[] = [], opts: { upstream?: boolean } = {}): Promise<void> {
    this.assertWritable();
    for (const op of ops) assertLogicalKey(op.key);
    for (const s of system) if (s.name.length === 0) throw new InvalidRequest('system record name must not be empty');
    if (ops.length === 0 && system.length === 0) return;
    // Node-class records, and the keys the fence names (this node's own role record), stay
    // writable: the demote that fenced persists them while every other write stays refused.
    const fence = this.writeFence;
    if (fence !== undefined && ops.some((op) => classify(op.key) !== KeyClass.node && !fence.passes.has(op.key))) throw fence.refusal();
    if (this.replicatedGuard !== undefined && opts.upstream !== true && ops.some((op) => classify(op.key) === KeyClass.replicated)) throw this.replicatedGuard();
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ops, system, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      void this.exclusive(() => this.flushPending());
    });
  }

  /**
   * Refuses every later write of a replicated or local key with `refusal()` until `unfence()`,
   * except a transaction whose keys are all node class or named in `passes` (the demoting
   * node's role record, which for performance replication is local class); resolves once every
   * write accepted before the fence is durable (its group commit finished), so `lastGuard()` is
   * then final. A primary drains for demote on this.
   */
  async fence(refusal: () => Error, passes: readonly string[] = []): Promise<void> {
    this.writeFence = { refusal, passes: new Set(passes) };
    // Every accepted transaction has a flush job queued ahead of this one on the chain.
    await this.exclusive(async () => {});
  }

  /**
   * From now on (until called with undefined) refuses every write of a replicated-class key that
   * is not `upstream`, with `refusal()`: a performance secondary never applies such a write
   * locally (it would diverge from its primary). Local and node classes stay writable.
   */
  guardReplicated(refusal: (() => Error) | undefined): void {
    this.replicatedGuard = refusal;
  }

  unfence(): void {
    this.writeFence = undefined;
  }

  /** Writes every queued transaction in one batch. Runs only inside a chain job. */
  private async flushPending(): Promise<void> {
    // Under concurrency (the last batch was shared), let one turn of the event loop pass first:
    // writers whose requests are already in flight join this batch instead of the next one.
    if (this.index.lastTxns > 1) await new Promise<void>((resolve) => setImmediate(resolve));
    this.scheduled = false;
    const txns = this.pending;
    this.pending = [];
    try {
      // An earlier batch failed while these waited: none of them may be acknowledged now.
      this.assertWritable();
      const base = { index: this.index, guard: this.tail.guard(), epoch: this.tail.meta.epoch };
      const planned = await planCommit(this.backend, base, txns, { time: this.now(), flushIntervalMs: this.flushIntervalMs() });
      // WAL GC deletes go after the entry puts so that a dropped new entry ends as a delete.
      const tailPlan = planned.items.length > 0 ? this.tail.plan(planned.items, this.bounds()) : undefined;
      const ops = tailPlan === undefined ? planned.ops : [...planned.ops, ...tailPlan.ops];
      await this.backend.batch(ops, { sync: true });
      // If the batch failed we never get here: every txn in it rejects and memory still matches storage.
      this.applied(planned.plan, planned.after, tailPlan);
      for (const t of txns) t.resolve();
      this.opts.onBatch?.({ txns: txns.length, ops: ops.length, bytes: planned.bytes + opBytes(tailPlan?.ops ?? []), merklePages: countPageRecords(planned.ops) });
    } catch (e) {
      for (const t of txns) t.reject(e);
    }
  }

  private flushIntervalMs(): number {
    return this.opts.pageFlushIntervalMs ?? 1000;
  }

  /** Writes the dirty page records and drops the journal. Runs only inside a chain job. */
  private async flushDirty(sync: boolean): Promise<void> {
    if (isClean(this.index.dirty)) return;
    await this.backend.batch(dirtyFlushOps(this.index.trees, this.index.dirty), { sync });
    this.index = { ...this.index, dirty: noDirtyPages(), lastFlush: this.now() };
  }

  /**
   * Pages left dirty are flushed one interval later if no batch has done it by then, so an idle
   * node's stored index is current (and a crash has nothing to rebuild). Not synced: a lost flush
   * leaves the journal, which open() repairs.
   */
  private armIdleFlush(): void {
    if (this.idleFlush !== undefined || isClean(this.index.dirty) || this.closed || this.failure() !== undefined) return;
    this.idleFlush = setTimeout(() => {
      this.idleFlush = undefined;
      if (this.closed) return;
      this.exclusive(() => this.flushDirty(false)).then(
        () => this.armIdleFlush(),
        noop, // a failed flush changes nothing; the next batch, check() or close() retries
      );
    }, this.flushIntervalMs());
    this.idleFlush.unref();
  }

  private readonly walHolds = new WalHolds();

  /** The retention bounds a commit trims to: the configured ones, widened by live holds. */
  private bounds(): WalBounds {
    const keepFrom = this.walHolds.keepFrom();
    const configured = this.walBounds();
    return keepFrom === undefined ? configured : { ...configured, keepFrom, holdMaxBytes: HOLD_BYTES_FACTOR * this.opts.walMaxBytes };
  }

  /**
   * Keeps WAL entries from `from` on past the retention bounds until the hold moves on or is
   * released, up to HOLD_BYTES_FACTOR × walMaxBytes (src/storage/wal-holds.ts).
   */
  holdWal(from: bigint): WalHold {
    return this.walHolds.hold(from);
  }

  /**
   * Writes one plan durably, then moves in-memory state. Runs only inside a chain job.
   * `txns` (how many transactions share the batch) feeds the page-flush policy.
   */
  private async write(plan: BatchPlan, tailPlan: TailPlan | undefined, txns: number): Promise<void> {
    // WAL GC deletes go after the entry puts so that a dropped new entry ends as a delete.
    for (const op of tailPlan?.ops ?? []) plan.raw(op);
    const { ops, after } = finishPlan(plan, this.index, { txns, time: this.now(), flushIntervalMs: this.flushIntervalMs() });
    await this.backend.batch(ops, { sync: true });
    // If the batch failed we never get here: every txn in it rejects and memory still matches storage.
    this.applied(plan, after, tailPlan);
  }

  /** A batch is durable: only now may in-memory Merkle, WAL and cache state change. */
  private applied(plan: BatchPlan, after: IndexState, tailPlan: TailPlan | undefined): void {
    this.index = after;
    this.armIdleFlush();
    this.cache.applied(plan.dataOps);
    if (tailPlan !== undefined) {
      const before = this.tail.meta.last;
      this.tail.apply(tailPlan);
      if (this.tail.meta.last !== before || tailPlan.reset) this.notify(this.tail.meta.last);
    }
  }

  private notify(last: bigint): void {
    for (const l of this.listeners) {
      try {
        l(last);
      } catch {
        // A listener's failure is the listener's to handle; it must not fail a durable commit.
      }
    }
  }

  /** Runs `fn` alone on the serial chain, after every job queued before it. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn);
    this.chain = run.then(noop, noop);
    return run;
  }

  private assertOpen(): void {
    if (this.closed) throw new Unavailable('storage engine is closed');
  }

  /** Open and not failed: what every write, check and reindex requires. */
  private assertWritable(): void {
    this.assertOpen();
    const failed = this.failure();
    if (failed !== undefined) throw failed;
  }

  /** Runs a writing job on the chain; it refuses if the store failed before its turn came. */
  private exclusiveWrite<T>(fn: () => Promise<T>): Promise<T> {
    this.assertWritable();
    return this.exclusive(async () => {
      this.assertWritable();
      return fn();
    });
  }

  /** The first storage fault (sticky until restart), or undefined while storage is healthy. */
  failure(): StorageFailed | undefined {
    return this.backend.failure;
  }

  // ---- what replication needs ----

  lastGuard(): Guard {
    return this.tail.guard();
  }

  /** Bytes of WAL entries retained (the bound `walMaxBytes` applies to this). */
  walRetainedBytes(): number {
    return this.tail.meta.bytes;
  }

  /** The configured retention bounds (walMaxEntries, walMaxBytes). */
  walBounds(): { maxEntries: number; maxBytes: number } {
    return { maxEntries: this.opts.walMaxEntries, maxBytes: this.opts.walMaxBytes };
  }

  firstRetainedIndex(): bigint {
    return this.tail.meta.first;
  }

  epoch(): number {
    return this.tail.meta.epoch;
  }

  /** Starts a new epoch (promotion): later entries carry it; indices and the chain continue. */
  async setEpoch(epoch: number): Promise<void> {
    return this.exclusiveWrite(async () => {
      await this.write(new BatchPlan(this.backend, this.index.trees), this.tail.plan([], this.bounds(), epoch), 0);
    });
  }

  /** The hash of a retained entry, or of the guard just before the first retained one. */
  async hashAt(index: bigint): Promise<Buffer | undefined> {
    return this.tail.hashAt(index);
  }

  /**
   * Entries from `from` on, at most `maxEntries` and (beyond the first) `maxBytes` of stored
   * records; [] when `from` is past the last index. WalNotRetained when `from` was deleted.
   */
  readWal(from: bigint, maxEntries: number, maxBytes = Number.POSITIVE_INFINITY): Promise<WalEntry[]> {
    return this.tail.read(this.backend, from, maxEntries, maxBytes);
  }

  /** Calls `listener` with the new last index after each durable change of it; returns unsubscribe. */
  onCommit(listener: (lastIndex: bigint) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Secondary: applies the primary's entries (ciphertext, same hashes) plus this node's own
   * node-class ops in one batch, after verifying they continue lastGuard(). Throws WalChainBroken
   * and changes nothing if they do not.
   */
  async applyEntries(entries: readonly WalEntry[], extraNodeOps: readonly WalOp[] = []): Promise<void> {
    this.assertWritable();
    assertClass(entries.flatMap((e) => e.ops), 'tree');
    assertClass(extraNodeOps, 'node');
    return this.exclusiveWrite(async () => {
      verifyChain(this.tail.guard(), entries);
      if (entries.length === 0 && extraNodeOps.length === 0) return;
      const { plan, items } = await planEntries(this.backend, this.index.trees, entries, extraNodeOps);
      const epoch = entries.at(-1)?.epoch ?? this.tail.meta.epoch;
      await this.write(plan, items.length > 0 ? this.tail.plan(items, this.bounds(), epoch) : undefined, entries.length);
    });
  }

  /**
   * merkle-sync's resumable middle: writes ciphertext puts/deletes of tree-class keys with their
   * Merkle updates, leaving the WAL and guard alone. Until installSnapshot ends the sync, this
   * node's data matches no guard, so nothing may be streamed onto it.
   */
  installChunk(ops: readonly WalOp[]): Promise<void> {
    return this.install(ops, undefined, []);
  }

  /** merkle-sync's end: the last ops, the WAL reset to `guard` (no entries retained), one batch. */
  installSnapshot(ops: readonly WalOp[], guard: Guard, extraNodeOps: readonly WalOp[] = []): Promise<void> {
    return this.install(ops, guard, extraNodeOps);
  }

  private async install(ops: readonly WalOp[], guard: Guard | undefined, extra: readonly WalOp[]): Promise<void> {
    this.assertWritable();
    for (const op of [...ops, ...extra]) assertLogicalKey(op.key);
    assertClass(ops, 'tree');
    assertClass(extra, 'node');
    return this.exclusiveWrite(async () => {
      const { plan } = await planEntries(this.backend, this.index.trees, [], [...ops, ...extra]);
      await this.write(plan, guard === undefined ? undefined : this.tail.planReset(guard), 1);
    });
  }

  /** Deletes all data, WAL and index (not system records) and restarts at genesis, epoch 0. */
  async wipe(): Promise<void> {
    return this.exclusiveWrite(async () => {
      const ops: BatchOp[] = [];
      for (const prefix of [Keys.valuePrefix, Keys.walPrefix, Keys.merklePrefix]) {
        for await (const key of keysIn(this.backend, prefix)) ops.push({ type: 'del', key });
      }
      const reset = this.tail.planReset(genesisGuard(), 0);
      await this.backend.batch([...ops, ...reset.ops], { sync: true });
      // Durable first, then memory (as in write()). The journal is under m/ and went too.
      this.index = { ...this.index, trees: emptyTrees(), dirty: noDirtyPages() };
      this.cache.clear();
      this.tail.apply(reset);
      this.notify(0n);
    });
  }

  /** A read view pinned at the current guard, taken between batches so data, index and guard agree. */
  async snapshot(): Promise<PinnedSnapshot> {
    this.assertOpen();
    return this.exclusive(async () => new PinnedSnapshot(await this.backend.snapshot(), this.index.trees, this.tail.guard()));
  }

  // ---- live reads ----

  merkleRoot(): Buffer {
    return treeHashes.merkleRoot(this.index.trees);
  }
  subtreeRoot(tree: Tree): Buffer {
    return treeHashes.subtreeRoot(this.index.trees, tree);
  }
  pageHashes(tree: Tree): Buffer[] {
    return treeHashes.pageHashes(this.index.trees, tree);
  }
  subpageHashes(tree: Tree, page: number): Buffer[] {
    return treeHashes.subpageHashes(this.index.trees, tree, page);
  }
  leaves(tree: Tree, page: number, subpage: number, view: ReadView = this.backend): Promise<Leaf[]> {
    return readLeaves(view, tree, page, subpage);
  }
  /** Live reads (no `view`) go through the read cache; the buffer returned must not be modified. */
  readRaw(key: string, view?: ReadView): Promise<Buffer | undefined> {
    if (view !== undefined) return readValue(view, key);
    return this.cache.read(key, () => readValue(this.backend, key));
  }

  valueRejected(cause: unknown): StorageFailed {
    return this.backend.corrupted(cause);
  }

  /** Vault's list over logical keys; skips over each child directory instead of reading it. */
  listKeys(prefix: string): Promise<string[]> {
    return listChildren(this.backend, prefix);
  }

  // ---- index maintenance ----

  /**
   * Recomputes every level from the data in a view pinned between batches; commits continue
   * meanwhile. Dirty page records are flushed first, so the view holds the index this node serves.
   */
  async check(): Promise<CorruptionReport> {
    const view = await this.exclusiveWrite(async () => {
      await this.flushDirty(false);
      return this.backend.snapshot();
    });
    try {
      return await checkIndex(view);
    } finally {
      await view.close();
    }
  }

  /** Rebuilds leaves, page records and roots from `v/`; commits wait while it runs. */
  async reindex(opts: ReindexRequest = {}): Promise<{ warnings: string[]; flushed: Promise<void> }> {
    return this.exclusiveWrite(async () => {
      const { trees, warnings } = await rebuildIndex(this.backend, opts);
      if (!opts.skipFlush) {
        await this.backend.batch(flushOps(trees), { sync: true });
        this.index = { ...this.index, trees, dirty: noDirtyPages() };
        return { warnings, flushed: Promise.resolve() };
      }
      // Leaves are durable; serve the rebuilt trees now. Commits before the flush write the pages
      // they touch from these trees, and the flush writes every page from the trees of its moment.
      this.index = { ...this.index, trees };
      const flushed = this.exclusiveWrite(async () => {
        await this.backend.batch(flushOps(this.index.trees), { sync: true });
        this.index = { ...this.index, dirty: noDirtyPages() };
      });
      flushed.catch(noop); // the caller may ignore `flushed`; a failure then shows in check()
      return { warnings, flushed };
    });
  }

  /** Waits for queued work, flushes dirty page records, then refuses new work. Does not close the backend. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.idleFlush);
    await this.exclusive(async () => {
      try {
        // A failed store is not written again; the journal on disk lets the next open rebuild.
        if (this.failure() === undefined) await this.flushDirty(true);
      } catch {
        // Nothing is lost: the journal is durable, and the next open rebuilds those pages.
      } finally {
        this.closed = true;
        clearTimeout(this.idleFlush);
      }
    });
  }
}

/** Merkle page records a batch writes (0 when it only journals them): the flush metric. */
function countPageRecords(ops: readonly BatchOp[]): number {
  let n = 0;
  for (const op of ops) if (op.type === 'put' && (op.key.startsWith(Keys.pagePrefix(1)) || op.key.startsWith(Keys.pagePrefix(2)))) n++;
  return n;
}
