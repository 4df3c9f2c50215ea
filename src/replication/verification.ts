/**
 * Continuous verification: the primary's heartbeat carries the Merkle root of what a secondary
 * replicates as of a WAL index, and the secondary compares its own root once it has applied
 * exactly that index. Both ends compute "what the kind replicates" here, from the kind's serve
 * policy: the composite root when it serves both subtrees (DR, an exact mirror), else the root of
 * the replicated subtree alone (performance keeps its own local class).
 *
 *   const v = rootToVerify(engine, 'dr', sentThrough);   // primary: { wal, root } when sentThrough is its last index
 *   const verifier = new Verifier({ kind, engine, now, emit, log });
 *   verifier.check(v, applier.guard().index);            // secondary, after applying what came before
 *   if (verifier.repairDue()) { verifier.repairStarted(); await reconcile(...); }
 *
 * A mismatch is repaired by the secondary itself: a Merkle diff and sync against a snapshot of its
 * primary (reconcile.ts), which fetches what differs whatever made it differ. If the roots still
 * differ after a repair, the next one waits twice as long (REPAIR_BACKOFF_MS, up to
 * REPAIR_BACKOFF_MAX_MS): a defect that a sync cannot fix does not turn into a reconcile loop.
 */
import type { Kind } from '../core/replication/index.js';
import type { Logger } from 'pino';
import type { StorageEngine } from '../storage/engine.js';
import type { EmitEvent } from './events.js';
import { filteredView, servedTrees, type FilterSource } from './filtered-view.js';
import { servePolicy } from './serve-policy.js';

/** The root of the trees `kind` replicates, as of now (a consistent pair with `lastGuard()` in the same tick). */
export function replicatedRoot(engine: StorageEngine, kind: Kind): Buffer {
  return servePolicy(kind).servesTree(2) ? engine.merkleRoot() : engine.subtreeRoot(1);
}

/** A root the primary sends: of what the secondary replicates, as of WAL index `wal`. */
export interface RootAt {
  readonly wal: bigint;
  readonly root: Buffer;
}

/**
 * Primary, for a secondary without a paths filter: the root as of our last index, when that is
 * the last index the secondary has been sent (`sentThrough`). Index and root are read in one tick,
 * so the root is the one at that index.
 */
export function rootToVerify(engine: StorageEngine, kind: Kind, sentThrough: bigint): RootAt | undefined {
  const last = engine.lastGuard().index;
  if (sentThrough !== last || last === 0n) return undefined;
  return { wal: last, root: replicatedRoot(engine, kind) };
}

/**
 * Primary, for a secondary with a paths filter: the root of tree 1 over the keys its filter
 * allows, from a pinned snapshot at the last index it has been sent (the view reconciliation
 * compares, built by a scan of every key of tree 1). At most once per `minMs` (default 10 s) and
 * never more than 1% of the time (100 times the last scan apart), tracked in `clock`.
 */
export async function filteredRootToVerify(o: {
  engine: StorageEngine; filters: FilterSource; secondaryId: string; sentThrough: bigint;
  clock: { atMs: number; costMs: number }; now: () => number; minMs?: number;
}): Promise<RootAt | undefined> {
  const { engine, clock } = o;
  const due = clock.atMs === 0 || o.now() - clock.atMs >= Math.max(o.minMs ?? 10_000, 100 * clock.costMs);
  if (!due || o.sentThrough === 0n || o.sentThrough !== engine.lastGuard().index) return undefined;
  const started = o.now();
  const snap = await engine.snapshot();
  try {
    // A commit between the check and the pin: the root would be of an index not yet sent.
    if (snap.guard.index !== o.sentThrough) return undefined;
    const view = await filteredView(snap, o.filters, o.secondaryId);
    return { wal: o.sentThrough, root: Buffer.from(servedTrees(snap, view)[1].root) };
  } finally {
    clock.atMs = o.now();
    clock.costMs = clock.atMs - started;
    await snap.close();
  }
}

