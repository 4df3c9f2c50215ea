import { randomBytes } from 'node:crypto';
import { Internal, Sealed } from '../core/errors.js';
import { gcmOpen } from './aead.js';
import { CiphertextRejected, RejectReason } from './errors.js';
import { Keyring } from './keyring.js';

const aad = Buffer.from('logical/abc/secret');
const plain = Buffer.from('the value behind the barrier');

function rejection(fn: () => unknown): CiphertextRejected {
  try {
    fn();
  } catch (e) {
    if (e instanceof CiphertextRejected) return e;
    throw e;
  }
  throw new Error('expected CiphertextRejected');
}

describe('Keyring encrypt/decrypt', () => {
  it('round-trips, with a fresh nonce per message', () => {
    const ring = Keyring.generate();
    const a = ring.encrypt(plain, aad);
    const b = ring.encrypt(plain, aad);
    expect(ring.decrypt(a, aad)).toEqual(plain);
    expect(a.equals(b)).toBe(false);
    expect(a.includes(plain)).toBe(false);
  });

  it('lays out [version][u32 term][nonce 12][ct][tag 16]', () => {
    const ring = Keyring.generate();
    ring.rotate();
    const ct = ring.encrypt(plain, aad);
    expect(ct.readUInt8(0)).toBe(1);
    expect(ct.readUInt32BE(1)).toBe(2);
    expect(ct.length).toBe(5 + 12 + plain.length + 16);
  });

  it('round-trips an empty plaintext and an empty AAD', () => {
    const ring = Keyring.generate();
    expect(ring.decrypt(ring.encrypt(Buffer.alloc(0), Buffer.alloc(0)), Buffer.alloc(0))).toEqual(Buffer.alloc(0));
  });

  it('rejects the wrong AAD', () => {
    const ring = Keyring.generate();
    const ct = ring.encrypt(plain, aad);
    expect(rejection(() => ring.decrypt(ct, Buffer.from('logical/abc/other'))).reason).toBe(RejectReason.authentication);
  });

  it('rejects a flipped bit anywhere in nonce, body or tag', () => {
    const ring = Keyring.generate();
    const ct = ring.encrypt(plain, aad);
    for (let i = 5; i < ct.length; i++) {
      const bad = Buffer.from(ct);
      bad[i] = bad[i]! ^ 0x01;
      expect(rejection(() => ring.decrypt(bad, aad)).reason).toBe(RejectReason.authentication);
    }
  });

  it('rejects a rewritten term, an unknown term, a bad version and truncation', () => {
    const ring = Keyring.generate();
    const older = ring.clone();
    ring.rotate();
    const ct = ring.encrypt(plain, aad);

    const relabelled = Buffer.from(ct);
    relabelled.writeUInt32BE(1, 1); // term 1 exists, but the header is authenticated
    expect(rejection(() => ring.decrypt(relabelled, aad)).reason).toBe(RejectReason.authentication);

    expect(rejection(() => older.decrypt(ct, aad)).reason).toBe(RejectReason.unknownTerm);

    const version = Buffer.from(ct);
    version[0] = 2;
    expect(rejection(() => ring.decrypt(version, aad)).reason).toBe(RejectReason.malformed);
    expect(rejection(() => ring.decrypt(ct.subarray(0, 20), aad)).reason).toBe(RejectReason.malformed);
  });

  it('keeps old terms readable after rotate(); new writes use the new term', () => {
    const ring = Keyring.generate();
    const before = ring.encrypt(plain, aad);
    expect(ring.rotate()).toBe(2);
    expect(ring.activeTerm).toBe(2);
    expect(ring.terms).toEqual([1, 2]);
    const after = ring.encrypt(plain, aad);
    expect(after.readUInt32BE(1)).toBe(2);
    expect(ring.decrypt(before, aad)).toEqual(plain);
    expect(ring.decrypt(after, aad)).toEqual(plain);
  });

  it('rotate(key) on two equal keyrings yields interchangeable keyrings', () => {
    const ring = Keyring.generate();
    const copy = ring.clone();
    const key = randomBytes(32);
    ring.rotate(key);
    copy.rotate(key);
    expect(copy.decrypt(ring.encrypt(plain, aad), aad)).toEqual(plain);
    expect(ring.serialize()).toEqual(copy.serialize());
  });

  it('uses the injected randomness for keys and nonces', () => {
    const fixed = (n: number): Buffer => Buffer.alloc(n, 7);
    const a = Keyring.generate(fixed);
    const b = Keyring.generate(fixed);
    expect(a.encrypt(plain, aad)).toEqual(b.encrypt(plain, aad));
  });
});

