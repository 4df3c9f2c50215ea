/**
 * CPU profile of a dev node under the bench's write load: starts `server -dev` with --cpu-prof,
 * drives durable 1 KiB KV v2 writes from N clients (as scripts/bench.mjs), stops the node with
 * SIGTERM so V8 writes the profile, then prints self time per function and per file.
 *
 *   npm run build && node scripts/profile.mjs                 # 16 clients, 5 s
 *   PROFILE_CLIENTS=4 PROFILE_SECONDS=10 node scripts/profile.mjs
 *   node scripts/profile.mjs /tmp/prof/CPU.x.cpuprofile       # only aggregate an existing profile
 *   PROFILE_LAST_MS=5000 node scripts/profile.mjs F            # ...only its last 5 s
 *   PROFILE_DR=1 node scripts/profile.mjs                     # the bench's DR topology: a primary and a
 *                                                              # streaming DR secondary, both profiled,
 *                                                              # with each process's CPU per write
 *
 * Self time is where the CPU was when sampled; "(idle)" is the event loop waiting (on fsync or
 * the network), "(program)" native work V8 cannot attribute (libuv, LevelDB glue, GC marking).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { httpWrites, startDevNode } from './bench.mjs';
import { writers } from './bench-dr.mjs';
import { cpuMs, threadCpuMs } from './bench-util.mjs';
import '@swc-node/register/esm-register';

const { createHarness, fixedNodeOptions, freePorts, startCluster } = await import('../test/harness/index.js');

const CLIENTS = Number(process.env.PROFILE_CLIENTS ?? 16);
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 5);
const TOP = Number(process.env.PROFILE_TOP ?? 40);

/**
 * Self time (ms) per function and per file, from a .cpuprofile's samples; with `lastMs`, only
 * the samples of the profile's last `lastMs` (the measured load, not start-up and warm-up).
 */
export function aggregate(profile, { lastMs } = {}) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const deltas = profile.timeDeltas;
  const from = lastMs === undefined ? -Infinity : profile.endTime - lastMs * 1000;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += deltas[i] ?? 0;
    if (at < from) continue;
    const id = profile.samples[i];
    self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0) / 1000);
  }
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const fns = new Map();
  const files = new Map();
  const inclusive = new Map();
  let total = 0;
  const nameOf = (cf) => {
    const file = cf.url === '' ? '(native)' : shortFile(cf.url);
    return `${cf.functionName || '(anonymous)'} ${file}${cf.url === '' ? '' : `:${cf.lineNumber + 1}`}`;
  };
  for (const [id, ms] of self) {
    const cf = byId.get(id).callFrame;
    const file = cf.url === '' ? '(native)' : shortFile(cf.url);
    const fn = nameOf(cf);
    fns.set(fn, (fns.get(fn) ?? 0) + ms);
    // Inclusive: every distinct function on this sample's (synchronous) stack.
    const onStack = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) onStack.add(nameOf(byId.get(at).callFrame));
    for (const f of onStack) inclusive.set(f, (inclusive.get(f) ?? 0) + ms);
    const fileKey = cf.url === '' ? cf.functionName || '(native)' : file;
    files.set(fileKey, (files.get(fileKey) ?? 0) + ms);
    total += ms;
  }
  return { total, fns, files, inclusive };
}

function shortFile(url) {
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('node_modules/');
  if (nm !== -1) return path.slice(nm + 'node_modules/'.length);
  const dist = path.search(/\/(dist|src)\//);
  return dist !== -1 ? path.slice(dist + 1) : path;
}

function print(title, map, total, top) {
  console.log(`\n${title}`);
  const rows = [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, ms] of rows) console.log(`${ms.toFixed(0).padStart(8)} ms ${((100 * ms) / total).toFixed(1).padStart(5)} %  ${name}`);
}

