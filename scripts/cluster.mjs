/**
 * A local replicated cluster for trying failover by hand: a primary, a DR secondary and a
 * performance secondary as child processes on 127.0.0.1, data under .tessera-cluster/ in the repo.
 * Build first (`npm run cluster` does).
 *
 *   npm run cluster                              # primary :8200/:8201, DR secondary :8210/:8211,
 *                                                # performance secondary :8220/:8221
 *   node scripts/cluster.mjs --base-port 9200    # the same layout from 9200
 *   node scripts/cluster.mjs --fresh             # wipe .tessera-cluster/ first
 *   npm run cluster -- --ha                      # the primary cluster is three HA nodes on one
 *                                                # PostgreSQL: :8200/:8201, :8202/:8203,
 *                                                # :8204/:8205; PostgreSQL on :8230
 *
 * With --ha the primary cluster is three nodes (primary, primary-2, primary-3) sharing one private
 * PostgreSQL 15 (test/support/postgres.ts: Debian's postgresql-15, run as `postgres` when we are
 * root) with `ha_enabled` and `ha_lease_ttl = "2s"`: one is active, the others are standbys that
 * relay every request to it. The server's files are .tessera-cluster/postgres/ (data/, server.log),
 * kept across runs like the nodes' (as root, .tessera-cluster/ is made searchable, mode 0711, so
 * that `postgres` can reach them; its files stay private). The secondaries are LevelDB nodes as
 * without --ha. A directory set up one way is resumed only the same way (else --fresh).
 *
 * First run: dev license, init the primary (5 shares, threshold 3) and unseal it, mount KV v2 at
 * secret/, enable DR and performance primary, init and unseal each secondary (1 throwaway share:
 * activation replaces its seal with the primary's), issue a secondary token of each kind,
 * activate, wait for `stream-wals`. The performance secondary's enabling token does not survive
 * its activation: a root token of its own is generated there with the primary's unseal keys
 * (`performance_root_token`; tokens are local to each cluster). Later runs on the same data only
 * unseal (with the primary's keys) and resume whatever roles the nodes hold, so the state left by
 * a failover drill survives a restart. .tessera-cluster/cluster.json
 * (mode 0600) holds addresses, pids, the root token and the unseal keys; node logs go to
 * .tessera-cluster/<node>.log. SIGINT/SIGTERM stop every node.
 *
 * A first run (no primary data yet) builds the topology with the tests' topology builders on the
 * fixed layout (startCluster, test/harness/cluster.ts; with --ha the primary cluster is the HA
 * topology, startHaCluster in test/harness/ha.ts, and the secondaries join it through
 * joinSecondary); later runs resume step by step.
 * Every step is the tests' typed house (test/harness: the node starter, config and license
 * writers, HTTP client, activation, generate-root, waits), loaded through @swc-node/register.
 */
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import '@swc-node/register/esm-register';

const { startPostgres } = await import('../test/support/postgres.js');
const {
  activateSecondary, asFixedNode, createHarness, DR, enablePrimary, eventually, fixedNodeOptions, generateRoot, initAndUnseal, joinSecondary, mainJs, mountKv2,
  must, PERF, replStatus, repoRoot, secondaryToken, startCluster, startFixedNode, startHaCluster, unsealWith, vault, waitStreaming,
} = await import('../test/harness/index.js');

const drStatus = (apiAddr) => replStatus(apiAddr, 'dr');
const leader = (apiAddr) => must(vault(apiAddr).get('sys/leader'), [200]);

/** Waits until the HA nodes at `apiAddrs` all name one active node, which says is_self; resolves with its API address. */
async function waitActive(apiAddrs, timeoutMs = 30_000) {
  return eventually(async () => {
    const views = await Promise.all(apiAddrs.map(leader));
    const named = new Set(views.map((v) => v.leader_address));
    const self = apiAddrs.filter((_, i) => views[i].is_self === true);
    if (named.size !== 1 || self.length !== 1 || !named.has(self[0])) throw new Error(`no agreed active node yet: ${JSON.stringify(views.map((v) => [v.is_self, v.leader_address]))}`);
    return self[0];
  }, { timeoutMs, intervalMs: 100 });
}
const perfStatus = (apiAddr) => replStatus(apiAddr, 'performance');
const sealStatus = (apiAddr) => must(vault(apiAddr).get('sys/seal-status'), [200]);

