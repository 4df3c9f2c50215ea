/**
 * What a performance primary serves one filtered secondary, beside the plain snapshot: the source
 * of each secondary's paths filter (paths-filters.ts), and a pinned snapshot as that secondary
 * sees it: tree 1 with the leaves its filter denies XORed out, so the hashes it is compared with
 * cover exactly the keys it may hold (src/core/merkle-filter.ts).
 *
 *   const filter = await filteredView(snap, source, 'east');   // undefined: no filter
 *   treeHashes.pageHashes(servedTrees(snap, filter), 1);
 *
 * Building the view reads every leaf of tree 1 once per snapshot opened (a reconcile), O(keys).
 */
import { compositeRoot, type TreeState } from '../core/merkle.js';
import { withoutLeaves, type LeafOf } from '../core/merkle-filter.js';
import type { DynamicFilter, KeyFilter } from '../core/paths-filter.js';
import type { WalEntry } from '../core/wal.js';
import type { PinnedSnapshot } from '../storage/merkle-view.js';
import { DYNAMIC_FILTER_KEY } from './applier.js';

/** Where a performance primary's paths filters come from; read per stream, catalog change and snapshot. */
export interface FilterSource {
  /** The key filter of one secondary over the catalog as of now; undefined when it has none. */
  keyFilter(secondaryId: string): Promise<KeyFilter | undefined>;
  /** What the filter of one secondary excludes now (the secondary keeps it for its own dynamic-filter endpoint). */
  dynamicFor(secondaryId: string): Promise<DynamicFilter>;
}

export interface FilteredView {
  readonly keys: KeyFilter;
  /** Tree 1 of the snapshot over the allowed leaves only. */
  readonly tree1: TreeState;
  /** The dynamic filter as of the snapshot (served with it, for the secondary to keep). */
  readonly dynamic: DynamicFilter;
}

/**
 * The view of `snap` for `secondaryId`, or undefined when it has no filter. The catalog is read
 * after pinning: a mount removed since is judged unknown, so its keys are left out, as the
 * stream's deletes will remove them anyway.
 */
export async function filteredView(snap: PinnedSnapshot, source: FilterSource, secondaryId: string): Promise<FilteredView | undefined> {
  const keys = await source.keyFilter(secondaryId);
  if (keys === undefined) return undefined;
  const denied: LeafOf[] = [];
  for await (const l of snap.allLeaves(1)) if (!keys.keyAllowed(l.key)) denied.push(l);
  return { keys, tree1: withoutLeaves(snap.tree(1), denied), dynamic: await source.dynamicFor(secondaryId) };
}

/** The trees `snap` is served as: its own, with tree 1 filtered when there is a view. */
export function servedTrees(snap: PinnedSnapshot, view: FilteredView | undefined): { 1: TreeState; 2: TreeState } {
  return { 1: view ? view.tree1 : snap.tree(1), 2: snap.tree(2) };
}

/** The composite root `snap` is served with. */
export function servedRoot(snap: PinnedSnapshot, view: FilteredView | undefined): Buffer {
  return view ? compositeRoot(view.tree1.root, snap.tree(2).root) : snap.merkleRoot();
}

/** Each entry with only the ops the kind's classes (`admits`) and the filter (`kf`, opAllowed) let through; no entry is dropped. */
export function filterEntries(entries: readonly WalEntry[], admits: (key: string) => boolean, kf: KeyFilter | undefined): WalEntry[] {
  const admitted = (op: WalEntry['ops'][number]): boolean => admits(op.key) && (kf === undefined || kf.opAllowed(op));
  return entries.map((e) => (e.ops.every(admitted) ? e : { ...e, ops: e.ops.filter(admitted) }));
}

/** Appends `dynamic` to the last of `served` as a put of DYNAMIC_FILTER_KEY (a node-class record the secondary keeps). */
export function withDynamicFilter(served: WalEntry[], dynamic: DynamicFilter): void {
  const last = served.at(-1);
  if (!last) return;
  served[served.length - 1] = { ...last, ops: [...last.ops, { type: 'put', key: DYNAMIC_FILTER_KEY, value: Buffer.from(JSON.stringify(dynamic)) }] };
}
