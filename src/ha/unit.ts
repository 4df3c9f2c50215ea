/**
 * HA as one unit: the lease (the controller over the fence's lease store), the active role
 * (active-role.ts), the cluster port in both roles (the active role's HA service, the
 * standby's door: door.ts), the relay of a standby's requests (standby.ts) with the verified
 * leader, the read leases (read-lease-server.ts as the active node, read-lease-client.ts as a
 * standby), the standby's follow and reads (standby-follow.ts) and the facts the HTTP routes show
 * (facts.ts). The node builds it from the ports of ports.ts and steps aside.
 *
 *   const ha = createHaUnit({ fence, engine, vault, cachesDeriveFrom, replication, clusterListener, listenDoor, connect, clusterAddr, log, now, performanceStandby });
 *   lifecycle.subscribe(ha.controller.sealObserver);
 *   const http = await startHttp({ ..., standby: ha.relay });
 *   await ha.claim(http.url);                    // this node's identity, once its API address is known
 *   ha.start(http.execute);                      // compete, follow, run what standbys relay
 *   await ha.stop();
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { LeaseCandidate } from '../core/ha/lease-store.js';
import type { LeaseOptions } from '../core/ha/lease.js';
import { HeldReadLease } from '../core/ha/read-lease.js';
import { VERSION } from '../core/version.js';
import { pushedWal } from '../storage/read-follow.js';
import { standbyRegistrations, type RecordedModes, type TlsMaterial } from '../replication/index.js';
import { ActiveRole, standbyRefusal } from './active-role.js';
import { realClock } from './clock.js';
import { HaController } from './controller.js';
import { HaDoor } from './door.js';
import { haFacts, MEMBER_MAX_AGE_MS } from './facts.js';
import type { DoorListen, HaClusterListener, HaEngine, HaFacts, HaFence, HaGauges, HaReplication, HaVault, RawReply, RawRequest, RelayExecutor } from './ports.js';
import { ReadLeaseClient, type LeaseChannel } from './read-lease-client.js';
import { ReadLeaseServer } from './read-lease-server.js';
import { StandbyFollow } from './standby-follow.js';
import { StandbyRelay, type RelayClient } from './standby.js';
import { loadHaTls } from './tls.js';
import { LEADER_PROBE, VerifiedLeader } from './verified-leader.js';

/**
 * How often a standby brings its engine up to the active node's writes (engine.follow): what is
 * left to read on becoming active is at most this much of writes.
 */
const FOLLOW_MS = 500;

/** The longest read lease the active node grants a performance standby (ms; half the lock row's lifetime when shorter). */
const READ_LEASE_MS = 1000;

/** A monotonic clock for read leases (only their lengths matter, never the time of day). */
const mono = (): number => performance.now();

/** The lease timings for a lock-row lifetime (ms): renew at a quarter, retry at an eighth, stop a quarter early. */
export function leaseTimings(ttlMs: number): Partial<LeaseOptions> {
  // A polite attempt (step-down cooldown) waits a retry and a half, so a standby's next attempt
  // comes first; a failed activation backs off one lease first.
  const retryMs = Math.floor(ttlMs / 8);
  return { ttlMs, renewMs: Math.floor(ttlMs / 4), retryMs, marginMs: Math.floor(ttlMs / 4), graceMs: Math.floor(retryMs * 1.5), backoffMs: ttlMs };
}

/** A stable id for this node: its host and addresses (so a restart is the same member). */
export function nodeIdOf(host: string, apiAddr: string, clusterAddr: string): string {
  return `${host}-${createHash('sha256').update(`${apiAddr}|${clusterAddr}`).digest('hex').slice(0, 10)}`;
}

/** A connection to the active node's cluster port: the relay's requests and the read-lease stream. */
export interface HaConnection extends RelayClient {
  readLease(): LeaseChannel;
}

