import fc from 'fast-check';
import { PAGE_BYTES, compositeRoot, emptyTree, locate, reportIsClean, valueHash } from '../core/merkle.js';
import { ChainFault, WalChainBroken, genesisGuard, verifyChain, type WalEntry } from '../core/wal.js';
import type { Op } from './store.js';
import { rootFromData, testCipher } from './engine.fixtures.js';
import { StorageEngine, type EngineOptions } from './engine.js';
import { Keys, classify } from './keyspace.js';
import { MemoryBackend } from './memory.js';

const opts: EngineOptions = { walMaxEntries: 10_000, walMaxBytes: 1 << 30 };
const put = (key: string, value: string): Op => ({ type: 'put', key, value: Buffer.from(value) });

async function engineWith(data: Array<[string, string]> = []) {
  const backend = new MemoryBackend();
  const engine = await StorageEngine.open(backend, opts);
  const cipher = testCipher(Buffer.alloc(32, 1));
  const store = engine.secure(cipher);
  if (data.length > 0) await store.commit(data.map(([k, v]) => put(k, v)));
  return { backend, engine, store, cipher };
}

const ticks = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('Merkle index maintained by the commit path', () => {
  it('after random concurrent put/delete txns, memory, stored and recomputed roots agree and check() is clean', async () => {
    const key = fc.constantFrom('a', 'b', 'c/d', 'c/e', 'local/t1', 'local/t2', 'node/n', 'sys/p', 'ü/x');
    const op = fc.record({ key, value: fc.option(fc.string({ maxLength: 6 })) });
    const txn = fc.record({ ops: fc.array(op, { minLength: 1, maxLength: 4 }), delay: fc.nat({ max: 3 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(txn, { maxLength: 25 }), async (txns) => {
        const { backend, engine, store } = await engineWith();
        const order: Op[][] = [];
        await Promise.all(
          txns.map(async ({ ops, delay }) => {
            await ticks(delay);
            const logical: Op[] = ops.map(({ key: k, value }) => (value === null ? { type: 'del', key: k } : put(k, value)));
            order.push(logical); // commits queue in call order, so this is the commit order
            await store.commit(logical);
          }),
        );
        const model = new Map<string, string>();
        for (const t of order) for (const o of t) o.type === 'put' ? model.set(o.key, o.value.toString()) : model.delete(o.key);
        for (const k of ['a', 'b', 'c/d', 'c/e', 'local/t1', 'local/t2', 'node/n', 'sys/p', 'ü/x']) {
          expect((await store.get(k))?.toString()).toBe(model.get(k));
        }
        const fresh = await rootFromData(backend);
        expect(engine.merkleRoot()).toEqual(fresh);
        // An absent root record means "empty tree" (nothing was ever indexed).
        expect((await backend.get(Keys.compositeRoot)) ?? compositeRoot(emptyTree().root, emptyTree().root)).toEqual(fresh);
        expect(reportIsClean(await engine.check())).toBe(true);
        const walTxns = order.filter((t) => t.some((o) => classify(o.key) !== 'node')).length;
        const entries = await engine.readWal(1n, 1000);
        expect(entries.length).toBe(walTxns);
        verifyChain(genesisGuard(), entries);
      }),
      { numRuns: 40 },
    );
  });

  it('a put then delete restores the previous root exactly', async () => {
    const { engine, store } = await engineWith([['a', '1']]);
    const root = engine.merkleRoot();
    await store.commit([put('b', '2')]);
    expect(engine.merkleRoot()).not.toEqual(root);
    await store.commit([{ type: 'del', key: 'b' }]);
    expect(engine.merkleRoot()).toEqual(root);
  });
});

describe('check() and reindex', () => {
  const data: Array<[string, string]> = Array.from({ length: 40 }, (_, i) => [i % 3 === 0 ? `local/k${i}` : `k${i}`, `v${i}`]);

  it('names exactly the page and subpage of a corrupted page record; reindex repairs it', async () => {
    const { backend, engine } = await engineWith(data);
    const { page, subpage } = locate('k1');
    const rec = (await backend.get(Keys.page(1, page)))!;
    rec[subpage * 32] = (rec[subpage * 32] ?? 0) ^ 0xff;
    await backend.batch([{ type: 'put', key: Keys.page(1, page), value: rec }], { sync: true });

    const report = await engine.check();
    expect(report.trees[1].corruptedPages).toEqual(new Map([[page, { corrupted: false, subpages: [subpage] }]]));
    expect(report.trees[2].corruptedPages.size).toBe(0);
    // A corrupted page implies a corrupted subtree root and root (the stored root records match).
    expect(report.trees[1].corruptedSubtreeRoot).toBe(true);
    expect(report.trees[2].corruptedSubtreeRoot).toBe(false);
    expect(report.corruptedRoot).toBe(true);
    expect(report.trees[1].treeType).toBe('replicated');

    const progress: Array<[number, number]> = [];
    const { warnings } = await engine.reindex({ onProgress: (d, t) => progress.push([d, t]) });
    expect(warnings).toEqual([]);
    expect(progress.at(-1)).toEqual([40, 40]);
    expect(reportIsClean(await engine.check())).toBe(true);
  });

  it('reports a damaged page hash, subtree root and composite root, each implying the levels above', async () => {
    const { backend, engine } = await engineWith(data);
    const { page } = locate('local/k3');
    const rec = (await backend.get(Keys.page(2, page)))!;
    rec[PAGE_BYTES] = (rec[PAGE_BYTES] ?? 0) ^ 1;
    await backend.batch(
      [
        { type: 'put', key: Keys.page(2, page), value: rec },
        { type: 'put', key: Keys.treeRoot(1), value: Buffer.alloc(32) },
        { type: 'put', key: Keys.compositeRoot, value: Buffer.alloc(32) },
      ],
      { sync: true },
    );
    const report = await engine.check();
    expect(report.trees[2].corruptedPages).toEqual(new Map([[page, { corrupted: true, subpages: [] }]]));
    expect(report.trees[1].corruptedSubtreeRoot).toBe(true); // its stored root record was damaged
    expect(report.trees[2].corruptedSubtreeRoot).toBe(true); // implied by its corrupted page
    expect(report.corruptedRoot).toBe(true);
    expect(report.trees[1].rootHash).toEqual(engine.subtreeRoot(1));
    await engine.reindex({ force: true });
    expect(reportIsClean(await engine.check())).toBe(true);
  });

  it('finds wrong, missing and stray leaves; diff reindex names their keys', async () => {
    const { backend, engine, store } = await engineWith(data);
    const loc = (k: string) => locate(k);
    await backend.batch(
      [
        { type: 'put', key: Keys.leaf(1, loc('k1'), 'k1'), value: Buffer.alloc(32, 1) },
        { type: 'del', key: Keys.leaf(1, loc('k2'), 'k2') },
        { type: 'put', key: Keys.leaf(1, loc('ghost'), 'ghost'), value: valueHash(Buffer.from('x')) },
      ],
      { sync: true },
    );
    const report = await engine.check();
    const named = [...report.trees[1].corruptedPages].flatMap(([p, f]) => f.subpages.map((s) => `${p}/${s}`));
    expect(named.sort()).toEqual([loc('k1'), loc('k2'), loc('ghost')].map((l) => `${l.page}/${l.subpage}`).sort());

    const { warnings } = await engine.reindex({ diff: true });
    expect(warnings.join('\n')).toMatch(/"k1" was wrong/);
    expect(warnings.join('\n')).toMatch(/"k2" was missing/);
    expect(warnings.join('\n')).toMatch(/"ghost" had no matching data/);
    expect(warnings).toHaveLength(3);
    expect(reportIsClean(await engine.check())).toBe(true);
    // The repaired index keeps working incrementally.
    await store.commit([put('k1', 'new'), { type: 'del', key: 'k4' }]);
    expect(engine.merkleRoot()).toEqual(await rootFromData(backend));
    expect(reportIsClean(await engine.check())).toBe(true);
  });

  it('reindex with skipFlush returns before page records are written, then flushes them', async () => {
    const { backend, engine, store } = await engineWith(data);
    for await (const [k] of backend.iterate({ gte: 'm/', lt: 'm0' })) await backend.batch([{ type: 'del', key: k }], { sync: true });
    const { flushed } = await engine.reindex({ skipFlush: true });
    const during = store.commit([put('k5', 'changed')]);
    await flushed;
    await during;
    expect(await backend.get(Keys.compositeRoot)).toEqual(engine.merkleRoot());
    expect(engine.merkleRoot()).toEqual(await rootFromData(backend));
    expect(reportIsClean(await engine.check())).toBe(true);
  });
});

describe('what DR replication uses', () => {
  const data: Array<[string, string]> = [['a', '1'], ['local/t', '2'], ['sys/p', '3'], ['node/mine', 'primary-only']];

  it('applyEntries from readWal reproduces the primary: same root, guard and ciphertext', async () => {
    const p = await engineWith(data);
    await Promise.all([p.store.commit([put('b', '4')]), p.store.commit([{ type: 'del', key: 'a' }, put('local/u', '5')])]);
    const s = await engineWith();
    const entries = await p.engine.readWal(1n, 100);
    await s.engine.applyEntries(entries.slice(0, 1));
    await s.engine.applyEntries(entries.slice(1), s.store.encryptOps([put('node/applied', '3')]));
    expect(s.engine.merkleRoot()).toEqual(p.engine.merkleRoot());
    expect(s.engine.lastGuard()).toEqual(p.engine.lastGuard());
    expect(await s.engine.readRaw('local/u')).toEqual(await p.engine.readRaw('local/u'));
    expect((await s.store.get('local/u'))?.toString()).toBe('5');
    expect(await s.store.get('node/mine')).toBeUndefined();
    expect((await s.store.get('node/applied'))?.toString()).toBe('3');
    expect(reportIsClean(await s.engine.check())).toBe(true);
  });

  it('applyEntries with a broken chain rejects and changes nothing', async () => {
    const p = await engineWith(data);
    await p.store.commit([put('b', '4')]);
    await p.store.commit([put('c', '5')]);
    const entries = await p.engine.readWal(1n, 100);
    const s = await engineWith();
    await s.engine.applyEntries(entries.slice(0, 1));
    const root = s.engine.merkleRoot();
    const guard = s.engine.lastGuard();
    const batches = s.backend.batches;
    await expect(s.engine.applyEntries(entries.slice(2))).rejects.toMatchObject({ fault: ChainFault.gap });
    const forged: WalEntry = { ...entries[1]!, hash: Buffer.alloc(32, 7) };
    await expect(s.engine.applyEntries([forged])).rejects.toBeInstanceOf(WalChainBroken);
    await expect(s.engine.applyEntries([entries[1]!], [{ type: 'put', key: 'sys/x', value: Buffer.alloc(1) }])).rejects.toThrow(/not a node-class key/);
    expect(s.backend.batches).toBe(batches);
    expect(s.engine.merkleRoot()).toEqual(root);
    expect(s.engine.lastGuard()).toEqual(guard);
    expect(await s.engine.readRaw('b')).toBeUndefined();
  });

  it('a pinned snapshot keeps its hashes and values while commits continue; installSnapshot + stream converge', async () => {
    const p = await engineWith(data);
    const snap = await p.engine.snapshot();
    const pinnedRoot = p.engine.merkleRoot();
    const { page, subpage } = locate('sys/p');
    const pinnedLeaves = await snap.leaves(1, page, subpage);
    await p.store.commit([put('sys/p', 'changed'), put('late', 'x')]);
    expect(snap.merkleRoot()).toEqual(pinnedRoot);
    expect(p.engine.merkleRoot()).not.toEqual(pinnedRoot);
    expect(await snap.leaves(1, page, subpage)).toEqual(pinnedLeaves);
    expect(pinnedLeaves.find((l) => l.key === 'sys/p')?.valueHash).toEqual(valueHash((await snap.readRaw('sys/p'))!));
    expect(snap.guard.index).toBe(1n);

    // A secondary with a diverged history copies the snapshot's keys (here: all of them) and its guard.
    const s = await engineWith([['stale', 'x']]);
    const ops = [];
    for (const k of ['a', 'local/t', 'sys/p']) ops.push({ type: 'put' as const, key: k, value: (await snap.readRaw(k))! });
    await s.engine.installChunk(ops.slice(0, 1));
    await s.engine.installSnapshot([...ops.slice(1), { type: 'del', key: 'stale' }], snap.guard);
    expect(s.engine.merkleRoot()).toEqual(snap.merkleRoot());
    expect(s.engine.pageHashes(1)).toEqual(snap.pageHashes(1));
    expect(s.engine.subpageHashes(2, 0)).toEqual(snap.subpageHashes(2, 0));
    expect(s.engine.lastGuard()).toEqual(snap.guard);
    expect(await s.engine.hashAt(snap.guard.index)).toEqual(snap.guard.hash);
    await snap.close();

    await s.engine.applyEntries(await p.engine.readWal(snap.guard.index + 1n, 100));
    expect(s.engine.merkleRoot()).toEqual(p.engine.merkleRoot());
    expect(s.engine.lastGuard()).toEqual(p.engine.lastGuard());
  });

  it('reuses the page blocks commits replace, never one a pinned snapshot holds, and its roots stay right', async () => {
    const keys = Array.from({ length: 24 }, (_, i) => `k/${i}`);
    const p = await engineWith(keys.map((k) => [k, 'v0']));
    // Commits alone: from the second on, each copies its pages into blocks the one before replaced.
    for (let round = 1; round <= 10; round++) await p.store.commit(keys.map((k) => put(k, `v${round}`)));
    expect(p.engine.reusedPageBlocks).toBeGreaterThan(0);
    expect(p.engine.merkleRoot()).toEqual(await rootFromData(p.backend));
    // A pinned snapshot: the blocks of its trees are never written again, however many commits
    // touch the same pages after it.
    const snap = await p.engine.snapshot();
    const pages = [...new Set(keys.map((k) => locate(k).page))];
    const pinned = { root: snap.merkleRoot(), pageHashes: snap.pageHashes(1), subpages: pages.map((pg) => snap.subpageHashes(1, pg)) };
    const before = p.engine.reusedPageBlocks;
    for (let round = 11; round <= 30; round++) await p.store.commit(keys.map((k) => put(k, `v${round}`)));
    expect(p.engine.reusedPageBlocks).toBeGreaterThan(before);
    expect(snap.merkleRoot()).toEqual(pinned.root);
    expect(snap.pageHashes(1)).toEqual(pinned.pageHashes);
    expect(pages.map((pg) => snap.subpageHashes(1, pg))).toEqual(pinned.subpages);
    await snap.close();
    expect(p.engine.merkleRoot()).toEqual(await rootFromData(p.backend));
    expect(reportIsClean(await p.engine.check())).toBe(true);
  });

  it('wipe clears data, WAL and index and restarts at genesis', async () => {
    const { engine, store, backend } = await engineWith(data);
    const empty = (await engineWith()).engine.merkleRoot();
    await engine.wipe();
    expect(engine.merkleRoot()).toEqual(empty);
    expect(engine.lastGuard()).toEqual(genesisGuard());
    expect(await store.list('')).toEqual([]);
    const left: string[] = [];
    for await (const [k] of backend.iterate({})) left.push(k);
    // The meta, and the install mark the wipe rewrote (HA standbys clear their read caches on it).
    expect(left).toEqual(['wi', 'wm']);
    await store.commit([put('a', '1')]);
    expect((await engine.readWal(1n, 10))[0]?.index).toBe(1n);
  });
});
