/**
 * The Merkle index in storage: loading page records, and planning one batch's data writes with
 * their leaf, page and root updates.
 *
 *   const { trees, dirty } = await loadTrees(backend);
 *   const plan = new BatchPlan(backend, trees);
 *   await plan.prefetch(['sys/x']);
 *   await plan.data({ type: 'put', key: 'sys/x', value: ciphertext });
 *   const next = plan.finish(dirty, flush);   // `trees` is unchanged until the caller swaps
 *
 * Leaves are read from storage (overlaid by earlier ops of the same plan), so two transactions in
 * one batch that touch the same key compose: the second XORs out the leaf the first put in.
 *
 * Page records (8 KiB each) may be written later than the leaves that changed them: a batch that
 * defers them writes the dirty-page journal `m/d` instead, in the same atomic batch. Leaves and
 * roots are always written with their data, so after a crash loadTrees rebuilds exactly the
 * journalled pages from their leaves; every other record is current.
 */
import {
  HASH_LEN,
  PAGES,
  PAGE_BYTES,
  TREES,
  TreeUpdate,
  compositeRoot,
  decodePageRecord,
  emptyTree,
  encodePageRecord,
  leafHash,
  locate,
  treeFromPages,
  valueHash,
  xorInto,
  type Location,
  type Tree,
  type TreeState,
} from '../core/merkle.js';
import type { WalOp } from '../core/wal.js';
import { prefixEnd, type BatchOp, type ReadView } from './backend.js';
import { Keys, classify, dirEnd, parseLeaf, treeOf } from './keyspace.js';

export interface Trees {
  readonly 1: TreeState;
  readonly 2: TreeState;
}

export interface Leaf {
  readonly key: string;
  readonly valueHash: Buffer;
}

export function emptyTrees(): Trees {
  return { 1: emptyTree(), 2: emptyTree() };
}

/** Per tree, the pages whose stored record may be older than the page in memory. */
export interface DirtyPages {
  readonly 1: ReadonlySet<number>;
  readonly 2: ReadonlySet<number>;
}

export function noDirtyPages(): DirtyPages {
  return { 1: new Set(), 2: new Set() };
}

export function isClean(d: DirtyPages): boolean {
  return d[1].size === 0 && d[2].size === 0;
}

const BITMAP_BYTES = PAGES / 8;

/** The journal record: one 256-bit page bitmap per tree. */
export function encodeDirty(d: DirtyPages): Buffer {
  const out = Buffer.alloc(2 * BITMAP_BYTES);
  for (const t of TREES) {
    for (const p of d[t]) {
      const at = (t - 1) * BITMAP_BYTES + (p >> 3);
      out[at] = (out[at] ?? 0) | (1 << (p & 7));
    }
  }
  return out;
}

/** A malformed journal marks every page dirty, so loading rebuilds every page from its leaves. */
export function decodeDirty(rec: Buffer | undefined): DirtyPages {
  const sets = { 1: new Set<number>(), 2: new Set<number>() };
  if (rec === undefined) return sets;
  const all = rec.length !== 2 * BITMAP_BYTES;
  for (const t of TREES) {
    for (let p = 0; p < PAGES; p++) {
      if (all || (((rec[(t - 1) * BITMAP_BYTES + (p >> 3)] ?? 0) >> (p & 7)) & 1) === 1) sets[t].add(p);
    }
  }
  return sets;
}

/** A page's subpage hashes recomputed from its stored leaves. */
async function pageFromLeaves(view: ReadView, tree: Tree, page: number): Promise<Buffer> {
  const block = Buffer.alloc(PAGE_BYTES);
  const prefix = Keys.leafPrefix(tree, page);
  for await (const [k, v] of view.iterate({ gte: prefix, lt: prefixEnd(prefix) })) {
    const leaf = parseLeaf(k);
    if (leaf === undefined || leaf.tree !== tree || leaf.loc.page !== page) continue;
    xorInto(block, leafHash(leaf.key, v), leaf.loc.subpage * HASH_LEN);
  }
  return block;
}

export function compositeOf(trees: Trees): Buffer {
  return compositeRoot(trees[1].root, trees[2].root);
}

/**
 * In-memory trees from the stored page records, the journalled pages rebuilt from their leaves
 * (they stay dirty: their records are rewritten by the next flush). A malformed record loads as
 * an empty page; check() reports it.
 */
