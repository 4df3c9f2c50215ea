/**
 * What the HA unit needs of the rest of the node, declared here so the node adapts to it (as
 * replication declares its VaultCatalog): the storage engine, the vault core, the replication
 * unit, the cluster listener of the active role, the standby's cluster port (the door) and the
 * HTTP executor that runs a relayed request. The node hands finished objects in; nothing of
 * src/node runs on a request's path. Below them, what the unit offers the HTTP layer: the relay's
 * messages (raw requests and replies) and the facts the HA routes show (HaFacts).
 *
 *   const ha = createHaUnit({ fence, engine, vault: core, cachesDeriveFrom, replication: unit, clusterListener, listenDoor, connect, ... });
 */
import type { StorageFailed } from '../core/errors.js';
import type { FenceState, LeaseStore } from '../core/ha/lease-store.js';
import type { ClusterListener, TlsMaterial } from '../replication/index.js';
import type { BatchOp } from '../storage/backend.js';
import type { Followed, PushedWal, ReloadResult } from '../storage/engine.js';
import type { Store } from '../storage/store.js';
import type { LeaseKeeping } from './controller.js';
import type { LeaseStream } from './read-lease-server.js';

/** The lease store and the guard the data backend runs in every batch; the unit binds it to its controller. */
export interface HaFence {
  readonly lease: LeaseStore;
  /** Renews the lease from a worker thread while the main thread stalls (undefined: main thread only). */
  readonly keeper: LeaseKeeping | undefined;
  readonly ttlMs: number;
  /** This node's configured redundancy zone ('' when none). */
  readonly redundancyZone: string;
  bind(state: () => FenceState, fenced: (epoch: number) => void): void;
  /** What the data backend runs after every committed batch, with its ops, before the batch resolves (the read leases' push). */
  bindAfterBatch(after: (ops: readonly BatchOp[]) => Promise<void> | undefined): void;
}

/** What HA does with the storage engine: fence it to the role, follow the active node, reload on taking over. */
export interface HaEngine {
  reload(): Promise<ReloadResult>;
  follow(): Promise<ReloadResult | undefined>;
  followReads(): Promise<Followed>;
  /** Takes WAL entries the active node pushed into the read cache, when they follow what was followed (never beside followReads). */
  applyPushed(wal: PushedWal): Followed | undefined;
  /** A refusal every write gets while this node is a standby; undefined writes again. */
  standby(refusal: (() => Error) | undefined): void;
  epoch(): number;
  setEpoch(epoch: number): Promise<void>;
  onFailure(listener: (failure: StorageFailed) => void): () => void;
  failure(): StorageFailed | undefined;
}

/** What HA needs of the vault core: its store (unsealed) and its caches. */
export interface HaVault {
  store(): Store;
  /** Reads the caches again and opens the node as the active one (after a takeover). */
  reopen(): Promise<void>;
  /** Reads the caches again (a standby whose follow named a key they derive from). */
  reload(): Promise<void>;
}

/** What the node's HA metrics read (src/node/ha-metrics.ts `HaGaugeSource`). */
export interface HaGauges {
  view(): { readonly mode: string; readonly leaseAgeMs: number | null; readonly epoch: number; readonly leaderRow?: { readonly epoch: number } | undefined };
  isActive(): boolean;
  readonly leaseOptions: { readonly ttlMs: number };
  /** Read leases (src/core/ha/read-lease.ts): granted as the active node, held as a standby, and the standby's follows. */
  readLeases(): { readonly granted: number; readonly heldMs: number; readonly follows: number };
}

