#!/usr/bin/env node
/**
 * docker-compose.yml, driven as an operator would, with Debian's docker.io and docker-compose 1.29:
 *
 *   node scripts/compose-test.mjs      # 2-10 minutes; npm test runs it beside jest (scripts/test-all.mjs)
 *
 * 1. Docker: uses a running daemon; otherwise, as root with apt, installs docker.io,
 *    docker-compose and debootstrap when missing and starts `dockerd --iptables=false
 *    --bridge=none` itself, niced (log in the run's temp dir; stopped again at the end). Without root or
 *    apt it cannot: a failure under CI=true or TESSERA_COMPOSE_REQUIRED=1, a skip notice otherwise.
 * 2. The base image node:20-bookworm-slim: present, else pulled, else (no registry) a stand-in:
 *    `debootstrap --variant=minbase bookworm` from this machine's own apt mirror, plus this
 *    machine's Node 20 and npm, the user node (uid 1000), and the CA bundle Node trusts here
 *    (NODE_EXTRA_CA_CERTS or npm's cafile) so npm ci inside the build reaches the registry.
 *    It stays in the daemon's images: later runs skip this step.
 * 3. `docker-compose build --parallel`, then `docker-compose up -d --build` (cached by then).
 *    PostgreSQL: no published port, unreachable from a secondary's container, and only TLS with
 *    the password it generated at its first start gets in (not `tessera`, nothing in plain).
 * 4. Init the primary cluster on `primary` (3 shares, threshold 2), unseal its three HA nodes,
 *    KV v2 at secret/, enable DR and performance primary, init and activate both secondaries, a
 *    root token on the performance secondary from the primary's keys, a secret written on the
 *    primary and read there.
 * 5. HA failover: `docker-compose kill primary`; another primary node becomes active, the secret
 *    reads back through it, a write through the remaining standby reaches the performance
 *    secondary, and the DR secondary is in sync with the new active node.
 * 6. DR failover: the other two primary nodes killed, promote the DR secondary with a DR
 *    operation token made from the primary's unseal keys, point the performance secondary at it
 *    (update-primary), a write on the new primary read on the performance secondary.
 * 7. `docker-compose restart dr-secondary`: back within seconds, sealed; unsealed, data still there.
 * 8. `docker-compose down`, `docker-compose up -d`: every node sealed, unsealed, the data of the
 *    LevelDB volumes and of PostgreSQL's volume still there.
 * 9. `docker-compose down -v`: no volume is left, named or anonymous (`docker volume ls`).
 *
 * Every step is logged with its time. A hard deadline (TESSERA_COMPOSE_DEADLINE_S, 1200 s unless
 * set; a first run, debootstrap and both image builds included, took about 9.5 minutes alone) and any failure end in `docker-compose down -v`, after the containers' last log lines.
 * The project is named tessera-compose-test (`-p`); the published ports 8200, 8210, 8220, 8230
 * and 8240 on 127.0.0.1 must be free.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, realpathSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import '@swc-node/register/esm-register';

const {
  activateSecondary, assertPortFree, DR, drOperationToken, enablePrimary, eventually, generateRoot, initAndUnseal, mountKv2, PERF, replStatus,
  repoRoot, secondaryToken, unsealWith, vault, waitInSync, waitStreaming,
} = await import('../test/harness/index.js');

const PROJECT = 'tessera-compose-test';
const BASE_IMAGE = 'node:20-bookworm-slim';
const DEADLINE_MS = Number(process.env.TESSERA_COMPOSE_DEADLINE_S ?? 1200) * 1000;
/** Docker must run here: under CI=true (or TESSERA_COMPOSE_REQUIRED=1, which `.ci/run` sets) a missing docker is a failure. */
const REQUIRED = process.env.CI === 'true' || process.env.CI === '1' || process.env.TESSERA_COMPOSE_REQUIRED === '1';
const NODES = {
  primary: 'http://127.0.0.1:8200',
  'primary-2': 'http://127.0.0.1:8230',
  'primary-3': 'http://127.0.0.1:8240',
  'dr-secondary': 'http://127.0.0.1:8210',
  'perf-secondary': 'http://127.0.0.1:8220',
};
const PRIMARIES = ['primary', 'primary-2', 'primary-3'];
const P = NODES.primary;
const S = NODES['dr-secondary'];
const PS = NODES['perf-secondary'];

