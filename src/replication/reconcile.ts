/**
 * merkle-diff then merkle-sync (REPLICATION.md section 4), run by a secondary whose guard the
 * primary refused (a gap, or a divergent history after failover). It walks from the roots down
 * only where hashes differ, so its cost follows the difference, not the data set: one changed key
 * among a million costs a few kilobytes of hashes and one value.
 *
 *   const r = await reconcile({ client, engine, applier, secondaryId, onPhase, onProgress });
 *   r.fetched // keys whose values were fetched; r.deleted // keys removed
 *   r.bytes   // payload received from the primary: hashes, leaves, keys and values
 */
import type { Tree } from '../core/merkle.js';
import type { WalOp } from '../core/wal.js';
import type { StorageEngine } from '../storage/engine.js';
import type { Applier } from './applier.js';
import type { KeyValue, LeafInfo, PrimaryClient, SnapshotInfo } from './transport.js';

export interface ReconcileResult {
  readonly guard: SnapshotInfo['guard'];
  readonly fetched: number;
  readonly deleted: number;
  readonly comparedPages: number;
  /**
   * Payload bytes received from the primary: snapshot roots, page and subpage hashes, leaves (key
   * UTF-8 + value hash + a 4-byte subpage number), fetched keys and values. gRPC/TLS framing is
   * not counted; it is what makes "cost follows the difference" checkable (bench-scale.mjs).
   */
  readonly bytes: number;
}

export interface ReconcileOptions {
  readonly client: PrimaryClient;
  /** This node's Merkle index (local hashes and leaves). */
  readonly engine: StorageEngine;
  /** Writes what merkle-sync installs, and names the subtrees this kind reconciles. */
  readonly applier: Applier;
  readonly secondaryId: string;
  readonly onPhase?: (phase: 'merkle-diff' | 'merkle-sync') => void;
  readonly onProgress?: (p: { total: number; done: number }) => void;
  /** Keys fetched per call and per install chunk. */
  readonly chunk?: number;
  /**
   * Records outside the Merkle trees fetched from the same snapshot and installed with its guard
   * (a performance secondary's dynamic filter); not counted as fetched keys.
   */
  readonly alsoFetch?: readonly string[];
  /**
   * Called as soon as the sync's last step is durable, before the snapshot is released (a round
   * trip): the node makes the new data visible (caches) at once, so no read sees the installed
   * data through stale caches, e.g. a mount's keys gone while the mount is still served.
   */
  readonly onInstalled?: (guard: SnapshotInfo['guard']) => void;
}

const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8');
const hashBytes = (hs: readonly Buffer[]): number => hs.reduce((n, h) => n + h.length, 0);
const leafBytes = (ls: readonly LeafInfo[]): number => ls.reduce((n, l) => n + utf8(l.key) + l.valueHash.length + 4, 0);
const valueBytes = (kvs: readonly KeyValue[]): number => kvs.reduce((n, kv) => n + utf8(kv.key) + (kv.value?.length ?? 0), 0);
const snapshotBytes = (s: SnapshotInfo): number => s.root.length + hashBytes(s.subtreeRoots) + s.guard.hash.length + 8;

/** Counts what the primary sends back through it. */
class Received {
  bytes = 0;
  add<T>(value: T, size: (v: T) => number): T {
    this.bytes += size(value);
    return value;
  }
}

function differing(a: readonly Buffer[], b: readonly Buffer[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < a.length; i++) if (!(a[i] as Buffer).equals(b[i] as Buffer)) out.push(i);
  return out;
}

/** Pages compared at once: the diff is bound by round trips, not by either side's CPU. */
const PAGES_IN_FLIGHT = 16;

/** Conflicting keys of one differing page: present only on the primary, only here, or different. */
async function diffPage(o: ReconcileOptions, snap: SnapshotInfo, tree: Tree, page: number, rx: Received): Promise<{ fetch: string[]; remove: string[] }> {
  const fetch: string[] = [];
  const remove: string[] = [];
  const subs = differing(rx.add(await o.client.subpageHashes(snap.snapshotId, tree, page), hashBytes), o.engine.subpageHashes(tree, page));
  if (subs.length === 0) return { fetch, remove };
  const remote = new Map(rx.add(await o.client.leaves(snap.snapshotId, tree, page, subs), leafBytes).map((l) => [l.key, l.valueHash]));
  const local = new Map<string, Buffer>();
  for (const s of subs) for (const l of await o.engine.leaves(tree, page, s)) local.set(l.key, l.valueHash);
  for (const [key, hash] of remote) if (!local.get(key)?.equals(hash)) fetch.push(key);
  for (const key of local.keys()) if (!remote.has(key)) remove.push(key);
  return { fetch, remove };
}

