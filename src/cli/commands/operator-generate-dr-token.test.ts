import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { generateKey, readKey } from 'openpgp';
import { FakeVault, type FakeReply, type RecordedRequest } from '../../api/testing/fake-vault.js';
import { isTesseraError } from '../../core/errors.js';
import { encodeWithOtp } from '../../replication/operation-token-encoding.js';
import { OperationTokens } from '../../replication/operation-token.js';
import { SealManager } from '../../seal/index.js';
import { runCli, type RunOptions } from '../testing/run-cli.js';
import { decodeToken } from './operator-generate-dr-token.js';
import { MapRecords } from '../../../test/support/map-records.js';

const BASE = 'sys/replication/dr/secondary';
let fake: FakeVault;
let tokens: OperationTokens;
let keys: string[];

/** The fake node answers through a real OperationTokens over a real seal, 400 for refusals. */
function serve(fn: (req: RecordedRequest) => Promise<unknown>) {
  return async (req: RecordedRequest): Promise<FakeReply> => {
    try {
      const body = await fn(req);
      return body === undefined ? { status: 204 } : { status: 200, body };
    } catch (e) {
      if (isTesseraError(e)) return { status: 400, body: { errors: e.messages } };
      throw e;
    }
  };
}

beforeEach(async () => {
  const seal = new SealManager(new MapRecords());
  ({ keys } = await seal.init({ secret_shares: 5, secret_threshold: 3 }));
  tokens = new OperationTokens({
    records: new MapRecords(),
    threshold: async () => (await seal.status()).t,
    verifyShares: (s) => seal.verifyRootKeyShares(s),
  });
  fake = await FakeVault.start();
  const body = (r: RecordedRequest) => r.body as Record<string, string>;
  fake
    .on('GET', `${BASE}/generate-operation-token/attempt`, serve(() => tokens.status()))
    .on('PUT', `${BASE}/generate-operation-token/attempt`, serve((r) => tokens.start(body(r))))
    .on('DELETE', `${BASE}/generate-operation-token/attempt`, serve(() => tokens.cancel()))
    .on('PUT', `${BASE}/generate-operation-token/update`, serve((r) => tokens.update({ key: body(r).key!, nonce: body(r).nonce! })));
});
afterEach(async () => {
  await fake.close();
});

const run = (argv: string[], options: RunOptions = {}) =>
  runCli(['operator', 'generate-dr-token', ...argv], { env: { TESSERA_ADDR: fake.addr }, ...options });

const tokenRow = (stdout: string) => /^DR Operation Token\s+(hvs\.\S+)$/m.exec(stdout)?.[1];