const started = Date.now();
const work = mkdtempSync(join(tmpdir(), 'tessera-compose-test-'));
const detailLog = join(work, 'commands.log');
const detailFd = openSync(detailLog, 'a');
const secs = () => ((Date.now() - started) / 1000).toFixed(1).padStart(6);
const log = (msg) => console.log(`[compose-test ${secs()}s] ${msg}`);
const detail = (text) => writeSync(detailFd, text);

/** Child processes still running, killed by the deadline before the teardown. */
const children = new Set();
let dockerdPid;
let composeUp = false;

class Skip extends Error {}

/**
 * Runs `cmd args` with a deadline; output goes to the detail log (and, on failure, its tail into
 * the error). `input`: written to stdin. `allowFail`: resolve with the exit code instead of throwing.
 */
function run(cmd, args, { timeoutMs = 120_000, input, allowFail = false, env } = {}) {
  return new Promise((resolve, reject) => {
    detail(`\n$ ${cmd} ${args.join(' ')}\n`);
    const p = spawn(cmd, args, { cwd: repoRoot, env: { ...process.env, ...env }, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    children.add(p);
    let out = '';
    const take = (c) => {
      const s = c.toString('utf8');
      out += s;
      if (out.length > 200_000) out = out.slice(-100_000);
      detail(s);
    };
    p.stdout.on('data', take);
    p.stderr.on('data', take);
    if (input !== undefined) p.stdin.end(input);
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('error', (e) => {
      clearTimeout(timer);
      children.delete(p);
      reject(new Error(`${cmd}: ${e.message}`));
    });
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(p);
      if (code === 0 || allowFail) resolve({ code, out });
      else reject(new Error(`${cmd} ${args.join(' ')} ${signal === 'SIGKILL' ? `killed after ${timeoutMs} ms` : `exited ${code}`}:\n${out.split('\n').slice(-40).join('\n')}`));
    });
  });
}

const compose = (args, opts) => run('docker-compose', ['-p', PROJECT, ...args], opts);
const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
const dockerAnswers = () => spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 }).status === 0;

/** A running Docker daemon and docker-compose, installed and started here when we are root with apt. */
async function ensureDocker() {
  const packages = { dockerd: 'docker.io', docker: 'docker.io', 'docker-compose': 'docker-compose', debootstrap: 'debootstrap' };
  const missing = [...new Set(Object.entries(packages).filter(([c]) => !has(c)).map(([, pkg]) => pkg))];
  const root = process.getuid?.() === 0;
  if (missing.length > 0) {
    if (!root || !has('apt-get')) throw new Skip(`Debian's ${missing.join(', ')} missing and not root with apt-get: sudo apt-get install -y ${missing.join(' ')}`);
    log(`installing ${missing.join(' ')} with apt-get`);
    await run('apt-get', ['update', '-qq'], { timeoutMs: 300_000, env: { DEBIAN_FRONTEND: 'noninteractive' } });
    await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { timeoutMs: 600_000, env: { DEBIAN_FRONTEND: 'noninteractive' } });
  }
  if (dockerAnswers()) return;
  if (!root) throw new Skip('no Docker daemon answers `docker info`, and starting one needs root');
  const dockerdLog = join(work, 'dockerd.log');
  log(`starting nice -n 10 dockerd --iptables=false --bridge=none (log: ${dockerdLog})`);
  const fd = openSync(dockerdLog, 'a');
  // Niced, and with it every container and image build it runs: npm test runs jest beside this
  // test, and jest's nodes must start within their deadlines while the containers start.
  const d = spawn('nice', ['-n', '10', 'dockerd', '--iptables=false', '--bridge=none'], { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  d.unref();
  dockerdPid = d.pid;
  try {
    await eventually(() => {
      if (!dockerAnswers()) throw new Error('docker info does not answer yet');
    }, { timeoutMs: 60_000, intervalMs: 500 });
  } catch (e) {
    throw new Error(`dockerd did not come up: ${e.message}\n${readFileSync(dockerdLog, 'utf8').split('\n').slice(-20).join('\n')}`);
  }
}

/** The first Debian mirror with the bookworm suite in this machine's apt sources (one-line or deb822). */
function aptMirror() {
  const files = ['/etc/apt/sources.list'];
  if (existsSync('/etc/apt/sources.list.d')) {
    for (const f of readdirSync('/etc/apt/sources.list.d').sort()) if (/\.(list|sources)$/.test(f)) files.push(join('/etc/apt/sources.list.d', f));
  }
  for (const f of files.filter((file) => existsSync(file))) {
    const text = readFileSync(f, 'utf8');
    if (f.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
        if (field('Types').includes('deb') && field('Suites').includes('bookworm') && field('URIs')[0]) return field('URIs')[0];
      }
    } else {
      for (const line of text.split('\n')) {
        const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s/.exec(line.trim());
        if (m?.[1]) return m[1];
      }
    }
  }
  return 'http://deb.debian.org/debian';
}

