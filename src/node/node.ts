/**
 * One running node: LevelDB or PostgreSQL -> storage engine -> seal -> vault core and replication unit -> HTTP.
 * The node composes finished services and steps aside: the core and the replication unit both
 * observe one seal lifecycle (made before either), the HTTP layer gets the core's services with
 * the unit's request gates beside them, and no request runs through code of this folder.
 * `startNode` returns once the listener is up; `stop()` closes the listener, stops replication,
 * then seals and closes storage (in that order, so no request can reach a closed database).
 *
 *   const node = await startNode(config, { logger });
 *   node.apiAddr // 'http://127.0.0.1:8200'
 *   await node.stop();
 */
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import type { Logger } from 'pino';
import { forwardedExecutor } from '../http/forwarded.js';
import { startHttp, type HttpServer } from '../http/server.js';
import type { Services } from '../http/dispatch.js';
import { loadStaticSite } from '../http/static.js';
import { describeLicense, hasFeature, loadLicense, type Feature, type LicenseStatus } from '../license/index.js';
import { composeServices } from '../http/dispatch.js';
import { ReplicationUnit, type ReplicationDriver, type ReplicationEvents } from '../replication/index.js';
import { KEYRING_RECORD_KEY, SealManager } from '../seal/index.js';
import { StorageEngine } from '../storage/engine.js';
import type { Backend } from '../storage/backend.js';
import { openLevelBackend } from '../storage/leveldb.js';
import { readCacheLimits, type ReadCacheSettings } from '../storage/read-cache.js';
import { openPostgresBackend, redactConnectionUrl } from '../storage/postgres.js';
import type { PostgresqlStorageConfig } from './config-blocks.js';
import { connectPrimary, createClusterServer, type ClusterServer } from '../transport/grpc/index.js';
import { openHaFence, wireHa, type HaFence, type NodeHa } from './ha.js';
import { freeClusterAddr } from './free-port.js';
import { VaultCore, type LicenseView } from '../vault/core.js';
import { SealLifecycle } from '../vault/lifecycle.js';
import { wireGenerateRoot } from './generate-root.js';
import { NodeMetrics } from './metrics.js';
import type { Route } from '../http/route.js';
import { dashboardSite, nodeRoutes } from './routes.js';
import { vaultCatalog } from './vault-catalog.js';

export interface NodeConfig {
  /** The LevelDB directory; unused when `postgresql` is given. */
  readonly storagePath: string;
  /** PostgreSQL storage (config `storage "postgresql"`) instead of LevelDB. */
  readonly postgresql?: Omit<PostgresqlStorageConfig, 'type'>;
  readonly listenAddress: string;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** API listener deadlines in ms (config `http_read_header_timeout` etc.); the HTTP layer's defaults when unset. */
  readonly listenerTimeouts?: { readonly headersMs?: number; readonly bodyMs?: number; readonly idleMs?: number };
  /** Advertised API address; derived from the listener when empty. */
  readonly apiAddr: string;
  readonly clusterAddr: string;
  readonly licensePath?: string;
  readonly licenseIssuerKeys: readonly string[];
  readonly hosted: boolean;
  readonly walMaxEntries: number;
  readonly walMaxBytes: number;
  /** System lease bounds in seconds (`max_lease_ttl`, `default_lease_ttl`); Vault's 768h each unless given. */
  readonly leases?: { readonly maxTtl: number; readonly defaultTtl: number };
  /** Performance secondary: how long a forwarded write's answer waits to be applied here (ms, default 2000). */
  readonly forwardWaitMs?: number;
  /** Where file audit devices may write (config `audit_dir`); `<storagePath>/audit` for LevelDB when unset. */
  readonly auditDir?: string;
  /** How often the active node revokes expired tokens (ms; default 60 s; 0: never, for tests that compare states over time). */
  readonly tokenTidyMs?: number;
  /** HA standbys relay reads too (Vault's `disable_performance_standby`). */
  readonly disablePerformanceStandby?: boolean;
  /** Vault's `disable_cache` / `cache_size` for the storage read cache (read-cache.ts); its defaults when unset. */
  readonly readCache?: ReadCacheSettings;
}

export interface RunningNode {
  readonly apiAddr: string;
  readonly core: VaultCore;
  readonly engine: StorageEngine;
  readonly metrics: NodeMetrics;
  /** Replication on this node: started with the node, stoppable and restartable while it runs. */
  readonly replication: ReplicationUnit;
  readonly dr: ReplicationDriver;
  readonly performance: ReplicationDriver;
  /** Replication events of this node (sys/replication/events). */
  readonly events: ReplicationEvents;
  /** The route declarations the listener serves (tests generate their cases from them). */
  readonly routes: readonly Route[];
  /** HA inside the cluster, when storage is `postgresql` with `ha_enabled`. */
  readonly ha: NodeHa | undefined;
  stop(): Promise<void>;
}

