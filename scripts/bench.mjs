/**
 * Durable KV v2 write throughput over HTTP against a real dev node, next to the raw LevelDB
 * ceiling measured in the same run. Build first (`npm run bench` does).
 *
 *   node scripts/bench.mjs                 # 1, 4 and 16 clients, 3 s each
 *   BENCH_SECONDS=5 node scripts/bench.mjs
 *   BENCH_CLIENTS=16 BENCH_NO_CEILING=1 node scripts/bench.mjs   # one row, no LevelDB ceiling
 *   BENCH_NO_DR=1 BENCH_NO_PERF=1 node scripts/bench.mjs          # without the DR (bench-dr.mjs) or
 *                                                                  # performance (bench-perf.mjs) parts
 *   BENCH_NO_PG=1 node scripts/bench.mjs                           # without the PostgreSQL reference
 *                                                                  # (and without the next part)
 *   BENCH_NO_PG_ENGINE=1 node scripts/bench.mjs                    # without Tessera on storage "postgresql"
 *                                                                  # vs pgbench upserts (bench-pg-engine.mjs)
 *   BENCH_NO_FLOOR=1 node scripts/bench.mjs                        # without the no-op HTTP floor
 *                                                                  # (bench-floor.mjs)
 *   BENCH_NO_HOT=1 node scripts/bench.mjs                          # without the wrk hot-path part
 *                                                                  # (bench-hot.mjs; skipped without wrk)
 *   BENCH_NO_FAILOVER=1 node scripts/bench.mjs                     # without the HA failover part
 *                                                                  # (bench-failover.mjs)
 *
 * The headline (bench-headline.mjs, printed last): PostgreSQL 15 with an asynchronous standby
 * (bench-pg.mjs) and Tessera with a DR secondary (bench-dr.mjs), measured one after the other in
 * this run, every Tessera figure as a ratio to PostgreSQL's, the LevelDB ceiling as the physical
 * limit, the machine and its load average at start and end.
 *
 * scripts/profile.mjs reuses startDevNode and httpWrites to CPU-profile the node under this load.
 *
 * Each client is sequential (one write in flight) on its own keep-alive connection and writes
 * distinct keys with 1 KiB values; a write counts once its 200 has arrived, which the node sends
 * only after the commit is fsynced. The node is stopped before the LevelDB ceiling runs, so the
 * two never compete for the disk. Results: a table on stdout and bench-results/bench.json.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { headlineNotes, headlineRows, headlineText, machine } from './bench-headline.mjs';
import { leveldbCeiling } from './bench-leveldb.mjs';
import { cpuMs, percentile, table } from './bench-util.mjs';
import '@swc-node/register/esm-register';

// The typed house (test/harness) through swc: registered before it is imported. mainJs honours
// TESSERA_MAIN (another build's main.js, e.g. to compare two builds).
const { mainJs, metricSample, spawnNode, vault } = await import('../test/harness/index.js');
const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
const CLIENTS = (process.env.BENCH_CLIENTS ?? '1,4,16').split(',').map(Number);
const VALUE_BYTES = 1024;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP_MS = 500;
const JSON_TYPE = { 'Content-Type': 'application/json' };

/**
 * Starts `server -dev` with its temp dir inside `scratch` (the harness's node starter); resolves
 * once the banner is complete. `nodeArgs` go before the script (e.g. --cpu-prof); `script`
 * defaults to dist/cli/main.js (bench-floor.mjs passes a stand-in server that prints the same
 * banner); `env` is added.
 */
export function startDevNode(scratch, { nodeArgs = [], script = mainJs, env = {} } = {}) {
  return spawnNode({ args: ['server', '-dev', '-dev-listen-address', '127.0.0.1:0'], ready: 'banner', env: { ...env, TMPDIR: scratch }, nodeArgs, script });
}

/** Group-commit counters from the node's Prometheus text: fsynced batches and the transactions in them. */
async function commitCounters(node) {
  const r = await vault(node.apiAddr, node.rootToken).get('sys/metrics?format=prometheus');
  const num = (name) => metricSample(r.text, name);
  return {
    batches: num('tessera_group_commit_batch_transactions_count'),
    txns: num('tessera_group_commit_batch_transactions_sum'),
    bytes: num('tessera_group_commit_batch_bytes_sum'),
  };
}

