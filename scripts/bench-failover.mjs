/**
 * HA failover benchmark (issue 19 item 6): a three-node HA cluster on one private PostgreSQL 15
 * (startHaCluster, test/harness/ha.ts), real processes on 127.0.0.1, `ha_lease_ttl = "2s"`, in one run.
 * Build first (`npm run bench` does).
 *
 *   npm run build && node scripts/bench-failover.mjs [--takeovers 12] [--sigterms 5] [--step-downs 5] [--samples 500]
 *   import { benchFailover } from './bench-failover.mjs'; await benchFailover({});   // scripts/bench.mjs
 *   (BENCH_NO_FAILOVER=1 skips it in `npm run bench`. BENCH_TRACE=1 prints every write attempt of
 *   each round, relative to its event, and keeps the node logs: where a round's time went.)
 *
 * (a) Forwarding: KV v2 reads (one key) and writes (distinct keys, 64 B values), sequential, each
 *     on its own keep-alive connection, `samples` of each kind to the active node (direct) and to
 *     a standby (relayed over the cluster port), interleaved one direct, one relayed, so the
 *     machine's load drifts over both alike; before any failover, with no other load. The figure
 *     is relayed / direct at p50 and at p99.
 * (b) Failovers under 16 writers: each writer is sequential on its own keep-alive connections,
 *     has a home node (writer i: node i mod 3, so the writers are spread over every node's API
 *     address), writes distinct keys, and retries a failed write (any answer but 200, or a
 *     connection error) with the same value on the next node after 10 ms until it gets a 200.
 *     Every 200 is an acknowledged write, kept in a map of key -> value. Rounds: `takeovers`
 *     SIGKILLs of the active node, then `sigterms` SIGTERMs of it, then `stepDowns` PUT
 *     sys/step-down on it. A killed or stopped node is started again on its home and ports and
 *     unsealed before the next round, so every round starts with three unsealed nodes that agree
 *     on the active node, and with 1 s of writes behind it. A node that stepped down sits out a
 *     10 s cooldown before it competes again (Vault's), so step-downs are at least 10.5 s apart:
 *     at each one both other nodes compete.
 *
 *     The measurement, per round: t0 is taken right before the signal is sent (or the step-down
 *     request). From t0 a poller asks GET sys/leader of the two other nodes, each every 10 ms on
 *     its own connection; tNew is when the first answer arrives that names a node other than the
 *     old one as active (is_self on a survivor, or a leader_address that is neither empty nor the
 *     old node's). The figure is the time from t0 to the first 200 on a write SENT after tNew.
 *     Such a write was committed after a node other than the old one held the lock row, and every
 *     commit is fenced against that row inside its transaction, so the old node cannot have
 *     committed it: it was accepted by the new active node. The rule can only overstate the time:
 *     by up to a poll gap, and, when every writer's request is held at a standby through the
 *     takeover (sent before tNew, so not counted even when it is the first to succeed), by the
 *     wait until one of them is answered and its writer sends the next write. t0 -> tNew is
 *     reported too (`leader seen`), and, as a diagnostic that bounds that overstatement, t0 ->
 *     the first 200 to arrive after tNew on any write (`any 200 after`), with the failed answers
 *     the writers got during the round.
 * (c) Nothing acknowledged is lost: once the rounds are done the writers stop, and every
 *     acknowledged key is read back through the active node; any value missing or different
 *     fails the bench (exit 1) after the table is printed.
 * Results: a table on stdout and bench-results/bench-failover.json. Everything is stopped and
 * removed afterwards (node logs are kept on failure, their directory printed).
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
import { machine } from './bench-headline.mjs';
import { percentile, table } from './bench-util.mjs';
import { wrkAvailable, wrkGet } from './bench-wrk.mjs';
import '@swc-node/register/esm-register';

// The typed house (test/harness, test/support) through swc: registered before it is imported.
const { createHarness, fixedNodeOptions, mainJs, mountKv2, startHaCluster, vault } = await import('../test/harness/index.js');
const { postgresAvailable } = await import('../test/support/postgres.js');

const resultsDir = fileURLToPath(new URL('../bench-results/', import.meta.url));
const NAMES = ['a', 'b', 'c'];
const LEASE_TTL = '2s';
const WRITERS = 16;
const RETRY_MS = 10;
const POLL_MS = 10;
const ROUND_DEADLINE_MS = 30_000;
/** `cooldownMs` of src/core/ha/lease.ts: how long a node that stepped down stays out. */
const STEP_DOWN_COOLDOWN_MS = 10_000;
const note = (s) => process.stderr.write(`${s}\n`);
const agent = () => new http.Agent({ keepAlive: true, maxSockets: 1 });
const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), maxMs: s.at(-1) ?? NaN };
};

