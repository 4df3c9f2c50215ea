/**
 * The hot path (issue 29): what a request costs Tessera on top of the HTTP shell, with a C load
 * generator (Debian's `wrk`, one thread) for Tessera and the floor alike, so the Node client's
 * cost is out of every ratio. Build first (`npm run bench` does).
 *
 *   node scripts/bench-hot.mjs [--seconds 3]       # prints a table, bench-results/bench-hot.json
 *   node scripts/bench-hot.mjs --only floor,transit --connections 16   # parts: floor, read, write, transit
 *   node scripts/bench-hot.mjs --only read --connections 16 --profile-dir /tmp/p   # --cpu-prof on
 *       Tessera's processes (floor, read or write), then: node scripts/profile.mjs /tmp/p/read/*.cpuprofile
 *   import { benchHot } from './bench-hot.mjs'; const r = await benchHot({ seconds: 3 });
 *
 * Rows, each at 16 and 4 connections:
 *   floor read   GET against the express no-op shell (bench-floor-server.mjs `express`: express as
 *                it ships, the issues' floor; every "of floor" ratio and goal is against it)
 *   floor write  PUT of the same 1 KiB JSON body against that shell
 *   shell ...    the same against Tessera's own shell (`express-tessera`: its listener with nothing
 *                behind it, express's per-request prototype change avoided); "of shell" ratios
 *   read         KV v2 GET of a 1 KiB secret on a dev node (LevelDB), with a non-root token whose
 *                policy grants read (token, ACL, decrypt: the whole path), over 64 keys
 *   ..., file audit  the read and the write again with a file audit device enabled (Vault's `file`)
 *   write        durable KV v2 PUT of 1 KiB under distinct keys on a primary with a DR secondary
 *                streaming (LevelDB, both real processes); CPU counts both processes
 *   transit ...  encrypt and decrypt of 1 KiB on a primary and its performance secondary, in
 *                rounds beside a floor of their own (transitRows): medians, ratios per round
 * CPU per request is each server process's user + system time (every thread, /proc) over the
 * requests wrk counted; "own" is that minus the floor's CPU per request for the same method.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startDevNode } from './bench.mjs';
import { cpuMs, percentile, table, threadCpuMs } from './bench-util.mjs';
import { runWrk, wrkAvailable } from './bench-wrk.mjs';

export { wrkAvailable };
import '@swc-node/register/esm-register';

const { createHarness, fixedNodeOptions, freePorts, mainJs, must, startCluster, vault, waitUntil } = await import('../test/harness/index.js');

const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
const floorJs = fileURLToPath(new URL('./bench-floor-server.mjs', import.meta.url));
const VALUE_BYTES = 1024;
const READ_KEYS = 64;
/** Seconds of load before each measured run (V8 is still compiling the hot path for the first seconds). */
const WARMUP_S = Number(process.env.HOT_WARMUP_SECONDS ?? 3);
const note = (s) => process.stderr.write(`${s}\n`);
const value = randomBytes(VALUE_BYTES).toString('base64url').slice(0, VALUE_BYTES);
const BODY = JSON.stringify({ data: { v: value } });

const lua = (s) => JSON.stringify(s);
/** A wrk script: GET over `keys` paths under `prefix`, or PUT of BODY under a distinct path per request. */
function wrkScript({ method, token, prefix, keys, body }) {
  const head = [`wrk.method = ${lua(method)}`, `wrk.headers["X-Vault-Token"] = ${lua(token)}`, 'local n = 0'];
  // One path and body for every request (transit's operations).
  if (body !== undefined) return [...head, 'wrk.headers["Content-Type"] = "application/json"', `wrk.path = ${lua(prefix)}`, `wrk.body = ${lua(body)}`].join('\n');
  if (method === 'GET') return [...head, `request = function()\n  n = n + 1\n  return wrk.format(nil, ${lua(prefix)} .. (n % ${keys}))\nend`].join('\n');
  return [...head, 'wrk.headers["Content-Type"] = "application/json"', `local body = ${lua(BODY)}`,
    // Distinct keys in every run (each wrk process would draw the same math.random sequence).
    `local tag = ${lua(randomBytes(6).toString('hex'))}`,
    `request = function()\n  n = n + 1\n  return wrk.format(nil, ${lua(prefix)} .. tag .. "-" .. n, nil, body)\nend`].join('\n');
}

