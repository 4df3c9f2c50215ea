/**
 * `tessera list PATH`: lists the keys under a path (GET ?list=true), one per line under a "Keys"
 * header, or as a JSON array with `-format=json`.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { Format, json, printWarnings } from '../output.js';
import { isEmptyNotFound, noValue } from './read.js';

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('list')
    .description('List the keys under a path')
    .argument('<path>', 'path to list, without /v1/');
  withFormatFlags(withClientFlags(cmd), false);
  example(cmd, 'tessera list secret/metadata');
  cmd.action(
    ctx.action(async (path: string, opts: ClientFlags & FormatFlags) => {
      try {
        return await printKeys(ctx, ctx.client(opts), path, opts.format);
      } catch (e) {
        if (isEmptyNotFound(e)) return noValue(ctx, path);
        return ctx.fail(`listing ${path}`, e);
      }
    }),
  );
}

/** LIST `target` and print its keys as vault does (a table, or a JSON array); no keys is "No value found". */
export async function printKeys(ctx: Context, client: ReturnType<Context['client']>, target: string, format: Format): Promise<number> {
  const env = await client.list(target);
  const keys = env?.data?.keys;
  if (!env || !Array.isArray(keys) || keys.length === 0) return noValue(ctx, target);
  if (format === Format.json) {
    ctx.out(json(keys));
    return 0;
  }
  printWarnings(ctx.io.stderr, env.warnings);
  ctx.out(['Keys', '----', ...keys].join('\n') + '\n');
  return 0;
}
