/**
 * The built CLI against a real dev node process: the commands an operator reaches for beyond
 * read/write (kv list|delete|patch|metadata, secrets enable|disable|list, login, version,
 * -wrap-ttl, write with @file and a JSON body on stdin, token renew|lookup, audit
 * enable|disable|list with the file device's lines, SIGHUP reopening them, and hvac's audit calls)
 * and the suggestions for mistyped commands.
 */
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli, useHarness, vault, type StartedNode } from '../harness/index.js';
import { eventually } from '../harness/eventually.js';
import { runHvac } from '../harness/hvac.js';

const h = useHarness();
let node: StartedNode;
let env: Record<string, string>;
let home: string;

beforeAll(async () => {
  node = await h.startNode({ dev: true });
  home = await h.tempDir('tessera-cli-home-');
  env = { TESSERA_ADDR: node.apiAddr, TESSERA_TOKEN: node.rootToken!, HOME: home };
});

const cli = (args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}) =>
  runCli(args, 20_000, { env: { ...env, ...opts.env }, ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}) });

test('secrets enable (-version=2, -local, -path, -description), list and disable', async () => {
  const enable = await cli(['secrets', 'enable', '-version=2', '-path=app', '-description=app secrets', 'kv']);
  expect(enable).toMatchObject({ code: 0, stdout: 'Success! Enabled the kv secrets engine at: app/\n' });
  expect((await cli(['secrets', 'enable', '-local', '-path=v1', 'kv'])).code).toBe(0);
  const mounts = JSON.parse((await cli(['secrets', 'list', '-format=json'])).stdout);
  expect(mounts['app/']).toMatchObject({ type: 'kv', description: 'app secrets', options: { version: '2' } });
  expect(mounts['v1/']).toMatchObject({ type: 'kv', local: true });
  const table = await cli(['secrets', 'list', '-detailed']);
  expect(table.stdout).toMatch(/^app\/\s+kv\s+\S+\s+app secrets\s+false\s+2$/m);
  expect((await cli(['secrets', 'disable', 'v1'])).stdout).toBe('Success! Disabled the secrets engine (if it existed) at: v1/\n');
  expect(JSON.parse((await cli(['secrets', 'list', '-format=json'])).stdout)['v1/']).toBeUndefined();
  const dup = await cli(['secrets', 'enable', '-path=app', 'kv']);
  expect(dup.code).toBe(1);
  expect(dup.stderr).toMatch(/Code: 400/);
});