export interface HaUnit {
  readonly controller: HaController;
  /** What the HA metrics read. */
  readonly gauges: HaGauges;
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
  /**
   * Takes this node's identity (its API address `apiAddr`) in the member table before it
   * competes; rejects (IdentityTaken) while another live process holds it.
   */
  claim(apiAddr: string): Promise<void>;
  /** Starts the timers; `execute` runs the requests standbys relay here while this node is active. */
  start(execute: RelayExecutor): void;
  stop(): Promise<void>;
}

export interface HaUnitOptions {
  readonly fence: HaFence;
  readonly engine: HaEngine;
  readonly vault: HaVault;
  /** Whether the vault's caches derive from a storage key (a standby reads them again when its follow names one). */
  readonly cachesDeriveFrom: (key: string) => boolean;
  readonly replication: HaReplication;
  /** The cluster listener of the replication unit's current run (the one HA forwarding joins). */
  readonly clusterListener: () => HaClusterListener | undefined;
  /** The standby's own listener on the cluster port. */
  readonly listenDoor: DoorListen;
  /** Connects a standby's relay to the active node's cluster port. */
  readonly connect: (o: { address: string; tls: TlsMaterial }) => HaConnection;
  readonly clusterAddr: string;
  readonly log: Logger;
  readonly now: () => number;
  /** Standbys answer reads themselves (config `disable_performance_standby` false). */
  readonly performanceStandby: boolean;
}

