/**
 * Test fixtures for the replication state machine: one state per mode and a driver-less runner
 * that steps a script and collects effects. Used only by the colocated tests.
 *
 *   const { state, effects } = run(primary(), { type: 'issueToken', id: 'b', now: 0, ttlMs: 1 });
 */
import { step } from './step.js';
import type { Activation, Bootstrapping, Disabled, Effect, Event, Kind, Primary, Secondary, State } from './types.js';

export const A = { clusterAddr: 'a.example:8201', apiAddr: 'https://a.example:8200' } as const;
export const B = { clusterAddr: 'b.example:8201', apiAddr: 'https://b.example:8200' } as const;

export function disabled(kind: Kind = 'dr'): Disabled {
  return { kind, mode: 'disabled' };
}

export function primary(over: Partial<Omit<Primary, 'mode'>> = {}): Primary {
  return { kind: 'dr', mode: 'primary', clusterId: 'set-1', primaryClusterAddr: '', secondaries: {}, ...over };
}

export function secondary(over: Partial<Omit<Secondary, 'mode'>> = {}): Secondary {
  return {
    kind: 'dr',
    mode: 'secondary',
    clusterId: 'set-1',
    secondaryId: 'b',
    primary: A,
    state: 'stream-wals',
    demotedAfterFailover: false,
    ...over,
  };
}

/** What a primary that was just demoted looks like. */
export function demoted(kind: Kind = 'dr'): Secondary {
  return secondary({ kind, secondaryId: null, primary: null, state: 'idle', demotedAfterFailover: true });
}

export function bootstrapping(over: Partial<Omit<Bootstrapping, 'mode'>> = {}): Bootstrapping {
  return { kind: 'dr', mode: 'bootstrapping', clusterId: 'set-1', secondaryId: 'b', primary: A, ...over };
}

export function activation(over: Partial<Activation> = {}): Activation {
  return { secondaryId: 'b', clusterId: 'set-1', primaryClusterAddr: A.clusterAddr, primaryApiAddr: A.apiAddr, ...over };
}

/** Steps every event in order; throws with the refusal message if any is refused. */
export function run(start: State, ...events: Event[]): { state: State; effects: Effect[] } {
  let state = start;
  const effects: Effect[] = [];
  for (const event of events) {
    const r = step(state, event);
    if (!r.ok) throw new Error(`${event.type} refused: ${r.error.message}`);
    state = r.state;
    effects.push(...r.effects);
  }
  return { state, effects };
}

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
