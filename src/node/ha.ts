/**
 * HA on a node whose storage is `postgresql` with `ha_enabled`: the node opens the lease store
 * and its fence from the config (src/ha is the unit that uses them), and composes the unit from
 * the node's engine, core, replication unit and listeners. No request runs through this file.
 *
 *   const fence = await openHaFence(pgConfig, log);          // before the data backend: its guard
 *   const backend = await openPostgresBackend({ ..., guard: fence.guard });
 *   ...
 *   const ha = wireHa({ fence, engine, core, unit, ... });   // the HA unit (src/ha/index.ts)
 *   lifecycle.subscribe(ha.controller.sealObserver);
 *   await ha.claim(http.url);
 *   ha.start(http.execute);                                  // once the API listener is up
 */
import type { Logger } from 'pino';
import { leaseOptions } from '../core/ha/lease.js';
import { createHaUnit, LeaseKeeper, leaseTimings, type HaFence as UnitFence, type HaUnit } from '../ha/index.js';
import type { ReplicationUnit } from '../replication/index.js';
import type { BatchOp } from '../storage/backend.js';
import type { StorageEngine } from '../storage/engine.js';
import { redactConnectionUrl, type BatchGuard } from '../storage/postgres.js';
import { openPostgresLease, type PostgresLeaseStore } from '../storage/postgres-lease.js';
import { connectHa, createClusterServer, type ClusterServer } from '../transport/grpc/index.js';
import { cachesDeriveFrom, type VaultCore } from '../vault/core.js';
import type { PostgresqlStorageConfig } from './config-blocks.js';

/** The lease store and the guard the data backend runs in every batch; the controller binds later. */
export interface HaFence extends UnitFence {
  readonly lease: PostgresLeaseStore;
  readonly keeper: LeaseKeeper | undefined;
  /** Closes the keeper and the lease store. */
  close(): Promise<void>;
  readonly guard: BatchGuard;
  /** The data backend's hook after every committed batch (the read leases' push); the unit binds it. */
  readonly afterBatch: (ops: readonly BatchOp[]) => Promise<void> | undefined;
}

export async function openHaFence(pg: Omit<PostgresqlStorageConfig, 'type'>, log: Logger): Promise<HaFence> {
  const ttlMs = pg.haLeaseTtlMs ?? 2000;
  const lease = await openPostgresLease({
    connectionUrl: pg.connectionUrl,
    table: pg.haTable,
    statementTimeoutMs: Math.max(250, Math.floor(ttlMs / 2)),
    ...(pg.maxConnectRetries !== undefined ? { maxConnectRetries: pg.maxConnectRetries } : {}),
    onConnectRetry: (r) =>
      log.warn({ connection_url: redactConnectionUrl(pg.connectionUrl), ha_table: pg.haTable, attempt: r.attempt, retry_in_ms: r.delayMs, err: r.reason }, 'PostgreSQL unreachable (HA lease); retrying'),
  });
  const timings = leaseOptions(leaseTimings(ttlMs));
  const keeper = await LeaseKeeper.start({
    connectionUrl: pg.connectionUrl,
    table: pg.haTable,
    statementTimeoutMs: Math.max(250, Math.floor(ttlMs / 2)),
    ttlMs,
    renewMs: timings.renewMs,
    // Tolerates a stall of about this plus ttl - margin (2.5 s with a 2 s lease) without a step-down.
    stallLimitMs: Math.floor(ttlMs / 2),
    log,
  }).catch((e: unknown) => {
    log.warn({ err: (e as Error).message }, 'HA: the lease keeper thread did not start; the lease is renewed from the main thread only');
    return undefined;
  });
  // Until the controller binds: not competing, so only writes while no node is active (init).
  let state: Parameters<UnitFence['bind']>[0] = () => ({ mode: 'sealed' });
  let fenced: (epoch: number) => void = () => undefined;
  let afterBatch: (ops: readonly BatchOp[]) => Promise<void> | undefined = () => undefined;
  return {
    afterBatch: (ops) => afterBatch(ops),
    bindAfterBatch(a) {
      afterBatch = a;
    },
    lease,
    keeper,
    async close() {
      await keeper?.close();
      await lease.close();
    },
    ttlMs,
    redundancyZone: pg.redundancyZone ?? '',
    guard: lease.fence(() => state(), (epoch) => fenced(epoch)),
    bind(s, f) {
      state = s;
      fenced = f;
    },
  };
}

/** The node's HA: the unit of src/ha/index.ts. */
export type NodeHa = HaUnit;

export interface WireHaOptions {
  readonly fence: HaFence;
  readonly engine: StorageEngine;
  readonly core: VaultCore;
  readonly unit: ReplicationUnit;
  /** The cluster listener of the unit's current run (the one HA forwarding joins). */
  readonly clusterListener: () => ClusterServer | undefined;
  readonly clusterAddr: string;
  readonly log: Logger;
  readonly now: () => number;
  /** Standbys answer reads themselves (config `disable_performance_standby` false). */
  readonly performanceStandby: boolean;
}

/** The HA unit over this node's parts: the core as HA's vault port, the gRPC cluster transport. */
export function wireHa(o: WireHaOptions): NodeHa {
  return createHaUnit({
    fence: o.fence,
    engine: o.engine,
    vault: o.core,
    cachesDeriveFrom,
    replication: o.unit,
    clusterListener: o.clusterListener,
    // Every call the standby's door gets is refused at once: a short grace keeps an active role's start from waiting on it.
    listenDoor: (address) => createClusterServer({ address, log: o.log.child({ ha: true }), closeGraceMs: 200 }),
    connect: connectHa,
    clusterAddr: o.clusterAddr,
    log: o.log,
    now: o.now,
    performanceStandby: o.performanceStandby,
  });
}
