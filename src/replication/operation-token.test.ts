import { describe, expect, it } from '@jest/globals';
import { createMessage, decrypt, encrypt, generateKey, readKey, readMessage, readPrivateKey } from 'openpgp';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import { SealManager } from '../seal/index.js';
import { OperationTokenRecord, OperationTokens, decodeOtp, type OperationTokensOptions } from './operation-token.js';
import { MapRecords } from '../../test/support/map-records.js';

function nonces(): () => string {
  let i = 0;
  return () => `nonce-${++i}`;
}

/** A real seal (5 shares, threshold 3 unless told) whose shares the attempts are verified against. */
async function setup(options: Partial<OperationTokensOptions> = {}, n = 5, t = 3) {
  const sealRecords = new MapRecords();
  const seal = new SealManager(sealRecords);
  const { keys, keysBase64 } = await seal.init({ secret_shares: n, secret_threshold: t });
  const records = new MapRecords();
  const make = (more: Partial<OperationTokensOptions> = {}) =>
    new OperationTokens({
      records,
      threshold: async () => (await seal.status()).t,
      verifyShares: (shares) => seal.verifyRootKeyShares(shares),
      newNonce: nonces(),
      ...options,
      ...more,
    });
  return { tokens: make(), make, keys, keysBase64, records };
}

async function rejection(p: Promise<unknown>): Promise<InvalidRequest> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(InvalidRequest);
  return e as InvalidRequest;
}

describe('generation attempt lifecycle', () => {
  it('reports no attempt in Vault\'s bare shape, with the seal threshold as required', async () => {
    const { tokens } = await setup();
    expect(await tokens.status()).toEqual({
      nonce: '', started: false, progress: 0, required: 3, complete: false, encoded_token: '',
      encoded_root_token: '', pgp_fingerprint: '', otp: '', otp_length: 28,
    });
  });

  it('generates a 28-character base62 OTP when given neither otp nor pgp_key, and shows it once', async () => {
    const { tokens } = await setup();
    const started = await tokens.start({ otp: '', pgp_key: '' });
    expect(started).toMatchObject({ nonce: 'nonce-1', started: true, progress: 0, required: 3, complete: false, otp_length: 28 });
    expect(started.otp).toMatch(/^[A-Za-z0-9]{28}$/);
    expect((await tokens.status()).otp).toBe('');
    expect((await tokens.status()).nonce).toBe('nonce-1');
  });

  it('counts shares (hex or base64), completes at the threshold and issues a token that validates', async () => {
    const { tokens, keys, keysBase64 } = await setup();
    const { nonce, otp } = await tokens.start({});
    expect(await tokens.update({ key: keys[0]!, nonce })).toMatchObject({ progress: 1, complete: false, encoded_token: '' });
    expect(await tokens.update({ key: keysBase64[2]!, nonce })).toMatchObject({ progress: 2, complete: false });
    expect((await tokens.status()).progress).toBe(2);
    const done = await tokens.update({ key: keys[4]!, nonce });
    expect(done).toMatchObject({ nonce, started: true, progress: 3, required: 3, complete: true, otp: '', pgp_fingerprint: '' });
    expect(done.encoded_root_token).toBe(done.encoded_token);
    expect(done.encoded_token).not.toMatch(/=/);
    const token = decodeOtp(done.encoded_token, otp);
    expect(token).toMatch(/^hvs\.[A-Za-z0-9]{24}$/);
    expect(await tokens.validate(token)).toBe(true);
    // One character changed (a token that already ends in x gets a y: always a different token).
    expect(await tokens.validate(`${token.slice(0, -1)}${token.endsWith('x') ? 'y' : 'x'}`)).toBe(false);
    // The attempt is over: a new one may start.
    expect(await tokens.status()).toMatchObject({ started: false, nonce: '', progress: 0 });
    expect((await tokens.start({})).nonce).toBe('nonce-2');
  });

  it('refuses a second attempt while one is in progress', async () => {
    const { tokens } = await setup();
    await tokens.start({});
    expect((await rejection(tokens.start({}))).message).toMatch(/already in progress/);
  });

  it('refuses a share when no attempt is in progress', async () => {
    const { tokens, keys } = await setup();
    expect((await rejection(tokens.update({ key: keys[0]!, nonce: 'x' }))).message).toMatch(/no DR operation token generation attempt is in progress/);
  });

  it('refuses a wrong nonce and names the right one', async () => {
    const { tokens, keys } = await setup();
    await tokens.start({});
    const e = await rejection(tokens.update({ key: keys[0]!, nonce: 'stale' }));
    expect(e.message).toMatch(/incorrect nonce/);
    expect(e.message).toContain('nonce-1');
    expect((await tokens.status()).progress).toBe(0);
  });

  it('refuses a share given twice, in either encoding, without losing progress', async () => {
    const { tokens, keys, keysBase64 } = await setup();
    const { nonce } = await tokens.start({});
    await tokens.update({ key: keys[1]!, nonce });
    expect((await rejection(tokens.update({ key: keysBase64[1]!, nonce }))).message).toMatch(/already provided/);
    expect((await tokens.status()).progress).toBe(1);
  });

  it('refuses an undecodable share and one of the wrong length', async () => {
    const { tokens, keys } = await setup();
    const { nonce } = await tokens.start({});
    expect((await rejection(tokens.update({ key: 'not a share!', nonce }))).message).toMatch(/hex or base64/);
    expect((await rejection(tokens.update({ key: keys[0]!.slice(0, 20), nonce }))).message).toMatch(/33 bytes/);
    expect((await tokens.status()).progress).toBe(0);
  });

  it('refuses an OTP of the wrong length, and otp together with pgp_key', async () => {
    const { tokens } = await setup();
    expect((await rejection(tokens.start({ otp: 'short' }))).message).toMatch(/otp must be 28 characters long, got 5/);
    expect((await rejection(tokens.start({ otp: 'a'.repeat(28), pgp_key: 'AAAA' }))).message).toMatch(/only one of otp and pgp_key/);
    expect((await tokens.status()).started).toBe(false);
  });

  it('resets progress under the same nonce when the shares do not combine to the root key', async () => {
    const { tokens, keys } = await setup();
    const other = await setup();
    const { nonce } = await tokens.start({});
    await tokens.update({ key: keys[0]!, nonce });
    await tokens.update({ key: other.keys[1]!, nonce });
    const e = await rejection(tokens.update({ key: keys[2]!, nonce }));
    expect(e.message).toMatch(/do not combine to the root key/);
    expect(await tokens.status()).toMatchObject({ started: true, nonce, progress: 0 });
    await tokens.update({ key: keys[0]!, nonce });
    await tokens.update({ key: keys[1]!, nonce });
    expect((await tokens.update({ key: keys[2]!, nonce })).complete).toBe(true);
  });

  it('cancels: progress and attempt are gone, and cancelling nothing is harmless', async () => {
    const { tokens, keys, records } = await setup();
    const { nonce } = await tokens.start({});
    await tokens.update({ key: keys[0]!, nonce });
    await tokens.cancel();
    expect(await tokens.status()).toMatchObject({ started: false, progress: 0, nonce: '' });
    expect(records.data.has(OperationTokenRecord.attempt)).toBe(false);
    await tokens.cancel();
    await rejection(tokens.update({ key: keys[1]!, nonce }));
    expect((await tokens.start({})).progress).toBe(0);
  });

  it('works with a single share (threshold 1: the share is the root key itself)', async () => {
    const { tokens, keys } = await setup({}, 1, 1);
    const { nonce, otp } = await tokens.start({});
    const done = await tokens.update({ key: keys[0]!, nonce });
    expect(done).toMatchObject({ complete: true, progress: 1, required: 1 });
    expect(await tokens.validate(decodeOtp(done.encoded_token, otp))).toBe(true);
  });
});

