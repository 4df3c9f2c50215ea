/**
 * How a secondary applies what its primary sends, per kind (KIND_POLICY.apply):
 *
 * - 'primary-wal' (DR): the primary's entries become this node's WAL, same indices and hashes; the
 *   node's guard is the upstream guard (an exact standby).
 * - 'own-wal' (performance): entries are re-committed as this node's own entries, with the
 *   upstream guard `(index, hash)` written beside them in the same atomic batch (a node-class
 *   record), so local writes interleave in its own WAL and its own DR secondaries can follow it.
 *   Only replicated-class keys are ever written this way (REPLICATION.md 8).
 *
 *   const applier = applierFor('performance', engine);
 *   await applier.load();
 *   applier.guard();             // what the stream resumes from and heartbeats report
 *   await applier.apply(batch.entries);
 */
import { Internal } from '../core/errors.js';
import type { Tree } from '../core/merkle.js';
import { KIND_POLICY, type Kind } from '../core/replication/index.js';
import { genesisGuard, type Guard, type WalEntry, type WalOp } from '../core/wal.js';
import type { StorageEngine } from '../storage/engine.js';
import { classify, KeyClass, treeOf } from '../storage/keyspace.js';

export interface Applier {
  /** Merkle subtrees this secondary reconciles against its primary. */
  readonly trees: readonly Tree[];
  /** Whether this node's WAL is its own (indices differ from upstream's). */
  readonly ownWal: boolean;
  /** The last upstream entry applied (index and the primary's hash for it). */
  guard(): Guard;
  apply(entries: readonly WalEntry[]): Promise<void>;
  /** merkle-sync's middle: ops without moving the guard. */
  installChunk(ops: readonly WalOp[]): Promise<void>;
  /** merkle-sync's end: the last ops and the guard of the snapshot, atomically. */
  installSnapshot(ops: readonly WalOp[], guard: Guard): Promise<void>;
}

/** Node class: this node's position as a secondary (REPLICATION.md 1). */
export const UPSTREAM_GUARD_KEY = 'node/replication/performance/upstream-guard';
/**
 * Node class, plaintext JSON `{ dynamic_filtered_mounts, dynamic_filtered_namespaces }`: the last
 * dynamic filter the primary told this performance secondary (appended to a streamed entry when
 * the catalog changes, fetched with each reconcile). The one non-replicated key upstream may write.
 */
export const DYNAMIC_FILTER_KEY = 'node/replication/performance/dynamic-filter';

class PrimaryWalApplier implements Applier {
  readonly trees: readonly Tree[] = KIND_POLICY.dr.trees;
  readonly ownWal = false;
  constructor(private readonly engine: StorageEngine) {}
  guard(): Guard {
    return this.engine.lastGuard();
  }
  apply(entries: readonly WalEntry[]): Promise<void> {
    return this.engine.applyEntries(entries);
  }
  installChunk(ops: readonly WalOp[]): Promise<void> {
    return this.engine.installChunk(ops);
  }
  installSnapshot(ops: readonly WalOp[], guard: Guard): Promise<void> {
    return this.engine.installSnapshot(ops, guard);
  }
}

export class OwnWalApplier implements Applier {
  readonly trees: readonly Tree[] = KIND_POLICY.performance.trees;
  readonly ownWal = true;
  private upstream: Guard = genesisGuard();

  constructor(private readonly engine: StorageEngine) {}

  /** Reads the persisted upstream guard (genesis when none: a fresh activation). */
  async load(): Promise<void> {
    const raw = await this.engine.readRaw(UPSTREAM_GUARD_KEY);
    if (!raw) {
      this.upstream = genesisGuard();
      return;
    }
    const parsed = JSON.parse(raw.toString('utf8')) as { index: string; hash: string };
    this.upstream = { index: BigInt(parsed.index), hash: Buffer.from(parsed.hash, 'hex') };
  }

  guard(): Guard {
    return this.upstream;
  }


  private static replicatedOnly(ops: readonly WalOp[]): void {
    for (const op of ops) {
      if (op.key === DYNAMIC_FILTER_KEY) continue;
      // The primary's serve policy never sends another class; refusing here keeps this node's
      // own local class untouchable by upstream even if it did.
      if (classify(op.key) !== KeyClass.replicated) throw new Internal(`upstream sent a ${classify(op.key)}-class key to a performance secondary`);
    }
  }

  private async commit(ops: readonly WalOp[], guard: Guard | undefined): Promise<void> {
    OwnWalApplier.replicatedOnly(ops);
    await this.engine.commitRaw(guard ? [...ops, guardOp(guard)] : ops, [], { upstream: true });
    if (guard) this.upstream = guard;
  }

  /** One commit per batch: its ops in order, then the batch's last upstream guard. */
  async apply(entries: readonly WalEntry[]): Promise<void> {
    const last = entries.at(-1);
    if (!last) return;
    if (entries[0] && entries[0].index !== this.upstream.index + 1n) {
      throw new Internal(`upstream batch starts at ${entries[0].index}, expected ${this.upstream.index + 1n}`);
    }
    await this.commit(entries.flatMap((e) => e.ops), { index: last.index, hash: last.hash });
  }

  installChunk(ops: readonly WalOp[]): Promise<void> {
    return this.commit(ops, undefined);
  }

  installSnapshot(ops: readonly WalOp[], guard: Guard): Promise<void> {
    return this.commit(ops, guard);
  }
}

function guardOp(g: Guard): WalOp {
  return { type: 'put', key: UPSTREAM_GUARD_KEY, value: Buffer.from(JSON.stringify({ index: g.index.toString(), hash: g.hash.toString('hex') })) };
}

/**
 * Makes a performance secondary's next session reconcile before it streams (effect `resync`):
 * the upstream guard keeps its index but takes a hash no WAL entry has, so the primary answers
 * `non_matching_guard`; the reconcile then installs what the primary serves this id together with
 * the real guard, in one atomic step. Persisted, so a restart before that reconciles too.
 */
export async function distrustUpstreamGuard(engine: StorageEngine): Promise<void> {
  const a = new OwnWalApplier(engine);
  await a.load();
  await engine.commitRaw([guardOp({ index: a.guard().index, hash: Buffer.alloc(a.guard().hash.length, 0xff) })], [], { upstream: true });
}

export function applierFor(kind: Kind, engine: StorageEngine): Applier & { load?: () => Promise<void> } {
  return KIND_POLICY[kind].apply === 'primary-wal' ? new PrimaryWalApplier(engine) : new OwnWalApplier(engine);
}

/** The key classes a kind replicates, from its subtrees. */
export function classesOf(kind: Kind): KeyClass[] {
  const all = [KeyClass.replicated, KeyClass.local];
  return all.filter((c) => KIND_POLICY[kind].trees.includes(treeOf(c) as Tree));
}
