/**
 * Scenario scripts for the leadership machine, driven as the driver would drive it (an effect asks
 * for a request, the driver steps `*Sent` and then the database's answer). The properties over
 * random scripts are in ./lease.properties.test.ts.
 */
import { InvalidRequest } from '../errors.js';
import {
  DEFAULT_LEASE_OPTIONS,
  deadlineOf,
  initialState,
  leadership,
  leaseOptions,
  step,
  type Effect,
  type Event,
  type State,
} from './index.js';
import { B, T0, deepFreeze } from './testing.js';

const { ttlMs, renewMs, retryMs, marginMs, cooldownMs, graceMs, backoffMs, backoffMaxMs } = DEFAULT_LEASE_OPTIONS;

/** One node's machine; `act` steps an event and keeps the state, as the driver does. */
function node(s: State = initialState()) {
  return {
    get state() {
      return s;
    },
    act(event: Event): readonly Effect[] {
      const r = step(deepFreeze(s), event);
      s = r.state;
      return r.effects;
    },
    /** Unseal at `now` and win the first attempt with `epoch`: the node is active. */
    activate(now: number, epoch = 1): void {
      expect(this.act({ type: 'unsealed', now })).toEqual([{ type: 'tryAcquire' }]);
      this.act({ type: 'acquireSent', now });
      expect(this.act({ type: 'acquired', epoch, holder: 'node-a', sentAt: now })).toEqual([{ type: 'becomeActive', epoch }]);
    },
    /** One whole renewal sent at `now`, answered by the database as renewed. */
    renewAt(now: number): void {
      expect(this.act({ type: 'tick', now })).toEqual([{ type: 'renew' }]);
      this.act({ type: 'renewSent', now });
      expect(this.act({ type: 'renewed', sentAt: now })).toEqual([]);
    },
  };
}

describe('acquire and renew', () => {
  it('a standby takes the lock row and becomes active; renewals keep it active', () => {
    const n = node();
    expect(n.state.mode).toBe('sealed');
    expect(n.act({ type: 'tick', now: T0 })).toEqual([]);
    n.activate(T0, 7);
    expect(n.state).toMatchObject({ mode: 'active', epoch: 7, holder: 'node-a', since: T0 });

    // Renew every renewMs, each answered in 20 ms: active long past the first lease's length.
    expect(n.act({ type: 'tick', now: T0 + renewMs - 1 })).toEqual([]);
    for (let t = T0 + renewMs; t < T0 + 10 * ttlMs; t += renewMs) {
      n.renewAt(t);
      expect(n.act({ type: 'tick', now: t + 20 })).toEqual([]);
    }
    expect(n.state.mode).toBe('active');
  });

  it('a standby that loses learns the leader once, and retries every retryMs', () => {
    const n = node();
    n.act({ type: 'unsealed', now: T0 });
    n.act({ type: 'acquireSent', now: T0 });
    expect(n.act({ type: 'acquireLost', leader: B })).toEqual([{ type: 'leaderChanged', leader: B }]);
    expect(n.act({ type: 'tick', now: T0 + retryMs - 1 })).toEqual([]);
    expect(n.act({ type: 'tick', now: T0 + retryMs })).toEqual([{ type: 'tryAcquire' }]);
    n.act({ type: 'acquireSent', now: T0 + retryMs });
    expect(n.act({ type: 'acquireLost', leader: { ...B } })).toEqual([]);
    expect(n.state).toMatchObject({ mode: 'standby', leader: B });
  });
});

