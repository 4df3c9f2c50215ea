/**
 * The approle method's routes under its mount (`auth/<mount>/`), Vault's wire: role (LIST),
 * role/:role_name (read, write, delete), role/:role_name/role-id (read, set),
 * role/:role_name/secret-id (generate; LIST accessors), custom-secret-id, secret-id/lookup,
 * secret-id/destroy, secret-id-accessor/lookup and secret-id-accessor/destroy, and login (public).
 */
import { z } from 'zod';
import { NotFound } from '../../core/errors.js';
import type { AppRole, SecretIdInput } from '../../vault/auth/index.js';
import { boolish, duration, empty, intish, stringList, stringMap } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { op, type Route } from '../route.js';
import { tokenFields, tokenParams } from './auth-token-fields.js';

const uses = (field: string) => intish.pipe(z.number().int().min(0, `${field} cannot be negative`));

const RoleBody = z.object({
  ...tokenFields,
  role_id: z.string().optional(),
  bind_secret_id: boolish.optional(),
  secret_id_ttl: duration.optional(),
  secret_id_num_uses: uses('secret_id_num_uses').optional(),
});

/** `metadata` is a map, or a JSON string of one (as the CLI sends it). */
const metadata = z.union([
  stringMap,
  z.string().transform((s, ctx) => {
    if (s.trim() === '') return {};
    try {
      return stringMap.parse(JSON.parse(s));
    } catch {
      ctx.addIssue({ code: 'custom', message: 'metadata must be a JSON object of strings' });
      return z.NEVER;
    }
  }),
]);

/**
 * Vault's secret ID fields. Secret IDs here cannot be bound to CIDR blocks: an empty list (what
 * clients send by default) is taken, a non-empty one refused rather than silently not enforced.
 */
const unboundCidrs = (field: string) => stringList.refine((l) => l.length === 0, `${field} is not supported: secret IDs cannot be bound to CIDR blocks`);
const SecretIdBody = z.object({
  metadata: metadata.nullish(),
  ttl: duration.optional(),
  num_uses: uses('num_uses').optional(),
  cidr_list: unboundCidrs('cidr_list').nullish(),
  token_bound_cidrs: unboundCidrs('token_bound_cidrs').nullish(),
});
const CustomSecretIdBody = SecretIdBody.extend({ secret_id: z.string().default('') });
const SecretIdField = z.object({ secret_id: z.string().default('') });
const AccessorField = z.object({ secret_id_accessor: z.string().default('') });

const secretIdInput = (f: z.infer<typeof SecretIdBody>): SecretIdInput => ({
  ...(f.metadata !== undefined && f.metadata !== null ? { metadata: f.metadata } : {}),
  ...(f.ttl !== undefined ? { ttl: f.ttl } : {}),
  ...(f.num_uses !== undefined ? { num_uses: f.num_uses } : {}),
});

/** A DELETE may carry its field in the query string, as Vault parses it (or in the body); POST in the body. */
const given = (field: string, req: { readonly operation: string; readonly query: Readonly<Record<string, string>> }, name: string): string =>
  field !== '' || req.operation !== 'delete' ? field : (req.query[name] ?? '');

/** Vault's answer when the role has no such accessor: 404 with the text in the envelope's data. */
const noAccessor = (accessor: string) => `failed to find accessor entry for secret_id_accessor: ${JSON.stringify(accessor.slice(0, 128))}`;
const LoginBody = z.object({ role_id: z.string().default(''), secret_id: z.string().default('') });

