/**
 * Nemesis: random faults over a whole replicated topology, with a checker over the recorded
 * history (the Jepsen way). Build first (`npm run nemesis` does).
 *
 *   npm run nemesis -- --cycles 20 --seed 7 [--out DIR] [--cycle-ms 2500] [--keep]
 *
 * Topology, real processes on 127.0.0.1: a (primary), b (DR secondary), c (performance secondary,
 * filter allow secret/), d (performance secondary, filter allow other/). Every ordered pair of
 * nodes has a TCP proxy (scripts/tcp-proxy.mjs); each secondary reaches the primary's cluster port
 * only through its own proxy (update-primary update_primary_addrs), so a partition is a cut.
 * The primary keeps few WAL entries (--wal-max, default 64): a secondary held back past them must
 * reconcile by Merkle diff.
 *
 * Workload: clients write KV v2 values (unique) through the primary and through c and d
 * (forwarded), and read through c and d (including the mount outside each one's filter); every
 * operation is recorded (start, end, node, key, value, outcome ok | error | unknown).
 * Faults, one per cycle, drawn from a PRNG seeded with --seed: SIGKILL + restart + unseal of a
 * secondary, SIGSTOP/SIGCONT of any node, a partition of one secondary, of the primary from all,
 * a secondary held back past the WAL bound. Then a final heal, a bounded wait for convergence, and
 * the checker (scripts/nemesis-check.mjs). The history goes to OUT/nemesis-<seed>.jsonl, the
 * summary to OUT/nemesis-<seed>.summary.json and stdout; the exit code is 1 on any violation.
 * Node data and logs are in a temp dir, removed on success unless --keep.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  activateSecondary, call, drOperationToken, drStatus, ensureLicense, freePorts, initNode, mainJs, must, perfStatus, repoRoot,
  startNode, unsealNode, waitFor, waitForStreaming, writeNodeConfig,
} from './cluster.mjs';
import { checkAcknowledged, checkFilterLeaks, checkMonotonicReads, faultSchedule, prng, tally } from './nemesis-check.mjs';
import { startTcpProxy } from './tcp-proxy.mjs';

const DR = 'sys/replication/dr';
const PERF = 'sys/replication/performance';
const MOUNTS = ['secret', 'other'];
/** Performance secondaries and the mounts their filter allows. */
const FILTERS = { c: ['secret'], d: ['other'] };
const SECONDARIES = ['b', 'c', 'd'];
const OP_TIMEOUT_MS = 3_000;

