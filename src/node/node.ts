/**
 * One running node: LevelDB -> storage engine -> seal -> vault core -> HTTP. `startNode` returns
 * once the listener is up; `stop()` closes the listener, then storage (in that order, so no
 * request can reach a closed database).
 *
 *   const node = await startNode(config, { logger });
 *   node.apiAddr // 'http://127.0.0.1:8200'
 *   await node.stop();
 */
import { isMainThread } from 'node:worker_threads';
import type { Logger } from 'pino';
import { forwardedExecutor } from '../http/forwarded.js';
import { startHttp, type HttpServer } from '../http/server.js';
import { loadStaticSite } from '../http/static.js';
import { describeLicense, hasFeature, loadLicense, type Feature, type LicenseStatus } from '../license/index.js';
import type { ReplicationDriver } from '../replication/driver.js';
import type { ReplicationEvents } from '../replication/events.js';
import { SealManager } from '../seal/index.js';
import { StorageEngine } from '../storage/engine.js';
import { openLevelBackend } from '../storage/leveldb.js';
import { VaultCore } from '../vault/core.js';
import { wireGenerateRoot } from './generate-root.js';
import { NodeMetrics } from './metrics.js';
import { wireReplication } from './replication.js';
import type { Route } from '../http/route.js';
import { dashboardSite, nodeRoutes } from './routes.js';

export interface NodeConfig {
  readonly storagePath: string;
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
}

export interface RunningNode {
  readonly apiAddr: string;
  readonly core: VaultCore;
  readonly engine: StorageEngine;
  readonly metrics: NodeMetrics;
  readonly dr: ReplicationDriver;
  readonly performance: ReplicationDriver;
  /** Replication events of this node (sys/replication/events). */
  readonly events: ReplicationEvents;
  /** The route declarations the listener serves (tests generate their cases from them). */
  readonly routes: readonly Route[];
  stop(): Promise<void>;
}

export async function startNode(config: NodeConfig, deps: { logger: Logger; now?: () => number }): Promise<RunningNode> {
  const log = deps.logger;
  const now = deps.now ?? Date.now;
  // Owner-only files: LevelDB creates its tables and logs itself with 0644 & ~umask, so the
  // process umask is what makes them 0600 (openLevelBackend makes the directory 0700 and fixes
  // the modes of files already there). Worker threads cannot set it; nodes run on the main thread.
  if (isMainThread) process.umask(0o077);
  const backend = await openLevelBackend({ path: config.storagePath });
  let metrics: NodeMetrics | undefined;
  const engine = await StorageEngine.open(backend, {
    walMaxEntries: config.walMaxEntries,
    walMaxBytes: config.walMaxBytes,
    now,
    onBatch: (info) => metrics?.observeBatch({ txns: info.txns, bytes: info.bytes, merklePages: info.merklePages }),
  });
  metrics = new NodeMetrics({
    lastWal: () => Number(engine.lastGuard().index),
    walRetainedEntries: () => Number(engine.lastGuard().index - engine.firstRetainedIndex() + 1n),
    walRetainedBytes: () => engine.walRetainedBytes(),
  });
  const seal = new SealManager({ get: (n) => engine.getSystem(n), put: (n, v) => engine.putSystem(n, v) });

  let license: LicenseStatus = await loadLicense(config.licensePath, config.licenseIssuerKeys, new Date(now()));
  log.info({ license: license.valid ? { id: license.licenseId, expires: license.expiresAt.toISOString(), features: license.features } : { reason: license.reason } }, 'license loaded');
  const licenseView = {
    has: (feature: string) => {
      if (license.valid && license.expiresAt.getTime() <= now()) license = { valid: false, reason: 'expired', detail: `license expired at ${license.expiresAt.toISOString()}`, license };
      return hasFeature(license, feature as Feature);
    },
    why: () => describeLicense(license),
  };

  const core = new VaultCore({ storage: engine, seal, license: licenseView, hosted: config.hosted, now, ...(config.leases ? { ttlLimits: config.leases } : {}) });
  await core.start();
  let apiAddr = config.apiAddr;
  const repl = await wireReplication({
    engine, seal, core, log, now, clusterListen: config.clusterAddr, apiAddr: () => apiAddr,
    ...(config.forwardWaitMs !== undefined ? { forwardWaitMs: config.forwardWaitMs } : {}),
    onForwarded: (f) => metrics!.observeForwarded(f),
  });
  metrics.bindReplication((kind) => repl.routes.status.status(kind));
  const facts = {
    clusterName: () => 'tessera',
    clusterId: () => repl.clusterId(),
    drMode: () => repl.drMode(),
    performanceMode: () => repl.performanceMode(),
    apiAddr: () => apiAddr,
    clusterAddr: () => repl.dr.clusterAddr(),
    storageFailure: () => engine.failure()?.message,
  };
  const sys = {
    licenseStatus: () => ({
      autoloading_used: false,
      persisted_autoload: license.valid
        ? { license_id: license.licenseId, customer_name: license.customer, issue_time: license.issuedAt.toISOString(), expiration_time: license.expiresAt.toISOString(), features: license.features, valid: true }
        : { valid: false, reason: license.reason, detail: license.detail },
    }),
    metrics: async () => ({ contentType: metrics!.contentType, text: await metrics!.render() }),
  };
  const routes = nodeRoutes(core, facts, repl.routes, sys, wireGenerateRoot({ core, seal, log }));
  // As a performance primary, this node runs its secondaries' forwarded writes through the same routes.
  repl.executeForwarded(forwardedExecutor(core, routes, (e) => log.error({ err: e }, 'forwarded write failed')));

  const dashboard = loadStaticSite(dashboardSite());
  if (dashboard.missing.length > 0) log.warn({ missing: dashboard.missing }, 'dashboard files missing; /ui/ answers 404 for them');
  let http: HttpServer;
  try {
    http = await startHttp({
      services: core,
      routes,
      statics: [dashboard],
      address: config.listenAddress,
      logger: log,
      ...(config.tls ? { tls: config.tls } : {}),
      ...(config.listenerTimeouts ? { timeouts: config.listenerTimeouts } : {}),
      onRequest: (info) => metrics!.observeRequest(info),
    });
  } catch (e) {
    await engine.close();
    await backend.close();
    throw e;
  }
  if (apiAddr === '' || /:0$/.test(apiAddr)) apiAddr = http.url;
  log.info({ api_addr: http.url }, 'http listening');

  const tidy = setInterval(() => {
    if (!core.sealed()) core.tokens.tidy().catch((e: unknown) => log.warn({ err: e }, 'token tidy failed'));
  }, 60_000);
  tidy.unref();

  return {
    get apiAddr() {
      return apiAddr;
    },
    core,
    engine,
    metrics,
    dr: repl.dr,
    performance: repl.performance,
    events: repl.events,
    routes,
    async stop() {
      clearInterval(tidy);
      // Listener first: no request may reach storage after it is closed.
      await http.close();
      await repl.suspend();
      await core.sealNow().catch(() => undefined);
      await engine.close();
      await backend.close();
      log.info('node stopped');
    },
  };
}
