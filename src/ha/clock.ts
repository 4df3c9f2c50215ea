/**
 * The time and timers of the HA controller (controller.ts): the real clock by default, a fake one
 * in unit tests (src/ha/testing/fake-clock.ts) that a test advances by hand, so the lease's
 * deadlines, retries and echoes run deterministically and without real sleeps.
 *
 *   const clock = realClock();                    // Date.now and the global timers
 *   const cancel = clock.every(50, tick);         // until cancel(); never holds the process open
 *   await clock.sleep(500);
 */

export interface Clock {
  /** ms since the epoch. */
  now(): number;
  /** Calls `fn` every `ms` until the answered cancel is called; the timer keeps no process alive. */
  every(ms: number, fn: () => void): () => void;
  /** Resolves after `ms`. */
  sleep(ms: number): Promise<void>;
}

/** The process's clock and timers; `now` may be another source of the time (a node's injected one). */
export function realClock(now: () => number = Date.now): Clock {
  return {
    now,
    every(ms, fn) {
      const t = setInterval(fn, ms);
      t.unref();
      return () => clearInterval(t);
    },
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
}
