/**
 * Performance replication benchmark: a primary and two performance secondaries as real processes
 * on 127.0.0.1, in one run. Build first (`npm run build`).
 *
 *   node scripts/bench-perf.mjs                      # 3 s per phase, 4 read clients per node
 *   node scripts/bench-perf.mjs --seconds 3 --read-clients 4 --moved-secrets 1000
 *   import { benchPerf } from './bench-perf.mjs'; await benchPerf({ seconds: 3 });   // scripts/bench.mjs
 *
 * (a) Forwarded write latency: one sequential client writes 1 KiB KV v2 values on the primary
 *     (direct), then the same on performance secondary A with A's own root token (forwarded over
 *     the mTLS cluster channel; A answers once it has applied the write). p50/p99 of each, and how
 *     many forwarded answers carried the "not received within the bound" warning.
 * (b) Read scale-out: `readClients` sequential keep-alive clients per node GET 1 KiB secrets that
 *     replicated to every node. Phases of `seconds` each: the primary alone, A alone, B alone,
 *     then all three at once. Each node's CPU (from /proc) is recorded per phase, so the table shows
 *     that a secondary's reads cost the primary nothing, and each serving node's CPU per read. Two figures:
 *       - on this machine: reads/s of all three at once / reads/s of the primary alone. Every
 *         process (three nodes and this load generator) shares the same cores, so this is bounded
 *         by the host's CPU, not by replication;
 *       - projection: (primary alone + A alone + B alone) / primary alone, i.e. per-node read rate
 *         measured with the host to itself x nodes, which is what nodes on their own hosts serve
 *         when reads are local (no primary CPU per secondary read, shown by the CPU columns).
 * (c) Filter change: A gets `deny [moved]` for a mount holding `movedSecrets` secrets, then the
 *     filter is deleted. Each change reconciles A by Merkle diff; A's performance status reports
 *     `last_merkle_sync` {fetched_keys, deleted_keys}. Keys affected are counted independently:
 *     after the run the primary is stopped, its replicated Merkle leaves are read from its LevelDB
 *     and judged with the filter predicate the primary applies (dist/core/paths-filter.js), before
 *     and after the change, over the mount catalog read from sys/mounts and sys/auth. No replicated
 *     write happens after the seed, so the leaves read at the end are those the changes saw.
 * Results: tables on stdout and bench-results/bench-perf.json.
 */
import { ClassicLevel } from 'classic-level';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { agent } from './bench-dr.mjs';
import { cpuMs, percentile, table } from './bench-util.mjs';
import '@swc-node/register/esm-register';

// The typed house (test/harness) through swc: registered before it is imported.
const {
  asFixedNode, createHarness, fixedNodeOptions, freePorts, mainJs, mountKv2, must, repoRoot, startCluster, vault, waitInSync, waitUntil,
} = await import('../test/harness/index.js');

const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
const PERF = 'sys/replication/performance';
const VALUE_BYTES = 1024;
const READ_SECRETS = 256;
const WARMUP_MS = 500;
const IDS = { a: 'bench-perf-a', b: 'bench-perf-b' };

const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), maxMs: s.at(-1) ?? NaN };
};
const note = (s) => process.stderr.write(`${s}\n`);
const value = () => randomBytes(VALUE_BYTES).toString('base64url').slice(0, VALUE_BYTES);


/** `count` KV v2 writes of 1 KiB under `prefix` with `clients` sequential writers. */
async function seed(apiAddr, token, prefix, count, clients = 16) {
  const v = value();
  const agents = Array.from({ length: clients }, agent);
  let next = 0;
  try {
    await Promise.all(agents.map(async (a) => {
      for (let i = next++; i < count; i = next++) await must(vault(apiAddr, token, { agent: a }).request('PUT', `${prefix}/k${i}`, { body: { data: { v } } }), [200]);
    }));
  } finally {
    for (const a of agents) a.destroy();
  }
}

/** Waits (polling every 5 ms: the wait is timed) until `secondary` streams and has applied the primary's last WAL index. */
const inSync = async (primary, secondary, timeoutMs = 60_000) => (await waitInSync(primary, secondary, timeoutMs, 'performance', true, 5)).secondary;

