/**
 * The transit engine through the HTTP API (issue 30, first step): mounting, keys and their
 * versions, encrypt/decrypt/rewrap/datakey singly and in batches, HMAC and verify, hash, random,
 * export, and bad input answered with Vault's 4xx and texts, changing nothing.
 */
import { createHash, createHmac, createPublicKey, verify as nodeVerify } from 'node:crypto';
import { startTestNode, type TestNode } from '../support/in-process.js';

let n: TestNode;
beforeAll(async () => {
  n = await startTestNode();
  expect((await n.call('POST', 'sys/mounts/transit', { type: 'transit' })).status).toBe(204);
}, 30_000);
afterAll(async () => n.stop());

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('transit keys', () => {
  it('creates, reads, lists, rotates, configures and deletes a key', async () => {
    const created = await n.call('POST', 'transit/keys/app', {});
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({ name: 'app', type: 'aes256-gcm96', latest_version: 1, min_decryption_version: 1, min_encryption_version: 0, derived: false, exportable: false, deletion_allowed: false, supports_encryption: true, supports_signing: false });
    expect(Object.keys(created.body.data.keys)).toEqual(['1']);
    expect(typeof created.body.data.keys['1']).toBe('number');
    // A second create changes nothing and says so.
    const again = await n.call('POST', 'transit/keys/app', { type: 'chacha20-poly1305' });
    expect(again.body.warnings).toEqual(['key app already existed']);
    expect(again.body.data.type).toBe('aes256-gcm96');

    expect((await n.call('POST', 'transit/keys/app/rotate')).body.data.latest_version).toBe(2);
    const listed = await n.call('LIST', 'transit/keys');
    expect(listed.body.data.keys).toContain('app');

    expect((await n.call('DELETE', 'transit/keys/app')).body.errors).toEqual(['error deleting policy app: deletion is not allowed for this key']);
    const cfg = await n.call('POST', 'transit/keys/app/config', { deletion_allowed: true, min_decryption_version: 2 });
    expect(cfg.body.data).toMatchObject({ deletion_allowed: true, min_decryption_version: 2 });
    expect((await n.call('DELETE', 'transit/keys/app')).status).toBe(204);
    expect((await n.call('GET', 'transit/keys/app')).status).toBe(404);
  });

  it('refuses bad key settings with Vault\'s texts and makes nothing', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'des' }, 'unknown key type des'],
      [{ convergent_encryption: true }, 'convergent encryption requires derivation to be enabled'],
      [{ type: 'hmac', derived: true }, 'key derivation and convergent encryption not supported for keys of type hmac'],
      [{ auto_rotate_period: '10m' }, 'auto rotate period must be 0 to disable or at least an hour'],
      [{ type: 'aes256-gcm96', key_size: 64 }, 'key_size is not valid for algorithm aes256-gcm96'],
    ];
    for (const [body, text] of cases) {
      const r = await n.call('POST', 'transit/keys/bad', body);
      expect(r.status).toBe(400);
      expect(r.body.errors).toEqual([text]);
    }
    expect((await n.call('GET', 'transit/keys/bad')).status).toBe(404);
  });

  it('exportable and allow_plaintext_backup cannot be turned off once on', async () => {
    await n.call('POST', 'transit/keys/exp', { exportable: true });
    const r = await n.call('POST', 'transit/keys/exp/config', { exportable: false });
    expect(r.body.data.exportable).toBe(true);
    const exported = await n.call('GET', 'transit/export/encryption-key/exp/1');
    expect(Buffer.from(exported.body.data.keys['1'], 'base64')).toHaveLength(32);
    expect((await n.call('GET', 'transit/export/hmac-key/exp')).body.data.keys['1']).toEqual(expect.any(String));
    await n.call('POST', 'transit/keys/noexp', {});
    expect((await n.call('GET', 'transit/export/encryption-key/noexp')).body.errors).toEqual(['private key material is not exportable']);
  });
});

