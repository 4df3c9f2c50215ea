/**
 * The engine's in-memory Merkle index (trees, dirty pages, flush-policy memory) and the jobs that
 * write its page records outside a commit: the idle flush, check() and reindex().
 *
 *   const index = new MerkleIndex(guarded, jobs, trees, dirty, { now, flushIntervalMs: 1000 });
 *   index.advance(after);                 // a commit batch is durable: its planned index is current
 *   await index.check();                  // flush, then verify every level in a pinned view
 *   const { flushed } = await index.reindex({ skipFlush: true });
 *   await jobs.run(() => index.flushDirty(true)); index.stopIdleFlush();   // on close
 *
 * `current` changes only after the batch that made it durable (advance, reset, the flushes here),
 * never before: memory always matches a state storage holds or will rebuild on open. Every write
 * here runs on the engine's JobChain, so it never interleaves with a commit batch; a reindex reads
 * off the chain and writes in short jobs on it, so commits go on while it runs. Flush policy:
 * commit-plan.ts; the stored journal: merkle-store.ts.
 */
import { InvalidRequest, Unavailable } from '../core/errors.js';
import { treeFromPages, type CorruptionReport } from '../core/merkle.js';
import type { WalOp } from '../core/wal.js';
import { initialIndex, type IndexState } from './commit-plan.js';
import type { ReindexRequest } from './engine-options.js';
import type { FaultGuard } from './fault-guard.js';
import type { JobChain } from './job-chain.js';
import { checkIndex, moveLeaves, rebuildLeaves } from './merkle-check.js';
import { dirtyFlushOps, emptyTrees, flushOps, isClean, noDirtyPages, type DirtyPages, type Trees } from './merkle-store.js';
import { PageBlocks } from './page-blocks.js';

const noop = (): void => {};
/** Rounds of a reindex that bring its leaf blocks up to the commits made meanwhile, off the chain. */
const MAX_ROUNDS = 20;
/** Keys the reindex's last round (on the chain, commits waiting) may have to read at most, when the rounds allow. */
const LAST_ROUND = 200;

export interface MerkleIndexOptions {
  readonly now: () => number;
  /** Longest a dirty page record waits before a batch, or the idle flush, writes it. */
  readonly flushIntervalMs: number;
}

export class MerkleIndex {
  private state: IndexState;
  private idleFlush: NodeJS.Timeout | undefined;

  constructor(
    private readonly backend: FaultGuard,
    private readonly jobs: JobChain,
    trees: Trees,
    dirty: DirtyPages,
    private readonly o: MerkleIndexOptions,
  ) {
    this.state = initialIndex(trees, dirty);
  }

  /** Page blocks commits copy into before allocating (page-blocks.ts). */
  private readonly blocks = new PageBlocks();

  /**
   * The index as the commit path reads it: what it plans on, and reads that copy what they return
   * at once. Its trees' blocks must not be kept: hand them out through `pinTrees`.
   */
  get current(): IndexState {
    return this.state;
  }

  /**
   * The current trees, for a holder outside the commit path (a pinned view, a catch-up's base): no
   * block of them is reused from now on (page-blocks.ts).
   */
  pinTrees(): Trees {
    this.blocks.pinned();
    return this.state.trees;
  }

  /** Where a commit's page copies get a block before allocating one (BatchPlan). */
  get reuse(): () => Buffer | undefined {
    return this.blocks.reuse;
  }

  /** Copies written into reused blocks since open. */
  get reusedBlocks(): number {
    return this.blocks.reused;
  }

  /** A commit batch is durable: `after` (its plan's index state) is now the index. */
  advance(after: IndexState): void {
    this.blocks.advanced(this.state.trees, after.trees);
    this.state = after;
    this.armIdleFlush();
  }

  /** The index as storage holds it now (the engine's reload): what open() would load. */
  replace(trees: Trees, dirty: DirtyPages): void {
    this.generation++;
    this.blocks.pinned();
    this.stopIdleFlush();
    this.state = initialIndex(trees, dirty);
    this.armIdleFlush();
  }

  /** The data, WAL and index were deleted (wipe) and that is durable: empty trees, no journal. */
  reset(): void {
    this.generation++;
    this.blocks.pinned();
    this.state = { ...this.state, trees: emptyTrees(), dirty: noDirtyPages() };
  }

  /** Writes the dirty page records and drops the journal. Runs only inside a chain job. */
  async flushDirty(sync: boolean): Promise<void> {
    if (isClean(this.state.dirty)) return;
    await this.backend.batch(dirtyFlushOps(this.state.trees, this.state.dirty), { sync });
    this.state = { ...this.state, dirty: noDirtyPages(), lastFlush: this.o.now() };
  }

  stopIdleFlush(): void {
    clearTimeout(this.idleFlush);
  }

