/**
 * `tessera operator step-down`: the active node of the HA cluster gives up its role (`sys/step-down`,
 * sudo); it sits out a cooldown, so another node normally takes over. Sent to a standby, the
 * request is relayed to the active node. Prints Vault's "Success! Stepped down: <address>".
 */
import type { Command } from 'commander';
import type { Context, ClientFlags } from '../context.js';
import { example, withClientFlags } from '../context.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent.command('step-down').description('Make the active node of the HA cluster give up its role (requires a sudo token)');
  withClientFlags(cmd);
  example(cmd, 'tessera operator step-down');
  cmd.action(
    ctx.action(async (opts: ClientFlags) => {
      try {
        const client = ctx.client(opts);
        await client.sys.stepDown();
        ctx.out(`Success! Stepped down: ${client.addr}\n`);
        return 0;
      } catch (e) {
        return ctx.fail('stepping down', e);
      }
    }),
  );
}
