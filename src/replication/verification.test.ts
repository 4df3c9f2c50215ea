/**
 * Verifier on a real engine (MemoryBackend) with a clock the test moves: a mismatch is due for
 * repair at once; a repair that did not clear it makes the next one wait, doubling; a match
 * ends the mismatch and the backoff, and says how it was repaired.
 */
import pino from 'pino';
import { StorageEngine } from '../storage/engine.js';
import { MemoryBackend } from '../storage/memory.js';
import { REPAIR_BACKOFF_MS, replicatedRoot, Verifier } from './verification.js';

it('repairs a mismatch at once, backs off while repairs do not clear it, and resets on a match', async () => {
  const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 100, walMaxBytes: 1 << 20 });
  await engine.installChunk([{ type: 'put', key: 'sys/policy/a', value: Buffer.from('a') }]);
  let clock = 1_000;
  const told: { type: string; detail: Record<string, unknown> }[] = [];
  const v = new Verifier({ kind: 'dr', engine, now: () => clock, log: pino({ level: 'silent' }), emit: (type, detail = {}) => void told.push({ type, detail }) });
  const ours = replicatedRoot(engine, 'dr');
  const theirs = { wal: 0n, root: Buffer.alloc(ours.length, 7) };

  expect(v.repairDue()).toBe(false);
  expect(v.check(theirs, 0n)).toBe(true);
  expect(v.repairDue()).toBe(true);
  v.repairStarted();
  expect(v.status).toMatchObject({ mismatch: true, repairs: 1, lastRepairAtMs: 1_000 });
  // Still different after the repair: the next one waits REPAIR_BACKOFF_MS, then twice that.
  v.check(theirs, 0n);
  expect(v.repairDue()).toBe(false);
  clock += REPAIR_BACKOFF_MS;
  expect(v.repairDue()).toBe(true);
  v.repairStarted();
  clock += REPAIR_BACKOFF_MS;
  expect(v.repairDue()).toBe(false);
  clock += REPAIR_BACKOFF_MS;
  expect(v.repairDue()).toBe(true);
  v.repairStarted();

  // A match ends it, and the event says repairs made it.
  v.check({ wal: 0n, root: ours }, 0n);
  expect(v.status).toMatchObject({ mismatch: false, repairs: 3 });
  expect(v.repairDue()).toBe(false);
  expect(told.map((t) => t.type)).toEqual(['verification-mismatch', 'verification-restored']);
  expect(told[1]?.detail).toMatchObject({ repaired_by_merkle_sync: true, repairs: 3 });
  // A new mismatch is repaired at once again (no backoff left over).
  v.check(theirs, 0n);
  expect(v.repairDue()).toBe(true);
});