describe('operator generate-dr-token', () => {
  it('-init starts an attempt and prints the nonce and the generated OTP', async () => {
    const r = await run(['-init']);
    expect(r.code).toBe(0);
    expect(fake.requests.find((q) => q.method === 'PUT')).toMatchObject({ body: { otp: '', pgp_key: '' } });
    const status = await tokens.status();
    expect(r.stdout).toMatch(new RegExp(`^Nonce\\s+${status.nonce}$`, 'm'));
    expect(r.stdout).toMatch(/^OTP\s+[A-Za-z0-9]{28}$/m);
    expect(r.stdout).toMatch(/^Progress\s+0\/3$/m);
    expect(r.stderr).toMatch(/one-time password has been generated/);
  });

  it('without flags starts, reads shares line by line from stdin, and prints the decoded token', async () => {
    const r = await run([], { stdin: `${keys[0]}\n\n${keys[3]}\n${keys[4]}\nignored-after-complete\n` });
    expect(r.code).toBe(0);
    expect(fake.requestsTo(`${BASE}/generate-operation-token/update`)).toHaveLength(3);
    expect(r.stderr).toContain('Progress: 1/3\nProgress: 2/3\n');
    expect(r.stdout).toMatch(/^Complete\s+true$/m);
    expect(r.stdout).toMatch(/^Encoded Token\s+\S+$/m);
    const token = tokenRow(r.stdout);
    expect(token).toBeDefined();
    expect(await tokens.validate(token!)).toBe(true);
  });

  it('prompts with hidden input on a terminal, once per share', async () => {
    const pending = [keys[1]!, keys[2]!, keys[0]!];
    const tty = Object.assign(new PassThrough(), {
      isTTY: true,
      setRawMode(mode: boolean) {
        const next = mode ? pending.shift() : undefined;
        if (next !== undefined) setImmediate(() => tty.write(`${next}\r`));
      },
    });
    const r = await run(['-format=json'], { stdin: tty });
    expect(r.code).toBe(0);
    expect(r.stderr.split('Unseal Key (will be hidden): ')).toHaveLength(4);
    const out = JSON.parse(r.stdout) as { complete: boolean; token: string };
    expect(out.complete).toBe(true);
    expect(await tokens.validate(out.token)).toBe(true);
  });

  it('takes one share as an argument for the attempt in progress and shows the progress', async () => {
    const { nonce } = await tokens.start({ otp: 'abcdefghijklmnopqrstuvwxyz01' });
    const r = await run([`-nonce=${nonce}`, keys[2]!]);
    expect(r.code).toBe(0);
    expect(fake.requestsTo(`${BASE}/generate-operation-token/update`)[0]?.body).toEqual({ key: keys[2], nonce });
    expect(r.stdout).toMatch(/^Progress\s+1\/3$/m);
    expect(r.stdout).not.toMatch(/^OTP\s+[A-Za-z0-9]{28}$/m);
  });

  it('prints the encoded token only when the OTP is not known to this run', async () => {
    const otp = 'abcdefghijklmnopqrstuvwxyz01';
    const { nonce } = await tokens.start({ otp });
    const r = await run([`-nonce=${nonce}`], { stdin: keys.slice(0, 3).join('\n') });
    expect(r.code).toBe(0);
    expect(tokenRow(r.stdout)).toBeUndefined();
    const encoded = /^Encoded Token\s+(\S+)$/m.exec(r.stdout)?.[1];
    const decoded = await run(['-decode', encoded!, '-otp', otp]);
    expect(decoded.code).toBe(0);
    expect(await tokens.validate(decoded.stdout.trim())).toBe(true);
  });

  it('-status and -cancel', async () => {
    await tokens.start({});
    const status = await run(['-status', '-format=json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ started: true, required: 3, otp: '', otp_length: 28 });
    const cancel = await run(['-cancel']);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(/canceled/);
    expect(fake.requests.at(-1)?.method).toBe('DELETE');
    expect((await tokens.status()).started).toBe(false);
  });

  it('-decode works offline, from an argument or stdin, in table and JSON form', async () => {
    const otp = 'abcdefghijklmnopqrstuvwxyz01';
    const enc = 'CRQQSiQnJikoKyotLC8uMTAzMjU0NzY5ODtxcA';
    expect((await run([`-decode=${enc}`, `-otp=${otp}`])).stdout).toBe(`hvs.${'A'.repeat(24)}\n`);
    expect(JSON.parse((await run(['-decode=-', `-otp=${otp}`, '-format=json'], { stdin: `${enc}\n` })).stdout)).toEqual({ token: `hvs.${'A'.repeat(24)}` });
    expect(fake.requests).toEqual([]);
    const bad = await run([`-decode=${enc}`, '-otp=short']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/OTP has 5/);
  });

  it('decodes what the node encodes', () => {
    const otp = 'Zyxwvutsrqponmlkjihgfedcba98';
    const token = 'hvs.0123456789abcdefghijklmn';
    expect(decodeToken(encodeWithOtp(token, otp), otp)).toBe(token);
  });

  it('refuses contradictory flags without calling the node', async () => {
    expect((await run(['-init', '-status'])).code).toBe(2);
    expect((await run(['-decode=abc'])).code).toBe(2);
    expect((await run(['-status', keys[0]!])).code).toBe(2);
    expect((await run(['-init', '-otp=x', '-pgp-key=y'])).code).toBe(2);
    expect(fake.requests).toEqual([]);
  });

  it('reports a refused share with the node\'s message and keeps a generated OTP visible', async () => {
    const r = await run([], { stdin: `${keys[0]}\n${keys[0]}\n` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\* share already provided/);
    const otp = /Its OTP is ([A-Za-z0-9]{28})/.exec(r.stderr)?.[1];
    expect(otp).toBeDefined();
    // The operator can finish with the OTP from the message.
    const nonce = /nonce ([0-9a-f-]+)\)/.exec(r.stderr)?.[1];
    const done = await run([`-nonce=${nonce}`], { stdin: `${keys[1]}\n${keys[2]}\n` });
    const encoded = /^Encoded Token\s+(\S+)$/m.exec(done.stdout)?.[1];
    expect(await tokens.validate(decodeToken(encoded!, otp!))).toBe(true);
  });

  it('refuses a leftover attempt, with or without -init, naming its nonce and -cancel, and sends no share', async () => {
    const { nonce } = await tokens.start({});
    for (const argv of [['-init'], [keys[0]!], ['-format=json']]) {
      const r = await run(argv, { stdin: `${keys[0]}\n${keys[1]}\n${keys[2]}\n` });
      expect({ argv, code: r.code, stdout: r.stdout }).toEqual({ argv, code: 1, stdout: '' });
      expect(r.stderr).toContain(`already in progress (nonce ${nonce}, progress 0/3)`);
      expect(r.stderr).toContain('-cancel');
    }
    expect(fake.requests.filter((q) => q.method === 'PUT')).toEqual([]);
    expect((await tokens.status()).progress).toBe(0);
  });

  it('exits 1 when a script runs out of shares before the token is issued, printing no token', async () => {
    const r = await run(['-format=json'], { stdin: `${keys[0]}\n${keys[1]}\n` });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).not.toHaveProperty('token');
    expect(r.stderr).toMatch(/input ended after 2\/3 shares: no token was issued/);
  });

  it('-decode with a wrong OTP fails instead of printing garbage', async () => {
    const enc = 'CRQQSiQnJikoKyotLC8uMTAzMjU0NzY5ODtxcA';
    const r = await run([`-decode=${enc}`, '-otp=zbcdefghijklmnopqrstuvwxyz01']);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(/not a DR operation token \(hvs\. \+ 24 characters\)/);
  });

  it('joining with a wrong -otp still shows the encoded token, then fails', async () => {
    const { nonce } = await tokens.start({ otp: 'abcdefghijklmnopqrstuvwxyz01' });
    const r = await run([`-nonce=${nonce}`, '-otp=zbcdefghijklmnopqrstuvwxyz01'], { stdin: keys.slice(0, 3).join('\n') });
    expect(r.code).toBe(2);
    const encoded = /^Encoded Token\s+(\S+)$/m.exec(r.stdout)?.[1];
    expect(await tokens.validate(decodeToken(encoded!, 'abcdefghijklmnopqrstuvwxyz01'))).toBe(true);
  });

  it('-init -pgp-key reads a binary key file and reports its fingerprint', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tessera-pgp-'));
    try {
      const { publicKey } = await generateKey({ userIDs: [{ name: 'op' }], format: 'binary' });
      const file = join(dir, 'op.pub');
      await writeFile(file, publicKey);
      const r = await run(['-init', `-pgp-key=${file}`]);
      expect(r.code).toBe(0);
      expect(fake.requests.find((q) => q.method === 'PUT')?.body).toEqual({ otp: '', pgp_key: Buffer.from(publicKey).toString('base64') });
      const fingerprint = (await readKey({ binaryKey: publicKey })).getFingerprint();
      expect(r.stdout).toMatch(new RegExp(`^PGP Fingerprint\\s+${fingerprint}$`, 'm'));
      expect(r.stdout).not.toMatch(/^OTP\s+[A-Za-z0-9]{28}$/m);
      expect((await run(['-init', `-pgp-key=${join(dir, 'missing')}`])).code).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
