/**
 * Vault's duration inputs: `1800`, `"1800"`, `"30m"`, `"1h30m"`, `"90s"`, `"2d"` -> seconds.
 *
 *   parseDuration('30m') === 1800
 */
import { InvalidRequest } from './errors.js';

const UNIT_SECONDS: Readonly<Record<string, number>> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

export function parseDuration(input: unknown, field = 'duration'): number {
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
  return Math.floor(total);
}
