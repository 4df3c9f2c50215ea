/**
 * Scale benchmark: does the cost of a write, of replication lag and of a reconcile stay flat as the
 * data set grows? A primary and a DR secondary as real processes on 127.0.0.1, once per key count.
 * Build first (`npm run build`).
 *
 *   node scripts/bench-scale.mjs                          # 10,000 and 1,000,000 keys, 3 s phases
 *   node scripts/bench-scale.mjs --keys 10000,100000 --seconds 5
 *   import { benchScale } from './bench-scale.mjs'; await benchScale({ keys: [10_000], seconds: 3 });
 *
 * Per key count, on a fresh pair:
 * (1) Preload: the primary is initialised (KV v2 at secret/, KV v1 at kv/, DR primary enabled) and
 *     stopped; a child process then opens its data dir with the node's own code from dist/
 *     (startNode + unseal, no listener traffic) and writes N KV v1 secrets `kv/scale/k<i>`
 *     through VaultCore.logical, the path an HTTP write takes after auth: same engine,
 *     encryption, WAL entry and Merkle update per write; 512 writes in flight, so the group
 *     commit packs hundreds per fsynced batch. KV v1 so that N secrets are exactly N stored keys
 *     (a KV v2 secret is two: metadata + version). The primary process is restarted and two
 *     preloaded secrets are read back over HTTP. The load of (3) writes KV v2, as bench-dr.mjs.
 * (2) Activation: a fresh secondary is activated; it reconciles the whole data set by Merkle sync
 *     (time to `stream-wals`, keys and payload bytes moved, memory of both processes meanwhile).
 * (3) Load with the secondary streaming: durable writes/s of 16 clients (1 KiB values), lag
 *     ack -> secondary last_wal idle and under 16 writers, memory sampled (bench-dr.mjs helpers).
 * (4) Reconcile of one changed key: the secondary stopped, the primary rewrites one KV v1 key
 *     (one stored key) more times than its WAL retains (wal_max_entries is WAL_BOUND), the
 *     secondary restarted must Merkle diff + sync: keys and payload bytes moved
 *     (`last_merkle_sync`, `last_merkle_sync_bytes` in sys/replication/dr/status), time, and the
 *     two Merkle roots compared.
 * BENCH_SCALE_KEEP=1 keeps the scratch dir (data, node logs); a failed run always keeps it.
 * Results: a table on stdout (ratios largest / smallest key count) and bench-results/bench-scale.json.
 */
import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { sampleMemory } from './bench-mem.mjs';
import { agent, lagPhase, statusFloor, withProbe, writers } from './bench-dr.mjs';
import { table } from './bench-util.mjs';
import '@swc-node/register/esm-register';

// The typed house (test/harness) through swc: registered before it is imported.
const {
  activateSecondary, createHarness, drStatus, enablePrimary, freePorts, initAndUnseal, mainJs, metricSample, mountKv2, must, repoRoot, secondaryToken,
  startFixedNode, unsealWith, vault, waitStreaming, waitUntil,
} = await import('../test/harness/index.js');

const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
const self = fileURLToPath(import.meta.url);
const LOAD_VALUE_BYTES = 1024;
/** Retained WAL entries: far above the streaming lag under load, far below the reconcile's rewrites. */
const WAL_BOUND = 2_000;
const PRELOAD_IN_FLIGHT = 512;
const PRELOAD_PAD = 'p'.repeat(48);
const CHANGED = 'kv/scale/changed';
const note = (s) => process.stderr.write(`${s}\n`);
const preloadValue = (i) => ({ i, pad: PRELOAD_PAD });

/** Runs inside the forked child: opens the stopped primary's data dir with the node's own code and writes N secrets. */
async function preloadChild({ configPath, unsealKeys, keys }) {
  const dist = (p) => pathToFileURL(join(repoRoot, 'dist', p)).href;
  const { loadConfig } = await import(dist('node/config.js'));
  const { toNodeConfig } = await import(dist('node/index.js'));
  const { startNode: startInProcess } = await import(dist('node/node.js'));
  const { createLogger } = await import(dist('node/logger.js'));
  const node = await startInProcess(toNodeConfig(await loadConfig(configPath)), { logger: createLogger({ level: 'warn' }) });
  try {
    for (const k of unsealKeys) if (!(await node.core.unseal(k, false)).sealed) break;
    if (node.core.sealed()) throw new Error('preload: still sealed');
    let next = 0;
    let done = 0;
    const t0 = performance.now();
    let mark = t0;
    await Promise.all(Array.from({ length: PRELOAD_IN_FLIGHT }, async () => {
      for (let i = next++; i < keys; i = next++) {
        const r = await node.core.logical('', `kv/scale/k${i}`, 'update', preloadValue(i));
        if (r === undefined) throw new Error('preload: kv/ is not mounted');
        if (++done % 100_000 === 0) {
          const now = performance.now();
          process.stderr.write(`  preload: ${done} keys, ${(100_000 / ((now - mark) / 1000)).toFixed(0)} keys/s\n`);
          mark = now;
        }
      }
    }));
    const seconds = (performance.now() - t0) / 1000;
    return { keys: done, seconds, keysPerSec: done / seconds, lastWal: Number(node.engine.lastGuard().index), childMaxRssMb: process.resourceUsage().maxRSS / 1024 };
  } finally {
    await node.stop();
  }
}

