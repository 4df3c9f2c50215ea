/** `tessera kv list [-mount=M] PATH`: lists the keys under a KV path (v2: under metadata/). */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { printKeys } from './list.js';
import { isEmptyNotFound, noValue } from './read.js';
import { resolveKv, v2Path } from './kv-mount.js';

interface KvListFlags extends ClientFlags, FormatFlags {
  readonly mount?: string;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('list')
    .description('List the keys under a KV path (v1 or v2)')
    .argument('<path>', 'MOUNT[/PATH], or PATH with -mount')
    .option('--mount <mount>', 'the KV mount; otherwise the path starts with it');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera kv list secret', 'tessera kv list -mount=secret app/');
  cmd.action(
    ctx.action(async (path: string, opts: KvListFlags) => {
      const client = ctx.client(opts);
      let target = path;
      try {
        const kv = await resolveKv(client, path, opts.mount, true);
        target = kv.version === 2 ? v2Path(kv, 'metadata') : [kv.mount, kv.path].filter((s) => s !== '').join('/');
        return await printKeys(ctx, client, target, opts.format);
      } catch (e) {
        if (isEmptyNotFound(e)) return noValue(ctx, target);
        return ctx.fail(`listing ${target}`, e);
      }
    }),
  );
}
