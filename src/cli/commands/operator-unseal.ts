/**
 * `tessera operator unseal [KEY]`: provides one unseal key share. Without KEY it prompts with
 * hidden input on a terminal, else reads one line from stdin. `-reset` discards the shares given
 * so far.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { UsageError } from '../errors.js';
import { readHidden, readLine } from '../io.js';
import { Format, json } from '../output.js';
import { sealStatusTable } from './seal-status.js';

interface UnsealFlags extends ClientFlags, FormatFlags {
  readonly reset?: boolean;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('unseal')
    .description('Provide one unseal key share (prompted when omitted)')
    .argument('[key]', 'the key share, hex or base64; omit it to keep it out of shell history')
    .option('--reset', 'discard the key shares provided so far');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera operator unseal', 'echo "$KEY" | tessera operator unseal', 'tessera operator unseal -reset');
  cmd.action(
    ctx.action(async (key: string | undefined, opts: UnsealFlags) => {
      try {
        if (opts.reset && key !== undefined) throw new UsageError('-reset takes no key');
        let share = key;
        if (!opts.reset && share === undefined) {
          const stdin = ctx.io.stdin;
          const read = stdin.isTTY
            ? await readHidden(stdin, ctx.io.stderr, 'Unseal Key (will be hidden): ')
            : await readLine(stdin);
          share = read?.trim();
          if (!share) throw new UsageError('no unseal key given');
        }
        const client = ctx.client(opts);
        const status = await client.sys.unseal(opts.reset || share === undefined ? { reset: true } : { key: share });
        ctx.out(opts.format === Format.json ? json(status) : sealStatusTable(status));
        return 0;
      } catch (e) {
        return ctx.fail('unsealing', e);
      }
    }),
  );
}
