/**
 * Replication on one node, as one unit: both kinds' drivers over an injected cluster transport,
 * the rules across kinds, forwarding in both directions, DR operation tokens, the local status
 * and Merkle maintenance, events and the progress sampler. It follows the vault's seal through
 * the observer it gives (`sealObserver`: loaded after every unseal, suspended before every seal),
 * and it runs between `start()` and `stop()`: stop suspends both drivers, closes the cluster
 * listener, stops the sampler and makes forwarding refuse (503); start loads the roles again
 * when the vault is unsealed. The process stays up in between (a node that steps down stops its
 * unit; one that becomes active starts it).
 *
 * What the HTTP layer calls comes in typed facets: `dr`, `performance`, `drTokens`,
 * `pathsFilters` (operations, each audited), `status`, `events`, `requests` (the DR secondary
 * gate, forwarding and visibility the dispatcher needs), `resolveWrappingToken`.
 *
 *   const unit = await ReplicationUnit.create({ engine, seal, vault, transport, log, now, clusterListen, apiAddr });
 *   lifecycle.subscribe(unit.sealObserver);
 *   await unit.start();
 *   unit.serveForwarded(forwardedExecutor(services, routes, onInternal));
 *   await unit.stop();
 */
import type { Logger } from 'pino';
import { InvalidRequest } from '../core/errors.js';
import { KIND_POLICY, KINDS, crossKindRefusal, otherKind, type Kind, type Mode } from '../core/replication/index.js';
import type { SealManager } from '../seal/index.js';
import type { StorageEngine } from '../storage/engine.js';
import { audited } from './audit.js';
import { isJwt, peekJwt } from './activation-token.js';
import type { VaultCatalog } from './catalog.js';
import { ReplicationDriver, type ReplicationTransport } from './driver.js';
import { ReplicationEvents, type FollowItem, type ReplicationEvent } from './events.js';
import { buildFacets, type DrOperations, type DrTokenOperations, type KindOperations, type PathsFilterOperations, type ReindexOptions } from './facets.js';
import { ForwardedWrites, type ForwardExecutor, type ForwardedObservation } from './forwarded-writes.js';
import { LocalReplication } from './local.js';
import { OperationTokens } from './operation-token.js';
import { PathsFilters } from './paths-filters.js';
import { ReplicationProgress } from './progress.js';
import { heldRoleStatus, roleStatus } from './status.js';
import type { ForwardOutcome, ForwardRequest, PrimaryService, ReplicationServer, TlsMaterial } from './transport.js';

const OP_TOKEN_PREFIX = 'node/replication/dr-operation-token/';

/** One listener on the cluster port for every kind this node is primary of (SNI picks the kind). */
export interface ClusterListener {
  /** Adds one kind; the first starts the listener, and closing the returned server removes the kind. */
  serve(registration: { kind: Kind; tls: TlsMaterial; service: PrimaryService }): Promise<ReplicationServer>;
  /** Removes every kind and stops the listener. */
  close(): Promise<void>;
}

/** The cluster transport: a listener made anew at each start, and connections to a primary. */
export interface ClusterTransport {
  listen(address: string): ClusterListener;
  connect: ReplicationTransport['connect'];
}

export interface ReplicationUnitOptions {
  readonly engine: StorageEngine;
  readonly seal: SealManager;
  readonly vault: VaultCatalog;
  readonly transport: ClusterTransport;
  readonly log: Logger;
  readonly now: () => number;
  /** host:port the cluster listener binds. */
  readonly clusterListen: string;
  readonly apiAddr: () => string;
  /** How long a forwarded write's answer waits for the secondary to apply it (default 2000 ms). */
  readonly forwardWaitMs?: number;
  /** Each forwarded write's latency, on both ends (the metrics histogram). */
  readonly onForwarded?: (o: ForwardedObservation) => void;
  /** Heartbeat interval of the sys/replication/events stream (default 15 s). */
  readonly eventsHeartbeatMs?: number;
  /**
   * The cluster addresses (host:port) of every node of this cluster, this node's own included
   * (HA: its membership). As a primary of either kind this node advertises them to its
   * secondaries, which then find whichever node is active (primary-addrs.ts). Default: only this
   * node's own cluster address. `advertiseClusterAddrs` replaces it on a running unit.
   */
  readonly clusterAddrs?: () => readonly string[];
}