describe('transit backup and restore', () => {
  it('a backup restores the key (under its name or another) and old ciphertexts decrypt; an existing key only with force', async () => {
    await n.call('POST', 'transit/keys/bk', { exportable: true, allow_plaintext_backup: true });
    await n.call('POST', 'transit/keys/bk/rotate');
    const ct = (await n.call('POST', 'transit/encrypt/bk', { plaintext: b64('kept'), key_version: 1 })).body.data.ciphertext;
    const backup = (await n.call('GET', 'transit/backup/bk')).body.data.backup as string;
    expect(JSON.parse(Buffer.from(backup, 'base64').toString()).policy).toMatchObject({ name: 'bk', type: 0, latest_version: 2 });
    expect((await n.call('GET', 'transit/keys/bk')).body.data.backup_info).toEqual({ time: expect.any(String), version: 2 });

    expect((await n.call('POST', 'transit/restore', { backup })).body.errors).toEqual(['key "bk" already exists']);
    expect((await n.call('POST', 'transit/restore/bk-copy', { backup })).status).toBe(204);
    expect((await n.call('POST', 'transit/decrypt/bk-copy', { ciphertext: ct })).body.data.plaintext).toBe(b64('kept'));
    await n.call('POST', 'transit/keys/bk/config', { deletion_allowed: true });
    expect((await n.call('DELETE', 'transit/keys/bk')).status).toBe(204);
    expect((await n.call('POST', 'transit/restore', { backup })).status).toBe(204);
    expect((await n.call('POST', 'transit/decrypt/bk', { ciphertext: ct })).body.data.plaintext).toBe(b64('kept'));
    expect((await n.call('GET', 'transit/keys/bk')).body.data.restore_info).toEqual({ time: expect.any(String), version: 2 });
    expect((await n.call('POST', 'transit/restore', { backup: 'bm90IGpzb24=' })).status).toBe(400);
    await n.call('POST', 'transit/keys/nobk', { exportable: true });
    expect((await n.call('GET', 'transit/backup/nobk')).body.errors).toEqual(['plaintext backup is disallowed on the policy']);
  });
});