describe('the lease deadline', () => {
  it('missed renewals stop the active role at renewedFrom + ttl - margin, before the lease can expire', () => {
    const n = node();
    n.activate(T0);
    n.renewAt(T0 + renewMs);
    // The next renew goes out and is never answered; the database is silent.
    expect(n.act({ type: 'tick', now: T0 + 2 * renewMs })).toEqual([{ type: 'renew' }]);
    n.act({ type: 'renewSent', now: T0 + 2 * renewMs });
    const deadline = T0 + renewMs + ttlMs - marginMs;
    expect(n.state.mode === 'active' && deadlineOf(n.state)).toBe(deadline);
    expect(n.act({ type: 'tick', now: deadline - 1 })).toEqual([]);
    expect(n.act({ type: 'tick', now: deadline })).toEqual([
      { type: 'stopActive', reason: 'renew-deadline' },
      { type: 'leaderChanged', leader: undefined },
      { type: 'tryAcquire' },
    ]);
    expect(n.state.mode).toBe('standby');
    // The late answer to the lost renew is stale now.
    expect(n.act({ type: 'renewed', sentAt: T0 + 2 * renewMs })).toEqual([]);
    expect(n.state.mode).toBe('standby');
  });

  it('a renew error retries after retryMs and a late success extends the deadline from its send time', () => {
    const n = node();
    n.activate(T0);
    n.act({ type: 'tick', now: T0 + renewMs });
    n.act({ type: 'renewSent', now: T0 + renewMs });
    expect(n.act({ type: 'renewError', now: T0 + renewMs + 100 })).toEqual([]);
    expect(n.act({ type: 'tick', now: T0 + renewMs + 100 + retryMs - 1 })).toEqual([]);
    const again = T0 + renewMs + 100 + retryMs;
    expect(n.act({ type: 'tick', now: again })).toEqual([{ type: 'renew' }]);
    n.act({ type: 'renewSent', now: again });
    n.act({ type: 'renewed', sentAt: again });
    expect(n.state.mode === 'active' && deadlineOf(n.state)).toBe(again + ttlMs - marginMs);
  });

  it('a renewal the database refused (another holder, or the row gone) stops at once', () => {
    const n = node();
    n.activate(T0);
    n.act({ type: 'tick', now: T0 + renewMs });
    n.act({ type: 'renewSent', now: T0 + renewMs });
    const effects = n.act({ type: 'renewFailed', now: T0 + renewMs + 5 });
    expect(effects.slice(0, 2)).toEqual([{ type: 'stopActive', reason: 'lease-lost' }, { type: 'leaderChanged', leader: undefined }]);
    expect(n.state.mode).toBe('standby');
  });
});

describe('the fence', () => {
  it('fenceRefused for the current epoch stops at once; for an older epoch it is stale', () => {
    const n = node();
    n.activate(T0, 3);
    expect(n.act({ type: 'fenceRefused', epoch: 2 })).toEqual([]);
    expect(n.state.mode).toBe('active');
    expect(n.act({ type: 'fenceRefused', epoch: 3 })).toEqual([
      { type: 'stopActive', reason: 'fenced' },
      { type: 'leaderChanged', leader: undefined },
    ]);
    // It competes again at the next tick, and an acquire at or below its old epoch is stale.
    expect(n.act({ type: 'tick', now: T0 + 1 })).toEqual([{ type: 'tryAcquire' }]);
    n.act({ type: 'acquireSent', now: T0 + 1 });
    expect(n.act({ type: 'acquired', epoch: 3, holder: 'node-a', sentAt: T0 + 1 })).toEqual([]);
    expect(n.act({ type: 'acquired', epoch: 4, holder: 'node-a', sentAt: T0 + 1 })).toEqual([{ type: 'becomeActive', epoch: 4 }]);
  });
});

