/**
 * Wires replication into a node: the local Merkle/WAL status and maintenance, one replication
 * driver per kind (DR, performance) over the gRPC transport, DR operation tokens, the hooks that
 * tie them to the seal lifecycle, and the rules across kinds (a DR secondary's performance role
 * stays inert until it is promoted or leaves its set).
 *
 *   const repl = await wireReplication({ engine, seal, core, log, now, clusterListen, apiAddr });
 *   nodeRoutes(core, facts, repl.routes, sys);
 */
import type { Logger } from 'pino';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import type { ForwardScope } from '../core/paths-filter.js';
import { KIND_POLICY, KINDS, type Kind, type Mode } from '../core/replication/index.js';
import { OperationTokens } from '../replication/operation-token.js';
import { ReplicationDriver, type CoreHooks } from '../replication/driver.js';
import { heldRoleStatus, roleStatus } from '../replication/status.js';
import { isJwt, peekJwt } from '../replication/activation-token.js';
import { LocalReplication } from '../replication/local.js';
import { ReplicationProgress } from '../replication/progress.js';
import { ReplicationEvents } from '../replication/events.js';
import { PathsFilters, readSecondaryDynamicFilter } from '../replication/paths-filters.js';
import type { SealManager } from '../seal/index.js';
import type { StorageEngine } from '../storage/engine.js';
import type { ForwardReply, ForwardRequest } from '../replication/transport.js';
import { connectPrimary, createClusterServer } from '../transport/grpc/index.js';
import type { VaultCore } from '../vault/core.js';
import type { DrService, KindService, PathsFilterService } from '../http/routes/replication-kind.js';
import type { DrOperationTokenService } from '../http/routes/dr-operation-token.js';
import { audited } from './replication-audit.js';
import { batchOperationTokenCheck, isBatchToken } from './dr-batch-token.js';
import type { ReplicationRoutes } from './routes.js';

const OP_TOKEN_PREFIX = 'node/replication/dr-operation-token/';

function activationKindOf(token: string): Kind {
  if (!isJwt(token)) return 'dr';
  return peekJwt(token).kind === 'performance' ? 'performance' : 'dr';
}

export interface WiredReplication {
  readonly routes: ReplicationRoutes;
  readonly dr: ReplicationDriver;
  readonly performance: ReplicationDriver;
  /** Every replication operation and state change of this node (sys/replication/events). */
  readonly events: ReplicationEvents;
  drMode(): string;
  performanceMode(): string;
  clusterId(): string;
  /** Stops both kinds' I/O (shutdown). */
  suspend(): Promise<void>;
  /** Binds the executor of writes performance secondaries forward to this node as their primary. */
  executeForwarded(run: ForwardExecutor): void;
}

/** One forwarded write: `forwarded` on the performance secondary that sent it, `executed` on the primary. */
export interface ForwardedObservation {
  readonly side: 'forwarded' | 'executed';
  readonly secondaryId: string;
  readonly seconds: number;
  readonly ok: boolean;
}

export type ForwardExecutor = (secondaryId: string, req: ForwardRequest, scope: ForwardScope) => Promise<Omit<ForwardReply, 'commitIndex'>>;

/** Longest a forwarded write's answer waits for connected DR secondaries to confirm it. */
const FORWARD_DR_CONFIRM_MS = 5_000;

/** What a replication driver needs of the vault core (the driver itself knows no vault module). */
export function coreHooks(core: VaultCore): CoreHooks {
  return {
    store: () => core.store(),
    reopen: () => core.reopen(),
    reload: () => core.reload(),
    wrap: (data, ttl, path) => core.wrapping.wrap({ data }, ttl, path),
    revokeAccessor: async (accessor) => {
      await core.tokens.revokeAccessor(accessor);
    },
    restoreRoot: async (token) => {
      await core.tokens.createRoot({ id: token });
    },
  };
}

