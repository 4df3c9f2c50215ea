import { describe, expect, it } from '@jest/globals';
import { SignJWT, decodeProtectedHeader } from 'jose';
import { InvalidRequest } from '../core/errors.js';
import {
  ActivationTokenRejected,
  RejectReason,
  createSigningKey,
  generateBoxKeyPair,
  isJwt,
  openSealed,
  peekJwt,
  sealTo,
  signActivationJwt,
  verifyActivationJwt,
  type SigningKey,
} from './activation-token.js';

const now = new Date('2030-05-06T07:08:09.500Z');
const iat = Math.floor(now.getTime() / 1000);
const request = { jti: 'hvs.wrapping', addr: 'https://primary:8200', accessor: 'acc-1', ttlSeconds: 1800, now };

let keyCache: SigningKey | undefined;
async function key(): Promise<SigningKey> {
  keyCache ??= await createSigningKey();
  return keyCache;
}

async function rejected(p: Promise<unknown>): Promise<ActivationTokenRejected> {
  const e = await p.then(() => undefined, (err: unknown) => err);
  expect(e).toBeInstanceOf(ActivationTokenRejected);
  return e as ActivationTokenRejected;
}

describe('activation JWT', () => {
  it('creates a P-521 key pair as JWK and PEM', async () => {
    const k = await key();
    expect(k.privateJwk).toMatchObject({ kty: 'EC', crv: 'P-521' });
    expect(typeof k.privateJwk.d).toBe('string');
    expect(k.publicJwk).toMatchObject({ kty: 'EC', crv: 'P-521' });
    expect(k.publicJwk.d).toBeUndefined();
    expect(k.privatePem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(k.publicPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  });

  it('signs ES512 with the wire claims, and verifies them (JWK and PEM keys)', async () => {
    const k = await key();
    const jwt = await signActivationJwt(request, k.privateJwk);
    expect(decodeProtectedHeader(jwt)).toEqual({ alg: 'ES512', typ: 'JWT' });
    const expected = { jti: 'hvs.wrapping', iat, nbf: iat, exp: iat + 1800, type: 'wrapping', addr: 'https://primary:8200', accessor: 'acc-1' };
    expect(await verifyActivationJwt(jwt, k.publicJwk, now)).toEqual(expected);
    const fromPem = await signActivationJwt(request, k.privatePem);
    expect(await verifyActivationJwt(fromPem, k.publicPem, new Date(now.getTime() + 1799_000))).toEqual(expected);
  });

  it('refuses an expired token and one not yet valid', async () => {
    const k = await key();
    const jwt = await signActivationJwt(request, k.privateJwk);
    expect((await rejected(verifyActivationJwt(jwt, k.publicJwk, new Date((iat + 1801) * 1000)))).reason).toBe(RejectReason.expired);
    expect((await rejected(verifyActivationJwt(jwt, k.publicJwk, new Date((iat - 60) * 1000)))).reason).toBe(RejectReason.notYetValid);
  });

  it('refuses a tampered payload and a token signed by another key', async () => {
    const k = await key();
    const jwt = await signActivationJwt(request, k.privateJwk);
    const [h, , s] = jwt.split('.');
    const forged = Buffer.from(JSON.stringify({ ...peekJwt(jwt), addr: 'https://evil:8200' })).toString('base64url');
    expect((await rejected(verifyActivationJwt(`${h}.${forged}.${s}`, k.publicJwk, now))).reason).toBe(RejectReason.signature);
    const other = await createSigningKey();
    const foreign = await signActivationJwt(request, other.privateJwk);
    expect((await rejected(verifyActivationJwt(foreign, k.publicJwk, now))).reason).toBe(RejectReason.signature);
  });

  it('refuses a validly signed token whose type is not "wrapping", or whose claims are missing', async () => {
    const k = await key();
    const sign = (claims: Record<string, unknown>) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'ES512' }).setJti('j').setIssuedAt(iat).setNotBefore(iat).setExpirationTime(iat + 60).sign(k.privateJwk);
    const service = await sign({ type: 'service', addr: 'a', accessor: 'b' });
    expect((await rejected(verifyActivationJwt(service, k.publicJwk, now))).reason).toBe(RejectReason.wrongType);
    const noAddr = await sign({ type: 'wrapping', accessor: 'b' });
    expect((await rejected(verifyActivationJwt(noAddr, k.publicJwk, now))).reason).toBe(RejectReason.malformed);
    expect((await rejected(verifyActivationJwt('a.b.c', k.publicJwk, now))).reason).toBe(RejectReason.malformed);
  });

  it('refuses a non-positive or fractional ttl', async () => {
    const k = await key();
    await expect(signActivationJwt({ ...request, ttlSeconds: 0 }, k.privateJwk)).rejects.toThrow(InvalidRequest);
    await expect(signActivationJwt({ ...request, ttlSeconds: 1.5 }, k.privateJwk)).rejects.toThrow(InvalidRequest);
  });

  it('peeks at the claims without a key, as a secondary finds addr', async () => {
    const jwt = await signActivationJwt(request, (await key()).privateJwk);
    expect(peekJwt(jwt)).toEqual({ jti: 'hvs.wrapping', addr: 'https://primary:8200', accessor: 'acc-1', type: 'wrapping', iat, nbf: iat, exp: iat + 1800 });
    expect(() => peekJwt('hvs.notajwt')).toThrow(ActivationTokenRejected);
  });

  it('tells a JWT from other token forms', async () => {
    expect(isJwt(await signActivationJwt(request, (await key()).privateJwk))).toBe(true);
    expect(isJwt('hvs.CAESIabc')).toBe(false);
    expect(isJwt('abc.def.ghi')).toBe(false);
    expect(isJwt('')).toBe(false);
  });
});

describe('sealed box', () => {
  const bundle = new Uint8Array(Buffer.from(JSON.stringify({ cluster_id: 'c1', ca: '-----BEGIN CERTIFICATE-----' })));

  it('round-trips bytes sealed to the secondary public key', () => {
    const pair = generateBoxKeyPair();
    expect(Buffer.from(pair.publicKeyB64, 'base64')).toHaveLength(32);
    const sealed = sealTo(pair.publicKeyB64, bundle);
    expect(Buffer.from(sealed, 'base64')).toHaveLength(bundle.length + 48);
    expect(Buffer.from(openSealed(sealed, pair))).toEqual(Buffer.from(bundle));
    // Each seal uses a fresh ephemeral key.
    expect(sealTo(pair.publicKeyB64, bundle)).not.toBe(sealed);
  });

  it('does not open with another key pair, nor after tampering', () => {
    const pair = generateBoxKeyPair();
    const sealed = sealTo(pair.publicKeyB64, bundle);
    expect(() => openSealed(sealed, generateBoxKeyPair())).toThrow(ActivationTokenRejected);
    const bytes = Buffer.from(sealed, 'base64');
    bytes[bytes.length - 1]! ^= 1;
    expect(() => openSealed(bytes.toString('base64'), pair)).toThrow(ActivationTokenRejected);
    expect(() => openSealed('AAAA', pair)).toThrow(ActivationTokenRejected);
    expect(() => openSealed('not base64!', pair)).toThrow(ActivationTokenRejected);
    expect(() => openSealed(sealed, { publicKeyB64: pair.publicKeyB64, secretKey: new Uint8Array(3) })).toThrow(ActivationTokenRejected);
  });

  it('refuses a public key that is not 32 bytes of base64', () => {
    expect(() => sealTo('AAAA', bundle)).toThrow(InvalidRequest);
    expect(() => sealTo('%%%', bundle)).toThrow(/32-byte X25519 public key/);
  });
});
