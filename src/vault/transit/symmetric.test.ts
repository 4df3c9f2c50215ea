/**
 * Transit's symmetric formats against independent computations with node:crypto: what Vault's
 * keysutil makes from a known key (nonce || ciphertext || tag after `vault:v<N>:`, HKDF-SHA256 for
 * derived keys, the convergent nonce as HMAC-SHA256 of the plaintext), and its refusals.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import { strictBase64 } from './fields.js';
import { configure, newPolicy, rotate, trim, type KeyPolicy } from './policy.js';
import { decryptValue, encryptValue } from './symmetric.js';

const now = new Date('2026-11-29T12:00:00Z');
const KEY = Buffer.alloc(32, 7);

/** A policy whose version 1 is KEY (as an exported key would be imported elsewhere). */
function known(p: KeyPolicy, key = KEY): KeyPolicy {
  const v1 = p.keys['1'];
  if (!v1) throw new Error('no version 1');
  return { ...p, keys: { ...p.keys, 1: { ...v1, key: key.toString('base64') } } };
}

const parts = (ct: string): { version: string; raw: Buffer } => {
  const m = /^vault:v(\d+):(.+)$/.exec(ct);
  if (!m) throw new Error(`not a ciphertext: ${ct}`);
  return { version: m[1] as string, raw: Buffer.from(m[2] as string, 'base64') };
};

const open = (alg: string, key: Buffer, raw: Buffer, aad?: Buffer): Buffer => {
  const nonce = raw.subarray(0, 12);
  const tag = raw.subarray(raw.length - 16);
  const d = alg === 'chacha20-poly1305' ? createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 }) : createDecipheriv(alg as 'aes-256-gcm', key, nonce);
  d.setAuthTag(tag);
  if (aad) d.setAAD(aad);
  return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]);
};

