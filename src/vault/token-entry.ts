/**
 * The stored shape of a service token and the two wire views built from it: Vault's `auth` block
 * (returned on create) and the `auth/token/lookup*` data.
 *
 *   const entry = decodeEntry(buf);                        // zod-checked; Internal if corrupt
 *   authBlock(token, entry);                               // { client_token, accessor, policies, ... }
 *   lookupData({ ...entry, hash }, now(), token);          // { id, ttl (remaining), expire_time, ... }
 */
import { z } from 'zod';
import { Internal } from '../core/errors.js';

export const ROOT_POLICY = 'root';
export const DEFAULT_POLICY = 'default';
export const WRAPPING_POLICY = 'response-wrapping';

/**
 * Whole numbers of any size. zod's `.int()` also demands the safe-integer range, which turned an
 * entry written with an absurd expiry into a 500 on every later use and revocation; size is
 * bounded when a token is minted (ttl limits), and a stored record is read as it is.
 */
const whole = z.number().refine(Number.isInteger, 'expected a whole number');
const count = whole.refine((n) => n >= 0, 'expected a non-negative number');

const entrySchema = z.object({
  accessor: z.string(),
  policies: z.array(z.string()),
  /** Seconds the token was issued for; 0 = it never expires. */
  ttl: count,
  /** Unix seconds. */
  creation_time: whole,
  /** Unix seconds, or null for a token without a TTL. */
  expire_time: whole.nullable(),
  /** Uses left; 0 = unlimited. */
  num_uses: count,
  /** Hash of the parent token, '' for an orphan. */
  parent: z.string(),
  /** '' for the root namespace, else `a/b/`. */
  namespace_path: z.string(),
  display_name: z.string(),
  meta: z.record(z.string(), z.string()).nullable(),
  orphan: z.boolean(),
  /** Stored entries are always service tokens; batch entries exist only in memory (batch-tokens.ts). */
  type: z.enum(['service', 'batch']),
  /** The path the token was created at, e.g. `auth/token/create`. */
  path: z.string(),
  explicit_max_ttl: count,
  renewable: z.boolean(),
  /** Seconds; a periodic token's every renewal sets its TTL to this (no max unless explicit). Absent = 0. */
  period: count.optional(),
  /** Unix seconds of the last renewal; absent = never renewed. */
  last_renewal_time: whole.optional(),
});

export type TokenEntry = Readonly<z.infer<typeof entrySchema>>;

/**
 * An entry as services see it: with the SHA-256 hex of its token (never the token itself). From
 * `validateForUse`, `num_uses` is what is left after that use, and -1 when that use was the last
 * one (the token is then already revoked), as Vault marks it.
 */
export type TokenEntryView = TokenEntry & { readonly hash: string };

/** Vault's `auth` object of a login or token-create response. */
export type AuthBlock = {
  readonly client_token: string;
  readonly accessor: string;
  readonly policies: readonly string[];
  readonly token_policies: readonly string[];
  readonly metadata: Readonly<Record<string, string>> | null;
  readonly lease_duration: number;
  readonly renewable: boolean;
  readonly entity_id: '';
  readonly token_type: 'service' | 'batch';
  readonly orphan: boolean;
  readonly num_uses: number;
};

export function encodeEntry(entry: TokenEntry): Buffer {
  return Buffer.from(JSON.stringify(entry), 'utf8');
}

export function decodeEntry(raw: Buffer): TokenEntry {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new Internal('stored token entry is not JSON', { cause: e });
  }
  const parsed = entrySchema.safeParse(json);
  if (!parsed.success) throw new Internal('stored token entry has the wrong shape', { cause: parsed.error });
  return parsed.data;
}

/** Expired once the clock reaches `expire_time`. */
export function isExpired(entry: TokenEntry, nowMs: number): boolean {
  return entry.expire_time !== null && nowMs >= entry.expire_time * 1000;
}

/**
 * Vault's policy list rules: trimmed, lower-cased, empty names dropped, deduplicated, sorted; a
 * list holding `root` is just `['root']`; otherwise `default` is added when `addDefault`.
 */
export function sanitizePolicies(policies: readonly string[], addDefault: boolean): string[] {
  const names = new Set(policies.map((p) => p.trim().toLowerCase()).filter((p) => p !== ''));
  if (names.has(ROOT_POLICY)) return [ROOT_POLICY];
  if (addDefault) names.add(DEFAULT_POLICY);
  return [...names].sort();
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * `length` uniformly random base62 characters. Bytes of 248 and above are rejected so that no
 * character is likelier than another (248 = 4 * 62).
 */
export function randomBase62(length: number, random: (size: number) => Buffer): string {
  let out = '';
  while (out.length < length) {
    for (const byte of random(length * 2)) {
      if (byte >= 248) continue;
      out += BASE62.charAt(byte % 62);
      if (out.length === length) break;
    }
  }
  return out;
}

/** RFC 3339's range: 0000-01-01T00:00:00Z .. 9999-12-31T23:59:59Z, in Unix seconds. */
const RFC3339_MIN = -62_167_219_200;
const RFC3339_MAX = 253_402_300_799;

/** Unix seconds -> `2024-05-01T12:00:00Z`; a stored time beyond year 9999 reads as its end. */
export function rfc3339(unixSeconds: number): string {
  const clamped = Math.min(RFC3339_MAX, Math.max(RFC3339_MIN, unixSeconds));
  return new Date(clamped * 1000).toISOString().replace(/\.000Z$/, 'Z');
}

export function authBlock(token: string, entry: TokenEntry): AuthBlock {
  return {
    client_token: token,
    accessor: entry.accessor,
    policies: entry.policies,
    token_policies: entry.policies,
    metadata: entry.meta,
    lease_duration: entry.ttl,
    renewable: entry.renewable,
    entity_id: '',
    token_type: entry.type,
    orphan: entry.orphan,
    num_uses: entry.num_uses,
  };
}

/**
 * The data of `auth/token/lookup`, `lookup-self` and `lookup-accessor`. `id` is the token itself
 * for the first two and '' for lookup-accessor; `ttl` is the whole seconds left (0 for no TTL).
 */
export function lookupData(entry: TokenEntry, nowMs: number, id = ''): Record<string, unknown> {
  const ttl = entry.expire_time === null ? 0 : Math.max(0, Math.floor((entry.expire_time * 1000 - nowMs) / 1000));
  return {
    accessor: entry.accessor,
    creation_time: entry.creation_time,
    creation_ttl: entry.ttl,
    display_name: entry.display_name,
    entity_id: '',
    expire_time: entry.expire_time === null ? null : rfc3339(entry.expire_time),
    explicit_max_ttl: entry.explicit_max_ttl,
    id,
    issue_time: rfc3339(entry.creation_time),
    meta: entry.meta,
    num_uses: entry.num_uses,
    orphan: entry.orphan,
    path: entry.path,
    policies: entry.policies,
    renewable: entry.renewable,
    ttl,
    type: entry.type,
    ...((entry.period ?? 0) > 0 ? { period: entry.period } : {}),
    ...(entry.last_renewal_time !== undefined ? { last_renewal_time: entry.last_renewal_time } : {}),
  };
}
