/**
 * Merkle index math, pure. Each subtree (1 replicated, 2 local) has 256 pages x 256 subpages; a
 * key's SHA-256 picks its page (byte 0) and subpage (byte 1).
 *
 *   const { page, subpage } = locate('sys/policy/ops');
 *   const upd = new TreeUpdate(state);
 *   upd.toggle({ page, subpage }, leafHash(key, oldValueHash));   // old leaf out
 *   upd.toggle({ page, subpage }, leafHash(key, newValueHash));   // new leaf in
 *   const next = upd.finish();                                    // `state` is left as it was
 *
 * A subpage hash is the XOR of its leaf hashes (all zero when empty). XOR is its own inverse and
 * commutative, so a write costs O(1) (XOR the old leaf out, the new one in) however many keys share
 * the subpage, and the order of ops inside a batch cannot change the result. Leaf hashes are
 * SHA-256 outputs, so no structured set of leaves cancels out.
 * page hash = SHA-256(256 subpage hashes); subtree root = SHA-256(256 page hashes);
 * composite root = SHA-256(root1 || root2).
 */
import { hash } from 'node:crypto';

export const HASH_LEN = 32;
export const PAGES = 256;
export const SUBPAGES = 256;
/** Bytes of one page's subpage hashes. */
export const PAGE_BYTES = SUBPAGES * HASH_LEN;

export type Tree = 1 | 2;
export const TREES: readonly Tree[] = [1, 2];
export const TreeType = { 1: 'replicated', 2: 'local' } as const;
export type TreeType = (typeof TreeType)[Tree];

export interface Location {
  readonly page: number;
  readonly subpage: number;
}

/**
 * SHA-256 of the parts' concatenation, one-shot (no Hash object): a few parts of a few hashes
 * (a composite root) cost less copied together than streamed through a Hash.
 */
export function sha256(...parts: readonly Uint8Array[]): Buffer {
  return hash('sha256', parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts), 'buffer');
}

export function locate(key: string): Location {
  const d = hash('sha256', key, 'buffer');
  return { page: d[0] ?? 0, subpage: d[1] ?? 0 };
}

/** The value hash of a stored value: SHA-256 of its ciphertext, so it is equal on every replica. */
export function valueHash(ciphertext: Uint8Array): Buffer {
  return sha256(ciphertext);
}

/** SHA-256(u32 big-endian byte length of key || key || valueHash). */
export function leafHash(key: string, vh: Uint8Array): Buffer {
  const keyLen = Buffer.byteLength(key, 'utf8');
  const input = Buffer.allocUnsafe(4 + keyLen + vh.length);
  input.writeUInt32BE(keyLen, 0);
  input.write(key, 4, keyLen, 'utf8');
  input.set(vh, 4 + keyLen);
  return hash('sha256', input, 'buffer');
}

/** XORs `src` into `target` at `offset`, in place. */
export function xorInto(target: Buffer, src: Uint8Array, offset = 0): void {
  for (let i = 0; i < src.length; i++) {
    const at = offset + i;
    target[at] = (target[at] ?? 0) ^ (src[i] ?? 0);
  }
}

/** XOR of the given leaf hashes. */
export function subpageHash(leaves: readonly Uint8Array[]): Buffer {
  const out = Buffer.alloc(HASH_LEN);
  for (const l of leaves) xorInto(out, l);
  return out;
}

/** Hash of a page from its PAGE_BYTES of subpage hashes. */
export function pageHash(subpages: Uint8Array): Buffer {
  return sha256(subpages);
}

export function subtreeRoot(pageHashes: readonly Uint8Array[]): Buffer {
  return hash('sha256', Buffer.concat(pageHashes), 'buffer');
}

export function compositeRoot(root1: Uint8Array, root2: Uint8Array): Buffer {
  return sha256(root1, root2);
}

/** The i-th subpage hash of a page's subpage block (a copy). */
export function subpageAt(page: Uint8Array, subpage: number): Buffer {
  return Buffer.from(page.subarray(subpage * HASH_LEN, (subpage + 1) * HASH_LEN));
}