  /**
   * Pages left dirty are flushed one interval later if no batch has done it by then, so an idle
   * node's stored index is current (and a crash has nothing to rebuild). Not synced: a lost flush
   * leaves the journal, which open() repairs.
   */
  private armIdleFlush(): void {
    if (this.idleFlush !== undefined || isClean(this.state.dirty) || this.jobs.closed || this.backend.failure !== undefined) return;
    this.idleFlush = setTimeout(() => {
      this.idleFlush = undefined;
      if (this.jobs.closed) return;
      this.jobs.run(() => this.flushDirty(false)).then(
        () => this.armIdleFlush(),
        noop, // a failed flush changes nothing; the next batch, check() or close() retries
      );
    }, this.o.flushIntervalMs);
    this.idleFlush.unref();
  }

  /**
   * Recomputes every level from the data in a view pinned between batches; commits continue
   * meanwhile. Dirty page records are flushed first, so the view holds the index this node serves.
   */
  async check(): Promise<CorruptionReport> {
    const view = await this.jobs.runWrite(async () => {
      await this.flushDirty(false);
      return this.backend.snapshot();
    });
    try {
      return await checkIndex(view);
    } finally {
      await view.close();
    }
  }

  /** Set while a reindex runs: the keys commits wrote since its snapshot (since the last round, and ever). */
  private reindexing: { touched: Set<string>; readonly ever: Set<string> } | undefined;
  /** Moves on when the whole index is replaced (reload, wipe): a reindex running then is void. */
  private generation = 0;

  /** A batch with these data ops is durable (the engine calls this beside advance). */
  wrote(ops: readonly WalOp[]): void {
    const r = this.reindexing;
    if (r === undefined) return;
    for (const op of ops) {
      r.touched.add(op.key);
      r.ever.add(op.key);
    }
  }

  /**
   * Rebuilds leaves, page records and roots from `v/`, beside commits: the leaves are recomputed
   * from a snapshot pinned between batches, off the chain; the stored leaves are fixed in chunks,
   * each a short job on the chain that leaves out keys a commit wrote since the snapshot (its leaf
   * is already right); the leaf blocks are then moved to the data now for every key written since,
   * in rounds off the chain, the last (at most LAST_ROUND keys) in the one job that also swaps the
   * trees in and writes the page records and roots. No commit waits for more than one of these
   * jobs. A reload or wipe meanwhile makes it fail (run it again); a second one at once is refused.
   */
  async reindex(opts: ReindexRequest = {}): Promise<{ warnings: string[]; flushed: Promise<void> }> {
    if (this.reindexing !== undefined) throw new InvalidRequest('a reindex is already in progress');
    const track = { touched: new Set<string>(), ever: new Set<string>() };
    const generation = this.generation;
    const current = (): void => {
      if (this.generation !== generation) throw new Unavailable('the storage was reloaded or wiped while the reindex ran: run it again');
    };
    const view = await this.jobs.runWrite(async () => {
      this.reindexing = track;
      return this.backend.snapshot();
    });
    try {
      const { blocks, warnings } = await rebuildLeaves(view, opts, (chunk) =>
        this.jobs.runWrite(async () => {
          current();
          const ops = chunk.filter((f) => !track.ever.has(f.key)).map((f) => f.op);
          if (ops.length > 0) await this.backend.batch(ops, { sync: false });
        }),
      );
      const known = new Map<string, Buffer | undefined>();
      const nextRound = (): string[] => {
        const keys = [...track.touched];
        track.touched = new Set();
        return keys;
      };
      for (let round = 0; round < MAX_ROUNDS && track.touched.size > LAST_ROUND; round++) await moveLeaves(blocks, nextRound(), known, view, this.backend);
      return await this.jobs.runWrite(async () => {
        current();
        await moveLeaves(blocks, nextRound(), known, view, this.backend);
        const trees = { 1: treeFromPages(blocks[1]), 2: treeFromPages(blocks[2]) };
        this.reindexing = undefined;
        // The trees are swapped whole, not advanced by a commit: the replaced ones' blocks are not reused.
        this.blocks.pinned();
        if (!opts.skipFlush) {
          await this.backend.batch(flushOps(trees), { sync: true });
          this.state = { ...this.state, trees, dirty: noDirtyPages() };
          return { warnings, flushed: Promise.resolve() };
        }
        // Leaves are durable; serve the rebuilt trees now. Commits before the flush write the pages
        // they touch from these trees, and the flush writes every page from the trees of its moment.
        this.state = { ...this.state, trees };
        const flushed = this.jobs.runWrite(async () => {
          await this.backend.batch(flushOps(this.state.trees), { sync: true });
          this.state = { ...this.state, dirty: noDirtyPages() };
        });
        flushed.catch(noop); // the caller may ignore `flushed`; a failure then shows in check()
        return { warnings, flushed };
      });
    } finally {
      if (this.reindexing === track) this.reindexing = undefined;
      await view.close();
    }
  }
}