/** The CA bundle Node trusts on this machine beyond its own (for a TLS-inspecting proxy), if any. */
function hostCaBundle() {
  const fromEnv = process.env.NODE_EXTRA_CA_CERTS;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const npm = spawnSync('npm', ['config', 'get', 'cafile'], { encoding: 'utf8' });
  const cafile = npm.status === 0 ? npm.stdout.trim() : '';
  return cafile && cafile !== 'null' && cafile !== 'undefined' && existsSync(cafile) ? cafile : undefined;
}

/**
 * Removes a stand-in root file system (hundreds of MB), but never while anything is mounted
 * beneath it: a debootstrap cut short may leave /proc or /dev bound there.
 */
function removeRootfs(root) {
  if (!existsSync(root)) return;
  const mounted = readFileSync('/proc/mounts', 'utf8').split('\n').some((line) => line.split(' ')[1]?.startsWith(`${root}/`));
  if (mounted) console.log(`[compose-test] left ${root} in place: something is still mounted beneath it`);
  else rmSync(root, { recursive: true, force: true });
}

/** node:20-bookworm-slim: already there, else pulled, else a stand-in built from this machine's Debian mirror and Node. */
async function ensureBaseImage() {
  if ((await run('docker', ['image', 'inspect', BASE_IMAGE], { allowFail: true })).code === 0) {
    log(`${BASE_IMAGE} present`);
    return;
  }
  if ((await run('docker', ['pull', BASE_IMAGE], { timeoutMs: 300_000, allowFail: true })).code === 0) {
    log(`${BASE_IMAGE} pulled`);
    return;
  }
  const major = Number(process.versions.node.split('.')[0]);
  if (major !== 20) throw new Error(`no registry for ${BASE_IMAGE}, and the stand-in carries this machine's Node, which is ${process.versions.node}, not 20`);
  if (!has('debootstrap')) throw new Error(`no registry for ${BASE_IMAGE}, and no debootstrap to build a stand-in: apt-get install -y debootstrap`);
  const mirror = aptMirror();
  const root = join(work, 'rootfs');
  log(`no registry: a stand-in ${BASE_IMAGE} (debootstrap --variant=minbase bookworm from ${mirror}, Node ${process.versions.node})`);
  await run('debootstrap', ['--variant=minbase', 'bookworm', root, mirror], { timeoutMs: 600_000 });
  copyFileSync(realpathSync(process.execPath), join(root, 'usr/local/bin/node'));
  const npmCli = realpathSync(spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim());
  const npmDir = dirname(dirname(npmCli)); // .../node_modules/npm/bin/npm-cli.js
  await run('mkdir', ['-p', join(root, 'usr/local/lib/node_modules')]);
  await run('cp', ['-a', npmDir, join(root, 'usr/local/lib/node_modules/npm')]);
  await run('ln', ['-s', '../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr/local/bin/npm')]);
  await run('ln', ['-s', '../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr/local/bin/npx')]);
  // The official image's user: uid and gid 1000, named node.
  await run('chroot', [root, 'sh', '-c', 'groupadd -g 1000 node && useradd -u 1000 -g node -s /bin/sh -m node']);
  const changes = ['-c', 'CMD ["node"]'];
  const ca = hostCaBundle();
  if (ca !== undefined) {
    copyFileSync(ca, join(root, 'usr/local/share/host-ca-bundle.crt'));
    changes.push('-c', 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/host-ca-bundle.crt');
  }
  await run('sh', ['-c', `tar -C "$1" -c . | docker import -m "stand-in: debootstrap bookworm + this machine's node" ${changes.map((c) => `'${c}'`).join(' ')} - ${BASE_IMAGE}`, 'sh', root], {
    timeoutMs: 300_000,
  });
  removeRootfs(root);
  log(`${BASE_IMAGE} stand-in imported${ca === undefined ? '' : ` (with ${ca} as NODE_EXTRA_CA_CERTS)`}`);
}