/** Forks this script as the preload child; resolves with its report. */
function preload(job) {
  return new Promise((resolve, reject) => {
    const child = fork(self, ['--preload-child'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let result;
    child.once('message', (m) => (result = m));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (result?.ok) resolve(result.value);
      else reject(new Error(`preload child failed (${code ?? signal}): ${result?.error ?? 'no report'}`));
    });
    child.send(job); // unseal keys over IPC, never on a command line
  });
}

const duMb = (dir) => {
  try {
    return Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) / 1024;
  } catch {
    return NaN;
  }
};

const syncsLogged = async (logFile) => ((await readFile(logFile, 'utf8').catch(() => '')).match(/merkle-sync finished/g) ?? []).length;

/** Waits until the secondary has applied the primary's last index; resolves with ms waited and states seen. */
async function caughtUp(primaryAddr, secondaryAddr, what, timeoutMs) {
  const a = agent();
  const states = new Set();
  const t0 = performance.now();
  try {
    const target = (await drStatus(primaryAddr)).last_wal;
    await waitUntil(what, async () => {
      const s = await drStatus(secondaryAddr, { agent: a });
      states.add(s.state);
      return s.state === 'stream-wals' && s.last_wal >= target ? true : undefined;
    }, { timeoutMs, intervalMs: 5 });
    return { ms: performance.now() - t0, states: [...states] };
  } finally {
    a.destroy();
  }
}

