/**
 * The composition root's entry: `tessera server`. Reads the config (or makes a dev one), starts
 * the node, and runs until SIGTERM/SIGINT, then stops it (at most STOP_DEADLINE_MS) and ends the
 * process (at most LINGER_MS later). Logs are JSON on stderr; stdout carries only the dev
 * banner (which holds the dev root token and unseal key, so it never goes through the logger).
 *
 *   await runServer({ dev: true });
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { writeDevLicense } from '../license/index.js';
import { devConfig, loadConfig, type Config } from './config.js';
import type { PostgresqlStorageConfig } from './config-blocks.js';
import { createLogger } from './logger.js';
import { startNode, type NodeConfig, type RunningNode } from './node.js';

export interface ServerOptions {
  readonly configPath?: string;
  readonly dev: boolean;
  readonly devRootTokenId?: string;
  readonly devListenAddress?: string;
  /** Where the dev banner goes; process.stdout unless given. */
  readonly out?: NodeJS.WritableStream;
  /** Resolves to stop the server; SIGTERM/SIGINT unless given. */
  readonly until?: Promise<void>;
}

/** The `storage "postgresql"` block as the node takes it: every key but the type. */
function pgNodeConfig({ type: _type, ...rest }: PostgresqlStorageConfig): NonNullable<NodeConfig['postgresql']> {
  return rest;
}

export function toNodeConfig(c: Config): NodeConfig {
  const s = c.storage;
  if (s.type === 'inmem') throw new Error(`${c.source}: storage type "${s.type}" cannot be served by this command`);
  return {
    ...(s.type === 'leveldb'
      ? { storagePath: s.path }
      : { storagePath: '', postgresql: pgNodeConfig(s) }),
    listenAddress: c.listener.address,
    listenerTimeouts: c.listener.timeouts,
    ...(c.listener.tls.mode === 'enabled' ? { tls: { certFile: c.listener.tls.certFile, keyFile: c.listener.tls.keyFile } } : {}),
    apiAddr: c.apiAddr,
    clusterAddr: c.clusterAddr,
    ...(c.licensePath !== undefined ? { licensePath: c.licensePath } : {}),
    licenseIssuerKeys: c.licenseIssuerKeys,
    hosted: c.hosted,
    walMaxEntries: c.replication.walMaxEntries,
    walMaxBytes: c.replication.walMaxBytes,
    leases: c.leases,
    ...(c.auditDir !== undefined ? { auditDir: c.auditDir } : {}),
    ...(c.disablePerformanceStandby ? { disablePerformanceStandby: true } : {}),
    readCache: c.readCache,
  };
}

function portPlusOne(address: string): string {
  const m = /^(.*):(\d+)$/.exec(address);
  if (!m) return address;
  const port = Number(m[2]);
  return `${m[1]}:${port === 0 ? 0 : port + 1}`;
}

async function devSetup(opts: ServerOptions): Promise<{ config: Config; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'tessera-dev-'));
  const lic = await writeDevLicense(join(dataDir, 'license'));
  const listen = opts.devListenAddress ?? '127.0.0.1:8200';
  const config = devConfig({
    dataDir: join(dataDir, 'data'),
    listenAddress: listen,
    clusterAddress: portPlusOne(listen),
    licensePath: lic.licensePath,
    licenseIssuerKeys: [lic.issuerPublicKey],
  });
  return { config, dataDir };
}

/** Initialises, unseals and mounts `secret/` (KV v2), like `vault server -dev`. */
async function devInitialise(node: RunningNode, opts: ServerOptions): Promise<{ unsealKey: string; rootToken: string }> {
  const init = await node.core.initialize({ secret_shares: 1, secret_threshold: 1, ...(opts.devRootTokenId ? { rootTokenId: opts.devRootTokenId } : {}) });
  const unsealKey = init.keys_base64[0] as string;
  await node.core.unseal(unsealKey, false);
  await node.core.mounts.enable('', 'secret/', { type: 'kv', options: { version: '2' }, description: 'key/value secret storage' });
  return { unsealKey, rootToken: init.root_token };
}