/**
 * Polls until the node's API answers (any seal state); resolves with its seal status. Each try
 * has its own deadline: while a container starts, docker-proxy may accept a connection on the
 * published port and never answer it.
 */
const answering = (addr, timeoutMs = 60_000) =>
  eventually(async () => {
    const r = await fetch(`${addr}/v1/sys/seal-status`, { signal: AbortSignal.timeout(2_000) });
    if (r.status !== 200) throw new Error(`${addr} sys/seal-status answered ${r.status}`);
    return r.json();
  }, { timeoutMs, intervalMs: 200 });

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
}

/** The one primary node (of `names`) whose sys/leader says is_self, once every other names it. */
async function activePrimary(names) {
  return eventually(async () => {
    const leaders = await Promise.all(names.map(async (n) => (await vault(NODES[n]).get('sys/leader')).body ?? {}));
    const self = names.filter((_, i) => leaders[i].is_self === true);
    if (self.length !== 1) throw new Error(`active primary nodes: ${JSON.stringify(self)}`);
    return self[0];
  }, { timeoutMs: 60_000, intervalMs: 200 });
}

async function readSecret(addr, token, path) {
  const r = await vault(addr, token).get(`secret/data/${path}`);
  if (r.status !== 200) throw new Error(`GET secret/data/${path} on ${addr} answered ${r.status}: ${r.text.slice(0, 300)}`);
  return r.body.data.data;
}

async function writeSecret(addr, token, path, data) {
  const r = await vault(addr, token).put(`secret/data/${path}`, { data });
  if (r.status !== 200) throw new Error(`PUT secret/data/${path} on ${addr} answered ${r.status}: ${r.text.slice(0, 300)}`);
}

/** Polls until `path` reads `data` on `addr` (a secondary applies the write a moment later). */
const readsBack = (addr, token, path, data, timeoutMs = 30_000) =>
  eventually(async () => {
    const got = await readSecret(addr, token, path);
    if (JSON.stringify(got) !== JSON.stringify(data)) throw new Error(`${path} on ${addr} is ${JSON.stringify(got)}, not ${JSON.stringify(data)}`);
  }, { timeoutMs, intervalMs: 200 });

/**
 * Runs `step` (a request to the primary cluster), again while it fails with a 503: under CI's load
 * (jest beside this test, two cores) the active node can miss its lease deadline and step down
 * for a moment, and a node with no active node answers 503 "nothing was written", as designed. A
 * client retries that; each retry is logged, so a run shows how often it happened.
 */
