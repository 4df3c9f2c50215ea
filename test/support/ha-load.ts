/** HA fault tests' load and what they check afterwards: writers, acknowledged writes, the WAL's epochs. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { decodeEntry } from '../../src/core/wal.js';
import { Keys } from '../../src/storage/keyspace.js';
import { vault } from '../harness/index.js';

/** The epoch of every WAL entry in the database, in index order. */
export async function walEpochs(url: string): Promise<number[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const from = Buffer.from(Keys.walPrefix, 'utf8');
    const to = Buffer.from('w0', 'utf8');
    const rows = await c.query<{ value: Buffer }>('SELECT value FROM vault_kv_store WHERE key >= $1 AND key < $2 ORDER BY key', [from, to]);
    return rows.rows.map((r) => decodeEntry(r.value).epoch);
  } finally {
    await c.end();
  }
}

/** A writer of distinct keys and one counter through `addr`, until `stop()`. */
/** Every writer not yet stopped: a case that fails before its own stop() leaves them to stopAllWriters(). */
const live = new Set<{ stop(): Promise<void> }>();

/**
 * Stops every writer still running (afterEach): a writer a failed case left looping would keep
 * jest from exiting, and its failure would show as a hang.
 */
export async function stopAllWriters(): Promise<void> {
  await Promise.all([...live].map((w) => w.stop()));
}

export function writer(addr: string, root: string, name: string) {
  const v = vault(addr, root);
  const acked = new Map<string, string>();
  const statuses = new Set<number>();
  let last = -1;
  let stopping = false;
  const run = (async () => {
    for (let i = 0; !stopping; i++) {
      const value = `${name}-${i}-${randomBytes(6).toString('hex')}`;
      try {
        const r = await v.put(`secret/data/${name}/k${i}`, { data: { v: value } });
        statuses.add(r.status);
        if (r.status === 200) acked.set(`${name}/k${i}`, value);
        const c = await v.put(`secret/data/${name}/counter`, { data: { n: i } });
        if (c.status === 200) last = i;
      } catch {
        // The node it writes through is gone (connection refused): keep trying.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  })();
  const handle = {
    acked,
    statuses,
    last: () => last,
    async stop() {
      stopping = true;
      await run;
      live.delete(handle);
    },
  };
  live.add(handle);
  return handle;
}

export async function expectAllPresent(addr: string, root: string, acked: ReadonlyMap<string, string>): Promise<void> {
  const v = vault(addr, root);
  const lost: string[] = [];
  for (const [key, value] of acked) {
    const r = await v.get(`secret/data/${key}`);
    if (r.body?.data?.data?.v !== value) lost.push(`${key}: ${r.status}`);
  }
  expect(lost).toEqual([]);
}
