/**
 * Deferred Merkle page records: batches journal the pages they touch instead of writing 8 KiB
 * records; the first batch after open, the flush interval, going idle, check() and close() write
 * them; a crash (no close) is repaired on open from the leaves.
 */
import { PAGE_BYTES, decodePageRecord, locate, reportIsClean } from '../core/merkle.js';
import { ControlledBackend, rootFromData, testCipher } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { Keys } from './keyspace.js';
import { MemoryBackend } from './memory.js';
import type { Op } from './store.js';

const cipher = testCipher(Buffer.alloc(32, 9));
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });

async function waitFor(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setImmediate(r));
  }
}

/** An engine whose clock the test moves, over a backend whose batches can be held. */
async function setup(opts: Partial<EngineOptions> = {}) {
  const clock = { ms: 1_000_000 };
  const backend = new ControlledBackend(new MemoryBackend());
  const engine = await StorageEngine.open(backend, {
    walMaxEntries: 1000,
    walMaxBytes: 1 << 30,
    now: () => clock.ms,
    pageFlushIntervalMs: 60_000, // also the idle flush's real-time delay: not within a test
    ...opts,
  });
  return { clock, backend, engine, store: engine.secure(cipher) };
}

/** Commits one txn alone, then `keys` as one shared batch (held until all are queued). */
async function sharedBatch(backend: ControlledBackend, store: ReturnType<StorageEngine['secure']>, keys: string[]): Promise<void> {
  const gate = backend.hold();
  const before = backend.batchCalls;
  const first = store.commit([put('opener', String(before))]);
  await waitFor(() => backend.batchCalls === before + 1);
  const rest = keys.map((k) => store.commit([put(k, `v-${k}`)]));
  gate.release();
  await Promise.all([first, ...rest]);
}

/** The stored record of the page holding `key` in tree 1, as subpage hashes (zero when absent). */
async function storedPage(backend: ControlledBackend, key: string): Promise<Buffer> {
  const rec = await backend.get(Keys.page(1, locate(key).page));
  return rec === undefined ? Buffer.alloc(PAGE_BYTES) : decodePageRecord(rec)!.subpages;
}

function livePage(engine: StorageEngine, key: string): Buffer {
  return Buffer.concat(engine.subpageHashes(1, locate(key).page));
}

