import { InvalidRequest, StorageFailed, Unavailable } from '../core/errors.js';
import { WalNotRetained, decodeEntry, genesisGuard, verifyChain } from '../core/wal.js';
import type { Backend } from './backend.js';
import { BatchFailed, ControlledBackend, rootFromData, testCipher } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { Keys } from './keyspace.js';
import { MemoryBackend } from './memory.js';
import { readCacheLimits } from './read-cache.js';
import { RECENT_ENTRIES } from './wal-tail.js';

const put = (key: string, value: string) => ({ type: 'put' as const, key, value: Buffer.from(value) });
const del = (key: string) => ({ type: 'del' as const, key });
const opts: EngineOptions = { walMaxEntries: 1000, walMaxBytes: 1 << 30, now: () => 1_700_000_000_000 };

async function setup(backend: Backend = new MemoryBackend(), o: EngineOptions = opts) {
  const engine = await StorageEngine.open(backend, o);
  return { backend, engine, store: engine.secure(testCipher()) };
}

async function allValues(b: Backend): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const [, v] of b.iterate({})) out.push(v);
  return out;
}

describe('StorageEngine: the Store', () => {
  it('commits, reads, lists and deletes', async () => {
    const { store } = await setup();
    await store.commit([put('a', '1'), put('dir/x', '2'), put('dir/sub/y', '3'), put('dir/z', '4'), put('b/c', '5')]);
    expect((await store.get('dir/x'))?.toString()).toBe('2');
    expect(await store.get('missing')).toBeUndefined();
    expect(await store.list('')).toEqual(['a', 'b/', 'dir/']);
    expect(await store.list('dir/')).toEqual(['sub/', 'x', 'z']);
    expect(await store.list('nothing/')).toEqual([]);
    await store.commit([del('dir/x'), del('dir/sub/y')]);
    expect(await store.get('dir/x')).toBeUndefined();
    expect(await store.list('dir/')).toEqual(['z']);
    await expect(store.list('dir')).rejects.toBeInstanceOf(InvalidRequest);
  });

  it('getDecoded decodes a stored value once while it is unchanged, again after each commit of it, and hands out frozen values', async () => {
    const engine = await StorageEngine.open(new MemoryBackend(), opts);
    let live = true;
    const cipher = testCipher();
    const store = engine.secure({
      encrypt: (plain, aad) => cipher.encrypt(plain, aad),
      decrypt: (ct, aad) => cipher.decrypt(ct, aad),
      assertLive: () => {
        if (!live) throw new Unavailable('sealed');
      },
    });
    const decoded: string[] = [];
    const decode = (v: Buffer) => {
      decoded.push(v.toString());
      return { value: v.toString(), list: [1, 2] };
    };
    await store.commit([put('t/a', 'one'), put('t/b', 'other')]);
    const first = await store.getDecoded('t/a', decode);
    expect(first).toEqual({ value: 'one', list: [1, 2] });
    expect(await store.getDecoded('t/a', decode)).toBe(first);
    expect(decoded).toEqual(['one']);
    expect(Object.isFrozen(first) && Object.isFrozen(first?.list)).toBe(true);
    expect(() => (first?.list as number[]).push(3)).toThrow(TypeError);
    // Another key, and another decoder of the same key, are decoded on their own.
    const other = (v: Buffer) => v.length;
    expect(await store.getDecoded('t/a', other)).toBe(3);
    expect((await store.getDecoded('t/b', decode))?.value).toBe('other');
    // A commit of the key (this node's, or applied from a primary) gives the next read the new value.
    await store.commit([put('t/a', 'two')]);
    expect((await store.getDecoded('t/a', decode))?.value).toBe('two');
    await store.commit([del('t/a')]);
    expect(await store.getDecoded('t/a', decode)).toBeUndefined();
    expect(decoded).toEqual(['one', 'other', 'two']);
    // A remembered decode is not handed out once the cipher may not be used.
    expect((await store.getDecoded('t/b', decode))?.value).toBe('other');
    live = false;
    await expect(store.getDecoded('t/b', decode)).rejects.toBeInstanceOf(Unavailable);
  });

  it("with the read cache off (Vault's disable_cache) every live read goes to storage; with it on, a cached value is served", async () => {
    for (const disabled of [true, false]) {
      const backend = new MemoryBackend();
      const engine = await StorageEngine.open(backend, { ...opts, readCache: readCacheLimits({ disabled }) });
      await engine.commitRaw([{ type: 'put', key: 'secret/a', value: Buffer.from('one') }]);
      expect((await engine.readRaw('secret/a'))?.toString()).toBe('one');
      // Storage changed under the engine (as another writer of a shared database would change it).
      await backend.batch([{ type: 'put', key: Keys.value('secret/a'), value: Buffer.from('changed') }], { sync: true });
      expect({ disabled, read: (await engine.readRaw('secret/a'))?.toString() }).toEqual({ disabled, read: disabled ? 'changed' : 'one' });
      // Its own commits are read back either way.
      await engine.commitRaw([{ type: 'put', key: 'secret/a', value: Buffer.from('two') }]);
      expect((await engine.readRaw('secret/a'))?.toString()).toBe('two');
      await engine.close();
    }
  });

  it('list does not confuse siblings that share a prefix with a directory', async () => {
    const { store } = await setup();
    await store.commit([put('p/a.b', '1'), put('p/a/c', '2'), put('p/a', '3'), put('p/a0', '4'), put('p/a/d/e', '5')]);
    expect(await store.list('p/')).toEqual(['a', 'a.b', 'a/', 'a0']);
  });

  it('stores no plaintext, and a value moved to another key fails to decrypt', async () => {
    const { backend, store, engine } = await setup();
    await store.commit([put('secret/a', 'plaintext-canary-1'), put('node/role', 'plaintext-canary-2')]);
    for (const v of await allValues(backend)) expect(v.includes(Buffer.from('plaintext-canary'))).toBe(false);
    const ct = await engine.readRaw('secret/a');
    await engine.commitRaw([{ type: 'put', key: 'secret/b', value: ct! }]);
    await expect(store.get('secret/b')).rejects.toThrow();
    expect((await store.get('node/role'))?.toString()).toBe('plaintext-canary-2');
  });

  it('node-class keys are stored but never in the WAL or the Merkle index', async () => {
    const { store, engine } = await setup();
    const root = engine.merkleRoot();
    await store.commit([put('node/dr/mode', 'secondary')]);
    expect(engine.lastGuard().index).toBe(0n);
    expect(engine.merkleRoot()).toEqual(root);
    await store.commit([put('node/x', '1'), put('local/tok', '2'), put('sys/a', '3')]);
    const [entry] = await engine.readWal(1n, 10);
    expect(entry?.ops.map((o) => o.key)).toEqual(['local/tok', 'sys/a']);
    expect(engine.subtreeRoot(2)).not.toEqual(engine.subtreeRoot(1));
  });

  it('writes system records raw, alone or inside a commit batch', async () => {
    const { backend, engine, store } = await setup();
    await engine.putSystem('seal', Buffer.from('{"type":"shamir"}'));
    expect((await engine.getSystem('seal'))?.toString()).toBe('{"type":"shamir"}');
    expect(engine.lastGuard().index).toBe(0n);
    const before = (backend as MemoryBackend).batches;
    await store.commitWithSystem([put('sys/token/root', 'r')], [{ name: 'keyring', value: Buffer.from('kr') }, { name: 'seal', value: undefined }]);
    expect((backend as MemoryBackend).batches).toBe(before + 1);
    expect((await engine.getSystem('keyring'))?.toString()).toBe('kr');
    expect(await engine.getSystem('seal')).toBeUndefined();
    await engine.wipe();
    expect((await engine.getSystem('keyring'))?.toString()).toBe('kr');
    expect(await store.get('sys/token/root')).toBeUndefined();
  });

  it('rejects invalid keys before they reach a batch', async () => {
    const { store } = await setup();
    await expect(store.commit([put('', 'x')])).rejects.toBeInstanceOf(InvalidRequest);
    await expect(store.commit([put('bad\ud800', 'x')])).rejects.toBeInstanceOf(InvalidRequest);
  });
});

