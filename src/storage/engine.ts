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
 * Merkle page records are flushed from dirty pages (policy in commit-plan.ts; the index and the
 * flushes outside commits in merkle-index.ts). check() and close() flush first; pages a crash left
 * journalled are rebuilt from their leaves on open. The serial chain and its closed / failed
 * admission live in job-chain.ts, the demote fence and the replicated-key guard in write-gate.ts.
 *
 * The key and value contract (contract.ts) is checked in commitRaw, before a write joins a batch.
 * A batch the store refuses for its data (WriteRefused) is written again one transaction at a
 * time, so only the refused write fails, with a 400.
 *
 * Fail closed: every backend call goes through a FaultGuard. After the first storage fault (a
 * failed batch, an I/O error or corruption on a read) `failure()` is set for good, every write,
 * check and reindex rejects with it (StorageFailed, 503), and reads keep being served where the
 * medium still answers. Recovery is a restart of the node (see fault-guard.ts).
 */
import { randomBytes } from 'node:crypto';
import { InvalidRequest, type StorageFailed } from '../core/errors.js';
import type { CorruptionReport, Tree } from '../core/merkle.js';
import { genesisGuard, verifiedRecords, type Guard, type WalEntry, type WalOp } from '../core/wal.js';
import { WriteRefused, type Backend, type BatchOp, type ReadView } from './backend.js';
import { FaultGuard } from './fault-guard.js';
import { BarrierStore, type RawStore, type SystemWrite, type ValueCipher } from './barrier.js';
import { CommitListeners } from './commit-listeners.js';
import { assertWithinContract } from './contract.js';
import { finishPlan, opBytes, planCommit, planEntries, type CommitTxn, type IndexState } from './commit-plan.js';
import type { EngineOptions, ReindexRequest } from './engine-options.js';
import { JobChain } from './job-chain.js';
import { KeyClass, Keys, assertClass, assertLogicalKey, classify, listChildren } from './keyspace.js';
import { MerkleIndex } from './merkle-index.js';
import { BatchPlan, keysIn, loadTrees, readLeaves, type DirtyPages, type Leaf, type Trees } from './merkle-store.js';
import { PinnedSnapshot, readValue, treeHashes, type MerkleView } from './merkle-view.js';
import { ReadCache } from './read-cache.js';
import { HOLD_BYTES_FACTOR, WalHolds, type WalHold } from './wal-holds.js';
import { catchUp, type LoadedState } from './catch-up.js';
import { ReadFollower, type Followed, type PushedWal } from './read-follow.js';
import { WalTail, type TailPlan, type WalBounds } from './wal-tail.js';
import { WriteGate } from './write-gate.js';

export type { EngineOptions, ReindexRequest } from './engine-options.js';

interface Txn extends CommitTxn {
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
  /** Runs once the batch is durable, before the writer hears of it (a watched record's effect). */
  readonly after?: () => void;
}

/**
 * A replicated key whose arrival from a primary writes system records in the same batch (the
 * keyring record: the sealed keyring and seal config a restart unseals with) and has an effect
 * once durable (the live keyring takes the new terms), before any later entry is applied.
 */
export interface RecordWatch {
  readonly key: string;
  derive(value: Buffer): { readonly system: readonly SystemWrite[]; readonly after: () => void };
}

/** How reload() or follow() brought memory up to storage: from the entries since (and the subpages they touched), or by loading everything. */
export type { Followed, PushedWal } from './read-follow.js';
export type ReloadResult = { readonly from: 'catch-up'; readonly entries: number; readonly subpages: number; readonly verified?: boolean } | { readonly from: 'full load' };


export class StorageEngine implements RawStore, MerkleView {
  /** The serial chain every state-changing job runs on, and the closed / failed admission check. */
  private readonly jobs: JobChain;
  private pending: Txn[] = [];
  private scheduled = false;
  private readonly listeners = new CommitListeners();
  private readonly now: () => number;
  /** Live values by logical key; every batch's data ops pass through it once durable. */
  private readonly cache: ReadCache;
  /** The durable Merkle index, its flush-policy memory and the flushes outside commits. */
  private readonly index: MerkleIndex;
  /** The demote fence and the performance secondary's replicated-key guard. */
  private readonly gate = new WriteGate();
  /** Set while this node is an HA standby: every write refuses with it before reaching storage. */
  private standbyRefusal: (() => Error) | undefined;
  private watch: RecordWatch | undefined;
  /** A standby's read cache, brought up to the database before it answers (followReads). */
  private readonly reads: ReadFollower;

