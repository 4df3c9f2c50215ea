/**
 * The shape of service tokens and of the one-time-password encoding Vault uses for generated root
 * (here: DR operation) tokens, shared by the token store, DR operation tokens and the CLI.
 *
 *   const t = newServiceToken(randomBytes);          // 'hvs.' + 24 base62 characters
 *   decodeOtp(encodeWithOtp(t, otp), otp) === t;     // what `-decode -otp` does
 */
import { InvalidRequest } from './errors.js';

export type Random = (n: number) => Buffer;

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

/** `hvs.` + 24 base62 characters (about 143 random bits). */
export function newServiceToken(random: Random): string {
  return TOKEN_PREFIX + randomBase62(TOKEN_RANDOM_LENGTH, random);
}

/** Refuses an OTP that cannot mask a token byte for byte. */
export function checkOtp(otp: string): void {
  const length = Buffer.byteLength(otp, 'utf8');
  if (length !== OTP_LENGTH) throw new InvalidRequest(`otp must be ${OTP_LENGTH} characters long, got ${length}`);
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
  if (bytes.length !== OTP_LENGTH) throw new InvalidRequest(`encoded token decodes to ${bytes.length} bytes, the otp has ${OTP_LENGTH}`);
  return xor(bytes, Buffer.from(otp, 'utf8')).toString('utf8');
}

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = (a[i] as number) ^ (b[i] as number);
  return out;
}
