/**
 * DR replication helpers for process-level tests: status, activation, DR operation tokens, a
 * sync wait, and a KV writer that keeps writing until told to stop.
 *
 *   const st = await drStatus(node.apiAddr);                        // the `data` of dr/status
 *   const jwt = await secondaryToken(primary.apiAddr, root, 'east');
 *   await activateSecondary(secondary.apiAddr, secondaryRoot, jwt);
 *   await waitInSync(primary.apiAddr, secondary.apiAddr);
 *   const op = await drOperationToken(secondary.apiAddr, primaryKeys.slice(0, 2));
 *   const w = startWriter({ apiAddr, token, clients: 4, path: (c, n) => `secret/data/w${c}/${n % 5}` });
 *   const acked = await w.stop();                                  // every acknowledged write
 */
import { createServer } from 'node:net';
import { decodeOtp } from '../../src/replication/operation-token-encoding.js';
import { eventually } from './eventually.js';
import { vault, type Body } from './http.js';

export const DR = 'sys/replication/dr';

/** GET sys/replication/dr/status (unauthenticated); throws unless 200. */
export async function drStatus(apiAddr: string): Promise<Body> {
  const r = await vault(apiAddr).get(`${DR}/status`);
  if (r.status !== 200) throw new Error(`dr/status answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** POST primary/enable; `primaryClusterAddr` is the address secondaries are told ('' = bound listener). */
export async function enablePrimary(apiAddr: string, token: string, primaryClusterAddr = ''): Promise<void> {
  const r = await vault(apiAddr, token).post(`${DR}/primary/enable`, { primary_cluster_addr: primaryClusterAddr });
  if (r.status !== 204) throw new Error(`primary/enable answered ${r.status}: ${JSON.stringify(r.body)}`);
}

/** POST primary/secondary-token; resolves with the activation JWT (wrap_info.token). */
export async function secondaryToken(apiAddr: string, token: string, id: string, ttl?: string | number): Promise<string> {
  const r = await vault(apiAddr, token).post(`${DR}/primary/secondary-token`, { id, ...(ttl !== undefined ? { ttl } : {}) });
  if (r.status !== 200) throw new Error(`secondary-token answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.wrap_info.token as string;
}

/** POST secondary/enable with an activation token; throws unless 204. */
export async function activateSecondary(apiAddr: string, token: string, activationToken: string): Promise<void> {
  const r = await vault(apiAddr, token).post(`${DR}/secondary/enable`, { token: activationToken });
  if (r.status !== 204) throw new Error(`secondary/enable answered ${r.status}: ${JSON.stringify(r.body)}`);
}

/** Runs the generate-operation-token flow (attempt, one update per key) and decodes the token. */
export async function drOperationToken(apiAddr: string, keys: readonly string[]): Promise<string> {
  const v = vault(apiAddr);
  const start = await v.post(`${DR}/secondary/generate-operation-token/attempt`, {});
  if (start.status !== 200) throw new Error(`generate-operation-token/attempt answered ${start.status}: ${JSON.stringify(start.body)}`);
  const { nonce, otp } = start.body as { nonce: string; otp: string };
  let last: Body;
  for (const key of keys) {
    const r = await v.post(`${DR}/secondary/generate-operation-token/update`, { key, nonce });
    if (r.status !== 200) throw new Error(`generate-operation-token/update answered ${r.status}: ${JSON.stringify(r.body)}`);
    last = r.body;
  }
  if (last?.complete !== true) throw new Error(`the attempt did not complete: ${JSON.stringify(last)}`);
  return decodeOtp(last.encoded_token as string, otp);
}

/**
 * Polls until the secondary streams and matches the primary's last_wal and merkle_root; resolves
 * with both statuses. The primary must be idle for this to settle.
 */
export async function waitInSync(primaryApi: string, secondaryApi: string, timeoutMs = 20_000): Promise<{ primary: Body; secondary: Body }> {
  return eventually(async () => {
    const primary = await drStatus(primaryApi);
    const secondary = await drStatus(secondaryApi);
    expect(secondary.state).toBe('stream-wals');
    expect(secondary.last_wal).toBe(primary.last_wal);
    expect(secondary.merkle_root).toBe(primary.merkle_root);
    return { primary, secondary };
  }, { timeoutMs, intervalMs: 50 });
}

/** A free loopback port: bound on port 0, then released. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
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
