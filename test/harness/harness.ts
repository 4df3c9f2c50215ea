/**
 * The tests' one builder. A harness starts nodes of either kind, owns their homes (temp dirs),
 * writes their licenses, can init + unseal them, and stops whatever is still running after the
 * file's tests. Every node satisfies `NodeHandle` (apiAddr, dataDir, rootToken, unsealKeys,
 * vault(), stop()).
 *
 * - Process nodes (the default): `node dist/cli/main.js server` as a child process, for what only a
 *   process shows: kill -9, SIGSTOP, restart on the same LevelDB, logs, the CLI, config files.
 *   Build first. Extra: `kill(signal)`, `proc`, `stdoutLines`/`stderrLines`, `storageDir`.
 * - In-process nodes (`{ inProcess: true }`): src/node's `startNode` in this jest process, real
 *   LevelDB and real HTTP but no spawn: fast, for the HTTP surface and replication logic. Extra:
 *   `node` (the RunningNode), `call()` (compatibility alias of `vault().request()`).
 *   `startTestNode()` (test/support/in-process.ts) is the same builder.
 * - Topologies: `startCluster(h, { dr: ['east'] })` (cluster.ts) builds a primary and activated,
 *   in-sync secondaries of either kind, each node with start options of its own (scripts give
 *   theirs with `fixedNodeOptions`), optionally behind a TCP proxy and with hooks before enable
 *   and activation: the one topology builder of the tests and the scripts.
 *
 *   const h = useHarness();                         // registers afterAll(() => h.cleanup())
 *   const dev = await h.startNode({ dev: true });   // dev.rootToken from the banner
 *   const node = await h.startNode();               // uninitialised, on a fresh data dir
 *   const { keys, rootToken } = await initAndUnseal(node.apiAddr);
 *   const ready = await h.startNode({ init: { shares: 3, threshold: 2 } }); // ready.rootToken, ready.unsealKeys
 *   await node.kill('SIGKILL');
 *   const again = await h.startNode({ dataDir: node.dataDir }); // same LevelDB, needs only unseal
 *   await unseal(again.apiAddr, keys[0]!);
 *   const primary = await h.startNode({ clusterAddr: '127.0.0.1:8201', replication: { walMaxEntries: 50 } });
 *   const fast = await h.startNode({ inProcess: true });  // initialised (3 shares, threshold 2) and unsealed
 *   await fast.vault().get('sys/mounts');                 // root token by default
 */
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeDevLicense } from '../../src/license/index.js';
import { spawnNode, type ExitInfo, type NodeProcess } from './process.js';
import { vault, type VaultHttp } from './http.js';
import { startInProcess, type InProcessNode, type InProcessOptions } from './in-process.js';

/** What every node a harness starts offers, in-process or a child process. */
export interface NodeHandle {
  /** e.g. "http://127.0.0.1:40123". */
  readonly apiAddr: string;
  /** The node's home (config, lic/, and the LevelDB under data/). */
  readonly dataDir: string;
  /** Known once the harness initialised the node (or from a dev banner); undefined or '' before. */
  readonly rootToken: string | undefined;
  /** The unseal keys of the harness's init (a dev node's banner key); empty before. */
  readonly unsealKeys: readonly string[];
  /** The tests' client (http.ts) on this node: the root token unless given; null sends none. */
  vault(token?: string | null): VaultHttp;
  stop(): Promise<unknown>;
}

/** Sharing the init that `initAndUnseal` does; `true` is one share, threshold one. */
export type InitOption = true | { readonly shares?: number; readonly threshold?: number };

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