interface Deps {
  readonly logger: Logger;
  readonly now?: () => number;
}

/** Storage, and the metrics that observe its batches. */
interface Storage {
  readonly backend: Backend;
  readonly engine: StorageEngine;
  readonly metrics: NodeMetrics;
  /** The HA lease and fence, when the storage is PostgreSQL with `ha_enabled`. */
  readonly fence: HaFence | undefined;
  close(): Promise<void>;
}

/**
 * The backend the config names; PostgreSQL with `guard` when HA fences its commits. While the
 * server is unreachable the open retries (`max_connect_retries`, else for up to 60 s; one warn
 * line a retry); a bad URL, a refused login or a missing database fail at once, the error naming
 * where the URL came from. Logs and errors name the connection URL with its password redacted.
 */
async function openBackend(config: NodeConfig, log: Logger, fence: Pick<HaFence, 'guard' | 'afterBatch'> | undefined): Promise<Backend> {
  const pgc = config.postgresql;
  if (pgc === undefined) return openLevelBackend({ path: config.storagePath });
  const where = { connection_url: redactConnectionUrl(pgc.connectionUrl), table: pgc.table };
  const backend = await openPostgresBackend({
    connectionUrl: pgc.connectionUrl,
    table: pgc.table,
    ...(fence !== undefined ? { guard: fence.guard, afterBatch: fence.afterBatch } : {}),
    urlSource: pgc.connectionUrlSource ?? 'storage "postgresql" connection_url',
    ...(pgc.maxConnectRetries !== undefined ? { maxConnectRetries: pgc.maxConnectRetries } : {}),
    onConnectRetry: (r) => log.warn({ ...where, attempt: r.attempt, retry_in_ms: r.delayMs, err: r.reason }, 'PostgreSQL unreachable; retrying'),
    onIdleError: (e) => log.warn({ ...where, err: e.message }, 'PostgreSQL connection lost while idle'),
  });
  log.info({ ...where, ...(pgc.haEnabled ? { ha_table: pgc.haTable } : {}) }, 'PostgreSQL storage opened');
  return backend;
}

async function openStorage(config: NodeConfig, now: () => number, log: Logger): Promise<Storage> {
  // Owner-only files: LevelDB creates its tables and logs itself with 0644 & ~umask, so the
  // process umask is what makes them 0600 (openLevelBackend makes the directory 0700 and fixes
  // the modes of files already there). Worker threads cannot set it; nodes run on the main thread.
  if (isMainThread) process.umask(0o077);
  const pgc = config.postgresql;
  // HA: the lease store first, since the data backend runs its fence in every batch.
  const fence = pgc?.haEnabled === true ? await openHaFence(pgc, log) : undefined;
  let backend: Backend;
  try {
    backend = await openBackend(config, log, fence);
  } catch (e) {
    await fence?.close();
    throw e;
  }
  let metrics: NodeMetrics | undefined;
  const engine = await StorageEngine.open(backend, {
    walMaxEntries: config.walMaxEntries,
    walMaxBytes: config.walMaxBytes,
    now,
    // PostgreSQL's transactions leave no torn state: re-reading settles an unknown outcome.
    settlesOnReload: pgc !== undefined,
    readCache: readCacheLimits(config.readCache ?? {}),
    onBatch: (info) => metrics?.observeBatch({ txns: info.txns, bytes: info.bytes, merklePages: info.merklePages }),
  });
  metrics = new NodeMetrics({
    lastWal: () => Number(engine.lastGuard().index),
    walRetainedEntries: () => Number(engine.lastGuard().index - engine.firstRetainedIndex() + 1n),
    walRetainedBytes: () => engine.walRetainedBytes(),
  });
  return {
    backend,
    engine,
    metrics,
    fence,
    async close() {
      await engine.close();
      await backend.close();
      await fence?.close();
    },
  };
}

/** After each storage failure, tries every second to reload the engine and the vault's caches until it succeeds. */
function recoverOnReload(engine: StorageEngine, core: VaultCore, log: Logger): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const attempt = (): void => {
    timer = setTimeout(() => {
      engine
        .reload()
        .then(async () => {
          if (!core.sealed()) await core.reopen();
          log.info('storage answers again: state reloaded from PostgreSQL, writes resume');
        })
        .catch(() => {
          if (!stopped) attempt();
        });
    }, 1000);
    timer.unref();
  };
  const off = engine.onFailure(() => {
    if (!stopped) attempt();
  });
  return {
    stop() {
      stopped = true;
      off();
      clearTimeout(timer);
    },
  };
}

