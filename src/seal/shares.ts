/**
 * Shamir shares of the root key (shamir-secret-sharing: a share is the secret's length plus one
 * byte, the x coordinate last, as Vault lays them out) and the text forms operators type.
 *
 *   validateShareConfig(5, 3);
 *   const shares = await splitRootKey(rootKey, 5, 3);          // five 33-byte shares
 *   const key = await combineShares([s4, s1, s2]);             // ANY result: verify it yourself
 *   decodeShare('9f0c...') / decodeShare('nwx...=')           // hex, or base64 std/url
 *
 * combineShares never knows whether it got enough shares: with fewer than the threshold it returns
 * a wrong key without complaint. Callers must verify the result (SealManager opens the keyring).
 */
import { timingSafeEqual } from 'node:crypto';
import { combine, split } from 'shamir-secret-sharing';
import { InvalidRequest } from '../core/errors.js';

export const MAX_SHARES = 255;

/** Vault's SealConfig rules, with its wording. */
export function validateShareConfig(shares: number, threshold: number): void {
  if (!Number.isInteger(shares)) throw new InvalidRequest('shares must be an integer');
  if (!Number.isInteger(threshold)) throw new InvalidRequest('threshold must be an integer');
  if (shares < 1) throw new InvalidRequest('shares must be at least one');
  if (threshold < 1) throw new InvalidRequest('threshold must be at least one');
  if (shares > 1 && threshold === 1) {
    throw new InvalidRequest('threshold must be greater than one for multiple shares');
  }
  if (shares > MAX_SHARES) throw new InvalidRequest('shares must be less than 256');
  if (threshold > MAX_SHARES) throw new InvalidRequest('threshold must be less than 256');
  if (threshold > shares) throw new InvalidRequest('threshold cannot be larger than shares');
}

/** Byte length of one share of a `secretLength`-byte secret under `threshold`. */
export function shareLength(secretLength: number, threshold: number): number {
  // With a threshold of one there is no split: the single key is the secret itself (as Vault).
  return threshold === 1 ? secretLength : secretLength + 1;
}

/** For shares = threshold = 1 the single share is a copy of the key itself, as in Vault. */
export async function splitRootKey(rootKey: Buffer, shares: number, threshold: number): Promise<Buffer[]> {
  validateShareConfig(shares, threshold);
  if (shares === 1) return [Buffer.from(rootKey)];
  // The library checks `constructor === Uint8Array`, which a Buffer fails: pass a plain view.
  const parts = await split(new Uint8Array(rootKey), shares, threshold);
  return parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength));
}

/**
 * Interpolates the secret from `shares` (one share: returned as is). Shares of unequal length or
 * with a repeated x coordinate are InvalidRequest. The result is unverified (see above).
 */
export async function combineShares(shares: readonly Buffer[]): Promise<Buffer> {
  const [first] = shares;
  if (first === undefined) throw new InvalidRequest('no shares to combine');
  if (shares.length === 1) return Buffer.from(first);
  if (shares.length > MAX_SHARES) throw new InvalidRequest('too many shares');
  if (shares.some((s) => s.length !== first.length)) throw new InvalidRequest('shares differ in length');
  if (first.length < 2) throw new InvalidRequest('shares are too short');
  const xs = new Set(shares.map((s) => s[s.length - 1]));
  if (xs.size !== shares.length) throw new InvalidRequest('two shares have the same x coordinate');
  const secret = await combine(shares.map((s) => new Uint8Array(s)));
  return Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength);
}

/** True when the two shares are byte-identical; constant time for equal lengths. */
export function sameShare(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64_STD = /^[A-Za-z0-9+/]+={0,2}$/;
const BASE64_URL = /^[A-Za-z0-9_-]+={0,2}$/;

/**
 * A share as typed by an operator: hex (tried first, as Vault does), else base64 in the standard
 * or URL alphabet, padded or not. Surrounding whitespace is ignored. Anything else, including
 * base64 with stray bits or wrong padding, is InvalidRequest.
 */
export function decodeShare(text: string): Buffer {
  const s = text.trim();
  if (s === '') throw new InvalidRequest('share is empty');
  if (HEX.test(s)) return Buffer.from(s, 'hex');
  const alphabet = BASE64_STD.test(s) ? 'base64' : BASE64_URL.test(s) ? 'base64url' : undefined;
  if (alphabet === undefined) throw new InvalidRequest('share must be a valid hex or base64 string');
  const body = s.replace(/=+$/, '');
  const padded = body.length !== s.length;
  if (body.length % 4 === 1 || (padded && s.length % 4 !== 0)) {
    throw new InvalidRequest('share has an invalid base64 length or padding');
  }
  const bytes = Buffer.from(body, alphabet);
  // Canonical form only: rejects leftover bits that a lenient decoder would silently drop.
  if (bytes.toString(alphabet).replace(/=+$/, '') !== body) {
    throw new InvalidRequest('share is not canonical base64');
  }
  return bytes;
}
