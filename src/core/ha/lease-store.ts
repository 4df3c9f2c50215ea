/**
 * The port HA drives its lease through (REPLICATION.md §9): one lock row with an expiry timed by
 * the store's clock, an epoch that grows at every takeover, a member row per node, and the fence
 * every commit of the data backend runs. src/storage/postgres-lease.ts implements it on the
 * shared PostgreSQL database; src/ha/testing/fake-lease-store.ts in memory, for unit tests;
 * test/support/lease-store-contract.ts is the one suite both pass.
 *
 *   const r = await store.acquire(me, 2000);           // { won: true, epoch } or { won: false, leader }
 *   await store.renew(me.holder, r.epoch, 2000);       // false: the row is no longer ours
 *   const guard = store.fence(current, onFenced);      // the data backend runs it in every batch
 *
 * It lives in src/core (types only) rather than src/ha because the PostgreSQL implementation is
 * in src/storage, which may import only src/core (.dependency-cruiser.cjs, storage-only-core).
 * `Guard` is what the implementation's fence hands to its data backend: a BatchGuard of
 * postgres.ts for PostgreSQL, a synchronous check for the fake.
 */
import { ErrorCode, TesseraError } from '../errors.js';

/** The node as the lock row and the member table name it. */
export interface LeaseCandidate {
  /** Unique per node process: its node id. */
  readonly holder: string;
  readonly hostname: string;
  readonly apiAddr: string;
  readonly clusterAddr: string;
  readonly version: string;
  /** Random per process: tells two processes with the same node id apart. */
  readonly instance: string;
  /** Vault's redundancy zone of the node ('' when none is configured). */
  readonly redundancyZone?: string;
}

/** What a member measured of its previous echo and sends with the next one (Vault's EchoRequest). */
export interface EchoMeasures {
  /** How long the previous echo took, sent to answer (ms). */
  readonly echoDurationMs: number;
  /** The member's clock when it sends this echo (ms since the epoch). */
  readonly localTime: number;
}

/** The live lock row: who is active, under which epoch, and where to reach it. */
export interface LeaseRow {
  readonly holder: string;
  readonly epoch: number;
  readonly apiAddr: string;
  readonly clusterAddr: string;
}

export type AcquireResult = { readonly won: true; readonly epoch: number } | { readonly won: false; readonly leader: LeaseRow | undefined };

/** One node of the cluster as it last echoed. */
export interface LeaseMember {
  readonly nodeId: string;
  readonly hostname: string;
  readonly apiAddr: string;
  readonly clusterAddr: string;
  readonly version: string;
  readonly lastEcho: Date;
  readonly instance: string;
  readonly activationFailure?: MemberFailure;
  /** How long the member's echo before its last took (ms); 0 before it measured one. */
  readonly echoDurationMs?: number;
  /** The member's own clock when it sent its last echo (`lastEcho` is the store's at that moment). */
  readonly localTime?: Date;
  readonly redundancyZone?: string;
}

/** Why a member last failed to serve as active, while it backs off (times in ms since the epoch). */
export interface MemberFailure {
  readonly reason: string;
  readonly at: number;
  readonly until: number;
}

/**
 * What the fence checks for the commit being made: `active` (this holder and epoch must be the
 * row's), `sealed` (a node that is not competing: only init writes then, and only while no node
 * holds a live lease), or `standby` (refused; the engine refuses before storage in that case).
 */
export type FenceState = { readonly mode: 'active'; readonly holder: string; readonly epoch: number } | { readonly mode: 'sealed' } | { readonly mode: 'standby' };

/** The reasons a fence refuses a commit with, the same in every implementation. */
export const FENCE_REFUSALS = {
  standby: 'this node is an HA standby; another node of the cluster writes',
  sealed: 'another node of the cluster is active; this node is sealed',
} as const;

export interface LeaseStore<Guard = unknown> {
  /**
   * Takes the row when it is missing, expired, or this holder's own (under a new epoch, which
   * fences the commits of its old one). With `graceMs`, polite: takes only a row missing or free
   * (expired or released) that long, twice that for its own row, and never a live one.
   */
  acquire(me: LeaseCandidate, ttlMs: number, graceMs?: number): Promise<AcquireResult>;
  /** true: renewed; false: the row is gone or names another holder or epoch. Rejects when unreachable. */
  renew(holder: string, epoch: number, ttlMs: number): Promise<boolean>;
  /**
   * As `renew`, but only while the row is still live: never brings back a lease that expired or
   * was released (the lease keeper's renewals, which may land after the active role stopped).
   */
  extend(holder: string, epoch: number, ttlMs: number): Promise<boolean>;
  /** Ends the row's lease now if it still holds this holder and epoch (the row stays, free). */
  release(holder: string, epoch: number): Promise<void>;
  /** The live row, or undefined when none is (missing or expired). */
  leader(): Promise<LeaseRow | undefined>;
  /**
   * Records that this node is alive now (the store's clock). Refused when another process
   * (`instance`) with this node id echoed within `staleMs`: answers that member, else undefined.
   */
  echo(me: LeaseCandidate, staleMs: number, failure?: MemberFailure, measured?: EchoMeasures): Promise<LeaseMember | undefined>;
  /** Nodes that echoed within `maxAgeMs`, oldest first (then by node id). */
  members(maxAgeMs: number): Promise<LeaseMember[]>;
  /**
   * The guard every batch of the data backend runs: `current()` says what to check for the
   * commit (FenceState); an `active` commit passes only while its holder and epoch hold the live
   * row, and calls `onFenced(epoch)` when it does not; a `sealed` one only while no row is live.
   */
  fence(current: () => FenceState, onFenced: (epoch: number) => void): Guard;
  close(): Promise<void>;
}

/** The fence refused a commit: the lease it was made under is no longer current. */
export class LeaseLost extends TesseraError {
  constructor(readonly epoch: number) {
    super(ErrorCode.unavailable, `this node's active lease (epoch ${epoch}) is no longer current: another node is active`);
  }
}
