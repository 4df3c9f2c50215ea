/** `tessera kv ...`: the KV secrets engine commands, aware of v1 and v2 mounts. */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { register as registerGet } from './kv-get.js';
import { register as registerPut } from './kv-put.js';

export function register(parent: Command, ctx: Context): void {
  const kv = parent.command('kv').description('Read and write secrets in KV mounts (v1 and v2)');
  registerGet(kv, ctx);
  registerPut(kv, ctx);
}
