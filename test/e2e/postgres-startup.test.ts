/**
 * `tessera server -config FILE` on `storage "postgresql"`, as a child process (build first), on a
 * private PostgreSQL 15 (test/support/postgres.ts): bad input stops start-up with one line naming
 * where the URL came from (the config key or the environment variable) and PostgreSQL's reason,
 * password redacted, exit 1 and no stack; a server that is not up yet is retried (one warn line a
 * retry) until it is, and the node then serves.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../harness/dr.js';
import { writeLicense } from '../harness/harness.js';
import { vault } from '../harness/http.js';
import { mainJs } from '../harness/process.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';

let server: TestPostgres;
let dir: string;
let license: { path: string; issuerKey: string };
beforeAll(async () => {
  server = await startPostgres();
  dir = await mkdtemp(join(tmpdir(), 'tessera-pg-start-'));
  license = await writeLicense(join(dir, 'lic'), { reuse: false });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const CONFIG_KEY = 'storage "postgresql" connection_url';
let files = 0;

async function configFile(url: string, extra = ''): Promise<string> {
  const file = join(dir, `node-${++files}.hcl`);
  await writeFile(
    file,
    [
      `storage "postgresql" {\n  connection_url = ${JSON.stringify(url)}\n${extra}}`,
      'listener "tcp" {\n  address = "127.0.0.1:0"\n  tls_disable = true\n}',
      'cluster_addr = "127.0.0.1:0"',
      `license_path = ${JSON.stringify(license.path)}`,
      `license_issuer_keys = [${JSON.stringify(license.issuerKey)}]`,
      '',
    ].join('\n'),
  );
  return file;
}

interface Run {
  readonly stderr: () => string;
  readonly exited: Promise<number | null>;
  kill(): void;
}

function serve(file: string, env: Record<string, string> = {}): Run {
  const p = spawn(process.execPath, [mainJs, 'server', '-config', file], { env: { ...process.env, TESSERA_PG_CONNECTION_URL: '', VAULT_PG_CONNECTION_URL: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const err: Buffer[] = [];
  p.stderr.on('data', (c: Buffer) => err.push(c));
  p.stdout.resume();
  const exited = new Promise<number | null>((resolve) => p.on('close', (code) => resolve(code)));
  return { stderr: () => Buffer.concat(err).toString('utf8'), exited, kill: () => void p.kill('SIGKILL') };
}

/** Runs a node that must fail to start: its exit code and stderr. */
async function refused(url: string, opts: { extra?: string; env?: Record<string, string> } = {}): Promise<{ code: number | null; stderr: string }> {
  const r = serve(await configFile(url, opts.extra), opts.env);
  const timer = setTimeout(() => r.kill(), 30_000);
  const code = await r.exited;
  clearTimeout(timer);
  return { code, stderr: r.stderr() };
}

/** The error line the CLI printed: "Error running the server: ...". */
/** The API address once the node logs "http listening"; throws with its log after `ms`. */
async function listening(node: { stderr(): string }, ms: number): Promise<string> {
  for (const deadline = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 50))) {
    const line = node.stderr().split('\n').find((l) => l.includes('"http listening"'));
    if (line !== undefined) return (JSON.parse(line) as { api_addr: string }).api_addr;
    if (Date.now() > deadline) throw new Error(`not listening:\n${node.stderr()}`);
  }
}

const errorLine = (stderr: string): string => stderr.split('\n').find((l) => l.startsWith('Error running the server:')) ?? `(no error line in: ${stderr.slice(-1500)})`;

function expectClean(r: { code: number | null; stderr: string }, password: string): void {
  expect(r.code).toBe(1);
  expect(r.stderr).not.toContain(password);
  expect(r.stderr).not.toMatch(/^\s+at /m);
}

