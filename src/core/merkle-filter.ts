/**
 * Merkle hashes of a filtered view of one subtree, pure: what a primary serves a performance
 * secondary whose paths filter hides some keys. The secondary's own tree holds only the keys it
 * was allowed, so the hashes it is compared with must be computed over allowed leaves only.
 *
 *   const filtered = withoutLeaves(snapshotTree, deniedLeaves);   // XOR each denied leaf out
 *   filtered.root; filtered.pageHashes[p]; subpageAt(filtered.pages[p], s);
 *   filteredSubpageHash(leavesOfSubpage, kf.keyAllowed);        // one subpage, from its leaves
 *
 * Subpage hashes are XORs of leaf hashes (merkle.ts), so removing k leaves costs O(k) plus one
 * page hash per touched page, and the result equals a tree built from the allowed leaves alone.
 */
import { TreeUpdate, emptyTree, leafHash, locate, subpageHash, type TreeState } from './merkle.js';

export interface LeafOf {
  readonly key: string;
  /** SHA-256 of the stored ciphertext (valueHash in merkle.ts). */
  readonly valueHash: Uint8Array;
}

/** `base` with every leaf in `leaves` XORed out; `base` is not changed. Each leaf must be in `base`. */
export function withoutLeaves(base: TreeState, leaves: Iterable<LeafOf>): TreeState {
  const upd = new TreeUpdate(base);
  for (const l of leaves) upd.toggle(locate(l.key), leafHash(l.key, l.valueHash));
  return upd.finish();
}

/** The tree of exactly `leaves` (each key at most once). */
export function treeOfLeaves(leaves: Iterable<LeafOf>): TreeState {
  return withoutLeaves(emptyTree(), leaves); // XOR into the empty tree adds them
}

/** One subpage's hash over the leaves `allowed` admits (its leaves as the leaf index stores them). */
export function filteredSubpageHash(leaves: readonly LeafOf[], allowed: (key: string) => boolean): Buffer {
  return subpageHash(leaves.filter((l) => allowed(l.key)).map((l) => leafHash(l.key, l.valueHash)));
}
