/**
 * The rules of `auth/token/create`, as a pure function from the (live) parent and the request to
 * the draft of the child that TokenStore then mints.
 *
 *   const draft = childDraft(parent, { policies: ['app'], ttl: '1h' }, '', { privileged: false }, DEFAULT_TTL_LIMITS);
 *   draft.warnings; // ['TTL of "1000000h0m0s" exceeded the effective max_ttl of "768h0m0s"; ...'] when clamped
 */
import { goDuration, parseDuration } from '../core/duration.js';
import { InvalidRequest, PermissionDenied } from '../core/errors.js';
import { DEFAULT_POLICY, ROOT_POLICY, sanitizePolicies } from './token-entry.js';
import type { TokenEntry, TokenEntryView } from './token-entry.js';
import { policiesFromRole, type TokenRole } from './token-roles.js';

export interface CreateTokenRequest {
  /** Absent or empty: the parent's policies. */
  readonly policies?: readonly string[];
  readonly ttl?: string | number;
  readonly explicit_max_ttl?: string | number;
  /** A periodic token: every renewal sets its TTL to this, with no max unless explicit. Needs a privileged parent. */
  readonly period?: string | number;
  readonly num_uses?: number | string;
  readonly display_name?: string;
  readonly meta?: Readonly<Record<string, string>> | null;
  /** An orphan: not revoked with its parent. Needs a privileged parent. */
  readonly no_parent?: boolean;
  readonly no_default_policy?: boolean;
  /** A chosen token instead of a random one. Needs a privileged parent. */
  readonly id?: string;
  readonly renewable?: boolean;
  /** `service` (absent or '') or `batch` (batch-tokens.ts); anything else is refused. */
  readonly type?: string;
}

export interface CreateTokenOptions {
  /** The caller holds `sudo` on the creation path. A parent holding `root` is always privileged. */
  readonly privileged?: boolean;
  /**
   * The route itself authorises orphans (`auth/token/create-orphan`), without making the caller
   * privileged: the policy-subset rule still holds.
   */
  readonly allowOrphan?: boolean;
  /** Recorded as the token's `path`; default `auth/token/create`. */
  readonly path?: string;
  /** `auth/token/create/:role`: the role's rules replace the parent-subset rule and set orphan, type, period, max TTL. */
  readonly role?: { readonly name: string; readonly role: TokenRole };
}

/**
 * The system's lease bounds, in seconds (Vault's `default_lease_ttl` and `max_lease_ttl`, both
 * 768h unless configured). `defaultTtl` <= `maxTtl`, both > 0.
 */
export interface TtlLimits {
  readonly maxTtl: number;
  readonly defaultTtl: number;
}

export const DEFAULT_TTL_LIMITS: TtlLimits = { maxTtl: 768 * 3600, defaultTtl: 768 * 3600 };

/** Everything of an entry that is decided before minting, plus the latest allowed expiry. */
export interface TokenDraft {
  readonly type: 'service' | 'batch';
  readonly id: string | undefined;
  readonly policies: readonly string[];
  readonly ttl: number;
  readonly explicit_max_ttl: number;
  /** Seconds; 0 = not periodic. */
  readonly period: number;
  readonly num_uses: number;
  readonly parent: string;
  readonly namespace_path: string;
  readonly display_name: string;
  readonly meta: Readonly<Record<string, string>> | null;
  readonly orphan: boolean;
  readonly path: string;
  readonly renewable: boolean;
  /** Unix seconds the token may not outlive (its parent's expiry), or null. */
  readonly expireCap: number | null;
  /** For the response's `warnings`: what was capped. */
  readonly warnings: readonly string[];
}

