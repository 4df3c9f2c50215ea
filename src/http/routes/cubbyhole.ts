/**
 * `cubbyhole/` in every namespace: the calling token's private storage (vault/cubbyhole.ts), as
 * Vault's builtin/logical/cubbyhole answers it. Keyed by the caller's token alone, so no other
 * token, root included, reaches it; a batch token has none (Vault's 400). Its mount is shown in
 * `sys/mounts` (mounts.ts `cubbyholeMount`) and can be neither disabled nor enabled elsewhere.
 */
import { z } from 'zod';
import { InvalidRequest, NotFound } from '../../core/errors.js';
import type { Caller } from '../../vault/caller.js';
import type { Cubbyhole } from '../../vault/cubbyhole.js';
import type { TokenStore } from '../../vault/tokens.js';
import { noContent, ok } from '../reply.js';
import { op, type Route } from '../route.js';

/** The caller's token hash; Vault's refusal for a token that has no cubbyhole. */
function owner(caller: Caller | undefined): string {
  if (caller === undefined || caller.entry.type !== 'service') throw new InvalidRequest('cubbyhole operations are only supported by "service" type tokens');
  return caller.entry.hash;
}

export function cubbyholeRoutes(cubby: Cubbyhole, tokens: TokenStore): Route[] {
  const anything = z.record(z.string(), z.unknown());
  const list = op(anything, async ({ params, namespace, caller }) => {
    const dir = params.path === undefined || params.path === '' ? '' : `${params.path}/`;
    return ok({ keys: await cubby.list(owner(caller), namespace, dir) });
  }, 'List the secret entries at this path of the token\'s cubbyhole.');
  const operations = {
    list,
    read: op(anything, async ({ params, namespace, caller }) => {
      const hash = owner(caller);
      const path = params.path ?? '';
      if (path === '') throw new InvalidRequest('missing path');
      const data = await cubby.read(hash, namespace, path);
      if (data === undefined) throw new NotFound();
      return ok(data);
    }, 'Read the secret at this path of the token\'s cubbyhole.'),
    update: op(z.unknown(), async ({ params, namespace, caller, req }) => {
      const hash = owner(caller);
      const path = params.path ?? '';
      if (path === '') throw new InvalidRequest('missing path');
      if (Object.keys(req.body).length === 0) throw new InvalidRequest('missing data fields');
      const token = caller?.token ?? '';
      await cubby.write(hash, namespace, path, { ...req.body }, async () => (await tokens.lookup(token).catch(() => undefined)) !== undefined);
      return noContent();
    }, 'Store a secret at this path of the token\'s cubbyhole.'),
    delete: op(z.object({}).passthrough(), async ({ params, namespace, caller }) => {
      const hash = owner(caller);
      const path = params.path ?? '';
      if (path === '') throw new InvalidRequest('missing path');
      await cubby.write(hash, namespace, path, undefined, async () => true);
      return noContent();
    }, 'Delete the secret at this path of the token\'s cubbyhole.'),
  };
  return [
    { pattern: 'cubbyhole', access: 'token', localState: true, operations: { list, read: list } },
    { pattern: 'cubbyhole/*path', access: 'token', localState: true, operations: { ...operations, create: operations.update } },
  ];
}
