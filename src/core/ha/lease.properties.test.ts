/**
 * Properties over random scripts of events: whatever the database, the driver and the clock do,
 * an active node never outlives its lease, its deadline comes from a request it sent, becomeActive
 * and stopActive alternate, and a node never has two lock-row requests in flight.
 */
import fc from 'fast-check';
import { deadlineOf, initialState, step, type Event, type State } from './index.js';
import { B, T0, deepFreeze } from './testing.js';

/**
 * A random script: each command advances the clock and becomes an event against the current
 * state, so answers name the in-flight request's sentAt most of the time and a stale one otherwise.
 */
const command = fc.record({
  kind: fc.constantFrom(
    'next',
    'next',
    'next',
    'next',
    'next',
    'next',
    'unsealed',
    'sealed',
    'tick',
    'tick',
    'tick',
    'acquireSent',
    'acquired',
    'acquireLost',
    'renewSent',
    'renewed',
    'renewed',
    'renewFailed',
    'renewError',
    'fenceRefused',
    'activationFailed',
    'identityTaken',
    'identityHeld',
    'stepDown',
  ),
  // Mostly the short steps of a healthy node, sometimes a pause past the whole lease.
  advance: fc.oneof({ arbitrary: fc.integer({ min: 0, max: 200 }), weight: 5 }, { arbitrary: fc.integer({ min: 0, max: 2500 }), weight: 1 }),
  current: fc.boolean(),
  epochStep: fc.integer({ min: -1, max: 2 }),
});
type Command = typeof command extends fc.Arbitrary<infer C> ? C : never;

function toEvent(s: State, c: Command, now: number): Event {
  const inFlight = s.mode === 'standby' || s.mode === 'cooldown' ? s.acquire : s.mode === 'active' ? s.renew : null;
  const sentAt = c.current && inFlight?.phase === 'sent' ? inFlight.sentAt : now - 1 - c.advance;
  switch (c.kind) {
    case 'next':
      return nextEvent(s, now, c.current);
    case 'sealed':
      return { type: 'sealed' };
    case 'acquired':
      return { type: 'acquired', epoch: s.epoch + c.epochStep, holder: 'node-a', sentAt };
    case 'acquireLost':
      return { type: 'acquireLost', leader: c.current ? B : undefined };
    case 'renewed':
      return { type: 'renewed', sentAt };
    case 'fenceRefused':
      return { type: 'fenceRefused', epoch: s.epoch + Math.min(0, c.epochStep) };
    case 'activationFailed':
      return { type: 'activationFailed', epoch: s.epoch + Math.min(0, c.epochStep), now, reason: 'role start failed' };
    case 'identityTaken':
      return { type: 'identityTaken', now, by: 'another process' };
    case 'identityHeld':
      return { type: 'identityHeld', now };
    case 'unsealed':
    case 'tick':
    case 'acquireSent':
    case 'renewSent':
    case 'renewFailed':
    case 'renewError':
    case 'stepDown':
      return { type: c.kind, now };
  }
}

/** What a healthy driver and database would step next: the scripts mostly follow it, so they reach active. */
function nextEvent(s: State, now: number, win: boolean): Event {
  switch (s.mode) {
    case 'sealed':
      return { type: 'unsealed', now };
    case 'cooldown':
    case 'standby':
      if (s.acquire === null) return { type: 'tick', now };
      if (s.acquire.phase === 'asked') return { type: 'acquireSent', now };
      return win ? { type: 'acquired', epoch: s.epoch + 1, holder: 'node-a', sentAt: s.acquire.sentAt } : { type: 'acquireLost', leader: B };
    case 'active':
      if (s.renew === null) return { type: 'tick', now };
      if (s.renew.phase === 'asked') return { type: 'renewSent', now };
      return { type: 'renewed', sentAt: s.renew.sentAt };
  }
}

describe('properties', () => {
  it('an active node never persists at now >= renewedFrom + ttl - margin, and its deadline comes from a send time', () => {
    // How often the scripts reached the interesting moves, so the property is not vacuous.
    const seen = { becameActive: 0, deadlineStops: 0, renewed: 0, failures: 0 };
    fc.assert(
      fc.property(fc.array(command, { minLength: 20, maxLength: 150 }), (script) => {
        let s: State = initialState();
        let now = T0;
        const sent: number[] = [];
        let active = false;
        for (const c of script) {
          now += c.advance;
          const e = toEvent(s, c, now);
          const before: State = s;
          const r = step(deepFreeze(s), e);
          const types = r.effects.map((x) => x.type);
          if (e.type === 'acquireSent' || e.type === 'renewSent') sent.push(e.now);

          // The safety rule: any event that tells the time at or past the deadline stops the role.
          if (before.mode === 'active' && 'now' in e && e.now >= deadlineOf(before)) {
            expect(types[0]).toBe('stopActive');
            expect(r.state.mode).not.toBe('active');
            seen.deadlineStops += 1;
          }
          if (before.mode === 'active' && r.state.mode === 'active' && r.state.renewedFrom !== before.renewedFrom) seen.renewed += 1;
          if (r.state.mode === 'active') {
            if ('now' in e) expect(e.now).toBeLessThan(deadlineOf(r.state));
            // The lease is timed from a request this node really sent, never from a later moment.
            expect(sent).toContain(r.state.renewedFrom);
          }
          // becomeActive and stopActive alternate, and stopActive always comes first.
          if (types.includes('becomeActive')) {
            expect(active).toBe(false);
            active = true;
            seen.becameActive += 1;
          }
          if (types.includes('stopActive')) {
            expect(active).toBe(true);
            expect(types[0]).toBe('stopActive');
            active = false;
          }
          expect(active).toBe(r.state.mode === 'active');
          // One request in flight: nothing new is asked for while one is.
          const busy = before.mode === 'standby' || before.mode === 'cooldown' ? before.acquire : before.mode === 'active' ? before.renew : null;
          if (busy !== null && r.state.mode === before.mode) {
            expect(types).not.toContain('tryAcquire');
            expect(types).not.toContain('renew');
          }
          // A failure to become active releases the row at once, and no attempt is asked for
          // before its backoff ends; a node whose identity another process holds asks for none.
          if (e.type === 'activationFailed' && before.mode === 'active' && e.epoch === before.epoch) {
            expect(types).toEqual(['stopActive', 'release', 'leaderChanged']);
            seen.failures += 1;
          }
          if (types.includes('tryAcquire')) {
            expect(r.state.excluded).toBeUndefined();
            if ('now' in e && r.state.lastFailure !== undefined) expect(e.now).toBeGreaterThanOrEqual(r.state.lastFailure.until);
          }
          s = r.state;
        }
      }),
      { numRuns: 300, seed: 1 },
    );
    expect(seen.failures).toBeGreaterThan(20);
    expect(seen.becameActive).toBeGreaterThan(100);
    expect(seen.deadlineStops).toBeGreaterThan(30);
    expect(seen.renewed).toBeGreaterThan(5);
  });
});
