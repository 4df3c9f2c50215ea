/**
 * `tessera kv patch [-mount=M] [-cas=N] PATH k=v ...`: merges the pairs into the latest version of
 * a KV v2 secret (HTTP PATCH, JSON merge patch) and prints the new version's metadata.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { UsageError } from '../errors.js';
import { parseKeyValues } from '../kvpairs.js';
import { Format, printSecret } from '../output.js';
import { parseNonNegativeInt } from './kv-get.js';
import { dataPath, requireV2, resolveKv } from './kv-mount.js';

interface KvPatchFlags extends ClientFlags, FormatFlags {
  readonly mount?: string;
  readonly cas?: number;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('patch')
    .description('Merge new fields into an existing KV v2 secret, keeping the others')
    .argument('<path>', 'MOUNT/PATH, or PATH with -mount')
    .argument('[data...]', 'key=value pairs; key=@file reads a file, key=- reads stdin')
    .option('--mount <mount>', 'the KV mount; otherwise the path starts with it')
    .option('--cas <n>', 'patch only if the current version is N', parseNonNegativeInt);
  withFormatFlags(withClientFlags(cmd));
  example(cmd, 'tessera kv patch secret/app/db password=@new-pw.txt');
  cmd.action(
    ctx.action(async (path: string, pairs: string[], opts: KvPatchFlags) => {
      const client = ctx.client(opts);
      let target = path;
      try {
        if (pairs.length === 0) throw new UsageError('no data given: pass key=value pairs');
        const data = await parseKeyValues(pairs, ctx.io.stdin);
        const kv = await resolveKv(client, path, opts.mount);
        requireV2(kv, 'patch');
        target = dataPath(kv);
        const env = await client.patch(target, { data, ...(opts.cas !== undefined ? { options: { cas: opts.cas } } : {}) });
        if (env === null) {
          if (opts.format === Format.table && opts.field === undefined) ctx.out(`Success! Data written to: ${target}\n`);
          return 0;
        }
        return printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
      } catch (e) {
        return ctx.fail(`patching ${target}`, e);
      }
    }),
  );
}
