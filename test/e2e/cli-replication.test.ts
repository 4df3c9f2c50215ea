/**
 * The built CLI on a real DR pair: `status` shows replication, an empty `token` never detaches a
 * secondary unless -clear-primary asks for it, and generate-dr-token fails loudly on a leftover
 * attempt or a wrong OTP.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { drStatus, eventually, runCli, startCluster, useHarness, DR, type StartedNode } from '../harness/index.js';

const h = useHarness();
let primary: StartedNode;
let secondary: StartedNode;
let keys: readonly string[];
let root: string;

beforeAll(async () => {
  const c = await startCluster(h, { primaryInit: { shares: 1, threshold: 1 }, dr: ['dr-east'] });
  [primary, secondary] = [c.primary, c.dr[0]!];
  [keys, root] = [c.primary.unsealKeys, c.primary.rootToken];
}, 60_000);

const cli = (addr: string, args: string[], stdin?: string) =>
  runCli(args, 20_000, { env: { TESSERA_ADDR: addr, TESSERA_TOKEN: root }, ...(stdin !== undefined ? { stdin } : {}) });
const row = (stdout: string, key: string) => new RegExp(`^${key}\\s+(.*)$`, 'm').exec(stdout)?.[1];

test('status shows DR and performance replication of the node it talks to', async () => {
  const p = await eventually(async () => {
    const r = await cli(primary.apiAddr, ['status']);
    expect(row(r.stdout, 'DR Secondaries')).toBe('1 connected of 1');
    return r;
  }, { timeoutMs: 15_000, intervalMs: 200 });
  expect(p.code).toBe(0);
  const ps = await drStatus(primary.apiAddr);
  expect(row(p.stdout, 'DR Replication Mode')).toBe('primary');
  expect(row(p.stdout, 'DR Cluster ID')).toBe(ps.cluster_id);
  expect(Number(row(p.stdout, 'DR Last WAL'))).toBeGreaterThan(0);
  expect(row(p.stdout, 'Performance Replication Mode')).toMatch(/^(disabled|unknown)$/);

  const s = await cli(secondary.apiAddr, ['status']);
  expect(s.code).toBe(0);
  expect(row(s.stdout, 'DR Replication Mode')).toBe('secondary');
  expect(row(s.stdout, 'DR State')).toBe('stream-wals');
  expect(row(s.stdout, 'DR Cluster ID')).toBe(ps.cluster_id);
  expect(Number(row(s.stdout, 'DR Last Remote WAL'))).toBeGreaterThan(0);
  expect(row(s.stdout, 'DR Connection')).toMatch(/^ready/);
  expect(row(s.stdout, 'DR Lag')).toMatch(/^\d+ entries \(\d+ ms\)$/);
  const json = JSON.parse((await cli(secondary.apiAddr, ['status', '-format=json'])).stdout);
  expect(json).toMatchObject({ sealed: false, replication: { dr: { mode: 'secondary', cluster_id: ps.cluster_id } } });
});

test('generate-dr-token refuses a leftover attempt and a wrong OTP, and makes a token when asked plainly', async () => {
  const init = await cli(secondary.apiAddr, ['operator', 'generate-dr-token', '-init', '-format=json']);
  expect(init.code).toBe(0);
  const { nonce, otp } = JSON.parse(init.stdout) as { nonce: string; otp: string };
  const leftover = await cli(secondary.apiAddr, ['operator', 'generate-dr-token', '-format=json'], `${keys[0]}\n`);
  expect(leftover).toMatchObject({ code: 1, stdout: '' });
  expect(leftover.stderr).toContain(`nonce ${nonce}`);
  expect(leftover.stderr).toContain('-cancel');
  const again = await cli(secondary.apiAddr, ['operator', 'generate-dr-token', '-init']);
  expect(again.code).toBe(1);

  // The holder of the nonce finishes it; a wrong OTP does not decode to a token.
  const joined = await cli(secondary.apiAddr, ['operator', 'generate-dr-token', `-nonce=${nonce}`, keys[0]!]);
  expect(joined.code).toBe(0);
  const encoded = row(joined.stdout, 'Encoded Token')!;
  const wrongOtp = otp.startsWith('A') ? `B${otp.slice(1)}` : `A${otp.slice(1)}`;
  const bad = await cli(secondary.apiAddr, ['operator', 'generate-dr-token', `-decode=${encoded}`, `-otp=${wrongOtp}`]);
  expect(bad).toMatchObject({ code: 2, stdout: '' });
  const good = await cli(secondary.apiAddr, ['operator', 'generate-dr-token', `-decode=${encoded}`, `-otp=${otp}`]);
  expect(good.stdout).toMatch(/^hvs\.[A-Za-z0-9]{24}\n$/);
});

test('an empty token never detaches the secondary; -clear-primary does, on purpose', async () => {
  const made = await cli(secondary.apiAddr, ['operator', 'generate-dr-token', '-format=json'], `${keys[0]}\n`);
  expect(made.code).toBe(0);
  const drt = JSON.parse(made.stdout).token as string;
  expect(drt).toMatch(/^hvs\./);
  const path = `${DR}/secondary/update-primary`;
  const empty = join(await h.tempDir(), 'empty');
  await writeFile(empty, '');

  for (const [args, stdin] of [
    [['write', path, `dr_operation_token=${drt}`, 'token='], undefined],
    [['write', path, `dr_operation_token=${drt}`, `token=@${empty}`], undefined],
    [['write', path, '-'], JSON.stringify({ dr_operation_token: drt, token: '' })],
  ] as const) {
    const r = await cli(secondary.apiAddr, [...args], stdin);
    expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
    expect(r.stderr).toMatch(/refusing an empty value for "token".*-clear-primary/s);
  }
  expect(await drStatus(secondary.apiAddr)).toMatchObject({ state: 'stream-wals', primary_cluster_addr: expect.stringMatching(/:\d+$/) });

  const clear = await cli(secondary.apiAddr, ['write', path, `dr_operation_token=${drt}`, '-clear-primary']);
  expect(clear).toMatchObject({ code: 0, stdout: `Success! Data written to: ${path}\n` });
  await eventually(async () => expect(await drStatus(secondary.apiAddr)).toMatchObject({ mode: 'secondary', primary_cluster_addr: '' }), { timeoutMs: 10_000 });
});
