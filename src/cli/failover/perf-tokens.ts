/**
 * The tokens `operator dr failover` uses on performance secondaries. Their tokens are local (each
 * secondary has its own), so `-perf-token` is given once per secondary, naming its API address as
 * given to `-perf-secondary`; a `-perf-token` without an address (the old single form) is the
 * token of every secondary that has none of its own.
 *
 *   const t = parsePerfTokens(['http://10.0.0.7:8200=hvs.A', 'hvs.B'], ['http://10.0.0.7:8200', 'http://10.0.0.8:8200']);
 *   perfTokenFor(t, 'http://10.0.0.7:8200');   // 'hvs.A'
 *   perfTokenFor(t, 'http://10.0.0.8:8200');   // 'hvs.B' (the one without an address)
 *
 * Mistakes are usage errors (exit 2) found before anything is sent: an address that is not a
 * -perf-secondary, two tokens for one address, two tokens without an address, an empty token.
 */
import { UsageError } from '../errors.js';

export interface PerfTokens {
  /** By API address (trailing '/' dropped). */
  readonly byAddress: ReadonlyMap<string, string>;
  /** The token of every secondary without its own; undefined: the caller's default. */
  readonly fallback?: string;
}

const addressKey = (addr: string): string => addr.trim().replace(/\/+$/, '');

/** `<http(s)://address>=<token>` → [address, token]; anything else is a token without an address. */
function split(value: string): [string | undefined, string] {
  const m = /^(https?:\/\/[^=\s]+)=(.*)$/i.exec(value.trim());
  return m ? [addressKey(m[1]!), m[2]!.trim()] : [undefined, value.trim()];
}

export function parsePerfTokens(values: readonly string[], secondaries: readonly string[]): PerfTokens {
  const known = new Set(secondaries.map(addressKey));
  const byAddress = new Map<string, string>();
  let fallback: string | undefined;
  for (const value of values) {
    const [addr, token] = split(value);
    if (token === '') throw new UsageError(`-perf-token${addr !== undefined ? ` for ${addr}` : ''} is empty`);
    if (addr === undefined) {
      if (fallback !== undefined) {
        throw new UsageError('-perf-token without an address may be given once; give each performance secondary its own: -perf-token=<its -perf-secondary address>=<token>');
      }
      fallback = token;
      continue;
    }
    if (!known.has(addr)) throw new UsageError(`-perf-token names ${addr}, which is not a -perf-secondary (given: ${[...known].join(', ') || 'none'})`);
    if (byAddress.has(addr)) throw new UsageError(`-perf-token is given twice for ${addr}`);
    byAddress.set(addr, token);
  }
  return fallback !== undefined ? { byAddress, fallback } : { byAddress };
}

/** The token for the secondary at `addr`: its own, else the one without an address, else undefined. */
export function perfTokenFor(t: PerfTokens, addr: string): string | undefined {
  return t.byAddress.get(addressKey(addr)) ?? t.fallback;
}
