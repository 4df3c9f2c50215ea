/**
 * Read access to the Merkle index, live or pinned: what merkle-diff walks (roots, then page hashes,
 * then subpage hashes of differing pages, then the leaves of differing subpages) and what
 * merkle-sync fetches (the ciphertext of the conflicting keys).
 *
 *   const snap = await engine.snapshot();          // primary: pinned at snap.guard
 *   try { if (!snap.merkleRoot().equals(theirs)) snap.pageHashes(1) ... } finally { await snap.close(); }
 *
 * Hashes come from in-memory trees, which are copy-on-write: a pinned snapshot keeps the trees of
 * its moment while commits continue, and its backend snapshot keeps the matching leaves and values.
 */
import { subpageAt, SUBPAGES, type Tree, type TreeState } from '../core/merkle.js';
import type { Guard } from '../core/wal.js';
import type { ReadView, Snapshot } from './backend.js';
import { Keys, dirEnd } from './keyspace.js';
import { compositeOf, readLeaves, type Leaf, type Trees } from './merkle-store.js';

export interface MerkleView {
  merkleRoot(): Buffer;
  subtreeRoot(tree: Tree): Buffer;
  /** 256 page hashes. */
  pageHashes(tree: Tree): Buffer[];
  /** 256 subpage hashes of one page. */
  subpageHashes(tree: Tree, page: number): Buffer[];
  leaves(tree: Tree, page: number, subpage: number): Promise<Leaf[]>;
  /** The ciphertext of a logical key. */
  readRaw(key: string): Promise<Buffer | undefined>;
}

export const treeHashes = {
  merkleRoot: (trees: Trees): Buffer => compositeOf(trees),
  subtreeRoot: (trees: Trees, tree: Tree): Buffer => Buffer.from(trees[tree].root),
  pageHashes: (trees: Trees, tree: Tree): Buffer[] => trees[tree].pageHashes.map((h) => Buffer.from(h)),
  subpageHashes: (trees: Trees, tree: Tree, page: number): Buffer[] => {
    const block = trees[tree].pages[page];
    if (block === undefined) throw new RangeError(`page ${page} out of range`);
    return Array.from({ length: SUBPAGES }, (_, s) => subpageAt(block, s));
  },
};

export function readValue(view: ReadView, key: string): Promise<Buffer | undefined> {
  return view.get(Keys.value(key));
}

/** The index and data as of one WAL guard; must be closed. */
export class PinnedSnapshot implements MerkleView {
  constructor(
    private readonly view: Snapshot,
    private readonly trees: Trees,
    readonly guard: Guard,
  ) {}

  merkleRoot(): Buffer {
    return treeHashes.merkleRoot(this.trees);
  }
  subtreeRoot(tree: Tree): Buffer {
    return treeHashes.subtreeRoot(this.trees, tree);
  }
  pageHashes(tree: Tree): Buffer[] {
    return treeHashes.pageHashes(this.trees, tree);
  }
  subpageHashes(tree: Tree, page: number): Buffer[] {
    return treeHashes.subpageHashes(this.trees, tree, page);
  }
  leaves(tree: Tree, page: number, subpage: number): Promise<Leaf[]> {
    return readLeaves(this.view, tree, page, subpage);
  }
  readRaw(key: string): Promise<Buffer | undefined> {
    return readValue(this.view, key);
  }
  /** The in-memory tree of the snapshot's moment (copy-on-write: never changed by later commits). */
  tree(tree: Tree): TreeState {
    return this.trees[tree];
  }
  /** Every leaf of one subtree as of the snapshot, in key order of the leaf index (a filtered view is built from these). */
  async *allLeaves(tree: Tree): AsyncIterable<Leaf> {
    const prefix = Keys.leafPrefix(tree);
    for await (const [k, v] of this.view.iterate({ gte: prefix, lt: dirEnd(prefix) })) {
      // m/<tree>/l/<pppp>/<key>: the logical key follows the 4 hex digits and a slash.
      yield { key: k.slice(prefix.length + 5), valueHash: v };
    }
  }
  close(): Promise<void> {
    return this.view.close();
  }
}
