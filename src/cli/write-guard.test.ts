import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { FakeVault, envelope } from '../api/testing/fake-vault.js';
import { runCli } from './testing/run-cli.js';

let fake: FakeVault;
const UP = 'sys/replication/dr/secondary/update-primary';
const run = (argv: string[], stdin?: string) =>
  runCli(argv, { env: { TESSERA_ADDR: fake.addr, TESSERA_TOKEN: 'hvs.root' }, ...(stdin !== undefined ? { stdin } : {}) });

beforeEach(async () => {
  fake = await FakeVault.start();
});
afterEach(async () => {
  await fake.close();
});

describe('write on replication paths', () => {
  it('refuses any empty or blank value under sys/replication/ and sends nothing', async () => {
    for (const argv of [
      ['write', UP, 'dr_operation_token=op', 'token='],
      ['write', UP, 'dr_operation_token=op', 'token= '],
      ['write', 'sys/replication/dr/secondary/promote', 'dr_operation_token='],
      ['write', 'sys/replication/performance/secondary/update-primary', 'dr_operation_token=op', 'token='],
    ]) {
      const r = await run(argv);
      expect({ argv, code: r.code }).toEqual({ argv, code: 2 });
      expect(r.stderr).toMatch(/refusing an empty value/);
    }
    expect(fake.requests).toEqual([]);
  });

  it('-clear-primary sends the empty token itself, only on update-primary, and not with a token', async () => {
    fake.on('POST', UP, { status: 204 });
    expect((await run(['write', UP, 'dr_operation_token=op', '-clear-primary'])).code).toBe(0);
    expect(fake.requests[0]?.body).toEqual({ dr_operation_token: 'op', token: '' });
    expect((await run(['write', UP, 'dr_operation_token=op', 'token=x', '-clear-primary'])).code).toBe(2);
    expect((await run(['write', 'sys/replication/dr/secondary/promote', 'dr_operation_token=op', '-clear-primary'])).code).toBe(2);
    expect(fake.requests).toHaveLength(1);
  });

  it('leaves empty values alone elsewhere', async () => {
    fake.on('POST', 'secret/x', { status: 204 });
    expect((await run(['write', 'secret/x', 'a='])).code).toBe(0);
    expect(fake.requests[0]?.body).toEqual({ a: '' });
  });

  it('prints API warnings on stderr under Vault\'s header, and Success on stdout', async () => {
    fake.on('POST', UP, { status: 200, body: envelope(null, { warnings: ['forgot primary 127.0.0.1:8201 (secondary id dr-east)'] }) });
    const r = await run(['write', UP, 'dr_operation_token=op', '-clear-primary']);
    expect(r).toEqual({
      code: 0,
      stdout: `Success! Data written to: ${UP}\n`,
      stderr: 'WARNING! The following warnings were returned from Vault:\n\n  * forgot primary 127.0.0.1:8201 (secondary id dr-east)\n\n',
    });
  });
});
