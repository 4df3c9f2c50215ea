/**
 * The performance secondary's own WAL, on the in-memory backend with the loopback channel: a
 * primary's replicated class streams (never its local class), is re-committed into the
 * secondary's own WAL with the upstream guard beside it, local writes interleave, the stream
 * resumes from the upstream guard after a restart, and local replicated writes are refused.
 */
import type { Kind } from '../core/replication/index.js';
import pino from 'pino';
import { Unavailable } from '../core/errors.js';
import { crossKindRefusal, KIND_POLICY } from '../core/replication/index.js';
import { eventually } from '../../test/harness/eventually.js';
import { loopback } from '../../test/support/loopback.js';
import { StorageEngine } from '../storage/engine.js';
import { MemoryBackend } from '../storage/memory.js';
import { applierFor, OwnWalApplier, UPSTREAM_GUARD_KEY } from './applier.js';
import { PrimaryStreamer } from './primary-service.js';
import { SecondaryLoop } from './secondary-loop.js';

const put = (key: string, value: string) => ({ type: 'put' as const, key, value: Buffer.from(value) });
const opts = { walMaxEntries: 1000, walMaxBytes: 1 << 30 };
const log = pino({ level: 'silent' });

async function pair(kind: Kind) {
  const primary = await StorageEngine.open(new MemoryBackend(), opts);
  const secondaryBackend = new MemoryBackend();
  const secondary = await StorageEngine.open(secondaryBackend, opts);
  const streamer = new PrimaryStreamer({
    engine: primary,
    kind,
    registry: { check: () => 'active' },
    info: { clusterId: () => 'c1', nodeId: () => 'p', apiAddr: () => '', clusterAddr: () => '' },
    heartbeatMs: 50,
  });
  const link = loopback(streamer, 's1');
  const startLoop = async (engine: StorageEngine) => {
    const applier = applierFor(kind, engine);
    await applier.load?.();
    const loop = new SecondaryLoop({ engine, applier, connect: () => link.client(), secondaryId: 's1', kind, apiAddr: () => '', clusterAddr: () => '', log, heartbeatMs: 50 });
    loop.start();
    return { loop, applier };
  };
  return { primary, secondary, secondaryBackend, streamer, startLoop };
}

