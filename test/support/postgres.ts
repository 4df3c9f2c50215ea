/**
 * A private PostgreSQL 15 for a test file: initdb (trust auth, fsync and synchronous_commit on)
 * in a temp dir, listening on a free 127.0.0.1 port with its socket in that dir; as root the
 * server runs as `postgres` through runuser (PostgreSQL refuses root), as scripts/bench-pg.mjs does.
 *
 *   const pg = await startPostgres();              // one per test file (about 1-2 s)
 *   const url = await pg.createDatabase('case_1');  // isolation where a file needs it
 *   await pg.stopServer();                          // the server goes away (a fault test)
 *   await pg.startServer();                         // and comes back on the same port and data
 *   const pw = await pg.createPasswordUser('s3cret'); // a login that needs that password
 *   await pg.stop();                                // stops it and removes everything
 *   const kept = await startPostgres({ dir, port }); // scripts/cluster.mjs --ha: DIR/data kept
 *   await kept.stop();                              // across runs, on a fixed port
 *
 * With `dir` the server lives in DIR (data/, sock/, server.log), initdb runs only when DIR/data
 * holds no cluster yet (`fresh` says whether it did), a server still running there from an earlier
 * run is taken over as it is, and `stop()` shuts it down cleanly (fast mode) and keeps every file.
 * As root, DIR and every directory above it must be searchable by `postgres`.
 *
 * Needs Debian's postgresql-15 (/usr/lib/postgresql/15/bin, or TESSERA_PG_BIN); `.ci/run` installs it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePorts } from '../harness/dr.js';

export const PG_BIN = process.env.TESSERA_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const USER = 'tessera';
/** The role whose logins need a password (pg_hba.conf names it before the trust lines). */
export const PASSWORD_USER = 'tessera_pw';

export interface TestPostgres {
  /** URL of the database `tessera` (created at start). */
  readonly url: string;
  readonly port: number;
  /** True when this call ran initdb (always, without `dir`). */
  readonly fresh: boolean;
  /** Creates database `name` (letters, digits, _) and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (immediate mode), keeping the files: clients see it go away. */
  stopServer(): Promise<void>;
  /** Starts the server again after `stopServer()`, on the same port and data. */
  startServer(): Promise<void>;
  /**
   * Creates (or re-passwords) the role PASSWORD_USER, the one login that must give a password
   * (scram-sha-256; every other login is trusted), and returns its URL to database `tessera`.
   */
  createPasswordUser(password: string): Promise<string>;
  /** Stops the server if running and removes its directory (with `dir`: stops it cleanly, keeps the files). Idempotent. */
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /** A directory kept across runs (data/, sock/, server.log in it); a temp dir removed by `stop()` unless given. */
  readonly dir?: string;
  /** The TCP port on 127.0.0.1; a free one unless given. */
  readonly port?: number;
}

export const postgresAvailable = (): boolean => existsSync(join(PG_BIN, 'postgres'));

interface Account {
  name: string;
  uid: number;
  gid: number;
}

function serverAccount(): Account | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) throw new Error("running as root and there is no 'postgres' account (Debian's postgresql-15 creates it)");
  return { name: 'postgres', uid: Number(id('-u').stdout), gid: Number(id('-g').stdout) };
}

function run(account: Account | undefined, program: string, args: string[], okCodes: readonly number[] = [0]): Promise<number> {
  const [cmd, argv] = account ? ['runuser', ['-u', account.name, '--', join(PG_BIN, program), ...args]] : [join(PG_BIN, program), args];
  return new Promise((resolve, reject) => {
    const p = spawn(cmd as string, argv as string[], { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
    const out: Buffer[] = [];
    p.stdout.on('data', (c: Buffer) => out.push(c));
    p.stderr.on('data', (c: Buffer) => out.push(c));
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== null && okCodes.includes(code)) resolve(code);
      else reject(new Error(`${program} ${args.join(' ')} exited ${code}:\n${Buffer.concat(out).toString('utf8').slice(-2000)}`));
    });
  });
}