/** Runs the measurements, prints the table, writes bench-results/bench-failover.json; resolves with the results (throws when an acknowledged write was lost). */
export async function benchFailover({ takeovers = 12, sigterms = 5, stepDowns = 5, samples = 500, command = 'node scripts/bench-failover.mjs' } = {}) {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  if (!postgresAvailable()) (await import('./bench-pg.mjs')).ensurePostgres();
  const loadStart = os.loadavg();
  const scratch = await mkdtemp(join(os.tmpdir(), 'tessera-bench-failover-'));
  const h = createHarness();
  let ok = false;
  try {
    note(`failover bench: 3 HA nodes on PostgreSQL (ha_lease_ttl ${LEASE_TTL})...`);
    // The house's HA topology (test/harness/ha.ts) on this script's layout: node NAME's home,
    // log and license under the scratch dir, on fixed ports, so a restarted node keeps its addresses.
    const c = await startHaCluster(h, { leaseTtl: LEASE_TTL, init: { shares: 3, threshold: 2 }, node: (i, ports) => fixedNodeOptions(scratch, NAMES[i], ports) });
    const token = c.rootToken;
    const nodes = Object.fromEntries(NAMES.map((n, i) => [n, c.nodes[i]]));
    const addr = Object.fromEntries(NAMES.map((n) => [n, nodes[n].apiAddr]));
    let active = await waitSteady(addr, nodes);
    await mountKv2(addr[active], token);

    note(`failover bench: forwarding, ${samples} reads and ${samples} writes each way...`);
    const forwarding = await forwardingRatio({ direct: addr[active], relayed: addr[NAMES.find((n) => n !== active)], token, samples });
    note('failover bench: read throughput, one node and all three (wrk)...');
    const reads = wrkAvailable() ? await readThroughput({ addrs: [addr[active], ...NAMES.filter((n) => n !== active).map((n) => addr[n])], token }) : undefined;
    for (const n of NAMES) note(`failover bench: node ${n}${n === active ? ' (active)' : ''}: ${(await readLeaseMetrics(addr[n], token)).join(', ')}`);

    const load = startWriters({ addrs: NAMES.map((n) => addr[n]), token });
    const rounds = { sigkill: [], sigterm: [], stepDown: [] };
    const plan = [...Array(takeovers).fill('sigkill'), ...Array(sigterms).fill('sigterm'), ...Array(stepDowns).fill('stepDown')];
    try {
      let lastStepDown = -Infinity;
      for (const [i, kind] of plan.entries()) {
        // A node that stepped down sits out a cooldown (Vault's 10 s) before it competes again:
        // step-downs 10.5 s apart leave two competing standbys at every one.
        if (kind === 'stepDown') await delay(Math.max(0, lastStepDown + STEP_DOWN_COOLDOWN_MS + 500 - performance.now()));
        active = await waitSteady(addr, nodes);
        const acked = load.acked.size;
        await delay(1000);
        if (load.acked.size === acked) throw new Error(`round ${i + 1}: no write was acknowledged in the 1 s before the event (${JSON.stringify(load.errors)})`);
        const r = await round({ kind, old: active, addr, nodes, token, load });
        if (kind === 'stepDown') lastStepDown = performance.now() - r.firstWriteMs; // its event
        rounds[kind].push(r);
        note(`  ${kind} #${rounds[kind].length} of ${active}: leader seen ${r.leaderSeenMs.toFixed(0)} ms, first accepted write ${r.firstWriteMs.toFixed(0)} ms (new active ${r.newActive})`);
        if (kind !== 'stepDown') {
          await nodes[active].exited;
          nodes[active] = await c.restart(nodes[active]);
        }
      }
      active = await waitSteady(addr, nodes);
    } finally {
      await load.stop();
    }

    note(`failover bench: reading back ${load.acked.size} acknowledged writes...`);
    const lost = await readBack(addr[active], token, load.acked);
    const result = {
      date: new Date().toISOString(),
      command,
      machine: machine(),
      loadAvg: { start: loadStart, end: os.loadavg() },
      cluster: { nodes: NAMES.length, storage: 'postgresql 15, one database, ha_enabled', haLeaseTtl: LEASE_TTL, writers: WRITERS, retryMs: RETRY_MS, pollMs: POLL_MS },
      forwarding,
      reads: reads ?? { skipped: 'wrk is not installed (apt-get install wrk)' },
      takeover: { ...summary(rounds.sigkill.map((r) => r.firstWriteMs)), leaderSeen: summary(rounds.sigkill.map((r) => r.leaderSeenMs)), anyAckAfterLeaderSeen: summary(rounds.sigkill.map((r) => r.firstAnyAckAfterLeaderSeenMs)), goalP99Ms: 3000 },
      sigterm: { ...summary(rounds.sigterm.map((r) => r.firstWriteMs)), leaderSeen: summary(rounds.sigterm.map((r) => r.leaderSeenMs)), anyAckAfterLeaderSeen: summary(rounds.sigterm.map((r) => r.firstAnyAckAfterLeaderSeenMs)), goalP99Ms: 1000 },
      stepDown: { ...summary(rounds.stepDown.map((r) => r.firstWriteMs)), leaderSeen: summary(rounds.stepDown.map((r) => r.leaderSeenMs)), anyAckAfterLeaderSeen: summary(rounds.stepDown.map((r) => r.firstAnyAckAfterLeaderSeenMs)), goalP99Ms: 1000 },
      rounds,
      writes: { acknowledged: load.acked.size, failedAttempts: load.errors, lost: lost.length, lostSample: lost.slice(0, 20) },
    };
    await report(result);
    if (lost.length > 0) throw new Error(`${lost.length} acknowledged write(s) LOST, e.g. ${JSON.stringify(lost.slice(0, 5))}`);
    ok = true;
    return result;
  } finally {
    await h.cleanup().catch(() => undefined);
    if (ok && !process.env.BENCH_TRACE) await rm(scratch, { recursive: true, force: true });
    else note(`failover bench: node logs kept in ${scratch}`);
  }
}

