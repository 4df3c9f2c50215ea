/**
 * PostgreSQL Backend on a private PostgreSQL 15 (test/support/postgres.ts): the shared contract,
 * each case on a fresh table, plus what is PostgreSQL's own: the schema, the guard seam, key
 * order against LevelDB, snapshot isolation, and faults when the server goes away.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runBackendContract } from '../../test/storage/backend-contract.js';
import { PASSWORD_USER, sqlRows, startPostgres, type TestPostgres } from '../../test/support/postgres.js';
import { Internal } from '../core/errors.js';
import { BackendFault, type Backend } from './backend.js';
import { openLevelBackend } from './leveldb.js';
import { openPostgresLease } from './postgres-lease.js';
import { BatchRefused, SCHEMA_TABLE, SCHEMA_VERSION, SchemaTooNew, isUnreachable, openPostgresBackend, redactConnectionUrl } from './postgres.js';

const put = (key: string, value: string) => ({ type: 'put' as const, key, value: Buffer.from(value) });
const del = (key: string) => ({ type: 'del' as const, key });

let server: TestPostgres;
let tables = 0;
const freshTable = (): string => `t_${++tables}`;

beforeAll(async () => {
  server = await startPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

async function keysOf(b: Pick<Backend, 'iterate'>, range = {}): Promise<string[]> {
  const out: string[] = [];
  for await (const [k] of b.iterate(range)) out.push(k);
  return out;
}

runBackendContract('postgresql', async () => {
  const backend = await openPostgresBackend({ connectionUrl: server.url, table: freshTable() });
  return { backend, cleanup: () => backend.close() };
});

/** The contract again with 3-row pages: every multi-page path (forward, reverse, limit) is exercised. */
runBackendContract('postgresql, 3-row pages', async () => {
  const backend = await openPostgresBackend({ connectionUrl: server.url, table: freshTable(), pageRows: 3 });
  return { backend, cleanup: () => backend.close() };
});

