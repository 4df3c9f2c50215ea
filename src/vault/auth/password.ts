/**
 * Password hashing for userpass: scrypt (node:crypto) with a random 16-byte salt, stored with its
 * parameters so they can be raised later without invalidating existing hashes. Verification is
 * constant time, and an unknown user is verified against a dummy hash so that the time of a
 * refusal does not tell whether the user exists.
 *
 *   const stored = await hashPassword('s3cret');     // 'scrypt$32768$8$1$<salt b64>$<key b64>'
 *   await verifyPassword('s3cret', stored)          // true
 *   await verifyPassword('x', undefined)            // false, after the same work
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 32768;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
/** scrypt needs 128 * N * r bytes (32 MiB here); Node's default ceiling is exactly that, so raise it. */
const MAX_MEM = 64 * 1024 * 1024;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_LENGTH, { N: n, r, p, maxmem: MAX_MEM }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Made once per process: what an unknown user's password is checked against. */
let dummy: Promise<string> | undefined;

/** True when `password` matches `stored`; false for a missing or malformed `stored`, after equal work. */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  const parsed = parse(stored);
  if (parsed === undefined) {
    dummy ??= hashPassword(randomBytes(16).toString('hex'));
    const d = parse(await dummy);
    if (d !== undefined) timingSafeEqual(await derive(password, d.salt, d.n, d.r, d.p), d.key);
    return false;
  }
  const key = await derive(password, parsed.salt, parsed.n, parsed.r, parsed.p);
  return key.length === parsed.key.length && timingSafeEqual(key, parsed.key);
}

function parse(stored: string | undefined): { n: number; r: number; p: number; salt: Buffer; key: Buffer } | undefined {
  const parts = stored?.split('$');
  if (parts === undefined || parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [n, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (![n, r, p].every((x) => Number.isSafeInteger(x) && x > 0) || 128 * n * r > MAX_MEM || p > 16) return undefined;
  const key = Buffer.from(parts[5] ?? '', 'base64');
  if (key.length !== KEY_LENGTH) return undefined;
  return { n, r, p, salt: Buffer.from(parts[4] ?? '', 'base64'), key };
}
