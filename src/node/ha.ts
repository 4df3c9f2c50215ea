/**
 * HA on a node whose storage is `postgresql` with `ha_enabled` (src/ha does the work; this file
 * wires it to the node's engine, core, replication unit and listeners).
 *
 *   const fence = await openHaFence(pgConfig);               // before the data backend: its guard
 *   const backend = await openPostgresBackend({ ..., guard: fence.guard });
 *   ...
 *   const ha = wireHa({ fence, engine, core, unit, ... });   // the controller and the relay
 *   lifecycle.subscribe(ha.controller.sealObserver);
 *   ha.start();                                              // once the API listener is up
 *
 * The active role: reload what the previous active node wrote (engine and vault caches), open
 * writes under the new epoch (the engine's term grows: the first fenced commit), make sure the
 * cluster's HA certificates exist, start replication, serve HA forwarding on the cluster port.
 * Stopping refuses writes first, then stops replication (which closes the cluster port). While
 * not active and unsealed, the port answers secondaries with the active node's address (ha-door.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { StandbyWriteRefused, Unavailable } from '../core/errors.js';
import { clockSkewMs, heartbeatHealth, type EchoClocks } from '../core/ha/heartbeat.js';
import { leaseOptions, type LeaseOptions } from '../core/ha/lease.js';
import { HeldReadLease } from '../core/ha/read-lease.js';
import { VERSION } from '../core/version.js';
import { realClock } from '../ha/clock.js';
import { HaController } from '../ha/controller.js';
import { LeaseKeeper } from '../ha/lease-keeper.js';
import { ReadLeaseClient } from '../ha/read-lease-client.js';
import { ReadLeaseServer } from '../ha/read-lease-server.js';
import { StandbyRelay } from '../ha/standby.js';
import { ensureHaTls, loadHaTls } from '../ha/tls.js';
import { LEADER_PROBE, VerifiedLeader } from '../ha/verified-leader.js';
import type { HaFacts, HaNodeInfo } from '../http/routes/ha.js';
import { ZERO_TIME } from '../http/routes/ha.js';
import { errorRaw, type RawReply, type RawRequest } from '../http/standby.js';
import { recordedModes, standbyRegistrations, type RecordedModes, type ReplicationUnit } from '../replication/index.js';
import type { BatchOp } from '../storage/backend.js';
import type { StorageEngine } from '../storage/engine.js';
import { pushedWal } from '../storage/read-follow.js';
import { redactConnectionUrl, type BatchGuard } from '../storage/postgres.js';
import type { FenceState, LeaseCandidate, LeaseMember } from '../core/ha/lease-store.js';
import { openPostgresLease, type PostgresLeaseStore } from '../storage/postgres-lease.js';
import { connectHa, type ClusterServer, type HaClient } from '../transport/grpc/index.js';
import { cachesDeriveFrom, type VaultCore } from '../vault/core.js';
import { StandbyReads } from '../ha/standby-reads.js';
import type { PostgresqlStorageConfig } from './config-blocks.js';
import { HaDoor } from './ha-door.js';
import type { HaGaugeSource } from './ha-metrics.js';

/**
 * How often a standby brings its engine up to the active node's writes (engine.follow): what is
 * left to read on becoming active is at most this much of writes.
 */
const FOLLOW_MS = 500;

/** The longest read lease the active node grants a performance standby (ms; half the lock row's lifetime when shorter). */
const READ_LEASE_MS = 1000;

/** A monotonic clock for read leases (only their lengths matter, never the time of day). */
const mono = (): number => performance.now();

/** Members that have not echoed for this long drop out of sys/ha-status. */
const MEMBER_MAX_AGE_MS = 15_000;

/** The lease timings for a lock-row lifetime (ms): renew at a quarter, retry at an eighth, stop a quarter early. */
export function leaseTimings(ttlMs: number): Partial<LeaseOptions> {
  // A polite attempt (step-down cooldown) waits a retry and a half, so a standby's next attempt
  // comes first; a failed activation backs off one lease first.
  const retryMs = Math.floor(ttlMs / 8);
  return { ttlMs, renewMs: Math.floor(ttlMs / 4), retryMs, marginMs: Math.floor(ttlMs / 4), graceMs: Math.floor(retryMs * 1.5), backoffMs: ttlMs };
}

