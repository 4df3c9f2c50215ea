/**
 * The reference for `npm run bench`: PostgreSQL 15 (Debian's postgresql-15) as a primary with an
 * asynchronous streaming standby on 127.0.0.1, measured the way scripts/bench-dr.mjs measures a
 * Tessera primary and DR secondary, in the same run.
 *
 *   node scripts/bench-pg.mjs [--seconds 3]        # prints a table, bench-results/bench-pg.json
 *   import { benchPg } from './bench-pg.mjs'; const r = await benchPg({ seconds: 3 });
 *
 * Set-up: initdb (trust auth, superuser `bench`) with the durable defaults stated explicitly
 * (fsync=on, synchronous_commit=on, full_page_writes=on, wal_level=replica), listening on a free
 * 127.0.0.1 port with its socket in the temp dir; pg_basebackup -R makes the standby (hot_standby,
 * asynchronous: synchronous_standby_names is empty). Table kv(k text primary key, v text).
 * PostgreSQL refuses to run as root: as root the server commands run as `postgres` (the Debian
 * package's user) through runuser. When /usr/lib/postgresql/15/bin/postgres is missing the bench
 * runs `apt-get install -y postgresql-15` as root, and otherwise stops with a message naming it.
 *
 * (a) Throughput: pgbench -n -c N -j N -T seconds over TCP, one transaction = one upsert
 *     (INSERT ... ON CONFLICT (k) DO UPDATE) of a 1,024-byte value under a key distinct per
 *     transaction (client id and a per-client counter), as Tessera's bench writes distinct keys.
 * (b) Lag, ack -> visible: one probe connection inserts a row on the primary; from the COMMIT's
 *     answer, another connection polls the standby for that key (one query in flight, 1 ms apart)
 *     until it is there. Idle, then under 16 pgbench clients; under load pg_stat_replication's
 *     replay_lag is sampled every 50 ms as well (PostgreSQL's own figure).
 * (c) Promote -> first accepted write: the primary is stopped (pg_ctl stop -m fast), then on a
 *     connection already open to the standby `SELECT pg_promote(false)` and an INSERT retried
 *     every 1 ms until it commits; the time runs from the pg_promote call (Tessera's from its
 *     promote call).
 * Memory: PSS and RSS of each server's process tree sampled during the loads (bench-mem.mjs).
 * Everything is stopped and removed afterwards, also on failure (logs kept then).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { appendFile, chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { reapedChildrenCpuMs, sampleMemory, treeCpuMs, treeSize } from './bench-mem.mjs';
import { pgConnect } from './bench-pg-wire.mjs';
import { percentile } from './bench-util.mjs';
import '@swc-node/register/esm-register';

// The typed house's free-port helper (test/harness) through swc: registered before it is imported.
const { freePorts } = await import('../test/harness/dr.js');

export const PG_BIN = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const PG_PACKAGE = 'postgresql-15';
export const USER = 'bench';
const VALUE_BYTES = 1024;
const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
const note = (s) => process.stderr.write(`${s}\n`);
const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), maxMs: s.at(-1) ?? NaN };
};
const isRoot = () => process.getuid?.() === 0;

/** Installs Debian's package when missing and we are root; otherwise a clear error. */
export function ensurePostgres() {
  if (existsSync(join(PG_BIN, 'postgres'))) return;
  if (!isRoot()) throw new Error(`PostgreSQL 15 is missing (${PG_BIN}/postgres): install the Debian package ${PG_PACKAGE} (apt-get install -y ${PG_PACKAGE}), or skip the reference with BENCH_NO_PG=1`);
  note(`PostgreSQL 15 is missing: apt-get install -y ${PG_PACKAGE}...`);
  let r = spawnSync('apt-get', ['install', '-y', PG_PACKAGE], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (r.status !== 0) {
    spawnSync('apt-get', ['update'], { stdio: 'inherit' });
    r = spawnSync('apt-get', ['install', '-y', PG_PACKAGE], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  if (r.status !== 0 || !existsSync(join(PG_BIN, 'postgres'))) throw new Error(`apt-get install -y ${PG_PACKAGE} failed (${r.status}); install it by hand or set BENCH_NO_PG=1`);
}

/** The unprivileged account the server runs as when we are root: { name, uid, gid }, or undefined. */
export function serverAccount() {
  if (!isRoot()) return undefined;
  const id = (flag) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) throw new Error(`running as root and there is no 'postgres' account (the ${PG_PACKAGE} package creates it)`);
  return { name: 'postgres', uid: Number(id('-u').stdout), gid: Number(id('-g').stdout) };
}

/** [command, argv] running a PostgreSQL program, as the server account when there is one. */
export const command = (account, program, args) => (account ? ['runuser', ['-u', account.name, '--', join(PG_BIN, program), ...args]] : [join(PG_BIN, program), args]);

/** Runs a PostgreSQL program (as the server account when root); resolves with stdout, throws on failure. */
export function run(account, program, args, { quiet = false } = {}) {
  const [cmd, argv] = command(account, program, args);
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/' });
    const out = [];
    const err = [];
    p.stdout.on('data', (c) => out.push(c));
    p.stderr.on('data', (c) => err.push(c));
    p.on('error', reject);
    p.on('close', (code) => {
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`${program} ${args.join(' ')} exited ${code}${quiet ? '' : `:\n${stderr.slice(-2000)}${stdout.slice(-2000)}`}`));
    });
  });
}

