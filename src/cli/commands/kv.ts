/** `tessera kv ...`: the KV secrets engine commands, aware of v1 and v2 mounts. */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { register as registerDelete } from './kv-delete.js';
import { register as registerGet } from './kv-get.js';
import { register as registerList } from './kv-list.js';
import { register as registerMetadata } from './kv-metadata.js';
import { register as registerPatch } from './kv-patch.js';
import { register as registerPut } from './kv-put.js';

export function register(parent: Command, ctx: Context): void {
  const kv = parent.command('kv').description('Read and write secrets in KV mounts (v1 and v2)');
  registerGet(kv, ctx);
  registerPut(kv, ctx);
  registerPatch(kv, ctx);
  registerList(kv, ctx);
  registerDelete(kv, ctx);
  registerMetadata(kv, ctx);
}
