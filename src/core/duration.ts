/**
 * Vault's duration inputs: `1800`, `"1800"`, `"30m"`, `"1h30m"`, `"90s"`, `"2d"` -> seconds, and
 * Go's rendering of a duration for messages that quote one.
 *
 *   parseDuration('30m') === 1800
 *   goDuration(2764800) === '768h0m0s'
 */
import { InvalidRequest } from './errors.js';

const UNIT_SECONDS: Readonly<Record<string, number>> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

/**
 * The longest duration accepted, in seconds: Go's time.Duration range (2^63-1 ns, about 292
 * years), into which Vault parses every duration. Anything longer cannot be represented there,
 * and would make expiry arithmetic leave the safe-integer range here, so it is a 400.
 */
export const MAX_DURATION_SECONDS = 9_223_372_036;

export function parseDuration(input: unknown, field = 'duration'): number {
  const seconds = parseUnbounded(input, field);
  if (seconds > MAX_DURATION_SECONDS) {
    throw new InvalidRequest(`${field}: duration out of range (at most ${MAX_DURATION_SECONDS} seconds)`);
  }
  return seconds;
}

function parseUnbounded(input: unknown, field: string): number {
  if (typeof input === 'number') {
    if (Number.isFinite(input) && input >= 0) return Math.floor(input);
    throw new InvalidRequest(`${field}: must be a non-negative duration`);
  }
  if (typeof input !== 'string') throw new InvalidRequest(`${field}: expected a duration such as "30m" or 1800`);
  const s = input.trim();
  if (s === '') return 0;
  if (/^\d+$/.test(s)) return Number(s);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    total += Number(m[1]) * (UNIT_SECONDS[m[2] ?? 's'] ?? 1);
    matched = re.lastIndex;
  }
  if (matched !== s.length || matched === 0) {
    throw new InvalidRequest(`${field}: invalid duration "${s.slice(0, 40)}"`);
  }
  // A digit run long enough to be Infinity must still be a 400, never NaN arithmetic later.
  return Number.isFinite(total) ? Math.floor(total) : Number.POSITIVE_INFINITY;
}

/** Whole seconds as Go's Duration.String() writes them: `768h0m0s`, `1m30s`, `45s`, `0s`. */
export function goDuration(seconds: number): string {
  const total = Math.max(0, Math.floor(seconds));
  if (total === 0) return '0s';
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
