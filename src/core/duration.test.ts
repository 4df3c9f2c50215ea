import { goDuration, parseDuration } from './duration.js';
import { InvalidRequest } from './errors.js';

describe('parseDuration', () => {
  it.each([
    [1800, 1800],
    ['1800', 1800],
    ['30m', 1800],
    ['1h30m', 5400],
    ['90s', 90],
    ['2d', 172800],
    ['', 0],
  ])('%p -> %p seconds', (input, want) => {
    expect(parseDuration(input)).toBe(want);
  });

  it.each([['30x'], ['-5'], ['m'], [true], [-1], ['1h 2m']])('rejects %p with a typed error', (input) => {
    expect(() => parseDuration(input, 'ttl')).toThrow(InvalidRequest);
  });
});

describe('parseDuration bounds', () => {
  it.each([['99999999999999h'], [1e300], ['9'.repeat(400) + 's'], ['9223372037']])('answers %p, which Go cannot represent, with a 400', (input) => {
    expect(() => parseDuration(input, 'ttl')).toThrow(InvalidRequest);
  });

  it('accepts the longest representable duration', () => {
    expect(parseDuration('9223372036')).toBe(9_223_372_036);
    expect(parseDuration('2562047h')).toBe(2562047 * 3600);
  });
});

describe('goDuration', () => {
  it.each([
    [2764800, '768h0m0s'],
    [90, '1m30s'],
    [45, '45s'],
    [0, '0s'],
    [3601, '1h0m1s'],
  ])('%p seconds -> %p', (seconds, want) => {
    expect(goDuration(seconds)).toBe(want);
  });
});
