/**
 * Issue 8 item 2.3: `sys/generate-root/attempt|update` over HTTP on in-process nodes, Vault's
 * wire (WIRE.md sections 5 and 8): OTP and PGP flows end to end (the decoded token is a new root
 * token that works), cancel, refusals that change nothing, one attempt at a time, and where the
 * endpoints answer (every unsealed node but a DR secondary; root namespace only).
 */
import { decrypt, generateKey, readMessage, readPrivateKey } from 'openpgp';
import { decodeOtp } from '../../src/seal/root-generation-encoding.js';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, drOperationToken } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

const GR = 'sys/generate-root';
const open = { token: null } as const;

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
}, 30_000);
afterAll(async () => {
  await n.stop();
});
afterEach(async () => {
  expect((await n.call('DELETE', `${GR}/attempt`, undefined, open)).status).toBe(204);
});

/** Gives `keys` to the attempt named `nonce`; returns the last answer. */
async function give(node: TestNode, nonce: string, keys: string[]): Promise<any> {
  let last: any;
  for (const key of keys) {
    const r = await node.call('PUT', `${GR}/update`, { key, nonce }, open);
    expect(r.status).toBe(200);
    last = r.body;
  }
  return last;
}

/** lookup-self with `token`: 200 and the root policy, else the status. */
async function lookupSelf(node: TestNode, token: string): Promise<{ status: number; policies?: string[]; ttl?: number }> {
  const r = await node.call('GET', 'auth/token/lookup-self', undefined, { token });
  return r.status === 200 ? { status: 200, policies: r.body.data.policies, ttl: r.body.data.ttl } : { status: r.status };
}

it('GET answers the idle status as a bare object with the seal threshold', async () => {
  const r = await n.call('GET', `${GR}/attempt`, undefined, open);
  expect(r.status).toBe(200);
  expect(r.body).toEqual({
    nonce: '', started: false, progress: 0, required: 2, complete: false, encoded_token: '',
    encoded_root_token: '', pgp_fingerprint: '', otp: '', otp_length: 28,
  });
});

it('OTP flow: no client token, the shares give an encoded root token; decoded, it is a working root token', async () => {
  const started = await n.call('PUT', `${GR}/attempt`, { otp: '', pgp_key: '' }, open);
  expect(started.status).toBe(200);
  expect(started.body).toMatchObject({ started: true, progress: 0, required: 2, complete: false, otp_length: 28 });
  const { nonce, otp } = started.body;
  expect(otp).toMatch(/^[A-Za-z0-9]{28}$/);
  // The OTP is shown once: status never repeats it.
  expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body).toMatchObject({ nonce, started: true, otp: '' });
  const one = await give(n, nonce, [n.unsealKeys[0]!]);
  expect(one).toMatchObject({ progress: 1, complete: false, encoded_token: '' });
  const done = await give(n, nonce, [n.unsealKeys[2]!]);
  expect(done).toMatchObject({ nonce, started: true, progress: 2, required: 2, complete: true });
  expect(done.encoded_root_token).toBe(done.encoded_token);
  const token = decodeOtp(done.encoded_token, otp);
  expect(token).not.toBe(n.rootToken);
  expect(await lookupSelf(n, token)).toEqual({ status: 200, policies: ['root'], ttl: 0 });
  // It is a full root token: it can do what only root may.
  expect((await n.call('PUT', 'sys/policies/acl/made-by-generated-root', { policy: 'path "x" { capabilities = ["read"] }' }, { token })).status).toBe(204);
  expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body).toMatchObject({ started: false });
});

it('OTP flow with an operator-chosen OTP (POST start): decodes with that OTP', async () => {
  const otp = 'A'.repeat(14) + 'b'.repeat(14);
  const started = await n.call('POST', `${GR}/attempt`, { otp }, open);
  expect(started.status).toBe(200);
  expect(started.body.otp).toBe('');
  const done = await give(n, started.body.nonce, n.unsealKeys.slice(1, 3));
  expect((await lookupSelf(n, decodeOtp(done.encoded_token, otp))).policies).toEqual(['root']);
});