describe('Keyring serialization', () => {
  it('round-trips through serialize/deserialize', () => {
    const ring = Keyring.generate();
    const ct1 = ring.encrypt(plain, aad);
    ring.rotate();
    ring.rotate();
    const back = Keyring.deserialize(ring.serialize());
    expect(back.terms).toEqual([1, 2, 3]);
    expect(back.activeTerm).toBe(3);
    expect(back.decrypt(ct1, aad)).toEqual(plain);
    expect(ring.decrypt(back.encrypt(plain, aad), aad)).toEqual(plain);
  });

  it('refuses malformed serialized keyrings with Internal', () => {
    const good = Keyring.generate().serialize();
    expect(() => Keyring.deserialize(good.subarray(0, good.length - 1))).toThrow(Internal);
    const badActive = Buffer.from(good);
    badActive.writeUInt32BE(9, 1);
    expect(() => Keyring.deserialize(badActive)).toThrow(Internal);
    expect(() => Keyring.deserialize(Buffer.from('{"keys":[]}'))).toThrow(Internal);
  });

  it('seals under a root key and opens only with that key', () => {
    const rootKey = randomBytes(32);
    const ring = Keyring.generate();
    ring.rotate();
    const record = ring.sealWith(rootKey);
    const opened = Keyring.openWith(record, rootKey);
    expect(opened.serialize()).toEqual(ring.serialize());
    expect(rejection(() => Keyring.openWith(record, randomBytes(32))).reason).toBe(RejectReason.authentication);
    const tampered = Buffer.from(record);
    tampered[tampered.length - 20] = tampered[tampered.length - 20]! ^ 0x80;
    expect(rejection(() => Keyring.openWith(tampered, rootKey)).reason).toBe(RejectReason.authentication);
  });

  it('binds the sealed record to the "tessera/keyring" AAD and never stores key material', () => {
    const rootKey = randomBytes(32);
    const ring = Keyring.generate();
    const record = ring.sealWith(rootKey);
    const serialized = ring.serialize();
    const key = serialized.subarray(13, 45);
    expect(record.includes(key)).toBe(false);
    expect(record.includes(rootKey)).toBe(false);
    expect(Keyring.isSealedRecord(record)).toBe(true);
    expect(Keyring.isSealedRecord(serialized)).toBe(false);

    const nonce = record.subarray(1, 13);
    const body = record.subarray(13);
    expect(gcmOpen(rootKey, nonce, body, Buffer.from('tessera/keyring'))).toEqual(serialized);
    expect(rejection(() => gcmOpen(rootKey, nonce, body, Buffer.from('tessera/other'))).reason).toBe(
      RejectReason.authentication,
    );
  });
});

describe('Keyring.destroy', () => {
  it('makes every later use throw Sealed', () => {
    const ring = Keyring.generate();
    const ct = ring.encrypt(plain, aad);
    ring.destroy();
    expect(() => ring.encrypt(plain, aad)).toThrow(Sealed);
    expect(() => ring.decrypt(ct, aad)).toThrow(Sealed);
    expect(() => ring.serialize()).toThrow(Sealed);
    expect(() => ring.rotate()).toThrow(Sealed);
  });
});