async function saveState(file, state) {
  const tmp = `${file}.tmp`;
  await writeFile(tmp, `${JSON.stringify({ ...state, updated: new Date().toISOString() }, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}

/** True when `pid` is a running Tessera node (its command line names main.js or bin/tessera.js). */
const alive = (pid) => {
  try {
    if (typeof pid !== 'number' || !process.kill(pid, 0)) return false;
  } catch {
    return false;
  }
  try {
    return /main\.js|tessera/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return true; // no /proc: trust the signal probe
  }
};

async function main() {
  const { values } = parseArgs({ options: { 'base-port': { type: 'string', default: '8200' }, fresh: { type: 'boolean', default: false }, ha: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    console.log('usage: node scripts/cluster.mjs [--base-port N] [--fresh] [--ha]   (build first: npm run build)');
    return;
  }
  const base = Number(values['base-port']);
  const ha = values.ha;
  if (!Number.isInteger(base) || base < 1 || base + (ha ? 30 : 21) > 65535) throw new Error(`--base-port must be a port number, got ${values['base-port']}`);
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);

  const dir = join(repoRoot, '.tessera-cluster');
  const stateFile = join(dir, 'cluster.json');
  const previous = existsSync(stateFile) ? JSON.parse(await readFile(stateFile, 'utf8')) : undefined;
  const running = Object.entries(previous?.nodes ?? {}).filter(([, n]) => alive(n.pid));
  if (running.length > 0) throw new Error(`${running.map(([k, n]) => `${k} (pid ${n.pid})`).join(', ')} from cluster.json still running; stop the other cluster.mjs first`);
  if (!values.fresh && previous !== undefined && (previous.ha === true) !== ha) {
    throw new Error(`${dir} holds a cluster set up ${previous.ha === true ? 'with' : 'without'} --ha: run the same way, or start over with --fresh`);
  }
  if (values.fresh) await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const state = values.fresh || !previous ? { created: new Date().toISOString() } : previous;
  state.ha = ha;

  const harness = createHarness();
  // --ha: the primary cluster's nodes share one PostgreSQL (kept under DIR/postgres); the
  // secondaries stay on LevelDB.
  let pg;
  if (ha) {
    // As root the server runs as `postgres`, which must reach DIR/postgres: DIR searchable only.
    if (process.getuid?.() === 0) await chmod(dir, 0o711);
    pg = await startPostgres({ dir: join(dir, 'postgres'), port: base + 30 });
    // `url` is the nodes' database: the HA topology makes it on a first run; later runs use the one saved.
    state.postgresql = { url: pg.fresh ? undefined : (state.postgresql?.url ?? pg.url), port: pg.port, dir: join(dir, 'postgres'), log: join(dir, 'postgres', 'server.log') };
  }
  const postgresql = pg && { postgresql: { connectionUrl: state.postgresql.url, haEnabled: true, haLeaseTtl: '2s' } };
  const layout = {
    primary: { apiPort: base, clusterPort: base + 1, ...postgresql },
    ...(ha ? { 'primary-2': { apiPort: base + 2, clusterPort: base + 3, ...postgresql }, 'primary-3': { apiPort: base + 4, clusterPort: base + 5, ...postgresql } } : {}),
    secondary: { apiPort: base + 10, clusterPort: base + 11 },
    performance: { apiPort: base + 20, clusterPort: base + 21 },
  };
  const standbys = ha ? ['primary-2', 'primary-3'] : [];
  const nodes = {};
  const stopAll = async () => {
    const exits = await Promise.all(Object.values(nodes).map((n) => n.stop().catch(() => n.exited)));
    await pg?.stop().catch(() => undefined);
    return exits;
  };
  const haRoles = {};
  let stopping = false;
  const modes = {};
  // In the layout's order (the primary cluster first), whatever order the nodes were started in.
  const started = () => Object.keys(layout).filter((k) => nodes[k] !== undefined).map((k) => [k, nodes[k]]);
  const describe = () => Object.fromEntries(started().map(([k, n]) => [k, {
    api_addr: n.apiAddr, cluster_addr: n.clusterAddr, pid: n.running() ? n.pid : null, dr_mode_at_start: modes[k] ?? null, ...(ha ? { ha_role_at_start: haRoles[k] ?? null } : {}),
    home: n.home, data_dir: n.storageDir, config: join(n.home, 'config.hcl'), log: n.logFile,
  }]));
  const save = () => saveState(stateFile, { ...state, warning: 'SECRETS: this file holds the root token and every unseal key of the cluster', nodes: describe() });

  if (state.base_port !== undefined && state.base_port !== base) {
    console.log(`warning: the cluster was set up on base port ${state.base_port}; a secondary keeps the primary's old cluster address until update-primary`);
  }
  try {
    const replication = { walMaxEntries: 100_000, walMaxBytes: 268_435_456 };
    if (ha ? pg.fresh : !existsSync(join(dir, 'primary', 'data'))) {
      // First run: the topology builders on the fixed layout. The state is saved once every node
      // is initialised (before replication is enabled), and again once both secondaries are
      // activated and in sync; a run that dies in between resumes below.
      const opts = (name) => fixedNodeOptions(dir, name, { ...layout[name], replication });
      const bootstrap = (c) => {
        const keys = [...c.unsealKeys];
        Object.assign(state, { root_token: c.rootToken, unseal_keys: keys, unseal_keys_b64: keys.map((k) => Buffer.from(k, 'hex').toString('base64')), threshold: 3 });
        state.secondary_bootstrap = { root_token: nodes.secondary.rootToken, unseal_key: nodes.secondary.unsealKeys[0], note: 'used only until DR activation replaces this seal' };
        state.performance_bootstrap = { root_token: nodes.performance.rootToken, unseal_key: nodes.performance.unsealKeys[0], note: 'used only until performance activation replaces this seal and its tokens' };
        state.base_port = base;
        return save();
      };
      if (ha) {
        // The primary cluster is the house's HA topology (test/harness/ha.ts): every node
        // unsealed, secret/ mounted through the active one; the secondaries, started beside it,
        // join that node through the one activation path (test/harness/cluster.ts).
        const names = ['primary', ...standbys];
        const [c, dr, perf] = await Promise.all([
          startHaCluster(harness, { postgres: pg, leaseTtl: '2s', init: { shares: 5, threshold: 3 }, mountKv2: true, node: (i) => opts(names[i]) }),
          ...['secondary', 'performance'].map(async (name) => harness.startNode({ ...(await opts(name)), init: true })),
        ]);
        state.postgresql.url = c.url;
        names.forEach((name, i) => { nodes[name] = asFixedNode(c.nodes[i], dir, name, layout[name].clusterPort); });
        for (const [name, n] of [['secondary', dr], ['performance', perf]]) nodes[name] = asFixedNode(n, dir, name, layout[name].clusterPort);
        await bootstrap(c);
        const active = await c.active();
        await joinSecondary(active, nodes.secondary, 'dr-secondary', 'dr');
        await joinSecondary(active, nodes.performance, 'perf-secondary', 'performance');
      } else {
        await startCluster(harness, {
          primary: await opts('primary'),
          primaryInit: { shares: 5, threshold: 3 },
          mountKv2: true,
          dr: [{ id: 'dr-secondary', node: await opts('secondary') }],
          performance: [{ id: 'perf-secondary', node: await opts('performance') }],
          beforeEnable: async (c) => {
            for (const [name, n] of [['primary', c.primary], ['secondary', c.dr[0]], ['performance', c.performance[0]]]) nodes[name] = asFixedNode(n, dir, name, layout[name].clusterPort);
            await bootstrap(c.primary);
          },
        });
      }
      Object.assign(state, { activated: true, dr_secondary_id: 'dr-secondary' });
      Object.assign(state, { performance_activated: true, performance_secondary_id: 'perf-secondary', performance_root_token: nodes.performance.rootToken });
      await save();
    } else {
      // Later runs on the same data: start the nodes again, unseal, and finish whatever a run
      // that died left undone.
      for (const [name, ports] of Object.entries(layout)) {
        nodes[name] = await startFixedNode(harness, dir, name, { ...ports, replication });
      }
      state.base_port = base;
      const { primary, secondary, performance } = nodes;

      // Unseal keys: the primary's, which every node uses once activated; the secondary's own
      // throwaway share only until then.
      const p0 = await sealStatus(primary.apiAddr);
      if (!p0.initialized) {
        const init = await initAndUnseal(primary.apiAddr, { shares: 5, threshold: 3 });
        Object.assign(state, { root_token: init.rootToken, unseal_keys: init.keys, unseal_keys_b64: init.keysBase64, threshold: 3 });
        await save();
      }
      if (!state.unseal_keys) throw new Error(`${stateFile} has no unseal keys for the existing data; start over with --fresh`);
      const s0 = await sealStatus(secondary.apiAddr);
      if (!s0.initialized) {
        const init = await initAndUnseal(secondary.apiAddr);
        state.secondary_bootstrap = { root_token: init.rootToken, unseal_key: init.keys[0], note: 'used only until DR activation replaces this seal' };
        await save();
      }
      const f0 = await sealStatus(performance.apiAddr);
      if (!f0.initialized) {
        const init = await initAndUnseal(performance.apiAddr);
        state.performance_bootstrap = { root_token: init.rootToken, unseal_key: init.keys[0], note: 'used only until performance activation replaces this seal and its tokens' };
        await save();
      }
      const ownKey = { secondary: state.secondary_bootstrap?.unseal_key, performance: state.performance_bootstrap?.unseal_key };
      for (const [k, n] of Object.entries(nodes)) {
        const st = await sealStatus(n.apiAddr);
        await unsealWith(n.apiAddr, st.n === 1 && ownKey[k] ? [ownKey[k]] : state.unseal_keys);
      }
      if (ha) await waitActive(['primary', ...standbys].map((k) => nodes[k].apiAddr));

      if (!state.activated) {
        const mounts = await must(vault(primary.apiAddr, state.root_token).get('sys/mounts'));
        if (!mounts.data?.['secret/']) await mountKv2(primary.apiAddr, state.root_token);
        if ((await drStatus(primary.apiAddr)).mode === 'disabled') await enablePrimary(primary.apiAddr, state.root_token, '', 'dr');
        const sdr = await drStatus(secondary.apiAddr);
        let id = sdr.secondary_id;
        if (sdr.mode === 'disabled') {
          // A run that died between token and activation used the id up: ids are single-use.
          const known = (await drStatus(primary.apiAddr)).known_secondaries ?? [];
          id = known.includes('dr-secondary') ? `dr-secondary-${Date.now()}` : 'dr-secondary';
          await activateSecondary(secondary.apiAddr, state.secondary_bootstrap.root_token, await secondaryToken(primary.apiAddr, state.root_token, id), 'dr');
        }
        Object.assign(state, { activated: true, dr_secondary_id: id });
        await save();
      }
      if (!state.performance_activated) {
        if ((await perfStatus(primary.apiAddr)).mode === 'disabled') await enablePrimary(primary.apiAddr, state.root_token, '', 'performance');
        const fs = await perfStatus(performance.apiAddr);
        let id = fs.secondary_id;
        if (fs.mode === 'disabled') {
          const known = (await perfStatus(primary.apiAddr)).known_secondaries ?? [];
          id = known.includes('perf-secondary') ? `perf-secondary-${Date.now()}` : 'perf-secondary';
          const jwt = await secondaryToken(primary.apiAddr, state.root_token, id, undefined, 'performance');
          await activateSecondary(performance.apiAddr, state.performance_bootstrap.root_token, jwt, 'performance');
        }
        const performanceRoot = await generateRoot(performance.apiAddr, state.unseal_keys, 60_000);
        Object.assign(state, { performance_activated: true, performance_secondary_id: id, performance_root_token: performanceRoot });
        await save();
      }
    }
    const { primary, secondary, performance } = nodes;

    // Whatever roles the nodes hold now (a failover drill may have swapped them).
    for (const [k, n] of Object.entries(nodes)) modes[k] = (await eventually(() => drStatus(n.apiAddr), { timeoutMs: 30_000, intervalMs: 50 })).mode;
    const sec = Object.keys(modes).find((k) => modes[k] === 'secondary' || modes[k] === 'bootstrapping');
    if (sec && Object.values(modes).includes('primary')) {
      process.stdout.write(`waiting for ${sec} to stream WALs...\n`);
      modes[sec] = (await waitStreaming(nodes[sec].apiAddr)).mode;
    }
    const perfModes = {};
    for (const [k, n] of Object.entries(nodes)) perfModes[k] = (await perfStatus(n.apiAddr).catch(() => ({ mode: 'unknown' }))).mode;
    if (perfModes.performance === 'secondary' && Object.values(perfModes).includes('primary')) {
      process.stdout.write('waiting for performance to stream WALs...\n');
      perfModes.performance = (await waitStreaming(performance.apiAddr, { kind: 'performance' })).mode;
    }
    await save();

    if (ha) {
      const activeAddr = await waitActive(['primary', ...standbys].map((k) => nodes[k].apiAddr));
      for (const k of ['primary', ...standbys]) haRoles[k] = nodes[k].apiAddr === activeAddr ? 'active' : 'standby';
    }
    const roles = started().map(([k, n]) => `  ${k.padEnd(11)} ${ha ? `HA ${(haRoles[k] ?? '-').padEnd(8)} ` : ''}DR ${modes[k].padEnd(9)} perf ${String(perfModes[k]).padEnd(9)} api ${n.apiAddr}  cluster ${n.clusterAddr}  pid ${n.pid}  log ${n.logFile}`);
    const prim = Object.keys(haRoles).find((k) => haRoles[k] === 'active') ?? Object.keys(modes).find((k) => modes[k] === 'primary') ?? 'primary';
    console.log([
      ha
        ? `Tessera cluster is up (a primary cluster of three HA nodes on PostgreSQL ${state.postgresql.url}, a DR secondary, a performance secondary):`
        : 'Tessera cluster is up (primary, DR secondary, performance secondary):',
      ...roles,
      '',
      `WARNING: ${stateFile} holds the root token and all unseal keys (mode 0600). Keep it private.`,
      '',
      `  export VAULT_ADDR=${nodes[prim].apiAddr}`,
      `  export VAULT_TOKEN=$(jq -r .root_token ${stateFile})`,
      '  node bin/tessera.js kv put secret/app password=hunter2',
      `  curl -s ${nodes[sec ?? 'secondary'].apiAddr}/v1/${DR}/status | jq .data`,
      `  curl -s ${performance.apiAddr}/v1/${PERF}/status | jq .data`,
      `  VAULT_ADDR=${performance.apiAddr} VAULT_TOKEN=$(jq -r .performance_root_token ${stateFile}) node bin/tessera.js kv get secret/app`,
      '',
      ...(ha
        ? [
            `  curl -s ${nodes.primary.apiAddr}/v1/sys/leader | jq       # which node of the primary cluster is active`,
            `  kill -9 ${nodes[prim].pid}                                 # the active node dies: another takes over within ~2-3 s`,
            '',
          ]
        : []),
      `Failover drill: docs/failover-runbook.md. Ctrl-C stops every node${ha ? ' and PostgreSQL' : ''}.`,
    ].join('\n'));
  } catch (e) {
    await stopAll();
    // Nodes the builder started before any step handed them over: SIGKILLed.
    await harness.cleanup();
    if (Object.keys(nodes).length > 0) await save().catch(() => undefined);
    throw e;
  }

  for (const n of Object.values(nodes)) {
    void n.exited.then(async (x) => {
      if (stopping) return;
      console.log(`${n.name} (pid ${n.pid}) exited ${JSON.stringify(x)}. Restart it by hand with:\n  node bin/tessera.js server -config ${join(n.home, 'config.hcl')} >> ${n.logFile} 2>&1 &`);
      if (standbys.includes(n.name) || (ha && n.name === 'primary')) console.log(`  and unseal it with the keys in ${stateFile} (3 of unseal_keys): it joins as a standby.`);
      await save().catch(() => undefined);
    });
  }
  const shutdown = async (sig) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${sig}: stopping every node...`);
    const exits = await stopAll();
    await save();
    console.log(`stopped: ${Object.keys(nodes).map((k, i) => `${k} ${JSON.stringify(exits[i])}`).join(', ')}`);
    process.exit(0);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => void shutdown(sig));
  setInterval(() => undefined, 1 << 30); // keep running until a signal
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
