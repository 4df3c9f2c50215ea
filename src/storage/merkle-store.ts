/**
 * The Merkle index in storage: loading page records, and planning one batch's data writes with
 * their leaf, page and root updates.
 *
 *   const plan = new BatchPlan(backend, trees);
 *   await plan.data({ type: 'put', key: 'sys/x', value: ciphertext });
 *   const { trees: next, ops } = plan.finish();      // `trees` is unchanged until the caller swaps
 *
 * Leaves are read from storage (overlaid by earlier ops of the same plan), so two transactions in
 * one batch that touch the same key compose: the second XORs out the leaf the first put in.
 */
import {
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
  type Location,
  type Tree,
  type TreeState,
} from '../core/merkle.js';
import type { WalOp } from '../core/wal.js';
import { prefixEnd, type BatchOp, type ReadView } from './backend.js';
import { Keys, classify, dirEnd, treeOf } from './keyspace.js';

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

export function compositeOf(trees: Trees): Buffer {
  return compositeRoot(trees[1].root, trees[2].root);
}

/** In-memory trees from the stored page records. A malformed record loads as an empty page; check() reports it. */
export async function loadTrees(view: ReadView): Promise<Trees> {
  const load = async (tree: Tree): Promise<TreeState> => {
    const pages: Array<Buffer | undefined> = [];
    const prefix = Keys.pagePrefix(tree);
    for await (const [k, v] of view.iterate({ gte: prefix, lt: dirEnd(prefix) })) {
      const rec = decodePageRecord(v);
      if (rec !== undefined) pages[parseInt(k.slice(prefix.length), 16)] = rec.subpages;
    }
    return treeFromPages(pages);
  };
  return { 1: await load(1), 2: await load(2) };
}

/** Page records of `pages` and the subtree root, from `state`. */
export function treeOps(tree: Tree, state: TreeState, pages: Iterable<number>): BatchOp[] {
  const ops: BatchOp[] = [];
  for (const p of pages) {
    const block = state.pages[p];
    const hash = state.pageHashes[p];
    if (block !== undefined && hash !== undefined) ops.push({ type: 'put', key: Keys.page(tree, p), value: encodePageRecord(block, hash) });
  }
  ops.push({ type: 'put', key: Keys.treeRoot(tree), value: Buffer.from(state.root) });
  return ops;
}

/** Every page record and root: a full flush of the in-memory index. */
export function flushOps(trees: Trees): BatchOp[] {
  const all = [...Array(256).keys()];
  return [...treeOps(1, trees[1], all), ...treeOps(2, trees[2], all), { type: 'put', key: Keys.compositeRoot, value: compositeOf(trees) }];
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
  dataOps = 0;

  constructor(
    private readonly view: ReadView,
    private readonly base: Trees,
  ) {
    this.updates = { 1: new TreeUpdate(base[1]), 2: new TreeUpdate(base[2]) };
  }

  private leafKey(tree: Tree, key: string): { loc: Location; leafKey: string } {
    let loc = this.locs.get(key);
    if (loc === undefined) {
      loc = locate(key);
      this.locs.set(key, loc);
    }
    return { loc, leafKey: Keys.leaf(tree, loc, key) };
  }

  /** Reads the current leaves of `keys` in parallel, so `data` rarely waits on storage. */
  async prefetch(keys: Iterable<string>): Promise<void> {
    const wanted = new Set<string>();
    for (const key of keys) {
      const tree = treeOf(classify(key));
      if (tree === undefined) continue;
      const { leafKey } = this.leafKey(tree, key);
      if (!this.leaves.has(leafKey)) wanted.add(leafKey);
    }
    const got = await Promise.all([...wanted].map(async (k) => [k, await this.view.get(k)] as const));
    for (const [k, v] of got) if (!this.leaves.has(k)) this.leaves.set(k, v);
  }

  /** A logical op carrying ciphertext: the value write and, for tree classes, its leaf update. */
  async data(op: WalOp): Promise<void> {
    this.dataOps++;
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

  /** The new trees and every op of the batch, page records and roots included. */
  finish(): { trees: Trees; ops: BatchOp[]; bytes: number } {
    const trees: Trees = { 1: this.updates[1].finish(), 2: this.updates[2].finish() };
    const ops = [...this.writes.values()];
    let changed = false;
    for (const t of TREES) {
      const dirty = this.updates[t].dirtyPages();
      if (dirty.length === 0) continue;
      changed = true;
      ops.push(...treeOps(t, trees[t], dirty));
    }
    if (changed) ops.push({ type: 'put', key: Keys.compositeRoot, value: compositeOf(trees) });
    const bytes = ops.reduce((n, op) => n + Buffer.byteLength(op.key) + (op.type === 'put' ? op.value.length : 0), 0);
    return { trees, ops, bytes };
  }
}
