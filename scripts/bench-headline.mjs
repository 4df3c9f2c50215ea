/**
 * The headline of `npm run bench`: every Tessera figure (primary + DR secondary, bench-dr.mjs) as a
 * ratio to PostgreSQL 15 with an asynchronous standby measured in the same run (bench-pg.mjs), and
 * the LevelDB ceiling (bench-leveldb.mjs) as the physical limit of a durable write on this disk.
 *
 * Ratios are always Tessera / PostgreSQL; `better` says which direction wins (throughput: higher;
 * latencies and memory: lower). Goals are issue 20's (write path round 2): 16-client writes
 * >= 1.0x PostgreSQL or >= 0.8x the express floor, 4-client writes >= 0.5x, server CPU per write
 * <= 2x, idle ack -> visible p50 <= 1.5x; issue 29's lag p99 under the 16-client load <=
 * PostgreSQL's and PSS <= 2.5x (they replace issue 20's 10 ms and 2x); and issue 9's promote ->
 * first write <= PostgreSQL's. Rows also give Tessera's writes as a fraction of the express floor, and Tessera on its PostgreSQL engine against pgbench upserts on
 * the same server (bench-pg-engine.mjs) when that part ran. The `wrk:` rows are issue 29's (the hot
 * path, bench-hot.mjs): reads and replicated writes driven by wrk against Tessera and the express
 * floor alike, as fractions of the floor, Tessera's own CPU per request, and the file audit device's cost.
 */
import os from 'node:os';

/** The machine the figures belong to. */
export function machine() {
  const cpus = os.cpus();
  return { cpu: cpus[0]?.model ?? 'unknown', cores: cpus.length, kernel: `${os.type()} ${os.release()}`, node: process.version, memoryGb: os.totalmem() / 1024 ** 3 };
}

const sum = (...xs) => xs.reduce((a, b) => a + b, 0);

/** The throughput row of `src` (bench-pg or bench-dr results) at `n` clients. */
const throughputAt = (src, n) => src?.throughput.find((x) => x.clients === n);
/** The HTTP floor's row of one no-op shell at `n` clients. */
const floorAt = (floor, shell, n) => floor?.find((x) => x.shell === shell && x.clients === n);

/**
 * Rows of { figure, unit, pg, tessera, ratio, better, goal?, met? }; `pg` or `dr` may be undefined
 * (BENCH_NO_PG, BENCH_NO_DR), which leaves their cells NaN.
 */
