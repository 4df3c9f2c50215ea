/**
 * How a freshly issued DR operation token leaves the node, in the wire form of Vault's
 * `sys/generate-root` (WIRE.md section 5): XOR with a one-time password and base64 without
 * padding, or an OpenPGP message to an operator's public key, base64.
 *
 *   const otp = randomBase62(OTP_LENGTH, randomBytes);
 *   const encoded = encodeWithOtp(token, otp);
 *   decodeOtp(encoded, otp) === token;                           // what `-decode -otp` does
 *   const { fingerprint } = await readPgpKey(pgpKeyB64);         // InvalidRequest when unusable
 *   const encodedPgp = await encryptToPgpKey(pgpKeyB64, token);  // `base64 -d | gpg -d` reads it
 */
import { createMessage, encrypt, readKey, type Key } from 'openpgp';
import { InvalidRequest } from '../core/errors.js';
import type { Random } from '../seal/index.js';

/** Service tokens are `hvs.` plus this many base62 characters. */
export const TOKEN_RANDOM_LENGTH = 24;
export const TOKEN_PREFIX = 'hvs.';
/** A one-time password is exactly as long as the token it masks. */
export const OTP_LENGTH = TOKEN_PREFIX.length + TOKEN_RANDOM_LENGTH;

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** The largest multiple of 62 that fits a byte; bytes at or above it are redrawn to avoid bias. */
const UNBIASED_LIMIT = 62 * 4;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** `length` uniformly random base62 characters. */
export function randomBase62(length: number, random: Random): string {
  let out = '';
  while (out.length < length) {
    for (const byte of random(length - out.length + 8)) {
      if (byte < UNBIASED_LIMIT && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** A new DR operation token: `hvs.` + 24 base62 characters (about 143 random bits). */
export function newToken(random: Random): string {
  return TOKEN_PREFIX + randomBase62(TOKEN_RANDOM_LENGTH, random);
}

/** Refuses an OTP that cannot mask a token byte for byte. */
export function checkOtp(otp: string): void {
  const length = Buffer.byteLength(otp, 'utf8');
  if (length !== OTP_LENGTH) {
    throw new InvalidRequest(`otp must be ${OTP_LENGTH} characters long, got ${length}`);
  }
}

/** base64 (no padding) of token XOR otp, byte for byte; both must be OTP_LENGTH bytes. */
export function encodeWithOtp(token: string, otp: string): string {
  checkOtp(otp);
  const bytes = Buffer.from(token, 'utf8');
  if (bytes.length !== OTP_LENGTH) throw new InvalidRequest(`token must be ${OTP_LENGTH} bytes long`);
  return xor(bytes, Buffer.from(otp, 'utf8')).toString('base64').replace(/=+$/, '');
}

/** The inverse of encodeWithOtp; padded base64 is accepted too. */
export function decodeOtp(encoded: string, otp: string): string {
  checkOtp(otp);
  const text = encoded.trim();
  if (!BASE64.test(text)) throw new InvalidRequest('encoded token is not valid base64');
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== OTP_LENGTH) {
    throw new InvalidRequest(`encoded token decodes to ${bytes.length} bytes, the otp has ${OTP_LENGTH}`);
  }
  return xor(bytes, Buffer.from(otp, 'utf8')).toString('utf8');
}

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = (a[i] as number) ^ (b[i] as number);
  return out;
}

export interface PgpRecipient {
  readonly key: Key;
  /** Lowercase hex of the primary key's fingerprint, as Vault reports it. */
  readonly fingerprint: string;
}

/**
 * Reads a Vault-style `pgp_key`: base64 of a binary (unarmored) OpenPGP public key that can
 * encrypt now. Private keys are refused so that one is never sent to or kept by the node.
 */
export async function readPgpKey(pgpKeyB64: string): Promise<PgpRecipient> {
  const text = pgpKeyB64.trim();
  if (!BASE64.test(text) || text === '') throw new InvalidRequest('pgp_key must be a base64-encoded binary OpenPGP public key');
  let key: Key;
  try {
    key = await readKey({ binaryKey: Buffer.from(text, 'base64') });
  } catch (cause) {
    throw new InvalidRequest('pgp_key is not a readable binary OpenPGP public key', { cause });
  }
  if (key.isPrivate()) throw new InvalidRequest('pgp_key must be a public key, not a private key');
  try {
    await key.getEncryptionKey();
  } catch (cause) {
    throw new InvalidRequest('pgp_key has no valid encryption key (expired, revoked or sign-only)', { cause });
  }
  return { key, fingerprint: key.getFingerprint() };
}

/** base64 of a binary OpenPGP message of `plain` to the key. */
export async function encryptToPgpKey(pgpKeyB64: string, plain: string): Promise<string> {
  const { key } = await readPgpKey(pgpKeyB64);
  const message = await createMessage({ binary: new Uint8Array(Buffer.from(plain, 'utf8')) });
  const sealed = await encrypt({ message, encryptionKeys: key, format: 'binary' });
  return Buffer.from(sealed).toString('base64');
}
