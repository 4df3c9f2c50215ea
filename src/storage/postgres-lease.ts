/**
 * The HA lease of a cluster whose nodes share one PostgreSQL database (REPLICATION.md §9): one
 * lock row timed by the database's clock, an epoch from a sequence that grows at every takeover,
 * a member row per node (`sys/ha-status`), and the fence every commit transaction runs. It is the
 * LeaseStore port of src/core/ha/lease-store.ts (declared there: storage imports only core).
 *
 *   const lease = await openPostgresLease({ connectionUrl, table: 'vault_ha_locks' });
 *   const r = await lease.acquire(me, 2000);          // { won: true, epoch } or { won: false, leader }
 *   await lease.renew(me.holder, r.epoch, 2000);       // false: the row is no longer ours
 *   const backend = await openPostgresBackend({ connectionUrl, guard: lease.fence(current, onFenced) });
 *
 * Tables (created on first open under the schema lock of postgres.ts, recorded in tessera_schema):
 * `<table>` (ha_key, holder, epoch, api_addr, cluster_addr, valid_until), the sequence
 * `<table>_epoch`, and `<table>_members` (node_id, hostname, api_addr, cluster_addr, version,
 * last_echo, instance, activation_failure, echo_duration_ms, local_time, redundancy_zone). Every
 * time the lease compares is the database's `now()`: nodes' clocks never enter the lease.
 * Version 2 added `instance` (a random id per process): a member row is one process's, and an
 * echo of another process with the same node id is refused while the row's own still echoes;
 * and `activation_failure` (jsonb): why the node last failed to serve as active, while it backs
 * off, so sys/ha-status on any node shows it. Version 3 added what Vault's echo carries
 * (vault/request_forwarding_rpc.go): `echo_duration_ms` (how long the member's previous echo took,
 * measured by the member), `local_time` (the member's clock when it sent the echo: against
 * `last_echo`, the database's clock at the same moment, it gives the clock skew between two
 * members) and `redundancy_zone`.
 *
 * Release keeps the row and ends its lease (`valid_until = now()`), so the row tells how long it
 * has been free: a polite attempt (a node in its step-down cooldown) takes only a row free for a
 * grace period (twice that for its own row), and never its own live row. The fence requires a live row, so a released epoch
 * commits nothing.
 *
 * Acquire is one statement: the row is locked (waiting at most the statement timeout for a commit
 * in flight that holds it FOR SHARE), and taken only when it is missing, expired or this node's own
 * (a new epoch then fences the commits of its old one); the epoch comes
 * from the sequence only then, so failed attempts do not spend epochs. A concurrent insert of a
 * missing row loses through the ON CONFLICT clause's `valid_until < now()`.
 *
 * The fence: inside each batch's one statement, `SELECT … FOR SHARE` of the row with this node's
 * holder and epoch, every write of the statement conditional on it. The share lock makes a
 * takeover's UPDATE wait for the commit in flight, so a commit either lands before the takeover
 * (and the new active node reads it when it loads) or is refused after it. A batch is a single
 * statement, never a transaction left open between statements, so a frozen node cannot hold the
 * row: the server finishes (or, on a dropped connection, rolls back) the statement on its own.
 */
import type pg from 'pg';
import { FENCE_REFUSALS, LeaseLost, type AcquireResult, type EchoMeasures, type FenceState, type LeaseCandidate, type LeaseMember, type LeaseRow, type LeaseStore, type MemberFailure } from '../core/ha/lease-store.js';
import type { BatchGuard } from './postgres.js';
import { ConnectGaveUp, connectRetryOf, ensureTesseraTable, loadPg, quoteTable, SCHEMA_TABLE, withConnectRetry, type ConnectRetry, type ConnectRetryNotice } from './postgres.js';

/** The HA tables' schema version (recorded in tessera_schema under the lock table's name). */
export const LEASE_SCHEMA_VERSION = 3;
/** Vault's default HA table name (physical/postgresql `ha_table`). */
export const DEFAULT_HA_TABLE = 'vault_ha_locks';
const LEADER = 'leader';

/** The lease store on PostgreSQL: its fence is the guard of the PostgreSQL data backend. */
export type PostgresLeaseStore = LeaseStore<BatchGuard>;

export interface LeaseStoreOptions {
  readonly connectionUrl: string;
  readonly table?: string;
  /** Statements of acquire and renew give up after this long (ms); an answer later is worthless. */
  readonly statementTimeoutMs?: number;
  /** The first connection, while the server is unreachable or slow to answer: CONNECT_RETRY, as the data backend's open. */
  readonly connectRetry?: ConnectRetry;
  /** That many retries of the first connection, however long (config `max_connect_retries`), as the data backend's open. */
  readonly maxConnectRetries?: number;
  /** Told before each retry of the first connection (the reason has no password). */
  readonly onConnectRetry?: (r: ConnectRetryNotice) => void;
}

