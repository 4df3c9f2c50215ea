/**
 * merkle-check and reindex: both recompute every level of the index from the stored `v/` data.
 *
 *   const report = await checkIndex(snapshot);          // read-only, on a pinned view
 *   const { trees, warnings } = await rebuildIndex(backend, { diff: true });
 *
 * check compares per subpage the XOR of the leaves recomputed from data with both the stored
 * page record's subpage hash and the XOR of the stored leaves (so a wrong, missing or stray leaf is
 * named by its subpage), each page record's trailing page hash with the recomputed page hash, and
 * the stored roots with the recomputed ones. Memory stays O(pages), not O(keys).
 *
 * The report is consistent upward: a corrupted page (or subpage) makes its subtree root corrupted,
 * and a corrupted subtree root makes the root corrupted, whether or not the stored root records
 * happen to match. The index the node serves is built from those pages, so its roots are as wrong.
 */
import {
  HASH_LEN,
  PAGES,
  PAGE_BYTES,
  SUBPAGES,
  TREES,
  TreeType,
  compositeRoot,
  decodePageRecord,
  leafHash,
  locate,
  pageHash,
  subtreeRoot,
  treeFromPages,
  valueHash,
  xorInto,
  type CorruptionReport,
  type PageFinding,
  type SubtreeReport,
  type Tree,
} from '../core/merkle.js';
import type { Backend, BatchOp, ReadView } from './backend.js';
import { Keys, classify, dirEnd, parseLeaf, treeOf } from './keyspace.js';
import { keysIn, type Trees } from './merkle-store.js';

type Blocks = { 1: Buffer[]; 2: Buffer[] };

function zeroBlocks(): Blocks {
  const make = (): Buffer[] => Array.from({ length: PAGES }, () => Buffer.alloc(PAGE_BYTES));
  return { 1: make(), 2: make() };
}

function block(b: Blocks, tree: Tree, page: number): Buffer {
  const blk = b[tree][page];
  if (blk === undefined) throw new RangeError(`page ${page} out of range`);
  return blk;
}

/** Visits every tree-class value: (tree, logical key, ciphertext). */
async function* treeValues(view: ReadView): AsyncIterable<{ tree: Tree; key: string; value: Buffer }> {
  for await (const [k, value] of view.iterate({ gte: Keys.valuePrefix, lt: dirEnd(Keys.valuePrefix) })) {
    const key = Keys.logicalOf(k);
    const tree = treeOf(classify(key));
    if (tree !== undefined) yield { tree, key, value };
  }
}

async function storedOr(view: ReadView, key: string, fallback: Buffer): Promise<Buffer> {
  return (await view.get(key)) ?? fallback;
}

export async function checkIndex(view: ReadView): Promise<CorruptionReport> {
  const fromData = zeroBlocks();
  const fromLeaves = zeroBlocks();
  for await (const { tree, key, value } of treeValues(view)) {
    const loc = locate(key);
    xorInto(block(fromData, tree, loc.page), leafHash(key, valueHash(value)), loc.subpage * HASH_LEN);
  }
  const roots: Buffer[] = [];
  const reports = new Map<Tree, SubtreeReport>();
  for (const tree of TREES) {
    for await (const [k, v] of view.iterate({ gte: Keys.leafPrefix(tree), lt: dirEnd(Keys.leafPrefix(tree)) })) {
      const leaf = parseLeaf(k);
      if (leaf === undefined) continue;
      xorInto(block(fromLeaves, tree, leaf.loc.page), leafHash(leaf.key, v), leaf.loc.subpage * HASH_LEN);
    }
    // A missing record is an empty page; a malformed one reads as zero subpages and a zero hash.
    const stored = new Map<number, { subpages: Buffer; hash: Buffer }>();
    const prefix = Keys.pagePrefix(tree);
    for await (const [k, v] of view.iterate({ gte: prefix, lt: dirEnd(prefix) })) {
      stored.set(parseInt(k.slice(prefix.length), 16), decodePageRecord(v) ?? { subpages: Buffer.alloc(PAGE_BYTES), hash: Buffer.alloc(HASH_LEN) });
    }
    const pageHashes: Buffer[] = [];
    const corruptedPages = new Map<number, PageFinding>();
    for (let p = 0; p < PAGES; p++) {
      const data = block(fromData, tree, p);
      const leaves = block(fromLeaves, tree, p);
      const hash = pageHash(data);
      pageHashes.push(hash);
      const rec = stored.get(p) ?? { subpages: Buffer.alloc(PAGE_BYTES), hash: pageHash(Buffer.alloc(PAGE_BYTES)) };
      const subpages: number[] = [];
      for (let s = 0; s < SUBPAGES; s++) {
        const [from, to] = [s * HASH_LEN, (s + 1) * HASH_LEN];
        if (data.compare(rec.subpages, from, to, from, to) !== 0 || data.compare(leaves, from, to, from, to) !== 0) subpages.push(s);
      }
      const corrupted = !rec.hash.equals(hash);
      if (corrupted || subpages.length > 0) corruptedPages.set(p, { corrupted, subpages });
    }
    const root = subtreeRoot(pageHashes);
    const storedRoot = await storedOr(view, Keys.treeRoot(tree), treeFromPages([]).root);
    roots.push(root);
    const corruptedSubtreeRoot = !storedRoot.equals(root) || corruptedPages.size > 0;
    reports.set(tree, { treeType: TreeType[tree], rootHash: root, corruptedSubtreeRoot, corruptedPages });
  }
  const [r1, r2] = roots as [Buffer, Buffer];
  const empty = treeFromPages([]).root;
  const storedComposite = await storedOr(view, Keys.compositeRoot, compositeRoot(empty, empty));
  const t1 = reports.get(1);
  const t2 = reports.get(2);
  if (t1 === undefined || t2 === undefined) throw new RangeError('missing subtree report');
  const corruptedRoot = !storedComposite.equals(compositeRoot(r1, r2)) || t1.corruptedSubtreeRoot || t2.corruptedSubtreeRoot;
  return { corruptedRoot, trees: { 1: t1, 2: t2 } };
}

