/** `tessera delete PATH`: deletes the data at a path; success whether or not it existed. */
import type { Command } from 'commander';
import type { Context, ClientFlags } from '../context.js';
import { example, withClientFlags } from '../context.js';
import { printWarnings } from '../output.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('delete')
    .description('Delete the data at a path')
    .argument('<path>', 'path to delete, without /v1/');
  withClientFlags(cmd);
  example(cmd, 'tessera delete secret/old-app');
  cmd.action(
    ctx.action(async (path: string, opts: ClientFlags) => {
      try {
        const env = await ctx.client(opts).delete(path);
        printWarnings(ctx.io.stderr, env?.warnings);
        ctx.out(`Success! Data deleted (if it existed) at: ${path}\n`);
        return 0;
      } catch (e) {
        return ctx.fail(`deleting ${path}`, e);
      }
    }),
  );
}