/** `prefix` is `auth/<mount path>` with its trailing slash. */
export function approleRoutes(prefix: string, ar: AppRole): Route[] {
  return [
    {
      pattern: `${prefix}role`,
      access: 'token',
      operations: { list: op(empty, async () => ok({ keys: await ar.listRoles() }), 'List the roles registered with the AppRole method.') },
    },
    {
      pattern: `${prefix}role/:role_name`,
      access: 'token',
      operations: {
        read: op(empty, async ({ params }) => {
          const role = await ar.readRole(params.role_name ?? '');
          if (!role) throw new NotFound();
          return ok(role);
        }, "Read a role's settings."),
        update: op(RoleBody, async ({ params, fields: f }) => {
          await ar.writeRole(params.role_name ?? '', {
            params: tokenParams(f),
            ...(f.role_id !== undefined ? { role_id: f.role_id } : {}),
            ...(f.bind_secret_id !== undefined ? { bind_secret_id: f.bind_secret_id } : {}),
            ...(f.secret_id_ttl !== undefined ? { secret_id_ttl: f.secret_id_ttl } : {}),
            ...(f.secret_id_num_uses !== undefined ? { secret_id_num_uses: f.secret_id_num_uses } : {}),
          });
          return noContent();
        }, 'Register a role or update its settings.'),
        delete: op(empty, async ({ params }) => {
          await ar.deleteRole(params.role_name ?? '');
          return noContent();
        }, 'Delete a role.'),
      },
    },
    {
      pattern: `${prefix}role/:role_name/role-id`,
      access: 'token',
      operations: {
        read: op(empty, async ({ params }) => ok(await ar.readRoleId(params.role_name ?? '')), 'Read the role ID of a role.'),
        update: op(z.object({ role_id: z.string({ error: 'missing role_id' }) }), async ({ params, fields }) => {
          await ar.setRoleId(params.role_name ?? '', fields.role_id);
          return noContent();
        }, 'Set a custom role ID for a role.'),
      },
    },
    {
      pattern: `${prefix}role/:role_name/secret-id`,
      access: 'token',
      operations: {
        update: op(SecretIdBody, async ({ params, fields: f }) => ok(await ar.generateSecretId(params.role_name ?? '', secretIdInput(f))), 'Generate a SecretID against this role.'),
        list: op(empty, async ({ params }) => ok({ keys: await ar.listSecretIdAccessors(params.role_name ?? '') }), 'List the accessors of the SecretIDs issued against this role.'),
      },
    },
    {
      pattern: `${prefix}role/:role_name/custom-secret-id`,
      access: 'token',
      operations: {
        update: op(CustomSecretIdBody, async ({ params, fields: f }) => ok(await ar.createCustomSecretId(params.role_name ?? '', f.secret_id, secretIdInput(f))), 'Assign a SecretID of choice against the role.'),
      },
    },
    {
      pattern: `${prefix}role/:role_name/secret-id/lookup`,
      access: 'token',
      operations: {
        update: op(SecretIdField, async ({ params, fields }) => {
          const found = await ar.lookupSecretId(params.role_name ?? '', fields.secret_id);
          return found === undefined ? noContent() : ok(found);
        }, 'Read the properties of an issued secret_id.'),
      },
    },
    {
      pattern: `${prefix}role/:role_name/secret-id/destroy`,
      access: 'token',
      operations: Object.fromEntries(
        (['update', 'delete'] as const).map((o) => [o, op(SecretIdField, async ({ params, fields, req }) => {
          await ar.destroySecretId(params.role_name ?? '', given(fields.secret_id, req, 'secret_id'));
          return noContent();
        }, 'Invalidate an issued secret_id.')]),
      ),
    },
    {
      pattern: `${prefix}role/:role_name/secret-id-accessor/lookup`,
      access: 'token',
      operations: {
        update: op(AccessorField, async ({ params, fields }) => {
          const found = await ar.lookupSecretIdAccessor(params.role_name ?? '', fields.secret_id_accessor);
          return found === undefined ? ok({ error: noAccessor(fields.secret_id_accessor) }, { status: 404 }) : ok(found);
        }, 'Read the properties of an issued secret_id by its accessor.'),
      },
    },
    {
      pattern: `${prefix}role/:role_name/secret-id-accessor/destroy`,
      access: 'token',
      operations: Object.fromEntries(
        (['update', 'delete'] as const).map((o) => [o, op(AccessorField, async ({ params, fields, req }) => {
          const accessor = given(fields.secret_id_accessor, req, 'secret_id_accessor');
          // Vault answers this with a 500; an unknown accessor is the caller's input, hence a 404.
          if (!(await ar.destroySecretIdAccessor(params.role_name ?? '', accessor))) throw new NotFound(noAccessor(accessor));
          return noContent();
        }, 'Invalidate an issued secret_id by its accessor.')]),
      ),
    },
    {
      pattern: `${prefix}login`,
      access: 'public',
      operations: {
        update: op(LoginBody, async ({ fields }) => {
          const { auth, warnings } = await ar.login(fields.role_id, fields.secret_id);
          return ok(null, { auth: { ...auth }, ...(warnings.length > 0 ? { warnings: [...warnings] } : {}) });
        }, 'Issue a token based on the credentials supplied.'),
      },
    },
  ];
}