/** A warm-up run, then the measured one; `pids` are the server processes whose CPU it costs. */
async function wrk({ url, script, connections, seconds, pids, warmupS = WARMUP_S }) {
  await runWrk({ url, script: script(), connections, seconds: warmupS }); // V8 compiles the hot path meanwhile
  const cpu0 = await Promise.all(pids.map(cpuMs));
  const threads0 = process.env.HOT_THREADS ? await Promise.all(pids.map(threadCpuMs)) : [];
  const r = await runWrk({ url, script: script(), connections, seconds });
  const cpu1 = await Promise.all(pids.map(cpuMs));
  if (process.env.HOT_THREADS) {
    const threads1 = await Promise.all(pids.map(threadCpuMs));
    pids.forEach((pid, i) => {
      const byKind = new Map();
      for (const [tid, t] of threads1[i]) byKind.set(t.kind, (byKind.get(t.kind) ?? 0) + t.ms - (threads0[i].get(tid)?.ms ?? 0));
      const parts = [...byKind].map(([kind, ms]) => `${kind} ${((ms * 1000) / r.requests).toFixed(0)}`);
      note(`  pid ${pid} CPU us/request by thread: ${parts.join(', ')}`);
    });
  }
  const perProcessUs = pids.map((_, i) => ((cpu1[i] - cpu0[i]) * 1000) / r.requests);
  return { connections, rps: r.rps, requests: r.requests, cpuUs: perProcessUs.reduce((a, b) => a + b, 0), perProcessUs, p50Ms: r.p50Ms, p99Ms: r.p99Ms };
}

const POLICY = 'path "secret/data/hot/*" { capabilities = ["read", "create", "update"] }';
/** A non-root token (policy `hot`): the ACL is on the path like any application's. */
async function appToken(addr, root) {
  const v = vault(addr, root);
  await must(v.request('PUT', 'sys/policies/acl/hot', { body: { policy: POLICY } }), [204]);
  const r = await must(v.request('POST', 'auth/token/create', { body: { policies: ['hot'], no_default_policy: true, ttl: '24h' } }), [200]);
  return r.auth.client_token;
}

/** The read rows' keys (KV v2 at secret/) and a token that may read them. */
async function readKeys(node) {
  const token = await appToken(node.apiAddr, node.rootToken);
  const v = vault(node.apiAddr, token);
  for (let i = 0; i < READ_KEYS; i++) await must(v.request('PUT', `secret/data/hot/r/${i}`, { raw: BODY, headers: { 'Content-Type': 'application/json' } }), [200]);
  return token;
}

/**
 * The read rows against a node already running (`{ apiAddr, rootToken, pid }`, KV v2 at secret/):
 * bench-pg-engine.mjs measures Tessera on storage "postgresql" with it.
 */
export async function hotReads(node, { seconds = 3, connections = [16, 4] } = {}) {
  const token = await readKeys(node);
  const rows = [];
  for (const c of connections) {
    note(`hot path: read, ${c} connections, ${seconds} s...`);
    rows.push({ name: 'read', method: 'GET', ...(await wrk({ url: `${node.apiAddr}/v1/`, script: () => wrkScript({ method: 'GET', token, prefix: '/v1/secret/data/hot/r/', keys: READ_KEYS }), connections: c, seconds, pids: [node.pid] })) });
  }
  return rows;
}

const TRANSIT_POLICY = 'path "transit/encrypt/hot" { capabilities = ["update"] }\npath "transit/decrypt/hot" { capabilities = ["update"] }';

/**
 * Transit (issue 30): encrypt and decrypt of a 1 KiB plaintext with an aes256-gcm96 key, on a
 * primary and on its performance secondary (which serves them itself), each with a non-root
 * token of its own cluster; CPU is the serving node's alone.
 *
 * This machine's speed drifts by a third within minutes, more than the differences measured, so
 * the rows are measured in rounds beside a floor of their own (started here, running throughout):
 * each round measures the floor PUT and the four rows in an order rotated by one, and a row's
 * figures are the medians over rounds of its rate, its CPU, its share of that round's floor and
 * (secondary rows) its share of that round's primary row (HOT_TRANSIT_ROUNDS, default 3).
 */
