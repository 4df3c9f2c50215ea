/**
 * A Clock (../clock.ts) that moves only when a test says: `advance(ms)` fires every timer due in
 * that span in time order, and lets the promises each one starts settle before the next fires.
 * Code driven by it must use no real timer or I/O (a fake lease store answers in microtasks).
 *
 *   const clock = new FakeClock();
 *   const controller = new HaController({ ..., clock });
 *   await clock.advance(1000);                          // a second of ticks, echoes and sleeps
 *   const took = await clock.until(() => c.isActive(), 5000);  // fake ms until true, or throws
 */
import type { Clock } from '../clock.js';

interface Timer {
  readonly id: number;
  at: number;
  readonly period: number | undefined;
  readonly fn: () => void;
}

/** Settles every promise chain that runs on microtasks alone. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class FakeClock implements Clock {
  private t: number;
  private timers: Timer[] = [];
  private ids = 0;

  constructor(start = 1_700_000_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  every(ms: number, fn: () => void): () => void {
    const id = this.add(ms, ms, fn);
    return () => this.cancel(id);
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.add(ms, undefined, resolve));
  }

  /** Timers still scheduled (intervals and sleeps). */
  pending(): number {
    return this.timers.length;
  }

  private add(ms: number, period: number | undefined, fn: () => void): number {
    const id = ++this.ids;
    this.timers.push({ id, at: this.t + Math.max(1, ms), period: period === undefined ? undefined : Math.max(1, period), fn });
    return id;
  }

  private cancel(id: number): void {
    this.timers = this.timers.filter((x) => x.id !== id);
  }

  /** Moves the time `ms` forward, firing what falls due on the way, each at its own time. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await settle();
    for (;;) {
      let next: Timer | undefined;
      for (const x of this.timers) if (x.at <= target && (next === undefined || x.at < next.at || (x.at === next.at && x.id < next.id))) next = x;
      if (next === undefined) break;
      this.t = next.at;
      if (next.period === undefined) this.cancel(next.id);
      else next.at += next.period;
      next.fn();
      await settle();
    }
    this.t = target;
    await settle();
  }

  /** Advances in steps of `stepMs` until `check()` holds; answers the fake ms it took. Throws past `maxMs`. */
  async until(check: () => boolean, maxMs: number, stepMs = 10): Promise<number> {
    const from = this.t;
    while (!check()) {
      if (this.t - from >= maxMs) throw new Error(`not within ${maxMs} ms of the fake clock`);
      await this.advance(stepMs);
    }
    return this.t - from;
  }
}