interface RawRow {
  holder: string;
  epoch: string;
  api_addr: string;
  cluster_addr: string;
  live?: boolean;
}

interface MemberRow {
  node_id: string;
  hostname: string;
  api_addr: string;
  cluster_addr: string;
  version: string;
  last_echo: Date;
  instance: string;
  activation_failure: MemberFailure | null;
  echo_duration_ms: string;
  local_time: Date | null;
  redundancy_zone: string;
}
const MEMBER_COLUMNS = 'node_id, hostname, api_addr, cluster_addr, version, last_echo, instance, activation_failure, echo_duration_ms::text AS echo_duration_ms, local_time, redundancy_zone';
const memberOf = (m: MemberRow): LeaseMember => ({
  nodeId: m.node_id, hostname: m.hostname, apiAddr: m.api_addr, clusterAddr: m.cluster_addr, version: m.version, lastEcho: m.last_echo, instance: m.instance,
  ...(m.activation_failure !== null ? { activationFailure: m.activation_failure } : {}),
  echoDurationMs: Number(m.echo_duration_ms),
  ...(m.local_time !== null ? { localTime: m.local_time } : {}),
  redundancyZone: m.redundancy_zone,
});

const rowOf = (r: RawRow): LeaseRow => ({ holder: r.holder, epoch: Number(r.epoch), apiAddr: r.api_addr, clusterAddr: r.cluster_addr });
const ms = (n: number): string => `${Math.max(1, Math.round(n))}`;

async function ensureLeaseSchema(client: pg.PoolClient, table: string): Promise<void> {
  await ensureTesseraTable(client, {
    table,
    version: LEASE_SCHEMA_VERSION,
    configKey: 'ha_table',
    create: async (c) => {
      await c.query(
        `CREATE TABLE ${quoteTable(table)} (ha_key text PRIMARY KEY, holder text NOT NULL, epoch bigint NOT NULL, api_addr text NOT NULL, cluster_addr text NOT NULL, valid_until timestamptz NOT NULL)`,
      );
      await c.query(`CREATE SEQUENCE IF NOT EXISTS ${quoteTable(`${table}_epoch`)}`);
      await c.query(
        `CREATE TABLE IF NOT EXISTS ${quoteTable(`${table}_members`)} (node_id text PRIMARY KEY, hostname text NOT NULL, api_addr text NOT NULL, cluster_addr text NOT NULL, version text NOT NULL, last_echo timestamptz NOT NULL, instance text NOT NULL DEFAULT '', activation_failure jsonb, ${MEMBER_COLUMNS_V3})`,
      );
    },
  });
  await migrateLeaseSchema(client, table);
}

/** The member table's columns of version 3 (Vault's echo measurements). */
const MEMBER_COLUMNS_V3 = "echo_duration_ms bigint NOT NULL DEFAULT 0, local_time timestamptz, redundancy_zone text NOT NULL DEFAULT ''";

/** Version 1 → 2: the member table's `instance` column; 2 → 3: the echo's measurements (idempotent, under the schema lock). */
async function migrateLeaseSchema(client: pg.PoolClient, table: string): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(2119529331, 1)');
    const found = await client.query<{ version: number }>(`SELECT version FROM ${SCHEMA_TABLE} WHERE table_name = $1`, [table]);
    const version = found.rows[0]?.version ?? LEASE_SCHEMA_VERSION;
    if (version < 2) {
      await client.query(`ALTER TABLE ${quoteTable(`${table}_members`)} ADD COLUMN IF NOT EXISTS instance text NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS activation_failure jsonb`);
      await client.query(`UPDATE ${SCHEMA_TABLE} SET version = 2 WHERE table_name = $1 AND version < 2`, [table]);
    }
    if (version < 3) {
      const add = MEMBER_COLUMNS_V3.split(', ').map((c) => `ADD COLUMN IF NOT EXISTS ${c}`).join(', ');
      await client.query(`ALTER TABLE ${quoteTable(`${table}_members`)} ${add}`);
      await client.query(`UPDATE ${SCHEMA_TABLE} SET version = 3 WHERE table_name = $1 AND version < 3`, [table]);
    }
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

class PostgresLease implements PostgresLeaseStore {
  private readonly q: string;
  private readonly seq: string;
  private readonly members_: string;