export function childDraft(
  parent: TokenEntryView,
  req: CreateTokenRequest,
  ns: string,
  opts: CreateTokenOptions,
  limits: TtlLimits,
): TokenDraft {
  // Vault's order: a batch parent is refused before anything else (it has no tree to join).
  if (parent.type === 'batch') throw new InvalidRequest('batch tokens cannot create more tokens');
  const parentIsRoot = parent.policies.includes(ROOT_POLICY);
  const privileged = opts.privileged === true || parentIsRoot;
  const role = opts.role?.role;
  const type = tokenType(role === undefined ? req : { ...req, type: roleType(role, req.type) });
  // A use-limited token could otherwise escape its limit through children.
  if (parent.num_uses !== 0) throw new InvalidRequest('restricted use token cannot generate child tokens');
  if (!withinNamespace(ns, parent.namespace_path)) throw new PermissionDenied();

  const id = req.id === undefined || req.id === '' ? undefined : req.id;
  if (id !== undefined) {
    if (!privileged) throw new InvalidRequest('root or sudo privileges required to specify token id');
    if (id.includes('.')) throw new InvalidRequest("token IDs can not contain a '.' character");
  }
  // A role decides orphanhood itself (Vault ignores no_parent there).
  const orphan = role !== undefined ? role.orphan : req.no_parent === true;
  if (role === undefined && orphan && !privileged && opts.allowOrphan !== true) throw new InvalidRequest('root or sudo privileges required to create orphan token');

  const noDefault = req.no_default_policy === true;
  let policies: string[];
  if (role !== undefined) {
    policies = policiesFromRole(role, req.policies ?? [], parent.policies, noDefault);
  } else {
    const requested = req.policies !== undefined && req.policies.length > 0 ? req.policies : parent.policies;
    policies = sanitizePolicies(requested, !noDefault);
    if (noDefault) policies = policies.filter((p) => p !== DEFAULT_POLICY);
  }
  if (policies.length === 0) throw new InvalidRequest('token must have at least one policy');
  if (policies.includes(ROOT_POLICY) && !parentIsRoot) {
    throw new InvalidRequest('root tokens may not be created by a non-root token');
  }
  if (!privileged && role === undefined) {
    const allowed = new Set([...parent.policies, DEFAULT_POLICY]);
    if (!policies.every((p) => allowed.has(p))) throw new InvalidRequest('child policies must be subset of parent');
  }

  // Batch tokens cannot be revoked like service tokens, so never root (Vault's rule and wording).
  if (type === 'batch' && policies.includes(ROOT_POLICY)) throw new InvalidRequest('batch tokens cannot be root tokens');

  const meta = req.meta !== undefined && req.meta !== null && Object.keys(req.meta).length > 0 ? { ...req.meta } : null;
  const asked = req.period === undefined || req.period === '' ? 0 : parseDuration(req.period, 'period');
  if (asked > 0 && !privileged && role === undefined) throw new InvalidRequest('root or sudo privileges required to create periodic token');
  const period = role !== undefined && role.token_period > 0 ? role.token_period : asked;
  if (period > 0 && type === 'batch') throw new InvalidRequest('batch tokens cannot be periodic');
  const ttls = boundedTtls(
    period > 0 ? period : parseDuration(req.ttl ?? 0, 'ttl'),
    smallestSet(parseDuration(req.explicit_max_ttl ?? 0, 'explicit_max_ttl'), role?.token_explicit_max_ttl ?? 0),
    policies.includes(ROOT_POLICY),
    limits,
    period > 0,
  );
  return {
    type,
    id,
    policies,
    ttl: ttls.ttl,
    explicit_max_ttl: ttls.explicitMaxTtl,
    period: ttls.ttl > 0 ? period : 0,
    num_uses: parseUses(req.num_uses),
    parent: orphan ? '' : parent.hash,
    namespace_path: ns,
    display_name: displayName(req.display_name),
    meta,
    orphan,
    path: opts.role !== undefined ? rolePath(opts.role.name, opts.role.role) : opts.path ?? 'auth/token/create',
    renewable: type === 'service' && (req.renewable ?? true) && (role === undefined || role.renewable),
    // Expiring revokes a token's tree, so a child never outlives its parent; orphans may.
    expireCap: orphan ? null : parent.expire_time,
    warnings: ttls.warnings,
  };
}

/**
 * Vault's token TTL rules against the system bounds: explicit_max_ttl is capped at the maximum;
 * a token asking no TTL gets the default, unless it holds `root` (root tokens may live forever);
 * the TTL is capped at the maximum, then at explicit_max_ttl, which also bounds a root token that
 * asked none. Every cap says so in a warning worded as Vault's.
 */
export function boundedTtls(
  ttl: number,
  explicitMaxTtl: number,
  root: boolean,
  limits: TtlLimits,
  periodic = false,
): { ttl: number; explicitMaxTtl: number; warnings: string[] } {
  const warnings: string[] = [];
  let explicit = explicitMaxTtl;
  if (explicit > limits.maxTtl) {
    warnings.push(
      `Explicit max TTL of ${explicit} seconds is greater than system/mount allowed value; value is being capped to ${limits.maxTtl} seconds`,
    );
    explicit = limits.maxTtl;
  }
  let t = ttl === 0 && !root ? Math.min(limits.defaultTtl, limits.maxTtl) : ttl;
  if (t > limits.maxTtl) {
    warnings.push(
      periodic
        ? `period of "${goDuration(t)}" exceeded the effective max_ttl of "${goDuration(limits.maxTtl)}"; period value is capped accordingly`
        : `TTL of "${goDuration(t)}" exceeded the effective max_ttl of "${goDuration(limits.maxTtl)}"; TTL value is capped accordingly`,
    );
    t = limits.maxTtl;
  }
  if (explicit > 0 && (t === 0 || t > explicit)) t = explicit;
  return { ttl: t, explicitMaxTtl: explicit, warnings };
}

