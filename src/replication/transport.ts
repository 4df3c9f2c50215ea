/**
 * The replication channel between clusters, in domain terms: no gRPC types here. The primary
 * implements `PrimaryService`; `src/transport/grpc` serves it over mTLS on the cluster port and
 * gives secondaries a `PrimaryClient`. Message shapes mirror proto/replication.proto.
 *
 *   const server = await serveReplication({ address: '127.0.0.1:0', tls, service });
 *   const client = connectPrimary({ address: server.address, tls: clientTls });
 *   const info = await client.bootstrap({ secondaryId: 's1', version: VERSION, kind: 'dr', apiAddr, clusterAddr });
 */
import type { Kind } from '../core/replication/index.js';
import type { WalEntry } from '../core/wal.js';

export { ChannelError, ChannelReason, NotActiveNode, channelErrorOfService, reasonOfServiceCode } from './channel-error.js';

export interface Guard {
  readonly index: bigint;
  readonly hash: Buffer;
}

/** Who is calling, as proven by the client certificate (its DNS SAN / CN is the secondary id). */
export interface Peer {
  readonly secondaryId: string;
  /** SHA-256 of the DER certificate, hex. */
  readonly fingerprint: string;
  readonly address: string;
}

export interface PingInfo {
  readonly clusterId: string;
  readonly nodeId: string;
  readonly version: string;
  readonly mode: string;
  readonly apiAddr: string;
  readonly clusterAddr: string;
  /**
   * The cluster addresses (host:port) of every node of the primary's cluster, the answering one
   * included: the secondary keeps them to find the active node after it changes. Absent or empty
   * (an older primary): only the address dialled.
   */
  readonly clusterAddrs?: readonly string[];
}

export interface BootstrapRequest {
  readonly secondaryId: string;
  readonly version: string;
  readonly kind: Kind;
  readonly apiAddr: string;
  readonly clusterAddr: string;
}

export interface BootstrapInfo {
  readonly clusterId: string;
  readonly version: string;
  readonly primaryClusterAddr: string;
  readonly primaryApiAddr: string;
  readonly lastWal: bigint;
  readonly epoch: number;
  /** As PingInfo's. */
  readonly clusterAddrs?: readonly string[];
}

export type StreamOutcome = 'ok' | 'not_retained' | 'non_matching_guard';

export type StreamMessage =
  | { readonly type: 'start'; readonly outcome: StreamOutcome; readonly firstRetained: bigint; readonly lastWal: bigint }
  | { readonly type: 'batch'; readonly entries: readonly WalEntry[]; readonly primaryLastWal: bigint; readonly primaryCommitTimeMs: number }
  /**
   * `draining`: the primary is being demoted and accepts no more writes; `lastWal` is final. The
   * secondary answers with a heartbeat as soon as it has applied it, so the demote can confirm it.
   * `ack`: the primary waits for this secondary's applied index; the secondary answers with a
   * heartbeat as soon as everything received before this message is applied.
   * `verify`: the primary's Merkle root of what this secondary replicates as of WAL index `wal`
   * (continuous verification; the secondary compares its own when it has applied exactly `wal`).
   */
  | {
      readonly type: 'heartbeat'; readonly lastWal: bigint; readonly lastCommitTimeMs: number; readonly sentAtMs: number; readonly draining?: boolean; readonly ack?: boolean;
      readonly verify?: { readonly wal: bigint; readonly root: Buffer };
    };

export interface HeartbeatRequest {
  readonly secondaryId: string;
  readonly applied: Guard;
  readonly sentAtMs: number;
  readonly state: string;
  readonly apiAddr: string;
  readonly clusterAddr: string;
}

export interface HeartbeatReply {
  readonly lastWal: bigint;
  readonly lastCommitTimeMs: number;
  readonly receivedAtMs: number;
  readonly sentAtMs: number;
  /** As PingInfo's: heartbeats keep the secondary's list current. */
  readonly clusterAddrs?: readonly string[];
}

export interface SnapshotInfo {
  readonly snapshotId: string;
  readonly guard: Guard;
  readonly root: Buffer;
  /** [tree 1, tree 2]. */
  readonly subtreeRoots: readonly Buffer[];
}

export interface LeafInfo {
  readonly key: string;
  readonly valueHash: Buffer;
  readonly subpage: number;
}

export interface KeyValue {
  readonly key: string;
  /** Ciphertext as stored on the primary; undefined when the key is absent at the snapshot. */
  readonly value: Buffer | undefined;
}

/**
 * A client's write that a performance secondary forwards to its primary (REPLICATION.md 8). The
 * secondary has authenticated and authorized it with its own tokens and ACL; the client's token
 * never leaves the secondary. The primary executes it on behalf of the verified secondary.
 * `namespace` and `path` are as the client sent them (header namespace, path with any prefix).
 */
export interface ForwardRequest {
  readonly requestId: string;
  readonly method: string;
  readonly operation: string;
  readonly namespace: string;
  readonly path: string;
  readonly trailingSlash: boolean;
  readonly query: Readonly<Record<string, string>>;
  readonly body: Readonly<Record<string, unknown>>;
}

