import pino from 'pino';
import { Writable } from 'node:stream';
import { ReplicationEvents, type FollowItem } from './events.js';

const clock = () => Date.parse('2026-11-23T22:00:00.000Z');

describe('ReplicationEvents', () => {
  it('keeps only the newest `capacity` events, with ids that keep growing past the bound', () => {
    const ev = new ReplicationEvents({ now: clock, capacity: 3 });
    for (let i = 0; i < 5; i++) ev.record('dr', 'mode-changed', { n: i });
    const h = ev.history();
    expect(h.map((e) => e.id)).toEqual([3, 4, 5]);
    expect(h.map((e) => e.n)).toEqual([2, 3, 4]);
    expect(ev.history(4).map((e) => e.id)).toEqual([5]);
    expect(h[0]).toMatchObject({ time: '2026-11-23T22:00:00.000Z', kind: 'dr', type: 'mode-changed' });
  });

  it('does not let a detail field overwrite id, time, kind or type', () => {
    const ev = new ReplicationEvents({ now: clock });
    const e = ev.record('performance', 'connected', { id: 99, type: 'x', kind: 'dr', time: 'then', reason: 'r' });
    expect(e).toEqual({ id: 1, time: '2026-11-23T22:00:00.000Z', kind: 'performance', type: 'connected', reason: 'r' });
  });

  it('logs an emitted event as one JSON line with event: replication', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) });
    const ev = new ReplicationEvents({ now: clock, log: pino({ level: 'info' }, sink) });
    ev.emit('dr', 'secondary-connected', { secondary_id: 'east' });
    ev.record('dr', 'not-logged');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ event: 'replication', event_id: 1, event_type: 'secondary-connected', kind: 'dr', secondary_id: 'east' });
  });

  it('a failing subscriber neither loses the event nor starves the others', () => {
    const ev = new ReplicationEvents({ now: clock });
    const got: number[] = [];
    ev.subscribe(() => {
      throw new Error('boom');
    });
    ev.subscribe((e) => got.push(e.id));
    ev.record('dr', 'a');
    expect(got).toEqual([1]);
    expect(ev.history()).toHaveLength(1);
  });

  it('follow replays the history after an id, then live events, heartbeats when idle, and ends on abort', async () => {
    const ev = new ReplicationEvents({ now: clock });
    ev.record('dr', 'one');
    ev.record('dr', 'two');
    const abort = new AbortController();
    const items: FollowItem[] = [];
    const done = (async () => {
      for await (const item of ev.follow({ after: 1, signal: abort.signal, heartbeatMs: 20 })) {
        items.push(item);
        if ('event' in item && item.event.type === 'two') ev.record('dr', 'three');
        if ('heartbeat' in item) abort.abort();
      }
    })();
    await done;
    const types = items.map((i) => ('event' in i ? i.event.type : 'heartbeat'));
    expect(types).toEqual(['two', 'three', 'heartbeat']);
    // Unsubscribed at the end: a later event reaches no one.
    ev.record('dr', 'four');
    expect(items).toHaveLength(3);
  });

  it('follow ends promptly when aborted while waiting', async () => {
    const ev = new ReplicationEvents({ now: clock });
    const abort = new AbortController();
    const started = Date.now();
    const run = (async () => {
      const seen: FollowItem[] = [];
      for await (const item of ev.follow({ signal: abort.signal, heartbeatMs: 60_000 })) seen.push(item);
      return seen;
    })();
    setTimeout(() => abort.abort(), 20);
    expect(await run).toEqual([]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('endFollowers ends every open follow; a later follow still streams', async () => {
    const ev = new ReplicationEvents({ now: clock });
    const abort = new AbortController();
    const run = (async () => {
      let n = 0;
      for await (const _ of ev.follow({ signal: abort.signal, heartbeatMs: 60_000 })) n++;
      return n;
    })();
    ev.record('dr', 'one');
    await new Promise((r) => setImmediate(r));
    expect(ev.subscriberCount).toBe(1);
    ev.endFollowers();
    expect(await run).toBe(1);
    expect(ev.subscriberCount).toBe(0);
    const later = ev.follow({ signal: abort.signal, heartbeatMs: 60_000 });
    expect((await later.next()).value).toMatchObject({ event: { type: 'one' } });
    abort.abort();
  });
});
