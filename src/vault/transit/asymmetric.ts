/**
 * Transit's asymmetric key types (ed25519, ECDSA P-256/384/521, RSA 2048/3072/4096): key
 * generation, ed25519 key derivation, sign and verify, RSA-OAEP, and the export formats. Pure: key
 * material in, strings and buffers out; the engine stores the material and adds the `vault:vN:`
 * prefix. Vault's keysutil/policy.go (SignWithOptions, VerifySignatureWithOptions,
 * RotateInMemory, DeriveKey) and transit's path_sign_verify.go and path_export.go are the
 * reference: their defaults, encodings and error texts. Every primitive is node:crypto's, except
 * ECDSA over a given digest (ecdsa-prehashed.ts, @noble/curves).
 *
 *   const m = generateAsymmetric('ecdsa-p256');
 *   const sig = sign('ecdsa-p256', m, input, { hashAlgorithm: 'sha2-256', marshalingAlgorithm: 'asn1', prehashed: false });
 *   verify('ecdsa-p256', m, input, sig, opts); // true
 *
 * Errors a client can cause are InvalidRequest with Vault's text, also where Vault itself answers
 * 500 (an unknown signature_algorithm, a prehashed input of the wrong length for RSA, a failed
 * RSA decryption).
 */
import {
  constants,
  createPrivateKey,
  createPublicKey,
  generateKeyPair,
  generateKeyPairSync,
  privateDecrypt,
  privateEncrypt,
  publicDecrypt,
  publicEncrypt,
  sign as nodeSign,
  timingSafeEqual,
  verify as nodeVerify,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import { signDigest, verifyDigest } from './ecdsa-prehashed.js';
import { hkdfSha256 } from './kdf.js';

export type AsymmetricType = 'ed25519' | 'ecdsa-p256' | 'ecdsa-p384' | 'ecdsa-p521' | 'rsa-2048' | 'rsa-3072' | 'rsa-4096';
export const ASYMMETRIC_TYPES: readonly AsymmetricType[] = ['ed25519', 'ecdsa-p256', 'ecdsa-p384', 'ecdsa-p521', 'rsa-2048', 'rsa-3072', 'rsa-4096'];

/** One key version's material as the engine stores it (JSON-safe). */
export interface AsymmetricMaterial {
  /** PKCS#8 DER of the private key, base64. */
  readonly privatePkcs8: string;
  /**
   * What Vault's key read shows as `public_key` for this version: ed25519 the raw 32-byte key in
   * base64; ECDSA and RSA a PEM "PUBLIC KEY" (PKIX) with Go's trailing newline.
   */
  readonly publicKey: string;
}

export interface SignOptions {
  /** Vault's hash_algorithm names (sha1, sha2-224, ..., sha3-512, none); '' is Vault's default, sha2-256. */
  readonly hashAlgorithm: string;
  /** RSA only: 'pss' (Vault's default, also for '') or 'pkcs1v15'. */
  readonly signatureAlgorithm?: string;
  /** 'asn1' (default, also for '') or 'jws'. */
  readonly marshalingAlgorithm: string;
  /** The input is already the hash (Vault's `prehashed`). */
  readonly prehashed: boolean;
  /** RSA PSS salt_length: 'auto' (default), 'hash', or a number, as Vault parses it. */
  readonly saltLength?: string | number;
}

interface HashSpec {
  /** node:crypto's digest name. */
  readonly node: string;
  readonly size: number;
  /** The DER DigestInfo before the digest in a PKCS#1 v1.5 signature (Go's hashPrefixes). */
  readonly digestInfo: Buffer;
}

/** DigestInfo prefix: SEQUENCE { SEQUENCE { OID, NULL }, OCTET STRING of `size` bytes }. */
function digestInfo(oid: number[], size: number): Buffer {
  const algorithm = [0x30, oid.length + 4, 0x06, oid.length, ...oid, 0x05, 0x00];
  return Buffer.from([0x30, algorithm.length + 2 + size, ...algorithm, 0x04, size]);
}
/** 2.16.840.1.101.3.4.2.n, NIST's hash arc. */
const nist = (n: number) => [0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, n];
const hash = (node: string, size: number, oid: number[]): HashSpec => ({ node, size, digestInfo: digestInfo(oid, size) });

/** Vault's keysutil.HashTypeMap; `none` maps to no hash. */
const HASHES: ReadonlyMap<string, HashSpec | null> = new Map([
  ['none', null],
  ['sha1', hash('sha1', 20, [0x2b, 0x0e, 0x03, 0x02, 0x1a])],
  ['sha2-224', hash('sha224', 28, nist(4))],
  ['sha2-256', hash('sha256', 32, nist(1))],
  ['sha2-384', hash('sha384', 48, nist(2))],
  ['sha2-512', hash('sha512', 64, nist(3))],
  ['sha3-224', hash('sha3-224', 28, nist(7))],
  ['sha3-256', hash('sha3-256', 32, nist(8))],
  ['sha3-384', hash('sha3-384', 48, nist(9))],
  ['sha3-512', hash('sha3-512', 64, nist(10))],
]);

const CURVES = { 'ecdsa-p256': ['P-256', 32], 'ecdsa-p384': ['P-384', 48], 'ecdsa-p521': ['P-521', 66] } as const;
const RSA_BITS = { 'rsa-2048': 2048, 'rsa-3072': 3072, 'rsa-4096': 4096 } as const;
type EcType = keyof typeof CURVES;
type RsaType = keyof typeof RSA_BITS;
const isEc = (t: AsymmetricType): t is EcType => t in CURVES;
const isRsa = (t: AsymmetricType): t is RsaType => t in RSA_BITS;

/** Go's pem.EncodeToMemory: 64-column base64 between the armour lines, a trailing newline. */
function pem(type: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${type}-----\n${lines.join('\n')}\n-----END ${type}-----\n`;
}

const privateKeyOf = (m: AsymmetricMaterial) => createPrivateKey({ key: Buffer.from(m.privatePkcs8, 'base64'), format: 'der', type: 'pkcs8' });
const spki = (k: KeyObject) => k.export({ type: 'spki', format: 'der' });
const rawEd25519Public = (k: KeyObject) => Buffer.from(k.export({ format: 'jwk' }).x as string, 'base64url');

function materialOf(type: AsymmetricType, privateKey: KeyObject): AsymmetricMaterial {
  const pub = createPublicKey(privateKey);
  return {
    privatePkcs8: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    publicKey: type === 'ed25519' ? rawEd25519Public(pub).toString('base64') : pem('PUBLIC KEY', spki(pub)),
  };
}

/** RSA with e = 65537, as Go's rsa.GenerateKey. */
const rsaOptions = (type: RsaType) => ({ modulusLength: RSA_BITS[type], publicExponent: 65537 });

/**
 * A fresh key version, as Vault's RotateInMemory makes it. RSA's generation holds the thread (about
 * 0.3 s for 2048 bits, 1.3 s and more for 4096): a server calls `generateAsymmetricAsync()`.
 */
export function generateAsymmetric(type: AsymmetricType): AsymmetricMaterial {
  if (type === 'ed25519') return materialOf(type, generateKeyPairSync('ed25519').privateKey);
  if (isEc(type)) return materialOf(type, generateKeyPairSync('ec', { namedCurve: CURVES[type][0] }).privateKey);
  if (isRsa(type)) return materialOf(type, generateKeyPairSync('rsa', rsaOptions(type)).privateKey);
  throw new InvalidRequest(`unknown key type ${String(type)}`);
}

/** generateAsymmetric() with RSA's generation on libuv's thread pool, off the event loop. */
export async function generateAsymmetricAsync(type: AsymmetricType): Promise<AsymmetricMaterial> {
  if (!isRsa(type)) return generateAsymmetric(type);
  const privateKey = await new Promise<KeyObject>((resolve, reject) => {
    generateKeyPair('rsa', rsaOptions(type), (err, _pub, priv) => (err ? reject(err) : resolve(priv)));
  });
  return materialOf(type, privateKey);
}

/** The `name` Vault's key read shows for each version of the type (Go's curve names for ECDSA). */
export function keyVersionName(type: AsymmetricType): string {
  return isEc(type) ? CURVES[type][0] : type;
}

/** PKCS#8 of an ed25519 key up to its 32-byte seed (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const MISSING_CONTEXT =
  "missing 'context' for key derivation; the key was created using a derived key, which means additional, per-request information must be included in order to perform operations with the key";

/** Go's 64-byte ed25519 private key: the seed, then the public key. */
function ed25519GoKey(m: AsymmetricMaterial): Buffer {
  const jwk = privateKeyOf(m).export({ format: 'jwk' });
  return Buffer.concat([Buffer.from(jwk.d as string, 'base64url'), Buffer.from(jwk.x as string, 'base64url')]);
}

/**
 * ed25519 only: the key a derived ed25519 policy signs with for `context` (Vault's DeriveKey with
 * HKDF): HKDF-SHA256 over Go's 64-byte private key, no salt, `context` as info, read as the
 * "random" seed of ed25519.GenerateKey, i.e. the first 32 bytes are the seed.
 */
export function deriveEd25519(base: AsymmetricMaterial, context: Buffer): AsymmetricMaterial {
  if (context.length === 0) throw new InvalidRequest(MISSING_CONTEXT);
  const seed = hkdfSha256(ed25519GoKey(base), context, 32);
  return materialOf('ed25519', createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' }));
}

/** The options as Vault's handler and SignWithOptions read them, validated in Vault's order. */
interface Parsed {
  readonly hash: HashSpec | null;
  readonly jws: boolean;
  readonly prehashed: boolean;
  /** Go's value: 0 auto, -1 equal to the hash, else the length. */
  readonly salt: number;
  readonly signatureAlgorithm: string;
}

/** Vault's getSaltLength: 'auto' 0, 'hash' -1, else an integer of at least -1 (so "0" is auto, as in Vault). */
function parseSaltLength(raw: string | number | undefined): number {
  if (raw === undefined) return 0;
  const text = String(raw);
  const lower = text.toLowerCase();
  if (lower === 'auto') return 0;
  if (lower === 'hash') return -1;
  const n = /^[+-]?\d+$/.test(lower) ? Number(lower) : NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidRequest(`salt length neither 'auto', 'hash', nor an int: ${text}`);
  if (n < -1) throw new InvalidRequest(`salt length is invalid: ${n}`);
  return n;
}

function parseOptions(o: SignOptions): Parsed {
  const hashName = o.hashAlgorithm === '' ? 'sha2-256' : o.hashAlgorithm;
  const hash = HASHES.get(hashName);
  if (hash === undefined) throw new InvalidRequest(`invalid hash algorithm "${hashName}"`);
  const marshaling = o.marshalingAlgorithm === '' ? 'asn1' : o.marshalingAlgorithm;
  if (marshaling !== 'asn1' && marshaling !== 'jws') throw new InvalidRequest(`invalid marshaling type "${marshaling}"`);
  const salt = parseSaltLength(o.saltLength);
  const signatureAlgorithm = o.signatureAlgorithm ?? '';
  if (hash === null && (!o.prehashed || signatureAlgorithm !== 'pkcs1v15')) {
    throw new InvalidRequest('hash_algorithm=none requires both prehashed=true and signature_algorithm=pkcs1v15');
  }
  return { hash, jws: marshaling === 'jws', prehashed: o.prehashed, salt, signatureAlgorithm };
}

/** RSA's scheme ('' is Vault's default, pss) and, for PSS, Vault's salt length bounds. */
function rsaScheme(m: KeyObject, p: Parsed): 'pss' | 'pkcs1v15' {
  const scheme = p.signatureAlgorithm === '' ? 'pss' : p.signatureAlgorithm;
  if (scheme !== 'pss' && scheme !== 'pkcs1v15') throw new InvalidRequest(`unsupported rsa signature algorithm ${scheme}`);
  if (scheme === 'pss') {
    const bits = m.asymmetricKeyDetails?.modulusLength ?? 0;
    // Go's (keyBitLen-1+7)/8 - 2 - the hash's size; PSS never has hash none (parseOptions).
    const max = Math.floor((bits - 1 + 7) / 8) - 2 - (p.hash?.size ?? 0);
    if (p.salt < -1 || p.salt > max) throw new InvalidRequest(`requested salt length ${p.salt} is invalid`);
  }
  return scheme;
}

/** node:crypto's saltLength for Go's: auto is the maximum when signing and detected when verifying. */
function nodeSalt(salt: number, signing: boolean): number {
  if (salt === 0) return signing ? constants.RSA_PSS_SALTLEN_MAX_SIGN : constants.RSA_PSS_SALTLEN_AUTO;
  if (salt === -1) return constants.RSA_PSS_SALTLEN_DIGEST;
  return salt;
}

/**
 * The signature as Vault encodes it after the `vault:vN:` prefix: std base64 for asn1, raw URL
 * base64 for jws (whose bytes differ from asn1's only for ECDSA: r||s, each padded to the curve's
 * size, where asn1 is DER).
 */
export function sign(type: AsymmetricType, m: AsymmetricMaterial, input: Buffer, o: SignOptions): string {
  const p = parseOptions(o);
  const key = privateKeyOf(m);
  let sig: Buffer;
  if (type === 'ed25519') {
    // Vault never hashes ed25519's input, whatever hash_algorithm and prehashed say.
    sig = nodeSign(null, input, key);
  } else if (isEc(type)) {
    // node:crypto hashes what it signs: a given digest is signed by ecdsa-prehashed.ts.
    if (p.prehashed) sig = signDigest(type, key, input, p.jws ? 'compact' : 'der');
    else sig = nodeSign((p.hash as HashSpec).node, input, { key, dsaEncoding: p.jws ? 'ieee-p1363' : 'der' }); // hash none needs prehashed (parseOptions)
  } else {
    sig = rsaSign(key, input, p);
  }
  return p.jws ? sig.toString('base64url') : sig.toString('base64');
}

function rsaSign(key: KeyObject, input: Buffer, p: Parsed): Buffer {
  const scheme = rsaScheme(key, p);
  if (!p.prehashed) {
    const spec = p.hash as HashSpec; // hash none needs prehashed (parseOptions)
    const padding = scheme === 'pss' ? constants.RSA_PKCS1_PSS_PADDING : constants.RSA_PKCS1_PADDING;
    return nodeSign(spec.node, input, { key, padding, saltLength: nodeSalt(p.salt, true) });
  }
  if (scheme === 'pss') throw new InvalidRequest('prehashed input is not supported for RSA PSS signatures');
  if (p.hash !== null && input.length !== p.hash.size) throw new InvalidRequest('crypto/rsa: input must be hashed message');
  const encoded = p.hash === null ? input : Buffer.concat([p.hash.digestInfo, input]);
  const k = Math.ceil((key.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
  if (encoded.length > k - 11) throw new InvalidRequest('crypto/rsa: message too long for RSA key size');
  // PKCS#1 v1.5 type 1 padding of the DigestInfo: Go's SignPKCS1v15 of a prehashed input.
  return privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, encoded);
}

/** Go's base64.StdEncoding (padded; CR and LF skipped) or RawURLEncoding (unpadded). */
function decodeSignature(encoded: string, jws: boolean): Buffer {
  const text = jws ? encoded : encoded.replace(/[\r\n]/g, '');
  const ok = jws
    ? /^[A-Za-z0-9_-]*$/.test(text) && text.length % 4 !== 1
    : /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text);
  if (!ok) throw new InvalidRequest('invalid base64 signature value');
  return Buffer.from(text, jws ? 'base64url' : 'base64');
}

/**
 * Whether `encoded` (the part after the prefix) is a valid signature of `input`. InvalidRequest,
 * as Vault, for a signature that does not decode (base64, or ECDSA's DER) and for bad options.
 */
export function verify(type: AsymmetricType, m: AsymmetricMaterial, input: Buffer, encoded: string, o: SignOptions): boolean {
  const p = parseOptions(o);
  const sig = decodeSignature(encoded, p.jws);
  if (type === 'ed25519') {
    return nodeVerify(null, input, publicKeyOf(type, m), sig);
  }
  if (isEc(type)) {
    const size = CURVES[type][1];
    const rs = p.jws ? splitJws(sig) : parseDerSignature(sig);
    const fixed = toP1363(rs, size);
    if (fixed === undefined) return false;
    if (p.prehashed) return verifyDigest(type, publicKeyOf(type, m), input, fixed);
    const spec = p.hash as HashSpec; // hash none needs prehashed (parseOptions)
    return nodeVerify(spec.node, input, { key: publicKeyOf(type, m), dsaEncoding: 'ieee-p1363' }, fixed);
  }
  return rsaVerify(publicKeyOf(type, m), input, sig, p);
}

function rsaVerify(key: KeyObject, input: Buffer, sig: Buffer, p: Parsed): boolean {
  const scheme = rsaScheme(key, p);
  if (!p.prehashed) {
    const spec = p.hash as HashSpec; // hash none needs prehashed (parseOptions)
    const padding = scheme === 'pss' ? constants.RSA_PKCS1_PSS_PADDING : constants.RSA_PKCS1_PADDING;
    return nodeVerify(spec.node, input, { key, padding, saltLength: nodeSalt(p.salt, false) }, sig);
  }
  if (scheme === 'pss') throw new InvalidRequest('prehashed input is not supported for RSA PSS signatures');
  // Go's VerifyPKCS1v15: a digest of the wrong length or a signature of the wrong size is invalid.
  if (p.hash !== null && input.length !== p.hash.size) return false;
  const k = Math.ceil((key.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
  if (sig.length !== k) return false;
  const expected = p.hash === null ? input : Buffer.concat([p.hash.digestInfo, input]);
  let recovered: Buffer;
  try {
    recovered = publicDecrypt({ key, padding: constants.RSA_PKCS1_PADDING }, sig);
  } catch {
    return false;
  }
  return recovered.length === expected.length && timingSafeEqual(recovered, expected);
}

function publicKeyOf(type: AsymmetricType, m: AsymmetricMaterial): KeyObject {
  if (type === 'ed25519') return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(m.publicKey, 'base64').toString('base64url') }, format: 'jwk' });
  return createPublicKey(m.publicKey);
}

/** ECDSA's two integers as the signature carries them. */
interface RS {
  readonly r: bigint;
  readonly s: bigint;
}

const unsigned = (b: Buffer) => (b.length === 0 ? 0n : BigInt(`0x${b.toString('hex')}`));

/** Vault's JWS parse: the first half of the bytes is r, the rest s (unsigned), whatever the length. */
function splitJws(sig: Buffer): RS {
  const half = Math.floor(sig.length / 2);
  return { r: unsigned(sig.subarray(0, half)), s: unsigned(sig.subarray(half)) };
}

const INVALID_DER = 'supplied signature is invalid';

/** One DER TLV at `at` with Go's encoding/asn1 strictness (definite, minimal lengths). */
function readTlv(b: Buffer, at: number): { tag: number; start: number; end: number } {
  if (at + 2 > b.length) throw new InvalidRequest(INVALID_DER);
  const tag = b[at] as number;
  let len = b[at + 1] as number;
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || start + n > b.length) throw new InvalidRequest(INVALID_DER);
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (b[start + i] as number);
    start += n;
    if (len < 0x80 || (b[at + 2] as number) === 0) throw new InvalidRequest(INVALID_DER);
  }
  if (start + len > b.length) throw new InvalidRequest(INVALID_DER);
  return { tag, start, end: start + len };
}

/** A minimally encoded two's-complement INTEGER, as Go's asn1 insists. */
function readInteger(b: Buffer, at: number): { value: bigint; end: number } {
  const t = readTlv(b, at);
  const v = b.subarray(t.start, t.end);
  const minimal = v.length > 0 && !(v.length > 1 && ((v[0] === 0x00 && (v[1] as number) < 0x80) || (v[0] === 0xff && (v[1] as number) >= 0x80)));
  if (t.tag !== 0x02 || !minimal) throw new InvalidRequest(INVALID_DER);
  const magnitude = unsigned(v);
  const negative = ((v[0] as number) & 0x80) !== 0;
  return { value: negative ? magnitude - (1n << BigInt(v.length * 8)) : magnitude, end: t.end };
}

/** Vault's asn1.Unmarshal of SEQUENCE { r INTEGER, s INTEGER }, with its two error texts. */
function parseDerSignature(sig: Buffer): RS {
  const seq = readTlv(sig, 0);
  if (seq.tag !== 0x30) throw new InvalidRequest(INVALID_DER);
  const r = readInteger(sig, seq.start);
  const s = readInteger(sig, r.end);
  if (s.end !== seq.end) throw new InvalidRequest(INVALID_DER);
  if (seq.end !== sig.length) throw new InvalidRequest('supplied signature contains extra data');
  return { r: r.value, s: s.value };
}

/** r||s each left-padded to the curve's size; undefined where Go's ecdsa.Verify is false anyway (not positive, or too long). */
function toP1363(rs: RS, size: number): Buffer | undefined {
  const limit = 1n << BigInt(size * 8);
  if (rs.r <= 0n || rs.s <= 0n || rs.r >= limit || rs.s >= limit) return undefined;
  const hex = (v: bigint) => v.toString(16).padStart(size * 2, '0');
  return Buffer.from(hex(rs.r) + hex(rs.s), 'hex');
}

function rsaPrivate(m: AsymmetricMaterial): KeyObject {
  const key = privateKeyOf(m);
  if (key.asymmetricKeyType !== 'rsa') throw new InvalidRequest('encryption not supported for the key');
  return key;
}

const OAEP = { padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' } as const;

/** RSA types: OAEP with SHA-256 and no label, as Vault's EncryptWithFactory. */
export function rsaEncrypt(m: AsymmetricMaterial, plaintext: Buffer): Buffer {
  const key = createPublicKey(rsaPrivate(m));
  const k = Math.ceil((key.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
  // RFC 8017's bound, Go's ErrMessageTooLong: k - 2*hLen - 2.
  if (plaintext.length > k - 2 * 32 - 2) throw new InvalidRequest('failed to RSA encrypt the plaintext: crypto/rsa: message too long for RSA key size');
  return publicEncrypt({ key, ...OAEP }, plaintext);
}

/** RSA types: OAEP's inverse; any failure is Go's one `decryption error`, nothing of the plaintext. */
export function rsaDecrypt(m: AsymmetricMaterial, ciphertext: Buffer): Buffer {
  const key = rsaPrivate(m);
  try {
    return privateDecrypt({ key, ...OAEP }, ciphertext);
  } catch {
    throw new InvalidRequest('failed to RSA decrypt the ciphertext: crypto/rsa: decryption error');
  }
}

const EXPORT_TYPES = ['encryption-key', 'signing-key', 'public-key'];
const EXPORT_FORMATS = ['', 'raw', 'der', 'pem'];

/**
 * Vault's export of one version (path_export.go's getExportKey): exportType 'encryption-key' (RSA
 * only), 'signing-key' or 'public-key'; `format` is export's '' (default), 'raw', 'der' or 'pem'.
 * Byte for byte Vault's string, trailing newline or not as Go leaves it: RSA's PEM keeps
 * pem.EncodeToMemory's newline, ECDSA's and ed25519's are trimmed.
 */
export function exportAsymmetric(type: AsymmetricType, m: AsymmetricMaterial, exportType: string, format = ''): string {
  if (!EXPORT_TYPES.includes(exportType)) throw new InvalidRequest(`invalid export type: ${exportType}`);
  if (!EXPORT_FORMATS.includes(format)) throw new InvalidRequest(`invalid format: ${format}`);
  if (exportType === 'encryption-key' && !isRsa(type)) throw new InvalidRequest('encryption not supported for the key');
  const key = privateKeyOf(m);
  const pub = createPublicKey(key);
  const pkcs8 = () => key.export({ type: 'pkcs8', format: 'der' });
  if (type === 'ed25519') {
    const raw = exportType === 'public-key' ? rawEd25519Public(pub) : ed25519GoKey(m);
    if (format === '' || format === 'raw') return raw.toString('base64');
    const der = exportType === 'public-key' ? spki(pub) : pkcs8();
    return format === 'der' ? der.toString('base64') : pem(exportType === 'public-key' ? 'PUBLIC KEY' : 'PRIVATE KEY', der).trim();
  }
  if (format === 'raw') throw new InvalidRequest(`unknown key format for ${isRsa(type) ? 'rsa' : 'ec'} key; supported values are \`\`, \`der\`, or \`pem\``);
  if (exportType === 'public-key') {
    if (format === 'der') return spki(pub).toString('base64');
    const text = pem('PUBLIC KEY', spki(pub));
    return isRsa(type) ? text : text.trim();
  }
  if (format === 'der') return pkcs8().toString('base64');
  const text =
    format === 'pem'
      ? pem('PRIVATE KEY', pkcs8())
      : isRsa(type)
        ? pem('RSA PRIVATE KEY', key.export({ type: 'pkcs1', format: 'der' }))
        : pem('EC PRIVATE KEY', key.export({ type: 'sec1', format: 'der' }));
  return isRsa(type) ? text : text.trim();
}