export interface ReindexOptions {
  /** Compare key by key and return a warning for each leaf that was wrong, missing or stray. */
  readonly diff?: boolean;
  /** Delete the whole index first and rebuild it from the data alone, reading no stored leaf. */
  readonly force?: boolean;
  readonly onProgress?: (done: number, total: number) => void;
}

const CHUNK = 1000;

/**
 * Rewrites the leaves from `v/` data (in chunks, not atomically) and returns the rebuilt trees;
 * the caller writes the page records and roots (flushOps) and swaps its in-memory trees. Until
 * those are written the stored index is inconsistent: a crash means running reindex again.
 * The caller must keep other writers out while this runs.
 */
export async function rebuildIndex(backend: Backend, opts: ReindexOptions): Promise<{ trees: Trees; warnings: string[] }> {
  const warnings: string[] = [];
  let pending: BatchOp[] = [];
  const write = async (op: BatchOp): Promise<void> => {
    pending.push(op);
    if (pending.length >= CHUNK) {
      await backend.batch(pending, { sync: false });
      pending = [];
    }
  };
  let total = 0;
  for await (const _ of treeValues(backend)) total++;
  if (opts.force) {
    for await (const k of keysIn(backend, Keys.merklePrefix)) await write({ type: 'del', key: k });
  }
  const acc = zeroBlocks();
  let done = 0;
  for await (const { tree, key, value } of treeValues(backend)) {
    const vh = valueHash(value);
    const loc = locate(key);
    xorInto(block(acc, tree, loc.page), leafHash(key, vh), loc.subpage * HASH_LEN);
    const leafKey = Keys.leaf(tree, loc, key);
    const stored = opts.force ? undefined : await backend.get(leafKey);
    if (stored === undefined || !stored.equals(vh)) {
      await write({ type: 'put', key: leafKey, value: vh });
      if (opts.diff && !opts.force) warnings.push(`merkle leaf of key "${key}" was ${stored === undefined ? 'missing' : 'wrong'}`);
    }
    done++;
    if (done % CHUNK === 0) opts.onProgress?.(done, total);
  }
  if (!opts.force) {
    for (const tree of TREES) {
      for await (const [k] of backend.iterate({ gte: Keys.leafPrefix(tree), lt: dirEnd(Keys.leafPrefix(tree)) })) {
        const leaf = parseLeaf(k);
        const valid =
          leaf !== undefined &&
          leaf.tree === tree &&
          treeOf(classify(leaf.key)) === tree &&
          Keys.leaf(tree, locate(leaf.key), leaf.key) === k &&
          (await backend.get(Keys.value(leaf.key))) !== undefined;
        if (valid) continue;
        await write({ type: 'del', key: k });
        if (opts.diff) warnings.push(`merkle leaf ${JSON.stringify(leaf?.key ?? k)} had no matching data`);
      }
    }
  }
  await backend.batch(pending, { sync: true });
  opts.onProgress?.(total, total);
  return { trees: { 1: treeFromPages(acc[1]), 2: treeFromPages(acc[2]) }, warnings };
}
