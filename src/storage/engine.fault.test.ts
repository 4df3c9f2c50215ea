/**
 * Fail closed: after a storage fault (a failed batch, or a read the medium could not answer) the
 * engine acknowledges nothing more, refuses every write, check and reindex with StorageFailed,
 * keeps serving reads, and a reopen of the same backend holds exactly what was acknowledged.
 * Faults are injected by a hand-written wrapper over the real MemoryBackend (engine.fixtures.ts).
 */
import { ErrorCode, StorageFailed } from '../core/errors.js';
import { genesisGuard } from '../core/wal.js';
import { ControlledBackend, rootFromData, testCipher } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { MemoryBackend } from './memory.js';
import type { Op } from './store.js';

const opts: EngineOptions = { walMaxEntries: 1000, walMaxBytes: 1 << 30 };
const cipher = testCipher(Buffer.alloc(32, 3));
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });

async function setup() {
  const backend = new ControlledBackend(new MemoryBackend());
  const engine = await StorageEngine.open(backend, opts);
  return { backend, engine, store: engine.secure(cipher) };
}

async function waitFor(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setImmediate(r));
  }
}

describe('StorageEngine fails closed after a storage fault', () => {
  it('after one failed batch nothing is acknowledged again, even once the backend works; a reopen holds every acknowledged write', async () => {
    const { backend, engine, store } = await setup();
    const acked: string[] = [];
    for (let i = 0; i < 5; i++) {
      await store.commit([put(`k/${i}`, `v${i}`)]);
      acked.push(`k/${i}`);
    }
    expect(engine.failure()).toBeUndefined();

    backend.failing = true;
    const failed = await store.commit([put('lost', 'x')]).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageFailed);
    expect((failed as StorageFailed).code).toBe(ErrorCode.storageFailed);
    expect((failed as StorageFailed).message).toMatch(/^storage failed: injected batch failure; .*restart/);
    expect(engine.failure()).toBe(failed);

    // The disk has room again: the engine still refuses, and no batch reaches the backend.
    backend.failing = false;
    const calls = backend.batchCalls;
    await expect(store.commit([put('after', '1')])).rejects.toBe(failed);
    await expect(engine.putSystem('rec', Buffer.from('x'))).rejects.toBe(failed);
    await expect(engine.setEpoch(7)).rejects.toBe(failed);
    await expect(engine.applyEntries([])).rejects.toBe(failed);
    await expect(engine.installSnapshot([], genesisGuard())).rejects.toBe(failed);
    await expect(engine.wipe()).rejects.toBe(failed);
    await expect(engine.check()).rejects.toBe(failed);
    await expect(engine.reindex()).rejects.toBe(failed);
    expect(backend.batchCalls).toBe(calls);

    // Reads are still served.
    expect((await store.get('k/4'))?.toString()).toBe('v4');
    expect(await store.list('k/')).toEqual(['0', '1', '2', '3', '4']);
    expect((await engine.readWal(1n, 100)).length).toBe(5);
    const snap = await engine.snapshot();
    await snap.close();

    await engine.close();
    expect(backend.batchCalls).toBe(calls); // close does not flush on a failed store

    // The restart: a new engine on the same storage has every acknowledged write and nothing else.
    const again = await StorageEngine.open(backend.inner, opts);
    const s2 = again.secure(cipher);
    for (const k of acked) expect(await s2.get(k)).toBeDefined();
    expect(await s2.get('lost')).toBeUndefined();
    expect(await s2.get('after')).toBeUndefined();
    expect(again.lastGuard().index).toBe(5n);
    expect(again.failure()).toBeUndefined();
    expect(again.merkleRoot()).toEqual(await rootFromData(backend.inner));
    await s2.commit([put('after', '1')]);
    expect(again.lastGuard().index).toBe(6n);
  });

  it('a commit queued behind the failing batch is refused, never written in a later batch', async () => {
    const { backend, engine, store } = await setup();
    const gate = backend.hold();
    const first = store.commit([put('a', '1')]).catch((e: unknown) => e);
    await waitFor(() => backend.batchCalls === 1);
    const queued = store.commit([put('b', '1')]).catch((e: unknown) => e);
    backend.failing = true;
    gate.release();
    expect(await first).toBeInstanceOf(StorageFailed);
    expect(await queued).toBeInstanceOf(StorageFailed);
    expect(backend.batchCalls).toBe(1);
    expect(engine.lastGuard().index).toBe(0n);
  });

  it('a read the medium cannot answer fails the store: that read and every later write answer StorageFailed, other reads go on', async () => {
    const { backend, engine, store } = await setup();
    await store.commit([put('cached', '1')]);
    await store.commit([put('other', '2')]);
    backend.readFault = true;
    const err = await store.list('').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageFailed);
    expect((err as StorageFailed).message).toMatch(/^storage failed: Corruption: injected block checksum mismatch; /);
    expect(engine.failure()).toBe(err);
    // What the medium can still answer is served (here: the whole medium once the fault is gone).
    backend.readFault = false;
    expect((await store.get('other'))?.toString()).toBe('2');
    await expect(store.commit([put('x', '1')])).rejects.toBe(err);
    await expect(engine.check()).rejects.toBe(err);
  });
});
