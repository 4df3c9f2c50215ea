/**
 * The HA controller on a real PostgreSQL lease store (issue 26 items 1 and 2): two controllers of
 * two nodes on one lock table, with active roles that can fail.
 * - Storage failing while a node becomes active (its role's start throws), and storage failing
 *   under an active node: the node releases the row and backs off, and the other node is active
 *   well within one lease period.
 * - Identity: an echo of a second process with a live node's id is refused, and its claim names
 *   the other; once the other stops echoing, the identity is free.
 * - The HA tables of schema version 1 are migrated in place.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { startPostgres, type TestPostgres } from '../../test/support/postgres.js';
import { SCHEMA_TABLE } from '../storage/postgres.js';
import type { LeaseCandidate, LeaseStore } from '../core/ha/lease-store.js';
import { LEASE_SCHEMA_VERSION, openPostgresLease } from '../storage/postgres-lease.js';
import { HaController, IdentityTaken, type ActiveRole } from './controller.js';
import { eventually } from '../../test/harness/eventually.js';

const LEASE = { ttlMs: 1000, renewMs: 250, retryMs: 100, marginMs: 250, graceMs: 150, backoffMs: 1000, backoffMaxMs: 4000 };
const log = pino({ level: 'silent' });

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 60_000);
afterAll(async () => {
  await server.stop();
});

const candidate = (name: string): LeaseCandidate => ({ holder: `node-${name}`, hostname: 'h', apiAddr: `http://${name}:8200`, clusterAddr: `${name}:8201`, version: 't', instance: randomBytes(4).toString('hex') });

/** A role whose start fails while `failing` says so; counts its starts and stops. */
function role(failing: () => string | undefined) {
  const r = { starts: 0, stops: 0 };
  const active: ActiveRole = {
    start: async () => {
      r.starts += 1;
      const why = failing();
      if (why !== undefined) throw new Error(why);
    },
    stop: async () => {
      r.stops += 1;
    },
  };
  return Object.assign(r, { active });
}

async function until(check: () => boolean, timeoutMs: number): Promise<number> {
  const from = Date.now();
  while (!check()) {
    if (Date.now() - from > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - from;
}

async function pair(db: string) {
  const url = await server.createDatabase(db);
  const stores: LeaseStore[] = [await openPostgresLease({ connectionUrl: url }), await openPostgresLease({ connectionUrl: url })];
  const make = (store: LeaseStore, me: LeaseCandidate, r: ActiveRole) => new HaController({ store, me: () => me, role: r, log, now: Date.now, lease: LEASE, tickMs: 10, echoMs: 100 });
  return { url, stores, make };
}

test('storage failing while a node becomes active, then under an active node: it releases and backs off, the other is active within a lease', async () => {
  const { stores, make } = await pair('ctl_storage');
  let aFails: string | undefined = 'storage failed: connection terminated unexpectedly';
  const ra = role(() => aFails);
  const rb = role(() => undefined);
  const a = make(stores[0]!, candidate('a'), ra.active);
  const b = make(stores[1]!, candidate('b'), rb.active);
  a.start();
  b.start();
  try {
    // a alone competes: it wins, its start fails, and it releases the row (nobody holds it).
    await a.sealObserver.opened({ initializing: false });
    await until(() => a.view().backoff !== undefined, 5000);
    expect(a.view().backoff?.reason).toMatch(/storage failed/);
    await until(() => ra.stops === 1, 2000);
    // The release runs on the lease chain beside the role's stop: the row is free soon after.
    await eventually(async () => expect(await stores[1]!.leader()).toBeUndefined(), { timeoutMs: 2000, intervalMs: 10 });
    // Backing off: no new attempt while it lasts (before the fix it re-took its own row at once).
    const starts = ra.starts;
    await new Promise((resolve) => setTimeout(resolve, LEASE.backoffMs / 2));
    expect(ra.starts).toBe(starts);
    // b competes now: active well within one lease.
    await b.sealObserver.opened({ initializing: false });
    expect(await until(() => b.isActive(), LEASE.ttlMs)).toBeLessThan(LEASE.ttlMs);
    expect(a.isActive()).toBe(false);

    // Storage fails under the active node b: it releases and backs off; a (healthy now) takes over.
    aFails = undefined;
    await until(() => a.view().backoff === undefined, LEASE.backoffMaxMs);
    b.storageFailed('connection terminated unexpectedly');
    expect(b.view().backoff?.reason).toBe('storage failed: connection terminated unexpectedly');
    expect(await until(() => a.isActive(), LEASE.ttlMs)).toBeLessThan(LEASE.ttlMs);
    expect(b.isActive()).toBe(false);
  } finally {
    await a.stop();
    await b.stop();
    for (const s of stores) await s.close();
  }
});

test('a second process with a live node\'s id: its echo is refused and its claim names the other; free once the other stops echoing', async () => {
  const { stores, make } = await pair('ctl_identity');
  const me = candidate('a');
  const twin = { ...me, instance: 'other-process' };
  const first = make(stores[0]!, me, role(() => undefined).active);
  await first.claim();
  first.start();
  try {
    expect(await stores[1]!.echo(twin, 300)).toMatchObject({ nodeId: me.holder, instance: me.instance, apiAddr: me.apiAddr });
    const second = make(stores[1]!, twin, role(() => undefined).active);
    const refused = (await second.claim().catch((e: unknown) => e)) as Error;
    expect(refused).toBeInstanceOf(IdentityTaken);
    expect(refused.message).toContain(`api_addr ${me.apiAddr}, cluster_addr ${me.clusterAddr}, last echo `);
    await first.stop();
    // The first process is gone (no more echoes): the identity is free after the stale window.
    await second.claim();
  } finally {
    await first.stop();
    for (const s of stores) await s.close();
  }
});

test('HA tables of schema version 1 are migrated in place to the current version', async () => {
  const url = await server.createDatabase('ctl_migrate');
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
      expect(await store.echo(candidate('new'), 3000)).toBeUndefined();
    } finally {
      await store.close();
    }
  } finally {
    await c.end();
  }
});
