/**
 * Issue 8 item 2.3: `tessera operator generate-root` (the built CLI, a real process) against a
 * real node process: every flag of `vault operator generate-root` we mirror, and the token it
 * yields is a working root token of that node.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decrypt, generateKey, readMessage, readPrivateKey } from 'openpgp';
import { initAndUnseal, mainJs, useHarness, vault, type StartedNode } from '../harness/index.js';

const h = useHarness();
let node: StartedNode;
let keys: readonly string[];
let rootToken: string;

beforeAll(async () => {
  node = await h.startNode();
  ({ keys, rootToken } = await initAndUnseal(node.apiAddr, { shares: 3, threshold: 2 }));
}, 60_000);
afterEach(async () => {
  expect((await cli(['operator', 'generate-root', '-cancel'])).code).toBe(0);
});

/** The CLI as a process; no client token in its environment (the shares are the authority). */
function cli(args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [mainJs, ...args], { env: { PATH: process.env.PATH ?? '', TESSERA_ADDR: node.apiAddr } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

async function policiesOf(token: string): Promise<string[] | number> {
  const r = await vault(node.apiAddr, token).get('auth/token/lookup-self');
  return r.status === 200 ? r.body.data.policies : r.status;
}

it('-init, shares on stdin, then -decode -otp: a working root token', async () => {
  const init = await cli(['operator', 'generate-root', '-init', '-format=json']);
  expect(init.code).toBe(0);
  const { nonce, otp } = JSON.parse(init.stdout);
  expect(otp).toMatch(/^[A-Za-z0-9]{28}$/);
  expect(init.stderr).toMatch(/one-time password has been generated/);
  const status = await cli(['operator', 'generate-root', '-status']);
  expect(status.stdout).toMatch(new RegExp(`^Nonce\\s+${nonce}$`, 'm'));
  expect(status.stdout).toMatch(/^Progress\s+0\/2$/m);

  // This run did not start the attempt: it prints the encoded token only.
  const shares = await cli(['operator', 'generate-root', `-nonce=${nonce}`], `${keys[0]}\n${keys[1]}\n`);
  expect(shares.code).toBe(0);
  expect(shares.stderr).toContain('Progress: 1/2\n');
  expect(shares.stdout).toMatch(/^Complete\s+true$/m);
  const encoded = /^Encoded Token\s+(\S+)$/m.exec(shares.stdout)?.[1];
  expect(encoded).toBeDefined();
  expect(shares.stdout).not.toMatch(/^Root Token/m);

  const decoded = await cli(['operator', 'generate-root', `-decode=${encoded}`, `-otp=${otp}`]);
  expect(decoded.code).toBe(0);
  const token = decoded.stdout.trim();
  expect(token).not.toBe(rootToken);
  expect(await policiesOf(token)).toEqual(['root']);
}, 60_000);

it('one run without flags starts the attempt, takes the shares and prints the decoded root token', async () => {
  const r = await cli(['operator', 'generate-root', '-format=json'], `${keys[2]}\n${keys[0]}\n`);
  expect(r.code).toBe(0);
  const out = JSON.parse(r.stdout);
  expect(out).toMatchObject({ complete: true, progress: 2, required: 2 });
  expect(out.encoded_root_token).toBe(out.encoded_token);
  expect(await policiesOf(out.token)).toEqual(['root']);
}, 60_000);

it('-generate-otp then -init -otp: the token decodes with the operator\'s OTP', async () => {
  const gen = await cli(['operator', 'generate-root', '-generate-otp']);
  const otp = gen.stdout.trim();
  expect(otp).toMatch(/^[A-Za-z0-9]{28}$/);
  const init = JSON.parse((await cli(['operator', 'generate-root', '-init', `-otp=${otp}`, '-format=json'])).stdout);
  expect(init.otp).toBe('');
  const done = JSON.parse((await cli(['operator', 'generate-root', `-nonce=${init.nonce}`, '-format=json'], `${keys[1]}\n${keys[2]}\n`)).stdout);
  const token = (await cli(['operator', 'generate-root', `-decode=${done.encoded_token}`, `-otp=${otp}`])).stdout.trim();
  expect(await policiesOf(token)).toEqual(['root']);
}, 60_000);

it('-init -pgp-key: the token arrives encrypted to the operator key', async () => {
  const { privateKey, publicKey } = await generateKey({ userIDs: [{ name: 'ops' }], format: 'binary' });
  const file = join(node.dataDir, 'ops.pub');
  await writeFile(file, Buffer.from(publicKey));
  const init = await cli(['operator', 'generate-root', '-init', `-pgp-key=${file}`]);
  expect(init.code).toBe(0);
  expect(init.stdout).toMatch(/^PGP Fingerprint\s+[0-9a-f]{40}$/m);
  const nonce = /^Nonce\s+(\S+)$/m.exec(init.stdout)?.[1];
  const done = JSON.parse((await cli(['operator', 'generate-root', `-nonce=${nonce}`, '-format=json'], `${keys[0]}\n${keys[1]}\n`)).stdout);
  expect(done.token).toBeUndefined();
  const message = await readMessage({ binaryMessage: Buffer.from(done.encoded_token, 'base64') });
  const { data } = await decrypt({ message, decryptionKeys: await readPrivateKey({ binaryKey: privateKey }), format: 'binary' });
  expect(await policiesOf(Buffer.from(data as Uint8Array).toString('utf8'))).toEqual(['root']);
}, 60_000);

it('refuses a second -init while one runs, a wrong share, and -cancel clears the attempt', async () => {
  expect((await cli(['operator', 'generate-root', '-init'])).code).toBe(0);
  const second = await cli(['operator', 'generate-root', '-init']);
  expect(second.code).not.toBe(0);
  expect(second.stderr).toMatch(/already in progress/);
  const bad = await cli(['operator', 'generate-root', 'zz-not-a-share']);
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toMatch(/Error generating the root token/);
  const cancel = await cli(['operator', 'generate-root', '-cancel']);
  expect(cancel.stdout).toMatch(/Root token generation canceled/);
  expect((await cli(['operator', 'generate-root', '-status', '-format=json'])).stdout).toMatch(/"started": ?false/);
}, 60_000);