export function headlineRows({ pg, dr, ceiling, floor, pgEngine, hot }) {
  const rows = [];
  // `goal.met(row)`: true, false, or undefined when a figure is missing.
  const row = (figure, unit, p, t, better, goal) => {
    const r = { figure, unit, pg: p ?? NaN, tessera: t ?? NaN, ratio: (t ?? NaN) / (p ?? NaN), better };
    if (goal) Object.assign(r, { goal: goal.text, met: goal.met(r) });
    rows.push(r);
  };
  const known = (...xs) => xs.every((x) => Number.isFinite(x));
  const atMost = (text, limit) => ({ text, met: (r) => (known(r.tessera, limit) ? r.tessera <= limit : undefined) });
  const ratioAtLeast = (text, k) => ({ text, met: (r) => (known(r.ratio) ? r.ratio >= k : undefined) });
  const tput = (src, n) => throughputAt(src, n)?.writesPerSec;
  const noop = (shell, n) => floorAt(floor, shell, n)?.writesPerSec;
  row('durable ~1 KB writes/s, 16 clients (replica attached)', 'writes/s', tput(pg, 16), tput(dr, 16), 'higher', {
    text: '>= 1.0x PostgreSQL, or >= 0.8x the express floor',
    met: (r) => (known(r.ratio) ? r.ratio >= 1 || (known(noop('express', 16)) && r.tessera >= 0.8 * noop('express', 16)) : undefined),
  });
  row('durable ~1 KB writes/s, 4 clients (replica attached)', 'writes/s', tput(pg, 4), tput(dr, 4), 'higher', ratioAtLeast('>= 0.5x PostgreSQL', 0.5));
  const cpu = (src, n) => throughputAt(src, n)?.serverCpuUsPerWrite;
  row('server CPU per write, primary + replica, every process and thread, 16 clients', 'us', cpu(pg, 16), cpu(dr, 16), 'lower', atMost('<= 2x PostgreSQL', 2 * (cpu(pg, 16) ?? NaN)));
  row('server CPU per write, primary + replica, every process and thread, 4 clients', 'us', cpu(pg, 4), cpu(dr, 4), 'lower');
  // The load generators share the machine with the servers: pgbench (C) and the bench's Node client.
  row('load generator CPU per write, 16 clients (PostgreSQL: pgbench; Tessera: the bench\'s Node HTTP client)', 'us', throughputAt(pg, 16)?.clientCpuUsPerWrite, throughputAt(dr, 16)?.clientCpuUsPerWrite, 'lower');
  row('floor: server CPU per request of the no-op express shell, 16 clients (PostgreSQL: its whole replicated write)', 'us', cpu(pg, 16), floorAt(floor, 'express', 16)?.nodeCpuUsPerWrite, 'lower');
  // The HTTP floor (bench-floor.mjs): no-op servers under the same load generator. Their
  // requests/s bound Tessera's writes/s on this machine; `ratio` is still theirs over PostgreSQL's.
  for (const n of [16, 4]) {
    row(`floor: no-op node:http server, requests/s, ${n} clients (no storage)`, 'writes/s', tput(pg, n), noop('node', n), 'higher');
    row(`floor: no-op express shell (as express ships) + LIST framer, ${n} clients`, 'writes/s', tput(pg, n), noop('express', n), 'higher');
    rows.push({ figure: `Tessera's writes/s as a fraction of the express floor, ${n} clients`, unit: 'of floor', pg: NaN, tessera: (tput(dr, n) ?? NaN) / (noop('express', n) ?? NaN), ratio: NaN, better: 'higher' });
  }
  // Tessera on storage "postgresql" against pgbench upserts on that server (bench-pg-engine.mjs).
  for (const e of pgEngine?.rows ?? []) {
    row(`storage "postgresql": Tessera writes/s vs pgbench upserts on the same server, ${e.clients} clients (no replica)`, 'writes/s', e.pgbenchUpsertsPerSec, e.tesseraWritesPerSec, 'higher');
  }
  // Issue 29 (the hot path): wrk against Tessera and the express floor (bench-hot.mjs).
  const hotAt = (name, n) => hot?.rows.find((x) => x.name === name && x.connections === n);
  const share = (figure, x, goal) => {
    const r = { figure, unit: 'of floor', pg: NaN, tessera: x?.ofFloor ?? NaN, ratio: NaN, better: 'higher' };
    if (goal !== undefined) Object.assign(r, { goal: `>= ${goal}x the express floor`, met: known(r.tessera) ? r.tessera >= goal : undefined });
    rows.push(r);
  };
  for (const n of [16, 4]) share(`wrk: KV v2 read of 1 KiB (token, ACL, decrypt), ${n} connections`, hotAt('read', n), 0.6);
  row('wrk: Tessera\'s own CPU per KV v2 read (server CPU minus its shell\'s), 16 connections', 'us', NaN, hotAt('read', 16)?.ownCpuUs, 'lower', atMost('<= 100 us', 100));
  // The same reads on storage "postgresql" (bench-pg-engine.mjs), against the same floor.
  const floorGet = (n) => hot?.rows.find((x) => x.name === 'floor' && x.method === 'GET' && x.connections === n);
  const shellGet = (n) => hot?.rows.find((x) => x.name === 'shell' && x.method === 'GET' && x.connections === n);
  for (const n of [16, 4]) {
    const x = pgEngine?.reads?.find((r) => r.connections === n);
    share(`wrk: KV v2 read on storage "postgresql", ${n} connections`, x && { ofFloor: x.rps / (floorGet(n)?.rps ?? NaN) }, 0.6);
  }
  const pgRead = pgEngine?.reads?.find((r) => r.connections === 16);
  row('wrk: Tessera\'s own CPU per KV v2 read on storage "postgresql", 16 connections', 'us', NaN, pgRead && pgRead.cpuUs - (shellGet(16)?.cpuUs ?? NaN), 'lower', atMost('<= 100 us', 100));
  share('wrk: durable replicated 1 KiB write (DR secondary streaming), 16 connections', hotAt('write', 16), 0.4);
  share('wrk: durable replicated 1 KiB write (DR secondary streaming), 4 connections', hotAt('write', 4), 0.3);
  row('wrk: Tessera\'s own CPU per replicated write (primary + secondary minus its shell) vs PostgreSQL\'s whole replicated write, 16', 'us', cpu(pg, 16), hotAt('write', 16)?.ownCpuUs, 'lower', atMost('<= 2x PostgreSQL', 2 * (cpu(pg, 16) ?? NaN)));
  for (const [name, label] of [['read, file audit', 'read'], ['write, file audit', 'write']]) {
    for (const n of [16, 4]) {
      const x = hotAt(name, n);
      rows.push({ figure: `wrk: ${label} with a file audit device / without, ${n} connections`, unit: 'of unaudited', pg: NaN, tessera: x?.ofUnaudited ?? NaN, ratio: NaN, better: 'higher', goal: 'within 25% (>= 0.75x)', met: known(x?.ofUnaudited) ? x.ofUnaudited >= 0.75 : undefined });
    }
  }
  // Issue 30 (transit): 1 KiB encrypt and decrypt at 16 connections, primary and performance secondary.
  for (const op of ['encrypt', 'decrypt']) {
    for (const where of ['primary', 'perf secondary']) {
      const x = hotAt(`transit ${op}, ${where}`, 16);
      share(`wrk: transit ${op} of 1 KiB (aes256-gcm96) on the ${where}, 16 connections`, x, 0.5);
      // The same against Tessera's own shell (express without its per-request prototype change): no goal is written against it.
      rows.push({ figure: `wrk: transit ${op} on the ${where}, of Tessera's own shell, 16 connections`, unit: 'of shell', pg: NaN, tessera: x?.ofShell ?? NaN, ratio: NaN, better: 'higher' });
    }
    // The median over rounds of the secondary's rate over the primary's in the same round.
    const ratio = hotAt(`transit ${op}, perf secondary`, 16)?.ofPrimary ?? NaN;
    rows.push({ figure: `wrk: transit ${op} on a performance secondary / on the primary, 16 connections`, unit: 'of primary', pg: NaN, tessera: ratio, ratio: NaN, better: 'higher', goal: op === 'encrypt' ? '>= 0.9x the primary' : '', met: op === 'encrypt' && known(ratio) ? ratio >= 0.9 : undefined });
  }
  const pl = pg?.lagUnderLoad;
  const tl = dr?.lagUnderLoad;
  row('replica lag under 16-client load, ack -> visible p50', 'ms', pl?.p50Ms, tl?.p50Ms, 'lower');
  row('replica lag under 16-client load, ack -> visible p99', 'ms', pl?.p99Ms, tl?.p99Ms, 'lower', atMost('<= PostgreSQL', pl?.p99Ms ?? NaN));
  row('replica lag under 16-client load, ack -> visible max', 'ms', pl?.maxMs, tl?.maxMs, 'lower');
  row('idle commit ack -> visible on the replica, p50', 'ms', pg?.lagIdle.p50Ms, dr?.lagIdle.p50Ms, 'lower', atMost('<= 1.5x PostgreSQL', 1.5 * (pg?.lagIdle.p50Ms ?? NaN)));
  row('idle commit ack -> visible on the replica, p99', 'ms', pg?.lagIdle.p99Ms, dr?.lagIdle.p99Ms, 'lower');
  row('promote -> first accepted write', 'ms', pg?.promote.promoteToFirstWriteMs, dr?.promote.promoteToFirstWriteMs, 'lower', atMost('<= PostgreSQL', pg?.promote.promoteToFirstWriteMs ?? NaN));
  const m = (x) => x?.lagUnderLoad.memory;
  const pgMem = m(pg) && sum(m(pg).primary.maxPssMb, m(pg).standby.maxPssMb);
  const tMem = m(dr) && sum(m(dr).primary.maxPssMb, m(dr).secondary.maxPssMb);
  row('memory under 16-client load, PSS max, primary + replica', 'MB', pgMem, tMem, 'lower', atMost('<= 2.5x PostgreSQL', 2.5 * (pgMem ?? NaN)));
  for (const n of [16, 4]) {
    const c = ceiling?.find((x) => x.batchSize === n)?.valuesPerSec;
    // The physical limit: each system's ${n}-client writes/s as a fraction of it; `ratio` stays T/PG.
    rows.push({ figure: `LevelDB ceiling, fsynced batches of ${n} x 1 KiB: ${fmt(c, 'values/s')} values/s (physical limit)`, unit: 'of ceiling', ceiling: c ?? NaN, pg: (tput(pg, n) ?? NaN) / (c ?? NaN), tessera: (tput(dr, n) ?? NaN) / (c ?? NaN), ratio: (tput(dr, n) ?? NaN) / (tput(pg, n) ?? NaN), better: 'higher' });
  }
  return rows;
}

