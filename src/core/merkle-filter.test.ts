/** Filtered Merkle hashes: removing denied leaves equals building from the allowed ones alone. */
import fc from 'fast-check';
import { emptyTree, locate, subpageAt, valueHash } from './merkle.js';
import { filteredSubpageHash, treeOfLeaves, withoutLeaves, type LeafOf } from './merkle-filter.js';

const leafSet = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { maxLength: 40 }).chain((keys) =>
  fc.tuple(
    fc.constant(keys.map((key): LeafOf => ({ key, valueHash: valueHash(Buffer.from(`v:${key}`)) }))),
    fc.func(fc.boolean()),
  ),
);

describe('filtered Merkle hashes', () => {
  it('withoutLeaves(tree of all, denied) is the tree of the allowed leaves, and leaves the base untouched', () => {
    fc.assert(
      fc.property(leafSet, ([leaves, allowedFn]) => {
        const allowed = (k: string): boolean => allowedFn(k);
        const all = treeOfLeaves(leaves);
        const rootBefore = Buffer.from(all.root);
        const filtered = withoutLeaves(all, leaves.filter((l) => !allowed(l.key)));
        const direct = treeOfLeaves(leaves.filter((l) => allowed(l.key)));
        expect(filtered.root.equals(direct.root)).toBe(true);
        expect(filtered.pageHashes.every((h, p) => h.equals(direct.pageHashes[p]!))).toBe(true);
        expect(all.root.equals(rootBefore)).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('a subpage hash from its leaves matches the filtered tree at that subpage', () => {
    fc.assert(
      fc.property(leafSet, ([leaves, allowedFn]) => {
        const allowed = (k: string): boolean => allowedFn(k);
        const filtered = treeOfLeaves(leaves.filter((l) => allowed(l.key)));
        for (const l of leaves) {
          const { page, subpage } = locate(l.key);
          const here = leaves.filter((x) => {
            const loc = locate(x.key);
            return loc.page === page && loc.subpage === subpage;
          });
          expect(filteredSubpageHash(here, allowed).equals(subpageAt(filtered.pages[page]!, subpage))).toBe(true);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('denying every leaf gives the empty tree; denying none changes nothing', () => {
    const leaves: LeafOf[] = ['a', 'b', 'logical/u/x'].map((key) => ({ key, valueHash: valueHash(Buffer.from(key)) }));
    const all = treeOfLeaves(leaves);
    expect(withoutLeaves(all, leaves).root.equals(emptyTree().root)).toBe(true);
    expect(withoutLeaves(all, [])).toBe(all);
    expect(all.root.equals(emptyTree().root)).toBe(false);
  });
});