test('kv put, patch, list, delete and metadata get/put/delete on KV v2', async () => {
  expect((await cli(['kv', 'put', 'secret/db', 'user=ada', 'pw=one'])).code).toBe(0);
  const patch = await cli(['kv', 'patch', 'secret/db', 'pw=two']);
  expect(patch.code).toBe(0);
  expect(JSON.parse((await cli(['kv', 'get', '-format=json', 'secret/db'])).stdout).data.data).toEqual({ user: 'ada', pw: 'two' });
  expect((await cli(['kv', 'put', 'secret/dir/a', 'k=v'])).code).toBe(0);
  expect(JSON.parse((await cli(['kv', 'list', '-format=json', 'secret'])).stdout)).toEqual(['db', 'dir/']);
  expect((await cli(['kv', 'list', 'secret/dir'])).stdout).toBe('Keys\n----\na\n');

  const put = await cli(['kv', 'metadata', 'put', '-max-versions=3', '-custom-metadata=owner=ops', 'secret/db']);
  expect(put).toMatchObject({ code: 0, stdout: 'Success! Data written to: secret/metadata/db\n' });
  const meta = JSON.parse((await cli(['kv', 'metadata', 'get', '-format=json', 'secret/db'])).stdout).data;
  expect(meta).toMatchObject({ max_versions: 3, custom_metadata: { owner: 'ops' }, current_version: 2 });

  expect((await cli(['kv', 'delete', 'secret/db'])).stdout).toBe('Success! Data deleted (if it existed) at: secret/data/db\n');
  const afterDelete = JSON.parse((await cli(['kv', 'metadata', 'get', '-format=json', 'secret/db'])).stdout).data;
  expect(afterDelete.versions['2'].deletion_time).not.toBe('');
  expect((await cli(['kv', 'delete', '-versions=1', 'secret/db'])).code).toBe(0);
  expect((await cli(['kv', 'metadata', 'get', '-format=json', 'secret/db'])).stdout).toMatch(/"deletion_time": "\d/);
  expect((await cli(['kv', 'metadata', 'delete', 'secret/db'])).code).toBe(0);
  expect((await cli(['kv', 'metadata', 'get', 'secret/db'])).code).toBe(2);

  // v2-only commands refuse a v1 mount before sending anything.
  expect((await cli(['secrets', 'enable', '-path=old', 'kv'])).code).toBe(0);
  const v1 = await cli(['kv', 'patch', 'old/x', 'a=b']);
  expect(v1.code).toBe(2);
  expect(v1.stderr).toMatch(/needs a KV v2 mount/);
});

test('write takes key=@file and a JSON body on stdin with -', async () => {
  const file = join(home, 'value.txt');
  await writeFile(file, 'from-a-file');
  expect((await cli(['write', 'secret/data/f', '-'], { stdin: '{"data": {"n": 3, "ok": true}}' })).code).toBe(0);
  expect(JSON.parse((await cli(['kv', 'get', '-format=json', 'secret/f'])).stdout).data.data).toEqual({ n: 3, ok: true });
  expect((await cli(['kv', 'put', 'secret/g', `v=@${file}`])).code).toBe(0);
  expect((await cli(['kv', 'get', '-field=v', 'secret/g'])).stdout).toBe('from-a-file');
});

test('-wrap-ttl answers with a wrapping token that unwraps to the data', async () => {
  const wrapped = await cli(['kv', 'get', '-wrap-ttl=5m', '-field=wrapping_token', 'secret/g']);
  expect(wrapped.code).toBe(0);
  const r = await vault(node.apiAddr, wrapped.stdout).post('sys/wrapping/unwrap', {});
  expect(r.status).toBe(200);
  expect(r.body.data.data).toEqual({ v: 'from-a-file' });
});

test('token renew and token lookup: own token, by token, by accessor, in a table and as JSON', async () => {
  const made = (await vault(node.apiAddr, node.rootToken!).post('auth/token/create', { policies: ['default'], ttl: '10m' })).body.auth;
  const own = await cli(['token', 'renew', '-increment=1h', '-format=json'], { env: { TESSERA_TOKEN: made.client_token } });
  expect(own.code).toBe(0);
  expect(JSON.parse(own.stdout).auth).toMatchObject({ client_token: made.client_token, lease_duration: 3600, renewable: true });
  const byToken = await cli(['token', 'renew', '-increment=20m', made.client_token]);
  expect(byToken.code).toBe(0);
  expect(byToken.stdout).toMatch(/token_duration\s+1200s/);
  const byAccessor = await cli(['token', 'renew', '-accessor', '-format=json', made.accessor]);
  expect(JSON.parse(byAccessor.stdout).auth).toMatchObject({ client_token: '', accessor: made.accessor, lease_duration: 600 });
  const looked = await cli(['token', 'lookup', '-format=json', made.client_token]);
  expect(JSON.parse(looked.stdout).data).toMatchObject({ accessor: made.accessor, creation_ttl: 600, policies: ['default'] });
  const byAcc = await cli(['token', 'lookup', '-accessor', made.accessor]);
  expect(byAcc.stdout).toMatch(/creation_ttl\s+600/);
  const self = await cli(['token', 'lookup', '-format=json']);
  expect(JSON.parse(self.stdout).data.policies).toEqual(['root']);
  const gone = await cli(['token', 'renew', 'hvs.nosuchtoken']);
  expect(gone.code).toBe(1);
  expect(gone.stderr).toContain('token not found');
});

test('login verifies the token, stores it in ~/.vault-token (0600), and later commands use it', async () => {
  const noToken = { TESSERA_TOKEN: '' };
  const bad = await cli(['login', '-'], { env: noToken, stdin: 'hvs.AAAAAAAAAAAAAAAAAAAAAAAA\n' });
  expect(bad.code).toBe(1);
  await expect(stat(join(home, '.vault-token'))).rejects.toMatchObject({ code: 'ENOENT' });
  const ok = await cli(['login', '-'], { env: noToken, stdin: `${node.rootToken}\n` });
  expect(ok.code).toBe(0);
  expect(ok.stdout).toMatch(/^Success! You are now authenticated/);
  expect(ok.stdout).toMatch(/^token_policies\s+\["root"\]$/m);
  expect(await readFile(join(home, '.vault-token'), 'utf8')).toBe(node.rootToken);
  expect((await stat(join(home, '.vault-token'))).mode & 0o777).toBe(0o600);
  expect((await cli(['kv', 'get', '-field=v', 'secret/g'], { env: noToken })).stdout).toBe('from-a-file');
  // Without a home token file and without a variable, the node refuses.
  const elsewhere = join(home, 'other');
  await mkdir(elsewhere);
  expect((await cli(['kv', 'get', 'secret/g'], { env: { ...noToken, HOME: elsewhere } })).code).not.toBe(0);
});

test('version, and suggestions for mistyped commands', async () => {
  expect(await cli(['version'])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Tessera v\d+\.\d+\.\d+/) });
  const root = await cli(['operator', 'generate-root', '-dr-token', '-init']);
  expect(root.code).toBe(2);
  expect(root.stderr).toMatch(/Did you mean generate-dr-token\?/);
  const typo = await cli(['stauts']);
  expect(typo.code).toBe(2);
  expect(typo.stderr).toMatch(/Did you mean status\?/);
});

