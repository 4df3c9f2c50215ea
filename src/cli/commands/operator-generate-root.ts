/**
 * `tessera operator generate-root ...` does not exist: Tessera generates no root tokens this way.
 * Operators coming from Vault type `vault operator generate-root -dr-token`; this hidden command
 * points them at `generate-dr-token` (exit 2, as for any unknown command) instead of commander's
 * bare "unknown command".
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';

export function register(parent: Command, ctx: Context): void {
  parent
    .command('generate-root', { hidden: true })
    .allowUnknownOption()
    .allowExcessArguments()
    .helpOption(false)
    .action(
      ctx.action(async () => {
        ctx.err(
          "error: unknown command 'generate-root'\n" +
            '(Did you mean generate-dr-token? `tessera operator generate-dr-token` does what `vault operator generate-root -dr-token` does.)\n',
        );
        return 2;
      }),
    );
}