describe('start-up on bad PostgreSQL input', () => {
  it('an unparseable connection_url', async () => {
    const r = await refused('postgres://tessera:pw-unparsed@[127.0.0.1/tessera');
    expectClean(r, 'pw-unparsed');
    expect(errorLine(r.stderr)).toContain(`${CONFIG_KEY} (postgres://tessera:***@[127.0.0.1/tessera): cannot open PostgreSQL storage (table vault_kv_store): not a valid URL`);
  }, 40_000);

  it('a port nothing listens on: retried max_connect_retries times, then ECONNREFUSED', async () => {
    const [port] = await freePorts(1);
    const r = await refused(`postgres://tessera:pw-port@127.0.0.1:${port}/tessera`, { extra: '  max_connect_retries = 2\n' });
    expectClean(r, 'pw-port');
    expect(errorLine(r.stderr)).toMatch(new RegExp(`${CONFIG_KEY} \\(postgres://tessera:\\*\\*\\*@127\\.0\\.0\\.1:${port}/tessera\\): .*ECONNREFUSED.*gave up after 3 attempts`));
    expect(r.stderr.split('\n').filter((l) => l.includes('PostgreSQL unreachable; retrying'))).toHaveLength(2);
  }, 40_000);

  it('a host that does not resolve', async () => {
    const r = await refused('postgres://tessera:pw-host@no-such-host.invalid:5432/tessera', { extra: '  max_connect_retries = 0\n' });
    expectClean(r, 'pw-host');
    expect(errorLine(r.stderr)).toMatch(new RegExp(`${CONFIG_KEY} .*no-such-host\\.invalid.*(ENOTFOUND|EAI_AGAIN)`));
  }, 40_000);

  it('a wrong password: at once, with PostgreSQL\'s reason', async () => {
    const right = await server.createPasswordUser('right-pw');
    const r = await refused(right.replace('right-pw', 'wrong-pw'));
    expectClean(r, 'wrong-pw');
    expect(errorLine(r.stderr)).toMatch(/storage "postgresql" connection_url \(postgres:\/\/tessera_pw:\*\*\*@.*\): .*password authentication failed for user "tessera_pw" \(28P01\)$/);
    expect(r.stderr).not.toContain('retrying');
  }, 40_000);

  it('a database that does not exist, the URL from TESSERA_PG_CONNECTION_URL: the variable is named', async () => {
    const url = `postgres://tessera:pw-db@127.0.0.1:${server.port}/no_such_db`;
    const inConfig = await refused(url);
    expectClean(inConfig, 'pw-db');
    expect(errorLine(inConfig.stderr)).toMatch(/storage "postgresql" connection_url .*database "no_such_db" does not exist \(3D000\)$/);
    const fromEnv = await refused('postgres://unused@127.0.0.1:1/x', { env: { TESSERA_PG_CONNECTION_URL: url } });
    expectClean(fromEnv, 'pw-db');
    expect(errorLine(fromEnv.stderr)).toMatch(/environment variable TESSERA_PG_CONNECTION_URL \(postgres:\/\/tessera:\*\*\*@.*\/no_such_db\): .*does not exist \(3D000\)$/);
    expect(fromEnv.stderr).not.toContain('retrying');
  }, 40_000);
});

describe('start-up before PostgreSQL is up', () => {
  it('retries, one warn line a retry without the password, and serves once PostgreSQL has started', async () => {
    const own = await startPostgres();
    const run = { kill: () => undefined } as Pick<Run, 'kill'>;
    try {
      await own.stopServer();
      const url = own.url.replace('postgres://tessera@', 'postgres://tessera:pw-later@');
      const node = serve(await configFile(url));
      run.kill = node.kill;
      const retries = () => node.stderr().split('\n').filter((l) => l.includes('PostgreSQL unreachable; retrying'));
      for (const deadline = Date.now() + 20_000; retries().length < 3; await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > deadline) throw new Error(`no retries logged:\n${node.stderr()}`);
      }
      await own.startServer();
      const api = await listening(node, 20_000);
      const status = await vault(api).get('sys/seal-status');
      expect(status.status).toBe(200);
      expect(status.body).toMatchObject({ initialized: false, sealed: true });
      const init = await vault(api).put('sys/init', { secret_shares: 1, secret_threshold: 1 });
      expect(init.status).toBe(200);
      const first = JSON.parse(retries()[0] as string) as Record<string, unknown>;
      expect(first).toMatchObject({ level: 40, attempt: 1, retry_in_ms: 250 });
      expect(String(first['err'])).toContain('ECONNREFUSED');
      expect(node.stderr()).not.toContain('pw-later');
      expect(node.stderr()).toContain('tessera:***@127.0.0.1');
    } finally {
      run.kill();
      await own.stop();
    }
  }, 60_000);

  it('with ha_enabled: the lease store waits for PostgreSQL too, and the node serves once it has started', async () => {
    const own = await startPostgres();
    const run = { kill: () => undefined } as Pick<Run, 'kill'>;
    try {
      await own.stopServer();
      const url = own.url.replace('postgres://tessera@', 'postgres://tessera:pw-lease@');
      const node = serve(await configFile(url, '  ha_enabled = "true"\n'));
      run.kill = node.kill;
      // The lease store opens first; it retries (a line each, as the data store's open does)
      // where one refused attempt once ended the process.
      const retries = () => node.stderr().split('\n').filter((l) => l.includes('PostgreSQL unreachable (HA lease); retrying'));
      for (const deadline = Date.now() + 20_000; retries().length < 3; await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > deadline) throw new Error(`no lease retries logged:\n${node.stderr()}`);
      }
      expect(node.stderr()).not.toContain('Error running the server');
      await own.startServer();
      const api = await listening(node, 30_000);
      expect((await vault(api).get('sys/seal-status')).status).toBe(200);
      expect(JSON.parse(retries()[0] as string)).toMatchObject({ level: 40, attempt: 1, retry_in_ms: 250, connection_url: expect.stringContaining('tessera:***@') });
      expect(node.stderr()).not.toContain('pw-lease');
    } finally {
      run.kill();
      await own.stop();
    }
  }, 60_000);
});
