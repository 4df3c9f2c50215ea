/**
 * WAL holds on a real engine: entries from a held index stay past wal_max_entries until the hold
 * moves or is released, and never past HOLD_BYTES_FACTOR × wal_max_bytes.
 */
import { StorageEngine } from './engine.js';
import { MemoryBackend } from './memory.js';
import { HOLD_BYTES_FACTOR } from './wal-holds.js';

const put = (engine: StorageEngine, i: number, size = 8) => engine.commitRaw([{ type: 'put', key: `app/k${i % 7}`, value: Buffer.alloc(size, i) }]);

test('a hold keeps entries past the entry bound until it moves or is released', async () => {
  const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 5, walMaxBytes: 1 << 20 });
  for (let i = 0; i < 10; i++) await put(engine, i);
  expect(engine.firstRetainedIndex()).toBe(engine.lastGuard().index - 4n);
  const from = engine.lastGuard().index + 1n;
  const hold = engine.holdWal(from);
  for (let i = 0; i < 30; i++) await put(engine, i);
  expect(engine.firstRetainedIndex()).toBe(from);
  expect((await engine.readWal(from, 100)).length).toBe(30);
  hold.move(from + 20n);
  hold.move(from + 10n); // a hold only moves forward
  await put(engine, 0);
  expect(engine.firstRetainedIndex()).toBe(from + 20n);
  hold.release();
  await put(engine, 1);
  expect(engine.firstRetainedIndex()).toBe(engine.lastGuard().index - 4n);
  await engine.close();
});

test(`a hold keeps at most ${HOLD_BYTES_FACTOR} × wal_max_bytes`, async () => {
  const walMaxBytes = 4096;
  const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 5, walMaxBytes });
  await put(engine, 0, 100);
  const from = engine.lastGuard().index + 1n;
  engine.holdWal(from);
  for (let i = 0; i < 400; i++) await put(engine, i, 100);
  expect(engine.firstRetainedIndex()).toBeGreaterThan(from);
  expect(engine.walRetainedBytes()).toBeLessThanOrEqual(HOLD_BYTES_FACTOR * walMaxBytes);
  expect(engine.walRetainedBytes()).toBeGreaterThan(walMaxBytes);
  await engine.close();
});