export const conf = (port, socketDir) => [
  '',
  '# scripts/bench-pg.mjs: the durable defaults, stated; asynchronous streaming replication',
  "listen_addresses = '127.0.0.1'",
  `port = ${port}`,
  `unix_socket_directories = '${socketDir}'`,
  'fsync = on',
  'synchronous_commit = on',
  'full_page_writes = on',
  'wal_level = replica',
  'max_wal_senders = 4',
  "synchronous_standby_names = ''",
  'hot_standby = on',
  '',
].join('\n');

/** pgbench upserts for `seconds` with `clients` clients; `phase` keeps keys distinct across runs. */
export async function pgbench(scratch, port, clients, seconds, phase) {
  const script = join(scratch, `upsert-${phase}.sql`);
  // :n is a per-client counter (pgbench variables live as long as the client), so every
  // transaction writes a new key: phase/client/n. The value: 32 md5 hex digests = 1,024 bytes,
  // stored inline and uncompressed (below PostgreSQL's 2 kB TOAST threshold).
  await writeFile(script, [
    '\\set n :n + 1',
    `INSERT INTO kv (k, v) VALUES (:phase || '/' || :client_id || '/' || :n, repeat(md5(:client_id || '/' || :n), ${VALUE_BYTES / 32})) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;`,
    '',
  ].join('\n'));
  const args = ['-n', '-h', '127.0.0.1', '-p', String(port), '-U', USER, '-c', String(clients), '-j', String(clients), '-T', String(seconds), '-D', 'n=0', '-D', `phase=${phase}`, '-f', script, 'postgres'];
  const client0 = await reapedChildrenCpuMs();
  const { stdout } = await run(undefined, 'pgbench', args);
  // pgbench's own CPU (every thread), counted here once it has exited and been reaped.
  const clientCpuMs = (await reapedChildrenCpuMs()) - client0;
  const num = (re) => Number(re.exec(stdout)?.[1] ?? NaN);
  const tps = num(/^tps = ([\d.]+) \(without initial connection time\)/m);
  if (!Number.isFinite(tps)) throw new Error(`no tps in pgbench output:\n${stdout}`);
  const transactions = num(/number of transactions actually processed: (\d+)/);
  return { clients, seconds, writesPerSec: tps, transactions, clientCpuUsPerWrite: (clientCpuMs * 1000) / transactions, latencyAvgMs: num(/^latency average = ([\d.]+) ms/m), failed: num(/number of failed transactions: (\d+)/) };
}

