/**
 * Merkle page blocks the index may write a commit's page copies into instead of allocating.
 *
 * A commit copies every page it touches into a new 8 KiB block (TreeUpdate's copy-on-write), so
 * a failed batch leaves the current trees as they were and a pinned view keeps its own. The block
 * a durable commit replaces is garbage unless something outside the commit path still holds a
 * state that has it. Blocks made by commits since the last pin are held by no one else: when a
 * later durable commit replaces one, it goes to a short free list, and the next copy overwrites
 * it. Under writes that was half of the write path's Buffer bytes (NOTES, stop 37).
 *
 *   const blocks = new PageBlocks();
 *   new BatchPlan(view, trees, blocks.reuse);      // copies go into reused blocks where there are any
 *   blocks.advanced(before, after);                // a batch is durable
 *   blocks.pinned();                               // the current trees are handed out (a snapshot)
 */
import { PAGES, TREES } from '../core/merkle.js';
import type { Trees } from './merkle-store.js';

/** Blocks kept for reuse at most (512 KiB): a batch touches a few pages, a flush none. */
const MAX_FREE = 64;

export class PageBlocks {
  /** Blocks of the current trees that commits made since the last pin: no one else holds them. */
  private fresh = new Set<Buffer>();
  private readonly free: Buffer[] = [];
  /** Copies written into a reused block (tests and figures). */
  reused = 0;

  /** A block to copy a page into, if one is free. */
  readonly reuse = (): Buffer | undefined => {
    const b = this.free.pop();
    if (b !== undefined) this.reused++;
    return b;
  };

  /** A commit batch is durable: the index went from `before` to `after` (`after` made by it). */
  advanced(before: Trees, after: Trees): void {
    for (const t of TREES) {
      const was = before[t].pages;
      const now = after[t].pages;
      if (was === now) continue;
      for (let p = 0; p < PAGES; p++) {
        const old = was[p];
        const block = now[p];
        if (old === block) continue;
        if (block !== undefined) this.fresh.add(block);
        if (old !== undefined && this.fresh.delete(old) && this.free.length < MAX_FREE) this.free.push(old);
      }
    }
  }

  /**
   * The current trees are held outside the commit path (a pinned view, a catch-up's base) or were
   * replaced by something else than a commit (a reload, a reindex, a wipe): none of the blocks
   * they have is reused from now on. The free list holds only blocks no state has.
   */
  pinned(): void {
    this.fresh = new Set();
  }
}
