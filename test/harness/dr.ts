/**
 * Replication helpers for process-level tests, for either kind (default DR): status, activation,
 * DR operation tokens, a sync wait, paths filters, and a KV writer that keeps writing until told
 * to stop.
 *
 *   const st = await drStatus(node.apiAddr);                        // the `data` of dr/status
 *   const jwt = await secondaryToken(primary.apiAddr, root, 'east');
 *   await activateSecondary(secondary.apiAddr, secondaryRoot, jwt);
 *   await waitInSync(primary.apiAddr, secondary.apiAddr);
 *   const op = await drOperationToken(secondary.apiAddr, primaryKeys.slice(0, 2));
 *   const w = startWriter({ apiAddr, token, clients: 4, path: (c, n) => `secret/data/w${c}/${n % 5}` });
 *   const acked = await w.stop();                                  // every acknowledged write
 *   await enablePrimary(primary.apiAddr, root, '', 'performance');  // the same, performance kind
 *   await waitInSync(primary.apiAddr, perf.apiAddr, 20_000, 'performance');
 */
import { createServer, type AddressInfo, type Server } from 'node:net';
import { decodeOtp } from '../../src/replication/operation-token-encoding.js';
import { eventually } from './eventually.js';
import { vault, type Body, type VaultOptions } from './http.js';

export type { Kind } from '../../src/core/replication/index.js';
import type { Kind } from '../../src/core/replication/index.js';
export const DR = 'sys/replication/dr';
export const PERF = 'sys/replication/performance';
/** `sys/replication/<kind>`. */
export const replicationBase = (kind: Kind): string => `sys/replication/${kind}`;

