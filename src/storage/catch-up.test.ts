/**
 * Catch-up (catch-up.ts): two engines on one store, as an HA active node and a standby share a
 * database. The standby follows what the writer commits by reading only the new entries and the
 * subpages they touch, and ends with the writer's guard and root; a trimmed WAL or a leaf changed
 * outside the WAL is never adopted as verified, and reload() then loads in full. An engine opening
 * while the writer trims the WAL under it loads one consistent state and follows from there.
 */
import { Keys } from './keyspace.js';
import { testCipher } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { MemoryBackend } from './memory.js';
import type { Op } from './store.js';

const cipher = testCipher(Buffer.alloc(32, 5));
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });

async function pair(opts: EngineOptions): Promise<{ backend: MemoryBackend; writer: StorageEngine; standby: StorageEngine }> {
  const backend = new MemoryBackend();
  const writer = await StorageEngine.open(backend, opts);
  await writer.secure(cipher).commit([put('kv/seed', '0'), put('local/seed', '0')]);
  const standby = await StorageEngine.open(backend, opts);
  return { backend, writer, standby };
}

async function commitMany(e: StorageEngine, n: number, tag: string): Promise<void> {
  const s = e.secure(cipher);
  for (let i = 0; i < n; i++) await s.commit([put(`kv/${i % 13}/${tag}`, `${tag}${i}`), put(`local/${i % 5}`, `${tag}${i}`)]);
  await s.commit([{ type: 'del', key: 'kv/3/' + tag }]);
}

describe('two engines on one store (HA): catch-up and open', () => {
  it('follows the writer from the new entries and their subpages only, and reload() verifies it', async () => {
    const { writer, standby } = await pair({ walMaxEntries: 1000, walMaxBytes: 1 << 30 });
    await commitMany(writer, 40, 'a');
    const followed = await standby.follow();
    // 41 entries of at most two tree keys each: 13 KV keys and 5 local ones, so at most 18 subpages.
    expect(followed).toMatchObject({ from: 'catch-up', verified: true, entries: 41 });
    expect(followed).toHaveProperty('subpages', expect.any(Number));
    expect((followed as { subpages: number }).subpages).toBeGreaterThan(0);
    expect((followed as { subpages: number }).subpages).toBeLessThanOrEqual(18);
    expect(standby.lastGuard()).toEqual(writer.lastGuard());
    expect(standby.merkleRoot()).toEqual(writer.merkleRoot());
    await commitMany(writer, 7, 'b');
    expect(await standby.reload()).toMatchObject({ from: 'catch-up', entries: 8 });
    expect(standby.lastGuard()).toEqual(writer.lastGuard());
    expect(standby.merkleRoot()).toEqual(writer.merkleRoot());
    expect(standby.walRetainedBytes()).toBe(writer.walRetainedBytes());
    // The reloaded standby writes on: its commits chain from the writer's.
    await standby.secure(cipher).commit([put('kv/after', '1')]);
    expect(standby.lastGuard().index).toBe(writer.lastGuard().index + 1n);
    await writer.close();
  });

  it('gives up when the WAL no longer continues the standby (trimmed past it); reload() loads in full', async () => {
    const { backend, writer, standby } = await pair({ walMaxEntries: 10, walMaxBytes: 1 << 30 });
    await commitMany(writer, 30, 'a');
    expect(await standby.follow()).toBeUndefined(); // nothing adopted
    expect(standby.lastGuard().index).toBe(1n);
    expect(await standby.reload()).toEqual({ from: 'full load' });
    expect(standby.lastGuard()).toEqual(writer.lastGuard());
    expect(standby.merkleRoot()).toEqual(writer.merkleRoot());
    await writer.close();
  });

  it('never verifies a leaf changed outside the WAL; reload() then loads what a fresh open would', async () => {
    const { backend, writer, standby } = await pair({ walMaxEntries: 1000, walMaxBytes: 1 << 30 });
    await commitMany(writer, 5, 'a');
    // A root rewritten without a WAL entry (as a Merkle sync's install or a reindex may).
    await backend.batch([{ type: 'put', key: Keys.treeRoot(1), value: Buffer.alloc(32, 9) }], { sync: true });
    expect(await standby.follow()).toMatchObject({ from: 'catch-up', verified: false });
    expect(await standby.reload()).toEqual({ from: 'full load' });
    const fresh = await StorageEngine.open(backend, { walMaxEntries: 1000, walMaxBytes: 1 << 30 });
    expect(standby.merkleRoot()).toEqual(fresh.merkleRoot());
    expect(standby.lastGuard()).toEqual(fresh.lastGuard());
    await writer.close();
  });

  it('opens beside a writer that trims the WAL: the tail and the index are read in one snapshot (found by the HA nemesis)', async () => {
    const opts: EngineOptions = { walMaxEntries: 4, walMaxBytes: 1 << 30 };
    const shared = new MemoryBackend();
    const writer = await StorageEngine.open(shared, opts);
    const store = writer.secure(cipher);
    for (let i = 0; i < 10; i++) await store.commit([put(`kv/${i}`, 'v')]);
    const before = { guard: writer.lastGuard(), root: writer.merkleRoot() };
    // The opening node's snapshot: right after it reads the WAL meta, the writer commits twice,
    // trimming the two entries the scan would start from if it read the live store.
    let interleaved = false;
    const view = Object.create(shared, {
      snapshot: {
        value: async () => {
          const snap = await shared.snapshot();
          return Object.assign(Object.create(snap), {
            get: async (key: string) => {
              const v = await snap.get(key);
              if (key === Keys.walMeta && !interleaved) {
                interleaved = true;
                for (let i = 0; i < 2; i++) await store.commit([put(`kv/late${i}`, 'v')]);
              }
              return v;
            },
          });
        },
      },
    }) as MemoryBackend;
    const opened = await StorageEngine.open(view, opts);
    expect(interleaved).toBe(true);
    // It holds the state of its snapshot, whole, and follows the writer from there.
    expect(opened.lastGuard()).toEqual(before.guard);
    expect(opened.merkleRoot()).toEqual(before.root);
    await opened.follow();
    expect(opened.lastGuard()).toEqual(writer.lastGuard());
    expect(opened.merkleRoot()).toEqual(writer.merkleRoot());
    await writer.close();
  });
});