/** (a) One sequential writer for `seconds` after a warm-up; latencies of 200 answers. */
async function writeLatency(apiAddr, token, prefix, seconds) {
  const a = agent();
  const v = value();
  const run = async (phase, ms) => {
    const times = [];
    let warnings = 0;
    const end = performance.now() + ms;
    for (let i = 0; performance.now() < end; i++) {
      const t0 = performance.now();
      const r = await vault(apiAddr, token, { agent: a }).request('PUT', `${prefix}/${phase}/k${i}`, { body: { data: { v } } });
      times.push(performance.now() - t0);
      if (r.status !== 200) throw new Error(`write on ${apiAddr} answered ${r.status}: ${r.text.slice(0, 200)}`);
      if (Array.isArray(r.body?.warnings) && r.body.warnings.length > 0) warnings++;
    }
    return { ...summary(times), warnings };
  };
  try {
    await run('warmup', WARMUP_MS);
    return await run('measure', seconds * 1000);
  } finally {
    a.destroy();
  }
}

/**
 * (b) One read phase: `clients` sequential readers on each node of `targets` at once, for `seconds`
 * after a warm-up. Per node: reads/s and p50/p99; per node of `all`: CPU ms used in the window.
 */
async function readPhase(targets, all, clients, seconds) {
  const run = async (ms, measure) => {
    const end = performance.now() + ms;
    const t0 = performance.now();
    const per = await Promise.all(targets.map(async (n) => {
      const agents = Array.from({ length: clients }, agent);
      const times = [];
      try {
        await Promise.all(agents.map(async (a, c) => {
          for (let i = c; performance.now() < end; i += clients) {
            const s0 = performance.now();
            const r = await vault(n.apiAddr, n.token, { agent: a }).request('GET', `secret/data/read/k${(i * 37) % READ_SECRETS}`);
            if (r.status !== 200) throw new Error(`read on ${n.name} answered ${r.status}: ${r.text.slice(0, 200)}`);
            times.push(performance.now() - s0);
          }
        }));
      } finally {
        for (const a of agents) a.destroy();
      }
      return times;
    }));
    if (!measure) return undefined;
    const elapsed = (performance.now() - t0) / 1000;
    return targets.map((n, i) => ({ node: n.name, reads: per[i].length, readsPerSec: per[i].length / elapsed, ...summary(per[i]) }));
  };
  await run(WARMUP_MS, false);
  const cpu0 = await Promise.all(all.map((n) => cpuMs(n.pid)));
  const self0 = process.cpuUsage();
  const w0 = performance.now();
  const nodes = await run(seconds * 1000, true);
  const wallMs = performance.now() - w0;
  const self = process.cpuUsage(self0);
  const cpu1 = await Promise.all(all.map((n) => cpuMs(n.pid)));
  const cpu = Object.fromEntries(all.map((n, i) => [n.name, { cpuMs: cpu1[i] - cpu0[i], cpuShare: (cpu1[i] - cpu0[i]) / wallMs }]));
  for (const r of nodes) r.nodeCpuUsPerRead = (cpu[r.node].cpuMs * 1000) / r.reads;
  const total = nodes.reduce((s, r) => s + r.readsPerSec, 0);
  return { targets: targets.map((n) => n.name), clientsPerNode: clients, nodes, totalReadsPerSec: total, cpu, loadGeneratorCpuShare: (self.user + self.system) / 1000 / wallMs };
}

/**
 * (c) Sets or deletes A's filter; resolves once A is in sync again, with the reconcile's counts and
 * time, and the time until `probe` on A answers `want` (the mount table is reloaded right after the
 * reconcile reports streaming, so this can trail the status by a few ms).
 */
async function filterChange(primary, secondary, id, body, probe, want) {
  const path = `${PERF}/primary/paths-filter/${id}`;
  const t0 = performance.now();
  if (body) await must(vault(primary.apiAddr, primary.token).request('POST', path, { body }), [204]);
  else await must(vault(primary.apiAddr, primary.token).request('DELETE', path), [204]);
  const st = await inSync(primary.apiAddr, secondary.apiAddr);
  const ms = performance.now() - t0;
  if (!st.last_merkle_sync) throw new Error(`${secondary.name} reports no last_merkle_sync after the filter change`);
  await waitUntil(`GET ${probe} on ${secondary.name} to answer ${want}`, async () => ((await vault(secondary.apiAddr, secondary.token).request('GET', probe)).status === want ? true : undefined), { timeoutMs: 10_000, intervalMs: 5 });
  const servingMs = performance.now() - t0;
  return { filter: body ?? null, reconcileMs: ms, servingMs, fetchedKeys: st.last_merkle_sync.fetched_keys, deletedKeys: st.last_merkle_sync.deleted_keys };
}