/** The read-lease samples of a node's metrics (src/node/ha-metrics.ts): whether standbys answered without following. */
async function readLeaseMetrics(apiAddr, token) {
  const r = await fetch(`${apiAddr}/v1/sys/metrics?format=prometheus`, { headers: { 'x-vault-token': token } }).catch(() => undefined);
  const text = r?.ok === true ? await r.text() : '';
  return text.split('\n').filter((l) => /^tessera_ha_(read_lease|standby_follows)/.test(l));
}

/** GET sys/leader (no token) on `apiAddr`; undefined when it does not answer 200. */
async function leaderOf(apiAddr, a) {
  const r = await vault(apiAddr, undefined, a === undefined ? {} : { agent: a }).get('sys/leader').catch(() => undefined);
  return r?.status === 200 ? r.body : undefined;
}

/** Waits until every running node names the same active node, which says is_self; resolves with its name. */
async function waitSteady(addr, nodes, timeoutMs = 30_000) {
  const until = performance.now() + timeoutMs;
  let last;
  for (;;) {
    const up = Object.keys(nodes).filter((n) => nodes[n].running());
    const views = await Promise.all(up.map(async (n) => [n, await leaderOf(addr[n])]));
    last = views;
    const named = new Set(views.map(([, v]) => v?.leader_address ?? ''));
    const self = views.filter(([, v]) => v?.is_self === true);
    if (up.length === NAMES.length && named.size === 1 && self.length === 1 && addr[self[0][0]] === [...named][0]) return self[0][0];
    if (performance.now() > until) throw new Error(`no steady active node within ${timeoutMs} ms: ${JSON.stringify(last)}`);
    await delay(50);
  }
}