export async function wireReplication(o: {
  engine: StorageEngine;
  seal: SealManager;
  core: VaultCore;
  log: Logger;
  now: () => number;
  clusterListen: string;
  apiAddr: () => string;
  /** How long a forwarded write's answer waits for the secondary to apply it (default 2000 ms). */
  forwardWaitMs?: number;
  /** Each forwarded write's latency, on both ends (the metrics histogram). */
  onForwarded?: (o: ForwardedObservation) => void;
  /** Heartbeat interval of the sys/replication/events stream (default 15 s). */
  eventsHeartbeatMs?: number;
}): Promise<WiredReplication> {
  const { engine, seal, core, log, now } = o;
  // Operations are logged by the audit trail (one line each, with the event's fields); state and
  // connection changes by the events themselves.
  const audit = log.child({ component: 'replication' });
  const events = new ReplicationEvents({ log: audit, now });
  const hooks = coreHooks(core);
  const drivers = {} as Record<Kind, ReplicationDriver>;
  // One listener on the cluster port for every kind this node is primary of: it starts with the
  // first kind served and stops when none is; the SNI name picks the kind's certificate and CA.
  const cluster = createClusterServer({ address: o.clusterListen, log });
  // The primary's executor of forwarded writes: the HTTP dispatcher, bound once routes exist.
  let executor: ForwardExecutor | undefined;
  // Every forwarded write leaves one audit line on the primary: the secondary, the operation and
  // the status it was answered (never its path's arguments, body or values).
  const forwardAudit = audited(audit, { executeForwarded: (run: ForwardExecutor, id: string, req: ForwardRequest) => executeForwarded(run, id, req) }, {
    executeForwarded: {
      op: 'performance/forward',
      refused: (r) => r.kind === 'error',
      detail: ([, id, req], r) => ({ secondary_id: id, operation: req.operation, request_id: req.requestId, ...(r ? { status: r.status } : {}) }),
    },
  });
  const forwarded = (): ((id: string, req: ForwardRequest) => Promise<ForwardReply>) | undefined => {
    const run = executor;
    if (!run) return undefined;
    return async (id, req) => {
      const started = performance.now();
      let ok = false;
      try {
        const r = await forwardAudit.executeForwarded(run, id, req);
        ok = r.kind !== 'error';
        return r;
      } finally {
        o.onForwarded?.({ side: 'executed', secondaryId: id, seconds: (performance.now() - started) / 1000, ok });
      }
    };
  };
  /** Runs one forwarded write, then holds its answer until connected DR secondaries hold it. */
  const executeForwarded = async (run: ForwardExecutor, id: string, req: ForwardRequest): Promise<ForwardReply> => {
    // Held to the same paths filter as everything this primary sends that secondary.
    const answer = await run(id, req, await filters.scopeFor(id));
    // Every write of the request is committed by now: the last index covers them all.
    const commitIndex = engine.lastGuard().index;
    log.debug({ secondary_id: id, operation: req.operation, status: answer.status }, 'forwarded write executed');
    // A forwarded write is acknowledged only once every connected DR secondary holds it, so a
    // DR failover loses none (REPLICATION.md 8); a DR secondary that is partitioned stops
    // counting at its heartbeat timeout, which bounds this wait.
    if (answer.kind !== 'error' && !(await drivers.dr.secondariesApplied(commitIndex, FORWARD_DR_CONFIRM_MS))) {
      log.warn({ secondary_id: id, commit_index: commitIndex.toString(), wait_ms: FORWARD_DR_CONFIRM_MS }, 'forwarded write acknowledged before a connected DR secondary confirmed it');
    }
    return { ...answer, commitIndex };
  };
  /** Both layouts of mount tables become one key per mount (a paths filter drops mounts by key). */
  const migrateLegacyTables = async (): Promise<void> => {
    await core.mounts.migrateLegacyTables();
    await core.auth.table.migrateLegacyTables();
  };
  /** Only a performance primary has filters; refused elsewhere naming the mode, before anything is read. */
  const perfRegistry = (): readonly string[] => {
    const d = drivers.performance;
    const s = d.isLoaded ? d.state : undefined;
    if (s?.mode !== 'primary') throw new InvalidRequest(`this cluster is not a performance primary (performance mode: ${performanceMode()})`);
    return Object.keys(s.secondaries).filter((id) => s.secondaries[id]?.status !== 'revoked').sort();
  };
  const becamePerformancePrimary = async (): Promise<void> => {
    await migrateLegacyTables();
    await core.tokens.batch.ensureKey();
  };
  const filters = new PathsFilters({ store: () => core.store(), registry: perfRegistry, migrateLegacyTables });
  // What each kind is while sealed (or not loaded): only its summary says.
  const sealedMode: Record<Kind, string> = { dr: 'disabled', performance: 'disabled' };
  for (const kind of KINDS) {
    const summary = await engine.getSystem(KIND_POLICY[kind].modeSummary);
    if (summary) sealedMode[kind] = (JSON.parse(summary.toString('utf8')) as { mode: string }).mode;
  }
  const liveMode = (kind: Kind): Mode => {
    const d = drivers[kind];
    return d.isLoaded ? d.state.mode : (sealedMode[kind] as Mode);
  };
  for (const kind of KINDS) {
    const other: Kind = kind === 'dr' ? 'performance' : 'dr';
    drivers[kind] = new ReplicationDriver({
      kind,
      engine,
      seal,
      core: hooks,
      transport: {
        serve: ({ kind: served, tls, service }) => cluster.serve({ kind: served, tls, service }),
        connect: (opts) => connectPrimary(opts),
      },
      log: log.child({ replication: kind }),
      clusterListen: o.clusterListen,
      apiAddr: o.apiAddr,
      now,
      otherMode: () => liveMode(other),
      forwarded,
      emit: events.emitter(kind),
      ...(o.forwardWaitMs !== undefined ? { forwardWaitMs: o.forwardWaitMs } : {}),
      ...(kind === 'performance' ? { pathsFilter: filters } : {}),
    });
  }
  const dr = drivers.dr;
  const perf = drivers.performance;
  const drIsSecondary = (): boolean => dr.state.mode === 'secondary' || dr.state.mode === 'bootstrapping';
  /**
   * Rule across kinds: a DR secondary holds its primary's performance role (local class) but has
   * none of its own, so the performance driver stays unloaded there; once the node is no longer a
   * DR secondary (promoted, or left its set) the role it holds is loaded and runs.
   */
  const syncPerformance = async (): Promise<void> => {
    if (core.sealed() || !dr.isLoaded) return;
    if (drIsSecondary() && perf.isLoaded) await perf.unload();
    else if (!drIsSecondary() && !perf.isLoaded) await perf.load();
  };
  let loaded = false;
  core.onOpened.push(async () => {
    await dr.load();
    await syncPerformance();
    loaded = true;
  });
  core.onSealing.push(async () => {
    // Event streams were authorized by tokens a sealed node cannot check: they end (clients reconnect with Last-Event-ID).
    events.endFollowers();
    sealedMode.dr = dr.state.mode;
    sealedMode.performance = perf.isLoaded ? perf.state.mode : sealedMode.performance;
    loaded = false;
    await perf.suspend();
    await dr.suspend();
  });
  const modeOf = (kind: Kind) => (): string => {
    const mode = loaded && drivers[kind].isLoaded ? drivers[kind].state.mode : kind === 'performance' && loaded && drIsSecondary() ? 'disabled' : sealedMode[kind];
    return mode === 'bootstrapping' ? 'secondary' : mode;
  };
  const drMode = modeOf('dr');
  const performanceMode = modeOf('performance');
  core.drSecondaryCheck = () => drMode() === 'secondary';
  core.forwardWrite = async (req) => {
    const started = performance.now();
    let ok = false;
    try {
      const out = await drivers.performance.forward(req);
      ok = out.reply.kind !== 'error';
      return out;
    } finally {
      const s = drivers.performance.isLoaded ? drivers.performance.state : undefined;
      o.onForwarded?.({ side: 'forwarded', secondaryId: s?.mode === 'secondary' ? (s.secondaryId ?? '') : '', seconds: (performance.now() - started) / 1000, ok });
    }
  };
  core.visible = () => (drivers.performance.isLoaded ? drivers.performance.pendingVisibility() : undefined);

  // Rates behind WAL headroom and the ETAs (replication/progress.ts), sampled once a second.
  const progress = new ReplicationProgress({ engine, drivers });
  const sampler = setInterval(() => progress.sample(now()), 1000);
  sampler.unref();

  const local = new LocalReplication({
    engine,
    now,
    log,
    // Every status block says whether this node's storage has failed closed (see storage/fault-guard.ts).
    role: async (kind) => {
      const failure = engine.failure();
      const held = loaded && kind === 'performance' && !perf.isLoaded && drIsSecondary();
      return {
        storage_failed: failure !== undefined,
        ...(failure !== undefined ? { storage_error: failure.message } : {}),
        ...(loaded && drivers[kind].isLoaded
          ? progress.decorate(kind, roleStatus(drivers[kind], engine.lastGuard().index, now(), {
              firstRetained: engine.firstRetainedIndex(), retainedBytes: engine.walRetainedBytes(), ...engine.walBounds(),
            }), now())
          : {}),
        // A DR secondary's performance block: the role it holds for its primary (status.ts).
        ...(held ? await heldRoleStatus(core.store(), 'performance').catch(() => ({})) : {}),
      };
    },
  });
  await local.load();

  const tokens = new OperationTokens({
    records: {
      get: (name) => core.store().get(OP_TOKEN_PREFIX + name),
      put: (name, value) => core.store().commit([value === undefined ? { type: 'del', key: OP_TOKEN_PREFIX + name } : { type: 'put', key: OP_TOKEN_PREFIX + name, value }]),
    },
    threshold: async () => (await seal.status()).t,
    verifyShares: (shares) => seal.verifyRootKeyShares(shares),
  });

  /** DR-secondary-only operations refuse elsewhere, naming the mode, before any token is checked. */
  const requireSecondary = (): void => {
    const mode = drMode();
    if (mode !== 'secondary') throw new InvalidRequest(`this node is not a DR secondary (dr mode: ${mode})`);
  };
  const secondaryOnly = <A extends unknown[], R>(fn: (...a: A) => Promise<R>) => async (...a: A): Promise<R> => {
    requireSecondary();
    return fn(...a);
  };

  /** The kind's operations; after each DR one, the rule across kinds is applied again. */
  const kindService = (d: ReplicationDriver): KindService => {
    const after = <A extends unknown[], R>(fn: (...a: A) => Promise<R>) => async (...a: A): Promise<R> => {
      try {
        return await fn(...a);
      } finally {
        if (d.kind === 'dr') await syncPerformance();
      }
    };
    return {
      enablePrimary: after(async (a: string) => {
        await d.enablePrimary(a);
        // Before any secondary can connect: filters judge mount tables by their per-mount keys, and
        // a secondary mints batch tokens with the primary's key, which it may not make itself.
        if (d.kind === 'performance') await becamePerformancePrimary();
      }),
      demote: after(() => d.demote()),
      disablePrimary: after(() => d.disablePrimary()),
      secondaryToken: (r) => d.secondaryToken(r),
      revokeSecondary: (id) => d.revokeSecondary(id),
      generatePublicKey: () => d.generatePublicKey(),
      enableSecondary: after((r: Parameters<KindService['enableSecondary']>[0]) => d.enableSecondary(r)),
      promote: after(async (r: Parameters<KindService['promote']>[0]) => {
        await d.promote(r);
        if (d.kind === 'performance') await becamePerformancePrimary();
      }),
      disableSecondary: after(() => d.disableSecondary()),
      updatePrimary: (r) => d.updatePrimary(r),
    };
  };
  /** A performance operation on a DR secondary: refused, naming the rule (nothing is loaded there). */
  const perfGate = (svc: KindService): KindService => {
    const gated = {} as Record<string, unknown>;
    for (const [name, fn] of Object.entries(svc) as [string, (...a: unknown[]) => Promise<unknown>][]) {
      gated[name] = async (...a: unknown[]) => {
        if (loaded && drIsSecondary()) throw new InvalidRequest('this cluster is a DR secondary: it has no performance replication role of its own (it takes over its primary\'s when promoted)');
        return fn(...a);
      };
    }
    return gated as unknown as KindService;
  };
  const checkBatchToken = batchOperationTokenCheck(core);
  const drService: DrService = {
    ...kindService(dr),
    checkOperationToken: secondaryOnly(async (t: string, path: string) => {
      if (isBatchToken(t)) return checkBatchToken(t, path);
      if (!(await tokens.validate(t))) throw new PermissionDenied('invalid DR operation token');
    }),
    reindex: secondaryOnly((opts: { diff: boolean; force: boolean; skipFlush: boolean }) => local.reindex(opts)),
    merkleCheck: secondaryOnly(() => local.merkleCheck()),
  };
  const tokenService: DrOperationTokenService = {
    start: secondaryOnly((r: Parameters<OperationTokens['start']>[0]) => tokens.start(r)),
    status: secondaryOnly(() => tokens.status()),
    cancel: secondaryOnly(() => tokens.cancel()),
    update: secondaryOnly((r: Parameters<OperationTokens['update']>[0]) => tokens.update(r)),
    revoke: secondaryOnly(async (t: string) => {
      if (isBatchToken(t)) throw new InvalidRequest('a batch token is revoked on the primary (auth/token/revoke); the revocation replicates to this secondary');
      return tokens.revoke(t);
    }),
  };
  const reindexFlags = ([o]: [{ diff: boolean; force: boolean; skipFlush: boolean }]) => ({ diff: o.diff, force: o.force });

  const perfService = perfGate(kindService(perf));
  /** The secondary's dynamic filter: what its primary last told it (paths-filters.ts), for its own id only. */
  const secondaryDynamic = async (id: string) => {
    const s = perf.isLoaded ? perf.state : undefined;
    if (s?.mode !== 'secondary') throw new InvalidRequest(`this cluster is not a performance secondary (performance mode: ${performanceMode()})`);
    if (s.secondaryId !== id) throw new InvalidRequest(`this performance secondary is "${s.secondaryId ?? ''}", not "${id.slice(0, 64)}"`);
    return readSecondaryDynamicFilter(engine);
  };
  const pathsFilters: PathsFilterService = {
    set: (id, body) => filters.set(id, body),
    read: (id) => filters.read(id),
    remove: (id) => filters.remove(id),
    primaryDynamic: (id) => filters.dynamic(id),
    secondaryDynamic,
  };
  const kindAudit = (kind: Kind) => ({
    enablePrimary: { op: `${kind}/primary/enable` },
    demote: { op: `${kind}/primary/demote` },
    disablePrimary: { op: `${kind}/primary/disable` },
    secondaryToken: { op: `${kind}/primary/secondary-token`, detail: ([r]: [{ id: string; ttlSeconds: number; secondaryPublicKey: string }], res: unknown) => ({ secondary_id: r.id.slice(0, 128), ttl_seconds: r.ttlSeconds, sealed: r.secondaryPublicKey !== '', ...(res ? { issued: true } : {}) }) },
    revokeSecondary: { op: `${kind}/primary/revoke-secondary`, detail: ([id]: [string]) => ({ secondary_id: id.slice(0, 128) }) },
    generatePublicKey: { op: `${kind}/secondary/generate-public-key` },
    enableSecondary: { op: `${kind}/secondary/enable`, detail: () => ({ mode: drivers[kind].state.mode }) },
    promote: { op: `${kind}/secondary/promote`, detail: ([r]: [{ force: boolean }]) => ({ force: r.force }) },
    disableSecondary: { op: `${kind}/secondary/disable` },
    updatePrimary: {
      op: `${kind}/secondary/update-primary`,
      detail: ([r]: [{ token?: string }], res: { forgotten?: { clusterId: string } } | undefined) => ({ by: r.token === undefined ? 'addrs' : r.token === '' ? 'blank-token' : 'token', ...(res?.forgotten ? { forgot_cluster_id: res.forgotten.clusterId } : {}) }),
    },
  });

  return {
    dr,
    performance: perf,
    drMode,
    performanceMode,
    async suspend() {
      clearInterval(sampler);
      await perf.suspend();
      await dr.suspend();
    },
    executeForwarded(run) {
      executor = run;
    },
    clusterId: () => {
      const s = dr.state;
      return s.mode === 'disabled' ? '' : s.clusterId;
    },
    events,
    // The one place replication operations are logged for operators (never a token).
    routes: {
      status: audited(audit, local, {
        reindex: { op: 'reindex', detail: reindexFlags },
        merkleCheck: { op: 'merkle-check' },
      }, events),
      drTokens: audited(audit, tokenService, {
        start: { op: 'dr/generate-operation-token/attempt' },
        cancel: { op: 'dr/generate-operation-token/cancel' },
        update: { op: 'dr/generate-operation-token/update', detail: (_a, r) => (r ? { progress: r.progress, required: r.required, token_created: r.complete } : {}) },
        revoke: { op: 'dr/operation-token/delete' },
      }, events),
      // An activation JWT names its kind; the primary of that kind verifies it (DR when unnamed).
      resolveWrappingToken: (t) => drivers[activationKindOf(t)].resolveActivationJwt(t),
      performance: audited(audit, perfService, kindAudit('performance') as never, events),
      pathsFilters: audited(audit, pathsFilters, {
        set: { op: 'performance/primary/paths-filter/write', detail: ([id, b]: [string, { mode: string; paths: readonly string[] }]) => ({ secondary_id: id.slice(0, 128), mode: b.mode, paths: b.paths.length }) },
        remove: { op: 'performance/primary/paths-filter/delete', detail: ([id]: [string]) => ({ secondary_id: id.slice(0, 128) }) },
      } as never, events),
      dr: audited(audit, drService, {
        ...(kindAudit('dr') as object),
        checkOperationToken: { op: 'dr/operation-token/use', detail: ([t, path]: [string, string]) => ({ token_type: isBatchToken(t) ? 'batch' : 'operation', path }) },
        reindex: { op: 'dr/secondary/reindex', detail: reindexFlags },
        merkleCheck: { op: 'dr/secondary/merkle-check' },
      }, events),
      events: { history: (after) => events.history(after), follow: (f) => events.follow(f), capacity: events.capacity, heartbeatMs: o.eventsHeartbeatMs ?? 15_000 },
    },
  };
}
