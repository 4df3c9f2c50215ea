/**
 * The KV secrets engine, versions 1 and 2, answering as Vault does.
 *
 *   const kv = createKvEngine({ version: 2 });
 *   await kv.handle({ operation: 'update', path: 'data/app', data: { data: { a: 1 } } }, scoped);
 *
 * Storage layout: see layout.ts. A read of a deleted or destroyed v2 version throws
 * NotFoundWithData (a NotFound) carrying the metadata Vault returns alongside its 404.
 */
import type { SecretsEngine } from '../logical.js';
import { kvHelp } from './help.js';
import { createV1Engine } from './v1.js';
import { createV2Engine } from './v2.js';

export interface KvOptions {
  readonly version: 1 | 2;
  /** Clock for created/deletion times and for deciding whether a deletion has taken effect. */
  readonly now?: () => Date;
}

export function createKvEngine(options: KvOptions): SecretsEngine {
  const engine = options.version === 1 ? createV1Engine() : createV2Engine(options.now ?? (() => new Date()));
  return { handle: (req, storage) => engine.handle(req, storage), help: (path) => kvHelp(options.version, path) };
}

export { NotFoundWithData } from './context.js';