/**
 * A stored page record: the 256 subpage hashes followed by the page hash. The trailing page hash
 * lets a check tell a damaged page hash from damaged subpage hashes.
 */
export function encodePageRecord(subpages: Uint8Array, hash: Uint8Array): Buffer {
  return Buffer.concat([subpages, hash]);
}

/** undefined when the record has the wrong length. */
export function decodePageRecord(rec: Uint8Array): { subpages: Buffer; hash: Buffer } | undefined {
  if (rec.length !== PAGE_BYTES + HASH_LEN) return undefined;
  const b = Buffer.from(rec);
  return { subpages: b.subarray(0, PAGE_BYTES), hash: b.subarray(PAGE_BYTES) };
}

/**
 * One subtree in memory. Treated as immutable: TreeUpdate copies the pages it touches, so a state
 * handed to a pinned snapshot never changes underneath it.
 */
export interface TreeState {
  /** PAGES blocks of PAGE_BYTES subpage hashes. */
  readonly pages: readonly Buffer[];
  readonly pageHashes: readonly Buffer[];
  readonly root: Buffer;
}

/** A state from page blocks (missing entries are empty pages). */
export function treeFromPages(pages: ReadonlyArray<Buffer | undefined>): TreeState {
  const blocks: Buffer[] = [];
  const hashes: Buffer[] = [];
  for (let p = 0; p < PAGES; p++) {
    const block = pages[p] ?? Buffer.alloc(PAGE_BYTES);
    blocks.push(block);
    hashes.push(pageHash(block));
  }
  return { pages: blocks, pageHashes: hashes, root: subtreeRoot(hashes) };
}

export function emptyTree(): TreeState {
  return treeFromPages([]);
}

/** Copy-on-write update of one subtree. */
export class TreeUpdate {
  private readonly touched = new Map<number, Buffer>();

  /**
   * `reuse`, when given, may return a PAGE_BYTES block nothing references any more, which a copy
   * then overwrites whole (storage/page-blocks.ts); without one, or when it has none, a copy is a
   * new allocation.
   */
  constructor(
    private readonly base: TreeState,
    private readonly reuse?: () => Buffer | undefined,
  ) {}

  /** XORs a leaf hash in or out of its subpage (the same call does both). */
  toggle(loc: Location, leaf: Uint8Array): void {
    let block = this.touched.get(loc.page);
    if (block === undefined) {
      const base = this.base.pages[loc.page];
      if (base === undefined) block = Buffer.alloc(PAGE_BYTES);
      else {
        block = this.reuse?.() ?? Buffer.allocUnsafeSlow(PAGE_BYTES);
        block.set(base);
      }
      this.touched.set(loc.page, block);
    }
    xorInto(block, leaf, loc.subpage * HASH_LEN);
  }

  /** Pages whose blocks this update copied, ascending. */
  dirtyPages(): number[] {
    return [...this.touched.keys()].sort((a, b) => a - b);
  }

  finish(): TreeState {
    if (this.touched.size === 0) return this.base;
    const pages = [...this.base.pages];
    const pageHashes = [...this.base.pageHashes];
    for (const [p, block] of this.touched) {
      pages[p] = block;
      pageHashes[p] = pageHash(block);
    }
    return { pages, pageHashes, root: subtreeRoot(pageHashes) };
  }
}

/** What a page/subpage check found; only pages with a finding appear. */
export interface PageFinding {
  /** The page hash itself disagrees with the one recomputed from data. */
  readonly corrupted: boolean;
  readonly subpages: number[];
}

export interface SubtreeReport {
  readonly treeType: TreeType;
  /** The root recomputed from the stored data. */
  readonly rootHash: Buffer;
  readonly corruptedSubtreeRoot: boolean;
  readonly corruptedPages: Map<number, PageFinding>;
}

export interface CorruptionReport {
  readonly corruptedRoot: boolean;
  readonly trees: { readonly 1: SubtreeReport; readonly 2: SubtreeReport };
}

export function reportIsClean(r: CorruptionReport): boolean {
  return !r.corruptedRoot && TREES.every((t) => !r.trees[t].corruptedSubtreeRoot && r.trees[t].corruptedPages.size === 0);
}
