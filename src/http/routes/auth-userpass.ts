/**
 * The userpass method's routes under its mount (`auth/<mount>/`), Vault's wire:
 * users (LIST), users/:username (read, write, delete), users/:username/password,
 * users/:username/policies, and login/:username (public).
 */
import { z } from 'zod';
import { NotFound } from '../../core/errors.js';
import type { Userpass } from '../../vault/auth/index.js';
import { empty, stringList } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { op, type Route } from '../route.js';
import { tokenFields, tokenParams } from './auth-token-fields.js';

const UserBody = z.object({ password: z.string().optional(), ...tokenFields });
const PasswordBody = z.object({ password: z.string({ error: 'missing password' }) });
const PoliciesBody = z.object({ token_policies: stringList.optional(), policies: stringList.optional() });

/** `prefix` is `auth/<mount path>` with its trailing slash. */
export function userpassRoutes(prefix: string, up: Userpass): Route[] {
  return [
    {
      pattern: `${prefix}users`,
      access: 'token',
      operations: { list: op(empty, async () => ok({ keys: await up.list() }), 'List the users of this userpass method.') },
    },
    {
      pattern: `${prefix}users/:username`,
      access: 'token',
      operations: {
        read: op(empty, async ({ params }) => {
          const user = await up.read(params.username ?? '');
          if (!user) throw new NotFound();
          return ok(user);
        }, "Read a user's settings."),
        update: op(UserBody, async ({ params, fields }) => {
          await up.write(params.username ?? '', { ...(fields.password !== undefined ? { password: fields.password } : {}), params: tokenParams(fields) });
          return noContent();
        }, 'Create a user or update its settings.'),
        delete: op(empty, async ({ params }) => {
          await up.delete(params.username ?? '');
          return noContent();
        }, 'Delete a user.'),
      },
    },
    {
      pattern: `${prefix}users/:username/password`,
      access: 'token',
      operations: {
        update: op(PasswordBody, async ({ params, fields }) => {
          await up.setPassword(params.username ?? '', fields.password);
          return noContent();
        }, "Reset a user's password."),
      },
    },
    {
      pattern: `${prefix}users/:username/policies`,
      access: 'token',
      operations: {
        update: op(PoliciesBody, async ({ params, fields }) => {
          await up.write(params.username ?? '', { params: tokenParams(fields) });
          return noContent();
        }, 'Update the policies of a user.'),
      },
    },
    {
      pattern: `${prefix}login/:username`,
      access: 'public',
      operations: {
        update: op(z.object({ password: z.string().default('') }), async ({ params, fields }) => {
          const { auth, warnings } = await up.login(params.username ?? '', fields.password);
          return ok(null, { auth: { ...auth }, ...(warnings.length > 0 ? { warnings: [...warnings] } : {}) });
        }, 'Log in with a username and password.'),
      },
    },
  ];
}
