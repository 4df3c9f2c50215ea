/**
 * The PostgreSQL Backend (node-postgres): one table of `key bytea, value bytea`, the key being the
 * UTF-8 bytes of the string, so PostgreSQL's bytea order (memcmp, then length) is LevelDB's order.
 * Its unique index is on the key's first KEY_PREFIX_BYTES bytes and its SHA-256 (schema version
 * 2), so it holds a key of any length, as LevelDB does: version 1's `key bytea PRIMARY KEY` refused
 * a key longer than a btree entry (about 2.7 kB) and is migrated at open. Several nodes of one cluster may open the same table (REPLICATION.md §9).
 *
 *   const b = await openPostgresBackend({ connectionUrl: 'postgres://tessera@db/tessera' });
 *   await b.batch([{ type: 'put', key: 'k', value: Buffer.from('v') }], { sync: true });
 *   const snap = await b.snapshot();
 *   try { await snap.get('k'); } finally { await snap.close(); }
 *   await b.close();
 *
 * Schema: created on first open (CREATE TABLE IF NOT EXISTS inside one transaction holding an
 * advisory lock, so nodes starting together do not race), with a row in `tessera_schema` naming
 * the table and its schema version. A table whose version is newer than this code's is refused
 * (SchemaTooNew); an existing table with no schema row (e.g. Vault's own `vault_kv_store`) is
 * refused too, never reused.
 *
 * Writes: one `batch` is one transaction holding one upsert of every put (unnest of two bytea
 * arrays) and one delete of every deleted key (ops collapsed per key first, the last op winning).
 * Without a guard, or with an SQL guard, it is ONE statement, so one round trip: the writes are
 * data-modifying CTEs of a single statement, which PostgreSQL runs as its own transaction. With a
 * callback guard it is BEGIN, the guard, the writes, COMMIT. It resolves after PostgreSQL
 * acknowledged the commit, which with `synchronous_commit = on` (the server's default; this
 * module never lowers it, whatever `sync` says) means the commit record is flushed to the
 * server's WAL. A batch that rejects before its commit was sent left nothing; a commit (or the
 * one statement) that fails or whose answer is lost (connection dropped) has an unknown outcome:
 * it rejects with BackendFault and the engine fails closed, as for a LevelDB write error. A
 * statement PostgreSQL refuses for the batch's own data (SQLSTATE class 22, 23 or 54: refusedData)
 * rolled back and left the server fine: it rejects with WriteRefused (400), which is no fault.
 *
 * The guard (the seam for the HA fence): `guard` given at open runs inside every batch's
 * transaction before its writes; when it refuses, nothing of the batch is written and the batch
 * rejects with BatchRefused. The SQL forms are a CTE of the batch's one statement, and every
 * write of it is conditional on the guard's row: row locks the guard takes (FOR SHARE) are held
 * until that statement's commit.
 *
 * Reads: `get` is one query; `iterate` pages by keyset (PAGE_ROWS rows a query, key > last seen).
 * A live iteration whose first page is not the last re-reads inside a REPEATABLE READ transaction
 * on its own pooled client, so every iteration sees one consistent state, as LevelDB's iterators
 * do. `snapshot()` holds one pooled client in `BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY`
 * until closed. Connection errors and query failures on reads reject with BackendFault (the engine
 * fails closed on them); use after `close()` rejects with Internal.
 *
 * Opening: the URL must be a postgres:// (or postgresql://) URL; anything else is refused at once.
 * While the server cannot be reached yet (connection refused, name not resolved, a timeout,
 * "the database system is starting up"), the open retries with backoff (CONNECT_RETRY: 250 ms
 * doubling to 5 s, for 60 s in all; or `maxConnectRetries` retries however long), telling `onConnectRetry` about each
 * one; authentication failures, a missing database and every other error fail at once. Errors of
 * the open name where the URL came from (`urlSource`, e.g. the config key) and PostgreSQL's reason.
 *
 * At run time every pg failure (pool exhausted past `connectTimeoutMs`, a killed connection,
 * admin shutdown, connection terminated) rejects the call with BackendFault; no pg 'error' event
 * goes unheard (the pool's, and every pooled client's), so none can crash the process. The pool
 * replaces dead connections: once the server is back, new calls on the same backend succeed.
 *
 * Secrets: the connection URL's password never appears in errors (redactConnectionUrl).
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { ErrorCode, Internal, TesseraError } from '../core/errors.js';
import { lazy } from '../core/lazy.js';
import { BackendFault, BatchRefused, WriteRefused, type Backend, type KeyInterval, type ValueTail, type BatchOp, type RangeOptions, type Snapshot } from './backend.js';

/** The pg driver, loaded when PostgreSQL storage or an HA lease is first opened: a node on LevelDB never loads it. */
export const loadPg = lazy(async () => (await import('pg')).default);

/** The schema version this code writes; it opens tables of this version or older (migrating version 1). */
export const SCHEMA_VERSION = 2;
/**
 * Bytes of a key the unique index holds as they are (schema version 2). A btree entry holds at most
 * 2704 bytes, so the index is on the key's first KEY_PREFIX_BYTES bytes and its SHA-256: unique for
 * a key of any length, and in key order for every key that differs from its neighbours within
 * these bytes (the rest is sorted after the index scan).
 */
