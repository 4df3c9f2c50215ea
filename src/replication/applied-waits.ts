/**
 * A primary's waits for its secondaries to apply an index (moved out of primary-service.ts): a
 * demote's drain (every open stream is told the index is final, then each connected secondary's
 * heartbeats are awaited) and a forwarded write's wait for its secondaries (each is asked to
 * confirm at once). Only connected secondaries are waited for, and never past the deadline: a
 * partition bounds the wait, as semi-synchronous replication falls back to asynchronous. The
 * streams read `draining` and `ackWanted` to tell their secondaries.
 *
 *   const waits = new AppliedWaits({ views, now, lastWal: () => engine.lastGuard().index, wakeStreams });
 *   const report = await waits.drain({ timeoutMs: 30_000 });
 *   const allApplied = await waits.waitApplied(commitIndex, 2_000);
 */
import type { SecondaryViews } from './secondary-views.js';

/** How a demote's drain ended: who confirmed the final index, who did not. */
export interface DrainReport {
  readonly lastWal: bigint;
  readonly confirmed: readonly string[];
  readonly unconfirmed: readonly { readonly id: string; readonly applied: bigint }[];
  readonly timedOut: boolean;
}

export class AppliedWaits {
  /** Set once a demote's drain starts: streams say the index is final. */
  draining = false;
  /** The highest index a caller of `waitApplied` waits for secondaries to confirm. */
  ackWanted = 0n;

  constructor(
    private readonly o: {
      readonly views: SecondaryViews;
      readonly now: () => number;
      /** The primary's last WAL index. */
      readonly lastWal: () => bigint;
      /** Wakes every open stream's wait, so it reads `draining`/`ackWanted` at once. */
      readonly wakeStreams: () => void;
    },
  ) {}

  /**
   * Demote's drain; call after `engine.fence()`, so the last index is final. Tells every open
   * stream the index is final and waits until each connected secondary has applied it (by its
   * heartbeats), or `timeoutMs` passes. Secondaries that are not connected are not waited for.
   */
  async drain(o: { timeoutMs: number; onProgress?: (pending: readonly { id: string; applied: bigint }[], lastWal: bigint) => void; progressEveryMs?: number }): Promise<DrainReport> {
    const lastWal = this.o.lastWal();
    this.draining = true;
    this.o.wakeStreams();
    const timedOut = !(await this.untilApplied(lastWal, o.timeoutMs, o.onProgress ? (pending) => o.onProgress?.(pending, lastWal) : undefined, o.progressEveryMs));
    const confirmed = this.o.views.all().filter((v) => v.applied.index >= lastWal && this.o.views.connected(v)).map((v) => v.id).sort();
    const unconfirmed = this.o.views.all().filter((v) => !confirmed.includes(v.id)).map((v) => ({ id: v.id, applied: v.applied.index }));
    return { lastWal, confirmed, unconfirmed, timedOut };
  }

  /**
   * Waits until every connected secondary has applied `index`, asking each to confirm as soon as
   * it has (not at its next heartbeat), or until `timeoutMs` passes. A secondary that is not
   * connected, or stops being (its heartbeats stop for the heartbeat timeout), is not waited for:
   * this bounds the wait by a partition, like semi-synchronous replication falling back to
   * asynchronous. Resolves true when no connected secondary is behind `index`.
   */
  async waitApplied(index: bigint, timeoutMs: number): Promise<boolean> {
    if (this.behind(index).length === 0) return true;
    if (index > this.ackWanted) this.ackWanted = index;
    this.o.wakeStreams();
    return this.untilApplied(index, timeoutMs);
  }

  /** Connected secondaries that have not applied `index`. */
  private behind(index: bigint): { id: string; applied: bigint }[] {
    return this.o.views
      .all()
      .filter((v) => this.o.views.connected(v) && v.applied.index < index)
      .map((v) => ({ id: v.id, applied: v.applied.index }));
  }

  /** The one wait of `drain` and `waitApplied`: by heartbeats (view changes), with a deadline. */
  private async untilApplied(index: bigint, timeoutMs: number, onProgress?: (pending: readonly { id: string; applied: bigint }[]) => void, progressEveryMs = 1000): Promise<boolean> {
    const deadline = this.o.now() + timeoutMs;
    let nextProgress = this.o.now();
    for (;;) {
      const pending = this.behind(index);
      const left = deadline - this.o.now();
      if (pending.length === 0) return true;
      if (left <= 0) return false;
      if (onProgress && this.o.now() >= nextProgress) {
        onProgress(pending);
        nextProgress = this.o.now() + progressEveryMs;
      }
      await this.o.views.nextChange(Math.min(left, 100));
    }
  }
}
