/**
 * AES-256-GCM with a 12-byte nonce and a 16-byte tag, the one primitive under the keyring and the
 * root-key-sealed keyring record. Output is ciphertext followed by the tag.
 *
 *   const sealed = gcmSeal(key, nonce, plain, aad);
 *   const plain = gcmOpen(key, nonce, sealed, aad); // throws CiphertextRejected on any mismatch
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { Internal } from '../core/errors.js';
import { CiphertextRejected, RejectReason } from './errors.js';

export const KEY_BYTES = 32;
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;

/** Source of random bytes; injected so tests can be deterministic. */
export type Random = (n: number) => Buffer;

function checkKeyAndNonce(key: Buffer, nonce: Buffer): void {
  // Wrong sizes are programming errors, never input errors: callers validate user input first.
  if (key.length !== KEY_BYTES) throw new Internal(`AES-256-GCM key must be ${KEY_BYTES} bytes`);
  if (nonce.length !== NONCE_BYTES) throw new Internal(`GCM nonce must be ${NONCE_BYTES} bytes`);
}

export function gcmSeal(key: Buffer, nonce: Buffer, plain: Buffer, aad: Buffer): Buffer {
  checkKeyAndNonce(key, nonce);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([body, cipher.getAuthTag()]);
}

export function gcmOpen(key: Buffer, nonce: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  checkKeyAndNonce(key, nonce);
  if (sealed.length < TAG_BYTES) {
    throw new CiphertextRejected(RejectReason.malformed, 'ciphertext is shorter than its tag');
  }
  const body = sealed.subarray(0, sealed.length - TAG_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  const plain = decipher.update(body);
  try {
    return Buffer.concat([plain, decipher.final()]);
  } catch (cause) {
    plain.fill(0);
    throw new CiphertextRejected(RejectReason.authentication, 'message authentication failed', { cause });
  }
}
