/**
 * `tessera write PATH k=v ...`: POSTs a JSON body built from the arguments (all values strings,
 * `k=@file`, `k=-` for stdin, or a lone `-` for a JSON object on stdin) and prints the answer.
 * Under sys/replication/ an empty value is refused (replication-guard.ts); `-clear-primary` is
 * the explicit way to make a secondary forget its primary. Warnings go to stderr.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { parseKeyValues } from '../kvpairs.js';
import { Format, onlyWarnings, printSecret, printWarnings } from '../output.js';
import { guardReplicationBody } from '../replication-guard.js';

interface WriteFlags extends ClientFlags, FormatFlags {
  readonly clearPrimary?: boolean;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('write')
    .description('Write data to a path')
    .argument('<path>', 'path to write, without /v1/')
    .argument('[data...]', 'key=value pairs; key=@file reads a file, key=- reads stdin, a lone - reads a JSON object from stdin')
    .option('-f, --force', 'allow a write with no data (as `vault write -f`)')
    .option('--clear-primary', 'with .../secondary/update-primary: send an empty token, so the secondary forgets its primary');
  withFormatFlags(withClientFlags(cmd));
  example(
    cmd,
    'tessera write -f sys/replication/dr/primary/enable',
    'tessera write sys/replication/dr/primary/secondary-token id=dr-east ttl=30m',
    'tessera write secret/app password=@pw.txt',
    'echo \'{"policy": "path \\"secret/*\\" { capabilities = [\\"read\\"] }"}\' | tessera write sys/policies/acl/reader -',
    'tessera write sys/replication/dr/secondary/update-primary dr_operation_token="$DRT" -clear-primary',
  );
  cmd.action(
    ctx.action(async (path: string, data: string[], opts: WriteFlags) => {
      try {
        const body = guardReplicationBody(path, await parseKeyValues(data, ctx.io.stdin), opts.clearPrimary ?? false);
        const env = await ctx.client(opts).write(path, body);
        const plain = opts.format === Format.table && opts.field === undefined;
        if (env === null || (plain && onlyWarnings(env))) {
          printWarnings(ctx.io.stderr, env?.warnings);
          if (plain) ctx.out(`Success! Data written to: ${path}\n`);
          return 0;
        }
        return printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
      } catch (e) {
        return ctx.fail(`writing ${path}`, e);
      }
    }),
  );
}
