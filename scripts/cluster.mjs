/**
 * A local replicated cluster for trying failover by hand: a primary, a DR secondary and a
 * performance secondary as child processes on 127.0.0.1, data under .tessera-cluster/ in the repo.
 * Build first (`npm run cluster` does).
 *
 *   npm run cluster                              # primary :8200/:8201, DR secondary :8210/:8211,
 *                                                # performance secondary :8220/:8221
 *   node scripts/cluster.mjs --base-port 9200    # the same layout from 9200
 *   node scripts/cluster.mjs --fresh             # wipe .tessera-cluster/ first
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
 * The helpers are exported for scripts/bench-dr.mjs and scripts/bench-perf.mjs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export const repoRoot = fileURLToPath(new URL('../', import.meta.url));
export const mainJs = process.env.TESSERA_MAIN ?? join(repoRoot, 'dist/cli/main.js');
const DR = 'sys/replication/dr';
const PERF = 'sys/replication/performance';

/** One HTTP call to a node; `body` is JSON-encoded; the answer's JSON is parsed when there is one. */
export function call(apiAddr, method, path, { token, body, agent } = {}) {
  const url = new URL(apiAddr);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers = { ...(token ? { 'X-Vault-Token': token } : {}), ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}) };
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: `/v1/${path}`, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json = null;
        try {
          json = text === '' ? null : JSON.parse(text);
        } catch {
          // not JSON: callers look at `text`
        }
        resolve({ status: res.statusCode, body: json, text });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Like `call`, but throws unless the status is one of `ok`. */
export async function must(apiAddr, method, path, opts = {}, ok = [200, 204]) {
  const r = await call(apiAddr, method, path, opts);
  if (!ok.includes(r.status)) throw new Error(`${method} ${path} on ${apiAddr} answered ${r.status}: ${r.text.slice(0, 300)}`);
  return r.body;
}

/** Retries `fn` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function waitFor(what, fn, { timeoutMs = 30_000, intervalMs = 50 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      if (e?.fatal) throw e;
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await delay(intervalMs);
  }
}

export const drStatus = async (apiAddr, agent) => (await must(apiAddr, 'GET', `${DR}/status`, { agent })).data;
export const perfStatus = async (apiAddr, agent) => (await must(apiAddr, 'GET', `${PERF}/status`, { agent })).data;
export const sealStatus = (apiAddr) => must(apiAddr, 'GET', 'sys/seal-status');

/** A dev license under `dir` (made once); resolves with its path and the issuer public key. */
export async function ensureLicense(dir) {
  if (!existsSync(join(dir, 'issuer.pub'))) {
    const r = spawnSync(process.execPath, [mainJs, 'license', 'dev', '-out', dir], { cwd: repoRoot, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`license dev failed (${r.status}): ${r.stderr}`);
  }
  return { licensePath: join(dir, 'license.json'), issuerKey: (await readFile(join(dir, 'issuer.pub'), 'utf8')).trim() };
}

/** Writes HOME/config.hcl for a node on fixed ports, storage in HOME/data. */
export async function writeNodeConfig(home, { apiPort, clusterPort, license, walMaxEntries = 100_000, walMaxBytes = 268_435_456, logLevel = 'info' }) {
  const q = JSON.stringify;
  await mkdir(home, { recursive: true, mode: 0o700 });
  const config = [
    `storage "leveldb" { path = ${q(join(home, 'data'))} }`,
    'listener "tcp" {',
    `  address     = "127.0.0.1:${apiPort}"`,
    '  tls_disable = true',
    '}',
    `api_addr            = "http://127.0.0.1:${apiPort}"`,
    `cluster_addr        = "127.0.0.1:${clusterPort}"`,
    `license_path        = ${q(license.licensePath)}`,
    `license_issuer_keys = [${q(license.issuerKey)}]`,
    `log_level           = ${q(logLevel)}`,
    `replication {`,
    `  wal_max_entries = ${walMaxEntries}`,
    `  wal_max_bytes   = ${walMaxBytes}`,
    `}`,
    '',
  ].join('\n');
  const path = join(home, 'config.hcl');
  await writeFile(path, config);
  return path;
}

async function assertPortFree(port) {
  await new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', (e) => reject(new Error(`127.0.0.1:${port} is in use (${e.code}); pick another --base-port or stop what holds it`)));
    srv.listen(port, '127.0.0.1', () => srv.close(resolve));
  });
}

