/**
 * `tessera login [TOKEN]`: the token auth method. It verifies the token through
 * auth/token/lookup-self and stores it in ~/.vault-token (mode 0600), the file vault's default
 * token helper uses; later commands read it when TESSERA_TOKEN and VAULT_TOKEN are unset. Without
 * TOKEN (or with `-`) it prompts with hidden input on a terminal, else reads one line of stdin,
 * which keeps the token out of shell history. `-no-store` only verifies.
 */
import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { Option } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { fromEnv, tokenFilePath } from '../connection.js';
import { UsageError } from '../errors.js';
import { readHidden, readLine } from '../io.js';
import { Format, json, renderValue, table } from '../output.js';

interface LoginFlags extends ClientFlags, FormatFlags {
  readonly method: string;
  readonly noStore?: boolean;
  readonly store?: boolean;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('login')
    .description('Authenticate with a token and store it for later commands (~/.vault-token)')
    .argument('[token]', 'the token; omit it (or give -) to be prompted')
    .addOption(new Option('--method <method>', 'auth method').choices(['token']).default('token'))
    .option('--no-store', 'verify the token but do not store it');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera login', 'echo "$TOKEN" | tessera login -', 'tessera login -no-store "$TOKEN"');
  cmd.action(
    ctx.action(async (arg: string | undefined, opts: LoginFlags) => {
      try {
        let token = arg === '-' ? undefined : arg;
        if (token === undefined) {
          const stdin = ctx.io.stdin;
          token = ((stdin.isTTY ? await readHidden(stdin, ctx.io.stderr, 'Token (will be hidden): ') : await readLine(stdin)) ?? '').trim();
        }
        if (!token) throw new UsageError('no token given');
        const env = await ctx.client(opts).withToken(token).read('auth/token/lookup-self');
        const data = env?.data ?? {};
        const store = opts.store !== false;
        if (store) await writeFile(tokenFilePath(ctx.io.env), token, { mode: 0o600 });
        if (fromEnv(ctx.io.env, 'TOKEN') !== undefined) {
          ctx.err(
            'WARNING! The TESSERA_TOKEN or VAULT_TOKEN environment variable is set! Its value takes precedence over the stored token; ' +
              'unset it or update its value accordingly.\n\n',
          );
        }
        if (opts.format === Format.json) {
          ctx.out(json({ data, stored: store }));
          return 0;
        }
        ctx.out(
          store
            ? 'Success! You are now authenticated. The token information displayed below is already stored in the token helper. You do NOT need to run "tessera login" again. Future requests will automatically use this token.\n\n'
            : 'Success! The token is valid. It was not stored (-no-store).\n\n',
        );
        const ttl = typeof data['ttl'] === 'number' ? data['ttl'] : 0;
        ctx.out(
          table(
            [
              ['token', token],
              ['token_accessor', renderValue(data['accessor'])],
              ['token_duration', ttl > 0 ? `${ttl}s` : '∞'],
              ['token_renewable', renderValue(data['renewable'] ?? false)],
              ['token_policies', renderValue(data['policies'] ?? [])],
            ],
            ['Key', 'Value'],
          ),
        );
        return 0;
      } catch (e) {
        return ctx.fail('logging in', e);
      }
    }),
  );
}