describe('OTP encoding', () => {
  it('is base64 without padding of token XOR otp, checked against a hand-computed value', async () => {
    // All-zero randomness makes the token hvs. + 24 x 'A' (the first base62 digit).
    const { tokens, keys } = await setup({ random: (n) => Buffer.alloc(n) });
    const otp = 'abcdefghijklmnopqrstuvwxyz01';
    const { nonce, otp: shown } = await tokens.start({ otp });
    expect(shown).toBe('');
    for (const key of keys.slice(0, 2)) await tokens.update({ key, nonce });
    const { encoded_token } = await tokens.update({ key: keys[2]!, nonce });
    // 'h'^'a' = 0x09, 'v'^'b' = 0x14, 's'^'c' = 0x10, '.'^'d' = 0x4a, then 'A' (0x41) ^ 'e'... .
    expect(Buffer.from(encoded_token, 'base64').toString('hex')).toBe('0914104a24272629282b2a2d2c2f2e313033323534373639383b7170');
    expect(encoded_token).toBe('CRQQSiQnJikoKyotLC8uMTAzMjU0NzY5ODtxcA');
    expect(decodeOtp(encoded_token, otp)).toBe(`hvs.${'A'.repeat(24)}`);
    expect(decodeOtp(`${encoded_token}==`, otp)).toBe(`hvs.${'A'.repeat(24)}`);
  });

  it('decodeOtp refuses a wrong-length OTP and non-base64 input', () => {
    expect(() => decodeOtp('CRQQ', 'short')).toThrow(InvalidRequest);
    expect(() => decodeOtp('!!!', 'a'.repeat(28))).toThrow(/not valid base64/);
    expect(() => decodeOtp('CRQQ', 'a'.repeat(28))).toThrow(/decodes to 3 bytes/);
  });
});