it('PGP flow: the token arrives encrypted to the operator key, and the fingerprint is reported', async () => {
  const { privateKey, publicKey } = await generateKey({ userIDs: [{ name: 'ops' }], format: 'binary' });
  const started = await n.call('PUT', `${GR}/attempt`, { pgp_key: Buffer.from(publicKey).toString('base64') }, open);
  expect(started.status).toBe(200);
  expect(started.body.otp).toBe('');
  expect(started.body.pgp_fingerprint).toMatch(/^[0-9a-f]{40}$/);
  const done = await give(n, started.body.nonce, n.unsealKeys.slice(0, 2));
  expect(done).toMatchObject({ complete: true, pgp_fingerprint: started.body.pgp_fingerprint });
  expect(done.encoded_root_token).toBe(done.encoded_token);
  const message = await readMessage({ binaryMessage: Buffer.from(done.encoded_token, 'base64') });
  const { data } = await decrypt({ message, decryptionKeys: await readPrivateKey({ binaryKey: privateKey }), format: 'binary' });
  const token = Buffer.from(data as Uint8Array).toString('utf8');
  expect(await lookupSelf(n, token)).toEqual({ status: 200, policies: ['root'], ttl: 0 });
});

it('cancel: 204, progress and attempt gone; a share for the old nonce is refused', async () => {
  const { nonce } = (await n.call('PUT', `${GR}/attempt`, {}, open)).body;
  await give(n, nonce, [n.unsealKeys[0]!]);
  const cancel = await n.call('DELETE', `${GR}/attempt`, undefined, open);
  expect(cancel.status).toBe(204);
  expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body).toMatchObject({ started: false, progress: 0, nonce: '' });
  const late = await n.call('PUT', `${GR}/update`, { key: n.unsealKeys[1], nonce }, open);
  expect(late.status).toBe(400);
  expect(late.body.errors.join(' ')).toMatch(/no root token generation attempt is in progress/);
});

it('a second attempt while one runs is a 400 and leaves the first as it was', async () => {
  const first = (await n.call('PUT', `${GR}/attempt`, {}, open)).body;
  await give(n, first.nonce, [n.unsealKeys[0]!]);
  const second = await n.call('PUT', `${GR}/attempt`, { pgp_key: '' }, open);
  expect(second.status).toBe(400);
  expect(second.body.errors.join(' ')).toMatch(/already in progress/);
  expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body).toMatchObject({ nonce: first.nonce, progress: 1 });
});

it('a wrong nonce is a 400 naming the right one, and counts nothing', async () => {
  const { nonce } = (await n.call('PUT', `${GR}/attempt`, {}, open)).body;
  const r = await n.call('PUT', `${GR}/update`, { key: n.unsealKeys[0], nonce: 'not-the-nonce' }, open);
  expect(r.status).toBe(400);
  expect(r.body.errors.join(' ')).toContain(nonce);
  expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body.progress).toBe(0);
});

it('a wrong share: undecodable or twice is a 400 that keeps progress; shares that do not combine reset it and issue nothing', async () => {
  const { nonce, otp } = (await n.call('PUT', `${GR}/attempt`, {}, open)).body;
  await give(n, nonce, [n.unsealKeys[0]!]);
  for (const key of ['not a share!', n.unsealKeys[0]]) {
    const r = await n.call('PUT', `${GR}/update`, { key, nonce }, open);
    expect(r.status).toBe(400);
    expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body.progress).toBe(1);
  }
  const missing = await n.call('PUT', `${GR}/update`, { nonce }, open);
  expect(missing.status).toBe(400);
  // A share of the right length whose value is wrong: the combination is not the root key.
  const good = Buffer.from(n.unsealKeys[1]!, 'hex');
  good[0] = good[0]! ^ 0xff;
  const wrong = await n.call('PUT', `${GR}/update`, { key: good.toString('hex'), nonce }, open);
  expect(wrong.status).toBe(400);
  expect(wrong.body.errors.join(' ')).toMatch(/do not combine to the root key/);
  expect(wrong.body.encoded_token).toBeUndefined();
  expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body).toMatchObject({ nonce, started: true, progress: 0 });
  // The same attempt then completes with right shares.
  const done = await give(n, nonce, n.unsealKeys.slice(0, 2));
  expect((await lookupSelf(n, decodeOtp(done.encoded_token, otp))).policies).toEqual(['root']);
});

