/**
 * The PostgreSQL lease store (postgres-lease.ts) passes the LeaseStore contract
 * (test/support/lease-store-contract.ts) on a private PostgreSQL: each case on its own HA tables,
 * with two stores (two nodes' pools), and commits made by a PostgreSQL data backend whose guard is
 * the store's fence. The database's clock times the row, so `elapse` is real time. And the HA
 * tables of schema version 1 are migrated in place, and a standby frozen in the middle of an
 * acquire (SIGSTOP, played by a proxy that holds its later bytes) holds no lock on the row.
 */
import pg from 'pg';
import { eventually } from '../../test/harness/eventually.js';
import { usePostgres } from '../../test/support/postgres.js';
import { startTcpProxy } from '../../test/support/tcp-proxy.js';
import { runLeaseStoreContract } from '../../test/support/lease-store-contract.js';
import type { Backend } from './backend.js';
import { BatchRefused, openPostgresBackend, SCHEMA_TABLE, type BatchGuard } from './postgres.js';
import { LEASE_SCHEMA_VERSION, openPostgresLease } from './postgres-lease.js';

const server = usePostgres();
let cases = 0;

runLeaseStoreContract('postgresql', async () => {
  const n = ++cases;
  const connectionUrl = server().url;
  const table = `ha_contract_${n}`;
  const a = await openPostgresLease({ connectionUrl, table });
  const b = await openPostgresLease({ connectionUrl, table });
  const backends = new Map<BatchGuard, Backend>();
  return {
    a,
    b,
    async commit(guard) {
      let backend = backends.get(guard);
      if (backend === undefined) {
        backend = await openPostgresBackend({ connectionUrl, table: `kv_contract_${n}_${backends.size}`, guard });
        backends.set(guard, backend);
      }
      try {
        await backend.batch([{ type: 'put', key: 'k', value: Buffer.from('v') }], { sync: true });
        return undefined;
      } catch (e) {
        if (e instanceof BatchRefused) return e.reason;
        throw e;
      }
    },
    elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    async close() {
      for (const backend of backends.values()) await backend.close();
      await a.close();
      await b.close();
    },
  };
});

