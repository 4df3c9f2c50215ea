/**
 * Tessera on its PostgreSQL storage engine against pgbench upserts on the same PostgreSQL server
 * in the same run: what the engine makes of the database it sits on. Build first (`npm run build`).
 *
 *   node scripts/bench-pg-engine.mjs [--seconds 3]   # a table, bench-results/bench-pg-engine.json
 *   BENCH_PG_ENGINE_CLIENTS=16 node scripts/bench-pg-engine.mjs
 *   import { benchPgEngine } from './bench-pg-engine.mjs'; const r = await benchPgEngine({ seconds: 3 });
 *
 * One private PostgreSQL 15 (initdb as bench-pg.mjs does it: trust auth, fsync=on,
 * synchronous_commit=on, no standby), on a free 127.0.0.1 port. For each client count (4 and 16
 * unless BENCH_PG_ENGINE_CLIENTS says): pgbench upserts of 1,024-byte values under distinct keys
 * (bench-pg.mjs's `pgbench()`, database `postgres`), then a Tessera node (`tessera server` as a
 * child process, `storage "postgresql"` on database `tessera`, initialised, unsealed, KV v2 at
 * secret/) taking durable KV v2 writes over HTTP with as many clients (bench.mjs's `httpWrites()`:
 * sequential writers, distinct keys, 1 KiB values, a write counted on its 200). The ratio is
 * Tessera writes/s over pgbench upserts/s at the same client count. A Tessera write is one KV v2
 * put: in PostgreSQL, one batch transaction of several rows (data, metadata, WAL, Merkle pages),
 * group-committed with others. bench.mjs runs this unless BENCH_NO_PG_ENGINE (or BENCH_NO_PG).
 */