describe('StorageEngine: group commit and the WAL', () => {
  it('16 concurrent commits share batches; indices are 1..16 with a valid chain', async () => {
    const { backend, store, engine } = await setup();
    const start = (backend as MemoryBackend).batches;
    await Promise.all(Array.from({ length: 16 }, (_, i) => store.commit([put(`k/${i}`, `v${i}`)])));
    expect((backend as MemoryBackend).batches - start).toBeLessThanOrEqual(2);
    const entries = await engine.readWal(1n, 100);
    expect(entries.map((e) => e.index)).toEqual(Array.from({ length: 16 }, (_, i) => BigInt(i + 1)));
    expect(() => verifyChain(genesisGuard(), entries)).not.toThrow();
    expect(engine.lastGuard()).toEqual({ index: 16n, hash: entries[15]!.hash });
    for (let i = 0; i < 16; i++) expect((await store.get(`k/${i}`))?.toString()).toBe(`v${i}`);
  });

  it('queues commits that arrive while a batch is being written into the next batch', async () => {
    const backend = new ControlledBackend(new MemoryBackend());
    const { store, engine } = await setup(backend);
    const gate = backend.hold();
    const first = store.commit([put('a', '0')]);
    await waitFor(() => backend.batchCalls === 1);
    const rest = Array.from({ length: 15 }, (_, i) => store.commit([put('a', `${i + 1}`), put(`b/${i}`, 'x')]));
    gate.release();
    await Promise.all([first, ...rest]);
    expect(backend.batchCalls).toBe(2);
    expect(engine.lastGuard().index).toBe(16n);
    // Fifteen txns on the same key in one batch compose in order, and the index agrees with the data.
    expect((await store.get('a'))?.toString()).toBe('15');
    expect(engine.merkleRoot()).toEqual(await rootFromData(backend));
    expect((await engine.check()).corruptedRoot).toBe(false);
  });

  it('a failing batch rejects all its txns with StorageFailed and leaves root, guard and data unchanged', async () => {
    const backend = new ControlledBackend(new MemoryBackend());
    const { store, engine } = await setup(backend);
    await store.commit([put('keep', '1')]);
    const root = engine.merkleRoot();
    const guard = engine.lastGuard();
    backend.failing = true;
    const results = await Promise.allSettled([store.commit([put('x', '1')]), store.commit([put('keep', '2')])]);
    for (const r of results) expect(r.status === 'rejected' && r.reason instanceof StorageFailed && r.reason.cause instanceof BatchFailed).toBe(true);
    expect(engine.merkleRoot()).toEqual(root);
    expect(engine.lastGuard()).toEqual(guard);
    backend.failing = false;
    // Reads go on; writes stay refused even though the backend would now accept them.
    expect((await store.get('keep'))?.toString()).toBe('1');
    await expect(store.commit([put('y', '1')])).rejects.toBeInstanceOf(StorageFailed);
    const reopened = await StorageEngine.open(backend.inner, opts);
    expect(reopened.lastGuard()).toEqual(guard);
    expect(reopened.merkleRoot()).toEqual(await rootFromData(backend.inner));
  });

  it('keeps at most walMaxEntries and throws WalNotRetained for a dropped index', async () => {
    const { store, engine, backend } = await setup(new MemoryBackend(), { ...opts, walMaxEntries: 3 });
    for (let i = 1; i <= 10; i++) await store.commit([put(`k${i}`, 'v')]);
    expect(engine.firstRetainedIndex()).toBe(8n);
    expect((await engine.readWal(8n, 100)).map((e) => e.index)).toEqual([8n, 9n, 10n]);
    await expect(engine.readWal(7n, 10)).rejects.toBeInstanceOf(WalNotRetained);
    expect(await engine.readWal(11n, 10)).toEqual([]);
    let walKeys = 0;
    for await (const _ of backend.iterate({ gte: 'w/', lt: 'w0' })) walKeys++;
    expect(walKeys).toBe(3);
    // The guard just before the first retained entry stays known, so a stream can resume there.
    expect(await engine.hashAt(7n)).toBeDefined();
    expect(await engine.hashAt(6n)).toBeUndefined();
    const [e8] = await engine.readWal(8n, 1);
    const h7 = await engine.hashAt(7n);
    expect(() => verifyChain({ index: 7n, hash: h7! }, [e8!])).not.toThrow();
  });

  it('bounds the WAL by bytes but never deletes the last entry', async () => {
    const { store, engine } = await setup(new MemoryBackend(), { ...opts, walMaxBytes: 10 });
    await store.commit([put('a', 'x'.repeat(100))]);
    await store.commit([put('b', 'y'.repeat(100))]);
    expect(engine.firstRetainedIndex()).toBe(2n);
    expect((await engine.readWal(2n, 10)).length).toBe(1);
  });

  it('readWal honours maxEntries and maxBytes (always at least one entry)', async () => {
    const { store, engine } = await setup();
    for (let i = 0; i < 5; i++) await store.commit([put(`k${i}`, 'v'.repeat(50))]);
    expect((await engine.readWal(2n, 2)).map((e) => e.index)).toEqual([2n, 3n]);
    expect((await engine.readWal(1n, 10, 1)).length).toBe(1);
  });

  it('notifies commit listeners with the new last index, after the batch is durable', async () => {
    const { store, engine, backend } = await setup();
    const seen: bigint[] = [];
    const off = engine.onCommit((last) => seen.push(last));
    engine.onCommit(() => {
      throw new Error('a broken listener does not fail the commit');
    });
    await store.commit([put('a', '1')]);
    await store.commit([put('node/x', '1')]);
    off();
    await store.commit([put('b', '1')]);
    expect(seen).toEqual([1n]);
    expect(decodeEntry((await backend.get('w/0000000000000001'))!).index).toBe(1n);
  });

  it('reopening keeps data, root, guard and WAL tail', async () => {
    const backend = new MemoryBackend();
    const { store, engine } = await setup(backend, { ...opts, walMaxEntries: 4 });
    const cipher = testCipher(Buffer.alloc(32, 5));
    const s = engine.secure(cipher);
    await Promise.all(Array.from({ length: 10 }, (_, i) => s.commit([put(`k/${i}`, `${i}`), put(`local/l${i}`, 'x')])));
    await store.commit([del('k/3')]);
    const root = engine.merkleRoot();
    const guard = engine.lastGuard();
    const wal = await engine.readWal(engine.firstRetainedIndex(), 100);
    await engine.close();
    await expect(s.commit([put('z', '1')])).rejects.toBeInstanceOf(Unavailable);
    const again = await StorageEngine.open(backend, { ...opts, walMaxEntries: 4 });
    expect(again.merkleRoot()).toEqual(root);
    expect(again.lastGuard()).toEqual(guard);
    expect(await again.readWal(again.firstRetainedIndex(), 100)).toEqual(wal);
    expect(await again.hashAt(again.firstRetainedIndex() - 1n)).toEqual(await engine.hashAt(engine.firstRetainedIndex() - 1n));
    expect((await again.secure(cipher).get('k/7'))?.toString()).toBe('7');
    await again.secure(cipher).commit([put('after', '1')]);
    const [next] = await again.readWal(guard.index + 1n, 1);
    expect(() => verifyChain(guard, [next!])).not.toThrow();
  });

  it('setEpoch stamps later entries and survives reopen; the chain continues', async () => {
    const backend = new MemoryBackend();
    const { store, engine } = await setup(backend);
    await store.commit([put('a', '1')]);
    await engine.setEpoch(2);
    await store.commit([put('b', '1')]);
    const entries = await engine.readWal(1n, 10);
    expect(entries.map((e) => e.epoch)).toEqual([0, 2]);
    expect(() => verifyChain(genesisGuard(), entries)).not.toThrow();
    expect((await StorageEngine.open(backend, opts)).epoch()).toBe(2);
  });
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setImmediate(r));
  }
}