describe('deferred page records', () => {
  it('a shared batch journals its pages but writes leaves and roots; check() flushes them and is clean', async () => {
    const { backend, engine, store } = await setup();
    const keys = Array.from({ length: 12 }, (_, i) => `k/${i}`);
    await sharedBatch(backend, store, keys);
    const journal = await backend.get(Keys.dirtyPages);
    expect(journal).toBeDefined();
    // The page of a key from the shared batch is stale on disk, journalled, and current in memory.
    expect((await storedPage(backend, 'k/3')).equals(livePage(engine, 'k/3'))).toBe(false);
    // Roots are current in every batch: the stored composite root is the recomputed one.
    expect(await backend.get(Keys.compositeRoot)).toEqual(await rootFromData(backend));
    expect(engine.merkleRoot()).toEqual(await rootFromData(backend));

    expect(reportIsClean(await engine.check())).toBe(true);
    expect(await backend.get(Keys.dirtyPages)).toBeUndefined();
    for (const k of keys) expect((await storedPage(backend, k)).equals(livePage(engine, k))).toBe(true);
  });

  it('after a crash (no close) the journalled pages are rebuilt from their leaves on open', async () => {
    const { backend, engine, store } = await setup();
    await sharedBatch(backend, store, Array.from({ length: 10 }, (_, i) => `a/${i}`));
    await sharedBatch(backend, store, [...Array.from({ length: 6 }, (_, i) => `a/${i}`), 'local/x', 'b']);
    await store.commit([{ type: 'del', key: 'a/0' }]);
    expect(await backend.get(Keys.dirtyPages)).toBeDefined();
    const root = engine.merkleRoot();

    const reopened = await StorageEngine.open(backend, { walMaxEntries: 1000, walMaxBytes: 1 << 30 });
    expect(reopened.merkleRoot()).toEqual(root);
    expect(reopened.merkleRoot()).toEqual(await rootFromData(backend));
    expect(reportIsClean(await reopened.check())).toBe(true);
    expect(await backend.get(Keys.dirtyPages)).toBeUndefined();
  });

  it('a malformed journal rebuilds every page from the leaves', async () => {
    const { backend, engine, store } = await setup();
    await sharedBatch(backend, store, ['p', 'q', 'r', 'local/s']);
    await engine.close();
    const root = engine.merkleRoot();
    // Damage a page record and the journal: only a rebuild of every page recovers the index.
    const page = Keys.page(1, locate('q').page);
    await backend.batch(
      [
        { type: 'put', key: page, value: Buffer.alloc(PAGE_BYTES + 32, 1) },
        { type: 'put', key: Keys.dirtyPages, value: Buffer.from('garbage') },
      ],
      { sync: true },
    );
    const reopened = await StorageEngine.open(backend, { walMaxEntries: 1000, walMaxBytes: 1 << 30 });
    expect(reopened.merkleRoot()).toEqual(root);
    expect(reportIsClean(await reopened.check())).toBe(true);
  });

  it('under load, the first batch after the flush interval writes every dirty page', async () => {
    const { clock, backend, engine, store } = await setup();
    await sharedBatch(backend, store, ['a', 'b', 'c']);
    clock.ms += 59_999;
    await sharedBatch(backend, store, ['d', 'e']);
    expect(await backend.get(Keys.dirtyPages)).toBeDefined();
    expect((await storedPage(backend, 'a')).equals(livePage(engine, 'a'))).toBe(false);
    clock.ms += 1;
    await store.commit([put('tick', '1')]);
    expect(await backend.get(Keys.dirtyPages)).toBeUndefined();
    for (const k of ['a', 'b', 'c', 'd', 'e', 'tick']) expect((await storedPage(backend, k)).equals(livePage(engine, k))).toBe(true);
  });

  it('the first batch after open writes its pages; later lone batches journal theirs too', async () => {
    const { backend, engine, store } = await setup();
    await store.commit([put('first', '1')]);
    expect(await backend.get(Keys.dirtyPages)).toBeUndefined();
    expect((await storedPage(backend, 'first')).equals(livePage(engine, 'first'))).toBe(true);
    await store.commit([put('second', '2')]);
    expect(await backend.get(Keys.dirtyPages)).toBeDefined();
    expect((await storedPage(backend, 'second')).equals(livePage(engine, 'second'))).toBe(false);
  });

  it('an idle engine writes its dirty pages one interval after its last batch', async () => {
    const { backend, engine, store } = await setup({ pageFlushIntervalMs: 30 });
    await sharedBatch(backend, store, ['i', 'j', 'k']);
    expect(await backend.get(Keys.dirtyPages)).toBeDefined();
    const deadline = Date.now() + 5000;
    while ((await backend.get(Keys.dirtyPages)) !== undefined) {
      if (Date.now() > deadline) throw new Error('no idle flush');
      await new Promise((r) => setTimeout(r, 5));
    }
    for (const k of ['i', 'j', 'k']) expect((await storedPage(backend, k)).equals(livePage(engine, k))).toBe(true);
    await engine.close();
  });

  it('close() writes the dirty pages and drops the journal', async () => {
    const { backend, engine, store } = await setup();
    await sharedBatch(backend, store, ['m', 'n', 'o']);
    await engine.close();
    expect(await backend.get(Keys.dirtyPages)).toBeUndefined();
    for (const k of ['m', 'n', 'o']) expect((await storedPage(backend, k)).equals(livePage(engine, k))).toBe(true);
  });

  it('a failed shared batch leaves memory, journal and records as they were', async () => {
    const { backend, engine, store } = await setup();
    await sharedBatch(backend, store, ['s', 't']);
    const journal = await backend.get(Keys.dirtyPages);
    const root = engine.merkleRoot();
    backend.failing = true;
    await expect(sharedBatch(backend, store, ['u', 'v'])).rejects.toThrow();
    backend.failing = false;
    expect(engine.merkleRoot()).toEqual(root);
    expect(await backend.get(Keys.dirtyPages)).toEqual(journal);
    // The failed engine writes nothing more (check and close included); a reopen finds it consistent.
    await engine.close();
    const reopened = await StorageEngine.open(backend.inner, { walMaxEntries: 1000, walMaxBytes: 1 << 30 });
    expect(reopened.merkleRoot()).toEqual(root);
    expect(reportIsClean(await reopened.check())).toBe(true);
  });
});
