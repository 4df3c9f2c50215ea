/**
 * The engine's reopen case, shared by every Backend's engine tests (engine.level.test.ts,
 * engine.postgres.test.ts): 31 commits (30 concurrent, then a delete) under a 10-entry WAL bound,
 * then a close and a reopen on the same storage keep the data, the Merkle root, the guard and the
 * retained WAL, and the index still matches the data.
 *
 *   await expectReopenKeepsEverything({ open: () => level('db'), close: closeAll, afterWrites: (b) => expect(b.openIterators()).toBe(0) });
 */
import { reportIsClean } from '../core/merkle.js';
import { WalNotRetained } from '../core/wal.js';
import type { Backend } from './backend.js';
import { rootFromData, testCipher } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import type { Op } from './store.js';

const opts: EngineOptions = { walMaxEntries: 10, walMaxBytes: 1 << 30 };
const cipher = testCipher(Buffer.alloc(32, 3));
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });

export async function expectReopenKeepsEverything<B extends Backend>(o: {
  /** Opens the backend on the same storage each time it is called. */
  open: () => Promise<B>;
  /** Closes what `open` opened (after the engine closed). */
  close: (b: B) => Promise<void>;
  /** Checks on the first backend once written and read (LevelDB: no iterator left open). */
  afterWrites?: (b: B) => void;
}): Promise<void> {
  const b1 = await o.open();
  const e1 = await StorageEngine.open(b1, opts);
  const s1 = e1.secure(cipher);
  await Promise.all(Array.from({ length: 30 }, (_, i) => s1.commit([put(`kv/${i % 9}/x`, `${i}`), put(`local/t${i % 4}`, `${i}`), put('node/me', `${i}`)])));
  await s1.commit([{ type: 'del', key: 'kv/3/x' }]);
  expect(await s1.list('kv/')).toHaveLength(8);
  expect(reportIsClean(await e1.check())).toBe(true);
  await e1.readWal(e1.firstRetainedIndex(), 3);
  o.afterWrites?.(b1);
  const root = e1.merkleRoot();
  const guard = e1.lastGuard();
  const wal = await e1.readWal(e1.firstRetainedIndex(), 100);
  expect(wal).toHaveLength(10);
  await e1.close();
  await o.close(b1);

  const b2 = await o.open();
  const e2 = await StorageEngine.open(b2, opts);
  expect(e2.merkleRoot()).toEqual(root);
  expect(e2.lastGuard()).toEqual(guard);
  expect(await e2.readWal(e2.firstRetainedIndex(), 100)).toEqual(wal);
  await expect(e2.readWal(1n, 10)).rejects.toBeInstanceOf(WalNotRetained);
  expect(Number((await e2.secure(cipher).get('local/t1'))?.toString()) % 4).toBe(1);
  expect(e2.merkleRoot()).toEqual(await rootFromData(b2));
  expect(reportIsClean(await e2.check())).toBe(true);
  await e2.close();
}
