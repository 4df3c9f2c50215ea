/**
 * Vault's key derivation for derived transit keys (keysutil's KDF 1): HKDF-SHA256 over the
 * version's key, no salt, the request's `context` as info. node:crypto's hkdfSync takes at most
 * 1,024 bytes of info; Go's HKDF takes any, so a longer context is derived by @noble/hashes'
 * HKDF (the same RFC 5869 construction, byte for byte).
 *
 *   const key = hkdfSha256(versionKey, context, 32);
 */
import { hkdfSync } from 'node:crypto';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';

/** node:crypto's bound on HKDF's info. */
const NODE_MAX_INFO = 1024;
const NO_SALT = Buffer.alloc(0);

export function hkdfSha256(key: Buffer, context: Buffer, bytes: number): Buffer {
  if (context.length <= NODE_MAX_INFO) return Buffer.from(hkdfSync('sha256', key, NO_SALT, context, bytes));
  return Buffer.from(hkdf(sha256, key, undefined, context, bytes));
}