async function measureScale({ keys, seconds, clients }) {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-scale-'));
  const [pApi, pCluster, sApi, sCluster] = await freePorts(4);
  const wal = { walMaxEntries: WAL_BOUND, walMaxBytes: 1024 ** 3 };
  const spec = { primary: { apiPort: pApi, clusterPort: pCluster }, secondary: { apiPort: sApi, clusterPort: sCluster } };
  const configs = { primary: join(scratch, 'primary', 'config.hcl'), secondary: join(scratch, 'secondary', 'config.hcl') };
  const logs = { primary: join(scratch, 'primary.log'), secondary: join(scratch, 'secondary.log') };
  const h = createHarness();
  const start = (name) => startFixedNode(h, scratch, name, { ...spec[name], replication: wal, logLevel: 'info' });
  const running = new Set();
  const up = async (name) => {
    const n = await start(name);
    running.add(n);
    return n;
  };
  const down = async (n) => {
    running.delete(n);
    return n.stop(60_000);
  };
  let ok = false;
  try {
    // (1) set up, stop, preload in a child, restart
    let primary = await up('primary');
    const { rootToken: token, keys: unsealKeys, keysBase64: unsealB64 } = await initAndUnseal(primary.apiAddr, { shares: 5, threshold: 3 });
    await mountKv2(primary.apiAddr, token);
    await must(vault(primary.apiAddr, token).post('sys/mounts/kv', { type: 'kv', options: { version: '1' } }));
    await enablePrimary(primary.apiAddr, token);
    await down(primary);
    note(`scale bench (${keys} keys): preloading through the node's own write path...`);
    const pre = await preload({ configPath: configs.primary, unsealKeys: unsealB64.slice(0, 3), keys });
    primary = await up('primary');
    await unsealWith(primary.apiAddr, unsealKeys);
    for (const i of [0, keys - 1]) {
      const r = await must(vault(primary.apiAddr, token).request('GET', `kv/scale/k${i}`), [200]);
      if (JSON.stringify(r.data) !== JSON.stringify(preloadValue(i))) throw new Error(`preloaded k${i} reads back as ${JSON.stringify(r.data)}`);
    }
    await must(vault(primary.apiAddr, token).request('PUT', CHANGED, { body: { v: 'before' } }));
    const preloadInfo = { ...pre, spotChecked: [0, keys - 1].map((i) => `kv/scale/k${i}`), primaryDataMb: duMb(primary.storageDir) };

    // (2) activation: the whole data set by Merkle sync
    let secondary = await up('secondary');
    const sInit = await initAndUnseal(secondary.apiAddr);
    const memOf = () => sampleMemory({ primary: { pid: primary.pid }, secondary: { pid: secondary.pid } });
    note(`scale bench (${keys} keys): activating the DR secondary (full Merkle sync)...`);
    const actMem = memOf();
    const tAct = performance.now();
    await activateSecondary(secondary.apiAddr, sInit.rootToken, await secondaryToken(primary.apiAddr, token, 'bench-scale'));
    const initialSync = await waitStreaming(secondary.apiAddr, { timeoutMs: 30 * 60_000 });
    const activation = {
      seconds: (performance.now() - tAct) / 1000,
      keysMoved: (initialSync.last_merkle_sync?.fetched_keys ?? 0) + (initialSync.last_merkle_sync?.deleted_keys ?? 0),
      lastMerkleSync: initialSync.last_merkle_sync ?? null,
      bytesMoved: initialSync.last_merkle_sync_bytes ?? null,
      memory: await actMem.stop(),
      secondaryDataMb: duMb(secondary.storageDir),
    };

    // (3) throughput and lag with the secondary streaming; memory over the whole stretch too
    const sustained = memOf();
    const timed = (ms) => {
      const end = performance.now() + ms;
      return () => performance.now() >= end;
    };
    const base = { apiAddr: primary.apiAddr, token, clients, valueBytes: LOAD_VALUE_BYTES };
    note(`scale bench (${keys} keys): durable writes, ${clients} clients, ${seconds} s...`);
    await writers({ ...base, prefix: 'bench-scale/warmup', until: timed(500) });
    const tpMem = memOf();
    const w = await writers({ ...base, prefix: 'bench-scale/throughput', until: timed(seconds * 1000) });
    const throughput = { clients, writes: w.writes, seconds: w.seconds, writesPerSec: w.writes / w.seconds, memory: await tpMem.stop() };
    const floor = await statusFloor(secondary.apiAddr);
    const probe = { primary: primary.apiAddr, secondary: secondary.apiAddr, token, pollIntervalMs: 1 };
    note(`scale bench (${keys} keys): lag idle and under ${clients} writers, ${seconds} s each...`);
    const lagIdle = await withProbe(probe, (ctx) => lagPhase(ctx, 'idle', seconds));
    let stop = false;
    const loadMem = memOf();
    const load = writers({ ...base, prefix: 'bench-scale/load', until: () => stop });
    const loaded = await withProbe(probe, (ctx) => lagPhase(ctx, 'load', seconds)).finally(() => (stop = true));
    const loadRun = await load;
    const lagUnderLoad = { ...loaded, loadClients: clients, loadWritesPerSec: loadRun.writes / loadRun.seconds, memory: await loadMem.stop() };
    const settle = await caughtUp(primary.apiAddr, secondary.apiAddr, 'the secondary to catch up after the load', 120_000);
    const sustainedMemory = await sustained.stop();
    // Where each node's memory is after the loads: V8's heap, and native memory Node accounts
    // (Buffers' backing stores); the rest of anonymous RSS is LevelDB's and the allocator's.
    const heapOf = async (addr) => {
      const text = (await vault(addr, token).get('sys/metrics?format=prometheus')).text;
      const mb = (name) => metricSample(text, `tessera_process_${name}`) / 1024 ** 2;
      return { heapTotalMb: mb('nodejs_heap_size_total_bytes'), heapUsedMb: mb('nodejs_heap_size_used_bytes'), externalMb: mb('nodejs_external_memory_bytes') };
    };
    const heaps = { primary: await heapOf(primary.apiAddr), secondary: await heapOf(secondary.apiAddr) };
    const syncsBeforeReconcile = await syncsLogged(logs.secondary);

    // (4) one changed key, past the retained WAL
    note(`scale bench (${keys} keys): secondary stopped; rewriting ${CHANGED} ${WAL_BOUND + 500} times...`);
    await down(secondary);
    const rewrites = WAL_BOUND + 500;
    const a = agent();
    for (let i = 0; i < rewrites; i++) await must(vault(primary.apiAddr, token, { agent: a }).request('PUT', CHANGED, { body: { v: `after-${i}` } }));
    a.destroy();
    const pStatus = await drStatus(primary.apiAddr);
    secondary = await up('secondary');
    const tUnseal = performance.now();
    await unsealWith(secondary.apiAddr, unsealKeys);
    const recMem = memOf();
    const rec = await caughtUp(primary.apiAddr, secondary.apiAddr, 'the secondary to reconcile', 10 * 60_000);
    const sStatus = await drStatus(secondary.apiAddr);
    const syncs = (await syncsLogged(logs.secondary)) - syncsBeforeReconcile;
    const reconcileRun = {
      rewrites,
      walBound: WAL_BOUND,
      primaryLastWal: pStatus.last_wal,
      secondsFromUnseal: (performance.now() - tUnseal) / 1000,
      merkleSyncs: syncs,
      statesSeen: rec.states,
      lastMerkleSync: sStatus.last_merkle_sync ?? null,
      keysMoved: (sStatus.last_merkle_sync?.fetched_keys ?? 0) + (sStatus.last_merkle_sync?.deleted_keys ?? 0),
      bytesMoved: sStatus.last_merkle_sync_bytes ?? null,
      rootsEqual: sStatus.merkle_root === (await drStatus(primary.apiAddr)).merkle_root,
      memory: await recMem.stop(),
    };
    if (syncs !== 1) throw new Error(`expected exactly one merkle sync after the restart, the secondary logged ${syncs}`);

    await Promise.all([...running].map(down));
    ok = true;
    return {
      keys, preload: preloadInfo, activation, throughput, statusRoundTrip: floor, lagIdle, lagUnderLoad,
      settleAfterLoad: settle, syncsDuringLoad: syncsBeforeReconcile - 1, sustainedMemory, heaps, reconcile: reconcileRun,
    };
  } finally {
    await Promise.all([...running].map(down));
    await h.cleanup();
    if (!ok) note(`scale bench failed; node logs kept in ${scratch}`);
    else if (process.env.BENCH_SCALE_KEEP) note(`scale bench: data and node logs kept in ${scratch}`);
    else await rm(scratch, { recursive: true, force: true });
  }
}