describe('step-down', () => {
  it('stops and releases the row, then competes politely (a row free graceMs) until cooldownMs ends', () => {
    const n = node();
    n.activate(T0, 5);
    expect(n.act({ type: 'stepDown', now: T0 + 10 })).toEqual([
      { type: 'stopActive', reason: 'step-down' },
      { type: 'release', epoch: 5 },
      { type: 'leaderChanged', leader: undefined },
    ]);
    expect(n.state).toMatchObject({ mode: 'cooldown', until: T0 + 10 + cooldownMs });
    // Still competing, politely: a cluster whose every node stepped down still elects one.
    expect(n.act({ type: 'tick', now: T0 + 20 })).toEqual([{ type: 'tryAcquire', graceMs }]);
    n.act({ type: 'acquireSent', now: T0 + 20 });
    expect(n.act({ type: 'acquireLost', leader: B })).toEqual([{ type: 'leaderChanged', leader: B }]);
    expect(n.act({ type: 'stepDown', now: T0 + 30 })).toEqual([]);
    // Twice as often as a standby's, so the polite attempt comes soon after the grace.
    expect(n.act({ type: 'tick', now: T0 + 20 + retryMs / 2 - 1 })).toEqual([]);
    expect(n.act({ type: 'tick', now: T0 + 20 + retryMs / 2 })).toEqual([{ type: 'tryAcquire', graceMs }]);
    n.act({ type: 'acquireSent', now: T0 + 20 + retryMs / 2 });
    n.act({ type: 'acquireLost', leader: B });
    // At the end of the cooldown the attempts are ordinary again.
    expect(n.act({ type: 'tick', now: T0 + 10 + cooldownMs })).toEqual([{ type: 'tryAcquire' }]);
    expect(n.state.mode).toBe('standby');
  });

  it('a polite attempt that wins makes the node active under the new epoch', () => {
    const n = node();
    n.activate(T0, 5);
    n.act({ type: 'stepDown', now: T0 + 10 });
    n.act({ type: 'tick', now: T0 + 10 + graceMs });
    n.act({ type: 'acquireSent', now: T0 + 10 + graceMs });
    expect(n.act({ type: 'acquired', epoch: 6, holder: 'node-a', sentAt: T0 + 10 + graceMs })).toEqual([{ type: 'becomeActive', epoch: 6 }]);
    expect(n.state).toMatchObject({ mode: 'active', epoch: 6 });
  });

  it('is a no-op on a standby (the driver forwards it to the active node)', () => {
    const n = node();
    n.act({ type: 'unsealed', now: T0 });
    const before = n.state;
    expect(n.act({ type: 'stepDown', now: T0 })).toEqual([]);
    expect(n.state).toBe(before);
  });
});

describe('stale answers and one request in flight', () => {
  it('successes with another sentAt, or with no request sent, are ignored; failures end any request', () => {
    const n = node();
    n.act({ type: 'unsealed', now: T0 });
    // Asked but not sent yet: no success can be this request's.
    expect(n.act({ type: 'acquired', epoch: 1, holder: 'node-a', sentAt: T0 })).toEqual([]);
    expect(n.act({ type: 'renewed', sentAt: T0 })).toEqual([]);
    // The driver could not send it: the failure ends it, and the next tick asks again.
    expect(n.act({ type: 'acquireLost', leader: undefined })).toEqual([]);
    expect(n.act({ type: 'acquireLost', leader: B })).toEqual([]);
    expect(n.act({ type: 'tick', now: T0 })).toEqual([{ type: 'tryAcquire' }]);
    n.act({ type: 'acquireSent', now: T0 + 1 });
    expect(n.act({ type: 'acquired', epoch: 1, holder: 'node-a', sentAt: T0 })).toEqual([]);
    expect(n.state.mode).toBe('standby');
    expect(n.act({ type: 'acquired', epoch: 1, holder: 'node-a', sentAt: T0 + 1 })).toEqual([{ type: 'becomeActive', epoch: 1 }]);

    n.act({ type: 'tick', now: T0 + 1 + renewMs });
    n.act({ type: 'renewSent', now: T0 + 1 + renewMs });
    expect(n.act({ type: 'renewed', sentAt: T0 })).toEqual([]);
    expect(n.state.mode === 'active' && n.state.renewedFrom).toBe(T0 + 1);
    expect(n.act({ type: 'acquired', epoch: 2, holder: 'node-a', sentAt: T0 + 1 })).toEqual([]);
    expect(n.state).toMatchObject({ mode: 'active', epoch: 1 });

    // A renew error before the request went out ends it too; with none in flight, it is ignored.
    n.act({ type: 'renewError', now: T0 + 1 + renewMs + 10 });
    expect(n.act({ type: 'renewFailed', now: T0 + 1 + renewMs + 20 })).toEqual([]);
    expect(n.act({ type: 'tick', now: T0 + 1 + renewMs + 10 + retryMs })).toEqual([{ type: 'renew' }]);
    expect(n.act({ type: 'renewError', now: T0 + 1 + renewMs + 10 + retryMs })).toEqual([]);
    expect(n.state).toMatchObject({ mode: 'active', renew: null });
  });

  it('ticks ask for nothing while a request is asked for or in flight', () => {
    const n = node();
    n.act({ type: 'unsealed', now: T0 });
    expect(n.act({ type: 'tick', now: T0 + 10 * retryMs })).toEqual([]);
    n.act({ type: 'acquireSent', now: T0 + 10 * retryMs });
    expect(n.act({ type: 'acquireSent', now: T0 + 11 * retryMs })).toEqual([]);
    expect(n.state).toMatchObject({ acquire: { phase: 'sent', sentAt: T0 + 10 * retryMs } });
    expect(n.act({ type: 'tick', now: T0 + 12 * retryMs })).toEqual([]);

    const a = node();
    a.activate(T0);
    expect(a.act({ type: 'tick', now: T0 + renewMs })).toEqual([{ type: 'renew' }]);
    expect(a.act({ type: 'tick', now: T0 + renewMs + 1 })).toEqual([]);
    a.act({ type: 'renewSent', now: T0 + renewMs + 1 });
    expect(a.act({ type: 'tick', now: T0 + 2 * renewMs })).toEqual([]);
  });
});

