/**
 * ACL policies: `sys/policies/acl[/:name]` and the legacy `sys/policy[/:name]` (node-vault uses it).
 */
import { z } from 'zod';
import type { Policies } from '../../vault/policies.js';
import { empty } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { op, type Route } from '../route.js';

export function policyRoutes(policies: Policies): Route[] {
  const list = op(empty, async ({ namespace }) => {
    const keys = await policies.list(namespace);
    return ok({ keys, policies: keys });
  }, 'List the configured access control policies.');
  const remove = op(empty, async ({ params, namespace }) => {
    await policies.delete(namespace, params.name ?? '');
    return noContent();
  }, 'Delete an access control policy.');
  return [
    { pattern: 'sys/policies/acl', access: 'token', operations: { list, read: list } },
    {
      pattern: 'sys/policies/acl/:name',
      access: 'token',
      operations: {
        read: op(empty, async ({ params, namespace }) => {
          const name = (params.name ?? '').toLowerCase();
          return ok({ name, policy: await policies.text(namespace, name) });
        }, 'Read an access control policy.'),
        update: op(z.object({ policy: z.string() }), async ({ params, namespace, fields }) => {
          await policies.put(namespace, params.name ?? '', fields.policy);
          return noContent();
        }, 'Create or update an access control policy.'),
        delete: remove,
      },
    },
    { pattern: 'sys/policy', access: 'token', operations: { read: list, list } },
    {
      pattern: 'sys/policy/:name',
      access: 'token',
      operations: {
        read: op(empty, async ({ params, namespace }) => {
          const name = (params.name ?? '').toLowerCase();
          const rules = await policies.text(namespace, name);
          return ok({ name, rules });
        }, 'Read an access control policy (legacy path).'),
        update: op(z.object({ policy: z.string().optional(), rules: z.string().optional() }).refine((b) => b.policy !== undefined || b.rules !== undefined, 'missing required field "policy"'), async ({ params, namespace, fields }) => {
          await policies.put(namespace, params.name ?? '', fields.policy ?? fields.rules ?? '');
          return noContent();
        }, 'Create or update an access control policy (legacy path).'),
        delete: remove,
      },
    },
  ];
}