export const KEY_PREFIX_BYTES = 2048;

/** The indexed prefix of `col` (a key column or a bytea parameter). */
const prefixOf = (col: string): string => `substring(${col} from 1 for ${KEY_PREFIX_BYTES})`;
/** The unique index's expressions, as CREATE INDEX and ON CONFLICT name them. */
const KEY_INDEX = `(${prefixOf('key')}), (sha256(key))`;
/** True when the key column `col` is the key `other` (a bytea parameter or column), through the unique index. */
const sameKey = (col: string, other: string): string => `${prefixOf(col)} = ${prefixOf(other)} AND sha256(${col}) = sha256(${other}) AND ${col} = ${other}`;
/**
 * A bound of a range on the key, `op` one of >=, >, <, <=, in a form the index serves: the
 * prefix's bound (never strict: keys past the prefix may share it), then the key's.
 */
const keyBound = (op: string, param: string): string => `${prefixOf('key')} ${op.startsWith('>') ? '>=' : '<='} ${prefixOf(param)} AND key ${op} ${param}`;
/** ORDER BY of key order, served by the index (then sorted within an equal prefix). */
const keyOrder = (dir: 'ASC' | 'DESC'): string => `${prefixOf('key')} ${dir}, key ${dir}`;
/** Vault's default table name (physical/postgresql). */
export const DEFAULT_TABLE = 'vault_kv_store';
/** The table naming every Tessera table of the database and its schema version. */
export const SCHEMA_TABLE = 'tessera_schema';
/** Rows a page query of `iterate` asks for. */
export const PAGE_ROWS = 512;

/** The queries a guard may run: the batch's own transaction client. */
export type GuardClient = Pick<pg.ClientBase, 'query'>;

/** A guard SELECT: passes when it returns at least one row. Its parameters are $1..$n. */
export interface GuardSql {
  readonly sql: string;
  readonly params?: readonly unknown[];
}

/**
 * What a dynamic guard says for the next batch: refuse at once (nothing is sent), or run `sql`
 * with the batch and, when it returns no row, refuse with `refused()`'s reason.
 */
export type GuardCheck = { readonly refused: string } | (GuardSql & { readonly whenNoRow: () => string });

/**
 * Runs inside each batch's transaction, before its writes. The SQL form passes when the statement
 * returns at least one row (e.g. `SELECT 1 FROM ha_locks WHERE holder = $1 AND epoch = $2 FOR
 * SHARE`); `check` names the SQL (or a refusal) per batch; both run in the batch's one statement.
 * The callback form passes when it resolves true, and may return a reason when it does not.
 */
export type BatchGuard =
  | GuardSql
  | { readonly check: () => GuardCheck }
  | ((tx: GuardClient) => Promise<boolean | { refused: string }>);

export interface PostgresBackendOptions {
  /** postgres://user:password@host:port/database?... (node-postgres' format). */
  readonly connectionUrl: string;
  /** The data table; a plain identifier (letters, digits, _). Default vault_kv_store. */
  readonly table?: string;
  readonly guard?: BatchGuard;
  /**
   * Runs after every batch PostgreSQL committed, before the batch resolves (HA: the active node
   * tells its leased standbys of the commit, src/ha/read-lease-server.ts). Undefined or a
   * resolved result: nothing to wait for.
   */
  readonly afterBatch?: (ops: readonly BatchOp[]) => Promise<void> | undefined;
  /** Pooled connections (default 16): batches, live iterations and open snapshots each hold one. */
  readonly maxConnections?: number;
  /** Rows per page of `iterate` (default PAGE_ROWS). */
  readonly pageRows?: number;
  /** Told about errors of idle pooled connections (the server went away); they are dropped. */
  readonly onIdleError?: (e: Error) => void;
  /** How long a call waits for a pooled connection (pool exhausted) or a new one (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Where the URL came from, named in errors of the open (default "PostgreSQL connection URL"). */
  readonly urlSource?: string;
  /** Retries of the open while the server is unreachable; CONNECT_RETRY unless given. */
  readonly connectRetry?: ConnectRetry;
  /** That many retries, however long they take (config `max_connect_retries`): replaces `connectRetry`'s `maxRetries` and `totalMs`. */
  readonly maxConnectRetries?: number;
  /** Told before each retry of the open (the reason has no password). */
  readonly onConnectRetry?: (r: ConnectRetryNotice) => void;
}

/** Backoff of the open while the server is unreachable: `firstDelayMs` doubling to `maxDelayMs`. */
export interface ConnectRetry {
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;
  /** Gives up once the next retry would start later than this after the first attempt. */
  readonly totalMs: number;
  /** Gives up after this many retries, whatever the time (config `max_connect_retries`). */
  readonly maxRetries?: number;
}

export const CONNECT_RETRY: ConnectRetry = { firstDelayMs: 250, maxDelayMs: 5_000, totalMs: 60_000 };

