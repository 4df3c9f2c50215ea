/**
 * `tessera path-help PATH`: the help of the route PATH matches (GET ?help=1), as `vault path-help`
 * prints it: the help text, or with `-format=json` the path's OpenAPI document. As in Vault, any
 * valid token will do (none for paths that need none, such as sys/health or a login). Exit 2 when
 * the help cannot be read, as Vault's command does.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { Format, json } from '../output.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('path-help')
    .description('Retrieve API help for a path: its operations and parameters')
    .argument('<path>', 'path to explain, without /v1/ (any path the route matches)');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera path-help sys/replication/dr/primary/enable', 'tessera path-help secret/data/app', 'tessera path-help -format=json sys/mounts');
  cmd.action(
    ctx.action(async (path: string, opts: ClientFlags & FormatFlags) => {
      try {
        const help = await ctx.client(opts).help(path.replace(/^\/+/, ''));
        ctx.out(opts.format === Format.json ? json(help.openapi) : help.help.endsWith('\n') ? help.help : `${help.help}\n`);
        return 0;
      } catch (e) {
        ctx.fail('retrieving help', e);
        return 2;
      }
    }),
  );
}
