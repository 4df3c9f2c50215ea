/**
 * Test fixtures for the leadership machine, used only by the colocated tests.
 *
 *   const r = step(deepFreeze(s), { type: 'tick', now: T0 });   // step must not mutate its input
 */
import type { Leader } from './lease.js';

export const T0 = 1_700_000_000_000;
export const B: Leader = { holder: 'node-b', apiAddr: 'https://b:8200', clusterAddr: 'b:8201' };

export function deepFreeze<T>(x: T): T {
  if (typeof x === 'object' && x !== null && !Object.isFrozen(x)) {
    Object.freeze(x);
    for (const v of Object.values(x)) deepFreeze(v);
  }
  return x;
}