/** The replication unit: run only while this node is the active node. */
export interface HaReplication {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A registration on the cluster port; close() removes it. */
export interface Served {
  close(): Promise<void>;
}

/** One handler per RPC of the HA service (proto/ha.proto) the active node serves its standbys. */
export interface HaHandlers {
  /** Runs a request a standby relayed and answers its bytes. */
  readonly forward: (req: RawRequest) => Promise<RawReply>;
  /** Takes a performance standby's read-lease stream (read-lease-server.ts). */
  readonly readLease: (stream: LeaseStream) => void;
}

/**
 * The active role's cluster listener (the replication unit's current one): the HA service joins
 * it under its own server name and CA, and close() of what it answers removes that alone.
 */
export interface HaClusterListener {
  serveHa(registration: { tls: TlsMaterial; handlers: HaHandlers }): Promise<Served>;
}

/** Makes the standby's own listener on the cluster port (the door: door.ts). */
export type DoorListen = (address: string) => ClusterListener;

/**
 * Runs a request a standby relayed, as if its client had sent it to this node (the HTTP layer's
 * executor). `admit` runs first: a typed error it throws is answered as the HTTP error table
 * renders it, and nothing runs.
 */
export type RelayExecutor = (req: RawRequest, admit?: () => void) => Promise<RawReply>;

/** A client's request as a standby relays it: exactly what the client sent. */
export interface RawRequest {
  /** As the client sent it: `LIST` for a LIST, whatever the socket's framer made of it. */
  readonly method: string;
  /** Path and query as the client sent them (`/v1/secret/data/a?version=2`). */
  readonly url: string;
  /** Lower-case names; hop-by-hop headers removed. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | undefined;
  readonly remoteAddress: string;
}

export interface RawReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** One node of the cluster as sys/ha-status shows it (Vault's field names). */
export interface HaNodeInfo {
  readonly hostname: string;
  readonly api_address: string;
  readonly cluster_address: string;
  readonly active_node: boolean;
  /** RFC 3339; null for the active node. */
  readonly last_echo: string | null;
  /** How long the member's echo before its last took (ms), as it measured it; 0 for the active node. */
  readonly echo_duration_ms: number;
  /** The active node's clock minus the member's at its last echo (ms), as Vault's; 0 for the active node. */
  readonly clock_skew_ms: number;
  readonly version: string;
  /** Vault's upgrade version (raft's autopilot, which defaults it to the node's version): the node's version. */
  readonly upgrade_version: string;
  /** '' unless the node has one configured. */
  readonly redundancy_zone: string;
  /** Vault's replication canary age (ms): 0, there is no canary. */
  readonly replication_primary_canary_age_ms: number;
  /** This node only, not Vault's: why it last failed to serve as active, while it backs off. */
  readonly activation_failure?: { readonly reason: string; readonly at: string; readonly competes_again_at: string };
  /** This node only, not Vault's: the other live process that holds this node's identity. */
  readonly identity_taken_by?: string;
}

/** What the HTTP layer needs of the node's HA (src/ha implements it). */
export interface HaFacts {
  /** sys/leader's body without the node-only fields. */
  leader(): { isSelf: boolean; activeTime: string; leaderAddress: string; leaderClusterAddress: string };
  /** Whether this node is an unsealed standby (health 429). */
  standby(): boolean;
  /** Whether this node is a performance standby, one that serves reads itself (health 473, sys/leader `performance_standby`). */
  performanceStandby(): boolean;
  /** This node's own echoes, for sys/health (zeros and no heartbeat on the active node). */
  echo(): HaEchoFacts;
  /** Why the HA lock cannot be reached now (the database is down), for sys/health; undefined when it can. */
  problem(): string | undefined;
  nodes(): Promise<HaNodeInfo[]>;
  /** Stops being active, releases the lock, sits out the cooldown; resolves once stopped. */
  stepDown(): Promise<void>;
}

/** What sys/health shows of this node's echoes (Vault's fields of a standby's heartbeat to the active node). */
export interface HaEchoFacts {
  readonly echoDurationMs: number;
  /** The active node's clock minus this node's (ms). */
  readonly clockSkewMs: number;
  /** Standbys only, once an echo was answered: whether the last answer is recent (else health 474) and its age. */
  readonly heartbeat?: { readonly healthy: boolean; readonly sinceMs: number };
}

/** Vault's zero time: what `active_time` says when no node is active or HA is off. */
export const ZERO_TIME = '0001-01-01T00:00:00Z';
