import { describe, expect, it } from '@jest/globals';
import { GrantLedger, HeldReadLease, LEASE_DRIFT } from './read-lease.js';

const S1 = { name: 'stream 1' };
const S2 = { name: 'stream 2' };

/** A standby that asked at `at`, was granted `ms` with push count `seq`, and followed everything it knew. */
function leased(at: number, ms: number, seq = 0): HeldReadLease {
  const held = new HeldReadLease();
  held.granted(at, { durationMs: ms, seq }, S1);
  held.followed(held.followBegins());
  return held;
}

describe('HeldReadLease: when a standby may answer without following', () => {
  it('is not fresh before any grant, nor granted but never followed on this stream', () => {
    const held = new HeldReadLease();
    expect(held.fresh(0)).toBe(false);
    held.granted(0, { durationMs: 1000, seq: 0 }, S1);
    expect(held.fresh(1)).toBe(false);
  });

  it('is fresh from a follow that began after every push it heard of, until the lease ends (counted from the ask, less the drift)', () => {
    const held = leased(100, 1000);
    expect(held.fresh(100)).toBe(true);
    const end = 100 + 1000 * (1 - LEASE_DRIFT);
    expect(held.fresh(end - 1)).toBe(true);
    expect(held.fresh(end)).toBe(false);
  });

  it('a push newer than the last follow makes it follow; a follow that began before the push does not cover it', () => {
    const held = leased(0, 1000);
    const before = held.followBegins();
    held.pushed(1, S1);
    expect(held.fresh(10)).toBe(false);
    held.followed(before);
    expect(held.fresh(10)).toBe(false);
    held.followed(held.followBegins());
    expect(held.fresh(10)).toBe(true);
  });

  it('a grant carrying a count newer than the last follow (commits made while it held no lease) makes it follow', () => {
    const held = leased(0, 1000, 3);
    held.granted(200, { durationMs: 1000, seq: 7 }, S1);
    expect(held.fresh(300)).toBe(false);
    held.followed(held.followBegins());
    expect(held.fresh(300)).toBe(true);
  });

  it('a revoke ends the lease at once; a lost stream forgets what it followed', () => {
    const held = leased(0, 1000);
    held.revoked();
    expect(held.fresh(1)).toBe(false);
    const again = leased(0, 1000);
    again.lost();
    expect(again.fresh(1)).toBe(false);
    expect(again.remainingMs(1)).toBe(0);
  });

  it('a grant or push on another stream starts over: a follow on the old stream covers nothing on the new one', () => {
    const held = leased(0, 1000, 5);
    const old = held.followBegins();
    held.granted(10, { durationMs: 1000, seq: 0 }, S2);
    expect(held.fresh(20)).toBe(false);
    held.followed(old);
    expect(held.fresh(20)).toBe(false);
    held.followed(held.followBegins());
    expect(held.fresh(20)).toBe(true);
    held.pushed(1, S1);
    expect(held.fresh(20)).toBe(false);
  });

  it('a grant of no time extends nothing', () => {
    const held = new HeldReadLease();
    held.granted(0, { durationMs: 0, seq: 0 }, S1);
    held.followed(held.followBegins());
    expect(held.fresh(0)).toBe(false);
  });
});

