/**
 * `tessera status`: prints the seal status. Exit 0 unsealed, 2 sealed, 1 on error, as Vault's
 * `vault status`, so scripts can test for a sealed node without parsing.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { Format, json } from '../output.js';
import { sealStatusTable } from './seal-status.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent.command('status').description('Print the seal status (exit 2 when sealed)');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera status', 'tessera status -format=json');
  cmd.action(
    ctx.action(async (opts: ClientFlags & FormatFlags) => {
      try {
        const status = await ctx.client(opts).sys.sealStatus();
        ctx.out(opts.format === Format.json ? json(status) : sealStatusTable(status));
        return status.sealed ? 2 : 0;
      } catch (e) {
        return ctx.fail('checking seal status', e);
      }
    }),
  );
}