/**
 * The primary's answer: what its handler returned before rendering (so the secondary renders it
 * with its own request id and wraps it with its own tokens), or its error, and the WAL index the
 * write is committed at or below: the secondary answers once it has applied that index.
 */
export interface ForwardReply {
  readonly kind: 'envelope' | 'none' | 'bare' | 'error';
  readonly status: number;
  /** JSON: envelope {data, warnings, auth}; bare body; error {errors}; none: {}. */
  readonly body: Readonly<Record<string, unknown>>;
  readonly commitIndex: bigint;
}

/** The primary's reply as a forwarding secondary answers it, with its own warnings (not applied here yet). */
export interface ForwardOutcome {
  readonly reply: ForwardReply;
  readonly warnings: readonly string[];
}

/** A server-streaming call as the primary sees it. */
export interface StreamSink {
  /** Resolves when the message is handed to the transport; waits while the peer is slow (flow control). */
  send(msg: StreamMessage): Promise<void>;
  end(): void;
  /** Ends the stream with an error the peer sees. */
  fail(error: Error): void;
  readonly closed: boolean;
  onClose(listener: () => void): void;
}

/** The cluster calls, grouped by what they expose (see serve-policy.ts). */
export type ClusterCall = 'ping' | 'bootstrap' | 'stream' | 'heartbeat' | 'reconcile' | 'forward';

/**
 * What the primary serves. Every method receives the authenticated peer; the transport has
 * already verified the certificate chain against the current CA, and calls `authorize` before
 * every call, Ping included, to check that the id is registered, unrevoked, the fingerprint
 * matches, and its status allows `call` (nothing but the handshake before activation).
 */
export interface PrimaryService {
  authorize(peer: Peer, call: ClusterCall): void;
  ping(peer: Peer): Promise<PingInfo>;
  bootstrap(peer: Peer, req: BootstrapRequest): Promise<BootstrapInfo>;
  streamWal(peer: Peer, req: { guard: Guard; maxBatchEntries: number }, sink: StreamSink): void;
  heartbeat(peer: Peer, req: HeartbeatRequest): Promise<HeartbeatReply>;
  openSnapshot(peer: Peer): Promise<SnapshotInfo>;
  closeSnapshot(peer: Peer, snapshotId: string): Promise<void>;
  pageHashes(peer: Peer, snapshotId: string, tree: 1 | 2): Promise<Buffer[]>;
  subpageHashes(peer: Peer, snapshotId: string, tree: 1 | 2, page: number): Promise<Buffer[]>;
  leaves(peer: Peer, snapshotId: string, tree: 1 | 2, page: number, subpages: readonly number[]): Promise<LeafInfo[]>;
  fetchValues(peer: Peer, snapshotId: string, keys: readonly string[]): Promise<KeyValue[]>;
  /** Executes a forwarded write (performance secondaries only; see ForwardRequest). */
  forward(peer: Peer, req: ForwardRequest): Promise<ForwardReply>;
}

/** PEM material for one end of the mTLS channel. */
export interface TlsMaterial {
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  /**
   * The DNS name the server certificate carries; the client pins it (ssl_target_name_override)
   * and sends it as SNI, by which a cluster port serving several kinds picks this kind's
   * certificate and CA.
   */
  readonly serverName: string;
}

export type ConnectionState = 'idle' | 'connecting' | 'ready' | 'transient_failure' | 'shutdown';

export interface StreamHandle {
  cancel(): void;
}

/**
 * The secondary's side of the channel. Every call rejects with a ChannelError (channel-error.ts),
 * and a stream that ends in error ends with one (or with `onMessage`'s own error, which ends it).
 */
export interface PrimaryClient {
  ping(secondaryId: string, deadlineMs?: number): Promise<PingInfo>;
  /** `deadlineMs`: the client's default unless given (a secondary with other addresses to try gives less). */
  bootstrap(req: BootstrapRequest, deadlineMs?: number): Promise<BootstrapInfo>;
  streamWal(
    req: { secondaryId: string; guard: Guard; maxBatchEntries: number },
    handlers: { onMessage: (m: StreamMessage) => Promise<void> | void; onEnd: (error?: Error) => void },
  ): StreamHandle;
  heartbeat(req: HeartbeatRequest): Promise<HeartbeatReply>;
  openSnapshot(secondaryId: string): Promise<SnapshotInfo>;
  closeSnapshot(snapshotId: string): Promise<void>;
  pageHashes(snapshotId: string, tree: 1 | 2): Promise<Buffer[]>;
  subpageHashes(snapshotId: string, tree: 1 | 2, page: number): Promise<Buffer[]>;
  leaves(snapshotId: string, tree: 1 | 2, page: number, subpages: readonly number[]): Promise<LeafInfo[]>;
  fetchValues(snapshotId: string, keys: readonly string[]): Promise<KeyValue[]>;
  forward(secondaryId: string, req: ForwardRequest, deadlineMs?: number): Promise<ForwardReply>;
  connectionState(): ConnectionState;
  close(): void;
}

export interface ReplicationServer {
  /** host:port actually bound. */
  readonly address: string;
  /** Ends every open call of this secondary at once (revoke-secondary). */
  disconnect(secondaryId: string): void;
  close(): Promise<void>;
}