/** Status and Merkle maintenance of this node (sys/replication/status, reindex, merkle-check). */
export interface StatusOperations {
  status(kind: Kind): Promise<Record<string, unknown>>;
  reindex(opts: ReindexOptions): Promise<{ warnings: string[] }>;
  merkleCheck(): Promise<Record<string, unknown>>;
}

/** The event history and its live stream (sys/replication/events). */
export interface EventsFacet {
  history(after?: number): ReplicationEvent[];
  follow(o: { after?: number; signal: AbortSignal; heartbeatMs: number }): AsyncGenerator<FollowItem>;
  readonly capacity: number;
  readonly heartbeatMs: number;
}

/** What a request's way through the node needs of replication (http/dispatch.ts ReplicationGates). */
export interface RequestGates {
  drSecondary(): boolean;
  forwardWrite(req: ForwardRequest): Promise<ForwardOutcome>;
  visible(): Promise<void> | undefined;
}

/** An activation JWT names its kind; a token without one is DR's. */
function activationKindOf(token: string): Kind {
  if (!isJwt(token)) return 'dr';
  return peekJwt(token).kind === 'performance' ? 'performance' : 'dr';
}

export class ReplicationUnit {
  readonly drivers: Readonly<Record<Kind, ReplicationDriver>>;
  readonly dr: DrOperations;
  readonly performance: KindOperations;
  readonly drTokens: DrTokenOperations;
  readonly pathsFilters: PathsFilterOperations;
  readonly status: StatusOperations;
  readonly events: EventsFacet;
  readonly requests: RequestGates;
  /** Every replication operation and state change of this node, as recorded (the routes read `events`). */
  readonly eventLog: ReplicationEvents;
  /** Loads the roles after every unseal and suspends them before every seal (vault/lifecycle.ts). */
  readonly sealObserver: { opened(): Promise<void>; sealing(): Promise<void> };

  private readonly forwarding: ForwardedWrites;
  private readonly progress: ReplicationProgress;
  private readonly local: LocalReplication;
  private cluster: ClusterListener;
  /** Whether `cluster` was closed by a stop (the next start makes a new listener). */
  private clusterClosed = false;
  private sampler: ReturnType<typeof setInterval> | undefined;
  private running = false;
  /** Whether the roles are loaded (unsealed and running). */
  private loaded = false;
  /** What each kind is while not loaded: the sealed summary, then the mode it last had. */
  private readonly idleMode: Record<Kind, string> = { dr: 'disabled', performance: 'disabled' };
  /** The cluster's addresses as a primary advertises them (ReplicationUnitOptions.clusterAddrs). */
  private clusterAddrs: (() => readonly string[]) | undefined;

  /** Builds the unit, stopped; `start()` runs it. */
  static async create(o: ReplicationUnitOptions): Promise<ReplicationUnit> {
    const unit = new ReplicationUnit(o);
    for (const kind of KINDS) {
      const summary = await o.engine.getSystem(KIND_POLICY[kind].modeSummary);
      if (summary) unit.idleMode[kind] = (JSON.parse(summary.toString('utf8')) as { mode: string }).mode;
    }
    await unit.local.load();
    return unit;
  }

