/**
 * Token roles (`auth/token/roles/:name`, used by `auth/token/create/:name`), after Vault's token
 * store: which policies a token made from the role may carry, whether it is an orphan, renewable or
 * periodic, its explicit max TTL, type and path suffix.
 *
 *   const roles = new TokenRoles(store);
 *   await roles.write('', 'web', roleFromFields({ allowed_policies: ['web'], token_period: 3600 }));
 *   const role = await roles.read('', 'web');     // undefined if none
 *
 * Stored beside the tokens (`local/token/role/<namespace digest>/<name>`): roles belong to the
 * token store of the cluster that holds them, as its tokens do, and each namespace has its own.
 */
import { hash } from 'node:crypto';
import { z } from 'zod';
import { InvalidRequest } from '../core/errors.js';
import type { Store } from '../storage/store.js';
import { DEFAULT_POLICY, sanitizePolicies } from './token-entry.js';

export const TOKEN_ROLE_PREFIX = 'local/token/role/';

export const ROLE_TOKEN_TYPES = ['service', 'batch', 'default-service', 'default-batch'] as const;

const roleSchema = z.object({
  allowed_policies: z.array(z.string()),
  disallowed_policies: z.array(z.string()),
  orphan: z.boolean(),
  renewable: z.boolean(),
  /** Seconds; 0 = tokens of this role are not periodic. */
  token_period: z.number(),
  /** Seconds; 0 = none. */
  token_explicit_max_ttl: z.number(),
  path_suffix: z.string(),
  token_type: z.enum(ROLE_TOKEN_TYPES),
  token_no_default_policy: z.boolean(),
});

export type TokenRole = Readonly<z.infer<typeof roleSchema>>;

export const DEFAULT_ROLE: TokenRole = {
  allowed_policies: [],
  disallowed_policies: [],
  orphan: false,
  renewable: true,
  token_period: 0,
  token_explicit_max_ttl: 0,
  path_suffix: '',
  token_type: 'default-service',
  token_no_default_policy: false,
};

/** Vault's role names here: letters, digits, `_`, `-`, `.`, up to 128 characters. */
export function checkRoleName(name: string): void {
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(name) || name === '.' || name === '..') throw new InvalidRequest('invalid role name');
}

/** Vault refuses a suffix with `..` (it becomes part of the token's path). */
export function checkPathSuffix(suffix: string): void {
  if (suffix.includes('..')) throw new InvalidRequest('error registering path suffix: path suffix cannot contain ".."');
  if (!/^[A-Za-z0-9_.\-/]*$/.test(suffix) || suffix.length > 128) throw new InvalidRequest('invalid path_suffix');
}

/** Role policies as Vault stores them: sanitized, without `default` added. */
export function rolePolicies(list: readonly string[]): string[] {
  return sanitizePolicies(list, false);
}

/** Vault's read answer of a role (with the legacy `period` and `explicit_max_ttl` beside the new names). */
export function roleData(name: string, r: TokenRole): Record<string, unknown> {
  return {
    name,
    allowed_policies: r.allowed_policies,
    disallowed_policies: r.disallowed_policies,
    allowed_policies_glob: [],
    disallowed_policies_glob: [],
    allowed_entity_aliases: [],
    orphan: r.orphan,
    renewable: r.renewable,
    path_suffix: r.path_suffix,
    token_type: r.token_type,
    token_period: r.token_period,
    period: r.token_period,
    token_explicit_max_ttl: r.token_explicit_max_ttl,
    explicit_max_ttl: r.token_explicit_max_ttl,
    token_no_default_policy: r.token_no_default_policy,
    token_bound_cidrs: [],
  };
}

/**
 * The policies of a token made from `role`, after Vault's rules: with allowed policies, the
 * request's must be among them (none requested: the allowed ones); with only disallowed policies,
 * the request's (or else the parent's) must avoid them. `default` is added unless refused.
 */
export function policiesFromRole(role: TokenRole, requested: readonly string[], parentPolicies: readonly string[], noDefault: boolean): string[] {
  const addDefault = !noDefault && !role.token_no_default_policy;
  let policies: string[];
  if (role.allowed_policies.length > 0) {
    policies = requested.length > 0 ? sanitizePolicies(requested, false) : [...role.allowed_policies];
    const allowed = new Set([...role.allowed_policies, DEFAULT_POLICY]);
    if (!policies.every((p) => allowed.has(p))) {
      throw new InvalidRequest(`token policies (${JSON.stringify(policies)}) must be subset of the role's allowed policies (${JSON.stringify(role.allowed_policies)})`);
    }
  } else {
    policies = sanitizePolicies(requested.length > 0 ? requested : parentPolicies, false);
  }
  if (role.disallowed_policies.length > 0) {
    const bad = policies.filter((p) => role.disallowed_policies.includes(p));
    if (bad.length > 0) throw new InvalidRequest(`token policies (${JSON.stringify(policies)}) contains disallowed policies (${JSON.stringify(role.disallowed_policies)})`);
  }
  const out = sanitizePolicies(policies, addDefault);
  return noDefault || role.token_no_default_policy ? out.filter((p) => p !== DEFAULT_POLICY) : out;
}

export class TokenRoles {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  async read(ns: string, name: string): Promise<TokenRole | undefined> {
    checkRoleName(name);
    const raw = await this.#store.get(roleKey(ns, name));
    if (raw === undefined) return undefined;
    return roleSchema.parse({ ...DEFAULT_ROLE, ...JSON.parse(raw.toString('utf8')) });
  }

  async write(ns: string, name: string, role: TokenRole): Promise<void> {
    checkRoleName(name);
    await this.#store.commit([{ type: 'put', key: roleKey(ns, name), value: Buffer.from(JSON.stringify(roleSchema.parse(role))) }]);
  }

  async delete(ns: string, name: string): Promise<void> {
    checkRoleName(name);
    await this.#store.commit([{ type: 'del', key: roleKey(ns, name) }]);
  }

  async list(ns: string): Promise<string[]> {
    return (await this.#store.list(rolePrefix(ns))).filter((k) => !k.endsWith('/')).sort();
  }
}

function rolePrefix(ns: string): string {
  return `${TOKEN_ROLE_PREFIX}${hash('sha256', ns, 'hex').slice(0, 32)}/`;
}

function roleKey(ns: string, name: string): string {
  return rolePrefix(ns) + name;
}