/** `call` with a deadline: resolves { status, body } or { timeout: true } or { netError }. */
async function timedCall(addr, method, path, opts) {
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve({ timeout: true }), OP_TIMEOUT_MS); });
  try {
    return await Promise.race([call(addr, method, path, opts).catch((e) => ({ netError: e.code ?? String(e) })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

class Topology {
  constructor(dir, license, walMax) {
    Object.assign(this, { dir, license, walMax, nodes: {}, ports: {}, proxies: {}, keys: [], tokens: {} });
  }

  async start() {
    const ports = await freePorts(8);
    ['a', 'b', 'c', 'd'].forEach((n, i) => { this.ports[n] = { apiPort: ports[2 * i], clusterPort: ports[2 * i + 1] }; });
    for (const n of Object.keys(this.ports)) {
      await writeNodeConfig(join(this.dir, n), { ...this.ports[n], license: this.license, walMaxEntries: n === 'a' ? this.walMax : 100_000, logLevel: 'warn' });
    }
    await Promise.all(Object.keys(this.ports).map((n) => this.boot(n)));
    // A proxy for every ordered pair: proxies[x][y] is how x reaches y's cluster port.
    for (const x of Object.keys(this.ports)) {
      this.proxies[x] = {};
      for (const y of Object.keys(this.ports)) if (x !== y) this.proxies[x][y] = await startTcpProxy(`127.0.0.1:${this.ports[y].clusterPort}`);
    }
    const a = this.api('a');
    const init = await initNode(a, 3, 2);
    this.keys = init.keys;
    this.tokens.a = init.root_token;
    await unsealNode(a, this.keys);
    for (const m of MOUNTS) await must(a, 'POST', `sys/mounts/${m}`, { token: this.tokens.a, body: { type: 'kv', options: { version: '2' } } });
    await must(a, 'POST', `${DR}/primary/enable`, { token: this.tokens.a, body: {} });
    await must(a, 'POST', `${PERF}/primary/enable`, { token: this.tokens.a, body: {} });
    for (const n of SECONDARIES) {
      const own = await initNode(this.api(n), 1, 1);
      await unsealNode(this.api(n), own.keys);
      this.tokens[n] = own.root_token; // a performance secondary keeps its own tokens; a DR secondary has none
      const kind = n === 'b' ? 'dr' : 'performance';
      await activateSecondary({ kind, primaryAddr: a, rootToken: this.tokens.a, secondaryAddr: this.api(n), secondaryToken: own.root_token, id: `nemesis-${n}` });
      if (kind === 'performance') {
        await must(a, 'POST', `${PERF}/primary/paths-filter/nemesis-${n}`, { token: this.tokens.a, body: { mode: 'allow', paths: FILTERS[n] } });
      }
    }
    for (const n of SECONDARIES) await this.followThroughProxy(n, 'a');
  }

  api(n) { return `http://127.0.0.1:${this.ports[n].apiPort}`; }

  async boot(n) {
    this.nodes[n] = await startNode({ name: n, home: join(this.dir, n), ...this.ports[n], logFile: join(this.dir, `${n}.log`) });
  }

  /** Points secondary `n` at `primary` through the proxy n -> primary, and waits for it to stream. */
  async followThroughProxy(n, primary) {
    const addrs = [this.proxies[n][primary].address];
    if (n === 'b') {
      await waitForStreaming(this.api(n), 60_000, 'dr');
      const op = await drOperationToken(this.api(n), this.keys);
      await must(this.api(n), 'POST', `${DR}/secondary/update-primary`, { body: { dr_operation_token: op, update_primary_addrs: addrs } });
    } else {
      await waitFor(`${n} to accept its token`, async () => ((await call(this.api(n), 'GET', 'auth/token/lookup-self', { token: this.tokens[n] })).status === 200 ? true : undefined));
      await must(this.api(n), 'POST', `${PERF}/secondary/update-primary`, { token: this.tokens[n], body: { update_primary_addrs: addrs } });
    }
    await waitForStreaming(this.api(n), 60_000, n === 'b' ? 'dr' : 'performance');
  }

  proxiesOf(n) {
    return Object.entries(this.proxies).flatMap(([x, to]) => Object.entries(to).filter(([y]) => x === n || y === n).map(([, p]) => p));
  }

  healAll() { for (const to of Object.values(this.proxies)) for (const p of Object.values(to)) p.heal(); }

  async stopAll() {
    for (const n of Object.values(this.nodes)) if (n.isRunning()) try { process.kill(n.pid, 'SIGCONT'); } catch { /* gone */ }
    await Promise.all(Object.values(this.nodes).map((n) => n.stop(5_000)));
    await Promise.all(Object.values(this.proxies).flatMap((to) => Object.values(to).map((p) => p.close())));
  }
}

/** Concurrent clients; each records every operation into `history`. */
function startWorkload(topo, history, rnd) {
  let stopped = false;
  let nextId = 0;
  const KEYS = 8;
  const writers = [
    { client: 'wa0', node: 'a', mount: 'secret' }, { client: 'wa1', node: 'a', mount: 'other' },
    { client: 'wc', node: 'c', mount: 'secret' }, { client: 'wd', node: 'd', mount: 'other' },
  ];
  const keysOf = (mount) => writers.filter((w) => w.mount === mount).flatMap((w) => Array.from({ length: KEYS }, (_, i) => `${w.client}-${i}`));
  const record = (op) => { history.push(op); };
  const writer = async ({ client, node, mount }) => {
    for (let seq = 0; !stopped; seq++) {
      const key = `${client}-${seq % KEYS}`;
      const value = `${client}-${seq}`;
      const start = Date.now();
      const r = await timedCall(topo.api(node), 'POST', `${mount}/data/${key}`, { token: topo.tokens[node], body: { data: { value } } });
      const outcome = r.status === 200 ? 'ok' : r.status !== undefined && r.status < 500 ? 'error' : r.netError === 'ECONNREFUSED' ? 'error' : 'unknown';
      record({ id: nextId++, client, kind: 'write', node, forwarded: node !== 'a', mount, key, value, start, end: Date.now(), outcome, status: r.status ?? (r.timeout ? 'timeout' : r.netError), version: r.body?.data?.version });
      await delay(outcome === 'ok' ? 15 : 100);
    }
  };
  const reader = async (client, node) => {
    while (!stopped) {
      // Mostly the node's own mount, sometimes the other one (must never be served).
      const mount = rnd() < 0.85 ? FILTERS[node][0] : MOUNTS.find((m) => m !== FILTERS[node][0]);
      const key = keysOf(mount)[Math.floor(rnd() * keysOf(mount).length)];
      const start = Date.now();
      const r = await timedCall(topo.api(node), 'GET', `${mount}/data/${key}`, { token: topo.tokens[node] });
      const version = r.status === 200 ? r.body?.data?.metadata?.version : r.status === 404 ? 0 : undefined;
      record({ id: nextId++, client, kind: 'read', node, mount, key, value: r.body?.data?.data?.value, start, end: Date.now(), outcome: version !== undefined ? 'ok' : r.timeout ? 'unknown' : 'error', status: r.status ?? (r.timeout ? 'timeout' : r.netError), version });
      await delay(15);
    }
  };
  const running = [...writers.map(writer), reader('rc', 'c'), reader('rd', 'd')];
  return { stop: async () => { stopped = true; await Promise.all(running); } };
}

/** One fault of the schedule, applied for a while and then undone. */
async function runFault(topo, { type, target, holdMs }, log) {
  log(`fault ${type} ${target} ${holdMs}ms`);
  const node = topo.nodes[target];
  if (type === 'kill') {
    process.kill(node.pid, 'SIGKILL');
    await node.exited;
    await delay(holdMs);
    await topo.boot(target);
    await unsealNode(topo.api(target), topo.keys);
  } else if (type === 'pause') {
    process.kill(node.pid, 'SIGSTOP');
    await delay(holdMs);
    process.kill(node.pid, 'SIGCONT');
  } else if (type === 'partition' || type === 'partition-primary') {
    for (const p of topo.proxiesOf(target)) p.cut();
    await delay(holdMs);
    topo.healAll();
  } else {
    // Held back: cut until the primary wrote more than its WAL keeps past the secondary's position.
    const from = (await drStatus(topo.api('a'))).last_wal;
    for (const p of topo.proxiesOf(target)) p.cut();
    await waitFor('the primary to move past its WAL bound', async () => ((await drStatus(topo.api('a'))).last_wal - from > topo.walMax + 8 ? true : undefined), { timeoutMs: 30_000, intervalMs: 100 });
    topo.healAll();
  }
}

/** Every KV v2 value of `mount` on a node: { 'mount/key': { value, version } }, or null when not served. */
async function readMount(addr, token, mount) {
  const listed = await call(addr, 'LIST', `${mount}/metadata/`, { token });
  if (listed.status === 404 && !listed.body?.data) return listed.body?.errors?.length === 0 ? {} : null;
  if (listed.status !== 200) throw new Error(`LIST ${mount}/metadata/ on ${addr} answered ${listed.status}`);
  const out = {};
  for (const key of listed.body.data.keys) {
    const r = await must(addr, 'GET', `${mount}/data/${key}`, { token });
    out[`${mount}/${key}`] = { value: r.data.data.value, version: r.data.metadata.version };
  }
  return out;
}

/** Waits (bounded) until every secondary holds what the primary holds; resolves the times taken. */
async function converge(topo, timeoutMs) {
  const t0 = Date.now();
  const times = {};
  const a = topo.api('a');
  await Promise.all(SECONDARIES.map(async (n) => {
    try {
      await waitFor(`${n} to converge`, async () => {
        if (n === 'b') {
          const [p, s] = await Promise.all([drStatus(a), drStatus(topo.api(n))]);
          return s.state === 'stream-wals' && s.last_wal === p.last_wal && s.merkle_root === p.merkle_root ? true : undefined;
        }
        const [p, s] = await Promise.all([perfStatus(a), perfStatus(topo.api(n))]);
        if (s.state !== 'stream-wals' || s.last_remote_wal !== p.last_wal) return undefined;
        for (const m of MOUNTS) {
          const want = FILTERS[n].includes(m) ? await readMount(a, topo.tokens.a, m) : null;
          const got = await readMount(topo.api(n), topo.tokens[n], m);
          if (JSON.stringify(got) !== JSON.stringify(want)) return undefined;
        }
        return true;
      }, { timeoutMs, intervalMs: 200 });
      times[n] = Date.now() - t0;
    } catch (e) {
      times[n] = { error: e.message };
    }
  }));
  return times;
}

async function merkleChecks(topo) {
  const out = {};
  const clean = (r) => {
    const rep = r?.data?.merkle_corruption_report;
    return rep && !rep.corrupted_root && Object.values(rep.corrupted_tree_map).every((t) => !t.corrupted_subtree_root && !t.corrupted_index_tuples_map);
  };
  for (const n of ['a', 'c', 'd']) out[n] = clean(await call(topo.api(n), 'POST', 'sys/replication/merkle-check', { token: topo.tokens[n], body: {} }).then((r) => r.body));
  const op = await drOperationToken(topo.api('b'), topo.keys);
  out.b = clean((await call(topo.api('b'), 'POST', `${DR}/secondary/merkle-check`, { body: { dr_operation_token: op } })).body);
  return out;
}

export async function runNemesis({ cycles = 5, seed = 1, cycleMs = 2_500, walMax = 64, convergeMs = 60_000, out = join(repoRoot, 'bench-results'), keep = false, log = console.log } = {}) {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  const dir = await mkdtemp(join(tmpdir(), 'tessera-nemesis-'));
  const license = await ensureLicense(join(dir, 'license'));
  const topo = new Topology(dir, license, walMax);
  const history = [];
  const schedule = faultSchedule(seed, cycles, cycleMs);
  const workRng = prng(seed ^ 0x5bd1e995);
  let summary;
  try {
    const t0 = Date.now();
    await topo.start();
    log(`topology up in ${Date.now() - t0} ms (data and logs in ${dir})`);
    const work = startWorkload(topo, history, workRng.next);
    for (let i = 0; i < cycles; i++) {
      await delay(Math.floor(cycleMs / 4));
      await runFault(topo, schedule[i], (m) => log(`cycle ${i + 1}/${cycles}: ${m}`));
      await delay(Math.floor(cycleMs / 4));
    }
    topo.healAll();
    await work.stop();
    const convergence = await converge(topo, convergeMs);
    const finalData = {};
    for (const m of MOUNTS) Object.assign(finalData, await readMount(topo.api('a'), topo.tokens.a, m));
    const acked = checkAcknowledged(history, finalData);
    const monotonic = checkMonotonicReads(history);
    const leaks = checkFilterLeaks(history, FILTERS);
    const merkle = await merkleChecks(topo);
    const violations = [
      ...acked.lost.map((l) => ({ type: 'lost-acknowledged-write', ...l })),
      ...monotonic.map((v) => ({ type: 'read-went-backwards', ...v })),
      ...leaks.map((v) => ({ type: 'filter-leak', ...v })),
      ...Object.entries(convergence).filter(([, t]) => typeof t !== 'number').map(([node, t]) => ({ type: 'no-convergence', node, ...t })),
      ...Object.entries(merkle).filter(([, okay]) => !okay).map(([node]) => ({ type: 'merkle-check', node })),
    ];
    const byType = {};
    for (const f of schedule) byType[f.type] = (byType[f.type] ?? 0) + 1;
    summary = {
      seed, cycles, faults: byType, ...tally(history), acknowledged: acked.acknowledged, lost: acked.lostWrites,
      failover_loss: acked.failoverLoss.length, failover_rpo_writes: null,
      convergence_ms: convergence, max_convergence_ms: Math.max(0, ...Object.values(convergence).filter((t) => typeof t === 'number')),
      merkle_check_clean: merkle, violations, schedule, history: null, duration_ms: Date.now() - t0,
    };
  } finally {
    await topo.stopAll().catch(() => undefined);
  }
  await mkdir(out, { recursive: true });
  const base = join(out, `nemesis-${seed}`);
  summary.history = `${base}.jsonl`;
  await writeFile(`${base}.jsonl`, history.map((op) => JSON.stringify(op)).join('\n') + '\n');
  await writeFile(`${base}.summary.json`, `${JSON.stringify(summary, null, 2)}\n`);
  if (summary.violations.length === 0 && !keep) await rm(dir, { recursive: true, force: true });
  else summary.node_dir = dir;
  return summary;
}

function render(s) {
  return [
    `nemesis seed ${s.seed}: ${s.cycles} cycles in ${(s.duration_ms / 1000).toFixed(1)} s`,
    `  faults        ${Object.entries(s.faults).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    `  operations    ${s.operations} (${s.writes} writes, ${s.reads} reads; ok ${s.ok}, error ${s.error}, unknown ${s.unknown})`,
    `  acknowledged  ${s.acknowledged} writes (${s.forwarded_writes_ok} forwarded by a performance secondary)`,
    `  lost          ${s.lost}   failover loss ${s.failover_loss}   failover RPO ${s.failover_rpo_writes ?? 'n/a (no failover)'}`,
    `  convergence   max ${s.max_convergence_ms} ms  ${JSON.stringify(s.convergence_ms)}`,
    `  merkle-check  ${JSON.stringify(s.merkle_check_clean)}`,
    `  violations    ${s.violations.length}${s.violations.length ? `: ${JSON.stringify(s.violations.slice(0, 5))}` : ''}`,
    `  history       ${s.history}${s.node_dir ? `\n  node data     ${s.node_dir}` : ''}`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      cycles: { type: 'string', default: '5' }, seed: { type: 'string', default: '1' }, out: { type: 'string' }, 'cycle-ms': { type: 'string', default: '2500' },
      'wal-max': { type: 'string', default: '64' }, 'converge-ms': { type: 'string', default: '60000' }, keep: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log('usage: node scripts/nemesis.mjs [--cycles N] [--seed S] [--out DIR] [--cycle-ms MS] [--wal-max N] [--converge-ms MS] [--keep]');
    process.exit(0);
  }
  const num = (k) => {
    const v = Number(values[k]);
    if (!Number.isInteger(v) || v < 0) throw new Error(`--${k} must be a non-negative integer, got ${values[k]}`);
    return v;
  };
  runNemesis({ cycles: num('cycles'), seed: num('seed'), cycleMs: num('cycle-ms'), walMax: num('wal-max'), convergeMs: num('converge-ms'), keep: values.keep, ...(values.out ? { out: values.out } : {}) })
    .then((s) => {
      console.log(render(s));
      process.exit(s.violations.length === 0 ? 0 : 1);
    })
    .catch((e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(2);
    });
}