/** The lease store and the guard the data backend runs in every batch; the controller binds later. */
export interface HaFence {
  readonly lease: PostgresLeaseStore;
  /** Renews the lease from a worker thread while the main thread stalls (undefined: main thread only). */
  readonly keeper: LeaseKeeper | undefined;
  /** Closes the keeper and the lease store. */
  close(): Promise<void>;
  readonly guard: BatchGuard;
  readonly ttlMs: number;
  /** This node's configured redundancy zone ('' when none). */
  readonly redundancyZone: string;
  bind(state: () => FenceState, fenced: (epoch: number) => void): void;
  /** The data backend's hook after every committed batch (the read leases' push); bound by wireHa. */
  readonly afterBatch: (ops: readonly BatchOp[]) => Promise<void> | undefined;
  bindAfterBatch(after: (ops: readonly BatchOp[]) => Promise<void> | undefined): void;
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
  let state: () => FenceState = () => ({ mode: 'sealed' });
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

/** A member's last echo as the clock skew needs it. */
const clocksOf = (m: LeaseMember): EchoClocks => ({ localTime: m.localTime?.getTime(), databaseTime: m.lastEcho.getTime() });

/** A stable id for this node: its host and addresses (so a restart is the same member). */
export function nodeIdOf(host: string, apiAddr: string, clusterAddr: string): string {
  return `${host}-${createHash('sha256').update(`${apiAddr}|${clusterAddr}`).digest('hex').slice(0, 10)}`;
}

export interface NodeHa {
  readonly controller: HaController;
  /** What the HA metrics read (ha-metrics.ts). */
  readonly gauges: HaGaugeSource;
  readonly relay: StandbyRelay;
  readonly facts: HaFacts;
  /** Every member's cluster address, this node's first: what secondaries are told to try. */
  clusterAddrs(): readonly string[];
  /**
   * On a standby, the replication modes and cluster id the active node keeps in storage (read on
   * every follow); undefined on the active node, a sealed one, or before the first read.
   */
  standbyReplication(): RecordedModes | undefined;
  /** Runs a request a standby relayed (the active node's side of HA forwarding). */
  execute(req: RawRequest): Promise<RawReply>;
  /** Takes this node's identity in the member table before it competes; rejects (IdentityTaken) while another live process holds it. */
  claim(): Promise<void>;
  /** Starts the timers; call once the API address is known. */
  start(): void;
  stop(): Promise<void>;
}

export interface WireHaOptions {
  readonly fence: HaFence;
  readonly engine: StorageEngine;
  readonly core: VaultCore;
  readonly unit: ReplicationUnit;
  /** The cluster listener of the unit's current run (the one HA forwarding joins). */
  readonly clusterListener: () => ClusterServer | undefined;
  readonly apiAddr: () => string;
  readonly clusterAddr: string;
  readonly execute: () => ((req: RawRequest) => Promise<RawReply>) | undefined;
  readonly log: Logger;
  readonly now: () => number;
  /** Standbys answer reads themselves (config `disable_performance_standby` false). */
  readonly performanceStandby: boolean;
}

export function wireHa(o: WireHaOptions): NodeHa {
  const host = hostname();
  // This process among any others that share its node id (the same host and addresses).
  const instance = randomBytes(8).toString('hex');
  const me = (): LeaseCandidate => {
    const apiAddr = o.apiAddr();
    return { holder: nodeIdOf(host, apiAddr, o.clusterAddr), hostname: host, apiAddr, clusterAddr: o.clusterAddr, version: VERSION, instance, redundancyZone: o.fence.redundancyZone };
  };
  const standbyRefusal = (): Error => new StandbyWriteRefused('this node is an HA standby and writes nothing itself: nothing was written (send the request to the active node, or let a standby relay it)');
  let serving: { close(): Promise<void> } | undefined;
  // Read leases (src/core/ha/read-lease.ts): as the active node, granted to performance standbys
  // and told of every commit before it is acknowledged; as a standby, held while fresh.
  const leaseMaxMs = Math.min(READ_LEASE_MS, Math.floor(o.fence.ttlMs / 2));
  const leases: ReadLeaseServer = new ReadLeaseServer({ maxMs: leaseMaxMs, now: mono, deadlineInMs: (): number | undefined => controller.activeForMs() });
  // The batch's WAL entries go with its count when they can (read-follow.ts pushedWal).
  o.fence.bindAfterBatch((ops) => leases.published(() => pushedWal(ops)));
  const haRegistration = (tls: { server: Parameters<ClusterServer['serveHa']>[0]['tls'] }): Parameters<ClusterServer['serveHa']>[0] => ({
    tls: tls.server,
    forward: (req) => execute(req),
    readLease: (stream) => leases.accept(stream),
  });
  // A standby answers secondaries on its cluster port with where the active node is (ha-door.ts).
  const door = new HaDoor({
    address: o.clusterAddr,
    log: o.log.child({ ha: true }),
    registrations: () =>
      standbyRegistrations({
        store: () => o.core.store(),
        activeClusterAddr: () => {
          const v = controller.view();
          return v.mode === 'active' ? undefined : v.leaderRow?.clusterAddr;
        },
        now: o.now,
      }),
  });
  const controller = new HaController({
    store: o.fence.lease,
    me,
    log: o.log.child({ ha: true }),
    clock: realClock(o.now),
    memberMaxAgeMs: MEMBER_MAX_AGE_MS,
    ...(o.fence.keeper !== undefined ? { keeper: o.fence.keeper } : {}),
    lease: leaseTimings(o.fence.ttlMs),
    // No standby may still count on a read lease from this node once another can take over.
    beforeRelease: (): Promise<void> => leases.revokeAll(),
    role: {
      start: async () => {
        const ms: Record<string, number> = {};
        let at = Date.now();
        const lap = (name: string): void => {
          const now = Date.now();
          ms[name] = now - at;
          at = now;
        };
        // The standby's door gives the cluster port back before the active role binds it.
        await door.hold();
        lap('door');
        const loaded = await o.engine.reload();
        o.engine.standby(undefined);
        lap('reload');
        // The first fenced commit of this term: every WAL entry from here on carries the new epoch.
        await o.engine.setEpoch(o.engine.epoch() + 1);
        lap('epoch');
        await o.core.reopen();
        lap('caches');
        const tls = await ensureHaTls(o.core.store(), o.now());
        lap('tls');
        await o.unit.start();
        lap('replication');
        const listener = o.clusterListener();
        if (listener === undefined) throw new Unavailable('the cluster listener is not available');
        leases.open();
        serving = await listener.serveHa(haRegistration(tls));
        lap('forwarding');
        o.log.info({ ms, loaded }, 'HA: active role started');
      },
      stop: async () => {
        // A sealed node is not a standby: it writes only what the sealed fence lets through.
        if (controller.view().mode !== 'sealed') o.engine.standby(standbyRefusal);
        serving = undefined;
        // Revoked over the streams before stopping replication closes the cluster port under them.
        await leases.revokeAll();
        await o.unit.stop().catch((e: unknown) => o.log.error({ err: e }, 'HA: stopping replication failed'));
        door.resume();
      },
    },
  });
  o.fence.bind(() => controller.fenceState(), controller.fenced);
  // A commit whose outcome PostgreSQL left unknown fails the engine closed: step down, and the
  // next activation (once the database answers) reloads and clears it.
  o.engine.onFailure((f) => controller.storageFailed(f.message));
  // Standby and cooldown write nothing; sealed writes only what the sealed fence lets through (init).
  controller.onChange((v) => {
    if (v.mode === 'standby' || v.mode === 'cooldown') o.engine.standby(standbyRefusal);
    else if (v.mode === 'sealed') o.engine.standby(undefined);
    door.want(v.mode === 'standby' || v.mode === 'cooldown');
  });

  const execute = async (req: RawRequest): Promise<RawReply> => {
    const run = o.execute();
    if (!controller.isActive() || run === undefined) return errorRaw(503, 'this node is no longer the active node: nothing was run (retry through any node)');
    return run(req);
  };

  // A performance standby answers reads itself: unsealed and following, not of a DR secondary
  // cluster (it answers no reads), and only once the replication state it follows is known.
  const servesReads = (): boolean => o.performanceStandby && isStandby() && replicationSeen !== undefined && replicationSeen.dr !== 'secondary' && o.engine.failure() === undefined;
  const relay: StandbyRelay = new StandbyRelay({
    relayTarget: () => {
      const v = controller.view();
      if (v.mode === 'sealed') return undefined;
      if (v.mode === 'active') return controller.isActive() ? undefined : { starting: () => controller.untilServing(30_000) };
      return { leader: v.leaderRow === undefined ? undefined : { apiAddr: v.leaderRow.apiAddr, clusterAddr: v.leaderRow.clusterAddr } };
    },
    // Not a DR secondary's standby (it answers no reads), and only once the replication state is known.
    servesReads: () => servesReads(),
    current: () => reads.current(),
    findLeader: async () => {
      const row = await o.fence.lease.leader();
      return row === undefined || row.holder === me().holder ? undefined : { apiAddr: row.apiAddr, clusterAddr: row.clusterAddr };
    },
    waitForLeaderMs: o.fence.ttlMs + 1000,
    loadTls: () => loadHaTls(o.core.store()),
    connect: (c) => connectHa(c),
    verifiedApiAddr: async (clusterAddr: string): Promise<string | undefined> => leaders.known(clusterAddr) ?? (await leaders.verify(clusterAddr)),
  });
  // Redirects and sys/leader name only the address the active node states over the cluster port.
  const leaders: VerifiedLeader = new VerifiedLeader({ ask: (clusterAddr: string) => relay.ask(clusterAddr, LEADER_PROBE) });
  controller.onChange((v) => {
    if (v.mode !== 'active' && v.leaderRow !== undefined) void leaders.verify(v.leaderRow.clusterAddr);
  });

  const facts: HaFacts = {
    leader: () => {
      const v = controller.view();
      if (controller.isActive()) {
        return { isSelf: true, activeTime: new Date(v.activeSince ?? o.now()).toISOString(), leaderAddress: o.apiAddr(), leaderClusterAddress: `https://${o.clusterAddr}` };
      }
      const row = v.leaderRow;
      // The row's api_addr is never shown: only what the node at its cluster address confirmed.
      const verified = row === undefined ? undefined : leaders.known(row.clusterAddr);
      return { isSelf: false, activeTime: ZERO_TIME, leaderAddress: verified ?? '', leaderClusterAddress: row === undefined ? '' : `https://${row.clusterAddr}` };
    },
    standby: () => controller.view().mode !== 'sealed' && !controller.isActive(),
    performanceStandby: () => servesReads(),
    echo: () => {
      if (!isStandby()) return { echoDurationMs: 0, clockSkewMs: 0 };
      const e = controller.echoes();
      const self = me().holder;
      const known = controller.knownMembers();
      const mine = known.find((m) => m.nodeId === self);
      const active = known.find((m) => m.nodeId === controller.view().leaderRow?.holder);
      const heartbeat = heartbeatHealth(e.answeredAt, o.now(), e.intervalMs);
      return {
        echoDurationMs: e.durationMs,
        clockSkewMs: mine === undefined || active === undefined ? 0 : clockSkewMs(clocksOf(mine), clocksOf(active)),
        ...(heartbeat !== undefined ? { heartbeat } : {}),
      };
    },
    problem: () => controller.storeProblem(),
    nodes: async () => {
      const members = await controller.members(MEMBER_MAX_AGE_MS);
      const view = controller.view();
      const self = me().holder;
      const active = controller.isActive() ? self : view.leaderRow?.holder;
      const activeRow = members.find((m) => m.nodeId === active);
      return members.map((m): HaNodeInfo => ({
        hostname: m.hostname,
        api_address: m.apiAddr,
        cluster_address: `https://${m.clusterAddr}`,
        active_node: m.nodeId === active,
        last_echo: m.nodeId === active ? null : m.lastEcho.toISOString(),
        // As Vault's: what the member measured and sent with its echo; nothing for the active node.
        echo_duration_ms: m.nodeId === active ? 0 : (m.echoDurationMs ?? 0),
        clock_skew_ms: m.nodeId === active || activeRow === undefined ? 0 : clockSkewMs(clocksOf(m), clocksOf(activeRow)),
        version: m.version,
        upgrade_version: m.version,
        redundancy_zone: m.redundancyZone ?? '',
        replication_primary_canary_age_ms: 0,
        // Not Vault's: why a node does not compete now, while it backs off (from its own echo).
        ...(m.activationFailure !== undefined && m.activationFailure.until > Date.now()
          ? { activation_failure: { reason: m.activationFailure.reason, at: new Date(m.activationFailure.at).toISOString(), competes_again_at: new Date(m.activationFailure.until).toISOString() } }
          : {}),
        ...(m.nodeId === self && view.excluded !== undefined ? { identity_taken_by: view.excluded } : {}),
      }));
    },
    stepDown: async () => {
      controller.stepDown();
    },
  };

  const isStandby = (): boolean => {
    const mode = controller.view().mode;
    return mode === 'standby' || mode === 'cooldown';
  };

  // A performance standby answers reads itself once current (standby-reads.ts): its engine
  // follows the shared database and its caches are read again when what it follows names them.
  const held = new HeldReadLease();
  const reads = new StandbyReads({
    follow: () => o.engine.followReads(),
    takePushed: (wal) => o.engine.applyPushed(wal),
    reloadCaches: () => o.core.reload(),
    cachesDeriveFrom,
    lease: { held, now: mono },
  });
  let leaseConn: { readonly address: string; readonly client: HaClient } | undefined;
  const leaseClient = new ReadLeaseClient({
    held,
    take: (wal) => reads.takePushed(wal),
    target: () => (servesReads() ? controller.view().leaderRow?.clusterAddr : undefined),
    open: async (address) => {
      const tls = await loadHaTls(o.core.store());
      if (tls === undefined) return undefined;
      if (leaseConn?.address !== address) {
        leaseConn?.client.close();
        leaseConn = { address, client: connectHa({ address, tls: tls.client }) };
      }
      return leaseConn.client.readLease();
    },
    now: mono,
    everyMs: Math.max(50, Math.floor(leaseMaxMs / 4)),
    log: o.log.child({ ha: true }),
  });

  // A standby keeps its engine near the active node's writes, so becoming active reads little,
  // and reads the replication state the active node keeps (sys/health shows it).
  let following: Promise<unknown> | undefined;
  let followTimer: NodeJS.Timeout | undefined;
  let replicationSeen: RecordedModes | undefined;
  controller.onChange(() => {
    if (!isStandby()) {
      replicationSeen = undefined;
      reads.invalidate();
    }
  });
  const follow = (): void => {
    if (following !== undefined || !isStandby()) return;
    following = (async () => {
      // A standby has no commit of its own in doubt: once the database answers, a storage fault
      // recorded by a read is settled by reading everything again (the active node keeps its
      // fail-closed state until it steps down and reloads).
      if (o.engine.failure() !== undefined) {
        await o.engine.reload();
        reads.invalidate();
        o.log.info('HA: storage answers again; this standby reloaded its state from PostgreSQL');
      } else await o.engine.follow();
      await reads.current();
      const seen = await recordedModes(o.core.store());
      replicationSeen = isStandby() ? seen : undefined;
    })()
      .catch((e: unknown) => o.log.debug({ err: (e as Error).message }, 'HA: following the active node\'s writes failed; retrying'))
      .finally(() => (following = undefined));
  };

  /**
   * The active node's HA certificates went with a wipe (a DR secondary's activation replaces the
   * store and its keyring): made again and served, so its standbys can relay and confirm it
   * (verified-leader.ts). Checked on the follow timer; a read of one cached key.
   */
  let renewingTls: Promise<unknown> | undefined;
  const keepHaTls = (): void => {
    if (renewingTls !== undefined || !controller.isActive() || serving === undefined) return;
    renewingTls = (async () => {
      if ((await loadHaTls(o.core.store())) !== undefined) return;
      const tls = await ensureHaTls(o.core.store(), o.now());
      const listener = o.clusterListener();
      if (!controller.isActive() || listener === undefined) return;
      // Replaces the registration served with the certificates that went.
      serving = await listener.serveHa(haRegistration(tls));
      o.log.info('HA: the cluster\'s HA certificates were made again (the store was replaced) and are served');
    })()
      .catch((e: unknown) => o.log.warn({ err: (e as Error).message }, 'HA: could not make the HA certificates again'))
      .finally(() => (renewingTls = undefined));
  };

  return {
    controller,
    gauges: {
      view: () => controller.view(),
      isActive: () => controller.isActive(),
      leaseOptions: controller.leaseOptions,
      readLeases: () => ({ granted: leases.leasedCount(), heldMs: held.remainingMs(mono()), follows: reads.follows }),
    },
    relay,
    facts,
    clusterAddrs: () => [o.clusterAddr, ...controller.knownMembers().map((m) => m.clusterAddr).filter((a) => a !== o.clusterAddr)],
    execute,
    claim: () => controller.claim(),
    standbyReplication: () => (isStandby() ? replicationSeen : undefined),
    start: () => {
      controller.start();
      leaseClient.start();
      followTimer = setInterval(() => {
        follow();
        keepHaTls();
      }, FOLLOW_MS);
      followTimer.unref();
    },
    async stop() {
      clearInterval(followTimer);
      leaseClient.stop();
      leaseConn?.client.close();
      await following;
      await controller.stop();
      await door.close();
      relay.close();
      leases.close();
    },
  };
}