/** ms from a probe's COMMIT answer on the primary to the key's visibility on the standby, for `seconds`. */
async function lagPhase(ctx, phase, seconds) {
  const lags = [];
  let polls = 0;
  const end = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < end; i++) {
    const key = `probe/${phase}/${i}`;
    await ctx.primary.query(`INSERT INTO kv (k, v) VALUES ('${key}', '${i}')`);
    const tAck = performance.now();
    for (;;) {
      polls++;
      const { rows } = await ctx.standby.query(`SELECT 1 FROM kv WHERE k = '${key}'`);
      if (rows.length > 0) break;
      await delay(1);
    }
    lags.push(performance.now() - tAck);
  }
  return { ...summary(lags), pollsPerSample: polls / lags.length };
}

/** Round trips of an idle one-row query on the standby: the floor of every lag figure. */
async function queryFloor(standby, samples = 300) {
  const times = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await standby.query("SELECT 1 FROM kv WHERE k = 'none'");
    times.push(performance.now() - t0);
  }
  return summary(times);
}

const pidOf = async (dataDir) => Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);

export async function benchPg({ seconds = 3, clients = [4, 16], loadClients = 16 } = {}) {
  ensurePostgres();
  const account = serverAccount();
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-pg-'));
  const [pPort, sPort] = await freePorts(2);
  const dirs = { primary: join(scratch, 'primary'), standby: join(scratch, 'standby'), sock: join(scratch, 'sock') };
  await mkdir(dirs.sock);
  if (account) {
    for (const d of [scratch, dirs.sock]) await chown(d, account.uid, account.gid);
  }
  await chmod(scratch, 0o755); // pgbench (this user) reads its scripts from here
  const started = [];
  const conns = [];
  let ok = false;
  // pg_ctl daemonizes the servers: on Ctrl-C stop them (and remove the data) before exiting, or
  // they outlive the bench.
  const onSignal = (sig) => {
    for (const d of started) spawnSync(...command(account, 'pg_ctl', ['stop', '-m', 'immediate', '-D', d]), { stdio: 'ignore' });
    rmSync(scratch, { recursive: true, force: true });
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, onSignal);
  try {
    note(`PostgreSQL bench: initdb, primary on 127.0.0.1:${pPort}...`);
    await run(account, 'initdb', ['-D', dirs.primary, '-U', USER, '--auth=trust', '-E', 'UTF8', '--no-locale']);
    await appendFile(join(dirs.primary, 'postgresql.conf'), conf(pPort, dirs.sock));
    await run(account, 'pg_ctl', ['start', '-w', '-D', dirs.primary, '-l', join(scratch, 'primary.log')]);
    started.push(dirs.primary);
    const primary = await pgConnect({ port: pPort, user: USER });
    conns.push(primary);
    await primary.query('CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL)');
    note(`PostgreSQL bench: pg_basebackup -R, standby on 127.0.0.1:${sPort}...`);
    await run(account, 'pg_basebackup', ['-D', dirs.standby, '-R', '-X', 'stream', '-c', 'fast', '-h', '127.0.0.1', '-p', String(pPort), '-U', USER]);
    await appendFile(join(dirs.standby, 'postgresql.conf'), `\n# the standby\nport = ${sPort}\n`);
    await run(account, 'pg_ctl', ['start', '-w', '-D', dirs.standby, '-l', join(scratch, 'standby.log')]);
    started.push(dirs.standby);
    const standby = await pgConnect({ port: sPort, user: USER });
    conns.push(standby);
    for (const deadline = Date.now() + 30_000; ; await delay(50)) {
      const { rows } = await primary.query("SELECT state FROM pg_stat_replication WHERE state = 'streaming'");
      if (rows.length > 0) break;
      if (Date.now() > deadline) throw new Error('the standby did not reach streaming in 30 s');
    }
    const pids = { primary: await pidOf(dirs.primary), standby: await pidOf(dirs.standby) };
    const mem = () => sampleMemory({ primary: { pid: pids.primary, children: true }, standby: { pid: pids.standby, children: true } });

    // (a) throughput with the standby attached
    const throughput = [];
    const serverCpu = async () => (await treeCpuMs(pids.primary)) + (await treeCpuMs(pids.standby));
    for (const n of clients) {
      note(`PostgreSQL bench: pgbench upserts, ${n} clients, ${seconds} s...`);
      const m = mem();
      const procs = await treeSize(pids.primary);
      const cpu0 = await serverCpu();
      const row = await pgbench(scratch, pPort, n, seconds, 100 + n);
      // Backends exit once pgbench disconnects; their CPU reaches the postmaster when reaped.
      for (const deadline = Date.now() + 3000; (await treeSize(pids.primary)) > procs && Date.now() < deadline; ) await delay(20);
      const cpu1 = await serverCpu();
      throughput.push({ ...row, serverCpuUsPerWrite: ((cpu1 - cpu0) * 1000) / row.transactions, memory: await m.stop() });
    }

    // (b) lag
    const floor = await queryFloor(standby);
    const probe = await pgConnect({ port: pPort, user: USER });
    conns.push(probe);
    const ctx = { primary: probe, standby };
    note(`PostgreSQL bench: lag, idle, ${seconds} s...`);
    const idle = await lagPhase(ctx, 'idle', seconds);
    note(`PostgreSQL bench: lag under ${loadClients} pgbench clients, ${seconds} s...`);
    const m = mem();
    let loading = true;
    const load = pgbench(scratch, pPort, loadClients, seconds, 200 + loadClients).finally(() => (loading = false));
    const replay = [];
    let replayNull = 0;
    const sampler = (async () => {
      while (loading) {
        const { rows } = await primary.query('SELECT extract(epoch FROM replay_lag) * 1000 FROM pg_stat_replication');
        if (rows[0]?.[0] == null) replayNull++;
        else replay.push(Number(rows[0][0]));
        await delay(50);
      }
    })();
    await delay(200); // pgbench's clients connected and writing
    const loaded = await lagPhase(ctx, 'load', Math.max(0.5, seconds - 0.5));
    const loadRun = await load;
    await sampler;
    const underLoad = { ...loaded, loadClients, loadWritesPerSec: loadRun.writesPerSec, replayLag: { ...summary(replay), nullSamples: replayNull }, memory: await m.stop() };

    // (c) promote -> first accepted write
    note('PostgreSQL bench: primary stopped (pg_ctl stop -m fast); pg_promote on the standby...');
    await primary.close();
    await probe.close();
    await run(account, 'pg_ctl', ['stop', '-w', '-m', 'fast', '-D', dirs.primary]);
    started.splice(started.indexOf(dirs.primary), 1);
    const t0 = performance.now();
    await standby.query('SELECT pg_promote(false)');
    const tPromoted = performance.now();
    let retries = 0;
    for (;;) {
      try {
        await standby.query("INSERT INTO kv (k, v) VALUES ('after-promote', 'ok')");
        break;
      } catch (e) {
        if (e.code !== '25006') throw e; // read_only_sql_transaction: not promoted yet
        if (performance.now() - t0 > 60_000) throw new Error('no write accepted within 60 s of pg_promote');
        retries++;
        await delay(1);
      }
    }
    const promote = { promoteCallMs: tPromoted - t0, promoteToFirstWriteMs: performance.now() - t0, retries };
    ok = true;
    return { version: (await standby.query('SHOW server_version')).rows[0][0], settings: { fsync: 'on', synchronous_commit: 'on', replication: 'asynchronous streaming, hot standby' }, valueBytes: VALUE_BYTES, throughput, queryRoundTrip: floor, lagIdle: idle, lagUnderLoad: underLoad, promote };
  } finally {
    for (const sig of ['SIGINT', 'SIGTERM']) process.off(sig, onSignal);
    await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
    for (const d of started) await run(account, 'pg_ctl', ['stop', '-w', '-m', 'immediate', '-D', d], { quiet: true }).catch(() => undefined);
    if (ok) await rm(scratch, { recursive: true, force: true });
    else note(`PostgreSQL bench failed; its data and logs are kept in ${scratch}`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { seconds: { type: 'string' } } });
  const seconds = Number(values.seconds ?? process.env.BENCH_SECONDS ?? 3);
  benchPg({ seconds }).then(
    async (r) => {
      console.log(JSON.stringify(r, null, 2));
      await mkdir(resultsDir, { recursive: true });
      await writeFile(join(resultsDir, 'bench-pg.json'), `${JSON.stringify({ date: new Date().toISOString(), ...r }, null, 2)}\n`);
      process.exit(0);
    },
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
