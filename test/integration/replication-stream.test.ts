/**
 * The replication logic end to end over an in-process channel: streaming, resume after a
 * restart, reconciliation of a gap (WAL bound exceeded) and of a divergent history (failover),
 * each on real storage engines.
 */
import pino from 'pino';
import { HASH_LEN, PAGES, SUBPAGES, locate, type Tree } from '../../src/core/merkle.js';
import { StorageEngine } from '../../src/storage/engine.js';
import { testCipher } from '../../src/storage/engine.fixtures.js';
import { MemoryBackend } from '../../src/storage/memory.js';
import type { Store } from '../../src/storage/store.js';
import { PrimaryStreamer } from '../../src/replication/primary-service.js';
import { SecondaryLoop } from '../../src/replication/secondary-loop.js';
import { eventually } from '../harness/eventually.js';
import { loopback } from '../support/loopback.js';
import type { PrimaryClient } from '../../src/replication/transport.js';

const log = pino({ level: 'silent' });
const cipher = testCipher();

async function node(walMaxEntries = 10_000): Promise<{ engine: StorageEngine; store: Store }> {
  const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries, walMaxBytes: 1 << 30 });
  return { engine, store: engine.secure(cipher) };
}

function primaryOf(engine: StorageEngine): PrimaryStreamer {
  return new PrimaryStreamer({
    engine,
    kind: 'dr',
    registry: { check: () => 'active' as const },
    info: { clusterId: () => 'c1', nodeId: () => 'p', apiAddr: () => 'http://p', clusterAddr: () => 'p:8201' },
  });
}

/** A DR secondary loop over a loopback link; `wrap` instruments the client it connects with. */
function secondaryOf(
  engine: StorageEngine, service: PrimaryStreamer,
  o: { wrap?: (c: PrimaryClient) => PrimaryClient; onApplied?: (index: bigint) => void } = {},
): { loop: SecondaryLoop; link: ReturnType<typeof loopback> } {
  const link = loopback(service, 's1');
  const connect = o.wrap ? () => (o.wrap as (c: PrimaryClient) => PrimaryClient)(link.client()) : link.client;
  const loop = new SecondaryLoop({ engine, connect, secondaryId: 's1', kind: 'dr', apiAddr: () => 'http://s', clusterAddr: () => 's:8201', log, ...(o.onApplied ? { onApplied: o.onApplied } : {}) });
  return { loop, link };
}

const put = (store: Store, key: string, v: string) => store.commit([{ type: 'put', key, value: Buffer.from(v) }]);

async function inSync(a: StorageEngine, b: StorageEngine): Promise<void> {
  await eventually(() => {
    expect(b.lastGuard().index).toBe(a.lastGuard().index);
    expect(b.lastGuard().hash.equals(a.lastGuard().hash)).toBe(true);
    expect(b.merkleRoot().toString('hex')).toBe(a.merkleRoot().toString('hex'));
  }, { timeoutMs: 10_000, intervalMs: 20 });
}

describe('WAL streaming', () => {
  it('streams committed entries as they commit, and resumes from the persisted guard after a restart', async () => {
    const p = await node();
    const s = await node();
    const service = primaryOf(p.engine);
    let { loop } = secondaryOf(s.engine, service);
    for (let i = 0; i < 50; i++) await put(p.store, `app/k${i}`, `v${i}`);
    loop.start();
    await inSync(p.engine, s.engine);
    expect(loop.progress.state).toBe('stream-wals');

    // Writes while streaming arrive without polling; a concurrent burst is batched.
    await Promise.all(Array.from({ length: 64 }, (_, i) => put(p.store, `burst/${i}`, 'x')));
    await inSync(p.engine, s.engine);

    await loop.stop();
    for (let i = 0; i < 30; i++) await put(p.store, `later/${i}`, 'y');
    ({ loop } = secondaryOf(s.engine, service));
    loop.start();
    await inSync(p.engine, s.engine);
    expect(loop.progress.lastSync).toBeUndefined();
    expect((await s.store.get('later/29'))?.toString()).toBe('y');
    await loop.stop();
    await service.close();
  });
});

