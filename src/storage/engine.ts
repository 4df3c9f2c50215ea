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
 * The engine does not own the backend: close() drains the engine, the caller closes the backend.
 */
import { InvalidRequest, Unavailable } from '../core/errors.js';
import type { CorruptionReport, Tree } from '../core/merkle.js';
import { WalNotRetained, decodeEntry, encodeEntry, genesisGuard, sealEntry, verifyChain, type Guard, type WalEntry, type WalOp } from '../core/wal.js';
import type { Backend, BatchOp, ReadView } from './backend.js';
import { BarrierStore, type RawStore, type SystemWrite, type ValueCipher } from './barrier.js';
import { KeyClass, Keys, assertLogicalKey, classify, dirEnd } from './keyspace.js';
import { checkIndex, rebuildIndex, type ReindexOptions } from './merkle-check.js';
import { BatchPlan, emptyTrees, flushOps, keysIn, loadTrees, readLeaves, type Leaf, type Trees } from './merkle-store.js';
import { PinnedSnapshot, readValue, treeHashes, type MerkleView } from './merkle-view.js';
import { WalTail, type TailItem, type TailPlan } from './wal-tail.js';

export interface EngineOptions {
  readonly walMaxEntries: number;
  readonly walMaxBytes: number;
  readonly now?: () => number;
  /** Called after each durable commit batch (for metrics). */
  readonly onBatch?: (info: { txns: number; ops: number; bytes: number }) => void;
}

export interface ReindexRequest extends ReindexOptions {
  /**
   * Return before the page records and roots are written; they are flushed by a later job on the
   * chain (`flushed` settles when done). If the process dies before that, the stored index is only
   * partly rebuilt: check() reports it and reindex must be run again.
   */
  readonly skipFlush?: boolean;
}

interface Txn {
  readonly ops: readonly WalOp[];
  readonly system: readonly SystemWrite[];
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

  private constructor(
    private readonly backend: Backend,
    private readonly opts: EngineOptions,
    private readonly tail: WalTail,
    private trees: Trees,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** Loads the WAL tail (sizes and hashes of retained entries) and every page record into memory. */
  static async open(backend: Backend, opts: EngineOptions): Promise<StorageEngine> {
    if (!(opts.walMaxEntries >= 1) || !(opts.walMaxBytes >= 1)) throw new InvalidRequest('WAL bounds must be at least 1');
    return new StorageEngine(backend, opts, await WalTail.load(backend), await loadTrees(backend));
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

  /** Ops carry ciphertext; the barrier is the caller in production. Resolves once durable. */
  async commitRaw(ops: readonly WalOp[], system: readonly SystemWrite[] = []): Promise<void> {
    this.assertOpen();
    for (const op of ops) assertLogicalKey(op.key);
    for (const s of system) if (s.name.length === 0) throw new InvalidRequest('system record name must not be empty');
    if (ops.length === 0 && system.length === 0) return;
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ops, system, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      void this.exclusive(() => this.flushPending());
    });
  }

  private async flushPending(): Promise<void> {
    this.scheduled = false;
    const txns = this.pending;
    this.pending = [];
    try {
      const plan = new BatchPlan(this.backend, this.trees);
      await plan.prefetch(txns.flatMap((t) => t.ops.map((op) => op.key)));
      const time = this.now();
      const epoch = this.tail.meta.epoch;
      const items: TailItem[] = [];
      let prev = this.tail.guard();
      for (const txn of txns) {
        for (const op of txn.ops) await plan.data(op);
        for (const s of txn.system) {
          const key = Keys.system(s.name);
          plan.raw(s.value === undefined ? { type: 'del', key } : { type: 'put', key, value: s.value });
        }
        // Node-class ops are written above but never replicate: no WAL entry, no Merkle leaf.
        const walOps = txn.ops.filter((op) => classify(op.key) !== KeyClass.node);
        if (walOps.length === 0) continue;
        const entry = sealEntry(prev.hash, { index: prev.index + 1n, epoch, time, ops: walOps });
        items.push(this.stage(plan, entry));
        prev = entry;
      }
      const info = await this.write(plan, items.length > 0 ? this.tail.plan(items, this.bounds()) : undefined);
      for (const t of txns) t.resolve();
      this.opts.onBatch?.({ txns: txns.length, ops: info.ops, bytes: info.bytes });
    } catch (e) {
      for (const t of txns) t.reject(e);
    }
  }

