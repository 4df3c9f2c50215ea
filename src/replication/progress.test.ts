/**
 * ETAs and WAL headroom as status shows them: reindex on a real engine (MemoryBackend) with a
 * clock the test moves; catch-up and merkle-sync from a secondary loop's progress as the driver
 * exposes it (a plain object in the driver's shape, the clock again the test's).
 */
import pino from 'pino';
import { testCipher } from '../storage/engine.fixtures.js';
import { StorageEngine } from '../storage/engine.js';
import { MemoryBackend } from '../storage/memory.js';
import type { ReplicationDriver } from './driver.js';
import { LocalReplication } from './local.js';
import { ReplicationProgress } from './progress.js';
import type { SecondaryProgress } from './secondary-loop.js';

describe('reindex progress', () => {
  it('shows done, total and an ETA from the observed rate while it runs, and nothing once it is over', async () => {
    const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 10_000, walMaxBytes: 1 << 30 });
    const store = engine.secure(testCipher(Buffer.alloc(32, 1)));
    await store.commit(Array.from({ length: 3000 }, (_, i) => ({ type: 'put' as const, key: `k/${i}`, value: Buffer.from(String(i)) })));
    let clock = 1_000_000;
    const seen: Promise<Record<string, unknown>>[] = [];
    const local: LocalReplication = new LocalReplication({
      // 1000 keys per simulated second: the ETA is what is left at that rate.
      now: () => clock,
      log: pino({ level: 'silent' }),
      engine: {
        lastGuard: () => engine.lastGuard(),
        merkleRoot: () => engine.merkleRoot(),
        check: () => engine.check(),
        getSystem: (n) => engine.getSystem(n),
        putSystem: (n, v) => engine.putSystem(n, v),
        reindex: (o) => engine.reindex({
          ...o,
          onProgress: (done, total) => {
            clock += 1000;
            o.onProgress?.(done, total);
            seen.push(local.status('dr'));
          },
        }),
      },
    });
    await local.reindex({ diff: false, force: false, skipFlush: false });
    const during = await Promise.all(seen);
    expect(during[1]).toMatchObject({ reindex_in_progress: true, reindex_building_progress: 2000, reindex_building_total: 3000, reindex_eta_seconds: 1 });
    expect(during.at(-1)).toMatchObject({ reindex_building_progress: 3000, reindex_eta_seconds: 0 });
    const after = await local.status('dr');
    expect(after.reindex_in_progress).toBe(false);
    expect(after).not.toHaveProperty('reindex_eta_seconds');
  });
});

describe('ReplicationProgress', () => {
  const loopProgress = (): SecondaryProgress => ({
    state: 'stream-wals', connection: 'ready', lastRemoteWal: 0n, primaryLastWal: 0n, primaryCommitTimeMs: 0, lastHeartbeatMs: 0, heartbeatDurationMs: 0,
    clockSkewMs: 0, lastStartMs: 0, lastAppliedCommitMs: 0, lastError: '', lastErrorMs: 0, syncTotal: 0, syncDone: 0, syncStarted: 0, lastSync: undefined, syncTotals: { syncs: 2, fetched: 7, deleted: 3 }, lastSyncBytes: 0,
  });
  const setup = () => {
    const p = loopProgress();
    let applied = 0n;
    const engine = { lastGuard: () => ({ index: 0n }), firstRetainedIndex: () => 1n, walRetainedBytes: () => 0, walBounds: () => ({ maxEntries: 100, maxBytes: 1 << 30 }) };
    const driver = { isLoaded: true, secondaryLoop: { progress: p }, appliedUpstream: () => applied } as unknown as ReplicationDriver;
    const progress = new ReplicationProgress({ engine, drivers: { dr: driver, performance: { isLoaded: false } as unknown as ReplicationDriver } });
    return { p, progress, setApplied: (n: bigint) => (applied = n) };
  };

  it('catch-up: entries behind, apply rate, and an ETA against what the primary keeps writing', () => {
    const { p, progress, setApplied } = setup();
    // The primary writes 10 entries/s; the secondary applies 30/s from 1000 behind.
    for (let s = 0; s <= 10; s++) {
      p.primaryLastWal = BigInt(2000 + 10 * s);
      setApplied(BigInt(1000 + 30 * s));
      progress.sample(s * 1000);
    }
    const st = progress.decorate('dr', { mode: 'secondary', state: 'stream-wals', lag_entries: 2100 - 1300 }, 10_000);
    // 800 behind, closing at 30 - 10 = 20 entries/s: 40 s.
    expect(st.catch_up).toEqual({ entries_behind: 800, rate_entries_per_sec: 30, eta_seconds: 40 });
    expect(st.merkle_syncs).toEqual({ count: 2, fetched_keys: 7, deleted_keys: 3 });
    // In sync: no catch-up block.
    expect(progress.decorate('dr', { mode: 'secondary', state: 'stream-wals', lag_entries: 0 }, 10_000)).not.toHaveProperty('catch_up');
  });

  it('merkle-sync: an ETA from keys moved per second, null while nothing moves', () => {
    const { p, progress } = setup();
    p.state = 'merkle-sync';
    p.syncTotal = 1000;
    for (let s = 0; s <= 4; s++) {
      p.syncDone = 100 * s;
      progress.sample(s * 1000);
    }
    const status = (now: number) => progress.decorate('dr', { mode: 'secondary', state: 'merkle-sync', merkle_sync_progress: { sync_total_keys: 1000, sync_progress: p.syncDone } }, now).merkle_sync_progress;
    expect(status(4000)).toEqual({ sync_total_keys: 1000, sync_progress: 400, eta_seconds: 6 });
    // Stalled for longer than the window: no ETA.
    expect(status(200_000)).toEqual({ sync_total_keys: 1000, sync_progress: 400, eta_seconds: null });
  });

  it('a new merkle-sync gets its ETA from its own rate, never from the samples of the one before (issue 17 item 13)', () => {
    const { p, progress } = setup();
    // Sync 1: 1000 keys at 100 keys/s.
    p.syncStarted = 1;
    p.state = 'merkle-sync';
    p.syncTotal = 1000;
    for (let s = 0; s <= 10; s++) {
      p.syncDone = 100 * s;
      progress.sample(s * 1000);
    }
    // Sync 2 of 5000 keys, at 1000 keys/s: its first chunk is past sync 1's final count.
    p.syncStarted = 2;
    p.syncTotal = 5000;
    p.syncDone = 1500;
    progress.sample(12_000);
    p.syncDone = 2500;
    const st = progress.decorate('dr', { mode: 'secondary', state: 'merkle-sync', merkle_sync_progress: { sync_total_keys: 5000, sync_progress: 2500 } }, 13_000);
    // 2500 left at 1000 keys/s; sync 1's samples would have made it 2500 / (2500 / 13 s) = 13 s.
    expect(st.merkle_sync_progress).toEqual({ sync_total_keys: 5000, sync_progress: 2500, eta_seconds: 3 });
  });
});