describe('transit encryption', () => {
  it('encrypts, decrypts and rewraps across a rotation', async () => {
    await n.call('POST', 'transit/keys/enc', {});
    const e1 = await n.call('POST', 'transit/encrypt/enc', { plaintext: b64('hello') });
    expect(e1.status).toBe(200);
    expect(e1.body.data).toEqual({ ciphertext: expect.stringMatching(/^vault:v1:[A-Za-z0-9+/]+=*$/), key_version: 1 });
    await n.call('POST', 'transit/keys/enc/rotate');
    const d1 = await n.call('POST', 'transit/decrypt/enc', { ciphertext: e1.body.data.ciphertext });
    expect(d1.body.data).toEqual({ plaintext: b64('hello') });
    const rw = await n.call('POST', 'transit/rewrap/enc', { ciphertext: e1.body.data.ciphertext });
    expect(rw.body.data.ciphertext).toMatch(/^vault:v2:/);
    expect((await n.call('POST', 'transit/decrypt/enc', { ciphertext: rw.body.data.ciphertext })).body.data.plaintext).toBe(b64('hello'));
  });

  it('upserts a missing key on encrypt (derived when a context is given)', async () => {
    const e = await n.call('POST', 'transit/encrypt/upserted', { plaintext: b64('x'), context: b64('c1') });
    expect(e.status).toBe(200);
    const key = await n.call('GET', 'transit/keys/upserted');
    expect(key.body.data).toMatchObject({ derived: true, kdf: 'hkdf_sha256' });
    expect((await n.call('POST', 'transit/decrypt/upserted', { ciphertext: e.body.data.ciphertext })).body.errors[0]).toMatch(/missing 'context'/);
  });

  it('batches: every item answers in order with its reference; one bad item makes the batch a 400 carrying all results', async () => {
    await n.call('POST', 'transit/keys/batch', {});
    const ok = await n.call('POST', 'transit/encrypt/batch', { batch_input: [{ plaintext: b64('a'), reference: 'r1' }, { plaintext: b64('b'), reference: 'r2' }] });
    expect(ok.status).toBe(200);
    const results = ok.body.data.batch_results as { ciphertext: string; reference: string }[];
    expect(results.map((r) => r.reference)).toEqual(['r1', 'r2']);
    const dec = await n.call('POST', 'transit/decrypt/batch', { batch_input: results.map((r) => ({ ciphertext: r.ciphertext })) });
    expect(dec.body.data.batch_results.map((r: { plaintext: string }) => r.plaintext)).toEqual([b64('a'), b64('b')]);

    const bad = await n.call('POST', 'transit/decrypt/batch', { batch_input: [{ ciphertext: results[0]?.ciphertext }, { ciphertext: 'vault:v1:AAAA' }] });
    expect(bad.status).toBe(400);
    expect(bad.body.data.batch_results).toEqual([{ plaintext: b64('a'), reference: '' }, { error: 'invalid ciphertext length', reference: '' }]);
    const mixed = await n.call('POST', 'transit/encrypt/batch', { batch_input: [{ plaintext: 'a', context: b64('c') }, { plaintext: 'a' }] });
    expect(mixed.body.errors).toEqual(['context should be set either in all the request blocks or in none']);
  });

  it('datakey: plaintext and wrapped, the ciphertext decrypting to the key', async () => {
    await n.call('POST', 'transit/keys/dk', {});
    const p = await n.call('POST', 'transit/datakey/plaintext/dk', { bits: 512 });
    expect(Buffer.from(p.body.data.plaintext, 'base64')).toHaveLength(64);
    expect((await n.call('POST', 'transit/decrypt/dk', { ciphertext: p.body.data.ciphertext })).body.data.plaintext).toBe(p.body.data.plaintext);
    const w = await n.call('POST', 'transit/datakey/wrapped/dk', {});
    expect(w.body.data.plaintext).toBeUndefined();
    expect(w.body.data.key_version).toBe(1);
    expect((await n.call('POST', 'transit/datakey/wrapped/dk', { bits: 100 })).body.errors).toEqual(['invalid bits value']);
  });

  it('bad input: Vault\'s 400s, nothing made', async () => {
    await n.call('POST', 'transit/keys/strict', {});
    const cases: [string, Record<string, unknown>, string][] = [
      ['transit/decrypt/missing', { ciphertext: 'vault:v1:AAAA' }, 'encryption key not found'],
      ['transit/encrypt/strict', {}, 'missing plaintext to encrypt'],
      ['transit/encrypt/strict', { plaintext: 'not base64!' }, 'illegal base64 data at input byte 3'],
      ['transit/decrypt/strict', { ciphertext: 'abc' }, 'invalid ciphertext: no prefix'],
      ['transit/decrypt/strict', { ciphertext: 'vault:v9:AAAA' }, 'invalid ciphertext: version is too new'],
      ['transit/encrypt/strict', { plaintext: b64('x'), key_version: 7 }, 'requested version for encryption is higher than the latest key version'],
      ['transit/encrypt/strict', { plaintext: b64('x'), key_version: 'seven' }, 'error converting input for field "key_version": expected an integer'],
    ];
    for (const [path, body, text] of cases) {
      const r = await n.call('POST', path, body);
      expect([path, r.status, r.body.errors]).toEqual([path, 400, [text]]);
    }
    expect((await n.call('GET', 'transit/keys/missing')).status).toBe(404);
  });
});

describe('transit HMAC, hash and random', () => {
  it('hmac with the version\'s HMAC key (exported and checked independently) and verify', async () => {
    await n.call('POST', 'transit/keys/mac', { exportable: true });
    const mac = await n.call('POST', 'transit/hmac/mac/sha2-512', { input: b64('data') });
    const key = Buffer.from((await n.call('GET', 'transit/export/hmac-key/mac/1')).body.data.keys['1'], 'base64');
    expect(mac.body.data.hmac).toBe(`vault:v1:${createHmac('sha512', key).update('data').digest('base64')}`);
    expect((await n.call('POST', 'transit/verify/mac/sha2-512', { input: b64('data'), hmac: mac.body.data.hmac })).body.data).toEqual({ valid: true });
    expect((await n.call('POST', 'transit/verify/mac', { input: b64('data'), hmac: mac.body.data.hmac })).body.data).toEqual({ valid: false });
    // The verify path reads `hash_algorithm` (what clients send), then `algorithm`.
    expect((await n.call('POST', 'transit/verify/mac', { input: b64('data'), hmac: mac.body.data.hmac, hash_algorithm: 'sha2-512' })).body.data).toEqual({ valid: true });
    expect((await n.call('POST', 'transit/verify/mac/sha2-512', { input: b64('datA'), hmac: mac.body.data.hmac })).body.data).toEqual({ valid: false });
    expect((await n.call('POST', 'transit/verify/mac', { input: b64('data'), hmac: 'v1:xx' })).body.errors).toEqual(['invalid HMAC to verify: no prefix']);
  });

  it('hash and random', async () => {
    const h = await n.call('POST', 'transit/hash/sha2-256', { input: b64('abc') });
    expect(h.body.data.sum).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const h3 = await n.call('POST', 'transit/hash', { input: b64('abc'), algorithm: 'sha3-256', format: 'base64' });
    expect(Buffer.from(h3.body.data.sum, 'base64').toString('hex')).toBe('3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532');
    expect((await n.call('POST', 'transit/hash/md5', { input: b64('abc') })).body.errors).toEqual(['unsupported algorithm md5']);
    const r = await n.call('POST', 'transit/random/16', { format: 'hex' });
    expect(r.body.data.random_bytes).toMatch(/^[0-9a-f]{32}$/);
    expect((await n.call('POST', 'transit/random', { bytes: 0 })).body.errors).toEqual(["'bytes' cannot be less than 1"]);
  });
});

