/**
 * KV version 2 (Vault's versioned engine): routes a mount-relative path to its handler.
 *
 *   const engine = createV2Engine(() => new Date());
 *   await engine.handle({ operation: 'read', path: 'data/app/db', data: { version: '2' } }, scoped);
 *
 * Paths: config, data/<p>, metadata/<p> (list: metadata/ and metadata/<dir>/), delete/<p>,
 * undelete/<p>, destroy/<p>. Anything else is Vault's "invalid path" 404.
 */
import { NotFound, UnsupportedOperation } from '../../core/errors.js';
import type { Store } from '../../storage/store.js';
import type { LogicalRequest, LogicalResponse, Operation, SecretsEngine } from '../logical.js';
import { readConfig, writeConfig } from './config-paths.js';
import type { Handler, KvContext } from './context.js';
import { deleteLatest, patchData, readData, writeData } from './data.js';
import { checkPath } from './layout.js';
import { deleteVersions, destroyVersions, undeleteVersions } from './lifecycle.js';
import { KeyedMutex } from '../../core/keyed-mutex.js';
import { deleteMetadata, listMetadata, patchMetadata, readMetadata, writeMetadata } from './metadata-paths.js';

type Routes = Partial<Record<Operation, Handler>>;

const ROUTES: ReadonlyMap<string, Routes> = new Map<string, Routes>([
  ['data', { read: readData, create: writeData, update: writeData, patch: patchData, delete: deleteLatest }],
  [
    'metadata',
    { read: readMetadata, create: writeMetadata, update: writeMetadata, patch: patchMetadata, delete: deleteMetadata },
  ],
  ['delete', { create: deleteVersions, update: deleteVersions }],
  ['undelete', { create: undeleteVersions, update: undeleteVersions }],
  ['destroy', { create: destroyVersions, update: destroyVersions }],
]);

const CONFIG_ROUTES: Routes = { read: readConfig, create: writeConfig, update: writeConfig };

/** The `vault kv` subcommand Vault's 404 suggests for each operation. */
const SUBCOMMAND: Readonly<Record<Operation, string>> = {
  create: 'put',
  update: 'put',
  patch: 'patch',
  read: 'get',
  list: 'list',
  delete: 'delete',
};

function invalidPath(op: Operation): NotFound {
  return new NotFound(
    'Invalid path for a versioned K/V secrets engine. See the API docs for the appropriate API endpoints to use. ' +
      `If using the Vault CLI, use 'vault kv ${SUBCOMMAND[op]}' for this operation.`,
  );
}

function route(routes: Routes, op: Operation): Handler {
  const handler = routes[op];
  if (handler === undefined) throw new UnsupportedOperation();
  return handler;
}

export function createV2Engine(now: () => Date): SecretsEngine {
  // One lock table per engine; keyed by secret path only, so an engine shared by several mounts
  // merely serialises same-named keys across them, which is safe.
  const locks = new KeyedMutex();

  return {
    async handle(req: LogicalRequest, store: Store): Promise<LogicalResponse | null> {
      const ctx: KvContext = { store, now, locks };
      const op = req.operation;

      if (op === 'list') {
        // Vault's HTTP layer lists "dir" as "dir/".
        const dir = req.path === '' || req.path.endsWith('/') ? req.path : `${req.path}/`;
        if (!dir.startsWith('metadata/')) throw invalidPath(op);
        return listMetadata(ctx, checkPath(dir.slice('metadata/'.length), 'dir'), req);
      }
      if (req.path === 'config') return route(CONFIG_ROUTES, op)(ctx, '', req);
      if (ROUTES.has(req.path)) {
        throw new NotFound('Non-listing operations on the root of a K/V v2 mount are not supported.');
      }

      const slash = req.path.indexOf('/');
      const routes = slash === -1 ? undefined : ROUTES.get(req.path.slice(0, slash));
      const path = req.path.slice(slash + 1);
      if (routes === undefined || path === '' || path.endsWith('/')) throw invalidPath(op);
      return route(routes, op)(ctx, checkPath(path, 'leaf'), req);
    },
  };
}