/**
 * How long to wait before retrying after failed attempt `attempt` (from 1) that began a run of
 * attempts at `startedMs`, or undefined when `retry` gives up: `e` is not "unreachable", or the
 * retries or the time are spent. The one backoff of every first connection (data and HA lease).
 */
function retryDelay(retry: ConnectRetry, attempt: number, startedMs: number, e: unknown): number | undefined {
  const delayMs = Math.min(retry.maxDelayMs, retry.firstDelayMs * 2 ** (attempt - 1));
  const again = isUnreachable(e) && attempt - 1 < (retry.maxRetries ?? Infinity) && Date.now() - startedMs + delayMs <= retry.totalMs;
  return again ? delayMs : undefined;
}

/** `given`, with `maxConnectRetries` (config `max_connect_retries`) in place of its count and time budget when set. */
export function connectRetryOf(given: ConnectRetry | undefined, maxConnectRetries: number | undefined): ConnectRetry {
  return { ...(given ?? CONNECT_RETRY), ...(maxConnectRetries !== undefined ? { maxRetries: maxConnectRetries, totalMs: Infinity } : {}) };
}

/** Before a retry of a first connection: the attempt that failed, the wait, and PostgreSQL's reason without the password. */
export type ConnectRetryNotice = { readonly attempt: number; readonly delayMs: number; readonly reason: string };

/**
 * The one retry loop of every first connection (the data backend's open, the HA lease store's):
 * runs `once` until it succeeds, waiting `retry`'s backoff while its error says the server is
 * unreachable (never after a TesseraError), and tells `onRetry` before each wait. Throws the last
 * error, with the attempts made and the time spent.
 */