describe('transit signing keys', () => {
  it.each(['ed25519', 'ecdsa-p256', 'ecdsa-p521', 'rsa-2048'] as const)('%s: sign, verify, the read\'s public key verifies independently, rotation', async (type) => {
    const name = `sig-${type}`;
    const created = await n.call('POST', `transit/keys/${name}`, { type });
    expect(created.body.data).toMatchObject({ type, supports_signing: true, supports_encryption: type.startsWith('rsa-') });
    const input = Buffer.from('signed message');
    const signed = await n.call('POST', `transit/sign/${name}/sha2-256`, { input: input.toString('base64') });
    expect(signed.status).toBe(200);
    expect(signed.body.data).toMatchObject({ signature: expect.stringMatching(/^vault:v1:/), key_version: 1 });
    const sig = Buffer.from((signed.body.data.signature as string).slice('vault:v1:'.length), 'base64');
    const pub = created.body.data.keys['1'].public_key as string;
    const key = type === 'ed25519' ? createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(pub, 'base64').toString('base64url') }, format: 'jwk' }) : createPublicKey(pub);
    const ok = type === 'ed25519'
      ? nodeVerify(null, input, key, sig)
      : type.startsWith('rsa-') ? nodeVerify('sha256', input, { key, padding: 6, saltLength: -2 }, sig) : nodeVerify('sha256', input, key, sig);
    expect(ok).toBe(true);
    const verified = await n.call('POST', `transit/verify/${name}/sha2-256`, { input: input.toString('base64'), signature: signed.body.data.signature });
    expect(verified.body.data).toEqual({ valid: true });
    expect((await n.call('POST', `transit/verify/${name}/sha2-256`, { input: b64('other'), signature: signed.body.data.signature })).body.data).toEqual({ valid: false });
    await n.call('POST', `transit/keys/${name}/rotate`);
    const v2 = await n.call('POST', `transit/sign/${name}`, { input: input.toString('base64') });
    expect(v2.body.data.key_version).toBe(2);
    expect((await n.call('POST', `transit/verify/${name}`, { input: input.toString('base64'), signature: signed.body.data.signature })).body.data).toEqual({ valid: true });
  });

  it('prehashed ECDSA (what cosign sends): the digest is signed as is, and node:crypto verifies it against the message', async () => {
    const created = await n.call('POST', 'transit/keys/cosign', { type: 'ecdsa-p256' });
    expect(created.status).toBe(200);
    const pub = createPublicKey(created.body.data.keys['1'].public_key as string);
    const message = Buffer.from('an image manifest');
    const digest = createHash('sha256').update(message).digest();
    const signed = await n.call('POST', 'transit/sign/cosign/sha2-256', { input: digest.toString('base64'), prehashed: true });
    expect(signed.status).toBe(200);
    const sig = Buffer.from((signed.body.data.signature as string).slice('vault:v1:'.length), 'base64');
    expect(nodeVerify('sha256', message, pub, sig)).toBe(true);
    const verify = (input: Buffer, prehashed: boolean) => n.call('POST', 'transit/verify/cosign/sha2-256', { input: input.toString('base64'), signature: signed.body.data.signature, prehashed });
    expect((await verify(digest, true)).body.data).toEqual({ valid: true });
    expect((await verify(createHash('sha256').update('another manifest').digest(), true)).body.data).toEqual({ valid: false });
    expect((await verify(digest, false)).body.data).toEqual({ valid: false });
  });

  it('refusals: a symmetric key does not sign, an asymmetric one does not encrypt (RSA does), Vault\'s option checks', async () => {
    await n.call('POST', 'transit/keys/sym', {});
    expect((await n.call('POST', 'transit/sign/sym', { input: b64('x') })).body.errors).toEqual(['key type aes256-gcm96 does not support signing']);
    await n.call('POST', 'transit/keys/edk', { type: 'ed25519' });
    expect((await n.call('POST', 'transit/encrypt/edk', { plaintext: b64('x') })).body.errors).toEqual(['message encryption not supported for key type ed25519']);
    expect((await n.call('POST', 'transit/sign/edk', { input: b64('x'), hash_algorithm: 'md5' })).body.errors).toEqual(['invalid hash algorithm "md5"']);
    expect((await n.call('POST', 'transit/sign/edk', { input: b64('x'), hash_algorithm: 'none' })).body.errors).toEqual(['hash_algorithm=none requires both prehashed=true and signature_algorithm=pkcs1v15']);
    expect((await n.call('POST', 'transit/verify/edk', { input: b64('x') })).body.errors).toEqual(["neither a 'signature' nor an 'hmac' were given to verify"]);
    expect((await n.call('POST', 'transit/verify/edk', { input: b64('x'), signature: 'sig' })).body.errors).toEqual(['invalid signature: no prefix']);
    expect((await n.call('POST', 'transit/encrypt/newrsa', { plaintext: b64('x'), type: 'rsa-2048' })).body.errors).toEqual(['unknown key type rsa-2048']);
  });

  it('RSA keys encrypt with OAEP; derived ed25519 signs per context and shows the context\'s public key', async () => {
    await n.call('POST', 'transit/keys/rsa-enc', { type: 'rsa-3072' });
    const ct = (await n.call('POST', 'transit/encrypt/rsa-enc', { plaintext: b64('for rsa') })).body.data.ciphertext as string;
    expect(ct).toMatch(/^vault:v1:/);
    expect((await n.call('POST', 'transit/decrypt/rsa-enc', { ciphertext: ct })).body.data.plaintext).toBe(b64('for rsa'));

    await n.call('POST', 'transit/keys/ed-derived', { type: 'ed25519', derived: true });
    expect((await n.call('GET', 'transit/keys/ed-derived')).body.data.keys['1'].public_key).toBe('');
    const ctx = b64('tenant-1');
    const pub = (await n.call('GET', `transit/keys/ed-derived?context=${encodeURIComponent(ctx)}`)).body.data.keys['1'].public_key as string;
    const s1 = await n.call('POST', 'transit/sign/ed-derived', { input: b64('m'), context: ctx });
    expect(s1.body.data.public_key).toBe(pub);
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(pub, 'base64').toString('base64url') }, format: 'jwk' });
    expect(nodeVerify(null, Buffer.from('m'), key, Buffer.from((s1.body.data.signature as string).slice(9), 'base64'))).toBe(true);
    expect((await n.call('POST', 'transit/verify/ed-derived', { input: b64('m'), signature: s1.body.data.signature, context: b64('tenant-2') })).body.data).toEqual({ valid: false });
    expect((await n.call('POST', 'transit/sign/ed-derived', { input: b64('m') })).body.errors[0]).toMatch(/missing 'context'/);
  });

  it('exports signing and public keys in Vault\'s formats; public keys without exportable', async () => {
    await n.call('POST', 'transit/keys/ec-exp', { type: 'ecdsa-p256' });
    const pub = (await n.call('GET', 'transit/export/public-key/ec-exp/1')).body.data.keys['1'] as string;
    expect(pub).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    expect((await n.call('GET', 'transit/export/signing-key/ec-exp')).body.errors).toEqual(['private key material is not exportable']);
    await n.call('POST', 'transit/keys/ec-exp/config', { exportable: true });
    expect((await n.call('GET', 'transit/export/signing-key/ec-exp')).body.data.keys['1']).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    expect((await n.call('GET', 'transit/export/encryption-key/ec-exp')).body.errors).toEqual(['encryption not supported for the key']);
  });
});

