/**
 * `tessera server [-config FILE] [-dev] [-dev-root-token-id ID] [-dev-listen-address ADDR]`:
 * runs a node in this process until SIGTERM or SIGINT. `-dev` runs an in-memory, unsealed node
 * with a known root token, for trying things out; never for real data.
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { example } from '../context.js';
import { UsageError } from '../errors.js';
import { services } from '../io.js';

interface ServerFlags {
  readonly config?: string;
  readonly dev?: boolean;
  readonly devRootTokenId?: string;
  readonly devListenAddress?: string;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('server')
    .description('Run a Tessera node')
    .option('--config <file>', 'HCL or JSON configuration file')
    .option('--dev', 'in-memory, pre-unsealed development node')
    .option('--dev-root-token-id <id>', 'root token of the dev node')
    .option('--dev-listen-address <addr>', 'listen address of the dev node (default 127.0.0.1:8200)');
  example(cmd, 'tessera server -config=/etc/tessera/node.hcl', 'tessera server -dev -dev-root-token-id=root');
  cmd.action(
    ctx.action(async (opts: ServerFlags) => {
      try {
        const dev = opts.dev ?? false;
        if (!dev && opts.config === undefined) throw new UsageError('give -config=FILE, or -dev for a development node');
        if (!dev && (opts.devRootTokenId !== undefined || opts.devListenAddress !== undefined)) {
          throw new UsageError('-dev-root-token-id and -dev-listen-address need -dev');
        }
        const { runServer } = await services(ctx.io);
        await runServer({
          dev,
          ...(opts.config !== undefined ? { configPath: opts.config } : {}),
          ...(opts.devRootTokenId !== undefined ? { devRootTokenId: opts.devRootTokenId } : {}),
          ...(opts.devListenAddress !== undefined ? { devListenAddress: opts.devListenAddress } : {}),
        });
        return 0;
      } catch (e) {
        return ctx.fail('running the server', e);
      }
    }),
  );
}
