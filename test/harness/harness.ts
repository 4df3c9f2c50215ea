/**
 * The process-level test harness: starts real nodes (dev, or from a config file on a data dir that
 * survives restarts), owns their temp dirs, and kills whatever is still running after the tests.
 *
 *   const h = useHarness();                         // registers afterAll(() => h.cleanup())
 *   const dev = await h.startNode({ dev: true });   // dev.rootToken from the banner
 *   const node = await h.startNode();               // uninitialised, on a fresh data dir
 *   const { keys, rootToken } = await initAndUnseal(node.apiAddr);
 *   await node.kill('SIGKILL');
 *   const again = await h.startNode({ dataDir: node.dataDir }); // same LevelDB, needs only unseal
 *   await unseal(again.apiAddr, keys[0]!);
 *   const primary = await h.startNode({ clusterAddr: '127.0.0.1:8201', replication: { walMaxEntries: 50 } });
 */
import { cp, mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, spawnNode, type NodeProcess } from './process.js';
import { vault } from './http.js';

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
}

export interface LeaseSettings {
  readonly maxLeaseTtl?: string;
  readonly defaultLeaseTtl?: string;
}

/** The `replication` block of a node config (src/node/config.ts); omitted fields take its defaults. */
export interface ReplicationBlock {
  readonly walMaxEntries?: number;
  readonly walMaxBytes?: number;
}

/** Optional parts of a non-dev node's config. */
export interface NodeConfigExtras {
  readonly clusterAddr?: string;
  readonly replication?: ReplicationBlock;
  readonly leases?: LeaseSettings;
  readonly listener?: Readonly<Record<string, string>>;
}

export interface StartedNode extends NodeProcess {
  /** The node's home: for dev nodes the temp dir the node made itself, once it has made it. */
  readonly dataDir: string;
  /** The LevelDB directory. */
  readonly storageDir: string;
}

export interface Harness {
  startNode(opts?: StartOptions): Promise<StartedNode>;
  /** A fresh directory removed by `cleanup()`. */
  tempDir(prefix?: string): Promise<string>;
  /** SIGKILLs every node still running, then removes every temp dir. Safe to call twice. */
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
  return [
    `storage "leveldb" { path = ${q(join(home, 'data'))} }`,
    'listener "tcp" {',
    '  address = "127.0.0.1:0"',
    '  tls_disable = true',
    ...Object.entries(extras.listener ?? {}).map(([k, v]) => `  ${k} = ${v}`),
    '}',
    'api_addr = "http://127.0.0.1:0"',
    `cluster_addr = ${q(extras.clusterAddr ?? '127.0.0.1:0')}`,
    ...replication,
    ...(extras.leases?.maxLeaseTtl !== undefined ? [`max_lease_ttl = ${q(extras.leases.maxLeaseTtl)}`] : []),
    ...(extras.leases?.defaultLeaseTtl !== undefined ? [`default_lease_ttl = ${q(extras.leases.defaultLeaseTtl)}`] : []),
    `license_path = ${q(join(home, 'lic', 'license.json'))}`,
    `license_issuer_keys = [${q(issuerKey)}]`,
    `log_level = ${q(logLevel)}`,
    '',
  ].join('\n');
}

/**
 * Writes a dev license into HOME/lic, once per home: copied from `shared` (made through the CLI
 * once per harness, so starting N nodes spawns one CLI process, not N).
 */
async function ensureLicense(home: string, shared: () => Promise<string>): Promise<string> {
  const lic = join(home, 'lic');
  const pub = join(lic, 'issuer.pub');
  if (!existsSync(pub)) await cp(await shared(), lic, { recursive: true });
  return (await readFile(pub, 'utf8')).trim();
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

  // One dev license per harness, made on first use and copied into every node's home.
  let sharedLicense: Promise<string> | undefined;
  const licenseDir = (): Promise<string> =>
    (sharedLicense ??= (async () => {
      const dir = join(await tempDir('tessera-e2e-lic-'), 'lic');
      const r = await runCli(['license', 'dev', '-out', dir]);
      if (r.code !== 0) throw new Error(`license dev failed (${r.code}): ${r.stderr}`);
      return dir;
    })());

  const track = (n: NodeProcess) => {
    nodes.add(n);
    void n.exited.then(() => nodes.delete(n));
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
    const dataDir = made === undefined ? scratch : join(scratch, made);
    return Object.assign(n, { dataDir, storageDir: join(dataDir, 'data') });
  };

  const startConfigured = async (opts: StartOptions): Promise<StartedNode> => {
    const home = opts.dataDir ?? (await tempDir('tessera-e2e-node-'));
    await mkdir(home, { recursive: true });
    const issuerKey = await ensureLicense(home, licenseDir);
    const configPath = join(home, 'config.hcl');
    const extras: NodeConfigExtras = {
      ...(opts.clusterAddr !== undefined ? { clusterAddr: opts.clusterAddr } : {}),
      ...(opts.replication !== undefined ? { replication: opts.replication } : {}),
      ...(opts.leases !== undefined ? { leases: opts.leases } : {}),
      ...(opts.listener !== undefined ? { listener: opts.listener } : {}),
    };
    await writeFile(configPath, nodeConfig(home, issuerKey, opts.logLevel ?? 'info', extras));
    const n = await spawnNode({
      args: ['server', '-config', configPath],
      ready: 'listening-log',
      ...(opts.env !== undefined ? { env: opts.env } : {}),
      ...(opts.readyTimeoutMs !== undefined ? { readyTimeoutMs: opts.readyTimeoutMs } : {}),
    });
    track(n);
    return Object.assign(n, { dataDir: home, storageDir: join(home, 'data') });
  };

  return {
    startNode: (opts = {}) => (opts.dev === true ? startDev(opts) : startConfigured(opts)),
    tempDir,
    async cleanup() {
      await Promise.all([...nodes].map((n) => n.kill('SIGKILL')));
      process.off('exit', onExit);
      await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
    },
  };
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
