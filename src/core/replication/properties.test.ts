/**
 * Properties over random event scripts: whatever the operators and the network do, the machine
 * stays pure, keeps its effect-order contract and never reaches a state the modes cannot express.
 */
import fc from 'fast-check';
import { statusFields } from './describe.js';
import { resume, step } from './step.js';
import { A, B, deepFreeze } from './testing.js';
import { initialState, type Effect, type EffectType, type Event, type Kind, type State } from './types.js';

const id = fc.constantFrom('b', 'c', '__proto__');
const cluster = fc.constantFrom('set-1', 'set-2');
const addrs = fc.constantFrom(A, B);

const event: fc.Arbitrary<Event> = fc.oneof(
  fc.record({ type: fc.constant('enablePrimary' as const), clusterId: cluster, primaryClusterAddr: fc.constantFrom('', 'lb:1') }),
  fc.constant({ type: 'demote' as const }),
  fc.constant({ type: 'disablePrimary' as const }),
  fc.record({ type: fc.constant('issueToken' as const), id, now: fc.integer({ min: 0, max: 100 }), ttlMs: fc.integer({ min: 0, max: 50 }) }),
  fc.record({ type: fc.constant('revokeSecondary' as const), id }),
  fc.constant({ type: 'enableSecondary' as const }),
  fc.record({ type: fc.constant('promote' as const), force: fc.boolean(), behind: fc.option(fc.record({ applied: fc.nat(1000), primaryLast: fc.nat(2000) }), { nil: null }), primaryClusterAddr: fc.constant('') }),
  fc.constant({ type: 'disableSecondary' as const }),
  fc.record(
    { type: fc.constant('updatePrimary' as const), token: fc.constantFrom('', 'tok'), addrs: fc.constantFrom([], [A.clusterAddr]) },
    { requiredKeys: ['type'] },
  ),
  fc.record({ type: fc.constant('secondaryActivated' as const), id, now: fc.integer({ min: 0, max: 100 }) }),
  fc.record({
    type: fc.constant('redeemed' as const),
    activation: fc.record({ secondaryId: id, clusterId: cluster, primaryClusterAddr: fc.constant(A.clusterAddr), primaryApiAddr: fc.constant(A.apiAddr) }),
  }),
  fc.record({ type: fc.constant('probed' as const), primary: addrs }),
  fc.constant({ type: 'activated' as const }),
  fc.constant({ type: 'activationFailed' as const }),
  fc.record({ type: fc.constant('streamState' as const), state: fc.constantFrom('idle' as const, 'stream-wals' as const, 'merkle-diff' as const, 'merkle-sync' as const) }),
);

const BEFORE_PERSIST: ReadonlySet<EffectType> = new Set(['disconnectPrimary', 'stopServer', 'newEpoch', 'createCa', 'resync']);
const AFTER_PERSIST: ReadonlySet<EffectType> = new Set(['wipe', 'connect', 'startServer', 'dropCa', 'forgetPrimary', 'disconnect']);

function clusterIdOf(s: State): string | null {
  return s.mode === 'disabled' ? null : s.clusterId;
}

function checkStep(before: State, e: Event, after: State, effects: readonly Effect[]): void {
  const types = effects.map((x) => x.type);
  const persistAt = types.indexOf('persist');
  expect(after.kind).toBe(before.kind);
  expect(statusFields(after).mode).toBe(after.mode);
  expect(types.filter((t) => t === 'persist').length).toBeLessThanOrEqual(1);
  if (after.mode !== before.mode) expect(persistAt).toBeGreaterThanOrEqual(0);
  types.forEach((t, i) => {
    if (BEFORE_PERSIST.has(t)) expect([t, i < persistAt]).toEqual([t, true]);
    if (AFTER_PERSIST.has(t)) expect([t, i > persistAt && persistAt >= 0]).toEqual([t, true]);
  });
  // Requests for I/O change nothing until their result comes back as a fact.
  if (types.includes('redeem') || types.includes('probe')) {
    expect(after).toEqual(before);
    expect(types).toHaveLength(1);
  }
  if (types.includes('wipe')) expect(after.mode).toBe('bootstrapping');
  // The set id changes only by enabling a primary or by activating from disabled.
  const [was, now] = [clusterIdOf(before), clusterIdOf(after)];
  if (was !== null && now !== null && e.type !== 'enablePrimary') expect(now).toBe(was);
  if (after.mode === 'secondary' && after.demotedAfterFailover) expect(after.secondaryId).toBeNull();
  if (after.mode === 'primary') {
    for (const entry of Object.values(after.secondaries)) expect(entry.expiresAt).toBeGreaterThan(entry.issuedAt);
  }
}

describe('random scripts', () => {
  it('keep every invariant, and leave their inputs untouched', () => {
    fc.assert(
      fc.property(fc.constantFrom<Kind>('dr', 'performance'), fc.array(event, { maxLength: 40 }), (kind, script) => {
        let state: State = initialState(kind);
        for (const e of script) {
          const before = deepFreeze(structuredClone(state));
          const r = step(before, deepFreeze(structuredClone(e)));
          expect(step(before, e)).toEqual(r); // deterministic
          if (!r.ok) {
            expect(r.error.code).toBe('invalid_request');
            continue;
          }
          checkStep(before, e, r.state, r.effects);
          state = r.state;
          // Every reachable state survives persistence and restarts into the same mode.
          const loaded = JSON.parse(JSON.stringify(state)) as State;
          expect(resume(loaded).state.mode).toBe(state.mode);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('reach every mode, so the properties above are not vacuous', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (script) => {
        let state: State = initialState('dr');
        for (const e of script) {
          const r = step(state, e);
          if (r.ok) state = r.state;
          seen.add(state.mode);
        }
      }),
      { numRuns: 300, seed: 42 },
    );
    expect([...seen].sort()).toEqual(['bootstrapping', 'disabled', 'primary', 'secondary']);
  });
});

describe('no dead ends', () => {
  it.each(['disabled', 'primary', 'secondary', 'bootstrapping'] as const)('%s can be left by some operator intent', async (mode) => {
    const { ROUTES, allowedEvents } = await import('./describe.js');
    const { bootstrapping, disabled, primary, secondary } = await import('./testing.js');
    const state = { disabled: disabled(), primary: primary(), secondary: secondary(), bootstrapping: bootstrapping() }[mode];
    const exits = allowedEvents(state).filter((t) => ROUTES[t] !== undefined);
    expect(exits.length).toBeGreaterThan(0);
  });
});