describe('GrantLedger: what the active node promised and waits for', () => {
  it('grants at most maxMs and never past its own lease deadline; nothing when not active or closed', () => {
    const l = new GrantLedger({ maxMs: 1000 });
    expect(l.grant('a', 1, 0, 5000)).toEqual({ type: 'grant', ask: 1, durationMs: 1000, seq: 0 });
    expect(l.grant('a', 2, 0, 400)).toEqual({ type: 'grant', ask: 2, durationMs: 400, seq: 0 });
    expect(l.grant('b', 1, 0, 0)).toBeUndefined();
    expect(l.grant('b', 1, 0, undefined)).toBeUndefined();
    l.close();
    expect(l.grant('b', 1, 0, 5000)).toBeUndefined();
    l.open();
    expect(l.grant('b', 1, 0, 5000)).toMatchObject({ durationMs: 1000 });
  });

  it('a grant carries the push count, so a standby learns of commits it was not told of', () => {
    const l = new GrantLedger({ maxMs: 1000 });
    l.publish(0);
    l.publish(0);
    expect(l.grant('a', 1, 0, 5000)).toMatchObject({ seq: 2 });
  });

  it('a commit waits for every leased standby until it acknowledged the push or its lease ended', () => {
    const l = new GrantLedger({ maxMs: 1000 });
    l.grant('a', 1, 0, 5000);
    l.grant('b', 1, 500, 5000);
    const seq = l.publish(100);
    expect(l.waitingOn(seq, 100).map((w) => w.id).sort()).toEqual(['a', 'b']);
    l.acked('a', seq);
    expect(l.waitingOn(seq, 100)).toEqual([{ id: 'b', until: 1500 }]);
    // a's lease ended at 1000 (its ack stands); b's goes on until 1500.
    expect(l.waitingOn(seq, 1000)).toEqual([{ id: 'b', until: 1500 }]);
    expect(l.waitingOn(seq, 1500)).toEqual([]);
    expect(l.anyLeased(1500)).toBe(false);
  });

  it('a renewal keeps the standby leased from the later grant; a revoke acknowledged frees it at once', () => {
    const l = new GrantLedger({ maxMs: 1000 });
    l.grant('a', 1, 0, 5000);
    l.grant('a', 2, 800, 5000);
    expect(l.leased(1200)).toEqual([{ id: 'a', until: 1800 }]);
    l.revoked('a');
    expect(l.leased(1200)).toEqual([]);
  });

  it('a standby leased after a push was sent is not waited for (it never got the push; its grant carries the count)', () => {
    const l = new GrantLedger({ maxMs: 1000 });
    l.grant('a', 1, 0, 5000);
    const seq = l.publish(100);
    expect(l.grant('b', 1, 150, 5000)).toMatchObject({ seq });
    expect(l.waitingOn(seq, 200)).toEqual([{ id: 'a', until: 1000 }]);
    l.acked('a', seq);
    expect(l.waitingOn(seq, 200)).toEqual([]);
    // b's renewals never hold that commit; the next one it is pushed, it acknowledges.
    expect(l.grant('b', 2, 400, 5000)).toMatchObject({ durationMs: 1000 });
    const next = l.publish(500);
    expect(l.waitingOn(next, 600).map((w) => w.id).sort()).toEqual(['a', 'b']);
  });

  it('no standby leased: nothing to wait for', () => {
    const l = new GrantLedger({ maxMs: 1000 });
    expect(l.anyLeased(0)).toBe(false);
    expect(l.waitingOn(l.publish(0), 0)).toEqual([]);
  });

  it('a standby that keeps asking but never acknowledges a push is not kept leased past maxMs after it', () => {
    const l = new GrantLedger({ maxMs: 1000 });
    l.grant('a', 1, 0, 5000);
    const seq = l.publish(100);
    // Asks go on; the push stays unacknowledged.
    expect(l.grant('a', 2, 600, 5000)).toMatchObject({ durationMs: 500 });
    expect(l.grant('a', 3, 1000, 5000)).toMatchObject({ durationMs: 100 });
    expect(l.grant('a', 4, 1100, 5000)).toBeUndefined();
    expect(l.waitingOn(seq, 1099)).toEqual([{ id: 'a', until: 1100 }]);
    expect(l.waitingOn(seq, 1100)).toEqual([]);
    // Acknowledged at last: leased in full again.
    l.acked('a', seq);
    expect(l.grant('a', 5, 1200, 5000)).toMatchObject({ durationMs: 1000 });
  });

  it('an acknowledged push leaves nothing pending: renewals run in full', () => {
    const l = new GrantLedger({ maxMs: 1000 });
    l.grant('a', 1, 0, 5000);
    for (let t = 100; t < 5000; t += 100) {
      l.acked('a', l.publish(t));
      expect(l.grant('a', t, t, 5000)).toMatchObject({ durationMs: 1000 });
    }
  });
});