  private constructor(private readonly o: ReplicationUnitOptions) {
    const { engine, vault, now } = o;
    this.clusterAddrs = o.clusterAddrs;
    // Operations are logged by the audit trail (one line each, with the event's fields); state and
    // connection changes by the events themselves.
    const audit = o.log.child({ component: 'replication' });
    const events = new ReplicationEvents({ log: audit, now });
    this.eventLog = events;
    this.cluster = o.transport.listen(o.clusterListen);
    const drivers = {} as Record<Kind, ReplicationDriver>;
    this.drivers = drivers;
    /** Only a performance primary has filters; refused elsewhere naming the mode, before anything is read. */
    const registry = (): readonly string[] => {
      const d = drivers.performance;
      const s = d.isLoaded ? d.state : undefined;
      if (s?.mode !== 'primary') throw new InvalidRequest(`this cluster is not a performance primary (performance mode: ${this.mode('performance')})`);
      return Object.keys(s.secondaries).filter((id) => s.secondaries[id]?.status !== 'revoked').sort();
    };
    const filters = new PathsFilters({ store: () => vault.store(), registry, catalog: () => vault.filterCatalog(), migrateLegacyTables: () => vault.migrateLegacyTables() });
    this.forwarding = new ForwardedWrites({ drivers, scopeFor: (id) => filters.scopeFor(id), lastIndex: () => engine.lastGuard().index, log: o.log, audit, ...(o.onForwarded ? { observe: o.onForwarded } : {}) });
    for (const kind of KINDS) drivers[kind] = this.driverOf(kind, events, filters);
    // Rates behind WAL headroom and the ETAs (progress.ts), sampled once a second while running.
    this.progress = new ReplicationProgress({ engine, drivers });
    this.local = new LocalReplication({ engine, now, log: o.log, role: (kind) => this.roleStatus(kind) });
    const tokens = new OperationTokens({
      records: {
        get: (name) => vault.store().get(OP_TOKEN_PREFIX + name),
        put: (name, value) => vault.store().commit([value === undefined ? { type: 'del', key: OP_TOKEN_PREFIX + name } : { type: 'put', key: OP_TOKEN_PREFIX + name, value }]),
      },
      threshold: async () => (await o.seal.status()).t,
      verifyShares: (shares) => o.seal.verifyRootKeyShares(shares),
    });
    const facets = buildFacets({
      drivers, vault, tokens, local: this.local, filters, engine, audit, events,
      rules: {
        syncPerformance: () => this.syncPerformance(),
        adoptPromotedClusterAddr: async () => {
          const { dr, performance } = drivers;
          if (!performance.isLoaded || dr.state.mode !== 'primary') return;
          await performance.adoptClusterAddr(dr.state.primaryClusterAddr);
        },
        performanceRefusal: () => (this.loaded ? crossKindRefusal('performance', 'other', drivers.dr.state.mode) : undefined),
        drMode: () => this.mode('dr'),
        performanceMode: () => this.mode('performance'),
      },
    });
    this.dr = facets.dr;
    this.performance = facets.performance;
    this.drTokens = facets.drTokens;
    this.pathsFilters = facets.pathsFilters;
    // The one place replication operations are logged for operators (never a token).
    this.status = audited(audit, this.local, {
      reindex: { op: 'reindex', detail: ([r]) => ({ diff: r.diff, force: r.force }) },
      merkleCheck: { op: 'merkle-check' },
    }, events);
    this.events = { history: (after) => events.history(after), follow: (f) => events.follow(f), capacity: events.capacity, heartbeatMs: o.eventsHeartbeatMs ?? 15_000 };
    const perf = drivers.performance;
    this.requests = {
      drSecondary: () => this.mode('dr') === 'secondary',
      forwardWrite: this.forwarding.forward,
      visible: () => (perf.isLoaded ? perf.pendingVisibility() : undefined),
    };
    this.sealObserver = {
      opened: async () => {
        if (this.running) await this.loadRoles();
      },
      sealing: async () => {
        // Event streams were authorized by tokens a sealed node cannot check: they end (clients reconnect with Last-Event-ID).
        events.endFollowers();
        await this.suspendRoles();
      },
    };
  }

  /** One kind's driver over the unit's cluster listener, told the other kind's mode for the rules across kinds. */
  private driverOf(kind: Kind, events: ReplicationEvents, filters: PathsFilters): ReplicationDriver {
    const o = this.o;
    return new ReplicationDriver({
      kind,
      engine: o.engine,
      seal: o.seal,
      core: o.vault,
      // The listener of the current run: a stop closes it and the next start makes a new one.
      transport: { serve: ({ kind: served, tls, service }) => this.cluster.serve({ kind: served, tls, service }), connect: (c) => o.transport.connect(c) },
      log: o.log.child({ replication: kind }),
      clusterListen: o.clusterListen,
      apiAddr: o.apiAddr,
      now: o.now,
      otherMode: () => this.liveMode(otherKind(kind)),
      forwarded: this.forwarding.executorFor,
      emit: events.emitter(kind),
      clusterAddrs: () => this.clusterAddrs?.() ?? [],
      ...(o.forwardWaitMs !== undefined ? { forwardWaitMs: o.forwardWaitMs } : {}),
      ...(KIND_POLICY[kind].filters ? { pathsFilter: filters } : {}),
    });
  }

