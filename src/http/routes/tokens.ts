/**
 * The token auth method: auth/token/create, create-orphan, lookup, lookup-self, lookup-accessor,
 * renew, renew-self, renew-accessor, revoke, revoke-self, revoke-accessor, revoke-orphan.
 *
 * `type=batch` on create makes a batch token (vault/batch-tokens.ts): sealed, not stored, no
 * accessor, not renewable. revoke (and revoke-orphan) of a batch token puts it on the replicated
 * deny list; revoke-self of one is Vault's 400.
 *
 * Endpoints naming another token or accessor act only on tokens of the request's namespace and
 * below (the dispatcher already holds that namespace within the caller's own). Any other token is
 * answered exactly as an unknown one: lookup 403 "bad token", lookup-accessor 400 "invalid
 * accessor", renew* 400 "token not found", the revocations 204 without revoking anything
 * (Vault's "revoked, if it existed").
 *
 * A replication activation token (the JWT of primary/secondary-token) stands for the wrapping
 * token it names (`resolveToken`, as sys/wrapping/unwrap reads it): revoke and revoke-orphan of
 * the JWT revoke that wrapping token, so it no longer activates a secondary; the id stays in the
 * primary's list as it was (revoke-secondary is what revokes the id). A JWT this primary did not
 * sign, or one already expired, names no token here: 204, nothing revoked.
 */
import { z } from 'zod';
import { ErrorCode, InvalidRequest, PermissionDenied, TesseraError } from '../../core/errors.js';
import type { Caller } from '../../vault/caller.js';
import type { TokenStore } from '../../vault/tokens.js';
import { boolish, duration, empty, intish, stringList, stringMap } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { op, type Route, type RouteContext } from '../route.js';
import { tokenRoleRoutes, type RoleOf } from './token-roles.js';

const CreateBody = z.object({
  policies: stringList.optional(),
  ttl: duration.optional(),
  explicit_max_ttl: duration.optional(),
  period: duration.optional(),
  num_uses: intish.optional(),
  display_name: z.string().optional(),
  meta: stringMap.nullish(),
  no_parent: boolish.optional(),
  no_default_policy: boolish.optional(),
  id: z.string().optional(),
  renewable: boolish.optional(),
  type: z.string().optional(),
});
type CreateBody = z.infer<typeof CreateBody>;

const RenewBody = z.object({
  token: z.string().default(''),
  increment: duration.default(0),
});
const RenewSelfBody = z.object({ increment: duration.default(0) });
const RenewAccessorBody = z.object({
  accessor: z.string().default(''),
  increment: duration.default(0),
});

const TokenBody = z.object({ token: z.string({ error: 'missing required field "token"' }).min(1, 'missing required field "token"') });
const AccessorBody = z.object({ accessor: z.string({ error: 'missing required field "accessor"' }).min(1, 'missing required field "accessor"') });

function need(ctx: RouteContext<unknown>): Caller {
  if (!ctx.caller) throw new PermissionDenied();
  return ctx.caller;
}