describe('reconciliation', () => {
  it('after a gap it goes merkle-diff -> merkle-sync, fetches only the changed keys, then streams', async () => {
    const p = await node(20);
    const s = await node();
    const service = primaryOf(p.engine);
    for (let i = 0; i < 200; i++) await put(p.store, `base/${i}`, 'v0');
    let { loop } = secondaryOf(s.engine, service);
    loop.start();
    await inSync(p.engine, s.engine);
    await loop.stop();

    // 100 writes touching 7 distinct keys, one of them deleted: far past the 20-entry bound.
    const changed = ['base/1', 'base/2', 'base/3', 'new/a', 'new/b', 'new/c'];
    for (let round = 0; round < 17; round++) for (const k of changed) await put(p.store, k, `r${round}`);
    await p.store.commit([{ type: 'del', key: 'base/4' }]);
    expect(p.engine.firstRetainedIndex()).toBeGreaterThan(s.engine.lastGuard().index + 1n);

    const phases: string[] = [];
    ({ loop } = secondaryOf(s.engine, service));
    const seen = setInterval(() => phases.push(loop.progress.state), 1);
    loop.start();
    await inSync(p.engine, s.engine);
    clearInterval(seen);
    expect(loop.progress.lastSync).toEqual({ fetched: changed.length, deleted: 1 });
    expect(loop.progress.syncTotal).toBe(changed.length + 1);
    expect(await s.store.get('base/4')).toBeUndefined();
    expect((await s.store.get('new/c'))?.toString()).toBe('r16');

    // And it streams again afterwards.
    await put(p.store, 'after/sync', 'z');
    await inSync(p.engine, s.engine);
    expect(loop.progress.state).toBe('stream-wals');
    await loop.stop();
    await service.close();
  });

  it('counts the payload a reconcile receives: for 1 changed key among 3,000, one page of hashes, one subpage of leaves and one value', async () => {
    const p = await node(20);
    const s = await node();
    const service = primaryOf(p.engine);
    for (let b = 0; b < 10; b++) {
      await p.store.commit(Array.from({ length: 300 }, (_, i) => ({ type: 'put' as const, key: `base/${b * 300 + i}`, value: Buffer.from('v0') })));
    }
    let { loop } = secondaryOf(s.engine, service);
    loop.start();
    await inSync(p.engine, s.engine);
    await loop.stop();
    expect(loop.progress.lastSyncBytes).toBe(0);

    for (let round = 0; round < 25; round++) await put(p.store, 'base/7', `r${round}`);
    expect(p.engine.firstRetainedIndex()).toBeGreaterThan(s.engine.lastGuard().index + 1n);
    ({ loop } = secondaryOf(s.engine, service));
    loop.start();
    await inSync(p.engine, s.engine);
    expect(loop.progress.lastSync).toEqual({ fetched: 1, deleted: 0 });

    // What the primary sends: the snapshot (root, 2 subtree roots, guard hash + index), the 256
    // page hashes of the one differing subtree, the 256 subpage hashes of the one differing page,
    // the leaves of the one differing subpage, and the key with its ciphertext.
    const { page, subpage } = locate('base/7');
    let tree: Tree = 1;
    let leaves = await p.engine.leaves(1, page, subpage);
    if (!leaves.some((l) => l.key === 'base/7')) {
      tree = 2;
      leaves = await p.engine.leaves(tree, page, subpage);
    }
    expect(leaves.map((l) => l.key)).toContain('base/7');
    const leafBytes = leaves.reduce((n, l) => n + Buffer.byteLength(l.key) + l.valueHash.length + 4, 0);
    const value = (await p.engine.readRaw('base/7')) as Buffer;
    const expected = 4 * HASH_LEN + 8 + PAGES * HASH_LEN + SUBPAGES * HASH_LEN + leafBytes + 'base/7'.length + value.length;
    expect(loop.progress.lastSyncBytes).toBe(expected);
    expect(loop.progress.lastSyncBytes).toBeLessThan(20_000);
    await loop.stop();
    await service.close();
  });

  it('a reconcile that lasts longer than the primary takes to pass its WAL bound ends in streaming after one merkle-sync (nemesis seed 2)', async () => {
    const p = await node(20);
    const s = await node();
    const service = primaryOf(p.engine);
    for (let i = 0; i < 100; i++) await put(p.store, `base/${i}`, 'v0');
    let { loop } = secondaryOf(s.engine, service);
    loop.start();
    await inSync(p.engine, s.engine);
    await loop.stop();
    for (let i = 0; i < 60; i++) await put(p.store, `base/${i % 10}`, `gap${i}`);

    // Writes land while the secondary reconciles: 50 entries (2.5 times the bound) on each of its
    // first three value fetches, after the snapshot was pinned and before the stream opens.
    let fetches = 0;
    ({ loop } = secondaryOf(s.engine, service, {
      wrap: (c) => ({
        ...c,
        fetchValues: async (id, keys) => {
          if (fetches++ < 3) for (let i = 0; i < 50; i++) await put(p.store, `during/${i}`, `f${fetches}`);
          return c.fetchValues(id, keys);
        },
      }),
    }));
    loop.start();
    await inSync(p.engine, s.engine);
    expect(loop.progress.state).toBe('stream-wals');
    expect(loop.progress.syncTotals.syncs).toBe(1);
    // The primary kept the entries the secondary streamed after its sync, past the 20-entry bound.
    expect(fetches).toBe(1);
    await put(p.store, 'after', 'z');
    await inSync(p.engine, s.engine);
    await loop.stop();
    await service.close();
  });

  it('tells the node a sync landed before it releases the snapshot, so caches never show the new data through the old catalog (nemesis seed 7)', async () => {
    const p = await node(20);
    const s = await node();
    const service = primaryOf(p.engine);
    for (let i = 0; i < 60; i++) await put(p.store, `base/${i}`, `v${i}`);
    const order: string[] = [];
    const { loop } = secondaryOf(s.engine, service, {
      wrap: (c) => ({ ...c, closeSnapshot: async (id) => { order.push('closeSnapshot'); return c.closeSnapshot(id); } }),
      onApplied: (index) => order.push(`applied ${index}`),
    });
    loop.start();
    await inSync(p.engine, s.engine);
    expect(order.slice(0, 2)).toEqual([`applied ${p.engine.lastGuard().index}`, 'closeSnapshot']);
    await loop.stop();
    await service.close();
  });

  it('rejoins a divergent history (old primary after failover) without a wipe', async () => {
    const a = await node();
    const b = await node();
    const serviceA = primaryOf(a.engine);
    for (let i = 0; i < 40; i++) await put(a.store, `k/${i}`, 'a');
    const first = secondaryOf(b.engine, serviceA);
    first.loop.start();
    await inSync(a.engine, b.engine);
    await first.loop.stop();

    // A keeps writing (never replicated), B is promoted and writes too: histories fork.
    await put(a.store, 'k/1', 'lost on A');
    await put(a.store, 'only-on-a', 'x');
    await b.engine.setEpoch(b.engine.epoch() + 1);
    await put(b.store, 'k/2', 'written on B');
    await put(b.store, 'only-on-b', 'y');

    // A demotes and follows B: its guard does not match B's history.
    const serviceB = primaryOf(b.engine);
    const back = secondaryOf(a.engine, serviceB);
    back.loop.start();
    await inSync(b.engine, a.engine);
    // k/1 (changed on A), k/2 and only-on-b (written on B) come over; only-on-a goes.
    expect(back.loop.progress.lastSync).toEqual({ fetched: 3, deleted: 1 });
    expect((await a.store.get('k/1'))?.toString()).toBe('a');
    expect(await a.store.get('only-on-a')).toBeUndefined();
    expect((await a.store.get('only-on-b'))?.toString()).toBe('y');
    await put(b.store, 'k/3', 'streams again');
    await inSync(b.engine, a.engine);
    await back.loop.stop();
    await serviceA.close();
    await serviceB.close();
  });

  it('survives a partition: reconnects and catches up', async () => {
    const p = await node();
    const s = await node();
    const service = primaryOf(p.engine);
    const { loop, link } = secondaryOf(s.engine, service);
    loop.start();
    await put(p.store, 'x', '1');
    await inSync(p.engine, s.engine);
    link.partition(true);
    for (let i = 0; i < 20; i++) await put(p.store, `during/${i}`, 'p');
    await eventually(() => expect(loop.progress.state).toBe('idle'), { timeoutMs: 5000, intervalMs: 10 });
    link.partition(false);
    await inSync(p.engine, s.engine);
    await loop.stop();
    await service.close();
  });
});