export async function withConnectRetry<T>(
  retry: ConnectRetry,
  url: string,
  once: () => Promise<T>,
  onRetry?: (n: ConnectRetryNotice) => void,
): Promise<T> {
  const started = Date.now();
  const password = passwordOf(url);
  for (let attempt = 1; ; attempt++) {
    try {
      return await once();
    } catch (e) {
      const delayMs = e instanceof TesseraError ? undefined : retryDelay(retry, attempt, started, e);
      if (delayMs === undefined) throw new ConnectGaveUp(e, attempt, Date.now() - started);
      onRetry?.({ attempt, delayMs, reason: scrub(pgReason(e), password) });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/** `withConnectRetry` stopped: `error` is the last attempt's. */
export class ConnectGaveUp extends Error {
  constructor(
    readonly error: unknown,
    readonly attempts: number,
    readonly elapsedMs: number,
  ) {
    super(error instanceof Error ? error.message : String(error), { cause: error });
  }
}

/**
 * pg errors that mean "the server is not there (yet)": worth retrying at start. 57P03 is
 * cannot_connect_now ("the database system is starting up"); 08001/08006 connection failures.
 */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', '57P03', '08001', '08006']);
const UNREACHABLE_MESSAGES = [/timeout exceeded when trying to connect/i, /Connection terminated (unexpectedly|due to connection timeout)/i, /the database system is (starting up|shutting down|in recovery mode)/i];

/** True when `e` says the server could not be reached, rather than refused us (auth, database, ...). */
export function isUnreachable(e: unknown): boolean {
  const code = codeOf(e);
  if (code !== undefined && UNREACHABLE_CODES.has(code)) return true;
  const msg = e instanceof Error ? e.message : String(e);
  return UNREACHABLE_MESSAGES.some((re) => re.test(msg));
}

/**
 * True when PostgreSQL refused a statement for the data it carries and rolled it back: SQLSTATE
 * class 22 (data exception), 23 (integrity constraint violation) or 54 (program limit exceeded,
 * e.g. 54000 "index row size exceeds btree maximum"). The server and the connection are fine and
 * nothing was written; every other failure (connection, I/O, resources, an unknown commit outcome)
 * is a fault of the database itself.
 */
export function refusedData(e: unknown): boolean {
  const code = codeOf(e);
  return code !== undefined && /^(22|23|54)[0-9A-Z]{3}$/.test(code);
}

function codeOf(e: unknown): string | undefined {
  const c = typeof e === 'object' && e !== null && 'code' in e ? (e as { code: unknown }).code : undefined;
  return typeof c === 'string' && c !== '' ? c : undefined;
}

/**
 * PostgreSQL's (or the socket's) reason, with its SQLSTATE or errno code: an AggregateError of
 * several addresses (Node's happy eyeballs for "localhost") has an empty message of its own.
 */
export function pgReason(e: unknown): string {
  let msg = e instanceof Error ? e.message : String(e);
  if (msg === '' && e instanceof AggregateError) msg = e.errors.map((x: unknown) => (x instanceof Error ? x.message : String(x))).join('; ');
  const code = codeOf(e);
  if (msg === '') return code ?? 'unknown error';
  return code !== undefined && !msg.includes(code) ? `${msg} (${code})` : msg;
}

/** The table was written by a newer Tessera: this one does not know its layout. */
export class SchemaTooNew extends TesseraError {
  constructor(
    readonly table: string,
    readonly found: number,
    readonly supported: number,
  ) {
    super(
      ErrorCode.internal,
      `PostgreSQL table "${table}" has storage schema version ${found}, written by a newer Tessera; this Tessera supports schema versions up to ${supported}: upgrade it`,
    );
  }
}


export { BatchRefused } from './backend.js';

/** `url` with its password (URL or key=value form) replaced by `***`. */
export function redactConnectionUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    for (const k of [...u.searchParams.keys()]) if (k.toLowerCase() === 'password') u.searchParams.set(k, '***');
    return u.toString();
  } catch {
    return url.replace(/(password\s*=\s*)('[^']*'|\S+)/gi, '$1***').replace(USERINFO, '$1***@');
  }
}

/** `//user:password@` of a URL that `new URL` cannot parse. */
const USERINFO = /(\/\/[^:/@\s]*:)[^@\s]*@/;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export function quoteTable(table: string): string {
  if (!IDENTIFIER.test(table)) throw new Internal(`PostgreSQL table name "${table}" must be a plain identifier (letters, digits, _; at most 63)`);
  return `"${table}"`;
}

const keyBytes = (k: string): Buffer => Buffer.from(k, 'utf8');

/** Strips every occurrence of the password (it may be echoed back in some client errors). */
function scrub(text: string, password: string | undefined): string {
  return password === undefined || password === '' ? text : text.split(password).join('***');
}

function passwordOf(url: string): string | undefined {
  try {
    const p = new URL(url).password;
    return p === '' ? undefined : decodeURIComponent(p);
  } catch {
    const kv = /password\s*=\s*('[^']*'|\S+)/i.exec(url)?.[1]?.replace(/^'|'$/g, '');
    return kv ?? /\/\/[^:/@\s]*:([^@\s]+)@/.exec(url)?.[1];
  }
}

/** Why `url` is no connection URL node-postgres can use, or undefined when it is one. */
function urlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'not a valid URL (expected postgres://user:password@host:port/database)';
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') return `scheme "${u.protocol.replace(/:$/, '')}" is not postgres:// or postgresql://`;
  if (u.hostname === '' && !u.searchParams.has('host')) return 'no host (expected postgres://user:password@host:port/database)';
  return undefined;
}

interface Row {
  key: Buffer;
  value: Buffer;
}

/** The SQL of one page: bounds, direction and row count. */
function pageQuery(q: string, range: RangeOptions, rows: number): { text: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  const bound = (op: string, k: string | undefined): void => {
    if (k === undefined) return;
    values.push(keyBytes(k));
    where.push(keyBound(op, `$${values.length}::bytea`));
  };
  bound('>=', range.gte);
  bound('>', range.gt);
  bound('<', range.lt);
  bound('<=', range.lte);
  values.push(rows);
  const order = range.reverse === true ? 'DESC' : 'ASC';
  return {
    text: `SELECT key, value FROM ${q}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${keyOrder(order)} LIMIT $${values.length}`,
    values,
  };
}

/** The range after `last` (in the range's direction): the cursor of keyset pagination. */
function after(range: RangeOptions, last: string): RangeOptions {
  return range.reverse === true ? { ...range, lt: last, lte: undefined } : { ...range, gt: last, gte: undefined };
}

/** Rows wanted: a negative limit means none, as in LevelDB (-1) and MemoryBackend. */
const limitOf = (range: RangeOptions): number => (range.limit === undefined || range.limit < 0 ? Infinity : range.limit);

type Runner = (text: string, values: unknown[]) => Promise<Row[]>;

/** Statement names by text: a prepared statement's name must name one text on a connection. */
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `t${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
}

class PgView {
  constructor(
    protected readonly shared: Shared,
    protected readonly q: string,
  ) {}

  protected fault(what: string, e: unknown): Error {
    if (e instanceof TesseraError) return e;
    return new BackendFault(what, scrub(pgReason(e), this.shared.password), { cause: e });
  }

  /**
   * Rows of one query, on this view's client or the pool, as a named (prepared) statement: each
   * connection parses and plans it once, and a read costs its execution (planning a range read
   * took 0.3 ms of its 0.5).
   */
  protected run<R extends pg.QueryResultRow = Row>(text: string, values: unknown[]): Promise<R[]> {
    this.shared.ensureOpen();
    return this.shared.pool.query<R>({ name: statementName(text), text, values }).then((r) => r.rows);
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      const rows = await this.run(`SELECT value FROM ${this.q} WHERE ${sameKey('key', '$1::bytea')}`, [keyBytes(key)]);
      return rows[0]?.value;
    } catch (e) {
      throw this.fault(`storage read failed in PostgreSQL table ${this.q}`, e);
    }
  }

  /** One query for every key (a join with the keys); values in the keys' order, undefined where absent. */
  async getMany(keys: readonly string[]): Promise<Array<Buffer | undefined>> {
    const wanted = keys.map(keyBytes);
    let rows: Row[];
    try {
      rows = await this.run(`SELECT t.key, t.value FROM unnest($1::bytea[]) AS w(k) JOIN ${this.q} AS t ON ${sameKey('t.key', 'w.k')}`, [wanted]);
    } catch (e) {
      throw this.fault(`storage read failed in PostgreSQL table ${this.q}`, e);
    }
    // Matched by bytes, as `get` matches: a string that is not valid UTF-16 has the same bytes as
    // another one (encoding replaces its lone surrogates) and must read what `get` would read.
    const byKey = new Map(rows.map((r) => [r.key.toString('latin1'), r.value]));
    return wanted.map((k) => byKey.get(k.toString('latin1')));
  }

  /** Pages through `range` with `run`; every page is a fresh query after the last key yielded. */
  protected async *pages(range: RangeOptions, run: Runner, first?: Row[]): AsyncGenerator<[string, Buffer]> {
    let cur = range;
    let left = limitOf(range);
    let page = first;
    while (left > 0) {
      const want = Math.min(this.shared.pageRows, left);
      if (page === undefined) {
        const { text, values } = pageQuery(this.q, cur, want);
        try {
          page = await run(text, values);
        } catch (e) {
          throw this.fault(`storage iteration failed in PostgreSQL table ${this.q}`, e);
        }
      }
      for (const row of page) yield [row.key.toString('utf8'), row.value];
      left -= page.length;
      const last = page.at(-1);
      if (page.length < want || last === undefined) return;
      cur = after(cur, last.key.toString('utf8'));
      page = undefined;
    }
  }

  iterate(range: RangeOptions): AsyncIterable<[string, Buffer]> {
    return this.pages(range, (text, values) => this.run(text, values));
  }

  /**
   * ReadView.iterateTails: sizes and last bytes of the values in [gte, lte], in key order, paged by
   * key. In a snapshot every page reads the snapshot's state.
   */
  async *iterateTails(range: KeyInterval, tailBytes: number): AsyncIterable<ValueTail> {
    let from = keyBytes(range.gte);
    let inclusive = true;
    const to = keyBytes(range.lte);
    for (;;) {
      let rows: { key: Buffer; size: number; tail: Buffer }[];
      try {
        rows = await this.run<{ key: Buffer; size: number; tail: Buffer }>(
          `SELECT key, octet_length(value) AS size, substring(value from greatest(octet_length(value) - $4::int + 1, 1)) AS tail FROM ${this.q}
           WHERE ${keyBound(inclusive ? '>=' : '>', '$1::bytea')} AND ${keyBound('<=', '$2::bytea')} ORDER BY ${keyOrder('ASC')} LIMIT $3`,
          [from, to, this.shared.pageRows * 8, tailBytes],
        );
      } catch (e) {
        throw this.fault(`storage iteration failed in PostgreSQL table ${this.q}`, e);
      }
      for (const r of rows) yield { key: r.key.toString('utf8'), size: Number(r.size), tail: r.tail };
      const last = rows.at(-1);
      if (last === undefined || rows.length < this.shared.pageRows * 8) return;
      from = last.key;
      inclusive = false;
    }
  }

}

/** State shared by a backend and its snapshots. */
class Shared {
  closed = false;
  constructor(
    readonly pool: pg.Pool,
    readonly pageRows: number,
    readonly password: string | undefined,
  ) {}

  ensureOpen(): void {
    if (this.closed) throw new Internal('the PostgreSQL storage backend is closed');
  }

  /**
   * A pooled client. Every client of the pool has an 'error' listener from its start
   * (openPostgresBackend): a checked-out client whose connection dies emits 'error' (an unheard
   * one would crash the process); its pending and later queries reject, which is where the fault
   * is reported.
   */
  async connect(): Promise<pg.PoolClient> {
    this.ensureOpen();
    const client = await this.pool.connect();
    this.held.add(client);
    return client;
  }

  /** Clients checked out (batches, live iterations, snapshots): close() drops what is left. */
  private readonly held = new Set<pg.PoolClient>();

  /** Back to the pool, or dropped when `broken` is set (its state is unknown). Once only. */
  release(client: pg.PoolClient, broken?: unknown): void {
    if (!this.held.delete(client)) return;
    client.release(broken === undefined ? undefined : broken instanceof Error ? broken : true);
  }

  /**
   * Drops the connections still checked out (a snapshot or iteration nobody closed, as LevelDB
   * closes them on close), then ends the pool.
   */
  async end(): Promise<void> {
    this.closed = true;
    for (const c of [...this.held]) this.release(c, new Error('storage backend closed'));
    await this.pool.end();
  }
}

class PgSnapshot extends PgView implements Snapshot {
  private done = false;
  /**
   * The snapshot's queries, one after another: they share one connection (its transaction is the
   * snapshot), and readers of one snapshot run at once (a reconcile serves several leaf reads).
   * pg queues a query sent while another runs, but warns that pg 9 will not.
   */
  private queue: Promise<unknown> = Promise.resolve();
  constructor(
    shared: Shared,
    q: string,
    private readonly client: pg.PoolClient,
  ) {
    super(shared, q);
  }

  protected override run<R extends pg.QueryResultRow = Row>(text: string, values: unknown[]): Promise<R[]> {
    if (this.done) return Promise.reject(new Internal('the storage snapshot is closed'));
    if (this.shared.closed) return Promise.reject(new Internal('the PostgreSQL storage backend is closed'));
    const rows = this.queue.then(() => this.client.query<R>(text, values)).then((r) => r.rows);
    this.queue = rows.catch(() => undefined);
    return rows;
  }

  /** Idempotent; a failed COMMIT of a read-only transaction only drops the connection. */
  async close(): Promise<void> {
    if (this.done) return;
    this.done = true;
    try {
      await this.queue;
      await this.client.query('COMMIT');
      this.shared.release(this.client);
    } catch (e) {
      this.shared.release(this.client, e);
    }
  }
}

/** A batch's writes, collapsed per key: the puts as two parallel arrays, the deleted keys. */
interface Writes {
  readonly putKeys: Buffer[];
  readonly putValues: Buffer[];
  readonly delKeys: Buffer[];
}

/**
 * A batch as one statement (so one round trip and one transaction): the guard's SELECT as the CTE
 * `g` (its parameters first, as $1..$n), and every write conditional on `g` having a row. `ok`
 * says whether it had; without a guard it is true.
 */
function oneStatement(q: string, w: Writes, guard: GuardSql | undefined): { text: string; values: unknown[] } {
  const values: unknown[] = [...(guard?.params ?? [])];
  const param = (v: unknown): string => {
    values.push(v);
    return `$${values.length}`;
  };
  const ctes: string[] = [];
  const when = guard === undefined ? '' : ' WHERE EXISTS (SELECT 1 FROM g)';
  if (guard !== undefined) ctes.push(`g AS (${guard.sql})`);
  if (w.putKeys.length > 0) {
    ctes.push(
      `p AS (INSERT INTO ${q} (key, value) SELECT * FROM unnest(${param(w.putKeys)}::bytea[], ${param(w.putValues)}::bytea[])${when} ` +
        `ON CONFLICT (${KEY_INDEX}) DO UPDATE SET value = EXCLUDED.value RETURNING 1)`,
    );
  }
  if (w.delKeys.length > 0) {
    ctes.push(`d AS (DELETE FROM ${q} AS t USING unnest(${param(w.delKeys)}::bytea[]) AS w(k) WHERE ${sameKey('t.key', 'w.k')}${guard === undefined ? '' : ' AND EXISTS (SELECT 1 FROM g)'} RETURNING 1)`);
  }
  const ok = guard === undefined ? 'true' : 'EXISTS (SELECT 1 FROM g)';
  return { text: `WITH ${ctes.join(', ')} SELECT ${ok} AS ok`, values };
}

class PostgresBackend extends PgView implements Backend {
  constructor(
    shared: Shared,
    q: string,
    private readonly guard: BatchGuard | undefined,
    private readonly afterBatch: ((ops: readonly BatchOp[]) => Promise<void> | undefined) | undefined,
  ) {
    super(shared, q);
  }

  /**
   * The first page from the pool; when more may follow, the whole range again inside a
   * REPEATABLE READ transaction on a client of its own (released when the consumer stops), so
   * pages do not mix states.
   */
  override async *iterate(range: RangeOptions): AsyncIterable<[string, Buffer]> {
    const limit = limitOf(range);
    const want = Math.min(this.shared.pageRows, limit);
    if (want <= 0) return;
    let first: Row[];
    const { text, values } = pageQuery(this.q, range, want);
    try {
      first = await this.run(text, values);
    } catch (e) {
      throw this.fault(`storage iteration failed in PostgreSQL table ${this.q}`, e);
    }
    if (first.length < want || limit === want) {
      yield* this.pages(range, () => Promise.resolve([]), first);
      return;
    }
    let client: pg.PoolClient;
    try {
      client = await this.shared.connect();
    } catch (e) {
      throw this.fault(`storage iteration failed in PostgreSQL table ${this.q}`, e);
    }
    let broken: Error | undefined;
    try {
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      } catch (e) {
        broken = e instanceof Error ? e : new Error(String(e));
        throw this.fault(`storage iteration failed in PostgreSQL table ${this.q}`, e);
      }
      const run: Runner = async (t, v) => {
        try {
          return (await client.query<Row>(t, v)).rows;
        } catch (e) {
          broken = e instanceof Error ? e : new Error(String(e));
          throw e;
        }
      };
      yield* this.pages(range, run);
    } finally {
      if (broken === undefined) {
        try {
          await client.query('COMMIT');
        } catch (e) {
          broken = e instanceof Error ? e : new Error(String(e));
        }
      }
      this.shared.release(client, broken);
    }
  }

  async batch(ops: readonly BatchOp[], options: { sync: boolean }): Promise<void> {
    await this.commit(ops, options);
    const after = ops.length === 0 ? undefined : this.afterBatch?.(ops);
    if (after !== undefined) await after;
  }

  private async commit(ops: readonly BatchOp[], _options: { sync: boolean }): Promise<void> {
    this.shared.ensureOpen();
    if (ops.length === 0) return;
    // Last op per key wins (a batch may put and then delete one key).
    const last = new Map<string, BatchOp>();
    for (const op of ops) {
      last.delete(op.key);
      last.set(op.key, op);
    }
    const writes: Writes = { putKeys: [], putValues: [], delKeys: [] };
    for (const op of last.values()) {
      if (op.type === 'put') {
        writes.putKeys.push(keyBytes(op.key));
        writes.putValues.push(op.value);
      } else writes.delKeys.push(keyBytes(op.key));
    }
    const g = this.guard;
    if (typeof g === 'function') return this.batchInTransaction(writes, g);
    const check: GuardCheck | undefined = g === undefined ? undefined : 'check' in g ? g.check() : { ...g, whenNoRow: () => 'the guard statement returned no row' };
    if (check !== undefined && !('sql' in check)) throw new BatchRefused(check.refused);
    const what = `storage write failed in PostgreSQL table ${this.q}`;
    const { text, values } = oneStatement(this.q, writes, check);
    let rows: Array<{ ok: boolean }>;
    try {
      rows = (await this.shared.pool.query<{ ok: boolean }>(text, values)).rows;
    } catch (e) {
      if (refusedData(e)) throw new WriteRefused(scrub(pgReason(e), this.shared.password));
      // The statement is its own transaction: failed, or its commit's outcome is unknown.
      throw this.fault(`${what} (outcome unknown)`, e);
    }
    if (check !== undefined && rows[0]?.ok !== true) throw new BatchRefused(check.whenNoRow());
  }

  /** BEGIN, the callback guard, the writes, COMMIT: for a guard that runs its own queries. */
  private async batchInTransaction(w: Writes, guard: Extract<BatchGuard, (tx: GuardClient) => unknown>): Promise<void> {
    const what = `storage write failed in PostgreSQL table ${this.q}`;
    let client: pg.PoolClient;
    try {
      client = await this.shared.connect();
    } catch (e) {
      throw this.fault(what, e);
    }
    let committing = false;
    try {
      await client.query('BEGIN');
      const refusal = await this.runGuard(client, guard);
      if (refusal !== undefined) {
        // Refused whatever the ROLLBACK says: a connection that fails it is dropped, and the
        // server rolls back what it dropped.
        const rolledBack = await client.query('ROLLBACK').then(
          () => undefined,
          (e: unknown) => e,
        );
        this.shared.release(client, rolledBack);
        throw new BatchRefused(refusal);
      }
      if (w.putKeys.length > 0) {
        await client.query(
          `INSERT INTO ${this.q} (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[]) ON CONFLICT (${KEY_INDEX}) DO UPDATE SET value = EXCLUDED.value`,
          [w.putKeys, w.putValues],
        );
      }
      if (w.delKeys.length > 0) await client.query(`DELETE FROM ${this.q} AS t USING unnest($1::bytea[]) AS w(k) WHERE ${sameKey('t.key', 'w.k')}`, [w.delKeys]);
      committing = true;
      await client.query('COMMIT');
      this.shared.release(client);
    } catch (e) {
      // Not knowing the connection's state, drop it rather than return it to the pool (a no-op
      // when it went back already). A guard callback may throw BatchRefused itself.
      this.shared.release(client, e);
      if (e instanceof BatchRefused) throw e;
      if (refusedData(e)) throw new WriteRefused(scrub(pgReason(e), this.shared.password));
      throw this.fault(committing ? `${what} (COMMIT outcome unknown)` : what, e);
    }
  }

  /** undefined when the callback guard passes, else the reason it refused. */
  private async runGuard(client: pg.PoolClient, g: Extract<BatchGuard, (tx: GuardClient) => unknown>): Promise<string | undefined> {
    const r = await g(client);
    if (r === true) return undefined;
    return r === false ? 'the guard callback said no' : r.refused;
  }

  async snapshot(): Promise<Snapshot> {
    this.shared.ensureOpen();
    let client: pg.PoolClient;
    try {
      client = await this.shared.connect();
    } catch (e) {
      throw this.fault(`cannot take a storage snapshot of PostgreSQL table ${this.q}`, e);
    }
    try {
      // A REPEATABLE READ transaction takes its snapshot at its first statement, not at BEGIN.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SELECT 1');
    } catch (e) {
      this.shared.release(client, e);
      throw this.fault(`cannot take a storage snapshot of PostgreSQL table ${this.q}`, e);
    }
    return new PgSnapshot(this.shared, this.q, client);
  }

  /** Ends the pool; snapshots and iterations still open fail afterwards. Idempotent. */
  async close(): Promise<void> {
    if (this.shared.closed) return;
    await this.shared.end();
  }
}

/** Creates the schema table and the data table when missing, under an advisory lock; checks versions. */
/**
 * What one Tessera table needs at open: created (with `create`) and recorded in tessera_schema
 * when missing, refused when another program made it or a newer Tessera wrote it. The data table
 * and the HA tables (postgres-lease.ts) both open through this.
 */
export interface TableSchema {
  readonly table: string;
  readonly version: number;
  /** The config key naming the table, for the "not created by Tessera" refusal. */
  readonly configKey: string;
  /** Runs inside the schema transaction when the table is new. */
  create(client: pg.PoolClient): Promise<void>;
  /** Runs inside the schema transaction when the table has the older version `from`; without it an older table is used as it is. */
  migrate?(client: pg.PoolClient, from: number): Promise<void>;
}

export async function ensureTesseraTable(client: pg.PoolClient, schema: TableSchema): Promise<void> {
  const { table, version: supported } = schema;
  await client.query('BEGIN');
  try {
    // One lock for every Tessera schema change in this database, whatever the table: the shared
    // tessera_schema table is created under it too (concurrent CREATE TABLE IF NOT EXISTS of one
    // name can still fail on pg_type's unique index). Released at COMMIT or ROLLBACK.
    await client.query('SELECT pg_advisory_xact_lock(2119529331, 1)');
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${SCHEMA_TABLE} (table_name text PRIMARY KEY, version integer NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
    const found = await client.query<{ version: number }>(`SELECT version FROM ${SCHEMA_TABLE} WHERE table_name = $1`, [table]);
    const version = found.rows[0]?.version;
    if (version !== undefined && version > supported) throw new SchemaTooNew(table, version, supported);
    if (version !== undefined && version < supported && schema.migrate !== undefined) {
      await schema.migrate(client, version);
      await client.query(`UPDATE ${SCHEMA_TABLE} SET version = $2 WHERE table_name = $1`, [table, supported]);
    }
    if (version === undefined) {
      const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [quoteTable(table)]);
      if (exists.rows[0]?.t != null) {
        throw new Internal(`PostgreSQL table "${table}" exists but was not created by Tessera (no row in ${SCHEMA_TABLE}): choose another table (storage "postgresql" { ${schema.configKey} = "..." })`);
      }
      await schema.create(client);
      await client.query(`INSERT INTO ${SCHEMA_TABLE} (table_name, version) VALUES ($1, $2)`, [table, supported]);
    }
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

function ensureSchema(client: pg.PoolClient, table: string, q: string): Promise<void> {
  return ensureTesseraTable(client, {
    table,
    version: SCHEMA_VERSION,
    configKey: 'table',
    create: async (c) => {
      await c.query(`CREATE TABLE IF NOT EXISTS ${q} (key bytea NOT NULL, value bytea NOT NULL)`);
      await c.query(`CREATE UNIQUE INDEX ON ${q} (${KEY_INDEX})`);
    },
    // Version 1 had `key bytea PRIMARY KEY`: the new index is built, then the key's is dropped.
    migrate: async (c) => {
      await c.query(`CREATE UNIQUE INDEX ON ${q} (${KEY_INDEX})`);
      const pk = await c.query<{ name: string }>(`SELECT conname AS name FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`, [q]);
      for (const { name } of pk.rows) await c.query(`ALTER TABLE ${q} DROP CONSTRAINT "${name.replace(/"/g, '""')}"`);
    },
  });
}

