import { parseDuration } from './duration.js';
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
