/**
 * Message shapes exactly as proto-loader hands them over with the options in proto.ts: camelCase
 * fields, uint64 as decimal strings, bytes as Buffers, every scalar defaulted, message-typed fields
 * null when absent, and `body` naming the set member of a oneof. codec.ts turns them into domain
 * types; nothing else should touch them.
 *
 *   import type * as wire from './wire.js';
 *   const raw: wire.Guard = { index: '42', hash };
 */
/** uint64 on the wire: a decimal string. */
export type U64 = string;

export interface PingRequest { secondaryId: string }
export interface PingResponse {
  clusterId: string; nodeId: string; version: string; mode: string; apiAddr: string; clusterAddr: string;
  /** Absent when sent by code that predates the field; the receiver reads it as empty. */
  clusterAddrs?: string[];
}
export interface BootstrapRequest {
  secondaryId: string; version: string; kind: string; apiAddr: string; clusterAddr: string;
}
export interface BootstrapResponse {
  clusterId: string; version: string; primaryClusterAddr: string; primaryApiAddr: string; lastWal: U64; epoch: number;
  clusterAddrs?: string[];
}
export interface Guard { index: U64; hash: Buffer }
/** Message-typed fields arrive as null when the sender left them out. */
export interface StreamRequest { secondaryId: string; guard: Guard | null; maxBatchEntries: number }
export interface WalOp { delete: boolean; key: string; value: Buffer }
export interface WalEntry { index: U64; epoch: number; timeMs: U64; ops: WalOp[]; hash: Buffer }
export interface StreamStart { outcome: string; firstRetained: U64; lastWal: U64 }
export interface WalBatch { entries: WalEntry[]; primaryLastWal: U64; primaryCommitTimeMs: U64 }
export interface PrimaryBeat { lastWal: U64; lastCommitTimeMs: U64; sentAtMs: U64; draining: boolean; ack: boolean; verifyWal: U64; verifyRoot: Buffer }
export type StreamMessage =
  | { start: StreamStart; body?: 'start' }
  | { batch: WalBatch; body?: 'batch' }
  | { heartbeat: PrimaryBeat; body?: 'heartbeat' };
export interface HeartbeatRequest {
  secondaryId: string; applied: Guard | null; sentAtMs: U64; state: string; apiAddr: string; clusterAddr: string;
}
export interface HeartbeatResponse { lastWal: U64; lastCommitTimeMs: U64; receivedAtMs: U64; sentAtMs: U64; clusterAddrs?: string[] }
export interface OpenSnapshotRequest { secondaryId: string }
export interface SnapshotInfo { snapshotId: string; guard: Guard | null; root: Buffer; subtreeRoots: Buffer[] }
export interface SnapshotRef { snapshotId: string }
export interface PageHashesRequest { snapshotId: string; tree: number }
export interface SubpageHashesRequest { snapshotId: string; tree: number; page: number }
export interface HashList { hashes: Buffer[] }
export interface LeavesRequest { snapshotId: string; tree: number; page: number; subpages: number[] }
export interface Leaf { key: string; valueHash: Buffer; subpage: number }
export interface LeafList { leaves: Leaf[] }
export interface FetchValuesRequest { snapshotId: string; keys: string[] }
export interface KeyValue { key: string; missing: boolean; value: Buffer }
export interface ValueList { values: KeyValue[] }
export interface ForwardRequest {
  secondaryId: string; requestId: string; method: string; operation: string; namespace: string; path: string;
  trailingSlash: boolean; query: Record<string, string>; body: Buffer;
}
export interface ForwardResponse { kind: string; status: number; body: Buffer; commitIndex: U64 }
export type Empty = Record<string, never>;