  constructor(
    private readonly pool: pg.Pool,
    table: string,
    private readonly o: LeaseStoreOptions,
  ) {
    this.q = quoteTable(table);
    this.seq = quoteTable(`${table}_epoch`);
    this.members_ = quoteTable(`${table}_members`);
  }

  async acquire(me: LeaseCandidate, ttlMs: number, graceMs?: number): Promise<AcquireResult> {
    // One statement, so the row lock lives only while the server runs it: a node frozen between
    // statements of an open transaction (SIGSTOP) held the row FOR UPDATE until it resumed, and
    // the active node's renewals and fenced commits waited on it. The lock wait is bounded by
    // the pool's statement_timeout. A live row of another holder wins; this node's own (it was
    // fenced or missed its deadline and competes again) is taken over at once under a new epoch,
    // unless the attempt is polite. A polite attempt waits twice the grace for its own released
    // row: after a step-down, when every node is in its cooldown, another node wins first. The
    // insert runs only when the row may be taken, so nextval spends no epoch on a live row.
    const r = await this.pool.query<RawRow & { won: string | null }>(
      `WITH cur AS (
         SELECT holder, epoch, api_addr, cluster_addr, valid_until > now() AS live FROM ${this.q} WHERE ha_key = $1::text FOR UPDATE
       ), won AS (
         INSERT INTO ${this.q} AS h (ha_key, holder, epoch, api_addr, cluster_addr, valid_until)
         SELECT $1::text, $2::text, nextval('${this.seq}'), $3::text, $4::text, now() + make_interval(secs => $5::double precision / 1000)
         WHERE NOT EXISTS (SELECT 1 FROM cur WHERE live AND (holder <> $2::text OR NOT $7::boolean))
         ON CONFLICT (ha_key) DO UPDATE SET holder = EXCLUDED.holder, epoch = EXCLUDED.epoch, api_addr = EXCLUDED.api_addr,
           cluster_addr = EXCLUDED.cluster_addr, valid_until = EXCLUDED.valid_until
         WHERE h.valid_until <= now() - make_interval(secs => (CASE WHEN h.holder = EXCLUDED.holder THEN 2 ELSE 1 END) * $6::double precision / 1000)
           OR ($7::boolean AND h.holder = EXCLUDED.holder)
         RETURNING epoch
       )
       SELECT (SELECT epoch::text FROM won) AS won, cur.holder, cur.epoch::text AS epoch, cur.api_addr, cur.cluster_addr, cur.live
       FROM (VALUES (1)) AS one (x) LEFT JOIN cur ON true`,
      [LEADER, me.holder, me.apiAddr, me.clusterAddr, ttlMs, graceMs ?? 0, graceMs === undefined],
    );
    const row = r.rows[0];
    if (row?.won !== null && row?.won !== undefined) return { won: true, epoch: Number(row.won) };
    if (row?.live === true && (row.holder !== me.holder || graceMs !== undefined)) return { won: false, leader: rowOf(row) };
    return { won: false, leader: undefined };
  }