/** The license, re-checked for expiry at every use, and its sys/license/status view. */
async function loadNodeLicense(config: NodeConfig, now: () => number, log: Logger): Promise<{ view: LicenseView; status: () => Record<string, unknown> }> {
  let license: LicenseStatus = await loadLicense(config.licensePath, config.licenseIssuerKeys, new Date(now()));
  log.info({ license: license.valid ? { id: license.licenseId, expires: license.expiresAt.toISOString(), features: license.features } : { reason: license.reason } }, 'license loaded');
  const view: LicenseView = {
    has: (feature: string) => {
      if (license.valid && license.expiresAt.getTime() <= now()) license = { valid: false, reason: 'expired', detail: `license expired at ${license.expiresAt.toISOString()}`, license };
      return hasFeature(license, feature as Feature);
    },
    why: () => describeLicense(license),
  };
  const status = () => ({
    autoloading_used: false,
    persisted_autoload: license.valid
      ? { license_id: license.licenseId, customer_name: license.customer, issue_time: license.issuedAt.toISOString(), expiration_time: license.expiresAt.toISOString(), features: license.features, valid: true }
      : { valid: false, reason: license.reason, detail: license.detail },
  });
  return { view, status };
}

/**
 * The replication unit over the gRPC cluster transport, observing the seal, its gauges bound.
 * `listener` follows the cluster listener of the unit's current run (HA forwarding joins it).
 */
async function buildReplication(o: {
  config: NodeConfig; clusterAddr: string; storage: Storage; seal: SealManager; core: VaultCore; lifecycle: SealLifecycle; log: Logger; now: () => number; apiAddr: () => string;
  listener: { current: ClusterServer | undefined };
  /** HA: every node's cluster address, advertised to secondaries. */
  clusterAddrs?: () => readonly string[];
}): Promise<ReplicationUnit> {
  const { config, storage, log } = o;
  const unit = await ReplicationUnit.create({
    engine: storage.engine,
    seal: o.seal,
    vault: vaultCatalog(o.core),
    transport: {
      listen: (address) => (o.listener.current = createClusterServer({ address, log })),
      connect: connectPrimary,
    },
    log,
    now: o.now,
    clusterListen: o.clusterAddr,
    ...(o.clusterAddrs !== undefined ? { clusterAddrs: o.clusterAddrs } : {}),
    apiAddr: o.apiAddr,
    ...(config.forwardWaitMs !== undefined ? { forwardWaitMs: config.forwardWaitMs } : {}),
    onForwarded: (f) => storage.metrics.observeForwarded(f),
  });
  o.lifecycle.subscribe(unit.sealObserver);
  storage.metrics.bindReplication((kind) => unit.status.status(kind));
  return unit;
}

/** The API listener with the dashboard; storage is closed if it cannot start. */
async function listen(config: NodeConfig, o: { services: Services; routes: readonly Route[]; storage: Storage; log: Logger; ha: NodeHa | undefined }): Promise<HttpServer> {
  const dashboard = loadStaticSite(dashboardSite());
  if (dashboard.missing.length > 0) o.log.warn({ missing: dashboard.missing }, 'dashboard files missing; /ui/ answers 404 for them');
  try {
    return await startHttp({
      services: o.services,
      routes: o.routes,
      statics: [dashboard],
      address: config.listenAddress,
      logger: o.log,
      ...(config.tls ? { tls: config.tls } : {}),
      ...(config.listenerTimeouts ? { timeouts: config.listenerTimeouts } : {}),
      onRequest: (info) => o.storage.metrics.observeRequest(info),
      ...(o.ha !== undefined ? { standby: o.ha.relay } : {}),
    });
  } catch (e) {
    await o.storage.close();
    throw e;
  }
}