describe('transit symmetric encryption', () => {
  it.each([
    ['aes256-gcm96', 'aes-256-gcm', 32],
    ['aes128-gcm96', 'aes-128-gcm', 16],
    ['chacha20-poly1305', 'chacha20-poly1305', 32],
  ] as const)('%s: vault:v1:base64(nonce || ciphertext || tag), opened independently', (type, alg, bytes) => {
    const key = Buffer.alloc(bytes, 9);
    const p = known(newPolicy({ name: 'k', type }, now), key);
    const { ciphertext, version } = encryptValue(p, { plaintext: Buffer.from('the quick brown fox'), version: 0 });
    expect(version).toBe(1);
    const { version: v, raw } = parts(ciphertext);
    expect(v).toBe('1');
    expect(raw.length).toBe(12 + 19 + 16);
    expect(open(alg, key, raw).toString()).toBe('the quick brown fox');
    expect(decryptValue(p, { ciphertext }).plaintext.toString()).toBe('the quick brown fox');
  });

  it('decrypts a ciphertext made independently (what Vault makes with the same key)', () => {
    const p = known(newPolicy({ name: 'k', type: 'aes256-gcm96' }, now));
    const nonce = Buffer.alloc(12, 3);
    const c = createCipheriv('aes-256-gcm', KEY, nonce);
    const body = Buffer.concat([nonce, c.update('hello vault'), c.final(), c.getAuthTag()]);
    expect(decryptValue(p, { ciphertext: `vault:v1:${body.toString('base64')}` }).plaintext.toString()).toBe('hello vault');
  });

  it('associated data binds the ciphertext', () => {
    const p = known(newPolicy({ name: 'k', type: 'aes256-gcm96' }, now));
    const aad = Buffer.from('tenant-a');
    const { ciphertext } = encryptValue(p, { plaintext: Buffer.from('x'), version: 0, associatedData: aad });
    expect(open('aes-256-gcm', KEY, parts(ciphertext).raw, aad).toString()).toBe('x');
    expect(decryptValue(p, { ciphertext, associatedData: aad }).plaintext.toString()).toBe('x');
    expect(() => decryptValue(p, { ciphertext, associatedData: Buffer.from('tenant-b') })).toThrow('cipher: message authentication failed');
    expect(() => decryptValue(p, { ciphertext })).toThrow('cipher: message authentication failed');
  });

  it('derived keys are HKDF-SHA256(key, no salt, context) and need the context', () => {
    const p = known(newPolicy({ name: 'k', type: 'aes256-gcm96', derived: true }, now));
    const context = Buffer.from('user-42');
    const { ciphertext } = encryptValue(p, { plaintext: Buffer.from('secret'), version: 0, context });
    const derived = Buffer.from(hkdfSync('sha256', KEY, Buffer.alloc(0), context, 32));
    expect(open('aes-256-gcm', derived, parts(ciphertext).raw).toString()).toBe('secret');
    expect(() => decryptValue(p, { ciphertext })).toThrow(/missing 'context' for key derivation/);
    expect(() => decryptValue(p, { ciphertext, context: Buffer.from('user-43') })).toThrow('cipher: message authentication failed');
  });

  it('a context of any length derives as RFC 5869 HKDF-SHA256 (node:crypto stops at 1,024 bytes; Go does not)', () => {
    const p = known(newPolicy({ name: 'k', type: 'aes256-gcm96', derived: true }, now));
    // RFC 5869 by hand with HMAC-SHA256: an empty salt is HashLen zero bytes; one block of output.
    const rfc5869 = (ikm: Buffer, info: Buffer): Buffer => {
      const prk = createHmac('sha256', Buffer.alloc(32)).update(ikm).digest();
      return createHmac('sha256', prk).update(Buffer.concat([info, Buffer.from([1])])).digest();
    };
    for (const length of [1, 1024, 1025, 5000]) {
      const context = Buffer.alloc(length, length & 0xff);
      const { ciphertext } = encryptValue(p, { plaintext: Buffer.from('long context'), version: 0, context });
      expect(open('aes-256-gcm', rfc5869(KEY, context), parts(ciphertext).raw).toString()).toBe('long context');
      expect(decryptValue(p, { ciphertext, context }).plaintext.toString()).toBe('long context');
    }
  });

  it('convergent encryption (version 3) is deterministic: the nonce is HMAC-SHA256(second half of the derived key, plaintext)', () => {
    const p = known(newPolicy({ name: 'k', type: 'aes256-gcm96', derived: true, convergent: true }, now));
    const context = Buffer.from('ctx');
    const a = encryptValue(p, { plaintext: Buffer.from('same'), version: 0, context }).ciphertext;
    const b = encryptValue(p, { plaintext: Buffer.from('same'), version: 0, context }).ciphertext;
    expect(a).toBe(b);
    expect(encryptValue(p, { plaintext: Buffer.from('other'), version: 0, context }).ciphertext).not.toBe(a);
    const key = Buffer.from(hkdfSync('sha256', KEY, Buffer.alloc(0), context, 64));
    const nonce = createHmac('sha256', key.subarray(32)).update('same').digest().subarray(0, 12);
    const raw = parts(a).raw;
    expect(raw.subarray(0, 12)).toEqual(nonce);
    expect(open('aes-256-gcm', key.subarray(0, 32), raw).toString()).toBe('same');
  });

  it('versions: rotation, min_decryption_version, too new, trimmed', () => {
    let p = newPolicy({ name: 'k', type: 'aes256-gcm96' }, now);
    const v1 = encryptValue(p, { plaintext: Buffer.from('one'), version: 0 }).ciphertext;
    p = rotate(p, now);
    const v2 = encryptValue(p, { plaintext: Buffer.from('two'), version: 0 });
    expect(v2.version).toBe(2);
    expect(v2.ciphertext.startsWith('vault:v2:')).toBe(true);
    expect(decryptValue(p, { ciphertext: v1 }).plaintext.toString()).toBe('one');
    expect(() => decryptValue(p, { ciphertext: v1.replace('vault:v1:', 'vault:v3:') })).toThrow('invalid ciphertext: version is too new');
    p = configure(p, { min_decryption_version: 2, min_encryption_version: 2 }, []);
    expect(() => decryptValue(p, { ciphertext: v1 })).toThrow('ciphertext or signature version is disallowed by policy (too old)');
    expect(() => encryptValue(p, { plaintext: Buffer.from('x'), version: 1 })).toThrow('requested version for encryption is less than the minimum encryption key version');
    p = trim(p, 2);
    expect(Object.keys(p.keys)).toEqual(['2']);
    expect(decryptValue(p, { ciphertext: v2.ciphertext }).plaintext.toString()).toBe('two');
  });

  it('refuses malformed ciphertexts with Vault\'s texts and says nothing of the plaintext', () => {
    const p = known(newPolicy({ name: 'k', type: 'aes256-gcm96' }, now));
    const good = encryptValue(p, { plaintext: Buffer.from('secret-value'), version: 0 }).ciphertext;
    const raw = parts(good).raw;
    raw[14] = (raw[14] as number) ^ 1;
    const cases: [string, string][] = [
      ['nope', 'invalid ciphertext: no prefix'],
      ['vault:v1', 'invalid ciphertext: wrong number of fields'],
      ['vault:vX:AAAA', 'invalid ciphertext: version number could not be decoded'],
      ['vault:v1:@@@@', 'invalid ciphertext: could not decode base64'],
      ['vault:v1:AAAA', 'invalid ciphertext length'],
      [`vault:v1:${raw.toString('base64')}`, 'cipher: message authentication failed'],
    ];
    for (const [ciphertext, text] of cases) {
      let caught: unknown;
      try {
        decryptValue(p, { ciphertext });
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(InvalidRequest);
      expect((caught as InvalidRequest).messages).toEqual([text]);
      expect(JSON.stringify((caught as InvalidRequest).messages)).not.toContain('secret');
    }
  });

  it('strict base64 as Go decodes it', () => {
    expect(strictBase64('aGk=').toString()).toBe('hi');
    expect(() => strictBase64('aGk')).toThrow(InvalidRequest);
    expect(() => strictBase64('a*k=')).toThrow('illegal base64 data at input byte 1');
    expect(() => strictBase64('aG==k')).toThrow('illegal base64 data at input byte 2');
    expect(strictBase64('aG\nk=').toString()).toBe('hi');
    expect(strictBase64('aG\r\nk=').toString()).toBe('hi');
    // Trailing bits are not checked (Go's StdEncoding is not Strict): not the canonical form, still 'hi'.
    expect(strictBase64('aGl=').toString()).toBe('hi');
    expect(() => strictBase64('aGk-')).toThrow('illegal base64 data at input byte 3');
    expect(() => strictBase64('aGk_')).toThrow('illegal base64 data at input byte 3');
    for (let n = 0; n < 48; n++) {
      const b = Buffer.from(Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff));
      expect(strictBase64(b.toString('base64'))).toEqual(b);
    }
  });

  it('every encryption draws a nonce of its own, across the nonce pool\'s refills', () => {
    const p = known(newPolicy({ name: 'k', type: 'aes256-gcm96' }, now));
    const plaintext = Buffer.from('same plaintext');
    const nonces = new Set<string>();
    // 341 nonces a fill: this crosses three refills.
    for (let i = 0; i < 1200; i++) {
      const { raw } = parts(encryptValue(p, { plaintext, version: 0 }).ciphertext);
      nonces.add(raw.subarray(0, 12).toString('hex'));
      expect(open('aes-256-gcm', KEY, raw)).toEqual(plaintext);
    }
    expect(nonces.size).toBe(1200);
  });
});
