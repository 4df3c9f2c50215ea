/**
 * The in-process half of the one builder (harness.ts): a node started by `startNode()` of
 * src/node in this jest process, on a real LevelDB under HOME/data (or the PostgreSQL given as
 * `postgresql`) and real HTTP on 127.0.0.1:0.
 * Tests reach it through `h.startNode({ inProcess: true })` or `startTestNode()`
 * (test/support/in-process.ts), never directly: the harness owns HOME, the license and cleanup.
 */
import pino from 'pino';
import { join } from 'node:path';
import { startNode, type NodeConfig, type RunningNode } from '../../src/node/node.js';
import type { ReadCacheSettings } from '../../src/storage/read-cache.js';
import { vault, type Reply, type VaultHttp } from './http.js';
import type { NodeHandle } from './harness.js';

export interface InProcessOptions {
  /** 'valid' unless given; 'expired' is a year old; 'none' starts without a license. */
  readonly license?: 'valid' | 'none' | 'expired';
  readonly hosted?: boolean;
  /** Init (3 shares, threshold 2) and unseal unless false. */
  readonly initialize?: boolean;
  /** The node's home; a harness temp dir when omitted. Given dirs are the caller's: never removed. */
  readonly dir?: string;
  readonly walMaxEntries?: number;
  readonly logger?: pino.Logger;
  /** The configured cluster_addr (host:port); default 127.0.0.1:0. */
  readonly clusterAddr?: string;
  /** Performance secondary: how long a forwarded write's answer waits to be applied (ms). */
  readonly forwardWaitMs?: number;
  /** Config `audit_dir` (default HOME/data/audit). */
  readonly auditDir?: string;
  /** The token tidy's interval (ms; 0: never). */
  readonly tokenTidyMs?: number;
  /** HA standbys relay reads too (config `disable_performance_standby`). */
  readonly disablePerformanceStandby?: boolean;
  /** Config `disable_cache` / `cache_size`: the storage read cache. */
  readonly readCache?: ReadCacheSettings;
  /** Storage on this PostgreSQL (e.g. test/support/postgres.ts) instead of HOME/data; table vault_kv_store unless given. */
  /** `haLeaseTtlMs`: the HA lease (default 2 s); in-process nodes share jest's event loop, so a longer one tolerates its stalls. */
  readonly postgresql?: { readonly connectionUrl: string; readonly table?: string; readonly haEnabled?: boolean; readonly haLeaseTtlMs?: number; readonly redundancyZone?: string };
  /** The node's clock (default Date.now): a node whose clock is off by a known amount. */
  readonly now?: () => number;
}

export interface CallOptions {
  /** The root token unless given; null sends none. */
  readonly token?: string | null;
  readonly headers?: Record<string, string>;
  /** Body bytes sent as given instead of `body`. */
  readonly raw?: string;
}

export interface InProcessNode extends NodeHandle {
  /** Settable: a test that re-initialises or restarts the node records the new credentials. */
  rootToken: string;
  unsealKeys: string[];
  readonly node: RunningNode;
  /**
   * Compatibility alias of `vault(token).request(method, path, { body, raw, headers })`, the
   * shape most integration tests were written in.
   */
  call(method: string, path: string, body?: unknown, opts?: CallOptions): Promise<Reply>;
  /** Stops the node; removes HOME too unless `keepDir` (to restart on it) or HOME was given. */
  stop(opts?: { keepDir?: boolean }): Promise<void>;
}

/** What the harness hands over: HOME, the license it wrote there, and how to forget the node. */
export interface InProcessHome {
  readonly dir: string;
  readonly ownsDir: boolean;
  readonly license?: { readonly path: string; readonly issuerKey: string };
  removeDir(): Promise<void>;
  onStopped(): void;
}

export async function startInProcess(opts: InProcessOptions, home: InProcessHome): Promise<InProcessNode> {
  const config: NodeConfig = {
    storagePath: join(home.dir, 'data'),
    listenAddress: '127.0.0.1:0',
    apiAddr: '',
    clusterAddr: opts.clusterAddr ?? '127.0.0.1:0',
    ...(home.license ? { licensePath: home.license.path } : {}),
    licenseIssuerKeys: home.license ? [home.license.issuerKey] : [],
    hosted: opts.hosted === true,
    walMaxEntries: opts.walMaxEntries ?? 10_000,
    walMaxBytes: 64 * 1024 * 1024,
    ...(opts.forwardWaitMs !== undefined ? { forwardWaitMs: opts.forwardWaitMs } : {}),
    ...(opts.auditDir !== undefined ? { auditDir: opts.auditDir } : {}),
    ...(opts.tokenTidyMs !== undefined ? { tokenTidyMs: opts.tokenTidyMs } : {}),
    ...(opts.disablePerformanceStandby === true ? { disablePerformanceStandby: true } : {}),
    ...(opts.readCache !== undefined ? { readCache: opts.readCache } : {}),
    ...(opts.postgresql !== undefined
      ? { postgresql: { connectionUrl: opts.postgresql.connectionUrl, table: opts.postgresql.table ?? 'vault_kv_store', haEnabled: opts.postgresql.haEnabled === true, haTable: 'vault_ha_locks', ...(opts.postgresql.haLeaseTtlMs !== undefined ? { haLeaseTtlMs: opts.postgresql.haLeaseTtlMs } : {}), ...(opts.postgresql.redundancyZone !== undefined ? { redundancyZone: opts.postgresql.redundancyZone } : {}) } }
      : {}),
  };
  const node = await startNode(config, { logger: opts.logger ?? pino({ level: 'silent' }), ...(opts.now !== undefined ? { now: opts.now } : {}) });
  let stopped = false;
  const n = {
    apiAddr: node.apiAddr,
    dataDir: home.dir,
    node,
    rootToken: '',
    unsealKeys: [] as string[],
    vault: (token?: string | null): VaultHttp => vault(node.apiAddr, token === undefined ? n.rootToken || undefined : (token ?? undefined)),
    call: (method: string, path: string, body?: unknown, o: CallOptions = {}) =>
      n.vault(o.token).request(method, path, {
        ...(o.raw !== undefined ? { raw: o.raw } : body !== undefined ? { body } : {}),
        ...(o.headers !== undefined ? { headers: o.headers } : {}),
      }),
    async stop(s: { keepDir?: boolean } = {}) {
      if (!stopped) {
        stopped = true;
        await node.stop();
        home.onStopped();
      }
      if (!s.keepDir && home.ownsDir) await home.removeDir();
    },
  };
  return n;
}
