/**
 * Development licenses: a fresh issuer key pair and a license it signed, for `server -dev`, tests
 * and local clusters. Production licenses come from an issuer whose secret key never sees a node.
 *
 *   const dev = createDevLicense({ now: new Date() });
 *   verifyLicense(dev.licenseText, [dev.issuerPublicKey], new Date()).valid; // true
 */
import nacl from 'tweetnacl';
import { Feature, signingBytes } from './license.js';

export interface DevLicenseOptions {
  readonly now: Date;
  /** Days from `now` until the license expires; 365 unless given. */
  readonly ttlDays?: number;
  /** Every feature unless given. */
  readonly features?: readonly string[];
  /** 32 bytes for a reproducible issuer key; random unless given. */
  readonly seed?: Uint8Array;
  readonly customer?: string;
}

export interface DevLicense {
  /** The license file's contents (pretty JSON, newline-terminated). */
  readonly licenseText: string;
  /** Base64 Ed25519 public key, for `license_issuer_keys`. */
  readonly issuerPublicKey: string;
  /** Base64 64-byte tweetnacl secret key; keep it only to sign more test licenses. */
  readonly issuerSecretKey: string;
}

const dayMs = 86_400_000;

export function createDevLicense(opts: DevLicenseOptions): DevLicense {
  const keys = opts.seed === undefined ? nacl.sign.keyPair() : nacl.sign.keyPair.fromSeed(opts.seed);
  const issuerPublicKey = Buffer.from(keys.publicKey).toString('base64');
  const fields = {
    license_id: `dev-${Buffer.from(keys.publicKey.subarray(0, 8)).toString('hex')}`,
    customer: opts.customer ?? 'development',
    issued_at: rfc3339Seconds(opts.now),
    expires_at: rfc3339Seconds(new Date(opts.now.getTime() + (opts.ttlDays ?? 365) * dayMs)),
    features: [...(opts.features ?? Object.values(Feature))],
    issuer: issuerPublicKey,
  };
  return {
    licenseText: `${JSON.stringify(signLicense(fields, keys.secretKey), null, 2)}\n`,
    issuerPublicKey,
    issuerSecretKey: Buffer.from(keys.secretKey).toString('base64'),
  };
}

/** Returns `fields` plus a `signature` over their canonical JSON (any `signature` given is replaced). */
export function signLicense<T extends Record<string, unknown>>(
  fields: T,
  secretKey: Uint8Array,
): Omit<T, 'signature'> & { signature: string } {
  const { signature: _old, ...rest } = fields;
  const signature = nacl.sign.detached(signingBytes(rest), secretKey);
  return { ...rest, signature: Buffer.from(signature).toString('base64') };
}

/** RFC 3339 in UTC without fractional seconds, rounded down so issued_at is never after `now`. */
function rfc3339Seconds(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
