/**
 * What a ReplicationDriver is built from (driver.ts): the transport it serves and connects with,
 * the vault core's hooks, its options, and the secondary id rule. Types only, plus the mapping of
 * the driver's timing to the primary streamer's.
 *
 *   new ReplicationDriver({ kind: 'dr', engine, seal, core, transport, log, clusterListen, apiAddr } satisfies DriverOptions);
 */
import type { Logger } from 'pino';
import type { Kind, Mode } from '../core/replication/index.js';
import type { SealManager } from '../seal/index.js';
import type { StorageEngine } from '../storage/engine.js';
import type { Store } from '../storage/store.js';
import type { EmitEvent } from './events.js';
import type { FilterSource } from './primary-service.js';
import type { ForwardReply, ForwardRequest, PrimaryClient, PrimaryService, ReplicationServer, TlsMaterial } from './transport.js';

export interface ReplicationTransport {
  /**
   * Serves this kind on the cluster port. Both kinds of a node share one listener (one port):
   * `tls.serverName` is the SNI name this kind's secondaries ask for, and closing the returned
   * server removes this kind only.
   */
  serve(opts: { kind: Kind; address: string; tls: TlsMaterial; service: PrimaryService }): Promise<ReplicationServer>;
  connect(opts: { address: string; tls: TlsMaterial }): PrimaryClient;
}

/** What the driver needs from the vault core. */
export interface CoreHooks {
  store(): Store;
  /** Rebinds the barrier to the (new) keyring and reloads caches. */
  reopen(): Promise<void>;
  wrap(data: Record<string, unknown>, ttlSeconds: number, path: string): Promise<{ token: string; accessor: string; ttl: number; creation_time: string; creation_path: string }>;
  /** Revokes a (wrapping) token by accessor; nothing when it is already gone. */
  revokeAccessor(accessor: string): Promise<void>;
  /** Recreates a root token with this exact value (an emptied node's way back in). */
  restoreRoot(token: string): Promise<void>;
  /** Reloads the core's caches (mounts, namespaces, policies) after replicated data changed. */
  reload(): Promise<void>;
}

/**
 * Secondary ids become certificate DNS SANs and registry keys, and show in status for ever:
 * 1..128 of letters, digits, '_', '.', '-', not starting with '.' or '-'.
 */
export const SECONDARY_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** What update-primary with a blank token made this secondary forget (for the warning). */
export interface Forgotten {
  readonly clusterId: string;
  readonly primaryClusterAddr: string;
  readonly primaryApiAddr: string;
}

export interface DriverOptions {
  readonly kind: Kind;
  readonly engine: StorageEngine;
  readonly seal: SealManager;
  readonly core: CoreHooks;
  readonly transport: ReplicationTransport;
  readonly log: Logger;
  /** host:port the cluster listener binds. */
  readonly clusterListen: string;
  readonly apiAddr: () => string;
  readonly now?: () => number;
  /** Heartbeat interval and timeout, and the longest a demote waits for secondaries (see applied-waits.ts). */
  readonly timing?: { readonly heartbeatMs?: number; readonly heartbeatTimeoutMs?: number; readonly demoteDrainTimeoutMs?: number };
  /** The mode of the other kind on this node, for the rules across kinds (crossKindRefusal). */
  readonly otherMode?: () => Mode;
  /** Performance paths filters (paths-filters.ts), applied to what the primary serves each secondary. */
  readonly pathsFilter?: FilterSource;
  /** A primary's executor of writes its performance secondaries forward (bound late by the node). */
  readonly forwarded?: () => ((secondaryId: string, req: ForwardRequest) => Promise<ForwardReply>) | undefined;
  /** How long a forwarded write's answer waits for this secondary to apply it. Default 2000 ms. */
  readonly forwardWaitMs?: number;
  /** Replication events of this kind (events.ts): state changes here, connections in the loop and streamer. */
  readonly emit?: EmitEvent;
  /**
   * As a primary: the cluster addresses (host:port) of every node of this cluster, this node's
   * included, advertised to secondaries so they find the active node after it changes
   * (primary-addrs.ts). Absent: only the address secondaries are told (`clusterAddr()`).
   */
  readonly clusterAddrs?: () => readonly string[];
  /** The version this node runs in the replication handshake; VERSION unless given (tests of mixed versions). */
  readonly version?: string;
}

/** The driver's timing as the primary streamer takes it. */
export function timingOf(t: DriverOptions['timing']): { heartbeatMs?: number; heartbeatTimeoutMs?: number } {
  return {
    ...(t?.heartbeatMs !== undefined ? { heartbeatMs: t.heartbeatMs } : {}),
    ...(t?.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: t.heartbeatTimeoutMs } : {}),
  };
}
