/**
 * The filtered view a performance primary serves one secondary: hashes over exactly the allowed
 * leaves (equal to a tree built from them alone), and stream entries that keep their index with
 * only the admitted ops.
 */
import { treeOfLeaves } from '../core/merkle-filter.js';
import { keyFilter, type CatalogMount } from '../core/paths-filter.js';
import type { WalEntry } from '../core/wal.js';
import { testCipher } from '../storage/engine.fixtures.js';
import { StorageEngine } from '../storage/engine.js';
import { MemoryBackend } from '../storage/memory.js';
import { filterEntries, filteredView, servedRoot, servedTrees, withDynamicFilter } from './filtered-view.js';

const mounts: CatalogMount[] = [
  { namespace: '', path: 'secret/', uuid: 'u-secret', local: false },
  { namespace: 'team-a/', path: 'kv/', uuid: 'u-team', local: false },
];
const none = { dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] };

describe('filteredView', () => {
  it('serves tree 1 over the allowed leaves only, equal to the tree of those leaves; undefined without a filter', async () => {
    const engine = await StorageEngine.open(new MemoryBackend(), { walMaxEntries: 1000, walMaxBytes: 1 << 30 });
    const store = engine.secure(testCipher(Buffer.alloc(32, 1)));
    const keys = ['core/mounts/u-secret', 'core/mounts/u-team', 'logical/u-secret/a', 'logical/u-team/b', 'logical/u-team/c', 'core/namespaces/team-a', 'sys/x'];
    await store.commit(keys.map((key) => ({ type: 'put' as const, key, value: Buffer.from(key) })));
    const kf = keyFilter({ mode: 'deny', paths: ['team-a/'] }, mounts);
    const snap = await engine.snapshot();
    try {
      const view = await filteredView(snap, { keyFilter: async () => kf, dynamicFor: async () => none }, 'east');
      const allowed = [];
      for await (const l of snap.allLeaves(1)) if (kf.keyAllowed(l.key)) allowed.push(l);
      expect(allowed.map((l) => l.key).sort()).toEqual(['core/mounts/u-secret', 'logical/u-secret/a', 'sys/x']);
      const expected = treeOfLeaves(allowed);
      expect(Buffer.from(view!.tree1.root)).toEqual(Buffer.from(expected.root));
      expect(servedTrees(snap, view)[1].pageHashes.map((h) => Buffer.from(h).toString('hex'))).toEqual(expected.pageHashes.map((h) => Buffer.from(h).toString('hex')));
      expect(servedRoot(snap, view).equals(snap.merkleRoot())).toBe(false);
      // No filter: the snapshot as it is.
      const plain = await filteredView(snap, { keyFilter: async () => undefined, dynamicFor: async () => none }, 'east');
      expect(plain).toBeUndefined();
      expect(servedRoot(snap, plain).equals(snap.merkleRoot())).toBe(true);
    } finally {
      await snap.close();
    }
  });
});

describe('filterEntries', () => {
  const entry = (index: bigint, ops: WalEntry['ops']): WalEntry => ({ index, hash: Buffer.alloc(32, Number(index)), time: 1, ops } as unknown as WalEntry);
  it('keeps every entry (an emptied one too), drops denied ops, lets deletes of unknown mounts through', () => {
    const kf = keyFilter({ mode: 'deny', paths: ['team-a/'] }, mounts);
    const put = (key: string) => ({ type: 'put' as const, key, value: Buffer.from('v') });
    const out = filterEntries(
      [entry(1n, [put('logical/u-team/x')]), entry(2n, [put('logical/u-secret/y'), put('local/z')]), entry(3n, [{ type: 'del', key: 'logical/u-gone/q' }, put('logical/u-gone/r')])],
      (key) => !key.startsWith('local/'),
      kf,
    );
    expect(out.map((e) => [e.index, e.ops.map((o) => `${o.type} ${o.key}`)])).toEqual([
      [1n, []],
      [2n, ['put logical/u-secret/y']],
      [3n, ['del logical/u-gone/q']],
    ]);
    withDynamicFilter(out, { dynamic_filtered_mounts: ['team-a/kv/'], dynamic_filtered_namespaces: ['team-a/'] });
    expect(out[2]!.ops.at(-1)).toMatchObject({ type: 'put', key: 'node/replication/performance/dynamic-filter' });
    expect(out[1]!.ops).toHaveLength(1);
  });
});