export async function startPostgres(opts: PostgresOptions = {}): Promise<TestPostgres> {
  if (!postgresAvailable()) throw new Error(`PostgreSQL 15 is missing (${PG_BIN}/postgres): apt-get install -y postgresql-15`);
  const account = serverAccount();
  const kept = opts.dir !== undefined;
  const scratch = opts.dir ?? (await mkdtemp(join(tmpdir(), 'tessera-pg-')));
  const data = join(scratch, 'data');
  const sock = join(scratch, 'sock');
  await mkdir(sock, { recursive: true });
  if (account) for (const d of [scratch, sock]) await chown(d, account.uid, account.gid);
  await chmod(scratch, 0o755);
  const port = opts.port ?? (await freePorts(1))[0];
  if (port === undefined) throw new Error('no free port');
  let running = false;
  let removed = false;
  const stopServer = async (): Promise<void> => {
    if (!running) return;
    running = false;
    await run(account, 'pg_ctl', ['stop', '-w', '-m', kept ? 'fast' : 'immediate', '-D', data]).catch(() => undefined);
  };
  const remove = () => (kept ? Promise.resolve() : rm(scratch, { recursive: true, force: true }));
  const fresh = !existsSync(join(data, 'PG_VERSION'));
  try {
    if (fresh) {
      await initdb(account, data, port, sock);
      const hba = join(data, 'pg_hba.conf');
      await writeFile(hba, `host all ${PASSWORD_USER} 127.0.0.1/32 scram-sha-256\n${await readFile(hba, 'utf8')}`);
    }
    const startServer = async (): Promise<void> => {
      if (running) return;
      await run(account, 'pg_ctl', ['start', '-w', '-D', data, '-l', join(scratch, 'server.log'), '-o', `-p ${port} -k ${sock}`]);
      running = true;
    };
    // pg_ctl status: 0 running, 3 not running (a kept directory may hold a server still running).
    if ((await run(account, 'pg_ctl', ['status', '-D', data], [0, 3])) === 3) await startServer();
    running = true;
    const base = `postgres://${USER}@127.0.0.1:${port}`;
    const admin = async (sql: string, params: unknown[] = []): Promise<number> => {
      const c = new pg.Client({ connectionString: `${base}/postgres` });
      await c.connect();
      try {
        return (await c.query(sql, params)).rowCount ?? 0;
      } finally {
        await c.end();
      }
    };
    const createDatabase = async (name: string): Promise<string> => {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`database name ${name}: lower-case letters, digits, _`);
      await admin(`CREATE DATABASE ${name}`);
      return `${base}/${name}`;
    };
    // A kept directory may hold the database already (an earlier run).
    const url = (await admin('SELECT 1 FROM pg_database WHERE datname = $1', ['tessera'])) > 0 ? `${base}/tessera` : await createDatabase('tessera');
    const createPasswordUser = async (password: string): Promise<string> => {
      await admin(`DROP ROLE IF EXISTS ${PASSWORD_USER}`);
      await admin(`CREATE ROLE ${PASSWORD_USER} LOGIN PASSWORD '${password.replace(/'/g, "''")}'`);
      return `postgres://${PASSWORD_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/tessera`;
    };
    return {
      url,
      port,
      fresh,
      createDatabase,
      stopServer,
      startServer,
      createPasswordUser,
      stop: async () => {
        await stopServer();
        if (removed) return;
        removed = true;
        await remove();
      },
    };
  } catch (e) {
    await stopServer();
    await remove();
    throw e;
  }
}

/** initdb in `data` and the settings every server here runs with (durable, small). */
async function initdb(account: Account | undefined, data: string, port: number, sock: string): Promise<void> {
  await run(account, 'initdb', ['-D', data, '-U', USER, '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
  await appendFile(
    join(data, 'postgresql.conf'),
    [
      '',
      '# test/support/postgres.ts: durable settings, as production; small for tests',
      "listen_addresses = '127.0.0.1'",
      `port = ${port}`,
      `unix_socket_directories = '${sock}'`,
      'fsync = on',
      'synchronous_commit = on',
      'max_connections = 100',
      'shared_buffers = 16MB',
      '',
    ].join('\n'),
  );
}

/**
 * One private PostgreSQL for the calling suite file: started before its tests, stopped after.
 * Returns a getter (the server exists only once `beforeAll` ran).
 *
 *   const pg = usePostgres();
 *   it('...', async () => { const url = await pg().createDatabase('case_1'); });
 */
export function usePostgres(): () => TestPostgres {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (server === undefined) throw new Error('usePostgres(): the server starts in beforeAll');
    return server;
  };
}

/** The rows of one query on its own connection to `url` (tests reading what nodes wrote). */
export async function sqlRows<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text, values)).rows;
  } finally {
    await c.end();
  }
}
