/**
 * What every auth method shares: the token parameters of a user or role (Vault's tokenutil
 * fields), and issuing the login token through the token store.
 *
 * Login tokens are orphans of the mount's namespace, minted by TokenStore.issue, so they are local
 * class (`local/token/...`): a login on a performance secondary creates a token that exists only
 * there. With the token, in the same commit, goes an index key `local/auth-tokens/<mount uuid>/<token
 * hash>` so that disabling the mount can revoke what it issued; and any ops of the method itself
 * (a secret ID's spent use), so a login either happens whole or not at all.
 *
 *   const { auth, warnings } = await issuer.login(entry, params, { username: 'bob' }, 'userpass-bob', 'auth/userpass/login/bob');
 */
import { goDuration } from '../../core/duration.js';
import type { Op } from '../../storage/store.js';
import { authBlock } from '../token-entry.js';
import { DEFAULT_POLICY, sanitizePolicies, type AuthBlock, type TokenStore, type TtlLimits } from '../tokens.js';
import type { AuthEntry } from './table.js';

/** Vault's tokenutil fields as stored with a user or role; durations in seconds, 0 = unset. */
export interface TokenParams {
  readonly token_policies: readonly string[];
  readonly token_ttl: number;
  readonly token_max_ttl: number;
  readonly token_num_uses: number;
  readonly token_no_default_policy: boolean;
}

export const NO_TOKEN_PARAMS: TokenParams = { token_policies: [], token_ttl: 0, token_max_ttl: 0, token_num_uses: 0, token_no_default_policy: false };

/** Each field given replaces the stored one (Vault's update semantics). */
export function mergeParams(base: TokenParams, patch: Partial<TokenParams>): TokenParams {
  const next: TokenParams = {
    token_policies: patch.token_policies !== undefined ? sanitizePolicies(patch.token_policies, false) : base.token_policies,
    token_ttl: patch.token_ttl ?? base.token_ttl,
    token_max_ttl: patch.token_max_ttl ?? base.token_max_ttl,
    token_num_uses: patch.token_num_uses ?? base.token_num_uses,
    token_no_default_policy: patch.token_no_default_policy ?? base.token_no_default_policy,
  };
  return next;
}

/** The read view of the parameters, with Vault's other tokenutil fields at their defaults. */
export function paramsView(p: TokenParams): Record<string, unknown> {
  return {
    token_policies: [...p.token_policies],
    policies: [...p.token_policies],
    token_ttl: p.token_ttl,
    token_max_ttl: p.token_max_ttl,
    token_num_uses: p.token_num_uses,
    token_no_default_policy: p.token_no_default_policy,
    token_explicit_max_ttl: 0,
    token_period: 0,
    token_type: 'default',
    token_bound_cidrs: [],
  };
}

export const AUTH_TOKEN_INDEX = 'local/auth-tokens/';

/** The index of tokens a mount issued (token hashes, never tokens). */
export function issuedIndex(entry: AuthEntry): string {
  return `${AUTH_TOKEN_INDEX}${entry.uuid}/`;
}

export interface LoginResult {
  readonly auth: AuthBlock;
  readonly warnings: readonly string[];
}

export class LoginIssuer {
  constructor(
    private readonly tokens: TokenStore,
    private readonly limits: TtlLimits,
  ) {}

  /**
   * TTL: the user's or role's token_ttl, else the mount's default, else the system's; capped by
   * token_max_ttl, the mount's max and the system max_lease_ttl (the smallest set one wins).
   */
  async login(entry: AuthEntry, params: TokenParams, meta: Record<string, string>, displayName: string, path: string, extra: readonly Op[] = []): Promise<LoginResult> {
    const sysMax = this.limits.maxTtl;
    const caps = [sysMax, entry.config.max_lease_ttl, params.token_max_ttl].filter((x) => x > 0);
    const max = Math.min(...caps);
    const warnings: string[] = [];
    let ttl = params.token_ttl || entry.config.default_lease_ttl || this.limits.defaultTtl;
    if (ttl > max) {
      if (params.token_ttl > max) warnings.push(`TTL of "${goDuration(ttl)}" exceeded the effective max_ttl of "${goDuration(max)}"; TTL value is capped accordingly`);
      ttl = max;
    }
    const policies = params.token_no_default_policy ? [...params.token_policies] : [...params.token_policies, DEFAULT_POLICY];
    const issued = await this.tokens.issue(
      {
        policies,
        ttl,
        num_uses: params.token_num_uses,
        namespace_path: entry.namespace,
        display_name: displayName,
        meta,
        path,
        renewable: true,
      },
      ({ hash }) => [{ type: 'put', key: issuedIndex(entry) + hash, value: Buffer.alloc(0) }, ...extra],
    );
    return { auth: authBlock(issued.token, issued.entry), warnings };
  }
}