/**
 * Connects (retrying while the server is unreachable, see ConnectRetry), creates or checks the
 * schema, and returns the backend. Errors name `urlSource`, the URL without its password, and
 * PostgreSQL's reason.
 */
export async function openPostgresBackend(opts: PostgresBackendOptions): Promise<Backend> {
  const table = opts.table ?? DEFAULT_TABLE;
  const q = quoteTable(table);
  const password = passwordOf(opts.connectionUrl);
  const where = `${opts.urlSource ?? 'PostgreSQL connection URL'} (${redactConnectionUrl(opts.connectionUrl)})`;
  const refuse = (reason: string, cause?: unknown): Internal => new Internal(scrub(`${where}: cannot open PostgreSQL storage (table ${table}): ${reason}`, password), { cause });
  const problem = urlProblem(opts.connectionUrl);
  if (problem !== undefined) throw refuse(problem);
  const { Pool } = await loadPg();
  const pool = new Pool({
    connectionString: opts.connectionUrl,
    max: opts.maxConnections ?? 16,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
    // TCP keep-alive probes find a server that vanished without closing the connection.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: 'tessera',
  });
  // Idle clients' errors come here (pg-pool drops those clients); checked-out clients' errors go
  // to the listener every client gets at its start, and surface through its queries instead.
  pool.on('error', (e) => opts.onIdleError?.(e));
  pool.on('connect', (client) => void client.on('error', () => undefined));
  const shared = new Shared(pool, opts.pageRows ?? PAGE_ROWS, password);
  const once = async (): Promise<Backend> => {
    let client: pg.PoolClient | undefined;
    try {
      client = await shared.connect();
      await ensureSchema(client, table, q);
      shared.release(client);
      return new PostgresBackend(shared, q, opts.guard, opts.afterBatch);
    } catch (e) {
      if (client !== undefined) shared.release(client, e);
      throw e;
    }
  };
  try {
    return await withConnectRetry(connectRetryOf(opts.connectRetry, opts.maxConnectRetries), opts.connectionUrl, once, opts.onConnectRetry);
  } catch (gaveUp) {
    await pool.end().catch(() => undefined);
    const { error: e, attempts, elapsedMs } = gaveUp as ConnectGaveUp;
    if (e instanceof TesseraError) throw e;
    const tried = attempts > 1 ? ` (unreachable; gave up after ${attempts} attempts over ${(elapsedMs / 1000).toFixed(1)} s)` : '';
    throw refuse(`${pgReason(e)}${tried}`, e);
  }
}