async function transitRows(h, scratch, { connections, seconds, nodeArgs, profileDir }) {
  const rounds = Number(process.env.HOT_TRANSIT_ROUNDS ?? 3);
  const [pApi, pCluster, sApi, sCluster] = await freePorts(4);
  const opts = async (name, apiPort, clusterPort) => ({ ...(await fixedNodeOptions(scratch, name, { apiPort, clusterPort })), nodeArgs: nodeArgs(name) });
  const cluster = await startCluster(h, { primary: await opts('transit-primary', pApi, pCluster), performance: [{ id: 'hot-perf', node: await opts('transit-perf', sApi, sCluster) }] });
  const floor = await startFloor(scratch, FLOOR_MODE, nodeArgs('transit-floor'));
  const shell = await startFloor(scratch, 'express-tessera', nodeArgs('transit-shell'));
  const primary = cluster.primary;
  const secondary = cluster.performance[0];
  const rows = [];
  try {
    const root = vault(primary.apiAddr, primary.rootToken);
    await must(root.request('POST', 'sys/mounts/transit', { body: { type: 'transit' } }), [204]);
    await must(root.request('POST', 'transit/keys/hot', { body: {} }), [200]);
    await must(root.request('PUT', 'sys/policies/acl/transit-hot', { body: { policy: TRANSIT_POLICY } }), [204]);
    const plaintext = randomBytes(VALUE_BYTES).toString('base64');
    const { data } = await must(root.request('POST', 'transit/encrypt/hot', { body: { plaintext } }), [200]);
    const bodies = { encrypt: JSON.stringify({ plaintext }), decrypt: JSON.stringify({ ciphertext: data.ciphertext }) };
    const runs = [{ name: 'floor', server: floor, path: 'x/', token: 'none', body: BODY }, { name: 'shell', server: shell, path: 'x/', token: 'none', body: BODY }];
    for (const [label, node] of [['primary', primary], ['perf secondary', secondary]]) {
      const v = vault(node.apiAddr, node.rootToken);
      // The key and the policy stream to the secondary; its tokens are its own.
      await waitUntil('the transit key on the secondary', async () => ((await v.request('GET', 'transit/keys/hot')).status === 200 ? true : undefined), { timeoutMs: 20_000 });
      const token = (await must(v.request('POST', 'auth/token/create', { body: { policies: ['transit-hot'], no_default_policy: true, ttl: '24h' } }), [200])).auth.client_token;
      for (const op of ['encrypt', 'decrypt']) runs.push({ name: `transit ${op}, ${label}`, server: node, path: `transit/${op}/hot`, token, body: bodies[op] });
    }
    for (const c of connections) {
      const samples = new Map(runs.map((r) => [r.name, []]));
      for (let round = 0; round < rounds; round++) {
        for (let k = 0; k < runs.length; k++) {
          const run = runs[(k + round) % runs.length];
          note(`hot path: ${run.name} (transit round ${round + 1}/${rounds}), ${c} connections, ${seconds} s...`);
          const script = () => wrkScript({ method: 'PUT', token: run.token, prefix: `/v1/${run.path}`, keys: READ_KEYS, body: run.body });
          samples.get(run.name).push(await wrk({ url: `${run.server.apiAddr}/v1/`, script, connections: c, seconds, pids: [run.server.pid], warmupS: round === 0 ? WARMUP_S : 1 }));
        }
      }
      const floors = samples.get('floor');
      const shells = samples.get('shell');
      for (const run of runs.slice(2)) {
        const got = samples.get(run.name);
        const primaryRow = samples.get(run.name.replace('perf secondary', 'primary'));
        rows.push({
          name: run.name,
          method: 'PUT',
          connections: c,
          rounds,
          rps: median(got.map((x) => x.rps)),
          requests: got.reduce((a, x) => a + x.requests, 0),
          cpuUs: median(got.map((x) => x.cpuUs)),
          perProcessUs: [median(got.map((x) => x.cpuUs))],
          p50Ms: median(got.map((x) => x.p50Ms)),
          p99Ms: median(got.map((x) => x.p99Ms)),
          ofFloor: median(got.map((x, i) => x.rps / floors[i].rps)),
          ownCpuUs: median(got.map((x, i) => x.cpuUs - shells[i].cpuUs)),
          floorRps: median(floors.map((x) => x.rps)),
          ofShell: median(got.map((x, i) => x.rps / shells[i].rps)),
          shellRps: median(shells.map((x) => x.rps)),
          ...(run.name.endsWith('perf secondary') ? { ofPrimary: median(got.map((x, i) => x.rps / primaryRow[i].rps)) } : {}),
        });
      }
    }
  } finally {
    await floor.stop();
    await shell.stop();
    // --cpu-prof writes its profile when the process exits.
    if (profileDir) for (const n of [secondary, primary]) await n.stop();
  }
  return rows;
}