const maxOf = (m, k) => Math.max(m.primary[k], m.secondary[k]);

/** Ratios of the largest run to the smallest: 1.0 is flat; the goal is within 20% (0.8..1.2 for rates). */
function ratios(small, big) {
  const r = (f) => f(big) / f(small);
  return {
    writesPerSec: r((x) => x.throughput.writesPerSec),
    lagIdleP50: r((x) => x.lagIdle.p50Ms),
    lagLoadP50: r((x) => x.lagUnderLoad.p50Ms),
    lagLoadP99: r((x) => x.lagUnderLoad.p99Ms),
    primaryMaxRss: r((x) => x.sustainedMemory.primary.maxRssMb),
    secondaryMaxRss: r((x) => x.sustainedMemory.secondary.maxRssMb),
    primaryMaxAnon: r((x) => x.sustainedMemory.primary.maxAnonMb),
    secondaryMaxAnon: r((x) => x.sustainedMemory.secondary.maxAnonMb),
    reconcileBytes: r((x) => x.reconcile.bytesMoved),
    reconcileSeconds: r((x) => x.reconcile.secondsFromUnseal),
  };
}

export async function benchScale({ keys = [10_000, 1_000_000], seconds = 3, clients = 16, command = 'benchScale' } = {}) {
  const t0 = performance.now();
  const load0 = os.loadavg();
  const runs = [];
  for (const n of keys) runs.push(await measureScale({ keys: n, seconds, clients }));
  const sorted = [...runs].sort((x, y) => x.keys - y.keys);
  const r = { runs, ratios: sorted.length > 1 ? { of: `${sorted.at(-1).keys}/${sorted[0].keys}`, ...ratios(sorted[0], sorted.at(-1)) } : null, loadAvgStart: load0, loadAvgEnd: os.loadavg(), totalSeconds: (performance.now() - t0) / 1000 };
  await report(r, { seconds, command });
  return r;
}