describe('StorageEngine: the WAL read of a stream that keeps up', () => {
  /** Counts range reads of WAL records (a stream's readWal from storage is one). */
  class CountingBackend extends ControlledBackend {
    walScans = 0;
    override iterate(range: Parameters<Backend['iterate']>[0]) {
      if (range.gte?.startsWith('w/') === true) this.walScans++;
      return super.iterate(range);
    }
  }

  it('serves the newest entries from memory, equal to what storage holds, and older ones from storage', async () => {
    const backend = new CountingBackend(new MemoryBackend());
    const { engine, store } = await setup(backend, { ...opts, walMaxEntries: 10_000 });
    for (let i = 0; i < RECENT_ENTRIES + 100; i++) await store.commit([put(`kv/${i % 50}`, `v${i}`)]);
    const last = engine.lastGuard().index;
    const scans = backend.walScans;
    const recent = await engine.readWal(last - 9n, 100);
    expect(backend.walScans).toBe(scans);
    expect(recent.map((e) => e.index)).toEqual(Array.from({ length: 10 }, (_, i) => last - 9n + BigInt(i)));
    // What memory served is exactly what storage holds, decoded.
    const stored = await Promise.all(recent.map(async (e) => decodeEntry((await backend.inner.get(Keys.wal(e.index)))!)));
    expect(recent).toEqual(stored);
    // maxBytes is honoured from memory as from storage: at least one entry, then within the bound.
    expect(await engine.readWal(last - 9n, 100, 1)).toHaveLength(1);
    // Entries older than the recent window come from storage, and chain on to the recent ones.
    const old = await engine.readWal(1n, 200);
    expect(backend.walScans).toBe(scans + 1);
    verifyChain(genesisGuard(), old);
  });
});