/** Relayed vs direct latency of sequential KV v2 reads and writes, interleaved. */
async function forwardingRatio({ direct, relayed, token, samples }) {
  const agents = { direct: agent(), relayed: agent() };
  const at = { direct, relayed };
  const value = randomBytes(48).toString('base64url');
  const ms = { read: { direct: [], relayed: [] }, write: { direct: [], relayed: [] } };
  const must200 = (r, what) => {
    if (r.status !== 200) throw new Error(`${what} answered ${r.status}: ${r.text.slice(0, 200)}`);
  };
  try {
    must200(await vault(direct, token).put('secret/data/bench-failover/read', { data: { v: value } }), 'the read key write');
    const warm = 50;
    for (let i = -warm; i < samples; i++) {
      for (const way of ['direct', 'relayed']) {
        const v = vault(at[way], token, { agent: agents[way] });
        let t0 = performance.now();
        must200(await v.put(`secret/data/bench-failover/latency/${way}/${i + warm}`, { data: { v: value } }), `a ${way} write`);
        if (i >= 0) ms.write[way].push(performance.now() - t0);
        t0 = performance.now();
        must200(await v.get('secret/data/bench-failover/read'), `a ${way} read`);
        if (i >= 0) ms.read[way].push(performance.now() - t0);
      }
    }
  } finally {
    for (const a of Object.values(agents)) a.destroy();
  }
  const out = {};
  for (const op of ['read', 'write']) {
    const d = summary(ms[op].direct);
    const r = summary(ms[op].relayed);
    out[op] = { direct: d, relayed: r, ratioP50: r.p50Ms / d.p50Ms, ratioP99: r.p99Ms / d.p99Ms };
  }
  return out;
}

/**
 * Read capacity (issue 28): KV v2 reads of one key by wrk (C, one thread, 16 connections per
 * node), for 5 s against the active node alone, then against every node at once (one wrk each,
 * performance standbys answering themselves); the figure is the sum over the three / the one.
 */
async function readThroughput({ addrs, token, seconds = 5, connections = 16 }) {
  const url = (a) => `${a}/v1/secret/data/bench-failover/read`;
  await wrkGet({ url: url(addrs[0]), token, connections, seconds: 1 }); // warm-up
  const one = await wrkGet({ url: url(addrs[0]), token, connections, seconds });
  const each = await Promise.all(addrs.map((a) => wrkGet({ url: url(a), token, connections, seconds })));
  const all = each.reduce((sum, r) => sum + r.rps, 0);
  return { seconds, connectionsPerNode: connections, oneNodeRps: one.rps, perNodeRps: each.map((r) => r.rps), allNodesRps: all, ratio: all / one.rps, goal: 1.7 };
}

/**
 * The 16 writers: distinct keys, each retried with its value on the next node until a 200. A
 * round arms `watch` with the time after which a write's send counts; the first 200 on such a
 * write settles it.
 */
function startWriters({ addrs, token }) {
  const acked = new Map();
  const errors = {};
  let stopping = false;
  let watch;
  const tag = randomBytes(6).toString('hex');
  const run = async (w) => {
    const agents = addrs.map(agent);
    try {
      for (let i = 0; !stopping; i++) {
        const key = `bench-failover/w${w}/k${i}`;
        const value = `${tag}-${w}-${i}`;
        for (let attempt = 0; ; attempt++) {
          const at = (w + attempt) % addrs.length;
          const sentAt = performance.now();
          const r = await vault(addrs[at], token, { agent: agents[at] }).put(`secret/data/${key}`, { data: { v: value } }).catch((e) => ({ status: e.code ?? 'error' }));
          const doneAt = performance.now();
          if (watch !== undefined && process.env.BENCH_TRACE) watch.trace.push({ w, node: at, sentAt, doneAt, status: r.status, err: String(r.body?.errors?.[0] ?? '').slice(0, 60) });
          if (r.status === 200) {
            acked.set(key, value);
            if (watch?.since !== undefined) watch.anyAfter ??= doneAt;
            if (watch?.since !== undefined && sentAt >= watch.since) watch.hit(doneAt);
            break;
          }
          const why = `${r.status}`;
          errors[why] = (errors[why] ?? 0) + 1;
          if (watch !== undefined) {
            // The round's failed answers by kind (Tessera's error text without addresses).
            const reason = `${why} ${String(r.body?.errors?.[0] ?? '').replace(/127\.0\.0\.1:\d+/g, 'ADDR').slice(0, 90)}`.trim();
            watch.failures[reason] = (watch.failures[reason] ?? 0) + 1;
          }
          if (stopping) break; // the final stop: an unacknowledged write is not counted
          await delay(RETRY_MS);
        }
      }
    } finally {
      for (const a of agents) a.destroy();
    }
  };
  const running = Array.from({ length: WRITERS }, (_, w) => run(w));
  return {
    acked,
    errors,
    /** Resolves with the time of the first 200 on a write sent after `since()` is set. */
    watch() {
      let hit;
      const first = new Promise((resolve) => (hit = resolve));
      const w = { since: undefined, anyAfter: undefined, failures: {}, trace: [], hit: (t) => hit(t) };
      watch = w;
      return { first, arm: (t) => (w.since = t), disarm: () => (watch = undefined), anyAfter: () => w.anyAfter, failures: () => w.failures, trace: () => w.trace };
    },
    async stop() {
      stopping = true;
      await Promise.all(running);
    },
  };
}

