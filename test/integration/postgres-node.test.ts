/**
 * A node on PostgreSQL (storage "postgresql"), in process, on a private PostgreSQL 15
 * (test/support/postgres.ts): init, unseal, KV v2, seal/unseal, a restart on the same database,
 * the Merkle check, and a DR pair whose primary is on PostgreSQL and secondary on LevelDB; when the
 * server kills its connections the node goes on, and when the server stops it fails closed.
 */
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { joinSecondary } from '../harness/cluster.js';
import { inSync } from '../support/dr.js';
import { eventually } from '../harness/eventually.js';
import { startHaCluster, type InProcessHaNode } from '../harness/ha.js';
import { useHarness } from '../harness/harness.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';

const h = useHarness();
let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

async function rowCount(url: string, table: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n);
  } finally {
    await c.end();
  }
}

describe('a node on PostgreSQL', () => {
  const nodes: TestNode[] = [];
  const onStop: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const n of nodes.splice(0).reverse()) await n.stop();
    for (const stop of onStop.splice(0)) await stop();
  });

  it('initialises, serves KV v2, seals and unseals, and keeps its data across a restart', async () => {
    const url = await server.createDatabase('node_restart');
    const postgresql = { connectionUrl: url };
    const n = await startTestNode({ postgresql });
    nodes.push(n);
    expect((await n.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    for (let i = 0; i < 30; i++) expect((await n.call('PUT', `secret/data/k${i}`, { data: { i } })).status).toBe(200);
    expect((await n.call('GET', 'secret/data/k7')).body.data.data).toEqual({ i: 7 });
    expect(await rowCount(url, 'vault_kv_store')).toBeGreaterThan(30);

    expect((await n.call('PUT', 'sys/seal', {})).status).toBe(204);
    expect((await n.call('GET', 'secret/data/k7')).status).toBe(503);
    for (const key of n.unsealKeys.slice(0, 2)) await n.call('PUT', 'sys/unseal', { key }, { token: null });
    expect((await n.call('GET', 'secret/data/k7')).body.data.data).toEqual({ i: 7 });

    const clean = (await n.call('POST', 'sys/replication/merkle-check', {})).body.data.merkle_corruption_report;
    expect(clean.corrupted_root).toBe(false);
    expect(clean.corrupted_tree_map['1'].corrupted_index_tuples_map).toBeNull();

    const { rootToken, unsealKeys } = n;
    await n.stop();
    nodes.splice(0);
    const again = await startTestNode({ postgresql, initialize: false });
    nodes.push(again);
    again.rootToken = rootToken;
    expect((await again.call('GET', 'sys/seal-status', undefined, { token: null })).body).toMatchObject({ initialized: true, sealed: true });
    for (const key of unsealKeys.slice(0, 2)) await again.call('PUT', 'sys/unseal', { key }, { token: null });
    for (const i of [0, 7, 29]) expect((await again.call('GET', `secret/data/k${i}`)).body.data.data).toEqual({ i });
    const list = await again.call('LIST', 'secret/metadata/');
    expect(list.body.data.keys).toHaveLength(30);
    const after = (await again.call('POST', 'sys/replication/merkle-check', {})).body.data.merkle_corruption_report;
    expect(after.corrupted_root).toBe(false);
    expect((await again.call('PUT', 'secret/data/after-restart', { data: { ok: true } })).status).toBe(200);
  });

  it('with ha_enabled a lone node becomes the active node; logs never show the password', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    // Trust auth: the server never asks for this password, so it only tests what is logged.
    const withPassword = (url: string): string => url.replace('postgres://tessera@', 'postgres://tessera:pg-s3cret-pw@');
    const c = await startHaCluster(h, { inProcess: true, nodes: 1, postgres: server, database: 'node_ha', connectionUrl: withPassword, node: () => ({ logger: pino({ level: 'info' }, sink) }) });
    const [n] = c.nodes as [InProcessHaNode];
    onStop.push(() => c.close());
    expect(await c.active()).toBe(n);
    await eventually(async () => expect((await n.call('GET', 'sys/health', undefined, { token: null })).status).toBe(200), { timeoutMs: 10_000 });
    expect((await n.call('GET', 'sys/leader', undefined, { token: null })).body).toMatchObject({ ha_enabled: true, is_self: true, leader_address: n.apiAddr });
    const log = lines.join('');
    expect(log).toContain('HA: this node is the active node');
    expect(log).toContain('tessera:***@127.0.0.1');
    expect(log).not.toContain('pg-s3cret-pw');
  });

  it('streams to a DR secondary on LevelDB', async () => {
    const url = await server.createDatabase('node_dr');
    const p = await startTestNode({ postgresql: { connectionUrl: url } });
    nodes.push(p);
    const s = await startTestNode();
    nodes.push(s);
    await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    for (let i = 0; i < 10; i++) await p.call('PUT', `secret/data/before/${i}`, { data: { i } });
    await joinSecondary(p, s, 'dr-level');
    expect((await p.call('PUT', 'secret/data/streamed', { data: { v: 'from-postgres' } })).status).toBe(200);
    const st = await inSync(p, s, { streaming: true });
    expect(st).toMatchObject({ mode: 'secondary', secondary_id: 'dr-level' });
    // The secondary answers reads only after a promotion; its Merkle root equals the primary's (inSync).
    const merkle = (await p.call('POST', 'sys/replication/merkle-check', {})).body.data.merkle_corruption_report;
    expect(merkle.corrupted_root).toBe(false);
  });
});

