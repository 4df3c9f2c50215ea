/**
 * The read barrier (standby-reads.ts) with a hand-written follow: a request waits for a follow
 * that began after it arrived (one in flight may have read storage before), concurrent requests
 * share one, and the core's caches are read again exactly when what was followed names them or
 * cannot say; a failed follow or reload rejects and the next request tries again.
 */
import type { Followed } from '../storage/engine.js';
import { StandbyReads } from './standby-reads.js';

const NOTHING: Followed = { entries: 0, keys: [], known: true };

function recorder(): { reads: StandbyReads; follows: Array<(f: Followed | Error) => void>; reloads: { n: number; fail: boolean } } {
  const follows: Array<(f: Followed | Error) => void> = [];
  const reloads = { n: 0, fail: false };
  const reads = new StandbyReads({
    follow: () => new Promise<Followed>((resolve, reject) => follows.push((f) => (f instanceof Error ? reject(f) : resolve(f)))),
    reloadCaches: async () => {
      reloads.n++;
      if (reloads.fail) throw new Error('reload failed');
    },
    cachesDeriveFrom: (key) => key.startsWith('core/'),
  });
  return { reads, follows, reloads };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

it('makes a request that arrives during a follow wait for the next one, shared by every such request', async () => {
  const { reads, follows } = recorder();
  const first = reads.current();
  await tick();
  expect(follows).toHaveLength(1);
  let laterDone = 0;
  const later = [reads.current(), reads.current(), reads.current()].map((p) => p.then(() => laterDone++));
  await tick();
  expect(follows).toHaveLength(1); // nothing new starts while one runs
  follows[0]!({ entries: 1, keys: ['core/mounts/x'], known: true });
  await first;
  await tick();
  expect(laterDone).toBe(0); // the first follow may predate them
  expect(follows).toHaveLength(2); // one more for all three
  follows[1]!(NOTHING);
  await Promise.all(later);
  expect(laterDone).toBe(3);
});

it('reads the caches again only when the followed keys name them, or when nobody can say which keys changed', async () => {
  const { reads, follows, reloads } = recorder();
  const step = async (f: Followed): Promise<void> => {
    const p = reads.current();
    await tick();
    follows.at(-1)!(f);
    await p;
  };
  await step(NOTHING);
  expect(reloads.n).toBe(1); // a fresh barrier has read nothing yet
  await step({ entries: 2, keys: ['logical/a', 'local/token/id/x'], known: true });
  await step(NOTHING);
  expect(reloads.n).toBe(1);
  await step({ entries: 1, keys: ['core/policy/_root/p'], known: true });
  expect(reloads.n).toBe(2);
  await step({ entries: 0, keys: [], known: false });
  expect(reloads.n).toBe(3);
  reads.invalidate();
  await step(NOTHING);
  expect(reloads.n).toBe(4);
});

it('rejects when the follow or the reload fails, and the next request tries again', async () => {
  const { reads, follows, reloads } = recorder();
  const failed = reads.current();
  await tick();
  follows[0]!(new Error('storage unreachable'));
  await expect(failed).rejects.toThrow('storage unreachable');
  reloads.fail = true;
  const again = reads.current();
  await tick();
  follows[1]!(NOTHING);
  await expect(again).rejects.toThrow('reload failed');
  reloads.fail = false;
  const third = reads.current();
  await tick();
  follows[2]!(NOTHING);
  await third;
  expect(reloads.n).toBe(2); // the failed reload is retried though nothing new was followed
});