/** Mounts and auth methods of the primary's root namespace in the filter catalog's shape. */
async function catalogOf(apiAddr, token) {
  const mounts = (await must(vault(apiAddr, token).request('GET', 'sys/mounts'))).data;
  const auth = (await must(vault(apiAddr, token).request('GET', 'sys/auth'))).data;
  return [
    ...Object.entries(mounts).map(([path, m]) => ({ namespace: '', path, uuid: m.uuid, local: m.local })),
    ...Object.entries(auth).map(([path, m]) => ({ namespace: '', path: `auth/${path}`, uuid: m.uuid, local: m.local })),
  ].filter((m) => m.uuid !== '');
}

/** Replicated keys (tree 1 Merkle leaves in the stopped primary's LevelDB) whose verdict differs between two filters. */
async function keysAffected(dataDir, catalog, before, after) {
  const dist = (p) => import(pathToFileURL(join(repoRoot, 'dist', p)).href);
  const { keyFilter } = await dist('core/paths-filter.js');
  const { parseLeaf } = await dist('storage/keyspace.js');
  const [kb, ka] = [keyFilter(before, catalog), keyFilter(after, catalog)];
  const db = new ClassicLevel(dataDir, { keyEncoding: 'utf8', valueEncoding: 'buffer', createIfMissing: false });
  await db.open();
  let leaves = 0;
  let affected = 0;
  try {
    for await (const k of db.keys({ gte: 'm/1/l/', lt: 'm/1/l0' })) {
      const leaf = parseLeaf(k);
      if (!leaf) continue;
      leaves++;
      if (kb.keyAllowed(leaf.key) !== ka.keyAllowed(leaf.key)) affected++;
    }
  } finally {
    await db.close();
  }
  return { replicatedLeaves: leaves, affected };
}

/** Runs the three measurements, prints the tables, writes bench-results/bench-perf.json; resolves with the results. */
export async function benchPerf({ seconds = 3, readClients = 4, movedSecrets = 1000, command = 'benchPerf' } = {}) {
  const t0 = performance.now();
  const load0 = os.loadavg()[0];
  const r = await measurePerf({ seconds, readClients, movedSecrets });
  r.runSeconds = (performance.now() - t0) / 1000;
  // The host's 1-minute load average before and after: other work on the same cores skews every figure.
  r.hostLoadAverage = { before: load0, after: os.loadavg()[0] };
  await reportPerf(r, { seconds, command });
  return r;
}