export interface StartOptions {
  /** A dev node: initialised, unsealed, `secret/` mounted as KV v2, credentials in the banner. */
  readonly dev?: boolean;
  /**
   * Non-dev nodes: the node's home (config.hcl, lic/, and the LevelDB under data/). Pass a
   * previous node's `dataDir` to restart on its storage; a fresh temp dir when omitted.
   */
  readonly dataDir?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Non-dev nodes; `info` unless given (dev nodes always log at info). */
  readonly logLevel?: LogLevel;
  readonly devRootTokenId?: string;
  readonly readyTimeoutMs?: number;
  /** Non-dev nodes: the gRPC replication listener; "127.0.0.1:0" (a free port) unless given. */
  readonly clusterAddr?: string;
  /** Non-dev nodes: a `replication { ... }` block (the primary's WAL tail bound); none unless given. */
  readonly replication?: ReplicationBlock;
  /** Non-dev nodes: top-level `max_lease_ttl` / `default_lease_ttl` (e.g. "1h"); unset unless given. */
  readonly leases?: LeaseSettings;
  /** Non-dev nodes: extra `key = value` lines inside the listener block (values as HCL literals). */
  readonly listener?: Readonly<Record<string, string>>;
  /** Non-dev nodes: init and unseal once started, filling `rootToken` and `unsealKeys`. */
  readonly init?: InitOption;
  /** Non-dev nodes: listen (and advertise api_addr) on 127.0.0.1:<apiPort>; a free port unless given. */
  readonly apiPort?: number;
  /** Non-dev nodes: a license directory shared by several nodes (made there once); HOME/lic unless given. */
  readonly licenseDir?: string;
  /**
   * Non-dev nodes: output appended to this file, the node in its own process group, ready once
   * its API answers (needs `apiPort`); the way scripts run long-lived nodes.
   */
  readonly logFile?: string;
  /** Non-dev nodes: Node.js flags before the script (e.g. --cpu-prof). */
  readonly nodeArgs?: readonly string[];
  /** `storage "postgresql"` on this database instead of LevelDB under HOME/data. */
  readonly postgresql?: PostgresqlBlock;
  readonly inProcess?: false;
}

export type { InProcessNode, InProcessOptions } from './in-process.js';

export interface LeaseSettings {
  readonly maxLeaseTtl?: string;
  readonly defaultLeaseTtl?: string;
}

/** The `replication` block of a node config (src/node/config.ts); omitted fields take its defaults. */
export interface ReplicationBlock {
  readonly walMaxEntries?: number;
  readonly walMaxBytes?: number;
}

/** A `storage "postgresql"` block (src/node/config-blocks.ts). */
export interface PostgresqlBlock {
  readonly connectionUrl: string;
  readonly table?: string;
  readonly haEnabled?: boolean;
  readonly haTable?: string;
  /** `ha_lease_ttl`, e.g. "2s". */
  readonly haLeaseTtl?: string;
}

/** Optional parts of a non-dev node's config. */
export interface NodeConfigExtras {
  /** PostgreSQL storage instead of LevelDB under HOME/data. */
  readonly postgresql?: PostgresqlBlock;
  /** The listener's port (and api_addr's); 0, a free port, unless given. */
  readonly apiPort?: number;
  /** The license file; HOME/lic/license.json unless given. */
  readonly licensePath?: string;
  readonly clusterAddr?: string;
  readonly replication?: ReplicationBlock;
  readonly leases?: LeaseSettings;
  readonly listener?: Readonly<Record<string, string>>;
}

/** A child-process node. */
export interface StartedNode extends NodeProcess, NodeHandle {
  /** The node's home: for dev nodes the temp dir the node made itself, once it has made it. */
  readonly dataDir: string;
  /** The LevelDB directory. */
  readonly storageDir: string;
  readonly rootToken: string | undefined;
  stop(timeoutMs?: number): Promise<ExitInfo>;
}

export interface Harness {
  /** An in-process node, initialised and unsealed unless `initialize: false`. */
  startNode(opts: InProcessOptions & { readonly inProcess: true }): Promise<InProcessNode>;
  /** A child-process node (build first). */
  startNode(opts?: StartOptions): Promise<StartedNode>;
  /** A fresh directory removed by `cleanup()`. */
  tempDir(prefix?: string): Promise<string>;
  /** Runs `fn` first in `cleanup()` (a topology's TCP proxy, say). */
  onCleanup(fn: () => Promise<unknown>): void;
  /** Runs what `onCleanup` registered, SIGKILLs every node still running, then removes every temp dir. Safe to call twice. */
  cleanup(): Promise<void>;
}

export interface InitResult {
  readonly keys: readonly string[];
  readonly keysBase64: readonly string[];
  readonly rootToken: string;
}

