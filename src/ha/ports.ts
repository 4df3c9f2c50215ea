/**
 * What the HA unit needs of the rest of the node, declared here so the node adapts to it (as
 * replication declares its VaultCatalog): the storage engine, the vault core, the replication
 * unit, the cluster listener of the active role, the standby's cluster port (the door) and the
 * HTTP executor that runs a relayed request. The node hands finished objects in; nothing of
 * src/node runs on a request's path.
 *
 *   const ha = createHaUnit({ fence, engine, vault: core, cachesDeriveFrom, replication: unit, clusterListener, listenDoor, connect, ... });
 */
import type { StorageFailed } from '../core/errors.js';
import type { FenceState, LeaseStore } from '../core/ha/lease-store.js';
import type { ClusterListener, TlsMaterial } from '../replication/index.js';
import type { Followed, ReloadResult } from '../storage/engine.js';
import type { Store } from '../storage/store.js';
import type { RawReply, RawRequest } from '../http/standby.js';
import type { LeaseKeeping } from './controller.js';

/** The lease store and the guard the data backend runs in every batch; the unit binds it to its controller. */
export interface HaFence {
  readonly lease: LeaseStore;
  /** Renews the lease from a worker thread while the main thread stalls (undefined: main thread only). */
  readonly keeper: LeaseKeeping | undefined;
  readonly ttlMs: number;
  /** This node's configured redundancy zone ('' when none). */
  readonly redundancyZone: string;
  bind(state: () => FenceState, fenced: (epoch: number) => void): void;
}

/** What HA does with the storage engine: fence it to the role, follow the active node, reload on taking over. */
export interface HaEngine {
  reload(): Promise<ReloadResult>;
  follow(): Promise<ReloadResult | undefined>;
  followReads(): Promise<Followed>;
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

/** The replication unit: run only while this node is the active node. */
export interface HaReplication {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A registration on the cluster port; close() removes it. */
export interface Served {
  close(): Promise<void>;
}

/** The active role's cluster listener (the replication unit's current one): HA forwarding joins it. */
export interface HaClusterListener {
  serveHa(registration: { tls: TlsMaterial; forward: (req: RawRequest) => Promise<RawReply> }): Promise<Served>;
}

/** Makes the standby's own listener on the cluster port (the door: door.ts). */
export type DoorListen = (address: string) => ClusterListener;

/** Runs a request a standby relayed, as if its client had sent it to this node. */
export type RelayExecutor = (req: RawRequest) => Promise<RawReply>;
