/**
 * A standby's read cache (read-follow.ts): two engines on one store, as an HA active node and a
 * standby share a database. followReads hands the cache every key the writer's entries wrote
 * since the last follow, node-class keys are read from storage every time, and whatever no entry
 * names (an install, a wipe, entries trimmed before they were followed, a first follow) clears it.
 */
import { testCipher } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { MemoryBackend } from './memory.js';
import type { BatchOp } from './backend.js';
import { Keys } from './keyspace.js';
import { pushedWal, PUSH_MAX_BYTES } from './read-follow.js';
import type { Op } from './store.js';

const cipher = testCipher(Buffer.alloc(32, 5));
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });
const OPTS: EngineOptions = { walMaxEntries: 1000, walMaxBytes: 1 << 30 };

/** An active writer and a standby on one store (`backend`, a fresh in-memory one by default). */
async function pair<B extends MemoryBackend = MemoryBackend>(
  opts: EngineOptions = OPTS,
  backend: B = new MemoryBackend() as B,
): Promise<{ backend: B; writer: StorageEngine; standby: StorageEngine; read: (key: string) => Promise<string | undefined> }> {
  const writer = await StorageEngine.open(backend, opts);
  await writer.secure(cipher).commit([put('kv/seed', '0')]);
  const standby = await StorageEngine.open(backend, opts);
  standby.standby(() => new Error('a standby writes nothing'));
  const s = standby.secure(cipher);
  return { backend, writer, standby, read: async (key) => (await s.get(key))?.toString() };
}

/** The ciphertext `value` is stored as under `key` (what a Merkle sync installs). */
async function cipherOf(key: string, value: string): Promise<Buffer> {
  const scratch = await StorageEngine.open(new MemoryBackend(), OPTS);
  await scratch.secure(cipher).commit([put(key, value)]);
  const raw = await scratch.readRaw(key);
  await scratch.close();
  if (raw === undefined) throw new Error('not stored');
  return raw;
}

it('hands the cache every key the entries since wrote, and nothing more; node-class keys are always read from storage', async () => {
  const { writer, standby, read } = await pair();
  const w = writer.secure(cipher);
  expect(await standby.followReads()).toMatchObject({ known: false }); // a first follow names nothing
  expect(await read('kv/a')).toBeUndefined(); // cached: absent
  await w.commit([put('kv/a', '1'), put('node/x', '1')]);
  expect(await read('kv/a')).toBeUndefined(); // not followed yet: the cache still answers
  expect(await standby.followReads()).toEqual({ entries: 1, keys: ['kv/a'], known: true });
  expect(await read('kv/a')).toBe('1');
  await w.commit([put('kv/a', '2'), put('node/x', '2')]);
  await w.commit([{ type: 'del', key: 'kv/seed' }]);
  expect(await read('node/x')).toBe('2');
  expect(await standby.followReads()).toEqual({ entries: 2, keys: ['kv/a', 'kv/seed'], known: true });
  expect(await read('kv/a')).toBe('2');
  expect(await read('kv/seed')).toBeUndefined();
  expect(await standby.followReads()).toEqual({ entries: 0, keys: [], known: true });
  await writer.close();
});

it('clears the cache when data changed outside the WAL: an install, a wipe, or entries trimmed before they were followed', async () => {
  const { writer, standby, read } = await pair({ walMaxEntries: 5, walMaxBytes: 1 << 30 });
  const w = writer.secure(cipher);
  await standby.followReads();
  await w.commit([put('kv/a', '1')]);
  await standby.followReads();
  expect(await read('kv/a')).toBe('1');

  await writer.installChunk([{ type: 'put', key: 'kv/a', value: await cipherOf('kv/a', '2') }]);
  expect(await standby.followReads()).toEqual({ entries: 0, keys: [], known: false });
  expect(await read('kv/a')).toBe('2');

  for (let i = 0; i < 12; i++) await w.commit([put(`kv/t${i}`, 'x'), put('kv/a', `t${i}`)]);
  expect(await standby.followReads()).toMatchObject({ known: false });
  expect(await read('kv/a')).toBe('t11');

  await writer.wipe();
  expect(await standby.followReads()).toMatchObject({ known: false });
  expect(await read('kv/a')).toBeUndefined();
  await writer.close();
});

it('starts over when the engine becomes a standby again (its cache held what it wrote as the active node)', async () => {
  const { writer, standby, read } = await pair();
  await standby.followReads();
  expect(await standby.followReads()).toMatchObject({ known: true });
  standby.standby(undefined);
  standby.standby(() => new Error('a standby again'));
  expect(await standby.followReads()).toMatchObject({ known: false });
  expect(await read('kv/seed')).toBe('0');
  await writer.close();
});

describe('a push of the entries a batch wrote (pushedWal, applyPushed): the standby takes them with no read of storage', () => {
  /** A shared store that keeps the last batch's ops, as the active node's afterBatch hook sees them. */
  class Recording extends MemoryBackend {
    last: readonly BatchOp[] = [];
    override async batch(ops: readonly BatchOp[], o: { sync: boolean }): Promise<void> {
      this.last = [...ops];
      return super.batch(ops, o);
    }
  }

  const recordedPair = () => pair(OPTS, new Recording());

  it('takes entries that follow on from the last followed into the cache; the next follow finds nothing more', async () => {
    const { backend, writer, standby, read } = await recordedPair();
    const w = writer.secure(cipher);
    await standby.followReads();
    expect(await read('kv/a')).toBeUndefined(); // cached: absent
    await w.commit([put('kv/a', '1')]);
    const wal = pushedWal(backend.last);
    expect(wal).toMatchObject({ first: wal!.last, records: [expect.any(Buffer)] });
    expect(standby.applyPushed(wal!)).toEqual({ entries: 1, keys: ['kv/a'], known: true });
    expect(await read('kv/a')).toBe('1');
    expect(await standby.followReads()).toEqual({ entries: 0, keys: [], known: true });
    await writer.close();
  });

  it('refuses entries after a gap (a push it did not take), leaving them to a follow', async () => {
    const { backend, writer, standby, read } = await recordedPair();
    const w = writer.secure(cipher);
    await standby.followReads();
    await read('kv/a');
    await w.commit([put('kv/a', '1')]);
    await w.commit([put('kv/a', '2')]);
    expect(standby.applyPushed(pushedWal(backend.last)!)).toBeUndefined();
    expect(await read('kv/a')).toBeUndefined(); // nothing taken: the cache waits for the follow
    expect(await standby.followReads()).toMatchObject({ entries: 2, known: true });
    expect(await read('kv/a')).toBe('2');
    await writer.close();
  });

  it('pushes no entries for a batch that moves the install mark, or that weighs more than PUSH_MAX_BYTES', async () => {
    const { backend, writer } = await recordedPair();
    const w = writer.secure(cipher);
    await w.commit([put('kv/big', 'x'.repeat(PUSH_MAX_BYTES + 1))]);
    expect(pushedWal(backend.last)).toBeUndefined();
    await w.commit([put('kv/small', 'x')]);
    const ops = backend.last;
    expect(pushedWal(ops)).toBeDefined();
    expect(pushedWal([...ops, { type: 'put', key: Keys.installMark, value: Buffer.from('m') }])).toBeUndefined();
    // An entry missing from the run the meta ends at: not consecutive.
    expect(pushedWal(ops.filter((op) => !op.key.startsWith(Keys.walPrefix)))).toBeUndefined();
    await writer.close();
  });
});