describe('transit in a namespace', () => {
  it('a namespace\'s transit keys are its own: not seen, used or listed from the root or another namespace', async () => {
    for (const ns of ['team-a', 'team-b']) expect((await n.call('POST', `sys/namespaces/${ns}`)).status).toBe(200);
    const a = { headers: { 'X-Vault-Namespace': 'team-a' } };
    const b = { headers: { 'X-Vault-Namespace': 'team-b' } };
    expect((await n.call('POST', 'sys/mounts/transit', { type: 'transit' }, a)).status).toBe(204);
    expect((await n.call('POST', 'sys/mounts/transit', { type: 'transit' }, b)).status).toBe(204);
    expect((await n.call('POST', 'transit/keys/shared-name', {}, a)).status).toBe(200);
    const ct = (await n.call('POST', 'transit/encrypt/shared-name', { plaintext: b64('team a only') }, a)).body.data.ciphertext as string;
    // The same name in team-b is another key: it does not exist until made, and then does not decrypt team-a's data.
    expect((await n.call('POST', 'transit/decrypt/shared-name', { ciphertext: ct }, b)).body.errors).toEqual(['encryption key not found']);
    expect((await n.call('POST', 'transit/keys/shared-name', {}, b)).status).toBe(200);
    expect((await n.call('POST', 'transit/decrypt/shared-name', { ciphertext: ct }, b)).body.errors).toEqual(['cipher: message authentication failed']);
    expect((await n.call('GET', 'transit/keys/shared-name')).status).toBe(404);
    expect((await n.call('POST', 'team-a/transit/decrypt/shared-name', { ciphertext: ct })).body.data.plaintext).toBe(b64('team a only'));
  });
});