describe('own-WAL applier (performance secondary)', () => {
  it('streams the replicated class only into its own WAL, with local writes interleaved', async () => {
    const { primary, secondary, streamer, startLoop } = await pair('performance');
    await primary.commitRaw([put('secret/a', '1'), put('local/token/id/primary-root', 'p')]);
    await primary.commitRaw([put('local/only', 'x')]);
    const { loop, applier } = await startLoop(secondary);
    await eventually(async () => expect(applier.guard().index).toBe(primary.lastGuard().index));
    expect((await secondary.readRaw('secret/a'))?.toString()).toBe('1');
    // The primary's local class (its tokens) never arrives.
    expect(await secondary.readRaw('local/token/id/primary-root')).toBeUndefined();
    expect(await secondary.readRaw('local/only')).toBeUndefined();
    // A local write of the secondary commits into its own WAL between upstream entries.
    await secondary.commitRaw([put('local/token/id/mine', 'm')]);
    await primary.commitRaw([put('secret/b', '2')]);
    await eventually(async () => expect((await secondary.readRaw('secret/b'))?.toString()).toBe('2'));
    const own = await secondary.readWal(1n, 100);
    expect(own.map((e) => e.ops.map((o) => o.key))).toEqual([['secret/a'], ['local/token/id/mine'], ['secret/b']]);
    // Its own chain, not the primary's: indices and hashes differ, the upstream guard is kept beside.
    expect(secondary.lastGuard().index).toBe(3n);
    expect(applier.guard()).toEqual(primary.lastGuard());
    const stored = JSON.parse((await secondary.readRaw(UPSTREAM_GUARD_KEY))!.toString());
    expect(BigInt(stored.index)).toBe(primary.lastGuard().index);
    await loop.stop();
    await streamer.close();
  });

  it('resumes from the persisted upstream guard after a restart: nothing lost, nothing twice', async () => {
    const { primary, secondaryBackend, streamer, startLoop } = await pair('performance');
    const first = await StorageEngine.open(secondaryBackend, opts);
    await primary.commitRaw([put('secret/a', '1')]);
    const one = await startLoop(first);
    await eventually(async () => expect(one.applier.guard().index).toBe(1n));
    await one.loop.stop();
    await first.close();
    await primary.commitRaw([put('secret/b', '2')]);
    await primary.commitRaw([put('secret/c', '3')]);
    const again = await StorageEngine.open(secondaryBackend, opts);
    const two = await startLoop(again);
    expect(two.applier.guard().index).toBe(1n);
    await eventually(async () => expect(two.applier.guard().index).toBe(3n));
    const own = await again.readWal(1n, 100);
    expect(own.flatMap((e) => e.ops.map((o) => o.key))).toEqual(['secret/a', 'secret/b', 'secret/c']);
    await two.loop.stop();
    await streamer.close();
  });

  it('the engine gate refuses local replicated writes and admits upstream and local ones', async () => {
    const engine = await StorageEngine.open(new MemoryBackend(), opts);
    engine.guardReplicated(() => new Unavailable('performance secondary'));
    await expect(engine.commitRaw([put('secret/x', '1')])).rejects.toBeInstanceOf(Unavailable);
    await expect(engine.commitRaw([put('local/x', '1'), put('secret/y', '1')])).rejects.toBeInstanceOf(Unavailable);
    expect(await engine.readRaw('local/x')).toBeUndefined();
    await engine.commitRaw([put('local/x', '1')]);
    const applier = new OwnWalApplier(engine);
    await applier.load();
    await applier.installSnapshot([put('secret/x', 'from-upstream')], { index: 7n, hash: Buffer.alloc(32, 1) });
    expect((await engine.readRaw('secret/x'))?.toString()).toBe('from-upstream');
    expect(applier.guard().index).toBe(7n);
    // Upstream never writes this node's local class.
    await expect(applier.installChunk([put('local/x', 'overwrite')])).rejects.toThrow(/local-class/);
    engine.guardReplicated(undefined);
    await engine.commitRaw([put('secret/x', 'mine')]);
  });

  it('a DR secondary keeps the primary\'s WAL as its own (same indices and hashes)', async () => {
    const { primary, secondary, streamer, startLoop } = await pair('dr');
    await primary.commitRaw([put('secret/a', '1'), put('local/t', '2')]);
    const { loop } = await startLoop(secondary);
    await eventually(async () => expect(secondary.lastGuard()).toEqual(primary.lastGuard()));
    expect((await secondary.readRaw('local/t'))?.toString()).toBe('2');
    await loop.stop();
    await streamer.close();
  });
});

describe('KIND_POLICY and the rules across kinds', () => {
  it('differs only where the table says', () => {
    expect(KIND_POLICY.dr.trees).toEqual([1, 2]);
    expect(KIND_POLICY.performance.trees).toEqual([1]);
    expect(KIND_POLICY.dr.record.keyClass).toBe('node');
    expect(KIND_POLICY.performance.record.key.startsWith('local/')).toBe(true);
    expect(KIND_POLICY.performance.secondaryAuth).toBe('sudo');
  });

  it('refuses performance on a DR secondary, and a secondary enable that would wipe the other kind', () => {
    expect(crossKindRefusal('performance', 'other', 'secondary')).toMatch(/DR secondary/);
    expect(crossKindRefusal('performance', 'enableSecondary', 'primary')).toMatch(/wipes all data/);
    expect(crossKindRefusal('dr', 'enableSecondary', 'secondary')).toMatch(/wipes all data/);
    expect(crossKindRefusal('dr', 'other', 'secondary')).toBeUndefined();
    expect(crossKindRefusal('performance', 'other', 'primary')).toBeUndefined();
    expect(crossKindRefusal('performance', 'enableSecondary', 'disabled')).toBeUndefined();
  });
});
