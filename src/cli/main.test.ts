import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeVault, envelope } from '../api/testing/fake-vault.js';
import { runCli } from './testing/run-cli.js';
import type { RunOptions } from './testing/run-cli.js';
import type { ServerOptions } from '../node/index.js';

let fake: FakeVault;
let env: Record<string, string>;
const run = (argv: string[], options: RunOptions = {}) => runCli(argv, { env, ...options });

beforeEach(async () => {
  fake = await FakeVault.start();
  env = { TESSERA_ADDR: fake.addr, TESSERA_TOKEN: 'hvs.root' };
});
afterEach(async () => {
  await fake.close();
});

describe('write', () => {
  it('sends every k=v value as a string, reads @file and -, and lists repeated keys', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tessera-cli-'));
    try {
      await writeFile(join(dir, 'ca.pem'), 'PEM\n');
      fake.on('POST', 'sys/thing', { status: 204 });
      const r = await run(['write', 'sys/thing', 'ttl=30m', 'n=3', 'on=true', `ca=@${join(dir, 'ca.pem')}`, 'in=-', 'a=x', 'a=y'], {
        stdin: 'from stdin',
      });
      expect(r).toEqual({ code: 0, stdout: 'Success! Data written to: sys/thing\n', stderr: '' });
      expect(fake.requests[0]?.body).toEqual({ ttl: '30m', n: '3', on: 'true', ca: 'PEM\n', in: 'from stdin', a: ['x', 'y'] });
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it('reads a whole JSON object from stdin with a lone -', async () => {
    fake.on('POST', 'sys/thing', { status: 204 });
    const r = await run(['write', 'sys/thing', '-'], { stdin: '{"n": 3, "ok": true}' });
    expect(r.code).toBe(0);
    expect(fake.requests[0]?.body).toEqual({ n: 3, ok: true });
  });

  it('prints the answer when the write returns data, and refuses a pair without =', async () => {
    fake.on('POST', 'sys/replication/dr/primary/secondary-token', {
      status: 200,
      body: envelope(null, { wrap_info: { token: 'eyJ.x.y', accessor: 'acc', ttl: 1800, creation_time: 't', creation_path: 'p', wrapped_accessor: '' } }),
    });
    const token = await run(['write', '-field=wrapping_token', 'sys/replication/dr/primary/secondary-token', 'id=east']);
    expect(token).toEqual({ code: 0, stdout: 'eyJ.x.y', stderr: '' });
    const bad = await run(['write', 'sys/x', 'novalue']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('expected key=value, got "novalue"');
  });
});

describe('read', () => {
  beforeEach(() => {
    fake.on('GET', 'sys/replication/dr/status', {
      status: 200,
      body: envelope({ mode: 'primary', last_wal: 12, known_secondaries: ['east'] }, { warnings: ['heads up'] }),
    });
  });

  it('prints an aligned Key/Value table sorted by key, warnings on stderr', async () => {
    const r = await run(['read', 'sys/replication/dr/status']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'Key                  Value',
        '---                  -----',
        'known_secondaries    ["east"]',
        'last_wal             12',
        'mode                 primary',
        '',
      ].join('\n'),
    );
    expect(r.stderr).toContain('* heads up');
  });

  it('prints one raw field with -field (single dash, value apart), newline only on a TTY', async () => {
    expect((await run(['read', '-field', 'mode', 'sys/replication/dr/status'])).stdout).toBe('primary');
    expect((await run(['read', '-field=last_wal', 'sys/replication/dr/status'], { stdoutTTY: true })).stdout).toBe('12\n');
    const missing = await run(['read', '-field=nope', 'sys/replication/dr/status']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('Field "nope" not present in secret\n');
  });

  it('prints the whole envelope with -format=json', async () => {
    const r = await run(['read', '-format=json', 'sys/replication/dr/status']);
    expect(JSON.parse(r.stdout)).toMatchObject({ data: { mode: 'primary', last_wal: 12 }, warnings: ['heads up'] });
    expect(r.stderr).toBe('');
  });

  it('exits 2 with "No value found" for an empty 404', async () => {
    fake.on('GET', 'secret/none', { status: 404, body: { errors: [] } });
    expect(await run(['read', 'secret/none'])).toEqual({ code: 2, stdout: '', stderr: 'No value found at secret/none\n' });
  });

  it('exits 1 and prints the errors of a refused request, Vault style', async () => {
    fake.on('GET', 'secret/locked', { status: 403, body: { errors: ['permission denied'] } });
    const r = await run(['read', 'secret/locked']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Error reading secret/locked: Error making API request.');
    expect(r.stderr).toContain(`URL: GET ${fake.addr}/v1/secret/locked`);
    expect(r.stderr).toContain('Code: 403. Errors:\n\n* permission denied');
  });

  it('exits 1 when nothing listens at the address', async () => {
    const gone = await FakeVault.start();
    await gone.close();
    const r = await run(['read', 'x'], { env: { TESSERA_ADDR: gone.addr } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Error reading x: .*ECONNREFUSED/);
  });
});

describe('list and delete', () => {
  it('lists keys as a table or a JSON array', async () => {
    fake.on('LIST', 'secret/metadata', { status: 200, body: envelope({ keys: ['a', 'b/'] }) });
    expect((await run(['list', 'secret/metadata'])).stdout).toBe('Keys\n----\na\nb/\n');
    expect(JSON.parse((await run(['list', '-format=json', 'secret/metadata'])).stdout)).toEqual(['a', 'b/']);
    fake.on('LIST', 'secret/empty', { status: 404, body: { errors: [] } });
    expect((await run(['list', 'secret/empty'])).code).toBe(2);
  });

  it('deletes with DELETE', async () => {
    fake.on('DELETE', 'secret/old', { status: 204 });
    const r = await run(['delete', 'secret/old']);
    expect(r).toEqual({ code: 0, stdout: 'Success! Data deleted (if it existed) at: secret/old\n', stderr: '' });
    expect(fake.requests[0]?.method).toBe('DELETE');
  });
});

describe('environment', () => {
  beforeEach(() => {
    fake.on('GET', 'x', { status: 200, body: envelope({ k: 'v' }) });
  });

  it('falls back to VAULT_* when TESSERA_* is unset or empty', async () => {
    const r = await run(['read', 'x'], {
      env: { TESSERA_ADDR: '', VAULT_ADDR: fake.addr, VAULT_TOKEN: 'hvs.vault', VAULT_NAMESPACE: 'ns1' },
    });
    expect(r.code).toBe(0);
    expect(fake.requests[0]?.headers['x-vault-token']).toBe('hvs.vault');
    expect(fake.requests[0]?.headers['x-vault-namespace']).toBe('ns1');
  });

  it('prefers TESSERA_* over VAULT_*, and flags over both', async () => {
    const r = await run(['read', '-namespace=flag-ns', 'x'], {
      env: { TESSERA_ADDR: fake.addr, VAULT_ADDR: 'http://127.0.0.1:1', TESSERA_TOKEN: 'hvs.t', VAULT_TOKEN: 'hvs.v', TESSERA_NAMESPACE: 'env-ns' },
    });
    expect(r.code).toBe(0);
    expect(fake.requests[0]?.headers['x-vault-token']).toBe('hvs.t');
    expect(fake.requests[0]?.headers['x-vault-namespace']).toBe('flag-ns');
  });

  it('uses -address over the environment', async () => {
    const r = await run(['read', `-address=${fake.addr}`, 'x'], { env: { TESSERA_ADDR: 'http://127.0.0.1:1' } });
    expect(r.code).toBe(0);
  });
});

describe('usage and help', () => {
  it('exits 2 for unknown commands, missing arguments, unknown flags and bad formats', async () => {
    for (const argv of [['frobnicate'], ['read'], ['read', '-nope', 'x'], ['read', '-format=xml', 'x'], []]) {
      const r = await run(argv);
      expect({ argv, code: r.code }).toEqual({ argv, code: 2 });
      expect(r.stderr).not.toBe('');
    }
    expect(fake.requests).toEqual([]);
  });

  it('prints help with an example and exits 0', async () => {
    const r = await run(['write', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Example:');
    expect(r.stdout).toContain('$ tessera write');
  });
});

describe('server and license', () => {
  it('passes single- and double-dash flags to runServer', async () => {
    const calls: ServerOptions[] = [];
    const runServer = async (o: ServerOptions) => {
      calls.push(o);
    };
    const dev = await run(['server', '-dev', '-dev-root-token-id', 'root', '-dev-listen-address=127.0.0.1:8300'], { services: { runServer } });
    const config = await run(['server', '--config', '/etc/node.hcl'], { services: { runServer } });
    expect([dev.code, config.code]).toEqual([0, 0]);
    expect(calls).toEqual([
      { dev: true, devRootTokenId: 'root', devListenAddress: '127.0.0.1:8300' },
      { dev: false, configPath: '/etc/node.hcl' },
    ]);
    const neither = await run(['server'], { services: { runServer } });
    expect(neither.code).toBe(2);
    expect(calls).toHaveLength(2);
  });

  it('reports a server that fails to start with exit 1', async () => {
    const r = await run(['server', '-dev'], { services: { runServer: async () => Promise.reject(new Error('port in use')) } });
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'Error running the server: port in use\n' });
  });

  it('license dev writes through writeDevLicense into -out', async () => {
    const dirs: string[] = [];
    const writeDevLicense = async (dir: string) => {
      dirs.push(dir);
      return { licensePath: `${dir}/license.json`, issuerPubPath: `${dir}/issuer.pub` };
    };
    const r = await run(['license', 'dev', '-out', '/tmp/lic'], { services: { writeDevLicense } });
    expect(r.code).toBe(0);
    expect(dirs).toEqual(['/tmp/lic']);
    expect(r.stdout).toContain('/tmp/lic/license.json');
    expect((await run(['license', 'dev'], { services: { writeDevLicense } })).code).toBe(2);
  });
});
