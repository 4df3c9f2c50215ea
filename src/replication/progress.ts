/**
 * Rates, ETAs and WAL headroom added to a kind's status block (the metrics read the same block):
 *
 *   primary, per secondary: `wal_headroom_entries` (entries the primary can still write before
 *     that secondary falls off the retained WAL) and `wal_headroom_seconds` (that over the recent
 *     write rate; null while nothing is written: no bound at the current rate);
 *     and `write_rate_entries_per_sec`.
 *   secondary: `catch_up: {entries_behind, rate_entries_per_sec, eta_seconds}` while it streams
 *     behind its primary; `eta_seconds` in `merkle_sync_progress`; `merkle_syncs: {count,
 *     fetched_keys, deleted_keys}` since the replication loop started.
 *
 * Rates are sampled once a second (`sample`, driven by the node) and at every read, over a 60 s
 * window (core/rate.ts). ETAs are null while unknown or when nothing moves.
 *
 *   const progress = new ReplicationProgress({ engine, drivers });
 *   setInterval(() => progress.sample(Date.now()), 1000);
 *   progress.decorate('dr', roleStatus(...), Date.now());
 */
import { RateEstimator, etaSeconds, walHeadroomEntries } from '../core/rate.js';
import { KINDS, type Kind } from '../core/replication/index.js';
import type { ReplicationDriver } from './driver.js';

export interface ProgressEngine {
  lastGuard(): { index: bigint };
  firstRetainedIndex(): bigint;
  walRetainedBytes(): number;
  /** The retained-WAL bounds this node's storage was configured with (walMaxEntries, walMaxBytes). */
  walBounds(): { readonly maxEntries: number; readonly maxBytes: number };
}

export interface ProgressOptions {
  readonly engine: ProgressEngine;
  readonly drivers: Readonly<Record<Kind, ReplicationDriver>>;
}

interface KindRates {
  readonly applied: RateEstimator;
  readonly primaryLast: RateEstimator;
  /** Keys per second of the reconcile numbered `syncOf` (SecondaryProgress.syncStarted). */
  sync: RateEstimator;
  syncOf: number;
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

export class ReplicationProgress {
  private readonly writes = new RateEstimator();
  private readonly rates: Record<Kind, KindRates> = {
    dr: { applied: new RateEstimator(), primaryLast: new RateEstimator(), sync: new RateEstimator(), syncOf: 0 },
    performance: { applied: new RateEstimator(), primaryLast: new RateEstimator(), sync: new RateEstimator(), syncOf: 0 },
  };

  constructor(private readonly o: ProgressOptions) {}

  sample(now: number): void {
    this.writes.sample(now, Number(this.o.engine.lastGuard().index));
    for (const kind of KINDS) {
      const d = this.o.drivers[kind];
      const p = d.isLoaded ? d.secondaryLoop?.progress : undefined;
      if (!p) continue;
      const r = this.rates[kind];
      r.applied.sample(now, Number(d.appliedUpstream() ?? this.o.engine.lastGuard().index));
      r.primaryLast.sample(now, Number(p.primaryLastWal));
      // A new reconcile's rate starts from its own first sample, never from the last one's.
      if (p.syncStarted !== r.syncOf) {
        r.sync = new RateEstimator();
        r.syncOf = p.syncStarted;
      }
      if (p.state === 'merkle-sync') r.sync.sample(now, p.syncDone);
    }
  }

  /** The status block of `kind` with this module's fields added (see the header). */
  decorate(kind: Kind, status: Record<string, unknown>, now: number): Record<string, unknown> {
    this.sample(now);
    if (status.mode === 'primary') return this.primary(status, now);
    if (status.mode === 'secondary' || status.mode === 'bootstrapping') return this.secondary(kind, status, now);
    return status;
  }

  private primary(status: Record<string, unknown>, now: number): Record<string, unknown> {
    const e = this.o.engine;
    const rate = this.writes.perSecond(now);
    const wal = { first: Number(e.firstRetainedIndex()), last: Number(e.lastGuard().index), retainedBytes: e.walRetainedBytes(), ...e.walBounds() };
    const list = Array.isArray(status.secondaries) ? (status.secondaries as Record<string, unknown>[]) : [];
    const secondaries = list.map((s) => {
      const entries = walHeadroomEntries({ ...wal, applied: Number(s.last_applied_wal ?? 0) });
      // Null: nothing is being written, so no bound at the current rate (0 once it fell off).
      return { ...s, wal_headroom_entries: entries, wal_headroom_seconds: entries === 0 ? 0 : rate > 0 ? Math.floor(entries / rate) : null };
    });
    return { ...status, write_rate_entries_per_sec: round2(rate), secondaries };
  }

  private secondary(kind: Kind, status: Record<string, unknown>, now: number): Record<string, unknown> {
    const loop = this.o.drivers[kind].secondaryLoop;
    const r = this.rates[kind];
    const out: Record<string, unknown> = { ...status };
    const behind = typeof status.lag_entries === 'number' ? status.lag_entries : 0;
    if (status.state === 'stream-wals' && behind > 0) {
      const apply = r.applied.perSecond(now);
      // It closes the gap only as fast as it applies beyond what the primary keeps writing.
      out.catch_up = { entries_behind: behind, rate_entries_per_sec: round2(apply), eta_seconds: etaSeconds(behind, apply - r.primaryLast.perSecond(now)) };
    }
    const sync = status.merkle_sync_progress as { sync_total_keys: number; sync_progress: number } | undefined;
    if (sync) {
      out.merkle_sync_progress = { ...sync, eta_seconds: status.state === 'merkle-sync' ? etaSeconds(sync.sync_total_keys - sync.sync_progress, r.sync.perSecond(now)) : null };
    }
    const t = loop?.progress.syncTotals;
    out.merkle_syncs = { count: t?.syncs ?? 0, fetched_keys: t?.fetched ?? 0, deleted_keys: t?.deleted ?? 0 };
    return out;
  }
}
