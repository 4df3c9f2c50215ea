/**
 * The drain of a planned switchover: before a DR primary demotes, it stops accepting writes
 * (new ones get a clear 503; group commits already accepted finish), tells every open stream that
 * its last index is final, and waits, bounded, until each connected secondary has applied it.
 * Only then does the demote go on. A secondary that confirmed holds every acknowledged write, and
 * knows it does; one that did not knows how far behind it is, and refuses promote without force.
 *
 *   const drain = new DemoteDrain({ engine, log, timeoutMs: 30_000 });
 *   const report = await drain.run(streamer, activeIds);   // engine fenced from here on
 *   ... demote ...; drain.release();
 */
import type { Logger } from 'pino';
import { Unavailable } from '../core/errors.js';
import type { StorageEngine } from '../storage/engine.js';
import type { PrimaryStreamer } from './primary-service.js';

export type DemoteReport = {
  /** The final WAL index of this primary. */
  readonly last_wal: number;
  /** Secondaries that confirmed they applied `last_wal`. */
  readonly confirmed: readonly string[];
  /** Everyone else this primary knows of, and how far they had applied. */
  readonly unconfirmed: readonly { readonly id: string; readonly last_applied_wal: number }[];
  readonly timed_out: boolean;
};

export interface DrainProgress {
  readonly lastWal: bigint;
  readonly pending: readonly { readonly id: string; readonly applied: bigint }[];
}

export class DemoteDrain {
  /** While a drain runs: what it still waits for (status shows it). */
  progress: DrainProgress | undefined;

  /** `passes`: keys the fence lets through (the role record the demote itself persists). */
  constructor(private readonly o: { engine: StorageEngine; log: Logger; timeoutMs: number; passes?: readonly string[] }) {}

  /** Fences writes and drains; the fence stays until `release()`. */
  async run(streamer: PrimaryStreamer | undefined, activeIds: readonly string[]): Promise<DemoteReport> {
    const { engine, log } = this.o;
    // Ordering: fence first (no new index can appear), then read the final index, then wait.
    await engine.fence(() => new Unavailable('this cluster is being demoted and accepts no more writes; send writes to the new primary'), this.o.passes);
    const lastWal = engine.lastGuard().index;
    this.progress = { lastWal, pending: [] };
    log.info({ last_wal: lastWal.toString(), timeout_ms: this.o.timeoutMs }, 'demote: writes stopped; draining to connected secondaries');
    const r = streamer
      ? await streamer.drain({
          timeoutMs: this.o.timeoutMs,
          onProgress: (pending) => {
            this.progress = { lastWal, pending };
            log.info({ last_wal: lastWal.toString(), pending: pending.map((p) => ({ id: p.id, applied: p.applied.toString() })) }, 'demote: waiting for secondaries to apply the last WAL index');
          },
        })
      : { lastWal, confirmed: [], unconfirmed: [], timedOut: false };
    const seen = new Set([...r.confirmed, ...r.unconfirmed.map((u) => u.id)]);
    const unconfirmed = [
      ...r.unconfirmed.map((u) => ({ id: u.id, last_applied_wal: Number(u.applied) })),
      ...activeIds.filter((id) => !seen.has(id)).map((id) => ({ id, last_applied_wal: 0 })),
    ].sort((a, b) => a.id.localeCompare(b.id));
    const report: DemoteReport = { last_wal: Number(lastWal), confirmed: r.confirmed, unconfirmed, timed_out: r.timedOut };
    this.progress = undefined;
    if (r.timedOut || unconfirmed.length > 0) log.warn({ ...report }, 'demote: drained with secondaries that did not confirm the last WAL index');
    else log.info({ ...report }, 'demote: every connected secondary applied the last WAL index');
    return report;
  }

  release(): void {
    this.progress = undefined;
    this.o.engine.unfence();
  }
}