async function measurePerf({ seconds, readClients, movedSecrets }) {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-perf-'));
  const ports = await freePorts(6);
  const spec = {
    primary: { apiPort: ports[0], clusterPort: ports[1] },
    a: { apiPort: ports[2], clusterPort: ports[3] },
    b: { apiPort: ports[4], clusterPort: ports[5] },
  };
  const h = createHarness();
  const wal = { walMaxEntries: 100_000, walMaxBytes: 268_435_456 };
  const running = [];
  let ok = false;
  try {
    // The topology builder: three nodes on fixed ports, the primary initialised (5 shares,
    // threshold 3) with secret/ and moved/ as KV v2, both performance secondaries activated, in
    // sync, each with a root token of its own from the primary's shares.
    note('perf bench: activating two performance secondaries...');
    const opts = (name) => fixedNodeOptions(scratch, name, { ...spec[name], replication: wal });
    const cluster = await startCluster(h, {
      primary: await opts('primary'),
      primaryInit: { shares: 5, threshold: 3 },
      mountKv2: true,
      performance: [{ id: IDS.a, node: await opts('a') }, { id: IDS.b, node: await opts('b') }],
      beforeEnable: ({ primary: p }) => mountKv2(p.apiAddr, p.rootToken, 'moved'),
    });
    const named = { primary: cluster.primary, a: cluster.performance[0], b: cluster.performance[1] };
    const [primary, a, b] = Object.entries(named).map(([name, n]) => Object.assign(asFixedNode(n, scratch, name, spec[name].clusterPort), { token: n.rootToken }));
    running.push(primary, a, b);
    const token = primary.token;
    note(`perf bench: seeding ${READ_SECRETS} read secrets and ${movedSecrets} secrets in moved/...`);
    await seed(primary.apiAddr, token, 'secret/data/read', READ_SECRETS);
    await seed(primary.apiAddr, token, 'moved/data/s', movedSecrets);
    await Promise.all([a, b].map((s) => inSync(primary.apiAddr, s.apiAddr)));
    for (const s of [a, b]) await must(vault(s.apiAddr, s.token).request('GET', `secret/data/read/k${READ_SECRETS - 1}`), [200]);

    // (a) forwarded vs direct write latency
    note(`perf bench: write latency, direct on the primary then forwarded through A, ${seconds} s each...`);
    const direct = await writeLatency(primary.apiAddr, token, 'secret/data/lat/direct', seconds);
    const forwarded = await writeLatency(a.apiAddr, a.token, 'secret/data/lat/forwarded', seconds);
    await Promise.all([a, b].map((s) => inSync(primary.apiAddr, s.apiAddr)));

    // (b) read scale-out
    const all = [primary, a, b];
    const phases = {};
    for (const [name, targets] of [['primary', [primary]], ['a', [a]], ['b', [b]], ['all', all]]) {
      note(`perf bench: reads, ${name === 'all' ? 'all three nodes at once' : `${name} alone`}, ${readClients} clients per node, ${seconds} s...`);
      phases[name] = await readPhase(targets, all, readClients, seconds);
    }
    const alone = ['primary', 'a', 'b'].map((k) => phases[k].totalReadsPerSec);
    const scaleOut = {
      primaryAloneReadsPerSec: alone[0],
      allThreeReadsPerSec: phases.all.totalReadsPerSec,
      ratioOnThisHost: phases.all.totalReadsPerSec / alone[0],
      projectedReadsPerSec: alone.reduce((s, x) => s + x, 0),
      projectedRatio: alone.reduce((s, x) => s + x, 0) / alone[0],
    };

    // (c) filter change on A: keys moved (A's last_merkle_sync) against keys affected (counted later)
    const catalog = await catalogOf(primary.apiAddr, token);
    note('perf bench: filter change on A (deny moved/), then filter deleted...');
    const deny = await filterChange(primary, a, IDS.a, { mode: 'deny', paths: ['moved'] }, 'moved/data/s/k0', 404);
    await must(vault(b.apiAddr, b.token).request('GET', 'moved/data/s/k0'), [200]);
    const undeny = await filterChange(primary, a, IDS.a, undefined, `moved/data/s/k${movedSecrets - 1}`, 200);

    for (const n of [a, b, primary]) {
      const exit = await n.stop();
      running.splice(running.indexOf(n), 1);
      if (exit.code !== 0) throw new Error(`${n.name} exited with ${JSON.stringify(exit)} on SIGTERM`);
    }
    const denyFilter = { mode: 'deny', paths: ['moved/'] };
    const counted = await keysAffected(primary.storageDir, catalog, undefined, denyFilter);
    const filter = {
      movedSecrets,
      replicatedLeavesOnPrimary: counted.replicatedLeaves,
      keysAffected: counted.affected,
      deny: { ...deny, keysMoved: deny.fetchedKeys + deny.deletedKeys },
      delete: { ...undeny, keysMoved: undeny.fetchedKeys + undeny.deletedKeys },
    };
    ok = true;
    return { valueBytes: VALUE_BYTES, readSecrets: READ_SECRETS, writeLatency: { direct, forwarded }, reads: phases, scaleOut, filter };
  } finally {
    await Promise.all(running.map((n) => n.stop()));
    await h.cleanup();
    if (ok) await rm(scratch, { recursive: true, force: true });
    else note(`perf bench failed; node logs kept in ${scratch}`);
  }
}