async function onPrimaryCluster(what, step, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await step();
    } catch (e) {
      if (!/answered 503/.test(e.message) || Date.now() > until) throw e;
      log(`${what}: 503 from the primary cluster (no active node for a moment), retrying: ${e.message.slice(0, 200)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * PostgreSQL is closed to all but the primary nodes (which are up on it by now, over
 * sslmode=verify-full): no published port, not reachable from a secondary's container, and in
 * its own container only TLS with the password it chose at its first start gets in (not the
 * compose file's former default `tessera`, and no plain connection).
 */
async function databaseClosed() {
  log('PostgreSQL: no published port, unreachable from the secondaries, TLS and its generated password only');
  const published = await run('docker', ['port', `${PROJECT}_postgres_1`], { allowFail: true });
  check(published.code === 0 && published.out.trim() === '', `postgres publishes no port (docker port: ${JSON.stringify(published.out.trim())})`);
  const probe = "require('net').connect(5432, 'postgres').on('connect', () => process.exit(0)).on('error', (e) => { console.log(e.code); process.exit(3); })";
  const fromSecondary = await compose(['exec', '-T', 'dr-secondary', 'node', '-e', probe], { allowFail: true, timeoutMs: 30_000 });
  check(fromSecondary.code === 3, `dr-secondary cannot reach postgres:5432 (exit ${fromSecondary.code}: ${fromSecondary.out.trim().slice(-200)})`);
  const psql = (password, conn) =>
    compose(['exec', '-T', 'postgres', 'sh', '-c', `PGPASSWORD=${password} psql "${conn} dbname=tessera user=tessera" -Atc 'select 42'`], { allowFail: true, timeoutMs: 30_000 });
  const own = '"$(cat /var/lib/tessera-pg-client/password)"';
  const good = await psql(own, 'host=postgres sslmode=verify-full sslrootcert=/var/lib/tessera-pg-client/ca.crt');
  check(good.code === 0 && good.out.includes('42'), `the generated password over verified TLS gets in (${good.out.trim().slice(-200)})`);
  const plain = await psql(own, 'host=postgres sslmode=disable');
  check(plain.code !== 0 && plain.out.includes('no pg_hba.conf entry'), `a connection without TLS is refused (${plain.out.trim().slice(-200)})`);
  const old = await psql('tessera', 'host=postgres sslmode=require');
  check(old.code !== 0 && old.out.includes('password authentication failed'), `the former default password is refused (${old.out.trim().slice(-200)})`);
}

const volumes = async () => new Set((await run('docker', ['volume', 'ls', '-q'])).out.split('\n').filter((v) => v !== ''));

async function scenario() {
  for (const port of [8200, 8210, 8220, 8230, 8240]) await assertPortFree(port);
  const volumesBefore = await volumes();

  log('docker-compose build --parallel (tessera:local once, tessera-postgres:local)');
  await compose(['build', '--parallel'], { timeoutMs: 900_000 });
  log('docker-compose up -d --build');
  composeUp = true;
  await compose(['up', '-d', '--build'], { timeoutMs: 600_000 });
  for (const [name, addr] of Object.entries(NODES)) check((await answering(addr)).sealed === true, `${name} starts sealed`);
  log('every node answers, sealed');
  await databaseClosed();

  log('init and unseal the primary, KV v2 at secret/, enable DR and performance primary');
  const init = await initAndUnseal(P, { shares: 3, threshold: 2 });
  const keys = init.keys.slice(0, 2);
  const root = init.rootToken;
  for (const name of PRIMARIES.slice(1)) await unsealWith(NODES[name], keys);
  await activePrimary(PRIMARIES);
  await onPrimaryCluster('mount secret/', () => mountKv2(P, root));
  await onPrimaryCluster('enable the DR primary', () => enablePrimary(P, root, '', 'dr'));
  await onPrimaryCluster('enable the performance primary', () => enablePrimary(P, root, '', 'performance'));

  log('activate the DR secondary and the performance secondary');
  const drInit = await initAndUnseal(S);
  await activateSecondary(S, drInit.rootToken, await onPrimaryCluster('DR secondary token', () => secondaryToken(P, root, 'dr-secondary', undefined, 'dr')), 'dr');
  const perfInit = await initAndUnseal(PS);
  await activateSecondary(PS, perfInit.rootToken, await onPrimaryCluster('performance secondary token', () => secondaryToken(P, root, 'perf-secondary', undefined, 'performance')), 'performance');
  const perfRoot = await generateRoot(PS, keys, 60_000);
  // Whichever primary node is active: under CI's load a missed lease renewal can move it.
  const primaryCluster = PRIMARIES.map((n) => `${n}:8201`);
  await waitStreaming(S, { kind: 'dr', from: primaryCluster });
  await waitStreaming(PS, { kind: 'performance', from: primaryCluster });

  log('a secret written on the primary, read back on the performance secondary');
  const first = { password: 'written-on-the-primary' };
  await onPrimaryCluster('write secret/app', () => writeSecret(P, root, 'app', first));
  await readsBack(PS, perfRoot, 'app', first);
  await waitInSync(NODES[await activePrimary(PRIMARIES)], S, 30_000, 'dr');

  // The active node is `primary` unless a missed lease renewal under load moved it: kill whichever it is.
  const firstActive = await activePrimary(PRIMARIES);
  const survivors = PRIMARIES.filter((n) => n !== firstActive);
  log(`HA failover: docker-compose kill ${firstActive} (the active node); another primary node becomes active, replication follows it`);
  await compose(['kill', firstActive]);
  const haActive = await activePrimary(survivors);
  log(`${haActive} is the active primary node`);
  const got = await onPrimaryCluster('read secret/app', () => readSecret(NODES[haActive], root, 'app'));
  check(got.password === first.password, `the first secret through ${haActive}`);
  const afterHa = { password: 'written-after-the-ha-failover' };
  const standby = survivors.find((n) => n !== haActive);
  await onPrimaryCluster('write secret/after-ha', () => writeSecret(NODES[standby], root, 'after-ha', afterHa));
  await readsBack(PS, perfRoot, 'after-ha', afterHa);
  await waitInSync(NODES[haActive], S, 30_000, 'dr');

  log('DR failover: the whole primary cluster killed, promote the DR secondary with a DR operation token');
  await compose(['kill', ...survivors]);
  const opToken = await drOperationToken(S, keys);
  const promote = await vault(S).post(`${DR}/secondary/promote`, { dr_operation_token: opToken });
  if (promote.status !== 204) throw new Error(`promote answered ${promote.status}: ${promote.text}`);
  const promoted = await eventually(async () => {
    const st = await replStatus(S, 'dr');
    if (st.mode !== 'primary') throw new Error(`dr-secondary is ${st.mode}, not primary yet`);
    const health = await vault(S).get('sys/health');
    if (health.status !== 200) throw new Error(`dr-secondary sys/health answered ${health.status}`);
    return st;
  }, { timeoutMs: 60_000, intervalMs: 200 });
  const newPrimaryAddr = String(promoted.primary_cluster_addr);
  log(`dr-secondary is the primary (cluster address ${newPrimaryAddr}); moving the performance secondary onto it`);
  const update = await vault(PS, perfRoot).post(`${PERF}/secondary/update-primary`, { update_primary_addrs: [newPrimaryAddr] });
  if (update.status !== 204 && update.status !== 200) throw new Error(`update-primary answered ${update.status}: ${update.text}`);
  await waitStreaming(PS, { kind: 'performance', from: newPrimaryAddr });
  await readSecret(S, root, 'app').then((got) => check(got.password === first.password, 'the first secret on the promoted DR secondary'));
  const second = { password: 'written-after-failover' };
  await writeSecret(S, root, 'after-failover', second);
  await readsBack(PS, perfRoot, 'after-failover', second);

  log('docker-compose restart dr-secondary');
  const t0 = Date.now();
  const since = Math.floor(t0 / 1000) - 1;
  await compose(['restart', 'dr-secondary'], { timeoutMs: 60_000 });
  const restartMs = Date.now() - t0;
  // How the container's process ended: docker's 'die' event carries its exit code. 0 is the node
  // exiting by itself on SIGTERM; 137 would be docker killing it after the 10 s stop timeout.
  const dies = (
    await run('docker', ['events', '--since', String(since), '--until', String(Math.ceil(Date.now() / 1000)), '--filter', `container=${PROJECT}_dr-secondary_1`, '--filter', 'event=die', '--format', '{{.Actor.Attributes.exitCode}}'])
  ).out.split('\n').filter((l) => l.trim() !== '');
  // The container is restarted at once; the node then takes several seconds to load and listen.
  const back = await answering(S, 30_000);
  log(`restart took ${restartMs} ms; answering ${Date.now() - t0} ms after it began, sealed: ${back.sealed}`);
  // How long the node's own stop took, and (when the process had to end itself after it, because
  // something it cannot cancel was still pending) what was pending.
  const nodeLog = (await compose(['logs', '--no-color', 'dr-secondary'])).out.split('\n').map((l) => l.slice(l.indexOf('{'))).filter((l) => l.startsWith('{'));
  const at = (msg) => nodeLog.filter((l) => l.includes(`"msg":"${msg}"`)).map((l) => Date.parse(JSON.parse(l).time)).at(-1);
  log(`dr-secondary's stop took ${at('node stopped') - at('shutting down')} ms (from "shutting down" to "node stopped")`);
  for (const line of nodeLog.filter((l) => l.includes('still running after the node stopped'))) log(`dr-secondary's process ended itself after its stop: ${line}`);
  // Not the restart's wall time: under CI's load (jest beside this test) starting the container
  // again alone has taken 12 s while the node's stop took 248 ms.
  check(dies.length === 1 && dies[0] === '0', `dr-secondary's process exited by itself on SIGTERM (docker 'die' exit codes: ${JSON.stringify(dies)}; the restart took ${restartMs} ms)`);
  check(back.sealed === true, 'dr-secondary comes back sealed');
  await unsealWith(S, keys);
  check((await replStatus(S, 'dr')).mode === 'primary', 'dr-secondary is still the DR primary after its restart');
  await readsBack(S, root, 'app', first);
  await readsBack(S, root, 'after-failover', second);
  await waitStreaming(PS, { kind: 'performance', from: newPrimaryAddr });

  log('docker-compose down, then up -d: the volumes keep the data');
  await compose(['down'], { timeoutMs: 120_000 });
  await compose(['up', '-d'], { timeoutMs: 300_000 });
  for (const [name, addr] of Object.entries(NODES)) check((await answering(addr)).sealed === true, `${name} comes back sealed after down/up`);
  // The promoted cluster and its performance secondary first; the old primary cluster, never
  // demoted, after the performance secondary streams from the new one. Unsealed first, the old one
  // could take the performance secondary back: its addresses stay among the secondary's known
  // ones for ~30 s after update-primary (NOTES, "Next steps").
  for (const addr of [S, PS]) await unsealWith(addr, keys);
  check((await replStatus(S, 'dr')).mode === 'primary', 'dr-secondary is the DR primary after down/up');
  await readsBack(S, root, 'after-failover', second);
  await waitStreaming(PS, { kind: 'performance', from: newPrimaryAddr });
  await readsBack(PS, perfRoot, 'after-failover', second);
  for (const name of PRIMARIES) await unsealWith(NODES[name], keys);
  // The old primary cluster (killed above, started again by `up`) reads its data from PostgreSQL's volume.
  await activePrimary(PRIMARIES);
  await readsBack(P, root, 'app', first);
  await readsBack(P, root, 'after-ha', afterHa);

  log('docker-compose down -v: no volume left behind');
  await compose(['down', '-v'], { timeoutMs: 120_000 });
  composeUp = false;
  const left = [...(await volumes())].filter((v) => !volumesBefore.has(v));
  check(left.length === 0, `no volume left after down -v, named or anonymous (left: ${left.join(', ')})`);
}

/** Last log lines of every container, then `down -v`; never throws. */
function teardown(why) {
  for (const c of children) c.kill('SIGKILL');
  removeRootfs(join(work, 'rootfs'));
  if (composeUp) {
    log(`tearing down (${why}): container logs, then docker-compose down -v`);
    const logs = spawnSync('docker-compose', ['-p', PROJECT, 'logs', '--no-color', '--tail=40'], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
    console.log(`${logs.stdout ?? ''}${logs.stderr ?? ''}`);
    const down = spawnSync('docker-compose', ['-p', PROJECT, 'down', '-v', '--remove-orphans'], { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
    if (down.status !== 0) console.log(`docker-compose down -v failed: ${down.stderr}`);
    composeUp = false;
  }
  stopDockerd();
}

function stopDockerd() {
  if (dockerdPid === undefined) return;
  const pid = dockerdPid;
  dockerdPid = undefined;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  // dockerd stops its containers and exits within a few seconds; wait for it (bounded).
  const until = Date.now() + 20_000;
  while (Date.now() < until && spawnSync('kill', ['-0', String(pid)]).status === 0) spawnSync('sleep', ['0.2']);
}

const deadline = setTimeout(() => {
  log(`FAILED: the hard deadline of ${DEADLINE_MS / 1000} s passed`);
  teardown('deadline');
  process.exit(1);
}, DEADLINE_MS);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    log(`FAILED: ${sig}`);
    teardown(sig);
    process.exit(1);
  });
}

let code = 0;
try {
  log(`commands and their output: ${detailLog}`);
  await ensureDocker();
  await ensureBaseImage();
  // A run that died before its teardown left the project behind.
  await compose(['down', '-v', '--remove-orphans'], { allowFail: true });
  await scenario();
  log(`PASSED in ${secs().trim()} s`);
  rmSync(work, { recursive: true, force: true });
} catch (e) {
  if (e instanceof Skip && !REQUIRED) {
    log(`SKIPPED: ${e.message} (under CI=true or TESSERA_COMPOSE_REQUIRED=1 this is a failure)`);
    rmSync(work, { recursive: true, force: true });
    teardown('skipped');
  } else {
    code = 1;
    log(`FAILED: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    log(`commands and their output: ${detailLog}`);
    teardown('failure');
    // Again after the containers' logs, so that the end of the output says what failed.
    log(`FAILED (see above): ${e instanceof Error ? e.message : String(e)}`);
  }
} finally {
  clearTimeout(deadline);
  stopDockerd();
  closeSync(detailFd);
}
process.exit(code);
