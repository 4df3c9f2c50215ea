import { constants, createHash, createHmac, createPrivateKey, createPublicKey, hkdfSync, privateDecrypt, publicDecrypt, publicEncrypt, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import { ASYMMETRIC_TYPES, deriveEd25519, exportAsymmetric, generateAsymmetric, generateAsymmetricAsync, keyVersionName, rsaDecrypt, rsaEncrypt, sign, verify } from './asymmetric.js';
import type { AsymmetricMaterial, AsymmetricType, SignOptions } from './asymmetric.js';

/** Vault's hash names and node:crypto's, with the digest sizes. */
const HASHES: [string, string, number][] = [
  ['sha1', 'sha1', 20],
  ['sha2-224', 'sha224', 28],
  ['sha2-256', 'sha256', 32],
  ['sha2-384', 'sha384', 48],
  ['sha2-512', 'sha512', 64],
  ['sha3-224', 'sha3-224', 28],
  ['sha3-256', 'sha3-256', 32],
  ['sha3-384', 'sha3-384', 48],
  ['sha3-512', 'sha3-512', 64],
];
const RSA: AsymmetricType[] = ['rsa-2048', 'rsa-3072', 'rsa-4096'];
const EC: [AsymmetricType, number][] = [
  ['ecdsa-p256', 32],
  ['ecdsa-p384', 48],
  ['ecdsa-p521', 66],
];
const INPUT = Buffer.from('the quick brown fox');
const opts = (o: Partial<SignOptions> = {}): SignOptions => ({ hashAlgorithm: 'sha2-256', marshalingAlgorithm: 'asn1', prehashed: false, ...o });

const keys = new Map<AsymmetricType, AsymmetricMaterial>();
beforeAll(() => {
  for (const type of ASYMMETRIC_TYPES) keys.set(type, generateAsymmetric(type));
});
const key = (t: AsymmetricType) => keys.get(t) as AsymmetricMaterial;
/** The public key as an outsider gets it: from Vault's export, parsed by node:crypto. */
function exportedPublic(type: AsymmetricType): KeyObject {
  const pem = exportAsymmetric(type, key(type), 'public-key', 'pem');
  return createPublicKey(pem);
}
function invalid(f: () => unknown, text: string) {
  let caught: unknown;
  try {
    f();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(InvalidRequest);
  expect((caught as InvalidRequest).messages).toEqual([text]);
}
function tamperInput(b: Buffer): Buffer {
  const t = Buffer.from(b);
  t[0] = (t[0] as number) ^ 1;
  return t;
}
/** Flips one bit of the signature's bytes and re-encodes it as it came. */
function tamperSig(encoded: string, jws: boolean): string {
  const raw = Buffer.from(encoded, jws ? 'base64url' : 'base64');
  raw[raw.length - 1] = (raw[raw.length - 1] as number) ^ 1;
  return raw.toString(jws ? 'base64url' : 'base64');
}

describe('generateAsymmetric', () => {
  it('makes every type with the public key in the form Vault’s key read shows', () => {
    expect(ASYMMETRIC_TYPES).toEqual(['ed25519', 'ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048', 'rsa-3072', 'rsa-4096']);
    for (const type of ASYMMETRIC_TYPES) {
      const m = key(type);
      const priv = createPrivateKey({ key: Buffer.from(m.privatePkcs8, 'base64'), format: 'der', type: 'pkcs8' });
      const pub = createPublicKey(priv).export({ type: 'spki', format: 'der' });
      if (type === 'ed25519') {
        expect(Buffer.from(m.publicKey, 'base64')).toEqual(pub.subarray(pub.length - 32));
        expect(Buffer.from(m.publicKey, 'base64').toString('base64')).toBe(m.publicKey);
      } else {
        // Go's pem.EncodeToMemory: 64 columns, trailing newline.
        expect(m.publicKey).toMatch(/^-----BEGIN PUBLIC KEY-----\n(?:[A-Za-z0-9+/]{64}\n)*[A-Za-z0-9+/=]{1,64}\n-----END PUBLIC KEY-----\n$/);
        expect(createPublicKey(m.publicKey).export({ type: 'spki', format: 'der' })).toEqual(pub);
      }
    }
    expect(createPrivateKey({ key: Buffer.from(key('ecdsa-p384').privatePkcs8, 'base64'), format: 'der', type: 'pkcs8' }).asymmetricKeyDetails).toMatchObject({ namedCurve: 'secp384r1' });
    expect(createPrivateKey({ key: Buffer.from(key('rsa-3072').privatePkcs8, 'base64'), format: 'der', type: 'pkcs8' }).asymmetricKeyDetails).toEqual({ modulusLength: 3072, publicExponent: 65537n });
    expect(generateAsymmetric('ed25519').publicKey).not.toBe(key('ed25519').publicKey);
    expect(ASYMMETRIC_TYPES.map(keyVersionName)).toEqual(['ed25519', 'P-256', 'P-384', 'P-521', 'rsa-2048', 'rsa-3072', 'rsa-4096']);
  });

  it('generates off the event loop too, keys that sign and verify', async () => {
    for (const type of ['rsa-2048', 'ecdsa-p256', 'ed25519'] as AsymmetricType[]) {
      const m = await generateAsymmetricAsync(type);
      expect(m.publicKey).not.toBe(key(type).publicKey);
      const sig = sign(type, m, INPUT, opts());
      expect(verify(type, m, INPUT, sig, opts())).toBe(true);
      expect(verify(type, key(type), INPUT, sig, opts())).toBe(false);
    }
    const rsa = await generateAsymmetricAsync('rsa-3072');
    expect(createPublicKey(rsa.publicKey).asymmetricKeyDetails).toEqual({ modulusLength: 3072, publicExponent: 65537n });
  });
});

describe('sign and verify', () => {
  it('ed25519: every hash and marshaling round-trips, never hashes, and node:crypto verifies it', () => {
    const m = key('ed25519');
    const pub = exportedPublic('ed25519');
    for (const [hashAlgorithm] of HASHES) {
      for (const marshalingAlgorithm of ['asn1', 'jws']) {
        for (const prehashed of [false, true]) {
          const o = opts({ hashAlgorithm, marshalingAlgorithm, prehashed });
          const jws = marshalingAlgorithm === 'jws';
          const sig = sign('ed25519', m, INPUT, o);
          expect(sig).toMatch(jws ? /^[A-Za-z0-9_-]{86}$/ : /^[A-Za-z0-9+/]{86}==$/);
          expect(nodeVerify(null, INPUT, pub, Buffer.from(sig, jws ? 'base64url' : 'base64'))).toBe(true);
          expect(verify('ed25519', m, INPUT, sig, o)).toBe(true);
          expect(verify('ed25519', m, tamperInput(INPUT), sig, o)).toBe(false);
          expect(verify('ed25519', m, INPUT, tamperSig(sig, jws), o)).toBe(false);
        }
      }
    }
    // hash none passes Vault's rule only with prehashed and pkcs1v15, and then ed25519 ignores all three.
    const none = opts({ hashAlgorithm: 'none', prehashed: true, signatureAlgorithm: 'pkcs1v15' });
    expect(nodeVerify(null, INPUT, pub, Buffer.from(sign('ed25519', m, INPUT, none), 'base64'))).toBe(true);
    expect(verify('ed25519', m, INPUT, sign('ed25519', m, INPUT, opts()), none)).toBe(true);
    // Verifying with another key fails.
    expect(verify('ed25519', generateAsymmetric('ed25519'), INPUT, sign('ed25519', m, INPUT, opts()), opts())).toBe(false);
    // A short signature is invalid, not an error (Go's ed25519.Verify).
    expect(verify('ed25519', m, INPUT, 'AAAA', opts())).toBe(false);
  });

  it('ECDSA: every hash round-trips; asn1 is DER, jws is r||s padded to the curve, both check with node:crypto', () => {
    for (const [type, size] of EC) {
      const m = key(type);
      const pub = exportedPublic(type);
      for (const [hashAlgorithm, nodeHash] of HASHES) {
        const asn1 = opts({ hashAlgorithm });
        const der = sign(type, m, INPUT, asn1);
        expect(nodeVerify(nodeHash, INPUT, { key: pub, dsaEncoding: 'der' }, Buffer.from(der, 'base64'))).toBe(true);
        expect(verify(type, m, INPUT, der, asn1)).toBe(true);
        expect(verify(type, m, tamperInput(INPUT), der, asn1)).toBe(false);
        const jwsOpts = opts({ hashAlgorithm, marshalingAlgorithm: 'jws' });
        const jws = sign(type, m, INPUT, jwsOpts);
        expect(jws).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(Buffer.from(jws, 'base64url')).toHaveLength(2 * size);
        expect(nodeVerify(nodeHash, INPUT, { key: pub, dsaEncoding: 'ieee-p1363' }, Buffer.from(jws, 'base64url'))).toBe(true);
        expect(verify(type, m, INPUT, jws, jwsOpts)).toBe(true);
        expect(verify(type, m, INPUT, tamperSig(jws, true), jwsOpts)).toBe(false);
        // The other hash fails.
        expect(verify(type, m, INPUT, der, opts({ hashAlgorithm: hashAlgorithm === 'sha1' ? 'sha2-256' : 'sha1' }))).toBe(false);
      }
      // A signature node:crypto made verifies in both encodings; the wrong encoding does not decode as DER.
      const p1363 = nodeSign('sha256', INPUT, { key: createPrivateKey({ key: Buffer.from(m.privatePkcs8, 'base64'), format: 'der', type: 'pkcs8' }), dsaEncoding: 'ieee-p1363' });
      expect(verify(type, m, INPUT, p1363.toString('base64url'), opts({ marshalingAlgorithm: 'jws' }))).toBe(true);
      invalid(() => verify(type, m, INPUT, p1363.toString('base64'), opts()), 'supplied signature is invalid');
    }
  });

  it('RSA: every hash, scheme and salt length round-trips and node:crypto verifies it with the salt length Vault chose', () => {
    for (const type of RSA) {
      const m = key(type);
      const pub = exportedPublic(type);
      const bytes = Number(type.slice(4)) / 8;
      for (const [hashAlgorithm, nodeHash, size] of HASHES) {
        for (const marshalingAlgorithm of ['asn1', 'jws']) {
          const jws = marshalingAlgorithm === 'jws';
          const cases: [Partial<SignOptions>, number][] = [
            // Go's PSSSaltLengthAuto signs with the largest salt: emLen - hLen - 2.
            [{}, bytes - size - 2],
            [{ signatureAlgorithm: 'pss', saltLength: 'auto' }, bytes - size - 2],
            [{ signatureAlgorithm: 'pss', saltLength: 'HASH' }, size],
            [{ signatureAlgorithm: 'pss', saltLength: 17 }, 17],
            [{ signatureAlgorithm: 'pkcs1v15' }, -1],
          ];
          for (const [extra, salt] of cases) {
            const o = opts({ hashAlgorithm, marshalingAlgorithm, ...extra });
            const sig = sign(type, m, INPUT, o);
            const raw = Buffer.from(sig, jws ? 'base64url' : 'base64');
            expect(raw).toHaveLength(bytes);
            expect(raw.toString(jws ? 'base64url' : 'base64')).toBe(sig);
            const padding = salt < 0 ? constants.RSA_PKCS1_PADDING : constants.RSA_PKCS1_PSS_PADDING;
            expect(nodeVerify(nodeHash, INPUT, { key: pub, padding, saltLength: Math.max(salt, 0) }, raw)).toBe(true);
            if (salt >= 0) expect(nodeVerify(nodeHash, INPUT, { key: pub, padding, saltLength: salt + 1 }, raw)).toBe(false);
            expect(verify(type, m, INPUT, sig, o)).toBe(true);
            expect(verify(type, m, tamperInput(INPUT), sig, o)).toBe(false);
            expect(verify(type, m, INPUT, tamperSig(sig, jws), o)).toBe(false);
          }
        }
      }
      // Verifying with the salt length fixed checks it: hash's salt is not auto's.
      const hashSalted = sign(type, m, INPUT, opts({ saltLength: 'hash' }));
      expect(verify(type, m, INPUT, hashSalted, opts())).toBe(true);
      expect(verify(type, m, INPUT, hashSalted, opts({ saltLength: 'hash' }))).toBe(true);
      expect(verify(type, m, INPUT, hashSalted, opts({ saltLength: 33 }))).toBe(false);
      expect(verify(type, m, INPUT, sign(type, m, INPUT, opts()), opts({ saltLength: 'hash' }))).toBe(false);
      // Schemes do not cross.
      expect(verify(type, m, INPUT, sign(type, m, INPUT, opts({ signatureAlgorithm: 'pkcs1v15' })), opts())).toBe(false);
    }
  });

  it('RSA PKCS#1 v1.5 signs a prehashed input as node:crypto signs the message, and hash none pads the input bare', () => {
    const type = 'rsa-2048';
    const m = key(type);
    const pub = exportedPublic(type);
    for (const [hashAlgorithm, nodeHash, size] of HASHES) {
      const digest = createHash(nodeHash).update(INPUT).digest();
      const o = opts({ hashAlgorithm, signatureAlgorithm: 'pkcs1v15', prehashed: true });
      const sig = sign(type, m, digest, o);
      // The same bytes as signing the message (PKCS#1 v1.5 is deterministic), so the DigestInfo is right.
      expect(nodeVerify(nodeHash, INPUT, { key: pub, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(sig, 'base64'))).toBe(true);
      expect(sig).toBe(sign(type, m, INPUT, opts({ hashAlgorithm, signatureAlgorithm: 'pkcs1v15' })));
      expect(verify(type, m, digest, sig, o)).toBe(true);
      expect(verify(type, m, tamperInput(digest), sig, o)).toBe(false);
      // A digest of the wrong length: Go's error when signing, invalid when verifying.
      invalid(() => sign(type, m, digest.subarray(1), o), 'crypto/rsa: input must be hashed message');
      expect(verify(type, m, digest.subarray(1), sig, o)).toBe(false);
      expect(size).toBe(digest.length);
    }
    const none = opts({ hashAlgorithm: 'none', signatureAlgorithm: 'pkcs1v15', prehashed: true });
    const raw = Buffer.from('any bytes at all, no DigestInfo');
    const sig = sign(type, m, raw, none);
    expect(publicDecrypt({ key: pub, padding: constants.RSA_PKCS1_PADDING }, Buffer.from(sig, 'base64'))).toEqual(raw);
    expect(verify(type, m, raw, sig, none)).toBe(true);
    expect(verify(type, m, tamperInput(raw), sig, none)).toBe(false);
    invalid(() => sign(type, m, Buffer.alloc(256 - 10), none), 'crypto/rsa: message too long for RSA key size');
  });

  it('verifies the signatures openssl made with the ECDSA keys of Vault’s own tests', () => {
    // path_sign_verify_test.go's testTransit_SignVerify_ECDSA: the key's X, Y, D and openssl's signature of "the quick brown fox" (sha2-256).
    const vectors: [AsymmetricType, string, string, string, string][] = [
      [
        'ecdsa-p256',
        '7336010a6da5935113d26d9ea4bb61b3b8d102c9a8083ed432f9b58fd7e80686',
        '4040aa31864691a8a9e7e3ec9250e85425b797ad7be34ba8df62bfbad45ebb0e',
        '99e5569be8683a2691dfc560ca9dfa71e887867a3af60635a08a3e3655aba3ef',
        'MEUCIAgnEl9V8P305EBAlz68Nq4jZng5fE8k6MactcnlUw9dAiEAvJVePg3dazW6MaW7lRAVtEz82QJDVmR98tXCl8Pc7DA=',
      ],
      [
        'ecdsa-p384',
        '703457a84e48bfcb037cfb509f1870d2aa5b74c109c2f24624ab21444492575229f8711453e5c656dab596b4e26db30e',
        '411c5b7092a893dc8b7af39de3d21d1c26f45b27616baeac4c479ef3c9f21c194b5ac501dee47ba2b2cb243a54256524',
        '3de3e4fd2ecbc490e956f41f5003a1e57a84763cec7b722fa3427cf461a1148ea4d5206023bcce0422289f6633730759',
        'MGUCMHHZLRN/3ehWuWACfSCMLtFtNEAdx6Rkwon2Lx6FWCyXCXqH6A8Pz8er0Qkgvm2ElQIxAO922LmUeYzHmDSfC5is/TjFu3b4Fb+1XtoBXncc2u4t2vSuTAxEv7WMh2D2YDdxeA==',
      ],
      [
        'ecdsa-p521',
        '1913f75fc044fe5d1f871c2629a377462fd819b174a41d3ec7d04ebd5ae35475ff8de544f4e19a9aa6b16a8f67af479be6884e00ca3147dc24d5924d66ac395e04b',
        '4919406b90d8323fdb5c9c4f48259c56ebcea37b40ad1a82bbbfad62a9b9c2dce515772274b84725471c7d0b7c62e10c23296b1a9d2b2586ada67735ff5d9fffc4',
        '1867d0fcd9bac4c5821b70a6b13117499438f8c274579c0aba254fbd85fa98892c3608576197d5534366a9aab0f904155bec46d800d23a57f7f053d91526568b09',
        'MIGIAkIBYhspOgSs/K/NUWtlBN+CfYe1IVFpUbQNSqdjT7s+QKcr6GKmdGLIQAXw0q6K0elBgzi1wgLjxwdscwMeW7tm/QQCQgDzdITGlUEd9Z7DOfLCnDP4X8pGsfO60Tvsh/BN44drZsHLtXYBXLczB/XZfIWAsPMuI5F7ExwVNbmQP0FBVri/QQ==',
      ],
    ];
    for (const [type, x, y, d, sig] of vectors) {
      const size = (EC.find(([t]) => t === type) as [AsymmetricType, number])[1];
      const b64 = (hex: string) => Buffer.from(hex.padStart(size * 2, '0'), 'hex').toString('base64url');
      const crv = { 'ecdsa-p256': 'P-256', 'ecdsa-p384': 'P-384', 'ecdsa-p521': 'P-521' }[type as 'ecdsa-p256'];
      const priv = createPrivateKey({ key: { kty: 'EC', crv, x: b64(x), y: b64(y), d: b64(d) }, format: 'jwk' });
      const m: AsymmetricMaterial = {
        privatePkcs8: priv.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
        publicKey: createPublicKey(priv).export({ type: 'spki', format: 'pem' }) as string,
      };
      expect(verify(type, m, INPUT, sig, opts())).toBe(true);
      expect(verify(type, m, Buffer.from('the quick brown fix'), sig, opts())).toBe(false);
      expect(verify(type, m, INPUT, sig, opts({ hashAlgorithm: 'sha2-384' }))).toBe(false);
    }
  });

  it('matches RFC 8032’s first ed25519 vector', () => {
    const seed = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
    const priv = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
    const m: AsymmetricMaterial = { privatePkcs8: priv.export({ type: 'pkcs8', format: 'der' }).toString('base64'), publicKey: Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex').toString('base64') };
    const expected = 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b';
    expect(Buffer.from(sign('ed25519', m, Buffer.alloc(0), opts()), 'base64').toString('hex')).toBe(expected);
    expect(verify('ed25519', m, Buffer.alloc(0), Buffer.from(expected, 'hex').toString('base64'), opts())).toBe(true);
    // Vault's key read shows the raw public key; export signing-key is Go's 64 bytes, seed then public key.
    expect(exportAsymmetric('ed25519', m, 'public-key')).toBe(m.publicKey);
    expect(Buffer.from(exportAsymmetric('ed25519', m, 'signing-key'), 'base64').toString('hex')).toBe(seed.toString('hex') + 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
  });
});

describe('option and signature errors', () => {
  it('refuses bad options with Vault’s texts, for every type', () => {
    const sig = (t: AsymmetricType) => sign(t, key(t), INPUT, opts());
    for (const type of ['ed25519', 'ecdsa-p256', 'rsa-2048'] as AsymmetricType[]) {
      const m = key(type);
      const s = sig(type);
      for (const f of [(o: SignOptions) => sign(type, m, INPUT, o), (o: SignOptions) => verify(type, m, INPUT, s, o)]) {
        invalid(() => f(opts({ hashAlgorithm: 'sha256' })), 'invalid hash algorithm "sha256"');
        invalid(() => f(opts({ marshalingAlgorithm: 'der' })), 'invalid marshaling type "der"');
        invalid(() => f(opts({ saltLength: 'big' })), "salt length neither 'auto', 'hash', nor an int: big");
        invalid(() => f(opts({ saltLength: 1.5 })), "salt length neither 'auto', 'hash', nor an int: 1.5");
        invalid(() => f(opts({ saltLength: '-2' })), 'salt length is invalid: -2');
        const none = 'hash_algorithm=none requires both prehashed=true and signature_algorithm=pkcs1v15';
        invalid(() => f(opts({ hashAlgorithm: 'none' })), none);
        invalid(() => f(opts({ hashAlgorithm: 'none', prehashed: true })), none);
        invalid(() => f(opts({ hashAlgorithm: 'none', signatureAlgorithm: 'pkcs1v15' })), none);
      }
    }
    // '' is Vault's default everywhere: sha2-256, asn1, pss.
    const dflt = sign('ecdsa-p256', key('ecdsa-p256'), INPUT, opts({ hashAlgorithm: '', marshalingAlgorithm: '' }));
    expect(nodeVerify('sha256', INPUT, { key: exportedPublic('ecdsa-p256'), dsaEncoding: 'der' }, Buffer.from(dflt, 'base64'))).toBe(true);
    expect(verify('rsa-2048', key('rsa-2048'), INPUT, sig('rsa-2048'), opts({ hashAlgorithm: '', signatureAlgorithm: '', saltLength: 'auto' }))).toBe(true);
    // "0" is Go's PSSSaltLengthAuto, so Vault treats it as auto.
    expect(verify('rsa-2048', key('rsa-2048'), INPUT, sig('rsa-2048'), opts({ saltLength: '0' }))).toBe(true);
  });

  it('RSA: an unknown scheme and a salt length out of Go’s bounds', () => {
    const m = key('rsa-2048');
    const s = sign('rsa-2048', m, INPUT, opts());
    invalid(() => sign('rsa-2048', m, INPUT, opts({ signatureAlgorithm: 'pkcs1' })), 'unsupported rsa signature algorithm pkcs1');
    invalid(() => verify('rsa-2048', m, INPUT, s, opts({ signatureAlgorithm: 'PSS' })), 'unsupported rsa signature algorithm PSS');
    // 2048 bits, sha2-256: at most 256 - 2 - 32 = 222.
    expect(verify('rsa-2048', m, INPUT, sign('rsa-2048', m, INPUT, opts({ saltLength: 222 })), opts({ saltLength: 222 }))).toBe(true);
    invalid(() => sign('rsa-2048', m, INPUT, opts({ saltLength: 223 })), 'requested salt length 223 is invalid');
    invalid(() => verify('rsa-2048', m, INPUT, s, opts({ saltLength: '223' })), 'requested salt length 223 is invalid');
    invalid(() => sign('rsa-2048', m, INPUT, opts({ hashAlgorithm: 'sha2-512', saltLength: 191 })), 'requested salt length 191 is invalid');
    // ECDSA and ed25519 ignore signature_algorithm and salt_length.
    expect(verify('ecdsa-p256', key('ecdsa-p256'), INPUT, sign('ecdsa-p256', key('ecdsa-p256'), INPUT, opts({ signatureAlgorithm: 'x', saltLength: 9999 })), opts())).toBe(true);
  });

  it('prehashed ECDSA signs and verifies the given digest: node:crypto, hashing the message itself, agrees both ways', () => {
    for (const [type, size] of EC) {
      const pub = exportedPublic(type);
      const priv = createPrivateKey({ key: Buffer.from(key(type).privatePkcs8, 'base64'), format: 'der', type: 'pkcs8' });
      // Each curve with every hash: a digest longer than the order is read as its leftmost bits, as Go and OpenSSL read it.
      for (const [vaultName, nodeName] of HASHES.filter(([n]) => !n.startsWith('sha3'))) {
        const digest = createHash(nodeName).update(INPUT).digest();
        for (const marshalingAlgorithm of ['asn1', 'jws']) {
          const o = opts({ hashAlgorithm: vaultName, marshalingAlgorithm, prehashed: true });
          const ours = sign(type, key(type), digest, o);
          const raw = Buffer.from(ours, marshalingAlgorithm === 'jws' ? 'base64url' : 'base64');
          if (marshalingAlgorithm === 'jws') expect(raw.length).toBe(2 * size);
          expect(nodeVerify(nodeName, INPUT, { key: pub, dsaEncoding: marshalingAlgorithm === 'jws' ? 'ieee-p1363' : 'der' }, raw)).toBe(true);
          const theirs = nodeSign(nodeName, INPUT, { key: priv, dsaEncoding: marshalingAlgorithm === 'jws' ? 'ieee-p1363' : 'der' });
          const encoded = marshalingAlgorithm === 'jws' ? theirs.toString('base64url') : theirs.toString('base64');
          expect(verify(type, key(type), digest, encoded, o)).toBe(true);
          const other = Buffer.from(digest);
          other[0] = (other[0] as number) ^ 1;
          expect(verify(type, key(type), other, encoded, o)).toBe(false);
          // Not prehashed, the same digest is a message of its own.
          expect(verify(type, key(type), digest, encoded, opts({ hashAlgorithm: vaultName, marshalingAlgorithm }))).toBe(false);
        }
      }
    }
  });

  it('refuses a prehashed ECDSA input over noble\'s 8 KiB bound with a 400 of its own (no library text)', () => {
    invalid(() => sign('ecdsa-p256', key('ecdsa-p256'), Buffer.alloc(8193, 1), opts({ prehashed: true })), 'prehashed input is longer than 8192 bytes');
    expect(verify('ecdsa-p256', key('ecdsa-p256'), Buffer.alloc(8192, 1), sign('ecdsa-p256', key('ecdsa-p256'), Buffer.alloc(8192, 1), opts({ prehashed: true })), opts({ prehashed: true }))).toBe(true);
  });

  it('refuses prehashed RSA PSS (node:crypto cannot pad a given digest for PSS)', () => {
    const digest = createHash('sha256').update(INPUT).digest();
    invalid(() => sign('rsa-2048', key('rsa-2048'), digest, opts({ prehashed: true })), 'prehashed input is not supported for RSA PSS signatures');
  });

  it('an undecodable signature is an error, as Vault; a wrong one is just invalid', () => {
    const m = key('ecdsa-p256');
    const der = Buffer.from(sign('ecdsa-p256', m, INPUT, opts()), 'base64');
    for (const type of ['ed25519', 'ecdsa-p256', 'rsa-2048'] as AsymmetricType[]) {
      invalid(() => verify(type, key(type), INPUT, 'not base64!', opts()), 'invalid base64 signature value');
      invalid(() => verify(type, key(type), INPUT, 'QUI=', opts({ marshalingAlgorithm: 'jws' })), 'invalid base64 signature value');
      invalid(() => verify(type, key(type), INPUT, 'QUI', opts()), 'invalid base64 signature value');
      invalid(() => verify(type, key(type), INPUT, 'a+b/', opts({ marshalingAlgorithm: 'jws' })), 'invalid base64 signature value');
    }
    // Go's StdEncoding skips line breaks.
    const b64 = der.toString('base64');
    expect(verify('ecdsa-p256', m, INPUT, `${b64.slice(0, 10)}\r\n${b64.slice(10)}`, opts())).toBe(true);
    // ECDSA's DER: garbage, trailing bytes, a non-minimal integer.
    invalid(() => verify('ecdsa-p256', m, INPUT, Buffer.from('nope').toString('base64'), opts()), 'supplied signature is invalid');
    invalid(() => verify('ecdsa-p256', m, INPUT, Buffer.concat([der, Buffer.from([0])]).toString('base64'), opts()), 'supplied signature contains extra data');
    const padded = Buffer.from([0x30, 0x08, 0x02, 0x02, 0x00, 0x01, 0x02, 0x02, 0x00, 0x01]);
    invalid(() => verify('ecdsa-p256', m, INPUT, padded.toString('base64'), opts()), 'supplied signature is invalid');
    // Well-formed but wrong, or r and s out of range: false.
    expect(verify('ecdsa-p256', m, INPUT, Buffer.from([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]).toString('base64'), opts())).toBe(false);
    expect(verify('ecdsa-p256', m, INPUT, Buffer.from([0x30, 0x06, 0x02, 0x01, 0xff, 0x02, 0x01, 0x01]).toString('base64'), opts())).toBe(false);
    expect(verify('ecdsa-p256', m, INPUT, Buffer.alloc(3, 1).toString('base64url'), opts({ marshalingAlgorithm: 'jws' }))).toBe(false);
    expect(verify('ecdsa-p256', m, INPUT, Buffer.alloc(80, 1).toString('base64url'), opts({ marshalingAlgorithm: 'jws' }))).toBe(false);
    expect(verify('rsa-2048', key('rsa-2048'), INPUT, 'QUJD', opts())).toBe(false);
  });
});

describe('deriveEd25519', () => {
  it('is Vault’s DeriveKey: HKDF-SHA256 over seed||public key, no salt, the context as info; the first 32 bytes seed the key', () => {
    const base = key('ed25519');
    const a = deriveEd25519(base, Buffer.from('abcd'));
    expect(deriveEd25519(base, Buffer.from('abcd'))).toEqual(a);
    const b = deriveEd25519(base, Buffer.from('efgh'));
    expect(b.publicKey).not.toBe(a.publicKey);
    expect(a.publicKey).not.toBe(base.publicKey);
    // Independently: Go's 64-byte key from the export, HKDF, a PKCS#8 from the seed.
    const goKey = Buffer.from(exportAsymmetric('ed25519', base, 'signing-key'), 'base64');
    expect(goKey).toHaveLength(64);
    const seed = Buffer.from(hkdfSync('sha256', goKey, Buffer.alloc(0), Buffer.from('abcd'), 32));
    const priv = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
    const rawPub = createPublicKey(priv).export({ type: 'spki', format: 'der' }).subarray(12);
    expect(a.publicKey).toBe(rawPub.toString('base64'));
    // It signs as the derived key, not as the base.
    const sig = sign('ed25519', a, INPUT, opts());
    expect(nodeVerify(null, INPUT, createPublicKey(priv), Buffer.from(sig, 'base64'))).toBe(true);
    expect(verify('ed25519', base, INPUT, sig, opts())).toBe(false);
    expect(verify('ed25519', b, INPUT, sig, opts())).toBe(false);
    // Vault's Go HKDF has no bound on the context (node:crypto's stops at 1,024 bytes: kdf.ts).
    // Independently, RFC 5869 with HMAC-SHA256 (an empty salt is 32 zero bytes; one output block).
    const long = Buffer.alloc(4000, 3);
    const prk = createHmac('sha256', Buffer.alloc(32)).update(goKey).digest();
    const longSeed = createHmac('sha256', prk).update(Buffer.concat([long, Buffer.from([1])])).digest();
    const longPriv = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), longSeed]), format: 'der', type: 'pkcs8' });
    expect(deriveEd25519(base, long).publicKey).toBe(createPublicKey(longPriv).export({ type: 'spki', format: 'der' }).subarray(12).toString('base64'));
    invalid(
      () => deriveEd25519(base, Buffer.alloc(0)),
      "missing 'context' for key derivation; the key was created using a derived key, which means additional, per-request information must be included in order to perform operations with the key",
    );
  });
});