async function report(r, { seconds, command }) {
  const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const mem = (m) => `${f(m.primary.maxRssMb, 0)} / ${f(m.secondary.maxRssMb, 0)} (PSS ${f(m.primary.maxPssMb, 0)} / ${f(m.secondary.maxPssMb, 0)}; anon ${f(m.primary.maxAnonMb, 0)} / ${f(m.secondary.maxAnonMb, 0)})`;
  const cols = r.runs.map((x) => `${x.keys.toLocaleString('en')} keys`);
  const row = (label, fn) => [label, ...r.runs.map(fn)];
  console.log(`\nTessera at scale (primary + DR secondary processes on one ${os.cpus().length}-CPU host; load avg ${r.loadAvgStart.map((x) => x.toFixed(2)).join(' ')} at start)`);
  console.log(table(['figure', ...cols], [
    row('preload (in-process, node write path)', (x) => `${f(x.preload.seconds, 1)} s, ${f(x.preload.keysPerSec, 0)}/s`),
    row('primary data dir', (x) => `${f(x.preload.primaryDataMb, 0)} MB`),
    row('activation: full Merkle sync to streaming', (x) => `${f(x.activation.seconds, 1)} s, ${x.activation.keysMoved} keys`),
    row('activation: payload moved', (x) => `${f(x.activation.bytesMoved / 1024 ** 2, 1)} MB`),
    row('activation: RSS max P / S MB', (x) => mem(x.activation.memory)),
    row(`durable writes/s, ${r.runs[0]?.throughput.clients} clients, streaming`, (x) => f(x.throughput.writesPerSec, 0)),
    row('status round trip p50 ms (lag floor)', (x) => f(x.statusRoundTrip.p50Ms)),
    row('lag idle p50 / p99 ms', (x) => `${f(x.lagIdle.p50Ms)} / ${f(x.lagIdle.p99Ms)}`),
    row('lag under load p50 / p99 ms', (x) => `${f(x.lagUnderLoad.p50Ms)} / ${f(x.lagUnderLoad.p99Ms)}`),
    row('load writes/s during lag phase', (x) => f(x.lagUnderLoad.loadWritesPerSec, 0)),
    row('RSS max P / S MB, load phases', (x) => mem(x.sustainedMemory)),
    row('after the loads, V8 heap total (used) / Buffers, P; S MB', (x) => ['primary', 'secondary'].map((k) => `${f(x.heaps[k].heapTotalMb, 0)} (${f(x.heaps[k].heapUsedMb, 0)}) / ${f(x.heaps[k].externalMb, 0)}`).join('; ')),
    row('RSS end P / S MB, load phases', (x) => `${f(x.sustainedMemory.primary.endRssMb, 0)} / ${f(x.sustainedMemory.secondary.endRssMb, 0)}`),
    row('reconcile 1 changed key: keys moved', (x) => `${x.reconcile.keysMoved} (${JSON.stringify(x.reconcile.lastMerkleSync)})`),
    row('reconcile 1 changed key: payload bytes', (x) => String(x.reconcile.bytesMoved)),
    row('reconcile: unseal -> streaming', (x) => `${f(x.reconcile.secondsFromUnseal, 2)} s, roots equal ${x.reconcile.rootsEqual}`),
  ]));
  if (r.ratios) {
    console.log(`\nratios ${r.ratios.of} (1.00 = flat):`);
    console.log(table(['figure', 'ratio'], Object.entries(r.ratios).filter(([k]) => k !== 'of').map(([k, v]) => [k, f(v)])));
  }
  await mkdir(resultsDir, { recursive: true });
  const out = join(resultsDir, 'bench-scale.json');
  const doc = { date: new Date().toISOString(), command, node: process.version, cpus: os.cpus().length, platform: `${os.platform()} ${os.release()}`, secondsPerPhase: seconds, ...r };
  await writeFile(out, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`\nWrote ${out} (load avg ${r.loadAvgEnd.map((x) => x.toFixed(2)).join(' ')} at end; ${f(r.totalSeconds, 0)} s in all)`);
  return out;
}

if (process.argv[1] === self && process.argv.includes('--preload-child')) {
  process.once('message', (job) => {
    preloadChild(job).then(
      (value) => process.send({ ok: true, value }, () => process.exit(0)),
      (e) => process.send({ ok: false, error: e instanceof Error ? e.stack : String(e) }, () => process.exit(1)),
    );
  });
} else if (process.argv[1] === self) {
  const { values } = parseArgs({ options: { keys: { type: 'string', default: '10000,1000000' }, seconds: { type: 'string', default: '3' }, clients: { type: 'string', default: '16' } } });
  const int = (name, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${v}`);
    return n;
  };
  const keys = values.keys.split(',').map((k) => int('keys', k.replace(/_/g, ''), 1));
  const command = `node scripts/bench-scale.mjs ${process.argv.slice(2).join(' ')}`.trim();
  benchScale({ keys, seconds: int('seconds', values.seconds, 1), clients: int('clients', values.clients, 1), command }).then(
    () => process.exit(0),
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