/** The HCL config of a non-dev node whose home is `home`. */
export function nodeConfig(home: string, issuerKey: string, logLevel: LogLevel, extras: NodeConfigExtras = {}): string {
  const q = (s: string) => JSON.stringify(s);
  const r = extras.replication;
  const replication =
    r === undefined
      ? []
      : [
          'replication {',
          ...(r.walMaxEntries !== undefined ? [`  wal_max_entries = ${r.walMaxEntries}`] : []),
          ...(r.walMaxBytes !== undefined ? [`  wal_max_bytes = ${r.walMaxBytes}`] : []),
          '}',
        ];
  const pgb = extras.postgresql;
  const storage =
    pgb === undefined
      ? [`storage "leveldb" { path = ${q(join(home, 'data'))} }`]
      : [
          'storage "postgresql" {',
          `  connection_url = ${q(pgb.connectionUrl)}`,
          ...(pgb.table !== undefined ? [`  table = ${q(pgb.table)}`] : []),
          ...(pgb.haEnabled === true ? ['  ha_enabled = "true"'] : []),
          ...(pgb.haTable !== undefined ? [`  ha_table = ${q(pgb.haTable)}`] : []),
          ...(pgb.haLeaseTtl !== undefined ? [`  ha_lease_ttl = ${q(pgb.haLeaseTtl)}`] : []),
          '}',
        ];
  return [
    ...storage,
    'listener "tcp" {',
    `  address = "127.0.0.1:${extras.apiPort ?? 0}"`,
    '  tls_disable = true',
    ...Object.entries(extras.listener ?? {}).map(([k, v]) => `  ${k} = ${v}`),
    '}',
    `api_addr = "http://127.0.0.1:${extras.apiPort ?? 0}"`,
    `cluster_addr = ${q(extras.clusterAddr ?? '127.0.0.1:0')}`,
    ...replication,
    ...(extras.leases?.maxLeaseTtl !== undefined ? [`max_lease_ttl = ${q(extras.leases.maxLeaseTtl)}`] : []),
    ...(extras.leases?.defaultLeaseTtl !== undefined ? [`default_lease_ttl = ${q(extras.leases.defaultLeaseTtl)}`] : []),
    `license_path = ${q(extras.licensePath ?? join(home, 'lic', 'license.json'))}`,
    `license_issuer_keys = [${q(issuerKey)}]`,
    `log_level = ${q(logLevel)}`,
    '',
  ].join('\n');
}

/**
 * A dev license in directory `lic` (license.json, issuer.pub; made in-process with src/license, as
 * `tessera license dev` would): kept when already there and `reuse` (a restart on the same home,
 * or nodes sharing one license), written afresh otherwise.
 */
export function writeLicense(lic: string, opts: { reuse: boolean; expired?: boolean }): Promise<{ path: string; issuerKey: string }> {
  if (!opts.reuse) return makeLicense(lic, opts);
  // Nodes started together on one shared license must not each write their own: a second caller
  // waits for the write in flight (afterwards, the files on disk are the answer).
  let made = licensesInFlight.get(lic);
  if (made === undefined) {
    made = makeLicense(lic, opts);
    licensesInFlight.set(lic, made);
    void made.then(
      () => licensesInFlight.delete(lic),
      () => licensesInFlight.delete(lic),
    );
  }
  return made;
}

const licensesInFlight = new Map<string, Promise<{ path: string; issuerKey: string }>>();

async function makeLicense(lic: string, opts: { reuse: boolean; expired?: boolean }): Promise<{ path: string; issuerKey: string }> {
  const pub = join(lic, 'issuer.pub');
  if (opts.reuse && existsSync(pub)) return { path: join(lic, 'license.json'), issuerKey: (await readFile(pub, 'utf8')).trim() };
  const made = await writeDevLicense(lic, opts.expired === true ? { now: new Date(Date.now() - 400 * 86_400_000) } : {});
  return { path: made.licensePath, issuerKey: made.issuerPublicKey };
}

/** The PostgreSQL of in-process nodes whose options name none (setInProcessPostgres). */
type PostgresFor = (home: string) => Promise<NonNullable<InProcessOptions['postgresql']>>;
let inProcessPostgres: PostgresFor | undefined;

