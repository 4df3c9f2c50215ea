/**
 * `tessera kv put [-mount=M] [-cas=N] PATH k=v ...`: writes a KV secret. v2 sends
 * `{data, options: {cas}}` to MOUNT/data/PATH and prints the new version's metadata; v1 sends the
 * pairs as the body.
 */
import type { Command } from 'commander';
import type { Context, ClientFlags, FormatFlags } from '../context.js';
import { example, withClientFlags, withFormatFlags } from '../context.js';
import { UsageError } from '../errors.js';
import { parseKeyValues } from '../kvpairs.js';
import { Format, printSecret } from '../output.js';
import { parseNonNegativeInt } from './kv-get.js';
import { dataPath, resolveKv } from './kv-mount.js';

interface KvPutFlags extends ClientFlags, FormatFlags {
  readonly mount?: string;
  readonly cas?: number;
}

export function register(parent: Command, ctx: Context): void {
  const cmd = parent
    .command('put')
    .description('Write a secret to a KV mount (v1 or v2), replacing its data')
    .argument('<path>', 'MOUNT/PATH, or PATH with -mount')
    .argument('[data...]', 'key=value pairs; key=@file reads a file, key=- reads stdin')
    .option('--mount <mount>', 'the KV mount; otherwise the path starts with it')
    .option('--cas <n>', 'v2 only: write only if the current version is N (0: only if absent)', parseNonNegativeInt);
  withFormatFlags(withClientFlags(cmd));
  example(cmd, 'tessera kv put -mount=secret app/db user=ada password=@pw.txt', 'tessera kv put -cas=0 secret/app/new k=v');
  cmd.action(
    ctx.action(async (path: string, pairs: string[], opts: KvPutFlags) => {
      const client = ctx.client(opts);
      let target = path;
      try {
        if (pairs.length === 0) throw new UsageError('no data given: pass key=value pairs');
        const data = await parseKeyValues(pairs, ctx.io.stdin);
        const kv = await resolveKv(client, path, opts.mount);
        target = dataPath(kv);
        const body = kv.version === 2 ? { data, ...(opts.cas !== undefined ? { options: { cas: opts.cas } } : {}) } : data;
        const env = await client.write(target, body);
        if (env === null) {
          if (opts.format === Format.table && opts.field === undefined) ctx.out(`Success! Data written to: ${target}\n`);
          return 0;
        }
        return printSecret(ctx.io.stdout, ctx.io.stderr, env, opts);
      } catch (e) {
        return ctx.fail(`writing ${target}`, e);
      }
    }),
  );
}