/** `clients` sequential writers for `seconds` after a short warm-up; distinct keys throughout. */
export async function httpWrites(node, clients, seconds) {
  const pool = randomBytes(VALUE_BYTES * 4).toString('base64url');
  const valueFor = (i) => {
    const off = (i * 131) % (pool.length - VALUE_BYTES);
    return pool.slice(off, off + VALUE_BYTES);
  };
  const agents = Array.from({ length: clients }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const run = async (phase, ms) => {
    const end = performance.now() + ms;
    const latencies = [];
    let lastDone = performance.now();
    const start = performance.now();
    await Promise.all(
      agents.map(async (agent, c) => {
        const v = vault(node.apiAddr, node.rootToken, { agent });
        for (let i = 0; performance.now() < end; i++) {
          const body = JSON.stringify({ data: { v: valueFor(i + c) } });
          const t0 = performance.now();
          const r = await v.request('PUT', `secret/data/bench/${phase}/n${clients}/c${c}/k${i}`, { raw: body, headers: JSON_TYPE });
          if (r.status !== 200) throw new Error(`write answered ${r.status}: ${r.text.slice(0, 200)}`);
          const t1 = performance.now();
          latencies.push(t1 - t0);
          lastDone = Math.max(lastDone, t1);
        }
      }),
    );
    return { writes: latencies.length, seconds: (lastDone - start) / 1000, latencies };
  };
  try {
    await run('warmup', WARMUP_MS);
    const before = await commitCounters(node);
    const cpu0 = await cpuMs(node.pid);
    const m = await run('measure', seconds * 1000);
    const cpu1 = await cpuMs(node.pid);
    const after = await commitCounters(node);
    const sorted = m.latencies.sort((a, b) => a - b);
    return {
      clients,
      // The node's CPU time (every thread) per write, from /proc: what a write costs the server.
      nodeCpuUsPerWrite: ((cpu1 - cpu0) * 1000) / m.writes,
      // Transactions per fsynced batch in the window (group commit at work).
      txnsPerBatch: (after.txns - before.txns) / (after.batches - before.batches),
      // Bytes the node handed LevelDB per durable write (data, WAL, index), page records included.
      bytesPerWrite: (after.bytes - before.bytes) / (after.txns - before.txns),
      writes: m.writes,
      seconds: m.seconds,
      writesPerSec: m.writes / m.seconds,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
    };
  } finally {
    for (const a of agents) a.destroy();
  }
}


async function main() {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  const loadAvgStart = os.loadavg();
  const benchPg = process.env.BENCH_NO_PG || process.env.BENCH_NO_CEILING ? undefined : (await import('./bench-pg.mjs'));
  benchPg?.ensurePostgres(); // installs postgresql-15 (as root) before anything is measured
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-'));
  let node;
  const httpRows = [];
  try {
    node = await startDevNode(scratch);
    for (const clients of CLIENTS) {
      process.stderr.write(`HTTP writes with ${clients} client(s) for ${SECONDS} s...\n`);
      httpRows.push(await httpWrites(node, clients, SECONDS));
    }
    const exit = await node.stop();
    node = undefined;
    if (exit.code !== 0) throw new Error(`dev node exited with ${JSON.stringify(exit)} on SIGTERM`);
  } finally {
    node?.kill();
    await rm(scratch, { recursive: true, force: true });
  }

  const sizes = [...new Set([1, 4, 16, ...CLIENTS])].sort((a, b) => a - b); // 4 and 16: the headline
  const ceiling = process.env.BENCH_NO_CEILING
    ? sizes.map((batchSize) => ({ batchSize, valuesPerSec: NaN }))
    : (process.stderr.write(`LevelDB ceiling, batches of ${sizes.join(', ')}, ${SECONDS} s each...\n`),
      await leveldbCeiling({ batchSizes: sizes, valueBytes: VALUE_BYTES, seconds: SECONDS }));
  const at = (n) => ceiling.find((r) => r.batchSize === n);
  const rows = httpRows.map((h) => {
    const same = at(h.clients);
    const one = at(1);
    return {
      ...h,
      ceilingValuesPerSecAtBatchN: same.valuesPerSec,
      ratioToCeilingAtBatchN: h.writesPerSec / same.valuesPerSec,
      ceilingValuesPerSecAtBatch1: one.valuesPerSec,
      ratioToCeilingAtBatch1: h.writesPerSec / one.valuesPerSec,
    };
  });

  console.log(`Tessera durable KV v2 writes over HTTP (${VALUE_BYTES} B values, ${SECONDS} s per row) vs the raw LevelDB ceiling (sync:true)`);
  console.log(
    table(
      ['clients', 'HTTP writes/s', 'p50 ms', 'p99 ms', 'txns/batch', 'B/write', 'node CPU us/write', 'LevelDB values/s @batch N', 'ratio', 'LevelDB values/s @batch 1', 'ratio'],
      rows.map((r) => [
        String(r.clients),
        r.writesPerSec.toFixed(0),
        r.p50Ms.toFixed(2),
        r.p99Ms.toFixed(2),
        r.txnsPerBatch.toFixed(1),
        r.bytesPerWrite.toFixed(0),
        r.nodeCpuUsPerWrite.toFixed(0),
        r.ceilingValuesPerSecAtBatchN.toFixed(0),
        r.ratioToCeilingAtBatchN.toFixed(3),
        r.ceilingValuesPerSecAtBatch1.toFixed(0),
        r.ratioToCeilingAtBatch1.toFixed(3),
      ]),
    ),
  );

  if (process.env.BENCH_NO_CEILING) return;
  await mkdir(resultsDir, { recursive: true });
  const out = join(resultsDir, 'bench.json');
  // PostgreSQL first, then Tessera's primary + DR secondary: never both at once.
  if (benchPg) process.stderr.write(`PostgreSQL 15 reference, ${SECONDS} s per phase...\n`);
  const pg = benchPg ? await benchPg.benchPg({ seconds: SECONDS }) : undefined;
  // Tessera on its PostgreSQL engine vs pgbench upserts on that server: bench-pg-engine.mjs
  const engineBench = benchPg && !process.env.BENCH_NO_PG_ENGINE ? await import('./bench-pg-engine.mjs') : undefined;
  const pgEngine = engineBench ? await engineBench.benchPgEngine({ seconds: SECONDS, clients: engineBench.pgEngineClients() }) : undefined;
  if (engineBench && pgEngine) console.log(`\n${engineBench.pgEngineTable(pgEngine)}`);
  // The HTTP floor: no-op servers under the same load generator (bench-floor.mjs).
  const floor = process.env.BENCH_NO_FLOOR ? undefined : await (await import('./bench-floor.mjs')).benchFloor({ seconds: SECONDS });
  // The hot path with wrk (bench-hot.mjs): reads and replicated writes against the express floor.
  const benchHotMod = process.env.BENCH_NO_HOT ? undefined : await import('./bench-hot.mjs');
  const hot = benchHotMod && benchHotMod.wrkAvailable() ? await benchHotMod.benchHot({ seconds: SECONDS }) : undefined;
  if (hot) console.log(`\n${benchHotMod.hotTable(hot)}`);
  // Throughput with the secondary streaming, lag, catch-up, promote: bench-results/bench-dr.json
  const dr = process.env.BENCH_NO_DR ? undefined : await (await import('./bench-dr.mjs')).benchDr({ seconds: SECONDS });
  const loadAvg = { start: loadAvgStart, end: os.loadavg() };
  const mc = machine();
  const headline = headlineRows({ pg, dr, ceiling, floor, pgEngine, hot });
  const headlineOut = `\n${headlineText(headline, { machine: mc, loadAvg })}\n${headlineNotes({ pg, dr, floor }).join('\n')}`;
  const doc = {
    date: new Date().toISOString(),
    command: `${['BENCH_SECONDS', 'BENCH_NO_DR', 'BENCH_NO_PG', 'BENCH_NO_PG_ENGINE', 'BENCH_PG_ENGINE_CLIENTS', 'BENCH_NO_PERF', 'BENCH_NO_FLOOR', 'BENCH_NO_FAILOVER', 'BENCH_NO_HOT', 'BENCH_DR_CATCHUP_WRITES'].filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]} `).join('')}node scripts/bench.mjs`,
    machine: mc,
    loadAvg,
    node: process.version,
    cpus: os.cpus().length,
    platform: `${os.platform()} ${os.release()}`,
    valueBytes: VALUE_BYTES,
    secondsPerRow: SECONDS,
    headline,
    http: rows,
    leveldbCeiling: ceiling,
    httpFloor: floor,
    hotPath: hot,
    postgres: pg,
    postgresEngine: pgEngine,
    tesseraDr: dr && { throughput: dr.throughput, lagIdle: dr.lagIdle, lagUnderLoad: dr.lagUnderLoad, promote: dr.promote, statusRoundTrip: dr.statusRoundTrip },
  };
  await writeFile(out, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`\nWrote ${out}`);
  try {
    // Forwarded vs direct write latency, read scale-out, filter-change keys moved: bench-results/bench-perf.json
    if (!process.env.BENCH_NO_PERF) await (await import('./bench-perf.mjs')).benchPerf({ seconds: SECONDS, command: `${process.env.BENCH_NO_DR ? 'BENCH_NO_DR=1 ' : ''}node scripts/bench.mjs` });
    // Takeover, SIGTERM and step-down to the first accepted write on a 3-node HA cluster on
    // PostgreSQL, relayed vs direct latency: bench-results/bench-failover.json
    if (!process.env.BENCH_NO_FAILOVER) await (await import('./bench-failover.mjs')).benchFailover({ command: 'node scripts/bench.mjs' });
  } finally {
    console.log(headlineOut);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