/** GET sys/replication/<kind>/status (unauthenticated; on a bench's keep-alive agent when given); throws unless 200. */
export async function replStatus(apiAddr: string, kind: Kind, options: VaultOptions = {}): Promise<Body> {
  const r = await vault(apiAddr, undefined, options).get(`${replicationBase(kind)}/status`);
  if (r.status !== 200) throw new Error(`${kind}/status answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** GET sys/replication/dr/status (unauthenticated); throws unless 200. */
export async function drStatus(apiAddr: string, options: VaultOptions = {}): Promise<Body> {
  return replStatus(apiAddr, 'dr', options);
}

/** POST primary/enable; `primaryClusterAddr` is the address secondaries are told ('' = bound listener). */
export async function enablePrimary(apiAddr: string, token: string, primaryClusterAddr = '', kind: Kind = 'dr'): Promise<void> {
  const r = await vault(apiAddr, token).post(`${replicationBase(kind)}/primary/enable`, { primary_cluster_addr: primaryClusterAddr });
  if (r.status !== 204) throw new Error(`${kind} primary/enable answered ${r.status}: ${JSON.stringify(r.body)}`);
}

/** POST primary/secondary-token; resolves with the activation JWT (wrap_info.token). */
export async function secondaryToken(apiAddr: string, token: string, id: string, ttl?: string | number, kind: Kind = 'dr'): Promise<string> {
  const r = await vault(apiAddr, token).post(`${replicationBase(kind)}/primary/secondary-token`, { id, ...(ttl !== undefined ? { ttl } : {}) });
  if (r.status !== 200) throw new Error(`${kind} secondary-token answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.wrap_info.token as string;
}

/**
 * POST secondary/enable with an activation token; throws unless 204. `token` does not survive a
 * performance activation: `generateRoot` with the primary's keys makes one there.
 */
export async function activateSecondary(apiAddr: string, token: string, activationToken: string, kind: Kind = 'dr'): Promise<void> {
  const r = await vault(apiAddr, token).post(`${replicationBase(kind)}/secondary/enable`, { token: activationToken });
  if (r.status !== 204) throw new Error(`${kind} secondary/enable answered ${r.status}: ${JSON.stringify(r.body)}`);
}

/** POST (or, with `undefined`, DELETE) the performance paths filter of secondary `id` on its primary. */
export async function setPathsFilter(apiAddr: string, token: string, id: string, filter: { mode: 'allow' | 'deny'; paths: readonly string[] } | undefined): Promise<void> {
  const v = vault(apiAddr, token);
  const path = `${PERF}/primary/paths-filter/${id}`;
  const r = filter === undefined ? await v.delete(path) : await v.post(path, filter);
  if (r.status !== 204) throw new Error(`paths-filter/${id} answered ${r.status}: ${JSON.stringify(r.body)}`);
}

/**
 * Runs one token-generation flow at `base`: cancels an attempt already in progress, starts one,
 * gives keys until it completes, and decodes the token.
 */
async function generateToken(apiAddr: string, base: string, keys: readonly string[]): Promise<string> {
  const v = vault(apiAddr);
  const current = await v.get(`${base}/attempt`);
  if (current.status === 200 && current.body?.started === true) await v.delete(`${base}/attempt`);
  const start = await v.post(`${base}/attempt`, {});
  if (start.status !== 200) throw new Error(`${base}/attempt answered ${start.status}: ${JSON.stringify(start.body)}`);
  const { nonce, otp } = start.body as { nonce: string; otp: string };
  let last: Body;
  for (const key of keys) {
    const r = await v.post(`${base}/update`, { key, nonce });
    if (r.status !== 200) throw new Error(`${base}/update answered ${r.status}: ${JSON.stringify(r.body)}`);
    last = r.body;
    if (last?.complete === true) break;
  }
  if (last?.complete !== true) throw new Error(`${base}: the attempt did not complete (too few keys): ${JSON.stringify(last)}`);
  return decodeOtp(last.encoded_token as string, otp);
}

/** Runs the generate-operation-token flow on a DR secondary with `keys` and decodes the token. */
export function drOperationToken(apiAddr: string, keys: readonly string[]): Promise<string> {
  return generateToken(apiAddr, `${DR}/secondary/generate-operation-token`, keys);
}

/**
 * A root token of the node at `apiAddr` from `sys/generate-root` with `keys`: on a performance
 * secondary, its primary's unseal keys (it adopted the primary's seal at activation, and the
 * token that enabled it does not survive the activation). Waits (up to `timeoutMs`) until the
 * activation finished.
 */
export async function generateRoot(apiAddr: string, keys: readonly string[], timeoutMs = 20_000): Promise<string> {
  await eventually(async () => {
    if ((await replStatus(apiAddr, 'performance')).mode === 'bootstrapping') throw new Error(`${apiAddr} is still bootstrapping its performance activation`);
  }, { timeoutMs, intervalMs: 50 });
  return generateToken(apiAddr, 'sys/generate-root', keys);
}

/**
 * Polls until the secondary streams and holds the primary's history; resolves with both statuses.
 * DR: the same last_wal and merkle_root (an exact standby). Performance: the secondary applied the
 * primary's last index (its own WAL and local data differ by design, so roots are not compared).
 * The primary must be idle for this to settle. `streaming` false accepts a DR secondary in sync
 * but not (yet) streaming, as right after a reconcile. `intervalMs`: how often to poll (benches
 * time the wait).
 */
export async function waitInSync(primaryApi: string, secondaryApi: string, timeoutMs = 20_000, kind: Kind = 'dr', streaming = true, intervalMs = 50): Promise<{ primary: Body; secondary: Body }> {
  return eventually(async () => {
    const primary = await replStatus(primaryApi, kind);
    const secondary = await replStatus(secondaryApi, kind);
    if ((streaming || kind === 'performance') && secondary.state !== 'stream-wals') throw new Error(`${secondaryApi} is in state ${secondary.state}, not stream-wals`);
    if (kind === 'dr') {
      if (secondary.last_wal !== primary.last_wal) throw new Error(`DR secondary at WAL ${secondary.last_wal}, primary at ${primary.last_wal}`);
      if (secondary.merkle_root !== primary.merkle_root) throw new Error(`DR secondary Merkle root ${secondary.merkle_root}, primary ${primary.merkle_root}`);
    } else if (secondary.last_remote_wal !== primary.last_wal) {
      throw new Error(`performance secondary applied WAL ${secondary.last_remote_wal}, primary at ${primary.last_wal}`);
    }
    return { primary, secondary };
  }, { timeoutMs, intervalMs });
}

/**
 * Polls until the node at `secondaryApi` is a `kind` secondary streaming WALs (from `from`, a
 * primary cluster address as host:port or https://host:port, or any of a list such as an HA
 * cluster's nodes, when given); resolves with its
 * status. Unlike `waitInSync` it needs no idle primary: for topologies under load.
 */
export async function waitStreaming(secondaryApi: string, opts: { kind?: Kind; timeoutMs?: number; from?: string | readonly string[] } = {}): Promise<Body> {
  const hostPort = (a: unknown) => String(a ?? '').replace(/^https:\/\//, '');
  const from = opts.from === undefined ? undefined : (typeof opts.from === 'string' ? [opts.from] : opts.from).map(hostPort);
  return eventually(async () => {
    const s = await replStatus(secondaryApi, opts.kind ?? 'dr');
    if (s.mode !== 'secondary' || s.state !== 'stream-wals') throw new Error(`${secondaryApi} is ${s.mode} in state ${s.state}, not a streaming secondary`);
    if (from !== undefined && !from.includes(hostPort(s.primary_cluster_addr))) throw new Error(`${secondaryApi} streams from ${s.primary_cluster_addr}, not ${from.join(' or ')}`);
    return s;
  }, { timeoutMs: opts.timeoutMs ?? 60_000, intervalMs: 100 });
}

/** `n` distinct free loopback ports: all bound on port 0 at once, then released. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () =>
      new Promise<Server>((resolve, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve(server));
      }),
    ),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}

/** A free loopback port: bound on port 0, then released. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

export interface AckedWrite {
  readonly path: string;
  readonly value: string;
}

export interface WriterOptions {
  readonly apiAddr: string;
  readonly token: string;
  /** Concurrent clients, each writing one request at a time. */
  readonly clients: number;
  /**
   * The KV v2 data path of client `client`'s `n`th write. Give each client its own paths: a path
   * then sees one write at a time, so its last acknowledged value is the one that must persist.
   */
  readonly path: (client: number, n: number) => string;
}

export interface Writer {
  /** Writes acknowledged (200) so far, in acknowledgement order. */
  readonly acked: readonly AckedWrite[];
  /** Requests that failed (refused or the connection broke): expected once the node dies. */
  readonly failures: () => number;
  /** Stops after the in-flight requests settle; resolves with every acknowledged write. */
  stop(): Promise<readonly AckedWrite[]>;
}

/**
 * Keeps `clients` KV v2 writers busy until `stop()`. A failed request is counted, not thrown: the
 * writer outlives the node it writes to, and a dead node simply stops acknowledging. Each value is
 * unique (`c<client>n<n>`), so a read-back proves which write it is.
 */
export function startWriter(o: WriterOptions): Writer {
  const acked: AckedWrite[] = [];
  let failures = 0;
  let running = true;
  const v = vault(o.apiAddr, o.token);
  const client = async (_: unknown, c: number): Promise<void> => {
    for (let n = 0; running; n++) {
      const path = o.path(c, n);
      const value = `c${c}n${n}`;
      try {
        const r = await v.put(path, { data: { value } });
        if (r.status === 200) acked.push({ path, value });
        else failures++;
      } catch {
        failures++;
        // A dead node refuses at once: do not spin.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  const all = Promise.all(Array.from({ length: o.clients }, client));
  return {
    acked,
    failures: () => failures,
    async stop() {
      running = false;
      await all;
      return acked;
    },
  };
}

/** The last acknowledged value of every path: what a read must return once writes have stopped. */
export function lastAcked(writes: readonly AckedWrite[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const w of writes) m.set(w.path, w.value);
  return m;
}

/** What a node holds of KV v1 mounts: per mount, its keys and values, or null when the mount does not exist there. */
export type KvDataSet = Record<string, Record<string, unknown> | null>;

/**
 * Reads the KV v1 mounts `mounts` (names without the slash) on a node as `token` sees them: a
 * mount absent from sys/mounts is null (and must then answer 404 to a read), else every key
 * listed there with its `value` field. Compare two nodes' sets to compare what they hold.
 */
export async function kvDataSet(apiAddr: string, token: string, mounts: readonly string[]): Promise<KvDataSet> {
  const v = vault(apiAddr, token);
  const table = await v.get('sys/mounts');
  if (table.status !== 200) throw new Error(`sys/mounts answered ${table.status}: ${JSON.stringify(table.body)}`);
  const out: KvDataSet = {};
  for (const m of mounts) {
    if (table.body.data[`${m}/`] === undefined) {
      const probe = await v.list(`${m}/`);
      if (probe.status !== 404) throw new Error(`${m}/ is not in sys/mounts yet answered a LIST with ${probe.status}`);
      out[m] = null;
      continue;
    }
    const listed = await v.list(`${m}/`);
    const keys: string[] = listed.status === 404 ? [] : listed.body.data.keys;
    const held: Record<string, unknown> = {};
    for (const k of [...keys].sort()) {
      const r = await v.get(`${m}/${k}`);
      held[k] = r.status === 200 ? r.body.data.value : `<${r.status}>`;
    }
    out[m] = held;
  }
  return out;
}

/** `full` narrowed to the mounts in `allowed`: the others are null (absent), as on a filtered secondary. */
export function filteredSet(full: KvDataSet, allowed: readonly string[]): KvDataSet {
  return Object.fromEntries(Object.entries(full).map(([m, held]) => [m, allowed.includes(m) ? held : null]));
}
