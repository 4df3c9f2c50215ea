/**
 * The echo facts of ./heartbeat.ts: Vault's heartbeat health (healthy under three echo intervals,
 * nothing before a first answer) and the clock skew between two members through the database's clock.
 */
import { HEARTBEAT_INTERVALS, clockSkewMs, heartbeatHealth } from './heartbeat.js';

describe('heartbeatHealth', () => {
  it('is undefined before any echo was answered: no 474 and no heartbeat fields, as Vault', () => {
    expect(heartbeatHealth(undefined, 10_000, 1000)).toBeUndefined();
  });

  it('is healthy while the last answer is younger than three intervals, unhealthy from then on', () => {
    expect(HEARTBEAT_INTERVALS).toBe(3);
    expect(heartbeatHealth(10_000, 10_000, 1000)).toEqual({ healthy: true, sinceMs: 0 });
    expect(heartbeatHealth(10_000, 12_999, 1000)).toEqual({ healthy: true, sinceMs: 2999 });
    expect(heartbeatHealth(10_000, 13_000, 1000)).toEqual({ healthy: false, sinceMs: 3000 });
    expect(heartbeatHealth(10_000, 10_000 + 3_600_000, 5000)).toEqual({ healthy: false, sinceMs: 3_600_000 });
    // An answer stamped after now (the clock stepped back) counts as just answered.
    expect(heartbeatHealth(10_500, 10_000, 1000)).toEqual({ healthy: true, sinceMs: 0 });
  });
});

describe('clockSkewMs', () => {
  const db = 1_000_000;
  it('is the active node\'s clock minus the member\'s, through the database\'s clock at each echo', () => {
    // The member's clock is 250 ms ahead of the database's, the active node's 40 ms behind it.
    const member = { localTime: db + 250, databaseTime: db };
    const active = { localTime: db + 5_000 - 40, databaseTime: db + 5_000 };
    expect(clockSkewMs(member, active)).toBe(-290);
    expect(clockSkewMs(active, member)).toBe(290);
    expect(clockSkewMs(member, member)).toBe(0);
  });

  it('is 0 when an echo lacks the member\'s clock (a row echoed before schema version 3)', () => {
    expect(clockSkewMs({ localTime: undefined, databaseTime: db }, { localTime: db, databaseTime: db })).toBe(0);
    expect(clockSkewMs({ localTime: db, databaseTime: db }, { localTime: undefined, databaseTime: db })).toBe(0);
  });
});
