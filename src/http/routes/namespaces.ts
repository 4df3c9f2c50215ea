/**
 * sys/namespaces: create, read, list and delete child namespaces of the caller's namespace.
 */
import { z } from 'zod';
import type { AuthMethods } from '../../vault/auth/index.js';
import type { Mounts } from '../../vault/mounts.js';
import type { NamespaceEntry, Namespaces } from '../../vault/namespaces.js';
import { InvalidRequest } from '../../core/errors.js';
import { empty, stringMap } from '../fields.js';
import { noContent, ok } from '../reply.js';
import { op, type Route } from '../route.js';

const view = (e: NamespaceEntry) => ({ id: e.id, path: e.path, custom_metadata: e.custom_metadata });

export function namespaceRoutes(namespaces: Namespaces, mounts: Mounts, auth: AuthMethods): Route[] {
  const list = op(empty, async ({ namespace }) => {
    const kids = namespaces.children(namespace);
    if (kids.length === 0) return ok({ keys: [] });
    const keys = kids.map((k) => k.path.slice(namespace.length));
    return ok({ keys, key_info: Object.fromEntries(kids.map((k) => [k.path.slice(namespace.length), view(k)])) });
  }, 'List the child namespaces of the current namespace.');
  return [
    { pattern: 'sys/namespaces', access: 'token', operations: { list, read: list } },
    {
      pattern: 'sys/namespaces/*path',
      access: 'token',
      names: (params) => ({ namespace: params.path ?? '' }),
      operations: {
        read: op(empty, async ({ params, namespace }) => ok(view(namespaces.read(namespace, params.path ?? ''))), 'Read a namespace.'),
        update: op(z.object({ custom_metadata: stringMap.optional() }), async ({ params, namespace, fields }) =>
          ok(view(await namespaces.create(namespace, params.path ?? '', fields.custom_metadata ?? {}))),
          'Create a namespace.',
        ),
        delete: op(empty, async ({ params, namespace }) => {
          const target = `${namespace}${(params.path ?? '').replace(/^\/+|\/+$/g, '')}/`;
          if (mounts.list(target).length > 0) throw new InvalidRequest(`namespace "${target}" still has mounts; disable them first`);
          if ((await auth.table.list(target)).length > 0) throw new InvalidRequest(`namespace "${target}" still has auth methods; disable them first`);
          await namespaces.delete(namespace, params.path ?? '');
          return noContent();
        }, 'Delete a namespace that has no mounts or auth methods left.'),
      },
    },
  ];
}
