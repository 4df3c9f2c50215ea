/**
 * The shared generation mechanism (sys/generate-root and DR operation tokens) over a real
 * in-memory store, a real seal and, as the issuer, the real token store: the decoded token is a
 * root token there. OperationTokens' own tests cover the DR side of the same machine.
 */
import { describe, expect, it } from '@jest/globals';
import { decrypt, generateKey, readMessage, readPrivateKey } from 'openpgp';
import { Internal, InvalidRequest } from '../core/errors.js';
import { MapStore } from '../storage/store.js';
import { TokenStore } from '../vault/tokens.js';
import { SealManager } from './manager.js';
import { decodeOtp } from './root-generation-encoding.js';
import { RootGeneration, type RootGenerationOptions } from './root-generation.js';
import { MapRecords } from '../../test/support/map-records.js';

const ATTEMPT = 'node/generate-root/attempt';

/** A real seal (5 shares, threshold 3); the attempt lives in the same store as the tokens. */
async function setup(more: Partial<RootGenerationOptions> = {}) {
  const seal = new SealManager(new MapRecords());
  const { keys, keysBase64 } = await seal.init({ secret_shares: 5, secret_threshold: 3 });
  const store = new MapStore();
  const tokens = new TokenStore(store);
  let n = 0;
  const make = (o: Partial<RootGenerationOptions> = {}) =>
    new RootGeneration({
      records: {
        get: (name) => store.get(name),
        put: (name, value) => store.commit([value === undefined ? { type: 'del', key: name } : { type: 'put', key: name, value }]),
      },
      attemptRecord: ATTEMPT,
      what: 'root token',
      threshold: async () => (await seal.status()).t,
      verifyShares: (s) => seal.verifyRootKeyShares(s),
      issue: async (token) => {
        await tokens.createRoot({ id: token });
      },
      newNonce: () => `nonce-${++n}`,
      ...more,
      ...o,
    });
  return { gen: make(), make, keys, keysBase64, store, tokens };
}

async function refusal(p: Promise<unknown>): Promise<InvalidRequest> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(InvalidRequest);
  return e as InvalidRequest;
}