/** Prints the tables and writes bench-results/bench-perf.json; resolves with the file's path. */
async function reportPerf(r, { seconds, command }) {
  const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)}%` : 'n/a');
  const { direct, forwarded } = r.writeLatency;
  const cpus = os.cpus();
  console.log(`\nTessera performance replication (primary + 2 performance secondaries as processes on one ${cpus.length}-CPU host, ${cpus[0]?.model.trim() ?? 'unknown CPU'}; host load average ${f(r.hostLoadAverage.before, 1)} -> ${f(r.hostLoadAverage.after, 1)})`);
  console.log(table(['write (1 client, 1 KiB KV v2)', 'p50 ms', 'p99 ms', 'samples', 'note'], [
    ['direct on the primary', f(direct.p50Ms), f(direct.p99Ms), String(direct.n), ''],
    ['forwarded through secondary A', f(forwarded.p50Ms), f(forwarded.p99Ms), String(forwarded.n), `${f(forwarded.p50Ms / direct.p50Ms, 2)}x direct at p50, ${f(forwarded.p99Ms / direct.p99Ms, 2)}x at p99; ${forwarded.warnings} answered with the apply-bound warning`],
  ]));
  const phaseName = { primary: 'primary alone', a: 'secondary A alone', b: 'secondary B alone', all: 'all three at once' };
  console.log(table(['reads (KV v2 GET, 1 KiB)', 'reads/s total', 'per node reads/s', 'p50 ms', 'p99 ms', 'node CPU us/read', 'CPU primary / A / B', 'load gen CPU'], Object.entries(r.reads).map(([k, p]) => [
    `${phaseName[k]} (${p.clientsPerNode} clients/node)`,
    f(p.totalReadsPerSec, 0),
    p.nodes.map((n) => f(n.readsPerSec, 0)).join(' / '),
    p.nodes.map((n) => f(n.p50Ms)).join(' / '),
    p.nodes.map((n) => f(n.p99Ms)).join(' / '),
    p.nodes.map((n) => f(n.nodeCpuUsPerRead, 0)).join(' / '),
    ['primary', 'a', 'b'].map((n) => pct(p.cpu[n].cpuShare)).join(' / '),
    pct(p.loadGeneratorCpuShare),
  ])));
  const s = r.scaleOut;
  console.log(table(['read scale-out', 'ratio', 'reads/s', 'how'], [
    ['on this host', `${f(s.ratioOnThisHost)}x`, `${f(s.allThreeReadsPerSec, 0)} vs ${f(s.primaryAloneReadsPerSec, 0)}`, `all three at once / primary alone; every process shares ${cpus.length} cores`],
    ['projection, a host per node', `${f(s.projectedRatio)}x`, `${f(s.projectedReadsPerSec, 0)} vs ${f(s.primaryAloneReadsPerSec, 0)}`, '(primary alone + A alone + B alone) / primary alone'],
  ]));
  const fl = r.filter;
  const row = (name, c) => [name, String(c.keysMoved), String(c.fetchedKeys), String(c.deletedKeys), String(fl.keysAffected), f(c.keysMoved / fl.keysAffected, 3), f(c.reconcileMs, 0), f(c.servingMs, 0)];
  console.log(table(['filter change on A', 'keys moved', 'fetched', 'deleted', 'keys affected', 'moved/affected', 'in sync ms', 'mount state served ms'], [
    row('deny [moved] set', fl.deny),
    row('filter deleted', fl.delete),
  ]));
  console.log(`(moved/ holds ${fl.movedSecrets} secrets; ${fl.replicatedLeavesOnPrimary} replicated keys on the primary; keys affected counted from the primary's Merkle leaves with the primary's filter predicate)`);
  await mkdir(resultsDir, { recursive: true });
  const out = join(resultsDir, 'bench-perf.json');
  const doc = { date: new Date().toISOString(), command, node: process.version, cpus: cpus.length, cpuModel: cpus[0]?.model.trim(), platform: `${os.platform()} ${os.release()}`, secondsPerPhase: seconds, ...r };
  await writeFile(out, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`\nWrote ${out} (perf part took ${f(r.runSeconds, 0)} s)`);
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { seconds: { type: 'string' }, 'read-clients': { type: 'string', default: '4' }, 'moved-secrets': { type: 'string', default: '1000' } } });
  const num = (name, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${v}`);
    return n;
  };
  const seconds = num('seconds', values.seconds ?? process.env.BENCH_SECONDS ?? 3, 1);
  const readClients = num('read-clients', values['read-clients'], 1);
  const movedSecrets = num('moved-secrets', values['moved-secrets'], 1);
  const command = `node scripts/bench-perf.mjs ${process.argv.slice(2).join(' ')}`.trim();
  benchPerf({ seconds, readClients, movedSecrets, command }).then(
    () => process.exit(0),
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