/** Free ports from the OS (closed again at once: a small race, fine for a benchmark). */
export async function freePorts(n) {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/**
 * Starts `server -config HOME/config.hcl` with stdout and stderr appended to `logFile` (the node
 * writes to the file itself, so it outlives this process's pipes). Resolves once the API answers.
 */
export async function startNode({ name, home, apiPort, clusterPort, logFile }) {
  await assertPortFree(apiPort);
  await assertPortFree(clusterPort);
  const fd = openSync(logFile, 'a');
  // Its own process group: a terminal's Ctrl-C reaches only cluster.mjs, which stops the nodes in order.
  const proc = spawn(process.execPath, [mainJs, 'server', '-config', join(home, 'config.hcl')], { cwd: repoRoot, stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  let exit;
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve((exit = { code, signal }))));
  const apiAddr = `http://127.0.0.1:${apiPort}`;
  const tail = async () => (await readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n');
  await waitFor(`${name} to answer on ${apiAddr}`, async () => {
    if (exit) throw Object.assign(new Error(`${name} exited (${JSON.stringify(exit)}) before it was ready; ${logFile}:\n${await tail()}`), { fatal: true });
    return (await call(apiAddr, 'GET', 'sys/seal-status')).status;
  }, { timeoutMs: 30_000, intervalMs: 50 }).catch(async (e) => {
    proc.kill('SIGKILL');
    throw e;
  });
  return {
    name,
    pid: proc.pid,
    home,
    dataDir: join(home, 'data'),
    logFile,
    apiAddr,
    clusterAddr: `127.0.0.1:${clusterPort}`,
    exited,
    isRunning: () => exit === undefined,
    /** SIGTERM, SIGKILL after `timeoutMs`; resolves with the exit. */
    async stop(timeoutMs = 15_000) {
      if (exit) return exit;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
}

/** sys/init; the keys in hex as `keys`, base64 as `keys_base64`. */
export const initNode = (apiAddr, shares, threshold) => must(apiAddr, 'PUT', 'sys/init', { body: { secret_shares: shares, secret_threshold: threshold } }, [200]);

/** Provides shares until the node is unsealed; throws when they run out first. */
export async function unsealNode(apiAddr, keys) {
  let st = await sealStatus(apiAddr);
  for (const key of keys) {
    if (!st.sealed) break;
    st = await must(apiAddr, 'PUT', 'sys/unseal', { body: { key } }, [200]);
  }
  if (st.sealed) throw new Error(`${apiAddr} is still sealed after ${keys.length} key(s) (threshold ${st.t})`);
}

/** Issues a secondary token of `kind` on the primary and activates `secondaryAddr` with it. */
export async function activateSecondary({ primaryAddr, rootToken, secondaryAddr, secondaryToken, id, kind = 'dr' }) {
  const base = kind === 'dr' ? DR : PERF;
  const tok = await must(primaryAddr, 'POST', `${base}/primary/secondary-token`, { token: rootToken, body: { id } }, [200]);
  await must(secondaryAddr, 'POST', `${base}/secondary/enable`, { token: secondaryToken, body: { token: tok.wrap_info.token } }, [204]);
}

/** Runs one token generation at `base` (attempt, then keys until complete) and decodes the result. */
async function generateToken(secondaryAddr, base, keys) {
  const cur = await must(secondaryAddr, 'GET', `${base}/attempt`);
  if (cur.started) await must(secondaryAddr, 'DELETE', `${base}/attempt`);
  const { nonce, otp } = await must(secondaryAddr, 'POST', `${base}/attempt`, { body: {} }, [200]);
  let last;
  for (const key of keys) {
    last = await must(secondaryAddr, 'POST', `${base}/update`, { body: { key, nonce } }, [200]);
    if (last.complete) break;
  }
  if (!last?.complete) throw new Error(`${base}: the generation did not complete: too few keys`);
  const enc = Buffer.from(last.encoded_token, 'base64');
  return Buffer.from(enc.map((b, i) => b ^ otp.charCodeAt(i))).toString('utf8');
}

/** Runs a DR operation token generation on a DR secondary with `keys` and decodes the result. */
export function drOperationToken(secondaryAddr, keys) {
  return generateToken(secondaryAddr, `${DR}/secondary/generate-operation-token`, keys);
}

/**
 * A root token of a performance secondary from `sys/generate-root` with its primary's unseal keys,
 * once its activation is over: the token that enabled it does not survive the activation.
 */
export async function generateRoot(secondaryAddr, keys) {
  await waitFor(`${secondaryAddr} to finish its performance activation`, async () => ((await perfStatus(secondaryAddr)).mode === 'bootstrapping' ? undefined : true), { timeoutMs: 60_000 });
  return generateToken(secondaryAddr, 'sys/generate-root', keys);
}

/** Resolves the status once the secondary streams (from `primaryClusterAddr`, when given). */
export async function waitForStreaming(secondaryAddr, timeoutMs = 60_000, kind = 'dr', primaryClusterAddr = undefined) {
  return waitFor(`${secondaryAddr} to reach state stream-wals${primaryClusterAddr ? ` from ${primaryClusterAddr}` : ''}`, async () => {
    const s = await (kind === 'dr' ? drStatus : perfStatus)(secondaryAddr);
    // Status answers Vault's `https://host:port`; the caller may name it either way.
    const hostPort = (a) => String(a ?? '').replace(/^https:\/\//, '');
    const from = primaryClusterAddr === undefined || hostPort(s.primary_cluster_addr) === hostPort(primaryClusterAddr);
    return s.mode === 'secondary' && s.state === 'stream-wals' && from ? s : undefined;
  }, { timeoutMs, intervalMs: 100 });
}

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
  const { values } = parseArgs({ options: { 'base-port': { type: 'string', default: '8200' }, fresh: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    console.log('usage: node scripts/cluster.mjs [--base-port N] [--fresh]   (build first: npm run build)');
    return;
  }
  const base = Number(values['base-port']);
  if (!Number.isInteger(base) || base < 1 || base + 21 > 65535) throw new Error(`--base-port must be a port number, got ${values['base-port']}`);
  if (!existsSync(mainJs)) throw new Error(`${mainJs} is missing: build first (npm run build)`);

  const dir = join(repoRoot, '.tessera-cluster');
  const stateFile = join(dir, 'cluster.json');
  const previous = existsSync(stateFile) ? JSON.parse(await readFile(stateFile, 'utf8')) : undefined;
  const running = Object.entries(previous?.nodes ?? {}).filter(([, n]) => alive(n.pid));
  if (running.length > 0) throw new Error(`${running.map(([k, n]) => `${k} (pid ${n.pid})`).join(', ')} from cluster.json still running; stop the other cluster.mjs first`);
  if (values.fresh) await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const state = values.fresh || !previous ? { created: new Date().toISOString() } : previous;

  const license = await ensureLicense(join(dir, 'license'));
  const layout = { primary: { apiPort: base, clusterPort: base + 1 }, secondary: { apiPort: base + 10, clusterPort: base + 11 }, performance: { apiPort: base + 20, clusterPort: base + 21 } };
  const nodes = {};
  const stopAll = () => Promise.all(Object.values(nodes).map((n) => n.stop()));
  let stopping = false;
  const modes = {};
  const describe = () => Object.fromEntries(Object.entries(nodes).map(([k, n]) => [k, {
    api_addr: n.apiAddr, cluster_addr: n.clusterAddr, pid: n.isRunning() ? n.pid : null, dr_mode_at_start: modes[k] ?? null,
    home: n.home, data_dir: n.dataDir, config: join(n.home, 'config.hcl'), log: n.logFile,
  }]));
  const save = () => saveState(stateFile, { ...state, warning: 'SECRETS: this file holds the root token and every unseal key of the cluster', nodes: describe() });

  if (state.base_port !== undefined && state.base_port !== base) {
    console.log(`warning: the cluster was set up on base port ${state.base_port}; a secondary keeps the primary's old cluster address until update-primary`);
  }
  try {
    for (const [name, ports] of Object.entries(layout)) {
      const home = join(dir, name);
      await writeNodeConfig(home, { ...ports, license });
      nodes[name] = await startNode({ name, home, ...ports, logFile: join(dir, `${name}.log`) });
    }
    state.base_port = base;
    const { primary, secondary, performance } = nodes;

    // Unseal keys: the primary's, which every node uses once activated; the secondary's own
    // throwaway share only until then.
    const p0 = await sealStatus(primary.apiAddr);
    if (!p0.initialized) {
      const init = await initNode(primary.apiAddr, 5, 3);
      Object.assign(state, { root_token: init.root_token, unseal_keys: init.keys, unseal_keys_b64: init.keys_base64, threshold: 3 });
      await save();
    }
    if (!state.unseal_keys) throw new Error(`${stateFile} has no unseal keys for the existing data; start over with --fresh`);
    const s0 = await sealStatus(secondary.apiAddr);
    if (!s0.initialized) {
      const init = await initNode(secondary.apiAddr, 1, 1);
      state.secondary_bootstrap = { root_token: init.root_token, unseal_key: init.keys[0], note: 'used only until DR activation replaces this seal' };
      await save();
    }
    const f0 = await sealStatus(performance.apiAddr);
    if (!f0.initialized) {
      const init = await initNode(performance.apiAddr, 1, 1);
      state.performance_bootstrap = { root_token: init.root_token, unseal_key: init.keys[0], note: 'used only until performance activation replaces this seal and its tokens' };
      await save();
    }
    const ownKey = { secondary: state.secondary_bootstrap?.unseal_key, performance: state.performance_bootstrap?.unseal_key };
    for (const [k, n] of Object.entries(nodes)) {
      const st = await sealStatus(n.apiAddr);
      await unsealNode(n.apiAddr, st.n === 1 && ownKey[k] ? [ownKey[k]] : state.unseal_keys);
    }

    if (!state.activated) {
      const mounts = await must(primary.apiAddr, 'GET', 'sys/mounts', { token: state.root_token });
      if (!mounts.data?.['secret/']) await must(primary.apiAddr, 'POST', 'sys/mounts/secret', { token: state.root_token, body: { type: 'kv', options: { version: '2' } } });
      if ((await drStatus(primary.apiAddr)).mode === 'disabled') await must(primary.apiAddr, 'POST', `${DR}/primary/enable`, { token: state.root_token, body: {} });
      const sdr = await drStatus(secondary.apiAddr);
      let id = sdr.secondary_id;
      if (sdr.mode === 'disabled') {
        // A run that died between token and activation used the id up: ids are single-use.
        const known = (await drStatus(primary.apiAddr)).known_secondaries ?? [];
        id = known.includes('dr-secondary') ? `dr-secondary-${Date.now()}` : 'dr-secondary';
        await activateSecondary({ primaryAddr: primary.apiAddr, rootToken: state.root_token, secondaryAddr: secondary.apiAddr, secondaryToken: state.secondary_bootstrap.root_token, id });
      }
      Object.assign(state, { activated: true, dr_secondary_id: id });
      await save();
    }
    if (!state.performance_activated) {
      if ((await perfStatus(primary.apiAddr)).mode === 'disabled') await must(primary.apiAddr, 'POST', `${PERF}/primary/enable`, { token: state.root_token, body: {} });
      const fs = await perfStatus(performance.apiAddr);
      let id = fs.secondary_id;
      if (fs.mode === 'disabled') {
        const known = (await perfStatus(primary.apiAddr)).known_secondaries ?? [];
        id = known.includes('perf-secondary') ? `perf-secondary-${Date.now()}` : 'perf-secondary';
        await activateSecondary({ kind: 'performance', primaryAddr: primary.apiAddr, rootToken: state.root_token, secondaryAddr: performance.apiAddr, secondaryToken: state.performance_bootstrap.root_token, id });
      }
      const performanceRoot = await generateRoot(performance.apiAddr, state.unseal_keys);
      Object.assign(state, { performance_activated: true, performance_secondary_id: id, performance_root_token: performanceRoot });
      await save();
    }

    // Whatever roles the nodes hold now (a failover drill may have swapped them).
    for (const [k, n] of Object.entries(nodes)) modes[k] = (await waitFor(`${k} DR status`, () => drStatus(n.apiAddr))).mode;
    const sec = Object.keys(modes).find((k) => modes[k] === 'secondary' || modes[k] === 'bootstrapping');
    if (sec && Object.values(modes).includes('primary')) {
      process.stdout.write(`waiting for ${sec} to stream WALs...\n`);
      modes[sec] = (await waitForStreaming(nodes[sec].apiAddr)).mode;
    }
    const perfModes = {};
    for (const [k, n] of Object.entries(nodes)) perfModes[k] = (await perfStatus(n.apiAddr).catch(() => ({ mode: 'unknown' }))).mode;
    if (perfModes.performance === 'secondary' && Object.values(perfModes).includes('primary')) {
      process.stdout.write('waiting for performance to stream WALs...\n');
      perfModes.performance = (await waitForStreaming(performance.apiAddr, 60_000, 'performance')).mode;
    }
    await save();

    const roles = Object.entries(nodes).map(([k, n]) => `  ${k.padEnd(11)} DR ${modes[k].padEnd(9)} perf ${String(perfModes[k]).padEnd(9)} api ${n.apiAddr}  cluster ${n.clusterAddr}  pid ${n.pid}  log ${n.logFile}`);
    const prim = Object.keys(modes).find((k) => modes[k] === 'primary') ?? 'primary';
    console.log([
      'Tessera cluster is up (primary, DR secondary, performance secondary):',
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
      'Failover drill: docs/failover-runbook.md. Ctrl-C stops every node.',
    ].join('\n'));
  } catch (e) {
    await stopAll();
    if (Object.keys(nodes).length > 0) await save().catch(() => undefined);
    throw e;
  }

  for (const n of Object.values(nodes)) {
    void n.exited.then(async (x) => {
      if (stopping) return;
      console.log(`${n.name} (pid ${n.pid}) exited ${JSON.stringify(x)}. Restart it by hand with:\n  node bin/tessera.js server -config ${join(n.home, 'config.hcl')} >> ${n.logFile} 2>&1 &`);
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