/**
 * The requested type, with Vault's refusals of what a batch token cannot carry: a use limit, an
 * explicit max TTL (its TTL is final anyway), and (our rule) a chosen id, which would be the
 * sealed token itself.
 */
function tokenType(req: CreateTokenRequest): 'service' | 'batch' {
  const t = req.type ?? '';
  if (t === '' || t === 'service') return 'service';
  if (t !== 'batch') throw new InvalidRequest("invalid 'token_type' value");
  const explicit = req.explicit_max_ttl === undefined || req.explicit_max_ttl === '' ? 0 : parseDuration(req.explicit_max_ttl, 'explicit_max_ttl');
  if (explicit !== 0) throw new InvalidRequest('batch tokens cannot have "explicit_max_ttl" set');
  if (parseUses(req.num_uses) !== 0) throw new InvalidRequest('batch tokens cannot have "num_uses" set');
  if (req.id !== undefined && req.id !== '') throw new InvalidRequest('batch tokens cannot have "id" set');
  return 'batch';
}

/** The smaller of two durations where 0 means none. */
function smallestSet(a: number, b: number): number {
  if (a === 0) return b;
  if (b === 0) return a;
  return Math.min(a, b);
}

/** A role's `token_type` over the request's `type`: `default-*` only supply a default. */
function roleType(role: TokenRole, asked: string | undefined): string {
  switch (role.token_type) {
    case 'service':
    case 'batch':
      return role.token_type;
    case 'default-service':
      return asked === undefined || asked === '' ? 'service' : asked;
    case 'default-batch':
      return asked === undefined || asked === '' ? 'batch' : asked;
  }
}

/** `auth/token/create/<role>` with the role's path suffix, as Vault records it. */
function rolePath(name: string, role: TokenRole): string {
  return role.path_suffix === '' ? `auth/token/create/${name}` : `auth/token/create/${name}/${role.path_suffix}`;
}

/** Namespaces are `a/b/` or '' (root); a token may create tokens in its namespace and below. */
function withinNamespace(ns: string, parentNs: string): boolean {
  return parentNs === '' || ns.startsWith(parentNs);
}

function parseUses(v: number | string | undefined): number {
  if (v === undefined || v === '') return 0;
  const n = typeof v === 'number' ? v : /^-?\d+$/.test(v.trim()) ? Number(v.trim()) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidRequest('num_uses: expected an integer');
  if (n < 0) throw new InvalidRequest('number of uses cannot be negative');
  return n;
}

/** Vault's form: `token` or `token-<name>` with anything outside [A-Za-z0-9-] made '-'. */
function displayName(name: string | undefined): string {
  if (name === undefined || name === '') return 'token';
  return `token-${name}`.replace(/[^a-zA-Z0-9-]/g, '-').replace(/-$/, '');
}

/**
 * The entry minted from `draft` at `nowMs`: the TTL capped at explicit_max_ttl, the expiry at the
 * draft's cap (the parent's expiry). PermissionDenied when that cap has already passed (the parent
 * expired between its check and now).
 */
export function entryFromDraft(draft: TokenDraft, nowMs: number, accessor: string): TokenEntry {
  const now = Math.floor(nowMs / 1000);
  let ttl = draft.ttl;
  if (draft.explicit_max_ttl > 0 && (ttl === 0 || ttl > draft.explicit_max_ttl)) ttl = draft.explicit_max_ttl;
  let expire = ttl > 0 ? now + ttl : null;
  if (draft.expireCap !== null && (expire === null || expire > draft.expireCap)) expire = draft.expireCap;
  if (expire !== null && expire * 1000 <= nowMs) throw new PermissionDenied();
  ttl = expire === null ? 0 : expire - now;
  return {
    accessor,
    policies: [...draft.policies],
    ttl,
    creation_time: now,
    expire_time: expire,
    num_uses: draft.num_uses,
    parent: draft.parent,
    namespace_path: draft.namespace_path,
    display_name: draft.display_name,
    meta: draft.meta,
    orphan: draft.orphan,
    type: 'service',
    path: draft.path,
    explicit_max_ttl: draft.explicit_max_ttl,
    renewable: draft.renewable && ttl > 0,
    ...(draft.period > 0 ? { period: draft.period } : {}),
  };
}
