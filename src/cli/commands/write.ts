/**
 * `tessera write PATH k=v ...`: POSTs a JSON body built from the arguments (all values strings,
 * `k=@file`, `k=-` for stdin, or a lone `-` for a JSON object on stdin) and prints the answer.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { parseKeyValues } from '../kvpairs.js';
import { Format, printSecret } from '../output.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('write')
    .description('Write data to a path')
    .argument('<path>', 'path to write, without /v1/')
    .argument('[data...]', 'key=value pairs; key=@file reads a file, key=- reads stdin')
    .option('-f, --force', 'allow a write with no data (as `vault write -f`)');
  withFormatFlags(withClientFlags(cmd));
  example(
    cmd,
    'tessera write -f sys/replication/dr/primary/enable',
    'tessera write sys/replication/dr/primary/secondary-token id=dr-east ttl=30m',
    'tessera write secret/app password=@pw.txt',
  );
  cmd.action(
    ctx.action(async (path: string, data: string[], opts: ClientFlags & FormatFlags) => {
      try {
        const body = await parseKeyValues(data, ctx.io.stdin);
        const env = await ctx.client(opts).write(path, body);
        if (env === null) {
          if (opts.format === Format.table && opts.field === undefined) ctx.out(`Success! Data written to: ${path}\n`);
          return 0;
        }
        return printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
      } catch (e) {
        return ctx.fail(`writing ${path}`, e);
      }
    }),
  );
}