/** Lines under the table: PostgreSQL's own replay_lag, memory per node, the probe methods. */
export function headlineNotes({ pg, dr, floor, cores = os.cpus().length }) {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const out = [];
  const rl = pg?.lagUnderLoad.replayLag;
  if (rl) out.push(`PostgreSQL's own replay_lag (pg_stat_replication, every 50 ms under the load): p50 ${f(rl.p50Ms, 2)}, p99 ${f(rl.p99Ms, 2)}, max ${f(rl.maxMs, 2)} ms (${rl.n} samples, ${rl.nullSamples} NULL)`);
  const mem = (label, m, a, b) => `${label}: ${a} RSS max ${f(m[a].maxRssMb, 0)} MB / PSS max ${f(m[a].maxPssMb, 0)} MB (after the load ${f(m[a].endRssMb, 0)} / ${f(m[a].endPssMb, 0)}); ${b} RSS max ${f(m[b].maxRssMb, 0)} / PSS max ${f(m[b].maxPssMb, 0)} MB (after ${f(m[b].endRssMb, 0)} / ${f(m[b].endPssMb, 0)})`;
  if (dr) out.push(mem('Tessera memory under the 16-client load', dr.lagUnderLoad.memory, 'primary', 'secondary'));
  if (pg) out.push(mem('PostgreSQL memory (every process of each server) under the 16-client load', pg.lagUnderLoad.memory, 'primary', 'standby'));
  const pgRate = throughputAt(pg, 16)?.writesPerSec;
  const t = throughputAt(dr, 16);
  if (Number.isFinite(pgRate)) {
    const budget = (cores * 1e6) / pgRate;
    out.push(`CPU budget at PostgreSQL's 16-client rate: ${cores} cores / ${f(pgRate, 0)} writes/s = ${f(budget, 0)} us of CPU per write for everything on the machine; the no-op express shell takes ${f(floorAt(floor, 'express', 16)?.nodeCpuUsPerWrite, 0)} us of it and the bench's Node client ${f(t?.clientCpuUsPerWrite, 0)} us, before Tessera stores or replicates anything; Tessera's DR secondary (receive and apply, its whole process) takes ${f(t?.secondaryCpuUsPerWrite, 0)} us per write`);
  }
  out.push('ack -> visible: PostgreSQL, the probe key is visible on the standby (exact); Tessera, the DR secondary\'s last_wal reaches the primary\'s read after the ack (an upper bound under load). Both poll on one connection, 1 ms apart.');
  return out;
}

