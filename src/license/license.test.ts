import fc from 'fast-check';
import { createDevLicense, signLicense } from './dev.js';
import { Feature, InvalidReason, canonicalJson, describeLicense, hasFeature, verifyLicense } from './license.js';
import type { LicenseStatus } from './license.js';

const now = new Date('2025-03-01T12:00:00.000Z');
const seed = new Uint8Array(32).fill(7);
const dev = createDevLicense({ now, ttlDays: 30, seed });
const keys = [dev.issuerPublicKey];
const secretKey = new Uint8Array(Buffer.from(dev.issuerSecretKey, 'base64'));
const other = createDevLicense({ now, seed: new Uint8Array(32).fill(9) });

function fields(): Record<string, unknown> {
  return JSON.parse(dev.licenseText) as Record<string, unknown>;
}
function reason(status: LicenseStatus): string {
  return status.valid ? 'valid' : status.reason;
}

describe('verifyLicense', () => {
  it('accepts a good license and reports its content and features', () => {
    const status = verifyLicense(dev.licenseText, keys, now);
    expect(status).toEqual({
      valid: true,
      licenseId: expect.stringMatching(/^dev-[0-9a-f]{16}$/),
      customer: 'development',
      issuedAt: new Date('2025-03-01T12:00:00Z'),
      expiresAt: new Date('2025-03-31T12:00:00Z'),
      features: ['dr-replication', 'performance-replication'],
    });
    expect(hasFeature(status, Feature.drReplication)).toBe(true);
    expect(hasFeature(status, Feature.performanceReplication)).toBe(true);
    expect(describeLicense(status)).toContain('valid until 2025-03-31T12:00:00.000Z');
  });

  it('grants only the features the license lists', () => {
    const dr = createDevLicense({ now, seed, features: [Feature.drReplication] });
    const status = verifyLicense(dr.licenseText, keys, now);
    expect(hasFeature(status, Feature.drReplication)).toBe(true);
    expect(hasFeature(status, Feature.performanceReplication)).toBe(false);
  });

  it.each<[string, unknown]>([
    ['license_id', 'dev-0000000000000000'],
    ['customer', 'developmenT'],
    ['issued_at', '2025-03-01T11:59:59Z'],
    ['expires_at', '2026-03-31T12:00:00Z'],
    ['features', ['dr-replication', 'performance-replicatioN']],
    ['features', ['dr-replication']],
  ])('rejects a license whose %s was changed', (field, value) => {
    const text = JSON.stringify({ ...fields(), [field]: value });
    expect(reason(verifyLicense(text, keys, now))).toBe(InvalidReason.badSignature);
  });

  it('rejects a license with an added field or a replaced signature', () => {
    expect(reason(verifyLicense(JSON.stringify({ ...fields(), seats: 10 }), keys, now))).toBe('bad_signature');
    const foreign = JSON.parse(other.licenseText) as Record<string, unknown>;
    const swapped = JSON.stringify({ ...fields(), signature: foreign['signature'] });
    expect(reason(verifyLicense(swapped, keys, now))).toBe('bad_signature');
  });

  it('signs fields it does not know, so later fields are covered', () => {
    const text = JSON.stringify(signLicense({ ...fields(), seats: 10 }, secretKey));
    expect(verifyLicense(text, keys, now).valid).toBe(true);
  });

  it('fails when any single bit of the license file flips', () => {
    const bytes = Buffer.from(dev.licenseText, 'utf8');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: bytes.length - 1 }), fc.integer({ min: 0, max: 7 }), (index, bit) => {
        const flipped = Buffer.from(bytes);
        flipped[index] = (flipped[index] ?? 0) ^ (1 << bit);
        expect(verifyLicense(flipped.toString('utf8'), keys, now).valid).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('rejects a signature in a non-canonical base64 spelling', () => {
    const f = fields();
    const sig = String(f['signature']);
    // The last data character before '==' carries 4 unused bits; setting one keeps the bytes the same.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const last = sig.at(-3) ?? 'A';
    const tweaked = `${sig.slice(0, -3)}${alphabet[alphabet.indexOf(last) ^ 1] ?? 'B'}==`;
    expect(tweaked).not.toBe(sig);
    expect(Buffer.from(tweaked, 'base64')).toEqual(Buffer.from(sig, 'base64'));
    const status = verifyLicense(JSON.stringify({ ...f, signature: tweaked }), keys, now);
    expect(reason(status)).toBe(InvalidReason.malformed);
  });

  it('reports an expired license with its content, from the instant of expiry', () => {
    const status = verifyLicense(dev.licenseText, keys, new Date('2025-03-31T12:00:00Z'));
    expect(reason(status)).toBe(InvalidReason.expired);
    expect(!status.valid && status.license?.customer).toBe('development');
    expect(hasFeature(status, Feature.drReplication)).toBe(false);
    expect(verifyLicense(dev.licenseText, keys, new Date('2025-03-31T11:59:59.999Z')).valid).toBe(true);
  });

  it('reports a license that is not yet valid', () => {
    const status = verifyLicense(dev.licenseText, keys, new Date('2025-03-01T11:59:59Z'));
    expect(reason(status)).toBe(InvalidReason.notYetValid);
  });

  it('rejects a license from an issuer that is not trusted, or when no issuer is trusted', () => {
    expect(reason(verifyLicense(dev.licenseText, [other.issuerPublicKey], now))).toBe(InvalidReason.untrustedIssuer);
    expect(reason(verifyLicense(dev.licenseText, [], now))).toBe(InvalidReason.untrustedIssuer);
    expect(reason(verifyLicense(dev.licenseText, ['not-a-key'], now))).toBe(InvalidReason.untrustedIssuer);
  });

  it('tries every trusted key for a license that does not name its issuer', () => {
    const { issuer: _issuer, ...rest } = fields();
    const text = JSON.stringify(signLicense(rest, secretKey));
    expect(verifyLicense(text, [other.issuerPublicKey, dev.issuerPublicKey], now).valid).toBe(true);
    expect(reason(verifyLicense(text, [other.issuerPublicKey], now))).toBe(InvalidReason.badSignature);
  });

  it.each<[string, string | undefined, string]>([
    ['no text', undefined, InvalidReason.missing],
    ['blank text', ' \n', InvalidReason.missing],
    ['invalid JSON', '{"license_id": ', InvalidReason.malformed],
    ['a JSON array', '[]', InvalidReason.malformed],
    ['a date that is not RFC 3339', JSON.stringify({ ...fields(), expires_at: '31/03/2025' }), InvalidReason.malformed],
    ['a missing field', JSON.stringify({ ...fields(), customer: undefined }), InvalidReason.malformed],
    ['a short signature', JSON.stringify({ ...fields(), signature: 'AAAA' }), InvalidReason.malformed],
  ])('classifies %s', (_label, text, expected) => {
    expect(reason(verifyLicense(text, keys, now))).toBe(expected);
  });

  it('names the invalid fields of a malformed license', () => {
    const status = verifyLicense(JSON.stringify({ ...fields(), customer: 3, features: 'all' }), keys, now);
    expect(!status.valid && status.detail).toMatch(/customer, features/);
  });

  it('rejects a signed license that expires before it is issued', () => {
    const f = { ...fields(), expires_at: '2025-02-01T00:00:00Z' };
    expect(reason(verifyLicense(JSON.stringify(signLicense(f, secretKey)), keys, now))).toBe(InvalidReason.malformed);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth, keeps array order and drops whitespace', () => {
    expect(canonicalJson({ b: [{ z: 1, a: 'x' }, 2], a: { d: null, c: true } })).toBe(
      '{"a":{"c":true,"d":null},"b":[{"a":"x","z":1},2]}',
    );
  });
});

describe('createDevLicense', () => {
  it('derives the same issuer key from the same seed and a fresh one otherwise', () => {
    expect(createDevLicense({ now, seed }).issuerPublicKey).toBe(dev.issuerPublicKey);
    expect(createDevLicense({ now }).issuerPublicKey).not.toBe(createDevLicense({ now }).issuerPublicKey);
  });

  it('defaults to a year with every feature', () => {
    const status = verifyLicense(createDevLicense({ now, seed }).licenseText, keys, now);
    expect(status.valid && status.expiresAt).toEqual(new Date('2026-03-01T12:00:00Z'));
    expect(status.valid && status.features).toEqual(Object.values(Feature));
  });
});
