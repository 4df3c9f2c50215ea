/**
 * The built `tessera` CLI against a real node: the commands an operator types.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestNode, type TestNode } from '../support/in-process.js';

const main = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
  await n.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
});
afterAll(async () => n.stop());

function cli(args: string[], opts: { env?: Record<string, string>; stdin?: string } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [main, ...args], {
      env: { PATH: process.env.PATH ?? '', TESSERA_ADDR: n.apiAddr, TESSERA_TOKEN: n.rootToken, ...opts.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.stdin ?? '');
  });
}

it('puts and gets KV v2 secrets, by field and as JSON', async () => {
  expect((await cli(['kv', 'put', 'secret/app', 'user=alice', 'port=5432'])).code).toBe(0);
  const field = await cli(['kv', 'get', '-field=user', 'secret/app']);
  expect(field.stdout).toBe('alice');
  const json = JSON.parse((await cli(['kv', 'get', '-format=json', 'secret/app'])).stdout);
  expect(json.data.data).toEqual({ user: 'alice', port: '5432' });
  const table = await cli(['read', 'secret/data/app']);
  expect(table.stdout).toMatch(/data\s+/);
  const list = await cli(['list', '-format=json', 'secret/metadata']);
  expect(JSON.parse(list.stdout)).toEqual(['app']);
});

it('reads VAULT_* variables when TESSERA_* are unset, and reports errors with exit 2', async () => {
  const viaVault = await cli(['kv', 'get', '-field=user', 'secret/app'], { env: { TESSERA_ADDR: '', TESSERA_TOKEN: '', VAULT_ADDR: n.apiAddr, VAULT_TOKEN: n.rootToken } });
  expect(viaVault.stdout).toBe('alice');
  const denied = await cli(['read', 'secret/data/app'], { env: { TESSERA_TOKEN: 'hvs.AAAAAAAAAAAAAAAAAAAAAAAA' } });
  expect(denied.code).not.toBe(0);
  expect(denied.stderr).toMatch(/403|permission denied/);
  const missing = await cli(['read', 'secret/data/nothing']);
  expect(missing.code).toBe(2);
});

it('seals and unseals the node through the operator commands, keys from stdin', async () => {
  expect((await cli(['status'])).code).toBe(0);
  expect((await cli(['operator', 'seal'])).code).toBe(0);
  const sealed = await cli(['status']);
  expect(sealed.code).toBe(2);
  expect(sealed.stdout).toMatch(/Sealed\s+true/);
  await cli(['operator', 'unseal'], { stdin: `${n.unsealKeys[0]}\n` });
  const done = await cli(['operator', 'unseal'], { stdin: `${n.unsealKeys[1]}\n` });
  expect(done.code).toBe(0);
  expect((await cli(['status'])).code).toBe(0);
});