test('audit enable, list and disable; file lines hash every secret (log_raw keeps them); SIGHUP reopens; hvac audit calls', async () => {
  const dir = join(node.dataDir, 'data', 'audit');
  expect(await cli(['audit', 'enable', '-path=e2e', '-description=e2e trail', 'file', 'file_path=e2e.log'])).toMatchObject({ code: 0, stdout: 'Success! Enabled the file audit device at: e2e/\n' });
  expect((await cli(['audit', 'enable', '-path=raw', 'file', 'file_path=raw.log', 'log_raw=true'])).code).toBe(0);
  expect((await cli(['audit', 'list', '-detailed'])).stdout).toMatch(/^e2e\/\s+file\s+e2e trail\s+replicated\s+map\[file_path:e2e.log\]$/m);
  const outside = await cli(['audit', 'enable', '-path=bad', 'file', 'file_path=/etc/evil.log']);
  expect(outside.code).toBe(1);
  expect(outside.stderr).toMatch(/outside this node's audit directory/);

  const root = vault(node.apiAddr, node.rootToken!);
  const secret = 'e2e-secret-value-42';
  const password = 'e2e-password-9';
  expect((await root.request('POST', 'secret/data/audit-e2e', { body: { data: { pw: secret } } })).status).toBe(200);
  expect((await root.request('GET', 'secret/data/audit-e2e')).body.data.data.pw).toBe(secret);
  expect((await root.request('POST', 'sys/auth/userpass', { body: { type: 'userpass' } })).status).toBe(204);
  expect((await root.request('POST', 'auth/userpass/users/ada', { body: { password, policies: 'default' } })).status).toBe(204);
  const login = (await vault(node.apiAddr).request('POST', 'auth/userpass/login/ada', { body: { password } })).body.auth;
  const child = (await root.request('POST', 'auth/token/create', { body: { policies: ['default'] } })).body.auth;

  const text = await readFile(join(dir, 'e2e.log'), 'utf8');
  const entries = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { type: string; request: { id: string } });
  const byId = new Map<string, string[]>();
  for (const e of entries) byId.set(e.request.id, [...(byId.get(e.request.id) ?? []), e.type]);
  expect(byId.size).toBeGreaterThanOrEqual(6);
  for (const types of byId.values()) expect(types).toEqual(['request', 'response']);
  for (const clear of [secret, password, node.rootToken!, login.client_token, login.accessor, child.client_token, child.accessor]) expect(text).not.toContain(clear);
  const raw = await readFile(join(dir, 'raw.log'), 'utf8');
  for (const clear of [secret, password, login.client_token]) expect(raw).toContain(clear);

  // Rotation: the file moved away, SIGHUP, new lines land in a new file at the path.
  await rename(join(dir, 'e2e.log'), join(dir, 'e2e.log.1'));
  const moved = (await readFile(join(dir, 'e2e.log.1'), 'utf8')).length;
  process.kill(node.pid, 'SIGHUP');
  await eventually(async () => {
    expect((await root.request('GET', 'sys/mounts')).status).toBe(200);
    expect(await readFile(join(dir, 'e2e.log'), 'utf8')).toMatch(/"path":"sys\/mounts"/);
  });
  const before = (await readFile(join(dir, 'e2e.log.1'), 'utf8')).length;
  expect((await root.request('GET', 'sys/mounts')).status).toBe(200);
  expect((await readFile(join(dir, 'e2e.log.1'), 'utf8')).length).toBe(before);
  expect(before).toBeGreaterThanOrEqual(moved);

  const seen = await runHvac('audit.py', node.apiAddr, 45_000, [node.rootToken!]);
  expect(seen).toMatchObject({ listed: { type: 'file', description: 'hvac device', options: { file_path: 'hv.log' }, local: false, path: 'hv/' }, listed_top: 'file', after_disable: ['e2e/', 'raw/'] });
  const hv = await readFile(join(dir, 'hv.log'), 'utf8');
  expect(hv).toContain(seen.hash as string);
  expect(hv).not.toContain('hvac-secret-value-7');

  expect((await cli(['audit', 'disable', 'e2e'])).stdout).toBe('Success! Disabled audit device (if it was enabled) at: e2e/\n');
  expect((await cli(['audit', 'disable', 'raw/'])).code).toBe(0);
  expect((await cli(['audit', 'list'])).stdout).toBe('No audit devices are enabled.\n');
}, 60_000);
