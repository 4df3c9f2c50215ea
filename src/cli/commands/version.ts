/** `tessera version`: prints the CLI version, as `vault version` does. */
import type { Command } from 'commander';
import { VERSION } from '../../core/index.js';
import type { Context } from '../context.js';

export function register(parent: Command, ctx: Context): void {
  parent
    .command('version')
    .description('Print the version of this CLI')
    .action(
      ctx.action(async () => {
        ctx.out(`Tessera v${VERSION}\n`);
        return 0;
      }),
    );
}