describe('a node on PostgreSQL when the server misbehaves', () => {
  const crashes: unknown[] = [];
  const onCrash = (e: unknown): void => void crashes.push(e);
  beforeAll(() => {
    process.on('unhandledRejection', onCrash);
    process.on('uncaughtException', onCrash);
  });
  afterAll(() => {
    process.off('unhandledRejection', onCrash);
    process.off('uncaughtException', onCrash);
  });

  it('survives pg_terminate_backend of its idle connections: the pool reconnects and requests go on', async () => {
    const url = await server.createDatabase('node_terminated');
    const n = await startTestNode({ postgresql: { connectionUrl: url } });
    try {
      await n.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
      expect((await n.call('PUT', 'secret/data/a', { data: { v: 1 } })).status).toBe(200);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tessera' AND datname = 'node_terminated'");
        expect(killed.rowCount).toBeGreaterThan(0);
      } finally {
        await admin.end();
      }
      await new Promise((r) => setTimeout(r, 200));
      expect((await n.call('GET', 'secret/data/a')).body.data.data).toEqual({ v: 1 });
      expect((await n.call('PUT', 'secret/data/b', { data: { v: 2 } })).status).toBe(200);
      expect((await n.call('GET', 'sys/health', undefined, { token: null })).status).toBe(200);
    } finally {
      await n.stop();
    }
    expect(crashes).toEqual([]);
  });

  it('fails closed when the server stops (503 storage failed, no crash), and stops cleanly', async () => {
    const own = await startPostgres();
    try {
      const n = await startTestNode({ postgresql: { connectionUrl: own.url } });
      await n.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
      expect((await n.call('PUT', 'secret/data/a', { data: { v: 1 } })).status).toBe(200);
      await own.stopServer();
      const write = await n.call('PUT', 'secret/data/b', { data: { v: 2 } });
      expect(write.status).toBe(503);
      expect(write.body.errors[0]).toMatch(/storage/);
      const health = await n.call('GET', 'sys/health', undefined, { token: null });
      expect({ status: health.status, failed: health.body.storage_failed }).toEqual({ status: 503, failed: true });
      await n.stop();
    } finally {
      await own.stop();
    }
    expect(crashes).toEqual([]);
  }, 30_000);
});
