/**
 * Catch-up (catch-up.ts): two engines on one store, as an HA active node and a standby share a
 * database. The standby follows what the writer commits by reading only the new entries and the
 * subpages they touch, and ends with the writer's guard and root; a trimmed WAL or a leaf changed
 * outside the WAL is never adopted as verified, and reload() then loads in full. A standby's read
 * cache takes every key the followed entries wrote, and forgets everything after an install. An engine opening
 * while the writer trims the WAL under it reads the tail again instead of calling it damaged.
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

/** The ciphertext `value` would be stored as under `key`: committed once and read back raw. */
async function cipherOf(key: string, value: string): Promise<Buffer> {
  const scratch = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 10, walMaxBytes: 1 << 20 });
  await scratch.secure(cipher).commit([put(key, value)]);
  const raw = await scratch.readRaw(key);
  await scratch.close();
  if (raw === undefined) throw new Error('not stored');
  return raw;
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

  it('loads in full when the WAL no longer continues the standby (trimmed past it)', async () => {
    const { backend, writer, standby } = await pair({ walMaxEntries: 10, walMaxBytes: 1 << 30 });
    await commitMany(writer, 30, 'a');
    // The entries since are gone: follow loads in full, and says no entry names what changed.
    expect(await standby.follow()).toEqual({ from: 'full load', keys: [], known: false });
    expect(standby.lastGuard()).toEqual(writer.lastGuard());
    expect(standby.merkleRoot()).toEqual(writer.merkleRoot());
    expect(await standby.reload()).toMatchObject({ from: 'catch-up', entries: 0 });
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

  it('keeps a standby\'s read cache coherent: follow hands it every key the entries wrote, and an install clears it', async () => {
    const { writer, standby } = await pair({ walMaxEntries: 1000, walMaxBytes: 1 << 30 });
    standby.standby(() => new Error('standby'));
    const w = writer.secure(cipher);
    const s = standby.secure(cipher);
    const read = async (key: string): Promise<string | undefined> => (await s.get(key))?.toString();
    expect(await standby.follow()).toMatchObject({ known: false }); // a first follow names nothing
    expect(await read('kv/a')).toBe(undefined);
    await w.commit([put('kv/a', '1'), put('node/x', '1')]);
    expect(await read('kv/a')).toBe(undefined); // not followed yet: the cache holds the absence
    const followed = await standby.follow();
    expect(followed).toMatchObject({ from: 'catch-up', entries: 1, known: true, keys: ['kv/a'] });
    expect(await read('kv/a')).toBe('1');
    await w.commit([put('kv/a', '2'), put('node/x', '2')]);
    // Node-class keys are in no entry: a standby reads them from storage, always current.
    expect(await read('node/x')).toBe('2');
    expect(await read('kv/a')).toBe('1'); // cached until the next follow
    expect(await standby.follow()).toMatchObject({ known: true, keys: ['kv/a'] });
    expect(await read('kv/a')).toBe('2');
    expect(await standby.follow()).toEqual({ from: 'nothing new', keys: [], known: true });
    // Data written outside the WAL (a Merkle sync's install): the mark moves, the cache goes.
    await writer.installChunk([{ type: 'put', key: 'kv/a', value: await cipherOf('kv/a', '3') }]);
    expect(await standby.follow()).toMatchObject({ known: false });
    expect(await read('kv/a')).toBe('3');
    await writer.close();
  });

  it('opens beside a writer that trims the WAL between the meta read and the scan (found by the HA nemesis)', async () => {
    const opts: EngineOptions = { walMaxEntries: 4, walMaxBytes: 1 << 30 };
    const shared = new MemoryBackend();
    const writer = await StorageEngine.open(shared, opts);
    const store = writer.secure(cipher);
    for (let i = 0; i < 10; i++) await store.commit([put(`kv/${i}`, 'v')]);
    // The opening node's view: right after its first meta read, the writer commits twice (trimming two entries).
    let interleaved = false;
    const view = Object.create(shared, {
      get: {
        value: async (key: string) => {
          const v = await shared.get(key);
          if (key === Keys.walMeta && !interleaved) {
            interleaved = true;
            for (let i = 0; i < 2; i++) await store.commit([put(`kv/late${i}`, 'v')]);
          }
          return v;
        },
      },
    }) as MemoryBackend;
    const opened = await StorageEngine.open(view, opts);
    expect(interleaved).toBe(true);
    expect(opened.lastGuard()).toEqual(writer.lastGuard());
    expect(opened.merkleRoot()).toEqual(writer.merkleRoot());
    await writer.close();
  });
});
