/**
 * WAL retention for secondaries catching up after a reconcile. REPLICATION.md section 4 ends a
 * merkle-sync with "then stream from W + 1"; without a hold, a reconcile that lasts longer than
 * the primary takes to write past its WAL bound ends at a guard the primary no longer retains,
 * and under a steady write load the secondary reconciles again, forever (the nemesis found it,
 * seed 2). A hold starts when a secondary pins a snapshot at W (it streams from W + 1 next),
 * follows the applied index its heartbeats report, and ends once its stream has sent it everything
 * but less than half the entry bound, when it is forgotten, or after `idleMs` without progress, so a vanished
 * secondary cannot pin the WAL. The engine caps what holds keep (src/storage/wal-holds.ts).
 *
 *   holds.start('east', snap.guard.index + 1n);
 *   holds.progress('east', applied.index);   // from each heartbeat
 *   holds.end('east');
 */
import type { StorageEngine } from '../storage/engine.js';
import type { WalHold } from '../storage/wal-holds.js';

export interface CatchUpHoldsOptions {
  readonly engine: Pick<StorageEngine, 'holdWal' | 'lastGuard' | 'walBounds'>;
  /** A hold no heartbeat moved for this long is released. Default 10 minutes (the snapshot lease). */
  readonly idleMs?: number;
}

interface Held {
  readonly hold: WalHold;
  timer: NodeJS.Timeout;
}

export class CatchUpHolds {
  private readonly held = new Map<string, Held>();

  constructor(private readonly o: CatchUpHoldsOptions) {}

  /** `secondaryId` streams from `from` next: keep entries from there on. Replaces its earlier hold. */
  start(secondaryId: string, from: bigint): void {
    this.end(secondaryId);
    const h: Held = { hold: this.o.engine.holdWal(from), timer: this.idleTimer(secondaryId) };
    this.held.set(secondaryId, h);
  }

  /** A heartbeat: the secondary applied up to `applied`. Moves its hold, or ends it once that is close. */
  progress(secondaryId: string, applied: bigint): void {
    const h = this.held.get(secondaryId);
    if (h === undefined || applied + 1n <= h.hold.from) return;
    if (this.close(applied)) {
      this.end(secondaryId);
      return;
    }
    h.hold.move(applied + 1n);
    clearTimeout(h.timer);
    h.timer = this.idleTimer(secondaryId);
  }

  /**
   * Its stream sent it everything up to `sent`: once that is close to the last index, the bounds
   * alone keep what is still in flight, and the hold ends. (The hold itself moves only with what
   * the secondary applied: entries sent are not yet applied.)
   */
  sent(secondaryId: string, sent: bigint): void {
    if (this.held.has(secondaryId) && this.close(sent)) this.end(secondaryId);
  }

  end(secondaryId: string): void {
    const h = this.held.get(secondaryId);
    if (h === undefined) return;
    clearTimeout(h.timer);
    h.hold.release();
    this.held.delete(secondaryId);
  }

  endAll(): void {
    for (const id of [...this.held.keys()]) this.end(id);
  }

  /** Within half the entry bound of the last index. */
  private close(index: bigint): boolean {
    return this.o.engine.lastGuard().index - index <= BigInt(Math.floor(this.o.engine.walBounds().maxEntries / 2));
  }

  private idleTimer(secondaryId: string): NodeJS.Timeout {
    const t = setTimeout(() => this.end(secondaryId), this.o.idleMs ?? 600_000);
    t.unref();
    return t;
  }
}