it('answers only in the root namespace', async () => {
  expect((await n.call('POST', 'sys/namespaces/gr-ns')).status).toBe(200);
  const r = await n.call('PUT', `${GR}/attempt`, {}, { token: null, headers: { 'X-Vault-Namespace': 'gr-ns' } });
  expect(r.status).toBe(400);
  expect(r.body.errors.join(' ')).toMatch(/restricted to the root namespace/);
  expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body.started).toBe(false);
});

it('sealing the node forgets the shares given (root key material), not the attempt', async () => {
  const { nonce } = (await n.call('PUT', `${GR}/attempt`, {}, open)).body;
  await give(n, nonce, [n.unsealKeys[0]!]);
  expect((await n.call('PUT', 'sys/seal')).status).toBe(204);
  for (const key of n.unsealKeys.slice(0, 2)) await n.call('PUT', 'sys/unseal', { key }, open);
  expect((await n.call('GET', `${GR}/attempt`, undefined, open)).body).toMatchObject({ nonce, started: true, progress: 0 });
});

it('the attempt survives a restart; the shares given before it do not', async () => {
  const node = await startTestNode();
  const dir = node.dataDir;
  const keys = node.unsealKeys;
  const { nonce, otp } = (await node.call('PUT', `${GR}/attempt`, {}, open)).body;
  await give(node, nonce, [keys[0]!]);
  await node.stop({ keepDir: true });
  const again = await startTestNode({ dir, initialize: false });
  try {
    // Sealed: the endpoints do not answer until unsealed.
    expect((await again.call('GET', `${GR}/attempt`, undefined, open)).status).toBe(503);
    for (const key of keys.slice(0, 2)) await again.call('PUT', 'sys/unseal', { key }, open);
    expect((await again.call('GET', `${GR}/attempt`, undefined, open)).body).toMatchObject({ nonce, started: true, progress: 0 });
    const done = await give(again, nonce, keys.slice(1, 3));
    expect((await lookupSelf(again, decodeOtp(done.encoded_token, otp))).policies).toEqual(['root']);
  } finally {
    await again.stop();
  }
}, 30_000);

it('works on a DR primary; a DR secondary does not serve it; promoted, it takes the primary\'s shares', async () => {
  const p = await startTestNode();
  const s = await startTestNode();
  try {
    await joinSecondary(p, s, 'gr-sec');
    const { nonce, otp } = (await p.call('PUT', `${GR}/attempt`, {}, open)).body;
    const done = await give(p, nonce, p.unsealKeys.slice(0, 2));
    expect((await lookupSelf(p, decodeOtp(done.encoded_token, otp))).policies).toEqual(['root']);
    const refused = await s.call('PUT', `${GR}/attempt`, {}, open);
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual(['path disabled in replication DR secondary mode']);
    // Promoted, the former secondary generates with the shares of the seal it adopted (the primary's).
    const op = await drOperationToken(s, p.unsealKeys.slice(0, 2));
    expect((await s.call('POST', `${DR}/secondary/promote`, { dr_operation_token: op, force: true }, open)).status).toBe(204);
    const again = await eventually(async () => {
      const r = await s.call('PUT', `${GR}/attempt`, {}, open);
      expect(r.status).toBe(200);
      return r.body;
    });
    // Its own shares from before activation do not combine to the adopted root key; the primary's do.
    await give(s, again.nonce, [s.unsealKeys[0]!]);
    const wrong = await s.call('PUT', `${GR}/update`, { key: s.unsealKeys[1], nonce: again.nonce }, open);
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors.join(' ')).toMatch(/do not combine to the root key/);
    const onS = await give(s, again.nonce, p.unsealKeys.slice(1, 3));
    expect((await lookupSelf(s, decodeOtp(onS.encoded_token, again.otp))).policies).toEqual(['root']);
  } finally {
    await s.stop();
    await p.stop();
  }
}, 60_000);
