/**
 * Transit's symmetric encryption, byte for byte as Vault's keysutil (policy.go EncryptWithFactory,
 * SymmetricEncryptRaw, DecryptWithFactory): `vault:v<N>:` + base64(nonce || ciphertext || tag),
 * a 12-byte random nonce (AES-GCM and ChaCha20-Poly1305), derived keys by HKDF-SHA256 (the
 * version's key, no salt, the context as info), and convergent version 3 (the nonce is the first 12
 * bytes of HMAC-SHA256 of the plaintext under the derived key's second half).
 *
 *   const ct = encryptValue(policy, { plaintext, context, version: 0 });   // 'vault:v1:...'
 *   const pt = decryptValue(policy, { ciphertext: ct, context });          // Buffer
 */
import { createCipheriv, createDecipheriv, createHmac, randomFillSync, type CipherGCMTypes } from 'node:crypto';
import { InvalidRequest } from '../../core/errors.js';
import { splitVersioned, versioned } from './batch.js';
import { strictBase64 } from './fields.js';
import { hkdfSha256 } from './kdf.js';
import { CONVERGENT_VERSION, KDF_HKDF_SHA256, encryptionVersion, isSymmetric, versionOf, type KeyPolicy } from './policy.js';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Random nonces from one CSPRNG fill of 4 KiB, as node's randomUUID keeps its entropy: one
 * randomFillSync per 341 encryptions instead of one each (~4.5 us apiece on the hot path). Each
 * 12 bytes are handed out once, as a copy (a refill overwrites the pool).
 */
const noncePool = Buffer.alloc(NONCE_BYTES * 341);
let nonceAt = noncePool.length;

function randomNonce(): Buffer {
  if (nonceAt === noncePool.length) {
    randomFillSync(noncePool);
    nonceAt = 0;
  }
  const nonce = Buffer.from(noncePool.subarray(nonceAt, nonceAt + NONCE_BYTES));
  nonceAt += NONCE_BYTES;
  return nonce;
}

/** The version's key for `context` (keysutil GetKey/DeriveKey), `bytes` long. */
export function keyFor(p: KeyPolicy, version: number, context: Buffer | undefined, bytes: number): Buffer {
  const entry = versionOf(p, version);
  const key = Buffer.from(entry.key ?? '', 'base64');
  if (!p.derived) return key;
  if (context === undefined || context.length === 0) {
    throw new InvalidRequest('missing \'context\' for key derivation; the key was created using a derived key, which means additional, per-request information must be included in order to perform operations with the key');
  }
  if (p.kdf !== KDF_HKDF_SHA256) throw new InvalidRequest('this key uses the legacy key derivation mode (hmac-sha256-counter), which this node does not implement');
  return hkdfSha256(key, context, bytes);
}

function convergentVersionOf(p: KeyPolicy, version: number): number {
  if (!p.convergent_encryption) return 0;
  return p.keys[String(version)]?.convergent_version || (p.convergent_version > 0 ? p.convergent_version : 1);
}

const encKeyBytes = (p: KeyPolicy): number => (p.type === 'aes128-gcm96' ? 16 : 32);

function seal(p: KeyPolicy, key: Buffer, nonce: Buffer, plaintext: Buffer, aad: Buffer | undefined): Buffer {
  const c = p.type === 'chacha20-poly1305'
    ? createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: TAG_BYTES })
    : createCipheriv(`aes-${key.length * 8}-gcm` as CipherGCMTypes, key, nonce);
  if (aad !== undefined && aad.length > 0) c.setAAD(aad, { plaintextLength: plaintext.length });
  return Buffer.concat([nonce, c.update(plaintext), c.final(), c.getAuthTag()]);
}