/**
 * From now on, in-process nodes started without `postgresql` store in the PostgreSQL `storeFor`
 * gives for their home (called with the home, so a restart on the same home can get the same
 * database); undefined goes back to LevelDB under HOME. test/support/engines.ts sets it for the
 * PostgreSQL run of a suite.
 */
export function setInProcessPostgres(storeFor: PostgresFor | undefined): void {
  inProcessPostgres = storeFor;
}

export function createHarness(): Harness {
  const nodes = new Set<NodeProcess>();
  const dirs: string[] = [];
  // A crashed jest worker must not leave nodes behind: kill them synchronously on exit.
  const onExit = () => {
    for (const n of nodes) n.proc.kill('SIGKILL');
  };
  process.on('exit', onExit);

  const tempDir = async (prefix = 'tessera-e2e-') => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };

  const inProcess = new Set<InProcessNode>();
  const cleanups: Array<() => Promise<unknown>> = [];

  const track = (n: NodeProcess) => {
    nodes.add(n);
    void n.exited.then(() => nodes.delete(n));
  };

  /** The handle part every process node shares; `init` fills the credentials. */
  const handle = async (n: NodeProcess, dataDir: string, init: InitOption | undefined): Promise<StartedNode> => {
    let rootToken = n.rootToken;
    let unsealKeys: readonly string[] = n.unsealKey !== undefined ? [n.unsealKey] : [];
    if (init !== undefined) {
      const r = await initAndUnseal(n.apiAddr, init === true ? {} : init);
      rootToken = r.rootToken;
      unsealKeys = r.keys;
    }
    const started: StartedNode = Object.assign(n, {
      dataDir,
      storageDir: join(dataDir, 'data'),
      rootToken,
      unsealKeys,
      vault: (token?: string | null) => vault(n.apiAddr, token === undefined ? started.rootToken : (token ?? undefined)),
    });
    return started;
  };

  const startInProc = async (given: InProcessOptions): Promise<InProcessNode> => {
    const dir = given.dir ?? (await tempDir('tessera-it-'));
    await mkdir(dir, { recursive: true });
    const postgresql = given.postgresql ?? (await inProcessPostgres?.(dir));
    const opts: InProcessOptions = postgresql !== undefined ? { ...given, postgresql } : given;
    const license = (opts.license ?? 'valid') === 'none' ? undefined : await writeLicense(join(dir, 'lic'), { reuse: false, expired: opts.license === 'expired' });
    let n: InProcessNode | undefined;
    n = await startInProcess(opts, {
      dir,
      ownsDir: opts.dir === undefined,
      ...(license !== undefined ? { license } : {}),
      removeDir: () => rm(dir, { recursive: true, force: true }),
      onStopped: () => void inProcess.delete(n!),
    });
    inProcess.add(n);
    if (opts.initialize !== false) {
      const r = await initAndUnseal(n.apiAddr, { shares: 3, threshold: 2 });
      Object.assign(n, { rootToken: r.rootToken, unsealKeys: [...r.keys] });
    }
    return n;
  };

  const startDev = async (opts: StartOptions): Promise<StartedNode> => {
    // The dev node makes its data dir under os.tmpdir(); pointing TMPDIR at our own temp dir
    // keeps it inside what cleanup() removes, and lets tests find the LevelDB files.
    const scratch = await tempDir('tessera-e2e-dev-');
    const args = ['server', '-dev', '-dev-listen-address', '127.0.0.1:0'];
    if (opts.devRootTokenId !== undefined) args.push('-dev-root-token-id', opts.devRootTokenId);
    const n = await spawnNode({
      args,
      ready: 'banner',
      env: { ...opts.env, TMPDIR: scratch },
      ...(opts.readyTimeoutMs !== undefined ? { readyTimeoutMs: opts.readyTimeoutMs } : {}),
    });
    track(n);
    const made = (await readdir(scratch)).find((d) => d.startsWith('tessera-dev-'));
    return handle(n, made === undefined ? scratch : join(scratch, made), undefined);
  };

  const startConfigured = async (opts: StartOptions): Promise<StartedNode> => {
    const home = opts.dataDir ?? (await tempDir('tessera-e2e-node-'));
    await mkdir(home, { recursive: true });
    const license = await writeLicense(opts.licenseDir ?? join(home, 'lic'), { reuse: true });
    const configPath = join(home, 'config.hcl');
    if (opts.apiPort !== undefined) await assertPortFree(opts.apiPort);
    const clusterPort = Number(opts.clusterAddr?.split(':').pop() ?? 0);
    if (clusterPort !== 0) await assertPortFree(clusterPort);
    const extras: NodeConfigExtras = {
      ...(opts.apiPort !== undefined ? { apiPort: opts.apiPort } : {}),
      ...(opts.licenseDir !== undefined ? { licensePath: license.path } : {}),
      ...(opts.clusterAddr !== undefined ? { clusterAddr: opts.clusterAddr } : {}),
      ...(opts.replication !== undefined ? { replication: opts.replication } : {}),
      ...(opts.leases !== undefined ? { leases: opts.leases } : {}),
      ...(opts.listener !== undefined ? { listener: opts.listener } : {}),
      ...(opts.postgresql !== undefined ? { postgresql: opts.postgresql } : {}),
    };
    await writeFile(configPath, nodeConfig(home, license.issuerKey, opts.logLevel ?? 'info', extras));
    if (opts.logFile !== undefined && opts.apiPort === undefined) throw new Error('a node logging to a file needs a known apiPort');
    const n = await spawnNode({
      args: ['server', '-config', configPath],
      ready: opts.logFile !== undefined ? { api: `http://127.0.0.1:${opts.apiPort}` } : 'listening-log',
      ...(opts.logFile !== undefined ? { logFile: opts.logFile } : {}),
      ...(opts.nodeArgs !== undefined ? { nodeArgs: opts.nodeArgs } : {}),
      ...(opts.env !== undefined ? { env: opts.env } : {}),
      ...(opts.readyTimeoutMs !== undefined ? { readyTimeoutMs: opts.readyTimeoutMs } : {}),
    });
    track(n);
    return handle(n, home, opts.init);
  };

  const startAny = (opts: StartOptions | (InProcessOptions & { readonly inProcess: true }) = {}): Promise<StartedNode | InProcessNode> =>
    opts.inProcess === true ? startInProc(opts) : opts.dev === true ? startDev(opts) : startConfigured(opts);

  return {
    startNode: startAny as Harness['startNode'],
    tempDir,
    onCleanup: (fn) => void cleanups.push(fn),
    async cleanup() {
      await Promise.all(cleanups.splice(0).map((fn) => fn().catch(() => undefined)));
      await Promise.all([...nodes].map((n) => n.kill('SIGKILL')));
      await Promise.all([...inProcess].map((n) => n.stop({ keepDir: true })));
      process.off('exit', onExit);
      await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
    },
  };
}

