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
 * here runs on the engine's JobChain, so it never interleaves with a commit batch. Flush policy:
 * commit-plan.ts; the stored journal: merkle-store.ts.
 */
import type { CorruptionReport } from '../core/merkle.js';
import { initialIndex, type IndexState } from './commit-plan.js';
import type { ReindexRequest } from './engine-options.js';
import type { FaultGuard } from './fault-guard.js';
import type { JobChain } from './job-chain.js';
import { checkIndex, rebuildIndex } from './merkle-check.js';
import { dirtyFlushOps, emptyTrees, flushOps, isClean, noDirtyPages, type DirtyPages, type Trees } from './merkle-store.js';

const noop = (): void => {};

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

  get current(): IndexState {
    return this.state;
  }

  get trees(): Trees {
    return this.state.trees;
  }

  /** A commit batch is durable: `after` (its plan's index state) is now the index. */
  advance(after: IndexState): void {
    this.state = after;
    this.armIdleFlush();
  }

  /** The index as storage holds it now (the engine's reload): what open() would load. */
  replace(trees: Trees, dirty: DirtyPages): void {
    this.stopIdleFlush();
    this.state = initialIndex(trees, dirty);
    this.armIdleFlush();
  }

  /** The data, WAL and index were deleted (wipe) and that is durable: empty trees, no journal. */
  reset(): void {
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

  /** Rebuilds leaves, page records and roots from `v/`; commits wait while it runs. */
  async reindex(opts: ReindexRequest = {}): Promise<{ warnings: string[]; flushed: Promise<void> }> {
    return this.jobs.runWrite(async () => {
      const { trees, warnings } = await rebuildIndex(this.backend, opts);
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
  }
}