  private constructor(
    private readonly backend: FaultGuard,
    private readonly opts: EngineOptions,
    private tail: WalTail,
    trees: Trees,
    dirty: DirtyPages,
    private readonly failures: Set<(failure: StorageFailed) => void>,
  ) {
    this.now = opts.now ?? Date.now;
    this.cache = new ReadCache(opts.readCache);
    this.jobs = new JobChain(() => this.failure() ?? this.standbyRefusal?.());
    this.index = new MerkleIndex(backend, this.jobs, trees, dirty, { now: this.now, flushIntervalMs: opts.pageFlushIntervalMs ?? 1000 });
    this.reads = new ReadFollower(backend, this.cache);
  }

  /**
   * Loads the WAL tail (sizes and hashes of retained entries) and every page record into memory;
   * pages a crash left journalled are rebuilt from their leaves.
   */
  static async open(backend: Backend, opts: EngineOptions): Promise<StorageEngine> {
    if (!(opts.walMaxEntries >= 1) || !(opts.walMaxBytes >= 1)) throw new InvalidRequest('WAL bounds must be at least 1');
    const failures = new Set<(failure: StorageFailed) => void>();
    const guarded = new FaultGuard(backend, { recovers: opts.settlesOnReload === true, onFault: (f) => failures.forEach((l) => l(f)) });
    const { tail, trees, dirty } = await loadState(guarded);
    return new StorageEngine(guarded, opts, tail, trees, dirty, failures);
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

  /** Applies `watch` to every write that comes from a primary (applied entries, installs, upstream commits). */
  watchRecord(watch: RecordWatch | undefined): void {
    this.watch = watch;
  }

  /** What the watched record among `ops` (its last put) derives; undefined when absent. */
  private derived(ops: readonly WalOp[]): ReturnType<RecordWatch['derive']> | undefined {
    const watch = this.watch;
    if (watch === undefined) return undefined;
    const put = ops.findLast((op) => op.key === watch.key && op.type === 'put');
    return put?.type === 'put' ? watch.derive(put.value) : undefined;
  }

  // ---- the commit path ----

  /**
   * Ops carry ciphertext; the barrier is the caller in production. Resolves once durable.
   * `upstream`: the ops come from this node's replication primary (a performance secondary
   * re-committing what it received), the only writes `guardReplicated` lets through.
   */
  async commitRaw(ops: readonly WalOp[], system: readonly SystemWrite[] = [], opts: { upstream?: boolean } = {}): Promise<void> {
    this.jobs.assertWritable();
    for (const op of ops) assertLogicalKey(op.key);
    for (const s of system) if (s.name.length === 0) throw new InvalidRequest('system record name must not be empty');
    // Before batching: a write no engine may take is refused alone. Upstream ops are the
    // primary's own data, applied as they are (contract.ts).
    if (opts.upstream !== true) assertWithinContract(ops, this.opts.limits);
    if (ops.length === 0 && system.length === 0) return;
    this.gate.admit(ops, opts.upstream === true);
    const watched = opts.upstream === true ? this.derived(ops) : undefined;
    const writes = watched === undefined ? system : [...system, ...watched.system];
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ops, system: writes, resolve, reject, ...(watched !== undefined ? { after: watched.after } : {}) });
      if (this.scheduled) return;
      this.scheduled = true;
      void this.jobs.run(() => this.flushPending());
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
    this.gate.fence(refusal, passes);
    // Every accepted transaction has a flush job queued ahead of this one on the chain.
    await this.jobs.run(async () => {});
  }

  /**
   * From now on (until called with undefined) refuses every write of a replicated-class key that
   * is not `upstream`, with `refusal()`: a performance secondary never applies such a write
   * locally (it would diverge from its primary). Local and node classes stay writable.
   */
  guardReplicated(refusal: (() => Error) | undefined): void {
    this.gate.guardReplicated(refusal);
  }

  unfence(): void {
    this.gate.unfence();
  }

  /**
   * Writes every queued transaction in one batch. Runs only inside a chain job. When the store
   * refuses the batch for its data (WriteRefused: nothing written, the store is fine), each
   * transaction is written again in a batch of its own: only the ones the store refuses fail, the
   * others commit, and the engine stays writable.
   */
  private async flushPending(): Promise<void> {
    // Under concurrency (the last batch was shared), let one turn of the event loop pass first:
    // writers whose requests are already in flight join this batch instead of the next one.
    if (this.index.current.lastTxns > 1) await new Promise<void>((resolve) => setImmediate(resolve));
    this.scheduled = false;
    const txns = this.pending;
    this.pending = [];
    try {
      await this.commitBatch(txns);
    } catch (e) {
      if (!(e instanceof WriteRefused) || txns.length === 1) {
        for (const t of txns) t.reject(e);
        return;
      }
      for (const t of txns) await this.commitBatch([t]).catch((alone: unknown) => t.reject(alone));
    }
  }

  /** Plans and writes `txns` as one batch and resolves them once durable; rejects (resolving none) when the batch fails. */
  private async commitBatch(txns: readonly Txn[]): Promise<void> {
    // An earlier batch failed while these waited: none of them may be acknowledged now.
    this.jobs.assertWritable();
    const base = { index: this.index.current, guard: this.tail.guard(), epoch: this.tail.meta.epoch };
    const planned = await planCommit(this.backend, base, txns, { time: this.now(), flushIntervalMs: this.opts.pageFlushIntervalMs ?? 1000, reuse: this.index.reuse });
    // WAL GC deletes go after the entry puts so that a dropped new entry ends as a delete.
    const tailPlan = planned.items.length > 0 ? this.tail.plan(planned.items, this.bounds()) : undefined;
    const ops = tailPlan === undefined ? planned.ops : [...planned.ops, ...tailPlan.ops];
    await this.backend.batch(ops, { sync: true });
    // If the batch failed we never get here: memory still matches storage.
    this.applied(planned.plan, planned.after, tailPlan);
    for (const t of txns) t.after?.();
    for (const t of txns) t.resolve();
    this.opts.onBatch?.({ txns: txns.length, ops: ops.length, bytes: planned.bytes + opBytes(tailPlan?.ops ?? []), merklePages: planned.pages });
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
  private async write(plan: BatchPlan, tailPlan: TailPlan | undefined, txns: number, after?: () => void): Promise<void> {
    // WAL GC deletes go after the entry puts so that a dropped new entry ends as a delete.
    for (const op of tailPlan?.ops ?? []) plan.raw(op);
    const durable = after;
    const { ops, after: indexAfter } = finishPlan(plan, this.index.current, { txns, time: this.now(), flushIntervalMs: this.opts.pageFlushIntervalMs ?? 1000 });
    await this.backend.batch(ops, { sync: true });
    // If the batch failed we never get here: every txn in it rejects and memory still matches storage.
    this.applied(plan, indexAfter, tailPlan);
    durable?.();
  }

  /** A batch is durable: only now may in-memory Merkle, WAL and cache state change. */
  private applied(plan: BatchPlan, after: IndexState, tailPlan: TailPlan | undefined): void {
    this.index.advance(after);
    this.index.wrote(plan.dataOps);
    this.cache.applied(plan.dataOps);
    if (tailPlan !== undefined) {
      const before = this.tail.meta.last;
      this.tail.apply(tailPlan);
      if (this.tail.meta.last !== before || tailPlan.reset) this.listeners.notify(this.tail.meta.last);
    }
  }

  /**
   * HA: while `refusal` is set, every write (commits, system records, applies, installs, epoch,
   * wipe, check, reindex) refuses with it at once and storage is not touched: this node is a
   * standby and another node writes the shared database. Reads are still served. Undefined: the
   * node may write again (after reload(), as the new active node).
   */
  standby(refusal: (() => Error) | undefined): void {
    // Becoming a standby: what the cache holds is not yet followed from the database.
    if (refusal !== undefined && this.standbyRefusal === undefined) this.reads.forget();
    this.standbyRefusal = refusal;
  }

  /**
   * Re-reads the WAL tail and the Merkle index from storage and forgets every cached value, as a
   * fresh open would: another node of the cluster wrote the shared database while this one was a
   * standby. With `settlesOnReload` (PostgreSQL: a transaction whose COMMIT outcome was unknown
   * either happened whole or not at all, and reading settles which) a storage fault is forgotten
   * too, so the node recovers without a restart; otherwise a failed engine stays failed. Runs
   * after every job queued before it.
   */
  async reload(): Promise<ReloadResult> {
    this.jobs.assertOpen();
    return this.jobs.run(async () => {
      const failed = this.backend.failure !== undefined;
      if (failed && this.opts.settlesOnReload !== true) throw this.backend.failure;
      // After a fault memory cannot be trusted: only a full load settles it.
      const caught = failed ? undefined : await catchUp(this.backend, this.loaded());
      const { tail, trees, dirty } = caught?.verified === true ? caught : await loadState(this.backend);
      this.tail = tail;
      this.index.replace(trees, dirty);
      this.cache.clear();
      this.backend.clear();
      this.listeners.notify(tail.meta.last);
      return caught?.verified === true ? { from: 'catch-up', entries: caught.entries, subpages: caught.subpages } : { from: 'full load' };
    });
  }

  /**
   * HA standby: brings the WAL tail and the Merkle index toward what the active node has written,
   * reading only the entries since the last call and the pages they touch (catch-up.ts), so that
   * becoming active (reload) reads little. Adopted unverified, since the active node writes
   * meanwhile; reload verifies. Storage faults propagate and change nothing.
   */
  async follow(): Promise<ReloadResult | undefined> {
    this.jobs.assertOpen();
    return this.jobs.run(async () => {
      const caught = await catchUp(this.backend, this.loaded());
      if (caught === undefined) return undefined;
      this.tail = caught.tail;
      this.index.replace(caught.trees, caught.dirty);
      return { from: 'catch-up', entries: caught.entries, subpages: caught.subpages, verified: caught.verified };
    });
  }

  /**
   * HA standby: brings the read cache up to what the database holds when this call begins, so a
   * standby answers reads from memory as current as the active node (read-follow.ts: one round
   * trip on PostgreSQL). Not on the job chain: a read never waits behind follow()'s Merkle work.
   * The caller runs one at a time.
   */
  followReads(): Promise<Followed> {
    this.jobs.assertOpen();
    return this.reads.follow();
  }

  /**
   * HA standby: takes WAL entries the active node pushed into the read cache when they follow on
   * from the last followed (read-follow.ts applyPushed); undefined when they do not. Never beside followReads().
   */
  applyPushed(wal: PushedWal): Followed | undefined {
    this.jobs.assertOpen();
    return this.reads.applyPushed(wal);
  }

  private loaded(): LoadedState {
    return { tail: this.tail, trees: this.index.pinTrees(), dirty: this.index.current.dirty };
  }

  /** Calls `listener` when storage fails (the first fault, and the first again after a reload cleared one). */
  onFailure(listener: (failure: StorageFailed) => void): () => void {
    this.failures.add(listener);
    return () => this.failures.delete(listener);
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
    return this.jobs.runWrite(async () => {
      await this.write(new BatchPlan(this.backend, this.index.current.trees, this.index.reuse), this.tail.plan([], this.bounds(), epoch), 0);
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
    return this.listeners.add(listener);
  }

  /**
   * Secondary: applies the primary's entries (ciphertext, same hashes) plus this node's own
   * node-class ops in one batch, after verifying they continue lastGuard(). Throws WalChainBroken
   * and changes nothing if they do not.
   */
  async applyEntries(entries: readonly WalEntry[], extraNodeOps: readonly WalOp[] = []): Promise<void> {
    this.jobs.assertWritable();
    assertClass(entries.flatMap((e) => e.ops), 'tree');
    assertClass(extraNodeOps, 'node');
    return this.jobs.runWrite(async () => {
      const records = verifiedRecords(this.tail.guard(), entries);
      if (entries.length === 0 && extraNodeOps.length === 0) return;
      const { plan, items } = await planEntries(this.backend, this.index.current.trees, entries, extraNodeOps, records, this.index.reuse);
      const watched = this.plannedWatch(plan, entries.flatMap((e) => e.ops));
      const epoch = entries.at(-1)?.epoch ?? this.tail.meta.epoch;
      await this.write(plan, items.length > 0 ? this.tail.plan(items, this.bounds(), epoch) : undefined, entries.length, watched?.after);
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
    this.jobs.assertWritable();
    for (const op of [...ops, ...extra]) assertLogicalKey(op.key);
    assertClass(ops, 'tree');
    assertClass(extra, 'node');
    return this.jobs.runWrite(async () => {
      const { plan } = await planEntries(this.backend, this.index.current.trees, [], [...ops, ...extra], undefined, this.index.reuse);
      // HA standbys learn from it that data changed that no WAL entry names (read-follow.ts).
      plan.raw({ type: 'put', key: Keys.installMark, value: randomBytes(8) });
      const watched = this.plannedWatch(plan, ops);
      await this.write(plan, guard === undefined ? undefined : this.tail.planReset(guard), 1, watched?.after);
    });
  }

  /** Adds the watched record's system writes among `ops` to `plan`; returns what to run once durable. */
  private plannedWatch(plan: BatchPlan, ops: readonly WalOp[]): ReturnType<RecordWatch['derive']> | undefined {
    const watched = this.derived(ops);
    for (const s of watched?.system ?? []) {
      const key = Keys.system(s.name);
      plan.raw(s.value === undefined ? { type: 'del', key } : { type: 'put', key, value: s.value });
    }
    return watched;
  }

  /** Deletes all data, WAL and index (not system records) and restarts at genesis, epoch 0. */
  async wipe(): Promise<void> {
    return this.jobs.runWrite(async () => {
      const ops: BatchOp[] = [];
      for (const prefix of [Keys.valuePrefix, Keys.walPrefix, Keys.merklePrefix]) {
        for await (const key of keysIn(this.backend, prefix)) ops.push({ type: 'del', key });
      }
      const reset = this.tail.planReset(genesisGuard(), 0);
      // HA standbys learn from it that the data changed under every cached value (read-follow.ts).
      ops.push({ type: 'put', key: Keys.installMark, value: randomBytes(8) });
      await this.backend.batch([...ops, ...reset.ops], { sync: true });
      // Durable first, then memory (as in write()). The journal is under m/ and went too.
      this.index.reset();
      this.cache.clear();
      this.tail.apply(reset);
      this.listeners.notify(0n);
    });
  }

  /** A read view pinned at the current guard, taken between batches so data, index and guard agree. */
  async snapshot(): Promise<PinnedSnapshot> {
    this.jobs.assertOpen();
    return this.jobs.run(async () => new PinnedSnapshot(await this.backend.snapshot(), this.index.pinTrees(), this.tail.guard()));
  }

  // ---- live reads ----

  /** Merkle page copies commits wrote into reused blocks since open (page-blocks.ts). */
  get reusedPageBlocks(): number {
    return this.index.reusedBlocks;
  }

  // Each returns copies (treeHashes), so it reads the trees without pinning them.
  merkleRoot(): Buffer {
    return treeHashes.merkleRoot(this.index.current.trees);
  }
  subtreeRoot(tree: Tree): Buffer {
    return treeHashes.subtreeRoot(this.index.current.trees, tree);
  }
  pageHashes(tree: Tree): Buffer[] {
    return treeHashes.pageHashes(this.index.current.trees, tree);
  }
  subpageHashes(tree: Tree, page: number): Buffer[] {
    return treeHashes.subpageHashes(this.index.current.trees, tree, page);
  }
  leaves(tree: Tree, page: number, subpage: number, view: ReadView = this.backend): Promise<Leaf[]> {
    return readLeaves(view, tree, page, subpage);
  }
  /** Values (and absences) the read cache holds now: 0 while it is off (`disable_cache`). */
  get cachedValues(): number {
    return this.cache.size;
  }

  /** Live reads (no `view`) go through the read cache; the buffer returned must not be modified. */
  readRaw(key: string, view?: ReadView): Promise<Buffer | undefined> {
    if (view !== undefined) return readValue(view, key);
    // A standby's cache follows the active node's writes through the WAL (follow()); node-class
    // keys are in no WAL entry, so a standby reads them from storage.
    if (this.standbyRefusal !== undefined && classify(key) === KeyClass.node) return readValue(this.backend, key);
    return this.cache.read(key, () => readValue(this.backend, key));
  }

  valueRejected(cause: unknown): StorageFailed {
    return this.backend.corrupted(cause);
  }

  /** Vault's list over logical keys; skips over each child directory instead of reading it. */
  listKeys(prefix: string): Promise<string[]> {
    return listChildren(this.backend, prefix);
  }

  // ---- index maintenance (merkle-index.ts) ----

  /** Verifies every level against the data, after flushing dirty page records; commits continue. */
  check(): Promise<CorruptionReport> {
    return this.index.check();
  }

  /** Rebuilds leaves, page records and roots from `v/`; commits go on while it runs (merkle-index.ts). */
  reindex(opts: ReindexRequest = {}): Promise<{ warnings: string[]; flushed: Promise<void> }> {
    return this.index.reindex(opts);
  }

  /** Waits for queued work, flushes dirty page records, then refuses new work. Does not close the backend. */
  async close(): Promise<void> {
    if (this.jobs.closed) return;
    this.index.stopIdleFlush();
    await this.jobs.run(async () => {
      try {
        // A failed store is not written again; the journal on disk lets the next open rebuild.
        if (this.failure() === undefined) await this.index.flushDirty(true);
      } catch {
        // Nothing is lost: the journal is durable, and the next open rebuilds those pages.
      } finally {
        this.jobs.markClosed();
        this.index.stopIdleFlush();
      }
    });
  }
}

/**
 * The WAL tail and the Merkle index as storage holds them, read in one snapshot: on a shared
 * database (HA) the active node commits while a standby opens or reloads, and reads apart would
 * mix its states (a meta whose first entry was trimmed before the scan reached it).
 */
async function loadState(backend: Backend): Promise<{ tail: WalTail; trees: Trees; dirty: DirtyPages }> {
  const snap = await backend.snapshot();
  try {
    const tail = await WalTail.load(snap);
    return { tail, ...(await loadTrees(snap)) };
  } finally {
    await snap.close();
  }
}