export async function startNode(config: NodeConfig, deps: Deps): Promise<RunningNode> {
  const log = deps.logger;
  const now = deps.now ?? Date.now;
  const storage = await openStorage(config, now, log);
  const { engine, metrics } = storage;
  const seal = new SealManager({ get: (n) => engine.getSystem(n), put: (n, v) => engine.putSystem(n, v) });
  // A primary's rotation or rekey arrives as this record: its system records go in the same batch.
  engine.watchRecord({ key: KEYRING_RECORD_KEY, derive: (value) => seal.applyReplicated(value) });
  const license = await loadNodeLicense(config, now, log);
  // Made before the core and every observer: the core announces its seal, they follow it.
  const lifecycle = new SealLifecycle();
  const core = new VaultCore({ storage: engine, seal, license: license.view, hosted: config.hosted, now, lifecycle, auditDir: config.auditDir ?? (config.postgresql ? undefined : join(config.storagePath, 'audit')), auditWarn: (f, m) => log.warn(f, m), ...(config.leases ? { ttlLimits: config.leases } : {}) });
  await core.start();
  let apiAddr = config.apiAddr;
  // An HA node names its cluster address in the lock row before it listens: it must be concrete.
  const clusterAddr = storage.fence !== undefined ? await freeClusterAddr(config.clusterAddr) : config.clusterAddr;
  const listener: { current: ClusterServer | undefined } = { current: undefined };
  let ha: NodeHa | undefined;
  const replication = await buildReplication({
    config, clusterAddr, storage, seal, core, lifecycle, log, now, apiAddr: () => apiAddr, listener,
    ...(storage.fence !== undefined ? { clusterAddrs: () => ha?.clusterAddrs() ?? [clusterAddr] } : {}),
  });
  ha =
    storage.fence === undefined
      ? undefined
      : wireHa({ fence: storage.fence, engine, core, unit: replication, clusterListener: () => listener.current, clusterAddr, log, now, performanceStandby: config.disablePerformanceStandby !== true });
  if (ha !== undefined) lifecycle.subscribe(ha.controller.sealObserver);
  metrics.bindHa(ha?.gauges);
  const facts = {
    clusterName: () => 'tessera',
    // A standby shows what the active node keeps in storage (its own unit runs only when active).
    clusterId: () => ha?.standbyReplication()?.clusterId ?? replication.clusterId(),
    drMode: () => ha?.standbyReplication()?.dr ?? replication.mode('dr'),
    performanceMode: () => ha?.standbyReplication()?.performance ?? replication.mode('performance'),
    apiAddr: () => apiAddr,
    clusterAddr: () => (ha === undefined ? replication.clusterAddr() : clusterAddr),
    storageFailure: () => engine.failure()?.message,
    storageType: () => (config.postgresql === undefined ? 'leveldb' : 'postgresql'),
    lastWal: () => Number(engine.lastGuard().index),
    ha: ha?.facts,
  };
  const sys = { licenseStatus: license.status, metrics: async () => ({ contentType: metrics.contentType, text: await metrics.render() }) };
  const routes = nodeRoutes(core, facts, replication, sys, wireGenerateRoot({ core, seal, lifecycle, log }));
  const services = composeServices(core, replication.requests);
  // As a performance primary, this node runs its secondaries' forwarded writes through the same routes.
  replication.serveForwarded(forwardedExecutor(services, routes, (e) => log.error({ err: e }, 'forwarded write failed')));
  // An HA node runs replication only while it is the active node (src/node/ha.ts starts it).
  if (ha === undefined) await replication.start();

  // HA: refuse to start while another live process has this node's identity (issue 26 item 2):
  // before listening when the API address is known, else as soon as it is.
  const concrete = apiAddr !== '' && !/:0$/.test(apiAddr);
  if (concrete) await ha?.claim(apiAddr);
  const http = await listen(config, { services, routes, storage, log, ha });
  if (apiAddr === '' || /:0$/.test(apiAddr)) apiAddr = http.url;
  log.info({ api_addr: http.url }, 'http listening');
  if (!concrete) await ha?.claim(apiAddr);
  ha?.start(http.execute);

  // PostgreSQL without HA: a failed commit's outcome is settled by reading the database again, so
  // once it answers the node reloads and writes again (HA nodes do this by stepping down).
  const recover = config.postgresql !== undefined && ha === undefined ? recoverOnReload(engine, core, log) : undefined;

  const tidyMs = config.tokenTidyMs ?? 60_000;
  const tidy =
    tidyMs > 0
      ? setInterval(() => {
          if (core.sealed() || (ha !== undefined && !ha.controller.isActive())) return;
          core.tokens.tidy().catch((e: unknown) => log.warn({ err: e }, 'token tidy failed'));
          // A DR secondary writes nothing of its own: its primary rotates, and the keys stream in.
          if (!replication.requests.drSecondary()) core.rotateTransitKeys().catch((e: unknown) => log.warn({ err: e }, 'transit key auto-rotation failed'));
        }, tidyMs)
      : undefined;
  tidy?.unref();
  const server = http;

  return {
    get apiAddr() {
      return apiAddr;
    },
    core,
    engine,
    metrics,
    replication,
    dr: replication.drivers.dr,
    performance: replication.drivers.performance,
    events: replication.eventLog,
    routes,
    ha,
    async stop() {
      clearInterval(tidy);
      recover?.stop();
      // Listener first: no request may reach storage after it is closed.
      await server.close();
      // HA: stop the active role and release the lock row, so a standby takes over at once.
      await ha?.stop();
      await replication.stop();
      await core.sealNow().catch(() => undefined);
      await storage.close();
      log.info('node stopped');
    },
  };
}
