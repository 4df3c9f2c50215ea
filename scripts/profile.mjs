/**
 * CPU profile of a dev node under the bench's write load: starts `server -dev` with --cpu-prof,
 * drives durable 1 KiB KV v2 writes from N clients (as scripts/bench.mjs), stops the node with
 * SIGTERM so V8 writes the profile, then prints self time per function and per file.
 *
 *   npm run build && node scripts/profile.mjs                 # 16 clients, 5 s
 *   PROFILE_CLIENTS=4 PROFILE_SECONDS=10 node scripts/profile.mjs
 *   node scripts/profile.mjs /tmp/prof/CPU.x.cpuprofile       # only aggregate an existing profile
 *
 * Self time is where the CPU was when sampled; "(idle)" is the event loop waiting (on fsync or
 * the network), "(program)" native work V8 cannot attribute (libuv, LevelDB glue, GC marking).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { httpWrites, startDevNode } from './bench.mjs';

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

async function main() {
  if (process.argv[2] !== undefined) return report(process.argv[2]);
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