export function tokenRoutes(tokens: TokenStore, resolveToken: (presented: string) => Promise<string> = async (t) => t): Route[] {
  /** The stored token `presented` stands for, or undefined when it names none of this node's. */
  const stored = async (presented: string): Promise<string | undefined> => {
    try {
      return await resolveToken(presented);
    } catch (e) {
      if (e instanceof TesseraError && e.code === ErrorCode.invalidRequest) return undefined;
      throw e;
    }
  };
  const create = (orphan: boolean, path: string, roleOf?: RoleOf) =>
    op(CreateBody, async (ctx: RouteContext<CreateBody>) => {
      const caller = need(ctx);
      const f = ctx.fields;
      const name = ctx.params.role ?? '';
      const role = roleOf === undefined ? undefined : { name, role: await roleOf(ctx.namespace, name) };
      const aclPath = role === undefined ? path : `${path}/${name}`;
      const { auth, warnings } = await tokens.createWithWarnings(
        caller.entry,
        {
          ...(f.policies !== undefined ? { policies: f.policies } : {}),
          ...(f.ttl !== undefined ? { ttl: f.ttl } : {}),
          ...(f.explicit_max_ttl !== undefined ? { explicit_max_ttl: f.explicit_max_ttl } : {}),
          ...(f.period !== undefined ? { period: f.period } : {}),
          ...(f.num_uses !== undefined ? { num_uses: f.num_uses } : {}),
          ...(f.display_name !== undefined ? { display_name: f.display_name } : {}),
          ...(f.meta !== undefined ? { meta: f.meta } : {}),
          ...(f.no_default_policy !== undefined ? { no_default_policy: f.no_default_policy } : {}),
          ...(f.id !== undefined ? { id: f.id } : {}),
          ...(f.renewable !== undefined ? { renewable: f.renewable } : {}),
          ...(f.type !== undefined ? { type: f.type } : {}),
          no_parent: orphan || f.no_parent === true,
        },
        ctx.namespace,
        { privileged: caller.root || caller.allows(aclPath, 'sudo'), allowOrphan: orphan, path, ...(role !== undefined ? { role } : {}) },
      );
      return ok(null, { auth: { ...auth }, ...(warnings.length > 0 ? { warnings: [...warnings] } : {}) });
    }, (orphan ? 'Create an orphan token (one with no parent).' : 'Create a new token, a child of the calling token.'));

  const lookupSelf = op(empty, async (ctx) => {
    const caller = need(ctx);
    const entry = (await tokens.lookup(caller.token)) ?? caller.entry;
    return ok(tokens.lookupResponse(entry, caller.token));
  }, 'Look up the properties of the calling token.');

  const renewed = ({ auth, warnings }: { auth: Record<string, unknown>; warnings: readonly string[] }) =>
    ok(null, { auth: { ...auth }, ...(warnings.length > 0 ? { warnings: [...warnings] } : {}) });

  const routes: Route[] = [
    {
      pattern: 'auth/token/renew',
      access: 'token',
      operations: {
        update: op(RenewBody, async ({ fields, namespace }) => {
          if (fields.token === '') throw new InvalidRequest('missing token ID');
          return renewed(await tokens.renew({ token: fields.token }, fields.increment, namespace));
        },
          'Renew a token: its TTL becomes the increment (or its creation TTL, or its period), within its max TTL.'),
      },
    },
    {
      pattern: 'auth/token/renew-self',
      access: 'token',
      operations: {
        update: op(RenewSelfBody, async (ctx) => renewed(await tokens.renew({ token: need(ctx).token }, ctx.fields.increment)),
          'Renew the calling token.'),
      },
    },
    {
      pattern: 'auth/token/renew-accessor',
      access: 'token',
      operations: {
        update: op(RenewAccessorBody, async ({ fields, namespace }) => {
          if (fields.accessor === '') throw new InvalidRequest('missing accessor');
          return renewed(await tokens.renew({ accessor: fields.accessor }, fields.increment, namespace));
        },
          'Renew the token with this accessor (the answer carries no token).'),
      },
    },
    { pattern: 'auth/token/create', access: 'token', operations: { update: create(false, 'auth/token/create') } },
    { pattern: 'auth/token/create-orphan', access: 'token', operations: { update: create(true, 'auth/token/create-orphan') } },
    { pattern: 'auth/token/lookup-self', access: 'token', operations: { read: lookupSelf, update: lookupSelf } },
    {
      pattern: 'auth/token/lookup',
      standby: 'serve',
      access: 'token',
      operations: {
        update: op(TokenBody, async ({ fields, namespace }) => {
          const entry = await tokens.lookup(fields.token, namespace);
          // Vault: ErrorResponse("bad token") with ErrPermissionDenied, a 403.
          if (!entry) throw new PermissionDenied('bad token');
          return ok(tokens.lookupResponse(entry, fields.token));
        }, 'Look up the properties of a token.'),
      },
    },
    {
      pattern: 'auth/token/lookup-accessor',
      standby: 'serve',
      access: 'token',
      operations: {
        update: op(AccessorBody, async ({ fields, namespace }) => {
          const entry = await tokens.lookupByAccessor(fields.accessor, namespace);
          if (!entry) throw new InvalidRequest('invalid accessor');
          return ok(tokens.lookupResponse(entry));
        }, 'Look up the properties of a token by its accessor.'),
      },
    },
    {
      pattern: 'auth/token/revoke',
      access: 'token',
      operations: {
        update: op(TokenBody, async ({ fields, namespace }) => {
          const token = await stored(fields.token);
          if (token !== undefined) await tokens.revoke(token, namespace);
          return noContent();
        }, 'Revoke a token and all its children.'),
      },
    },
    {
      pattern: 'auth/token/revoke-self',
      access: 'token',
      operations: {
        update: op(empty, async (ctx) => {
          const caller = need(ctx);
          // As Vault: a batch token cannot end itself (auth/token/revoke puts one on the deny list).
          if (caller.entry.type === 'batch') throw new InvalidRequest('batch tokens cannot be revoked');
          await tokens.revoke(caller.token);
          return noContent();
        }, 'Revoke the calling token and all its children.'),
      },
    },
    {
      pattern: 'auth/token/revoke-accessor',
      access: 'token',
      operations: {
        update: op(AccessorBody, async ({ fields, namespace }) => {
          await tokens.revokeAccessor(fields.accessor, namespace);
          return noContent();
        }, 'Revoke the token with this accessor and all its children.'),
      },
    },
    {
      pattern: 'auth/token/revoke-orphan',
      access: 'sudo',
      operations: {
        update: op(TokenBody, async ({ fields, namespace }) => {
          const token = await stored(fields.token);
          if (token !== undefined) await tokens.revokeOrphan(token, namespace);
          return noContent();
        }, 'Revoke a token, leaving its children as orphans.'),
      },
    },
  ];
  // Tokens are local to each cluster: never executed on behalf of a forwarding secondary.
  return [...routes.map((r) => ({ ...r, localState: true })), ...tokenRoleRoutes(tokens, (roleOf) => create(false, 'auth/token/create', roleOf))];
}
