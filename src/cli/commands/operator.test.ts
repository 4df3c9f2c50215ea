import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { FakeVault, envelope } from '../../api/testing/fake-vault.js';
import type { RecordedRequest } from '../../api/testing/fake-vault.js';
import { runCli } from '../testing/run-cli.js';
import type { RunOptions } from '../testing/run-cli.js';

let fake: FakeVault;
const run = (argv: string[], options: RunOptions = {}) =>
  runCli(argv, { env: { TESSERA_ADDR: fake.addr, TESSERA_TOKEN: 'hvs.root' }, ...options });

const sealStatus = { type: 'shamir', initialized: true, sealed: true, t: 3, n: 5, progress: 1, nonce: 'n-1', version: '1.3.0' };

beforeEach(async () => {
  fake = await FakeVault.start();
});
afterEach(async () => {
  await fake.close();
});

describe('operator init', () => {
  it('sends the share counts and prints Vault-shaped JSON', async () => {
    fake.on('POST', 'sys/init', { status: 200, body: { keys: ['abcd'], keys_base64: ['q80='], root_token: 'hvs.new' } });
    const r = await run(['operator', 'init', '-key-shares=1', '-key-threshold', '1', '-format=json']);
    expect(r.code).toBe(0);
    expect(fake.requests[0]?.body).toEqual({ secret_shares: 1, secret_threshold: 1 });
    expect(JSON.parse(r.stdout)).toMatchObject({ unseal_keys_b64: ['q80='], unseal_keys_hex: ['abcd'], unseal_threshold: 1, root_token: 'hvs.new' });
  });

  it('defaults to 5 shares and threshold 3 and prints the keys as text', async () => {
    fake.on('POST', 'sys/init', { status: 200, body: { keys: [], keys_base64: ['k1', 'k2'], root_token: 'hvs.new' } });
    const r = await run(['operator', 'init']);
    expect(fake.requests[0]?.body).toEqual({ secret_shares: 5, secret_threshold: 3 });
    expect(r.stdout).toContain('Unseal Key 1: k1\nUnseal Key 2: k2\n');
    expect(r.stdout).toContain('Initial Root Token: hvs.new');
  });

  it('refuses a threshold above the share count without calling the node', async () => {
    expect((await run(['operator', 'init', '-key-shares=2', '-key-threshold=3'])).code).toBe(2);
    expect(fake.requests).toEqual([]);
  });
});

describe('operator unseal', () => {
  beforeEach(() => {
    fake.on('POST', 'sys/unseal', { status: 200, body: sealStatus });
  });

  it('reads the key from a line of stdin when it is not a terminal', async () => {
    const r = await run(['operator', 'unseal'], { stdin: 'c2hhcmU=\nignored\n' });
    expect(r.code).toBe(0);
    expect(fake.requests[0]?.body).toEqual({ key: 'c2hhcmU=' });
    expect(r.stdout).toMatch(/^Unseal Progress\s+1\/3$/m);
  });

  it('takes the key as an argument, and -reset sends reset', async () => {
    await run(['operator', 'unseal', 'abcd']);
    await run(['operator', 'unseal', '-reset']);
    expect(fake.requests.map((r) => r.body)).toEqual([{ key: 'abcd' }, { reset: true }]);
  });

  it('prompts with hidden input on a terminal, honouring backspace', async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, modes: [] as boolean[] });
    const setRawMode = (mode: boolean) => stdin.modes.push(mode);
    const tty = Object.assign(stdin, { setRawMode });
    setImmediate(() => tty.write('sec\u007fcret\r'));
    const r = await run(['operator', 'unseal'], { stdin: tty });
    expect(r.code).toBe(0);
    expect(fake.requests[0]?.body).toEqual({ key: 'secret' });
    expect(r.stderr).toBe('Unseal Key (will be hidden): \n');
    expect(tty.modes).toEqual([true, false]);
  });

  it('exits 2 on empty stdin without calling the node', async () => {
    expect((await run(['operator', 'unseal'], { stdin: '' })).code).toBe(2);
    expect(fake.requests).toEqual([]);
  });
});

