/**
 * The Merkle side of a primary (moved out of primary-service.ts): the pinned snapshots its
 * secondaries reconcile against, and the hashes, leaves and values of each as that secondary is
 * served it (its kind's classes, narrowed by its paths filter). A snapshot belongs to the
 * secondary that opened it; one secondary holds at most MAX_OPEN_SNAPSHOTS, and an abandoned one
 * closes after ten minutes. While a secondary reconciles, the WAL from its snapshot's guard on is
 * held for it (catch-up-holds.ts), so it can stream from there once synced.
 *
 *   const snapshots = new ReconcileSnapshots({ engine, holds, policy, policyWith, filters });
 *   const info = await snapshots.open(peer);                 // PrimaryService.openSnapshot
 *   await snapshots.leaves(peer, info.snapshotId, 1, 0, [0, 1]);
 */
import { randomUUID } from 'node:crypto';
import { InvalidRequest } from '../core/errors.js';
import type { Tree } from '../core/merkle.js';
import type { KeyFilter } from '../core/paths-filter.js';
import { treeHashes, type PinnedSnapshot } from '../storage/merkle-view.js';
import type { StorageEngine } from '../storage/engine.js';
import { DYNAMIC_FILTER_KEY } from './applier.js';
import type { CatchUpHolds } from './catch-up-holds.js';
import { filteredView, servedRoot, servedTrees, type FilteredView, type FilterSource } from './filtered-view.js';
import type { ServePolicy } from './serve-policy.js';
import type { KeyValue, LeafInfo, Peer, SnapshotInfo } from './transport.js';

/** How many pinned snapshots one secondary may hold open; opening another closes its oldest. */
export const MAX_OPEN_SNAPSHOTS = 2;

/** One secondary's pinned snapshot, and for a filtered secondary the view of it that it is served. */
interface OpenSnapshot {
  readonly snap: PinnedSnapshot;
  readonly owner: string;
  readonly timer: NodeJS.Timeout;
  readonly filter?: FilteredView;
}

export class ReconcileSnapshots {
  private readonly snapshots = new Map<string, OpenSnapshot>();

  constructor(
    private readonly o: {
      readonly engine: StorageEngine;
      readonly holds: CatchUpHolds;
      /** The kind's policy without a paths filter. */
      readonly policy: ServePolicy;
      /** The kind's policy narrowed by one secondary's key filter. */
      readonly policyWith: (kf: KeyFilter | undefined) => ServePolicy;
      /** The paths filters, where this kind applies them. */
      readonly filters: () => FilterSource | undefined;
    },
  ) {}

  async open(peer: Peer): Promise<SnapshotInfo> {
    // The secondary streams from the snapshot's guard once it has synced: keep those entries. Held
    // before the snapshot is taken (its guard can only be later), so commits during the pinning
    // and a filtered view's scan cannot trim them; then narrowed to the snapshot's own guard.
    this.o.holds.start(peer.secondaryId, this.o.engine.lastGuard().index + 1n);
    let snap: PinnedSnapshot | undefined;
    let filter: FilteredView | undefined;
    try {
      snap = await this.o.engine.snapshot();
      const filters = this.o.filters();
      if (filters) filter = await filteredView(snap, filters, peer.secondaryId);
    } catch (e) {
      this.o.holds.end(peer.secondaryId);
      await snap?.close();
      throw e;
    }
    this.o.holds.start(peer.secondaryId, snap.guard.index + 1n);
    // A secondary reconciles from one snapshot at a time: a new one supersedes its older ones past
    // the cap, so a secondary (or a holder of its certificate) cannot pin storage without bound.
    const owned = [...this.snapshots].filter(([, s]) => s.owner === peer.secondaryId).map(([sid]) => sid);
    for (const sid of owned.slice(0, Math.max(0, owned.length - (MAX_OPEN_SNAPSHOTS - 1)))) await this.close(peer, sid);
    const id = randomUUID();
    // A snapshot abandoned by a crashed secondary is closed after ten minutes.
    const timer = setTimeout(() => void this.close(peer, id), 600_000);
    timer.unref();
    this.snapshots.set(id, { snap, owner: peer.secondaryId, timer, ...(filter ? { filter } : {}) });
    // Roots of subtrees this kind does not replicate are not served (empty).
    const trees = servedTrees(snap, filter);
    const root = (tree: Tree): Buffer => (this.o.policy.servesTree(tree) ? Buffer.from(trees[tree].root) : Buffer.alloc(0));
    return { snapshotId: id, guard: snap.guard, root: servedRoot(snap, filter), subtreeRoots: [root(1), root(2)] };
  }