  async renew(holder: string, epoch: number, ttlMs: number): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE ${this.q} SET valid_until = now() + make_interval(secs => $4::double precision / 1000) WHERE ha_key = $1 AND holder = $2 AND epoch = $3`,
      [LEADER, holder, epoch, ttlMs],
    );
    return r.rowCount === 1;
  }

  async extend(holder: string, epoch: number, ttlMs: number): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE ${this.q} SET valid_until = now() + make_interval(secs => $4::double precision / 1000) WHERE ha_key = $1 AND holder = $2 AND epoch = $3 AND valid_until > now()`,
      [LEADER, holder, epoch, ttlMs],
    );
    return r.rowCount === 1;
  }

  async release(holder: string, epoch: number): Promise<void> {
    await this.pool.query(`UPDATE ${this.q} SET valid_until = LEAST(valid_until, now()) WHERE ha_key = $1 AND holder = $2 AND epoch = $3`, [LEADER, holder, epoch]);
  }

  async leader(): Promise<LeaseRow | undefined> {
    const r = await this.pool.query<RawRow>(`SELECT holder, epoch::text AS epoch, api_addr, cluster_addr FROM ${this.q} WHERE ha_key = $1 AND valid_until > now()`, [LEADER]);
    const row = r.rows[0];
    return row === undefined ? undefined : rowOf(row);
  }

  async echo(me: LeaseCandidate, staleMs: number, failure?: MemberFailure, measured?: EchoMeasures): Promise<LeaseMember | undefined> {
    const r = await this.pool.query(
      `INSERT INTO ${this.members_} AS m (node_id, hostname, api_addr, cluster_addr, version, last_echo, instance, activation_failure, echo_duration_ms, local_time, redundancy_zone)
       VALUES ($1, $2, $3, $4, $5, now(), $6, $8, $9, to_timestamp($10::double precision / 1000), $11)
       ON CONFLICT (node_id) DO UPDATE SET hostname = EXCLUDED.hostname, api_addr = EXCLUDED.api_addr, cluster_addr = EXCLUDED.cluster_addr,
         version = EXCLUDED.version, last_echo = EXCLUDED.last_echo, instance = EXCLUDED.instance, activation_failure = EXCLUDED.activation_failure,
         echo_duration_ms = EXCLUDED.echo_duration_ms, local_time = EXCLUDED.local_time, redundancy_zone = EXCLUDED.redundancy_zone
       WHERE m.instance = EXCLUDED.instance OR m.last_echo <= now() - make_interval(secs => $7::double precision / 1000)
       RETURNING node_id`,
      [
        me.holder, me.hostname, me.apiAddr, me.clusterAddr, me.version, me.instance, staleMs, failure === undefined ? null : JSON.stringify(failure),
        Math.max(0, Math.round(measured?.echoDurationMs ?? 0)), measured?.localTime ?? null, me.redundancyZone ?? '',
      ],
    );
    if (r.rowCount === 1) return undefined;
    const other = await this.pool.query<MemberRow>(`SELECT ${MEMBER_COLUMNS} FROM ${this.members_} WHERE node_id = $1`, [me.holder]);
    const m = other.rows[0];
    return m === undefined ? undefined : memberOf(m);
  }

  async members(maxAgeMs: number): Promise<LeaseMember[]> {
    const r = await this.pool.query<MemberRow>(
      `SELECT ${MEMBER_COLUMNS} FROM ${this.members_}
       WHERE last_echo > now() - make_interval(secs => $1::double precision / 1000) ORDER BY last_echo ASC, node_id ASC`,
      [maxAgeMs],
    );
    return r.rows.map(memberOf);
  }

  fence(current: () => FenceState, onFenced: (epoch: number) => void): BatchGuard {
    return {
      check: () => {
        const s = current();
        if (s.mode === 'standby') return { refused: FENCE_REFUSALS.standby };
        if (s.mode === 'sealed') {
          // sys/init on a sealed node: only while no node holds a live lease.
          return {
            sql: `SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM ${this.q} WHERE ha_key = $1 AND valid_until > now())`,
            params: [LEADER],
            whenNoRow: () => FENCE_REFUSALS.sealed,
          };
        }
        return {
          sql: `SELECT 1 FROM ${this.q} WHERE ha_key = $1 AND holder = $2 AND epoch = $3 AND valid_until > now() FOR SHARE`,
          params: [LEADER, s.holder, s.epoch],
          whenNoRow: () => {
            onFenced(s.epoch);
            return new LeaseLost(s.epoch).message;
          },
        };
      },
    };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** Connects, creates or checks the HA tables, and returns the lease store. */
export async function openPostgresLease(opts: LeaseStoreOptions): Promise<PostgresLeaseStore> {
  const table = opts.table ?? DEFAULT_HA_TABLE;
  const { Pool } = await loadPg();
  const pool = new Pool({
    connectionString: opts.connectionUrl,
    max: 3,
    connectionTimeoutMillis: opts.statementTimeoutMs ?? 1000,
    statement_timeout: opts.statementTimeoutMs ?? 1000,
    query_timeout: (opts.statementTimeoutMs ?? 1000) + 500,
    application_name: 'tessera-ha',
  });
  // Idle connections that die are dropped by the pool; the next query reconnects.
  pool.on('error', () => undefined);
  pool.on('connect', (c) => c.on('error', () => undefined));
  // Retried as the data backend's open is: a node started before PostgreSQL, or while it is busy,
  // waits for it instead of exiting. Anything else (authentication, no such database) fails at once.
  let client: pg.PoolClient;
  try {
    client = await withConnectRetry(connectRetryOf(opts.connectRetry, opts.maxConnectRetries), opts.connectionUrl, () => pool.connect(), opts.onConnectRetry);
  } catch (gaveUp) {
    await pool.end().catch(() => undefined);
    throw (gaveUp as ConnectGaveUp).error;
  }
  try {
    await ensureLeaseSchema(client, table);
    client.release();
  } catch (e) {
    client.release(true);
    await pool.end().catch(() => undefined);
    throw e;
  }
  return new PostgresLease(pool, table, opts);
}
