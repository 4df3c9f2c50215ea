/**
 * merkle-check and reindex: both recompute every level of the index from the stored `v/` data.
 *
 *   const report = await checkIndex(snapshot);          // read-only, on a pinned view
 *   const { blocks, warnings } = await rebuildLeaves(snapshot, { diff: true }, (chunk) => writeOnChain(chunk));
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
import type { BatchOp, ReadView } from './backend.js';
import { Keys, classify, dirEnd, parseLeaf, treeOf } from './keyspace.js';

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

/** A leaf write of a reindex, with the logical key it is for (the caller leaves out keys written since its view). */
export interface LeafFix {
  readonly key: string;
  readonly op: BatchOp;
}

/** The leaf-hash blocks of every page of both trees, as treeFromPages takes them. */
export type LeafBlocks = Blocks;

/**
 * Recomputes the leaf of every tree-class value of `view` (a snapshot, read beside commits) into
 * the leaf-hash blocks of its pages, and hands `fix` (in chunks of CHUNK) the leaf writes that make
 * the stored leaves match `view`'s data: wrong or missing leaves put (every leaf with `force`),
 * stray ones deleted. Stored leaves are read a chunk at a time (getMany where the view has it).
 * Memory: the blocks, and the set of keys seen (to find stray leaves without a read per leaf).
 */
export async function rebuildLeaves(view: ReadView, opts: ReindexOptions, fix: (chunk: LeafFix[]) => Promise<void>): Promise<{ blocks: LeafBlocks; warnings: string[] }> {
  const warnings: string[] = [];
  let pending: LeafFix[] = [];
  const write = async (f: LeafFix): Promise<void> => {
    pending.push(f);
    if (pending.length < CHUNK) return;
    const chunk = pending;
    pending = [];
    await fix(chunk);
  };
  let total = 0;
  for await (const _ of treeValues(view)) if (++total % CHUNK === 0) await yieldToEventLoop();
  const acc = zeroBlocks();
  const seen = new Set<string>();
  let done = 0;
  const compare = async (items: ReadonlyArray<{ tree: Tree; key: string; value: Buffer }>): Promise<void> => {
    const leafKeys = items.map((it) => Keys.leaf(it.tree, locate(it.key), it.key));
    const stored = opts.force ? [] : await readMany(view, leafKeys);
    for (const [n, it] of items.entries()) {
      const vh = valueHash(it.value);
      const loc = locate(it.key);
      xorInto(block(acc, it.tree, loc.page), leafHash(it.key, vh), loc.subpage * HASH_LEN);
      const was = stored[n];
      if (opts.force || was === undefined || !was.equals(vh)) {
        await write({ key: it.key, op: { type: 'put', key: leafKeys[n] as string, value: vh } });
        if (opts.diff && !opts.force) warnings.push(`merkle leaf of key "${it.key}" was ${was === undefined ? 'missing' : 'wrong'}`);
      }
    }
    done += items.length;
    if (items.length > 0) opts.onProgress?.(done, total);
    await yieldToEventLoop();
  };
  let items: Array<{ tree: Tree; key: string; value: Buffer }> = [];
  for await (const it of treeValues(view)) {
    seen.add(it.key);
    items.push(it);
    if (items.length < CHUNK) continue;
    await compare(items);
    items = [];
  }
  await compare(items);
  for (const tree of TREES) {
    let n = 0;
    for await (const [k] of view.iterate({ gte: Keys.leafPrefix(tree), lt: dirEnd(Keys.leafPrefix(tree)) })) {
      if (++n % CHUNK === 0) await yieldToEventLoop();
      const leaf = parseLeaf(k);
      const valid = leaf !== undefined && leaf.tree === tree && treeOf(classify(leaf.key)) === tree && Keys.leaf(tree, locate(leaf.key), leaf.key) === k && seen.has(leaf.key);
      if (valid) continue;
      await write({ key: leaf?.key ?? k, op: { type: 'del', key: k } });
      if (opts.diff && !opts.force) warnings.push(`merkle leaf ${JSON.stringify(leaf?.key ?? k)} had no matching data`);
    }
  }
  if (pending.length > 0) await fix(pending);
  opts.onProgress?.(total, total);
  return { blocks: acc, warnings };
}

/**
 * Lets timers and I/O run: an iteration whose store hands out buffered entries resolves one
 * microtask after another, and a long run of them would stall every request of the node.
 */
const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The values of `keys` in their order, in one round trip where the view can. */
export function readMany(view: ReadView, keys: readonly string[]): Promise<Array<Buffer | undefined>> {
  if (keys.length === 0) return Promise.resolve([]);
  return view.getMany !== undefined ? view.getMany(keys) : Promise.all(keys.map((k) => view.get(k)));
}

/**
 * Moves `blocks` from the leaves they hold for `keys` (`known`'s value hash where a key was moved
 * before, else its value in `from`, the reindex's snapshot) to their values in `to` now, and
 * records those in `known`. Keys outside the trees are skipped.
 */
export async function moveLeaves(blocks: LeafBlocks, keys: readonly string[], known: Map<string, Buffer | undefined>, from: ReadView, to: ReadView): Promise<void> {
  const inTree = keys.filter((k) => treeOf(classify(k)) !== undefined);
  for (let i = 0; i < inTree.length; i += CHUNK) {
    const chunk = inTree.slice(i, i + CHUNK);
    const unknown = chunk.filter((k) => !known.has(k));
    const before = new Map(unknown.map((k, n) => [k, n]));
    const snap = await readMany(from, unknown.map(Keys.value));
    const now = await readMany(to, chunk.map(Keys.value));
    await yieldToEventLoop();
    for (const [n, key] of chunk.entries()) {
      const tree = treeOf(classify(key)) as Tree;
      const loc = locate(key);
      const at = before.get(key);
      const was = at === undefined ? known.get(key) : valueOrUndefined(snap[at]);
      const is = valueOrUndefined(now[n]);
      if (was !== undefined) xorInto(block(blocks, tree, loc.page), leafHash(key, was), loc.subpage * HASH_LEN);
      if (is !== undefined) xorInto(block(blocks, tree, loc.page), leafHash(key, is), loc.subpage * HASH_LEN);
      known.set(key, is);
    }
  }
}

const valueOrUndefined = (v: Buffer | undefined): Buffer | undefined => (v === undefined ? undefined : valueHash(v));
