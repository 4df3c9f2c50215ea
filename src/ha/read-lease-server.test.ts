import { describe, expect, it } from '@jest/globals';
import type { LeaseDown, LeaseUp } from '../core/ha/read-lease.js';
import { ReadLeaseServer, type LeaseStream } from './read-lease-server.js';

/** A standby's end of a stream, in memory: what the server sent, and a way to answer. */
function standby(): { stream: LeaseStream; sent: LeaseDown[]; say(m: LeaseUp): void; cut(): void } {
  const sent: LeaseDown[] = [];
  let onMessage: (m: LeaseUp) => void = () => undefined;
  let onEnd: () => void = () => undefined;
  return {
    sent,
    stream: {
      send: (m) => void sent.push(m),
      onMessage: (fn) => (onMessage = fn),
      onEnd: (fn) => (onEnd = fn),
      end: () => onEnd(),
    },
    say: (m) => onMessage(m),
    cut: () => onEnd(),
  };
}

const settled = async (p: Promise<void> | undefined): Promise<boolean> => {
  if (p === undefined) return true;
  let done = false;
  void p.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

function server(maxMs = 60_000, deadlineInMs: () => number | undefined = () => 60_000): ReadLeaseServer {
  return new ReadLeaseServer({ maxMs, now: () => performance.now(), deadlineInMs });
}

describe('ReadLeaseServer: a commit resolves only once every leased standby heard of it', () => {
  it('with no lease granted a commit waits for nobody', () => {
    const s = server();
    const sb = standby();
    s.accept(sb.stream);
    expect(s.published()).toBeUndefined();
    expect(sb.sent).toEqual([]);
  });

  it('a leased standby gets the push; the commit waits for its ack', async () => {
    const s = server();
    const sb = standby();
    s.accept(sb.stream);
    sb.say({ type: 'ask', ask: 1 });
    expect(sb.sent).toEqual([{ type: 'grant', ask: 1, durationMs: 60_000, seq: 0 }]);
    const commit = s.published();
    expect(sb.sent.at(-1)).toEqual({ type: 'push', seq: 1 });
    expect(await settled(commit)).toBe(false);
    sb.say({ type: 'ack', seq: 1 });
    expect(await settled(commit)).toBe(true);
  });

  /** Two standbys with open streams on `s`. */
  const accepted = (s: ReturnType<typeof server>): [ReturnType<typeof standby>, ReturnType<typeof standby>] => {
    const pair: [ReturnType<typeof standby>, ReturnType<typeof standby>] = [standby(), standby()];
    for (const sb of pair) s.accept(sb.stream);
    return pair;
  };

  it('a standby leased while a commit waits does not hold that commit, however often it renews', async () => {
    const s = server();
    const [a, b] = accepted(s);
    a.say({ type: 'ask', ask: 1 });
    const commit = s.published();
    b.say({ type: 'ask', ask: 1 });
    expect(b.sent).toEqual([{ type: 'grant', ask: 1, durationMs: 60_000, seq: 1 }]);
    a.say({ type: 'ack', seq: 1 });
    b.say({ type: 'ask', ask: 2 });
    expect(await settled(commit)).toBe(true);
  });

  it('a standby that went silent holds the commit until its lease ended, not longer', async () => {
    const s = server(200);
    const sb = standby();
    s.accept(sb.stream);
    sb.say({ type: 'ask', ask: 1 });
    const started = performance.now();
    sb.cut();
    const commit = s.published();
    expect(await settled(commit)).toBe(false);
    await commit;
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(190);
    expect(s.leasedCount()).toBe(0);
  });

  it('grants nothing when the node is not active, or past its own deadline', () => {
    const s = server(60_000, () => undefined);
    const sb = standby();
    s.accept(sb.stream);
    sb.say({ type: 'ask', ask: 1 });
    expect(sb.sent).toEqual([]);
    const t = server(60_000, () => 300);
    const sc = standby();
    t.accept(sc.stream);
    sc.say({ type: 'ask', ask: 1 });
    expect(sc.sent).toEqual([{ type: 'grant', ask: 1, durationMs: 300, seq: 0 }]);
  });

  it('revokeAll tells every leased standby, resolves on their acks, and grants nothing more until open()', async () => {
    const s = server();
    const [a, b] = accepted(s);
    a.say({ type: 'ask', ask: 1 });
    b.say({ type: 'ask', ask: 1 });
    const revoking = s.revokeAll();
    expect(a.sent.at(-1)).toEqual({ type: 'revoke' });
    expect(b.sent.at(-1)).toEqual({ type: 'revoke' });
    a.say({ type: 'revoked' });
    expect(await settled(revoking)).toBe(false);
    b.say({ type: 'revoked' });
    expect(await settled(revoking)).toBe(true);
    a.say({ type: 'ask', ask: 2 });
    expect(a.sent.at(-1)).toEqual({ type: 'revoke' });
    s.open();
    a.say({ type: 'ask', ask: 3 });
    expect(a.sent.at(-1)).toMatchObject({ type: 'grant', ask: 3 });
  });
});
