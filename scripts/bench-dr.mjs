/**
 * DR replication benchmark: a primary and a DR secondary as real processes on 127.0.0.1, in one
 * run. Build first (`npm run build`).
 *
 *   node scripts/bench-dr.mjs                           # 5 s per lag phase, 100,000 catch-up writes
 *   node scripts/bench-dr.mjs --seconds 3 --catchup-writes 20000 [--clients 16] [--poll-interval-ms 1]
 *   import { benchDr } from './bench-dr.mjs'; await benchDr({ seconds: 3 });   // scripts/bench.mjs
 *   (BENCH_SECONDS and BENCH_DR_CATCHUP_WRITES set the defaults.)
 *
 * (0) Throughput with the secondary attached and streaming: `throughputClients` (4 and 16)
 *     sequential writers of 1 KiB values, distinct keys, for `seconds` each after a 0.5 s warm-up;
 *     the memory (RSS, PSS) of both node processes is sampled meanwhile (bench-mem.mjs). This is
 *     the Tessera side of the PostgreSQL comparison in scripts/bench.mjs (bench-pg.mjs).
 * (a) Lag: one probe client writes, and from the write's 200 polls the secondary's
 *     `sys/replication/dr/status` (one request in flight on a keep-alive connection, 1 ms apart)
 *     until its last_wal reaches the primary's last_wal read right after that ack; idle, then
 *     while 16 other clients write 1 KiB values (memory sampled as in (0)). A poll sees the state at some point during its
 *     round trip, so the resolution is one status round trip (measured idle and reported) plus
 *     the poll gap.
 *     Under load the primary's last_wal after the ack includes other clients' later commits,
 *     so the figure is an upper bound there.
 * (b) Catch-up: SIGTERM the secondary, write N small values with 16 clients at full speed
 *     (the primary's write rate is the reference), start and unseal the secondary, time until
 *     its last_wal equals the primary's. The WAL bound is set above N so it streams.
 * (c) Failover: DR operation token, SIGTERM the primary, promote, then PUT with the old root token,
 *     retrying on 503/400, until a 200.
 * Results: a table on stdout and bench-results/bench-dr.json. The load and lag helpers are
 * exported for scripts/bench-scale.mjs.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sampleMemory } from './bench-mem.mjs';
import { cpuMs, percentile, table } from './bench-util.mjs';
import '@swc-node/register/esm-register';

// The typed house (test/harness) through swc: registered before it is imported.
const {
  createHarness, drOperationToken, drStatus, fixedNodeOptions, freePorts, mainJs, must, startCluster, startFixedNode, unsealWith, vault,
  waitStreaming, waitUntil,
} = await import('../test/harness/index.js');

const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
const DR = 'sys/replication/dr';
const LOAD_VALUE_BYTES = 1024;
const CATCHUP_VALUE_BYTES = 64;

export const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), maxMs: s.at(-1) ?? NaN };
};
export const agent = () => new http.Agent({ keepAlive: true, maxSockets: 1 });
const note = (s) => process.stderr.write(`${s}\n`);

/** Sequential writers on their own connections until `until()` says stop; resolves with the count. */
export async function writers({ apiAddr, token, clients, valueBytes, prefix, until }) {
  const value = randomBytes(valueBytes).toString('base64url').slice(0, valueBytes);
  const agents = Array.from({ length: clients }, agent);
  let next = 0;
  let writes = 0;
  const t0 = performance.now();
  try {
    await Promise.all(agents.map(async (a) => {
      for (let i = next++; !until(i); i = next++) {
        const r = await vault(apiAddr, token, { agent: a }).request('PUT', `secret/data/${prefix}/k${i}`, { body: { data: { v: value } } });
        if (r.status !== 200) throw new Error(`write answered ${r.status}: ${r.text.slice(0, 200)}`);
        writes++;
      }
    }));
  } finally {
    for (const a of agents) a.destroy();
  }
  return { writes, seconds: (performance.now() - t0) / 1000 };
}

