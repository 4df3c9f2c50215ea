/** What the main thread and the lease keeper's thread share (lease-keeper.ts). */

/** Indexes into the shared Float64Array. */
export const Slot = { heartbeat: 0, renewedAt: 1, renewedEpoch: 2 } as const;
export const SLOT_COUNT = 3;

export interface KeeperData {
  readonly connectionUrl: string;
  readonly table?: string;
  readonly statementTimeoutMs: number;
  readonly ttlMs: number;
  readonly renewMs: number;
  /** The keeper renews only while the main thread's heartbeat is younger than this (ms). */
  readonly stallLimitMs: number;
  readonly shared: SharedArrayBuffer;
}

export type KeepMessage = { readonly type: 'keep'; readonly holder?: string; readonly epoch: number } | { readonly type: 'close' };
