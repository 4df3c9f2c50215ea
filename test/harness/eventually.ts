/**
 * Poll with a deadline instead of sleeping: retries `fn` until it returns without throwing, and
 * rethrows its last error (with the time spent) once `timeoutMs` has passed.
 *
 *   const status = await eventually(async () => {
 *     const r = await v.get('sys/health');
 *     expect(r.status).toBe(200);
 *     return r.body;
 *   }, { timeoutMs: 5_000 });
 */
import { setTimeout as delay } from 'node:timers/promises';

export interface EventuallyOptions {
  readonly timeoutMs?: number;
  readonly intervalMs?: number;
}

export class EventuallyTimeout extends Error {}

export async function eventually<T>(fn: () => T | Promise<T>, opts: EventuallyOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 100;
  const start = Date.now();
  let attempts = 0;
  for (;;) {
    attempts++;
    try {
      return await fn();
    } catch (e) {
      const spent = Date.now() - start;
      if (spent + intervalMs > timeoutMs) {
        const why = e instanceof Error ? e.message : String(e);
        throw new EventuallyTimeout(`still failing after ${spent} ms and ${attempts} attempts: ${why}`, { cause: e });
      }
    }
    await delay(intervalMs);
  }
}

/**
 * `eventually` for a poll that answers "not yet" with undefined: retries `fn` until it returns
 * anything else (or throws no more), and names `what` at the deadline. 30 s, every 50 ms unless told.
 *
 *   const wal = await waitUntil('the secondary to apply WAL 42', async () => ((await drStatus(addr)).last_wal >= 42 ? true : undefined));
 */
export function waitUntil<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, opts: EventuallyOptions = {}): Promise<T> {
  return eventually(async () => {
    const v = await fn();
    if (v === undefined) throw new Error(`waiting for ${what}`);
    return v;
  }, { timeoutMs: opts.timeoutMs ?? 30_000, intervalMs: opts.intervalMs ?? 50 });
}
