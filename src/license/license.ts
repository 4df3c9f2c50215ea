/**
 * Enterprise license verification: a JSON document signed with Ed25519 by a trusted issuer.
 *
 *   const status = verifyLicense(text, config.licenseIssuerKeys, new Date());
 *   if (!hasFeature(status, Feature.drReplication)) throw new LicenseRequired('dr-replication', describeLicense(status));
 *
 * Format: {"license_id", "customer", "issued_at", "expires_at" (RFC 3339), "features": [...],
 * "issuer"?: base64 public key, "signature": base64}. The signature covers the canonical JSON of
 * every other field (keys sorted at every depth, no whitespace), so fields added later are
 * signed too. `issuer` is optional; when present it names which trusted key must have signed.
 */
import nacl from 'tweetnacl';
import { z } from 'zod';

export const Feature = {
  drReplication: 'dr-replication',
  performanceReplication: 'performance-replication',
} as const;
export type Feature = (typeof Feature)[keyof typeof Feature];

export const InvalidReason = {
  missing: 'missing',
  malformed: 'malformed',
  badSignature: 'bad_signature',
  untrustedIssuer: 'untrusted_issuer',
  expired: 'expired',
  notYetValid: 'not_yet_valid',
} as const;
export type InvalidReason = (typeof InvalidReason)[keyof typeof InvalidReason];

/** The signed content of a license whose signature checked out. */
export interface LicenseInfo {
  readonly licenseId: string;
  readonly customer: string;
  readonly issuedAt: Date;
  readonly expiresAt: Date;
  /** As signed, including names this version does not know. */
  readonly features: readonly string[];
}

export type LicenseStatus =
  | ({ readonly valid: true } & LicenseInfo)
  | {
      readonly valid: false;
      readonly reason: InvalidReason;
      /** A sentence for operators; never contains key material. */
      readonly detail: string;
      /** Present when the signature verified but the time window did not (expired, not yet valid). */
      readonly license?: LicenseInfo;
    };

const rfc3339 = z.iso.datetime({ offset: true });

const licenseSchema = z.looseObject({
  license_id: z.string().min(1),
  customer: z.string().min(1),
  issued_at: rfc3339,
  expires_at: rfc3339,
  features: z.array(z.string()),
  issuer: z.string().optional(),
  signature: z.string(),
});
export type LicenseDocument = z.infer<typeof licenseSchema>;

/** JSON with object keys sorted at every depth and no whitespace: the bytes that get signed. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The message an issuer signs: the canonical JSON of every field except `signature`. */
export function signingBytes(fields: Readonly<Record<string, unknown>>): Uint8Array {
  const { signature: _omit, ...rest } = fields;
  return new TextEncoder().encode(canonicalJson(rest));
}

/**
 * Decodes base64 only in its canonical form (padded, no stray characters, zero unused bits), so
 * no two texts decode to the same bytes; undefined when it is not exactly `length` bytes.
 */
export function decodeBase64Exact(text: string, length: number): Uint8Array | undefined {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== length || bytes.toString('base64') !== text) return undefined;
  return new Uint8Array(bytes);
}

/** A base64 Ed25519 public key (32 bytes), or undefined if `text` is not one. */
export function parseIssuerKey(text: string): Uint8Array | undefined {
  return decodeBase64Exact(text, nacl.sign.publicKeyLength);
}

/**
 * Checks structure, then issuer trust and signature, then the validity window at `now`.
 * Issuer keys that are not valid base64 public keys are ignored (the config loader rejects them).
 */
export function verifyLicense(text: string | undefined, issuerKeysB64: readonly string[], now: Date): LicenseStatus {
  const invalid = (reason: InvalidReason, detail: string, license?: LicenseInfo): LicenseStatus =>
    license === undefined ? { valid: false, reason, detail } : { valid: false, reason, detail, license };

  if (text === undefined || text.trim() === '') return invalid(InvalidReason.missing, 'no license was provided');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return invalid(InvalidReason.malformed, 'the license is not valid JSON');
  }
  const parsed = licenseSchema.safeParse(raw);
  if (!parsed.success) {
    const where = parsed.error.issues.map((i) => i.path.join('.') || '(document)');
    return invalid(InvalidReason.malformed, `the license has missing or invalid fields: ${[...new Set(where)].join(', ')}`);
  }
  const doc = parsed.data;
  const signature = decodeBase64Exact(doc.signature, nacl.sign.signatureLength);
  if (signature === undefined) return invalid(InvalidReason.malformed, 'the signature is not a base64 Ed25519 signature');
  const info: LicenseInfo = {
    licenseId: doc.license_id,
    customer: doc.customer,
    issuedAt: new Date(doc.issued_at),
    expiresAt: new Date(doc.expires_at),
    features: Object.freeze([...doc.features]),
  };
  if (info.expiresAt.getTime() <= info.issuedAt.getTime()) {
    return invalid(InvalidReason.malformed, 'expires_at is not after issued_at');
  }

  const trusted = issuerKeysB64.filter((k) => parseIssuerKey(k) !== undefined);
  if (doc.issuer !== undefined && !trusted.includes(doc.issuer)) {
    return invalid(InvalidReason.untrustedIssuer, 'the license was issued by a key this node does not trust');
  }
  const candidates = doc.issuer !== undefined ? [doc.issuer] : trusted;
  if (candidates.length === 0) return invalid(InvalidReason.untrustedIssuer, 'no trusted license issuer keys are configured');
  const message = signingBytes(raw as Record<string, unknown>);
  const signed = candidates.some((k) => nacl.sign.detached.verify(message, signature, parseIssuerKey(k) as Uint8Array));
  if (!signed) return invalid(InvalidReason.badSignature, 'the license signature does not verify');

  if (now.getTime() < info.issuedAt.getTime()) {
    return invalid(InvalidReason.notYetValid, `the license is valid from ${doc.issued_at}`, info);
  }
  if (now.getTime() >= info.expiresAt.getTime()) {
    return invalid(InvalidReason.expired, `the license expired at ${doc.expires_at}`, info);
  }
  return { valid: true, ...info };
}

export function hasFeature(status: LicenseStatus, feature: Feature): boolean {
  return status.valid && status.features.includes(feature);
}

/** Why a feature is unavailable, for LicenseRequired and status endpoints. */
export function describeLicense(status: LicenseStatus): string {
  return status.valid ? `license ${status.licenseId} is valid until ${status.expiresAt.toISOString()}` : status.detail;
}
