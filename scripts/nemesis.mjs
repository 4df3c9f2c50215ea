/**
 * Nemesis: random faults over a whole replicated topology, with a checker over the recorded
 * history (the Jepsen way). Build first (`npm run nemesis` does).
 *
 *   npm run nemesis -- --cycles 20 --seed 7 [--out DIR] [--cycle-ms 2500] [--keep]
 *   npm run nemesis -- --topology ha --cycles 20 --seed 7     # HA clusters on PostgreSQL (below)
 *
 * Topology, real processes on 127.0.0.1: a (primary), b (DR secondary), c (performance secondary,
 * filter allow secret/), d (performance secondary, filter allow other/). Every ordered pair of
 * nodes has a TCP proxy (test/support/tcp-proxy.ts); each secondary reaches its primary's cluster
 * port only through its own proxy (update-primary with update_primary_addrs), so a partition is a
 * cut. The primaries keep few WAL entries (--wal-max, default 64): a secondary held back past them
 * must reconcile by Merkle diff.
 *
 * Workload: clients write KV v2 values (each unique) through the primary and through c and d
 * (forwarded), and read through the primary, c and d (sometimes the mount outside a filter,
 * which must never be served); every operation is recorded (start, end, node, key, value,
 * outcome ok | error | unknown). Transit clients encrypt through the primary, c and d (a key made
 * before replication is enabled; every performance secondary's filter keeps the transit mount);
 * at the end every acknowledged ciphertext must decrypt to its plaintext on the final primary and
 * on c and d (`transitChecks`). Faults, one per cycle, drawn from a PRNG seeded with --seed
 * (test/harness/nemesis-check.ts, faultSchedule): SIGKILL + restart, SIGSTOP/SIGCONT, partitions, a secondary
 * held back past the WAL bound, a DR failover through the operator CLI (and, the next time, the
 * failback; a third of them a planned switchover under writes, demote first), a filter change
 * while a performance secondary is down. Reads also check that a node serves every mount it
 * holds, across restarts and unseals. Then a final heal, a bounded
 * wait for convergence, merkle-check on every node, and the checker. The history goes to
 * OUT/nemesis-<seed>.jsonl, the summary to OUT/nemesis-<seed>.summary.json and stdout; the exit
 * code is 1 on any violation. Node data and logs are in a temp dir, removed on success unless --keep.
 *
 * `--topology ha` (HaTopology): a primary cluster of three HA nodes a1-a3 on one private
 * PostgreSQL 15 (the house's HA topology, startHaCluster in test/harness/ha.ts, `ha_lease_ttl`
 * 2 s), a DR secondary cluster of two, b1 and b2, on another, and a performance secondary c on
 * LevelDB (filter allow secret/); the secondaries follow the primary cluster's active node by
 * themselves (no proxies). Clients write and read through each of a1-a3 (a standby relays to the
 * active node) and through c. Faults
 * (HA_FAULTS), each from the steady state (one active node per cluster, both secondaries
 * streaming): SIGKILL + restart + unseal of a cluster's active node, SIGSTOP past its lease and
 * SIGCONT, its event loop blocked for less than its lease (SIGUSR2 to a preloaded test handler,
 * test/support/stall-on-signal.mjs: no takeover may follow), a second process started with the
 * active node's config (it must refuse to start, naming the node), sys/step-down on the primary
 * cluster's active node, a cluster's PostgreSQL stopped and started again. After each, every node
 * of the cluster must answer health as it is within a few seconds (the active node 200, standbys
 * 473, none storage_failed, the same replication modes and cluster id). The final primary and
 * DR secondary are each cluster's active node at the end; the checker is the same.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

// The typed house (test/harness, test/support) through swc: registered before it is imported.
import '@swc-node/register/esm-register';

const {
  asFixedNode, createHarness, drOperationToken, drStatus, fixedNodeOptions, freePorts, joinSecondary, mainJs, must, mountKv2, NodeStartError, replStatus, repoRoot, runCli,
  startCluster, startFixedNode, startHaCluster, unsealWith, vault, waitStreaming, waitUntil,
} = await import('../test/harness/index.js');
const { checkHistory, FAULTS, faultSchedule, HA_FAULTS, prng, tally } = await import('../test/harness/nemesis-check.js');
const { startTcpProxy } = await import('../test/support/tcp-proxy.js');
const { postgresAvailable } = await import('../test/support/postgres.js');

const DR = 'sys/replication/dr';
const PERF = 'sys/replication/performance';
const MOUNTS = ['secret', 'other'];
const PERF_SECONDARIES = ['c', 'd'];
/** Each performance secondary's own mount: always in its filter; the filter fault adds or removes the other one. */
const HOME_MOUNT = { c: 'secret', d: 'other' };
/** Default topology: a transit mount with one key made before replication is enabled, held by every node. */
const TRANSIT_MOUNT = 'transit';
const TRANSIT_KEY = 'nemesis';
const OP_TIMEOUT_MS = 3_000;
const STALL_PRELOAD = join(repoRoot, 'test/support/stall-on-signal.mjs');

/**
 * One workload request with a deadline: resolves { status, body } or { timeout: true } or { netError }.
 * Over node:http's global agent, so a refused connection is told apart (ECONNREFUSED: certainly
 * not applied) from a reset or a timeout (maybe applied).
 */