describe('seal', () => {
  it('stops the active role and releases the row; every later answer is ignored until unsealed', () => {
    const n = node();
    n.activate(T0, 2);
    n.act({ type: 'tick', now: T0 + renewMs });
    n.act({ type: 'renewSent', now: T0 + renewMs });
    expect(n.act({ type: 'sealed' })).toEqual([{ type: 'stopActive', reason: 'sealed' }, { type: 'release', epoch: 2 }]);
    for (const e of [
      { type: 'renewed', sentAt: T0 + renewMs },
      { type: 'tick', now: T0 + 10 * ttlMs },
      { type: 'acquired', epoch: 9, holder: 'node-a', sentAt: T0 },
      { type: 'fenceRefused', epoch: 2 },
      { type: 'stepDown', now: T0 },
    ] as const) {
      expect(n.act(e)).toEqual([]);
    }
    expect(n.state).toEqual({ mode: 'sealed', options: DEFAULT_LEASE_OPTIONS, epoch: 2 });
    expect(n.act({ type: 'unsealed', now: T0 + 11 * ttlMs })).toEqual([{ type: 'tryAcquire' }]);
  });

  it('a standby that knew a leader forgets it; a cooldown ends', () => {
    const n = node();
    n.act({ type: 'unsealed', now: T0 });
    n.act({ type: 'acquireSent', now: T0 });
    n.act({ type: 'acquireLost', leader: B });
    expect(n.act({ type: 'sealed' })).toEqual([{ type: 'leaderChanged', leader: undefined }]);
    const c = node();
    c.activate(T0);
    c.act({ type: 'stepDown', now: T0 });
    expect(c.act({ type: 'sealed' })).toEqual([]);
    expect(c.state.mode).toBe('sealed');
  });
});

