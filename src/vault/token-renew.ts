/**
 * The rules of a token renewal (`auth/token/renew`, `renew-self`, `renew-accessor`) as a pure
 * function, after Vault's `ExpirationManager.RenewToken` and `framework.CalculateTTL`:
 *
 *   const r = renewal(entry, 3600, Date.now(), DEFAULT_TTL_LIMITS, null);
 *   r.expire_time; r.ttl; r.warnings;     // InvalidRequest (Vault's words) if it cannot renew
 *
 * - a batch token: "batch tokens cannot be renewed"; a token without expiry (root) or created
 *   non-renewable: "lease is not renewable";
 * - a periodic token (period > 0) gets its period again (capped at the maximum TTL), bounded only by
 *   an explicit max TTL counted from its creation;
 * - any other token gets the increment, or else its creation TTL, bounded by the system maximum
 *   and its explicit max TTL, both counted from its creation: past that bound, "past the max TTL,
 *   cannot renew";
 * - ours besides: a child never outlives its parent (`parentExpire`), as at creation, since a
 *   parent's expiry is what revokes its tree here.
 */
import { goDuration } from '../core/duration.js';
import { InvalidRequest } from '../core/errors.js';
import type { TtlLimits } from './token-create.js';
import type { TokenEntry } from './token-entry.js';

export interface Renewal {
  /** Seconds granted from now (what the answer's `lease_duration` says). */
  readonly ttl: number;
  /** Unix seconds. */
  readonly expire_time: number;
  readonly warnings: readonly string[];
}

export function renewal(entry: TokenEntry, increment: number, nowMs: number, limits: TtlLimits, parentExpire: number | null): Renewal {
  if (entry.type === 'batch') throw new InvalidRequest('batch tokens cannot be renewed');
  if (entry.expire_time === null || !entry.renewable) throw new InvalidRequest('lease is not renewable');
  const now = Math.floor(nowMs / 1000);
  if (entry.expire_time <= now) throw new InvalidRequest('lease expired');
  const warnings: string[] = [];
  let maxTtl = limits.maxTtl;
  if (entry.explicit_max_ttl > 0 && entry.explicit_max_ttl < maxTtl) maxTtl = entry.explicit_max_ttl;
  const period = entry.period ?? 0;
  let ttl: number;
  let maxValid: number | null;
  if (period > 0) {
    ttl = period;
    if (ttl > maxTtl) {
      warnings.push(`period of "${goDuration(ttl)}" exceeded the effective max_ttl of "${goDuration(maxTtl)}"; period value is capped accordingly`);
      ttl = maxTtl;
    }
    maxValid = entry.explicit_max_ttl > 0 ? entry.creation_time + entry.explicit_max_ttl : null;
  } else {
    ttl = increment > 0 ? increment : entry.ttl > 0 ? entry.ttl : limits.defaultTtl;
    maxValid = entry.creation_time + maxTtl;
  }
  if (maxValid !== null) {
    const left = maxValid - now;
    if (left <= 0) throw new InvalidRequest('past the max TTL, cannot renew');
    if (ttl > left) {
      warnings.push(`TTL of "${goDuration(ttl)}" exceeded the effective max_ttl of "${goDuration(left)}"; TTL value is capped accordingly`);
      ttl = left;
    }
  }
  if (parentExpire !== null && now + ttl > parentExpire) {
    if (parentExpire <= now) throw new InvalidRequest('lease expired');
    ttl = parentExpire - now;
  }
  return { ttl, expire_time: now + ttl, warnings };
}