describe('exportAsymmetric', () => {
  const PEM = (type: string) => new RegExp(`^-----BEGIN ${type}-----\\n(?:[A-Za-z0-9+/]{64}\\n)*[A-Za-z0-9+/=]{1,64}\\n-----END ${type}-----$`);
  const der = (s: string, type: 'pkcs8' | 'spki') => (type === 'spki' ? createPublicKey({ key: Buffer.from(s, 'base64'), format: 'der', type }) : createPrivateKey({ key: Buffer.from(s, 'base64'), format: 'der', type }));

  it('gives Vault’s strings for each type, export type and format, which node:crypto parses back to the key', () => {
    for (const type of ASYMMETRIC_TYPES) {
      const m = key(type);
      const priv = createPrivateKey({ key: Buffer.from(m.privatePkcs8, 'base64'), format: 'der', type: 'pkcs8' });
      const spki = createPublicKey(priv).export({ type: 'spki', format: 'der' });
      const same = (k: KeyObject) => expect((k.type === 'public' ? k : createPublicKey(k)).export({ type: 'spki', format: 'der' })).toEqual(spki);
      const rsa = type.startsWith('rsa');
      const privateTypes = rsa ? ['signing-key', 'encryption-key'] : ['signing-key'];
      if (type === 'ed25519') {
        expect(exportAsymmetric(type, m, 'public-key')).toBe(m.publicKey);
        expect(exportAsymmetric(type, m, 'public-key', 'raw')).toBe(m.publicKey);
        same(der(exportAsymmetric(type, m, 'public-key', 'der'), 'spki'));
        expect(exportAsymmetric(type, m, 'public-key', 'pem')).toMatch(PEM('PUBLIC KEY'));
        same(createPublicKey(exportAsymmetric(type, m, 'public-key', 'pem')));
        expect(Buffer.from(exportAsymmetric(type, m, 'signing-key'), 'base64').subarray(32).toString('base64')).toBe(m.publicKey);
        expect(exportAsymmetric(type, m, 'signing-key', 'raw')).toBe(exportAsymmetric(type, m, 'signing-key'));
      } else {
        // Default and pem: PKIX; RSA keeps Go's trailing newline, ECDSA's is trimmed.
        const pub = exportAsymmetric(type, m, 'public-key');
        expect(pub).toBe(rsa ? m.publicKey : m.publicKey.trim());
        expect(exportAsymmetric(type, m, 'public-key', 'pem')).toBe(pub);
        same(createPublicKey(pub));
        same(der(exportAsymmetric(type, m, 'public-key', 'der'), 'spki'));
        for (const t of privateTypes) {
          const dflt = exportAsymmetric(type, m, t);
          expect(rsa ? dflt.slice(0, -1) : dflt).toMatch(PEM(rsa ? 'RSA PRIVATE KEY' : 'EC PRIVATE KEY'));
          expect(dflt.endsWith('\n')).toBe(rsa);
          same(createPrivateKey(dflt));
          const pem = exportAsymmetric(type, m, t, 'pem');
          expect(rsa ? pem.slice(0, -1) : pem).toMatch(PEM('PRIVATE KEY'));
          same(createPrivateKey(pem));
          expect(exportAsymmetric(type, m, t, 'der')).toBe(m.privatePkcs8);
        }
        invalid(() => exportAsymmetric(type, m, 'signing-key', 'raw'), `unknown key format for ${rsa ? 'rsa' : 'ec'} key; supported values are \`\`, \`der\`, or \`pem\``);
        invalid(() => exportAsymmetric(type, m, 'public-key', 'raw'), `unknown key format for ${rsa ? 'rsa' : 'ec'} key; supported values are \`\`, \`der\`, or \`pem\``);
      }
      if (!rsa) invalid(() => exportAsymmetric(type, m, 'encryption-key'), 'encryption not supported for the key');
      invalid(() => exportAsymmetric(type, m, 'private-key'), 'invalid export type: private-key');
      invalid(() => exportAsymmetric(type, m, 'public-key', 'jwk'), 'invalid format: jwk');
    }
    // The SEC1 default carries the curve (Go's MarshalECPrivateKey), PKCS#8 is PKCS#8.
    const sec1 = exportAsymmetric('ecdsa-p521', key('ecdsa-p521'), 'signing-key');
    expect(createPrivateKey(sec1).asymmetricKeyDetails).toMatchObject({ namedCurve: 'secp521r1' });
    expect(createPrivateKey({ key: Buffer.from(sec1.split('\n').slice(1, -1).join(''), 'base64'), format: 'der', type: 'sec1' }).asymmetricKeyType).toBe('ec');
    const pkcs1 = exportAsymmetric('rsa-2048', key('rsa-2048'), 'encryption-key');
    expect(createPrivateKey({ key: Buffer.from(pkcs1.trim().split('\n').slice(1, -1).join(''), 'base64'), format: 'der', type: 'pkcs1' }).asymmetricKeyType).toBe('rsa');
  });
});

