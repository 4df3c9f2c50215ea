/**
 * Token roles: `auth/token/roles` (LIST), `auth/token/roles/:name` (read, create/update, delete)
 * and `auth/token/create/:name`, which makes a token under the role's rules (vault/token-roles.ts,
 * token-create.ts). Field names as Vault's token store takes them, the legacy `period` and
 * `explicit_max_ttl` included. An update changes only the fields it carries.
 */
import { z } from 'zod';
import { InvalidRequest, NotFound } from '../../core/errors.js';
import type { TokenStore } from '../../vault/tokens.js';
import { DEFAULT_ROLE, ROLE_TOKEN_TYPES, checkPathSuffix, roleData, rolePolicies, type TokenRole } from '../../vault/token-roles.js';
import { boolish, duration, empty, stringList } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { op, type OperationSpec, type Route } from '../route.js';

/** The role a `create/:role` request names, in its namespace; InvalidRequest if none. */
export type RoleOf = (namespace: string, name: string) => Promise<TokenRole>;
/** The create operation of tokens.ts under a role's rules, for `auth/token/create/:role`. */
export type CreateOperation = (roleOf: RoleOf) => OperationSpec<any>;

const RoleBody = z.object({
  allowed_policies: stringList.optional(),
  disallowed_policies: stringList.optional(),
  orphan: boolish.optional(),
  renewable: boolish.optional(),
  token_period: duration.optional(),
  period: duration.optional(),
  token_explicit_max_ttl: duration.optional(),
  explicit_max_ttl: duration.optional(),
  path_suffix: z.string().optional(),
  token_type: z.string().optional(),
  token_no_default_policy: boolish.optional(),
});
type RoleBody = z.infer<typeof RoleBody>;

/** `current` with the fields `f` carries (the new names win over the legacy ones). */
function updated(current: TokenRole, f: RoleBody): TokenRole {
  const type = f.token_type === undefined || f.token_type === '' ? current.token_type : f.token_type;
  if (!(ROLE_TOKEN_TYPES as readonly string[]).includes(type)) throw new InvalidRequest(`invalid 'token_type' value ${JSON.stringify(type)}`);
  const suffix = f.path_suffix ?? current.path_suffix;
  checkPathSuffix(suffix);
  const period = f.token_period ?? f.period ?? current.token_period;
  const explicit = f.token_explicit_max_ttl ?? f.explicit_max_ttl ?? current.token_explicit_max_ttl;
  if (type === 'batch' && period > 0) throw new InvalidRequest('batch tokens cannot be periodic');
  return {
    allowed_policies: f.allowed_policies !== undefined ? rolePolicies(f.allowed_policies) : current.allowed_policies,
    disallowed_policies: f.disallowed_policies !== undefined ? rolePolicies(f.disallowed_policies) : current.disallowed_policies,
    orphan: f.orphan ?? current.orphan,
    renewable: f.renewable ?? current.renewable,
    token_period: period,
    token_explicit_max_ttl: explicit,
    path_suffix: suffix,
    token_type: type as TokenRole['token_type'],
    token_no_default_policy: f.token_no_default_policy ?? current.token_no_default_policy,
  };
}

export function tokenRoleRoutes(tokens: TokenStore, createWith: CreateOperation): Route[] {
  const list = op(empty, async ({ namespace }) => ok({ keys: await tokens.roles.list(namespace) }), 'List the token roles.');
  const routes: Route[] = [
    { pattern: 'auth/token/roles', access: 'token', operations: { list, read: list } },
    {
      pattern: 'auth/token/roles/:name',
      access: 'token',
      operations: {
        read: op(empty, async ({ params, namespace }) => {
          const name = params.name ?? '';
          const role = await tokens.roles.read(namespace, name);
          if (role === undefined) throw new NotFound();
          return ok(roleData(name, role));
        }, 'Read a token role.'),
        update: op(RoleBody, async ({ params, namespace, fields }) => {
          const name = params.name ?? '';
          const current = (await tokens.roles.read(namespace, name)) ?? DEFAULT_ROLE;
          await tokens.roles.write(namespace, name, updated(current, fields));
          return noContent();
        }, 'Create or update a token role.'),
        delete: op(empty, async ({ params, namespace }) => {
          await tokens.roles.delete(namespace, params.name ?? '');
          return noContent();
        }, 'Delete a token role.'),
      },
    },
    {
      pattern: 'auth/token/create/:role',
      access: 'token',
      operations: { update: createWith(async (namespace, name) => {
        const role = await tokens.roles.read(namespace, name);
        if (role === undefined) throw new InvalidRequest(`unknown role ${name}`);
        return role;
      }) },
    },
  ];
  // Roles live with the cluster's tokens: never executed on behalf of a forwarding secondary.
  return routes.map((r) => ({ ...r, localState: true }));
}