describe('PGP encoding', () => {
  const newKey = () => generateKey({ userIDs: [{ name: 'operator', email: 'op@example.com' }], format: 'binary' });

  it('encrypts the token to the operator key, which decrypts it; the fingerprint is reported', async () => {
    const { publicKey, privateKey } = await newKey();
    const { tokens, keys } = await setup();
    const fingerprint = (await readKey({ binaryKey: publicKey })).getFingerprint();
    const started = await tokens.start({ pgp_key: Buffer.from(publicKey).toString('base64') });
    expect(started).toMatchObject({ otp: '', pgp_fingerprint: fingerprint });
    expect((await tokens.status()).pgp_fingerprint).toBe(fingerprint);
    for (const key of keys.slice(0, 2)) await tokens.update({ key, nonce: started.nonce });
    const done = await tokens.update({ key: keys[2]!, nonce: started.nonce });
    expect(done.pgp_fingerprint).toBe(fingerprint);
    const message = await readMessage({ binaryMessage: Buffer.from(done.encoded_token, 'base64') });
    const { data } = await decrypt({ message, decryptionKeys: await readPrivateKey({ binaryKey: privateKey }), format: 'binary' });
    const token = Buffer.from(data).toString('utf8');
    expect(token).toMatch(/^hvs\.[A-Za-z0-9]{24}$/);
    expect(await tokens.validate(token)).toBe(true);
  });

  it('refuses a pgp_key that is not a key, and a private key', async () => {
    const { tokens } = await setup();
    const { privateKey } = await newKey();
    expect((await rejection(tokens.start({ pgp_key: Buffer.from('not a key').toString('base64') }))).message).toMatch(/not a readable/);
    expect((await rejection(tokens.start({ pgp_key: '%%%' }))).message).toMatch(/base64-encoded/);
    expect((await rejection(tokens.start({ pgp_key: Buffer.from(privateKey).toString('base64') }))).message).toMatch(/must be a public key/);
    expect((await tokens.status()).started).toBe(false);
  });

  it('the encrypted message is a real OpenPGP message, not the token in clear', async () => {
    const { publicKey } = await newKey();
    const { tokens, keys } = await setup({ random: (n) => Buffer.alloc(n) });
    const { nonce } = await tokens.start({ pgp_key: Buffer.from(publicKey).toString('base64') });
    for (const key of keys.slice(0, 2)) await tokens.update({ key, nonce });
    const { encoded_token } = await tokens.update({ key: keys[2]!, nonce });
    expect(Buffer.from(encoded_token, 'base64').includes(Buffer.from('hvs.AAAA'))).toBe(false);
    // Sanity: the same library produces messages of the same kind.
    const reference = await encrypt({ message: await createMessage({ text: 'x' }), encryptionKeys: await readKey({ binaryKey: publicKey }), format: 'binary' });
    expect(Buffer.from(encoded_token, 'base64')[0]).toBe(reference[0]);
  });
});

describe('persistence and revocation', () => {
  it('an attempt survives a re-created instance; shares do not, and are never stored', async () => {
    const { make, keys, records } = await setup();
    const first = make();
    const { nonce, otp } = await first.start({});
    await first.update({ key: keys[0]!, nonce });
    for (const value of records.data.values()) expect(value.toString()).not.toContain(keys[0]!);

    const second = make();
    expect(await second.status()).toMatchObject({ started: true, nonce, progress: 0 });
    await rejection(second.start({}));
    for (const key of keys.slice(0, 2)) await second.update({ key, nonce });
    const { encoded_token } = await second.update({ key: keys[2]!, nonce });
    const token = decodeOtp(encoded_token, otp);

    const third = make();
    expect(await third.validate(token)).toBe(true);
    const stored = records.data.get(OperationTokenRecord.tokens)!.toString();
    expect(stored).not.toContain(token);
    expect(stored).toMatch(/"sha256":"[0-9a-f]{64}"/);
  });

  it('revokes a token (and only that one); revoking an unknown token is PermissionDenied (403, as everywhere)', async () => {
    const { tokens, keys } = await setup();
    const issue = async () => {
      const { nonce, otp } = await tokens.start({});
      for (const key of keys.slice(0, 2)) await tokens.update({ key, nonce });
      return decodeOtp((await tokens.update({ key: keys[2]!, nonce })).encoded_token, otp);
    };
    const a = await issue();
    const b = await issue();
    expect(a).not.toBe(b);
    await tokens.revoke(a);
    expect(await tokens.validate(a)).toBe(false);
    expect(await tokens.validate(b)).toBe(true);
    const denied = await tokens.revoke(a).then(() => undefined, (e: unknown) => e);
    expect(denied).toBeInstanceOf(PermissionDenied);
    expect((denied as PermissionDenied).message).toBe('invalid DR operation token');
    await tokens.revoke(b);
    expect(await tokens.validate(b)).toBe(false);
  });

  it('stamps the issue time from the injected clock', async () => {
    const now = new Date('2030-01-02T03:04:05.000Z');
    const { tokens, keys, records } = await setup({ now: () => now });
    const { nonce } = await tokens.start({});
    expect(JSON.parse(records.data.get(OperationTokenRecord.attempt)!.toString()).started_at).toBe(now.toISOString());
    for (const key of keys.slice(0, 3)) await tokens.update({ key, nonce });
    expect(JSON.parse(records.data.get(OperationTokenRecord.tokens)!.toString()).tokens[0].issued_at).toBe(now.toISOString());
  });
});