describe('a failure to become active (issue 26 item 1)', () => {
  it('stops the role, releases the row at once, and does not compete for backoffMs; then it competes', () => {
    const n = node();
    n.activate(T0, 3);
    expect(n.act({ type: 'activationFailed', epoch: 3, now: T0 + 40, reason: 'listen EADDRINUSE' })).toEqual([
      { type: 'stopActive', reason: 'activation-failed' },
      { type: 'release', epoch: 3 },
      { type: 'leaderChanged', leader: undefined },
    ]);
    expect(n.state).toMatchObject({ mode: 'standby', failures: 1, lastFailure: { reason: 'listen EADDRINUSE', at: T0 + 40, until: T0 + 40 + backoffMs } });
    expect(leadership(n.state, T0 + 41).backoff).toEqual({ reason: 'listen EADDRINUSE', at: T0 + 40, until: T0 + 40 + backoffMs });
    for (let t = T0 + 40; t < T0 + 40 + backoffMs; t += retryMs) expect(n.act({ type: 'tick', now: t })).toEqual([]);
    // A node alone in its cluster tries again once the backoff ends.
    expect(n.act({ type: 'tick', now: T0 + 40 + backoffMs })).toEqual([{ type: 'tryAcquire' }]);
    expect(leadership(n.state, T0 + 40 + backoffMs).backoff).toBeUndefined();
  });

  it('doubles the backoff at each failure in a row, up to backoffMaxMs, and serving that long forgets them', () => {
    const n = node();
    let now = T0;
    const seen: number[] = [];
    for (let epoch = 1; epoch <= 7; epoch++) {
      n.activate(now, epoch);
      n.act({ type: 'activationFailed', epoch, now: now + 1, reason: 'storage failed' });
      const until = (n.state as { lastFailure: { until: number } }).lastFailure.until;
      seen.push(until - (now + 1));
      now = until;
      n.act({ type: 'sealed' });
    }
    expect(seen).toEqual([backoffMs, 2 * backoffMs, 4 * backoffMs, 8 * backoffMs, backoffMaxMs, backoffMaxMs, backoffMaxMs]);
    // Active for backoffMaxMs (renewing), then a failure: the shortest backoff again.
    n.activate(now, 8);
    for (let t = now + renewMs; t <= now + backoffMaxMs; t += renewMs) n.renewAt(t);
    n.act({ type: 'activationFailed', epoch: 8, now: now + backoffMaxMs + 1, reason: 'storage failed' });
    expect(n.state).toMatchObject({ failures: 1, lastFailure: { until: now + backoffMaxMs + 1 + backoffMs } });
  });

  it('ignores a failure of another epoch, and a standby ignores it', () => {
    const n = node();
    n.activate(T0, 3);
    expect(n.act({ type: 'activationFailed', epoch: 2, now: T0 + 1, reason: 'x' })).toEqual([]);
    expect(n.state.mode).toBe('active');
    const s = node();
    s.act({ type: 'unsealed', now: T0 });
    expect(s.act({ type: 'activationFailed', epoch: 0, now: T0 + 1, reason: 'x' })).toEqual([]);
  });
});

describe('identity held by another process (issue 26 item 2)', () => {
  it('an active node stops and releases; no mode competes until the identity is held again', () => {
    const n = node();
    n.activate(T0, 4);
    expect(n.act({ type: 'identityTaken', now: T0 + 5, by: 'host-x (pid 7)' })).toEqual([
      { type: 'stopActive', reason: 'identity-taken' },
      { type: 'release', epoch: 4 },
      { type: 'leaderChanged', leader: undefined },
    ]);
    expect(leadership(n.state, T0 + 6).excluded).toBe('host-x (pid 7)');
    expect(n.act({ type: 'tick', now: T0 + 10 * retryMs })).toEqual([]);
    expect(n.act({ type: 'identityTaken', now: T0 + 11 * retryMs, by: 'host-x (pid 7)' })).toEqual([]);
    expect(n.act({ type: 'identityHeld', now: T0 + 12 * retryMs })).toEqual([{ type: 'tryAcquire' }]);
    expect(leadership(n.state, T0 + 12 * retryMs).excluded).toBeUndefined();
  });

  it('a sealed node taken stays out once unsealed, until held', () => {
    const n = node();
    n.act({ type: 'identityTaken', now: T0, by: 'other' });
    expect(n.act({ type: 'unsealed', now: T0 + 1 })).toEqual([]);
    expect(n.state.mode).toBe('standby');
    expect(n.act({ type: 'identityHeld', now: T0 + 2 })).toEqual([{ type: 'tryAcquire' }]);
  });
});