async function timedCall(addr, method, path, { token, body } = {}) {
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve({ timeout: true }), OP_TIMEOUT_MS); });
  try {
    const request = vault(addr, token, { agent: http.globalAgent }).request(method, path, body === undefined ? {} : { body });
    return await Promise.race([request.catch((e) => ({ netError: e.code ?? String(e) })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs the built CLI (the harness's runCli); resolves { code, stdout, stderr }. */
function cli(args, { stdin, token, timeoutMs = 180_000 } = {}) {
  return runCli(args, timeoutMs, { stdin: stdin ?? '', addEnv: { NO_COLOR: '1', ...(token ? { TESSERA_TOKEN: token } : {}) } });
}

/** The paths filter that keeps `mounts`: as an allow list, or (`deny`, when that says the same) as a deny list of the others. */
function filterBody(mounts, form = 'allow', alwaysKept = []) {
  const others = MOUNTS.filter((m) => !mounts.includes(m));
  // `alwaysKept`: mounts every filter keeps (the default topology's transit mount).
  return form === 'deny' && others.length > 0 ? { mode: 'deny', paths: others.map((m) => `${m}/`) } : { mode: 'allow', paths: [...mounts, ...alwaysKept].map((m) => `${m}/`) };
}

class Topology {
  constructor(dir, walMax) {
    Object.assign(this, { dir, walMax, harness: createHarness(), nodes: {}, ports: {}, proxies: {}, keys: [], tokens: {} });
    /** Roles now: a failover swaps them. */
    this.roles = { primary: 'a', dr: 'b' };
    /** [{ mounts, from, to }] per performance secondary, for the checker; the last is the filter now. */
    this.filterTimeline = Object.fromEntries(PERF_SECONDARIES.map((n) => [n, [{ mounts: [HOME_MOUNT[n]], from: 0 }]]));
    this.lossWindows = [];
    this.failovers = [];
    this.perfSecondaries = PERF_SECONDARIES;
    // Writers: two through whichever node is primary when the request starts, one through each performance secondary.
    this.writers = [
      { client: 'wp0', role: 'primary', mount: 'secret' }, { client: 'wp1', role: 'primary', mount: 'other' },
      { client: 'wc', role: 'c', mount: 'secret' }, { client: 'wd', role: 'd', mount: 'other' },
    ];
    this.readers = [['rp', 'primary'], ['rc', 'c'], ['rd', 'd']];
    // Transit encryptors: through whichever node is primary, and through each performance secondary (served locally).
    this.encryptors = [['ep', 'primary'], ['ec', 'c'], ['ed', 'd']];
    /** Every encrypt a node answered 200: { client, node, plaintext, ciphertext }. */
    this.ciphertexts = [];
  }

  async start() {
    const ports = await freePorts(8);
    ['a', 'b', 'c', 'd'].forEach((n, i) => { this.ports[n] = { apiPort: ports[2 * i], clusterPort: ports[2 * i + 1] }; });
    // The topology builder: a primary (3 shares, threshold 2) with both mounts, b activated as its
    // DR secondary, c and d as its performance secondaries with their filters, each in sync; a
    // performance secondary's root token is its own (the enabling one does not survive the activation).
    const opts = (n) => fixedNodeOptions(this.dir, n, { ...this.ports[n], replication: this.replicationOf(n) });
    const cluster = await startCluster(this.harness, {
      primary: await opts('a'),
      primaryInit: { shares: 3, threshold: 2 },
      dr: [{ id: 'nemesis-b', node: await opts('b') }],
      performance: await Promise.all(PERF_SECONDARIES.map(async (n) => ({ id: `nemesis-${n}`, node: await opts(n), filter: filterBody(this.filterOf(n), 'allow', [TRANSIT_MOUNT]) }))),
      beforeEnable: async ({ primary }) => {
        for (const m of MOUNTS) await mountKv2(primary.apiAddr, primary.rootToken, m);
        const v = vault(primary.apiAddr, primary.rootToken);
        await must(v.request('POST', `sys/mounts/${TRANSIT_MOUNT}`, { body: { type: 'transit' } }));
        await must(v.request('POST', `${TRANSIT_MOUNT}/keys/${TRANSIT_KEY}`, { body: {} }));
      },
    });
    const built = { a: cluster.primary, b: cluster.dr[0], c: cluster.performance[0], d: cluster.performance[1] };
    for (const [n, node] of Object.entries(built)) this.nodes[n] = asFixedNode(node, this.dir, n, this.ports[n].clusterPort);
    this.keys = cluster.primary.unsealKeys;
    this.root = cluster.primary.rootToken;
    for (const n of PERF_SECONDARIES) this.tokens[n] = built[n].rootToken;
    // A proxy for every ordered pair: proxies[x][y] is how x reaches y's cluster port.
    for (const x of Object.keys(this.ports)) {
      this.proxies[x] = {};
      for (const y of Object.keys(this.ports)) if (x !== y) this.proxies[x][y] = await startTcpProxy(`127.0.0.1:${this.ports[y].clusterPort}`);
    }
    for (const n of ['b', ...PERF_SECONDARIES]) await this.followThroughProxy(n);
  }

  api(n) { return `http://127.0.0.1:${this.ports[n].apiPort}`; }
  /** The token for client requests on node n: the primary cluster's root, or a performance secondary's own. */
  token(n) { return this.tokens[n] ?? this.root; }
  get primary() { return this.roles.primary; }
  get dr() { return this.roles.dr; }
  resolve(role) { return this.roles[role] ?? role; }
  /** The replication kind node n is a secondary of. */
  kindOf(n) { return PERF_SECONDARIES.includes(n) ? 'performance' : 'dr'; }
  /** The mounts performance secondary n's filter keeps now. */
  filterOf(n) { return this.filterTimeline[n].at(-1).mounts; }

  /** a and b take turns as primary: both keep the short WAL. */
  replicationOf(n) {
    return { walMaxEntries: n === 'a' || n === 'b' ? this.walMax : 100_000, walMaxBytes: 268_435_456 };
  }

  async boot(n) {
    this.nodes[n] = await startFixedNode(this.harness, this.dir, n, { ...this.ports[n], replication: this.replicationOf(n) });
  }

  async restart(n) {
    await this.boot(n);
    await unsealWith(this.api(n), this.keys);
  }

  /** Lets n keep `mounts`: as an allow list, or (`deny`, when that says the same) as a deny list of the others. */
  async setFilter(n, mounts, form = 'allow') {
    await must(vault(this.api(this.primary), this.root).request('POST', `${PERF}/primary/paths-filter/nemesis-${n}`, { body: filterBody(mounts, form, [TRANSIT_MOUNT]) }));
  }

  /** Points secondary `n` at the current primary through the proxy n -> primary, and waits for it to stream. */
  async followThroughProxy(n) {
    const addrs = [this.proxies[n][this.primary].address];
    const kind = this.kindOf(n);
    if (kind === 'dr') {
      await waitStreaming(this.api(n), { timeoutMs: 60_000 });
      const op = await drOperationToken(this.api(n), this.keys);
      await must(vault(this.api(n)).request('POST', `${DR}/secondary/update-primary`, { body: { dr_operation_token: op, update_primary_addrs: addrs } }));
    } else {
      await waitUntil(`${n} to accept its token`, async () => ((await vault(this.api(n), this.tokens[n]).request('GET', 'auth/token/lookup-self')).status === 200 ? true : undefined));
      await must(vault(this.api(n), this.tokens[n]).request('POST', `${PERF}/secondary/update-primary`, { body: { update_primary_addrs: addrs } }));
    }
    await waitStreaming(this.api(n), { kind, timeoutMs: 90_000, from: addrs[0] });
  }

  /** Every link to and from node n. */
  proxiesOf(n) {
    return Object.entries(this.proxies).flatMap(([x, to]) => Object.entries(to).filter(([y]) => x === n || y === n).map(([, p]) => p));
  }

  healAll() { for (const to of Object.values(this.proxies)) for (const p of Object.values(to)) p.heal(); }

  /** Every secondary streaming: the steady state a fault starts from. */
  async steady(timeoutMs = 90_000) {
    await Promise.all([this.dr, ...PERF_SECONDARIES].map((n) => waitStreaming(this.api(n), { kind: this.kindOf(n), timeoutMs })));
  }

  async stopAll() {
    for (const n of Object.values(this.nodes)) if (n.running()) try { process.kill(n.pid, 'SIGCONT'); } catch { /* gone */ }
    await Promise.all(Object.values(this.nodes).map((n) => n.stop(5_000).catch(() => n.exited)));
    await Promise.all(Object.values(this.proxies).flatMap((to) => Object.values(to).map((p) => p.close())));
    await this.harness.cleanup();
  }
}

/** The HA topology's clusters: node names, the first one initialised (the primary's) or activated (the DR secondary's). */
const HA_CLUSTERS = { primary: ['a1', 'a2', 'a3'], dr: ['b1', 'b2'] };
const HA_LEASE_TTL = '2s';

/** The node of `names` that says it is active (sys/leader is_self), once all of them name it; undefined until then. */
async function agreedActive(topo, names) {
  const views = await Promise.all(names.map(async (n) => [n, (await timedCall(topo.api(n), 'GET', 'sys/leader')).body]));
  const self = views.filter(([, v]) => v?.is_self === true).map(([n]) => n);
  const named = new Set(views.map(([, v]) => v?.leader_address));
  return self.length === 1 && named.size === 1 && named.has(topo.api(self[0])) ? self[0] : undefined;
}

/**
 * `--topology ha`: a primary cluster of three HA nodes (a1-a3) on one private PostgreSQL, a DR
 * secondary cluster of two (b1, b2) on another, and one performance secondary c on LevelDB
 * (filter allow secret/). The secondaries learn every primary node's cluster address and follow
 * the active one by themselves: no proxies, no partitions. Every node of a cluster unseals with
 * the primary's keys (the DR secondary cluster adopted its seal at activation).
 */
class HaTopology {
  constructor(dir, walMax) {
    Object.assign(this, { dir, walMax, harness: createHarness(), nodes: {}, ports: {}, keys: [], tokens: {}, pg: {} });
    /** The active node of each cluster, as last seen (`settle`). */
    this.active = { primary: 'a1', dr: 'b1' };
    /** Per fault: the cluster's active node before it and once the cluster settled after it. */
    this.takeovers = [];
    /** Restarts that failed (the node exited before it was ready) and were tried again. */
    this.startFailures = [];
    /** What the HA faults found beside the history: health that disagrees, a duplicate that started. */
    this.findings = [];
    this.perfSecondaries = ['c'];
    this.filterTimeline = { c: [{ mounts: [HOME_MOUNT.c], from: 0 }] };
    this.lossWindows = [];
    this.failovers = [];
    // Writers through each primary-cluster node (a standby relays to the active one) and through c (forwarded).
    this.writers = [
      { client: 'wa1', role: 'a1', mount: 'secret' }, { client: 'wa2', role: 'a2', mount: 'other' },
      { client: 'wa3', role: 'a3', mount: 'secret' }, { client: 'wc', role: 'c', mount: 'secret' },
    ];
    this.readers = [['ra1', 'a1'], ['ra2', 'a2'], ['ra3', 'a3'], ['rc', 'c']];
    /** One database behind a1-a3: a read on any of them sees every write acknowledged before it began (performance standbys). */
    this.currentReaders = ['a1', 'a2', 'a3'];
  }

  get roles() { return { ...this.active }; }
  get primary() { return this.active.primary; }
  get dr() { return this.active.dr; }
  /** Clients go to fixed nodes: roles are node names. */
  resolve(role) { return this.active[role] ?? role; }
  api(n) { return `http://127.0.0.1:${this.ports[n].apiPort}`; }
  token(n) { return this.tokens[n] ?? this.root; }
  kindOf(n) { return n === 'c' ? 'performance' : 'dr'; }
  filterOf(n) { return this.filterTimeline[n].at(-1).mounts; }
  clusterOf(n) { return Object.keys(HA_CLUSTERS).find((k) => HA_CLUSTERS[k].includes(n)); }

  options(n) {
    const cluster = this.clusterOf(n);
    return {
      ...this.ports[n], readyTimeoutMs: 60_000,
      replication: { walMaxEntries: cluster === undefined ? 100_000 : this.walMax, walMaxBytes: 268_435_456 },
      // The HA topology gives the first start's storage itself; a restart is on the same database.
      ...(cluster && this.pg[cluster] ? { postgresql: { connectionUrl: this.pg[cluster].url, haEnabled: true, haLeaseTtl: HA_LEASE_TTL } } : {}),
      // SIGUSR2 blocks the node's event loop for the ms in its stall file (the active-stall fault).
      ...(cluster ? { nodeArgs: ['--import', STALL_PRELOAD], env: { TESSERA_TEST_STALL_FILE: this.stallFile(n) } } : {}),
    };
  }

  stallFile(n) { return join(this.dir, `${n}.stall-ms`); }

  async start() {
    if (!postgresAvailable()) throw new Error('the HA topology needs PostgreSQL 15 (/usr/lib/postgresql/15/bin): apt-get install -y postgresql-15');
    const names = [...HA_CLUSTERS.primary, ...HA_CLUSTERS.dr, 'c'];
    const ports = await freePorts(2 * names.length);
    names.forEach((n, i) => { this.ports[n] = { apiPort: ports[2 * i], clusterPort: ports[2 * i + 1] }; });
    const opts = (n) => fixedNodeOptions(this.dir, n, this.options(n));
    // Each cluster is the house's HA topology (test/harness/ha.ts) on a private PostgreSQL and the
    // names' fixed layout: a1-a3 every one unsealed (3 shares, threshold 2); b1 alone unsealed
    // (its own one share) until its activation gives the cluster the primary's seal.
    const haCluster = (cluster, spec) => startHaCluster(this.harness, { nodes: HA_CLUSTERS[cluster].length, leaseTtl: HA_LEASE_TTL, node: (i) => opts(HA_CLUSTERS[cluster][i]), ...spec });
    const [primary, dr, c] = await Promise.all([
      haCluster('primary', { init: { shares: 3, threshold: 2 } }),
      haCluster('dr', { unseal: 'first' }),
      opts('c').then((o) => this.harness.startNode({ ...o, init: true })),
    ]);
    this.pg = { primary: primary.postgres, dr: dr.postgres };
    HA_CLUSTERS.primary.forEach((n, i) => { this.nodes[n] = asFixedNode(primary.nodes[i], this.dir, n, this.ports[n].clusterPort); });
    HA_CLUSTERS.dr.forEach((n, i) => { this.nodes[n] = asFixedNode(dr.nodes[i], this.dir, n, this.ports[n].clusterPort); });
    this.nodes.c = asFixedNode(c, this.dir, 'c', this.ports.c.clusterPort);
    this.keys = primary.unsealKeys;
    this.root = primary.rootToken;
    const active = await primary.active();
    this.active.primary = HA_CLUSTERS.primary[active.index];
    for (const m of MOUNTS) await mountKv2(active.apiAddr, this.root, m);
    // The one activation path (test/harness/cluster.ts): b1, then c with its filter.
    await joinSecondary(active, this.nodes.b1, 'nemesis-b', 'dr');
    await joinSecondary(active, this.nodes.c, 'nemesis-c', 'performance', 20_000, filterBody(this.filterOf('c')));
    this.tokens.c = this.nodes.c.rootToken;
    // b2 joins its cluster; both secondaries know every primary node before the first fault.
    await Promise.all([unsealWith(this.api('b2'), this.keys), ...[this.dr, 'c'].map((n) =>
      waitUntil(`${n} to know the primary cluster's three nodes`, async () => ((await replStatus(this.api(n), this.kindOf(n))).known_primary_cluster_addrs?.length === 3 ? true : undefined), { timeoutMs: 60_000, intervalMs: 200 }))]);
  }

  async boot(n) {
    this.nodes[n] = await startFixedNode(this.harness, this.dir, n, this.options(n));
  }

  /**
   * Starts n again and unseals it. A start that fails (the node exits before it is ready) is
   * recorded in `startFailures` (the summary's `start_failures`) and tried again, up to 3 times:
   * a node that cannot start beside an active one is a finding of its own, and the run goes on.
   */
  async restart(n) {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.boot(n);
        break;
      } catch (e) {
        if (!(e instanceof NodeStartError) || attempt === 3) throw e;
        this.startFailures.push({ node: n, at: Date.now(), attempt, error: /Error running the server: .*/.exec(e.message)?.[0] ?? e.message.slice(-300) });
      }
    }
    await unsealWith(this.api(n), this.keys);
  }

  /** Waits until the nodes of `cluster` (or `names`) agree on one active node; resolves its name. */
  async settle(cluster, names = HA_CLUSTERS[cluster], timeoutMs = 60_000) {
    this.active[cluster] = await waitUntil(`one active node of the ${cluster} cluster`, () => agreedActive(this, names), { timeoutMs, intervalMs: 100 });
    return this.active[cluster];
  }

  healAll() { /* no proxies */ }

  /**
   * Every node of `cluster` answers health as it is, within a few seconds of the cluster settling
   * (a lease and a follow): the active node 200, each standby 473 (a performance standby; every node of a DR secondary
   * 472), none storage_failed, and every one the same replication modes and cluster id as the
   * active node. A finding otherwise.
   */
  async checkHealth(cluster, fault) {
    const active = this.active[cluster];
    let last;
    const ok = await waitUntil(`${cluster} health to agree`, async () => {
      const views = await Promise.all(HA_CLUSTERS[cluster].map(async (n) => [n, await timedCall(this.api(n), 'GET', 'sys/health')]));
      last = views.map(([n, r]) => ({ node: n, status: r.status, storage_failed: r.body?.storage_failed, dr: r.body?.replication_dr_mode, performance: r.body?.replication_performance_mode, cluster_id: r.body?.cluster_id }));
      const mine = last.find((v) => v.node === active);
      // Vault's order: a DR secondary's nodes answer 472 whether active or standby.
      const want = (v) => (v.dr === 'secondary' ? 472 : v.node === active ? 200 : 473);
      const agree = last.every((v) => v.status === want(v) && v.storage_failed !== true
        && v.dr === mine?.dr && v.performance === mine?.performance && v.cluster_id === mine?.cluster_id);
      return agree ? true : undefined;
    }, { timeoutMs: 6_000, intervalMs: 100 }).catch(() => false);
    if (!ok) this.findings.push({ type: 'health-disagrees', cluster, fault, active, views: last });
  }

  /**
   * A second process started with the config of `n` (a live node: same addresses, same
   * database) must refuse to start, naming the node that holds its identity. A finding otherwise.
   */
  async duplicateStart(n) {
    const home = await mkdtemp(join(tmpdir(), 'tessera-nemesis-dup-'));
    const config = join(home, 'config.hcl');
    await copyFile(join(this.dir, n, 'config.hcl'), config);
    const dup = spawn(process.execPath, [mainJs, 'server', '-config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    for (const s of [dup.stdout, dup.stderr]) s.on('data', (d) => { output += d.toString(); });
    // It opens its storage before it claims its identity: on a loaded machine that alone has
    // taken over 30 s (CI), so the wait is long; a duplicate that serves never exits by itself.
    const timer = setTimeout(() => dup.kill('SIGKILL'), 90_000);
    const code = await new Promise((resolve) => dup.on('exit', (c) => resolve(c)));
    clearTimeout(timer);
    await rm(home, { recursive: true, force: true });
    const refused = code !== 0 && code !== null && /another live node of this HA cluster has this node's identity/.test(output);
    if (!refused) this.findings.push({ type: 'duplicate-started', node: n, code, output: output.slice(-500) });
  }

  /** One active node in each cluster, both secondaries streaming: the steady state a fault starts from. */
  async steady(timeoutMs = 90_000) {
    await Promise.all(Object.keys(HA_CLUSTERS).map((k) => this.settle(k, HA_CLUSTERS[k], timeoutMs)));
    await Promise.all([this.dr, 'c'].map((n) => waitStreaming(this.api(n), { kind: this.kindOf(n), timeoutMs })));
  }

  async stopAll() {
    for (const n of Object.values(this.nodes)) if (n.running()) try { process.kill(n.pid, 'SIGCONT'); } catch { /* gone */ }
    await Promise.all(Object.values(this.nodes).map((n) => n.stop(5_000).catch(() => n.exited)));
    await this.harness.cleanup();
    await Promise.all(Object.values(this.pg).map((pg) => pg.stop()));
  }
}

/** Concurrent clients; each records every operation into `history`. */
function startWorkload(topo, history, rnd) {
  let stopped = false;
  let nextId = 0;
  const KEYS = 8;
  const { writers, readers } = topo;
  const keysOf = (mount) => writers.filter((w) => w.mount === mount).flatMap((w) => Array.from({ length: KEYS }, (_, i) => `${w.client}-${i}`));
  const writer = async ({ client, role, mount }) => {
    for (let seq = 0; !stopped; seq++) {
      const node = topo.resolve(role);
      const key = `${client}-${seq % KEYS}`;
      const value = `${client}-${seq}`;
      const start = Date.now();
      const r = await timedCall(topo.api(node), 'POST', `${mount}/data/${key}`, { token: topo.token(node), body: { data: { value } } });
      const outcome = r.status === 200 ? 'ok' : r.status !== undefined && r.status < 500 ? 'error' : r.netError === 'ECONNREFUSED' ? 'error' : 'unknown';
      history.push({ id: nextId++, client, kind: 'write', node, forwarded: topo.perfSecondaries.includes(node), mount, key, value, start, end: Date.now(), outcome, status: r.status ?? (r.timeout ? 'timeout' : r.netError), version: r.body?.data?.version });
      await delay(outcome === 'ok' ? 15 : 100);
    }
  };
  const reader = async (client, role) => {
    while (!stopped) {
      const node = topo.resolve(role);
      // Mostly a mount the node serves, sometimes the other one (a performance secondary must not serve it).
      const home = HOME_MOUNT[node] ?? MOUNTS[Math.floor(rnd() * MOUNTS.length)];
      const mount = rnd() < 0.8 ? home : MOUNTS.find((m) => m !== home);
      const key = keysOf(mount)[Math.floor(rnd() * keysOf(mount).length)];
      const start = Date.now();
      const r = await timedCall(topo.api(node), 'GET', `${mount}/data/${key}`, { token: topo.token(node) });
      // 404 with no errors: the key is not there (version 0); 404 with errors: the mount is not served here.
      const notFound = r.status === 404 && Array.isArray(r.body?.errors) && r.body.errors.length === 0;
      const version = r.status === 200 ? r.body?.data?.metadata?.version : notFound ? 0 : undefined;
      const outcome = version !== undefined || r.status === 404 ? 'ok' : r.timeout ? 'unknown' : 'error';
      const mountMissing = r.status === 404 && !notFound;
      history.push({ id: nextId++, client, kind: 'read', node, mount, key, value: r.body?.data?.data?.value, start, end: Date.now(), outcome, status: r.status ?? (r.timeout ? 'timeout' : r.netError), version, ...(mountMissing ? { mountMissing } : {}) });
      await delay(15);
    }
  };
  // Transit: each ciphertext a node acknowledged must decrypt to its plaintext on every node at the end.
  const encryptor = async (client, role) => {
    for (let seq = 0; !stopped; seq++) {
      const node = topo.resolve(role);
      const plaintext = Buffer.from(`${client}-${seq}`).toString('base64');
      const r = await timedCall(topo.api(node), 'POST', `${TRANSIT_MOUNT}/encrypt/${TRANSIT_KEY}`, { token: topo.token(node), body: { plaintext } });
      if (r.status === 200) topo.ciphertexts.push({ client, node, plaintext, ciphertext: r.body.data.ciphertext });
      await delay(r.status === 200 ? 25 : 100);
    }
  };
  const running = [...writers.map(writer), ...readers.map(([client, role]) => reader(client, role)), ...(topo.encryptors ?? []).map(([client, role]) => encryptor(client, role))];
  return { stop: async () => { stopped = true; await Promise.all(running); } };
}

/**
 * A DR failover through the operator CLI, then the old primary's return as the DR secondary: the
 * procedure docs/failover-runbook.md gives an operator. Records the loss window for the checker.
 */
async function failover(topo, { variant, holdMs }, log) {
  const [oldP, newP] = [topo.primary, topo.dr];
  await topo.steady();
  // DR replication is asynchronous. What it promises: a write acknowledged before `syncedAt` has
  // an index <= `through` (it was committed when the primary answered the status read), and the
  // DR secondary applied `through`, so the failover must keep it. A write acknowledged later may
  // not have reached the secondary when the primary failed: missing, it is this failover's loss.
  let syncedAt = Date.now();
  let demoted;
  if (variant === 'planned') {
    // A switchover under writes: the demote stops writes, drains to the DR secondary and says who
    // confirmed the final index. Confirmed, nothing acknowledged may be lost (no loss window).
    const r = await must(vault(topo.api(oldP), topo.root).request('POST', `${DR}/primary/demote`, { body: {} }));
    demoted = r.data;
    // The DR secondary is the only one: confirmed by it, under whatever id it last joined with.
    if (!(demoted?.confirmed?.length === 1 && demoted.unconfirmed?.length === 0 && demoted.timed_out === false)) log(`planned switchover: ${newP} did not confirm the final index (${JSON.stringify(demoted)}); the promote may need -force`);
    else syncedAt = Number.MAX_SAFE_INTEGER;
  } else {
    const through = (await drStatus(topo.api(oldP))).last_wal;
    await waitUntil(`${newP} to apply WAL ${through}`, async () => ((await drStatus(topo.api(newP))).last_wal >= through ? true : undefined), { timeoutMs: 90_000, intervalMs: 20 });
  }
  const cutAt = Date.now();
  if (variant === 'planned') {
    // The demoted node stays up and connected: clients that have not moved are refused by it.
  } else if (variant === 'kill') {
    process.kill(topo.nodes[oldP].pid, 'SIGKILL');
    await topo.nodes[oldP].exited;
  } else {
    for (const p of topo.proxiesOf(oldP)) p.cut();
  }
  const shares = `${topo.keys.join('\n')}\n`;
  const args = ['operator', 'dr', 'failover', `-address=${topo.api(newP)}`];
  let run = await cli(args, { stdin: shares });
  let forced = false;
  if (run.code !== 0 && /-force/.test(run.stderr + run.stdout) && syncedAt !== Number.MAX_SAFE_INTEGER) {
    // The secondary knows it is behind: the operator reads the plan and accepts the RPO.
    forced = true;
    run = await cli([...args, '-force'], { stdin: shares });
  }
  if (run.code !== 0) throw new Error(`failover ${oldP} -> ${newP} failed (${run.code}): ${run.stderr.slice(-1500)}`);
  topo.roles = { primary: newP, dr: oldP };
  const switchedAt = Date.now();
  const until = { [oldP]: Infinity };
  await Promise.all(PERF_SECONDARIES.map(async (n) => {
    await topo.followThroughProxy(n);
    until[n] = Date.now();
  }));
  log(`failover ${oldP} -> ${newP} (${variant}${forced ? ', forced' : ''}): writes on ${newP} after ${switchedAt - cutAt} ms; performance secondaries moved`);
  await delay(holdMs);
  if (variant === 'kill') await topo.restart(oldP);
  else if (variant === 'partition') topo.healAll();
  // Failback path for the old primary: demote it and rejoin it as the new primary's DR secondary.
  const back = await cli(['operator', 'dr', 'failback', `-address=${topo.api(newP)}`, `-old-primary=${topo.api(oldP)}`, `-secondary-id=nemesis-${oldP}-${Date.now().toString(36)}`], { stdin: shares, token: topo.root });
  if (back.code !== 0) throw new Error(`failback of ${oldP} onto ${newP} failed (${back.code}): ${back.stderr.slice(-1500)}`);
  until[oldP] = Date.now();
  await topo.followThroughProxy(oldP);
  topo.lossWindows.push({ from: syncedAt, until });
  topo.failovers.push({ from: oldP, to: newP, variant, forced, syncedAt, cutAt, switchedAt, rejoinedAt: until[oldP], writes_on_new_primary_after_ms: switchedAt - cutAt, ...(demoted ? { demote: demoted } : {}) });
  log(`  ${oldP} demoted and rejoined as the DR secondary of ${newP}`);
}

/** A performance secondary is down while its filter changes on the primary. */
async function filterChange(topo, n, { holdMs, variant = 'allow' }, log) {
  process.kill(topo.nodes[n].pid, 'SIGKILL');
  await topo.nodes[n].exited;
  const other = MOUNTS.find((m) => m !== HOME_MOUNT[n]);
  const next = topo.filterOf(n).includes(other) ? [HOME_MOUNT[n]] : [HOME_MOUNT[n], other];
  const changedAt = Date.now();
  await topo.setFilter(n, next, variant);
  // From now both filters may be in force on n, until it has reconnected and reconciled.
  const line = topo.filterTimeline[n];
  line.push({ mounts: next, from: changedAt });
  await delay(holdMs);
  await topo.restart(n);
  // The new filter holds once the secondary has reconnected and its data matches the filtered primary.
  const { times } = await converge(topo, [n], 90_000);
  if (typeof times[n] !== 'number') throw new Error(`${n} did not converge to its new filter: ${times[n].error}`);
  line.at(-2).to = Date.now();
  log(`filter of ${n} now keeps ${next.join(', ')} (written as ${next.length < MOUNTS.length ? variant : 'allow'})`);
}

/** One fault of the schedule, applied for a while and then undone. */
/**
 * A step of every cycle (default topology), after its fault: `sys/rotate` on the current primary
 * while the workload writes, so every later write is under a new key term that the secondaries
 * must hold first (issue 27 item 3). Asked again while the primary settles after its fault.
 */
async function rotateKey(topo, log) {
  const term = await waitUntil('the primary to rotate its key', async () => {
    const v = vault(topo.api(topo.primary), topo.root);
    if ((await v.request('PUT', 'sys/rotate', { body: {} })).status !== 204) return undefined;
    return (await v.request('GET', 'sys/key-status')).body?.data?.term;
  }, { timeoutMs: 30_000, intervalMs: 200 });
  log(`key rotated on ${topo.primary}: term ${term}`);
  return term;
}

async function runFault(topo, fault, log) {
  const { type, holdMs } = fault;
  // An HA fault targets a cluster (resolved to its active node) from the steady state, and ends once the cluster agrees on an active node again.
  const ha = HA_FAULTS.includes(type);
  if (ha) await topo.steady();
  const target = topo.resolve(fault.target);
  log(`fault ${type} ${fault.target}=${target}${fault.variant ? ` (${fault.variant})` : ''} ${holdMs}ms`);
  const node = topo.nodes[target];
  if (type === 'kill' || type === 'active-kill') {
    process.kill(node.pid, 'SIGKILL');
    await node.exited;
    await delay(holdMs);
    await topo.restart(target);
  } else if (type === 'pause' || type === 'active-pause') {
    process.kill(node.pid, 'SIGSTOP');
    await delay(holdMs);
    process.kill(node.pid, 'SIGCONT');
  } else if (type === 'active-stall') {
    // The event loop blocked for less than the lease: the keeper's thread renews meanwhile.
    await writeFile(topo.stallFile(target), String(holdMs));
    process.kill(node.pid, 'SIGUSR2');
    await delay(holdMs);
  } else if (type === 'duplicate-start') {
    await topo.duplicateStart(target);
  } else if (type === 'step-down') {
    await must(vault(topo.api(target), topo.root).request('PUT', 'sys/step-down', { body: {} }), [204]);
  } else if (type === 'pg-restart') {
    await topo.pg[fault.target].stopServer();
    await delay(holdMs);
    await topo.pg[fault.target].startServer();
  } else if (type === 'partition' || type === 'partition-primary') {
    for (const p of topo.proxiesOf(target)) p.cut();
    await delay(holdMs);
    topo.healAll();
  } else if (type === 'wal-behind') {
    // Held back: cut until the primary wrote more than its WAL keeps past the secondary's position.
    await topo.steady();
    const from = (await drStatus(topo.api(topo.primary))).last_wal;
    for (const p of topo.proxiesOf(target)) p.cut();
    await waitUntil('the primary to move past its WAL bound', async () => ((await drStatus(topo.api(topo.primary))).last_wal - from > topo.walMax + 8 ? true : undefined), { timeoutMs: 60_000, intervalMs: 100 });
    topo.healAll();
  } else if (type === 'failover') {
    await failover(topo, fault, log);
  } else if (type === 'filter') {
    await filterChange(topo, target, fault, log);
  } else {
    throw new Error(`unknown fault ${type}`);
  }
  if (ha) {
    const after = await topo.settle(fault.target);
    topo.takeovers.push({ type, cluster: fault.target, before: target, after });
    log(`  the ${fault.target} cluster's active node: ${after}`);
    await topo.checkHealth(fault.target, type);
  }
}

/** Every KV v2 value of `mount` on a node: { 'mount/key': { value, version } }, or null when not served. */
async function readMount(addr, token, mount) {
  const listed = await vault(addr, token).request('LIST', `${mount}/metadata/`);
  if (listed.status === 404) return Array.isArray(listed.body?.errors) && listed.body.errors.length === 0 ? {} : null;
  if (listed.status !== 200) throw new Error(`LIST ${mount}/metadata/ on ${addr} answered ${listed.status}`);
  const out = {};
  for (const key of listed.body.data.keys) {
    const r = await must(vault(addr, token).request('GET', `${mount}/data/${key}`));
    out[`${mount}/${key}`] = { value: r.data.data.value, version: r.data.metadata.version };
  }
  return out;
}

/**
 * Waits (bounded) until each of `nodes` holds what the primary holds; resolves the ms each took.
 * The DR secondary: same last WAL index and Merkle root. A performance secondary: the same values
 * for exactly the mounts its filter allows, read through both; with `verifyRoots`, also its
 * filtered Merkle root verified against the primary's at the primary's last index (continuous
 * verification, which for a filtered secondary runs at most every 10 s): `verified_ms`.
 */
async function converge(topo, nodes, timeoutMs, { verifyRoots = false } = {}) {
  const t0 = Date.now();
  const times = {};
  const verified = {};
  const p = topo.api(topo.primary);
  await Promise.all(nodes.map(async (n) => {
    // What the last check saw, so a timeout says why (which mount, which keys differ).
    let why = 'not checked yet';
    try {
      await waitUntil(`${n} to converge`, async () => {
        if (n === topo.dr) {
          const [ps, s] = await Promise.all([drStatus(p), drStatus(topo.api(n))]);
          why = `state ${s.state}, last_wal ${s.last_wal} of ${ps.last_wal}, roots ${s.merkle_root === ps.merkle_root ? 'equal' : 'differ'}`;
          return s.state === 'stream-wals' && s.last_wal === ps.last_wal && s.merkle_root === ps.merkle_root ? true : undefined;
        }
        const s = await replStatus(topo.api(n), 'performance');
        why = `state ${s.state}`;
        if (s.state !== 'stream-wals') return undefined;
        for (const m of MOUNTS) {
          const kept = topo.filterOf(n).includes(m);
          // Under writes, the secondary is caught up when each key's version lies between the
          // primary's read just before and just after its own (and the value is the primary's
          // wherever the versions meet); the workload stops only after the final convergence.
          const before = kept ? await readMount(p, topo.root, m) : null;
          const got = await readMount(topo.api(n), topo.tokens[n], m);
          const after = kept ? await readMount(p, topo.root, m) : null;
          const want = before && got && after ? Object.fromEntries(Object.keys(before).map((k) => {
            const g = got[k];
            const inRange = g && after[k] && before[k].version <= g.version && g.version <= after[k].version;
            const agrees = inRange && [before[k], after[k]].every((x) => x.version !== g.version || x.value === g.value);
            return [k, agrees ? g : before[k]];
          })) : before;
          if (JSON.stringify(got) !== JSON.stringify(want)) {
            const differ = want && got ? Object.keys({ ...want, ...got }).filter((k) => JSON.stringify(want[k]) !== JSON.stringify(got[k])) : [];
            why = `${m}: ${want === null ? 'not in its filter' : `${Object.keys(want).length} keys on the primary`}, ${got === null ? 'not served' : `${Object.keys(got).length} served`}${differ.length ? `; differ: ${differ.slice(0, 4).map((k) => `${k} ${JSON.stringify(want[k] ?? null)} vs ${JSON.stringify(got[k] ?? null)}`).join(', ')}` : ''}`;
            return undefined;
          }
        }
        return true;
      }, { timeoutMs, intervalMs: 100 }).catch((e) => { throw new Error(`${e.message} (last seen: ${why})`); });
      times[n] = Date.now() - t0;
      if (verifyRoots && n !== topo.dr) {
        await waitUntil(`${n}'s filtered Merkle root to be verified`, async () => {
          const [ps, s] = await Promise.all([replStatus(p, 'performance'), replStatus(topo.api(n), 'performance')]);
          if (s.verification_mismatch) throw Object.assign(new Error(`${n} reports a Merkle root mismatch at WAL ${s.verification_mismatch_wal}`), { fatal: true });
          // A secondary repairs a mismatch by itself (issue 17 item 10); one repaired meanwhile still diverged.
          if (s.verification_repairs > 0) throw Object.assign(new Error(`${n} diverged from its primary and repaired it by a Merkle sync ${s.verification_repairs} time(s)`), { fatal: true });
          return s.last_verified_wal >= ps.last_wal ? true : undefined;
        }, { timeoutMs: Math.max(0, timeoutMs - (Date.now() - t0)), intervalMs: 200 });
        verified[n] = Date.now() - t0;
      }
    } catch (e) {
      times[n] = { error: e.message };
    }
  }));
  return verifyRoots ? { times, verified } : { times };
}

async function merkleChecks(topo) {
  const out = {};
  const clean = (r) => {
    const rep = r?.data?.merkle_corruption_report;
    return Boolean(rep) && !rep.corrupted_root && Object.values(rep.corrupted_tree_map).every((t) => !t.corrupted_subtree_root && !t.corrupted_index_tuples_map);
  };
  for (const n of [topo.primary, ...topo.perfSecondaries]) out[n] = clean((await vault(topo.api(n), topo.token(n)).request('POST', 'sys/replication/merkle-check', { body: {} })).body);
  const op = await drOperationToken(topo.api(topo.dr), topo.keys);
  out[topo.dr] = clean((await vault(topo.api(topo.dr)).request('POST', `${DR}/secondary/merkle-check`, { body: { dr_operation_token: op } })).body);
  return out;
}

/**
 * Every ciphertext a node acknowledged during the run, decrypted on the final primary and on each
 * performance secondary (batches of 100): it must give back its plaintext everywhere. The key was
 * made before replication was enabled and never rotated, so no failover loss window excuses one.
 */
async function transitChecks(topo) {
  const violations = [];
  for (const n of [topo.primary, ...topo.perfSecondaries]) {
    for (let i = 0; i < topo.ciphertexts.length; i += 100) {
      const chunk = topo.ciphertexts.slice(i, i + 100);
      const r = await vault(topo.api(n), topo.token(n)).request('POST', `${TRANSIT_MOUNT}/decrypt/${TRANSIT_KEY}`, { body: { batch_input: chunk.map((c) => ({ ciphertext: c.ciphertext })) } });
      const results = r.body?.data?.batch_results;
      if (!Array.isArray(results)) {
        violations.push({ type: 'transit-decrypt-failed', node: n, status: r.status, errors: r.body?.errors });
        break;
      }
      chunk.forEach((c, j) => {
        if (results[j]?.plaintext !== c.plaintext) violations.push({ type: 'transit-ciphertext-lost', node: n, made_on: c.node, client: c.client, ciphertext: c.ciphertext, error: results[j]?.error });
      });
    }
  }
  return { checked: topo.ciphertexts.length, violations };
}

/** The topologies (`--topology`): how each is built, and the faults it takes. */
export const TOPOLOGIES = { default: { Topology, faults: FAULTS }, ha: { Topology: HaTopology, faults: HA_FAULTS } };

export async function runNemesis({ topology = 'default', cycles = 5, seed = 1, faults = TOPOLOGIES[topology].faults, cycleMs = 2_500, walMax = 64, convergeMs = 60_000, out = join(repoRoot, 'bench-results'), keep = false, log = console.log } = {}) {
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);
  const dir = await mkdtemp(join(tmpdir(), 'tessera-nemesis-'));
  const topo = new TOPOLOGIES[topology].Topology(dir, walMax);
  const history = [];
  const schedule = faultSchedule(seed, cycles, cycleMs, faults);
  const workRng = prng(seed ^ 0x5bd1e995);
  /** The barrier key term after each cycle's rotation (default topology). */
  const rotations = [];
  const t0 = Date.now();
  let summary;
  let failure;
  try {
    await topo.start();
    log(`topology up in ${Date.now() - t0} ms (data and logs in ${dir})`);
    const work = startWorkload(topo, history, workRng.next);
    try {
      for (let i = 0; i < cycles; i++) {
        await delay(Math.floor(cycleMs / 4));
        await runFault(topo, schedule[i], (m) => log(`cycle ${i + 1}/${cycles}: ${m}`));
        if (topology === 'default') rotations.push(await rotateKey(topo, (m) => log(`cycle ${i + 1}/${cycles}: ${m}`)));
        await delay(Math.floor(cycleMs / 4));
      }
    } catch (e) {
      failure = e;
    }
    topo.healAll();
    // The HA topology: the final primary and DR secondary are each cluster's active node now.
    if (!failure && topo.settle) await topo.steady().catch((e) => { failure = e; });
    await work.stop();
    const { times: convergence, verified = {} } = failure ? { times: {} } : await converge(topo, [topo.dr, ...topo.perfSecondaries], convergeMs, { verifyRoots: true });
    const finalData = {};
    for (const m of MOUNTS) {
      Object.assign(finalData, await readMount(topo.api(topo.primary), topo.root, m).catch((e) => {
        failure ??= e;
        return {};
      }));
    }
    const verdict = checkHistory(history, finalData, { lossWindows: topo.lossWindows, filterTimeline: topo.filterTimeline, currentReaders: topo.currentReaders ?? [] });
    const merkle = failure ? {} : await merkleChecks(topo);
    const transit = failure || !topo.ciphertexts ? { checked: 0, violations: [] } : await transitChecks(topo);
    const violations = [
      ...(failure ? [{ type: 'harness-step-failed', error: failure instanceof Error ? failure.message : String(failure) }] : []),
      ...(topo.findings ?? []),
      ...verdict.violations,
      ...Object.entries(convergence).filter(([, t]) => typeof t !== 'number').map(([node, t]) => ({ type: 'no-convergence', node, ...t })),
      ...Object.entries(merkle).filter(([, okay]) => !okay).map(([node]) => ({ type: 'merkle-check', node })),
      ...transit.violations,
    ];
    const byType = {};
    const byTarget = {};
    for (const f of schedule) {
      byType[f.type] = (byType[f.type] ?? 0) + 1;
      byTarget[`${f.type} ${f.target}`] = (byTarget[`${f.type} ${f.target}`] ?? 0) + 1;
    }
    summary = {
      topology, seed, cycles, faults: byType, faults_by_target: byTarget, ...tally(history), acknowledged: verdict.acknowledged, lost: verdict.lost,
      failover_loss: verdict.failoverLoss.length,
      failovers: topo.failovers.map((f, i) => ({ ...f, rpo_writes: verdict.lossPerWindow[i] })),
      failover_rpo_writes: verdict.lossPerWindow.length ? Math.max(...verdict.lossPerWindow) : null,
      reads_taken_back_by_failover: verdict.readsTakenBackByFailover,
      convergence_ms: convergence, root_verified_ms: verified, max_convergence_ms: Math.max(0, ...Object.values(convergence).filter((t) => typeof t === 'number')),
      merkle_check_clean: merkle, transit_ciphertexts_checked: transit.checked, key_terms: rotations, final_roles: { ...topo.roles }, ...(topo.takeovers ? { takeovers: topo.takeovers, start_failures: topo.startFailures } : {}), filters: topo.filterTimeline, violations, schedule, history: null, duration_ms: Date.now() - t0,
      // What `node scripts/nemesis-check.mjs SUMMARY` needs to judge the history again offline.
      final_data: finalData, loss_windows: topo.lossWindows,
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

export function render(s) {
  const rpo = s.failovers.length ? `${s.failover_rpo_writes} writes at most (${s.failovers.map((f) => `${f.from}->${f.to} ${f.variant}${f.forced ? ' forced' : ''}: ${f.rpo_writes}`).join('; ')})` : 'n/a (no failover)';
  return [
    `nemesis${s.topology === 'default' ? '' : ` (topology ${s.topology})`} seed ${s.seed}: ${s.cycles} cycles in ${(s.duration_ms / 1000).toFixed(1)} s`,
    `  faults        ${Object.entries(s.topology === 'ha' ? s.faults_by_target : s.faults).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    `  operations    ${s.operations} (${s.writes} writes, ${s.reads} reads; ok ${s.ok}, error ${s.error}, unknown ${s.unknown})`,
    `  acknowledged  ${s.acknowledged} writes (${s.forwarded_writes_ok} forwarded by a performance secondary)`,
    `  lost          ${s.lost}   failover loss ${s.failover_loss}`,
    `  failover RPO  ${rpo}`,
    `  convergence   max ${s.max_convergence_ms} ms  ${JSON.stringify(s.convergence_ms)}; filtered roots verified ${JSON.stringify(s.root_verified_ms)}`,
    `  merkle-check  ${JSON.stringify(s.merkle_check_clean)}`,
    ...(s.transit_ciphertexts_checked ? [`  transit       ${s.transit_ciphertexts_checked} acknowledged ciphertexts decrypted on the primary and every performance secondary`] : []),
    ...(s.start_failures?.length ? [`  start failed  ${s.start_failures.length} time(s), started again: ${JSON.stringify(s.start_failures.slice(0, 3))}`] : []),
    `  violations    ${s.violations.length}${s.violations.length ? `: ${JSON.stringify(s.violations.slice(0, 5))}` : ''}`,
    `  history       ${s.history}${s.node_dir ? `\n  node data     ${s.node_dir}` : ''}`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      topology: { type: 'string', default: 'default' }, cycles: { type: 'string', default: '5' }, seed: { type: 'string', default: '1' }, faults: { type: 'string' }, out: { type: 'string' }, 'cycle-ms': { type: 'string', default: '2500' },
      'wal-max': { type: 'string', default: '64' }, 'converge-ms': { type: 'string', default: '60000' }, keep: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(`usage: node scripts/nemesis.mjs [--topology default|ha] [--cycles N] [--seed S] [--faults ${FAULTS.join(',')} | (ha) ${HA_FAULTS.join(',')}] [--out DIR] [--cycle-ms MS] [--wal-max N] [--converge-ms MS] [--keep]`);
    process.exit(0);
  }
  const topology = TOPOLOGIES[values.topology];
  if (topology === undefined) {
    console.error(`--topology takes ${Object.keys(TOPOLOGIES).join(' or ')}; got ${values.topology}`);
    process.exit(2);
  }
  const num = (k) => {
    const v = Number(values[k]);
    if (!Number.isInteger(v) || v < 0) {
      console.error(`--${k} must be a non-negative integer, got ${values[k]}`);
      process.exit(2);
    }
    return v;
  };
  const faults = (values.faults ?? topology.faults.join(',')).split(',').map((f) => f.trim()).filter(Boolean);
  const unknown = faults.filter((f) => !topology.faults.includes(f));
  if (faults.length === 0 || unknown.length > 0) {
    console.error(`--faults takes some of ${topology.faults.join(', ')} (topology ${values.topology}); got ${values.faults}`);
    process.exit(2);
  }
  runNemesis({ topology: values.topology, faults, cycles: num('cycles'), seed: num('seed'), cycleMs: num('cycle-ms'), walMax: num('wal-max'), convergeMs: num('converge-ms'), keep: values.keep, ...(values.out ? { out: values.out } : {}) })
    .then((s) => {
      console.log(render(s));
      process.exit(s.violations.length === 0 ? 0 : 1);
    })
    .catch((e) => {
      console.error(e instanceof Error ? e.stack : e);
      process.exit(2);
    });
}
