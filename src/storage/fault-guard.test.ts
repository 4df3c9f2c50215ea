/** FaultGuard: which errors fail the store, and that a failed store answers every error as StorageFailed. */
import { StorageFailed } from '../core/errors.js';
import { BackendFault, type KeyInterval, type Snapshot, type ValueTail } from './backend.js';
import { ControlledBackend } from './engine.fixtures.js';
import { FaultGuard } from './fault-guard.js';
import { MemoryBackend } from './memory.js';

/** Reads reject with a plain (usage) error while `closedReads` is set, as a closed handle would. */
class ClosedReads extends ControlledBackend {
  closedReads = false;
  override get(key: string): Promise<Buffer | undefined> {
    return this.closedReads ? Promise.reject(new Error('database is not open')) : super.get(key);
  }
}

test('a usage read error passes through a healthy store; once a batch failed, every read error is the StorageFailed', async () => {
  const inner = new ClosedReads(new MemoryBackend());
  const guard = new FaultGuard(inner);
  await guard.batch([{ type: 'put', key: 'a', value: Buffer.from('1') }], { sync: true });
  inner.closedReads = true;
  const usage = await guard.get('a').catch((e: unknown) => e);
  expect(usage).not.toBeInstanceOf(StorageFailed);
  expect(guard.failure).toBeUndefined();

  inner.failing = true;
  const failed = await guard.batch([{ type: 'put', key: 'b', value: Buffer.from('2') }], { sync: true }).catch((e: unknown) => e);
  expect(failed).toBeInstanceOf(StorageFailed);
  expect(guard.failure).toBe(failed);
  await expect(guard.get('a')).rejects.toBe(failed);
  inner.closedReads = false;
  expect((await guard.get('a'))?.toString()).toBe('1');
  inner.readFault = true;
  const iterate = async () => {
    for await (const _ of guard.iterate({})) void _;
  };
  await expect(iterate()).rejects.toBe(failed);
});

/** A backend with getMany (as PostgreSQL's), whose reads fault while `readFault` is set. */
class ManyReads extends ControlledBackend {
  getMany(keys: readonly string[]): Promise<Array<Buffer | undefined>> {
    return this.readFault ? Promise.reject(new BackendFault('read failed', 'the medium answered an I/O error')) : Promise.all(keys.map((k) => super.get(k)));
  }
}

test('getMany passes through when the backend has it, and a fault in it fails the store as one in get does', async () => {
  expect(new FaultGuard(new MemoryBackend()).getMany).toBeUndefined();
  const inner = new ManyReads(new MemoryBackend());
  const guard = new FaultGuard(inner);
  await guard.batch([{ type: 'put', key: 'a', value: Buffer.from('1') }], { sync: true });
  expect((await guard.getMany!(['b', 'a'])).map((v) => v?.toString())).toEqual([undefined, '1']);
  inner.readFault = true;
  const failed = await guard.getMany!(['a']).catch((e: unknown) => e);
  expect(failed).toBeInstanceOf(StorageFailed);
  expect(guard.failure).toBe(failed);
  inner.readFault = false;
  await expect(guard.batch([{ type: 'put', key: 'c', value: Buffer.from('3') }], { sync: true })).rejects.toBe(failed);
});

/** A backend whose snapshots have iterateTails (as PostgreSQL's), faulting while `tailFault` is set. */
class TailSnapshots extends MemoryBackend {
  tailFault = false;
  override async snapshot(): Promise<Snapshot> {
    const snap = await super.snapshot();
    const fault = (): boolean => this.tailFault;
    return Object.assign(snap, {
      async *iterateTails(range: KeyInterval, tailBytes: number): AsyncIterable<ValueTail> {
        if (fault()) throw new BackendFault('read failed', 'the medium answered an I/O error');
        for await (const [key, v] of snap.iterate(range)) yield { key, size: v.length, tail: v.subarray(Math.max(0, v.length - tailBytes)) };
      },
    });
  }
}

test("a snapshot's iterateTails passes through the guard, and a fault in it fails the store", async () => {
  const inner = new TailSnapshots();
  const guard = new FaultGuard(inner);
  await guard.batch([{ type: 'put', key: 'w/1', value: Buffer.from('abcdef') }], { sync: true });
  const tails = async (): Promise<string[]> => {
    const snap = await guard.snapshot();
    const out: string[] = [];
    try {
      for await (const t of snap.iterateTails!({ gte: 'w/', lte: 'w/~' }, 2)) out.push(`${t.key}:${t.size}:${t.tail.toString()}`);
    } finally {
      await snap.close();
    }
    return out;
  };
  expect(await tails()).toEqual(['w/1:6:ef']);
  inner.tailFault = true;
  const failed = await tails().catch((e: unknown) => e);
  expect(failed).toBeInstanceOf(StorageFailed);
  expect(guard.failure).toBe(failed);
});