  private owned(peer: Peer, id: string): OpenSnapshot {
    const s = this.snapshots.get(id);
    if (!s || s.owner !== peer.secondaryId) throw new InvalidRequest(`unknown snapshot ${id.slice(0, 40)}`);
    return s;
  }

  /** Hashes of a snapshot as its secondary is served it (tree 1 filtered for a filtered one). */
  private hashesOf(peer: Peer, id: string, of: (trees: ReturnType<typeof servedTrees>) => Buffer[]): Buffer[] {
    const s = this.owned(peer, id);
    return of(servedTrees(s.snap, s.filter));
  }

  async close(_peer: Peer, snapshotId: string): Promise<void> {
    const s = this.snapshots.get(snapshotId);
    if (!s) return;
    this.snapshots.delete(snapshotId);
    clearTimeout(s.timer);
    await s.snap.close();
  }

  async pageHashes(peer: Peer, id: string, tree: 1 | 2): Promise<Buffer[]> {
    this.o.policy.admitTree(tree);
    return this.hashesOf(peer, id, (t) => treeHashes.pageHashes(t, tree));
  }

  async subpageHashes(peer: Peer, id: string, tree: 1 | 2, page: number): Promise<Buffer[]> {
    this.o.policy.admitTree(tree);
    return this.hashesOf(peer, id, (t) => treeHashes.subpageHashes(t, tree, page));
  }

  async leaves(peer: Peer, id: string, tree: 1 | 2, page: number, subpages: readonly number[]): Promise<LeafInfo[]> {
    this.o.policy.admitTree(tree);
    const s = this.owned(peer, id);
    const policy = this.o.policyWith(s.filter?.keys);
    const out: LeafInfo[] = [];
    for (const sp of subpages) for (const l of await s.snap.leaves(tree, page, sp)) if (policy.admits(l.key)) out.push({ key: l.key, valueHash: l.valueHash, subpage: sp });
    return out;
  }

  /**
   * The values of `keys` as of the snapshot. A performance secondary may also ask for
   * DYNAMIC_FILTER_KEY: its dynamic filter as of the snapshot (plaintext JSON, not stored here).
   */
  async fetchValues(peer: Peer, id: string, keys: readonly string[]): Promise<KeyValue[]> {
    const s = this.owned(peer, id);
    if (keys.length > 10_000) throw new InvalidRequest('at most 10000 keys per fetch');
    const dynamic = this.o.filters() ? (s.filter?.dynamic ?? { dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] }) : undefined;
    const data = dynamic ? keys.filter((k) => k !== DYNAMIC_FILTER_KEY) : keys;
    // All or nothing: one key outside the kind's classes (node class above all) refuses the call.
    this.o.policyWith(s.filter?.keys).admitKeys(data);
    return Promise.all(keys.map(async (key) => ({ key, value: dynamic && key === DYNAMIC_FILTER_KEY ? Buffer.from(JSON.stringify(dynamic)) : await s.snap.readRaw(key) })));
  }

  /** Closes every snapshot `owner` holds (revoked, or its token reissued). */
  forget(owner: string): void {
    for (const [sid, s] of this.snapshots) if (s.owner === owner) void this.close({ secondaryId: owner, fingerprint: '', address: '' }, sid);
  }

  async closeAll(): Promise<void> {
    for (const id of [...this.snapshots.keys()]) await this.close({ secondaryId: '', fingerprint: '', address: '' }, id);
  }
}
