/** `tessera operator seal`: seals the node; it serves nothing until unsealed again. */
import type { Command } from 'commander';
import type { Context, ClientFlags } from '../context.js';
import { example, withClientFlags } from '../context.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent.command('seal').description('Seal the node (requires a root or sudo token)');
  withClientFlags(cmd);
  example(cmd, 'tessera operator seal');
  cmd.action(
    ctx.action(async (opts: ClientFlags) => {
      try {
        await ctx.client(opts).sys.seal();
        ctx.out('Success! Node is sealed.\n');
        return 0;
      } catch (e) {
        return ctx.fail('sealing', e);
      }
    }),
  );
}