test('HA tables of schema version 1 are migrated in place to the current version (3: the echo measurements)', async () => {
  const url = await server().createDatabase('lease_migrate');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`CREATE TABLE ${SCHEMA_TABLE} (table_name text PRIMARY KEY, version integer NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    await c.query('CREATE TABLE vault_ha_locks (ha_key text PRIMARY KEY, holder text NOT NULL, epoch bigint NOT NULL, api_addr text NOT NULL, cluster_addr text NOT NULL, valid_until timestamptz NOT NULL)');
    await c.query('CREATE SEQUENCE vault_ha_locks_epoch');
    await c.query('CREATE TABLE vault_ha_locks_members (node_id text PRIMARY KEY, hostname text NOT NULL, api_addr text NOT NULL, cluster_addr text NOT NULL, version text NOT NULL, last_echo timestamptz NOT NULL)');
    await c.query("INSERT INTO vault_ha_locks_members VALUES ('old', 'h', 'http://old', 'old:8201', 'v1', now())");
    await c.query(`INSERT INTO ${SCHEMA_TABLE} (table_name, version) VALUES ('vault_ha_locks', 1)`);
    const store = await openPostgresLease({ connectionUrl: url });
    try {
      expect((await c.query(`SELECT version FROM ${SCHEMA_TABLE} WHERE table_name = 'vault_ha_locks'`)).rows[0]).toEqual({ version: LEASE_SCHEMA_VERSION });
      expect((await store.members(60_000)).map((m) => [m.nodeId, m.instance])).toEqual([['old', '']]);
      // Version 3's columns: an old row reads as no measurement yet.
      expect((await store.members(60_000))[0]).toMatchObject({ echoDurationMs: 0, redundancyZone: '' });
      expect((await store.members(60_000))[0]!.localTime).toBeUndefined();
      const fresh = { holder: 'node-new', hostname: 'h', apiAddr: 'http://new:8200', clusterAddr: 'new:8201', version: 't', instance: 'i-new' };
      expect(await store.echo(fresh, 3000)).toBeUndefined();
      // An echo carries what the member measured and its clock; the row keeps them.
      const measured = { ...fresh, holder: 'node-measured', instance: 'i-m', redundancyZone: 'zone-a' };
      expect(await store.echo(measured, 3000, undefined, { echoDurationMs: 7, localTime: 1_700_000_000_123 })).toBeUndefined();
      const row = (await store.members(60_000)).find((m) => m.nodeId === measured.holder);
      expect(row).toMatchObject({ echoDurationMs: 7, redundancyZone: 'zone-a' });
      expect(row!.localTime!.getTime()).toBe(1_700_000_000_123);
    } finally {
      await store.close();
    }
  } finally {
    await c.end();
  }
});

test('a standby frozen right after its acquire statement holds no lock: the holder renews and commits meanwhile', async () => {
  const url = await server().createDatabase('lease_frozen');
  const table = 'ha_frozen';
  const holder = await openPostgresLease({ connectionUrl: url, table });
  // Every byte the standby's connection sends after its statement that locks the row waits.
  const proxy = await startTcpProxy(`127.0.0.1:${server().port}`, { holdAfter: (chunk) => chunk.includes('FOR UPDATE') });
  const standby = await openPostgresLease({ connectionUrl: url.replace(`:${server().port}/`, `:${proxy.port}/`), table });
  const backend = await openPostgresBackend({ connectionUrl: url, table: 'kv_frozen', guard: holder.fence(() => ({ mode: 'active', holder: 'node-a', epoch }), () => undefined) });
  const a = { holder: 'node-a', hostname: 'a', apiAddr: 'https://a:8200', clusterAddr: 'a:8201', version: '1', instance: 'a-1' };
  const r = await holder.acquire(a, 60_000);
  const epoch = r.won ? r.epoch : -1;
  try {
    const attempt = standby.acquire({ ...a, holder: 'node-b', hostname: 'b', instance: 'b-1' }, 60_000);
    await eventually(() => expect(proxy.held()).toBe(1), { timeoutMs: 10_000, intervalMs: 10 });
    // A transaction left open between statements would hold the row FOR UPDATE: the renew
    // would wait past its statement timeout, and the fenced commit for as long as it stays frozen.
    expect(await holder.renew(a.holder, epoch, 60_000)).toBe(true);
    await backend.batch([{ type: 'put', key: 'k', value: Buffer.from('v') }], { sync: true });
    proxy.release();
    expect(await attempt).toEqual({ won: false, leader: { holder: a.holder, epoch, apiAddr: a.apiAddr, clusterAddr: a.clusterAddr } });
  } finally {
    proxy.release();
    await backend.close();
    await standby.close();
    await holder.close();
    await proxy.close();
  }
});

test('concurrent acquires of a missing row, then of an expired one: exactly one wins each time, the others name it or nobody', async () => {
  const url = await server().createDatabase('lease_race');
  const stores = [await openPostgresLease({ connectionUrl: url, table: 'ha_race' }), await openPostgresLease({ connectionUrl: url, table: 'ha_race' })];
  const node = (i: number) => ({ holder: `node-${i}`, hostname: `h${i}`, apiAddr: `https://n${i}:8200`, clusterAddr: `n${i}:8201`, version: '1', instance: `n${i}-1` });
  try {
    for (const ttlMs of [150, 60_000]) {
      // The second round starts once the first round's row expired.
      if (ttlMs === 60_000) await eventually(async () => expect(await stores[0]!.leader()).toBeUndefined(), { timeoutMs: 10_000, intervalMs: 20 });
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => stores[i % 2]!.acquire(node(i), ttlMs)));
      const winners = results.flatMap((r, i) => (r.won ? [{ i, epoch: r.epoch }] : []));
      expect(winners).toHaveLength(1);
      const w = winners[0]!;
      for (const r of results) if (!r.won && r.leader !== undefined) expect(r.leader).toEqual({ holder: `node-${w.i}`, epoch: w.epoch, apiAddr: `https://n${w.i}:8200`, clusterAddr: `n${w.i}:8201` });
    }
  } finally {
    for (const s of stores) await s.close();
  }
});