const fmt = (x, unit) => {
  if (!Number.isFinite(x)) return 'n/a';
  if (unit === 'ms') return x < 10 ? x.toFixed(2) : x.toFixed(1);
  if (unit === 'of ceiling' || unit === 'of floor' || unit === 'of unaudited' || unit === 'of primary' || unit === 'of shell') return `${x.toFixed(x < 0.1 ? 3 : 2)}x`;
  return Math.round(x).toLocaleString('en-US');
};

/** The headline as text: a table, the machine and the load average. */
export function headlineText(rows, { machine: mc, loadAvg }) {
  const header = ['figure', 'PostgreSQL 15', 'Tessera', 'ratio T/PG', 'better', 'goal'];
  const body = rows.map((r) => [
    r.figure,
    `${fmt(r.pg, r.unit)} ${r.unit}`,
    `${fmt(r.tessera, r.unit)} ${r.unit}`,
    Number.isFinite(r.ratio) ? `${r.ratio.toFixed(r.ratio < 0.1 ? 3 : 2)}x` : 'n/a',
    r.better,
    r.goal ? `${r.goal}: ${r.met === undefined ? 'n/a' : r.met ? 'met' : 'MISSED'}` : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 || i >= 4 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd();
  return [
    `Headline: Tessera (primary + DR secondary, KV v2 over HTTP) against PostgreSQL 15 (primary + async standby, pgbench) in the same run`,
    `Machine: ${mc.cpu}, ${mc.cores} cores, ${mc.memoryGb.toFixed(0)} GB, ${mc.kernel}, Node ${mc.node}; load average ${loadAvg.start.map((x) => x.toFixed(2)).join(' ')} at start, ${loadAvg.end.map((x) => x.toFixed(2)).join(' ')} at end`,
    line(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...body.map(line),
  ].join('\n');
}
