/**
 * Transit under replication (issue 30), on in-process nodes (real LevelDB, HTTP, gRPC mTLS): a
 * performance secondary encrypts, decrypts, rewraps, HMACs and makes data keys itself, also with
 * its primary gone; key changes made on it are forwarded; a rotation on the primary reaches it,
 * and a version it does not hold yet is Vault's "too new" 400; a local transit mount stays on
 * the secondary. A DR secondary promoted after rotations decrypts everything the primary made.
 */
import { jest } from '@jest/globals';
import { eventually } from '../harness/eventually.js';
import { joinSecondary } from '../harness/cluster.js';
import { DR, drOperationToken, inSync } from '../support/dr.js';
import { startTestNode, type TestNode } from '../support/in-process.js';

jest.setTimeout(60_000);

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** `key`: a key of the `transit/` mount, or `mount/key`. */
const at = (key: string, op: string): string => (key.includes('/') ? key.replace('/', `/${op}/`) : `transit/${op}/${key}`);

async function encrypt(n: TestNode, key: string, text: string, token?: string): Promise<string> {
  const r = await n.call('POST', at(key, 'encrypt'), { plaintext: b64(text) }, token === undefined ? {} : { token });
  expect([r.status, r.body.errors]).toEqual([200, undefined]);
  return r.body.data.ciphertext as string;
}

async function decrypt(n: TestNode, key: string, ciphertext: string, token?: string): Promise<string> {
  const r = await n.call('POST', at(key, 'decrypt'), { ciphertext }, token === undefined ? {} : { token });
  expect([r.status, r.body.errors]).toEqual([200, undefined]);
  return Buffer.from(r.body.data.plaintext as string, 'base64').toString();
}

describe('transit on a performance secondary', () => {
  let p: TestNode;
  let s: TestNode;
  beforeAll(async () => {
    [p, s] = await Promise.all([startTestNode(), startTestNode()]);
    expect((await p.call('POST', 'sys/mounts/transit', { type: 'transit' })).status).toBe(204);
    expect((await p.call('POST', 'transit/keys/app', {})).status).toBe(200);
    await joinSecondary(p, s, 'perf-transit', 'performance');
  });
  afterAll(async () => {
    await Promise.all([p?.stop(), s?.stop()]);
  });

  it('serves every operation locally; ciphertexts cross both ways; a rotation arrives; a version not yet here is "too new"', async () => {
    const fromPrimary = await encrypt(p, 'app', 'made on the primary');
    const fromSecondary = await encrypt(s, 'app', 'made on the secondary');
    expect(await decrypt(s, 'app', fromPrimary)).toBe('made on the primary');
    expect(await decrypt(p, 'app', fromSecondary)).toBe('made on the secondary');

    // A key change asked of the secondary is forwarded: the primary rotates, and it streams back.
    const rotated = await s.call('POST', 'transit/keys/app/rotate');
    expect(rotated.status).toBe(200);
    expect((await p.call('GET', 'transit/keys/app')).body.data.latest_version).toBe(2);
    await inSync(p, s, { kind: 'performance' });
    await eventually(async () => expect((await s.call('GET', 'transit/keys/app')).body.data.latest_version).toBe(2));
    const v2 = await encrypt(s, 'app', 'v2 on the secondary');
    expect(v2).toMatch(/^vault:v2:/);
    expect(await decrypt(p, 'app', v2)).toBe('v2 on the secondary');

    // A ciphertext of a version the secondary does not hold yet: Vault's answer, not a 500.
    const future = v2.replace(/^vault:v2:/, 'vault:v3:');
    const tooNew = await s.call('POST', 'transit/decrypt/app', { ciphertext: future });
    expect([tooNew.status, tooNew.body.errors]).toEqual([400, ['invalid ciphertext: version is too new']]);
  });

  it('keeps encrypting and decrypting with its primary gone', async () => {
    const before = await encrypt(p, 'app', 'before the outage');
    await inSync(p, s, { kind: 'performance' });
    const mac = await s.call('POST', 'transit/hmac/app', { input: b64('m') });
    await p.stop({ keepDir: true });
    try {
      expect(await decrypt(s, 'app', before)).toBe('before the outage');
      const during = await encrypt(s, 'app', 'during the outage');
      expect(await decrypt(s, 'app', during)).toBe('during the outage');
      const rw = await s.call('POST', 'transit/rewrap/app', { ciphertext: before });
      expect(rw.status).toBe(200);
      expect((await s.call('POST', 'transit/datakey/plaintext/app', {})).status).toBe(200);
      expect((await s.call('POST', 'transit/verify/app', { input: b64('m'), hmac: mac.body.data.hmac })).body.data).toEqual({ valid: true });
      expect((await s.call('POST', 'transit/hash', { input: b64('m') })).status).toBe(200);
    } finally {
      p = undefined as unknown as TestNode;
    }
  });
});

describe('a local transit mount on a performance secondary', () => {
  it('stays there', async () => {
    const [p, s] = await Promise.all([startTestNode(), startTestNode()]);
    try {
      await joinSecondary(p, s, 'perf-local', 'performance');
      expect((await s.call('POST', 'sys/mounts/near', { type: 'transit', local: true })).status).toBe(204);
      expect((await s.call('POST', 'near/keys/edge', {})).status).toBe(200);
      const ct = await encrypt(s, 'near/edge', 'local only');
      expect(await decrypt(s, 'near/edge', ct)).toBe('local only');
      expect((await p.call('GET', 'near/keys/edge')).status).toBe(404);
    } finally {
      await Promise.all([p.stop(), s.stop()]);
    }
  });
});

describe('transit on a promoted DR secondary', () => {
  it('decrypts everything the old primary encrypted, across rotations', async () => {
    let p: TestNode | undefined = await startTestNode();
    const s = await startTestNode();
    try {
      expect((await p.call('POST', 'sys/mounts/transit', { type: 'transit' })).status).toBe(204);
      await joinSecondary(p, s, 'dr-transit', 'dr');
      const made: [string, string][] = [];
      for (let v = 1; v <= 3; v++) {
        const text = `written under version ${v}`;
        made.push([await encrypt(p, 'dr-key', text), text]);
        await p.call('POST', 'transit/keys/dr-key/rotate');
      }
      await inSync(p, s);
      const opToken = await drOperationToken(s, p.unsealKeys.slice(0, 2));
      const root = p.rootToken;
      await p.stop({ keepDir: false });
      p = undefined;
      expect((await s.call('POST', `${DR}/secondary/promote`, { dr_operation_token: opToken }, { token: null })).status).toBe(204);
      for (const [ct, text] of made) expect(await decrypt(s, 'dr-key', ct, root)).toBe(text);
      expect(await encrypt(s, 'dr-key', 'after the failover', root)).toMatch(/^vault:v4:/);
    } finally {
      await Promise.all([p?.stop(), s.stop()]);
    }
  });
});