export async function runServer(opts: ServerOptions): Promise<void> {
  const dev = opts.dev ? await devSetup(opts) : undefined;
  const config = dev ? dev.config : await loadConfig(opts.configPath ?? '');
  const logger = createLogger({ level: config.logLevel, destination: pino.destination(2) });
  for (const w of config.warnings) logger.warn({ config: config.source }, w);
  const node = await startNode(toNodeConfig(config), { logger });

  if (opts.dev) {
    const { unsealKey, rootToken } = await devInitialise(node, opts);
    const out = opts.out ?? process.stdout;
    out.write(
      [
        'Tessera dev node started. Data lives in a temp dir and is not meant for production.',
        `Api Address: ${node.apiAddr}`,
        `Unseal Key: ${unsealKey}`,
        `Root Token: ${rootToken}`,
        '',
        `  export VAULT_ADDR='${node.apiAddr}' VAULT_TOKEN='${rootToken}'`,
        '',
      ].join('\n'),
    );
  }

  const reload = async () => {
    // Log rotation: every audit file closed and opened again at its path (a moved file is left as it is).
    await node.core.audit.reopen();
    logger.info('audit devices reopened');
    if (opts.dev || !opts.configPath) return;
    try {
      const next = await loadConfig(opts.configPath);
      logger.level = next.logLevel;
      logger.info({ level: next.logLevel }, 'log level reloaded');
    } catch (e) {
      logger.error({ err: e }, 'config reload failed; keeping the running config');
    }
  };
  const onHup = () => void reload();
  process.on('SIGHUP', onHup);
  await (opts.until ??
    new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    }));
  process.off('SIGHUP', onHup);
  logger.info('shutting down');
  const stopped = await withinDeadline(node.stop(), STOP_DEADLINE_MS);
  if (!stopped) logger.error({ deadline_ms: STOP_DEADLINE_MS }, 'the node did not stop in time; the process ends without it');
  // A dev node's data is throwaway, like `vault server -dev`'s in-memory storage.
  if (dev) await rm(dev.dataDir, { recursive: true, force: true });
  logger.flush();
  // Run by a signal, the process is ours to end: it may not wait for what no one can cancel.
  if (opts.until === undefined) exitAfterLinger(logger);
  if (!stopped) throw new Error(`the node did not stop within ${STOP_DEADLINE_MS} ms`);
}

/**
 * Longest a stop may take (storage closed, replication and HA stopped) before the process ends
 * without it: under the 30 s that docker-compose.yml and systemd-like supervisors allow before a
 * SIGKILL, so the node says why rather than being killed silently.
 */
const STOP_DEADLINE_MS = 10_000;

/**
 * Longest the process may stay once the node has stopped. Node ends a process when its event loop
 * is empty, and some requests cannot be cancelled: a host-name lookup of a gRPC client the
 * replication loop closed (getaddrinfo on libuv's thread pool) keeps the loop alive until the
 * resolver gives up. In a container whose DNS forwards a stopped service's name upstream and gets
 * no answer that was over 30 s, and `docker-compose restart` SIGKILLed the node
 * (test/e2e/sigterm-exit.test.ts).
 */
const LINGER_MS = 500;

/** True when `p` settled (either way) within `ms`; false, and `p` left running, otherwise. */
async function withinDeadline(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Ends the process LINGER_MS from now unless it has ended by itself (the timer keeps nothing
 * alive), naming what was still pending; the exit code is the one the CLI set by then.
 */
function exitAfterLinger(log: pino.Logger): void {
  setTimeout(() => {
    log.warn({ pending: process.getActiveResourcesInfo(), linger_ms: LINGER_MS }, 'still running after the node stopped; ending the process');
    log.flush();
    process.exit();
  }, LINGER_MS).unref();
}