describe('PostgreSQL backend', () => {
  const opened: Backend[] = [];
  afterEach(async () => {
    for (const b of opened.splice(0)) await b.close().catch(() => undefined);
  });
  async function open(o: Partial<Parameters<typeof openPostgresBackend>[0]> & { table: string }): Promise<Backend> {
    const b = await openPostgresBackend({ connectionUrl: server.url, ...o });
    opened.push(b);
    return b;
  }

  it('creates the schema once, also when several nodes open the table at the same time', async () => {
    const table = freshTable();
    const all = await Promise.all(Array.from({ length: 6 }, () => open({ table })));
    await all[0]?.batch([put('a', '1')], { sync: true });
    expect((await all[5]?.get('a'))?.toString()).toBe('1');
    const rows = await sqlRows<{ version: number }>(server.url, `SELECT version FROM ${SCHEMA_TABLE} WHERE table_name = $1`, [table]);
    expect(rows).toEqual([{ version: SCHEMA_VERSION }]);
    const cols = await sqlRows<{ column_name: string; data_type: string }>(
      server.url,
      'SELECT column_name, data_type FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
      [table],
    );
    expect(cols).toEqual([
      { column_name: 'key', data_type: 'bytea' },
      { column_name: 'value', data_type: 'bytea' },
    ]);
    // Different tables created at once (the schema table is shared) do not race either.
    const others = await Promise.all([freshTable(), freshTable(), freshTable()].map((t) => open({ table: t })));
    expect(others).toHaveLength(3);
    // A reopen keeps the data and writes no second schema row.
    await Promise.all(all.map((b) => b.close()));
    const again = await open({ table });
    expect((await again.get('a'))?.toString()).toBe('1');
  });

  it('refuses a table whose schema a newer version wrote, naming both versions', async () => {
    const table = freshTable();
    await (await open({ table })).close();
    await sqlRows(server.url, `UPDATE ${SCHEMA_TABLE} SET version = $2 WHERE table_name = $1`, [table, SCHEMA_VERSION + 1]);
    const err = await openPostgresBackend({ connectionUrl: server.url, table }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaTooNew);
    expect((err as Error).message).toContain(`schema version ${SCHEMA_VERSION + 1}`);
    expect((err as Error).message).toContain(`up to ${SCHEMA_VERSION}`);
  });

  it('migrates a version 1 table (key bytea PRIMARY KEY) at open: its data kept, and a key of any length then fits', async () => {
    const table = freshTable();
    // What a version 1 Tessera created: the key as primary key, which refuses a key past ~2.7 kB.
    await sqlRows(server.url, `CREATE TABLE ${table} (key bytea PRIMARY KEY, value bytea NOT NULL)`);
    await sqlRows(server.url, `INSERT INTO ${SCHEMA_TABLE} (table_name, version) VALUES ($1, 1)`, [table]);
    await sqlRows(server.url, `INSERT INTO ${table} (key, value) VALUES ('\\x61'::bytea, '\\x31'::bytea), ('\\x62'::bytea, '\\x32'::bytea)`);
    const long = 'long/' + randomBytes(6_000).toString('base64url');
    const refusedBefore = await sqlRows(server.url, `INSERT INTO ${table} (key, value) VALUES ($1, '\\x00'::bytea)`, [Buffer.from(long)]).catch((e: unknown) => e);
    expect((refusedBefore as { code?: string }).code).toBe('54000');
    const [a, b] = await Promise.all([open({ table }), open({ table })]);
    expect(await sqlRows(server.url, `SELECT version FROM ${SCHEMA_TABLE} WHERE table_name = $1`, [table])).toEqual([{ version: SCHEMA_VERSION }]);
    expect(await sqlRows(server.url, `SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`, [table])).toEqual([]);
    expect((await b?.get('a'))?.toString()).toBe('1');
    await a?.batch([put(long, 'L'), put('a', 'one'), del('b'), put(`${long}/child`, 'C'), put(`${long.slice(0, -1)}`, 'S')], { sync: true });
    expect((await b?.get(long))?.toString()).toBe('L');
    expect(await keysOf(b as Backend)).toEqual(['a', long.slice(0, -1), long, `${long}/child`].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
    expect(await b?.getMany?.(['a', long, 'b'])).toEqual([Buffer.from('one'), Buffer.from('L'), undefined]);
    await a?.batch([put(long, 'L2')], { sync: true });
    expect((await b?.get(long))?.toString()).toBe('L2');
    await a?.batch([del(long)], { sync: true });
    expect(await b?.get(long)).toBeUndefined();
  });

  it("refuses an existing table it did not create (e.g. Vault's own vault_kv_store)", async () => {
    await sqlRows(server.url, 'CREATE TABLE foreign_kv (path text PRIMARY KEY, value bytea)');
    await expect(openPostgresBackend({ connectionUrl: server.url, table: 'foreign_kv' })).rejects.toThrow(/was not created by Tessera/);
    await expect(openPostgresBackend({ connectionUrl: server.url, table: 'bad-name; drop' })).rejects.toBeInstanceOf(Internal);
  });

  it('runs the guard inside each batch: a refusal writes nothing of the batch', async () => {
    const table = freshTable();
    await sqlRows(server.url, 'CREATE TABLE IF NOT EXISTS fence (holder text PRIMARY KEY)');
    await sqlRows(server.url, "INSERT INTO fence VALUES ('node-a') ON CONFLICT DO NOTHING");
    const a = await open({ table, guard: { sql: 'SELECT 1 FROM fence WHERE holder = $1 FOR SHARE', params: ['node-a'] } });
    const b = await open({ table, guard: { sql: 'SELECT 1 FROM fence WHERE holder = $1 FOR SHARE', params: ['node-b'] } });
    await a.batch([put('x', 'from-a'), put('y', 'from-a')], { sync: true });
    const refused = await b.batch([put('x', 'from-b'), del('y'), put('z', 'from-b')], { sync: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BatchRefused);
    expect(await keysOf(a)).toEqual(['x', 'y']);
    expect((await a.get('x'))?.toString()).toBe('from-a');

    // The per-batch form (the HA fence's): a refusal sends nothing; an SQL check without a row
    // refuses with whenNoRow's reason (told once per refused batch); with a row the batch lands.
    let holder = 'node-b';
    let told = 0;
    let standby = true;
    const d = await open({
      table,
      guard: {
        check: () =>
          standby
            ? { refused: 'a standby writes nothing' }
            : { sql: 'SELECT 1 FROM fence WHERE holder = $1 FOR SHARE', params: [holder], whenNoRow: () => `fenced ${++told}` },
      },
    });
    await expect(d.batch([put('x', 'from-d')], { sync: true })).rejects.toThrow('a standby writes nothing');
    standby = false;
    const fenced = await d.batch([put('x', 'from-d'), del('y')], { sync: true }).catch((e: unknown) => e);
    expect(fenced).toBeInstanceOf(BatchRefused);
    expect((fenced as BatchRefused).reason).toBe('fenced 1');
    expect(await keysOf(a)).toEqual(['x', 'y']);
    holder = 'node-a';
    await d.batch([put('x', 'from-d'), del('y'), put('v', 'from-d')], { sync: true });
    expect(await keysOf(a)).toEqual(['v', 'x']);
    expect((await a.get('x'))?.toString()).toBe('from-d');
    expect(told).toBe(1);
    await d.batch([put('y', 'from-a')], { sync: true });

    // The callback form sees the transaction: its reason is kept; a pass lets the batch through.
    let allow = false;
    const c = await open({
      table,
      guard: async (tx) => {
        const r = await tx.query('SELECT txid_current_if_assigned() IS NULL AS fresh');
        expect(r.rows[0]).toEqual({ fresh: true });
        return allow || { refused: 'not the active node' };
      },
    });
    await expect(c.batch([put('w', '1')], { sync: true })).rejects.toThrow(/not the active node/);
    expect(await c.get('w')).toBeUndefined();
    allow = true;
    await c.batch([put('w', '1')], { sync: true });
    expect((await c.get('w'))?.toString()).toBe('1');
  });

  it('collapses a batch per key: the last op wins', async () => {
    const b = await open({ table: freshTable() });
    await b.batch([put('k', '1'), del('k'), put('j', '1'), put('j', '2'), del('m'), put('m', '3')], { sync: true });
    expect(await keysOf(b)).toEqual(['j', 'm']);
    await b.batch([put('k', 'x'), del('k')], { sync: true });
    expect(await b.get('k')).toBeUndefined();
    expect((await b.get('j'))?.toString()).toBe('2');
    // A negative limit is no limit (LevelDB's -1).
    expect(await keysOf(b, { limit: -1 })).toEqual(['j', 'm']);
  });

  it('getMany reads every key in one query: values in the keys\' order, undefined where absent, non-ASCII keys too', async () => {
    const b = await open({ table: freshTable() });
    await b.batch([put('m/1', 'one'), put('m/\u00e9', 'e-acute'), put('m/3', 'three')], { sync: true });
    const got = await b.getMany!(['m/3', 'm/missing', 'm/\u00e9', 'm/1', 'm/3']);
    expect(got.map((v) => v?.toString())).toEqual(['three', undefined, 'e-acute', 'one', 'three']);
    expect(await b.getMany!([])).toEqual([]);
    // A lone surrogate is stored as U+FFFD's bytes: getMany reads what get reads.
    await b.batch([put('m/\ud800', 'lone')], { sync: true });
    expect((await b.getMany!(['m/\ud800', 'm/\ufffd'])).map((v) => v?.toString())).toEqual([(await b.get('m/\ud800'))?.toString(), 'lone']);
  });

  it('iterateTails gives each value\'s size and last bytes, as iterate would, across pages', async () => {
    const b = await open({ table: freshTable(), pageRows: 2 });
    const ops = Array.from({ length: 40 }, (_, i) => ({ type: 'put' as const, key: `w/${String(i).padStart(3, '0')}`, value: Buffer.from('x'.repeat(i) + `-${i}-tail-bytes-of-entry`) }));
    await b.batch([...ops, put('v/outside', 'not in range')], { sync: true });
    const range = { gte: 'w/005', lte: 'w/037' };
    const tails: { key: string; size: number; tail: string }[] = [];
    for await (const t of b.iterateTails!(range, 8)) tails.push({ key: t.key, size: t.size, tail: t.tail.toString() });
    const whole: { key: string; size: number; tail: string }[] = [];
    for await (const [key, v] of b.iterate(range)) whole.push({ key, size: v.length, tail: v.subarray(Math.max(0, v.length - 8)).toString() });
    expect(tails).toEqual(whole);
    expect(tails).toHaveLength(33);
    // A value shorter than the tail asked for comes whole.
    await b.batch([put('w/short', 'ab')], { sync: true });
    const short: string[] = [];
    for await (const t of b.iterateTails!({ gte: 'w/short', lte: 'w/short' }, 8)) short.push(t.tail.toString());
    expect(short).toEqual(['ab']);
  });

  it("orders non-ASCII and astral keys as LevelDB does, forward and reverse, across pages", async () => {
    const keys = ['a', 'a/', 'a0', 'z', 'é', 'ü/x', '中', '中文', '\uffff', '😀', '😀/1', '\u{10ffff}', 'Z', '\u007f', '\u0080', 'ß'];
    const b = await open({ table: freshTable(), pageRows: 4 });
    await b.batch(keys.map((k) => put(k, k)), { sync: true });
    const dir = await mkdtemp(join(tmpdir(), 'tessera-pg-order-'));
    try {
      const level = await openLevelBackend({ path: join(dir, 'db') });
      try {
        await level.batch(keys.map((k) => put(k, k)), { sync: true });
        expect(await keysOf(b)).toEqual(await keysOf(level));
        expect(await keysOf(b, { reverse: true })).toEqual(await keysOf(level, { reverse: true }));
        expect(await keysOf(b, { gt: '\uffff', lt: '\u{10ffff}' })).toEqual(await keysOf(level, { gt: '\uffff', lt: '\u{10ffff}' }));
        expect(await keysOf(b, { gte: 'é', limit: 5, reverse: true })).toEqual(await keysOf(level, { gte: 'é', limit: 5, reverse: true }));
      } finally {
        await level.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a snapshot is isolated from later writes of other connections, and a live scan sees one state', async () => {
    const table = freshTable();
    const b = await open({ table, pageRows: 2 });
    const other = await open({ table });
    await b.batch(Array.from({ length: 9 }, (_, i) => put(`k${i}`, 'old')), { sync: true });
    const snap = await b.snapshot();
    try {
      await other.batch([put('k0', 'new'), del('k5'), put('k9', 'new')], { sync: true });
      expect((await snap.get('k0'))?.toString()).toBe('old');
      expect(await keysOf(snap)).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8']);
      // Its tails too (a WAL tail loads in one snapshot beside a node that trims): k5 deleted
      // since is still there, k9 put since is not, and k0 has its old size.
      const tails: string[] = [];
      for await (const t of snap.iterateTails!({ gte: 'k0', lte: 'k9' }, 2)) tails.push(`${t.key}:${t.size}:${t.tail.toString()}`);
      expect(tails).toEqual(Array.from({ length: 9 }, (_, i) => `k${i}:3:ld`));
    } finally {
      await snap.close();
    }
    // A live multi-page iteration is one consistent state, even if writes land between pages.
    const seen: string[] = [];
    let wrote = false;
    for await (const [k, v] of b.iterate({})) {
      seen.push(`${k}=${v.toString()}`);
      if (!wrote) {
        wrote = true;
        await other.batch([del('k8'), put('k1', 'newer'), put('k99', 'x')], { sync: true });
      }
    }
    expect(seen).toEqual(['k0=new', 'k1=old', 'k2=old', 'k3=old', 'k4=old', 'k6=old', 'k7=old', 'k8=old', 'k9=new']);
  });

  it('serves readers of one snapshot at once, each its own answer, without queueing queries on its connection', async () => {
    const b = await open({ table: freshTable(), pageRows: 2 });
    await b.batch(Array.from({ length: 12 }, (_, i) => put(`k${String(i).padStart(2, '0')}`, `v${i}`)), { sync: true });
    // pg queues a query sent while its client runs another and warns that pg 9 will refuse it:
    // the most queries ever waiting behind a running one on any client, observed on pg's own client.
    type Observed = { _queryQueue?: unknown[] };
    const query = pg.Client.prototype.query;
    let queued = 0;
    pg.Client.prototype.query = function (this: Observed, ...args: unknown[]) {
      queued = Math.max(queued, this._queryQueue?.length ?? 0);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      const snap = await b.snapshot();
      try {
        const [all, first, gets] = await Promise.all([
          keysOf(snap),
          keysOf(snap, { lt: 'k03' }),
          Promise.all(['k05', 'k11', 'none'].map(async (k) => (await snap.get(k))?.toString())),
        ]);
        expect(all).toHaveLength(12);
        expect(first).toEqual(['k00', 'k01', 'k02']);
        expect(gets).toEqual(['v5', 'v11', undefined]);
      } finally {
        await snap.close();
      }
    } finally {
      pg.Client.prototype.query = query;
    }
    expect(queued).toBe(0);
  });

  it('never shows the password of the connection URL', async () => {
    expect(redactConnectionUrl('postgres://u:s3cret@h:5432/db?sslmode=disable')).toBe('postgres://u:***@h:5432/db?sslmode=disable');
    expect(redactConnectionUrl('host=h user=u password=s3cret dbname=d')).toBe('host=h user=u password=*** dbname=d');
    const url = `postgres://tessera:s3cretpw@127.0.0.1:${server.port}/no_such_db`;
    const err = (await openPostgresBackend({ connectionUrl: url, table: 't' }).catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('no_such_db');
    expect(err.message).not.toContain('s3cretpw');
  });
});

describe('PostgreSQL backend: the server goes away', () => {
  it('rejects reads, iterations, snapshots and batches with BackendFault', async () => {
    const own = await startPostgres();
    const idle: Error[] = [];
    const b = await openPostgresBackend({ connectionUrl: own.url, table: 'kv', onIdleError: (e) => idle.push(e) });
    try {
      await b.batch([put('a', '1'), put('b', '2')], { sync: true });
      expect((await b.get('a'))?.toString()).toBe('1');
      const snap = await b.snapshot();
      await own.stopServer();
      await expect(b.get('a')).rejects.toBeInstanceOf(BackendFault);
      await expect(keysOf(b)).rejects.toBeInstanceOf(BackendFault);
      await expect(snap.get('a')).rejects.toBeInstanceOf(BackendFault);
      await expect(b.batch([put('c', '3')], { sync: true })).rejects.toBeInstanceOf(BackendFault);
      await expect(b.snapshot()).rejects.toBeInstanceOf(BackendFault);
      await snap.close();
    } finally {
      await b.close();
      await own.stop();
    }
  });

  it('rejects use after close with Internal (a usage error, not a fault)', async () => {
    const b = await openPostgresBackend({ connectionUrl: server.url, table: freshTable() });
    await b.close();
    const err = await b.get('a').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Internal);
    expect(err).not.toBeInstanceOf(BackendFault);
  });

  it('closes with a snapshot and an iteration still open, as LevelDB does', async () => {
    const b = await openPostgresBackend({ connectionUrl: server.url, table: freshTable(), pageRows: 2 });
    await b.batch(['a', 'b', 'c', 'd', 'e'].map((k) => put(k, k)), { sync: true });
    const snap = await b.snapshot();
    const it = b.iterate({})[Symbol.asyncIterator]();
    expect((await it.next()).value?.[0]).toBe('a');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('close hung')), 5_000)));
    await Promise.race([b.close(), late]).finally(() => clearTimeout(timer));
    await expect(snap.get('a')).rejects.toBeInstanceOf(Internal);
    await snap.close();
    await it.return?.();
  });
});

