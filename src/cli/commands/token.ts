/**
 * `tessera token renew [TOKEN]` and `tessera token lookup [TOKEN]`, as the vault CLI's: without a
 * token argument they act on the CLI's own token (`renew-self`, `lookup-self`); `-accessor` takes
 * the argument as an accessor (`renew-accessor`, `lookup-accessor`). Renew prints the auth block
 * (token, accessor, duration, renewable, policies); lookup prints the token's properties.
 *
 *   tessera token renew -increment=1h
 *   tessera token lookup -accessor 2c84f488-...
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { printSecret } from '../output.js';

interface TokenFlags extends ClientFlags, FormatFlags {
  readonly accessor?: boolean;
  readonly increment?: string;
}

export function register(parent: Command, ctx: Context): void {
  const token = parent.command('token').description('Renew and look up tokens');

  const renew = token
    .command('renew')
    .description('Renew a token (the CLI\'s own without an argument): its TTL becomes the increment, within its max TTL')
    .argument('[token]', 'the token (or, with -accessor, its accessor) to renew')
    .option('--increment <duration>', 'requested TTL from now (e.g. 1h, 30m, 3600); default: the token\'s creation TTL or period')
    .option('--accessor', 'the argument is an accessor');
  withFormatFlags(withClientFlags(renew));
  example(renew, 'tessera token renew', 'tessera token renew -increment=1h hvs.XXXX', 'tessera token renew -accessor 2c84f488-...');
  renew.action(
    ctx.action(async (arg: string | undefined, opts: TokenFlags) => {
      try {
        const increment = opts.increment === undefined ? {} : { increment: opts.increment };
        const [path, body] = selfOr(arg, opts, 'renew', increment);
        const env = await ctx.client(opts).write(path, body);
        return env === null ? 0 : printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
      } catch (e) {
        return ctx.fail('renewing token', e);
      }
    }),
  );

  const lookup = token
    .command('lookup')
    .description('Show a token\'s properties (the CLI\'s own without an argument)')
    .argument('[token]', 'the token (or, with -accessor, its accessor) to look up')
    .option('--accessor', 'the argument is an accessor');
  withFormatFlags(withClientFlags(lookup));
  example(lookup, 'tessera token lookup', 'tessera token lookup hvs.XXXX', 'tessera token lookup -accessor 2c84f488-...');
  lookup.action(
    ctx.action(async (arg: string | undefined, opts: TokenFlags) => {
      try {
        const [path, body] = selfOr(arg, opts, 'lookup', {});
        const env = await ctx.client(opts).write(path, body);
        return env === null ? 0 : printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
      } catch (e) {
        return ctx.fail('looking up token', e);
      }
    }),
  );
}

/** The endpoint and body: `<verb>-self` without an argument, else by token or accessor. */
function selfOr(arg: string | undefined, opts: TokenFlags, verb: 'renew' | 'lookup', extra: Record<string, unknown>): [string, Record<string, unknown>] {
  if (arg === undefined || arg === '') return [`auth/token/${verb}-self`, extra];
  if (opts.accessor === true) return [`auth/token/${verb}-accessor`, { accessor: arg, ...extra }];
  return [`auth/token/${verb}`, { token: arg, ...extra }];
}