export async function loadTrees(view: ReadView): Promise<{ trees: Trees; dirty: DirtyPages }> {
  const dirty = decodeDirty(await view.get(Keys.dirtyPages));
  const load = async (tree: Tree): Promise<TreeState> => {
    const pages: Array<Buffer | undefined> = [];
    const prefix = Keys.pagePrefix(tree);
    for await (const [k, v] of view.iterate({ gte: prefix, lt: dirEnd(prefix) })) {
      const rec = decodePageRecord(v);
      if (rec !== undefined) pages[parseInt(k.slice(prefix.length), 16)] = rec.subpages;
    }
    for (const p of dirty[tree]) pages[p] = await pageFromLeaves(view, tree, p);
    return treeFromPages(pages);
  };
  return { trees: { 1: await load(1), 2: await load(2) }, dirty };
}

/** Page records of `pages`, from `state`. */
function pageOps(tree: Tree, state: TreeState, pages: Iterable<number>): BatchOp[] {
  const ops: BatchOp[] = [];
  for (const p of pages) {
    const block = state.pages[p];
    const hash = state.pageHashes[p];
    if (block !== undefined && hash !== undefined) ops.push({ type: 'put', key: Keys.page(tree, p), value: encodePageRecord(block, hash) });
  }
  return ops;
}

function rootOp(tree: Tree, state: TreeState): BatchOp {
  return { type: 'put', key: Keys.treeRoot(tree), value: Buffer.from(state.root) };
}

/** Every page record and root, and no journal: a full flush of the in-memory index. */
export function flushOps(trees: Trees): BatchOp[] {
  const all = [...Array(PAGES).keys()];
  return [
    ...pageOps(1, trees[1], all),
    rootOp(1, trees[1]),
    ...pageOps(2, trees[2], all),
    rootOp(2, trees[2]),
    { type: 'put', key: Keys.compositeRoot, value: compositeOf(trees) },
    { type: 'del', key: Keys.dirtyPages },
  ];
}

/** The records of the dirty pages and the journal's deletion; [] when nothing is dirty. */
export function dirtyFlushOps(trees: Trees, dirty: DirtyPages): BatchOp[] {
  if (isClean(dirty)) return [];
  return [...pageOps(1, trees[1], dirty[1]), ...pageOps(2, trees[2], dirty[2]), { type: 'del', key: Keys.dirtyPages }];
}

/** The (key, value hash) pairs of one subpage, in key order. */
export async function readLeaves(view: ReadView, tree: Tree, page: number, subpage: number): Promise<Leaf[]> {
  const prefix = Keys.leafPrefix(tree, page, subpage);
  const out: Leaf[] = [];
  for await (const [k, v] of view.iterate({ gte: prefix, lt: dirEnd(prefix) })) out.push({ key: k.slice(prefix.length), valueHash: v });
  return out;
}

/** Every key in a physical range, without their values' meaning. */
export async function* keysIn(view: ReadView, prefix: string): AsyncIterable<string> {
  for await (const [k] of view.iterate({ gte: prefix, lt: prefix.endsWith('/') ? dirEnd(prefix) : prefixEnd(prefix) })) yield k;
}

/** One batch under construction: data ops with their Merkle updates, plus any other physical ops. */
export class BatchPlan {
  private readonly writes = new Map<string, BatchOp>();
  /** Leaf key -> value hash as of the ops planned so far (undefined: no leaf). */
  private readonly leaves = new Map<string, Buffer | undefined>();
  private readonly locs = new Map<string, Location>();
  private readonly updates: { 1: TreeUpdate; 2: TreeUpdate };
  /** The logical data ops planned so far, in order (the engine's read cache follows them). */
  readonly dataOps: WalOp[] = [];

  /** `reuse`: page blocks to copy into before allocating (TreeUpdate). */
  constructor(
    private readonly view: ReadView,
    private readonly base: Trees,
    reuse?: () => Buffer | undefined,
  ) {
    this.updates = { 1: new TreeUpdate(base[1], reuse), 2: new TreeUpdate(base[2], reuse) };
  }

