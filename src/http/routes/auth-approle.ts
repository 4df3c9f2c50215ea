/**
 * The approle method's routes under its mount (`auth/<mount>/`), Vault's wire: role (LIST),
 * role/:role_name (read, write, delete), role/:role_name/role-id (read, set),
 * role/:role_name/secret-id (generate; LIST accessors), and login (public).
 */
import { z } from 'zod';
import { NotFound } from '../../core/errors.js';
import type { AppRole } from '../../vault/auth/index.js';
import { boolish, duration, empty, intish, stringMap } from '../fields.js';
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

const SecretIdBody = z.object({ metadata: metadata.optional(), ttl: duration.optional(), num_uses: uses('num_uses').optional() });
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
        update: op(SecretIdBody, async ({ params, fields: f }) =>
          ok(
            await ar.generateSecretId(params.role_name ?? '', {
              ...(f.metadata !== undefined ? { metadata: f.metadata } : {}),
              ...(f.ttl !== undefined ? { ttl: f.ttl } : {}),
              ...(f.num_uses !== undefined ? { num_uses: f.num_uses } : {}),
            }),
          ),
          'Generate a SecretID against this role.',
        ),
        list: op(empty, async ({ params }) => ok({ keys: await ar.listSecretIdAccessors(params.role_name ?? '') }), 'List the accessors of the SecretIDs issued against this role.'),
      },
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