  private stage(plan: BatchPlan, entry: WalEntry): TailItem {
    const rec = encodeEntry(entry);
    plan.raw({ type: 'put', key: Keys.wal(entry.index), value: rec });
    return { index: entry.index, size: rec.length, hash: entry.hash };
  }

  private bounds(): { maxEntries: number; maxBytes: number } {
    return { maxEntries: this.opts.walMaxEntries, maxBytes: this.opts.walMaxBytes };
  }

  /** Writes one plan durably, then moves in-memory state. Runs only inside a chain job. */
  private async write(plan: BatchPlan, tailPlan: TailPlan | undefined): Promise<{ ops: number; bytes: number }> {
    // WAL GC deletes go after the entry puts so that a dropped new entry ends as a delete.
    for (const op of tailPlan?.ops ?? []) plan.raw(op);
    const { trees, ops, bytes } = plan.finish();
    await this.backend.batch(ops, { sync: true });
    // Only now, with the batch durable, may in-memory Merkle and WAL state change. If the batch
    // failed we never get here: every txn in it rejects and memory still matches storage.
    this.trees = trees;
    if (tailPlan !== undefined) {
      const before = this.tail.meta.last;
      this.tail.apply(tailPlan);
      if (this.tail.meta.last !== before || tailPlan.reset) this.notify(this.tail.meta.last);
    }
    return { ops: ops.length, bytes };
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

  // ---- what replication needs ----

  lastGuard(): Guard {
    return this.tail.guard();
  }

  firstRetainedIndex(): bigint {
    return this.tail.meta.first;
  }

  epoch(): number {
    return this.tail.meta.epoch;
  }

  /** Starts a new epoch (promotion): later entries carry it; indices and the chain continue. */
  async setEpoch(epoch: number): Promise<void> {
    this.assertOpen();
    return this.exclusive(async () => {
      await this.write(new BatchPlan(this.backend, this.trees), this.tail.plan([], this.bounds(), epoch));
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
  async readWal(from: bigint, maxEntries: number, maxBytes = Number.POSITIVE_INFINITY): Promise<WalEntry[]> {
    const { first, last } = this.tail.meta;
    if (from < first) throw new WalNotRetained(from, first);
    if (from > last || maxEntries < 1) return [];
    const out: WalEntry[] = [];
    let bytes = 0;
    for await (const [k, v] of this.backend.iterate({ gte: Keys.wal(from), lte: Keys.wal(last), limit: maxEntries })) {
      const index = Keys.walIndexOf(k);
      // GC may run between the bound check and the read: a missing first entry is "not retained",
      // and a later gap ends the answer so it is always contiguous.
      if (index !== from + BigInt(out.length)) {
        if (out.length === 0) throw new WalNotRetained(from, this.tail.meta.first);
        break;
      }
      if (out.length > 0 && bytes + v.length > maxBytes) break;
      bytes += v.length;
      out.push(decodeEntry(v));
    }
    if (out.length === 0) throw new WalNotRetained(from, this.tail.meta.first);
    return out;
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
    this.assertOpen();
    assertClass(entries.flatMap((e) => e.ops), 'tree');
    assertClass(extraNodeOps, 'node');
    return this.exclusive(async () => {
      verifyChain(this.tail.guard(), entries);
      if (entries.length === 0 && extraNodeOps.length === 0) return;
      const plan = new BatchPlan(this.backend, this.trees);
      await plan.prefetch(entries.flatMap((e) => e.ops.map((op) => op.key)));
      const items: TailItem[] = [];
      for (const e of entries) {
        for (const op of e.ops) await plan.data(op);
        items.push(this.stage(plan, e));
      }
      for (const op of extraNodeOps) await plan.data(op);
      const epoch = entries.at(-1)?.epoch ?? this.tail.meta.epoch;
      await this.write(plan, items.length > 0 ? this.tail.plan(items, this.bounds(), epoch) : undefined);
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
    this.assertOpen();
    for (const op of [...ops, ...extra]) assertLogicalKey(op.key);
    assertClass(ops, 'tree');
    assertClass(extra, 'node');
    return this.exclusive(async () => {
      const plan = new BatchPlan(this.backend, this.trees);
      await plan.prefetch(ops.map((op) => op.key));
      for (const op of [...ops, ...extra]) await plan.data(op);
      await this.write(plan, guard === undefined ? undefined : this.tail.planReset(guard));
    });
  }

  /** Deletes all data, WAL and index (not system records) and restarts at genesis, epoch 0. */
  async wipe(): Promise<void> {
    this.assertOpen();
    return this.exclusive(async () => {
      const ops: BatchOp[] = [];
      for (const prefix of [Keys.valuePrefix, Keys.walPrefix, Keys.merklePrefix]) {
        for await (const key of keysIn(this.backend, prefix)) ops.push({ type: 'del', key });
      }
      const reset = this.tail.planReset(genesisGuard(), 0);
      await this.backend.batch([...ops, ...reset.ops], { sync: true });
      // Durable first, then memory (as in write()).
      this.trees = emptyTrees();
      this.tail.apply(reset);
      this.notify(0n);
    });
  }

  /** A read view pinned at the current guard, taken between batches so data, index and guard agree. */
  async snapshot(): Promise<PinnedSnapshot> {
    this.assertOpen();
    return this.exclusive(async () => new PinnedSnapshot(await this.backend.snapshot(), this.trees, this.tail.guard()));
  }

  // ---- live reads ----

  merkleRoot(): Buffer {
    return treeHashes.merkleRoot(this.trees);
  }
  subtreeRoot(tree: Tree): Buffer {
    return treeHashes.subtreeRoot(this.trees, tree);
  }
  pageHashes(tree: Tree): Buffer[] {
    return treeHashes.pageHashes(this.trees, tree);
  }
  subpageHashes(tree: Tree, page: number): Buffer[] {
    return treeHashes.subpageHashes(this.trees, tree, page);
  }
  leaves(tree: Tree, page: number, subpage: number, view: ReadView = this.backend): Promise<Leaf[]> {
    return readLeaves(view, tree, page, subpage);
  }
  readRaw(key: string, view: ReadView = this.backend): Promise<Buffer | undefined> {
    return readValue(view, key);
  }

  /** Vault's list over logical keys; skips over each child directory instead of reading it. */
  async listKeys(prefix: string): Promise<string[]> {
    if (prefix !== '' && !prefix.endsWith('/')) throw new InvalidRequest('list prefix must end with "/"');
    const base = Keys.value(prefix);
    const end = dirEnd(base);
    const out: string[] = [];
    let gte = base;
    for (;;) {
      let next: string | undefined;
      for await (const [k] of this.backend.iterate({ gte, lt: end })) {
        const rest = k.slice(base.length);
        const slash = rest.indexOf('/');
        if (slash === -1) {
          out.push(rest);
          continue;
        }
        out.push(rest.slice(0, slash + 1));
        next = base + rest.slice(0, slash) + '0'; // '0' follows '/': the first key past this directory
        break;
      }
      if (next === undefined) return out;
      gte = next;
    }
  }

  // ---- index maintenance ----

  /** Recomputes every level from the data in a view pinned between batches; commits continue meanwhile. */
  async check(): Promise<CorruptionReport> {
    this.assertOpen();
    const view = await this.exclusive(() => this.backend.snapshot());
    try {
      return await checkIndex(view);
    } finally {
      await view.close();
    }
  }

  /** Rebuilds leaves, page records and roots from `v/`; commits wait while it runs. */
  async reindex(opts: ReindexRequest = {}): Promise<{ warnings: string[]; flushed: Promise<void> }> {
    this.assertOpen();
    return this.exclusive(async () => {
      const { trees, warnings } = await rebuildIndex(this.backend, opts);
      if (!opts.skipFlush) {
        await this.backend.batch(flushOps(trees), { sync: true });
        this.trees = trees;
        return { warnings, flushed: Promise.resolve() };
      }
      // Leaves are durable; serve the rebuilt trees now. Commits before the flush write the pages
      // they touch from these trees, and the flush writes every page from the trees of its moment.
      this.trees = trees;
      const flushed = this.exclusive(() => this.backend.batch(flushOps(this.trees), { sync: true }));
      flushed.catch(noop); // the caller may ignore `flushed`; a failure then shows in check()
      return { warnings, flushed };
    });
  }

  /** Waits for queued work, then refuses new work. Does not close the backend. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.exclusive(async () => {
      this.closed = true;
    });
  }
}

function assertClass(ops: readonly WalOp[], want: 'tree' | 'node'): void {
  for (const op of ops) {
    const isNode = classify(op.key) === KeyClass.node;
    if (isNode !== (want === 'node')) {
      throw new InvalidRequest(want === 'node' ? `"${op.key}" is not a node-class key` : `node-class key "${op.key}" cannot be replicated`);
    }
  }
}