/** The middle sample (nearest rank: the upper middle of an even count). */
const median = (xs) => percentile([...xs].sort((a, b) => a - b), 50);

/** The floor (`express`, or HOT_FLOOR_MODE) or Tessera's shell (`express-tessera`): bench-floor-server.mjs. */
const FLOOR_MODE = process.env.HOT_FLOOR_MODE ?? 'express';
const startFloor = (scratch, mode, nodeArgs) => startDevNode(scratch, { script: floorJs, env: { BENCH_FLOOR_MODE: mode }, nodeArgs });

/** A file audit device (Vault's `file`, under the node's audit directory): every request is logged before and after it runs. */
async function enableFileAudit(node) {
  await must(vault(node.apiAddr, node.rootToken).request('PUT', 'sys/audit/file', { body: { type: 'file', options: { file_path: 'bench-hot.log' } } }), [204]);
}

export async function benchHot({ seconds = 3, connections = [16, 4], only, profileDir, audit = true } = {}) {
  const wanted = (part) => only === undefined || only.split(',').includes(part);
  // --cpu-prof on Tessera's processes: one .cpuprofile each in `profileDir` (node scripts/profile.mjs F).
  const extra = process.env.HOT_NODE_ARGS ? process.env.HOT_NODE_ARGS.split(' ') : [];
  const nodeArgs = (name) => [...extra, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, name)}`] : [])];
  if (!wrkAvailable()) throw new Error('wrk is missing: apt-get install wrk');
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-hot-'));
  const rows = [];
  const measure = async (name, server, method, prefix, token = 'none', body = undefined) => {
    for (const c of connections) {
      note(`hot path: ${name}, ${c} connections, ${seconds} s...`);
      const r = await wrk({ url: `${server.apiAddr}/v1/`, script: () => wrkScript({ method, token, prefix: `/v1/${prefix}`, keys: READ_KEYS, body }), connections: c, seconds, pids: server.pids });
      rows.push({ name, method, ...r });
    }
  };
  const h = createHarness();
  try {
    if (wanted('floor')) {
    const floor = await startFloor(scratch, FLOOR_MODE, nodeArgs('floor'));
    try {
      await measure('floor', { apiAddr: floor.apiAddr, pids: [floor.pid] }, 'GET', 'x/');
      await measure('floor', { apiAddr: floor.apiAddr, pids: [floor.pid] }, 'PUT', 'x/');
    } finally {
      await floor.stop();
    }
    const shell = await startFloor(scratch, 'express-tessera', nodeArgs('shell'));
    try {
      await measure('shell', { apiAddr: shell.apiAddr, pids: [shell.pid] }, 'GET', 'x/');
      await measure('shell', { apiAddr: shell.apiAddr, pids: [shell.pid] }, 'PUT', 'x/');
    } finally {
      await shell.stop();
    }
    }
    if (wanted('read')) {
    const dev = await startDevNode(scratch, { nodeArgs: nodeArgs('read') });
    try {
      const token = await readKeys(dev);
      await measure('read', { apiAddr: dev.apiAddr, pids: [dev.pid] }, 'GET', 'secret/data/hot/r/', token);
      if (audit) {
        await enableFileAudit(dev);
        await measure('read, file audit', { apiAddr: dev.apiAddr, pids: [dev.pid] }, 'GET', 'secret/data/hot/r/', token);
      }
    } finally {
      await dev.stop();
    }
    }
    if (wanted('write')) {
    const [pApi, pCluster, sApi, sCluster] = await freePorts(4);
    const opts = async (name, apiPort, clusterPort) => ({ ...(await fixedNodeOptions(scratch, name, { apiPort, clusterPort })), nodeArgs: nodeArgs(name) });
    const cluster = await startCluster(h, { primary: await opts('primary', pApi, pCluster), mountKv2: true, dr: [{ id: 'hot-dr', node: await opts('secondary', sApi, sCluster) }] });
    const primary = cluster.primary;
    const token = await appToken(primary.apiAddr, primary.rootToken);
    await measure('write', { apiAddr: primary.apiAddr, pids: [primary.pid, cluster.dr[0].pid] }, 'PUT', 'secret/data/hot/w/', token);
    if (audit) {
      await enableFileAudit(primary);
      await measure('write, file audit', { apiAddr: primary.apiAddr, pids: [primary.pid, cluster.dr[0].pid] }, 'PUT', 'secret/data/hot/w/', token);
    }
    if (profileDir) for (const n of [cluster.dr[0], primary]) await n.stop();
    }
    if (wanted('transit')) rows.push(...(await transitRows(h, scratch, { connections, seconds, nodeArgs, profileDir })));
  } finally {
    await h.cleanup();
    await rm(scratch, { recursive: true, force: true });
  }
  // The same figure without an audit device, for the audited rows.
  const plainOf = (r) => rows.find((x) => x.name === r.name.replace(', file audit', '') && x.connections === r.connections);
  for (const r of rows) if (r.name.endsWith('file audit')) r.ofUnaudited = r.rps / (plainOf(r)?.rps ?? NaN);
  const floorOf = (method, c, name = 'floor') => rows.find((r) => r.name === name && r.method === method && r.connections === c);
  // Transit's rows carry their own floor's figures (measured beside them, round by round).
  for (const r of rows.filter((x) => x.ofFloor === undefined && x.name !== 'floor' && x.name !== 'shell')) {
    const f = floorOf(r.method, r.connections) ?? { rps: NaN, cpuUs: NaN };
    const sh = floorOf(r.method, r.connections, 'shell') ?? { rps: NaN, cpuUs: NaN };
    r.ofFloor = r.rps / f.rps;
    r.ofShell = r.rps / sh.rps;
    // Tessera's own CPU: both processes for a replicated write, less the one shell's cost (its own shell's).
    r.ownCpuUs = r.cpuUs - sh.cpuUs;
  }
  return { seconds, valueBytes: VALUE_BYTES, rows };
}

export function hotTable(r) {
  const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const reference = (x) => x.name === 'floor' || x.name === 'shell';
  return table(['hot path (wrk, 1 thread)', 'conns', 'req/s', 'of floor', 'of shell', 'p50 ms', 'p99 ms', 'server CPU us/req', 'own CPU us/req'],
    r.rows.map((x) => [`${x.name} ${x.method}`, String(x.connections), f(x.rps), reference(x) ? '' : f(x.ofFloor, 2), reference(x) ? '' : f(x.ofShell, 2), f(x.p50Ms, 2), f(x.p99Ms, 2),
      x.perProcessUs.length > 1 ? `${f(x.cpuUs)} (${x.perProcessUs.map((u) => f(u)).join(' + ')})` : f(x.cpuUs), reference(x) ? '' : f(x.ownCpuUs)]));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { seconds: { type: 'string' }, only: { type: 'string' }, 'profile-dir': { type: 'string' }, connections: { type: 'string' } } });
  const seconds = Number(values.seconds ?? process.env.BENCH_SECONDS ?? 3);
  const load0 = os.loadavg();
  const connections = (values.connections ?? '16,4').split(',').map(Number);
  benchHot({ seconds, only: values.only, profileDir: values['profile-dir'], connections, audit: process.env.HOT_AUDIT !== '0' }).then(
    async (r) => {
      console.log(hotTable(r));
      console.log(`load average: ${load0.map((x) => x.toFixed(2)).join(' ')} at start, ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} at end`);
      await mkdir(resultsDir, { recursive: true });
      await writeFile(join(resultsDir, 'bench-hot.json'), `${JSON.stringify({ date: new Date().toISOString(), load: { start: load0, end: os.loadavg() }, ...r }, null, 2)}\n`);
      process.exit(0);
    },
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