/** One failover of `kind` of node `old`; resolves with its times. */
async function round({ kind, old, addr, nodes, token, load }) {
  const others = NAMES.filter((n) => n !== old);
  const w = load.watch();
  const pollAgents = others.map(agent);
  let polling = true;
  let seen;
  const poll = Promise.all(others.map(async (n, i) => {
    while (polling && seen === undefined) {
      const v = await leaderOf(addr[n], pollAgents[i]);
      const now = performance.now();
      const named = v?.is_self === true ? n : NAMES.find((m) => m !== old && addr[m] === v?.leader_address);
      if (named !== undefined && seen === undefined) {
        seen = { at: now, name: named };
        w.arm(now);
      }
      await delay(POLL_MS);
    }
  }));
  const t0 = performance.now();
  if (kind === 'sigkill') nodes[old].proc.kill('SIGKILL');
  else if (kind === 'sigterm') nodes[old].proc.kill('SIGTERM');
  else {
    const r = await vault(addr[old], token).put('sys/step-down');
    if (r.status !== 204 && r.status !== 200) throw new Error(`sys/step-down answered ${r.status}: ${r.text.slice(0, 200)}`);
  }
  let timer;
  try {
    const first = await Promise.race([w.first, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${kind} of ${old}: no write accepted by a new active node within ${ROUND_DEADLINE_MS} ms (leader seen: ${JSON.stringify(seen)}; failed attempts ${JSON.stringify(load.errors)})`)), ROUND_DEADLINE_MS)))]);
    // Diagnostics: the first 200 that arrived after tNew on any write (one held at a standby
    // through the takeover counts here), and the failed answers the writers got meanwhile.
    if (process.env.BENCH_TRACE) await printTrace({ kind, old, seen, first, t0, trace: w.trace });
    return { old, newActive: seen.name, leaderSeenMs: seen.at - t0, firstWriteMs: first - t0, firstAnyAckAfterLeaderSeenMs: w.anyAfter() - t0, failures: w.failures() };
  } finally {
    clearTimeout(timer);
    polling = false;
    w.disarm();
    await poll;
    for (const a of pollAgents) a.destroy();
  }
}

/** BENCH_TRACE: the round's write attempts (writer, node, sent, answered, status) relative to its event, a moment after the first hit. */
async function printTrace({ kind, old, seen, first, t0, trace }) {
  await delay(300);
  const ms = (t) => (t - t0).toFixed(0);
  note(`TRACE ${kind} old=${old} new=${seen.name} leader seen ${ms(seen.at)} first accepted ${ms(first)}`);
  for (const e of trace()) note(`  w${e.w} ${NAMES[e.node]} sent ${ms(e.sentAt)} done ${ms(e.doneAt)} ${e.status} ${e.err}`);
}

/** Reads every acknowledged key back (16 at a time); resolves with the ones missing or different. */
async function readBack(apiAddr, token, acked) {
  const entries = [...acked.entries()];
  const lost = [];
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    const a = agent();
    try {
      for (let i = next++; i < entries.length; i = next++) {
        const [key, value] = entries[i];
        const r = await vault(apiAddr, token, { agent: a }).get(`secret/data/${key}`);
        if (r.status !== 200) throw new Error(`reading back ${key} answered ${r.status}: ${r.text.slice(0, 200)}`);
        const got = r.body?.data?.data?.v;
        if (got !== value) lost.push({ key, want: value, got: got ?? null });
      }
    } finally {
      a.destroy();
    }
  }));
  return lost;
}

const f = (ms) => (Number.isFinite(ms) ? ms.toFixed(0) : 'n/a');
const x = (r) => (Number.isFinite(r) ? `${r.toFixed(2)}x` : 'n/a');

async function report(r) {
  const goal = (s) => `p99 <= ${s.goalP99Ms} ms: ${s.p99Ms <= s.goalP99Ms ? 'met' : 'MISSED'}`;
  console.log(`\nTessera HA failover: 3 nodes on one PostgreSQL 15, ha_lease_ttl ${LEASE_TTL}, ${WRITERS} writers retrying on every node`);
  console.log(
    table(
      ['event -> first write accepted by a new active node', 'rounds', 'p50 ms', 'p99 ms', 'max ms', 'leader seen p50 ms', 'any 200 after p50 ms', 'goal'],
      [
        ['SIGKILL of the active node (takeover)', r.takeover],
        ['SIGTERM of the active node', r.sigterm],
        ['sys/step-down', r.stepDown],
      ].map(([label, s]) => [label, String(s.n), f(s.p50Ms), f(s.p99Ms), f(s.maxMs), f(s.leaderSeen.p50Ms), f(s.anyAckAfterLeaderSeen.p50Ms), goal(s)]),
    ),
  );
  console.log('');
  console.log(
    table(
      ['through a standby vs direct (reads answered by the standby, writes relayed)', 'direct p50 ms', 'standby p50 ms', 'ratio p50', 'direct p99 ms', 'standby p99 ms', 'ratio p99'],
      ['read', 'write'].map((op) => {
        const o = r.forwarding[op];
        return [`KV v2 ${op} (${o.direct.n} sequential)`, o.direct.p50Ms.toFixed(2), o.relayed.p50Ms.toFixed(2), x(o.ratioP50), o.direct.p99Ms.toFixed(2), o.relayed.p99Ms.toFixed(2), x(o.ratioP99)];
      }),
    ),
  );
  if (r.reads.ratio !== undefined) {
    console.log('');
    console.log(
      table(
        ['KV v2 read capacity (wrk, 16 connections per node)', 'one node req/s', 'three nodes req/s', 'per node', 'ratio', 'goal'],
        [['active node alone vs every node at once', r.reads.oneNodeRps.toFixed(0), r.reads.allNodesRps.toFixed(0), r.reads.perNodeRps.map((v) => v.toFixed(0)).join(' / '), x(r.reads.ratio), `>= ${r.reads.goal}x: ${r.reads.ratio >= r.reads.goal ? 'met' : 'MISSED'}`]],
      ),
    );
  } else console.log(`\nRead capacity: ${r.reads.skipped}`);
  console.log(`\nAcknowledged writes: ${r.writes.acknowledged}, read back at the end: ${r.writes.lost === 0 ? 'all present' : `${r.writes.lost} LOST`}; failed attempts (retried): ${JSON.stringify(r.writes.failedAttempts)}`);
  console.log(`Machine: ${r.machine.cpu}, ${r.machine.cores} cores; load average ${r.loadAvg.start.map((l) => l.toFixed(2)).join(' ')} at start, ${r.loadAvg.end.map((l) => l.toFixed(2)).join(' ')} at end`);
  await mkdir(resultsDir, { recursive: true });
  const out = join(resultsDir, 'bench-failover.json');
  await writeFile(out, `${JSON.stringify(r, null, 2)}\n`);
  console.log(`Wrote ${out}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { takeovers: { type: 'string', default: '12' }, sigterms: { type: 'string', default: '5' }, 'step-downs': { type: 'string', default: '5' }, samples: { type: 'string', default: '500' } } });
  const n = (k) => {
    const v = Number(values[k]);
    if (!Number.isInteger(v) || v < 0) throw new Error(`--${k} must be a non-negative integer, got ${values[k]}`);
    return v;
  };
  const args = process.argv.slice(2).join(' ');
  benchFailover({ takeovers: n('takeovers'), sigterms: n('sigterms'), stepDowns: n('step-downs'), samples: n('samples'), command: `node scripts/bench-failover.mjs${args ? ` ${args}` : ''}` }).then(
    () => process.exit(0),
    (e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(1);
    },
  );
}