  /** Runs replication: the sampler, and the roles when the vault is unsealed. Nothing when running. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    if (this.clusterClosed) this.cluster = this.o.transport.listen(this.o.clusterListen);
    this.clusterClosed = false;
    this.forwarding.running = true;
    this.sampler = setInterval(() => this.progress.sample(this.o.now()), 1000);
    this.sampler.unref();
    if (!this.o.vault.sealed()) await this.loadRoles();
  }

  /**
   * Stops replication while the process stays up: forwarding refuses, both roles are suspended
   * (their persisted state untouched), the cluster listener is closed and the sampler stopped.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.forwarding.running = false;
    clearInterval(this.sampler);
    this.sampler = undefined;
    await this.suspendRoles();
    await this.cluster.close();
    this.clusterClosed = true;
  }

  /**
   * Replaces the source of the cluster's addresses a primary advertises (the option
   * `clusterAddrs`), for a node whose membership is known only once the unit runs; undefined goes
   * back to this node's own address. Secondaries learn the change from the next heartbeat reply.
   */
  advertiseClusterAddrs(source: (() => readonly string[]) | undefined): void {
    this.clusterAddrs = source;
  }

  /** Binds the executor of writes performance secondaries forward to this node as their primary. */
  serveForwarded(run: ForwardExecutor): void {
    this.forwarding.serve(run);
  }

  /** An activation JWT names its kind; the primary of that kind verifies it (DR when unnamed). */
  readonly resolveWrappingToken = (presented: string): Promise<string> => this.drivers[activationKindOf(presented)].resolveActivationJwt(presented);

  /** The mode status and health report for `kind` ('secondary' while bootstrapping). */
  mode(kind: Kind): string {
    const d = this.drivers[kind];
    const mode = this.loaded && d.isLoaded ? d.state.mode : kind === 'performance' && this.loaded && this.drIsSecondary() ? 'disabled' : this.idleMode[kind];
    return mode === 'bootstrapping' ? 'secondary' : mode;
  }

  /** The replication set this node belongs to through DR ('' when DR is disabled). */
  clusterId(): string {
    const s = this.drivers.dr.state;
    return s.mode === 'disabled' ? '' : s.clusterId;
  }

  /** The cluster address this node advertises. */
  clusterAddr(): string {
    return this.drivers.dr.clusterAddr();
  }

  private liveMode(kind: Kind): Mode {
    const d = this.drivers[kind];
    return d.isLoaded ? d.state.mode : (this.idleMode[kind] as Mode);
  }

  private drIsSecondary(): boolean {
    return this.drivers.dr.isSecondary();
  }

  private async loadRoles(): Promise<void> {
    await this.drivers.dr.load();
    await this.syncPerformance();
    this.loaded = true;
  }

  private async suspendRoles(): Promise<void> {
    const { dr, performance: perf } = this.drivers;
    if (dr.isLoaded) this.idleMode.dr = dr.state.mode;
    if (perf.isLoaded) this.idleMode.performance = perf.state.mode;
    this.loaded = false;
    await perf.suspend();
    await dr.suspend();
  }

  /**
   * Rule across kinds: a DR secondary holds its primary's performance role (local class) but has
   * none of its own, so the performance driver stays unloaded there; once the node is no longer a
   * DR secondary (promoted, or left its set) the role it holds is loaded and runs.
   */
  private async syncPerformance(): Promise<void> {
    const { dr, performance: perf } = this.drivers;
    if (this.o.vault.sealed() || !dr.isLoaded || !this.running) return;
    if (this.drIsSecondary() && perf.isLoaded) await perf.unload();
    else if (!this.drIsSecondary() && !perf.isLoaded) await perf.load();
  }

  /** Every status block says whether this node's storage has failed closed (see storage/fault-guard.ts). */
  private async roleStatus(kind: Kind): Promise<Record<string, unknown>> {
    const { engine, now } = this.o;
    const failure = engine.failure();
    const d = this.drivers[kind];
    const held = this.loaded && kind === 'performance' && !d.isLoaded && this.drIsSecondary();
    return {
      storage_failed: failure !== undefined,
      ...(failure !== undefined ? { storage_error: failure.message } : {}),
      ...(this.loaded && d.isLoaded
        ? this.progress.decorate(kind, roleStatus(d, engine.lastGuard().index, now(), {
            firstRetained: engine.firstRetainedIndex(), retainedBytes: engine.walRetainedBytes(), ...engine.walBounds(),
          }), now())
        : {}),
      // A DR secondary's performance block: the role it holds for its primary (status.ts).
      ...(held ? await heldRoleStatus(this.o.vault.store(), 'performance').catch(() => ({})) : {}),
    };
  }
}