import { mkdir, mkdtemp, rm, writeFile, chmod, chown, appendFile } from 'node:fs/promises';
import { rmSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { USER, command, conf, ensurePostgres, pgbench, run, serverAccount } from './bench-pg.mjs';
import { httpWrites } from './bench.mjs';
import { table } from './bench-util.mjs';
import '@swc-node/register/esm-register';

const { freePorts, initAndUnseal, mainJs, mountKv2, nodeConfig, spawnNode, writeLicense } = await import('../test/harness/index.js');
const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
const note = (s) => process.stderr.write(`${s}\n`);

async function sql(port, database, text) {
  const c = new pg.Client({ host: '127.0.0.1', port, user: USER, database });
  await c.connect();
  try {
    return (await c.query(text)).rows;
  } finally {
    await c.end();
  }
}

export async function benchPgEngine({ seconds = 3, clients = [4, 16] } = {}) {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  ensurePostgres();
  const account = serverAccount();
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-pg-engine-'));
  const [port] = await freePorts(1);
  const data = join(scratch, 'data');
  const sock = join(scratch, 'sock');
  await mkdir(sock);
  if (account) for (const d of [scratch, sock]) await chown(d, account.uid, account.gid);
  await chmod(scratch, 0o755); // pgbench (this user) reads its scripts from here
  let started = false;
  let node;
  let ok = false;
  const onSignal = (sig) => {
    node?.proc.kill('SIGKILL');
    if (started) spawnSync(...command(account, 'pg_ctl', ['stop', '-m', 'immediate', '-D', data]), { stdio: 'ignore' });
    rmSync(scratch, { recursive: true, force: true });
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, onSignal);
  try {
    note(`PostgreSQL engine bench: initdb, server on 127.0.0.1:${port}...`);
    await run(account, 'initdb', ['-D', data, '-U', USER, '--auth=trust', '-E', 'UTF8', '--no-locale']);
    await appendFile(join(data, 'postgresql.conf'), conf(port, sock));
    await run(account, 'pg_ctl', ['start', '-w', '-D', data, '-l', join(scratch, 'server.log')]);
    started = true;
    await sql(port, 'postgres', 'CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL)');
    await sql(port, 'postgres', 'CREATE DATABASE tessera');
    const version = (await sql(port, 'postgres', 'SHOW server_version'))[0].server_version;

    const home = join(scratch, 'node');
    await mkdir(home, { recursive: true });
    const license = await writeLicense(join(home, 'lic'), { reuse: false });
    const configPath = join(home, 'config.hcl');
    await writeFile(configPath, nodeConfig(home, license.issuerKey, 'info', { licensePath: license.path, postgresql: { connectionUrl: `postgres://${USER}@127.0.0.1:${port}/tessera` } }));
    node = await spawnNode({ args: ['server', '-config', configPath], ready: 'listening-log', readyTimeoutMs: 30_000 });
    const init = await initAndUnseal(node.apiAddr);
    await mountKv2(node.apiAddr, init.rootToken);
    const tessera = { apiAddr: node.apiAddr, rootToken: init.rootToken, pid: node.pid };

    const rows = [];
    for (const n of clients) {
      note(`PostgreSQL engine bench: pgbench upserts, ${n} clients, ${seconds} s...`);
      const upserts = await pgbench(scratch, port, n, seconds, 300 + n);
      note(`PostgreSQL engine bench: Tessera on storage "postgresql", ${n} clients, ${seconds} s...`);
      const writes = await httpWrites(tessera, n, seconds);
      rows.push({
        clients: n,
        pgbenchUpsertsPerSec: upserts.writesPerSec,
        pgbenchLatencyAvgMs: upserts.latencyAvgMs,
        tesseraWritesPerSec: writes.writesPerSec,
        tesseraP50Ms: writes.p50Ms,
        tesseraP99Ms: writes.p99Ms,
        tesseraTxnsPerBatch: writes.txnsPerBatch,
        tesseraNodeCpuUsPerWrite: writes.nodeCpuUsPerWrite,
        ratio: writes.writesPerSec / upserts.writesPerSec,
      });
    }
    // KV v2 reads with wrk on this engine (bench-hot.mjs): the hot path's read row, storage "postgresql".
    const { hotReads, wrkAvailable } = await import('./bench-hot.mjs');
    const reads = wrkAvailable() ? await hotReads(tessera, { seconds }) : undefined;
    const exit = await node.stop();
    node = undefined;
    if (exit.code !== 0) throw new Error(`the Tessera node exited with ${JSON.stringify(exit)} on SIGTERM`);
    ok = true;
    return { version, settings: { fsync: 'on', synchronous_commit: 'on', standby: 'none' }, valueBytes: 1024, seconds, rows, reads };
  } finally {
    for (const sig of ['SIGINT', 'SIGTERM']) process.off(sig, onSignal);
    await node?.kill();
    if (started) await run(account, 'pg_ctl', ['stop', '-w', '-m', 'immediate', '-D', data], { quiet: true }).catch(() => undefined);
    if (ok) await rm(scratch, { recursive: true, force: true });
    else note(`PostgreSQL engine bench failed; its data and logs are kept in ${scratch}`);
  }
}

/** The table bench.mjs and this script print. */
export function pgEngineTable(r) {
  return [
    `Tessera on storage "postgresql" vs pgbench upserts on the same PostgreSQL ${r.version} server, same run (1,024 B values, ${r.seconds} s per row; ratio = Tessera / pgbench)`,
    table(
      ['clients', 'pgbench upserts/s', 'Tessera writes/s', 'ratio', 'Tessera p50 ms', 'p99 ms', 'txns/batch', 'node CPU us/write'],
      r.rows.map((x) => [String(x.clients), x.pgbenchUpsertsPerSec.toFixed(0), x.tesseraWritesPerSec.toFixed(0), x.ratio.toFixed(3), x.tesseraP50Ms.toFixed(2), x.tesseraP99Ms.toFixed(2), x.tesseraTxnsPerBatch.toFixed(1), x.tesseraNodeCpuUsPerWrite.toFixed(0)]),
    ),
  ].join('\n');
}

export const pgEngineClients = () => (process.env.BENCH_PG_ENGINE_CLIENTS ?? '4,16').split(',').map(Number);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { seconds: { type: 'string' } } });
  const seconds = Number(values.seconds ?? process.env.BENCH_SECONDS ?? 3);
  benchPgEngine({ seconds, clients: pgEngineClients() }).then(
    async (r) => {
      console.log(pgEngineTable(r));
      await mkdir(resultsDir, { recursive: true });
      const out = join(resultsDir, 'bench-pg-engine.json');
      await writeFile(out, `${JSON.stringify({ date: new Date().toISOString(), command: `${process.env.BENCH_PG_ENGINE_CLIENTS ? `BENCH_PG_ENGINE_CLIENTS=${process.env.BENCH_PG_ENGINE_CLIENTS} ` : ''}node scripts/bench-pg-engine.mjs --seconds ${seconds}`, cpus: os.cpus().length, node: process.version, ...r }, null, 2)}\n`);
      console.log(`\nWrote ${out}`);
      process.exit(0);
    },
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