/** A node the way scripts run them (cluster, nemesis, benches): named, on fixed ports, logging to a file. */
export interface FixedNode extends StartedNode {
  readonly name: string;
  /** DIR/NAME: config.hcl, and the LevelDB under data/ (`storageDir`). */
  readonly home: string;
  readonly logFile: string;
  /** 127.0.0.1:<clusterPort>. */
  readonly clusterAddr: string;
}

export interface FixedNodeOptions {
  readonly apiPort: number;
  readonly clusterPort: number;
  readonly replication?: ReplicationBlock;
  readonly logLevel?: LogLevel;
  readonly readyTimeoutMs?: number;
  /** PostgreSQL storage (an HA cluster's nodes share one database). */
  readonly postgresql?: PostgresqlBlock;
  /** Node.js options before the script (a test preload: `--import FILE`). */
  readonly nodeArgs?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * The start options of node NAME of a script's topology under DIR: home DIR/NAME, fixed ports, the
 * dev license shared in DIR/license (made once), output appended to DIR/NAME.log, in its own
 * process group. Give them to `h.startNode` or, per node, to `startCluster` (cluster.ts). Makes DIR/NAME.
 */
export async function fixedNodeOptions(dir: string, name: string, o: FixedNodeOptions): Promise<StartOptions & { readonly dataDir: string; readonly logFile: string; readonly clusterAddr: string }> {
  const home = join(dir, name);
  await mkdir(home, { recursive: true, mode: 0o700 });
  return {
    dataDir: home,
    apiPort: o.apiPort,
    clusterAddr: `127.0.0.1:${o.clusterPort}`,
    licenseDir: join(dir, 'license'),
    logFile: join(dir, `${name}.log`),
    logLevel: o.logLevel ?? 'info',
    readyTimeoutMs: o.readyTimeoutMs ?? 30_000,
    ...(o.replication !== undefined ? { replication: o.replication } : {}),
    ...(o.postgresql !== undefined ? { postgresql: o.postgresql } : {}),
    ...(o.nodeArgs !== undefined ? { nodeArgs: o.nodeArgs } : {}),
    ...(o.env !== undefined ? { env: o.env } : {}),
  };
}

/** `node`, started with `fixedNodeOptions(dir, name, ...)`, as a FixedNode (its name, home, log file and cluster address). */
export function asFixedNode(node: StartedNode, dir: string, name: string, clusterPort: number): FixedNode {
  return Object.assign(node, { name, home: join(dir, name), logFile: join(dir, `${name}.log`), clusterAddr: `127.0.0.1:${clusterPort}` });
}

/**
 * Starts (or restarts, on the same home) node NAME of a script's topology under DIR
 * (`fixedNodeOptions`). Not initialised: the script inits or unseals it.
 */
export async function startFixedNode(h: Harness, dir: string, name: string, o: FixedNodeOptions): Promise<FixedNode> {
  return asFixedNode(await h.startNode(await fixedNodeOptions(dir, name, o)), dir, name, o.clusterPort);
}

/** Throws a clear error when 127.0.0.1:`port` is taken (a fixed-port node would die with a log line instead). */
export async function assertPortFree(port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (e: NodeJS.ErrnoException) => reject(new Error(`127.0.0.1:${port} is in use (${e.code}); pick other ports or stop what holds them`)));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve()));
  });
}

