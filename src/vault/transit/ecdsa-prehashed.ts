/**
 * ECDSA over a digest the client computed (Vault's `prehashed=true` for ECDSA keys). node:crypto
 * always hashes what it signs, so these sign and verify the given bytes with @noble/curves
 * (audited, no dependencies of its own), as Go's ecdsa.Sign and ecdsa.Verify treat a hash: the
 * input, of any length, read as the curve order's leftmost bits (Go's hashToInt and noble's
 * bits2int agree). Go never normalizes s, so neither does signing here, and verifying takes both.
 * Signatures are deterministic (RFC 6979); Go's are randomized: each verifies the other's.
 *
 *   const der = signDigest('ecdsa-p256', privateKey, digest, 'der');
 *   verifyDigest('ecdsa-p256', publicKey, digest, rs);   // rs: r||s, each the curve's size
 */
import type { KeyObject } from 'node:crypto';
import { p256, p384, p521 } from '@noble/curves/nist.js';
import { InvalidRequest } from '../../core/errors.js';

const CURVES = { 'ecdsa-p256': p256, 'ecdsa-p384': p384, 'ecdsa-p521': p521 } as const;
export type PrehashedCurve = keyof typeof CURVES;

/** noble's bound on what it reads as a hash (its bits2int). */
const MAX_DIGEST_BYTES = 8192;

const jwkBytes = (v: string | undefined): Uint8Array => Buffer.from(v ?? '', 'base64url');

/** The signature of `digest` as DER or as r||s ('compact', what JWS carries). */
export function signDigest(type: PrehashedCurve, key: KeyObject, digest: Buffer, format: 'der' | 'compact'): Buffer {
  // noble refuses a longer input (Go would read only its first bytes); said here, before the key is touched.
  if (digest.length > MAX_DIGEST_BYTES) throw new InvalidRequest(`prehashed input is longer than ${MAX_DIGEST_BYTES} bytes`);
  const secret = jwkBytes(key.export({ format: 'jwk' }).d);
  try {
    return Buffer.from(CURVES[type].sign(digest, secret, { prehash: false, lowS: false, format }));
  } finally {
    secret.fill(0);
  }
}

/** Whether `rs` (r||s, each the curve's size) is a signature of `digest` under the public key. */
export function verifyDigest(type: PrehashedCurve, key: KeyObject, digest: Buffer, rs: Buffer): boolean {
  const { x, y } = key.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([4]), jwkBytes(x), jwkBytes(y)]);
  try {
    return CURVES[type].verify(rs, digest, point, { prehash: false, lowS: false, format: 'compact' });
  } catch {
    return false;
  }
}
