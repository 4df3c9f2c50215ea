/**
 * PageBlocks (page-blocks.ts) with TreeUpdate: a block a later commit replaced is reused for the
 * next copy, and no block of a state handed out (pinned) is ever reused.
 */
import { PAGE_BYTES, TreeUpdate, emptyTree, leafHash, locate, type TreeState } from '../core/merkle.js';
import type { Trees } from './merkle-store.js';
import { PageBlocks } from './page-blocks.js';

/** One commit of `keys` (new leaves) on tree 1 through `blocks`; the trees after it, advanced. */
function commit(blocks: PageBlocks, before: Trees, keys: readonly string[], tag: string): Trees {
  const upd = new TreeUpdate(before[1], blocks.reuse);
  for (const k of keys) upd.toggle(locate(k), leafHash(k, Buffer.from(`${tag}:${k}`)));
  const after: Trees = { 1: upd.finish(), 2: before[2] };
  blocks.advanced(before, after);
  return after;
}
const copyOf = (s: TreeState): Buffer[] => s.pages.map((b) => Buffer.from(b));

test('a replaced block of a commit is reused by the next copy; a pinned state keeps every block as it was', () => {
  const blocks = new PageBlocks();
  const keys = ['a', 'b', 'c', 'd'];
  let trees: Trees = { 1: emptyTree(), 2: emptyTree() };
  trees = commit(blocks, trees, keys, '1');
  expect(blocks.reused).toBe(0); // the empty tree's blocks were not made by a commit
  trees = commit(blocks, trees, keys, '2');
  trees = commit(blocks, trees, keys, '3');
  expect(blocks.reused).toBeGreaterThan(0);
  // Pinned: its blocks never come back from the free list, though commits keep replacing them.
  blocks.pinned();
  const held = trees[1];
  const saved = copyOf(held);
  const heldBlocks = new Set(held.pages);
  const reusedBefore = blocks.reused;
  for (let i = 4; i < 40; i++) {
    const next = commit(blocks, trees, keys, String(i));
    for (const p of new Set(keys.map((k) => locate(k).page))) expect(heldBlocks.has(next[1].pages[p] as Buffer)).toBe(false);
    trees = next;
  }
  expect(blocks.reused).toBeGreaterThan(reusedBefore);
  expect(copyOf(held)).toEqual(saved);
  expect(held.pages.every((b) => b.length === PAGE_BYTES)).toBe(true);
});
