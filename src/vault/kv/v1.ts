/**
 * KV version 1 (Vault's passthrough engine): the request body is the secret, stored as JSON at
 * the path itself; no versions, no metadata.
 *
 *   const engine = createV1Engine();
 *   await engine.handle({ operation: 'update', path: 'app/db', data: { password: 'x' } }, scoped);  // null (204)
 *   await engine.handle({ operation: 'read', path: 'app/db', data: {} }, scoped);  // { data: { password: 'x' } }
 */
import { InvalidRequest, NotFound, UnsupportedOperation } from '../../core/errors.js';
import type { Store } from '../../storage/store.js';
import type { LogicalRequest, LogicalResponse, SecretsEngine } from '../logical.js';
import { checkPath } from './layout.js';
import { decodeSecretData, encode } from './model.js';

export function createV1Engine(): SecretsEngine {
  return {
    async handle(req: LogicalRequest, store: Store): Promise<LogicalResponse | null> {
      switch (req.operation) {
        case 'list': {
          const dir = req.path === '' || req.path.endsWith('/') ? req.path : `${req.path}/`;
          // No keys: the HTTP layer answers 404, as Vault's does for every LIST.
          return { data: { keys: await store.list(checkPath(dir, 'dir')) } };
        }
        case 'read': {
          const raw = await store.get(checkPath(req.path, 'leaf'));
          if (raw === undefined) throw new NotFound();
          return { data: decodeSecretData(raw) };
        }
        case 'create':
        case 'update': {
          const key = checkPath(req.path, 'leaf');
          if (Object.keys(req.data).length === 0) throw new InvalidRequest('missing data fields');
          await store.commit([{ type: 'put', key, value: encode(req.data) }]);
          return null;
        }
        case 'delete':
          await store.commit([{ type: 'del', key: checkPath(req.path, 'leaf') }]);
          return null;
        case 'patch':
          throw new UnsupportedOperation();
      }
    },
  };
}