describe('PostgreSQL backend: opening', () => {
  const fast = { firstDelayMs: 50, maxDelayMs: 200, totalMs: 30_000 };

  it('refuses a URL it cannot use at once, naming where it came from and never the password', async () => {
    for (const [url, reason] of [
      ['postgres://tessera:pw-unparsed@[bad/db', 'not a valid URL'],
      ['mysql://tessera:pw-unparsed@127.0.0.1/db', 'scheme "mysql"'],
      ['host=127.0.0.1 user=tessera password=pw-unparsed', 'not a valid URL'],
    ] as const) {
      const retries: unknown[] = [];
      const err = (await openPostgresBackend({ connectionUrl: url, table: 't', urlSource: 'storage "postgresql" connection_url', connectRetry: fast, onConnectRetry: (r) => retries.push(r) }).catch((e: unknown) => e)) as Error;
      expect(err).toBeInstanceOf(Internal);
      expect(err.message).toContain('storage "postgresql" connection_url');
      expect(err.message).toContain(reason);
      expect(err.message).not.toContain('pw-unparsed');
      expect(retries).toEqual([]);
    }
  });

  it('fails at once on a wrong password and a missing database, with PostgreSQL\'s reason', async () => {
    const right = await server.createPasswordUser('right-pw');
    const b = await openPostgresBackend({ connectionUrl: right, table: freshTable() }).catch((e: unknown) => e);
    // The role may not create tables in schema public (PostgreSQL 15): what matters is that it logged in.
    if (!(b instanceof Error)) await (b as Backend).close();
    else expect(b.message).not.toMatch(/28P01|password authentication/);
    const retries: unknown[] = [];
    const wrong = right.replace('right-pw', 'wrong-pw');
    const t0 = Date.now();
    const bad = (await openPostgresBackend({ connectionUrl: wrong, table: 't', connectRetry: fast, onConnectRetry: (r) => retries.push(r) }).catch((e: unknown) => e)) as Error;
    expect(bad.message).toContain(`password authentication failed for user "${PASSWORD_USER}"`);
    expect(bad.message).toContain('28P01');
    expect(bad.message).not.toContain('wrong-pw');
    const missing = (await openPostgresBackend({ connectionUrl: `postgres://tessera:pw-db@127.0.0.1:${server.port}/no_such_db`, table: 't', connectRetry: fast, onConnectRetry: (r) => retries.push(r) }).catch((e: unknown) => e)) as Error;
    expect(missing.message).toContain('database "no_such_db" does not exist');
    expect(missing.message).toContain('3D000');
    expect(missing.message).not.toContain('pw-db');
    expect(retries).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('retries while the server is not up yet, and opens once it is', async () => {
    const own = await startPostgres();
    try {
      await own.stopServer();
      const retries: Array<{ attempt: number; delayMs: number; reason: string }> = [];
      const url = own.url.replace('postgres://tessera@', 'postgres://tessera:pw-retry@');
      const opening = openPostgresBackend({ connectionUrl: url, table: 'kv', connectRetry: fast, onConnectRetry: (r) => retries.push(r) });
      while (retries.length < 3) await new Promise((r) => setTimeout(r, 20));
      await own.startServer();
      const b = await opening;
      await b.batch([put('a', '1')], { sync: true });
      expect((await b.get('a'))?.toString()).toBe('1');
      await b.close();
      expect(retries[0]?.reason).toContain('ECONNREFUSED');
      expect(retries.map((r) => r.delayMs).slice(0, 3)).toEqual([50, 100, 200]);
      expect(JSON.stringify(retries)).not.toContain('pw-retry');
    } finally {
      await own.stop();
    }
  }, 30_000);

  it('gives up after max retries (or the time budget), with the last reason', async () => {
    const own = await startPostgres();
    await own.stopServer();
    try {
      const retries: unknown[] = [];
      const err = (await openPostgresBackend({ connectionUrl: own.url, table: 'kv', urlSource: 'environment variable TESSERA_PG_CONNECTION_URL', connectRetry: fast, maxConnectRetries: 2, onConnectRetry: (r) => retries.push(r) }).catch((e: unknown) => e)) as Error;
      expect(retries).toHaveLength(2);
      expect(err.message).toMatch(/^environment variable TESSERA_PG_CONNECTION_URL \(postgres:\/\/tessera@127\.0\.0\.1:\d+\/tessera\): cannot open PostgreSQL storage \(table kv\): .*ECONNREFUSED.*gave up after 3 attempts/);
      // The HA lease store's first connection takes the same count and says each retry, without the password.
      const leaseRetries: Array<{ attempt: number; reason: string }> = [];
      const withPassword = own.url.replace('postgres://tessera@', 'postgres://tessera:pw-lease-retry@');
      const leaseErr = (await openPostgresLease({ connectionUrl: withPassword, connectRetry: fast, maxConnectRetries: 2, onConnectRetry: (r) => leaseRetries.push(r) }).catch((e: unknown) => e)) as Error;
      expect(leaseRetries.map((r) => r.attempt)).toEqual([1, 2]);
      for (const r of leaseRetries) expect(r.reason).toMatch(/ECONNREFUSED/);
      expect(JSON.stringify(leaseRetries)).not.toContain('pw-lease-retry');
      expect(leaseErr.message).toMatch(/ECONNREFUSED/);
    } finally {
      await own.stop();
    }
  });

  it('tells unreachable from refused', () => {
    expect(isUnreachable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isUnreachable(Object.assign(new Error('the database system is starting up'), { code: '57P03' }))).toBe(true);
    expect(isUnreachable(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isUnreachable(Object.assign(new Error('getaddrinfo EAI_AGAIN db'), { code: 'EAI_AGAIN' }))).toBe(true);
    expect(isUnreachable(Object.assign(new Error('password authentication failed for user "x"'), { code: '28P01' }))).toBe(false);
    expect(isUnreachable(Object.assign(new Error('database "x" does not exist'), { code: '3D000' }))).toBe(false);
    expect(isUnreachable(Object.assign(new Error('no pg_hba.conf entry'), { code: '28000' }))).toBe(false);
  });
});

describe('PostgreSQL backend: faults at run time, then the pool reconnects', () => {
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
  afterEach(() => expect(crashes).toEqual([]));

  it('an exhausted pool: reads and batches reject with BackendFault after connectTimeoutMs', async () => {
    const b = await openPostgresBackend({ connectionUrl: server.url, table: freshTable(), maxConnections: 1, connectTimeoutMs: 300 });
    try {
      await b.batch([put('a', '1')], { sync: true });
      const snap = await b.snapshot();
      const read = (await b.get('a').catch((e: unknown) => e)) as BackendFault;
      expect(read).toBeInstanceOf(BackendFault);
      expect(read.detail).toContain('timeout exceeded when trying to connect');
      await expect(b.batch([put('b', '2')], { sync: true })).rejects.toBeInstanceOf(BackendFault);
      await expect(keysOf(b)).rejects.toBeInstanceOf(BackendFault);
      await snap.close();
      expect((await b.get('a'))?.toString()).toBe('1');
      expect(await b.get('b')).toBeUndefined();
    } finally {
      await b.close();
    }
  });

  it('pg_terminate_backend of its connections: BackendFault, never BatchRefused, then fresh calls succeed', async () => {
    const url = await server.createDatabase('terminated');
    const idle: Error[] = [];
    const killMine = (c: { query: (t: string) => Promise<unknown> }) => c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tessera' AND datname = 'terminated' AND pid <> pg_backend_pid()");
    let killInGuard = false;
    const b = await openPostgresBackend({
      connectionUrl: url,
      table: 'kv',
      onIdleError: (e) => idle.push(e),
      guard: async (tx) => {
        if (killInGuard) await tx.query('SELECT pg_terminate_backend(pg_backend_pid())');
        return true;
      },
    });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await b.batch([put('a', '1'), put('b', '2')], { sync: true });
      const snap = await b.snapshot();
      await killMine(admin);
      const read = (await snap.get('a').catch((e: unknown) => e)) as BackendFault;
      expect(read).toBeInstanceOf(BackendFault);
      expect(read.detail).toMatch(/terminating connection due to administrator command|Connection terminated|not queryable/);
      await snap.close();
      killInGuard = true;
      const write = (await b.batch([put('c', '3')], { sync: true }).catch((e: unknown) => e)) as BackendFault;
      expect(write).toBeInstanceOf(BackendFault);
      expect(write).not.toBeInstanceOf(BatchRefused);
      expect(write.detail).toContain('terminating connection due to administrator command');
      killInGuard = false;
      expect((await b.get('a'))?.toString()).toBe('1');
      expect(await b.get('c')).toBeUndefined();
      await b.batch([put('c', '3')], { sync: true });
      expect(await keysOf(b)).toEqual(['a', 'b', 'c']);
    } finally {
      await admin.end();
      await b.close();
    }
  });

  it('a guard refusal stays BatchRefused, also when its ROLLBACK fails or the guard throws it, and never leaks the connection', async () => {
    let mode: 'kill-and-refuse' | 'throw' = 'kill-and-refuse';
    const b = await openPostgresBackend({
      connectionUrl: server.url,
      table: freshTable(),
      maxConnections: 1,
      connectTimeoutMs: 2_000,
      guard: async (tx) => {
        if (mode === 'throw') throw new BatchRefused('the guard threw');
        await tx.query('SELECT pg_terminate_backend(pg_backend_pid())').catch(() => undefined);
        return { refused: 'lease lost' };
      },
    });
    try {
      const killed = await b.batch([put('a', '1')], { sync: true }).catch((e: unknown) => e);
      expect(killed).toBeInstanceOf(BatchRefused);
      expect((killed as BatchRefused).reason).toBe('lease lost');
      mode = 'throw';
      for (let i = 0; i < 3; i++) await expect(b.batch([put('a', '1')], { sync: true })).rejects.toThrow('the guard threw');
      // One connection in the pool: had any of these leaked it, this read would time out.
      expect(await b.get('a')).toBeUndefined();
    } finally {
      await b.close();
    }
  });

  it('the server stops mid-use: BackendFault; started again on the same port, the same backend reads and writes', async () => {
    const own = await startPostgres();
    const url = own.url.replace('postgres://tessera@', 'postgres://tessera:pw-restart@');
    const idle: Error[] = [];
    let pause = false;
    let entered!: () => void;
    const inGuard = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const b = await openPostgresBackend({
      connectionUrl: url,
      table: 'kv',
      onIdleError: (e) => idle.push(e),
      guard: async () => {
        if (pause) {
          entered();
          await released;
        }
        return true;
      },
    });
    try {
      await b.batch([put('a', '1'), put('b', '2')], { sync: true });
      const snap = await b.snapshot();
      const it = b.iterate({})[Symbol.asyncIterator]();
      pause = true;
      const inFlight = b.batch([put('c', '3')], { sync: true }).catch((e: unknown) => e);
      await inGuard;
      pause = false;
      await own.stopServer();
      release();
      const write = (await inFlight) as BackendFault;
      expect(write).toBeInstanceOf(BackendFault);
      expect(write.message).not.toContain('pw-restart');
      for (const failed of [await b.get('a').catch((e: unknown) => e), await snap.get('a').catch((e: unknown) => e), await keysOf(b).catch((e: unknown) => e), await b.snapshot().catch((e: unknown) => e)]) {
        expect(failed).toBeInstanceOf(BackendFault);
        expect((failed as Error).message).not.toContain('pw-restart');
      }
      await snap.close();
      await it.return?.();
      await own.startServer();
      expect((await b.get('a'))?.toString()).toBe('1');
      await b.batch([put('d', '4')], { sync: true });
      expect(await keysOf(b)).toEqual(['a', 'b', 'd']);
      const again = await b.snapshot();
      expect((await again.get('d'))?.toString()).toBe('4');
      await again.close();
    } finally {
      await b.close();
      await own.stop();
    }
  }, 30_000);
});