export function createHaUnit(o: HaUnitOptions): HaUnit {
  const host = hostname();
  // This process among any others that share its node id (the same host and addresses).
  const instance = randomBytes(8).toString('hex');
  // What claim() and start() hand over: the API address, and the HTTP layer's executor.
  let apiAddr = '';
  let run: RelayExecutor | undefined;
  const me = (): LeaseCandidate => {
    return { holder: nodeIdOf(host, apiAddr, o.clusterAddr), hostname: host, apiAddr, clusterAddr: o.clusterAddr, version: VERSION, instance, redundancyZone: o.fence.redundancyZone };
  };
  // Read leases (src/core/ha/read-lease.ts): as the active node, granted to performance standbys
  // and told of every commit before it is acknowledged; as a standby, held while fresh.
  const leaseMaxMs = Math.min(READ_LEASE_MS, Math.floor(o.fence.ttlMs / 2));
  const leases: ReadLeaseServer = new ReadLeaseServer({ maxMs: leaseMaxMs, now: mono, deadlineInMs: (): number | undefined => controller.activeForMs() });
  // The batch's WAL entries go with its count when they can (read-follow.ts pushedWal).
  o.fence.bindAfterBatch((ops) => leases.published(() => pushedWal(ops)));
  // A standby answers secondaries on its cluster port with where the active node is (door.ts).
  const door = new HaDoor({
    address: o.clusterAddr,
    log: o.log.child({ ha: true }),
    listen: o.listenDoor,
    registrations: () =>
      standbyRegistrations({
        store: () => o.vault.store(),
        activeClusterAddr: () => {
          const v = controller.view();
          return v.mode === 'active' ? undefined : v.leaderRow?.clusterAddr;
        },
        now: o.now,
      }),
  });
  const role = new ActiveRole({
    ha: () => controller,
    door,
    leases,
    engine: o.engine,
    vault: o.vault,
    replication: o.replication,
    clusterListener: o.clusterListener,
    execute: () => run,
    log: o.log,
    now: o.now,
  });
  const controller: HaController = new HaController({
    store: o.fence.lease,
    me,
    log: o.log.child({ ha: true }),
    clock: realClock(o.now),
    memberMaxAgeMs: MEMBER_MAX_AGE_MS,
    ...(o.fence.keeper !== undefined ? { keeper: o.fence.keeper } : {}),
    lease: leaseTimings(o.fence.ttlMs),
    // No standby may still count on a read lease from this node once another can take over.
    beforeRelease: (): Promise<void> => leases.revokeAll(),
    role,
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

  const held = new HeldReadLease();
  const follow = new StandbyFollow({ ha: controller, engine: o.engine, vault: o.vault, cachesDeriveFrom: o.cachesDeriveFrom, log: o.log, performanceStandby: o.performanceStandby, lease: { held, now: mono } });
  let leaseConn: { readonly address: string; readonly client: HaConnection } | undefined;
  const leaseClient = new ReadLeaseClient({
    held,
    take: (wal) => follow.takePushed(wal),
    target: () => (follow.servesReads() ? controller.view().leaderRow?.clusterAddr : undefined),
    open: async (address) => {
      const tls = await loadHaTls(o.vault.store());
      if (tls === undefined) return undefined;
      if (leaseConn?.address !== address) {
        leaseConn?.client.close();
        leaseConn = { address, client: o.connect({ address, tls: tls.client }) };
      }
      return leaseConn.client.readLease();
    },
    now: mono,
    everyMs: Math.max(50, Math.floor(leaseMaxMs / 4)),
    log: o.log.child({ ha: true }),
  });
  const relay: StandbyRelay = new StandbyRelay({
    relayTarget: () => {
      const v = controller.view();
      if (v.mode === 'sealed') return undefined;
      if (v.mode === 'active') return controller.isActive() ? undefined : { starting: () => controller.untilServing(30_000) };
      return { leader: v.leaderRow === undefined ? undefined : { apiAddr: v.leaderRow.apiAddr, clusterAddr: v.leaderRow.clusterAddr } };
    },
    // Not a DR secondary's standby (it answers no reads), and only once the replication state is known.
    servesReads: () => follow.servesReads(),
    current: () => follow.current(),
    findLeader: async () => {
      const row = await o.fence.lease.leader();
      return row === undefined || row.holder === me().holder ? undefined : { apiAddr: row.apiAddr, clusterAddr: row.clusterAddr };
    },
    waitForLeaderMs: o.fence.ttlMs + 1000,
    loadTls: () => loadHaTls(o.vault.store()),
    connect: o.connect,
    verifiedApiAddr: async (clusterAddr: string): Promise<string | undefined> => leaders.known(clusterAddr) ?? (await leaders.verify(clusterAddr)),
  });
  // Redirects and sys/leader name only the address the active node states over the cluster port.
  const leaders: VerifiedLeader = new VerifiedLeader({ ask: (clusterAddr: string) => relay.ask(clusterAddr, LEADER_PROBE) });
  controller.onChange((v) => {
    if (v.mode !== 'active' && v.leaderRow !== undefined) void leaders.verify(v.leaderRow.clusterAddr);
  });

  const facts = haFacts({ controller, leaders, follow, me, apiAddr: () => apiAddr, clusterAddr: o.clusterAddr, now: o.now });
  let stopTimer: (() => void) | undefined;
  return {
    controller,
    gauges: {
      view: () => controller.view(),
      isActive: () => controller.isActive(),
      leaseOptions: controller.leaseOptions,
      readLeases: () => ({ granted: leases.leasedCount(), heldMs: held.remainingMs(mono()), follows: follow.follows() }),
    },
    relay,
    facts,
    clusterAddrs: () => [o.clusterAddr, ...controller.knownMembers().map((m) => m.clusterAddr).filter((a) => a !== o.clusterAddr)],
    execute: (req) => role.execute(req),
    claim: (at) => {
      apiAddr = at;
      return controller.claim();
    },
    standbyReplication: () => follow.replication(),
    start: (execute) => {
      run = execute;
      controller.start();
      leaseClient.start();
      stopTimer = realClock().every(FOLLOW_MS, () => {
        follow.follow();
        role.keepTls();
      });
    },
    async stop() {
      stopTimer?.();
      leaseClient.stop();
      leaseConn?.client.close();
      await follow.settled();
      await controller.stop();
      await door.close();
      relay.close();
      leases.close();
    },
  };
}