function open(p: KeyPolicy, key: Buffer, data: Buffer, aad: Buffer | undefined): Buffer {
  if (data.length < NONCE_BYTES) throw new InvalidRequest('invalid ciphertext length');
  const nonce = data.subarray(0, NONCE_BYTES);
  const body = data.subarray(NONCE_BYTES);
  // Go's AEAD Open: anything shorter than a tag, or a tag that does not verify, is the same failure.
  const failed = (): InvalidRequest => new InvalidRequest('cipher: message authentication failed');
  if (body.length < TAG_BYTES) throw failed();
  const ct = body.subarray(0, body.length - TAG_BYTES);
  const d = p.type === 'chacha20-poly1305'
    ? createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: TAG_BYTES })
    : createDecipheriv(`aes-${key.length * 8}-gcm` as CipherGCMTypes, key, nonce);
  d.setAuthTag(body.subarray(body.length - TAG_BYTES));
  if (aad !== undefined && aad.length > 0) d.setAAD(aad, { plaintextLength: ct.length });
  try {
    return Buffer.concat([d.update(ct), d.final()]);
  } catch {
    throw failed();
  }
}

export interface EncryptInput {
  readonly plaintext: Buffer;
  readonly context?: Buffer;
  /** 0: the latest. */
  readonly version: number;
  readonly associatedData?: Buffer;
  /** Vault's `nonce`: only with convergent version 1 keys, which this node never makes. */
  readonly nonce?: Buffer;
}

/** The ciphertext string and the version it used. Symmetric types only. */
export function encryptValue(p: KeyPolicy, i: EncryptInput): { ciphertext: string; version: number } {
  if (!isSymmetric(p.type)) throw new InvalidRequest(`message encryption not supported for key type ${p.type}`);
  const version = encryptionVersion(p, i.version);
  const convergent = convergentVersionOf(p, version);
  if (i.nonce !== undefined && i.nonce.length > 0) throw new InvalidRequest('nonce provided when not allowed');
  const encBytes = encKeyBytes(p);
  if (convergent !== 0 && convergent < CONVERGENT_VERSION) {
    throw new InvalidRequest(`refusing to support decryption with old convergent encryption key: version ${convergent}`);
  }
  const key = keyFor(p, version, i.context, encBytes + (convergent === CONVERGENT_VERSION ? 32 : 0));
  const encKey = key.subarray(0, encBytes);
  const nonce = convergent === CONVERGENT_VERSION
    ? createHmac('sha256', key.subarray(encBytes)).update(i.plaintext).digest().subarray(0, NONCE_BYTES)
    : randomNonce();
  return { ciphertext: versioned(version, seal(p, encKey, nonce, i.plaintext, i.associatedData).toString('base64')), version };
}

/** `vault:v<N>:<base64>` split, checked against the policy's versions (Vault's texts). */
export function parseCiphertext(p: KeyPolicy, value: string): { version: number; data: string } {
  const split = splitVersioned(value, 'ciphertext');
  // Compatibility with Vault's first ciphertexts, whose versions started at 0.
  const version = split.version === 0 ? 1 : split.version;
  if (version > p.latest_version) throw new InvalidRequest('invalid ciphertext: version is too new');
  if (p.min_decryption_version > 0 && version < p.min_decryption_version) throw new InvalidRequest('ciphertext or signature version is disallowed by policy (too old)');
  return { version, data: split.rest };
}

export interface DecryptInput {
  readonly ciphertext: string;
  readonly context?: Buffer;
  readonly associatedData?: Buffer;
}

export function decryptValue(p: KeyPolicy, i: DecryptInput): { plaintext: Buffer; version: number } {
  if (!isSymmetric(p.type)) throw new InvalidRequest(`message decryption not supported for key type ${p.type}`);
  const { version, data } = parseCiphertext(p, i.ciphertext);
  const convergent = convergentVersionOf(p, version);
  if (p.convergent_encryption && convergent > 0 && convergent < CONVERGENT_VERSION) {
    throw new InvalidRequest(`refusing to support decryption with old convergent encryption key: version ${convergent}`);
  }
  let decoded: Buffer;
  try {
    decoded = strictBase64(data);
  } catch {
    throw new InvalidRequest('invalid ciphertext: could not decode base64');
  }
  const encBytes = encKeyBytes(p);
  const key = keyFor(p, version, i.context, encBytes);
  return { plaintext: open(p, key, decoded, i.associatedData), version };
}
