import { createHash } from 'node:crypto';
import fc from 'fast-check';
import {
  PAGE_BYTES,
  TreeUpdate,
  compositeRoot,
  decodePageRecord,
  emptyTree,
  encodePageRecord,
  leafHash,
  locate,
  pageHash,
  subpageAt,
  subpageHash,
  subtreeRoot,
  treeFromPages,
  valueHash,
} from './merkle.js';

const sha = (...parts: Buffer[]): Buffer => createHash('sha256').update(Buffer.concat(parts)).digest();

/** The tree of a key -> value map, computed from scratch. */
function recompute(data: Map<string, Buffer>) {
  const leaves = new Map<string, Buffer[]>();
  for (const [k, v] of data) {
    const { page, subpage } = locate(k);
    const id = `${page}/${subpage}`;
    leaves.set(id, [...(leaves.get(id) ?? []), leafHash(k, valueHash(v))]);
  }
  const pages: Buffer[] = [];
  for (let p = 0; p < 256; p++) {
    const block = Buffer.alloc(PAGE_BYTES);
    for (let s = 0; s < 256; s++) subpageHash(leaves.get(`${p}/${s}`) ?? []).copy(block, s * 32);
    pages.push(block);
  }
  return treeFromPages(pages);
}

describe('merkle math', () => {
  it('locates a key by bytes 0 and 1 of its SHA-256', () => {
    const d = sha(Buffer.from('sys/policy/ops'));
    expect(locate('sys/policy/ops')).toEqual({ page: d[0], subpage: d[1] });
  });

  it('hashes a leaf as SHA-256(u32 len || key || value hash)', () => {
    const vh = valueHash(Buffer.from('ct'));
    const key = Buffer.from('héllo');
    const len = Buffer.alloc(4);
    len.writeUInt32BE(key.length); // bytes, not characters
    expect(leafHash('héllo', vh)).toEqual(sha(len, key, vh));
    expect(leafHash('a', vh)).not.toEqual(leafHash('b', vh));
  });

  it('builds page, subtree and composite roots from SHA-256 of the level below', () => {
    const tree = emptyTree();
    expect(tree.pageHashes[0]).toEqual(sha(Buffer.alloc(PAGE_BYTES)));
    expect(tree.root).toEqual(sha(...tree.pageHashes));
    expect(compositeRoot(tree.root, tree.root)).toEqual(sha(tree.root, tree.root));
    expect(subtreeRoot(tree.pageHashes)).toEqual(tree.root);
  });

  it('subpage hash is the XOR of its leaves, zero when empty, independent of order', () => {
    const a = leafHash('a', valueHash(Buffer.from('1')));
    const b = leafHash('b', valueHash(Buffer.from('2')));
    expect(subpageHash([])).toEqual(Buffer.alloc(32));
    expect(subpageHash([a, b])).toEqual(subpageHash([b, a]));
    expect(subpageHash([a, b, b])).toEqual(a);
  });

  it('incremental XOR updates equal a recompute from scratch (property)', () => {
    const op = fc.record({ key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'x/y', 'ü'), value: fc.option(fc.uint8Array({ maxLength: 8 })) });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const data = new Map<string, Buffer>();
        let state = emptyTree();
        for (const { key, value } of ops) {
          const upd = new TreeUpdate(state);
          const loc = locate(key);
          const old = data.get(key);
          if (old !== undefined) upd.toggle(loc, leafHash(key, valueHash(old)));
          if (value === null) data.delete(key);
          else {
            data.set(key, Buffer.from(value));
            upd.toggle(loc, leafHash(key, valueHash(Buffer.from(value))));
          }
          state = upd.finish();
        }
        const fresh = recompute(data);
        expect(state.root).toEqual(fresh.root);
        expect(state.pageHashes).toEqual(fresh.pageHashes);
      }),
      { numRuns: 100 },
    );
  });

  it('TreeUpdate is copy-on-write: the base state is unchanged', () => {
    const base = emptyTree();
    const before = Buffer.from(base.root);
    const upd = new TreeUpdate(base);
    const loc = locate('k');
    upd.toggle(loc, leafHash('k', valueHash(Buffer.from('v'))));
    const next = upd.finish();
    expect(base.root).toEqual(before);
    expect(base.pages[loc.page]).toEqual(Buffer.alloc(PAGE_BYTES));
    expect(next.root).not.toEqual(before);
    expect(upd.dirtyPages()).toEqual([loc.page]);
    expect(subpageAt(next.pages[loc.page]!, loc.subpage)).toEqual(leafHash('k', valueHash(Buffer.from('v'))));
  });

  it('page records round-trip and reject a wrong length', () => {
    const block = Buffer.alloc(PAGE_BYTES, 7);
    const rec = encodePageRecord(block, pageHash(block));
    expect(decodePageRecord(rec)).toEqual({ subpages: block, hash: pageHash(block) });
    expect(decodePageRecord(rec.subarray(1))).toBeUndefined();
  });
});