describe('status and seal', () => {
  it('exits 2 when sealed, 0 when unsealed, 1 when the node cannot answer', async () => {
    fake.on('GET', 'sys/seal-status', { status: 200, body: sealStatus });
    const sealed = await run(['status']);
    expect(sealed.code).toBe(2);
    expect(sealed.stdout).toMatch(/^Sealed\s+true$/m);
    fake.on('GET', 'sys/seal-status', { status: 200, body: { ...sealStatus, sealed: false } });
    const unsealed = await run(['status', '-format=json']);
    expect(unsealed.code).toBe(0);
    expect(JSON.parse(unsealed.stdout)).toMatchObject({ sealed: false, t: 3 });
    fake.on('GET', 'sys/seal-status', { status: 500, body: { errors: ['internal error'] } });
    expect((await run(['status'])).code).toBe(1);
  });

  it('operator seal posts to sys/seal', async () => {
    fake.on('POST', 'sys/seal', { status: 204 });
    const r = await run(['operator', 'seal']);
    expect(r.code).toBe(0);
    expect(fake.requests[0]?.path).toBe('sys/seal');
  });
});

describe('operator reindex', () => {
  /** The reindex answers only after the CLI has polled status once, so the bar must have drawn. */
  function slowReindex(): void {
    let polled: () => void = () => undefined;
    const firstPoll = new Promise<void>((resolve) => (polled = resolve));
    fake.on('GET', 'sys/replication/status', () => {
      polled();
      return { status: 200, body: envelope({ dr: { mode: 'primary', reindex_building_progress: 40, reindex_building_total: 100 }, performance: { mode: 'disabled' } }) };
    });
    fake.on('POST', 'sys/replication/reindex', async (_req: RecordedRequest) => {
      await firstPoll;
      return { status: 200, body: envelope(null, { warnings: ['reindexed 100 keys'] }) };
    });
  }

  it('posts the flags, draws progress on a TTY stderr while polling, and prints warnings', async () => {
    slowReindex();
    const r = await run(['operator', 'reindex', '-diff', '-skip-flush'], { stderrTTY: true, pollIntervalMs: 5 });
    expect(r.code).toBe(0);
    expect(fake.requestsTo('sys/replication/reindex')[0]?.body).toEqual({ diff: true, force: false, skip_flush: true });
    expect(fake.requestsTo('sys/replication/status').length).toBeGreaterThan(0);
    expect(r.stderr).toContain('40/100 keys');
    expect(r.stderr).toContain('100/100 keys');
    expect(r.stdout).toBe('WARNING: reindexed 100 keys\nSuccess! Reindex complete.\n');
  });

  it('draws nothing and does not poll when stderr is not a terminal', async () => {
    fake.on('POST', 'sys/replication/reindex', { status: 204 });
    const r = await run(['operator', 'reindex', '-force', '-format=json'], { pollIntervalMs: 5 });
    expect(r).toEqual({ code: 0, stdout: '{\n  "warnings": []\n}\n', stderr: '' });
    expect(fake.requestsTo('sys/replication/status')).toEqual([]);
  });

  it('uses the DR secondary endpoint with -dr-operation-token and reports failures', async () => {
    fake.on('POST', 'sys/replication/dr/secondary/reindex', { status: 400, body: { errors: ['invalid operation token'] } });
    const r = await run(['operator', 'reindex', '-dr-operation-token=op'], { stderrTTY: true, pollIntervalMs: 5 });
    expect(r.code).toBe(1);
    expect(fake.requestsTo('sys/replication/dr/secondary/reindex')[0]?.body).toMatchObject({ dr_operation_token: 'op' });
    expect(r.stderr).toContain('* invalid operation token');
  });
});