/** Conflicting keys of one subtree, pages compared PAGES_IN_FLIGHT at a time, results in page order. */
async function diffTree(o: ReconcileOptions, snap: SnapshotInfo, tree: Tree, rx: Received): Promise<{ fetch: string[]; remove: string[]; pages: number }> {
  const fetch: string[] = [];
  const remove: string[] = [];
  if (o.engine.subtreeRoot(tree).equals(snap.subtreeRoots[tree - 1] as Buffer)) return { fetch, remove, pages: 0 };
  const pages = differing(rx.add(await o.client.pageHashes(snap.snapshotId, tree), hashBytes), o.engine.pageHashes(tree));
  const results: { fetch: string[]; remove: string[] }[] = new Array(pages.length);
  let nextPage = 0;
  const worker = async (): Promise<void> => {
    while (nextPage < pages.length) {
      const i = nextPage++;
      results[i] = await diffPage(o, snap, tree, pages[i] as number, rx);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PAGES_IN_FLIGHT, pages.length) }, worker));
  for (const r of results) {
    // Not push(...r.fetch): spreading many keys as arguments can overflow the stack.
    for (const k of r.fetch) fetch.push(k);
    for (const k of r.remove) remove.push(k);
  }
  return { fetch, remove, pages: pages.length };
}

export async function reconcile(o: ReconcileOptions): Promise<ReconcileResult> {
  const chunk = o.chunk ?? 1000;
  o.onPhase?.('merkle-diff');
  const rx = new Received();
  const snap = rx.add(await o.client.openSnapshot(o.secondaryId), snapshotBytes);
  try {
    const fetch: string[] = [];
    const remove: string[] = [];
    let comparedPages = 0;
    for (const tree of o.applier.trees) {
      const d = await diffTree(o, snap, tree, rx);
      // Not push(...d.fetch): spreading a million keys as arguments overflows the stack.
      for (const k of d.fetch) fetch.push(k);
      for (const k of d.remove) remove.push(k);
      comparedPages += d.pages;
    }
    o.onPhase?.('merkle-sync');
    const total = fetch.length + remove.length;
    let done = 0;
    o.onProgress?.({ total, done });
    let pending: WalOp[] = remove.map((key) => ({ type: 'del', key }));
    // Values come from the pinned snapshot, so every chunk belongs to the same guard W; chunks are
    // installed without a guard and the last one moves the guard, in one atomic step.
    for (let i = 0; i < fetch.length; i += chunk) {
      const values = rx.add(await o.client.fetchValues(snap.snapshotId, fetch.slice(i, i + chunk)), valueBytes);
      for (const kv of values) pending.push(kv.value === undefined ? { type: 'del', key: kv.key } : { type: 'put', key: kv.key, value: kv.value });
      if (pending.length >= chunk && i + chunk < fetch.length) {
        await o.applier.installChunk(pending);
        done += pending.length;
        pending = [];
        o.onProgress?.({ total, done });
      }
    }
    const n = pending.length;
    if (o.alsoFetch && o.alsoFetch.length > 0) {
      for (const kv of rx.add(await o.client.fetchValues(snap.snapshotId, o.alsoFetch), valueBytes)) if (kv.value !== undefined) pending.push({ type: 'put', key: kv.key, value: kv.value });
    }
    await o.applier.installSnapshot(pending, snap.guard);
    o.onInstalled?.(snap.guard);
    done += n;
    o.onProgress?.({ total, done });
    return { guard: snap.guard, fetched: fetch.length, deleted: remove.length, comparedPages, bytes: rx.bytes };
  } finally {
    await o.client.closeSnapshot(snap.snapshotId).catch(() => undefined);
  }
}
