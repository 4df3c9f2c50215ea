import { InvalidRequest } from '../core/errors.js';
import { locate } from '../core/merkle.js';
import { Keys, assertLogicalKey, classify, dirEnd, parseLeaf, treeOf } from './keyspace.js';

const utf8Sort = (xs: string[]) => [...xs].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

describe('keyspace', () => {
  it('classifies logical keys by prefix into replicated (tree 1), local (tree 2) and node (no tree)', () => {
    expect(classify('sys/policy/ops')).toBe('replicated');
    expect(classify('localish/x')).toBe('replicated');
    expect(classify('local/tokens/a')).toBe('local');
    expect(classify('node/dr/mode')).toBe('node');
    expect([treeOf('replicated'), treeOf('local'), treeOf('node')]).toEqual([1, 2, undefined]);
  });

  it('WAL keys sort numerically as bytes and parse back', () => {
    const idx = [1n, 2n, 15n, 16n, 255n, 4096n, (1n << 64n) - 1n];
    const keys = idx.map(Keys.wal);
    expect(utf8Sort([...keys].reverse())).toEqual(keys);
    expect(keys.map(Keys.walIndexOf)).toEqual(idx);
    expect(Keys.wal(42n)).toBe('w/000000000000002a');
  });

  it('leaf keys carry page and subpage and parse back, keys with slashes included', () => {
    const key = 'local/a/b/ü';
    const loc = locate(key);
    const leaf = Keys.leaf(2, loc, key);
    expect(leaf.startsWith(Keys.leafPrefix(2, loc.page, loc.subpage))).toBe(true);
    expect(parseLeaf(leaf)).toEqual({ tree: 2, loc, key });
    expect(parseLeaf('m/1/p/00')).toBeUndefined();
  });

  it('dirEnd bounds exactly the keys under a directory prefix', () => {
    const end = dirEnd('v/a/');
    expect(end).toBe('v/a0');
    const inside = ['v/a/', 'v/a/\u{10ffff}', 'v/a/zzz'];
    const outside = ['v/a0', 'v/a1', 'v/b'];
    const cmp = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
    for (const k of inside) expect(cmp(k, end)).toBeLessThan(0);
    for (const k of outside) expect(cmp(k, end)).toBeGreaterThanOrEqual(0);
    expect(cmp('v/a.', 'v/a/')).toBeLessThan(0);
  });

  it('rejects empty keys and keys that are not valid UTF-8', () => {
    expect(() => assertLogicalKey('')).toThrow(InvalidRequest);
    expect(() => assertLogicalKey('a\udc00')).toThrow(InvalidRequest);
    expect(() => assertLogicalKey('ok/ü')).not.toThrow();
  });
});