/** Round trips of an idle status call on the secondary: the floor of every lag figure. */
export async function statusFloor(secondaryAddr, samples = 300) {
  const a = agent();
  const times = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await drStatus(secondaryAddr, { agent: a });
    times.push(performance.now() - t0);
  }
  a.destroy();
  return summary(times);
}

/** One lag sample: ms from a write's ack on the primary to its index being visible on the secondary. */
async function lagSample(ctx, i) {
  const r = await vault(ctx.primary, ctx.token, { agent: ctx.writeAgent }).request('PUT', `secret/data/bench-dr/probe/${ctx.phase}/${i}`, { body: { data: { i } } });
  const tAck = performance.now();
  if (r.status !== 200) throw new Error(`probe write answered ${r.status}: ${r.text.slice(0, 200)}`);
  let target;
  let failed;
  void drStatus(ctx.primary, { agent: ctx.primaryAgent }).then((s) => (target = s.last_wal), (e) => (failed = e));
  const seen = [];
  for (;;) {
    const s = await drStatus(ctx.secondary, { agent: ctx.pollAgent });
    seen.push([performance.now(), s.last_wal]);
    if (failed) throw failed;
    const hit = target === undefined ? undefined : seen.find(([, wal]) => wal >= target);
    if (hit) return { lagMs: hit[0] - tAck, polls: seen.length };
    if (ctx.pollIntervalMs > 0) await delay(ctx.pollIntervalMs);
  }
}

export async function lagPhase(ctx, phase, seconds) {
  const lags = [];
  let polls = 0;
  const end = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < end; i++) {
    const s = await lagSample({ ...ctx, phase }, i);
    lags.push(s.lagMs);
    polls += s.polls;
  }
  return { ...summary(lags), pollsPerSample: polls / lags.length };
}

/** `fn` with fresh keep-alive agents for the probe write, the primary's status and the polls. */
export async function withProbe(base, fn) {
  const ctx = { ...base, writeAgent: agent(), primaryAgent: agent(), pollAgent: agent() };
  try {
    return await fn(ctx);
  } finally {
    for (const a of [ctx.writeAgent, ctx.primaryAgent, ctx.pollAgent]) a.destroy();
  }
}

/** Runs the three measurements, prints the table, writes bench-results/bench-dr.json; resolves with the results. */
export async function benchDr({ seconds = 5, catchupWrites = Number(process.env.BENCH_DR_CATCHUP_WRITES ?? 100_000), clients = 16, throughputClients = [4, 16], pollIntervalMs = 1, command = 'benchDr' } = {}) {
  const r = await measureDr({ seconds, catchupWrites, clients, throughputClients, pollIntervalMs });
  await reportDr(r, { seconds, command });
  return r;
}