describe('StorageEngine: the demote fence', () => {
  it('refuses every replicated and local write but the keys it names, and node-class writes, until unfenced', async () => {
    const { store, engine } = await setup();
    await store.commit([put('secret/a', '1')]);
    await engine.fence(() => new Unavailable('demoting'), ['local/replication/performance/state']);
    const last = engine.lastGuard().index;
    await expect(store.commit([put('secret/a', '2')])).rejects.toBeInstanceOf(Unavailable);
    await expect(store.commit([put('local/other', 'x')])).rejects.toBeInstanceOf(Unavailable);
    // A transaction mixing the named key with another key is refused whole.
    await expect(store.commit([put('local/replication/performance/state', 'r'), put('secret/b', 'x')])).rejects.toBeInstanceOf(Unavailable);
    expect(await store.get('secret/b')).toBeUndefined();
    // The role record the demote persists passes, and so does a node-class record.
    await store.commit([put('local/replication/performance/state', 'demoted')]);
    await store.commit([put('node/role', 'x')]);
    expect((await store.get('local/replication/performance/state'))?.toString()).toBe('demoted');
    expect((await store.get('secret/a'))?.toString()).toBe('1');
    expect(engine.lastGuard().index).toBeGreaterThan(last);
    engine.unfence();
    await store.commit([put('secret/a', '3')]);
    expect((await store.get('secret/a'))?.toString()).toBe('3');
  });
});