describe('options', () => {
  it('fills in the defaults and accepts a consistent set', () => {
    expect(leaseOptions()).toEqual(DEFAULT_LEASE_OPTIONS);
    expect(leaseOptions({ ttlMs: 15_000, renewMs: 5000, retryMs: 1000 })).toMatchObject({ ttlMs: 15_000, marginMs: marginMs });
  });

  it.each([
    [{ renewMs: 1500 }, 'renewMs (1500) must be < ttlMs - marginMs (1500)'],
    [{ marginMs: 2000 }, 'marginMs (2000) must be < ttlMs (2000)'],
    [{ ttlMs: 0 }, 'must be > 0'],
    [{ retryMs: -1 }, 'retryMs must be a whole number of ms >= 0, got -1'],
    [{ cooldownMs: 1.5 }, 'cooldownMs must be a whole number'],
    [{ backoffMs: 5000, backoffMaxMs: 4000 }, 'backoffMaxMs (4000) must be >= backoffMs (5000)'],
    [{ ttlMs: Number.NaN }, 'ttlMs must be a whole number'],
  ])('refuses %j', (given, message) => {
    expect(() => leaseOptions(given)).toThrow(InvalidRequest);
    expect(() => leaseOptions(given)).toThrow(message);
  });
});

describe('leadership', () => {
  it('shows self, the known leader and the lease age as sys/leader and the metrics need them', () => {
    const n = node();
    expect(leadership(n.state, T0)).toEqual({ mode: 'sealed', isSelf: false, activeSince: null, leader: undefined, leaseAgeMs: null, backoff: undefined, excluded: undefined });
    n.act({ type: 'unsealed', now: T0 });
    n.act({ type: 'acquireSent', now: T0 });
    n.act({ type: 'acquireLost', leader: B });
    expect(leadership(n.state, T0)).toMatchObject({ mode: 'standby', isSelf: false, leader: B });
    const a = node();
    a.activate(T0);
    a.renewAt(T0 + renewMs);
    expect(leadership(a.state, T0 + renewMs + 30)).toEqual({ mode: 'active', isSelf: true, activeSince: T0, leader: undefined, leaseAgeMs: 30, backoff: undefined, excluded: undefined });
  });
});

describe('the lease keeper\'s renewals (leaseExtended)', () => {
  it('a renewal the keeper made while the driver was stalled moves the deadline; one of another epoch or older does not', () => {
    const n = node();
    n.activate(T0, 3);
    // The main thread stalls past its own deadline, but the keeper renewed meanwhile.
    expect(n.act({ type: 'leaseExtended', epoch: 3, sentAt: T0 + 1_000 })).toEqual([]);
    expect(deadlineOf(n.state as never)).toBe(T0 + 1_000 + ttlMs - marginMs);
    expect(n.act({ type: 'tick', now: T0 + ttlMs - marginMs + 100 })).toEqual([{ type: 'renew' }]);
    expect(n.state.mode).toBe('active');
    // Stale or foreign: ignored.
    n.act({ type: 'leaseExtended', epoch: 2, sentAt: T0 + 5_000 });
    n.act({ type: 'leaseExtended', epoch: 3, sentAt: T0 + 500 });
    expect(deadlineOf(n.state as never)).toBe(T0 + 1_000 + ttlMs - marginMs);
  });

  it('a late answer to the driver\'s own renewal, sent before the keeper\'s, never moves the deadline back', () => {
    const n = node();
    n.activate(T0, 1);
    expect(n.act({ type: 'tick', now: T0 + renewMs })).toEqual([{ type: 'renew' }]);
    n.act({ type: 'renewSent', now: T0 + renewMs });
    n.act({ type: 'leaseExtended', epoch: 1, sentAt: T0 + renewMs + 900 });
    n.act({ type: 'renewed', sentAt: T0 + renewMs });
    expect(deadlineOf(n.state as never)).toBe(T0 + renewMs + 900 + ttlMs - marginMs);
  });

  it('a standby, a sealed node and one in cooldown ignore it', () => {
    const sealed = node();
    expect(sealed.act({ type: 'leaseExtended', epoch: 1, sentAt: T0 })).toEqual([]);
    expect(sealed.state.mode).toBe('sealed');
    const standby = node();
    standby.act({ type: 'unsealed', now: T0 });
    expect(standby.act({ type: 'leaseExtended', epoch: 1, sentAt: T0 })).toEqual([]);
    expect(standby.state.mode).toBe('standby');
  });
});