async function measureDr({ seconds, catchupWrites, clients, throughputClients, pollIntervalMs }) {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-dr-'));
  const [pApi, pCluster, sApi, sCluster] = await freePorts(4);
  // Room for every write of the run in the retained WAL, so catch-up streams instead of reconciling.
  const wal = { walMaxEntries: Math.max(1_000_000, catchupWrites * 4), walMaxBytes: 4 * 1024 ** 3 };
  const spec = { primary: { apiPort: pApi, clusterPort: pCluster }, secondary: { apiPort: sApi, clusterPort: sCluster } };
  const h = createHarness();
  const start = (name) => startFixedNode(h, scratch, name, { ...spec[name], replication: wal });
  const running = [];
  let ok = false;
  try {
    // The topology builder: both nodes on fixed ports, the primary initialised (5 shares,
    // threshold 3) with secret/ as KV v2, the secondary activated and in sync.
    const opts = async (name) => fixedNodeOptions(scratch, name, { ...spec[name], replication: wal });
    const cluster = await startCluster(h, { primary: await opts('primary'), primaryInit: { shares: 5, threshold: 3 }, mountKv2: true, dr: [{ id: 'bench-dr', node: await opts('secondary') }] });
    let primary = cluster.primary;
    let secondary = cluster.dr[0];
    running.push(primary, secondary);
    const { rootToken: token, unsealKeys: keys } = primary;
    const mem = () => sampleMemory({ primary: { pid: primary.pid }, secondary: { pid: secondary.pid } });

    // (0) throughput with the secondary streaming
    const throughput = [];
    for (const n of throughputClients) {
      note(`DR bench: durable writes with the secondary streaming, ${n} clients, ${seconds} s...`);
      const timed = (ms) => {
        const end = performance.now() + ms;
        return () => performance.now() >= end;
      };
      const base = { apiAddr: primary.apiAddr, token, clients: n, valueBytes: LOAD_VALUE_BYTES };
      await writers({ ...base, prefix: `bench-dr/warmup/n${n}`, until: timed(500) });
      const m = mem();
      const cpu = async () => ({ primary: await cpuMs(primary.pid), secondary: await cpuMs(secondary.pid) });
      const cpu0 = await cpu();
      const client0 = process.cpuUsage();
      const w = await writers({ ...base, prefix: `bench-dr/throughput/n${n}`, until: timed(seconds * 1000) });
      const client = process.cpuUsage(client0);
      const cpu1 = await cpu();
      // Both nodes, every thread: comparable to PostgreSQL's primary + standby processes.
      throughput.push({ clients: n, writes: w.writes, seconds: w.seconds, writesPerSec: w.writes / w.seconds, serverCpuUsPerWrite: ((cpu1.primary + cpu1.secondary - cpu0.primary - cpu0.secondary) * 1000) / w.writes,
        // Each process's share: what the DR secondary's receive and apply cost on their own.
        primaryCpuUsPerWrite: ((cpu1.primary - cpu0.primary) * 1000) / w.writes,
        secondaryCpuUsPerWrite: ((cpu1.secondary - cpu0.secondary) * 1000) / w.writes,
        // The load generator's CPU (this process, memory sampling included): it shares the machine.
        clientCpuUsPerWrite: (client.user + client.system) / w.writes, memory: await m.stop() });
    }

    // (a) lag
    note('DR bench: status round-trip floor...');
    const floor = await statusFloor(secondary.apiAddr);
    const base = { primary: primary.apiAddr, secondary: secondary.apiAddr, token, pollIntervalMs };
    note(`DR bench: lag, idle, ${seconds} s...`);
    const idle = await withProbe(base, (ctx) => lagPhase(ctx, 'idle', seconds));
    note(`DR bench: lag under ${clients}-client write load, ${seconds} s...`);
    let stop = false;
    const loadMem = mem();
    const load = writers({ apiAddr: primary.apiAddr, token, clients, valueBytes: LOAD_VALUE_BYTES, prefix: 'bench-dr/load', until: () => stop });
    const loaded = await withProbe(base, (ctx) => lagPhase(ctx, 'load', seconds)).finally(() => (stop = true));
    const loadRun = await load;
    const underLoad = { ...loaded, loadClients: clients, loadWritesPerSec: loadRun.writes / loadRun.seconds, memory: await loadMem.stop() };

    // (b) catch-up
    await waitUntil('the secondary to catch up after the load', async () => {
      const [p, s] = [await drStatus(primary.apiAddr), await drStatus(secondary.apiAddr)];
      return s.last_wal === p.last_wal ? true : undefined;
    }, { timeoutMs: 120_000 });
    note('DR bench: secondary stopped (SIGTERM)...');
    const stopExit = await secondary.stop();
    running.splice(running.indexOf(secondary), 1);
    const wal0 = (await drStatus(primary.apiAddr)).last_wal;
    note(`DR bench: ${catchupWrites} writes of ${CATCHUP_VALUE_BYTES} B with ${clients} clients...`);
    const burst = await writers({ apiAddr: primary.apiAddr, token, clients, valueBytes: CATCHUP_VALUE_BYTES, prefix: 'bench-dr/catchup', until: (i) => i >= catchupWrites });
    const wal1 = (await drStatus(primary.apiAddr)).last_wal;
    note(`DR bench: ${burst.writes} writes in ${burst.seconds.toFixed(1)} s; restarting the secondary...`);
    const tSpawn = performance.now();
    secondary = await start('secondary');
    running.push(secondary);
    const tListening = performance.now();
    await unsealWith(secondary.apiAddr, keys);
    const tUnsealed = performance.now();
    const pollAgent = agent();
    const states = new Set();
    let merkleSync = false;
    const catchup = await waitUntil('the secondary to catch up', async () => {
      const s = await drStatus(secondary.apiAddr, { agent: pollAgent });
      states.add(s.state);
      if (s.last_merkle_sync) merkleSync = true;
      return s.last_wal >= wal1 ? performance.now() : undefined;
    }, { timeoutMs: 30 * 60_000, intervalMs: 1 });
    pollAgent.destroy();
    const catchupSeconds = (catchup - tUnsealed) / 1000;
    const entries = wal1 - wal0;
    const primaryWritesPerSec = burst.writes / burst.seconds;
    const catchUp = {
      writes: burst.writes,
      valueBytes: CATCHUP_VALUE_BYTES,
      walEntries: entries,
      primarySeconds: burst.seconds,
      primaryWritesPerSec,
      primaryWalEntriesPerSec: entries / burst.seconds,
      secondaryStopExit: stopExit,
      restartToListeningMs: tListening - tSpawn,
      unsealMs: tUnsealed - tListening,
      catchupSeconds,
      catchupFromSpawnSeconds: (catchup - tSpawn) / 1000,
      catchupWalEntriesPerSec: entries / catchupSeconds,
      catchupWritesPerSec: burst.writes / catchupSeconds,
      ratioToPrimaryWriteRate: burst.writes / catchupSeconds / primaryWritesPerSec,
      secondaryStatesSeen: [...states],
      reconciled: merkleSync || states.has('merkle-diff') || states.has('merkle-sync'),
    };

    // (c) promote to first acknowledged write
    await waitStreaming(secondary.apiAddr);
    const opToken = await drOperationToken(secondary.apiAddr, keys.slice(0, 3));
    note('DR bench: primary stopped (SIGTERM); promoting the secondary...');
    await primary.stop();
    running.splice(running.indexOf(primary), 1);
    primary = undefined;
    const wAgent = agent();
    const t0 = performance.now();
    await must(vault(secondary.apiAddr).request('POST', `${DR}/secondary/promote`, { body: { dr_operation_token: opToken } }), [204]);
    const tPromoted = performance.now();
    let retries = 0;
    for (;;) {
      const r = await vault(secondary.apiAddr, token, { agent: wAgent }).request('PUT', 'secret/data/bench-dr/after-promote', { body: { data: { ok: true } } });
      if (r.status === 200) break;
      if (r.status !== 503 && r.status !== 400) throw new Error(`write after promote answered ${r.status}: ${r.text.slice(0, 200)}`);
      if (performance.now() - t0 > 60_000) throw new Error(`no write accepted within 60 s of promote (last ${r.status}: ${r.text.slice(0, 200)})`);
      retries++;
    }
    const tWrite = performance.now();
    wAgent.destroy();
    // No operation-token/delete: the promoted node is no longer a DR secondary (it answers 400),
    // and the whole cluster is thrown away below.
    const promote = { promoteCallMs: tPromoted - t0, promoteToFirstWriteMs: tWrite - t0, retries };

    await secondary.stop();
    running.length = 0;
    ok = true;
    return { throughput, pollIntervalMs, statusRoundTrip: floor, lagIdle: idle, lagUnderLoad: underLoad, catchUp, promote, walMaxEntries: wal.walMaxEntries };
  } finally {
    await Promise.all(running.map((n) => n.stop()));
    await h.cleanup();
    if (ok) await rm(scratch, { recursive: true, force: true });
    else note(`DR bench failed; node logs kept in ${scratch}`);
  }
}


