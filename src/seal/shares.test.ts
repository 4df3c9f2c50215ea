import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { InvalidRequest } from '../core/errors.js';
import { combineShares, decodeShare, shareLength, splitRootKey, validateShareConfig } from './shares.js';

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof InvalidRequest) return e.messages.join('; ');
    throw e;
  }
  throw new Error('expected InvalidRequest');
}

describe('validateShareConfig', () => {
  it.each([
    [0, 0, 'shares must be at least one'],
    [1, 0, 'threshold must be at least one'],
    [5, 1, 'threshold must be greater than one for multiple shares'],
    [256, 3, 'shares must be less than 256'],
    [3, 5, 'threshold cannot be larger than shares'],
    [2.5, 2, 'shares must be an integer'],
  ])('shares=%p threshold=%p -> %s', (n, t, message) => {
    expect(messageOf(() => validateShareConfig(n, t))).toBe(message);
  });

  it.each([
    [1, 1],
    [2, 2],
    [5, 3],
    [255, 255],
  ])('accepts shares=%p threshold=%p', (n, t) => {
    expect(() => validateShareConfig(n, t)).not.toThrow();
  });
});

describe('splitRootKey / combineShares', () => {
  it('recovers the key from any threshold-sized subset, in any order', async () => {
    const rootKey = randomBytes(32);
    const shares = await splitRootKey(rootKey, 5, 3);
    expect(shares).toHaveLength(5);
    for (const s of shares) expect(s.length).toBe(shareLength(32, 3));
    await fc.assert(
      fc.asyncProperty(fc.shuffledSubarray(shares, { minLength: 3, maxLength: 5 }), async (subset) => {
        expect(await combineShares(subset)).toEqual(rootKey);
      }),
      { numRuns: 40 },
    );
  });

  it('returns a WRONG key without complaint below the threshold (why callers must verify)', async () => {
    const rootKey = randomBytes(32);
    const shares = await splitRootKey(rootKey, 5, 3);
    const short = await combineShares(shares.slice(0, 2));
    expect(short.length).toBe(32);
    expect(short.equals(rootKey)).toBe(false);
  });

  it('with shares=1 the single key is the root key itself', async () => {
    const rootKey = randomBytes(32);
    const [only, ...rest] = await splitRootKey(rootKey, 1, 1);
    expect(rest).toHaveLength(0);
    expect(only).toEqual(rootKey);
    expect(await combineShares([only!])).toEqual(rootKey);
    expect(shareLength(32, 1)).toBe(32);
  });

  it('validates the configuration before splitting', async () => {
    await expect(splitRootKey(randomBytes(32), 3, 1)).rejects.toThrow(InvalidRequest);
  });

  it('refuses unequal lengths, repeated x coordinates and an empty list', async () => {
    const shares = await splitRootKey(randomBytes(32), 3, 2);
    const [a, b] = shares as [Buffer, Buffer, Buffer];
    await expect(combineShares([a, b.subarray(1)])).rejects.toThrow(InvalidRequest);
    const sameX = Buffer.from(b);
    sameX[32] = a[32]!;
    await expect(combineShares([a, sameX])).rejects.toThrow(InvalidRequest);
    await expect(combineShares([])).rejects.toThrow(InvalidRequest);
  });
});

describe('decodeShare', () => {
  const bytes = Buffer.from('fbff00107e3fc0ffee0123456789abcdef0011223344556677889900aabbccddee', 'hex');

  it('reads hex, either case', () => {
    expect(decodeShare(bytes.toString('hex'))).toEqual(bytes);
    expect(decodeShare(bytes.toString('hex').toUpperCase())).toEqual(bytes);
  });

  it('reads base64 in std and url alphabets, padded or not', () => {
    const odd = bytes.subarray(0, 31); // a length that needs padding
    for (const b of [bytes, odd]) {
      const std = b.toString('base64');
      const url = b.toString('base64url');
      expect(decodeShare(std)).toEqual(b);
      expect(decodeShare(std.replace(/=+$/, ''))).toEqual(b);
      expect(decodeShare(url)).toEqual(b);
      expect(decodeShare(url + '='.repeat((4 - (url.length % 4)) % 4))).toEqual(b);
    }
    expect(odd.toString('base64')).toMatch(/[+/]/);
    expect(odd.toString('base64url')).toMatch(/[-_]/);
  });

  it('ignores surrounding whitespace', () => {
    expect(decodeShare(`  ${bytes.toString('hex')}\n`)).toEqual(bytes);
  });

  it.each([
    ['', 'share is empty'],
    ['   ', 'share is empty'],
    ['not a share!', 'share must be a valid hex or base64 string'],
    ['ab+c-d', 'share must be a valid hex or base64 string'],
    ['abcde', 'share has an invalid base64 length or padding'],
    ['abcdef=', 'share has an invalid base64 length or padding'],
    ['QR==', 'share is not canonical base64'],
    ['abd', 'share is not canonical base64'],
  ])('refuses %p: %s', (text, message) => {
    expect(messageOf(() => decodeShare(text))).toBe(message);
  });
});