/** A harness whose cleanup runs in this file's afterAll, whether the tests passed or not. */
export function useHarness(): Harness {
  const h = createHarness();
  afterAll(() => h.cleanup());
  return h;
}

/** PUT sys/init (one share unless told) and unseal with the first `threshold` keys. */
export async function initAndUnseal(apiAddr: string, opts: { shares?: number; threshold?: number } = {}): Promise<InitResult> {
  const shares = opts.shares ?? 1;
  const threshold = opts.threshold ?? 1;
  const init = await vault(apiAddr).put('sys/init', { secret_shares: shares, secret_threshold: threshold });
  if (init.status !== 200) throw new Error(`sys/init answered ${init.status}: ${JSON.stringify(init.body)}`);
  const result: InitResult = { keys: init.body.keys, keysBase64: init.body.keys_base64, rootToken: init.body.root_token };
  for (const key of result.keys.slice(0, threshold)) await unseal(apiAddr, key);
  return result;
}

/** Gives `keys` one by one until the node is unsealed (none when it already is); throws when they run out first. */
export async function unsealWith(apiAddr: string, keys: readonly string[]): Promise<void> {
  const seal = await vault(apiAddr).get('sys/seal-status');
  if (seal.status !== 200) throw new Error(`sys/seal-status answered ${seal.status}: ${seal.text}`);
  let st: { sealed: boolean; t?: number } = seal.body;
  for (const key of keys) {
    if (!st.sealed) break;
    st = await unseal(apiAddr, key);
  }
  if (st.sealed) throw new Error(`${apiAddr} is still sealed after ${keys.length} key(s) (threshold ${st.t})`);
}

/** PUT sys/unseal once; throws unless the answer is 200. Resolves with the seal status. */
export async function unseal(apiAddr: string, key: string): Promise<{ sealed: boolean }> {
  const r = await vault(apiAddr).put('sys/unseal', { key });
  if (r.status !== 200) throw new Error(`sys/unseal answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Mounts KV v2 at `path` (e.g. 'secret/'), as non-dev nodes start with no mounts. */
export async function mountKv2(apiAddr: string, token: string, path = 'secret'): Promise<void> {
  const r = await vault(apiAddr, token).post(`sys/mounts/${path}`, { type: 'kv', options: { version: '2' } });
  if (r.status !== 204 && r.status !== 200) throw new Error(`mount ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
}