/** Prints the table and writes bench-results/bench-dr.json; resolves with the file's path. */
async function reportDr(r, { seconds, command }) {
  const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const c = r.catchUp;
  console.log(`\nTessera DR replication (primary + DR secondary processes on one ${os.cpus().length}-CPU host)`);
  const memCell = (m) => `${f(m.primary.maxRssMb, 0)} / ${f(m.secondary.maxRssMb, 0)} MB (end ${f(m.primary.endRssMb, 0)} / ${f(m.secondary.endRssMb, 0)})`;
  console.log(table(['durable writes, secondary streaming', 'writes/s', 'RSS max primary / secondary'], [
    ...r.throughput.map((t) => [`${t.clients} clients, ${LOAD_VALUE_BYTES} B values`, f(t.writesPerSec, 0), memCell(t.memory)]),
    [`during the lag phase under ${r.lagUnderLoad.loadClients} writers`, f(r.lagUnderLoad.loadWritesPerSec, 0), memCell(r.lagUnderLoad.memory)],
  ]));
  console.log(table(['measure', 'p50 ms', 'p99 ms', 'samples', 'note'], [
    ['status round trip, idle (floor)', f(r.statusRoundTrip.p50Ms), f(r.statusRoundTrip.p99Ms), String(r.statusRoundTrip.n), `lag resolution: this + ${r.pollIntervalMs} ms poll gap`],
    ['lag ack -> visible, idle', f(r.lagIdle.p50Ms), f(r.lagIdle.p99Ms), String(r.lagIdle.n), `${f(r.lagIdle.p50Ms / r.statusRoundTrip.p50Ms, 1)}x floor at p50`],
    [`lag ack -> visible, ${r.lagUnderLoad.loadClients} writers`, f(r.lagUnderLoad.p50Ms), f(r.lagUnderLoad.p99Ms), String(r.lagUnderLoad.n), `load ${f(r.lagUnderLoad.loadWritesPerSec, 0)} writes/s of ${LOAD_VALUE_BYTES} B`],
  ]));
  console.log(table(['catch-up', 'value'], [
    ['writes while the secondary was down', `${c.writes} (${c.walEntries} WAL entries)`],
    ['primary write rate (reference)', `${f(c.primaryWritesPerSec, 0)} writes/s, ${f(c.primaryWalEntriesPerSec, 0)} entries/s over ${f(c.primarySeconds, 1)} s`],
    ['secondary restart to listening / unseal', `${f(c.restartToListeningMs, 0)} ms / ${f(c.unsealMs, 0)} ms`],
    ['catch-up from unsealed', `${f(c.catchupSeconds, 2)} s (${f(c.catchupFromSpawnSeconds, 2)} s from spawn)`],
    ['catch-up rate', `${f(c.catchupWalEntriesPerSec, 0)} entries/s, ${f(c.catchupWritesPerSec, 0)} writes/s`],
    ['catch-up / primary write rate', `${f(c.ratioToPrimaryWriteRate, 1)}x`],
    ['states seen; reconciled?', `${c.secondaryStatesSeen.join(', ')}; ${c.reconciled ? 'YES (merkle)' : 'no, streamed'}`],
    ['promote -> first acknowledged write', `${f(r.promote.promoteToFirstWriteMs, 1)} ms (promote call ${f(r.promote.promoteCallMs, 1)} ms, ${r.promote.retries} retries)`],
  ]));
  await mkdir(resultsDir, { recursive: true });
  const out = join(resultsDir, 'bench-dr.json');
  const doc = { date: new Date().toISOString(), command, node: process.version, cpus: os.cpus().length, platform: `${os.platform()} ${os.release()}`, secondsPerLagPhase: seconds, ...r };
  await writeFile(out, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`\nWrote ${out}`);
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { seconds: { type: 'string' }, 'catchup-writes': { type: 'string' }, clients: { type: 'string', default: '16' }, 'poll-interval-ms': { type: 'string', default: '1' } },
  });
  const num = (name, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${v}`);
    return n;
  };
  const seconds = num('seconds', values.seconds ?? process.env.BENCH_SECONDS ?? 5, 1);
  const catchupWrites = num('catchup-writes', values['catchup-writes'] ?? process.env.BENCH_DR_CATCHUP_WRITES ?? 100_000, 1);
  const clients = num('clients', values.clients, 1);
  const pollIntervalMs = num('poll-interval-ms', values['poll-interval-ms'], 0);
  const t0 = Date.now();
  const command = `node scripts/bench-dr.mjs ${process.argv.slice(2).join(' ')}`.trim();
  benchDr({ seconds, catchupWrites, clients, pollIntervalMs, command }).then(
    () => {
      console.log(`(run took ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
      process.exit(0);
    },
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
