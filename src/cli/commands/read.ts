/**
 * `tessera read PATH`: reads any path and prints the secret as a table, JSON or one raw field.
 * Exit 2 with "No value found" when the path holds nothing, as Vault does.
 */
import type { Command } from 'commander';
import { ApiError } from '../../api/index.js';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { printSecret } from '../output.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('read')
    .description('Read data from a path and print it')
    .argument('<path>', 'path to read, without /v1/');
  withFormatFlags(withClientFlags(cmd));
  example(cmd, 'tessera read sys/replication/status', 'tessera read -field=mode sys/replication/dr/status');
  cmd.action(
    ctx.action(async (path: string, opts: ClientFlags & FormatFlags) => {
      try {
        const env = await ctx.client(opts).read(path);
        if (env === null) return noValue(ctx, path);
        return printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
      } catch (e) {
        if (isEmptyNotFound(e)) return noValue(ctx, path);
        return ctx.fail(`reading ${path}`, e);
      }
    }),
  );
}

/** A 404 with an empty `errors` list is Vault's "nothing stored here", not a failure. */
export function isEmptyNotFound(e: unknown): boolean {
  return e instanceof ApiError && e.status === 404 && e.errors.length === 0;
}

export function noValue(ctx: Context, path: string): number {
  ctx.err(`No value found at ${path}\n`);
  return 2;
}