describe('RSA OAEP', () => {
  it('round-trips with SHA-256 and no label, decrypts what node:crypto encrypts, and refuses a foreign ciphertext', () => {
    for (const type of RSA) {
      const m = key(type);
      const bytes = Number(type.slice(4)) / 8;
      const plaintext = Buffer.from('secret plaintext');
      const ct = rsaEncrypt(m, plaintext);
      expect(ct).toHaveLength(bytes);
      expect(rsaDecrypt(m, ct)).toEqual(plaintext);
      const pem = exportAsymmetric(type, m, 'encryption-key');
      expect(privateDecrypt({ key: pem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, ct)).toEqual(plaintext);
      const theirs = publicEncrypt({ key: exportedPublic(type), padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, plaintext);
      expect(rsaDecrypt(m, theirs)).toEqual(plaintext);
      // The largest plaintext, k - 2*32 - 2, fits; one more byte does not.
      expect(rsaDecrypt(m, rsaEncrypt(m, Buffer.alloc(bytes - 66, 7)))).toEqual(Buffer.alloc(bytes - 66, 7));
      invalid(() => rsaEncrypt(m, Buffer.alloc(bytes - 65)), 'failed to RSA encrypt the plaintext: crypto/rsa: message too long for RSA key size');
    }
    const m = key('rsa-2048');
    const decryptError = 'failed to RSA decrypt the ciphertext: crypto/rsa: decryption error';
    invalid(() => rsaDecrypt(m, rsaEncrypt(key('rsa-3072'), Buffer.from('x'))), decryptError);
    invalid(() => rsaDecrypt(m, rsaEncrypt(generateAsymmetric('rsa-2048'), Buffer.from('x'))), decryptError);
    invalid(() => rsaDecrypt(m, Buffer.alloc(256)), decryptError);
    invalid(() => rsaDecrypt(m, Buffer.alloc(0)), decryptError);
    // SHA-1 OAEP (node:crypto's default) is not Vault's.
    invalid(() => rsaDecrypt(m, publicEncrypt({ key: exportedPublic('rsa-2048'), padding: constants.RSA_PKCS1_OAEP_PADDING }, Buffer.from('x'))), decryptError);
    invalid(() => rsaEncrypt(key('ecdsa-p256'), Buffer.from('x')), 'encryption not supported for the key');
  });
});