async function report(file, lastMs) {
  const { total, fns, files, inclusive } = aggregate(JSON.parse(await readFile(file, 'utf8')), { lastMs });
  console.log(`${file}: ${total.toFixed(0)} ms sampled${lastMs === undefined ? '' : ` (the last ${lastMs} ms: the measured load)`}`);
  print('Self time by file (native frames by name)', files, total, TOP);
  print('Self time by function', fns, total, TOP);
  // Tessera's own functions with what they call synchronously (an await ends a stack).
  const ours = new Map([...inclusive].filter(([name]) => /\b(dist|src)\//.test(name) || name.includes('/tmp/')));
  print('Inclusive time of Tessera functions (synchronous callees included)', ours, total, TOP);
}

/**
 * The bench's DR topology (bench-dr.mjs) with --cpu-prof on both processes: `CLIENTS` writers on
 * the primary while the secondary streams; prints each process's CPU per write, then both profiles.
 */
async function profileDr() {
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-profile-dr-'));
  const h = createHarness();
  try {
    const [pApi, pCluster, sApi, sCluster] = await freePorts(4);
    const wal = { walMaxEntries: 1_000_000, walMaxBytes: 4 * 1024 ** 3 };
    const opts = async (name, apiPort, clusterPort) => ({
      ...(await fixedNodeOptions(scratch, name, { apiPort, clusterPort, replication: wal })),
      nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${join(scratch, `prof-${name}`)}`],
    });
    const cluster = await startCluster(h, {
      primary: await opts('primary', pApi, pCluster),
      primaryInit: { shares: 1, threshold: 1 },
      mountKv2: true,
      dr: [{ id: 'profile-dr', node: await opts('secondary', sApi, sCluster) }],
    });
    const primary = cluster.primary;
    const secondary = cluster.dr[0];
    const base = { apiAddr: primary.apiAddr, token: primary.rootToken, clients: CLIENTS, valueBytes: 1024 };
    const timed = (ms) => {
      const end = performance.now() + ms;
      return () => performance.now() >= end;
    };
    await writers({ ...base, prefix: 'warmup', until: timed(500) });
    process.stderr.write(`profiling the DR topology, ${CLIENTS} client(s) for ${SECONDS} s...\n`);
    const cpu0 = [await cpuMs(primary.pid), await cpuMs(secondary.pid)];
    const threads0 = [await threadCpuMs(primary.pid), await threadCpuMs(secondary.pid)];
    const w = await writers({ ...base, prefix: 'load', until: timed(SECONDS * 1000) });
    const cpu1 = [await cpuMs(primary.pid), await cpuMs(secondary.pid)];
    const threads1 = [await threadCpuMs(primary.pid), await threadCpuMs(secondary.pid)];
    const per = (i) => (((cpu1[i] - cpu0[i]) * 1000) / w.writes).toFixed(0);
    console.log(`${(w.writes / w.seconds).toFixed(0)} writes/s; CPU per write: primary ${per(0)} µs, secondary ${per(1)} µs (profiler on: slower than the bench)`);
    for (const [i, name] of ['primary', 'secondary'].entries()) {
      const byKind = new Map();
      for (const [tid, t] of threads1[i]) {
        const before = threads0[i].get(tid)?.ms ?? 0;
        byKind.set(t.kind, (byKind.get(t.kind) ?? 0) + t.ms - before);
      }
      const parts = [...byKind].sort((a, b) => b[1] - a[1]).map(([k, ms]) => `${k} ${((ms * 1000) / w.writes).toFixed(0)} µs`);
      console.log(`  ${name}, CPU per write by thread: ${parts.join(', ')}`);
    }
    const stoppedAt = performance.now();
    for (const n of [secondary, primary]) await n.stop();
    for (const name of ['primary', 'secondary']) {
      const dir = join(scratch, `prof-${name}`);
      const prof = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'));
      if (prof === undefined) throw new Error(`no .cpuprofile in ${dir}`);
      console.log(`\n======== ${name} ========`);
      await report(join(dir, prof), Math.round(w.seconds * 1000) + (performance.now() - stoppedAt));
    }
  } finally {
    await h.cleanup();
    if (!process.env.PROFILE_KEEP) await rm(scratch, { recursive: true, force: true });
    else console.log(`kept ${scratch}`);
  }
}

async function main() {
  if (process.argv[2] !== undefined) return report(process.argv[2], process.env.PROFILE_LAST_MS === undefined ? undefined : Number(process.env.PROFILE_LAST_MS));
  if (process.env.PROFILE_DR) return profileDr();
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-profile-'));
  const profDir = join(scratch, 'prof');
  let node;
  try {
    node = await startDevNode(scratch, { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] });
    process.stderr.write(`profiling ${CLIENTS} client(s) for ${SECONDS} s...\n`);
    const row = await httpWrites(node, CLIENTS, SECONDS);
    console.log(
      `${row.writesPerSec.toFixed(0)} writes/s, p50 ${row.p50Ms.toFixed(2)} ms, p99 ${row.p99Ms.toFixed(2)} ms, ` +
        `${row.txnsPerBatch.toFixed(1)} txns/batch (profiler on: slower than the bench)`,
    );
    const stoppedAt = performance.now();
    const exit = await node.stop();
    node = undefined;
    if (exit.code !== 0) throw new Error(`dev node exited with ${JSON.stringify(exit)} on SIGTERM`);
    const prof = (await readdir(profDir)).find((f) => f.endsWith('.cpuprofile'));
    if (prof === undefined) throw new Error(`no .cpuprofile in ${profDir}`);
    // The measured window ends at the stop: keep its samples, not start-up's or warm-up's.
    await report(join(profDir, prof), Math.round(row.seconds * 1000) + (performance.now() - stoppedAt));
  } finally {
    node?.kill();
    if (!process.env.PROFILE_KEEP) await rm(scratch, { recursive: true, force: true });
    else console.log(`kept ${scratch}`);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e instanceof Error ? e.stack : e);
    process.exit(1);
  },
);