describe('RootGeneration', () => {
  it('OTP: the threshold of shares issues a root token (root policy, no TTL, root namespace) encoded for the OTP', async () => {
    const { gen, keys, keysBase64, tokens } = await setup();
    expect(await gen.status()).toMatchObject({ started: false, nonce: '', progress: 0, required: 3, otp_length: 28 });
    const started = await gen.start({ otp: '', pgp_key: '' });
    expect(started).toMatchObject({ started: true, nonce: 'nonce-1', progress: 0, required: 3, complete: false });
    expect(started.otp).toMatch(/^[A-Za-z0-9]{28}$/);
    expect(await gen.update({ key: keys[0]!, nonce: 'nonce-1' })).toMatchObject({ progress: 1, complete: false, encoded_token: '' });
    expect(await gen.update({ key: keysBase64[3]!, nonce: 'nonce-1' })).toMatchObject({ progress: 2, complete: false });
    const done = await gen.update({ key: keys[4]!, nonce: 'nonce-1' });
    expect(done).toMatchObject({ complete: true, progress: 3, required: 3, started: true, nonce: 'nonce-1', otp: '' });
    expect(done.encoded_root_token).toBe(done.encoded_token);
    const token = decodeOtp(done.encoded_token, started.otp);
    const entry = await tokens.lookup(token);
    expect(entry).toMatchObject({ policies: ['root'], ttl: 0, expire_time: null, namespace_path: '' });
    // The attempt is over: status is idle and a new attempt may start.
    expect(await gen.status()).toMatchObject({ started: false, progress: 0 });
    expect((await gen.start({})).nonce).toBe('nonce-2');
  });

  it('PGP: the token is encrypted to the operator key and the fingerprint reported', async () => {
    const { gen, keys, tokens } = await setup();
    const { privateKey, publicKey } = await generateKey({ userIDs: [{ name: 'ops' }], format: 'binary' });
    const started = await gen.start({ pgp_key: Buffer.from(publicKey).toString('base64') });
    expect(started.otp).toBe('');
    expect(started.pgp_fingerprint).toMatch(/^[0-9a-f]{40}$/);
    await gen.update({ key: keys[0]!, nonce: started.nonce });
    await gen.update({ key: keys[1]!, nonce: started.nonce });
    const done = await gen.update({ key: keys[2]!, nonce: started.nonce });
    expect(done).toMatchObject({ complete: true, pgp_fingerprint: started.pgp_fingerprint });
    const message = await readMessage({ binaryMessage: Buffer.from(done.encoded_token, 'base64') });
    const { data } = await decrypt({ message, decryptionKeys: await readPrivateKey({ binaryKey: privateKey }), format: 'binary' });
    const token = Buffer.from(data as Uint8Array).toString('utf8');
    expect(token).toMatch(/^hvs\.[A-Za-z0-9]{24}$/);
    expect((await tokens.lookup(token))?.policies).toEqual(['root']);
  });

  it('one attempt at a time; wrong nonce named; messages say what is generated; nothing spent', async () => {
    const { gen, keys, store } = await setup();
    const { nonce } = await gen.start({});
    const record = store.data.get(ATTEMPT);
    expect((await refusal(gen.start({}))).message).toMatch(/a root token generation attempt is already in progress/);
    expect(store.data.get(ATTEMPT)).toEqual(record);
    expect((await refusal(gen.update({ key: keys[0]!, nonce: 'other' }))).message).toContain(`is ${nonce}`);
    expect((await gen.status()).progress).toBe(0);
    await gen.cancel();
    expect((await refusal(gen.update({ key: keys[0]!, nonce }))).message).toMatch(/no root token generation attempt is in progress/);
  });

  it('shares that do not combine to the root key: refused, nothing issued, progress restarts under the same nonce', async () => {
    const other = await setup();
    const { gen, keys, store } = await setup();
    const { nonce, otp } = await gen.start({});
    await gen.update({ key: other.keys[0]!, nonce });
    await gen.update({ key: other.keys[1]!, nonce });
    const tokensBefore = [...store.data.keys()].filter((k) => k !== ATTEMPT);
    await refusal(gen.update({ key: other.keys[2]!, nonce }));
    expect([...store.data.keys()].filter((k) => k !== ATTEMPT)).toEqual(tokensBefore);
    expect(await gen.status()).toMatchObject({ nonce, started: true, progress: 0 });
    for (const k of keys.slice(0, 2)) await gen.update({ key: k, nonce });
    expect(decodeOtp((await gen.update({ key: keys[2]!, nonce })).encoded_token, otp)).toMatch(/^hvs\./);
  });

  it('an issuer that fails leaves the attempt in place (to retry with the shares, or cancel)', async () => {
    let fail = true;
    const { make, keys, tokens } = await setup();
    const gen = make({
      issue: async (token) => {
        if (fail) throw new Internal('token store unavailable');
        await tokens.createRoot({ id: token });
      },
    });
    const { nonce, otp } = await gen.start({});
    for (const k of keys.slice(0, 2)) await gen.update({ key: k, nonce });
    await expect(gen.update({ key: keys[2]!, nonce })).rejects.toBeInstanceOf(Internal);
    expect(await gen.status()).toMatchObject({ nonce, started: true, progress: 0 });
    fail = false;
    for (const k of keys.slice(0, 2)) await gen.update({ key: k, nonce });
    const token = decodeOtp((await gen.update({ key: keys[2]!, nonce })).encoded_token, otp);
    expect((await tokens.lookup(token))?.policies).toEqual(['root']);
  });

  it('the attempt survives a new instance over the same records; the shares given do not', async () => {
    const { gen, make, keys } = await setup();
    const { nonce } = await gen.start({});
    await gen.update({ key: keys[0]!, nonce });
    const again = make();
    expect(await again.status()).toMatchObject({ nonce, started: true, progress: 0 });
  });
});
