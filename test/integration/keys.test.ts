/**
 * Issue 27 item 3: `sys/rotate`, `sys/key-status`, `sys/rotate/config` and `sys/rekey/*` over HTTP
 * on in-process nodes (real LevelDB, real gRPC replication): Vault's shapes and refusals (nothing
 * changed), rotations and a rekey reaching a DR and a performance secondary through the WAL, their
 * restarts unsealing with the primary's (new) shares, a DR promote after two rotations reading
 * every key, and the PGP / backup / verification flow.
 */
import { decrypt, generateKey, readMessage, readPrivateKey } from 'openpgp';
import { joinSecondary } from '../harness/cluster.js';
import { DR, drOperationToken, inSync } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';
import { runCli } from '../../src/cli/testing/run-cli.js';

const open = { token: null } as const;

/** Gives `keys` to the rekey attempt `nonce` (or the verification, with `verify`); returns the last answer. */
async function give(n: TestNode, nonce: string, keys: readonly string[], path = 'sys/rekey/update'): Promise<any> {
  let last: any;
  for (const key of keys) {
    const r = await n.call('PUT', path, { key, nonce }, open);
    expect({ status: r.status, body: r.body }).toMatchObject({ status: 200 });
    last = r.body;
  }
  return last;
}

/** Stops `n` and starts a node on its directory again, unsealed with `keys` (after `wrong`, if given, fails). */
async function restart(n: TestNode, keys: readonly string[], wrong?: readonly string[]): Promise<TestNode> {
  await n.stop({ keepDir: true });
  return reopen(n.dataDir, n.rootToken, keys, wrong);
}

/** A node started on `dir`, unsealed with `keys` (after `wrong`, if given, fails). */
async function reopen(dir: string, token: string, keys: readonly string[], wrong?: readonly string[]): Promise<TestNode> {
  const again = await startTestNode({ dir, initialize: false });
  if (wrong !== undefined) {
    let last: any;
    for (const key of wrong) last = await again.call('PUT', 'sys/unseal', { key }, open);
    expect({ status: last.status, errors: last.body.errors }).toEqual({ status: 400, errors: ['Unseal failed, invalid key'] });
  }
  for (const key of keys) await again.call('PUT', 'sys/unseal', { key }, open);
  expect((await again.call('GET', 'sys/seal-status', undefined, open)).body.sealed).toBe(false);
  again.rootToken = token;
  again.unsealKeys = [...keys];
  return again;
}

async function readAll(n: TestNode, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const r = await n.call('GET', `secret/data/k${i}`);
    expect({ i, status: r.status, v: r.body?.data?.data }).toEqual({ i, status: 200, v: { i } });
  }
}

it('rotations and a rekey on a primary reach its DR and performance secondaries; restarts and a promote read every key', async () => {
  let p = await startTestNode();
  let d = await startTestNode();
  let s = await startTestNode();
  try {
    await p.call('POST', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } });
    await joinSecondary(p, d, 'dr-keys');
    await joinSecondary(p, s, 'perf-keys', 'performance');
    let written = 0;
    const write = async (k: number): Promise<void> => {
      for (let i = written; i < written + k; i++) expect((await p.call('PUT', `secret/data/k${i}`, { data: { i } })).status).toBe(200);
      written += k;
    };
    await write(5);

    const before = await p.call('GET', 'sys/key-status');
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ term: 1, data: { term: 1 } });
    expect(before.body.install_time).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(typeof before.body.encryptions).toBe('number');

    expect((await p.call('PUT', 'sys/rotate', {})).status).toBe(204);
    await write(5);
    expect((await p.call('POST', 'sys/rotate', {})).status).toBe(204);
    await write(5);
    const after = await p.call('GET', 'sys/key-status');
    expect(after.body.data).toMatchObject({ term: 3 });
    expect(Date.parse(after.body.data.install_time)).toBeGreaterThanOrEqual(Date.parse(before.body.install_time));

    await inSync(p, d);
    await inSync(p, s, { kind: 'performance' });
    await readAll(p, written);
    await readAll(s, written);
    expect((await s.call('GET', 'sys/key-status')).body.data.term).toBe(3);
    const check = await p.call('POST', 'sys/replication/merkle-check', {});
    expect(check.body.data.merkle_corruption_report.corrupted_root).toBe(false);

    // A rekey on the primary changes the shares that unseal its secondaries.
    const started = await p.call('PUT', 'sys/rekey/init', { secret_shares: 3, secret_threshold: 2 }, open);
    expect(started.status).toBe(200);
    const done = await give(p, started.body.nonce, p.unsealKeys.slice(0, 2));
    expect(done).toMatchObject({ complete: true, verification_required: false, pgp_fingerprints: null, backup: false });
    const fresh: string[] = done.keys;
    expect(fresh).toHaveLength(3);
    await write(3);
    await inSync(p, d);
    await inSync(p, s, { kind: 'performance' });
    const old = p.unsealKeys.slice(0, 2);

    s = await restart(s, fresh.slice(1, 3), old);
    await readAll(s, written);
    d = await restart(d, fresh.slice(0, 2), old);
    await write(2);
    await inSync(p, d);

    // A DR promote after two rotations and a rekey: the DR operation token comes from the new shares.
    const opToken = await drOperationToken(d, fresh.slice(0, 2));
    const primaryDir = p.dataDir;
    await p.stop({ keepDir: true });
    expect((await d.call('POST', `${DR}/secondary/promote`, { dr_operation_token: opToken }, open)).status).toBe(204);
    // The old primary's directory unseals with the new shares only, and reads every key.
    p = await reopen(primaryDir, p.rootToken, fresh.slice(0, 2), old);
    await readAll(p, written);
    d.rootToken = p.rootToken;
    await readAll(d, written);
    expect((await d.call('GET', 'sys/key-status')).body.data.term).toBe(3);
    expect((await d.call('PUT', 'sys/rotate', {})).status).toBe(204);
    expect((await d.call('PUT', 'secret/data/after-promote', { data: { v: 1 } })).status).toBe(200);
    expect((await d.call('GET', 'sys/key-status')).body.data.term).toBe(4);
  } finally {
    await s.stop();
    await d.stop();
    await p.stop();
  }
}, 120_000);

