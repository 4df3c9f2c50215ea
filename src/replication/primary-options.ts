/**
 * What a PrimaryStreamer (primary-service.ts) is built from: the registry that checks each
 * caller's certificate, what the primary tells about itself, and its options (timing, paths
 * filters, the executor of forwarded writes, events). Types only.
 *
 *   new PrimaryStreamer({ engine, registry: { check }, info, kind: 'dr' } satisfies PrimaryStreamerOptions);
 */
import type { Kind, TokenStatus } from '../core/replication/index.js';
import type { StorageEngine } from '../storage/engine.js';
import type { EmitEvent } from './events.js';
import type { FilterSource } from './filtered-view.js';
import type { LastSeenStore } from './secondary-views.js';
import type { ForwardReply, ForwardRequest } from './transport.js';

export interface SecondaryRegistry {
  /**
   * Throws PermissionDenied unless `id` holds an unrevoked, unexpired certificate with this
   * fingerprint; returns its status (the policy decides what that status may call).
   */
  check(id: string, fingerprint: string): TokenStatus;
}

export interface PrimaryInfo {
  clusterId(): string;
  nodeId(): string;
  apiAddr(): string;
  clusterAddr(): string;
  /**
   * The cluster addresses (host:port) of every node of this primary's cluster, this one's
   * included; advertised to secondaries with `clusterAddr()` first (primary-addrs.ts). Absent:
   * only `clusterAddr()`.
   */
  clusterAddrs?(): readonly string[];
}

export interface PrimaryStreamerOptions {
  engine: StorageEngine;
  registry: SecondaryRegistry;
  info: PrimaryInfo;
  now?: () => number;
  kind: Kind;
  /** After a secondary's handshake succeeds (its first one activates its token). */
  onBootstrap?: (secondaryId: string) => Promise<void>;
  /** Interval of the primary's heartbeats on an idle stream. Default 1000 ms. */
  heartbeatMs?: number;
  /** A secondary silent for longer is reported disconnected. Default 3000 ms. */
  heartbeatTimeoutMs?: number;
  /** Keeps each secondary's last heartbeat across restarts. */
  lastSeen?: LastSeenStore;
  onPersistError?: (e: unknown) => void;
  /**
   * Performance paths filters (paths-filters.ts): applied to the stream, the Merkle hashes,
   * leaves and values served each secondary. Absent, or for DR, every key of the kind's classes.
   */
  pathsFilter?: FilterSource;
  /**
   * Executes a write forwarded by a performance secondary (the vault core's dispatcher, bound
   * late by the node); absent, Forward answers Unavailable.
   */
  forwarded?: () => ((secondaryId: string, req: ForwardRequest) => Promise<ForwardReply>) | undefined;
  /** Replication events (events.ts): a secondary's first stream opened, its last one ended. */
  emit?: EmitEvent;
  /** Least time between two verification roots of a filtered secondary (a scan each). Default 10 s. */
  filteredVerifyMinMs?: number;
}
