/**
 * How a freshly generated token (a root token, or a DR operation token) leaves the node, in the
 * wire form of Vault's `sys/generate-root` (WIRE.md section 5): XOR with a one-time password and
 * base64 without padding, or an OpenPGP message to an operator's public key, base64.
 *
 *   const otp = randomBase62(OTP_LENGTH, randomBytes);
 *   const encoded = encodeWithOtp(token, otp);
 *   decodeOtp(encoded, otp) === token;                           // what `-decode -otp` does
 *   const { fingerprint } = await readPgpKey(pgpKeyB64);         // InvalidRequest when unusable
 *   const encodedPgp = await encryptToPgpKey(pgpKeyB64, token);  // `base64 -d | gpg -d` reads it
 */
import { createMessage, encrypt, readKey, type Key } from 'openpgp';
import { InvalidRequest } from '../core/errors.js';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export { OTP_LENGTH, TOKEN_PREFIX, TOKEN_RANDOM_LENGTH, checkOtp, decodeOtp, encodeWithOtp, randomBase62, newServiceToken as newToken } from '../core/token-format.js';

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