describe('one node', () => {
  let n: TestNode;
  beforeAll(async () => {
    n = await startTestNode();
  }, 30_000);
  afterAll(async () => {
    await n.stop();
  });

  it('refuses bad rekey requests with Vault\'s texts and changes nothing', async () => {
    const idle = await n.call('GET', 'sys/rekey/init', undefined, open);
    expect(idle.body).toEqual({ nonce: '', started: false, t: 0, n: 0, progress: 0, required: 2, pgp_fingerprints: null, backup: false, verification_required: false });
    const refusals: [string, string, unknown, string][] = [
      ['PUT', 'sys/rekey/update', { key: n.unsealKeys[0], nonce: 'x' }, 'no barrier rekey in progress'],
      ['PUT', 'sys/rekey/init', { secret_shares: 3, secret_threshold: 2, backup: true }, 'cannot request a backup of the new keys without providing PGP keys for encryption'],
      ['PUT', 'sys/rekey/init', { secret_shares: 3, secret_threshold: 2, pgp_keys: ['a'] }, 'incorrect number of PGP keys for rekey'],
      ['PUT', 'sys/rekey/init', { secret_shares: 2, secret_threshold: 3 }, 'provided threshold greater than the total shares'],
      ['PUT', 'sys/rekey/init', { secret_shares: 3, secret_threshold: 1 }, 'invalid rekey seal configuration: threshold must be greater than one for multiple shares'],
      ['GET', 'sys/rekey/verify', undefined, 'no rekey configuration found'],
    ];
    for (const [method, path, body, error] of refusals) {
      const r = await n.call(method, path, body, open);
      expect({ path, status: r.status, errors: r.body.errors }).toEqual({ path, status: 400, errors: [error] });
    }
    expect((await n.call('GET', 'sys/rekey/init', undefined, open)).body).toEqual(idle.body);

    const started = await n.call('PUT', 'sys/rekey/init', { secret_shares: 1, secret_threshold: 1 }, open);
    const { nonce } = started.body;
    expect(started.body).toMatchObject({ started: true, t: 1, n: 1, progress: 0, required: 2 });
    const again = await n.call('PUT', 'sys/rekey/init', { secret_shares: 1, secret_threshold: 1 }, open);
    expect({ status: again.status, errors: again.body.errors }).toEqual({ status: 400, errors: ['rekey already in progress'] });
    const wrongNonce = await n.call('PUT', 'sys/rekey/update', { key: n.unsealKeys[0], nonce: 'nope' }, open);
    expect(wrongNonce.body.errors).toEqual([`incorrect nonce supplied; nonce for this rekey operation is "${nonce}"`]);
    expect((await n.call('PUT', 'sys/rekey/update', { nonce }, open)).body.errors).toEqual(["'key' must specified in request body as JSON"]);
    expect((await n.call('PUT', 'sys/rekey/update', { key: 'zz', nonce }, open)).status).toBe(400);
    await give(n, nonce, [n.unsealKeys[0]!]);
    const twice = await n.call('PUT', 'sys/rekey/update', { key: n.unsealKeys[0], nonce }, open);
    expect(twice.body.errors).toEqual(['given key has already been provided during this generation operation']);
    // Shares of another node reach the threshold but do not unseal this one: refused, progress 0.
    const other = await startTestNode();
    const foreign = await n.call('PUT', 'sys/rekey/update', { key: other.unsealKeys[0], nonce }, open);
    await other.stop();
    expect(foreign.status).toBe(400);
    expect((await n.call('GET', 'sys/rekey/init', undefined, open)).body).toMatchObject({ nonce, started: true, progress: 0 });
    expect((await n.call('DELETE', 'sys/rekey/init', undefined, open)).status).toBe(204);
    expect((await n.call('GET', 'sys/rekey/init', undefined, open)).body.started).toBe(false);
    // Nothing changed: the original shares still unseal.
    await n.call('PUT', 'sys/seal', {});
    for (const key of n.unsealKeys.slice(0, 2)) await n.call('PUT', 'sys/unseal', { key }, open);
    expect((await n.call('GET', 'sys/seal-status', undefined, open)).body.sealed).toBe(false);
  });

  it('a seal cancels a rekey in progress', async () => {
    await n.call('PUT', 'sys/rekey/init', { secret_shares: 1, secret_threshold: 1 }, open);
    await n.call('PUT', 'sys/seal', {});
    for (const key of n.unsealKeys.slice(0, 2)) await n.call('PUT', 'sys/unseal', { key }, open);
    expect((await n.call('GET', 'sys/rekey/init', undefined, open)).body.started).toBe(false);
  });

  it('rekeys with PGP keys, backup and verification; the decrypted new shares unseal', async () => {
    const pairs = await Promise.all([1, 2, 3].map((i) => generateKey({ userIDs: [{ name: `holder-${i}` }], format: 'binary' })));
    const pgp_keys = pairs.map((k) => Buffer.from(k.publicKey).toString('base64'));
    const started = await n.call('PUT', 'sys/rekey/init', { secret_shares: 3, secret_threshold: 2, pgp_keys, backup: true, require_verification: true }, open);
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ started: true, backup: true, verification_required: true });
    expect(started.body.pgp_fingerprints).toHaveLength(3);
    const done = await give(n, started.body.nonce, n.unsealKeys.slice(1, 3));
    expect(done).toMatchObject({ complete: true, backup: true, verification_required: true, pgp_fingerprints: started.body.pgp_fingerprints });
    const shares = await Promise.all(done.keys_base64.map(async (b64: string, i: number) => {
      expect(Buffer.from(b64, 'base64').toString('hex')).toBe(done.keys[i]);
      const message = await readMessage({ binaryMessage: Buffer.from(b64, 'base64') });
      const { data } = await decrypt({ message, decryptionKeys: await readPrivateKey({ binaryKey: pairs[i]!.privateKey }), format: 'binary' });
      return Buffer.from(data as Uint8Array).toString('utf8');
    }));
    expect(shares[0]).toMatch(/^[0-9a-f]{66}$/);

    const backup = await n.call('GET', 'sys/rekey/backup');
    expect(backup.status).toBe(200);
    expect(backup.body.data.nonce).toBe(started.body.nonce);
    expect(Object.keys(backup.body.data.keys).sort()).toEqual([...started.body.pgp_fingerprints].sort());

    // Until verified, the rekey is pending: update refuses, the old shares are still the ones.
    const pending = await n.call('PUT', 'sys/rekey/update', { key: n.unsealKeys[0], nonce: started.body.nonce }, open);
    const vnonce = done.verification_nonce;
    expect(pending.body.errors).toEqual([`rekey operation already finished; verification must be performed; nonce for the verification operation is "${vnonce}"`]);
    expect((await n.call('GET', 'sys/rekey/verify', undefined, open)).body).toEqual({ nonce: vnonce, started: true, t: 2, n: 3, progress: 0 });
    await give(n, vnonce, [shares[0]!], 'sys/rekey/verify');
    const wrong = await n.call('PUT', 'sys/rekey/verify', { key: n.unsealKeys[0], nonce: vnonce }, open);
    expect(wrong.body.errors).toEqual(['rekey verification failed; incorrect key shares supplied']);
    const reset = await n.call('DELETE', 'sys/rekey/verify', undefined, open);
    expect(reset.body).toMatchObject({ started: true, progress: 0 });
    const verified = await give(n, reset.body.nonce, shares.slice(1, 3), 'sys/rekey/verify');
    expect(verified).toEqual({ nonce: reset.body.nonce, complete: true });

    await n.call('PUT', 'sys/seal', {});
    for (const key of shares.slice(0, 2)) await n.call('PUT', 'sys/unseal', { key }, open);
    expect((await n.call('GET', 'sys/seal-status', undefined, open)).body).toMatchObject({ sealed: false, t: 2, n: 3 });
    n.unsealKeys = shares;

    expect((await n.call('DELETE', 'sys/rekey/backup')).status).toBe(204);
    expect((await n.call('GET', 'sys/rekey/backup')).status).toBe(400);
  });

  it('sys/rotate/config stores Vault\'s fields; bad values change nothing; rotate needs sudo in the root namespace', async () => {
    expect((await n.call('GET', 'sys/rotate/config')).body.data).toEqual({ max_operations: 3865470566, interval: 0, enabled: true });
    const low = await n.call('POST', 'sys/rotate/config', { max_operations: 10 });
    expect({ status: low.status, errors: low.body.errors }).toEqual({ status: 400, errors: ['max_operations must be in the range [1000000,3865470566]'] });
    expect((await n.call('POST', 'sys/rotate/config', { interval: '1h' })).status).toBe(400);
    expect((await n.call('POST', 'sys/rotate/config', { max_operations: 2000000, interval: '48h', enabled: false })).status).toBe(204);
    expect((await n.call('GET', 'sys/rotate/config')).body.data).toEqual({ max_operations: 2000000, interval: 172800, enabled: false });

    const term = (await n.call('GET', 'sys/key-status')).body.term;
    await n.call('PUT', 'sys/policies/acl/rw', { policy: 'path "sys/*" { capabilities = ["create", "update", "read"] }' });
    const limited = (await n.call('POST', 'auth/token/create', { policies: ['rw'] })).body.auth.client_token;
    expect((await n.call('PUT', 'sys/rotate', {}, { token: limited })).status).toBe(403);
    expect((await n.call('PUT', 'sys/rotate', {}, open)).status).toBe(403);
    expect((await n.call('PUT', 'sys/rotate', {}, { headers: { 'X-Vault-Namespace': 'ns1/' } })).status).toBe(400);
    expect((await n.call('GET', 'sys/key-status')).body.term).toBe(term);
  });
});