describe('transit behind the ACL', () => {
  it('a token holds exactly its paths: encrypt and decrypt of its key, nothing of key management, no other key, no other namespace', async () => {
    await n.call('POST', 'transit/keys/acl-app', { exportable: true });
    await n.call('POST', 'transit/keys/acl-other', {});
    const policy = 'path "transit/encrypt/acl-app" { capabilities = ["update"] }\npath "transit/decrypt/acl-app" { capabilities = ["update"] }';
    expect((await n.call('PUT', 'sys/policies/acl/transit-app', { policy })).status).toBe(204);
    const token = (await n.call('POST', 'auth/token/create', { policies: ['transit-app'], no_default_policy: true })).body.auth.client_token as string;
    const as = { token };
    const ct = (await n.call('POST', 'transit/encrypt/acl-app', { plaintext: b64('mine') }, as)).body.data.ciphertext as string;
    expect((await n.call('POST', 'transit/decrypt/acl-app', { ciphertext: ct }, as)).body.data.plaintext).toBe(b64('mine'));
    const refused: [string, string, Record<string, unknown>?][] = [
      ['POST', 'transit/encrypt/acl-other', { plaintext: b64('x') }],
      ['POST', 'transit/encrypt/acl-new', { plaintext: b64('x') }],
      ['POST', 'transit/keys/acl-app/rotate'],
      ['POST', 'transit/keys/acl-app/config', { deletion_allowed: true }],
      ['GET', 'transit/keys/acl-app'],
      ['GET', 'transit/export/encryption-key/acl-app'],
      ['GET', 'transit/backup/acl-app'],
      ['POST', 'transit/restore/acl-app', { backup: 'e30=' }],
      ['DELETE', 'transit/keys/acl-app'],
    ];
    for (const [method, path, body] of refused) expect([path, (await n.call(method, path, body, as)).status]).toEqual([path, 403]);
    // Nothing changed: no key made, the key not rotated.
    expect((await n.call('GET', 'transit/keys/acl-new')).status).toBe(404);
    expect((await n.call('GET', 'transit/keys/acl-app')).body.data.latest_version).toBe(1);

    // A namespace's root-ish token does not reach the root namespace's transit.
    expect((await n.call('POST', 'sys/namespaces/acl-ns')).status).toBe(200);
    const nsToken = (await n.call('POST', 'auth/token/create', { policies: ['default'] }, { headers: { 'X-Vault-Namespace': 'acl-ns' } })).body.auth.client_token as string;
    expect((await n.call('POST', 'transit/decrypt/acl-app', { ciphertext: ct }, { token: nsToken })).status).toBe(403);
    expect((await n.call('POST', 'transit/decrypt/acl-app', { ciphertext: ct }, { token: nsToken, headers: { 'X-Vault-Namespace': 'acl-ns' } })).status).toBe(403);
  });
});
