/**
 * A rate of a growing counter over a sliding window, and the figures built on it (ETA, WAL
 * headroom). Pure: callers pass the time. Used for the write rate of a primary, a secondary's
 * apply rate while it catches up, and the keys per second of a merkle-sync or reindex.
 *
 *   const r = new RateEstimator({ windowMs: 60_000 });
 *   r.sample(t0, 100); r.sample(t0 + 10_000, 600);
 *   r.perSecond(t0 + 10_000)      // 50
 *   etaSeconds(400, r.perSecond(now)) // 8, or null while nothing moves
 *
 * The rate is measured from the oldest sample kept (the newest one at or before the window's
 * start) to `now`, not to the last sample: when the counter stops moving the rate falls, and
 * once the window has passed without change it is 0. A counter that goes down (a new
 * merkle-sync, a reset WAL) restarts the estimate.
 */
export interface RateOptions {
  /** How far back the rate looks. Default 60 s. */
  readonly windowMs?: number;
  /** Samples closer than this replace the newest one (bounds memory). Default 500 ms. */
  readonly minGapMs?: number;
}

interface Sample {
  readonly t: number;
  readonly v: number;
}

export class RateEstimator {
  private samples: Sample[] = [];
  private readonly windowMs: number;
  private readonly minGapMs: number;

  constructor(o: RateOptions = {}) {
    this.windowMs = o.windowMs ?? 60_000;
    this.minGapMs = o.minGapMs ?? 500;
  }

  sample(t: number, v: number): void {
    const last = this.samples.at(-1);
    if (last !== undefined && (v < last.v || t < last.t)) this.samples = [];
    const prev = this.samples.at(-2);
    if (prev !== undefined && t - prev.t < this.minGapMs && this.samples.length > 1) this.samples[this.samples.length - 1] = { t, v };
    else this.samples.push({ t, v });
    this.prune(t);
  }

  /** Units per second over the window ending at `now`; 0 before two distinct samples. */
  perSecond(now: number): number {
    this.prune(now);
    const base = this.samples[0];
    const last = this.samples.at(-1);
    if (base === undefined || last === undefined || now <= base.t) return 0;
    return ((last.v - base.v) * 1000) / (now - base.t);
  }

  /** Keeps exactly one sample at or before the window's start, as the base. */
  private prune(now: number): void {
    const start = now - this.windowMs;
    while (this.samples.length > 1 && (this.samples[1] as Sample).t <= start) this.samples.shift();
  }
}

/** Seconds to cover `remaining` at `rate` per second; null when nothing moves (rate 0 or less). */
export function etaSeconds(remaining: number, rate: number): number | null {
  if (remaining <= 0) return 0;
  if (!(rate > 0)) return null;
  return Math.ceil(remaining / rate);
}

/**
 * How many more entries a primary can write before a secondary at `applied` falls off its
 * retained WAL (and needs a merkle-sync to resume). The retained WAL holds at most `maxEntries`
 * entries and `maxBytes` bytes; the byte bound is turned into entries at the average size of
 * what is retained now. 0 once the secondary's resume point is no longer retained.
 */
export function walHeadroomEntries(w: { first: number; last: number; applied: number; retainedBytes: number; maxEntries: number; maxBytes: number }): number {
  // A stream resumes from the guard just before the first retained entry (storage/wal-tail.ts).
  if (w.applied + 1 < w.first) return 0;
  const retained = Math.max(0, w.last - w.first + 1);
  const byBytes = retained > 0 && w.retainedBytes > 0 ? Math.floor((w.maxBytes * retained) / w.retainedBytes) : w.maxEntries;
  const capacity = Math.min(w.maxEntries, byBytes);
  return Math.max(0, capacity - Math.max(0, w.last - w.applied));
}