export interface VerificationStatus {
  /** The last index at which the roots matched (0: never), and when (ms, 0: never). */
  readonly lastVerifiedWal: bigint;
  readonly lastVerifiedAtMs: number;
  /** The latest comparison found the roots different. */
  readonly mismatch: boolean;
  /** The index of that comparison, while `mismatch`. */
  readonly mismatchWal: bigint;
  /** Repairs (Merkle diff and sync) started because of a mismatch, and when the last one started (ms, 0: never). */
  readonly repairs: number;
  readonly lastRepairAtMs: number;
}

/** The least time between two repairs of a mismatch that a repair did not clear, doubling up to the max. */
export const REPAIR_BACKOFF_MS = 5_000;
export const REPAIR_BACKOFF_MAX_MS = 600_000;

export class Verifier {
  private state: VerificationStatus = { lastVerifiedWal: 0n, lastVerifiedAtMs: 0, mismatch: false, mismatchWal: 0n, repairs: 0, lastRepairAtMs: 0 };
  /** Repairs started since the roots last matched, and the wait before the next one. */
  private repairsSinceMatch = 0;
  private backoffMs = 0;

  constructor(private readonly o: { kind: Kind; engine: StorageEngine; now: () => number; log: Logger; emit?: EmitEvent }) {}

  get status(): VerificationStatus {
    return this.state;
  }

  /**
   * Compares `theirs` with this node's root if `applied` is exactly `theirs.wal`; past it (or
   * before, which a primary never sends) the root at that index is no longer in hand: skipped.
   * A mismatch is one log line at error level (the event's, when events are wired), once per change
   * of the outcome, not once per beat.
   * Returns whether a comparison was made.
   */
  check(theirs: { wal: bigint; root: Buffer }, applied: bigint): boolean {
    if (applied !== theirs.wal) return false;
    const ours = replicatedRoot(this.o.engine, this.o.kind);
    const now = this.o.now();
    if (ours.equals(theirs.root)) {
      const was = this.state.mismatch;
      const repaired = this.repairsSinceMatch;
      this.state = { ...this.state, lastVerifiedWal: theirs.wal, lastVerifiedAtMs: now, mismatch: false, mismatchWal: 0n };
      this.repairsSinceMatch = 0;
      this.backoffMs = 0;
      if (was) {
        const how = repaired > 0 ? `, repaired by ${repaired === 1 ? 'a Merkle sync' : `${repaired} Merkle syncs`}` : '';
        this.tell('verification-restored', { wal: Number(theirs.wal), repaired_by_merkle_sync: repaired > 0, repairs: repaired }, 'warn', `Merkle roots match again${how}`);
      }
      return true;
    }
    const was = this.state.mismatch;
    this.state = { ...this.state, mismatch: true, mismatchWal: theirs.wal };
    if (!was) {
      const detail = { wal: Number(theirs.wal), primary_root: theirs.root.toString('hex'), local_root: ours.toString('hex') };
      this.tell('verification-mismatch', detail, 'error', 'this secondary\'s Merkle root differs from its primary\'s at the same WAL index (diverged); repairing by a Merkle diff and sync');
    }
    return true;
  }

  /** A mismatch stands and no repair ran within the backoff: the caller should reconcile now. */
  repairDue(): boolean {
    return this.state.mismatch && (this.repairsSinceMatch === 0 || this.o.now() - this.state.lastRepairAtMs >= this.backoffMs);
  }

  /** The caller starts a repair (a reconcile); counted in status, and the next one backs off. */
  repairStarted(): void {
    this.repairsSinceMatch++;
    this.backoffMs = this.backoffMs === 0 ? REPAIR_BACKOFF_MS : Math.min(this.backoffMs * 2, REPAIR_BACKOFF_MAX_MS);
    this.state = { ...this.state, repairs: this.state.repairs + 1, lastRepairAtMs: this.o.now() };
  }

  /** One log line per change: the event's own line when events are wired, else a plain one. */
  private tell(type: string, detail: Record<string, unknown>, level: 'warn' | 'error', message: string): void {
    if (this.o.emit) this.o.emit(type, detail, level);
    else this.o.log[level]({ replication_verification: type, ...detail }, `replication verification: ${message}`);
  }
}