  private leafKey(tree: Tree, key: string): { loc: Location; leafKey: string } {
    let loc = this.locs.get(key);
    if (loc === undefined) {
      loc = locate(key);
      this.locs.set(key, loc);
    }
    return { loc, leafKey: Keys.leaf(tree, loc, key) };
  }

  /** Reads the current leaves of `keys` in parallel (one getMany on LevelDB), so `data` rarely waits on storage. */
  async prefetch(keys: Iterable<string>): Promise<void> {
    const wanted = new Set<string>();
    for (const key of keys) {
      const tree = treeOf(classify(key));
      if (tree === undefined) continue;
      const { leafKey } = this.leafKey(tree, key);
      if (!this.leaves.has(leafKey)) wanted.add(leafKey);
    }
    const leafKeys = [...wanted];
    // One round trip where the view can (PostgreSQL); else every read at once.
    const view = this.view;
    const values = view.getMany !== undefined && leafKeys.length > 1 ? await view.getMany(leafKeys) : await Promise.all(leafKeys.map((k) => view.get(k)));
    leafKeys.forEach((k, i) => {
      if (!this.leaves.has(k)) this.leaves.set(k, values[i]);
    });
  }

  /** A logical op carrying ciphertext: the value write and, for tree classes, its leaf update. */
  async data(op: WalOp): Promise<void> {
    this.dataOps.push(op);
    const vkey = Keys.value(op.key);
    this.writes.set(vkey, op.type === 'put' ? { type: 'put', key: vkey, value: op.value } : { type: 'del', key: vkey });
    const tree = treeOf(classify(op.key));
    if (tree === undefined) return;
    const { loc, leafKey } = this.leafKey(tree, op.key);
    const old = this.leaves.has(leafKey) ? this.leaves.get(leafKey) : await this.view.get(leafKey);
    const upd = this.updates[tree];
    if (old !== undefined) upd.toggle(loc, leafHash(op.key, old));
    if (op.type === 'put') {
      const vh = valueHash(op.value);
      upd.toggle(loc, leafHash(op.key, vh));
      this.leaves.set(leafKey, vh);
      this.writes.set(leafKey, { type: 'put', key: leafKey, value: vh });
    } else {
      this.leaves.set(leafKey, undefined);
      this.writes.set(leafKey, { type: 'del', key: leafKey });
    }
  }

  /** Any other physical write; a later write to the same key replaces an earlier one. */
  raw(op: BatchOp): void {
    this.writes.set(op.key, op);
  }

  /**
   * The new trees and every op of the batch. The roots of changed trees are always written. With
   * `flush`, so are the records of every page dirty before (`dirty`) or touched now, and the
   * journal goes; without, the touched pages join the journal. Returns the pages left dirty.
   */
  finish(dirty: DirtyPages, flush: boolean): { trees: Trees; ops: BatchOp[]; bytes: number; dirty: DirtyPages; pages: number } {
    const trees: Trees = { 1: this.updates[1].finish(), 2: this.updates[2].finish() };
    const ops = [...this.writes.values()];
    const next = { 1: new Set(dirty[1]), 2: new Set(dirty[2]) };
    let changed = false;
    for (const t of TREES) {
      const touched = this.updates[t].dirtyPages();
      if (touched.length === 0) continue;
      changed = true;
      for (const p of touched) next[t].add(p);
      ops.push(rootOp(t, trees[t]));
    }
    if (changed) ops.push({ type: 'put', key: Keys.compositeRoot, value: compositeOf(trees) });
    let left: DirtyPages = next;
    let pages = 0;
    if (flush) {
      const before = ops.length;
      ops.push(...pageOps(1, trees[1], next[1]), ...pageOps(2, trees[2], next[2]));
      pages = ops.length - before;
      // The journal exists exactly when something was dirty before this batch.
      if (!isClean(dirty)) ops.push({ type: 'del', key: Keys.dirtyPages });
      left = noDirtyPages();
    } else if (next[1].size !== dirty[1].size || next[2].size !== dirty[2].size) {
      ops.push({ type: 'put', key: Keys.dirtyPages, value: encodeDirty(next) });
    }
    const bytes = ops.reduce((n, op) => n + Buffer.byteLength(op.key) + (op.type === 'put' ? op.value.length : 0), 0);
    return { trees, ops, bytes, dirty: left, pages };
  }
}