it('the CLI rotates, shows the key status and rekeys with shares from stdin (progress as operator unseal shows it)', async () => {
  const n = await startTestNode();
  try {
    const run = (argv: string[], stdin?: string) => runCli(argv, { env: { TESSERA_ADDR: n.apiAddr, TESSERA_TOKEN: n.rootToken }, ...(stdin !== undefined ? { stdin } : {}) });
    const rotated = await run(['operator', 'rotate']);
    expect({ code: rotated.code, err: rotated.stderr }).toEqual({ code: 0, err: '' });
    expect(rotated.stdout).toMatch(/Key Term\s+2/);
    expect(JSON.parse((await run(['operator', 'key-status', '-format=json'])).stdout)).toMatchObject({ term: 2 });

    const init = await run(['operator', 'rekey', '-init', '-key-shares=2', '-key-threshold=2', '-format=json']);
    expect(init.code).toBe(0);
    const { nonce } = JSON.parse(init.stdout);
    const one = await run(['operator', 'rekey', `-nonce=${nonce}`, n.unsealKeys[0]!]);
    expect(one.stdout).toMatch(/Rekey Progress\s+1\/2/);
    expect((await run(['operator', 'rekey', '-status'])).stdout).toMatch(/Rekey Progress\s+1\/2/);
    const done = await run(['operator', 'rekey'], `${n.unsealKeys[1]}\n`);
    expect(done.code).toBe(0);
    const keys = [...done.stdout.matchAll(/^Key \d: ([0-9a-f]+)$/gm)].map((m) => m[1]!);
    expect(keys).toHaveLength(2);
    await n.call('PUT', 'sys/seal', {});
    for (const key of keys) await n.call('PUT', 'sys/unseal', { key }, open);
    expect((await n.call('GET', 'sys/seal-status', undefined, open)).body).toMatchObject({ sealed: false, t: 2, n: 2 });
    expect((await run(['operator', 'rekey', '-cancel'])).code).toBe(0);
  } finally {
    await n.stop();
  }
});
